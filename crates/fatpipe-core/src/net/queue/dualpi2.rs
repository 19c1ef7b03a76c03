//! DualPI2, the DualQ Coupled AQM of L4S (RFC 9332; Linux `net/sched/sch_dualpi2.c`, 6.17+).
//!
//! Two FIFOs share one limit: the L4S queue takes ECT(1) and CE packets (Linux's default
//! `ecn_mask`, `dualpi2_skb_classify`; with `any_ect` ECT(0) too), the classic queue the
//! rest. One PI controller
//! (PI2: no PIE heuristics) updates a base probability p' every `tupdate` from the larger of
//! the two head-of-queue delays (`calculate_probability`):
//!   p' += alpha (qdelay - target) + beta (qdelay - qdelay_old), clamped to [0, 1]
//! (with `drop_overload` off, to 1 / k). Coupling (RFC 9332 section 2.1): a classic packet
//! is dropped, or if ECN-capable marked CE, with p_C = p'^2 (two random draws, both below
//! p'); an L4S packet is marked with p_CL = k p'. Above p_CL = 1 (overload, RFC 9332 section
//! 4.2.3, Linux `dualpi2_scalable_marking`), with `drop_overload`, L4S packets are dropped with p_C as classic ones and
//! classic ECN-capable packets are dropped rather than marked; the L4S packets not dropped
//! are marked. The L4S queue's own AQM is a step: an L4S packet whose sojourn (or the L4S
//! queue's length, in packets) exceeds `step_thresh` when it leaves is marked
//! (`do_step_aqm`), so p_L = max(p_CL, step). No packet is dropped or marked while less
//! than two MTUs wait in both queues together (`must_drop`).
//!
//! The scheduler (`dequeue_packet`) is Linux's weighted round robin on a byte credit: the
//! L4S queue goes when the classic one is empty or the credit is <= 0; serving L4S while
//! classic packets wait adds wc x bytes, serving classic while L4S packets wait subtracts
//! wl x bytes (wc + wl = 100, `c_protection`); with either queue empty the credit is kept,
//! with both empty it restarts at MTU x (wc - wl) (`dualpi2_calculate_c_protection`), so
//! the L4S queue starts first. The credit moves only for packets that are sent.
//!
//! Drops and marks happen at dequeue (Linux's default `drop_dequeue`), or on arrival with
//! `drop_early`. Like PIE, the periodic update needs no event: the queues do not change
//! between two calls of the link, so the updates due by `now` run first, at their own times
//! (`catch_up`). PI2's update is not PIE's (no auto-tuning of the gains, no caps, no decay,
//! the head's delay rather than the departing packet's), so none of `pie.rs` is shared.
//!
//! Not modelled: tc filters and `skb->priority` classification,
//! `min_qlen_step` (fixed at Linux's default 0: the step applies to every L4S packet), GSO
//! splitting (fatpipe's segments are single packets), and memory counted in skb truesize:
//! `memory_limit_bytes` counts IP bytes here.

use super::holding::{ecn_capable, AqmStats, HoldingDiscipline};
use super::slab::{PacketList, PacketSlab};
use super::Admission;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Config {
    /// Most packets waiting in both queues together (Linux `limit`).
    pub limit_packets: u64,
    /// Most IP bytes waiting in both queues together (Linux `memory_limit`, which counts skb
    /// truesize).
    pub memory_limit_bytes: u64,
    /// The PI controller's target queue delay, picoseconds.
    pub target_ps: Time,
    /// Time between updates of the base probability p'.
    pub tupdate_ps: Time,
    /// Gains, per second: on the delay's distance from target, and on its change.
    pub alpha: f64,
    pub beta: f64,
    /// The L4S queue's step: mark an L4S packet leaving after a sojourn above this (time) or
    /// with more than this many L4S packets still waiting (packets); exactly one is set.
    pub step_thresh_ps: Option<Time>,
    pub step_thresh_packets: Option<u64>,
    /// k: p_CL = k p'.
    pub coupling_factor: f64,
    /// Classify ECT(0) packets into the L4S queue too (Linux `any_ect`, for DCTCP in a data
    /// centre); false: ECT(1) and CE only (`l4s_ect`, RFC 9331).
    pub any_ect: bool,
    /// The classic queue's weight in the scheduler, percent (wc; wl = 100 - wc).
    pub c_protection_percent: u8,
    /// Above p_CL = 1, drop L4S packets as classic ones (else mark them all and let the
    /// queue overflow; p' is then capped at 1 / k).
    pub drop_overload: bool,
    /// Drop or mark on arrival instead of at dequeue.
    pub drop_early: bool,
    /// The link's MTU, IP bytes: the scheduler's initial credit, the two-MTU floor.
    pub mtu_bytes: u32,
}

