//! DCTCP (RFC 8257; Alizadeh et al., SIGCOMM 2010), as Linux's net/ipv4/tcp_dctcp.c runs it.
//!
//! The sender keeps alpha, an estimate of the fraction of its segments that were CE-marked:
//! once per window of data (when snd_una passes the snd_nxt of the window's start) it takes
//! F = marked / delivered segments over that window and sets alpha = (1 - g) alpha + g F
//! (RFC 8257 section 3.3). On an ECN echo the stack enters CWR (once per window, as for
//! RFC 3168) and asks `ssthresh`, which answers cwnd x (1 - alpha / 2) (section 3.4), so the
//! window comes down in proportion to the extent of congestion instead of by half. A loss
//! still halves it (section 3.5). Growth is Reno's (Linux `tcp_reno_cong_avoid`).
//!
//! The receiver's half, an ECN echo that follows the CE state of every segment (section
//! 3.2), is `tcp/receiver.rs` (`EcnFeedback::Dctcp`); the core counts the marked segments
//! each ACK delivers (`CcState::delivered_ce_segments`, Linux `tp->delivered_ce`).
//!
//! Fixed point as Linux: alpha in 1/1024 (`DCTCP_MAX_ALPHA`), g = 2^-shift_g.

use super::{cong_avoid_ai, slow_start_first, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// alpha = 1 in Linux's fixed point (`DCTCP_MAX_ALPHA`).
pub const MAX_ALPHA: u32 = 1024;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DctcpConfig {
    /// The estimation gain g = 2^-shift_g (Linux module parameter `dctcp_shift_g`).
    pub shift_g: u32,
    /// alpha before the first window is measured, in 1/1024 (Linux `dctcp_alpha_on_init`).
    pub alpha_on_init: u32,
}

impl DctcpConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.shift_g > 10 {
            return Err(format!("shift_g: {} is not allowed: must be at most 10 (alpha has 10 bits)", self.shift_g));
        }
        if self.alpha_on_init > MAX_ALPHA {
            return Err(format!("alpha_on_init: {} is not allowed: must be at most {MAX_ALPHA}", self.alpha_on_init));
        }
        Ok(())
    }
}

pub struct Dctcp {
    cfg: DctcpConfig,
    /// Linux `dctcp_alpha`, in 1/1024.
    alpha: u32,
    /// The window being measured: it ends when snd_una reaches `next_seq`; the counts at its
    /// start (Linux `dctcp_reset`).
    next_seq: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
    /// cwnd before the last reduction, for undo (Linux `loss_cwnd`).
    loss_cwnd: u32,
    state: CaState,
}

impl Dctcp {
    pub fn new(cfg: DctcpConfig) -> Self {
        let alpha = cfg.alpha_on_init.min(MAX_ALPHA);
        Dctcp { cfg, alpha, next_seq: 0, old_delivered: 0, old_delivered_ce: 0, loss_cwnd: 0, state: CaState::Open }
    }

