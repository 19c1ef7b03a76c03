//! FQ-CoDel (RFC 8290; Linux `net/sched/sch_fq_codel.c`): packets hashed by flow into a
//! fixed table of queues, each under its own CoDel state machine (`codel.rs`), served by
//! deficit round robin with a byte quantum, new flows first.
//!
//! - Classification: a flow's packets (data and ACKs alike: Linux's flow hash is
//!   symmetric) go to queue `hash(flow, connection) mod flows`, the hash perturbed by a
//!   number drawn per queue discipline (Linux `q->perturbation`, from the link's seed here),
//!   so two flows may share a queue as they do in Linux.
//! - A queue that becomes active joins the tail of the new-flows list with a deficit of one
//!   quantum (RFC 8290 section 4.1). Dequeue serves the head of the new list, else of the
//!   old list; a queue whose deficit is spent gets another quantum and moves to the tail of
//!   the old list; a queue found empty moves from the new list to the old one (so a sparse
//!   flow cannot starve the others by going idle and coming back new) when the old list
//!   has queues, and otherwise leaves the lists (sections 4.2, 4.3).
//! - At the limit the arrival is taken and the queue with the largest backlog in bytes
//!   loses packets from its head, up to half its backlog or `drop_batch_size` packets, and
//!   its CoDel count grows by as many (Linux `fq_codel_drop`, since 4.6; the scan of every
//!   queue runs only on overflow).
//!
//! Not modelled: Linux's `memory_limit` (32 MB of socket-buffer truesize, which a
//! simulated packet does not have); lengths are IP bytes and the quantum the link's IP MTU
//! (Linux counts the Ethernet header in both, 1514).

use super::codel::{CodelParams, CodelSource, CodelVars};
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

/// No queue: the end of a list.
const NIL: u32 = u32::MAX;

/// One flow queue (Linux `struct fq_codel_flow`).
#[derive(Clone, Default)]
struct FlowQueue {
    packets: PacketList,
    deficit: i64,
    vars: CodelVars,
    /// The next queue in the list this one is on.
    next: u32,
    /// On the new or the old list (Linux: `!list_empty(&flow->flowchain)`).
    listed: bool,
}

/// A list of queues (new flows, old flows), threaded through `FlowQueue::next`.
#[derive(Clone, Copy)]
struct QueueList {
    head: u32,
    tail: u32,
}

impl QueueList {
    const EMPTY: QueueList = QueueList { head: NIL, tail: NIL };
    fn is_empty(&self) -> bool {
        self.head == NIL
    }
}

