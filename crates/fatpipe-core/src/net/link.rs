//! A simplex link: a queue, a transmitter of `rate_bps`, and a propagation delay.
//!
//! Packets are kept in one FIFO with their arrival times at the far end, from admission to
//! arrival; the engine holds one pending event for the head only, so a link costs one event
//! per packet, and its cost per packet does not depend on how many packets are in flight on
//! it (htsim's pipe). The queue's state at any moment follows from the departure times still
//! ahead (`advance`).
//!
//! A discipline that decides at dequeue (CoDel, FQ-CoDel: `net/queue/scheduled.rs`) holds
//! its waiting packets itself; the FIFO then holds only the packets that started, and the
//! link asks the discipline for the next one each time its transmitter frees (`service`),
//! one `LinkDequeue` event per departure. Drop-tail and RED never take that path.

use super::impairment::{Impairment, ImpairmentSpec, LossCause};
use super::queue::tx_ring::{TxRing, TxRingSpec};
use super::queue::{Admission, Queue, QueueSpec};
use crate::chunked::ChunkedDeque;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{transmission_time, Time};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    /// One-way propagation delay.
    pub delay_ps: Time,
    /// Link-layer bytes added to every IP packet on the wire (Ethernet: 38).
    pub framing_bytes: u32,
    /// Largest IP packet the link carries.
    pub mtu_bytes: u32,
    pub queue: QueueSpec,
    /// Losses applied to packets entering the link, in order (none by default).
    #[serde(default)]
    pub impairments: Vec<ImpairmentSpec>,
    /// A host interface's transmit ring between the queue (the qdisc) and the line
    /// (`net/queue/tx_ring.rs`); None: the queue feeds the line directly.
    pub tx_ring: Option<TxRingSpec>,
}

#[derive(Clone, Debug, Default)]
pub struct LinkStats {
    pub packets_sent: u64,
    /// Bytes on the wire, framing included.
    pub bytes_sent: u64,
    /// Time spent transmitting.
    pub busy_ps: Time,
    /// Packets dropped because the queue was full.
    pub drops_packets: u64,
    pub drops_bytes: u64,
    /// Packets dropped early by an active queue manager (RED on arrival, CoDel's control
    /// law at dequeue).
    pub early_drops_packets: u64,
    /// Packets lost to random loss (Bernoulli, Gilbert-Elliott) on entering the link.
    pub impairment_drops_packets: u64,
    /// Packets lost to scheduled outages on entering the link.
    pub outage_drops_packets: u64,
    /// Packets a token-bucket policer dropped on entering the link.
    pub policer_drops_packets: u64,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
}

/// Packets per chunk of a link's storage: 3.3 KiB, small beside a long link's hundreds of
/// thousands of packets, and little for each of a scenario's many access links.
const WIRE_CHUNK: usize = 32;

/// How many arrivals ahead a link asks the processor to load (`Link::prefetch`): far
/// enough for the load to finish before that packet's turn, near enough to stay cached.
const PREFETCH_AHEAD: usize = 8;

pub struct Link {
    pub spec: LinkSpec,
    queue: Queue,
    /// Every admitted packet that has not reached the far end, in order, with the time it
    /// arrives there: first those serialized and propagating, then the one being
    /// serialized, then those waiting in the queue (the last `waiting`). A FIFO link knows
    /// a packet's departure when it admits it (the end of the serialization before it, plus
    /// its own), so the packet's arrival at the next node is its only event (htsim's pipe
    /// with the queue folded in).
    ///
    /// Kept in chunks of `WIRE_CHUNK` (`chunked.rs`): a link's packets are most of the
    /// memory per segment in flight, and a `VecDeque` keeps twice what it once held.
    wire: ChunkedDeque<(Time, Packet), WIRE_CHUNK>,
    /// How many packets at the back of `wire` have not started serializing.
    waiting: usize,
    /// How many packets at the front of `wire` were handed on (`offer_or_hand_on`): already
    /// offered to the next link, they stay here only while they wait, for the queue's
    /// state, and leave when they start serializing. While there are any, every packet in
    /// `wire` waits (a packet is handed on only when none before it is still to arrive by
    /// event, so they are in front of the rest).
    handed_on: usize,
    /// When the serialization of the last packet that started ends (the link is idle from
    /// then on if nothing waits).
    started_end: Time,
    /// When the serialization of the last admitted packet ends.
    tail_end: Time,
    /// The discipline has been told the transmitter is idle since `started_end`.
    idle_told: bool,
    /// Packets that have left `wire` at the front (its absolute numbering, `started`).
    arrived: u64,
    /// The two last serialization times computed, by wire size: a link carries mostly
    /// full-size segments one way and ACKs the other, and a division costs more than this.
    tx_cache: [(u32, Time); 2],
    /// The impairments with their state, in the order of the spec.
    impairments: Vec<Impairment>,
    /// This link's random numbers, from the scenario seed and the link's name.
    rng: Rng,
    /// When the run's time 0 is on this link's clock: scheduled impairments (outages) count
    /// their windows from here. 0 in a simulation; the emulator sets the moment its run
    /// starts (connections are opened before it), `Time::MAX` until then.
    schedule_origin: Time,
    /// The discipline holds its packets (`Queue::Held`): offers go to `offer_held`.
    held: bool,
    /// A holding link's `LinkDequeue` event is scheduled (at `started_end`, or now).
    dequeue_pending: bool,
    /// Packets a holding discipline dropped other than a refused arrival, with the cause,
    /// counted in `stats` already, until the driver counts them against their flows
    /// (`take_dropped`, at the link's next dequeue event).
    dropped: Vec<(Packet, Admission)>,
    pub stats: LinkStats,
}

