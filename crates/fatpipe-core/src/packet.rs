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
/// stored as offsets from the cumulative ACK so that a packet stays small.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    count: u8,
    blocks: [(u32, u32); 4],
}

impl SackBlocks {
    /// Adds the block `[start, end)` of an ACK whose cumulative ACK is `ack`.
    pub fn push(&mut self, ack: u64, start: u64, end: u64) {
        debug_assert!(start >= ack && end > start && (self.count as usize) < 4);
        self.blocks[self.count as usize] = ((start - ack) as u32, (end - ack) as u32);
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
        self.blocks[..self.count as usize].iter().map(move |&(s, e)| (ack + s as u64, ack + e as u64))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// A TCP segment carrying data from the flow's sender to its receiver.
    Data,
    /// A pure TCP acknowledgment from the flow's receiver to its sender.
    Ack,
    /// A UDP datagram from a UDP flow's sender to its receiver; `seq` numbers the datagrams
    /// from 0 (as iperf's UDP payload does). Nothing answers it.
    Datagram,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Index of the flow this packet belongs to.
    pub flow: u32,
    /// Source and destination node indices (routing looks at `dst`).
    pub src: u32,
    pub dst: u32,
    pub kind: PacketKind,
    /// Data: sequence number of the first payload byte (bytes count from 0, 64-bit so they
    /// never wrap in a simulation; a capture folds them to 32 bits).
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
}

impl Packet {
    pub fn end_seq(&self) -> u64 {
        self.seq + self.payload_bytes as u64
    }
}
