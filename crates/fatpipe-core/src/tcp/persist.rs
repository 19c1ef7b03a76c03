//! The persist timer (RFC 9293 3.8.6.1, Linux `tcp_probe_timer`): with the receiver's window
//! zero and nothing in flight, the retransmission timer sends a zero-length probe every RTO,
//! doubling up to max_rto, so a lost window update cannot stall the flow (see `sender.rs`); the TCB holds its state.

use super::tcb::Tcb;
use crate::packet::{Ecn, Packet, PacketKind};
use crate::time::Time;

impl Tcb {
    /// The persist interval: the RTO (at least min_rto), doubled per unanswered probe, at most
    /// max_rto (Linux `tcp_probe0_when`).
    pub(crate) fn persist_interval(&self) -> Time {
        self.rtt.rto().checked_shl(self.persist_backoff).unwrap_or(Time::MAX).min(self.rtt.max_rto())
    }

    /// The persist timer expired: a zero-length segment at SND.UNA makes the receiver answer
    /// with its current window (Linux sends an old sequence number, `tcp_xmit_probe_skb`).
    pub(crate) fn send_zero_window_probe(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.stats.zero_window_probes += 1;
        out.push(Packet {
            flow: self.flow,
            src: self.node,
            dst: self.peer,
            kind: PacketKind::Data,
            seq: self.snd_una,
            payload_bytes: 0,
            ip_bytes: self.cfg.header_bytes(),
            ack: 0,
            window_bytes: 0,
            sack: Default::default(),
            ts_val: now,
            ts_ecr: self.ts_recent,
            retransmission: false,
            conn: self.conn,
            ecn: Ecn::default(),
        });
        if self.persist_interval() < self.rtt.max_rto() {
            self.persist_backoff += 1;
        }
        self.rto_deadline = Some(now + self.persist_interval());
    }
}