/// What a driver schedules after a holding link was served (`Link::service`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Service {
    /// A packet started and is the only one on the wire: its arrival (`LinkArrival`).
    pub arrival: Option<Time>,
    /// The link's next dequeue (`LinkDequeue`).
    pub dequeue_at: Option<Time>,
}

/// What became of a packet offered to a link (`Link::offer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    /// Admitted: it reaches the far end at `arrival`. `head`: it is the only packet on the
    /// link, so the driver schedules its arrival (later packets follow the head,
    /// `pop_arrival`).
    Admitted { arrival: Time, head: bool },
    /// Lost on entering the link (impairment) or refused by the queue; counted in `stats`.
    Dropped,
    /// Admitted and handed on (`offer_or_hand_on`): it reaches the far end at `arrival`
    /// without an event of its own; the caller offers it to the next link at that time.
    HandedOn { arrival: Time },
    /// Taken by a holding discipline: the driver calls `service` (which may start it at
    /// once) and schedules what that says.
    Queued,
}

impl Link {
    pub fn new(spec: LinkSpec, seed: u64) -> Self {
        let mut queue = spec.queue.build(spec.rate_bps, Rng::for_element(seed, &format!("{}/queue", spec.name)));
        if let Some(ring) = &spec.tx_ring {
            queue = Queue::TxRing(Box::new(TxRing::new(ring.clone(), queue)));
        }
        let rng = Rng::for_element(seed, &spec.name);
        let impairments = spec.impairments.iter().map(ImpairmentSpec::build).collect();
        let held = matches!(queue, Queue::Held(_));
        Link {
            held,
            dequeue_pending: false,
            dropped: Vec::with_capacity(if held { 64 } else { 0 }),
            impairments,
            spec,
            queue,
            wire: ChunkedDeque::default(),
            waiting: 0,
            handed_on: 0,
            started_end: 0,
            tail_end: 0,
            idle_told: true,
            arrived: 0,
            tx_cache: [(0, 0); 2],
            rng,
            schedule_origin: 0,
            stats: LinkStats::default(),
        }
    }

    /// A packet enters the link at `now`: an impairment may lose it, the discipline admits
    /// or drops it (RED sees every arrival, even at an idle link); an admitted packet is
    /// serialized after those before it. Every drop is counted in `stats` by cause.
    ///
    /// The packet is taken by reference and copied once, into the link: a `Packet` is 96
    /// bytes, and copies of it through the stack were a third of the simulation's time.
    #[inline]
    pub fn offer(&mut self, now: Time, pkt: &Packet) -> Offered {
        if !self.impairments.is_empty() && self.impaired(now, pkt) {
            return Offered::Dropped;
        }
        if self.held {
            return self.offer_held(now, pkt);
        }
        self.advance(now);
        let idle = self.is_idle(now);
        self.wire.push_back((0, *pkt));
        let (_, pkt) = self.wire.back_mut().expect("just pushed");
        if let Err(why) = self.queue.admit(now, pkt, idle) {
            let ip_bytes = pkt.ip_bytes;
            self.wire.pop_back();
            self.record_drop(ip_bytes, why);
            if idle {
                // ns-2's `Queue::recv` asks for a packet after the refused arrival: the
                // idle period goes on from now.
                self.queue.idle(now);
            }
            return Offered::Dropped;
        }
        let ip_bytes = pkt.ip_bytes;
        let tx = self.tx_time(ip_bytes);
        let end = if idle {
            self.count_start(ip_bytes, now, now + tx);
            now + tx
        } else {
            self.note_queue_length();
            self.waiting += 1;
            self.tail_end + tx
        };
        self.tail_end = end;
        let arrival = end + self.spec.delay_ps;
        self.wire.back_mut().expect("just pushed").0 = arrival;
        Offered::Admitted { arrival, head: self.wire.len() - self.handed_on == 1 }
    }