pub struct FqCodel {
    cfg: FqCodelConfig,
    params: CodelParams,
    perturbation: u64,
    slab: PacketSlab,
    queues: Vec<FlowQueue>,
    new_flows: QueueList,
    old_flows: QueueList,
    /// Packets and IP bytes in all queues (Linux `sch->q.qlen`, `sch->qstats.backlog`).
    packets: u64,
    bytes: u64,
    /// Queues that joined the new-flows list (Linux `new_flow_count`).
    pub new_flow_count: u64,
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
        let perturbation = rng.next_u64();
        FqCodel {
            params: CodelParams {
                target_ps: cfg.target_ps,
                interval_ps: cfg.interval_ps,
                mtu_bytes: cfg.mtu_bytes as u64,
                ecn: cfg.ecn,
                ce_threshold_ps: cfg.ce_threshold_ps,
            },
            perturbation,
            slab: PacketSlab::with_capacity(cfg.limit_packets.min(u32::MAX as u64) as usize),
            queues: vec![FlowQueue::default(); cfg.flows.max(1) as usize],
            new_flows: QueueList::EMPTY,
            old_flows: QueueList::EMPTY,
            packets: 0,
            bytes: 0,
            new_flow_count: 0,
            stats: AqmStats::default(),
            cfg: cfg.clone(),
        }
    }

    /// The queue of `pkt`'s flow: a 64-bit mix of (flow, connection) and the perturbation,
    /// scaled to the table as Linux's `reciprocal_scale` scales its 32-bit hash.
    #[inline]
    pub fn classify(&self, pkt: &Packet) -> u32 {
        let mut h = ((pkt.flow as u64) << 16 | pkt.conn as u64) ^ self.perturbation;
        // splitmix64's finalizer: every input bit moves every output bit.
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^= h >> 31;
        (((h >> 32) * self.queues.len() as u64) >> 32) as u32
    }

    fn push_tail(&mut self, old: bool, q: u32) {
        let list = if old { self.old_flows } else { self.new_flows };
        self.queues[q as usize].next = NIL;
        self.queues[q as usize].listed = true;
        let list = if list.tail == NIL {
            QueueList { head: q, tail: q }
        } else {
            self.queues[list.tail as usize].next = q;
            QueueList { head: list.head, tail: q }
        };
        if old {
            self.old_flows = list;
        } else {
            self.new_flows = list;
        }
    }

    /// Takes the head queue off the new (or old) list.
    fn pop_head(&mut self, old: bool) -> u32 {
        let list = if old { &mut self.old_flows } else { &mut self.new_flows };
        let q = list.head;
        list.head = self.queues[q as usize].next;
        if list.head == NIL {
            list.tail = NIL;
        }
        self.queues[q as usize].listed = false;
        q
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
        let q = &mut self.queues[fattest];
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
        let queue = &mut self.queues[q as usize];
        self.slab.push(&mut queue.packets, now, pkt);
        self.packets += 1;
        self.bytes += pkt.ip_bytes as u64;
        if !queue.listed {
            queue.deficit = self.cfg.quantum_bytes as i64;
            self.push_tail(false, q);
            self.new_flow_count += 1;
        }
        if self.packets > self.cfg.limit_packets {
            self.drop_from_fattest(dropped);
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Time, dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        loop {
            let old = self.new_flows.is_empty();
            let q = if old { self.old_flows.head } else { self.new_flows.head };
            if q == NIL {
                return None;
            }
            let queue = &mut self.queues[q as usize];
            if queue.deficit <= 0 {
                queue.deficit += self.cfg.quantum_bytes as i64;
                self.pop_head(old);
                self.push_tail(true, q);
                continue;
            }
            let FlowQueue { packets, vars, .. } = queue;
            let mut src =
                FlowSource { slab: &mut self.slab, list: packets, packets: &mut self.packets, bytes: &mut self.bytes };
            match vars.dequeue(&self.params, &mut src, now, &mut self.stats, dropped) {
                Some(pkt) => {
                    self.queues[q as usize].deficit -= pkt.ip_bytes as i64;
                    return Some(pkt);
                }
                None => {
                    // Empty: a new queue passes through the old list once (no starvation of
                    // the old queues by a flow that keeps coming back new).
                    self.pop_head(old);
                    if !old && !self.old_flows.is_empty() {
                        self.push_tail(true, q);
                    }
                }
            }
        }
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
        for q in &self.queues {
            self.slab.iter(&q.packets).for_each(&mut *f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testing::data;

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

    fn pkt(flow: u32, seq: u64, ip_bytes: u32) -> Packet {
        let mut p = data(seq, ip_bytes);
        p.flow = flow;
        p
    }

    /// Two flows in distinct queues (the perturbation decides; pick flows that differ).
    fn two_flows(q: &FqCodel) -> (u32, u32) {
        let a = 0;
        let b = (1..).find(|&f| q.classify(&pkt(f, 0, 100)) != q.classify(&pkt(a, 0, 100))).unwrap();
        (a, b)
    }

    #[test]
    fn a_new_flow_is_served_before_the_backlogged_ones() {
        let mut q = FqCodel::new(&cfg(), Rng::new(1));
        let (bulk, sparse) = two_flows(&q);
        let mut dropped = Vec::new();
        for i in 0..10 {
            q.enqueue(0, &pkt(bulk, i, 1500), &mut dropped).unwrap();
        }
        // The bulk queue has sent its quantum and gone to the old list.
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, bulk);
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, bulk);
        // A packet of another flow arrives: its queue is new and goes first.
        q.enqueue(0, &pkt(sparse, 0, 100), &mut dropped).unwrap();
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, sparse);
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, bulk);
        assert_eq!(q.new_flow_count, 2);
        assert!(dropped.is_empty());
    }

    #[test]
    fn deficit_round_robin_shares_bytes_by_quantum() {
        // Flow a sends 1500-byte packets, flow b 500-byte ones: per round each may send a
        // quantum (1500 bytes), so b sends three packets for each of a's.
        let mut q = FqCodel::new(&cfg(), Rng::new(3));
        let (a, b) = two_flows(&q);
        let mut dropped = Vec::new();
        for i in 0..30 {
            q.enqueue(0, &pkt(a, i, 1500), &mut dropped).unwrap();
            q.enqueue(0, &pkt(b, i, 500), &mut dropped).unwrap();
        }
        let mut bytes = [0u64; 2];
        for _ in 0..40 {
            let p = q.dequeue(0, &mut dropped).unwrap();
            bytes[usize::from(p.flow == b)] += p.ip_bytes as u64;
        }
        // 40 packets = 10 rounds of (1 of a, 3 of b): 15,000 bytes each.
        assert_eq!(bytes, [15_000, 15_000]);
    }

    #[test]
    fn overflow_drops_from_the_head_of_the_fattest_queue() {
        let mut q = FqCodel::new(&FqCodelConfig { limit_packets: 20, ..cfg() }, Rng::new(5));
        let (fat, thin) = two_flows(&q);
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
        assert_eq!(q.queues[q.classify(&pkt(fat, 0, 1)) as usize].vars.count, 8);
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
        let (bulk, sparse) = two_flows(&q);
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
