//! The event queue: min-heaps ordered by (time, insertion sequence).
//!
//! The sequence number makes the order of simultaneous events the order in which they were
//! scheduled, so a run is deterministic. The heaps hold O(elements) entries, never one per
//! packet in flight: a link keeps its packets in a FIFO with one pending event for the head,
//! and each timer has at most one entry (`timer.rs`, `event/timer_heap.rs`).

mod timer_heap;

use crate::net::link::{Link, Offered, Service};
use crate::packet::Packet;
use crate::time::Time;

/// What happens when an event fires. Small and `Copy`: the heap never allocates per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The packet at the head of the link reaches the far end.
    LinkArrival(u32),
    /// A serialization on the link ends (the next waiting packet starts, or the link falls
    /// idle). Scheduled only for links whose captures or refused senders watch it: a link
    /// otherwise needs no event of its own besides arrivals (`net/link.rs`).
    LinkTxEnd(u32),
    /// A link whose discipline decides at dequeue (CoDel, FQ-CoDel) hands its transmitter
    /// the next packet: one event per departure (`Link::service`).
    LinkDequeue(u32),
    /// A TCP timer of a flow may have expired.
    Timer(u32, TimerKind),
    /// The application of a flow starts writing.
    SourceStart(u32),
    /// The application of a flow stops writing.
    SourceStop(u32),
    /// A paced application's next burst, or a UDP source's next datagram, is due.
    SourceTick(u32),
    /// Sample every probe.
    Probe,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerKind {
    /// The sender's retransmission timer (RFC 6298).
    Retransmission,
    /// The receiver's delayed-ACK timer (RFC 1122 4.2.3.2).
    DelayedAck,
    /// The sender's pacing timer: the next segment may go.
    Pacing,
    /// Connection setup and requests: SYN and SYN-ACK retransmission (`tcp/handshake.rs`),
    /// an HTTP client's request retransmission (`source/http.rs`).
    Connection,
    /// The receiver's window-update timer: a rate-limited application has read enough to
    /// reopen the window.
    WindowUpdate,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// (time, sequence) as one number, time in the high half: one comparison orders two
    /// entries, and compiles without branches.
    key: u128,
    event: Event,
}

impl Entry {
    /// Earlier first; at one time, scheduled first.
    #[inline(always)]
    fn before(&self, other: &Entry) -> bool {
        self.key < other.key
    }

    #[inline(always)]
    fn time(&self) -> Time {
        (self.key >> 64) as Time
    }
}

/// The event queue: a `D`-ary min-heap on (time, sequence), `D` = 4 by default.
///
/// Two things make it cheaper than `std::collections::BinaryHeap` on a simulation's mix of
/// events (measured in `benches/engine.rs` and with `fatpipe bench`; docs/benchmarks.md):
/// - popping leaves a hole at the root instead of moving the last entry there at once. Most
///   events schedule another before the next pop (a link's next arrival, a timer re-armed):
///   the new entry then goes into the hole and sinks once, where a pop and a push would
///   have sunk one entry and raised another;
/// - four children per node halve the heap's depth, and their times sit in one or two
///   cache lines.
///
/// The order does not depend on the heap's shape: (time, sequence) is a total order, so
/// any arity pops the same events in the same order.
///
/// TCP timers wait in a heap of their own (`timer_heap.rs`), where a timer scheduled again
/// moves its one entry: the main heap holds the links' arrivals, the probe and the sources,
/// the events nearly every pop is about, and its sifts no longer step over hundreds of
/// far-off deadlines (100 flows with RED: 117 entries instead of 549). A pop takes the
/// earlier of the two heads; both draw on one sequence, so the order is that of one heap.
pub struct EventQueue<const D: usize = 4> {
    heap: Vec<Entry>,
    timers: timer_heap::TimerHeap,
    /// `heap[0]` was popped and awaits an entry.
    hole: bool,
    next_seq: u64,
    /// Events popped so far (a measure of simulation work, reported by benchmarks).
    pub popped: u64,
}