    /// `offer`, except that a packet admitted at `now` which reaches the far end by
    /// `hand_on_until` and has no packet before it still to arrive by event is handed on
    /// (`Offered::HandedOn`): the caller offers it to the next link at its arrival time at
    /// once, and the link schedules no arrival for it. The link's own state is exactly as
    /// with `offer`: a handed-on packet that has to wait stays in the queue (the discipline,
    /// the statistics and `room_packets` see it) until it starts serializing; one that starts
    /// at once is counted and not stored at all. Whether handing on is exact is the caller's
    /// to judge (`sim/hand_on.rs`); an emulator never does it. `pkt` is the caller's copy:
    /// the discipline may mark it (ECN), and a handed-on packet goes on marked.
    #[inline]
    pub fn offer_or_hand_on(&mut self, now: Time, pkt: &mut Packet, hand_on_until: Time) -> Offered {
        if !self.impairments.is_empty() && self.impaired(now, pkt) {
            return Offered::Dropped;
        }
        if self.held {
            return self.offer_held(now, pkt);
        }
        self.advance(now);
        let idle = self.is_idle(now);
        if let Err(why) = self.queue.admit(now, pkt, idle) {
            self.record_drop(pkt.ip_bytes, why);
            if idle {
                self.queue.idle(now);
            }
            return Offered::Dropped;
        }
        let tx = self.tx_time(pkt.ip_bytes);
        let end = if idle { now + tx } else { self.tail_end + tx };
        let arrival = end + self.spec.delay_ps;
        let hand_on = arrival <= hand_on_until && self.wire.len() == self.handed_on;
        self.tail_end = end;
        if idle {
            self.count_start(pkt.ip_bytes, now, end);
            if hand_on {
                // Started and handed on: nothing is left for the link to track but counts.
                self.arrived += 1;
                return Offered::HandedOn { arrival };
            }
        } else {
            self.note_queue_length();
            self.waiting += 1;
        }
        self.wire.push_back((arrival, *pkt));
        if hand_on {
            self.handed_on += 1;
            return Offered::HandedOn { arrival };
        }
        Offered::Admitted { arrival, head: self.wire.len() - self.handed_on == 1 }
    }

    /// A holding discipline takes (or refuses) `pkt` at `now`. The packet waits in it even
    /// when the transmitter is free: `service` starts it then.
    #[inline(never)]
    fn offer_held(&mut self, now: Time, pkt: &Packet) -> Offered {
        self.advance(now);
        let waits = self.dequeue_pending || self.started_end > now;
        let Queue::Held(q) = &mut self.queue else { unreachable!("a holding link") };
        let before = self.dropped.len();
        let result = q.enqueue(now, pkt, &mut self.dropped);
        self.record_dropped_since(before);
        if let Err(why) = result {
            self.record_drop(pkt.ip_bytes, why);
            return Offered::Dropped;
        }
        if waits {
            self.note_queue_length();
        }
        Offered::Queued
    }

    /// A holding link at `now`: if the transmitter is free and no dequeue event is due, the
    /// discipline hands it its next packet (dropping or marking on the way), which starts
    /// at once; while packets wait (or drops wait to be counted against their flows), the
    /// next dequeue is due when that serialization ends. The caller schedules what it says.
    pub fn service(&mut self, now: Time) -> Service {
        let mut out = Service::default();
        if self.dequeue_pending {
            return out;
        }
        if self.started_end <= now {
            let Queue::Held(q) = &mut self.queue else { unreachable!("service on a holding link") };
            let before = self.dropped.len();
            let next = q.dequeue(now, &mut self.dropped);
            self.record_dropped_since(before);
            if let Some(pkt) = next {
                let end = now + self.tx_time(pkt.ip_bytes);
                self.count_start(pkt.ip_bytes, now, end);
                self.tail_end = end;
                let arrival = end + self.spec.delay_ps;
                if self.wire.is_empty() {
                    out.arrival = Some(arrival);
                }
                self.wire.push_back((arrival, pkt));
            }
        }
        if self.queue.len_packets() > 0 || !self.dropped.is_empty() {
            self.dequeue_pending = true;
            // A shaper's head may wait for tokens beyond the line's end (`ready_at`).
            let ready = self.queue.held().map_or(0, |q| q.ready_at());
            out.dequeue_at = Some(self.started_end.max(now).max(ready));
        }
        out
    }

