//! Packet capture: writes what a tcpdump at a host or on a link would have seen, as a
//! classic pcap file (nanosecond time stamps, Ethernet link type) that tcpdump, tshark and
//! Wireshark read. TCP segments and ACKs, and UDP datagrams (sender port to port 5001).
//!
//! Simulated packets carry sequence numbers and lengths, not bytes; a capture builds real
//! Ethernet/IPv4/TCP headers from them: 32-bit sequence numbers from per-flow initial
//! sequence numbers, the receive window shifted by the window scale, RFC 7323 timestamps on
//! a 1 ms clock (Linux), SACK blocks, and correct IP and TCP checksums. Payload bytes are
//! zeros, which add nothing to the one's-complement sum, so the TCP checksum is right for
//! the whole packet even when the capture keeps only `snaplen_bytes` of it (like
//! `tcpdump -s`), which keeps 10 Gb/s captures small.
//!
//! Where: a host capture sees packets the host puts on its links (when serialization starts,
//! after its interface queue, as Linux's packet taps do) and packets delivered to it; a link
//! capture sees packets as the link starts to serialize them (drops are never seen).

use crate::packet::{Ecn, Packet, PacketKind};
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;
use std::fs::File;
use std::io::{BufWriter, Write};

/// Where a capture listens.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum CapturePoint {
    /// Everything a host sends and receives.
    Host { node: u32 },
    /// Everything a (simplex) link transmits.
    Link { link: u32 },
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    pub name: String,
    pub point: CapturePoint,
    /// File to write (created or truncated when the simulation is built).
    pub path: String,
    /// Packets before this time are not captured.
    pub start_ps: Time,
    /// Packets from this time on are not captured (none: to the end).
    pub stop_ps: Option<Time>,
    /// At most this many packets are written (none: no limit).
    pub max_packets: Option<u64>,
    /// Bytes of each frame written (the rest is counted in the original length only).
    pub snaplen_bytes: u32,
}

/// Which captures see what: per link, the captures of what it starts to transmit (a link
/// capture, and a host capture on the host's outgoing links); per node, those of what is
/// delivered to it (a host capture).
pub fn taps(
    specs: &[CaptureSpec],
    links: &[crate::net::link::LinkSpec],
    nodes: usize,
) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let mut link_taps = vec![Vec::new(); links.len()];
    let mut node_taps = vec![Vec::new(); nodes];
    for (c, spec) in specs.iter().enumerate() {
        match spec.point {
            CapturePoint::Host { node } => {
                node_taps[node as usize].push(c as u32);
                for (l, link) in links.iter().enumerate() {
                    if link.from == node {
                        link_taps[l].push(c as u32);
                    }
                }
            }
            CapturePoint::Link { link } => link_taps[link as usize].push(c as u32),
        }
    }
    (link_taps, node_taps)
}

/// What the capture needs to know of a flow to build its headers.
#[derive(Clone, Copy, Debug)]
pub struct FlowWire {
    /// Initial sequence numbers of the data sender and of the receiver.
    pub sender_isn: u32,
    pub receiver_isn: u32,
    pub sender_port: u16,
    pub receiver_port: u16,
    /// Right shift of the advertised window (RFC 7323 window scale; 0 without scaling).
    pub window_shift: u8,
    /// The data sender's node (packets from it carry the sender's ISN and port).
    pub sender_node: u32,
    pub mss_bytes: u32,
    pub sack_permitted: bool,
    pub window_scaling: bool,
    /// The window the data sender advertises to the receiver (its own receive buffer).
    pub sender_window_bytes: u32,
    pub timestamps: bool,
}

pub struct Capture {
    pub spec: CaptureSpec,
    out: BufWriter<File>,
    pub packets_written: u64,
    /// Packets seen after `max_packets` was reached.
    pub packets_not_written: u64,
    /// The first write error, if any (the simulation goes on; the summary reports it).
    pub error: Option<String>,
    /// Added to the simulated time to stamp a record: whole seconds, so that a handshake a
    /// flow that starts established would have made before its start (time 0 included) has
    /// its real times in the file (`Simulation::set_capture_clock`); 0 otherwise.
    pub clock_offset_ps: Time,
    ip_id: u16,
    frame: Vec<u8>,
}

const PCAP_MAGIC_NANOSECONDS: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;

