//! The TCP timers' own heap, beside the event queue's main heap (`event.rs`).
//!
//! Timers are a small part of the events popped (0.2 % in the 100-flow RED case) but were
//! most of the heap's entries: 432 of 549 after its warm-up, each a deadline far ahead that
//! every link arrival's sift had to step over. Here each timer (a flow and a `TimerKind`)
//! has at most one entry, whose place is tracked, so scheduling a timer that already waits
//! *moves* its entry instead of leaving the old one behind, stale, until it fires and is
//! ignored (350 of those 432 entries were such stale retransmission-timer entries: the
//! Linux stack's tail loss probe and RTO share one timer, whose deadline keeps moving
//! earlier and later). A moved entry gets the key a new entry would have had, (time, the
//! next sequence number), so the order of events is exactly that of the old single heap.

use super::{Event, TimerKind};

/// `pos` of a timer that has no entry.
const ABSENT: u32 = u32::MAX;
const KINDS: u32 = 5;

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// (time, sequence), as in the main heap.
    key: u128,
    /// flow * KINDS + kind
    id: u32,
}

/// A binary min-heap of timer entries with each timer's place in it (the heap is small and
/// rarely touched: no need for the main heap's arity or its hole).
#[derive(Default)]
pub(super) struct TimerHeap {
    heap: Vec<Entry>,
    /// Per timer id: its index in `heap`, or ABSENT.
    pos: Vec<u32>,
}

fn kind_index(kind: TimerKind) -> u32 {
    match kind {
        TimerKind::Retransmission => 0,
        TimerKind::DelayedAck => 1,
        TimerKind::Pacing => 2,
        TimerKind::Connection => 3,
        TimerKind::WindowUpdate => 4,
    }
}

fn timer_event(id: u32) -> Event {
    let kind = match id % KINDS {
        0 => TimerKind::Retransmission,
        1 => TimerKind::DelayedAck,
        2 => TimerKind::Pacing,
        3 => TimerKind::Connection,
        _ => TimerKind::WindowUpdate,
    };
    Event::Timer(id / KINDS, kind)
}

impl TimerHeap {
    /// The earliest entry's key (u128::MAX: none).
    #[inline(always)]
    pub(super) fn min_key(&self) -> u128 {
        self.heap.first().map_or(u128::MAX, |e| e.key)
    }

    pub(super) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Gives timer (`flow`, `kind`) the entry `key`: its waiting entry moves, or a new one is
    /// added. (Allocates only when a flow's timer is first scheduled.)
    pub(super) fn set(&mut self, flow: u32, kind: TimerKind, key: u128) {
        let id = flow * KINDS + kind_index(kind);
        if id as usize >= self.pos.len() {
            self.pos.resize(id as usize + 1, ABSENT);
        }
        let at = self.pos[id as usize];
        let entry = Entry { key, id };
        if at == ABSENT {
            self.heap.push(entry);
            self.sift_up(self.heap.len() - 1, entry);
        } else if key < self.heap[at as usize].key {
            self.sift_up(at as usize, entry);
        } else {
            self.sift_down(at as usize, entry);
        }
    }

    /// Takes the earliest entry out: its key and event.
    pub(super) fn pop(&mut self) -> Option<(u128, Event)> {
        let first = *self.heap.first()?;
        self.pos[first.id as usize] = ABSENT;
        let last = self.heap.pop().expect("not empty");
        if !self.heap.is_empty() {
            self.sift_down(0, last);
        }
        Some((first.key, timer_event(first.id)))
    }

    /// Places `entry` at slot `i` and lets it rise to its place.
    fn sift_up(&mut self, mut i: usize, entry: Entry) {
        while i > 0 {
            let parent = (i - 1) / 2;
            if entry.key >= self.heap[parent].key {
                break;
            }
            self.place(i, self.heap[parent]);
            i = parent;
        }
        self.place(i, entry);
    }

    /// Places `entry` at slot `i` and lets it sink to its place.
    fn sift_down(&mut self, mut i: usize, entry: Entry) {
        let len = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let best = if right < len && self.heap[right].key < self.heap[left].key { right } else { left };
            if self.heap[best].key >= entry.key {
                break;
            }
            self.place(i, self.heap[best]);
            i = best;
        }
        self.place(i, entry);
    }

    #[inline(always)]
    fn place(&mut self, i: usize, entry: Entry) {
        self.heap[i] = entry;
        self.pos[entry.id as usize] = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(time: u64, seq: u64) -> u128 {
        ((time as u128) << 64) | seq as u128
    }

    #[test]
    fn a_timer_scheduled_again_moves_its_entry() {
        let mut h = TimerHeap::default();
        h.set(0, TimerKind::Retransmission, key(100, 0));
        h.set(1, TimerKind::Retransmission, key(60, 1));
        h.set(0, TimerKind::DelayedAck, key(70, 2));
        // Earlier, then later: still one entry each.
        h.set(0, TimerKind::Retransmission, key(50, 3));
        h.set(1, TimerKind::Retransmission, key(80, 4));
        assert_eq!(h.len(), 3);
        let order: Vec<_> = std::iter::from_fn(|| h.pop()).collect();
        assert_eq!(
            order,
            vec![
                (key(50, 3), Event::Timer(0, TimerKind::Retransmission)),
                (key(70, 2), Event::Timer(0, TimerKind::DelayedAck)),
                (key(80, 4), Event::Timer(1, TimerKind::Retransmission)),
            ]
        );
        // Popped timers can be scheduled again.
        h.set(0, TimerKind::WindowUpdate, key(90, 5));
        assert_eq!(h.pop(), Some((key(90, 5), Event::Timer(0, TimerKind::WindowUpdate))));
        assert_eq!(h.min_key(), u128::MAX);
    }

    #[test]
    fn random_moves_pop_in_key_order() {
        let mut h = TimerHeap::default();
        let mut rng = crate::rng::Rng::new(3);
        let mut latest = std::collections::HashMap::new();
        for seq in 0..5_000u64 {
            let (flow, kind) = (
                (rng.next_u64() % 40) as u32,
                if rng.next_u64().is_multiple_of(2) { TimerKind::Pacing } else { TimerKind::Connection },
            );
            let k = key(rng.next_u64() % 10_000, seq);
            h.set(flow, kind, k);
            latest.insert((flow, kind_index(kind)), k);
        }
        let mut expected: Vec<u128> = latest.values().copied().collect();
        expected.sort();
        let popped: Vec<u128> = std::iter::from_fn(|| h.pop()).map(|(k, _)| k).collect();
        assert_eq!(popped, expected);
    }
}
