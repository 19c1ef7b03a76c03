//! Super-packets through the TUN devices: the virtio-net header that precedes every packet
//! on a device opened with `IFF_VNET_HDR`, checksums, cutting a TCP super-packet (GSO/TSO)
//! into the segments a NIC would put on the wire, and the rules by which segments the links
//! release together are merged back into one, as a receiving NIC's GRO does.
//!
//! Sources (behaviour, not code): the virtio specification 1.2 section 5.1.6 (the header,
//! `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum over `csum_start..` goes at
//! `csum_start + csum_offset`, and the field holds the pseudo-header's sum meanwhile);
//! Linux `include/linux/virtio_net.h` (`virtio_net_hdr_from_skb`: `hdr_len` is the linear
//! part's length, not the headers', so it is not trusted here); `net/ipv4/tcp_offload.c`
//! `tcp_gso_segment` (sequence numbers advance by `gso_size`; FIN and PSH stay on the last
//! segment only, CWR on the first only) and `tcp_gro_receive` (what may merge);
//! `net/ipv4/af_inet.c` `inet_gso_segment` (the IP ID increases by one per segment, the
//! total length and header checksum are per segment) and `inet_gro_receive` (no IP options,
//! same TTL and TOS, same DF, consecutive IDs unless DF is set).

use crate::ip::{PROTO_TCP, PROTO_UDP, TCP_FIN, TCP_RST, TCP_SYN};

/// struct virtio_net_hdr (without `num_buffers`): the TUN default `TUNSETVNETHDRSZ`.
pub const VNET_HDR_LEN: usize = 10;
/// `flags`: the transport checksum is to be completed (the packet's holds the pseudo-header).
pub const F_NEEDS_CSUM: u8 = 1;
/// `gso_type`.
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
/// The ECN bit of `gso_type`: the super-packet's first segment carries CWR.
pub const GSO_ECN: u8 = 0x80;

pub const TCP_PSH: u8 = 0x08;
pub const TCP_URG: u8 = 0x20;
pub const TCP_CWR: u8 = 0x80;

/// The largest IPv4 packet (its 16-bit total length): a merged super-packet stays within it.
pub const MAX_IP_BYTES: usize = 65_535;

/// The virtio-net header, little-endian on the device (`TUNSETVNETLE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    pub fn read(b: &[u8]) -> VnetHdr {
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr { flags: b[0], gso_type: b[1], hdr_len: le(2), gso_size: le(4), csum_start: le(6), csum_offset: le(8) }
    }

    pub fn write(&self, b: &mut [u8; VNET_HDR_LEN]) {
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }
}

/// The Internet checksum's running sum (RFC 1071) of `data` as big-endian 16-bit words, added
/// to `sum` and not yet folded. 32-bit words at a time: 2^16 = 1 modulo 2^16 - 1, so the
/// fold of their sum is the sum of the 16-bit words.
#[inline]
pub fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u32::from_be_bytes([w[0], w[1], w[2], w[3]]) as u64;
    }
    let rest = words.remainder();
    let mut pairs = rest.chunks_exact(2);
    for p in &mut pairs {
        acc += u16::from_be_bytes([p[0], p[1]]) as u64;
    }
    if let [last] = pairs.remainder() {
        acc += (*last as u64) << 8;
    }
    acc
}

#[inline]
pub fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The TCP/UDP pseudo-header's sum over IPv4 (RFC 9293 3.1): addresses, protocol, length.
#[inline]
pub fn pseudo_header(ip: &[u8], protocol: u8, transport_bytes: usize) -> u64 {
    sum(&ip[12..20], protocol as u64 + transport_bytes as u64)
}

/// Writes the IPv4 header checksum of `p` (RFC 791).
#[inline]
pub fn set_ip_checksum(p: &mut [u8]) {
    let ihl = ihl(p);
    p[10] = 0;
    p[11] = 0;
    let c = !fold(sum(&p[..ihl], 0));
    p[10..12].copy_from_slice(&c.to_be_bytes());
}

#[inline]
fn ihl(p: &[u8]) -> usize {
    ((p[0] & 0x0f) as usize) * 4
}

