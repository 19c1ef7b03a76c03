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
//!
//! A record is 32 bytes (it was 56): it is kept for every segment in flight, so its size is
//! a third of the simulator's memory per segment in flight (docs/benchmarks.md, "Memory per
//! segment"). What is outstanding spans less than 2^31 bytes, records and transmissions
//! (a window is below 2^30 bytes, RFC 7323), so a record keeps the low 32 bits of its
//! sequence number and of its transmission order, read back against the queue's first byte
//! and its transmission count, and its links in the time-ordered list as signed distances
//! to its own id (0: none). `Segment` is what a record reads as, with full-width fields.
//! The deque grows by a quarter, not by doubling, so its room follows the window (a window
//! of 86,325 segments, the 10 Gb/s dumbbell's, kept room for 131,072); the records stay in
//! one `VecDeque`, since the chunks the links use (`chunked.rs`) cost 4 % of the
//! simulation's speed here, where every ACK touches several records.

use crate::time::Time;
use std::collections::VecDeque;

/// SACKed (Linux `TCPCB_SACKED_ACKED`).
pub const SACKED: u8 = 1;
/// A retransmission of it is in flight (Linux `TCPCB_SACKED_RETRANS`).
pub const RETRANS: u8 = 2;
/// Marked lost (Linux `TCPCB_LOST`).
pub const LOST: u8 = 4;
/// Retransmitted at least once (Linux `TCPCB_EVER_RETRANS`).
pub const EVER_RETRANS: u8 = 8;

/// An outstanding segment, as the queue's record of it reads.
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
}

/// The record of an outstanding segment, as stored (32 bytes; see the module's comment).
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    xmit_ps: Time,
    /// The low 32 bits of the first byte's sequence number.
    start: u32,
    len: u32,
    /// The low 32 bits of `Segment::xmit_order`.
    xmit_order: u32,
    /// The ids of the previous and next records in the time-ordered list, as distances
    /// from this record's id; 0: none (the list never links a record to itself).
    ts_prev: i32,
    ts_next: i32,
    flags: u8,
}

impl Record {
    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// The absolute sequence number whose low 32 bits are `low`, within 2^32 above `base`.
#[inline]
fn seq_from(base: u64, low: u32) -> u64 {
    base + low.wrapping_sub(base as u32) as u64
}

/// The distance from id `from` to id `to` in the time-ordered list (`Record::ts_next`).
#[inline]
fn link(from: u64, to: Option<u64>) -> i32 {
    to.map_or(0, |to| {
        let d = to.wrapping_sub(from) as i64;
        debug_assert!(d != 0 && d.unsigned_abs() < 1 << 31);
        d as i32
    })
}

#[inline]
fn linked_id(from: u64, d: i32) -> Option<u64> {
    (d != 0).then(|| from.wrapping_add_signed(d as i64))
}

#[derive(Debug, Default)]
pub struct RtxQueue {
    segs: VecDeque<Record>,
    /// Id of `segs[0]`.
    base: u64,
    /// The first byte of `segs[0]` (once anything was sent; records read their sequence
    /// numbers against it).
    base_seq: u64,
    /// Head and tail of the time-ordered list (None: empty).
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

    /// What the record reads as.
    #[inline]
    fn segment(&self, r: &Record) -> Segment {
        let start = seq_from(self.base_seq, r.start);
        let t = self.transmissions;
        Segment {
            start,
            end: start + r.len as u64,
            xmit_ps: r.xmit_ps,
            xmit_order: t - (t as u32).wrapping_sub(r.xmit_order) as u64,
            flags: r.flags,
        }
    }

    pub fn front(&self) -> Option<Segment> {
        self.segs.front().map(|r| self.segment(r))
    }

    pub fn back(&self) -> Option<Segment> {
        self.segs.back().map(|r| self.segment(r))
    }

    pub fn get(&self, id: u64) -> Option<Segment> {
        self.record(id).map(|r| self.segment(r))
    }

