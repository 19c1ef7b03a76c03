//! The event queue: a binary min-heap ordered by (time, insertion sequence).
//!
//! The sequence number makes the order of simultaneous events the order in which they were
//! scheduled, so a run is deterministic. The heap holds O(elements) entries, never one per
//! packet in flight: a link keeps its in-flight packets in a FIFO with one pending event for
//! the head, and timers keep at most one live entry each (see `timer.rs`).

use crate::net::link::{Departed, Link};
use crate::packet::Packet;
use crate::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What happens when an event fires. Small and `Copy`: the heap never allocates per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The link finished serializing the packet it was transmitting.
    LinkTxDone(u32),
    /// The packet at the head of the link's propagation FIFO reaches the far end.
    LinkArrival(u32),
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
    time: Time,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: `BinaryHeap` is a max-heap and we want the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        other.time.cmp(&self.time).then_with(|| other.seq.cmp(&self.seq))
    }
}

#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
    /// Events popped so far (a measure of simulation work, reported by benchmarks).
    pub popped: u64,
}

impl EventQueue {
    pub fn schedule(&mut self, time: Time, event: Event) {
        self.heap.push(Entry { time, seq: self.next_seq, event });
        self.next_seq += 1;
    }

    /// Time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.time)
    }

    #[inline]
    pub fn pop(&mut self) -> Option<(Time, Event)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((e.time, e.event))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Link `l`'s `LinkTxDone` at `now`: schedules the end of the next serialization and the
    /// departed packet's arrival. Returns whether a next packet started (its captures see it)
    /// and the departed packet if a link without delay delivered it at once.
    #[inline]
    pub fn link_tx_done(&mut self, link: &mut Link, l: u32, now: Time) -> (bool, Option<Packet>) {
        let done = link.tx_done(now);
        if let Some(t) = done.next_done_at {
            self.schedule(t, Event::LinkTxDone(l));
        }
        let arrived = match done.departed {
            Departed::Arrived(pkt) => Some(pkt),
            Departed::Propagating { arrival, head } => {
                if head {
                    self.schedule(arrival, Event::LinkArrival(l));
                }
                None
            }
        };
        (done.next_done_at.is_some(), arrived)
    }

    /// Link `l`'s `LinkArrival`: its head packet reaches the far node (returned with it); the
    /// next packet's arrival is scheduled.
    #[inline]
    pub fn link_arrival(&mut self, link: &mut Link, l: u32) -> (Packet, u32) {
        let (pkt, next) = link.pop_arrival();
        if let Some(t) = next {
            self.schedule(t, Event::LinkArrival(l));
        }
        (pkt, link.spec.to)
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_scheduling_order() {
        let mut q = EventQueue::default();
        q.schedule(30, Event::Probe);
        q.schedule(10, Event::LinkTxDone(1));
        q.schedule(10, Event::LinkTxDone(2));
        q.schedule(20, Event::LinkArrival(0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (10, Event::LinkTxDone(1)),
                (10, Event::LinkTxDone(2)),
                (20, Event::LinkArrival(0)),
                (30, Event::Probe)
            ]
        );
        assert_eq!(q.popped, 4);
    }
}
