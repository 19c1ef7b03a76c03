//! CoDel, Controlled Delay (RFC 8289; Linux `include/net/codel.h`, `codel_impl.h` and
//! `net/sched/sch_codel.c`).
//!
//! CoDel looks at each packet's sojourn time when it leaves. While sojourn times stay at or
//! above `target` for a whole `interval` (and more than one MTU waits), it enters its
//! dropping state: it drops (or, with `ecn`, marks CE) the packet leaving, and schedules the
//! next drop at `interval / sqrt(count)` after the previous one (the control law), `count`
//! the drops since it entered. A packet leaving below target ends the dropping state.
//! Re-entering soon after leaving (within 16 intervals of the next drop that was scheduled)
//! starts from the count the last cycle reached beyond where it began (`count -
//! lastcount`, when that is more than 1): the drop rate that controlled the queue last
//! time is a good start (RFC 8289 section 5.6's pseudo-code, which is Linux's).
//!
//! Differences from Linux, each for a reason:
//! - time is the simulation's picoseconds, not `codel_time_t`'s 1.024 us units;
//! - the control law is the RFC's exact `interval / sqrt(count)`; Linux approximates
//!   1/sqrt(count) by one Newton step per count (16 bits, `codel_Newton_step`), which a
//!   re-entry with a large count leaves off by a few per cent for some drops;
//! - packet lengths are IP bytes and `mtu_bytes` the link's IP MTU (Linux counts the
//!   Ethernet header in both the backlog and `psched_mtu`).
//!
//! The state machine (`CodelVars::dequeue`) is shared with FQ-CoDel, which runs one per flow
//! queue; `CodelSource` is the queue it takes packets from.

use super::holding::{ecn_capable, AqmStats, HoldingDiscipline};
use super::slab::{PacketList, PacketSlab};
use super::Admission;
use crate::packet::{Ecn, Packet};
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CodelConfig {
    /// Most packets waiting (sch_codel's `limit`); an arrival beyond it is dropped.
    pub limit_packets: u64,
    /// Acceptable standing queue delay (RFC 8289 TARGET), picoseconds.
    pub target_ps: Time,
    /// Sliding window over which the minimum sojourn must exceed target (INTERVAL).
    pub interval_ps: Time,
    /// The link's MTU, IP bytes: no drop while at most this much waits (RFC 8289's
    /// MAXPACKET, Linux's `psched_mtu`).
    pub mtu_bytes: u32,
    /// Mark ECN-capable packets CE instead of dropping them.
    pub ecn: bool,
    /// Mark CE every ECN-capable packet whose sojourn exceeds this, whatever the state
    /// (Linux's `ce_threshold`, for DCTCP-like senders); None: off.
    pub ce_threshold_ps: Option<Time>,
}

/// CoDel's parameters, as one queue's state machine reads them.
#[derive(Clone, Copy, Debug)]
pub struct CodelParams {
    pub target_ps: Time,
    pub interval_ps: Time,
    pub mtu_bytes: u64,
    pub ecn: bool,
    pub ce_threshold_ps: Option<Time>,
}

impl From<&CodelConfig> for CodelParams {
    fn from(c: &CodelConfig) -> Self {
        CodelParams {
            target_ps: c.target_ps,
            interval_ps: c.interval_ps,
            mtu_bytes: c.mtu_bytes as u64,
            ecn: c.ecn,
            ce_threshold_ps: c.ce_threshold_ps,
        }
    }
}

/// The queue a CoDel state machine takes its packets from.
pub trait CodelSource {
    /// The next packet and when it entered; None when this queue is empty.
    fn pop(&mut self) -> Option<(Time, Packet)>;
    /// IP bytes still waiting in the whole discipline after the pop (Linux compares
    /// `sch->qstats.backlog`, FQ-CoDel's too, with the MTU).
    fn backlog(&self) -> u64;
}

/// One CoDel state machine (Linux `struct codel_vars`).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    /// Drops (and marks) since entering the dropping state, or the count re-entry set.
    pub count: u32,
    /// `count` when the dropping state was last entered.
    pub lastcount: u32,
    pub dropping: bool,
    /// When the sojourn time will have been above target for a whole interval; None while
    /// it is below.
    pub first_above_time: Option<Time>,
    /// When the next drop is due (in the dropping state).
    pub drop_next: Time,
    /// The sojourn time of the last packet looked at.
    pub ldelay: Time,
}

/// `t + interval / sqrt(count)` (RFC 8289 section 5.5).
#[inline]
pub fn control_law(t: Time, interval_ps: Time, count: u32) -> Time {
    t + (interval_ps as f64 / f64::from(count.max(1)).sqrt()) as Time
}