    /// A holding link's `LinkDequeue` event at `now`.
    pub fn dequeue_due(&mut self, now: Time) -> Service {
        self.dequeue_pending = false;
        self.service(now)
    }

    /// Hands the packets the holding discipline dropped since last time to `f` (the
    /// driver's per-flow loss accounting); their link counters are kept already.
    pub fn take_dropped(&mut self, mut f: impl FnMut(&Packet)) {
        for (pkt, _) in self.dropped.drain(..) {
            f(&pkt);
        }
    }

    /// Whether a holding discipline dropped packets not yet handed to `take_dropped`.
    #[inline]
    pub fn has_dropped(&self) -> bool {
        !self.dropped.is_empty()
    }

    fn record_dropped_since(&mut self, before: usize) {
        for i in before..self.dropped.len() {
            let (pkt, why) = self.dropped[i];
            self.record_drop(pkt.ip_bytes, why);
        }
    }

    /// The packet at the head of the wire reaches the far end at `now` (the `arrival` time
    /// it was given); `next_arrival` tells when the next one does.
    #[inline]
    pub fn pop_arrival(&mut self, now: Time) -> Packet {
        self.advance(now);
        debug_assert_eq!(self.handed_on, 0, "handed-on packets before an arrival have left");
        self.arrived += 1;
        self.prefetch(PREFETCH_AHEAD);
        self.wire.pop_front().expect("arrival event without packet").1
    }