    #[inline]
    fn record(&self, id: u64) -> Option<&Record> {
        id.checked_sub(self.base).and_then(|i| self.segs.get(i as usize))
    }

    #[inline]
    fn at(&mut self, id: u64) -> &mut Record {
        &mut self.segs[(id - self.base) as usize]
    }

    /// The index in `segs` of the first record that ends after `seq`.
    #[inline]
    fn first_ending_after(&self, seq: u64) -> usize {
        let base_seq = self.base_seq;
        self.segs.partition_point(|r| seq_from(base_seq, r.start) + r.len as u64 <= seq)
    }

    /// The id of the segment holding byte `seq`, if outstanding.
    pub fn find(&self, seq: u64) -> Option<u64> {
        let i = self.first_ending_after(seq);
        self.segs.get(i).filter(|r| seq_from(self.base_seq, r.start) <= seq).map(|_| self.base + i as u64)
    }

    /// Ids of the outstanding segments, oldest sequence first.
    pub fn ids(&self) -> std::ops::Range<u64> {
        self.base..self.base + self.segs.len() as u64
    }

    fn link_tail(&mut self, id: u64) {
        let tail = self.ts_tail;
        {
            let s = self.at(id);
            s.ts_prev = link(id, tail);
            s.ts_next = 0;
        }
        match tail {
            Some(t) => self.at(t).ts_next = link(t, Some(id)),
            None => self.ts_head = Some(id),
        }
        self.ts_tail = Some(id);
    }

    /// Takes record `id` out of the time-ordered list, if it is in it.
    fn unlink(&mut self, id: u64) {
        let is_head = self.ts_head == Some(id);
        let s = self.at(id);
        let (prev, next) = (linked_id(id, s.ts_prev), linked_id(id, s.ts_next));
        if prev.is_none() && next.is_none() && !is_head {
            return; // not linked (a record linked alone is the head)
        }
        s.ts_prev = 0;
        s.ts_next = 0;
        match prev {
            None => self.ts_head = next,
            Some(p) => self.at(p).ts_next = link(p, next),
        }
        match next {
            None => self.ts_tail = prev,
            Some(n) => self.at(n).ts_prev = link(n, prev),
        }
    }

    /// New data `[start, end)` was sent at `now`.
    #[inline]
    pub fn push(&mut self, start: u64, end: u64, now: Time) -> u64 {
        debug_assert!(self.back().is_none_or(|s| s.end == start));
        debug_assert!(end - start <= u32::MAX as u64 && end - self.base_seq.min(start) < 1 << 31);
        if self.segs.is_empty() {
            self.base_seq = start;
        }
        let id = self.base + self.segs.len() as u64;
        let xmit_order = self.transmissions as u32;
        self.transmissions += 1;
        // Linked at the tail of the time-ordered list as it is stored (`link_tail`).
        let tail = self.ts_tail;
        match tail {
            Some(t) => self.at(t).ts_next = link(t, Some(id)),
            None => self.ts_head = Some(id),
        }
        self.ts_tail = Some(id);
        if self.segs.len() == self.segs.capacity() {
            // A quarter more room (amortized O(1) per record, as doubling is).
            self.segs.reserve_exact(self.segs.len() / 4 + 16);
        }
        self.segs.push_back(Record {
            xmit_ps: now,
            start: start as u32,
            len: (end - start) as u32,
            xmit_order,
            ts_prev: link(id, tail),
            ts_next: 0,
            flags: 0,
        });
        self.packets_out += 1;
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
        let xmit_order = self.transmissions as u32;
        self.transmissions += 1;
        let s = self.at(id);
        s.flags |= EVER_RETRANS;
        s.xmit_ps = now;
        s.xmit_order = xmit_order;
        self.unlink(id);
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
        self.unlink(id);
        self.retransmit_hint = self.retransmit_hint.min(id);
        true
    }