/// Which of the two queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lane {
    L4s,
    Classic,
}

/// What the coupled law does to one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Pass,
    Mark,
    Drop,
}

pub struct DualPi2 {
    cfg: DualPi2Config,
    slab: PacketSlab,
    l4s: PacketList,
    classic: PacketList,
    rng: Rng,
    /// The base probability p', 0 to 1.
    prob: f64,
    /// The delay the last update used.
    qdelay_old: Time,
    next_update: Time,
    /// The scheduler's credit, bytes x percent: <= 0 serves the L4S queue first.
    credit: i64,
    credit_init: i64,
    /// All causes together (the link's counters), and per queue.
    stats: AqmStats,
    l4s_stats: AqmStats,
    classic_stats: AqmStats,
    /// L4S packets dropped as classic ones in overload (also in l4s_stats' drops).
    overload_drops: u64,
    /// The largest p' any update reached.
    prob_max: f64,
}

impl DualPi2 {
    pub fn new(cfg: &DualPi2Config, rng: Rng) -> Self {
        let wc = cfg.c_protection_percent as i64;
        let credit_init = cfg.mtu_bytes as i64 * (wc - (100 - wc));
        DualPi2 {
            slab: PacketSlab::with_capacity(cfg.limit_packets.min(u32::MAX as u64) as usize),
            l4s: PacketList::default(),
            classic: PacketList::default(),
            rng,
            prob: 0.0,
            qdelay_old: 0,
            next_update: cfg.tupdate_ps,
            credit: credit_init,
            credit_init,
            stats: AqmStats::default(),
            l4s_stats: AqmStats::default(),
            classic_stats: AqmStats::default(),
            overload_drops: 0,
            prob_max: 0.0,
            cfg: cfg.clone(),
        }
    }

    /// The base probability p' now.
    pub fn probability(&self) -> f64 {
        self.prob
    }

    /// p_C = p'^2, the classic queue's drop (or mark) probability.
    pub fn prob_classic(&self) -> f64 {
        self.prob * self.prob
    }

    /// p_CL = min(k p', 1), the coupled marking probability of the L4S queue.
    pub fn prob_l4s_coupled(&self) -> f64 {
        (self.cfg.coupling_factor * self.prob).min(1.0)
    }

    /// Packets waiting in the L4S queue.
    pub fn l4s_packets(&self) -> usize {
        self.l4s.len()
    }

    /// The counters of the L4S queue and of the classic queue.
    pub fn lane_stats(&self) -> (&AqmStats, &AqmStats) {
        (&self.l4s_stats, &self.classic_stats)
    }

    /// L4S (RFC 9331: ECT(1), or CE whatever it was before, Linux `ecn_mask` l4s_ect; with
    /// `any_ect`, ECT(0) too), else classic (Linux `dualpi2_skb_classify`).
    fn lane_of(&self, pkt: &Packet) -> Lane {
        if pkt.ecn.has(Ecn::ECT1) || pkt.ecn.has(Ecn::CE) || (self.cfg.any_ect && pkt.ecn.has(Ecn::ECT)) {
            Lane::L4s
        } else {
            Lane::Classic
        }
    }

    fn count(&mut self, lane: Lane, f: impl Fn(&mut AqmStats)) {
        f(&mut self.stats);
        f(match lane {
            Lane::L4s => &mut self.l4s_stats,
            Lane::Classic => &mut self.classic_stats,
        });
    }

    /// The sojourn time of a queue's head at `now`, 0 when it is empty.
    fn head_delay(&self, list: &PacketList, now: Time) -> Time {
        self.slab.front(list).map_or(0, |(t, _)| now - t)
    }

