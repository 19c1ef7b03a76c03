//! What every UDP source shares: the sending host's datagram loop and the receiving host's
//! counters. A UDP flow has no transport state: it sends when its application's schedule
//! (udp_cbr.rs, udp_burst.rs, udp_onoff.rs) says so, and nothing it sees slows it down;
//! the receiver only counts.
//!
//! The host never sends faster than its line: a datagram leaves no earlier than the previous
//! one has been serialized on the first link of the route (a blocking socket write returns as
//! the interface drains). So a source asking for more than the line rate gets the line rate,
//! and a burst "at line rate" leaves back to back instead of landing in the interface queue
//! all at once.
//!
//! Loss: every datagram sent is, at any time, received, lost (dropped by a queue or an
//! impairment; the simulation reports each drop here), or in flight. So
//! lost = sent - received - in flight exactly, and at the end of the run the datagrams still
//! in flight are reported apart rather than counted as lost.

use super::udp_burst::BurstSchedule;
use super::udp_cbr::CbrSchedule;
use super::udp_onoff::OnOffSchedule;
use super::SourceSpec;
use crate::packet::{Packet, PacketKind, SackBlocks, IPV4_UDP_HEADER_BYTES};
use crate::time::{transmission_time, Time};

/// When an application's datagrams are due.
#[derive(Clone, Debug)]
pub enum UdpSchedule {
    Cbr(CbrSchedule),
    Burst(BurstSchedule),
    OnOff(OnOffSchedule),
}

impl UdpSchedule {
    /// The schedule of a UDP source, or None for a TCP source.
    pub fn of(source: &SourceSpec) -> Option<UdpSchedule> {
        match source {
            SourceSpec::UdpCbr(c) => Some(UdpSchedule::Cbr(CbrSchedule::new(c.clone()))),
            SourceSpec::UdpBurst(c) => Some(UdpSchedule::Burst(BurstSchedule::new(c.clone()))),
            SourceSpec::UdpOnoff(c) => Some(UdpSchedule::OnOff(OnOffSchedule::new(c.clone()))),
            SourceSpec::Bulk(_) | SourceSpec::Burst(_) | SourceSpec::Http(_) => None,
        }
    }

    /// The next datagram: (when the application has it ready, payload bytes), or None when
    /// the application is done.
    fn next_datagram(&mut self) -> Option<(Time, u32)> {
        match self {
            UdpSchedule::Cbr(s) => s.next_datagram(),
            UdpSchedule::Burst(s) => s.next_datagram(),
            UdpSchedule::OnOff(s) => s.next_datagram(),
        }
    }
}

/// A UDP flow's counters. Bytes are UDP payload bytes.
#[derive(Clone, Debug, Default)]
pub struct UdpStats {
    pub datagrams_sent: u64,
    pub bytes_sent: u64,
    pub datagrams_received: u64,
    pub bytes_received: u64,
    /// Dropped on the way (queue overflow, early drop, impairment).
    pub datagrams_lost: u64,
    pub bytes_lost: u64,
    /// When the last datagram reached the receiver.
    pub last_arrival_ps: Option<Time>,
}

impl UdpStats {
    /// Datagrams sent and neither received nor lost yet: on a link or in a queue.
    pub fn datagrams_in_flight(&self) -> u64 {
        self.datagrams_sent - self.datagrams_received - self.datagrams_lost
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_sent - self.bytes_received - self.bytes_lost
    }
}

/// The sending and receiving ends of one UDP flow.
#[derive(Clone, Debug)]
pub struct UdpFlow {
    flow: u32,
    src: u32,
    dst: u32,
    schedule: UdpSchedule,
    stop_ps: Option<Time>,
    /// The sending host's line (the route's first link): rate and framing bytes per packet.
    line_rate_bps: u64,
    line_framing_bytes: u32,
    /// When the line has serialized the last datagram sent.
    line_free_ps: Time,
    /// The application's next datagram (when it is ready, payload bytes).
    pending: Option<(Time, u32)>,
    pub stats: UdpStats,
}

impl UdpFlow {
    pub fn new(
        flow: u32,
        src: u32,
        dst: u32,
        mut schedule: UdpSchedule,
        stop_ps: Option<Time>,
        line_rate_bps: u64,
        line_framing_bytes: u32,
    ) -> Self {
        let pending = schedule.next_datagram();
        UdpFlow {
            flow,
            src,
            dst,
            schedule,
            stop_ps,
            line_rate_bps,
            line_framing_bytes,
            line_free_ps: 0,
            pending,
            stats: UdpStats::default(),
        }
    }

    /// When the next datagram leaves, or None when the source has nothing more to send.
    pub fn next_departure(&self) -> Option<Time> {
        let (ready, _) = self.pending?;
        let t = ready.max(self.line_free_ps);
        self.stop_ps.is_none_or(|s| t < s).then_some(t)
    }

    /// Sends the next datagram now (its departure time has come).
    pub fn send(&mut self, now: Time) -> Packet {
        let (_, payload) = self.pending.expect("send only when a datagram is pending");
        let ip_bytes = payload + IPV4_UDP_HEADER_BYTES;
        let pkt = Packet {
            flow: self.flow,
            src: self.src,
            dst: self.dst,
            kind: PacketKind::Datagram,
            seq: self.stats.datagrams_sent,
            payload_bytes: payload,
            ip_bytes,
            ack: 0,
            window_bytes: 0,
            sack: SackBlocks::default(),
            ts_val: now,
            ts_ecr: 0,
            retransmission: false,
            conn: 0,
            ecn: Default::default(),
        };
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += payload as u64;
        self.line_free_ps = now + transmission_time((ip_bytes + self.line_framing_bytes) as u64, self.line_rate_bps);
        self.pending = self.schedule.next_datagram();
        pkt
    }

    /// A datagram reached the receiving host.
    pub fn on_datagram(&mut self, now: Time, pkt: &Packet) {
        self.stats.datagrams_received += 1;
        self.stats.bytes_received += pkt.payload_bytes as u64;
        self.stats.last_arrival_ps = Some(now);
    }

    /// A datagram of this flow was dropped on the way.
    pub fn on_lost(&mut self, pkt: &Packet) {
        self.stats.datagrams_lost += 1;
        self.stats.bytes_lost += pkt.payload_bytes as u64;
    }
}
