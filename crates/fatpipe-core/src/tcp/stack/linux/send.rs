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

use super::rack::probe_timeout;
use super::rtx_queue::SACKED;
use super::LinuxStack;
use super::XmitTimer;
use crate::cc::CaState;
use crate::packet::Packet;
use crate::tcp::stack::TcpStack;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl LinuxStack {
    /// Sends what the window allows, lost segments first (Linux `tcp_xmit_retransmit_queue`
    /// then `tcp_write_xmit`).
    pub(crate) fn write_xmit(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        let mss = tcb.cfg.mss_bytes as u64;
        let new_data_end = (tcb.snd_una + tcb.rwnd.min(tcb.cfg.snd_buffer_bytes)).min(tcb.written);
        // F-RTO step 2b: after a timeout, new data probes whether it was spurious.
        let frto_new = std::mem::take(&mut self.frto_send_new);
        let prior_packets = self.q.packets_out;
        let mut sent_new = false;
        let mut cwnd_limited = false;
        loop {
            if self.q.in_flight() >= tcb.cc_state.cwnd {
                cwnd_limited = true;
                break;
            }
            // Chosen first: TCP Small Queues allow a retransmission twice the bytes below TCP
            // (tcp_xmit_retransmit_queue's tcp_small_queue_check with factor 1).
            let lost = if frto_new { None } else { self.q.next_lost() };
            if tcb.paced_out(now, lost.is_some()) {
                break;
            }
            if let Some(id) = lost {
                let seg = self.q.get(id).expect("queued lost segments are outstanding");
                if !tcb.emit(now, seg.start, (seg.end - seg.start) as u32, out) {
                    break;
                }
                self.q.on_retransmit(id, now);
                self.note_retransmit(tcb, now);
                continue;
            }
            if tcb.snd_max >= new_data_end {
                break;
            }
            let len = (new_data_end - tcb.snd_max).min(mss);
            // Sender silly-window avoidance (RFC 1122 4.2.3.4), as the RFC stack does.
            if len < mss && tcb.snd_max + len < tcb.written && tcb.snd_max > tcb.snd_una {
                break;
            }
            if !tcb.emit(now, tcb.snd_max, len as u32, out) {
                break;
            }
            self.q.push(tcb.snd_max, tcb.snd_max + len, now);
            tcb.snd_max += len;
            tcb.snd_nxt = tcb.snd_max;
            if matches!(tcb.ca_state, CaState::Cwr | CaState::Recovery) {
                self.prr.on_send();
            }
            sent_new = true;
        }
        self.cwnd_validate(tcb, cwnd_limited);
        if sent_new {
            // Linux tcp_event_new_data_sent: arm the RTO when the flight was empty (or a probe
            // was pending); then tcp_schedule_loss_probe.
            if prior_packets == 0 || tcb.rto_deadline.is_none() || self.pending == XmitTimer::LossProbe {
                self.rearm_rto(tcb, now);
            }
            self.schedule_loss_probe(tcb, now, false);
        } else if self.q.packets_out > 0 && tcb.rto_deadline.is_none() {
            self.rearm_rto(tcb, now);
        }
    }

    /// Linux `tcp_cwnd_validate`: what `tcp_is_cwnd_limited` reads, once per round trip.
    fn cwnd_validate(&mut self, tcb: &mut Tcb, cwnd_limited: bool) {
        let packets_out = self.q.packets_out;
        if tcb.snd_una >= self.cwnd_usage_seq
            || cwnd_limited
            || (!self.is_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = cwnd_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = tcb.snd_max;
        }
    }

    /// Linux `tcp_rearm_rto`: the retransmission timer, counted from the oldest outstanding
    /// segment's transmission when it replaces the reordering timer or a loss probe.
    pub(crate) fn rearm_rto(&mut self, tcb: &mut Tcb, now: Time) {
        let Some(head) = self.q.front() else {
            tcb.rto_deadline = None;
            self.pending = XmitTimer::Retransmission;
            return;
        };
        let rto = tcb.rtt.rto();
        let delay = if self.pending != XmitTimer::Retransmission {
            (head.xmit_ps + rto).saturating_sub(now).max(1)
        } else {
            rto
        };
        tcb.rto_deadline = Some(now + delay);
        self.pending = XmitTimer::Retransmission;
    }

    /// Linux `tcp_set_xmit_timer`, after an ACK that acknowledged data: a loss probe, else
    /// the RTO.
    pub(crate) fn set_xmit_timer(&mut self, tcb: &mut Tcb, now: Time) {
        if !self.schedule_loss_probe(tcb, now, true) {
            self.rearm_rto(tcb, now);
        }
    }

    /// Linux `tcp_schedule_loss_probe`: with SACK, outside recovery, a probe two smoothed
    /// RTTs out (or sooner if the RTO would fire sooner).
    fn schedule_loss_probe(&mut self, tcb: &mut Tcb, now: Time, advancing_rto: bool) -> bool {
        let open = matches!(tcb.ca_state, CaState::Open | CaState::Cwr) && !self.disorder;
        if !tcb.cfg.tlp || self.q.packets_out == 0 || !tcb.sack() || !open {
            return false;
        }
        let mut timeout = probe_timeout(tcb.rtt.srtt, self.q.packets_out, tcb.rtt.min_rto(), tcb.cfg.initial_rto_ps);
        let rto_left = if advancing_rto {
            tcb.rtt.rto()
        } else {
            tcb.rto_deadline.map_or(tcb.rtt.rto(), |d| d.saturating_sub(now))
        };
        if rto_left > 0 {
            timeout = timeout.min(rto_left);
        }
        tcb.rto_deadline = Some(now + timeout);
        self.pending = XmitTimer::LossProbe;
        true
    }

    /// The timer slot fired (Linux `tcp_write_timer_handler`).
    pub(crate) fn write_timer(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        tcb.rto_deadline = None;
        match self.pending {
            XmitTimer::Reordering => self.reo_timeout(tcb, now, out),
            XmitTimer::LossProbe => self.send_loss_probe(tcb, now, out),
            XmitTimer::Retransmission => self.retransmit_timer(tcb, now, out),
        }
    }

    /// Linux `tcp_rack_reo_timeout`: the reordering window has passed; mark what is due.
    fn reo_timeout(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        let prior_in_flight = self.q.in_flight();
        self.loss.on_reo_timeout(&mut self.q, tcb, now);
        self.pending = XmitTimer::Retransmission;
        if prior_in_flight != self.q.in_flight() {
            if tcb.ca_state != CaState::Recovery {
                self.enter_recovery(tcb, now, false);
                if !tcb.controls {
                    let in_flight = self.q.in_flight();
                    let (ssthresh, prior) = (tcb.cc_state.ssthresh, tcb.prior_cwnd);
                    if let Some(c) = self.prr.cwnd_after_ack(
                        tcb.cfg.window_reduction,
                        tcb.cc_state.cwnd,
                        ssthresh,
                        prior,
                        in_flight,
                        1,
                        0,
                        false,
                    ) {
                        tcb.cc_state.cwnd = c.max(1);
                    }
                }
            }
            self.send(tcb, now, out);
        }
        if self.pending != XmitTimer::Retransmission || tcb.rto_deadline.is_none() {
            self.rearm_rto(tcb, now);
        }
    }

    /// Linux `tcp_send_loss_probe`: one new segment if the window allows one, else the last
    /// segment again.
    fn send_loss_probe(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        self.pending = XmitTimer::Retransmission;
        if self.tlp_high_seq.is_some() {
            self.rearm_rto(tcb, now);
            return;
        }
        self.tlp_retrans = false;
        let mss = tcb.cfg.mss_bytes as u64;
        let new_data_end = (tcb.snd_una + tcb.rwnd.min(tcb.cfg.snd_buffer_bytes)).min(tcb.written);
        let mut sent = false;
        if tcb.snd_max < new_data_end {
            let len = (new_data_end - tcb.snd_max).min(mss);
            if tcb.emit(now, tcb.snd_max, len as u32, out) {
                self.q.push(tcb.snd_max, tcb.snd_max + len, now);
                tcb.snd_max += len;
                tcb.snd_nxt = tcb.snd_max;
                sent = true;
            }
        } else if let Some(last) = self.q.back() {
            if !last.has(SACKED) && tcb.emit(now, last.start, (last.end - last.start) as u32, out) {
                let id = self.q.ids().end - 1;
                self.q.on_retransmit(id, now);
                self.note_retransmit(tcb, now);
                self.tlp_retrans = true;
                sent = true;
            }
        }
        if sent {
            self.tlp_high_seq = Some(tcb.snd_max);
            tcb.stats.loss_probes += 1;
        }
        tcb.rto_deadline = None;
        self.rearm_rto(tcb, now);
    }

    /// The retransmission timeout (Linux `tcp_retransmit_timer`): enter Loss, resend the
    /// head, back off.
    fn retransmit_timer(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        if self.q.packets_out == 0 {
            return;
        }
        tcb.stats.timeouts += 1;
        self.enter_loss(tcb, now);
        self.send(tcb, now, out);
        tcb.rtt.back_off();
        self.retransmits += 1;
        tcb.rto_deadline = Some(now + tcb.rtt.rto());
        self.pending = XmitTimer::Retransmission;
    }
}
