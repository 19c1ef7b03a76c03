//! Reno's fast retransmit and fast recovery (RFC 5681 section 3.2): retransmit the hole,
//! inflate the window by the segments that have left the network, and leave recovery on the
//! first ACK of new data, so several losses in one window usually end in a timeout. NewReno
//! (`newreno.rs`) enters and inflates the same way. The RFC stack's shared ACK path is in
//! `mod.rs`.

use super::RfcStack;
use crate::packet::Packet;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl RfcStack {
    /// Steps 2-3: ssthresh is set (by the caller); retransmit and set cwnd = ssthresh +
    /// the duplicate-ACK threshold. The caller enters Recovery.
    pub(crate) fn reno_enter_recovery(&mut self, tcb: &mut Tcb, now: Time, dupthresh: u32, out: &mut Vec<Packet>) {
        self.retransmit_first_unacked(tcb, now, out);
        if !tcb.controls {
            tcb.cc_state.cwnd = tcb.cc_state.ssthresh.saturating_add(dupthresh);
        }
        self.first_partial_ack = true;
    }

    /// Step 4: each further duplicate ACK means another segment left the network: inflate by
    /// one.
    pub(crate) fn reno_inflate(&mut self, tcb: &mut Tcb) {
        if !tcb.controls {
            tcb.cc_state.cwnd = tcb.cc_state.cwnd.saturating_add(1);
        }
    }

    /// Step 6: the first new ACK ends recovery; deflate to ssthresh. BSD retracts the window
    /// only after more than three duplicate ACKs (`t_dupacks > tcprexmtthresh`, tcp_input.c
    /// 7.25 lines 885-887): after exactly three it keeps ssthresh + 3 segments.
    pub(crate) fn reno_on_new_ack(&mut self, tcb: &mut Tcb, now: Time) {
        let retract = !tcb.cfg.bsd_window || self.dupacks > tcb.cfg.dupack_threshold;
        if !tcb.controls && retract {
            tcb.cc_state.cwnd = tcb.cc_state.ssthresh;
        }
        self.exit_recovery(tcb, now);
    }
}
