//! BIC-TCP, binary increase congestion control (Xu, Harfoush & Rhee, "Binary Increase
//! Congestion Control for Fast, Long Distance Networks", INFOCOM 2004), as Linux
//! `tcp_bic.c` implements it.
//!
//! After a loss the window that caused it is W_max and the window after the cut W_min; the
//! window then searches for the available capacity between them:
//!
//! - binary search increase: each RTT the window moves toward the midpoint, growing by
//!   (W_max - cwnd) / B segments (Linux divides by B = 4 rather than 2, a slower approach);
//! - additive increase: a step larger than S_max (`max_increment`) is capped at S_max, so
//!   far below W_max the window grows linearly;
//! - near the target (within B segments) it grows by only B / smooth_part per RTT, so the
//!   window lingers where the last loss was;
//! - max probing above W_max, the mirror image: slowly at first, then a slow-start-like
//!   acceleration for S_max (B - 1) segments, then S_max per RTT.
//!
//! A loss sets W_max to cwnd and cuts cwnd to beta x cwnd. With fast convergence a loss below
//! the previous W_max sets W_max to (1 + beta) / 2 x cwnd instead, releasing bandwidth to
//! newer flows (Xu et al.). Up to `low_window` BIC is standard TCP (growth of
//! one segment per RTT, halving on loss). Before the first loss the window grows at least 5%
//! per RTT in congestion avoidance (Linux: at most 20 segments per increment).
//!
//! Each step is expressed, as in Linux, as `cnt`: segments to acknowledge per one-segment
//! increase, cwnd / (increase per RTT). Linux counts ACKs and divides cnt by a running
//! estimate of segments per ACK (delayed ACKs); this core tells the algorithm how many
//! segments each ACK covers, so growth counts them exactly instead.
//!
//! Undo of a spurious reduction is Linux's `tcp_reno_undo_cwnd` (the trait's default): since
//! Linux 4.14 ("tcp: consolidate congestion control undo functions") BIC no longer returns to
//! max(cwnd, last_max_cwnd) or its `loss_cwnd`.

use super::{cong_avoid_ai, slow_start_first, AckSample, CaState, CcState, CongestionControl};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// B: the binary search moves 1/B of the way to W_max per RTT (Linux `BICTCP_B`).
const BINARY_SEARCH_DIVISOR: u32 = 4;

/// Before the first loss, at most this many acknowledged segments per one-segment increase:
/// the window grows at least 1/20 = 5% per RTT (Linux `bictcp_update`).
const NO_LOSS_MAX_CNT: u32 = 20;

/// Standard TCP's decrease at or below `low_window` (Linux halves there).
const STANDARD_DECREASE_FACTOR: f64 = 0.5;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BicConfig {
    /// S_max: the largest increase per RTT, segments (Linux `max_increment`: 16).
    pub max_increment: u32,
    /// Up to this window, segments, BIC is standard TCP (Linux `low_window`: 14).
    pub low_window: u32,
    /// Window kept after a loss, as a fraction (Linux `beta`: 819/1024 = 0.7998).
    pub beta: f64,
    /// Near W_max the window grows by B / smooth_part segments per RTT, so it takes about
    /// smooth_part RTTs to cross the last B segments (Linux `smooth_part`: 20).
    pub smooth_part: u32,
    /// Lower W_max further on a loss below the previous W_max (Linux `fast_convergence`: on).
    pub fast_convergence: bool,
}

impl BicConfig {
    /// Checks the parameters; the error names the parameter, its value and the rule.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_increment == 0 {
            return Err("max_increment: 0 is not allowed: must be at least 1 segment per RTT".into());
        }
        if self.smooth_part == 0 {
            return Err("smooth_part: 0 is not allowed: must be at least 1 RTT".into());
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(format!("beta: {} is not allowed: must be in (0, 1)", self.beta));
        }
        Ok(())
    }
}

pub struct Bic {
    cfg: BicConfig,
    /// W_max: the window at the last loss (lowered by fast convergence), segments; 0 before
    /// the first loss and after a timeout (Linux `last_max_cwnd`).
    last_max_cwnd: u32,
}

impl Bic {
    pub fn new(cfg: BicConfig) -> Self {
        Bic { cfg, last_max_cwnd: 0 }
    }

    /// Segments to acknowledge per one-segment increase at window `cwnd` (Linux `ca->cnt`).
    pub fn cnt(&self, cwnd: u32) -> u32 {
        let b = BINARY_SEARCH_DIVISOR;
        let (s_max, w_max) = (self.cfg.max_increment, self.last_max_cwnd);
        let smooth = cwnd.saturating_mul(self.cfg.smooth_part) / b;
        let cnt = if cwnd <= self.cfg.low_window {
            cwnd
        } else if cwnd < w_max {
            let dist = (w_max - cwnd) / b;
            if dist > s_max {
                cwnd / s_max
            } else if dist <= 1 {
                smooth
            } else {
                cwnd / dist
            }
        } else if cwnd < w_max.saturating_add(b) {
            smooth
        } else if cwnd < w_max.saturating_add(s_max.saturating_mul(b - 1)) {
            // Max probing: the increase per RTT, (cwnd - W_max) / (B - 1), doubles as the
            // window moves away from W_max.
            cwnd.saturating_mul(b - 1) / (cwnd - w_max)
        } else {
            cwnd / s_max
        };
        let cnt = if w_max == 0 { cnt.min(NO_LOSS_MAX_CNT) } else { cnt };
        cnt.max(1)
    }
}

