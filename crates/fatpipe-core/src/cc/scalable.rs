//! Scalable TCP (Kelly, "Scalable TCP: improving performance in highspeed wide area
//! networks", ACM CCR 33(2), 2003): multiplicative increase, multiplicative decrease.
//!
//! The `"paper"` form (`ScalableConfig::variant`, the default):
//! - congestion avoidance: cwnd += a for every acknowledged segment, so the window grows by
//!   the factor (1 + a) each RTT whatever its size, and the time to recover from a loss does
//!   not grow with the window (Kelly 2003);
//! - a congestion signal: cwnd -= b x cwnd;
//! - below the legacy window `low_window` the flow is standard TCP (AIMD(1, 0.5)), so small
//!   windows share fairly with it (Kelly 2003, lwnd).
//!
//! The `"linux"` form is Kelly's patch as Linux `tcp_scalable.c` carries it (ported from the
//! 2.4.19 patch to 2.6.13 by John Heffner): one segment per min(cwnd, AI_CNT) counted ACKs or
//! segments, AI_CNT = 1/a (`TCP_SCALABLE_AI_CNT`), so below 1/a segments the growth is
//! standard TCP's and above it a per counted unit; ssthresh = cwnd - floor(b x cwnd)
//! (`cwnd - (cwnd >> TCP_SCALABLE_MD_SCALE)`, b = 1/8) at every window, with no legacy window.
//!
//! What a counts: with `byte_counting` (RFC 3465, the default) every acknowledged segment, so
//! a means Kelly's a whatever the ACK ratio; without it every ACK, as Linux 2.4's
//! `tcp_cong_avoid` and the 2.4.19 patch counted, and as Linux did until 5.x with
//! `TCP_SCALABLE_AI_CNT 50` "to account for delayed ack": a = 1/50 per ACK, which with delayed
//! ACKs is Kelly's 0.01 per segment, 1 % per round trip. Document 001's "a = 0.02 ... an
//! increase of 2 % each RTT" reads that constant per segment. Document 001 tunes a and b
//! (experiment E1.4).

use super::{
    cong_avoid_ai, counted_segments, linux_2_4_cwr_ssthresh, slow_start_first, AckSample, CaState, CcState,
    CongestionControl,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Standard TCP's decrease below the legacy window (RFC 5681 eq. 4).
const STANDARD_DECREASE: f64 = 0.5;

/// Which Scalable TCP (`ScalableConfig::variant`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ScalableVariant {
    /// Kelly 2003: a per counted segment above the legacy window, standard TCP below it.
    Paper,
    /// Kelly's patch as Linux `tcp_scalable.c` runs it: one segment per min(cwnd, 1/a)
    /// counted units, the decrease b at every window.
    Linux,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScalableConfig {
    /// Which form: `paper` (Kelly 2003) or `linux` (`tcp_scalable.c`).
    pub variant: ScalableVariant,
    /// Increase per counted unit (acknowledged segment, or ACK without byte counting),
    /// segments: the window grows by a x cwnd per RTT (Kelly 2003: 0.01; document 001 uses
    /// 0.02 and tunes it). The linux form's `TCP_SCALABLE_AI_CNT` is 1/a.
    pub a: f64,
    /// Fraction of the window given up on a congestion signal (Kelly 2003: 0.125; Linux
    /// `TCP_SCALABLE_MD_SCALE` 3, i.e. 1/8).
    pub b: f64,
    /// Legacy window, segments: below it the paper form is standard TCP (Kelly 2003: lwnd =
    /// 16). The linux form has none (its legacy window is 1/a, for growth only).
    pub low_window: u32,
    /// Count the segments each ACK covers (RFC 3465) rather than the ACKs (Linux 2.4).
    pub byte_counting: bool,
    /// A window reduction without a loss (CWR: local congestion, ECN) sets ssthresh to half
    /// the window, as Linux 2.4's `__tcp_enter_cwr` did, instead of by b.
    pub cwr_halves: bool,
}

impl ScalableConfig {
    /// Checks the parameters; the error names the parameter, its value and the rule.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.a > 0.0 && self.a <= 1.0) {
            return Err(format!("a: {} is not allowed: must be in (0, 1] (at most doubling per RTT)", self.a));
        }
        if !(self.b > 0.0 && self.b < 1.0) {
            return Err(format!("b: {} is not allowed: must be in (0, 1)", self.b));
        }
        Ok(())
    }

    /// The linux form's `TCP_SCALABLE_AI_CNT`: counted units per segment of increase, 1/a
    /// rounded (a = 1/50 gives 50; a = 2/25 gives 13, as no integer gives 12.5).
    pub fn ai_cnt(&self) -> u32 {
        ((1.0 / self.a).round() as u32).max(1)
    }
}