    /// Clears every lost mark (Linux `tcp_undo_cwnd_reduction` with `unmark_loss`), and
    /// rebuilds the time-ordered list from every segment not SACKED: O(n log n), on an undo
    /// only.
    pub fn unmark_all_lost(&mut self) {
        let mut linked = Vec::with_capacity(self.segs.len());
        let t = self.transmissions;
        for (i, s) in self.segs.iter_mut().enumerate() {
            s.flags &= !LOST;
            s.ts_prev = 0;
            s.ts_next = 0;
            if !s.has(SACKED) {
                let xmit_order = t - (t as u32).wrapping_sub(s.xmit_order) as u64;
                linked.push((xmit_order, self.base + i as u64));
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
        while let Some(s) = self.record(id) {
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
        while let Some(&r) = self.segs.front() {
            let s = self.segment(&r);
            if s.end > ack {
                break;
            }
            visit(&s);
            let id = self.base;
            if self.ts_head == Some(id) {
                // The oldest transmission (no loss: every time): it leaves the list at its head.
                let next = linked_id(id, r.ts_next);
                self.ts_head = next;
                match next {
                    Some(n) => self.at(n).ts_prev = 0,
                    None => self.ts_tail = None,
                }
            } else {
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
            self.base_seq = s.end;
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
        let sent_end = self.back().map_or(start, |s| s.end);
        self.sack_cache[slot] = (start, end.min(sent_end));
        let mut i = self.first_ending_after(from);
        let mut newly = 0;
        while let Some(r) = self.segs.get(i) {
            let s = self.segment(r);
            if s.start >= end {
                break;
            }
            let id = self.base + i as u64;
            if s.start >= start && s.end <= end && !s.has(SACKED) {
                visit(id, &s);
                self.unlink(id);
                let r = &mut self.segs[i];
                if r.has(RETRANS) {
                    r.flags &= !RETRANS;
                    self.retrans_out -= 1;
                }
                if r.has(LOST) {
                    r.flags &= !LOST;
                    self.lost_out -= 1;
                }
                r.flags |= SACKED;
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
            let r = *self.record(id).expect("linked records are outstanding");
            let next = linked_id(id, r.ts_next);
            match decide(&self.segment(&r)) {
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
                f(&self.get(id).unwrap());
                cur = linked_id(id, self.record(id).unwrap().ts_next);
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

    #[test]
    fn records_read_back_across_32_bit_wraps() {
        assert_eq!(std::mem::size_of::<Record>(), 32, "a record per segment in flight");
        // Sequence numbers and transmission counts past 2^32: the low 32 bits stored are
        // read back against the queue's first byte and its count.
        let mut q = RtxQueue { transmissions: (1 << 32) - 2, base: 7, ..Default::default() };
        let s0 = (1 << 32) - 2 * MSS;
        for i in 0..4 {
            q.push(s0 + i * MSS, s0 + (i + 1) * MSS, 100 + i as Time);
        }
        let got: Vec<_> = q.ids().map(|id| q.get(id).unwrap()).map(|s| (s.start, s.end, s.xmit_order)).collect();
        let want: Vec<_> = (0..4).map(|i| (s0 + i * MSS, s0 + (i + 1) * MSS, (1 << 32) - 2 + i)).collect();
        assert_eq!(got, want);
        assert_eq!(q.find(s0 + 3 * MSS), Some(10));
        q.on_retransmit(8, 500);
        assert_eq!((q.get(8).unwrap().xmit_order, q.get(8).unwrap().xmit_ps), ((1 << 32) + 2, 500));
        assert_eq!(time_order(&q), vec![s0 / MSS, s0 / MSS + 2, s0 / MSS + 3, s0 / MSS + 1]);
        q.ack_to(s0 + 2 * MSS, |_| {});
        assert_eq!(q.front().unwrap().start, s0 + 2 * MSS);
        assert_eq!(q.sack(s0 + 3 * MSS, s0 + 4 * MSS, |id, s| assert_eq!((id, s.start), (10, s0 + 3 * MSS))), 1);
    }
}
