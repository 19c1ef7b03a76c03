//! Queue disciplines: what a link does with packets that arrive while it is busy.
//!
//! One file per discipline. A discipline owns its packets and decides on admission; the link
//! only asks it to enqueue and dequeue.

pub mod droptail;
pub mod red;

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

    /// A packet arrives while the link is idle (and so the queue empty): returns it to send
    /// at once, or with the reason it is dropped. The default goes through `enqueue` and
    /// `dequeue` (RED must see the arrival); a discipline may answer directly.
    fn on_idle_arrival(&mut self, now: Time, pkt: Packet) -> Result<Packet, (Packet, Admission)> {
        self.enqueue(now, pkt)?;
        Ok(self.dequeue(now).expect("just enqueued"))
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
