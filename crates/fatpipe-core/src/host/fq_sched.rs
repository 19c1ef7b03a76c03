//! The fq qdisc's scheduling among the flows that share a host's interface (Linux
//! `net/sched/sch_fq.c`: `fq_enqueue`, `fq_dequeue`, `fq_check_throttled`), beside the
//! per-flow maxrate in `fq.rs`.
//!
//! fq keeps a queue per flow, its packets ordered by their earliest departure time (EDT,
//! `skb->tstamp`, which TCP's pacing sets), and serves the flows by deficit round robin:
//! - a flow seen for the first time, or again after it was idle for `flow_refill_delay`
//!   (40 ms), joins the *new* list, which is served before the *old* list; a new flow starts
//!   with `initial_quantum` of credit (10 MTU), a returning one with at least `quantum`;
//! - the flow at the head of a list sends while its credit is positive, each packet taking
//!   its length from the credit; a flow out of credit gets `quantum` (2 MTU) more and goes to
//!   the tail of the old list; a new flow that empties goes to the old list once (so that old
//!   flows are not starved by a stream of new ones), an old one that empties leaves;
//! - a flow whose head packet is not due (its EDT, or fq's maxrate spacing, in the future) is
//!   throttled: set aside, out of both lists, until then, when it rejoins the old list;
//! - on enqueue a flow holding `flow_limit` packets (100) refuses more, and a packet whose
//!   EDT is more than `horizon` (10 s) ahead is dropped, or with `horizon_drop` off has its
//!   EDT cut to the horizon.
//!
//! Linux's defaults come from the interface: `quantum` 2 x `psched_mtu` (MTU plus the
//! Ethernet header, 1514 bytes: 3028) and `initial_quantum` 10 x it (15,140). Not modelled:
//! the priority bands of 6.x (`priomap`, band weights: TCP traffic is in one band), the qdisc's
//! total `limit` (10,000 packets; the host's interface queue is the link's), `ce_threshold`,
//! `low_rate_threshold`, the orphan and hash-collision paths.
//!
//! This is the scheduler alone, a value a host's interface can run: every flow's queue is
//! sized once (`flow_limit` packets), so it allocates nothing per packet. The links of the
//! simulation serve their packets first in, first out (`net/link.rs`), so no scenario runs it
//! yet; a queue discipline that reorders (fq_codel, issue 28) brings the link the hook it
//! needs.

use crate::time::Time;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// sch_fq's settings (`tc qdisc add ... fq quantum .. initial_quantum .. flow_limit ..
/// horizon .. horizon_drop`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FqSchedConfig {
    /// Credit a flow gets per round, bytes (default 2 x psched_mtu).
    pub quantum_bytes: u32,
    /// Credit of a flow's first round, bytes (default 10 x psched_mtu).
    pub initial_quantum_bytes: u32,
    /// Packets a flow may hold (default 100).
    pub flow_limit_packets: u32,
    /// How far ahead an EDT may be (default 10 s).
    pub horizon: Time,
    /// Drop packets beyond the horizon (default), else cut their EDT to it.
    pub horizon_drop: bool,
    /// A flow idle this long gets at least a quantum again (`flow_refill_delay`, 40 ms).
    pub refill_delay: Time,
}

/// Why fq refused a packet (`fq_enqueue`'s drop reasons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FqDrop {
    /// The flow holds `flow_limit` packets (`flows_plimit`).
    FlowLimit,
    /// Its EDT is beyond the horizon (`horizon_drops`).
    Horizon,
}

/// What `dequeue` found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeued {
    /// A packet of `len` bytes of flow `flow`.
    Packet {
        flow: u32,
        len: u32,
    },
    /// Nothing is due before this time (fq's watchdog).
    Wait(Time),
    Empty,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// In no list and not throttled (empty).
    Detached,
    New,
    Old,
    Throttled,
}

#[derive(Clone, Debug)]
struct FlowQueue {
    /// (EDT, length), EDTs in order.
    packets: VecDeque<(Time, u32)>,
    credit: i64,
    state: State,
    /// fq's earliest time for the next packet (maxrate spacing; here: the throttle time).
    time_next_packet: Time,
    /// When it became empty (Linux `f->age`); None: never used.
    idle_since: Option<Time>,
}

/// fq's scheduler over `flows` flows, numbered from 0.
#[derive(Clone, Debug)]
pub struct FqSched {
    cfg: FqSchedConfig,
    flows: Vec<FlowQueue>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    /// Throttled flows by the time they are due.
    throttled: BinaryHeap<Reverse<(Time, u32)>>,
    pub horizon_caps: u64,
}

impl FqSched {
    pub fn new(cfg: FqSchedConfig, flows: usize) -> Self {
        let queue = FlowQueue {
            packets: VecDeque::with_capacity(cfg.flow_limit_packets as usize),
            credit: 0,
            state: State::Detached,
            time_next_packet: 0,
            idle_since: None,
        };
        FqSched {
            cfg,
            flows: vec![queue; flows],
            new_flows: VecDeque::with_capacity(flows),
            old_flows: VecDeque::with_capacity(flows),
            throttled: BinaryHeap::with_capacity(flows),
            horizon_caps: 0,
        }
    }

