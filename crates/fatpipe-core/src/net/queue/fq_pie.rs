//! FQ-PIE (Linux `net/sched/sch_fq_pie.c`, since 5.6; Ramakrishnan et al., "FQ-PIE Queue
//! Discipline in the Linux Kernel: Design, Implementation and Challenges", LCN 2019): the
//! flow queues and deficit round robin of FQ-CoDel (`drr.rs`), each queue under its own PIE
//! controller (RFC 8033; `pie.rs`'s `PieVars`, one per queue).
//!
//! What differs from FQ-CoDel, after `sch_fq_pie.c`:
//! - drops happen on arrival only: an arrival finds the discipline at its limit and is
//!   dropped (`overlimit`, no search for the fattest queue), or its own queue's PIE drops
//!   it early (`pie_drop_early` with that queue's probability and backlog), or, with `ecn`
//!   and a probability of at most `ecn_prob` per cent, marks it CE; a drop restarts that
//!   queue's de-randomization (`accu_prob = 0`);
//! - a departure gives its queue's PIE the packet's sojourn time (0 when it empties the
//!   queue) and spends that queue's burst allowance (`pie_process_dequeue`, timestamps:
//!   `dq_rate_estimator` off, Linux's default);
//! - one timer updates every queue's probability every `tupdate` (`fq_pie_timer` calls
//!   `pie_calculate_probability` with each queue's own backlog), the first half a second
//!   after the discipline is set up (`fq_pie_init`: `jiffies + HZ / 2`).
//!
//! The timer needs no event: between two calls of the link the queues do not change, so
//! the updates due by `now` run first, at their own times. An update of a queue that is
//! empty and at rest (PIE's initial state, no delay) changes nothing, so only the queues
//! that took a packet since they were last at rest are visited (`tracked`): an update
//! costs the active flows, not the table.
//!
//! Not modelled: Linux's `memory_limit` (32 MB of socket-buffer truesize), which in
//! `fq_pie_qdisc_enqueue` only counts arrivals over it (`overmemory`) and never drops;
//! the timer's split of more than 2048 queues over several jiffies (all are updated at
//! once here); the optional departure-rate estimator. Lengths are IP bytes and the quantum
//! the link's IP MTU (Linux counts the Ethernet header, 1514).

use super::drr::FlowQueues;
use super::holding::{AqmStats, HoldingDiscipline};
use super::pie::{PieConfig, PieVars};
use super::slab::PacketSlab;
use super::Admission;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

/// The first probability update comes this long after the discipline is set up (Linux
/// `fq_pie_init`, `mod_timer(&q->adapt_timer, jiffies + HZ / 2)`: half a second whatever HZ).
const FIRST_UPDATE_PS: Time = 500_000_000_000;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FqPieConfig {
    /// Number of flow queues (Linux `flows`).
    pub flows: u32,
    /// Bytes a queue may send per round (Linux `quantum`).
    pub quantum_bytes: u32,
    /// With `pie.ecn`, ECN-capable arrivals are marked CE instead of dropped while their
    /// queue's probability is at most this (Linux `ecn_prob`, per cent).
    pub ecn_prob_percent: u32,
    /// PIE's settings for every queue (Linux's `p_params`: its `limit` is the discipline's,
    /// over all queues together).
    pub pie: PieConfig,
}

/// One flow queue's state: its PIE, and whether the timer visits it.
#[derive(Clone)]
struct FlowPie {
    pie: PieVars,
    tracked: bool,
}

pub struct FqPie {
    cfg: FqPieConfig,
    /// Arrivals are marked (with ECN) at or below this probability; None: never.
    mark_below: Option<f64>,
    slab: PacketSlab,
    queues: FlowQueues<FlowPie>,
    /// The queues the timer visits: those not known to be empty and at rest.
    tracked: Vec<u32>,
    rng: Rng,
    /// Packets and IP bytes in all queues (Linux `sch->q.qlen`, `sch->qstats.backlog`).
    packets: u64,
    bytes: u64,
    /// The next probability update is due then.
    next_update: Time,
    stats: AqmStats,
}

