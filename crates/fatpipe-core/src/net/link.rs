//! A simplex link: a queue, a transmitter of `rate_bps`, and a propagation delay.
//!
//! Packets in propagation are kept in a FIFO with their arrival times; the engine holds one
//! pending event for the head only, so a link's cost per packet does not depend on how many
//! packets are in flight on it (htsim's pipe).

use super::impairment::{Impairment, ImpairmentSpec, LossCause};
use super::queue::tx_ring::{TxRing, TxRingSpec};
use super::queue::{QueueDiscipline, QueueSpec};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{transmission_time, Time};
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

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
    #[serde(default)]
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
    /// Packets dropped early by an active queue manager (RED).
    pub early_drops_packets: u64,
    /// Packets lost to random loss (Bernoulli, Gilbert-Elliott) on entering the link.
    pub impairment_drops_packets: u64,
    /// Packets lost to scheduled outages on entering the link.
    pub outage_drops_packets: u64,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
}

pub struct Link {
    pub spec: LinkSpec,
    queue: Box<dyn QueueDiscipline>,
    /// The packet being serialized.
    transmitting: Option<Packet>,
    /// When the packet being serialized is done (the last one's end when idle).
    tx_end_ps: Time,
    /// Packets propagating, with the time each reaches the far end (FIFO: a link does not
    /// reorder).
    propagating: VecDeque<(Time, Packet)>,
    /// The impairments with their state, in the order of the spec.
    impairments: Vec<Impairment>,
    /// This link's random numbers, from the scenario seed and the link's name.
    rng: Rng,
    /// When the run's time 0 is on this link's clock: scheduled impairments (outages) count
    /// their windows from here. 0 in a simulation; the emulator sets the moment its run
    /// starts (connections are opened before it), `Time::MAX` until then.
    schedule_origin: Time,
    pub stats: LinkStats,
}

/// What became of a packet offered to a link (`Link::offer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    /// The link was idle and started serializing it; `LinkTxDone` is due at `done_at`.
    Started { done_at: Time },
    /// It waits in the queue.
    Queued,
    /// Lost on entering the link (impairment) or refused by the queue; counted in `stats`.
    Dropped(Packet),
}

/// The end of a serialization (`Link::tx_done`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxDone {
    /// When the next packet, taken from the queue, will be serialized (None: the link is idle).
    pub next_done_at: Option<Time>,
    pub departed: Departed,
}

/// Where the packet that was serialized went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Departed {
    /// A link without delay delivers it at once to the far node.
    Arrived(Packet),
    /// Propagating until `arrival`; `head` when it is the only packet on the wire, so the
    /// driver schedules its arrival (later packets follow the head, `pop_arrival`).
    Propagating { arrival: Time, head: bool },
}

impl Link {
    pub fn new(spec: LinkSpec, seed: u64) -> Self {
        let mut queue = spec.queue.build(spec.rate_bps, Rng::for_element(seed, &format!("{}/queue", spec.name)));
        if let Some(ring) = &spec.tx_ring {
            queue = Box::new(TxRing::new(ring.clone(), queue));
        }
        let rng = Rng::for_element(seed, &spec.name);
        let impairments = spec.impairments.iter().map(ImpairmentSpec::build).collect();
        Link {
            impairments,
            spec,
            queue,
            transmitting: None,
            tx_end_ps: 0,
            propagating: VecDeque::with_capacity(1024),
            rng,
            schedule_origin: 0,
            stats: LinkStats::default(),
        }
    }

    /// A packet enters the link at `now`: an impairment may lose it; an idle link starts
    /// serializing it (its discipline still sees the arrival: RED must); a busy one offers it
    /// to the queue. Every drop is counted in `stats` by cause.
    #[inline]
    pub fn offer(&mut self, now: Time, pkt: Packet) -> Offered {
        if self.impaired(now, &pkt) {
            return Offered::Dropped(pkt);
        }
        if self.transmitting.is_none() {
            match self.queue.on_idle_arrival(now, pkt) {
                Ok(next) => Offered::Started { done_at: self.start_tx(now, next) },
                Err((dropped, why)) => {
                    self.record_drop(&dropped, why);
                    Offered::Dropped(dropped)
                }
            }
        } else {
            match self.queue.enqueue(now, pkt) {
                Ok(()) => {
                    self.note_queue_length();
                    Offered::Queued
                }
                Err((dropped, why)) => {
                    self.record_drop(&dropped, why);
                    Offered::Dropped(dropped)
                }
            }
        }
    }

    /// The packet being serialized is done at `now` (the `done_at` this link gave): the link
    /// starts on the next queued packet and sends this one on its way.
    #[inline]
    pub fn tx_done(&mut self, now: Time) -> TxDone {
        let pkt = self.transmitting.take().expect("tx done without packet");
        let next_done_at = self.queue.dequeue(now).map(|next| self.start_tx(now, next));
        let departed = if self.spec.delay_ps == 0 {
            Departed::Arrived(pkt)
        } else {
            let arrival = now + self.spec.delay_ps;
            self.propagating.push_back((arrival, pkt));
            Departed::Propagating { arrival, head: self.propagating.len() == 1 }
        };
        TxDone { next_done_at, departed }
    }

    /// The packet at the head of the wire reaches the far end (at the `arrival` time it was
    /// given); returns it and when the next one arrives.
    #[inline]
    pub fn pop_arrival(&mut self) -> (Packet, Option<Time>) {
        let (_, pkt) = self.propagating.pop_front().expect("arrival event without packet");
        (pkt, self.propagating.front().map(|&(t, _)| t))
    }

