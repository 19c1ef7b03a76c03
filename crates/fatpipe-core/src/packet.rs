//! Packets as they travel through the simulated network.
//!
//! A packet is a small `Copy` value: queues and links store packets by value, so moving one
//! never allocates. Payload bytes are not carried, only their sequence numbers and length.

use crate::time::Time;

/// IPv4 (20) + TCP (20) header bytes without options.
pub const IPV4_TCP_HEADER_BYTES: u32 = 40;
/// IPv4 (20) + UDP (8) header bytes: a datagram's IP packet is its payload plus these.
pub const IPV4_UDP_HEADER_BYTES: u32 = 28;
/// The TCP timestamps option (RFC 7323): 10 bytes, padded to 12.
pub const TCP_TIMESTAMPS_OPTION_BYTES: u32 = 12;

/// Most TCP option bytes a segment carries (RFC 9293: a 60-byte header at most).
pub const TCP_MAX_OPTION_BYTES: u32 = 40;

/// Bytes of the AccECN option (RFC 9768 section 3.2.3) an ACK sends in `room` option bytes
/// left beside its timestamps and SACK blocks, as Linux fits it (`tcp_options_fit_accecn`:
/// SACK first, then as many 3-byte counter fields as fit behind kind and length, padded to
/// 4): all three fields (11 bytes, 12 with padding), two (8: EE0B and ECEB, the order
/// AccECN0), or none (one field would take 8 bytes too, for no ECEB).
pub fn accecn_option_bytes(room: u32) -> u32 {
    match room {
        12.. => 12,
        8..=11 => 8,
        _ => 0,
    }
}

/// Bit 32 of an ACK's `seq`: the AccECN option with its ECEB field is present (bits 0-23).
const ACCECN_ECEB_PRESENT: u64 = 1 << 32;

/// Option bytes of a SYN or SYN-ACK, as Linux lays them out (`tcp_options_write`): MSS (4);
/// SACK-permitted (2) packed with timestamps (10) into 12, or alone behind two NOPs (4), or
/// timestamps alone behind two NOPs (12); window scale (3) behind a NOP (4). A SYN-ACK
/// answers with the options the SYN offered, so both have this size: with everything on,
/// 20 bytes (a 60-byte SYN, as tcpdump shows Linux's).
pub fn syn_option_bytes(sack: bool, timestamps: bool, window_scaling: bool) -> u32 {
    let sack_ts = match (sack, timestamps) {
        (_, true) => 12,
        (true, false) => 4,
        (false, false) => 0,
    };
    4 + sack_ts + if window_scaling { 4 } else { 0 }
}

/// SACK option bytes: kind and length (2) plus 8 per block, padded with two NOPs to a
/// multiple of 4 (RFC 2018).
pub fn sack_option_bytes(blocks: usize) -> u32 {
    if blocks == 0 {
        0
    } else {
        4 + 8 * blocks as u32
    }
}

/// Up to four SACK blocks (RFC 2018: four fit the 40 option bytes, three beside timestamps),
/// stored as signed 32-bit offsets from the cumulative ACK so that a packet stays small (a
/// D-SACK block, RFC 2883, may lie below the cumulative ACK; a window is below 2^30 bytes,
/// RFC 7323). The offsets are kept as bytes (alignment 1), so that the one-byte fields around
/// the blocks in `Packet` (kind, flags, ECN) pack without padding and the packet stays at 96
/// bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    count: u8,
    blocks: [[u8; 8]; 4],
}

impl SackBlocks {
    /// Adds the block `[start, end)` of an ACK whose cumulative ACK is `ack`.
    pub fn push(&mut self, ack: u64, start: u64, end: u64) {
        debug_assert!(end > start && (self.count as usize) < 4);
        debug_assert!(start.abs_diff(ack) < 1 << 31 && end.abs_diff(ack) < 1 << 31);
        let block = &mut self.blocks[self.count as usize];
        block[..4].copy_from_slice(&(start.wrapping_sub(ack) as u32).to_ne_bytes());
        block[4..].copy_from_slice(&(end.wrapping_sub(ack) as u32).to_ne_bytes());
        self.count += 1;
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The blocks as absolute byte ranges, most recent first.
    pub fn iter(&self, ack: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.blocks[..self.count as usize].iter().map(move |b| {
            let start = i32::from_ne_bytes([b[0], b[1], b[2], b[3]]);
            let end = i32::from_ne_bytes([b[4], b[5], b[6], b[7]]);
            (ack.wrapping_add_signed(start as i64), ack.wrapping_add_signed(end as i64))
        })
    }
}

/// Explicit Congestion Notification bits (RFC 3168) in one byte, since a packet is copied
/// often: the IP header's ECN field (ECT: the transport understands ECN; CE: a router
/// marked congestion) and the TCP header's ECE and CWR flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ecn(u8);

impl Ecn {
    /// IP: ECN-capable transport (ECT(0)).
    pub const ECT: Ecn = Ecn(1);
    /// IP: congestion experienced, set by a router instead of dropping.
    pub const CE: Ecn = Ecn(2);
    /// TCP: ECN-Echo, the receiver reports CE to the sender.
    pub const ECE: Ecn = Ecn(4);
    /// TCP: congestion window reduced, the sender tells the receiver it responded.
    pub const CWR: Ecn = Ecn(8);
    /// IP: ECN-capable transport with codepoint ECT(1), the L4S identifier (RFC 9331 section
    /// 4.1). Exclusive with `ECT` (ECT(0)). A router's CE mark keeps the sender's codepoint
    /// bit here, so a dual queue (RFC 9332) can classify a CE packet as L4S, as RFC 9331
    /// section 5.3 asks, without a separate field.
    pub const ECT1: Ecn = Ecn(16);
    /// TCP: the AE flag (RFC 9768 section 3.2.1, the header bit once called NS): with
    /// Accurate ECN negotiated, AE, CWR and ECE together are the 3-bit ACE field.
    pub const AE: Ecn = Ecn(32);