impl CodelVars {
    /// Linux `codel_should_drop`: whether the packet just taken (entered at `enqueued`, None
    /// if the queue was empty) leaves while the sojourn has been above target for an
    /// interval.
    fn should_drop(&mut self, p: &CodelParams, enqueued: Option<Time>, backlog: u64, now: Time) -> bool {
        let Some(enqueued) = enqueued else {
            self.first_above_time = None;
            return false;
        };
        self.ldelay = now - enqueued;
        if self.ldelay < p.target_ps || backlog <= p.mtu_bytes {
            // Went below: it must stay above for a whole interval again.
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + p.interval_ps);
                false
            }
            Some(t) => now > t,
        }
    }

    /// Linux `codel_dequeue`: the packet `src` hands the line at `now`, after the drops and
    /// marks the state calls for; dropped packets go to `dropped`.
    pub fn dequeue(
        &mut self,
        p: &CodelParams,
        src: &mut impl CodelSource,
        now: Time,
        stats: &mut AqmStats,
        dropped: &mut Vec<(Packet, Admission)>,
    ) -> Option<Packet> {
        let mut item = src.pop();
        if item.is_none() {
            self.dropping = false;
            return None;
        }
        let drop = self.should_drop(p, item.map(|(t, _)| t), src.backlog(), now);
        if self.dropping {
            if !drop {
                // The sojourn went below target: leave the dropping state.
                self.dropping = false;
            } else {
                // Every drop that is due: drop (or mark) and look at the next packet.
                while self.dropping && now >= self.drop_next {
                    self.count = self.count.wrapping_add(1);
                    let (_, pkt) = item.as_mut().expect("dropping on a packet");
                    if p.ecn && ecn_capable(pkt) {
                        pkt.ecn.set(Ecn::CE);
                        stats.ecn_marks += 1;
                        self.drop_next = control_law(self.drop_next, p.interval_ps, self.count);
                        break;
                    }
                    dropped.push((*pkt, Admission::EarlyDrop));
                    stats.dequeue_drops += 1;
                    item = src.pop();
                    if self.should_drop(p, item.map(|(t, _)| t), src.backlog(), now) {
                        self.drop_next = control_law(self.drop_next, p.interval_ps, self.count);
                    } else {
                        self.dropping = false;
                    }
                }
            }
        } else if drop {
            let (_, pkt) = item.as_mut().expect("a packet to drop");
            if p.ecn && ecn_capable(pkt) {
                pkt.ecn.set(Ecn::CE);
                stats.ecn_marks += 1;
            } else {
                dropped.push((*pkt, Admission::EarlyDrop));
                stats.dequeue_drops += 1;
                item = src.pop();
                // Only for its effect on first_above_time and ldelay, as in Linux.
                self.should_drop(p, item.map(|(t, _)| t), src.backlog(), now);
            }
            self.dropping = true;
            // Re-entry: if the sojourn went above target soon after the last cycle, start
            // from the drop rate that controlled the queue then. `drop_next` may lie ahead
            // of `now` (the state was left before it): the difference counts as 0.
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = if delta > 1 && now.saturating_sub(self.drop_next) < 16 * p.interval_ps { delta } else { 1 };
            self.lastcount = self.count;
            self.drop_next = control_law(now, p.interval_ps, self.count);
        }
        let (enqueued, mut pkt) = item?;
        if let Some(threshold) = p.ce_threshold_ps {
            if self.ldelay > threshold && ecn_capable(&pkt) {
                pkt.ecn.set(Ecn::CE);
                stats.ce_threshold_marks += 1;
            }
        }
        stats.sojourn(enqueued, now);
        Some(pkt)
    }
}

/// sch_codel: one FIFO under one CoDel state machine.
pub struct CoDel {
    limit_packets: u64,
    params: CodelParams,
    slab: PacketSlab,
    queue: PacketList,
    vars: CodelVars,
    stats: AqmStats,
}

impl CoDel {
    pub fn new(cfg: &CodelConfig) -> Self {
        CoDel {
            limit_packets: cfg.limit_packets,
            params: cfg.into(),
            slab: PacketSlab::with_capacity(cfg.limit_packets.min(u32::MAX as u64) as usize),
            queue: PacketList::default(),
            vars: CodelVars::default(),
            stats: AqmStats::default(),
        }
    }

    /// The state machine (tests and the series read it).
    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

/// The single FIFO as CoDel's source.
struct Fifo<'a> {
    slab: &'a mut PacketSlab,
    queue: &'a mut PacketList,
}

impl CodelSource for Fifo<'_> {
    #[inline]
    fn pop(&mut self) -> Option<(Time, Packet)> {
        self.slab.pop(self.queue)
    }
    #[inline]
    fn backlog(&self) -> u64 {
        self.queue.bytes()
    }
}

