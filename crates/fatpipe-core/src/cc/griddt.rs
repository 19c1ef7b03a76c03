//! GridDT 3.1 (document 004, sections 3.2 and 4.3: a Linux 2.4.26/2.6.5 patch by Ravot,
//! Sarbu and the report's author): standard TCP with a congestion-avoidance increase scaled by
//! the flow's MSS and RTT, spread over the round-trip, and a configurable decrease.
//!
//! 1. Increase (section 4.3.1, `add_inc`): congestion avoidance adds
//!    add = mssval x rttval segments per RTT, where
//!    mssval = 1 if MSS >= mss_ref, else mss_ref / MSS, and
//!    rttval = 1 if minRTT <= rtt_ref, else (minRTT / rtt_ref)^2,
//!    both in integer arithmetic as the patch computes them (the report's prose omits the
//!    square; its code squares). Flows with small segments or long paths thus grow faster,
//!    which is GridDT's fairness goal. minRTT is the smallest RTT measured (the core's
//!    `min_rtt`); the patch keeps the smallest `tp->srtt`, which Linux stores scaled by 8, so
//!    the printed `add_inc` compares 8 x RTT with rtt_ref. We follow
//!    the stated meaning (minRTT against rtt_ref); a reproduction of document 004's figures
//!    should keep that in mind.
//! 2. Spread over one RTT (section 4.3.1, `tcp_cong_avoid`): rather than add segments at once,
//!    one segment per cwnd / add acknowledged segments (at least one), so the window rises
//!    steadily through the RTT instead of releasing a burst. This is the printed code's
//!    intent (`snd_cwnd_div_inc = cwnd / add`); as printed, its counter advances the window
//!    every div_inc - 1 ACKs after the first, and only once per window when add >= cwnd.
//!    The patch counted ACKs (its kernels had no appropriate byte counting), so delayed ACKs
//!    halve the increase; `byte_counting` counts acknowledged segments instead (RFC 3465).
//! 3. Decrease (`tcp_recalc_ssthresh`, `tcp_cwnd_down`, `tcp_complete_cwr`): a loss detected
//!    by duplicate ACKs leaves the window at max(cwnd - cwnd / cwnd_decr, 2), so cwnd_decr = 2
//!    is standard halving and 8 gives back one eighth. Here that is the ssthresh the core
//!    recovers to. After a timeout the patch's unchanged `tcp_recalc_ssthresh` applies:
//!    ssthresh = max(cwnd / 2, 2), cwnd = 1, then slow start.
//! 4. Slow start is standard. GridDT's Limited Slow Start (RFC 3742, section 4.3.2) and
//!    Delayed Congestion Response (section 4.3.3) are per-flow options of the core
//!    (`max_ssthresh` in [`slow_start`], the duplicate-ACK threshold), not part of this file.

use super::{cong_avoid_ai, slow_start_first, AckSample, CaState, CcState, CongestionControl};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Smallest window after a loss, segments (the patch's `max(..., 2U)`).
pub const MIN_CWND_AFTER_LOSS_SEGMENTS: u32 = 2;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GridDtConfig {
    /// Reference segment size, bytes: a flow whose MSS is smaller adds mss_ref / MSS times
    /// more per RTT. Default 1500 (document 004, `sysctl_tcp_mss_ref`).
    pub mss_ref_bytes: u32,
    /// Reference RTT, picoseconds: a flow whose minimum RTT is longer adds
    /// (minRTT / rtt_ref)^2 times more per RTT. Default 10 ms (document 004,
    /// `sysctl_tcp_rtt_ref`); document 004's tests used 50 ms.
    pub rtt_ref_ps: Time,
    /// A loss takes cwnd / cwnd_decr off the window. Default 2, standard halving (document
    /// 004, `sysctl_tcp_cwnd_decr`); document 004's tests used 8.
    pub cwnd_decr: u32,
    /// Grow by the segments each ACK covers (RFC 3465) rather than per ACK, in slow start and
    /// congestion avoidance. Default false: the patch's kernels counted ACKs.
    pub byte_counting: bool,
}

impl GridDtConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.mss_ref_bytes == 0 {
            return Err("mss_ref_bytes: 0 is not allowed: must be positive".into());
        }
        if self.rtt_ref_ps == 0 {
            return Err("rtt_ref_ps: 0 is not allowed: must be positive".into());
        }
        if self.cwnd_decr == 0 {
            return Err("cwnd_decr: 0 is not allowed: must be at least 1 (the divisor of the decrease)".into());
        }
        Ok(())
    }
}

pub struct GridDt {
    cfg: GridDtConfig,
    /// cwnd when the last congestion signal came, for the timeout's halving.
    cwnd_at_signal: u32,
}

impl GridDt {
    pub fn new(cfg: GridDtConfig) -> Self {
        GridDt { cfg, cwnd_at_signal: 0 }
    }

    /// Segments added per RTT in congestion avoidance (the patch's `add_inc`).
    pub fn additive_increase_segments(&self, s: &CcState) -> u32 {
        let mssval = if s.mss_bytes >= self.cfg.mss_ref_bytes { 1 } else { self.cfg.mss_ref_bytes / s.mss_bytes };
        let rttval = match s.min_rtt {
            Some(min_rtt) if min_rtt > self.cfg.rtt_ref_ps => {
                let ratio = min_rtt / self.cfg.rtt_ref_ps;
                ratio.saturating_mul(ratio).min(u32::MAX as u64) as u32
            }
            _ => 1,
        };
        mssval.saturating_mul(rttval)
    }
}