    /// Packets flow `flow` holds.
    pub fn len_packets(&self, flow: u32) -> usize {
        self.flows[flow as usize].packets.len()
    }

    /// A packet of `len` bytes of `flow` arrives at `now` with earliest departure `edt`
    /// (None: now, a packet TCP did not time).
    pub fn enqueue(&mut self, now: Time, flow: u32, len: u32, edt: Option<Time>) -> Result<(), FqDrop> {
        let mut edt = edt.unwrap_or(now).max(now);
        if edt > now + self.cfg.horizon {
            if self.cfg.horizon_drop {
                return Err(FqDrop::Horizon);
            }
            edt = now + self.cfg.horizon;
            self.horizon_caps += 1;
        }
        let f = &mut self.flows[flow as usize];
        if f.packets.len() >= self.cfg.flow_limit_packets as usize {
            return Err(FqDrop::FlowLimit);
        }
        if f.state == State::Detached {
            // fq_classify gives a new flow initial_quantum; a flow back after the refill
            // delay gets at least a quantum.
            match f.idle_since {
                None => f.credit = i64::from(self.cfg.initial_quantum_bytes),
                Some(idle) if now > idle + self.cfg.refill_delay => {
                    f.credit = f.credit.max(i64::from(self.cfg.quantum_bytes))
                }
                Some(_) => {}
            }
            f.state = State::New;
            self.new_flows.push_back(flow);
        }
        // flow_queue_add: in EDT order (TCP's EDTs rise, so almost always at the tail).
        let at = f.packets.iter().rposition(|&(t, _)| t <= edt).map_or(0, |i| i + 1);
        f.packets.insert(at, (edt, len));
        Ok(())
    }

    /// Throttled flows that are due rejoin the old list (`fq_check_throttled`).
    fn check_throttled(&mut self, now: Time) {
        while let Some(&Reverse((t, flow))) = self.throttled.peek() {
            if t > now {
                break;
            }
            self.throttled.pop();
            self.flows[flow as usize].state = State::Old;
            self.old_flows.push_back(flow);
        }
    }