/// IPv4 address of a node: 10.0.0.0/8 numbered from 10.0.0.1.
pub fn node_ip(node: u32) -> [u8; 4] {
    let n = node + 1;
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

/// Locally administered MAC address of a node.
fn node_mac(node: u32) -> [u8; 6] {
    let n = node + 1;
    [0x02, 0, (n >> 24) as u8, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

impl Capture {
    pub fn create(spec: CaptureSpec) -> Result<Capture, String> {
        let file = File::create(&spec.path).map_err(|e| format!("captures: cannot create {}: {e}", spec.path))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let mut header = Vec::with_capacity(24);
        header.extend_from_slice(&PCAP_MAGIC_NANOSECONDS.to_le_bytes());
        header.extend_from_slice(&2u16.to_le_bytes()); // version 2.4
        header.extend_from_slice(&4u16.to_le_bytes());
        header.extend_from_slice(&0i32.to_le_bytes()); // time zone: UTC
        header.extend_from_slice(&0u32.to_le_bytes()); // accuracy
        header.extend_from_slice(&spec.snaplen_bytes.to_le_bytes());
        header.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&header).map_err(|e| format!("captures: cannot write {}: {e}", spec.path))?;
        Ok(Capture {
            spec,
            out,
            packets_written: 0,
            packets_not_written: 0,
            error: None,
            clock_offset_ps: 0,
            ip_id: 0,
            frame: Vec::with_capacity(2048),
        })
    }

    /// Records `pkt` seen at `now`, if inside the capture's window and limit.
    pub fn record(&mut self, now: Time, pkt: &Packet, wire: &FlowWire) {
        self.record_stamped(now, now + self.clock_offset_ps, pkt, wire);
    }

    /// Records `pkt`, admitted by the simulated time `now` (the window and limit), stamped
    /// `stamp_ps` in the file's clock (simulated time + `clock_offset_ps`): a synthetic
    /// handshake, seen before the flow's start.
    pub fn record_stamped(&mut self, now: Time, stamp_ps: Time, pkt: &Packet, wire: &FlowWire) {
        if !self.admit(now) {
            return;
        }
        self.ip_id = self.ip_id.wrapping_add(1);
        build_frame(&mut self.frame, pkt, wire, self.ip_id);
        let orig_len = self.frame.len() as u32 + pkt.payload_bytes;
        // Zero payload up to the snap length, or headers cut at it, as tcpdump -s would.
        let incl = (orig_len as usize).min(self.spec.snaplen_bytes as usize);
        self.frame.resize(incl, 0);
        self.write_record(stamp_ps, orig_len);
    }

    /// Records a real IPv4 packet seen at `now` going from node `src` to node `dst` (the
    /// emulator's captures): the packet's own bytes behind the Ethernet header a simulated
    /// capture of those nodes has, cut at the snap length.
    pub fn record_ip(&mut self, now: Time, src: u32, dst: u32, ip_packet: &[u8]) {
        if !self.admit(now) {
            return;
        }
        self.frame.clear();
        push_ethernet_header(&mut self.frame, src, dst);
        let orig_len = (self.frame.len() + ip_packet.len()) as u32;
        let keep = (self.spec.snaplen_bytes as usize).saturating_sub(self.frame.len()).min(ip_packet.len());
        self.frame.extend_from_slice(&ip_packet[..keep]);
        self.write_record(now + self.clock_offset_ps, orig_len);
    }

    /// Whether a packet seen at `now` is captured: inside the window, under the limit
    /// (counting the ones over it).
    fn admit(&mut self, now: Time) -> bool {
        if now < self.spec.start_ps || self.spec.stop_ps.is_some_and(|s| now >= s) {
            return false;
        }
        if self.spec.max_packets.is_some_and(|m| self.packets_written >= m) {
            self.packets_not_written += 1;
            return false;
        }
        true
    }

    /// Writes `frame` as one record stamped `now` (the file's clock), of a packet `orig_len`
    /// bytes long.
    fn write_record(&mut self, now: Time, orig_len: u32) {
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&((now / 1_000_000_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&(((now % 1_000_000_000_000) / 1000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&(self.frame.len() as u32).to_le_bytes());
        rec[12..16].copy_from_slice(&orig_len.to_le_bytes());
        if let Err(e) = self.out.write_all(&rec).and_then(|()| self.out.write_all(&self.frame)) {
            self.fail(e);
        }
        self.packets_written += 1;
    }

    pub fn flush(&mut self) {
        if let Err(e) = self.out.flush() {
            self.fail(e);
        }
    }

    fn fail(&mut self, e: std::io::Error) {
        if self.error.is_none() {
            self.error = Some(format!("captures: cannot write {}: {e}", self.spec.path));
        }
    }
}

/// The Ethernet header of a frame from node `src` to node `dst` carrying IPv4.
fn push_ethernet_header(frame: &mut Vec<u8>, src: u32, dst: u32) {
    frame.extend_from_slice(&node_mac(dst));
    frame.extend_from_slice(&node_mac(src));
    frame.extend_from_slice(&0x0800u16.to_be_bytes());
}

/// One's-complement sum of 16-bit big-endian words (RFC 1071), not yet folded.
fn sum16(bytes: &[u8], mut acc: u32) -> u32 {
    let mut chunks = bytes.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Builds Ethernet + IPv4 + TCP headers of `pkt` into `frame` (cleared first); payload is
/// not included.
pub fn build_frame(frame: &mut Vec<u8>, pkt: &Packet, wire: &FlowWire, ip_id: u16) {
    frame.clear();
    let udp = pkt.kind == PacketKind::Datagram;
    push_ethernet_header(frame, pkt.src, pkt.dst);
    // IPv4
    let ip_start = frame.len();
    let total_len = pkt.ip_bytes as u16;
    // Version and header length; the TOS byte's low two bits are the ECN field (RFC 3168:
    // 10 = ECT(0), 01 = ECT(1), 11 = CE).
    let ecn_field = if pkt.ecn.has(Ecn::CE) {
        3
    } else if pkt.ecn.has(Ecn::ECT) {
        2
    } else if pkt.ecn.has(Ecn::ECT1) {
        1
    } else {
        0
    };
    frame.extend_from_slice(&[0x45, ecn_field]);
    frame.extend_from_slice(&total_len.to_be_bytes());
    frame.extend_from_slice(&ip_id.to_be_bytes());
    frame.extend_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    frame.extend_from_slice(&[64, if udp { 17 } else { 6 }, 0, 0]); // TTL, protocol; checksum zero until the header is complete (RFC 791)
    let (src_ip, dst_ip) = (node_ip(pkt.src), node_ip(pkt.dst));
    frame.extend_from_slice(&src_ip);
    frame.extend_from_slice(&dst_ip);
    let ip_sum = fold(sum16(&frame[ip_start..ip_start + 20], 0));
    frame[ip_start + 10..ip_start + 12].copy_from_slice(&ip_sum.to_be_bytes());
    if udp {
        let start = frame.len();
        let udp_len = (pkt.ip_bytes - 20) as u16;
        frame.extend_from_slice(&wire.sender_port.to_be_bytes());
        frame.extend_from_slice(&wire.receiver_port.to_be_bytes());
        frame.extend_from_slice(&udp_len.to_be_bytes());
        frame.extend_from_slice(&[0, 0]);
        let mut acc = sum16(&src_ip, 0);
        acc = sum16(&dst_ip, acc);
        acc += 17 + udp_len as u32;
        // RFC 768: a computed 0 is sent as all ones (0 means "no checksum").
        let sum = match fold(sum16(&frame[start..], acc)) {
            0 => 0xffff,
            v => v,
        };
        frame[start + 6..start + 8].copy_from_slice(&sum.to_be_bytes());
        return;
    }
    // TCP
    let tcp_start = frame.len();
    let tcp_len = pkt.ip_bytes - 20;
    let header_len = tcp_len - pkt.payload_bytes;
    // The side that sent the packet: the flow's data sender or its receiver. Each side has
    // its own ISN and port; the SYN takes one sequence number, so data starts at ISN + 1.
    let from_sender = pkt.src == wire.sender_node;
    let (own_isn, peer_isn) =
        if from_sender { (wire.sender_isn, wire.receiver_isn) } else { (wire.receiver_isn, wire.sender_isn) };
    let receiver_port = wire.receiver_port.wrapping_add(pkt.conn);
    let (sport, dport) =
        if from_sender { (wire.sender_port, receiver_port) } else { (receiver_port, wire.sender_port) };
    let (seq, ack, flags): (u32, u32, u8) = match pkt.kind {
        PacketKind::Data => (
            own_isn.wrapping_add(1).wrapping_add(pkt.seq as u32),
            peer_isn.wrapping_add(1),
            if pkt.payload_bytes > 0 { 0x18 } else { 0x10 },
        ),
        PacketKind::Ack => (own_isn.wrapping_add(1), peer_isn.wrapping_add(1).wrapping_add(pkt.ack as u32), 0x10),
        PacketKind::Syn => (own_isn, 0, 0x02),
        PacketKind::SynAck => (own_isn, peer_isn.wrapping_add(1), 0x12),
        PacketKind::HandshakeAck => (own_isn.wrapping_add(1), peer_isn.wrapping_add(1), 0x10),
        // Requests of one connection follow each other; `seq` is the request's index.
        PacketKind::Request => (
            own_isn.wrapping_add(1).wrapping_add((pkt.seq as u32).wrapping_mul(pkt.payload_bytes)),
            peer_isn.wrapping_add(1),
            0x18,
        ),
        PacketKind::Datagram => unreachable!("UDP is written above"),
    };
    frame.extend_from_slice(&sport.to_be_bytes());
    frame.extend_from_slice(&dport.to_be_bytes());
    frame.extend_from_slice(&seq.to_be_bytes());
    frame.extend_from_slice(&ack.to_be_bytes());
    // RFC 3168: ECN-Echo and Congestion Window Reduced.
    let mut flags = flags;
    if pkt.ecn.has(Ecn::ECE) {
        flags |= 0x40;
    }
    if pkt.ecn.has(Ecn::CWR) {
        flags |= 0x80;
    }
    // RFC 9768: AE is the low bit of the data-offset byte (once NS, RFC 3540).
    frame.push(((header_len / 4) as u8) << 4 | u8::from(pkt.ecn.has(Ecn::AE)));
    frame.push(flags);
    // ACKs carry the receiver's advertised window; other packets that carry none get the
    // window both ends configure (they share one TCP configuration).
    let window =
        if pkt.kind == PacketKind::Ack || pkt.window_bytes > 0 { pkt.window_bytes } else { wire.sender_window_bytes };
    // RFC 7323: the window in a SYN or SYN-ACK is never scaled.
    let field = if matches!(pkt.kind, PacketKind::Syn | PacketKind::SynAck) {
        window.min(65_535) as u16
    } else {
        (window >> wire.window_shift).min(65_535) as u16
    };
    frame.extend_from_slice(&field.to_be_bytes());
    frame.extend_from_slice(&[0, 0, 0, 0]); // checksum zero until computed below, urgent pointer 0
    let syn = matches!(pkt.kind, PacketKind::Syn | PacketKind::SynAck);
    if syn {
        // MSS and window scale, so that tools know both; SACK-permitted and timestamps are
        // laid out as Linux does (packet::syn_option_bytes gives the same size).
        frame.extend_from_slice(&[2, 4]);
        // The MSS option announces MTU - 40; the timestamps option then takes 12 of it.
        let announced = wire.mss_bytes + if wire.timestamps { crate::packet::TCP_TIMESTAMPS_OPTION_BYTES } else { 0 };
        frame.extend_from_slice(&(announced.min(65_535) as u16).to_be_bytes());
        if wire.sack_permitted && wire.timestamps {
            frame.extend_from_slice(&[4, 2, 8, 10]);
        } else if wire.sack_permitted {
            frame.extend_from_slice(&[1, 1, 4, 2]);
        } else if wire.timestamps {
            frame.extend_from_slice(&[1, 1, 8, 10]);
        }
        if wire.timestamps {
            frame.extend_from_slice(&((pkt.ts_val / 1_000_000_000) as u32).to_be_bytes());
            frame.extend_from_slice(&((pkt.ts_ecr / 1_000_000_000) as u32).to_be_bytes());
        }
        if wire.window_scaling {
            frame.extend_from_slice(&[1, 3, 3, wire.window_shift]);
        }
    } else if wire.timestamps {
        // NOP, NOP, kind 8, length 10, TSval, TSecr on a 1 ms clock (Linux's).
        frame.extend_from_slice(&[1, 1, 8, 10]);
        frame.extend_from_slice(&((pkt.ts_val / 1_000_000_000) as u32).to_be_bytes());
        frame.extend_from_slice(&((pkt.ts_ecr / 1_000_000_000) as u32).to_be_bytes());
    }
    if !pkt.sack.is_empty() {
        frame.extend_from_slice(&[1, 1, 5, 2 + 8 * pkt.sack.len() as u8]);
        let base = wire.sender_isn.wrapping_add(1);
        for (start, end) in pkt.sack.iter(pkt.ack) {
            frame.extend_from_slice(&base.wrapping_add(start as u32).to_be_bytes());
            frame.extend_from_slice(&base.wrapping_add(end as u32).to_be_bytes());
        }
    }
    // Options the simulation counts but does not model byte for byte: pad with NOPs so the
    // header has the simulated size.
    while frame.len() - tcp_start < header_len as usize {
        frame.push(1);
    }
    // Pseudo-header + TCP header; the zero payload adds nothing.
    let mut acc = sum16(&src_ip, 0);
    acc = sum16(&dst_ip, acc);
    acc += 6 + tcp_len;
    let sum = fold(sum16(&frame[tcp_start..], acc));
    frame[tcp_start + 16..tcp_start + 18].copy_from_slice(&sum.to_be_bytes());
}