    /// The packet being serialized (what a capture on the link sees start).
    #[inline]
    pub fn transmitting(&self) -> Option<&Packet> {
        self.transmitting.as_ref()
    }

    /// The queue discipline, to read its length and counters.
    pub fn queue(&self) -> &dyn QueueDiscipline {
        self.queue.as_ref()
    }

    /// Packets on the wire (serialized, not yet arrived).
    pub fn propagating_packets(&self) -> impl Iterator<Item = &Packet> + '_ {
        self.propagating.iter().map(|(_, p)| p)
    }

    /// Sets the run's time 0 on this link's clock (see `schedule_origin`).
    pub fn set_schedule_origin(&mut self, origin: Time) {
        self.schedule_origin = origin;
    }

    /// Whether an impairment takes the packet entering the link now (and counts it).
    #[inline]
    fn impaired(&mut self, now: Time, pkt: &Packet) -> bool {
        let run_time = now.checked_sub(self.schedule_origin);
        for imp in &mut self.impairments {
            match imp.drops(run_time, pkt, &mut self.rng) {
                Some(LossCause::Random) => self.stats.impairment_drops_packets += 1,
                Some(LossCause::Outage) => self.stats.outage_drops_packets += 1,
                None => continue,
            }
            return true;
        }
        false
    }

    /// Serialization time of `pkt` on this link.
    #[inline]
    pub fn tx_time(&self, pkt: &Packet) -> Time {
        transmission_time((pkt.ip_bytes + self.spec.framing_bytes) as u64, self.spec.rate_bps)
    }

    /// Starts serializing `pkt`; returns when it will be done.
    #[inline]
    fn start_tx(&mut self, now: Time, pkt: Packet) -> Time {
        let tx = self.tx_time(&pkt);
        self.stats.busy_ps += tx;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += (pkt.ip_bytes + self.spec.framing_bytes) as u64;
        self.transmitting = Some(pkt);
        self.tx_end_ps = now + tx;
        self.tx_end_ps
    }

    /// Time spent transmitting up to `now`: `busy_ps` counts a packet's whole serialization
    /// when it starts, so the part of the current one still to come is taken off (at 9600
    /// bit/s one 1538-byte frame lasts 1.28 s: a 1 s run would show 128 % utilization).
    pub fn busy_ps_until(&self, now: Time) -> Time {
        self.stats.busy_ps - self.tx_end_ps.saturating_sub(now).min(self.stats.busy_ps)
    }

    /// How many packets of `ip_bytes` the link takes now without a drop: the queue's room,
    /// plus the one an idle link starts sending at once without queueing it (unless the
    /// queue counts that one too: a transmit ring).
    #[inline]
    pub fn room_packets(&self, ip_bytes: u32) -> u64 {
        let room = self.queue.room_packets(ip_bytes);
        let idle_extra = self.transmitting.is_none() && room > 0 && !self.queue.holds_packet_in_service();
        room.saturating_add(u64::from(idle_extra))
    }

    #[inline]
    fn record_drop(&mut self, pkt: &Packet, why: super::queue::Admission) {
        match why {
            super::queue::Admission::Overflow => {
                self.stats.drops_packets += 1;
                self.stats.drops_bytes += pkt.ip_bytes as u64;
            }
            super::queue::Admission::EarlyDrop => self.stats.early_drops_packets += 1,
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
        let mut l = link(5_000_000, 1);
        assert_eq!(l.offer(0, pkt(7)), Offered::Started { done_at: tx });
        assert_eq!(l.offer(10, pkt(8)), Offered::Queued);
        assert_eq!(l.offer(20, pkt(9)), Offered::Dropped(pkt(9)), "a one-packet queue is full");
        assert_eq!(l.stats.drops_packets, 1);
        let done = l.tx_done(tx);
        assert_eq!(done.next_done_at, Some(2 * tx));
        assert_eq!(done.departed, Departed::Propagating { arrival: tx + 5_000_000, head: true });
        let done = l.tx_done(2 * tx);
        assert_eq!(done.departed, Departed::Propagating { arrival: 2 * tx + 5_000_000, head: false });
        assert_eq!(done.next_done_at, None);
        assert_eq!(l.pop_arrival(), (pkt(7), Some(2 * tx + 5_000_000)));
        assert_eq!(l.pop_arrival(), (pkt(8), None));
        assert_eq!(l.stats.packets_sent, 2);
        assert_eq!(l.stats.busy_ps, 2 * tx);
    }

    #[test]
    fn outage_windows_count_from_the_schedule_origin() {
        let mut l = link(0, 10);
        l.spec.impairments.clear();
        l.impairments =
            vec![ImpairmentSpec::Outage(crate::net::impairment::outage::OutageConfig { windows_ps: vec![(100, 200)] })
                .build()];
        l.set_schedule_origin(Time::MAX);
        assert!(!matches!(l.offer(150, pkt(0)), Offered::Dropped(_)), "before the run starts, no outage");
        l.tx_done(l.tx_time(&pkt(0)) + 150);
        l.set_schedule_origin(1_000);
        assert!(!matches!(l.offer(1_099, pkt(1)), Offered::Dropped(_)));
        assert_eq!(l.offer(1_100, pkt(2)), Offered::Dropped(pkt(2)), "run time 100: in the window");
        assert_eq!(l.stats.outage_drops_packets, 1);
    }

    #[test]
    fn a_link_without_delay_delivers_at_the_end_of_serialization() {
        let mut l = link(0, 10);
        let Offered::Started { done_at } = l.offer(0, pkt(1)) else { panic!("idle link") };
        assert_eq!(l.tx_done(done_at).departed, Departed::Arrived(pkt(1)));
        assert!(l.transmitting().is_none());
    }
}