impl FqPie {
    pub fn new(cfg: &FqPieConfig, mut rng: Rng) -> Self {
        let flow = FlowPie { pie: PieVars::new(&cfg.pie), tracked: false };
        FqPie {
            mark_below: cfg.pie.ecn.then_some(f64::from(cfg.ecn_prob_percent) / 100.0),
            slab: PacketSlab::with_capacity(cfg.pie.limit_packets.min(u32::MAX as u64) as usize),
            queues: FlowQueues::new(cfg.flows, cfg.quantum_bytes, flow, &mut rng),
            tracked: Vec::with_capacity(cfg.flows.max(1) as usize),
            rng,
            packets: 0,
            bytes: 0,
            next_update: FIRST_UPDATE_PS,
            stats: AqmStats::default(),
            cfg: cfg.clone(),
        }
    }

    /// The queue of `pkt`'s flow.
    #[inline]
    pub fn classify(&self, pkt: &Packet) -> u32 {
        self.queues.classify(pkt)
    }

    /// Queue `q`'s controller (tests).
    pub fn vars(&self, q: u32) -> &PieVars {
        &self.queues.get(q).vars.pie
    }

    /// Queues that joined the new-flows list (Linux `new_flow_count`).
    pub fn new_flow_count(&self) -> u64 {
        self.queues.new_flow_count
    }

