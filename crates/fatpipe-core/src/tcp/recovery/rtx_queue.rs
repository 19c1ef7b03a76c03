//! The retransmission queue of the Linux stack (`tcp_rtx_queue` and `tsorted_sent_queue` in
//! Linux): one record per segment sent and not yet cumulatively acknowledged, with its
//! scoreboard flags, and the counters `tcp_packets_in_flight` is made of.
//!
//! Records sit in a deque in sequence order (new data is sent in sequence order and a
//! retransmission updates its segment's record in place), addressed by an absolute id that
//! does not change when acknowledged records leave the front. Segments that may still be
//! marked lost by time (RACK) are also linked, through ids stored in the records, into a list
//! ordered by their last transmission: sending appends, a retransmission moves the record to
//! the tail, and SACKing or marking a segment lost unlinks it, each in O(1). Per ACK:
//! - the cumulative ACK pops records off the front, each once;
//! - a SACK block finds its first record by binary search and marks each newly SACKed one
//!   once, so its cost is O(log n + newly SACKed);
//! - RACK walks the time-ordered list from its head and stops at the first segment sent
//!   after the latest delivered one; what it passes is marked lost and unlinked, or is a hole
//!   it must wait for;
//! - segments marked lost are retransmitted lowest sequence first, found from a cursor that
//!   only moves back when a segment below it is marked lost (Linux `retransmit_skb_hint`).
//!
//! So the work per ACK is amortized O(1) in the window (and O(log n) per SACK block).

use crate::time::Time;
use std::collections::VecDeque;

/// No record (end of the time-ordered list).
const NONE: u64 = u64::MAX;

/// SACKed (Linux `TCPCB_SACKED_ACKED`).
pub const SACKED: u8 = 1;
/// A retransmission of it is in flight (Linux `TCPCB_SACKED_RETRANS`).
pub const RETRANS: u8 = 2;
/// Marked lost (Linux `TCPCB_LOST`).
pub const LOST: u8 = 4;
/// Retransmitted at least once (Linux `TCPCB_EVER_RETRANS`).
pub const EVER_RETRANS: u8 = 8;

#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub start: u64,
    pub end: u64,
    /// When it was last sent (Linux `skb_mstamp`), and the count of transmissions before
    /// that one: which of two segments sent at the same instant went later (Linux, with a
    /// microsecond clock, breaks such ties by sequence number, which misorders a
    /// retransmission sent after new data; here time ties are exact).
    pub xmit_ps: Time,
    pub xmit_order: u64,
    pub flags: u8,
    ts_prev: u64,
    ts_next: u64,
}

impl Segment {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Retransmitted at some point (Linux `TCPCB_RETRANS`): its delivery says nothing of
    /// the RTT (Karn).
    pub fn retransmitted(&self) -> bool {
        self.flags & (RETRANS | EVER_RETRANS) != 0
    }

    fn linked(&self) -> bool {
        self.ts_prev != NONE || self.ts_next != NONE
    }
}

#[derive(Debug, Default)]
pub struct RtxQueue {
    segs: VecDeque<Segment>,
    /// Id of `segs[0]`.
    base: u64,
    /// Head and tail of the time-ordered list (NONE: empty).
    ts_head: Option<u64>,
    ts_tail: Option<u64>,
    /// Segments sent and not cumulatively acknowledged (Linux `packets_out`).
    pub packets_out: u32,
    /// Of those, SACKed (`sacked_out`), marked lost (`lost_out`), and with a retransmission
    /// in flight (`retrans_out`).
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// One past the highest SACKed byte (Linux `tcp_highest_sack_seq`); 0: nothing SACKed.
    pub highest_sack_end: u64,
    /// No segment below this id is marked lost and waiting for its retransmission (Linux
    /// `retransmit_skb_hint`).
    retransmit_hint: u64,
    /// Transmissions so far (`Segment::xmit_order`).
    transmissions: u64,
    /// The last SACK blocks `sack` processed (Linux `recv_sack_cache`): every segment wholly
    /// inside one is SACKed (the flag is never cleared, and no segment is added inside,
    /// since a block is clipped to what was sent). A block that grows at its end, as the
    /// first one does on every ACK in recovery, is then walked from where it ended before,
    /// not from its start: without this, each ACK walked its whole SACKed range, a cost per
    /// ACK that grows with the window (a fifth of the time with 100 flows and RED).
    sack_cache: [(u64, u64); 4],
    sack_cache_next: usize,
}