#[inline]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

#[inline]
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Completes the checksum a sender left to the device (`F_NEEDS_CSUM`): the sum from
/// `csum_start` to the end, whose checksum field holds the pseudo-header's sum, goes into
/// the field. False when the offsets do not fit the packet.
pub fn complete_checksum(p: &mut [u8], h: &VnetHdr) -> bool {
    let (start, at) = (h.csum_start as usize, h.csum_start as usize + h.csum_offset as usize);
    if start >= p.len() || at + 2 > p.len() {
        return false;
    }
    let mut c = !fold(sum(&p[start..], 0));
    // UDP over IPv4: a zero checksum means "none" (RFC 768), so a computed zero is sent as all ones.
    if c == 0 && p.len() >= 20 && p[9] == PROTO_UDP {
        c = 0xffff;
    }
    p[at..at + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// A TCP/IPv4 super-packet's layout: headers (IP + TCP, options included), the segment
/// payload (`gso_size`, the MSS the sender chose for the device's MTU), the whole payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gso {
    pub header_bytes: usize,
    pub mss: usize,
    pub payload_bytes: usize,
    pub segments: usize,
}

/// The layout of the super-packet `p` that the header `h` describes; None unless it is
/// TCP over IPv4 with consistent lengths.
pub fn plan(h: &VnetHdr, p: &[u8]) -> Option<Gso> {
    if h.gso_type & !GSO_ECN != GSO_TCPV4 || h.gso_size == 0 || p.len() < 40 || p[0] >> 4 != 4 {
        return None;
    }
    let ihl = ihl(p);
    let total = be16(p, 2) as usize;
    if ihl < 20 || p[9] != PROTO_TCP || total > p.len() || ihl + 20 > total {
        return None;
    }
    let header_bytes = ihl + ((p[ihl + 12] >> 4) as usize) * 4;
    if header_bytes < ihl + 20 || header_bytes > total {
        return None;
    }
    let (mss, payload_bytes) = (h.gso_size as usize, total - header_bytes);
    Some(Gso { header_bytes, mss, payload_bytes, segments: payload_bytes.div_ceil(mss).max(1) })
}

/// Writes segment `i` of super-packet `p` into `out` and returns its length, as
/// `tcp_gso_segment` and `inet_gso_segment` make it: the headers copied, then the IP total
/// length, IP ID + i and header checksum, the sequence number + i x MSS, FIN and PSH only
/// on the last segment and CWR only on the first, and the full TCP checksum (the wire has
/// no device to complete it). None if `out` is too small.
pub fn write_segment(p: &[u8], g: &Gso, i: usize, out: &mut [u8]) -> Option<usize> {
    let from = g.header_bytes + i * g.mss;
    let len = g.mss.min(g.payload_bytes - i * g.mss);
    let n = g.header_bytes + len;
    if n > out.len() {
        return None;
    }
    out[..g.header_bytes].copy_from_slice(&p[..g.header_bytes]);
    out[g.header_bytes..n].copy_from_slice(&p[from..from + len]);
    let ihl = ihl(p);
    out[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    out[4..6].copy_from_slice(&be16(p, 4).wrapping_add(i as u16).to_be_bytes());
    set_ip_checksum(out);
    let seq = be32(p, ihl + 4).wrapping_add((i * g.mss) as u32);
    out[ihl + 4..ihl + 8].copy_from_slice(&seq.to_be_bytes());
    if i + 1 < g.segments {
        out[ihl + 13] &= !(TCP_FIN | TCP_PSH);
    }
    if i > 0 {
        out[ihl + 13] &= !TCP_CWR;
    }
    set_tcp_checksum(&mut out[..n]);
    Some(n)
}

/// Writes the full TCP checksum of the IPv4 packet `p`.
pub fn set_tcp_checksum(p: &mut [u8]) {
    let ihl = ihl(p);
    p[ihl + 16] = 0;
    p[ihl + 17] = 0;
    let c = !fold(sum(&p[ihl..], pseudo_header(p, PROTO_TCP, p.len() - ihl)));
    p[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
}

/// A TCP segment a merge may start from: IPv4 without options (as `inet_gro_receive`
/// asks), not a fragment, carrying data, without SYN, RST or URG. Its payload length.
pub fn mergeable(p: &[u8]) -> Option<usize> {
    if p.len() < 40 || p[0] != 0x45 || p[9] != PROTO_TCP || be16(p, 6) & 0x3fff != 0 {
        return None;
    }
    let header_bytes = 20 + ((p[32] >> 4) as usize) * 4;
    if header_bytes < 40 || header_bytes >= p.len() || p[33] & (TCP_SYN | TCP_RST | TCP_URG) != 0 {
        return None;
    }
    Some(p.len() - header_bytes)
}

/// Whether two mergeable segments belong to one flow (addresses and ports).
#[inline]
pub fn same_flow(a: &[u8], b: &[u8]) -> bool {
    a[12..24] == b[12..24]
}

/// Whether `next` (mergeable, of the same flow) may join a merged segment that began with
/// `first` and ends with `last`, whose segments carry `mss` bytes, as `tcp_gro_receive` and
/// `inet_gro_receive` decide: `last` did not end the merge (shorter than `mss`, or PSH or
/// FIN), same TTL, TOS (so ECN marks too) and DF, consecutive IP IDs unless DF is set, the
/// next sequence number, the same ACK, window, data offset and options, no CWR on `next`,
/// at most `mss` bytes, and the result within an IPv4 packet.
pub fn follows(first: &[u8], last: &[u8], next: &[u8], mss: usize, merged_ip_bytes: usize) -> bool {
    let last_payload = last.len() - 20 - ((last[32] >> 4) as usize) * 4;
    let next_header = 20 + ((next[32] >> 4) as usize) * 4;
    let next_payload = next.len() - next_header;
    last_payload == mss
        && last[33] & (TCP_PSH | TCP_FIN) == 0
        && next_payload <= mss
        && merged_ip_bytes + next_payload <= MAX_IP_BYTES
        && first[1] == next[1]
        && first[8] == next[8]
        && (first[6] ^ next[6]) & 0x40 == 0
        && (next[6] & 0x40 != 0 || be16(next, 4) == be16(last, 4).wrapping_add(1))
        && be32(next, 24) == be32(last, 24).wrapping_add(last_payload as u32)
        && first[28..32] == next[28..32]
        && first[32] == next[32]
        && (first[33] ^ next[33]) & !(TCP_CWR | TCP_FIN | TCP_PSH) == 0
        && next[33] & TCP_CWR == 0
        && first[34..36] == next[34..36]
        && first[40..next_header] == next[40..next_header]
}

/// Turns `first`, the head of a merged run of `segments` segments of `mss` bytes whose
/// last segment carries `last_flags`, into the super-packet's header: total length and IP
/// checksum of the whole, the last segment's FIN and PSH, and the pseudo-header's sum in
/// the TCP checksum (the receiving kernel trusts `F_NEEDS_CSUM`, as from a NIC that
/// verified it). Returns the virtio header to write before it; a single segment goes as
/// itself with its checksum left to the device.
pub fn finish_merge(first: &mut [u8], merged_ip_bytes: usize, segments: usize, mss: usize, last_flags: u8) -> VnetHdr {
    let header_bytes = 20 + ((first[32] >> 4) as usize) * 4;
    first[2..4].copy_from_slice(&(merged_ip_bytes as u16).to_be_bytes());
    set_ip_checksum(first);
    first[33] |= last_flags & (TCP_FIN | TCP_PSH);
    let partial = fold(pseudo_header(first, PROTO_TCP, merged_ip_bytes - 20));
    first[36..38].copy_from_slice(&partial.to_be_bytes());
    let gso = segments > 1;
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: if !gso {
            GSO_NONE
        } else if first[33] & TCP_CWR != 0 {
            GSO_TCPV4 | GSO_ECN
        } else {
            GSO_TCPV4
        },
        hdr_len: header_bytes as u16,
        gso_size: if gso { mss as u16 } else { 0 },
        csum_start: 20,
        csum_offset: 16,
    }
}

#[cfg(test)]
mod tests;
