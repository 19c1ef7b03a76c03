//! The Linux stack's send loop and timers (net/ipv4/tcp_output.c `tcp_write_xmit`,
//! `tcp_xmit_retransmit_queue`, `tcp_send_loss_probe`; tcp_timer.c
//! `tcp_retransmit_timer`; tcp_input.c `tcp_enter_loss`, `tcp_rearm_rto`).
//!
//! Sending: segments marked lost go first, then new data, while fewer segments are in
//! flight than cwnd (in flight = outstanding - SACKed - lost + retransmissions in flight).
//! Because SACKed segments leave the flight, duplicate ACKs clock out new data before any
//! recovery (limited transmit, RFC 3042, by construction).
//!
//! One timer slot serves three purposes (Linux `icsk_pending`): the retransmission timeout,
//! RACK's reordering timer and the tail loss probe. The RTO counts from the oldest
//! outstanding segment's transmission when it takes over from the other two.

use super::linux::XmitTimer;
use super::prr::Prr;
use super::rack::probe_timeout;
use super::rtx_queue::SACKED;
use crate::cc::{CaState, CwndEvent};
use crate::packet::Packet;
use crate::tcp::TcpSender;
use crate::time::Time;

impl TcpSender {
    /// Sends what the window allows, lost segments first (Linux `tcp_xmit_retransmit_queue`
    /// then `tcp_write_xmit`).
    pub(crate) fn send_linux(&mut self, now: Time, out: &mut Vec<Packet>) {
        let mss = self.cfg.mss_bytes as u64;
        let new_data_end = (self.snd_una + self.rwnd.min(self.cfg.snd_buffer_bytes)).min(self.written);
        // F-RTO step 2b: after a timeout, new data probes whether it was spurious.
        let frto_new = std::mem::take(&mut self.frto_send_new);
        let prior_packets = self.lx.q.packets_out;
        let mut sent_new = false;
        let mut cwnd_limited = false;
        loop {
            if self.lx.q.in_flight() >= self.cc_state.cwnd {
                cwnd_limited = true;
                break;
            }
            if self.paced_out(now) {
                break;
            }
            let lost = if frto_new { None } else { self.lx.q.next_lost() };
            if let Some(id) = lost {
                let seg = self.lx.q.get(id).expect("queued lost segments are outstanding");
                if !self.emit(now, seg.start, (seg.end - seg.start) as u32, out) {
                    break;
                }
                self.lx.q.on_retransmit(id, now);
                self.lx_note_retransmit(now);
                continue;
            }
            if self.snd_max >= new_data_end {
                break;
            }
            let len = (new_data_end - self.snd_max).min(mss);
            // Sender silly-window avoidance (RFC 1122 4.2.3.4), as the RFC stack does.
            if len < mss && self.snd_max + len < self.written && self.snd_max > self.snd_una {
                break;
            }
            if !self.emit(now, self.snd_max, len as u32, out) {
                break;
            }
            self.lx.q.push(self.snd_max, self.snd_max + len, now);
            self.snd_max += len;
            self.snd_nxt = self.snd_max;
            if matches!(self.ca_state, CaState::Cwr | CaState::Recovery) {
                self.lx.prr.on_send();
            }
            sent_new = true;
        }
        self.lx_cwnd_validate(cwnd_limited);
        if sent_new {
            // Linux tcp_event_new_data_sent: arm the RTO when the flight was empty (or a probe
            // was pending); then tcp_schedule_loss_probe.
            if prior_packets == 0 || self.rto_deadline.is_none() || self.lx.pending == XmitTimer::LossProbe {
                self.lx_rearm_rto(now);
            }
            self.lx_schedule_loss_probe(now, false);
        } else if self.lx.q.packets_out > 0 && self.rto_deadline.is_none() {
            self.lx_rearm_rto(now);
        }
    }

    /// Linux `tcp_cwnd_validate`: what `tcp_is_cwnd_limited` reads, once per round trip.
    fn lx_cwnd_validate(&mut self, cwnd_limited: bool) {
        let lx = &mut self.lx;
        let packets_out = lx.q.packets_out;
        if self.snd_una >= lx.cwnd_usage_seq
            || cwnd_limited
            || (!lx.is_cwnd_limited && packets_out > lx.max_packets_out)
        {
            lx.is_cwnd_limited = cwnd_limited;
            lx.max_packets_out = packets_out;
            lx.cwnd_usage_seq = self.snd_max;
        }
    }

