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

use super::{cong_avoid_ai, counted_segments, slow_start_first, AckSample, CcState, CongestionControl};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenoConfig {
    /// Additive increase, segments per RTT (RFC 5681: 1).
    pub a: f64,
    /// Multiplicative decrease: the fraction of the window given up on a loss (RFC 5681: 0.5).
    pub b: f64,
    /// Count acknowledged bytes rather than ACKs (RFC 3465 appropriate byte counting).
    pub byte_counting: bool,
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
        let Some(acked) = slow_start_first(s, counted_segments(ack, self.cfg.byte_counting)) else {
            return;
        };
        // One segment per cwnd/a acknowledged segments = a segments per RTT.
        let w = (s.cwnd as f64 / self.cfg.a).round() as u32;
        cong_avoid_ai(s, w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{ack, state};
    use crate::cc::INFINITE_SSTHRESH;

    fn reno(byte_counting: bool) -> Reno {
        Reno::new(RenoConfig { a: 1.0, b: 0.5, byte_counting })
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
        let mut r = Reno::new(RenoConfig { a: 1.0, b: 0.125, byte_counting: false });
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
