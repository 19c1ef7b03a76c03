//! The RFC stack's sending outside SACK recovery (the window, with limited transmit and
//! DCR's extra segments), and the retransmission of the first unacknowledged segment that
//! every variant's recovery starts with. SACK recovery sends by RFC 6675's loop
//! (`rfc6675.rs`, `sack1.rs`).

use super::RfcStack;
use crate::cc::CaState;
use crate::packet::Packet;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl RfcStack {
    /// Resends the first unacknowledged segment.
    pub(crate) fn retransmit_first_unacked(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        let len = (tcb.snd_max - tcb.snd_una).min(tcb.cfg.mss_bytes as u64);
        // Refused by the interface: sent first on the next pass (Linux keeps it marked lost).
        self.head_rtx_pending = len > 0 && !tcb.emit(now, tcb.snd_una, len as u32, out);
        if len > 0 && !self.head_rtx_pending {
            if tcb.sack() {
                self.scoreboard.on_retransmit(tcb.snd_una, len);
            } else if tcb.rate.is_some() {
                // Without SACK the head is the one segment known lost (Linux marks it so).
                self.head_lost_bytes += len;
            }
        }
    }

    /// Sending outside SACK recovery: everything up to SND.UNA + min(cwnd, rwnd, buffer).
    pub(crate) fn send_window(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        let mss = tcb.cfg.mss_bytes as u64;
        let mut cwnd_bytes = tcb.cc_state.cwnd as u64 * mss;
        if tcb.cfg.dcr_div.is_some() && matches!(tcb.ca_state, CaState::Open | CaState::Cwr) {
            // DCR: each duplicate ACK releases one new segment while the response waits.
            cwnd_bytes += self.dupacks as u64 * mss;
        } else if tcb.cfg.limited_transmit && matches!(tcb.ca_state, CaState::Open | CaState::Cwr) {
            // RFC 3042: the first two duplicate ACKs each release one new segment.
            cwnd_bytes += self.dupacks.min(2) as u64 * mss;
        }
        let window = cwnd_bytes.min(tcb.rwnd).min(tcb.cfg.snd_buffer_bytes);
        let end = (tcb.snd_una + window).min(tcb.written);
        while tcb.snd_nxt < end {
            if tcb.sack() && tcb.snd_nxt < tcb.snd_max {
                // Never resend what the receiver has SACKed.
                tcb.snd_nxt = self.scoreboard.next_unsacked(tcb.snd_nxt).min(tcb.snd_max).max(tcb.snd_nxt);
                if tcb.snd_nxt >= end {
                    break;
                }
            }
            let len = (end - tcb.snd_nxt).min(mss);
            // Sender silly-window avoidance (RFC 1122 4.2.3.4): no runt segment while a full
            // one may follow, unless nothing is in flight (which would stall the connection).
            if len < mss && tcb.snd_nxt + len < tcb.written && tcb.snd_nxt > tcb.snd_una {
                break;
            }
            if tcb.paced_out(now, false) || !tcb.emit(now, tcb.snd_nxt, len as u32, out) {
                break;
            }
            tcb.snd_nxt += len;
            tcb.snd_max = tcb.snd_max.max(tcb.snd_nxt);
        }
        // Linux `tcp_is_cwnd_limited`: in slow start the window may grow while it is less than
        // twice what is in flight; in congestion avoidance only while the flight fills it.
        let flight = tcb.segments(tcb.snd_nxt - tcb.snd_una);
        tcb.cc_state.cwnd_limited =
            if tcb.cc_state.in_slow_start() { tcb.cc_state.cwnd < 2 * flight } else { flight >= tcb.cc_state.cwnd };
    }
}
