//! Standard TCP congestion control: slow start and AIMD congestion avoidance
//! (RFC 5681; Jacobson 1988), generalized to AIMD(a, b).
//!
//! - Congestion avoidance adds `a` segments per RTT (RFC 5681: a = 1).
//! - A congestion signal sets ssthresh to (1 - b) x cwnd, at least 2 segments
//!   (RFC 5681 eq. 4 with b = 0.5; Linux `tcp_reno_ssthresh`).
//! - Byte counting (RFC 3465): off, the window grows by one segment per ACK in slow start and
//!   by 1/cwnd per ACK in congestion avoidance whatever the ACK covers (RFC 5681 3.1), so
//!   delayed ACKs slow growth (document 000 eq. 3.2); on, it grows by the segments each ACK
//!   covers, as Linux does.
//!
//! The `"bsd"` form (`RenoConfig::variant`) is the growth as BSD's `tcp_input.c` wrote it, in
//! bytes (see [`Reno::bsd_open_window`]); `eighth` adds 4.3BSD-Reno's maxseg/8 per ACK in
//! congestion avoidance.

use super::{cong_avoid_ai, counted_segments, slow_start_first, AckSample, CcState, CongestionControl};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which Reno growth (`RenoConfig::variant`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RenoVariant {
    /// RFC 5681 (AIMD(a, b) in segments, optional byte counting).
    Rfc,
    /// BSD's `tcp_input.c` ("open the congestion window"): the window in bytes, one maxseg per
    /// ACK while cwnd <= ssthresh, maxseg * maxseg / cwnd bytes per ACK above it.
    Bsd,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenoConfig {
    /// Additive increase, segments per RTT (RFC 5681: 1).
    pub a: f64,
    /// Multiplicative decrease: the fraction of the window given up on a loss (RFC 5681: 0.5).
    pub b: f64,
    /// Count acknowledged bytes rather than ACKs (RFC 3465 appropriate byte counting).
    pub byte_counting: bool,
    /// Which growth: `rfc` or `bsd` (`tcp_input.c`'s byte arithmetic).
    pub variant: RenoVariant,
    /// `bsd` only: add maxseg / 8 bytes per ACK in congestion avoidance, as 4.3BSD-Reno did
    /// (CSRG tcp_input.c 7.23, 1990-06-28, "faster window opening in linear mode", to 8.6;
    /// removed in 8.7, 1994-10-27, "per Van via Sally Floyd").
    pub eighth: bool,
}

impl RenoConfig {
    /// RFC 5681's AIMD(a, b) growth, for the algorithms that run Reno inside (Westwood's
    /// growth, Linux's tcp_reno_cong_avoid): not a user's default, which the scenario's
    /// tables own.
    pub fn aimd(a: f64, b: f64, byte_counting: bool) -> Self {
        RenoConfig { a, b, byte_counting, variant: RenoVariant::Rfc, eighth: false }
    }
}

impl RenoConfig {
    /// Checks the parameters together; the error names the key, its value and the rule.
    pub fn validate(&self) -> Result<(), String> {
        if self.a.is_nan() || self.a <= 0.0 || !(self.b > 0.0 && self.b < 1.0) {
            return Err("reno needs a > 0 and 0 < b < 1".into());
        }
        if self.variant == RenoVariant::Bsd {
            if self.a != 1.0 {
                return Err(format!(
                    "a: {} is not allowed with variant \"bsd\": BSD adds one segment per window (a = 1)",
                    self.a
                ));
            }
            if self.byte_counting {
                return Err(
                    "byte_counting: true is not allowed with variant \"bsd\": BSD opens the window per ACK".into()
                );
            }
        } else if self.eighth {
            return Err(
                "eighth: true is not allowed with variant \"rfc\": it is 4.3BSD-Reno's; set variant = \"bsd\"".into()
            );
        }
        Ok(())
    }
}

pub struct Reno {
    cfg: RenoConfig,
}

impl Reno {
    pub fn new(cfg: RenoConfig) -> Self {
        Reno { cfg }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        ((s.cwnd as f64 * (1.0 - self.cfg.b)) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if self.cfg.variant == RenoVariant::Bsd {
            if s.cwnd_limited {
                self.bsd_open_window(s);
            }
            return;
        }
        let Some(acked) = slow_start_first(s, counted_segments(ack, self.cfg.byte_counting)) else {
            return;
        };
        // One segment per cwnd/a acknowledged segments = a segments per RTT.
        let w = (s.cwnd as f64 / self.cfg.a).round() as u32;
        cong_avoid_ai(s, w, acked);
    }
}

impl Reno {
    /// One ACK of new data, as BSD's `tcp_input.c` opens the window ("When new data is acked,
    /// open the congestion window", after the ACK's RTT sample and timer restart): with the
    /// window cw and ssthresh in bytes, incr = maxseg; if cw > ssthresh, incr = incr * incr /
    /// cw (integer division), plus incr / 8 with `eighth`; cw += incr. Read in the CSRG SCCS
    /// history of sys/netinet/tcp_input.c: 7.25 (1990-06-30, 4.3BSD-Reno) lines 919-934 with
    /// the eighth, added in 7.23 (1990-06-28, "faster window opening in linear mode (add 1/8
    /// packet, was 146 bytes)"), kept through 8.1 (1993-06-10, 4.4BSD) to 8.6 (1994-08-05);
    /// 8.7 (1994-10-27) drops it "per Van via Sally Floyd".
    ///
    /// The core counts cwnd in segments; the bytes past the last whole segment are kept in
    /// `cwnd_cnt` (which the stack clears whenever it sets cwnd, always to whole segments, as
    /// BSD's ssthresh and its recovery and timeout windows are multiples of maxseg). BSD
    /// compares cw > ssthresh in bytes: at cw = ssthresh exactly the ACK still adds a whole
    /// maxseg, so slow start overshoots ssthresh by one segment. The clamp to TCP_MAXWIN <<
    /// snd_scale is not modelled: the send window is min(cwnd, the peer's window) anyway.
    fn bsd_open_window(&mut self, s: &mut CcState) {
        let maxseg = s.mss_bytes.max(1) as u64;
        let cw = s.cwnd as u64 * maxseg + s.cwnd_cnt as u64;
        let ssthresh = s.ssthresh as u64 * maxseg;
        let mut incr = maxseg;
        if cw > ssthresh {
            incr = incr * incr / cw.max(1);
            if self.cfg.eighth {
                incr += maxseg / 8;
            }
        }
        let cw = cw + incr;
        s.cwnd = (cw / maxseg).min(u32::MAX as u64) as u32;
        s.cwnd_cnt = (cw % maxseg) as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{ack, state};
    use crate::cc::INFINITE_SSTHRESH;

    fn reno(byte_counting: bool) -> Reno {
        Reno::new(RenoConfig::aimd(1.0, 0.5, byte_counting))
    }

    fn bsd(eighth: bool) -> Reno {
        Reno::new(RenoConfig { variant: RenoVariant::Bsd, eighth, ..RenoConfig::aimd(1.0, 0.5, false) })
    }

    /// BSD's recurrence on the window in bytes, written out independently of the algorithm:
    /// N ACKs in congestion avoidance from cw0 bytes.
    fn bsd_recurrence(cw0: u64, maxseg: u64, acks: u32, eighth: bool) -> u64 {
        (0..acks).fold(cw0, |cw, _| cw + maxseg * maxseg / cw + if eighth { maxseg / 8 } else { 0 })
    }

    #[test]
    fn bsd_congestion_avoidance_follows_tcp_input_c_byte_for_byte() {
        for eighth in [false, true] {
            let mut s = state(100, 50);
            let mss = s.mss_bytes as u64;
            let mut r = bsd(eighth);
            for _ in 0..1000 {
                r.cong_avoid(&mut s, &ack(2));
            }
            let cw = s.cwnd as u64 * mss + s.cwnd_cnt as u64;
            assert_eq!(cw, bsd_recurrence(100 * mss, mss, 1000, eighth), "eighth {eighth}");
        }
    }

    #[test]
    fn the_eighth_adds_about_a_window_over_eight_per_window_of_acks() {
        // One window of W ACKs: without the eighth W x maxseg^2 / cw is just under one
        // segment (integer division rounds each term down); with it, W / 8 more.
        let w = 160;
        let grow = |eighth: bool| {
            let mut s = state(w, 2);
            let mut r = bsd(eighth);
            for _ in 0..w {
                r.cong_avoid(&mut s, &ack(1));
            }
            s.cwnd - w
        };
        assert_eq!(grow(false), 0, "just under one segment: still {w}");
        assert_eq!(grow(true), w / 8, "W/8 = 20 segments more (and the fraction of one)");
    }

    #[test]
    fn bsd_slow_start_adds_a_segment_up_to_and_at_ssthresh() {
        let mut s = state(10, 12);
        let mut r = bsd(true);
        for _ in 0..3 {
            r.cong_avoid(&mut s, &ack(2));
        }
        // 10 -> 11 -> 12 -> 13: cw = ssthresh is not above it, so the third ACK adds maxseg.
        assert_eq!((s.cwnd, s.cwnd_cnt), (13, 0));
    }

    #[test]
    fn bsd_variant_refuses_what_bsd_did_not_have() {
        let bad = |c: RenoConfig| c.validate().unwrap_err();
        assert!(bad(RenoConfig { variant: RenoVariant::Bsd, a: 2.0, ..RenoConfig::default() }).starts_with("a: 2"));
        assert!(bad(RenoConfig { variant: RenoVariant::Bsd, byte_counting: true, ..RenoConfig::default() })
            .starts_with("byte_counting"));
        assert!(bad(RenoConfig { eighth: true, ..RenoConfig::default() }).starts_with("eighth"));
        assert!(RenoConfig { variant: RenoVariant::Bsd, eighth: true, ..RenoConfig::default() }.validate().is_ok());
    }

    #[test]
    fn slow_start_one_segment_per_ack_without_byte_counting() {
        let mut s = state(10, INFINITE_SSTHRESH);
        let mut r = reno(false);
        for _ in 0..5 {
            r.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 15);
        let mut s = state(10, INFINITE_SSTHRESH);
        let mut r = reno(true);
        for _ in 0..5 {
            r.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 20);
    }

    #[test]
    fn congestion_avoidance_adds_one_segment_per_window_of_acks() {
        let mut s = state(100, 50);
        let mut r = reno(false);
        for _ in 0..100 {
            r.cong_avoid(&mut s, &ack(1));
        }
        assert_eq!(s.cwnd, 101);
    }

    #[test]
    fn halves_and_floors_at_two() {
        let mut r = reno(false);
        assert_eq!(r.ssthresh(&state(100, 50)), 50);
        assert_eq!(r.ssthresh(&state(3, 50)), 2);
        let mut r = Reno::new(RenoConfig { b: 0.125, ..RenoConfig::default() });
        assert_eq!(r.ssthresh(&state(800, 50)), 700);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut s = state(10, INFINITE_SSTHRESH);
        s.cwnd_limited = false;
        reno(false).cong_avoid(&mut s, &ack(1));
        assert_eq!(s.cwnd, 10);
    }
}