impl HoldingDiscipline for CoDel {
    fn enqueue(&mut self, now: Time, pkt: &Packet, _dropped: &mut Vec<(Packet, Admission)>) -> Result<(), Admission> {
        if self.queue.len() as u64 >= self.limit_packets {
            self.stats.overflow_drops += 1;
            return Err(Admission::Overflow);
        }
        self.slab.push(&mut self.queue, now, pkt);
        Ok(())
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        let mut src = Fifo { slab: &mut self.slab, queue: &mut self.queue };
        self.vars.dequeue(&self.params, &mut src, now, &mut self.stats, dropped)
    }

    fn len_packets(&self) -> usize {
        self.queue.len()
    }

    fn len_bytes(&self) -> u64 {
        self.queue.bytes()
    }

    fn room_packets(&self, _ip_bytes: u32) -> u64 {
        self.limit_packets.saturating_sub(self.queue.len() as u64)
    }

    fn stats(&self) -> &AqmStats {
        &self.stats
    }

    fn control(&self) -> (i64, f64) {
        (i64::from(self.vars.dropping), f64::from(self.vars.count))
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.slab.iter(&self.queue).for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testing::data;

    const MS: Time = 1_000_000_000;

    fn codel(ecn: bool) -> CoDel {
        CoDel::new(&CodelConfig {
            limit_packets: 1000,
            target_ps: 5 * MS,
            interval_ps: 100 * MS,
            mtu_bytes: 1500,
            ecn,
            ce_threshold_ps: None,
        })
    }

    fn fill(q: &mut CoDel, n: u64, at: Time) {
        for i in 0..n {
            q.enqueue(at, &data(i, 1500), &mut Vec::new()).unwrap();
        }
    }

    #[test]
    fn control_law_spaces_drops_by_interval_over_sqrt_count() {
        // RFC 8289 section 5.5: t + interval / sqrt(count).
        assert_eq!(control_law(0, 100 * MS, 1), 100 * MS);
        assert_eq!(control_law(10, 100 * MS, 4), 10 + 50 * MS);
        assert_eq!(control_law(0, 100 * MS, 100), 10 * MS);
    }

    #[test]
    fn drops_start_an_interval_after_the_sojourn_exceeds_target_then_follow_the_control_law() {
        // A standing queue: 1000 packets enter at 0, one leaves every millisecond.
        let mut q = codel(false);
        fill(&mut q, 1000, 0);
        let mut dropped = Vec::new();
        let mut drops = Vec::new();
        for ms in 0..400 {
            let before = dropped.len();
            q.dequeue(ms * MS, &mut dropped);
            if dropped.len() > before {
                drops.push((ms, q.vars().count));
            }
            if ms == 106 {
                assert!(q.vars().dropping);
                assert_eq!(q.vars().drop_next, 206 * MS, "100 ms / sqrt(1) after the first drop");
            }
        }
        // The sojourn reaches 5 ms at 5 ms, so first_above_time = 105 ms; the first packet
        // to leave after it (strictly) is dropped with count 1. Then each drop is due
        // interval / sqrt(count) after the previous due time: 206, 206 + 70.71 = 276.71,
        // + 57.74 = 334.45, + 50 = 384.45 ms, and taken by the first dequeue at or after it.
        assert_eq!(drops, vec![(106, 1), (206, 2), (277, 3), (335, 4), (385, 5)]);
    }

    #[test]
    fn leaving_below_target_ends_the_dropping_state() {
        let mut q = codel(false);
        fill(&mut q, 150, 0);
        let mut dropped = Vec::new();
        for ms in 0..=106 {
            q.dequeue(ms * MS, &mut dropped);
        }
        assert!(q.vars().dropping);
        // Empty the queue's old packets, then a fresh packet leaves at once.
        while q.len_packets() > 0 {
            q.dequeue(107 * MS, &mut dropped);
        }
        q.enqueue(108 * MS, &data(1, 1500), &mut dropped).unwrap();
        q.dequeue(108 * MS, &mut dropped);
        assert!(!q.vars().dropping);
    }

    #[test]
    fn re_entry_soon_after_starts_from_the_previous_counts_excess() {
        // RFC 8289 section 5.6 / Linux: count = count - lastcount if that is > 1 and the
        // state is re-entered within 16 intervals of the last scheduled drop.
        let p = CodelParams {
            target_ps: 5 * MS,
            interval_ps: 100 * MS,
            mtu_bytes: 1500,
            ecn: false,
            ce_threshold_ps: None,
        };
        let mut v = CodelVars {
            count: 7,
            lastcount: 2,
            dropping: false,
            first_above_time: Some(0),
            drop_next: 50 * MS,
            ldelay: 0,
        };
        let mut q = CoDel::new(&cfg());
        fill(&mut q, 10, 0);
        let mut src = Fifo { slab: &mut q.slab, queue: &mut q.queue };
        let mut dropped = Vec::new();
        let now = 100 * MS;
        v.dequeue(&p, &mut src, now, &mut AqmStats::default(), &mut dropped);
        assert_eq!(dropped.len(), 1);
        assert!(v.dropping);
        assert_eq!((v.count, v.lastcount), (5, 5), "7 - 2");
        assert_eq!(v.drop_next, control_law(now, 100 * MS, 5));
        // Long after the last cycle (more than 16 intervals): count starts again at 1.
        let mut v = CodelVars { count: 7, lastcount: 2, first_above_time: Some(0), drop_next: 0, ..Default::default() };
        let now = 1601 * MS;
        v.dequeue(&p, &mut src, now, &mut AqmStats::default(), &mut dropped);
        assert_eq!((v.count, v.lastcount), (1, 1));
        // A small excess (delta 1) starts at 1 too.
        let mut v = CodelVars { count: 3, lastcount: 2, first_above_time: Some(0), drop_next: 0, ..Default::default() };
        v.dequeue(&p, &mut src, 10 * MS, &mut AqmStats::default(), &mut dropped);
        assert_eq!(v.count, 1);
    }

    #[test]
    fn ecn_capable_packets_are_marked_and_sent_others_dropped() {
        let mut q = codel(true);
        for i in 0..1000 {
            let mut p = data(i, 1500);
            if i % 2 == 0 {
                p.ecn.set(Ecn::ECT);
            }
            q.enqueue(0, &p, &mut Vec::new()).unwrap();
        }
        let mut dropped = Vec::new();
        let mut marked = Vec::new();
        for ms in 0..400 {
            if let Some(p) = q.dequeue(ms * MS, &mut dropped) {
                if p.ecn.has(Ecn::CE) {
                    marked.push(p.seq);
                }
            }
        }
        // Due at 106 and 206 ms (even packets: marked), 277 ms (odd: dropped), ...
        assert_eq!(marked[..2], [106, 206], "{marked:?}");
        assert!(marked.iter().all(|s| s % 2 == 0), "{marked:?}");
        assert_eq!(dropped[0].0.seq, 277);
        assert!(dropped.iter().all(|(p, _)| p.seq % 2 == 1));
        assert_eq!(q.stats().ecn_marks, marked.len() as u64);
        assert_eq!(q.stats().dequeue_drops, dropped.len() as u64);
    }

    #[test]
    fn no_drop_while_at_most_an_mtu_waits_and_the_limit_refuses_arrivals() {
        let mut q = codel(false);
        // One packet behind the one leaving: its sojourn is long, but the backlog after
        // the dequeue is one MTU.
        fill(&mut q, 2, 0);
        let mut dropped = Vec::new();
        assert!(q.dequeue(500 * MS, &mut dropped).is_some());
        assert!(q.dequeue(700 * MS, &mut dropped).is_some());
        assert!(dropped.is_empty());
        let mut q = CoDel::new(&CodelConfig { limit_packets: 3, ..cfg() });
        fill(&mut q, 3, 0);
        assert_eq!(q.enqueue(0, &data(9, 1500), &mut dropped), Err(Admission::Overflow));
        assert_eq!((q.room_packets(1500), q.stats().overflow_drops), (0, 1));
    }

    fn cfg() -> CodelConfig {
        CodelConfig {
            limit_packets: 1000,
            target_ps: 5 * MS,
            interval_ps: 100 * MS,
            mtu_bytes: 1500,
            ecn: false,
            ce_threshold_ps: None,
        }
    }

    #[test]
    fn ce_threshold_marks_every_capable_packet_above_it() {
        let mut q = CoDel::new(&CodelConfig { ce_threshold_ps: Some(MS), ..cfg() });
        for i in 0..3 {
            let mut p = data(i, 1500);
            p.ecn.set(Ecn::ECT1);
            q.enqueue(0, &p, &mut Vec::new()).unwrap();
        }
        let mut dropped = Vec::new();
        assert!(!q.dequeue(MS / 2, &mut dropped).unwrap().ecn.has(Ecn::CE));
        assert!(q.dequeue(2 * MS, &mut dropped).unwrap().ecn.has(Ecn::CE));
        assert_eq!(q.stats().ce_threshold_marks, 1);
        assert_eq!(q.stats().sojourn_max_ps, 2 * MS);
    }
}