    pub fn has(self, bits: Ecn) -> bool {
        self.0 & bits.0 == bits.0
    }

    /// IP: the packet is ECN-capable, ECT(0) or ECT(1) (RFC 3168 section 5: a router may
    /// mark either).
    pub fn is_ect(self) -> bool {
        self.0 & (Ecn::ECT.0 | Ecn::ECT1.0) != 0
    }

    /// TCP with Accurate ECN: the ACE field, AE (most significant), CWR, ECE (RFC 9768
    /// section 3.2.2, Figure 3): the CE packet counter modulo 8.
    pub fn ace(self) -> u8 {
        u8::from(self.has(Ecn::AE)) << 2 | u8::from(self.has(Ecn::CWR)) << 1 | u8::from(self.has(Ecn::ECE))
    }

    /// Sets the ACE field to `counter` modulo 8 (the IP bits stay).
    pub fn set_ace(&mut self, counter: u32) {
        self.0 &= !(Ecn::AE.0 | Ecn::CWR.0 | Ecn::ECE.0);
        for (bit, flag) in [(4, Ecn::AE), (2, Ecn::CWR), (1, Ecn::ECE)] {
            if counter & bit != 0 {
                self.set(flag);
            }
        }
    }

    pub fn set(&mut self, bits: Ecn) {
        self.0 |= bits.0;
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PacketKind {
    /// A TCP segment carrying data from the flow's sender to its receiver.
    #[default]
    Data,
    /// A pure TCP acknowledgment from the flow's receiver to its sender.
    Ack,
    /// A UDP datagram from a UDP flow's sender to its receiver; `seq` numbers the datagrams
    /// from 0 (as iperf's UDP payload does). Nothing answers it.
    Datagram,
    /// Connection setup (`tcp/handshake.rs`): the opener's SYN, the listener's SYN-ACK and
    /// the opener's ACK that completes the three-way handshake (RFC 793 section 3.4).
    Syn,
    SynAck,
    HandshakeAck,
    /// An HTTP request (`source/http.rs`): client (the flow's receiver host) to server (the
    /// flow's sender host), `payload_bytes` of request; `seq` is the request's index. It also
    /// acknowledges the SYN-ACK when it is a new connection's first segment.
    Request,
}

/// `Default` (an empty data segment of flow 0) only fills the unused slots of a link's
/// storage (`chunked.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packet {
    /// Index of the flow this packet belongs to.
    pub flow: u32,
    /// The flow's connection this packet belongs to (a flow that opens one connection after
    /// another, as HTTP/1.0, numbers them). Endpoints ignore packets of another connection, so
    /// stragglers of a closed connection cannot confuse the next. 16 bits keep the packet at
    /// 96 bytes; wrapping is harmless, as no packet outlives 65,536 later connections.
    pub conn: u16,
    /// Source and destination node indices (routing looks at `dst`).
    pub src: u32,
    pub dst: u32,
    pub kind: PacketKind,
    /// Data: sequence number of the first payload byte (bytes count from 0, 64-bit so they
    /// never wrap in a simulation; a capture folds them to 32 bits). ACK with Accurate ECN:
    /// the AccECN option's ECEB field (`accecn_eceb`), which a pure ACK's own sequence
    /// number (never read) leaves room for, so the packet needs no field of its own.
    pub seq: u64,
    /// Payload bytes.
    pub payload_bytes: u32,
    /// Bytes of the IP packet: headers plus payload (link framing is added per link).
    pub ip_bytes: u32,
    /// ACK: the next byte the receiver expects (cumulative acknowledgment).
    pub ack: u64,
    /// ACK: advertised receive window in bytes (already scaled).
    pub window_bytes: u32,
    /// ACK: selective acknowledgment blocks (RFC 2018).
    pub sack: SackBlocks,
    /// RFC 7323 timestamp value: when the sender sent this packet.
    pub ts_val: Time,
    /// RFC 7323 timestamp echo reply.
    pub ts_ecr: Time,
    /// Data: this segment retransmits bytes sent before.
    pub retransmission: bool,
    /// ECN bits (RFC 3168); empty for a flow without ECN.
    pub ecn: Ecn,
}

impl Packet {
    pub fn end_seq(&self) -> u64 {
        self.seq + self.payload_bytes as u64
    }

