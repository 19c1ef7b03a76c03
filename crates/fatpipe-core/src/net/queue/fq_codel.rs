//! FQ-CoDel (RFC 8290; Linux `net/sched/sch_fq_codel.c`): packets hashed by flow into a
//! fixed table of queues, each under its own CoDel state machine (`codel.rs`), served by
//! deficit round robin with a byte quantum, new flows first (the scheduler, `drr.rs`, is
//! FQ-PIE's too).
//!
//! - At the limit the arrival is taken and the queue with the largest backlog in bytes
//!   loses packets from its head, up to half its backlog or `drop_batch_size` packets, and
//!   its CoDel count grows by as many (Linux `fq_codel_drop`, since 4.6; the scan of every
//!   queue runs only on overflow).
//!
//! Not modelled: Linux's `memory_limit` (32 MB of socket-buffer truesize, which a
//! simulated packet does not have); lengths are IP bytes and the quantum the link's IP MTU
//! (Linux counts the Ethernet header in both, 1514).

use super::codel::{CodelParams, CodelSource, CodelVars};
use super::drr::{FlowQueue, FlowQueues};
use super::holding::{AqmStats, HoldingDiscipline};
use super::slab::{PacketList, PacketSlab};
use super::Admission;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FqCodelConfig {
    /// Most packets waiting in all queues together (Linux `limit`).
    pub limit_packets: u64,
    /// Number of flow queues (Linux `flows`).
    pub flows: u32,
    /// Bytes a queue may send per round (Linux `quantum`).
    pub quantum_bytes: u32,
    /// Most packets one overflow drops from the fattest queue (Linux `drop_batch_size`).
    pub drop_batch_size: u32,
    /// CoDel's target and interval, picoseconds, for every queue.
    pub target_ps: Time,
    pub interval_ps: Time,
    /// The link's MTU, IP bytes (CoDel's MAXPACKET).
    pub mtu_bytes: u32,
    /// Mark ECN-capable packets CE instead of dropping them (Linux default on).
    pub ecn: bool,
    /// Mark CE every ECN-capable packet whose sojourn exceeds this; None: off.
    pub ce_threshold_ps: Option<Time>,
}

pub struct FqCodel {
    cfg: FqCodelConfig,
    params: CodelParams,
    slab: PacketSlab,
    queues: FlowQueues<CodelVars>,
    /// Packets and IP bytes in all queues (Linux `sch->q.qlen`, `sch->qstats.backlog`).
    packets: u64,
    bytes: u64,
    stats: AqmStats,
}

/// One queue as its CoDel's source; pops keep the discipline's totals.
struct FlowSource<'a> {
    slab: &'a mut PacketSlab,
    list: &'a mut PacketList,
    packets: &'a mut u64,
    bytes: &'a mut u64,
}

impl CodelSource for FlowSource<'_> {
    #[inline]
    fn pop(&mut self) -> Option<(Time, Packet)> {
        let item = self.slab.pop(self.list)?;
        *self.packets -= 1;
        *self.bytes -= item.1.ip_bytes as u64;
        Some(item)
    }
    #[inline]
    fn backlog(&self) -> u64 {
        *self.bytes
    }
}

impl FqCodel {
    pub fn new(cfg: &FqCodelConfig, mut rng: Rng) -> Self {
        FqCodel {
            params: CodelParams {
                target_ps: cfg.target_ps,
                interval_ps: cfg.interval_ps,
                mtu_bytes: cfg.mtu_bytes as u64,
                ecn: cfg.ecn,
                ce_threshold_ps: cfg.ce_threshold_ps,
            },
            slab: PacketSlab::with_capacity(cfg.limit_packets.min(u32::MAX as u64) as usize),
            queues: FlowQueues::new(cfg.flows, cfg.quantum_bytes, CodelVars::default(), &mut rng),
            packets: 0,
            bytes: 0,
            stats: AqmStats::default(),
            cfg: cfg.clone(),
        }
    }

    /// The queue of `pkt`'s flow.
    #[inline]
    pub fn classify(&self, pkt: &Packet) -> u32 {
        self.queues.classify(pkt)
    }

    /// Queues that joined the new-flows list (Linux `new_flow_count`).
    pub fn new_flow_count(&self) -> u64 {
        self.queues.new_flow_count
    }

    /// Linux `fq_codel_drop`: the fattest queue loses packets from its head, up to half its
    /// backlog or `drop_batch_size`; its CoDel count grows by as many.
    fn drop_from_fattest(&mut self, dropped: &mut Vec<(Packet, Admission)>) {
        let (mut fattest, mut max_bytes) = (0, 0);
        for (i, q) in self.queues.iter().enumerate() {
            if q.packets.bytes() > max_bytes {
                (fattest, max_bytes) = (i, q.packets.bytes());
            }
        }
        let threshold = max_bytes / 2;
        let q = self.queues.get_mut(fattest as u32);
        let (mut n, mut len) = (0u32, 0u64);
        while let Some((_, pkt)) = self.slab.pop(&mut q.packets) {
            len += pkt.ip_bytes as u64;
            self.packets -= 1;
            self.bytes -= pkt.ip_bytes as u64;
            dropped.push((pkt, Admission::Overflow));
            n += 1;
            if n >= self.cfg.drop_batch_size || len >= threshold {
                break;
            }
        }
        q.vars.count = q.vars.count.wrapping_add(n);
        self.stats.overflow_drops += n as u64;
    }

    /// How many queues are in CoDel's dropping state, and the largest count among them.
    fn dropping(&self) -> (i64, u32) {
        self.queues.iter().filter(|q| q.vars.dropping).fold((0, 0), |(n, c), q| (n + 1, c.max(q.vars.count)))
    }
}

