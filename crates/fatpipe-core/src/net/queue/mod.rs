//! Queue disciplines: what a link does with packets that arrive while it is busy.
//!
//! One file per discipline. A discipline owns its packets and decides on admission; the link
//! only asks it to enqueue and dequeue.

pub mod droptail;
pub mod red;
pub mod tx_ring;

use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

/// Why a discipline refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The queue was full.
    Overflow,
    /// An active queue manager (RED) dropped it early.
    EarlyDrop,
}

pub trait QueueDiscipline: Send + Sync {
    /// Admits `pkt`, or hands it back with the reason it is dropped. Every packet that enters
    /// the link comes here, even when the link is idle (RED must see every arrival).
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Result<(), (Packet, Admission)>;
    /// The next packet to transmit.
    fn dequeue(&mut self, now: Time) -> Option<Packet>;
    /// The packet `dequeue` would return next, without taking it (a driver's ring looks
    /// before it takes a packet from the qdisc).
    fn peek(&self) -> Option<&Packet>;
    /// Whether the packet being serialized still takes room in this queue (a transmit
    /// ring's descriptors), so that an idle link does not take one packet beyond its room.
    fn holds_packet_in_service(&self) -> bool {
        false
    }

    /// A packet arrives while the link is idle (and so the queue empty): returns it to send
    /// at once, or with the reason it is dropped. The default goes through `enqueue` and
    /// `dequeue` (RED must see the arrival); a discipline may answer directly.
    ///
    /// The link asks for a packet after every arrival, admitted or not, as ns-2's
    /// `Queue::recv` calls `deque()` after `enque()` whenever the link is free: when the
    /// arrival was dropped that `dequeue` finds the queue still empty, so an idle period
    /// starts again at the drop (RED's idle decay must not stop at an arrival it dropped).
    fn on_idle_arrival(&mut self, now: Time, pkt: Packet) -> Result<Packet, (Packet, Admission)> {
        match self.enqueue(now, pkt) {
            Ok(()) => Ok(self.dequeue(now).expect("just enqueued")),
            Err(refused) => {
                let none = self.dequeue(now);
                debug_assert!(none.is_none(), "an idle link's queue is empty");
                Err(refused)
            }
        }
    }
    /// How many more packets of `ip_bytes` the queue would admit now, by its limits alone
    /// (`u64::MAX`: no limit). A host's TCP senders never send more than this into their
    /// interface's queue (local congestion); RED's early drops are not foreseen.
    fn room_packets(&self, ip_bytes: u32) -> u64;
    /// Packets marked Congestion Experienced instead of dropped (ECN), since the start.
    fn ecn_marks(&self) -> u64 {
        0
    }
    /// RED's (min_th, max_th, w_q) in effect, the given or automatic ones; None for others.
    fn red_parameters(&self) -> Option<(f64, f64, f64)> {
        None
    }
    /// Packets waiting.
    fn len_packets(&self) -> usize;
    /// IP bytes waiting.
    fn len_bytes(&self) -> u64;
}

/// A queue as the scenario gives it.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(tag = "discipline", rename_all = "lowercase", deny_unknown_fields)]
pub enum QueueSpec {
    Droptail(droptail::DropTailConfig),
    Red(red::RedConfig),
}

impl QueueSpec {
    /// The discipline for a link of `link_rate_bps` (RED's automatic parameters depend on it),
    /// with its own random numbers.
    pub fn build(&self, link_rate_bps: u64, rng: Rng) -> Box<dyn QueueDiscipline> {
        match self {
            QueueSpec::Droptail(cfg) => Box::new(droptail::DropTail::new(cfg.clone())),
            QueueSpec::Red(cfg) => Box::new(red::Red::new(cfg.clone(), link_rate_bps, rng)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Refuses every packet and notes each time the link asks it for one.
    #[derive(Default)]
    struct RefuseAll {
        dequeues: Vec<Time>,
    }

    impl QueueDiscipline for RefuseAll {
        fn enqueue(&mut self, _now: Time, pkt: Packet) -> Result<(), (Packet, Admission)> {
            Err((pkt, Admission::EarlyDrop))
        }
        fn dequeue(&mut self, now: Time) -> Option<Packet> {
            self.dequeues.push(now);
            None
        }
        fn peek(&self) -> Option<&Packet> {
            None
        }
        fn room_packets(&self, _ip_bytes: u32) -> u64 {
            0
        }
        fn len_packets(&self) -> usize {
            0
        }
        fn len_bytes(&self) -> u64 {
            0
        }
    }

    #[test]
    fn an_idle_link_asks_for_a_packet_after_a_refused_arrival_too() {
        // ns-2 `Queue::recv` calls deque() after every enque() while the link is free, so a
        // queue that has just dropped an arrival at an idle link sees the idle period go on
        // from that moment (RED's idle decay).
        let mut q = RefuseAll::default();
        assert!(q.on_idle_arrival(7, crate::packet::testing::data(0, 1500)).is_err());
        assert_eq!(q.dequeues, vec![7]);
    }
}
