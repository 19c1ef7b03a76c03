//! Queue disciplines: what a link does with packets that arrive while it is busy.
//!
//! One file per discipline. Drop-tail and RED decide on admission and count what waits;
//! the link holds the packets (see `QueueDiscipline`). CoDel and FQ-CoDel decide when a
//! packet leaves and hold their packets (`scheduled.rs`, `HoldingDiscipline`).

pub mod codel;
pub mod droptail;
pub mod drr;
pub mod dualpi2;
pub mod fq_codel;
pub mod fq_pie;
pub mod holding;
pub mod pie;
pub mod red;
pub mod scheduled;
pub mod slab;
pub mod tbf;
pub mod tx_ring;

use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

/// Why a discipline refused a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// The queue was full.
    Overflow,
    /// An active queue manager (RED) dropped it early.
    EarlyDrop,
}

/// A queue discipline decides which arriving packets a link admits and keeps the queue's
/// counters. It does not hold the packets: a link keeps every admitted packet in one FIFO
/// with its departure time (`net/link.rs`), since both disciplines here serve in arrival
/// order and drop only on arrival. The link tells it, in time order, when each admitted
/// packet leaves the queue (starts serializing) and when the transmitter falls idle.
pub trait QueueDiscipline: Send + Sync {
    /// Admits `pkt` arriving at `now` (RED may mark it CE), or says why it is dropped. Every
    /// packet that enters the link comes here, even when the link is idle (RED must see
    /// every arrival). An admitted packet waits in the queue (it is counted there until
    /// `depart`), unless `starts_now`: the link is idle and serializes it at once, which
    /// the discipline decides on as on an empty queue and does not count.
    fn admit(&mut self, now: Time, pkt: &mut Packet, starts_now: bool) -> Result<(), Admission>;
    /// The packet at the head of the queue, of `ip_bytes`, starts serializing at `t`.
    fn depart(&mut self, t: Time, ip_bytes: u32);
    /// The transmitter asks for a packet at `t` and the queue is empty: an idle period
    /// starts (RED's average decays over it). As ns-2's `Queue::recv`, the link asks after
    /// every arrival to an idle link, admitted or not: when the arrival was dropped, the
    /// idle period goes on from the drop.
    fn idle(&mut self, _t: Time) {}
    /// How many more packets of `ip_bytes` the queue would admit now, by its limits alone
    /// (`u64::MAX`: no limit). A host's TCP senders never send more than this into their
    /// interface's queue (local congestion); RED's early drops are not foreseen.
    fn room_packets(&self, ip_bytes: u32) -> u64;
    /// Packets marked Congestion Experienced instead of dropped (ECN), since the start.
    fn ecn_marks(&self) -> u64 {
        0
    }
    /// RED's (min_th, max_th, w_q) in effect, the given or automatic ones; None for others.
    fn red_parameters(&self) -> Option<(f64, f64, f64)> {
        None
    }
    /// RED's average queue at `now` (for the queue series); None for others.
    fn red_average(&self, _now: Time) -> Option<f64> {
        None
    }
    /// Packets waiting.
    fn len_packets(&self) -> usize;
    /// IP bytes waiting.
    fn len_bytes(&self) -> u64;
    /// Whether the packet being serialized still takes room in this queue (a transmit
    /// ring's descriptors), so that an idle link does not take one packet beyond its room.
    fn holds_packet_in_service(&self) -> bool {
        false
    }
}

/// The disciplines as one enum: the link calls them on every packet, and a `match` the
/// compiler sees through costs less than a call through a `Box<dyn>` (which the profile
/// of a 10 Gb/s dumbbell showed at 6 % of the time).
pub enum Queue {
    DropTail(droptail::DropTail),
    Red(red::Red),
    /// A host interface's transmit ring in front of one of the others (boxed: it holds one).
    TxRing(Box<tx_ring::TxRing>),
    /// A discipline that holds its packets and decides at dequeue (`scheduled.rs`): the
    /// link takes its own path for these (`Link::service`), never `admit` or `depart`.
    Held(scheduled::Scheduled),
}

/// The counting disciplines' call (`$e`), or `$held` for a holding one.
macro_rules! dispatch {
    ($self:ident, $q:ident => $e:expr, held $h:ident => $held:expr) => {
        match $self {
            Queue::DropTail($q) => $e,
            Queue::Red($q) => $e,
            Queue::TxRing($q) => $e,
            Queue::Held($h) => $held,
        }
    };
}

