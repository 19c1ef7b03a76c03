//! The Linux stack's congestion state machine (net/ipv4/tcp_input.c): the one place that
//! sets the state (Open, Disorder, CWR, Recovery, Loss). `fastretrans_alert` (Linux
//! `tcp_fastretrans_alert`) decides after every dubious ACK; the timers enter Loss
//! (`enter_loss`) or Recovery (`enter_recovery`) through the functions here, and local
//! congestion and ECN enter CWR (`enter_cwr`). The mechanisms it asks are beside it, each a
//! type that never sets the state itself: loss detection (`loss_detection.rs`, with RACK in
//! `rack.rs`), the undo's evidence and books (`undo.rs`), the window's reduction (`prr.rs`).

use super::prr::Prr;
use super::rack::RECOVERY_THRESH;
use super::{AckFlags, LinuxStack, XmitTimer};
use crate::cc::{CaState, CwndEvent};
use crate::packet::Packet;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl LinuxStack {
    /// Marks losses (Linux `tcp_identify_packet_loss`); RACK's reordering timer takes the
    /// timer slot.
    fn identify_packet_loss(&mut self, tcb: &mut Tcb, now: Time, f: &mut AckFlags) {
        let found = self.loss.identify(&mut self.q, tcb, now, f.una_advanced);
        if let Some(at) = found.reo_timer {
            tcb.rto_deadline = Some(at.min(now + tcb.rtt.rto()));
            self.pending = XmitTimer::Reordering;
            f.set_xmit_timer = false;
        }
        f.lost_retrans |= found.lost_retrans;
    }

    /// The recovery state machine (Linux `tcp_fastretrans_alert`).
    pub(crate) fn fastretrans_alert(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        prior_snd_una: u64,
        num_dupack: u32,
        f: &mut AckFlags,
        pkt: &Packet,
    ) {
        let ts_ecr = (tcb.cfg.timestamps && pkt.ts_ecr > 0).then_some(pkt.ts_ecr);
        let mut do_lost = num_dupack > 0 || (f.data_sacked && self.q.sacked_out + 1 > self.loss.reordering);
        let mut fast_rexmit = false;
        if self.q.packets_out == 0 && self.q.sacked_out > 0 {
            self.q.sacked_out = 0;
        }
        if f.ece {
            self.undo.prior_ssthresh = 0; // A: ECN forbids undoing the reduction
        }
        // D: state exit conditions, once high_seq is acknowledged.
        if tcb.ca_state == CaState::Open && !self.disorder {
            self.undo.retrans_stamp = None;
        } else if tcb.snd_una >= self.high_seq {
            match tcb.ca_state {
                CaState::Cwr if tcb.snd_una != self.high_seq => {
                    // Something above high_seq is acknowledged, so a CWR flag reached the peer.
                    self.end_cwnd_reduction(tcb, now);
                    tcb.set_ca_state(now, CaState::Open);
                }
                CaState::Recovery => {
                    if !tcb.sack() {
                        self.q.sacked_out = 0;
                    }
                    if self.try_undo_recovery(tcb, now, ts_ecr) {
                        return;
                    }
                    self.end_cwnd_reduction(tcb, now);
                }
                _ => {}
            }
        }
        // E: process the state.
        match tcb.ca_state {
            CaState::Recovery => {
                if !f.una_advanced {
                    if !tcb.sack() {
                        self.delivered += u64::from(self.loss.add_reno_sack(&mut self.q, &tcb.cfg, num_dupack));
                    }
                } else if self.try_undo_partial(tcb, now, prior_snd_una, ts_ecr, &mut do_lost) {
                    return;
                }
                if self.try_undo_dsack(tcb, now) {
                    self.try_to_open(tcb, now, f);
                }
                self.identify_packet_loss(tcb, now, f);
                if tcb.ca_state != CaState::Recovery {
                    if !self.loss.time_to_recover(&self.q, tcb) {
                        return;
                    }
                    // An undo reverted the state, but a loss is evident: recover again.
                    self.enter_recovery(tcb, now, f.ece);
                }
            }
            CaState::Loss => {
                self.process_loss(tcb, now, f, num_dupack, ts_ecr);
                self.identify_packet_loss(tcb, now, f);
                if !(tcb.ca_state == CaState::Open || f.lost_retrans) {
                    return;
                }
                if !self.default_state(tcb, now, num_dupack, f) {
                    return;
                }
                fast_rexmit = true;
            }
            _ => {
                if !self.default_state(tcb, now, num_dupack, f) {
                    return;
                }
                fast_rexmit = true;
            }
        }
        if !tcb.cfg.rack && do_lost && tcb.sack() {
            self.loss.update_scoreboard(&mut self.q, tcb, fast_rexmit);
        }
    }

    /// The Open, Disorder and CWR states of `tcp_fastretrans_alert` (and Loss falling through
    /// when retransmissions are lost or the state reopened).
    /// Returns whether recovery began (Linux goes on to mark losses then; otherwise it is done
    /// with the ACK).
    pub(crate) fn default_state(&mut self, tcb: &mut Tcb, now: Time, num_dupack: u32, f: &mut AckFlags) -> bool {
        if !tcb.sack() {
            if f.una_advanced {
                self.q.sacked_out = 0;
            }
            self.delivered += u64::from(self.loss.add_reno_sack(&mut self.q, &tcb.cfg, num_dupack));
        }
        if tcb.ca_state != CaState::Loss && !self.in_reduction(tcb) {
            self.try_undo_dsack(tcb, now);
        }
        self.identify_packet_loss(tcb, now, f);
        if !self.loss.time_to_recover(&self.q, tcb) {
            self.try_to_open(tcb, now, f);
            return false;
        }
        self.enter_recovery(tcb, now, f.ece);
        true
    }

    /// Linux `tcp_process_tlp_ack`: the ACK tells whether the probe repaired a loss.
    pub(crate) fn process_tlp_ack(&mut self, tcb: &mut Tcb, now: Time, ack: u64, f: &AckFlags) {
        let Some(high) = self.tlp_high_seq else { return };
        if ack < high {
            return;
        }
        if !self.tlp_retrans || f.dsack_tlp {
            // New data probed, or the original and the probe both arrived: no loss.
            self.tlp_high_seq = None;
        } else if ack > high {
            // The probe repaired a loss: reduce the window once, without a recovery.
            self.init_cwnd_reduction(tcb, now);
            tcb.set_ca_state(now, CaState::Cwr);
            self.end_cwnd_reduction(tcb, now);
            self.try_keep_open(tcb, now);
            tcb.stats.loss_probe_recoveries += 1;
        } else if !(f.una_advanced || f.win_update || f.data_sacked) {
            self.tlp_high_seq = None;
        }
    }

    /// Linux `tcp_init_cwnd_reduction`.
    pub(crate) fn init_cwnd_reduction(&mut self, tcb: &mut Tcb, now: Time) {
        tcb.sync_cc_view(now);
        self.high_seq = tcb.snd_max;
        self.tlp_high_seq = None;
        tcb.cc_state.cwnd_cnt = 0;
        tcb.prior_cwnd = tcb.cc_state.cwnd;
        self.prr = Prr::default();
        tcb.cc_state.ssthresh = tcb.cc.ssthresh(&tcb.cc_state);
        tcb.ecn_cwr_pending = tcb.cfg.ecn;
    }

    /// Linux `tcp_end_cwnd_reduction`.
    pub(crate) fn end_cwnd_reduction(&mut self, tcb: &mut Tcb, now: Time) {
        if tcb.controls {
            return;
        }
        let s = &mut tcb.cc_state;
        if s.ssthresh < crate::cc::INFINITE_SSTHRESH && (tcb.ca_state == CaState::Cwr || self.undo.marker.is_some()) {
            s.cwnd = Prr::cwnd_at_end(tcb.cfg.window_reduction, s.cwnd, s.ssthresh).max(1);
        }
        tcb.sync_cc_view(now);
        tcb.cc.cwnd_event(&mut tcb.cc_state, CwndEvent::CompleteCwr);
    }

    /// Linux `tcp_enter_recovery`.
    pub(crate) fn enter_recovery(&mut self, tcb: &mut Tcb, now: Time, ece: bool) {
        tcb.stats.fast_retransmits += 1;
        self.undo.prior_ssthresh = 0;
        self.undo.init(tcb.snd_una, self.q.retrans_out);
        if !self.in_reduction(tcb) {
            if !ece {
                self.undo.prior_ssthresh = self.current_ssthresh(tcb);
            }
            self.init_cwnd_reduction(tcb, now);
        }
        self.disorder = false;
        tcb.set_ca_state(now, CaState::Recovery);
    }

    /// Linux `tcp_current_ssthresh`: outside a reduction, at least 3/4 of cwnd.
    pub(crate) fn current_ssthresh(&self, tcb: &Tcb) -> u32 {
        let s = &tcb.cc_state;
        if self.in_reduction(tcb) {
            s.ssthresh
        } else {
            s.ssthresh.max((s.cwnd >> 1) + (s.cwnd >> 2))
        }
    }

    /// Linux `tcp_try_keep_open`: Disorder while segments are SACKed, lost or retransmitted.
    pub(crate) fn try_keep_open(&mut self, tcb: &mut Tcb, now: Time) {
        let q = &self.q;
        let disorder = q.sacked_out + q.lost_out > 0 || q.retrans_out > 0;
        if tcb.ca_state != CaState::Open || self.disorder != disorder {
            if tcb.ca_state != CaState::Open {
                tcb.set_ca_state(now, CaState::Open);
            }
            self.disorder = disorder;
            self.high_seq = tcb.snd_max;
        }
    }

    /// Linux `tcp_try_to_open`.
    pub(crate) fn try_to_open(&mut self, tcb: &mut Tcb, now: Time, f: &AckFlags) {
        if self.q.retrans_out == 0 {
            self.undo.retrans_stamp = None;
        }
        if f.ece {
            self.enter_cwr(tcb, now);
        }
        if tcb.ca_state != CaState::Cwr {
            self.try_keep_open(tcb, now);
        }
    }

    /// Linux `tcp_enter_cwr`: reduce once for this window without a loss (ECN, local
    /// congestion).
    pub(crate) fn enter_cwr(&mut self, tcb: &mut Tcb, now: Time) {
        self.undo.prior_ssthresh = 0;
        if matches!(tcb.ca_state, CaState::Open) {
            tcb.stats.cwr_entries += 1;
            self.undo.marker = None;
            self.init_cwnd_reduction(tcb, now);
            self.disorder = false;
            tcb.set_ca_state(now, CaState::Cwr);
        }
    }

    /// Linux `tcp_enter_loss` with `tcp_timeout_mark_lost`.
    pub(crate) fn enter_loss(&mut self, tcb: &mut Tcb, now: Time) {
        // Linux: a loss episode that is not a recovery's (state below Recovery), and the
        // states Open and Disorder.
        let new_recovery = matches!(tcb.ca_state, CaState::Open | CaState::Cwr);
        let open_or_disorder = tcb.ca_state == CaState::Open;
        let lost_before = self.loss.lost;
        self.loss.mark_timeout_lost(&mut self.q, tcb, now);
        // What the timeout marks counts in tp->lost as any loss does (tcp_mark_skb_lost), so
        // later rate samples' losses over their flight include it (BBRv3's rs->lost); no ACK
        // reports these.
        if let Some(r) = &mut tcb.rate {
            r.count_lost_and_ce((self.loss.lost - lost_before) * tcb.cfg.mss_bytes as u64, 0);
        }
        // Reduce ssthresh once per window (not again on a repeated timeout).
        let high_seq_passed = self.high_seq <= tcb.snd_una;
        if open_or_disorder || high_seq_passed || (tcb.ca_state == CaState::Loss && self.retransmits == 0) {
            tcb.sync_cc_view(now);
            self.undo.prior_ssthresh = self.current_ssthresh(tcb);
            tcb.prior_cwnd = tcb.cc_state.cwnd;
            tcb.cc_state.ssthresh = tcb.cc.ssthresh(&tcb.cc_state);
            tcb.cc.cwnd_event(&mut tcb.cc_state, CwndEvent::Loss);
            self.undo.init(tcb.snd_una, self.q.retrans_out);
        }
        if !tcb.controls {
            tcb.cc_state.cwnd = self.q.in_flight() + 1;
        }
        tcb.cc_state.cwnd_cnt = 0;
        if open_or_disorder && self.q.sacked_out >= tcb.cfg.dupack_threshold {
            // A timeout after many duplicate ACKs: the reordering degree was over-estimated.
            self.loss.reordering = self.loss.reordering.min(tcb.cfg.dupack_threshold);
        }
        self.disorder = false;
        tcb.set_ca_state(now, CaState::Loss);
        self.high_seq = tcb.snd_max;
        self.tlp_high_seq = None;
        tcb.ecn_cwr_pending = tcb.cfg.ecn;
        self.frto = tcb.cfg.frto && (new_recovery || self.retransmits > 0);
        self.prr = Prr::default();
    }

    /// Linux `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, tcb: &mut Tcb, now: Time, unmark_loss: bool) {
        if unmark_loss {
            self.loss.unmark_all(&mut self.q);
        }
        self.undo.undo_reduction(tcb, now);
        self.loss.rack.advanced = true;
    }

    /// Linux `tcp_try_undo_recovery`: recovery is over; undo it if it was spurious.
    /// Returns true when the state must be held (NewReno without SACK).
    pub(crate) fn try_undo_recovery(&mut self, tcb: &mut Tcb, now: Time, ts_ecr: Option<Time>) -> bool {
        if tcb.cfg.undo && self.undo.may_undo(ts_ecr, tcb.sack()) {
            self.undo_cwnd_reduction(tcb, now, false);
        } else if self.loss.rack.reo_wnd_persist > 0 {
            self.loss.rack.reo_wnd_persist -= 1;
        }
        if tcb.snd_una == self.high_seq && !tcb.sack() {
            // RFC 6582: hold until something above high_seq is acknowledged.
            if self.q.retrans_out == 0 {
                self.undo.retrans_stamp = None;
            }
            return true;
        }
        tcb.set_ca_state(now, CaState::Open);
        self.disorder = false;
        false
    }

    /// Linux `tcp_try_undo_dsack`.
    pub(crate) fn try_undo_dsack(&mut self, tcb: &mut Tcb, now: Time) -> bool {
        if tcb.cfg.undo && self.undo.dsack_says_spurious() {
            self.loss.rack.reo_wnd_persist = (self.loss.rack.reo_wnd_persist + 1).min(RECOVERY_THRESH);
            self.undo_cwnd_reduction(tcb, now, false);
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_loss`.
    pub(crate) fn try_undo_loss(&mut self, tcb: &mut Tcb, now: Time, frto_undo: bool, ts_ecr: Option<Time>) -> bool {
        if !tcb.cfg.undo || !(frto_undo || self.undo.may_undo(ts_ecr, tcb.sack())) {
            return false;
        }
        self.undo_cwnd_reduction(tcb, now, true);
        if frto_undo {
            tcb.stats.spurious_timeouts += 1;
        }
        self.retransmits = 0;
        if frto_undo || tcb.sack() {
            tcb.set_ca_state(now, CaState::Open);
            self.disorder = false;
        }
        true
    }

    /// Linux `tcp_try_undo_partial`: a partial ACK of original data during recovery.
    /// Returns true to stop processing this ACK; `do_lost` says whether to mark more losses.
    pub(crate) fn try_undo_partial(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        prior_snd_una: u64,
        ts_ecr: Option<Time>,
        do_lost: &mut bool,
    ) -> bool {
        if tcb.cfg.undo && self.undo.marker.is_some() && self.undo.packet_delayed(ts_ecr, tcb.sack()) {
            self.loss.note_reordering(&self.q, tcb, prior_snd_una);
            if self.q.retrans_out > 0 {
                return true;
            }
            self.undo.retrans_stamp = None;
            self.undo_cwnd_reduction(tcb, now, true);
            self.try_keep_open(tcb, now);
        } else {
            *do_lost = !tcb.sack() || self.q.sacked_out + 1 > self.loss.reordering;
        }
        false
    }

    /// F-RTO and the Loss state (Linux `tcp_process_loss`). Returns whether new data may
    /// go out instead of retransmissions (F-RTO step 2b).
    pub(crate) fn process_loss(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        f: &AckFlags,
        num_dupack: u32,
        ts_ecr: Option<Time>,
    ) {
        let recovered = tcb.snd_una >= self.high_seq;
        if f.una_advanced && self.try_undo_loss(tcb, now, false, ts_ecr) {
            return;
        }
        if self.frto {
            // RFC 5682 3.1 step 3b: never-retransmitted data was (S)ACKed: spurious.
            if f.orig_sack_acked && self.try_undo_loss(tcb, now, true, ts_ecr) {
                return;
            }
            if tcb.snd_nxt > self.high_seq {
                if f.data_sacked || num_dupack > 0 {
                    self.frto = false; // step 3a: the loss was real
                }
            } else if f.una_advanced && !recovered {
                // Step 2b: send new data next (the send loop does, window permitting).
                self.high_seq = tcb.snd_nxt;
                if tcb.written > tcb.snd_max && tcb.snd_una + tcb.rwnd > tcb.snd_max {
                    self.frto_send_new = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery(tcb, now, ts_ecr);
            return;
        }
        if !tcb.sack() {
            if tcb.snd_nxt > self.high_seq && num_dupack > 0 {
                self.delivered += u64::from(self.loss.add_reno_sack(&mut self.q, &tcb.cfg, num_dupack));
            } else if f.una_advanced {
                self.q.sacked_out = 0;
            }
        }
    }
}
