//! Queue disciplines: what a link does with packets that arrive while it is busy.
//!
//! One file per discipline. A discipline owns its packets and decides on admission; the link
//! only asks it to enqueue and dequeue.

pub mod droptail;

use crate::packet::Packet;
use crate::time::Time;
use serde::Deserialize;

pub trait QueueDiscipline: Send + Sync {
    /// Admits `pkt`, or hands it back when it is dropped.
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Result<(), Packet>;
    /// The next packet to transmit.
    fn dequeue(&mut self, now: Time) -> Option<Packet>;
    /// Packets waiting.
    fn len_packets(&self) -> usize;
    /// IP bytes waiting.
    fn len_bytes(&self) -> u64;
}

/// A queue as the scenario gives it.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "discipline", rename_all = "lowercase", deny_unknown_fields)]
pub enum QueueSpec {
    Droptail(droptail::DropTailConfig),
}

impl QueueSpec {
    pub fn build(&self) -> Box<dyn QueueDiscipline> {
        match self {
            QueueSpec::Droptail(cfg) => Box::new(droptail::DropTail::new(cfg.clone())),
        }
    }
}