    /// Runs the updates due by `now`, each with the queues as they were then.
    fn catch_up(&mut self, now: Time) {
        while self.next_update <= now {
            let t = self.next_update;
            let qdelay = self.head_delay(&self.l4s, t).max(self.head_delay(&self.classic, t));
            self.update(qdelay);
            self.next_update += self.cfg.tupdate_ps;
            // Empty queues with p' at 0 and no delay last time: later updates change nothing.
            let settled = self.prob == 0.0 && self.qdelay_old == 0 && self.l4s.is_empty() && self.classic.is_empty();
            if settled && self.next_update <= now {
                let missed = (now - self.next_update) / self.cfg.tupdate_ps + 1;
                self.next_update += missed * self.cfg.tupdate_ps;
            }
        }
    }

    /// PI2's update of p' from the queue delay `qdelay` (Linux `calculate_probability`).
    fn update(&mut self, qdelay: Time) {
        let s = |t: Time| t as f64 / 1e12;
        let delta =
            self.cfg.alpha * (s(qdelay) - s(self.cfg.target_ps)) + self.cfg.beta * (s(qdelay) - s(self.qdelay_old));
        self.qdelay_old = qdelay;
        let cap = if self.cfg.drop_overload { 1.0 } else { 1.0 / self.cfg.coupling_factor };
        self.prob = (self.prob + delta).clamp(0.0, cap);
        self.prob_max = self.prob_max.max(self.prob);
    }

    /// A draw below p.
    fn roll(&mut self, p: f64) -> bool {
        self.rng.uniform() < p
    }

    /// Linux `must_drop`: what the coupled law does to `pkt` of `lane`, with `backlog` IP
    /// bytes waiting beside it.
    fn coupled(&mut self, lane: Lane, pkt: &Packet, backlog: u64) -> Verdict {
        if backlog < 2 * self.cfg.mtu_bytes as u64 {
            return Verdict::Pass;
        }
        let p = self.prob;
        let p_cl = self.cfg.coupling_factor * p;
        let overload = p_cl > 1.0;
        match lane {
            // p_C = p'^2 by two draws, both below p' (Linux `dualpi2_classic_marking`).
            Lane::Classic => {
                if !(self.roll(p) && self.roll(p)) {
                    Verdict::Pass
                } else if overload || !ecn_capable(pkt) {
                    Verdict::Drop
                } else {
                    Verdict::Mark
                }
            }
            Lane::L4s if overload => {
                if self.cfg.drop_overload && self.roll(p) && self.roll(p) {
                    self.overload_drops += 1;
                    Verdict::Drop
                } else {
                    Verdict::Mark
                }
            }
            Lane::L4s => {
                if self.roll(p_cl) {
                    Verdict::Mark
                } else {
                    Verdict::Pass
                }
            }
        }
    }

    /// Applies the coupled law to `pkt` (marking it) and counts what it did, at dequeue or
    /// with `drop_early` on arrival; true when it is to be dropped.
    fn drops(&mut self, lane: Lane, pkt: &mut Packet, backlog: u64) -> bool {
        match self.coupled(lane, pkt, backlog) {
            Verdict::Pass => false,
            Verdict::Mark => {
                pkt.ecn.set(Ecn::CE);
                self.count(lane, |s| s.ecn_marks += 1);
                false
            }
            Verdict::Drop if self.cfg.drop_early => {
                self.count(lane, |s| s.enqueue_drops += 1);
                true
            }
            Verdict::Drop => {
                self.count(lane, |s| s.dequeue_drops += 1);
                true
            }
        }
    }

    /// Linux `dequeue_packet`: the next packet by the scheduler, with its lane, when it
    /// entered and the credit it moves if sent.
    fn next_packet(&mut self) -> Option<(Lane, Time, Packet, i64)> {
        let (l_len, c_len) = (self.l4s.len(), self.classic.len());
        let wc = self.cfg.c_protection_percent as i64;
        if l_len > 0 && (c_len == 0 || self.credit <= 0) {
            let (t, pkt) = self.slab.pop(&mut self.l4s)?;
            let change = if c_len > 0 { wc } else { 0 };
            Some((Lane::L4s, t, pkt, change * pkt.ip_bytes as i64))
        } else if c_len > 0 {
            let (t, pkt) = self.slab.pop(&mut self.classic)?;
            let change = if l_len > 0 { -(100 - wc) } else { 0 };
            Some((Lane::Classic, t, pkt, change * pkt.ip_bytes as i64))
        } else {
            self.credit = self.credit_init;
            None
        }
    }