    /// Asks the processor to start loading `wire[index]`, a packet that arrives soon. A
    /// packet is read when it arrives, up to a propagation delay after it was written (50 ms
    /// of a 10 Gb/s bottleneck is 40,000 packets, 4 MB): those loads missed every cache and
    /// were the largest stalls of the 100-flow RED run (docs/benchmarks.md, issue 16, third
    /// round). Arrivals on a link come in order, so the next few are known. (Prefetching
    /// the next packets to start serializing as well gained nothing: they waited in the
    /// queue for a shorter time and were still cached.)
    #[inline(always)]
    fn prefetch(&self, index: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(entry) = self.wire.get(index) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let at = entry as *const (Time, Packet) as *const i8;
            // SAFETY: a prefetch is only a hint (it never faults); the addresses are inside
            // (the first and last byte) or one line into the entry.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(at);
                _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(64));
                _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(std::mem::size_of::<(Time, Packet)>() - 1));
            }
        }
    }

    /// The packet at the head of the wire (the next to arrive), to read or to offer to the
    /// next link without copying it out first (`Simulation` forwards so; then `drop_head`).
    #[inline]
    pub fn head(&self) -> &Packet {
        &self.wire.get(self.handed_on).expect("arrival event without packet").1
    }

    /// The head packet has arrived at `now` and was handed on.
    #[inline]
    pub fn drop_head(&mut self, now: Time) {
        self.advance(now);
        debug_assert_eq!(self.handed_on, 0, "handed-on packets before an arrival have left");
        self.arrived += 1;
        self.prefetch(PREFETCH_AHEAD);
        self.wire.pop_front();
    }

    /// When the packet now at the head of the wire arrives.
    #[inline]
    pub fn next_arrival(&self) -> Option<Time> {
        self.wire.get(self.handed_on).map(|&(t, _)| t)
    }

    /// When the last packet still to arrive by event arrives (the one a packet admitted now
    /// would follow).
    #[inline]
    pub fn last_evented_arrival(&self) -> Option<Time> {
        (self.wire.len() > self.handed_on).then(|| self.wire.back().expect("not empty").0)
    }

    /// When the packet behind the head arrives.
    #[inline]
    pub fn second_arrival(&self) -> Option<Time> {
        self.wire.get(self.handed_on + 1).map(|&(t, _)| t)
    }

    /// Brings the queue up to `now`: every waiting packet whose turn has come starts
    /// serializing at the end of the one before it, in order (the discipline and the
    /// counters see each at its own time), and the discipline hears when the transmitter
    /// fell idle. Nothing here is an event: a packet's start is the previous one's end.
    /// When several things happen at one instant, serializations that end then have ended
    /// and the packets they free have started before an arrival at that instant is offered.
    #[inline(always)]
    pub fn advance(&mut self, now: Time) {
        if self.started_end <= now && (self.waiting > 0 || !self.idle_told) {
            self.advance_to(now);
        }
    }

    fn advance_to(&mut self, now: Time) {
        while self.waiting > 0 && self.started_end <= now {
            let (arrival, ref pkt) = self.wire[self.wire.len() - self.waiting];
            let (start, ip_bytes) = (self.started_end, pkt.ip_bytes);
            self.queue.depart(start, ip_bytes);
            self.count_start(ip_bytes, start, arrival - self.spec.delay_ps);
            self.waiting -= 1;
            if self.handed_on > 0 {
                // A handed-on packet (then every packet waits: this one is the front) has
                // started: the next link has it already.
                debug_assert_eq!(self.waiting + 1, self.wire.len());
                self.wire.pop_front();
                self.handed_on -= 1;
                self.arrived += 1;
            }
        }
        if !self.idle_told && self.waiting == 0 && self.started_end <= now {
            self.queue.idle(self.started_end);
            self.idle_told = true;
        }
    }

    /// Whether the transmitter is free at `now` (after `advance(now)`).
    #[inline]
    fn is_idle(&self, now: Time) -> bool {
        self.waiting == 0 && self.started_end <= now
    }

    /// A packet starts serializing at `start`; it ends at `end`.
    #[inline]
    fn count_start(&mut self, ip_bytes: u32, start: Time, end: Time) {
        let wire_bytes = (ip_bytes + self.spec.framing_bytes) as u64;
        self.stats.busy_ps += end - start;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += wire_bytes;
        self.started_end = end;
        self.idle_told = false;
    }

    /// When the serialization under way ends (when the next waiting packet starts, or the
    /// link falls idle): the time a driver whose captures or refused senders watch the
    /// link's starts wakes up next. None when the link is idle at `now`.
    pub fn busy_until(&self, now: Time) -> Option<Time> {
        if self.dequeue_pending {
            return Some(self.started_end.max(now));
        }
        (self.started_end > now || self.waiting > 0).then_some(self.started_end)
    }

    /// Packets that have started serializing so far, counted from the link's first
    /// (`for_each_started` numbers them so).
    pub fn started(&self) -> u64 {
        self.arrived + (self.wire.len() - self.waiting) as u64
    }

    /// Calls `f(start time, packet)` for every packet that started serializing after the
    /// `*seen`-th, up to `now`, and moves `*seen` past them: a capture on the link sees what
    /// it starts to transmit. The caller looks at least as often as packets start (each
    /// start is still on the wire then).
    pub fn for_each_started(&mut self, now: Time, seen: &mut u64, mut f: impl FnMut(Time, &Packet)) {
        self.advance(now);
        let started = self.started();
        debug_assert!(*seen >= self.arrived, "a started packet left the link unseen");
        for i in (*seen).max(self.arrived)..started {
            let (arrival, pkt) = self.wire[(i - self.arrived) as usize];
            let end = arrival - self.spec.delay_ps;
            f(end - self.tx_time(pkt.ip_bytes), &pkt);
        }
        *seen = started;
    }

    /// The queue discipline, to read its length and counters (up to date after
    /// `advance(now)`).
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// Packets in the link: waiting, being serialized and propagating (the handed-on ones
    /// waiting here are counted on the link they were handed on to); a holding
    /// discipline's waiting packets are `for_each_held`'s.
    pub fn packets(&self) -> impl Iterator<Item = &Packet> + '_ {
        self.wire.iter().skip(self.handed_on).map(|(_, p)| p)
    }

    /// Calls `f` for every packet a holding discipline keeps waiting (none for others).
    pub fn for_each_held(&self, f: &mut dyn FnMut(&Packet)) {
        if let Some(q) = self.queue.held() {
            q.for_each_packet(f);
        }
    }

    /// Sets the run's time 0 on this link's clock (see `schedule_origin`).
    pub fn set_schedule_origin(&mut self, origin: Time) {
        self.schedule_origin = origin;
    }

    /// Whether a token-bucket policer is among the impairments.
    pub fn has_policer(&self) -> bool {
        self.impairments.iter().any(|i| matches!(i, Impairment::Policer(_)))
    }

    /// When the last packet admitted finishes serializing, or `now` if the line is free by
    /// then: a packet handed to the interface now starts there (FIFO), which is what TCP
    /// Small Queues' accounting of a host's interface needs (`host/tsq.rs`).
    pub fn tail_end(&self, now: Time) -> Time {
        self.tail_end.max(now)
    }

    /// Whether an impairment takes the packet entering the link now (and counts it).
    #[inline]
    fn impaired(&mut self, now: Time, pkt: &Packet) -> bool {
        let run_time = now.checked_sub(self.schedule_origin);
        for imp in &mut self.impairments {
            match imp.drops(run_time, pkt, &mut self.rng) {
                Some(LossCause::Random) => self.stats.impairment_drops_packets += 1,
                Some(LossCause::Outage) => self.stats.outage_drops_packets += 1,
                Some(LossCause::Policer) => self.stats.policer_drops_packets += 1,
                None => continue,
            }
            return true;
        }
        false
    }

    /// Serialization time of an IP packet of `ip_bytes` on this link.
    #[inline]
    pub fn tx_time(&mut self, ip_bytes: u32) -> Time {
        let wire_bytes = ip_bytes + self.spec.framing_bytes;
        if self.tx_cache[0].0 == wire_bytes {
            return self.tx_cache[0].1;
        }
        if self.tx_cache[1].0 != wire_bytes {
            self.tx_cache[1] = (wire_bytes, transmission_time(wire_bytes as u64, self.spec.rate_bps));
        }
        self.tx_cache.swap(0, 1);
        self.tx_cache[0].1
    }

    /// Time spent transmitting up to `now`: `busy_ps` counts a packet's whole serialization
    /// when it starts, so the part of the current one still to come is taken off (at 9600
    /// bit/s one 1538-byte frame lasts 1.28 s: a 1 s run would show 128 % utilization).
    /// Call `advance(now)` first.
    pub fn busy_ps_until(&self, now: Time) -> Time {
        self.stats.busy_ps - self.started_end.saturating_sub(now).min(self.stats.busy_ps)
    }

    /// How many packets of `ip_bytes` the link takes at `now` without a drop: the queue's
    /// room, plus the one an idle link starts sending at once without queueing it (unless
    /// the queue counts that one too: a transmit ring).
    #[inline]
    pub fn room_packets(&mut self, now: Time, ip_bytes: u32) -> u64 {
        self.advance(now);
        let room = self.queue.room_packets(ip_bytes);
        let idle_extra =
            self.is_idle(now) && !self.dequeue_pending && room > 0 && !self.queue.holds_packet_in_service();
        room.saturating_add(u64::from(idle_extra))
    }

    #[inline]
    fn record_drop(&mut self, ip_bytes: u32, why: Admission) {
        match why {
            Admission::Overflow => {
                self.stats.drops_packets += 1;
                self.stats.drops_bytes += ip_bytes as u64;
            }
            Admission::EarlyDrop => self.stats.early_drops_packets += 1,
        }
    }

    #[inline]
    fn note_queue_length(&mut self) {
        let p = self.queue.len_packets() as u64;
        let b = self.queue.len_bytes();
        if p > self.stats.max_queue_packets {
            self.stats.max_queue_packets = p;
        }
        if b > self.stats.max_queue_bytes {
            self.stats.max_queue_bytes = b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::droptail::DropTailConfig;

    fn link(delay_ps: Time, limit_packets: u64) -> Link {
        let queue = QueueSpec::Droptail(DropTailConfig {
            limit_packets: Some(limit_packets),
            limit_bytes: None,
            cell_bytes: None,
            limit_cells: None,
            mark_threshold_packets: None,
        });
        let spec = LinkSpec {
            name: "l".into(),
            from: 0,
            to: 1,
            rate_bps: 100_000_000,
            delay_ps,
            framing_bytes: 38,
            mtu_bytes: 1500,
            queue,
            impairments: vec![],
            tx_ring: None,
        };
        Link::new(spec, 1)
    }

    fn pkt(seq: u64) -> Packet {
        crate::packet::testing::data(seq, 1500)
    }

    #[test]
    fn a_packet_goes_through_serialization_and_propagation_unchanged() {
        // 1538 wire bytes at 100 Mb/s: 123,040 ns.
        let tx = 123_040_000;
        let delay = 5_000_000;
        let mut l = link(delay, 1);
        assert_eq!(l.offer(0, &pkt(7)), Offered::Admitted { arrival: tx + delay, head: true });
        assert_eq!(l.offer(10, &pkt(8)), Offered::Admitted { arrival: 2 * tx + delay, head: false });
        assert_eq!(l.offer(20, &pkt(9)), Offered::Dropped, "a one-packet queue is full");
        assert_eq!(l.stats.drops_packets, 1);
        assert_eq!(l.pop_arrival(tx + delay), pkt(7));
        assert_eq!(l.next_arrival(), Some(2 * tx + delay));
        assert_eq!(l.pop_arrival(2 * tx + delay), pkt(8));
        assert_eq!(l.next_arrival(), None);
        assert_eq!(l.stats.packets_sent, 2);
        assert_eq!(l.stats.busy_ps, 2 * tx);
    }

    #[test]
    fn the_queue_empties_as_departure_times_pass() {
        let tx = 123_040_000;
        let mut l = link(1_000_000_000, 2);
        for i in 0..3 {
            assert!(matches!(l.offer(0, &pkt(i)), Offered::Admitted { .. }));
        }
        assert_eq!(l.queue().len_packets(), 2, "one serializing, two waiting");
        assert_eq!(l.room_packets(tx - 1, 1500), 0);
        // At tx the first is done and the second starts: one place is free at that instant.
        assert_eq!(l.room_packets(tx, 1500), 1);
        assert_eq!(l.stats.packets_sent, 2);
        assert!(matches!(l.offer(tx, &pkt(3)), Offered::Admitted { .. }));
        assert!(matches!(l.offer(tx, &pkt(4)), Offered::Dropped));
        // Long after, all four have left; an idle link takes one more than its queue.
        assert_eq!(l.room_packets(10 * tx, 1500), 3);
        assert_eq!(l.stats.packets_sent, 4);
        assert_eq!(l.busy_until(10 * tx), None);
        assert_eq!(l.busy_ps_until(10 * tx), 4 * tx);
    }

    #[test]
    fn starts_are_seen_in_order_with_their_times() {
        let tx = 123_040_000;
        let mut l = link(1_000_000_000, 10);
        for i in 0..3 {
            l.offer(5, &pkt(i));
        }
        let mut seen = 0;
        let mut starts = vec![];
        l.for_each_started(5, &mut seen, |t, p| starts.push((t, p.seq)));
        assert_eq!(starts, vec![(5, 0)]);
        assert_eq!(l.busy_until(5), Some(5 + tx));
        l.for_each_started(5 + 2 * tx, &mut seen, |t, p| starts.push((t, p.seq)));
        assert_eq!(starts, vec![(5, 0), (5 + tx, 1), (5 + 2 * tx, 2)]);
        assert_eq!(seen, 3);
    }

    #[test]
    fn red_hears_when_the_transmitter_fell_idle() {
        use crate::net::queue::red::RedConfig;
        let red = RedConfig {
            limit_packets: Some(100),
            min_th_packets: Some(50.0),
            max_th_packets: Some(90.0),
            max_p: 0.1,
            w_q: Some(0.5),
            gentle: false,
            byte_mode: false,
            mean_packet_bytes: 1538,
            wait: false,
            target_delay_ps: 5_000_000_000,
            ecn: false,
            cell_bytes: None,
            limit_cells: None,
        };
        let mut l = link(0, 10);
        l.queue = QueueSpec::Red(red).build(l.spec.rate_bps, Rng::new(1));
        let tx = 123_040_000;
        for i in 0..3 {
            // The queue each finds: 0 (the first is serialized at once), 0, 1.
            l.offer(0, &pkt(i));
        }
        let avg = |l: &Link| match l.queue() {
            Queue::Red(r) => r.avg,
            _ => unreachable!("a RED queue"),
        };
        assert_eq!(avg(&l), 0.5);
        // The link is idle from 3 tx; an arrival at 13 tx finds the average decayed over
        // ten typical packet times, then updated with an empty queue.
        l.offer(13 * tx, &pkt(9));
        assert!((avg(&l) - 0.5 * 0.5f64.powi(10) * 0.5).abs() < 1e-12, "{}", avg(&l));
    }

    #[test]
    fn outage_windows_count_from_the_schedule_origin() {
        let mut l = link(0, 10);
        l.spec.impairments.clear();
        l.impairments =
            vec![ImpairmentSpec::Outage(crate::net::impairment::outage::OutageConfig { windows_ps: vec![(100, 200)] })
                .build()];
        l.set_schedule_origin(Time::MAX);
        assert!(!matches!(l.offer(150, &pkt(0)), Offered::Dropped), "before the run starts, no outage");
        l.set_schedule_origin(1_000);
        assert!(!matches!(l.offer(1_099, &pkt(1)), Offered::Dropped));
        assert_eq!(l.offer(1_100, &pkt(2)), Offered::Dropped, "run time 100: in the window");
        assert_eq!(l.stats.outage_drops_packets, 1);
    }

    #[test]
    fn a_handed_on_packet_counts_in_the_queue_until_it_starts() {
        let tx = 123_040_000;
        let delay = 5_000_000;
        let mut l = link(delay, 10);
        // Idle: it starts at once and is not kept; the second waits behind it and is kept.
        assert_eq!(l.offer_or_hand_on(0, &mut pkt(1), Time::MAX), Offered::HandedOn { arrival: tx + delay });
        assert_eq!(l.offer_or_hand_on(0, &mut pkt(2), Time::MAX), Offered::HandedOn { arrival: 2 * tx + delay });
        assert_eq!(l.queue().len_packets(), 1, "the second waits in the queue");
        assert_eq!(l.packets().count(), 0, "both are on the next link already");
        // The third arrives too late to be handed on: an event, the only one on the link.
        assert_eq!(
            l.offer_or_hand_on(0, &mut pkt(3), 2 * tx + delay),
            Offered::Admitted { arrival: 3 * tx + delay, head: true }
        );
        assert_eq!(l.next_arrival(), Some(3 * tx + delay));
        assert_eq!(l.started(), 1);
        l.advance(tx);
        assert_eq!((l.started(), l.queue().len_packets()), (2, 1), "the second started and left");
        assert_eq!(
            l.offer_or_hand_on(tx, &mut pkt(4), Time::MAX),
            Offered::Admitted { arrival: 4 * tx + delay, head: false }
        );
        assert_eq!(l.pop_arrival(3 * tx + delay), pkt(3));
        assert_eq!(l.stats.packets_sent, 4);
        assert_eq!(l.stats.busy_ps, 4 * tx);
    }

    #[test]
    fn a_holding_link_starts_each_packet_when_the_transmitter_frees() {
        use crate::net::queue::codel::CodelConfig;
        let (tx, delay) = (123_040_000, 5_000_000);
        let mut l = link(delay, 10);
        let cfg = CodelConfig {
            limit_packets: 2,
            target_ps: 5_000_000_000,
            interval_ps: 100_000_000_000,
            mtu_bytes: 1500,
            ecn: false,
            ce_threshold_ps: None,
        };
        l = Link::new(LinkSpec { queue: QueueSpec::Codel(cfg), ..l.spec.clone() }, 1);
        // Idle: the packet is queued, then served at once; its arrival is the only one.
        assert_eq!(l.offer(0, &pkt(1)), Offered::Queued);
        assert_eq!(l.service(0), Service { arrival: Some(tx + delay), dequeue_at: None });
        // Busy: the next two wait, one dequeue event at the end of the serialization.
        assert_eq!(l.offer(10, &pkt(2)), Offered::Queued);
        assert_eq!(l.service(10), Service { arrival: None, dequeue_at: Some(tx) });
        assert_eq!(l.offer(20, &pkt(3)), Offered::Queued);
        assert_eq!(l.service(20), Service::default(), "the dequeue event is pending already");
        assert_eq!(l.offer(30, &pkt(4)), Offered::Dropped, "limit 2");
        assert_eq!((l.stats.drops_packets, l.queue().len_packets(), l.room_packets(30, 1500)), (1, 2, 0));
        assert_eq!(l.busy_until(30), Some(tx));
        // The event: packet 2 starts at tx (behind packet 1 on the wire), the next is due at 2 tx.
        assert_eq!(l.dequeue_due(tx), Service { arrival: None, dequeue_at: Some(2 * tx) });
        assert_eq!(l.pop_arrival(tx + delay), pkt(1));
        assert_eq!(l.next_arrival(), Some(2 * tx + delay));
        assert_eq!(l.dequeue_due(2 * tx), Service { arrival: None, dequeue_at: None });
        assert_eq!(l.started(), 3);
        assert_eq!(l.stats.max_queue_packets, 2);
        assert_eq!(l.stats.busy_ps, 3 * tx);
    }

    #[test]
    fn a_link_without_delay_delivers_at_the_end_of_serialization() {
        let mut l = link(0, 10);
        let Offered::Admitted { arrival, head: true } = l.offer(0, &pkt(1)) else { panic!("idle link") };
        assert_eq!(arrival, l.tx_time(1500));
        assert_eq!(l.pop_arrival(arrival), pkt(1));
        assert_eq!(l.next_arrival(), None);
    }
}
