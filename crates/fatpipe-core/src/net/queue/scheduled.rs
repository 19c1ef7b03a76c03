//! Disciplines that decide when a packet leaves (at dequeue) or which one leaves next: CoDel
//! (`codel.rs`), FQ-CoDel (`fq_codel.rs`), PIE (`pie.rs`), FQ-PIE (`fq_pie.rs`), and the TBF shaper (`tbf.rs`). Unlike drop-tail and RED, which only admit and
//! count while the link keeps the packets in order with their departure times, these hold
//! their waiting packets (in a `PacketSlab`, sized when the link is built) and the link asks
//! them for the next packet each time its transmitter frees (`Link::service`, one event per
//! departure: `Event::LinkDequeue`).

use super::codel::CoDel;
use super::dualpi2::{DualPi2, DualPi2Summary};
use super::fq_codel::FqCodel;
use super::fq_pie::FqPie;
use super::pie::Pie;
use super::tbf::Tbf;
use super::Admission;
use crate::packet::Packet;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Serialize;

pub use super::holding::{ecn_capable, AqmStats, HoldingDiscipline};

/// The holding disciplines (an enum: the link calls them on every packet).
pub enum Scheduled {
    CoDel(CoDel),
    FqCodel(Box<FqCodel>),
    Pie(Pie),
    FqPie(Box<FqPie>),
    Tbf(Tbf),
    DualPi2(Box<DualPi2>),
}

macro_rules! dispatch_held {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            Scheduled::CoDel($q) => $e,
            Scheduled::FqCodel($q) => $e,
            Scheduled::Pie($q) => $e,
            Scheduled::FqPie($q) => $e,
            Scheduled::Tbf($q) => $e,
            Scheduled::DualPi2($q) => $e,
        }
    };
}

impl Scheduled {
    /// The name the scenario gives it.
    pub fn name(&self) -> &'static str {
        match self {
            Scheduled::CoDel(_) => "codel",
            Scheduled::FqCodel(_) => "fq_codel",
            Scheduled::Pie(_) => "pie",
            Scheduled::FqPie(_) => "fq_pie",
            Scheduled::Tbf(_) => "tbf",
            Scheduled::DualPi2(_) => "dualpi2",
        }
    }
    #[inline]
    pub fn enqueue(
        &mut self,
        now: Time,
        pkt: &Packet,
        dropped: &mut Vec<(Packet, Admission)>,
    ) -> Result<(), Admission> {
        dispatch_held!(self, q => q.enqueue(now, pkt, dropped))
    }
    #[inline]
    pub fn dequeue(&mut self, now: Time, dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        dispatch_held!(self, q => q.dequeue(now, dropped))
    }
    #[inline]
    pub fn ready_at(&self) -> Time {
        dispatch_held!(self, q => q.ready_at())
    }
    #[inline]
    pub fn len_packets(&self) -> usize {
        dispatch_held!(self, q => q.len_packets())
    }
    #[inline]
    pub fn len_bytes(&self) -> u64 {
        dispatch_held!(self, q => q.len_bytes())
    }
    #[inline]
    pub fn room_packets(&self, ip_bytes: u32) -> u64 {
        dispatch_held!(self, q => q.room_packets(ip_bytes))
    }
    pub fn stats(&self) -> &AqmStats {
        dispatch_held!(self, q => q.stats())
    }
    pub fn control(&self) -> (i64, f64) {
        dispatch_held!(self, q => q.control())
    }
    pub fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        dispatch_held!(self, q => q.for_each_packet(f))
    }
    /// DualPI2, for its per-queue series and summary.
    pub fn dualpi2(&self) -> Option<&DualPi2> {
        match self {
            Scheduled::DualPi2(q) => Some(q),
            _ => None,
        }
    }
}

/// A holding discipline's entry in the link's summary.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AqmSummary {
    /// The discipline ("codel", "fq_codel", "pie", "fq_pie", "tbf").
    pub discipline: String,
    /// Drops at the queue's limit (also in the link's drops_packets).
    pub overflow_drops: u64,
    /// Drops by the control law at dequeue (also in the link's early_drops_packets).
    pub dequeue_drops: u64,
    /// Arrivals dropped early by the control law: PIE (also in early_drops_packets).
    pub enqueue_drops: u64,
    /// CE marks by the control law instead of drops (also in the link's ecn_marks).
    pub ecn_marks: u64,
    /// CE marks for a sojourn above ce_threshold, or DualPI2's step threshold (also in the
    /// link's ecn_marks).
    pub ce_threshold_marks: u64,
    /// Packets that left the queue for the line.
    pub dequeued_packets: u64,
    /// Their mean and largest sojourn time in the queue (arrival to the start of their
    /// serialization); None when none left.
    pub sojourn_mean_ps: Option<Time>,
    pub sojourn_max_ps: Option<Time>,
    /// DualPI2: each of its queues and its controller (absent for the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dualpi2: Option<DualPi2Summary>,
}

impl AqmSummary {
    pub fn of(q: &Scheduled) -> AqmSummary {
        let s = q.stats();
        AqmSummary {
            discipline: q.name().to_string(),
            overflow_drops: s.overflow_drops,
            dequeue_drops: s.dequeue_drops,
            enqueue_drops: s.enqueue_drops,
            ecn_marks: s.ecn_marks,
            ce_threshold_marks: s.ce_threshold_marks,
            dequeued_packets: s.dequeued,
            sojourn_mean_ps: (s.dequeued > 0).then(|| (s.sojourn_total_ps / s.dequeued as u128) as Time),
            sojourn_max_ps: (s.dequeued > 0).then_some(s.sojourn_max_ps),
            dualpi2: q.dualpi2().map(DualPi2::summary),
        }
    }
}
