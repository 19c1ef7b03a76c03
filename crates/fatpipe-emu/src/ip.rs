//! The few IPv4, TCP and UDP header fields the emulator reads from real packets, and the one
//! it writes (the ECN field, when a RED queue marks Congestion Experienced).

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// TCP flags (RFC 9293 section 3.1).
pub const TCP_FIN: u8 = 0x01;
pub const TCP_SYN: u8 = 0x02;
pub const TCP_RST: u8 = 0x04;
pub const TCP_ACK: u8 = 0x10;

/// What the emulator needs of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub protocol: u8,
    pub src: [u8; 4],
    pub dst: [u8; 4],
    /// Total length of the IP packet (the bytes a link serializes, before framing).
    pub ip_bytes: u32,
    /// Transport payload bytes (TCP: after options).
    pub payload_bytes: u32,
    /// Ports (0 for other protocols).
    pub src_port: u16,
    pub dst_port: u16,
    /// TCP only: sequence number and flags.
    pub seq: u32,
    pub tcp_flags: u8,
    /// The IP header's ECN field (RFC 3168): 0 not ECT, 1 ECT(1), 2 ECT(0), 3 CE.
    pub ecn: u8,
}

/// Reads the headers of an IPv4 packet; None for anything else (IPv6, truncated, options
/// beyond the buffer, a fragment after the first).
pub fn parse(p: &[u8]) -> Option<Header> {
    if p.len() < 20 || p[0] >> 4 != 4 {
        return None;
    }
    let ihl = ((p[0] & 0x0f) as usize) * 4;
    let total = u16::from_be_bytes([p[2], p[3]]) as usize;
    if ihl < 20 || total < ihl || total > p.len() {
        return None;
    }
    let fragment_offset = u16::from_be_bytes([p[6], p[7]]) & 0x1fff;
    let mut h = Header {
        protocol: p[9],
        src: [p[12], p[13], p[14], p[15]],
        dst: [p[16], p[17], p[18], p[19]],
        ip_bytes: total as u32,
        payload_bytes: (total - ihl) as u32,
        src_port: 0,
        dst_port: 0,
        seq: 0,
        tcp_flags: 0,
        ecn: p[1] & 3,
    };
    let t = &p[ihl..total];
    if fragment_offset != 0 {
        return Some(h);
    }
    match h.protocol {
        PROTO_TCP if t.len() >= 20 => {
            let doff = ((t[12] >> 4) as usize) * 4;
            if doff < 20 || doff > t.len() {
                return None;
            }
            h.src_port = u16::from_be_bytes([t[0], t[1]]);
            h.dst_port = u16::from_be_bytes([t[2], t[3]]);
            h.seq = u32::from_be_bytes([t[4], t[5], t[6], t[7]]);
            h.tcp_flags = t[13];
            h.payload_bytes = (t.len() - doff) as u32;
        }
        PROTO_UDP if t.len() >= 8 => {
            h.src_port = u16::from_be_bytes([t[0], t[1]]);
            h.dst_port = u16::from_be_bytes([t[2], t[3]]);
            h.payload_bytes = (t.len() - 8) as u32;
        }
        PROTO_TCP | PROTO_UDP => return None,
        _ => {}
    }
    Some(h)
}

/// Marks an ECN-capable packet Congestion Experienced (ECN field 11), updating the header
/// checksum incrementally (RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m')).
pub fn set_ce(p: &mut [u8]) {
    let old_word = u16::from_be_bytes([p[0], p[1]]);
    p[1] |= 3;
    let new_word = u16::from_be_bytes([p[0], p[1]]);
    let checksum = u16::from_be_bytes([p[10], p[11]]);
    let mut sum = (!checksum as u32) + (!old_word as u32) + new_word as u32;
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

/// The IPv4 header checksum (RFC 791, RFC 1071): 0 when the header is intact.
pub fn header_checksum(p: &[u8]) -> u16 {
    let ihl = ((p[0] & 0x0f) as usize) * 4;
    let mut sum: u32 = p[..ihl].chunks_exact(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Serial-number comparison of 32-bit sequence numbers (RFC 1982): a before b.
#[inline]
pub fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP segment 10.0.0.1:32768 -> 10.0.0.4:5001 with 12 option bytes and `payload` bytes.
    fn segment(payload: usize, ecn: u8) -> Vec<u8> {
        let total = 20 + 32 + payload;
        let mut p = vec![0u8; total];
        p[0] = 0x45;
        p[1] = ecn;
        p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        p[6] = 0x40;
        p[8] = 64;
        p[9] = PROTO_TCP;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 4]);
        let c = header_checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20..22].copy_from_slice(&32768u16.to_be_bytes());
        p[22..24].copy_from_slice(&5001u16.to_be_bytes());
        p[24..28].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
        p[32] = 8 << 4;
        p[33] = TCP_ACK;
        p
    }

    #[test]
    fn reads_a_tcp_segment() {
        let h = parse(&segment(1448, 2)).unwrap();
        assert_eq!((h.protocol, h.ip_bytes, h.payload_bytes), (PROTO_TCP, 1500, 1448));
        assert_eq!((h.src, h.dst, h.src_port, h.dst_port), ([10, 0, 0, 1], [10, 0, 0, 4], 32768, 5001));
        assert_eq!((h.seq, h.tcp_flags, h.ecn), (0xffff_fff0, TCP_ACK, 2));
        assert!(parse(&segment(10, 0)[..30]).is_none(), "truncated");
        let mut v6 = segment(0, 0);
        v6[0] = 0x60;
        assert!(parse(&v6).is_none());
    }

    #[test]
    fn ce_mark_keeps_the_checksum_valid() {
        for ecn in [1, 2] {
            let mut p = segment(100, ecn);
            assert_eq!(header_checksum(&p), 0);
            set_ce(&mut p);
            assert_eq!(p[1] & 3, 3);
            assert_eq!(header_checksum(&p), 0, "RFC 1624 update");
        }
    }

    #[test]
    fn sequence_numbers_compare_across_the_wrap() {
        assert!(seq_before(0xffff_fff0, 0x10));
        assert!(!seq_before(0x10, 0xffff_fff0));
        assert!(!seq_before(5, 5));
    }
}