impl HoldingDiscipline for FqCodel {
    fn enqueue(&mut self, now: Time, pkt: &Packet, dropped: &mut Vec<(Packet, Admission)>) -> Result<(), Admission> {
        let q = self.classify(pkt);
        self.slab.push(&mut self.queues.get_mut(q).packets, now, pkt);
        self.packets += 1;
        self.bytes += pkt.ip_bytes as u64;
        self.queues.activate(q);
        if self.packets > self.cfg.limit_packets {
            self.drop_from_fattest(dropped);
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        let FqCodel { params, slab, queues, packets, bytes, stats, .. } = self;
        queues.next_packet(|_, queue| {
            let FlowQueue { packets: list, vars, .. } = queue;
            let mut src = FlowSource { slab, list, packets, bytes };
            vars.dequeue(params, &mut src, now, stats, dropped)
        })
    }

    fn len_packets(&self) -> usize {
        self.packets as usize
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn room_packets(&self, _ip_bytes: u32) -> u64 {
        self.cfg.limit_packets.saturating_sub(self.packets)
    }

    fn stats(&self) -> &AqmStats {
        &self.stats
    }

    fn control(&self) -> (i64, f64) {
        let (n, count) = self.dropping();
        (n, f64::from(count))
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

    const MS: Time = 1_000_000_000;

    fn cfg() -> FqCodelConfig {
        FqCodelConfig {
            limit_packets: 10240,
            flows: 1024,
            quantum_bytes: 1500,
            drop_batch_size: 64,
            target_ps: 5 * MS,
            interval_ps: 100 * MS,
            mtu_bytes: 1500,
            ecn: true,
            ce_threshold_ps: None,
        }
    }

    #[test]
    fn new_flows_go_first_and_the_quantum_shares_bytes() {
        drr::testing::check(|seed| FqCodel::new(&cfg(), Rng::new(seed)), FqCodel::classify, FqCodel::new_flow_count);
    }

    #[test]
    fn overflow_drops_from_the_head_of_the_fattest_queue() {
        let mut q = FqCodel::new(&FqCodelConfig { limit_packets: 20, ..cfg() }, Rng::new(5));
        let (fat, thin) = two_flows(|p| q.classify(p));
        let mut dropped = Vec::new();
        for i in 0..16 {
            q.enqueue(0, &pkt(fat, i, 1500), &mut dropped).unwrap();
        }
        for i in 0..4 {
            q.enqueue(0, &pkt(thin, i, 1500), &mut dropped).unwrap();
        }
        assert!(dropped.is_empty());
        // The 21st packet (thin's): the fat queue (24,000 bytes) loses half its backlog from
        // its head: 8 packets, seq 0 to 7; its CoDel count grows by 8.
        q.enqueue(0, &pkt(thin, 4, 1500), &mut dropped).unwrap();
        let seqs: Vec<_> = dropped.iter().map(|(p, why)| (p.flow, p.seq, *why)).collect();
        assert_eq!(seqs, (0..8).map(|s| (fat, s, Admission::Overflow)).collect::<Vec<_>>());
        assert_eq!(q.len_packets(), 13);
        assert_eq!(q.queues.get(q.classify(&pkt(fat, 0, 1))).vars.count, 8);
        assert_eq!(q.stats().overflow_drops, 8);
        // And at most drop_batch_size at a time.
        let mut q = FqCodel::new(&FqCodelConfig { limit_packets: 20, drop_batch_size: 3, ..cfg() }, Rng::new(5));
        let mut dropped = Vec::new();
        for i in 0..21 {
            q.enqueue(0, &pkt(fat, i, 1500), &mut dropped).unwrap();
        }
        assert_eq!(dropped.len(), 3);
    }

    #[test]
    fn each_queue_runs_its_own_codel() {
        // A standing queue in one flow's queue is dropped (or marked); a sparse flow's
        // packets, which never wait long, are not.
        let mut q = FqCodel::new(&FqCodelConfig { ecn: false, ..cfg() }, Rng::new(7));
        let (bulk, sparse) = two_flows(|p| q.classify(p));
        let mut dropped = Vec::new();
        for i in 0..400 {
            q.enqueue(0, &pkt(bulk, i, 1500), &mut dropped).unwrap();
        }
        let mut sparse_sent = 0;
        for ms in 0..300 {
            if ms % 10 == 0 {
                q.enqueue(ms * MS, &pkt(sparse, ms, 100), &mut dropped).unwrap();
            }
            if let Some(p) = q.dequeue(ms * MS, &mut dropped) {
                sparse_sent += u32::from(p.flow == sparse);
            }
        }
        assert!(!dropped.is_empty());
        assert!(dropped.iter().all(|(p, _)| p.flow == bulk));
        assert_eq!(sparse_sent, 30, "every sparse packet left, first");
        assert_eq!(q.control().0, 1, "one queue in the dropping state");
    }

    #[test]
    fn data_and_acks_of_a_flow_share_a_queue_and_flows_spread_over_the_table() {
        let q = FqCodel::new(&cfg(), Rng::new(11));
        let mut ack = pkt(5, 0, 52);
        ack.kind = crate::packet::PacketKind::Ack;
        assert_eq!(q.classify(&ack), q.classify(&pkt(5, 9, 1500)));
        let used: std::collections::HashSet<u32> = (0..1024).map(|f| q.classify(&pkt(f, 0, 1500))).collect();
        // 1024 flows into 1024 queues at random fill about 1 - 1/e of them (647).
        assert!((600..700).contains(&used.len()), "{}", used.len());
    }
}
