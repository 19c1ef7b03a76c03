//! BBRv3's congestion signals: the latest round's delivery, loss and ECN, the short-term
//! lower bounds they cut (bw_lo, inflight_lo), and STARTUP's exits on loss or ECN.
//! v3 `tcp_bbr.c` functions named on each; draft-ietf-ccwg-bbr "Updating the Model Upon
//! Packet Loss", "BBRAdaptLowerBoundsFromCongestion", "Exiting Startup Based on Packet Loss".

use super::{Bbr3, Mode, Phase, Sample, UNSET_BW, UNSET_INFLIGHT};
use crate::cc::{CaState, CcState};

impl Bbr3 {
    /// A loss was marked: this round is a loss round, measured from the first loss (v3
    /// `bbr_note_loss`).
    pub(super) fn note_loss(&mut self, s: &CcState) {
        if !self.loss_in_round {
            self.loss_round_delivered = s.delivered_bytes;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }

    /// The rate and volume delivered in the latest round, and the loss-round clock (v3
    /// `bbr_update_latest_delivery_signals`).
    pub(super) fn update_latest_delivery_signals(&mut self, s: &CcState, ack: &crate::cc::AckSample, rs: &Sample) {
        self.loss_round_start = false;
        if !rs.valid || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(rs.bw_bps);
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if ack.prior_delivered_bytes >= self.loss_round_delivered {
            self.loss_round_delivered = s.delivered_bytes;
            self.loss_round_start = true;
        }
    }

    /// Once per loss round, the latest signals start over (v3
    /// `bbr_advance_latest_delivery_signals`).
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &Sample) {
        if self.loss_round_start {
            self.bw_latest = rs.bw_bps;
            self.inflight_latest = rs.delivered;
        }
    }

    /// The max-bw filter's sample, losses in the round, and the lower bounds once per round
    /// (v3 `bbr_update_congestion_signals`).
    pub(super) fn update_congestion_signals(&mut self, s: &CcState, rs: &Sample) {
        if !rs.valid || rs.acked_sacked == 0 {
            return;
        }
        // An app-limited sample shows the application's rate; it may only raise the max.
        if !rs.is_app_limited || rs.bw_bps >= self.max_bw_bps() {
            self.bw_hi[1] = self.bw_hi[1].max(rs.bw_bps);
        }
        self.loss_in_round |= rs.newly_lost > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(s);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// Probing for bandwidth: STARTUP, or PROBE_BW's REFILL and UP (v3
    /// `bbr_is_probing_bandwidth`).
    pub(super) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup || (self.mode == Mode::ProbeBw && matches!(self.phase, Phase::Refill | Phase::Up))
    }

    /// Multiplicative decrease of the short-term bounds, once per round with loss or ECN,
    /// never below what the latest round delivered; not while probing (v3
    /// `bbr_adapt_lower_bounds`; draft BBRAdaptLowerBoundsFromCongestion).
    fn adapt_lower_bounds(&mut self, s: &CcState) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = UNSET_INFLIGHT;
        if self.ecn_in_round && self.cfg.ecn_factor > 0.0 {
            self.init_lower_bounds(s, false);
            let cut = 1.0 - self.ecn_alpha * self.cfg.ecn_factor;
            ecn_inflight_lo = (self.inflight_lo as f64 * cut) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(s, true);
            let beta = self.cfg.beta;
            self.bw_lo = self.bw_latest.max((self.bw_lo as f64 * beta) as u64);
            self.inflight_lo = self.inflight_latest.max((self.inflight_lo as f64 * beta) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.max(1);
    }

    /// The first cut starts from the max bw and cwnd (v3 `bbr_init_lower_bounds`).
    fn init_lower_bounds(&mut self, s: &CcState, init_bw: bool) {
        if init_bw && self.bw_lo == UNSET_BW {
            self.bw_lo = self.max_bw_bps();
        }
        if self.inflight_lo == UNSET_INFLIGHT {
            self.inflight_lo = s.cwnd;
        }
    }

    /// v3 `bbr_reset_lower_bounds`: probing pushes above them.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET_BW;
        self.inflight_lo = UNSET_INFLIGHT;
    }

    /// v3 `bbr_reset_congestion_signals`: after probing, before adapting the lower bounds.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// Loss above loss_thresh of the flight, or CE marks above ecn_thresh of the delivered
    /// data, since the sampled segment left (v3 `bbr_is_inflight_too_high`; draft
    /// IsInflightTooHigh).
    pub(super) fn is_inflight_too_high(&self, rs: &Sample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 && rs.lost as f64 > rs.tx_in_flight as f64 * self.cfg.loss_thresh {
            return true;
        }
        rs.delivered_ce > 0
            && rs.delivered > 0
            && self.ecn_eligible
            && self.cfg.ecn_thresh > 0.0
            && rs.delivered_ce as f64 > rs.delivered as f64 * self.cfg.ecn_thresh
    }

    /// STARTUP ends when a recovery round had enough loss events and a high loss rate (v3
    /// `bbr_check_loss_too_high_in_startup`; draft BBRCheckStartupHighLoss).
    pub(super) fn check_loss_too_high_in_startup(&mut self, rs: &Sample) {
        if self.full_bw_reached {
            return;
        }
        if rs.newly_lost > 0 {
            self.loss_events_in_round = (self.loss_events_in_round + 1).min(0xF);
        }
        if self.cfg.full_loss_count > 0
            && self.loss_round_start
            && self.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.cfg.full_loss_count
            && self.is_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup();
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// v3 `bbr_handle_queue_too_high_in_startup`: the pipe is full, and inflight_hi is what
    /// it held.
    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        self.inflight_hi = self.inflight(self.max_bw_bps(), 1.0).max(self.inflight_latest);
    }

    /// Once per round: alpha, the EWMA of the CE-marked fraction delivered, and STARTUP's
    /// ECN exit (v3 `bbr_update_ecn_alpha`, `bbr_check_ecn_too_high_in_startup`).
    pub(super) fn update_ecn_alpha(&mut self, s: &CcState) {
        let max_rtt = self.cfg.ecn_max_rtt_ps;
        if !self.ecn_eligible
            && self.cfg.ecn
            && self.cfg.ecn_factor > 0.0
            && (max_rtt == 0 || self.min_rtt_ps.is_some_and(|m| m <= max_rtt))
        {
            self.ecn_eligible = true;
        }
        if !self.ecn_eligible {
            return;
        }
        let delivered = s.delivered_bytes - self.alpha_last_delivered;
        if delivered == 0 {
            return;
        }
        let ce_ratio = (self.delivered_ce_bytes - self.alpha_last_delivered_ce) as f64 / delivered as f64;
        let gain = self.cfg.ecn_alpha_gain;
        self.ecn_alpha = ((1.0 - gain) * self.ecn_alpha + gain * ce_ratio).min(1.0);
        self.alpha_last_delivered = s.delivered_bytes;
        self.alpha_last_delivered_ce = self.delivered_ce_bytes;
        if self.full_bw_reached || self.cfg.full_ecn_rounds == 0 || self.cfg.ecn_thresh == 0.0 {
            return;
        }
        if ce_ratio >= self.cfg.ecn_thresh {
            self.startup_ecn_rounds += 1;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.cfg.full_ecn_rounds {
            self.handle_queue_too_high_in_startup();
        }
    }
}