impl Queue {
    #[inline]
    pub fn admit(&mut self, now: Time, pkt: &mut Packet, starts_now: bool) -> Result<(), Admission> {
        dispatch!(self, q => q.admit(now, pkt, starts_now), held _h => unreachable!("the link serves a holding discipline itself"))
    }
    #[inline]
    pub fn depart(&mut self, t: Time, ip_bytes: u32) {
        dispatch!(self, q => q.depart(t, ip_bytes), held _h => unreachable!("the link serves a holding discipline itself"))
    }
    #[inline]
    pub fn idle(&mut self, t: Time) {
        dispatch!(self, q => q.idle(t), held _h => ())
    }
    #[inline]
    pub fn room_packets(&self, ip_bytes: u32) -> u64 {
        dispatch!(self, q => q.room_packets(ip_bytes), held h => h.room_packets(ip_bytes))
    }
    pub fn ecn_marks(&self) -> u64 {
        dispatch!(self, q => q.ecn_marks(), held h => h.stats().ecn_marks + h.stats().ce_threshold_marks)
    }
    pub fn red_parameters(&self) -> Option<(f64, f64, f64)> {
        dispatch!(self, q => q.red_parameters(), held _h => None)
    }
    pub fn red_average(&self, now: Time) -> Option<f64> {
        dispatch!(self, q => q.red_average(now), held _h => None)
    }
    #[inline]
    pub fn len_packets(&self) -> usize {
        dispatch!(self, q => q.len_packets(), held h => h.len_packets())
    }
    #[inline]
    pub fn len_bytes(&self) -> u64 {
        dispatch!(self, q => q.len_bytes(), held h => h.len_bytes())
    }
    #[inline]
    pub fn holds_packet_in_service(&self) -> bool {
        dispatch!(self, q => q.holds_packet_in_service(), held _h => false)
    }
    /// The holding discipline, if this is one.
    #[inline]
    pub fn held(&self) -> Option<&scheduled::Scheduled> {
        match self {
            Queue::Held(h) => Some(h),
            _ => None,
        }
    }
}

/// A queue as the scenario gives it.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(tag = "discipline", rename_all = "lowercase", deny_unknown_fields)]
pub enum QueueSpec {
    Droptail(droptail::DropTailConfig),
    Red(red::RedConfig),
    Codel(codel::CodelConfig),
    #[serde(rename = "fq_codel")]
    FqCodel(fq_codel::FqCodelConfig),
    Pie(pie::PieConfig),
    #[serde(rename = "fq_pie")]
    FqPie(fq_pie::FqPieConfig),
    Tbf(tbf::TbfConfig),
    Dualpi2(dualpi2::DualPi2Config),
}

impl QueueSpec {
    /// The discipline for a link of `link_rate_bps` (RED's automatic parameters depend on it),
    /// with its own random numbers.
    pub fn build(&self, link_rate_bps: u64, rng: Rng) -> Queue {
        match self {
            QueueSpec::Droptail(cfg) => Queue::DropTail(droptail::DropTail::new(cfg.clone())),
            QueueSpec::Red(cfg) => Queue::Red(red::Red::new(cfg.clone(), link_rate_bps, rng)),
            QueueSpec::Codel(cfg) => Queue::Held(scheduled::Scheduled::CoDel(codel::CoDel::new(cfg))),
            QueueSpec::FqCodel(cfg) => {
                Queue::Held(scheduled::Scheduled::FqCodel(Box::new(fq_codel::FqCodel::new(cfg, rng))))
            }
            QueueSpec::Pie(cfg) => Queue::Held(scheduled::Scheduled::Pie(pie::Pie::new(cfg, rng))),
            QueueSpec::FqPie(cfg) => Queue::Held(scheduled::Scheduled::FqPie(Box::new(fq_pie::FqPie::new(cfg, rng)))),
            QueueSpec::Tbf(cfg) => {
                // Room for the limit in full-size packets (at least 576 bytes, RFC 791's
                // minimum datagram every host must take); smaller ones grow the slab.
                let slots = (cfg.limit_bytes / 576).min(u32::MAX as u64) as usize + 1;
                Queue::Held(scheduled::Scheduled::Tbf(tbf::Tbf::new(cfg, slots)))
            }
            QueueSpec::Dualpi2(cfg) => {
                Queue::Held(scheduled::Scheduled::DualPi2(Box::new(dualpi2::DualPi2::new(cfg, rng))))
            }
        }
    }

    /// Whether the discipline holds its packets and decides at dequeue (the link then
    /// takes an event per departure, and no hop into or out of it is handed on).
    pub fn holds_packets(&self) -> bool {
        matches!(
            self,
            QueueSpec::Codel(_)
                | QueueSpec::FqCodel(_)
                | QueueSpec::Pie(_)
                | QueueSpec::FqPie(_)
                | QueueSpec::Tbf(_)
                | QueueSpec::Dualpi2(_)
        )
    }
}
