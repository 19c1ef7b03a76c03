//! The flow scheduler FQ-CoDel (`fq_codel.rs`, Linux `sch_fq_codel.c`) and FQ-PIE
//! (`fq_pie.rs`, `sch_fq_pie.c`) share: packets hashed by flow into a fixed table of queues,
//! served by deficit round robin with a byte quantum, new flows first (RFC 8290 section 4;
//! both Linux files carry the same scheduler). Each queue carries its discipline's own
//! per-flow state (`V`: CoDel's or PIE's variables), and its packets live in the
//! discipline's one `PacketSlab`.
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

use super::slab::{PacketList, PacketSlab};
use crate::packet::Packet;
use crate::rng::Rng;

/// No queue: the end of a list.
const NIL: u32 = u32::MAX;

/// One flow queue (Linux `struct fq_codel_flow`, `struct fq_pie_flow`).
#[derive(Clone)]
pub struct FlowQueue<V> {
    pub packets: PacketList,
    deficit: i64,
    /// The discipline's per-flow state.
    pub vars: V,
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

pub struct FlowQueues<V> {
    queues: Vec<FlowQueue<V>>,
    new_flows: QueueList,
    old_flows: QueueList,
    quantum: i64,
    perturbation: u64,
    /// Queues that joined the new-flows list (Linux `new_flow_count`).
    pub new_flow_count: u64,
}

impl<V: Clone> FlowQueues<V> {
    /// `flows` queues, each starting with `vars`; the hash's perturbation is `rng`'s next
    /// number.
    pub fn new(flows: u32, quantum_bytes: u32, vars: V, rng: &mut Rng) -> Self {
        let empty = FlowQueue { packets: PacketList::default(), deficit: 0, vars, next: NIL, listed: false };
        FlowQueues {
            queues: vec![empty; flows.max(1) as usize],
            new_flows: QueueList::EMPTY,
            old_flows: QueueList::EMPTY,
            quantum: i64::from(quantum_bytes),
            perturbation: rng.next_u64(),
            new_flow_count: 0,
        }
    }
}

impl<V> FlowQueues<V> {
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

    #[inline]
    pub fn get(&self, q: u32) -> &FlowQueue<V> {
        &self.queues[q as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, q: u32) -> &mut FlowQueue<V> {
        &mut self.queues[q as usize]
    }

    pub fn iter(&self) -> impl Iterator<Item = &FlowQueue<V>> {
        self.queues.iter()
    }

    /// Calls `f` for every packet waiting in any queue (their packets are in `slab`).
    pub fn for_each_packet(&self, slab: &PacketSlab, f: &mut dyn FnMut(&Packet)) {
        for q in &self.queues {
            slab.iter(&q.packets).for_each(&mut *f);
        }
    }

    /// Queue `q` has just taken a packet: if it was on no list it joins the new flows with
    /// one quantum (RFC 8290 section 4.1). Returns whether it did.
    #[inline]
    pub fn activate(&mut self, q: u32) -> bool {
        if self.queues[q as usize].listed {
            return false;
        }
        self.queues[q as usize].deficit = self.quantum;
        self.push_tail(false, q);
        self.new_flow_count += 1;
        true
    }

    /// The next packet by deficit round robin. `serve(q, queue)` takes a packet from queue
    /// `q` (its discipline may drop on the way), None when the queue is empty.
    #[inline]
    pub fn next_packet(&mut self, mut serve: impl FnMut(u32, &mut FlowQueue<V>) -> Option<Packet>) -> Option<Packet> {
        loop {
            let old = self.new_flows.is_empty();
            let q = if old { self.old_flows.head } else { self.new_flows.head };
            if q == NIL {
                return None;
            }
            let queue = &mut self.queues[q as usize];
            if queue.deficit <= 0 {
                queue.deficit += self.quantum;
                self.pop_head(old);
                self.push_tail(true, q);
                continue;
            }
            match serve(q, queue) {
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
}

/// What every discipline on this scheduler must do, checked on each (`fq_codel.rs`,
/// `fq_pie.rs`) through its own enqueue and dequeue.
#[cfg(test)]
pub mod testing {
    use super::super::holding::HoldingDiscipline;
    use crate::packet::testing::data;
    use crate::packet::Packet;

    pub fn pkt(flow: u32, seq: u64, ip_bytes: u32) -> Packet {
        let mut p = data(seq, ip_bytes);
        p.flow = flow;
        p
    }

    /// Two flows in distinct queues (the perturbation decides; pick flows that differ).
    pub fn two_flows(classify: impl Fn(&Packet) -> u32) -> (u32, u32) {
        let b = (1..).find(|&f| classify(&pkt(f, 0, 100)) != classify(&pkt(0, 0, 100))).unwrap();
        (0, b)
    }

    /// Both checks below, each on a new discipline (`make(seed)`), with the scheduler's
    /// count of new flows after the first.
    pub fn check<Q: HoldingDiscipline>(
        make: impl Fn(u64) -> Q,
        classify: impl Fn(&Q, &Packet) -> u32,
        new_flow_count: impl Fn(&Q) -> u64,
    ) {
        let mut q = make(1);
        let flows = two_flows(|p| classify(&q, p));
        a_new_flow_is_served_first(&mut q, flows);
        assert_eq!(new_flow_count(&q), 2);
        let mut q = make(3);
        let flows = two_flows(|p| classify(&q, p));
        the_quantum_shares_bytes(&mut q, flows);
    }

    /// RFC 8290 4.2-4.3: a bulk queue that has spent its quantum goes to the old list; a
    /// packet of another flow makes its queue new, and it is served first.
    pub fn a_new_flow_is_served_first(q: &mut impl HoldingDiscipline, (bulk, sparse): (u32, u32)) {
        let mut dropped = Vec::new();
        for i in 0..10 {
            q.enqueue(0, &pkt(bulk, i, 1500), &mut dropped).unwrap();
        }
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, bulk);
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, bulk);
        q.enqueue(0, &pkt(sparse, 0, 100), &mut dropped).unwrap();
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, sparse);
        assert_eq!(q.dequeue(0, &mut dropped).unwrap().flow, bulk);
        assert!(dropped.is_empty());
    }

    /// RFC 8290 4.2: flow a sends 1500-byte packets, flow b 500-byte ones; per round each
    /// may send a quantum (1500 bytes), so b sends three packets for each of a's: 40 packets
    /// are 10 rounds of (1 of a, 3 of b), 15,000 bytes each.
    pub fn the_quantum_shares_bytes(q: &mut impl HoldingDiscipline, (a, b): (u32, u32)) {
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
        assert_eq!(bytes, [15_000, 15_000]);
    }
}