impl RtxQueue {
    /// Segments in the network (Linux `tcp_packets_in_flight`): outstanding, minus SACKed and
    /// lost, plus retransmissions in flight.
    pub fn in_flight(&self) -> u32 {
        (self.packets_out - (self.sacked_out + self.lost_out).min(self.packets_out)) + self.retrans_out
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    pub fn front(&self) -> Option<&Segment> {
        self.segs.front()
    }

    pub fn back(&self) -> Option<&Segment> {
        self.segs.back()
    }

    pub fn get(&self, id: u64) -> Option<&Segment> {
        id.checked_sub(self.base).and_then(|i| self.segs.get(i as usize))
    }

    fn at(&mut self, id: u64) -> &mut Segment {
        &mut self.segs[(id - self.base) as usize]
    }

    /// The id of the segment holding byte `seq`, if outstanding.
    pub fn find(&self, seq: u64) -> Option<u64> {
        let i = self.segs.partition_point(|s| s.end <= seq);
        self.segs.get(i).filter(|s| s.start <= seq).map(|_| self.base + i as u64)
    }

    /// Ids of the outstanding segments, oldest sequence first.
    pub fn ids(&self) -> std::ops::Range<u64> {
        self.base..self.base + self.segs.len() as u64
    }

    fn link_tail(&mut self, id: u64) {
        let tail = self.ts_tail;
        {
            let s = self.at(id);
            s.ts_prev = tail.unwrap_or(NONE);
            s.ts_next = NONE;
        }
        match tail {
            Some(t) => self.at(t).ts_next = id,
            None => self.ts_head = Some(id),
        }
        self.ts_tail = Some(id);
    }

    fn unlink(&mut self, id: u64) {
        let (prev, next) = {
            let s = self.at(id);
            (s.ts_prev, s.ts_next)
        };
        let is_head = self.ts_head == Some(id);
        if !is_head && prev == NONE && next == NONE && self.ts_tail != Some(id) {
            return; // not linked
        }
        if prev == NONE {
            self.ts_head = (next != NONE).then_some(next);
        } else {
            self.at(prev).ts_next = next;
        }
        if next == NONE {
            self.ts_tail = (prev != NONE).then_some(prev);
        } else {
            self.at(next).ts_prev = prev;
        }
        let s = self.at(id);
        s.ts_prev = NONE;
        s.ts_next = NONE;
    }

    fn is_linked(&self, id: u64) -> bool {
        self.ts_head == Some(id) || self.get(id).is_some_and(Segment::linked)
    }

    /// New data `[start, end)` was sent at `now`.
    pub fn push(&mut self, start: u64, end: u64, now: Time) -> u64 {
        debug_assert!(self.segs.back().is_none_or(|s| s.end == start));
        let id = self.base + self.segs.len() as u64;
        let xmit_order = self.transmissions;
        self.transmissions += 1;
        self.segs.push_back(Segment { start, end, xmit_ps: now, xmit_order, flags: 0, ts_prev: NONE, ts_next: NONE });
        self.packets_out += 1;
        self.link_tail(id);
        id
    }

    /// Segment `id` was retransmitted at `now`: its retransmission is in flight, and it moves
    /// to the tail of the time-ordered list.
    pub fn on_retransmit(&mut self, id: u64, now: Time) {
        let s = self.at(id);
        if s.has(SACKED) {
            return;
        }
        if !s.has(RETRANS) {
            s.flags |= RETRANS;
            self.retrans_out += 1;
        }
        let xmit_order = self.transmissions;
        self.transmissions += 1;
        let s = self.at(id);
        s.flags |= EVER_RETRANS;
        s.xmit_ps = now;
        s.xmit_order = xmit_order;
        if self.is_linked(id) {
            self.unlink(id);
        }
        self.link_tail(id);
    }

    /// Marks segment `id` lost (Linux `tcp_mark_skb_lost`): a segment marked lost again
    /// after its retransmission went out has lost that retransmission too. Returns whether
    /// anything changed.
    pub fn mark_lost(&mut self, id: u64) -> bool {
        let s = self.at(id);
        if s.has(SACKED) {
            return false;
        }
        if s.has(LOST) {
            if !s.has(RETRANS) {
                return false; // lost already, waiting for its retransmission
            }
            s.flags &= !RETRANS;
            self.retrans_out -= 1;
        } else {
            s.flags |= LOST;
            self.lost_out += 1;
        }
        if self.is_linked(id) {
            self.unlink(id);
        }
        self.retransmit_hint = self.retransmit_hint.min(id);
        true
    }

    /// Clears every lost mark (Linux `tcp_undo_cwnd_reduction` with `unmark_loss`), and
    /// rebuilds the time-ordered list from every segment not SACKED: O(n log n), on an undo
    /// only.
    pub fn unmark_all_lost(&mut self) {
        let mut linked = Vec::with_capacity(self.segs.len());
        for (i, s) in self.segs.iter_mut().enumerate() {
            s.flags &= !LOST;
            s.ts_prev = NONE;
            s.ts_next = NONE;
            if !s.has(SACKED) {
                linked.push((s.xmit_order, self.base + i as u64));
            }
        }
        linked.sort_unstable();
        self.ts_head = None;
        self.ts_tail = None;
        for (_, id) in linked {
            self.link_tail(id);
        }
        self.lost_out = 0;
    }

    /// The lowest segment marked lost and not yet retransmitted (Linux
    /// `tcp_xmit_retransmit_queue`, which stops once as many retransmissions are in flight as
    /// segments are lost).
    pub fn next_lost(&mut self) -> Option<u64> {
        if self.retrans_out >= self.lost_out {
            return None;
        }
        let mut id = self.retransmit_hint.max(self.base);
        while let Some(s) = self.get(id) {
            if s.has(LOST) && !s.has(RETRANS) && !s.has(SACKED) {
                self.retransmit_hint = id;
                return Some(id);
            }
            id += 1;
        }
        self.retransmit_hint = id;
        None
    }

    /// The cumulative ACK reached `ack`: pops the segments it covers, calling `visit` with
    /// each (before its flags are cleared).
    pub fn ack_to(&mut self, ack: u64, mut visit: impl FnMut(&Segment)) {
        while let Some(s) = self.segs.front() {
            if s.end > ack {
                break;
            }
            let s = *s;
            visit(&s);
            let id = self.base;
            if self.is_linked(id) {
                self.unlink(id);
            }
            self.packets_out -= 1;
            if s.has(SACKED) {
                self.sacked_out -= 1;
            }
            if s.has(LOST) {
                self.lost_out -= 1;
            }
            if s.has(RETRANS) {
                self.retrans_out -= 1;
            }
            self.segs.pop_front();
            self.base += 1;
        }
        if self.segs.is_empty() {
            self.highest_sack_end = 0;
        }
    }

    /// The receiver SACKed `[start, end)`: marks every segment inside it, calling `visit`
    /// with each newly SACKed one (as it was before). Returns the segments newly SACKed.
    pub fn sack(&mut self, start: u64, end: u64, mut visit: impl FnMut(u64, &Segment)) -> u32 {
        // Segments ending by `from` lie wholly inside a cached block that covers `start`.
        let mut from = start;
        let mut slot = None;
        for (k, &(cs, ce)) in self.sack_cache.iter().enumerate() {
            if cs <= start && start < ce && ce > from {
                (from, slot) = (ce, Some(k));
            }
        }
        let slot = slot.unwrap_or_else(|| {
            self.sack_cache_next = (self.sack_cache_next + 1) % self.sack_cache.len();
            self.sack_cache_next
        });
        let sent_end = self.segs.back().map_or(start, |s| s.end);
        self.sack_cache[slot] = (start, end.min(sent_end));
        let mut i = self.segs.partition_point(|s| s.end <= from);
        let mut newly = 0;
        while let Some(s) = self.segs.get(i) {
            if s.start >= end {
                break;
            }
            let id = self.base + i as u64;
            if s.start >= start && s.end <= end && !s.has(SACKED) {
                let before = *s;
                visit(id, &before);
                if self.is_linked(id) {
                    self.unlink(id);
                }
                let s = &mut self.segs[i];
                if s.has(RETRANS) {
                    s.flags &= !RETRANS;
                    self.retrans_out -= 1;
                }
                if s.has(LOST) {
                    s.flags &= !LOST;
                    self.lost_out -= 1;
                }
                s.flags |= SACKED;
                self.sacked_out += 1;
                self.highest_sack_end = self.highest_sack_end.max(s.end);
                newly += 1;
            }
            i += 1;
        }
        newly
    }

    /// Walks the time-ordered list from the oldest transmission while `keep_going` says so;
    /// `keep_going` gets each segment and answers whether to go on, and whether to mark it
    /// lost. Returns the segments marked.
    pub fn walk_by_time(&mut self, mut decide: impl FnMut(&Segment) -> Walk) -> u32 {
        let mut cur = self.ts_head;
        let mut marked = 0;
        while let Some(id) = cur {
            let s = *self.get(id).expect("linked records are outstanding");
            let next = (s.ts_next != NONE).then_some(s.ts_next);
            match decide(&s) {
                Walk::Stop => break,
                Walk::Skip => {}
                Walk::MarkLost => {
                    marked += u32::from(self.mark_lost(id));
                }
            }
            cur = next;
        }
        marked
    }
}

/// What a walk over the time-ordered list does with a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    Stop,
    Skip,
    MarkLost,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn queue(n: u64) -> RtxQueue {
        let mut q = RtxQueue::default();
        for i in 0..n {
            q.push(i * MSS, (i + 1) * MSS, i as Time);
        }
        q
    }