    /// Linux `do_step_aqm`: whether an L4S packet leaving at `now` after entering at
    /// `enqueued` is past the step (Linux's `min_qlen_step` at its default 0: always).
    fn past_step(&self, enqueued: Time, now: Time) -> bool {
        match (self.cfg.step_thresh_ps, self.cfg.step_thresh_packets) {
            (Some(th), _) => now - enqueued > th,
            (None, Some(th)) => self.l4s.len() as u64 > th,
            (None, None) => false,
        }
    }

    /// The summary's per-queue view.
    pub fn summary(&self) -> DualPi2Summary {
        DualPi2Summary {
            l4s: LaneSummary::of(&self.l4s_stats),
            classic: LaneSummary::of(&self.classic_stats),
            l4s_overload_drops: self.overload_drops,
            prob_base: self.prob,
            prob_base_max: self.prob_max,
        }
    }
}

impl HoldingDiscipline for DualPi2 {
    fn enqueue(&mut self, now: Time, pkt: &Packet, _dropped: &mut Vec<(Packet, Admission)>) -> Result<(), Admission> {
        self.catch_up(now);
        let lane = self.lane_of(pkt);
        let bytes = self.l4s.bytes() + self.classic.bytes();
        let waiting = (self.l4s.len() + self.classic.len()) as u64;
        if waiting >= self.cfg.limit_packets || bytes + pkt.ip_bytes as u64 > self.cfg.memory_limit_bytes {
            self.count(lane, |s| s.overflow_drops += 1);
            return Err(Admission::Overflow);
        }
        let mut pkt = *pkt;
        if self.cfg.drop_early && self.drops(lane, &mut pkt, bytes) {
            return Err(Admission::EarlyDrop);
        }
        match lane {
            Lane::L4s => self.slab.push(&mut self.l4s, now, &pkt),
            Lane::Classic => self.slab.push(&mut self.classic, now, &pkt),
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        self.catch_up(now);
        while let Some((lane, enqueued, mut pkt, credit_change)) = self.next_packet() {
            if !self.cfg.drop_early && self.drops(lane, &mut pkt, self.l4s.bytes() + self.classic.bytes()) {
                dropped.push((pkt, Admission::EarlyDrop));
                continue;
            }
            // L4S packets are ECN-capable by their classification: marked, never dropped. The
            // step counts the packets it turns CE (Linux also counts one the coupled law just
            // marked, or that came marked).
            if lane == Lane::L4s && !pkt.ecn.has(Ecn::CE) && self.past_step(enqueued, now) {
                pkt.ecn.set(Ecn::CE);
                self.count(lane, |s| s.ce_threshold_marks += 1);
            }
            self.credit += credit_change;
            self.count(lane, |s| s.sojourn(enqueued, now));
            return Some(pkt);
        }
        None
    }

    fn len_packets(&self) -> usize {
        self.l4s.len() + self.classic.len()
    }

    fn len_bytes(&self) -> u64 {
        self.l4s.bytes() + self.classic.bytes()
    }

    fn room_packets(&self, ip_bytes: u32) -> u64 {
        let by_count = self.cfg.limit_packets.saturating_sub(self.len_packets() as u64);
        let by_bytes = self.cfg.memory_limit_bytes.saturating_sub(self.len_bytes()) / ip_bytes.max(1) as u64;
        by_count.min(by_bytes)
    }

    fn stats(&self) -> &AqmStats {
        &self.stats
    }

    /// (1 while overloaded: k p' > 1, L4S packets treated as classic; else 0, p').
    fn control(&self) -> (i64, f64) {
        (i64::from(self.cfg.coupling_factor * self.prob > 1.0), self.prob)
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.slab.iter(&self.l4s).for_each(&mut *f);
        self.slab.iter(&self.classic).for_each(f);
    }
}

/// One of DualPI2's queues in the summary.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaneSummary {
    /// Arrivals refused at the shared limit.
    pub overflow_drops: u64,
    /// Drops by the coupled law (classic: p_C; L4S: as classic in overload), at dequeue or,
    /// with drop_early, on arrival.
    pub prob_drops: u64,
    /// CE marks by the coupled law (classic: p_C; L4S: p_CL = k p').
    pub prob_marks: u64,
    /// CE marks by the L4S queue's step (packets the coupled law had not marked); 0 for
    /// the classic queue.
    pub step_marks: u64,
    /// Packets that left for the line, their mean and largest sojourn (None when none).
    pub dequeued_packets: u64,
    pub sojourn_mean_ps: Option<Time>,
    pub sojourn_max_ps: Option<Time>,
}

