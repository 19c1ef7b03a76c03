//! Tahoe (Jacobson 1988; 4.3BSD Tahoe): fast retransmit on the duplicate-ACK threshold, then
//! slow start from one segment, resending from the first unacknowledged byte (go-back-N).
//! The RFC stack's shared ACK path is in `rfc.rs`; Tahoe's recovery then runs as a
//! timeout's does (state Loss), with its partial ACKs handled as NewReno's (`newreno.rs`).

use crate::cc::CaState;
use crate::tcp::TcpSender;
use crate::time::Time;

impl TcpSender {
    /// The threshold's duplicate ACK: cwnd to one segment and go back to the hole.
    pub(crate) fn tahoe_enter_recovery(&mut self, now: Time) {
        if !self.controls {
            self.cc_state.cwnd = 1;
        }
        if self.rate.is_some() {
            self.head_lost_bytes += (self.snd_max - self.snd_una).min(self.cfg.mss_bytes as u64);
        }
        self.snd_nxt = self.snd_una;
        self.timed_segment = None;
        self.set_ca_state(now, CaState::Loss);
    }
}