    fn time_order(q: &RtxQueue) -> Vec<u64> {
        let mut v = vec![];
        q.clone_walk(|s| v.push(s.start / MSS));
        v
    }

    impl RtxQueue {
        fn clone_walk(&self, mut f: impl FnMut(&Segment)) {
            let mut cur = self.ts_head;
            while let Some(id) = cur {
                let s = self.get(id).unwrap();
                f(s);
                cur = (s.ts_next != NONE).then_some(s.ts_next);
            }
        }
    }

    #[test]
    fn counters_follow_sack_loss_retransmission_and_cumulative_ack() {
        let mut q = queue(10);
        assert_eq!((q.packets_out, q.in_flight()), (10, 10));
        assert_eq!(q.sack(5 * MSS, 8 * MSS, |_, _| {}), 3);
        assert_eq!(q.sack(5 * MSS, 8 * MSS, |_, _| {}), 0, "SACKed once");
        assert_eq!((q.sacked_out, q.in_flight(), q.highest_sack_end), (3, 7, 8 * MSS));
        assert!(q.mark_lost(0) && q.mark_lost(1));
        assert!(!q.mark_lost(5), "a SACKed segment is not lost");
        assert_eq!((q.lost_out, q.in_flight()), (2, 5));
        assert_eq!(q.next_lost(), Some(0));
        q.on_retransmit(0, 100);
        assert_eq!(q.next_lost(), Some(1));
        assert_eq!((q.retrans_out, q.in_flight()), (1, 6));
        // The retransmission of 0 is lost again.
        assert!(q.mark_lost(0));
        assert_eq!((q.retrans_out, q.lost_out), (0, 2));
        q.ack_to(6 * MSS, |_| {});
        assert_eq!((q.packets_out, q.sacked_out, q.lost_out, q.retrans_out), (4, 2, 0, 0));
        assert_eq!(q.find(6 * MSS + 10), Some(6));
        assert_eq!(q.find(5 * MSS), None);
        q.ack_to(10 * MSS, |_| {});
        assert!(q.is_empty());
        assert_eq!((q.packets_out, q.sacked_out, q.in_flight(), q.highest_sack_end), (0, 0, 0, 0));
    }