    /// Linux `tcp_rearm_rto`: the retransmission timer, counted from the oldest outstanding
    /// segment's transmission when it replaces the reordering timer or a loss probe.
    pub(crate) fn lx_rearm_rto(&mut self, now: Time) {
        let Some(head) = self.lx.q.front() else {
            self.rto_deadline = None;
            self.lx.pending = XmitTimer::Retransmission;
            return;
        };
        let rto = self.rtt.rto();
        let delay = if self.lx.pending != XmitTimer::Retransmission {
            (head.xmit_ps + rto).saturating_sub(now).max(1)
        } else {
            rto
        };
        self.rto_deadline = Some(now + delay);
        self.lx.pending = XmitTimer::Retransmission;
    }

    /// Linux `tcp_set_xmit_timer`, after an ACK that acknowledged data: a loss probe, else
    /// the RTO.
    pub(crate) fn lx_set_xmit_timer(&mut self, now: Time) {
        if !self.lx_schedule_loss_probe(now, true) {
            self.lx_rearm_rto(now);
        }
    }

    /// Linux `tcp_schedule_loss_probe`: with SACK, outside recovery, a probe two smoothed
    /// RTTs out (or sooner if the RTO would fire sooner).
    fn lx_schedule_loss_probe(&mut self, now: Time, advancing_rto: bool) -> bool {
        let open = matches!(self.ca_state, CaState::Open | CaState::Cwr) && !self.lx.disorder;
        if !self.cfg.tlp || self.lx.q.packets_out == 0 || !self.lx_sack_on() || !open {
            return false;
        }
        let mut timeout =
            probe_timeout(self.rtt.srtt, self.lx.q.packets_out, self.rtt.min_rto(), self.cfg.initial_rto_ps);
        let rto_left = if advancing_rto {
            self.rtt.rto()
        } else {
            self.rto_deadline.map_or(self.rtt.rto(), |d| d.saturating_sub(now))
        };
        if rto_left > 0 {
            timeout = timeout.min(rto_left);
        }
        self.rto_deadline = Some(now + timeout);
        self.lx.pending = XmitTimer::LossProbe;
        true
    }

    fn lx_sack_on(&self) -> bool {
        self.cfg.recovery == crate::tcp::config::Recovery::Sack
    }

    /// The timer slot fired (Linux `tcp_write_timer_handler`).
    pub(crate) fn on_xmit_timer_linux(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.rto_deadline = None;
        match self.lx.pending {
            XmitTimer::Reordering => self.lx_reo_timeout(now, out),
            XmitTimer::LossProbe => self.lx_send_loss_probe(now, out),
            XmitTimer::Retransmission => self.lx_retransmit_timer(now, out),
        }
    }

    /// Linux `tcp_rack_reo_timeout`: the reordering window has passed; mark what is due.
    fn lx_reo_timeout(&mut self, now: Time, out: &mut Vec<Packet>) {
        let prior_in_flight = self.lx.q.in_flight();
        let before = self.lx.q.lost_out;
        let reo_wnd = self.lx_reo_wnd();
        self.lx.rack.detect_loss(&mut self.lx.q, now, reo_wnd);
        if self.lx.q.lost_out > before {
            self.lx.lost += (self.lx.q.lost_out - before) as u64;
        }
        self.lx.pending = XmitTimer::Retransmission;
        if prior_in_flight != self.lx.q.in_flight() {
            if self.ca_state != CaState::Recovery {
                self.lx_enter_recovery(now, false);
                if !self.controls {
                    let in_flight = self.lx.q.in_flight();
                    let (ssthresh, prior) = (self.cc_state.ssthresh, self.prior_cwnd);
                    if let Some(c) = self.lx.prr.cwnd_after_ack(
                        self.cfg.window_reduction,
                        self.cc_state.cwnd,
                        ssthresh,
                        prior,
                        in_flight,
                        1,
                        0,
                        false,
                    ) {
                        self.cc_state.cwnd = c.max(1);
                    }
                }
            }
            self.send(now, out);
        }
        if self.lx.pending != XmitTimer::Retransmission || self.rto_deadline.is_none() {
            self.lx_rearm_rto(now);
        }
    }

