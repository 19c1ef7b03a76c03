//! A simplex link: a queue, a transmitter of `rate_bps`, and a propagation delay.
//!
//! Packets in propagation are kept in a FIFO with their arrival times; the engine holds one
//! pending event for the head only, so a link's cost per packet does not depend on how many
//! packets are in flight on it (htsim's pipe).

use super::impairment::{Impairment, ImpairmentSpec, LossCause};
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
    pub queue: Box<dyn QueueDiscipline>,
    /// The packet being serialized.
    pub transmitting: Option<Packet>,
    /// When the packet being serialized is done (the last one's end when idle).
    tx_end_ps: Time,
    /// Packets propagating, with the time each reaches the far end (FIFO: a link does not
    /// reorder).
    pub propagating: VecDeque<(Time, Packet)>,
    /// The impairments with their state, in the order of the spec.
    impairments: Vec<Impairment>,
    /// This link's random numbers, from the scenario seed and the link's name.
    rng: Rng,
    pub stats: LinkStats,
}

impl Link {
    pub fn new(spec: LinkSpec, seed: u64) -> Self {
        let queue = spec.queue.build(spec.rate_bps, Rng::for_element(seed, &format!("{}/queue", spec.name)));
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
            stats: LinkStats::default(),
        }
    }

    /// Whether an impairment takes the packet entering the link now (and counts it).
    #[inline]
    pub fn impaired(&mut self, now: Time, pkt: &Packet) -> bool {
        for imp in &mut self.impairments {
            match imp.drops(now, pkt, &mut self.rng) {
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
    pub fn start_tx(&mut self, now: Time, pkt: Packet) -> Time {
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
    /// plus the one an idle link starts sending at once without queueing it.
    #[inline]
    pub fn room_packets(&self, ip_bytes: u32) -> u64 {
        let room = self.queue.room_packets(ip_bytes);
        room.saturating_add(u64::from(self.transmitting.is_none() && room > 0))
    }

    #[inline]
    pub fn record_drop(&mut self, pkt: &Packet, why: super::queue::Admission) {
        match why {
            super::queue::Admission::Overflow => {
                self.stats.drops_packets += 1;
                self.stats.drops_bytes += pkt.ip_bytes as u64;
            }
            super::queue::Admission::EarlyDrop => self.stats.early_drops_packets += 1,
        }
    }

    #[inline]
    pub fn note_queue_length(&mut self) {
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
