//! Scalable TCP (Kelly, "Scalable TCP: improving performance in highspeed wide area
//! networks", ACM CCR 33(2), 2003): multiplicative increase, multiplicative decrease.
//!
//! - Congestion avoidance: cwnd += a for every acknowledged segment, so the window grows by
//!   the factor (1 + a) each RTT whatever its size, and the time to recover from a loss does
//!   not grow with the window (Kelly 2003).
//! - A congestion signal: cwnd -= b x cwnd.
//! - Below the legacy window `low_window` the flow is standard TCP (AIMD(1, 0.5)), so small
//!   windows share fairly with it (Kelly 2003, lwnd).
//!
//! Kelly recommends a = 0.01 and b = 0.125. Document 001's kernel used a = 0.02 per ACK, and
//! Linux `tcp_scalable.c` grows by 1/50 per acknowledged segment "to account for delayed
//! ACKs"; here growth counts acknowledged segments (RFC 3465, as Linux), so a means what
//! Kelly's a means whatever the ACK ratio. Document 001 tunes a and b (experiment E1.4).

use super::{cong_avoid_ai, slow_start_first, AckSample, CaState, CcState, CongestionControl};
use schemars::JsonSchema;
use serde::Deserialize;

/// Standard TCP's decrease below the legacy window (RFC 5681 eq. 4).
const STANDARD_DECREASE: f64 = 0.5;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScalableConfig {
    /// Increase per acknowledged segment, segments: the window grows by a x cwnd per RTT
    /// (Kelly 2003: 0.01; document 001 uses 0.02 and tunes it).
    pub a: f64,
    /// Fraction of the window given up on a congestion signal (Kelly 2003: 0.125; Linux
    /// `TCP_SCALABLE_MD_SCALE` 3, i.e. 1/8).
    pub b: f64,
    /// Legacy window, segments: below it the flow is standard TCP (Kelly 2003: lwnd = 16).
    pub low_window: u32,
}

impl Default for ScalableConfig {
    fn default() -> Self {
        ScalableConfig { a: 0.01, b: 0.125, low_window: 16 }
    }
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
}

pub struct Scalable {
    cfg: ScalableConfig,
    /// Segments acknowledged in congestion avoidance since the last window cut, and the
    /// segments added for them so far: the window owes floor(a x acked) - added. Counting
    /// from the cut, rather than summing a per ACK, makes any a exact (not only reciprocals
    /// of integers) without rounding drift.
    acked_since_cut: u64,
    added_since_cut: u64,
}

impl Scalable {
    pub fn new(cfg: ScalableConfig) -> Self {
        Scalable { cfg, acked_since_cut: 0, added_since_cut: 0 }
    }

    fn below_legacy_window(&self, cwnd: u32) -> bool {
        cwnd < self.cfg.low_window
    }
}

impl CongestionControl for Scalable {
    fn name(&self) -> &'static str {
        "scalable"
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let b = if self.below_legacy_window(s.cwnd) { STANDARD_DECREASE } else { self.cfg.b };
        ((s.cwnd as f64 * (1.0 - b)) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = slow_start_first(s, ack.delivered_segments) else {
            return;
        };
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

    fn set_state(&mut self, _s: &mut CcState, new: CaState) {
        // A window cut forfeits increase earned on the old window, as the core's cwnd_cnt.
        if new != CaState::Open {
            self.acked_since_cut = 0;
            self.added_since_cut = 0;
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
        let mut c = Scalable::new(ScalableConfig { a: 0.08, b: 0.5, low_window: 16 });
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
}
