//! What every discipline that holds its packets shares (`scheduled.rs` dispatches them): the
//! `HoldingDiscipline` trait the link calls, the counters by cause (`AqmStats`), and whether
//! a packet can carry a CE mark. Apart from the dispatching enum, so that the disciplines
//! (`codel.rs`, `fq_codel.rs`, `pie.rs`, `fq_pie.rs`, `tbf.rs`) and the enum do not import
//! each other.

use super::Admission;
use crate::packet::{Ecn, Packet};
use crate::time::Time;

/// What a holding discipline did, by cause, and the sojourn times of the packets it sent.
#[derive(Clone, Debug, Default)]
pub struct AqmStats {
    /// Arrivals refused, or packets pushed out, because the queue was at its limit.
    pub overflow_drops: u64,
    /// Packets dropped by the control law at dequeue (CoDel's drop schedule).
    pub dequeue_drops: u64,
    /// Arrivals dropped early by the control law (PIE's probability).
    pub enqueue_drops: u64,
    /// Packets marked Congestion Experienced by the control law instead of dropped.
    pub ecn_marks: u64,
    /// Packets marked CE because their sojourn exceeded `ce_threshold` (FQ-CoDel's option),
    /// or DualPI2's step threshold.
    pub ce_threshold_marks: u64,
    /// Packets that left the queue for the line, and the sum and largest of their sojourn
    /// times (arrival to the start of their serialization).
    pub dequeued: u64,
    pub sojourn_total_ps: u128,
    pub sojourn_max_ps: Time,
    /// The sojourn time of the latest packet to leave (the queue series samples it).
    pub sojourn_last_ps: Time,
}

impl AqmStats {
    /// A packet that waited since `enqueued` leaves at `now`.
    #[inline]
    pub fn sojourn(&mut self, enqueued: Time, now: Time) {
        let s = now - enqueued;
        self.dequeued += 1;
        self.sojourn_total_ps += s as u128;
        self.sojourn_max_ps = self.sojourn_max_ps.max(s);
        self.sojourn_last_ps = s;
    }
}

/// Whether a packet can carry a CE mark instead of being dropped: ECT(0), ECT(1) or already
/// CE (Linux `INET_ECN_set_ce` succeeds for all three; a CE packet keeps its ECT bit here).
#[inline]
pub fn ecn_capable(pkt: &Packet) -> bool {
    pkt.ecn.has(Ecn::ECT) || pkt.ecn.has(Ecn::ECT1) || pkt.ecn.has(Ecn::CE)
}

/// A discipline that holds its packets. `dropped` collects every packet it discards other
/// than a refused arrival (which `enqueue` returns as an error), with the cause, for the
/// link's counters and the flows' loss accounting.
pub trait HoldingDiscipline {
    /// Takes `pkt`, arriving at `now`, or refuses it.
    fn enqueue(&mut self, now: Time, pkt: &Packet, dropped: &mut Vec<(Packet, Admission)>) -> Result<(), Admission>;
    /// The packet to serialize now, if any (dropping or marking on the way).
    fn dequeue(&mut self, now: Time, dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet>;
    /// When packets wait but the last `dequeue` gave none (a shaper waiting for tokens):
    /// the time it can give the next. 0 for the others, which give a packet whenever one
    /// waits and the line is free.
    fn ready_at(&self) -> Time {
        0
    }
    fn len_packets(&self) -> usize;
    fn len_bytes(&self) -> u64;
    /// How many more packets of `ip_bytes` it takes before its limit.
    fn room_packets(&self, ip_bytes: u32) -> u64;
    fn stats(&self) -> &AqmStats;
    /// The control state for the queue series: (dropping, control). CoDel: (1 while in its
    /// dropping state else 0, its count); FQ-CoDel: (queues in the dropping state, the
    /// largest count among them); PIE: (1 while its burst allowance lasts, else 0, its drop
    /// probability).
    fn control(&self) -> (i64, f64);
    /// Calls `f` for every waiting packet.
    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet));
}