impl CongestionControl for Bic {
    fn name(&self) -> &'static str {
        "bic"
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let cwnd = s.cwnd;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.cfg.fast_convergence {
            (cwnd as f64 * (1.0 + self.cfg.beta) / 2.0) as u32
        } else {
            cwnd
        };
        let factor = if cwnd <= self.cfg.low_window { STANDARD_DECREASE_FACTOR } else { self.cfg.beta };
        ((cwnd as f64 * factor) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = slow_start_first(s, ack.delivered_segments) else {
            return;
        };
        let cnt = self.cnt(s.cwnd);
        cong_avoid_ai(s, cnt, acked);
    }

    fn set_state(&mut self, _s: &mut CcState, new: CaState) {
        // After a timeout the old W_max says nothing about the path (Linux `bictcp_state`).
        if new == CaState::Loss {
            self.last_max_cwnd = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{ack, state};

    /// One RTT of congestion avoidance, one ACK per segment; returns the growth.
    fn one_rtt(b: &mut Bic, s: &mut CcState) -> u32 {
        let before = s.cwnd;
        for _ in 0..s.cwnd {
            b.cong_avoid(s, &ack(1));
        }
        s.cwnd - before
    }

    fn after_loss_at(w_max: u32) -> (Bic, CcState) {
        let mut b = Bic::new(BicConfig::default());
        let ssthresh = b.ssthresh(&state(w_max, 10));
        (b, state(ssthresh, ssthresh))
    }

    #[test]
    fn loss_keeps_beta_of_the_window() {
        let (b, s) = after_loss_at(1000);
        assert_eq!(s.cwnd, 799, "819/1024 of 1000");
        assert_eq!(b.last_max_cwnd, 1000);
        let mut b = Bic::new(BicConfig::default());
        assert_eq!(b.ssthresh(&state(12, 10)), 6, "standard TCP up to low_window");
    }

    #[test]
    fn additive_then_binary_search_then_smooth() {
        let (mut b, mut s) = after_loss_at(1000);
        // Far below W_max (distance / 4 > 16): S_max = 16 segments per RTT.
        let g = one_rtt(&mut b, &mut s);
        assert!((16..=17).contains(&g), "additive increase {g}");
        // Bring the window to within 4 x 8 = 32 segments: binary search, 8 per RTT at first,
        // less as the distance shrinks within the RTT (7 at 28 segments).
        s.cwnd = 968;
        let g = one_rtt(&mut b, &mut s);
        assert!((6..=8).contains(&g), "binary search {g}");
        // Within B segments: B / smooth_part = 0.2 segment per RTT.
        s.cwnd = 998;
        let mut total = 0;
        for _ in 0..10 {
            total += one_rtt(&mut b, &mut s);
        }
        assert!((1..=3).contains(&total), "smooth approach: {total} in 10 RTTs");
    }

    #[test]
    fn max_probing_accelerates_above_w_max_then_goes_linear() {
        let (mut b, mut s) = after_loss_at(1000);
        s.cwnd = 1008;
        let slow = one_rtt(&mut b, &mut s);
        s.cwnd = 1030;
        let faster = one_rtt(&mut b, &mut s);
        s.cwnd = 1100;
        let linear = one_rtt(&mut b, &mut s);
        // (cwnd - W_max) / (B - 1) per RTT: about 3 at W_max + 8, about 10 at W_max + 30,
        // a little more as the window grows within the RTT.
        assert!((2..=4).contains(&slow) && (10..=13).contains(&faster), "probing {slow}, then {faster}");
        assert!((16..=17).contains(&linear), "S_max beyond W_max + 48: {linear}");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let (mut b, _) = after_loss_at(1000);
        b.ssthresh(&state(900, 10));
        assert_eq!(b.last_max_cwnd, (900.0 * (1.0 + 819.0 / 1024.0) / 2.0) as u32);
        let mut b = Bic::new(BicConfig { fast_convergence: false, ..Default::default() });
        b.ssthresh(&state(1000, 10));
        b.ssthresh(&state(900, 10));
        assert_eq!(b.last_max_cwnd, 900);
    }

    #[test]
    fn parameters_change_the_steps() {
        let mut b = Bic::new(BicConfig { max_increment: 32, beta: 0.5, ..Default::default() });
        let ssthresh = b.ssthresh(&state(2000, 10));
        assert_eq!(ssthresh, 1000);
        let mut s = state(ssthresh, ssthresh);
        let g = one_rtt(&mut b, &mut s);
        assert!((32..=33).contains(&g), "S_max 32: {g}");
    }

    #[test]
    fn before_any_loss_grows_at_least_five_percent_per_rtt() {
        let mut b = Bic::new(BicConfig::default());
        let mut s = state(1000, 500);
        let g = one_rtt(&mut b, &mut s);
        assert!((50..=52).contains(&g), "5% of 1000: {g}");
    }

    #[test]
    fn timeout_forgets_w_max() {
        let (mut b, mut s) = after_loss_at(1000);
        b.set_state(&mut s, CaState::Loss);
        assert_eq!(b.last_max_cwnd, 0);
    }

    #[test]
    fn validation_names_the_parameter() {
        let bad = BicConfig { beta: 1.5, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("beta: 1.5 is not allowed"));
        let bad = BicConfig { max_increment: 0, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("max_increment: 0 is not allowed"));
        assert!(BicConfig::default().validate().is_ok());
    }
}
