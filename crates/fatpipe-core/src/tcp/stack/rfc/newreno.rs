//! NewReno (RFC 6582): fast recovery, entered and inflated as Reno's (`reno.rs`), lasts until
//! everything outstanding when it began (`recover`) is acknowledged; each partial ACK on the
//! way retransmits the next hole. Every partial ACK restarts the retransmission timer
//! ("Slow-but-Steady", as Linux) unless the "Impatient" variant is chosen (ns-2's default), which
//! restarts it on the first only. The RFC stack's shared ACK path is in `mod.rs`.

use super::RfcStack;
use crate::packet::Packet;
use crate::tcp::tcb::Tcb;
use crate::time::Time;

impl RfcStack {
    /// A new ACK in recovery: `full` when it covers `recover`. Returns whether the
    /// retransmission timer restarts.
    pub(crate) fn newreno_on_new_ack(
        &mut self,
        tcb: &mut Tcb,
        now: Time,
        full: bool,
        acked_segments: u32,
        acked_bytes: u64,
        out: &mut Vec<Packet>,
    ) -> bool {
        if full {
            // Deflate to min(ssthresh, FlightSize + 1 segment) so that the window does not
            // release a burst (RFC 6582 3.2 step 3, option 1).
            if !tcb.controls {
                let flight = tcb.segments(tcb.snd_max - tcb.snd_una).max(1);
                tcb.cc_state.cwnd = tcb.cc_state.ssthresh.min(flight + 1);
            }
            self.exit_recovery(tcb, now);
            return true;
        }
        // Partial ACK: the next hole is lost too. Retransmit it, deflate by what was
        // acknowledged and add back one segment (RFC 6582 3.2 step 5).
        self.retransmit_first_unacked(tcb, now, out);
        if !tcb.controls {
            let cwnd = tcb.cc_state.cwnd.saturating_sub(acked_segments);
            let add_back = u32::from(acked_bytes >= tcb.cfg.mss_bytes as u64);
            tcb.cc_state.cwnd = (cwnd + add_back).max(1);
        }
        let restart = !tcb.cfg.newreno_impatient || self.first_partial_ack;
        self.first_partial_ack = false;
        restart
    }
}