pub struct Scalable {
    cfg: ScalableConfig,
    /// Units counted in congestion avoidance since the last window cut, and the segments
    /// added for them so far (paper form): the window owes floor(a x counted) - added.
    /// Counting from the cut, rather than summing a per ACK, makes any a exact (not only
    /// reciprocals of integers) without rounding drift.
    acked_since_cut: u64,
    added_since_cut: u64,
}

impl Scalable {
    pub fn new(cfg: ScalableConfig) -> Self {
        Scalable { cfg, acked_since_cut: 0, added_since_cut: 0 }
    }

    fn below_legacy_window(&self, cwnd: u32) -> bool {
        self.cfg.variant == ScalableVariant::Paper && cwnd < self.cfg.low_window
    }
}

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let b = if self.below_legacy_window(s.cwnd) { STANDARD_DECREASE } else { self.cfg.b };
        match self.cfg.variant {
            ScalableVariant::Paper => ((s.cwnd as f64 * (1.0 - b)) as u32).max(2),
            // cwnd - (cwnd >> 3): the part given up is rounded down.
            ScalableVariant::Linux => (s.cwnd - (s.cwnd as f64 * b) as u32).max(2),
        }
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = slow_start_first(s, counted_segments(ack, self.cfg.byte_counting)) else {
            return;
        };
        if self.cfg.variant == ScalableVariant::Linux {
            cong_avoid_ai(s, s.cwnd.min(self.cfg.ai_cnt()), acked);
            return;
        }
        if self.below_legacy_window(s.cwnd) {
            cong_avoid_ai(s, s.cwnd, acked);
            return;
        }
        self.acked_since_cut += acked as u64;
        let earned = (self.cfg.a * self.acked_since_cut as f64) as u64;
        if earned > self.added_since_cut {
            let add = (earned - self.added_since_cut).min(u32::MAX as u64) as u32;
            self.added_since_cut = earned;
            s.cwnd = s.cwnd.saturating_add(add);
        }
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        // A window cut forfeits increase earned on the old window, as the core's cwnd_cnt.
        if new != CaState::Open {
            self.acked_since_cut = 0;
            self.added_since_cut = 0;
        }
        if new == CaState::Cwr && self.cfg.cwr_halves {
            s.ssthresh = linux_2_4_cwr_ssthresh(s.cwnd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{ack, state};

    /// One RTT: the window acknowledged in ACKs of `per_ack` segments.
    fn one_rtt(c: &mut Scalable, s: &mut CcState, per_ack: u32) {
        for _ in 0..s.cwnd / per_ack {
            c.cong_avoid(s, &ack(per_ack));
        }
    }

    #[test]
    fn grows_by_the_factor_one_plus_a_per_rtt() {
        let mut c = Scalable::new(ScalableConfig::default());
        let mut s = state(1000, 10);
        one_rtt(&mut c, &mut s, 1);
        assert_eq!(s.cwnd, 1010);
        // 100 RTTs: (1.01)^100 = 2.70; the integer window loses a little each RTT.
        let mut s = state(1000, 10);
        for _ in 0..100 {
            one_rtt(&mut c, &mut s, 1);
        }
        let law = 1000.0 * 1.01f64.powi(100);
        assert!((s.cwnd as f64 / law - 1.0).abs() < 0.02, "cwnd {} vs {law}", s.cwnd);
    }

    #[test]
    fn delayed_acks_do_not_slow_growth() {
        let mut c = Scalable::new(ScalableConfig::default());
        let mut s = state(1000, 10);
        one_rtt(&mut c, &mut s, 2);
        assert_eq!(s.cwnd, 1010);
    }

    #[test]
    fn parameters_set_growth_and_cut() {
        // Document 001's a = 1/50 doubles the increase; b = 1/8 cuts an eighth.
        let mut c = Scalable::new(ScalableConfig { a: 0.02, ..Default::default() });
        let mut s = state(1000, 10);
        one_rtt(&mut c, &mut s, 1);
        assert_eq!(s.cwnd, 1020);
        assert_eq!(c.ssthresh(&state(800, 10)), 700);
        // a = 2/25 (E1.4) is not a reciprocal of an integer and is still exact.
        let mut c = Scalable::new(ScalableConfig { a: 0.08, b: 0.5, ..Default::default() });
        let mut s = state(1000, 10);
        one_rtt(&mut c, &mut s, 1);
        assert_eq!(s.cwnd, 1080);
        assert_eq!(c.ssthresh(&state(800, 10)), 400);
    }

    #[test]
    fn standard_tcp_below_the_legacy_window() {
        let mut c = Scalable::new(ScalableConfig::default());
        let mut s = state(12, 5);
        one_rtt(&mut c, &mut s, 1);
        assert_eq!(s.cwnd, 13, "one segment per RTT");
        assert_eq!(c.ssthresh(&state(12, 5)), 6, "halves");
        assert_eq!(c.ssthresh(&state(16, 5)), 14, "at lwnd Scalable's b applies");
    }

    #[test]
    fn validation_names_the_parameter() {
        let bad = ScalableConfig { b: 1.0, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("b: 1 is not allowed"));
        let bad = ScalableConfig { a: 0.0, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("a: 0 is not allowed"));
        assert!(ScalableConfig::default().validate().is_ok());
    }

    fn linux_2_4(a: f64) -> Scalable {
        Scalable::new(ScalableConfig {
            variant: ScalableVariant::Linux,
            a,
            byte_counting: false,
            cwr_halves: true,
            ..Default::default()
        })
    }

    #[test]
    fn kellys_2_4_19_patch_adds_one_segment_per_50_acks() {
        // TCP_SCALABLE_AI_CNT 50, counted per ACK: a window of 1000 segments acknowledged by
        // delayed ACKs (500 ACKs of 2) grows by 10, 1 % per round trip, not 2 %.
        let mut c = linux_2_4(0.02);
        let mut s = state(1000, 10);
        one_rtt(&mut c, &mut s, 2);
        assert_eq!(s.cwnd, 1010);
        // One segment exactly at the 50th ACK.
        let mut s = state(1000, 10);
        for _ in 0..49 {
            c.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 1000);
        c.cong_avoid(&mut s, &ack(2));
        assert_eq!(s.cwnd, 1001);
        // Below AI_CNT the growth is standard TCP's: one segment per cwnd ACKs.
        let mut s = state(40, 10);
        for _ in 0..40 {
            c.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 41);
        assert_eq!(ScalableConfig { a: 0.08, ..Default::default() }.ai_cnt(), 13);
    }

    #[test]
    fn linux_2_4_slow_start_is_one_segment_per_ack() {
        let mut c = linux_2_4(0.02);
        let mut s = state(10, u32::MAX);
        for _ in 0..5 {
            c.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 15, "five delayed ACKs, five segments (byte counting gives 20)");
    }

    #[test]
    fn linux_form_cuts_an_eighth_rounded_down_at_every_window() {
        let mut c = linux_2_4(0.02);
        assert_eq!(c.ssthresh(&state(100, 10)), 100 - 12, "cwnd - (cwnd >> 3)");
        assert_eq!(c.ssthresh(&state(12, 10)), 11, "no legacy window on the decrease");
        assert_eq!(c.ssthresh(&state(2, 1)), 2);
    }

    #[test]
    fn cwr_halves_as_linux_2_4_tcp_enter_cwr() {
        let mut c = linux_2_4(0.02);
        let mut s = state(1000, 10);
        s.ssthresh = c.ssthresh(&s);
        assert_eq!(s.ssthresh, 875);
        c.set_state(&mut s, CaState::Cwr);
        assert_eq!(s.ssthresh, 500, "tcp_recalc_ssthresh: half the window");
        // A loss (fast recovery) keeps the patch's own decrease.
        let mut s = state(1000, 10);
        s.ssthresh = c.ssthresh(&s);
        c.set_state(&mut s, CaState::Recovery);
        assert_eq!(s.ssthresh, 875);
        // Without cwr_halves CWR keeps b.
        let mut c = Scalable::new(ScalableConfig::default());
        let mut s = state(1000, 10);
        s.ssthresh = c.ssthresh(&s);
        c.set_state(&mut s, CaState::Cwr);
        assert_eq!(s.ssthresh, 875);
    }
}