    /// The next packet to send at `now` (`fq_dequeue`).
    pub fn dequeue(&mut self, now: Time) -> Dequeued {
        self.check_throttled(now);
        loop {
            let (new, Some(flow)) =
                (!self.new_flows.is_empty(), self.new_flows.front().or(self.old_flows.front()).copied())
            else {
                return self.throttled.peek().map_or(Dequeued::Empty, |&Reverse((t, _))| Dequeued::Wait(t));
            };
            let list = if new { &mut self.new_flows } else { &mut self.old_flows };
            let f = &mut self.flows[flow as usize];
            if f.credit <= 0 {
                f.credit += i64::from(self.cfg.quantum_bytes);
                list.pop_front();
                f.state = State::Old;
                self.old_flows.push_back(flow);
                continue;
            }
            let Some(&(edt, len)) = f.packets.front() else {
                list.pop_front();
                // A new flow passes through the old list once, so that old flows are not
                // starved by new ones; an old one leaves.
                if new && !self.old_flows.is_empty() {
                    f.state = State::Old;
                    self.old_flows.push_back(flow);
                } else {
                    f.state = State::Detached;
                    f.idle_since = Some(now);
                }
                continue;
            };
            let due = edt.max(f.time_next_packet);
            if now < due {
                list.pop_front();
                f.time_next_packet = due;
                f.state = State::Throttled;
                self.throttled.push(Reverse((due, flow)));
                continue;
            }
            f.packets.pop_front();
            f.credit -= i64::from(len);
            return Dequeued::Packet { flow, len };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{PS_PER_MS, PS_PER_S};

    /// Linux's defaults on a 1500-byte-MTU Ethernet interface: psched_mtu 1514.
    fn linux() -> FqSchedConfig {
        FqSchedConfig {
            quantum_bytes: 2 * 1514,
            initial_quantum_bytes: 10 * 1514,
            flow_limit_packets: 100,
            horizon: 10 * PS_PER_S,
            horizon_drop: true,
            refill_delay: 40 * PS_PER_MS,
        }
    }

    /// The flows of the next `n` packets dequeued at `now`.
    fn order(q: &mut FqSched, now: Time, n: usize) -> Vec<u32> {
        (0..n)
            .map(|_| match q.dequeue(now) {
                Dequeued::Packet { flow, .. } => flow,
                other => panic!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn two_backlogged_flows_take_initial_quantum_then_quantum_in_turn() {
        let mut q = FqSched::new(linux(), 2);
        for flow in 0..2 {
            for _ in 0..40 {
                q.enqueue(0, flow, 1514, None).unwrap();
            }
        }
        // 15,140 bytes of initial credit: 10 frames each, flow 0 first (new list); then
        // rounds of the old list, 3028 bytes: 2 frames each.
        let mut expected = vec![0; 10];
        expected.extend([1; 10]);
        for _ in 0..5 {
            expected.extend([0, 0, 1, 1]);
        }
        assert_eq!(order(&mut q, 0, 40), expected);
    }

    #[test]
    fn deficit_round_robin_shares_bytes_not_packets() {
        // Flow 0 sends 1514-byte frames, flow 1 300-byte ones, both always backlogged: each
        // gets a quantum of bytes a round, and what a flow overdraws it repays the next. Over
        // any stretch the two differ by at most a quantum and a frame (Shreedhar and
        // Varghese, "Efficient Fair Queuing Using Deficit Round Robin", 1995).
        let sizes = [1514, 300];
        let mut q = FqSched::new(linux(), 2);
        for _ in 0..50 {
            for (flow, &len) in sizes.iter().enumerate() {
                q.enqueue(0, flow as u32, len, None).unwrap();
            }
        }
        let mut bytes = [0u64; 2];
        for i in 0..2000 {
            let Dequeued::Packet { flow, len } = q.dequeue(0) else { panic!("backlogged") };
            q.enqueue(0, flow, len, None).unwrap();
            // Past both initial quanta (10 frames of flow 0, 51 packets of flow 1).
            if i >= 61 {
                bytes[flow as usize] += u64::from(len);
            }
        }
        assert!(bytes[0].abs_diff(bytes[1]) <= 3028 + 1514, "bytes {bytes:?}");
        assert!(bytes[1] > 300_000, "{bytes:?}");
    }

    #[test]
    fn a_new_flow_is_served_before_the_old_ones() {
        let mut q = FqSched::new(linux(), 2);
        for _ in 0..50 {
            q.enqueue(0, 0, 1514, None).unwrap();
        }
        assert_eq!(order(&mut q, 0, 12), [0; 12]);
        // Flow 0 is on the old list now; flow 1 arrives and goes first, for its initial quantum.
        for _ in 0..20 {
            q.enqueue(0, 1, 1514, None).unwrap();
        }
        let got = order(&mut q, 0, 12);
        assert_eq!(&got[..10], &[1; 10]);
    }

    #[test]
    fn flow_limit_and_horizon_refuse_packets() {
        let mut q = FqSched::new(linux(), 1);
        for _ in 0..100 {
            q.enqueue(0, 0, 1514, None).unwrap();
        }
        assert_eq!(q.enqueue(0, 0, 1514, None), Err(FqDrop::FlowLimit));
        let mut q = FqSched::new(linux(), 1);
        let now = 5 * PS_PER_S;
        assert_eq!(q.enqueue(now, 0, 1514, Some(now + 10 * PS_PER_S)), Ok(()));
        assert_eq!(q.enqueue(now, 0, 1514, Some(now + 10 * PS_PER_S + 1)), Err(FqDrop::Horizon));
        // horizon_drop off: the EDT is cut to the horizon instead.
        let mut q = FqSched::new(FqSchedConfig { horizon_drop: false, ..linux() }, 1);
        q.enqueue(now, 0, 1514, Some(now + 60 * PS_PER_S)).unwrap();
        assert_eq!(q.horizon_caps, 1);
        assert_eq!(q.dequeue(now), Dequeued::Wait(now + 10 * PS_PER_S));
    }

    #[test]
    fn a_paced_flow_waits_for_its_departure_time_without_holding_up_the_others() {
        let mut q = FqSched::new(linux(), 2);
        let ms = PS_PER_MS;
        q.enqueue(0, 0, 1514, Some(ms)).unwrap();
        q.enqueue(0, 0, 1514, Some(2 * ms)).unwrap();
        q.enqueue(0, 1, 1514, None).unwrap();
        // Flow 0's head is due at 1 ms: flow 1 goes now, then the watchdog's time.
        assert_eq!(order(&mut q, 0, 1), [1]);
        assert_eq!(q.dequeue(0), Dequeued::Wait(ms));
        assert_eq!(q.dequeue(ms), Dequeued::Packet { flow: 0, len: 1514 });
        assert_eq!(q.dequeue(ms), Dequeued::Wait(2 * ms));
        assert_eq!(q.dequeue(2 * ms), Dequeued::Packet { flow: 0, len: 1514 });
        assert_eq!(q.dequeue(2 * ms), Dequeued::Empty);
    }

    #[test]
    fn an_idle_flow_gets_a_quantum_back_only_after_the_refill_delay() {
        let mut q = FqSched::new(linux(), 1);
        // One packet larger than the initial quantum overdraws it; on the way out the flow
        // is given quanta until its credit is positive again, then leaves (empty).
        q.enqueue(0, 0, 20_000, None).unwrap();
        assert_eq!(q.dequeue(0), Dequeued::Packet { flow: 0, len: 20_000 });
        assert_eq!(q.dequeue(0), Dequeued::Empty);
        let left = 15_140 - 20_000 + 2 * 3028;
        assert_eq!(q.flows[0].credit, left);
        // Back within 40 ms: the credit it had; after 40 ms: at least a quantum.
        let mut soon = q.clone();
        soon.enqueue(39 * PS_PER_MS, 0, 1514, None).unwrap();
        assert_eq!(soon.flows[0].credit, left);
        q.enqueue(41 * PS_PER_MS, 0, 1514, None).unwrap();
        assert_eq!(q.flows[0].credit, 3028);
    }
}