    /// alpha as a fraction.
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / MAX_ALPHA as f64
    }

    fn reset(&mut self, s: &CcState) {
        self.next_seq = s.snd_nxt;
        self.old_delivered = s.delivered_segments;
        self.old_delivered_ce = s.delivered_ce_segments;
    }

    /// Linux `dctcp_update_alpha`: once the measured window is acknowledged.
    fn update_alpha(&mut self, s: &CcState) {
        if s.snd_una < self.next_seq {
            return;
        }
        let delivered = (s.delivered_segments - self.old_delivered).max(1);
        let delivered_ce = s.delivered_ce_segments - self.old_delivered_ce;
        let g = self.cfg.shift_g;
        // (1 - g) alpha; subtracting alpha itself when alpha >> g is 0 (Linux's
        // min_not_zero) lets alpha decay to exactly 0.
        let decay = self.alpha >> g;
        let mut alpha = self.alpha - if decay == 0 { self.alpha } else { decay };
        if delivered_ce > 0 {
            // + g F, in 1/1024: marked x 2^(10 - shift_g) / delivered.
            let gf = (delivered_ce << (10 - g)) / delivered;
            alpha = (alpha as u64 + gf).min(MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.reset(s);
    }

    /// Linux `dctcp_react_to_loss`: a loss halves the window, as Reno (RFC 8257 section 3.5).
    fn react_to_loss(&mut self, s: &mut CcState) {
        self.loss_cwnd = s.cwnd;
        s.ssthresh = (s.cwnd >> 1).max(2);
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn init(&mut self, s: &mut CcState) {
        self.reset(s);
    }

    /// RFC 8257 section 3.4: cwnd x (1 - alpha / 2) (Linux `dctcp_ssthresh`).
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.loss_cwnd = s.cwnd;
        let cut = ((s.cwnd as u64 * self.alpha as u64) >> 11) as u32;
        (s.cwnd - cut).max(2)
    }

    /// Linux `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if let Some(acked) = slow_start_first(s, ack.delivered_segments) {
            let w = s.cwnd;
            cong_avoid_ai(s, w, acked);
        }
    }

    /// Linux `dctcp_state`: entering fast recovery (not again from recovery) halves ssthresh,
    /// overriding the ECN reduction `ssthresh` answered.
    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Recovery && self.state != CaState::Recovery {
            self.react_to_loss(s);
        }
        self.state = new;
    }

    /// Linux `dctcp_cwnd_event`: a timeout reacts as a loss (once per window: the core raises
    /// it only when it recomputes ssthresh).
    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        if ev == CwndEvent::Loss {
            self.react_to_loss(s);
        }
    }

    /// Linux `dctcp_update_alpha` from `in_ack_event`, which Linux calls after the ACK has
    /// been counted (tcp_ack: `tcp_in_ack_event` follows `tcp_clean_rtx_queue`).
    fn pkts_acked(&mut self, s: &mut CcState, _ack: &AckSample) {
        self.update_alpha(s);
    }

    /// Linux `dctcp_cwnd_undo`.
    fn undo_cwnd(&mut self, s: &CcState, _prior_cwnd: u32) -> u32 {
        s.cwnd.max(self.loss_cwnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{ack, state};

    fn dctcp() -> Dctcp {
        Dctcp::new(DctcpConfig::default())
    }

    /// One window of `delivered` segments, `marked` of them CE, acknowledged at once.
    fn window(d: &mut Dctcp, s: &mut CcState, delivered: u64, marked: u64) {
        s.snd_una = s.snd_nxt;
        s.snd_nxt += delivered * s.mss_bytes as u64;
        s.delivered_segments += delivered;
        s.delivered_ce_segments += marked;
        d.pkts_acked(s, &ack(delivered as u32));
    }

    #[test]
    fn alpha_follows_rfc8257_ewma_once_per_window() {
        // RFC 8257 section 3.3: alpha = (1 - g) alpha + g F, g = 1/16, from alpha = 1
        // (Linux dctcp_alpha_on_init = 1024). A window with F = 1/4: 15/16 + 1/64 = 0.953125.
        let mut d = dctcp();
        let mut s = state(40, 20);
        s.snd_nxt = 0;
        d.init(&mut s);
        window(&mut d, &mut s, 40, 10);
        assert_eq!(d.alpha, 1024 - 64 + 16, "{}", d.alpha);
        assert!((d.alpha() - (15.0 / 16.0 + 0.25 / 16.0)).abs() < 1e-12);
        // An ACK inside the next window changes nothing: the update is once per window.
        s.snd_una += s.mss_bytes as u64;
        s.delivered_segments += 1;
        s.delivered_ce_segments += 1;
        let before = d.alpha;
        d.pkts_acked(&mut s, &ack(1));
        assert_eq!(d.alpha, before);
    }

    #[test]
    fn alpha_decays_to_zero_without_marks_and_saturates_with_all_marked() {
        let mut d = dctcp();
        let mut s = state(10, 5);
        s.snd_nxt = 0;
        d.init(&mut s);
        // (15/16)^n x 1024 in Linux's integer steps: reaches 0 (min_not_zero) after a finite run.
        for _ in 0..200 {
            window(&mut d, &mut s, 10, 0);
        }
        assert_eq!(d.alpha, 0);
        for _ in 0..200 {
            window(&mut d, &mut s, 10, 10);
        }
        // Every segment marked: alpha climbs back to 1 (the 1/16 decay and the 64 added
        // balance there).
        assert_eq!(d.alpha, MAX_ALPHA);
    }

    #[test]
    fn ecn_reduction_is_cwnd_times_one_minus_alpha_over_two() {
        let mut d = dctcp();
        let s = state(100, 50);
        assert_eq!(d.ssthresh(&s), 50, "alpha = 1 halves");
        d.alpha = 256; // alpha = 1/4: 100 x (1 - 1/8) = 87.5, Linux rounds the cut down
        assert_eq!(d.ssthresh(&s), 100 - 12);
        d.alpha = 0;
        assert_eq!(d.ssthresh(&s), 100, "no marks, no reduction");
        assert_eq!(d.ssthresh(&state(2, 2)), 2);
    }

    #[test]
    fn loss_halves_whatever_alpha() {
        let mut d = dctcp();
        d.alpha = 100;
        let mut s = state(80, 40);
        s.ssthresh = d.ssthresh(&s);
        d.set_state(&mut s, CaState::Recovery);
        assert_eq!(s.ssthresh, 40);
        assert_eq!(d.undo_cwnd(&state(30, 40), 0), 80);
    }
}