    /// ACK: the AccECN option's ECEB field (CE-marked payload bytes received, modulo 2^24),
    /// if the option carried it.
    pub fn accecn_eceb(&self) -> Option<u32> {
        (self.kind == PacketKind::Ack && self.seq & ACCECN_ECEB_PRESENT != 0).then_some(self.seq as u32 & 0xFF_FFFF)
    }

    /// ACK: carries `eceb` (modulo 2^24) in the AccECN option.
    pub fn set_accecn_eceb(&mut self, eceb: u32) {
        self.seq = ACCECN_ECEB_PRESENT | (eceb & 0xFF_FFFF) as u64;
    }
}

/// Packets for unit tests of network elements.
#[cfg(test)]
pub mod testing {
    use super::*;

    /// A data segment of flow 0 from node 0 to node 1: `ip_bytes` with 40 header bytes.
    pub fn data(seq: u64, ip_bytes: u32) -> Packet {
        Packet {
            flow: 0,
            conn: 0,
            src: 0,
            dst: 1,
            kind: PacketKind::Data,
            seq,
            payload_bytes: ip_bytes - 40,
            ip_bytes,
            ack: 0,
            window_bytes: 0,
            sack: Default::default(),
            ts_val: 0,
            ts_ecr: 0,
            retransmission: false,
            ecn: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_stays_within_96_bytes() {
        // Queues and links hold packets by value: their size is the simulator's memory traffic.
        assert!(std::mem::size_of::<Packet>() <= 96, "{}", std::mem::size_of::<Packet>());
    }

    #[test]
    fn sack_blocks_come_back_as_pushed() {
        // Up to the largest window (RFC 7323 2.3: 1 GiB) above the ACK, and a D-SACK block
        // below it (RFC 2883).
        let mut b = SackBlocks::default();
        b.push(5_000_000, 1_002_896, 1_004_344);
        b.push(5_000_000, 5_002_896, 5_004_344);
        b.push(5_000_000, 5_000_000 + (1 << 30) - 1448, 5_000_000 + (1 << 30));
        assert_eq!(b.len(), 3);
        let got: Vec<_> = b.iter(5_000_000).collect();
        assert_eq!(
            got,
            vec![(1_002_896, 1_004_344), (5_002_896, 5_004_344), (5_000_000 + (1 << 30) - 1448, 5_000_000 + (1 << 30))]
        );
    }

    #[test]
    fn ecn_bits_are_independent() {
        let mut e = Ecn::default();
        e.set(Ecn::ECT);
        e.set(Ecn::CWR);
        assert!(e.has(Ecn::ECT) && e.has(Ecn::CWR) && !e.has(Ecn::CE) && !e.has(Ecn::ECE));
        assert!(!e.has(Ecn::ECT1));
        let mut l4s = Ecn::default();
        l4s.set(Ecn::ECT1);
        l4s.set(Ecn::CE);
        assert!(l4s.has(Ecn::ECT1) && l4s.has(Ecn::CE) && !l4s.has(Ecn::ECT));
        assert!(l4s.is_ect() && e.is_ect() && !Ecn::CE.is_ect());
    }

    #[test]
    fn ace_is_the_ce_counter_modulo_8_in_ae_cwr_ece() {
        // RFC 9768 Figure 3: AE is bit 2 of ACE, CWR bit 1, ECE bit 0; the IP bits are apart.
        let mut e = Ecn::ECT1;
        for counter in 0..20u32 {
            e.set_ace(counter);
            assert_eq!(e.ace() as u32, counter % 8);
            assert!(e.has(Ecn::ECT1));
        }
        e.set_ace(5); // r.cep's initial value: AE and ECE set, CWR clear
        assert!(e.has(Ecn::AE) && e.has(Ecn::ECE) && !e.has(Ecn::CWR));
    }

    #[test]
    fn syn_options_as_linux_lays_them_out() {
        assert_eq!(IPV4_TCP_HEADER_BYTES + syn_option_bytes(true, true, true), 60);
        assert_eq!(IPV4_TCP_HEADER_BYTES + syn_option_bytes(true, false, true), 52);
        assert_eq!(syn_option_bytes(false, false, false), 4); // MSS only
        assert_eq!(syn_option_bytes(false, true, false), 16);
    }
}