    /// Linux `tcp_send_loss_probe`: one new segment if the window allows one, else the last
    /// segment again.
    fn lx_send_loss_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.lx.pending = XmitTimer::Retransmission;
        if self.lx.tlp_high_seq.is_some() {
            self.lx_rearm_rto(now);
            return;
        }
        self.lx.tlp_retrans = false;
        let mss = self.cfg.mss_bytes as u64;
        let new_data_end = (self.snd_una + self.rwnd.min(self.cfg.snd_buffer_bytes)).min(self.written);
        let mut sent = false;
        if self.snd_max < new_data_end {
            let len = (new_data_end - self.snd_max).min(mss);
            if self.emit(now, self.snd_max, len as u32, out) {
                self.lx.q.push(self.snd_max, self.snd_max + len, now);
                self.snd_max += len;
                self.snd_nxt = self.snd_max;
                sent = true;
            }
        } else if let Some(last) = self.lx.q.back() {
            if !last.has(SACKED) && self.emit(now, last.start, (last.end - last.start) as u32, out) {
                let id = self.lx.q.ids().end - 1;
                self.lx.q.on_retransmit(id, now);
                self.lx_note_retransmit(now);
                self.lx.tlp_retrans = true;
                sent = true;
            }
        }
        if sent {
            self.lx.tlp_high_seq = Some(self.snd_max);
            self.stats.loss_probes += 1;
        }
        self.rto_deadline = None;
        self.lx_rearm_rto(now);
    }

    /// The retransmission timeout (Linux `tcp_retransmit_timer`): enter Loss, resend the
    /// head, back off.
    fn lx_retransmit_timer(&mut self, now: Time, out: &mut Vec<Packet>) {
        if self.lx.q.packets_out == 0 {
            return;
        }
        self.stats.timeouts += 1;
        self.lx_enter_loss(now);
        self.send(now, out);
        self.rtt.back_off();
        self.lx.retransmits += 1;
        self.rto_deadline = Some(now + self.rtt.rto());
        self.lx.pending = XmitTimer::Retransmission;
    }

    /// Linux `tcp_enter_loss` with `tcp_timeout_mark_lost`.
    fn lx_enter_loss(&mut self, now: Time) {
        // Linux: a loss episode that is not a recovery's (state below Recovery), and the
        // states Open and Disorder.
        let new_recovery = matches!(self.ca_state, CaState::Open | CaState::Cwr);
        let open_or_disorder = self.ca_state == CaState::Open;
        // Every segment not SACKed is lost, but the ones sent so recently that RACK would not
        // call them lost yet (all but the head).
        let before = self.lx.q.lost_out;
        let rack_rtt = self.lx.rack.rtt_ps;
        let ids = self.lx.q.ids();
        let head = ids.start;
        for id in ids {
            let s = self.lx.q.get(id).unwrap();
            if s.has(SACKED) {
                continue;
            }
            if id != head && self.cfg.rack && s.xmit_ps + rack_rtt > now {
                continue;
            }
            self.lx.q.mark_lost(id);
        }
        if self.lx.q.lost_out > before {
            self.lx.lost += (self.lx.q.lost_out - before) as u64;
        }
        // Reduce ssthresh once per window (not again on a repeated timeout).
        let high_seq_passed = self.lx.high_seq <= self.snd_una;
        if open_or_disorder || high_seq_passed || (self.ca_state == CaState::Loss && self.lx.retransmits == 0) {
            self.sync_cc_view(now);
            self.lx.undo.prior_ssthresh = self.lx_current_ssthresh();
            self.prior_cwnd = self.cc_state.cwnd;
            self.cc_state.ssthresh = self.cc.ssthresh(&self.cc_state);
            self.cc.cwnd_event(&mut self.cc_state, CwndEvent::Loss);
            self.lx.undo.init(self.snd_una, self.lx.q.retrans_out);
        }
        if !self.controls {
            self.cc_state.cwnd = self.lx.q.in_flight() + 1;
        }
        self.cc_state.cwnd_cnt = 0;
        if open_or_disorder && self.lx.q.sacked_out >= self.cfg.dupack_threshold {
            // A timeout after many duplicate ACKs: the reordering degree was over-estimated.
            self.lx.reordering = self.lx.reordering.min(self.cfg.dupack_threshold);
        }
        self.lx.disorder = false;
        self.set_ca_state(now, CaState::Loss);
        self.lx.high_seq = self.snd_max;
        self.lx.tlp_high_seq = None;
        self.ecn_cwr_pending = self.cfg.ecn;
        self.lx.frto = self.cfg.frto && (new_recovery || self.lx.retransmits > 0);
        self.lx.prr = Prr::default();
    }
}