impl CongestionControl for GridDt {
    fn name(&self) -> &'static str {
        "griddt"
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.cwnd_at_signal = s.cwnd;
        (s.cwnd - s.cwnd / self.cfg.cwnd_decr).max(MIN_CWND_AFTER_LOSS_SEGMENTS)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = slow_start_first(s, if self.cfg.byte_counting { ack.delivered_segments } else { 1 }) else {
            return;
        };
        let add = self.additive_increase_segments(s).max(1);
        cong_avoid_ai(s, (s.cwnd / add).max(1), acked);
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Loss {
            // A timeout slow-starts towards half the window, not to cwnd - cwnd / cwnd_decr.
            s.ssthresh = (self.cwnd_at_signal / 2).max(MIN_CWND_AFTER_LOSS_SEGMENTS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::ack;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::PS_PER_MS;

    fn state(cwnd: u32, ssthresh: u32, mss: u32, min_rtt_ms: u64) -> CcState {
        CcState {
            srtt: Some(min_rtt_ms * PS_PER_MS),
            min_rtt: Some(min_rtt_ms * PS_PER_MS),
            ..CcState::new(cwnd, ssthresh, mss)
        }
    }

    fn griddt(rtt_ref_ms: u64, cwnd_decr: u32) -> GridDt {
        GridDt::new(GridDtConfig {
            mss_ref_bytes: 1500,
            rtt_ref_ps: rtt_ref_ms * PS_PER_MS,
            cwnd_decr,
            byte_counting: true,
        })
    }

    #[test]
    fn increase_scales_with_mss_and_the_square_of_rtt_in_integers() {
        let g = griddt(10, 2);
        assert_eq!(g.additive_increase_segments(&state(100, 50, 1448, 40)), 16, "(40/10)^2, 1500/1448 = 1");
        assert_eq!(g.additive_increase_segments(&state(100, 50, 1448, 45)), 16, "45/10 = 4 in integers");
        assert_eq!(g.additive_increase_segments(&state(100, 50, 1448, 9)), 1, "below rtt_ref");
        assert_eq!(g.additive_increase_segments(&state(100, 50, 536, 9)), 2, "1500/536 = 2");
        assert_eq!(g.additive_increase_segments(&state(100, 50, 8948, 9)), 1, "jumbo frames: 1");
        // Document 004's tests: rtt_ref 50 ms on a 120 ms path.
        assert_eq!(griddt(50, 8).additive_increase_segments(&state(100, 50, 1448, 120)), 4);
        let mut s = state(100, 50, 1448, 40);
        s.min_rtt = None;
        assert_eq!(g.additive_increase_segments(&s), 1, "no RTT measured yet");
    }

    #[test]
    fn the_increase_is_spread_over_the_round_trip() {
        // add = 16 on a window of 160: one segment per 10 acknowledged, not 16 at once.
        let mut g = griddt(10, 2);
        let mut s = state(160, 100, 1448, 40);
        let mut steps = Vec::new();
        for _ in 0..160 {
            let before = s.cwnd;
            g.cong_avoid(&mut s, &ack(1));
            if s.cwnd > before {
                steps.push(s.cwnd - before);
            }
        }
        assert!(steps.iter().all(|&d| d == 1), "{steps:?}");
        assert!((15..=16).contains(&(s.cwnd - 160)), "grew by {}", s.cwnd - 160);
        // Standard TCP's increase on the same ACKs is one segment.
        let mut g = griddt(100, 2);
        let mut s = state(160, 100, 1448, 40);
        for _ in 0..160 {
            g.cong_avoid(&mut s, &ack(1));
        }
        assert_eq!(s.cwnd, 161);
    }

    #[test]
    fn slow_start_is_standard() {
        let mut g = griddt(10, 2);
        let mut s = state(10, INFINITE_SSTHRESH, 1448, 40);
        for _ in 0..5 {
            g.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 20);
        // Counting ACKs, as the patch's kernels did: one segment per ACK.
        let mut g = GridDt::new(GridDtConfig { byte_counting: false, ..g.cfg.clone() });
        let mut s = state(10, INFINITE_SSTHRESH, 1448, 40);
        for _ in 0..5 {
            g.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 15);
    }

    #[test]
    fn a_loss_takes_cwnd_over_cwnd_decr_and_a_timeout_halves() {
        let mut g = griddt(10, 8);
        assert_eq!(g.ssthresh(&state(800, 50, 1448, 40)), 700);
        assert_eq!(griddt(10, 2).ssthresh(&state(800, 50, 1448, 40)), 400);
        assert_eq!(g.ssthresh(&state(2, 50, 1448, 40)), 2);
        // Timeout from the open state: the core asks for ssthresh, sets cwnd = 1, then Loss.
        let mut s = state(800, 50, 1448, 40);
        s.ssthresh = g.ssthresh(&s);
        s.cwnd = 1;
        g.set_state(&mut s, CaState::Loss);
        assert_eq!((s.cwnd, s.ssthresh), (1, 400));
        // Fast recovery keeps the core's window.
        let mut s = state(703, 700, 1448, 40);
        g.set_state(&mut s, CaState::Recovery);
        assert_eq!((s.cwnd, s.ssthresh), (703, 700));
    }

    #[test]
    fn validation_names_the_parameter() {
        let e = GridDtConfig { mss_ref_bytes: 1500, rtt_ref_ps: PS_PER_MS, cwnd_decr: 0, byte_counting: false }
            .validate()
            .unwrap_err();
        assert!(e.starts_with("cwnd_decr: 0 is not allowed"), "{e}");
        let spec: crate::cc::CcSpec =
            serde_json::from_str(
            r#"{"algorithm": "griddt", "mss_ref_bytes": 1500, "rtt_ref_ps": 10000000000, "cwnd_decr": 2, "byte_counting": false}"#,
        ).unwrap();
        assert_eq!(spec.build().name(), "griddt");
    }
}