impl<const D: usize> Default for EventQueue<D> {
    fn default() -> Self {
        EventQueue { heap: Vec::with_capacity(64), timers: Default::default(), hole: false, next_seq: 0, popped: 0 }
    }
}

impl<const D: usize> EventQueue<D> {
    /// Schedules `event` at `time`. A timer has at most one entry: scheduling it again moves
    /// its entry to `time` (as if the old one had been dropped and a new one scheduled).
    #[inline]
    pub fn schedule(&mut self, time: Time, event: Event) {
        let entry = Entry { key: ((time as u128) << 64) | self.next_seq as u128, event };
        self.next_seq += 1;
        if let Event::Timer(flow, kind) = event {
            self.timers.set(flow, kind, entry.key);
            return;
        }
        if self.hole {
            self.hole = false;
            self.sift_down(0, entry);
        } else {
            self.heap.push(entry);
            self.sift_up(self.heap.len() - 1, entry);
        }
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        self.fill_hole();
        let first = self.heap.first().map_or(u128::MAX, |e| e.key).min(self.timers.min_key());
        (first != u128::MAX).then_some((first >> 64) as Time)
    }

    /// The earliest pending event, taken out.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        self.pop_until(Time::MAX)
    }

    /// The earliest pending event if it is due at or before `end`, taken out.
    #[inline]
    pub fn pop_until(&mut self, end: Time) -> Option<(Time, Event)> {
        self.fill_hole();
        let timer_key = self.timers.min_key();
        match self.heap.first() {
            Some(e) if e.key < timer_key => {
                let e = *e;
                if e.time() > end {
                    return None;
                }
                self.hole = true;
                self.popped += 1;
                Some((e.time(), e.event))
            }
            // The timers' head is earlier (keys are unique), or the main heap is empty.
            _ => {
                if timer_key == u128::MAX || (timer_key >> 64) as Time > end {
                    return None;
                }
                let (key, event) = self.timers.pop().expect("a timer entry");
                self.popped += 1;
                Some(((key >> 64) as Time, event))
            }
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.hole) + self.timers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nothing was scheduled into the hole: the last entry fills it.
    #[inline]
    fn fill_hole(&mut self) {
        if self.hole {
            self.hole = false;
            let last = self.heap.pop().expect("a hole is in the heap");
            if !self.heap.is_empty() {
                self.sift_down(0, last);
            }
        }
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize, entry: Entry) {
        while i > 0 {
            let parent = (i - 1) / D;
            if !entry.before(&self.heap[parent]) {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = entry;
    }

    /// Places `entry` at the empty slot `i` and lets it sink to its place.
    #[inline]
    fn sift_down(&mut self, mut i: usize, entry: Entry) {
        let len = self.heap.len();
        loop {
            let first = D * i + 1;
            if first >= len {
                break;
            }
            let mut best = first;
            if first + D <= len {
                // All D children exist: a fixed loop the compiler unrolls into conditional
                // moves (which child is earliest is a coin toss a branch would mispredict).
                for c in first + 1..first + D {
                    best = if self.heap[c].key < self.heap[best].key { c } else { best };
                }
            } else {
                for c in first + 1..len {
                    best = if self.heap[c].key < self.heap[best].key { c } else { best };
                }
            }
            if !self.heap[best].before(&entry) {
                break;
            }
            self.heap[i] = self.heap[best];
            i = best;
        }
        self.heap[i] = entry;
    }

    /// Offers `pkt` to link `l` at `now`, scheduling its arrival when it is the only packet
    /// on the link (the others follow it: `link_arrival`). False: dropped.
    #[inline]
    pub fn link_offer(&mut self, link: &mut Link, l: u32, now: Time, pkt: &Packet) -> bool {
        match link.offer(now, pkt) {
            Offered::Admitted { arrival, head } => {
                if head {
                    self.schedule(arrival, Event::LinkArrival(l));
                }
                true
            }
            Offered::Dropped => false,
            Offered::HandedOn { .. } => unreachable!("`offer` never hands a packet on"),
            Offered::Queued => {
                self.link_service(link, l, now);
                true
            }
        }
    }

    /// Serves holding link `l` at `now` (`Link::service`) and schedules what it asks.
    pub fn link_service(&mut self, link: &mut Link, l: u32, now: Time) {
        let s = link.service(now);
        self.schedule_service(l, s);
    }

    /// Link `l`'s `LinkDequeue` at `now`: the next packet starts (`Link::dequeue_due`).
    pub fn link_dequeue(&mut self, link: &mut Link, l: u32, now: Time) {
        let s = link.dequeue_due(now);
        self.schedule_service(l, s);
    }

    fn schedule_service(&mut self, l: u32, s: Service) {
        if let Some(t) = s.arrival {
            self.schedule(t, Event::LinkArrival(l));
        }
        if let Some(t) = s.dequeue_at {
            self.schedule(t, Event::LinkDequeue(l));
        }
    }

    /// Link `l`'s `LinkArrival` at `now`: its head packet reaches the far node (returned);
    /// the next packet's arrival is scheduled.
    #[inline]
    pub fn link_arrival(&mut self, link: &mut Link, l: u32, now: Time) -> Packet {
        let pkt = link.pop_arrival(now);
        if let Some(t) = link.next_arrival() {
            self.schedule(t, Event::LinkArrival(l));
        }
        pkt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_scheduling_order() {
        let mut q: EventQueue = EventQueue::default();
        q.schedule(30, Event::Probe);
        q.schedule(10, Event::LinkTxEnd(1));
        q.schedule(10, Event::LinkTxEnd(2));
        q.schedule(20, Event::LinkArrival(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![(10, Event::LinkTxEnd(1)), (10, Event::LinkTxEnd(2)), (20, Event::LinkArrival(0)), (30, Event::Probe)]
        );
        assert_eq!(q.popped, 4);
    }

    /// Pops every event of a random schedule (with ties) from a queue of arity `D`.
    fn drain_order<const D: usize>() -> Vec<(Time, Event)> {
        let mut q = EventQueue::<D>::default();
        let mut rng = crate::rng::Rng::new(11);
        let mut order = vec![];
        let mut now = 0;
        for i in 0..20_000u32 {
            // Like a simulation: most pops schedule one or two events, some none.
            for _ in 0..(rng.next_u64() % 3) {
                // Some are timers, in their own heap: the pops interleave both by (time, sequence).
                let event = if i % 5 == 0 { Event::Timer(i, TimerKind::Pacing) } else { Event::LinkArrival(i) };
                q.schedule(now + rng.next_u64() % 50, event);
            }
            if let Some((t, e)) = q.pop() {
                assert!(t >= now, "time never goes back");
                now = t;
                order.push((t, e));
            }
        }
        while let Some(x) = q.pop() {
            order.push(x);
        }
        order
    }

    #[test]
    fn every_arity_pops_in_time_then_scheduling_order() {
        let binary = drain_order::<2>();
        assert!(binary.len() > 15_000);
        assert!(binary.windows(2).all(|w| w[0].0 <= w[1].0));
        // Same-time events come out in the order they were scheduled (i grows with it).
        let by_index = |e: &Event| match e {
            Event::LinkArrival(i) | Event::Timer(i, _) => *i,
            _ => unreachable!(),
        };
        assert!(binary.windows(2).all(|w| w[0].0 < w[1].0 || by_index(&w[0].1) <= by_index(&w[1].1)));
        assert!(binary.iter().any(|(_, e)| matches!(e, Event::Timer(..))));
        assert_eq!(drain_order::<4>(), binary);
        assert_eq!(drain_order::<8>(), binary);
    }

    #[test]
    fn pop_until_stops_at_the_end_and_len_counts_the_hole_out() {
        let mut q = EventQueue::<4>::default();
        q.schedule(5, Event::Probe);
        q.schedule(9, Event::Probe);
        assert_eq!(q.pop_until(4), None);
        assert_eq!(q.pop_until(5), Some((5, Event::Probe)));
        assert_eq!(q.len(), 1);
        assert_eq!(q.peek_time(), Some(9));
        assert_eq!(q.pop(), Some((9, Event::Probe)));
        assert!(q.is_empty() && q.pop().is_none());
    }
}