    /// Runs the probability updates due by `now` (Linux `fq_pie_timer`), each on the queues
    /// as they were then.
    fn catch_up(&mut self, now: Time) {
        let tupdate = self.cfg.pie.tupdate_ps;
        while self.next_update <= now {
            if self.tracked.is_empty() {
                // Every queue empty and at rest: the updates until now change nothing.
                self.next_update += ((now - self.next_update) / tupdate + 1) * tupdate;
                return;
            }
            let mut i = 0;
            while i < self.tracked.len() {
                let flow = self.queues.get_mut(self.tracked[i]);
                let empty = flow.packets.is_empty();
                flow.vars.pie.calculate_probability(&self.cfg.pie, empty);
                if empty && flow.vars.pie.at_rest(&self.cfg.pie) {
                    flow.vars.tracked = false;
                    self.tracked.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            self.next_update += tupdate;
        }
    }
}

impl HoldingDiscipline for FqPie {
    /// Linux `fq_pie_qdisc_enqueue`.
    fn enqueue(&mut self, now: Time, pkt: &Packet, _dropped: &mut Vec<(Packet, Admission)>) -> Result<(), Admission> {
        self.catch_up(now);
        let q = self.queues.classify(pkt);
        let flow = self.queues.get_mut(q);
        if self.packets >= self.cfg.pie.limit_packets {
            self.stats.overflow_drops += 1;
            flow.vars.pie.accu_prob = 0.0;
            return Err(Admission::Overflow);
        }
        let mut pkt = *pkt;
        let backlog = flow.packets.bytes();
        flow.vars.pie.admit(&self.cfg.pie, &mut self.rng, backlog, &mut pkt, self.mark_below, &mut self.stats)?;
        self.slab.push(&mut flow.packets, now, &pkt);
        if !flow.vars.tracked {
            flow.vars.tracked = true;
            self.tracked.push(q);
        }
        self.packets += 1;
        self.bytes += pkt.ip_bytes as u64;
        self.queues.activate(q);
        Ok(())
    }

    /// Linux `fq_pie_qdisc_dequeue`.
    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        self.catch_up(now);
        let FqPie { queues, slab, packets, bytes, stats, .. } = self;
        queues.next_packet(|_, flow| {
            let (enqueued, pkt) = slab.pop(&mut flow.packets)?;
            *packets -= 1;
            *bytes -= pkt.ip_bytes as u64;
            flow.vars.pie.process_dequeue(now, enqueued, flow.packets.is_empty());
            stats.sojourn(enqueued, now);
            Some(pkt)
        })
    }

    fn len_packets(&self) -> usize {
        self.packets as usize
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn room_packets(&self, _ip_bytes: u32) -> u64 {
        self.cfg.pie.limit_packets.saturating_sub(self.packets)
    }

    fn stats(&self) -> &AqmStats {
        &self.stats
    }

    /// (active queues whose drop probability is above 0, the largest probability among
    /// them).
    fn control(&self) -> (i64, f64) {
        self.tracked
            .iter()
            .map(|&q| self.queues.get(q).vars.pie.prob)
            .fold((0, 0.0), |(n, max), p| (n + i64::from(p > 0.0), max.max(p)))
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.queues.for_each_packet(&self.slab, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::drr::{
        self,
        testing::{pkt, two_flows},
    };
    use crate::net::queue::pie::testing::cfg as pie_cfg;
    use crate::packet::Ecn;

    const MS: Time = 1_000_000_000;

    /// sch_fq_pie.c's defaults (fq_pie_init, pie_params_init, pie_vars_init).
    fn cfg() -> FqPieConfig {
        FqPieConfig { flows: 1024, quantum_bytes: 1500, ecn_prob_percent: 10, pie: pie_cfg(10240) }
    }

    fn with_pie(f: impl FnOnce(&mut PieConfig)) -> FqPieConfig {
        let mut c = cfg();
        f(&mut c.pie);
        c
    }

    #[test]
    fn new_flows_go_first_and_the_quantum_shares_bytes() {
        drr::testing::check(|seed| FqPie::new(&cfg(), Rng::new(seed)), FqPie::classify, FqPie::new_flow_count);
    }

    #[test]
    fn each_queue_has_its_own_probability_a_bulk_flow_is_dropped_a_sparse_one_not() {
        // A bulk flow keeps 100 packets waiting in its queue (one leaves and one comes every
        // millisecond: its sojourn 100 ms); a sparse flow sends a packet every 10 ms, which
        // leaves at once. The bulk queue's PIE sees 100 ms against a 15 ms target and its
        // probability climbs; the sparse queue's sees no delay and stays at 0: every drop
        // is the bulk flow's.
        let mut q = FqPie::new(&cfg(), Rng::new(7));
        let (bulk, sparse) = two_flows(|p| q.classify(p));
        let mut dropped = Vec::new();
        for i in 0..100 {
            q.enqueue(0, &pkt(bulk, i, 1500), &mut dropped).unwrap();
        }
        let (bulk_q, sparse_q) = (q.classify(&pkt(bulk, 0, 1)), q.classify(&pkt(sparse, 0, 1)));
        let (mut refused, mut sparse_sent, mut seq, mut bulk_max) = ([0u32; 2], 0, 100, 0.0f64);
        for ms in 1..3000u64 {
            let now = ms * MS;
            if q.enqueue(now, &pkt(bulk, seq, 1500), &mut dropped).is_err() {
                refused[0] += 1;
            }
            seq += 1;
            if ms % 10 == 0 && q.enqueue(now, &pkt(sparse, ms, 100), &mut dropped).is_err() {
                refused[1] += 1;
            }
            while let Some(p) = q.dequeue(now, &mut dropped) {
                if p.flow == sparse {
                    sparse_sent += 1;
                    continue;
                }
                break;
            }
            bulk_max = bulk_max.max(q.vars(bulk_q).prob);
            assert_eq!((q.vars(sparse_q).prob, q.vars(sparse_q).qdelay), (0.0, 0), "the sparse queue sees no delay");
        }
        assert!(bulk_max > 0.01, "bulk probability {bulk_max}");
        assert!(refused[0] > 0 && refused[1] == 0, "{refused:?}");
        assert_eq!(sparse_sent, 299, "every sparse packet left");
        assert_eq!(q.stats().enqueue_drops, u64::from(refused[0]));
    }

    #[test]
    fn the_first_update_comes_half_a_second_after_setup_then_every_tupdate() {
        // fq_pie_init arms the timer at HZ / 2. A queue with 45 ms of delay: no update before
        // 500 ms; at 500 ms one step of PIE's law from 0 (RFC 8033: 0.125 x 0.030 + 1.25 x
        // 0.045, scaled by 1/2048 below 0.0001 %), the next at 515 ms.
        let mut q = FqPie::new(&cfg(), Rng::new(9));
        let mut dropped = Vec::new();
        for i in 0..3 {
            q.enqueue(0, &pkt(1, i, 1500), &mut dropped).unwrap();
        }
        q.dequeue(45 * MS, &mut dropped);
        let queue = q.classify(&pkt(1, 0, 1));
        assert_eq!(q.vars(queue).qdelay, 45 * MS);
        q.catch_up(500 * MS - 1);
        assert_eq!(q.vars(queue).prob, 0.0);
        q.catch_up(500 * MS);
        let step = (0.125 * 0.030 + 1.25 * 0.045) / 2048.0;
        assert!((q.vars(queue).prob - step).abs() < 1e-15, "{}", q.vars(queue).prob);
        assert_eq!(q.next_update, 515 * MS);
    }

    #[test]
    fn at_the_limit_the_arrival_is_dropped_not_the_fattest_queue() {
        // fq_pie_qdisc_enqueue: qlen >= limit drops the arrival (overlimit), whatever queue
        // it belongs to; FQ-CoDel would push packets out of the fattest queue instead.
        let mut q = FqPie::new(&with_pie(|p| p.limit_packets = 20), Rng::new(5));
        let (fat, thin) = two_flows(|p| q.classify(p));
        let mut dropped = Vec::new();
        for i in 0..20 {
            q.enqueue(0, &pkt(fat, i, 1500), &mut dropped).unwrap();
        }
        assert_eq!(q.enqueue(0, &pkt(thin, 0, 1500), &mut dropped), Err(Admission::Overflow));
        assert!(dropped.is_empty());
        assert_eq!((q.len_packets(), q.stats().overflow_drops, q.room_packets(1500)), (20, 1, 0));
    }

    #[test]
    fn ecn_marks_up_to_ecn_prob_and_drops_above() {
        let mut q = FqPie::new(&with_pie(|p| p.ecn = true), Rng::new(2));
        let mut dropped = Vec::new();
        for i in 0..10 {
            q.enqueue(0, &pkt(4, i, 1500), &mut dropped).unwrap();
        }
        let queue = q.classify(&pkt(4, 0, 1));
        let mut ect = pkt(4, 99, 1500);
        ect.ecn.set(Ecn::ECT);
        let force = |q: &mut FqPie, prob: f64| {
            let v = &mut q.queues.get_mut(queue).vars.pie;
            (v.burst_left, v.qdelay, v.prob, v.accu_prob) = (0, 100 * MS, prob, 8.5);
        };
        force(&mut q, 0.10);
        assert!(q.enqueue(0, &ect, &mut dropped).is_ok());
        assert_eq!(q.stats().ecn_marks, 1);
        force(&mut q, 0.11);
        assert_eq!(q.enqueue(0, &ect, &mut dropped), Err(Admission::EarlyDrop));
        // A packet that is not ECN-capable is dropped at any probability.
        force(&mut q, 0.05);
        assert_eq!(q.enqueue(0, &pkt(4, 100, 1500), &mut dropped), Err(Admission::EarlyDrop));
        assert_eq!(q.vars(queue).accu_prob, 0.0, "a drop restarts the de-randomization");
    }

    #[test]
    fn quiet_queues_leave_the_timer_and_cost_nothing() {
        let mut q = FqPie::new(&cfg(), Rng::new(11));
        let mut dropped = Vec::new();
        for f in 0..50 {
            q.enqueue(0, &pkt(f, 0, 1500), &mut dropped).unwrap();
        }
        while q.dequeue(MS, &mut dropped).is_some() {}
        assert!(!q.tracked.is_empty());
        // An update without delay or probability puts every queue back at rest (pie_vars_init).
        q.catch_up(530 * MS);
        assert!(q.tracked.is_empty());
        assert!(q.queues.iter().all(|f| !f.vars.tracked && f.vars.pie.at_rest(&q.cfg.pie)));
        // An hour of quiet: the timer jumps.
        q.catch_up(3_600_000 * MS);
        assert_eq!(q.next_update, 3_600_000 * MS + 5 * MS);
    }
}