    #[test]
    fn a_growing_block_is_walked_from_where_it_ended_with_the_same_marks() {
        // A block that grows at its end on every ACK, with a straddling end and a hole.
        let mut q = queue(20);
        assert_eq!(q.sack(2 * MSS, 5 * MSS + 10, |_, _| {}), 3, "the segment cut by the end is not SACKed");
        let mut seen = vec![];
        assert_eq!(q.sack(2 * MSS, 8 * MSS, |id, _| seen.push(id)), 3);
        assert_eq!(seen, vec![5, 6, 7], "only the new ones, the straddling one included");
        assert_eq!(q.sack(2 * MSS, 8 * MSS, |_, _| panic!("nothing new")), 0);
        assert_eq!(q.sack(MSS, 9 * MSS, |_, _| {}), 2, "grown at both ends: walked whole");
        assert_eq!(q.sack(12 * MSS, 14 * MSS, |_, _| {}), 2);
        assert_eq!(q.sacked_out, 10);
    }

    #[test]
    fn the_time_ordered_list_drops_sacked_and_lost_and_moves_retransmissions_last() {
        let mut q = queue(6);
        assert_eq!(time_order(&q), vec![0, 1, 2, 3, 4, 5]);
        q.sack(2 * MSS, 3 * MSS, |_, _| {});
        q.mark_lost(0);
        assert_eq!(time_order(&q), vec![1, 3, 4, 5]);
        q.on_retransmit(0, 50);
        assert_eq!(time_order(&q), vec![1, 3, 4, 5, 0]);
        q.ack_to(2 * MSS, |_| {});
        assert_eq!(time_order(&q), vec![3, 4, 5]);
        let marked = q.walk_by_time(|s| if s.start < 5 * MSS { Walk::MarkLost } else { Walk::Stop });
        assert_eq!(marked, 2);
        assert_eq!(time_order(&q), vec![5]);
        q.unmark_all_lost();
        assert_eq!(time_order(&q), vec![3, 4, 5], "unmarked segments go back in send order");
        assert_eq!(q.lost_out, 0);
    }
}