impl LaneSummary {
    fn of(s: &AqmStats) -> LaneSummary {
        LaneSummary {
            overflow_drops: s.overflow_drops,
            prob_drops: s.dequeue_drops + s.enqueue_drops,
            prob_marks: s.ecn_marks,
            step_marks: s.ce_threshold_marks,
            dequeued_packets: s.dequeued,
            sojourn_mean_ps: (s.dequeued > 0).then(|| (s.sojourn_total_ps / s.dequeued as u128) as Time),
            sojourn_max_ps: (s.dequeued > 0).then_some(s.sojourn_max_ps),
        }
    }
}

/// DualPI2's own entry in a link's summary: each queue, and the controller.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Summary {
    pub l4s: LaneSummary,
    pub classic: LaneSummary,
    /// L4S packets dropped as classic ones because k p' exceeded 1 (in l4s.prob_drops).
    pub l4s_overload_drops: u64,
    /// The base probability p' at the end, and the largest an update reached.
    pub prob_base: f64,
    pub prob_base_max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testing::data;

    const MS: Time = 1_000_000_000;

    /// Linux's defaults (`dualpi2_reset_default`) at a 1500-byte MTU, alpha and beta as RFC
    /// 9332's 0.16 and 3.2 Hz.
    fn cfg() -> DualPi2Config {
        DualPi2Config {
            limit_packets: 10_000,
            memory_limit_bytes: 10_000 * 2 * 1500,
            target_ps: 15 * MS,
            tupdate_ps: 16 * MS,
            alpha: 0.16,
            beta: 3.2,
            step_thresh_ps: Some(MS),
            step_thresh_packets: None,
            coupling_factor: 2.0,
            any_ect: false,
            c_protection_percent: 10,
            drop_overload: true,
            drop_early: false,
            mtu_bytes: 1500,
        }
    }

    fn with(ecn: &[Ecn], seq: u64) -> Packet {
        let mut p = data(seq, 1500);
        for e in ecn {
            p.ecn.set(*e);
        }
        p
    }

    fn l4s(seq: u64) -> Packet {
        with(&[Ecn::ECT1], seq)
    }

    fn classic_ect(seq: u64) -> Packet {
        with(&[Ecn::ECT], seq)
    }

    #[test]
    fn pi2_moves_p_by_alpha_and_beta_and_couples_the_two_probabilities() {
        let mut q = DualPi2::new(&cfg(), Rng::new(1));
        // From p' = 0, a delay of 45 ms (target 15 ms, previous 0): RFC 9332's PI update,
        // 0.16 x 0.030 + 3.2 x 0.045 = 0.1488, with no PIE scaling of the gains.
        q.update(45 * MS);
        assert!((q.probability() - 0.1488).abs() < 1e-12, "{}", q.probability());
        // The delay steady: only the integral term, 0.16 x 0.030.
        q.update(45 * MS);
        assert!((q.probability() - 0.1536).abs() < 1e-12);
        // RFC 9332 section 2.1: p_C = p'^2, p_CL = k p' (k = 2).
        assert!((q.prob_classic() - 0.1536 * 0.1536).abs() < 1e-12);
        assert!((q.prob_l4s_coupled() - 0.3072).abs() < 1e-12);
        // An empty queue pulls it down: -0.16 x 0.015 - 3.2 x 0.045, then -0.16 x 0.015 per
        // update, clamped at 0.
        q.update(0);
        assert!((q.probability() - 0.0072).abs() < 1e-12, "{}", q.probability());
        q.update(0);
        assert!((q.probability() - 0.0048).abs() < 1e-12);
        q.prob = 0.001;
        q.update(0);
        assert_eq!(q.probability(), 0.0);
        // p' clamps at 1 (p_CL at 1); without drop_overload at 1 / k (Linux
        // `calculate_probability`).
        q.update(2000 * MS);
        assert_eq!(q.probability(), 1.0);
        assert_eq!(q.prob_l4s_coupled(), 1.0);
        let mut capped = DualPi2::new(&DualPi2Config { drop_overload: false, ..cfg() }, Rng::new(1));
        capped.update(2000 * MS);
        assert_eq!(capped.probability(), 0.5);
    }

    #[test]
    fn the_update_reads_the_larger_head_delay_at_its_own_time() {
        let mut q = DualPi2::new(&cfg(), Rng::new(1));
        let mut dropped = Vec::new();
        q.enqueue(0, &classic_ect(0), &mut dropped).unwrap();
        q.enqueue(10 * MS, &l4s(1), &mut dropped).unwrap();
        // The first update is due at 16 ms, the second at 32 ms: run lazily at 40 ms, each
        // with the classic head's delay then (16, 32 ms; the L4S head's is smaller).
        q.catch_up(40 * MS);
        let first = 0.16 * (0.016 - 0.015) + 3.2 * 0.016;
        let second = first + 0.16 * (0.032 - 0.015) + 3.2 * (0.032 - 0.016);
        assert!((q.probability() - second).abs() < 1e-12, "{} vs {second}", q.probability());
        assert_eq!(q.next_update, 48 * MS);
    }

    #[test]
    fn ect1_and_ce_go_to_the_l4s_queue_ect0_and_not_ect_to_the_classic() {
        let mut q = DualPi2::new(&cfg(), Rng::new(1));
        assert_eq!(q.lane_of(&l4s(0)), Lane::L4s);
        assert_eq!(q.lane_of(&with(&[Ecn::ECT, Ecn::CE], 0)), Lane::L4s, "CE, whatever it was");
        assert_eq!(q.lane_of(&classic_ect(0)), Lane::Classic);
        assert_eq!(q.lane_of(&data(0, 1500)), Lane::Classic);
        // ECN-Echo and CWR are TCP flags in the same byte, not a classification.
        assert_eq!(q.lane_of(&with(&[Ecn::ECE, Ecn::CWR], 0)), Lane::Classic);
        let any = DualPi2::new(&DualPi2Config { any_ect: true, ..cfg() }, Rng::new(1));
        assert_eq!(any.lane_of(&classic_ect(0)), Lane::L4s, "any_ect: DCTCP's ECT(0) too");
        assert_eq!(any.lane_of(&data(0, 1500)), Lane::Classic);
        q.enqueue(0, &l4s(0), &mut Vec::new()).unwrap();
        q.enqueue(0, &classic_ect(1), &mut Vec::new()).unwrap();
        assert_eq!((q.l4s.len(), q.classic.len()), (1, 1));
    }

    /// Sends `n` packets made by `make` through a queue held at p' with `backlog` other
    /// packets waiting, all leaving at once (no step); returns (marked, dropped, sent).
    fn through(q: &mut DualPi2, p: f64, n: u64, make: impl Fn(u64) -> Packet) -> (u64, u64, u64) {
        let (mut marked, mut dropped_n, mut sent) = (0, 0, 0);
        for i in 0..n {
            let mut dropped = Vec::new();
            q.prob = p;
            q.next_update = Time::MAX;
            q.enqueue(0, &make(i), &mut dropped).unwrap();
            // Two MTUs of filler behind it keep the floor met (classic, never served first
            // while the credit is at its start).
            while q.len_packets() < 3 {
                q.enqueue(0, &data(1_000_000 + i, 1500), &mut dropped).unwrap();
            }
            // The packet under test leaves first (L4S: the credit starts negative; classic:
            // it is the head); if it is dropped, a filler leaves in its place.
            match q.dequeue(0, &mut dropped) {
                Some(pkt) if pkt.seq >= 1_000_000 => {}
                Some(pkt) if pkt.ecn.has(Ecn::CE) => marked += 1,
                Some(_) => sent += 1,
                None => {}
            }
            dropped_n += dropped.iter().filter(|(p, _)| p.seq < 1_000_000).count() as u64;
            while q.dequeue(0, &mut Vec::new()).is_some() {}
        }
        (marked, dropped_n, sent)
    }

    #[test]
    fn l4s_packets_are_marked_with_k_p_and_classic_ones_with_p_squared() {
        // p' = 0.3: p_CL = 0.6, p_C = 0.09; 20,000 packets each (binomial sd 0.35 % and
        // 0.2 %: bounds of about 3 sd).
        let mut q = DualPi2::new(&cfg(), Rng::new(7));
        let (marked, dropped, _) = through(&mut q, 0.3, 20_000, l4s);
        assert_eq!(dropped, 0);
        assert!((11_800..12_200).contains(&marked), "L4S marks {marked}");
        let (marked, dropped, _) = through(&mut q, 0.3, 20_000, classic_ect);
        assert_eq!(dropped, 0, "ECT(0) is marked, not dropped");
        assert!((1_680..1_920).contains(&marked), "classic marks {marked}");
        // Not-ECT classic packets are dropped with p_C.
        let (marked, dropped, _) = through(&mut q, 0.3, 20_000, |i| data(i, 1500));
        assert_eq!(marked, 0);
        assert!((1_680..1_920).contains(&dropped), "classic drops {dropped}");
        let (l, c) = q.lane_stats();
        assert!(l.ecn_marks > 0 && l.dequeue_drops == 0 && c.dequeue_drops == dropped);
    }

    #[test]
    fn overload_treats_l4s_as_classic_and_drops_classic_ecn() {
        // p' = 0.6, k = 2: p_CL = 1.2 > 1. L4S packets are dropped with p_C = 0.36 and every
        // one not dropped is marked; classic ECT(0) packets are dropped with p_C, never marked
        // (Linux `dualpi2_scalable_marking`, `dualpi2_classic_marking`).
        let mut q = DualPi2::new(&cfg(), Rng::new(3));
        let (marked, dropped, sent) = through(&mut q, 0.6, 10_000, l4s);
        assert_eq!(sent, 0, "every L4S packet not dropped is marked");
        assert!((3_450..3_750).contains(&dropped), "L4S overload drops {dropped}");
        assert_eq!(marked + dropped, 10_000);
        assert_eq!(q.summary().l4s_overload_drops, dropped);
        let (marked, dropped, _) = through(&mut q, 0.6, 10_000, classic_ect);
        assert_eq!(marked, 0);
        assert!((3_450..3_750).contains(&dropped), "classic overload drops {dropped}");
        assert_eq!(q.control().0, 1, "the series shows the overload");
        // Without drop_overload nothing is dropped: L4S all marked, classic ECN marked.
        let mut q = DualPi2::new(&DualPi2Config { drop_overload: false, ..cfg() }, Rng::new(3));
        let (marked, dropped, _) = through(&mut q, 0.5, 2_000, l4s);
        assert_eq!((marked, dropped), (2_000, 0));
    }

    #[test]
    fn the_step_marks_l4s_packets_past_one_ms_and_never_classic_ones() {
        let mut q = DualPi2::new(&cfg(), Rng::new(1));
        let mut dropped = Vec::new();
        q.next_update = Time::MAX;
        for i in 0..4 {
            q.enqueue(0, &l4s(i), &mut dropped).unwrap();
        }
        q.enqueue(0, &classic_ect(9), &mut dropped).unwrap();
        // Sojourns 1 ms (not above the step), then 1 ms + 1 ps: marked; p' = 0 throughout.
        assert!(!q.dequeue(MS, &mut dropped).unwrap().ecn.has(Ecn::CE));
        assert!(q.dequeue(MS + 1, &mut dropped).unwrap().ecn.has(Ecn::CE));
        assert!(q.dequeue(5 * MS, &mut dropped).unwrap().ecn.has(Ecn::CE));
        assert!(q.dequeue(5 * MS, &mut dropped).unwrap().ecn.has(Ecn::CE));
        let classic = q.dequeue(50 * MS, &mut dropped).unwrap();
        assert_eq!(classic.seq, 9);
        assert!(!classic.ecn.has(Ecn::CE), "the step is the L4S queue's alone");
        assert_eq!(q.lane_stats().0.ce_threshold_marks, 3);
        assert_eq!(q.stats().ecn_marks, 0);
        // In packets: marked when more than the threshold still wait behind it.
        let mut q =
            DualPi2::new(&DualPi2Config { step_thresh_ps: None, step_thresh_packets: Some(2), ..cfg() }, Rng::new(1));
        q.next_update = Time::MAX;
        for i in 0..4 {
            q.enqueue(0, &l4s(i), &mut dropped).unwrap();
        }
        let marks: Vec<bool> = (0..4).map(|_| q.dequeue(10 * MS, &mut dropped).unwrap().ecn.has(Ecn::CE)).collect();
        assert_eq!(marks, [true, false, false, false], "3 wait behind the first, 2 behind the second");
    }

    #[test]
    fn nothing_is_marked_or_dropped_below_two_mtus() {
        let mut q = DualPi2::new(&cfg(), Rng::new(1));
        let mut dropped = Vec::new();
        q.next_update = Time::MAX;
        q.prob = 1.0;
        q.enqueue(0, &data(0, 1500), &mut dropped).unwrap();
        q.enqueue(0, &data(1, 1500), &mut dropped).unwrap();
        // One MTU waits behind the first when it leaves: below the floor, it passes.
        assert_eq!(q.dequeue(0, &mut dropped).map(|p| p.seq), Some(0));
        assert!(dropped.is_empty());
    }

    #[test]
    fn the_scheduler_gives_the_classic_queue_its_weight_in_bytes() {
        // wc = 10 %: the credit starts at 1500 x (10 - 90); each L4S packet adds 10 x 1500,
        // each classic one takes 90 x 1500: nine L4S packets, then one classic, repeated.
        let mut q = DualPi2::new(&cfg(), Rng::new(1));
        let mut dropped = Vec::new();
        q.next_update = Time::MAX;
        for i in 0..30 {
            q.enqueue(0, &l4s(i), &mut dropped).unwrap();
            q.enqueue(0, &data(100 + i, 1500), &mut dropped).unwrap();
        }
        let order: String =
            (0..20).map(|_| if q.dequeue(0, &mut dropped).unwrap().seq < 100 { 'L' } else { 'C' }).collect();
        assert_eq!(order, "LLLLLLLLLCLLLLLLLLLC");
        // With the L4S queue empty the classic one is served and the credit kept; with both
        // empty it restarts.
        let mut q = DualPi2::new(&cfg(), Rng::new(1));
        q.next_update = Time::MAX;
        q.enqueue(0, &data(0, 1500), &mut dropped).unwrap();
        q.dequeue(0, &mut dropped).unwrap();
        assert_eq!(q.credit, -120_000);
        q.credit = 5;
        assert!(q.dequeue(0, &mut dropped).is_none());
        assert_eq!(q.credit, -120_000);
    }

    #[test]
    fn the_two_queues_share_one_limit() {
        let mut q = DualPi2::new(&DualPi2Config { limit_packets: 3, ..cfg() }, Rng::new(1));
        let mut dropped = Vec::new();
        q.enqueue(0, &l4s(0), &mut dropped).unwrap();
        q.enqueue(0, &classic_ect(1), &mut dropped).unwrap();
        assert_eq!(q.room_packets(1500), 1);
        q.enqueue(0, &l4s(2), &mut dropped).unwrap();
        assert_eq!(q.enqueue(0, &classic_ect(3), &mut dropped), Err(Admission::Overflow));
        assert_eq!(q.lane_stats().1.overflow_drops, 1);
        // The byte limit: 4000 bytes take two 1500-byte packets, not a third.
        let mut q = DualPi2::new(&DualPi2Config { memory_limit_bytes: 4000, ..cfg() }, Rng::new(1));
        q.enqueue(0, &l4s(0), &mut dropped).unwrap();
        q.enqueue(0, &l4s(1), &mut dropped).unwrap();
        assert_eq!(q.room_packets(1500), 0);
        assert_eq!(q.enqueue(0, &l4s(2), &mut dropped), Err(Admission::Overflow));
    }

    #[test]
    fn drop_early_decides_on_arrival() {
        let mut q = DualPi2::new(&DualPi2Config { drop_early: true, ..cfg() }, Rng::new(5));
        let mut dropped = Vec::new();
        q.next_update = Time::MAX;
        q.prob = 1.0;
        for i in 0..2 {
            q.enqueue(0, &data(i, 1500), &mut dropped).unwrap();
        }
        // Two MTUs wait: p_C = 1 drops the Not-ECT arrival; at p' = 0.5 an L4S arrival is
        // marked (p_CL = 1) as it enters.
        assert_eq!(q.enqueue(0, &data(2, 1500), &mut dropped), Err(Admission::EarlyDrop));
        q.prob = 0.5;
        q.enqueue(0, &l4s(3), &mut dropped).unwrap();
        assert_eq!((q.classic_stats.enqueue_drops, q.l4s_stats.ecn_marks), (1, 1));
        assert!(q.slab.iter(&q.l4s).all(|p| p.ecn.has(Ecn::CE)));
        assert!(dropped.is_empty(), "refused arrivals are the link's, not the dropped list");
    }
}
