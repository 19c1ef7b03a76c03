//! Tahoe (Jacobson 1988; 4.3BSD Tahoe): fast retransmit on the duplicate-ACK threshold, then
//! slow start from one segment, resending from the first unacknowledged byte (go-back-N).
//! The RFC stack's shared ACK path is in `mod.rs`; Tahoe's recovery then runs as a
//! timeout's does (state Loss), with its partial ACKs handled as NewReno's (`newreno.rs`).

use super::RfcStack;
use crate::tcp::tcb::Tcb;

impl RfcStack {
    /// The threshold's duplicate ACK: cwnd to one segment and go back to the hole; the
    /// state becomes Loss, as after a timeout (`mod.rs`).
    pub(crate) fn tahoe_enter_recovery(&mut self, tcb: &mut Tcb) {
        if !tcb.controls {
            tcb.cc_state.cwnd = 1;
        }
        if tcb.rate.is_some() {
            self.head_lost_bytes += (tcb.snd_max - tcb.snd_una).min(tcb.cfg.mss_bytes as u64);
        }
        tcb.snd_nxt = tcb.snd_una;
        tcb.timed_segment = None;
    }
}
