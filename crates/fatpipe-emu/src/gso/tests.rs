//! Segmentation and merging against hand-built packets. Checksums are verified by a
//! separate, naive implementation (16-bit words one at a time, end-around carry at each
//! step, RFC 1071 section 2), not by the functions under test.

use super::*;
use crate::clock::Clock;
use crate::coalesce::Coalescing;
use crate::deliver::Delivery;
use crate::pool::Pool;
use fatpipe_core::net::link::LinkSpec;
use fatpipe_core::net::link::Offered;
use fatpipe_core::net::queue::droptail::DropTailConfig;
use fatpipe_core::net::queue::QueueSpec;
use fatpipe_core::net::Link;
use fatpipe_core::packet::{Ecn, Packet, PacketKind, SackBlocks};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const ACK: u8 = 0x10;
const MSS: usize = 1448;
/// IP (20) + TCP (20) + the timestamp option with two NOPs (12): Linux's data segments.
const HEADERS: usize = 52;

/// A TCP/IPv4 super-packet 10.0.0.1:32768 -> 10.0.0.2:5001 as a sender's kernel hands it
/// to a device with TSO: DF set, one header for `payload` bytes.
fn super_packet(payload: usize, seq: u32, ip_id: u16, flags: u8) -> Vec<u8> {
    let total = HEADERS + payload;
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[1] = 0x02; // ECT(0)
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&ip_id.to_be_bytes());
    p[6] = 0x40;
    p[8] = 64;
    p[9] = PROTO_TCP;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20..22].copy_from_slice(&32768u16.to_be_bytes());
    p[22..24].copy_from_slice(&5001u16.to_be_bytes());
    p[24..28].copy_from_slice(&seq.to_be_bytes());
    p[28..32].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    p[32] = 8 << 4;
    p[33] = flags;
    p[34..36].copy_from_slice(&502u16.to_be_bytes());
    p[40..52].copy_from_slice(&[1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 3]);
    for (i, b) in p[HEADERS..].iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    p
}

fn tso(p: &[u8]) -> VnetHdr {
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV4,
        hdr_len: p.len() as u16, // what Linux writes (the linear part): not to be trusted
        gso_size: MSS as u16,
        csum_start: 20,
        csum_offset: 16,
    }
}

/// RFC 1071's sum, one 16-bit word at a time with the carry folded at each step.
fn naive_sum(words: impl IntoIterator<Item = u8>) -> u16 {
    let bytes: Vec<u8> = words.into_iter().collect();
    let mut s: u32 = 0;
    for pair in bytes.chunks(2) {
        let w = ((pair[0] as u32) << 8) | pair.get(1).copied().unwrap_or(0) as u32;
        s += w;
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

fn ip_checksum_ok(p: &[u8]) -> bool {
    naive_sum(p[..20].iter().copied()) == 0xffff
}

fn tcp_checksum_ok(p: &[u8]) -> bool {
    let tcp_len = (p.len() - 20) as u16;
    let pseudo = [&p[12..20], &[0, PROTO_TCP], &tcp_len.to_be_bytes()[..]].concat();
    naive_sum(pseudo.into_iter().chain(p[20..].iter().copied())) == 0xffff
}

fn field16(p: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([p[i], p[i + 1]])
}

fn field32(p: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]])
}

fn segments(p: &[u8]) -> Vec<Vec<u8>> {
    let g = plan(&tso(p), p).expect("a TCP super-packet");
    (0..g.segments)
        .map(|i| {
            let mut out = vec![0u8; 1500];
            let n = write_segment(p, &g, i, &mut out).expect("fits");
            out.truncate(n);
            out
        })
        .collect()
}

#[test]
fn a_super_packet_becomes_mss_segments_with_their_own_headers() {
    // 3 full segments and a 100-byte tail; the sequence number and the IP ID wrap.
    let (seq, id) = (0xffff_f000u32, 0xfffeu16);
    let p = super_packet(3 * MSS + 100, seq, id, ACK | TCP_PSH | TCP_FIN | TCP_CWR);
    let g = plan(&tso(&p), &p).unwrap();
    assert_eq!(g, Gso { header_bytes: HEADERS, mss: MSS, payload_bytes: 3 * MSS + 100, segments: 4 });
    let segs = segments(&p);
    for (i, s) in segs.iter().enumerate() {
        let payload = if i < 3 { MSS } else { 100 };
        assert_eq!(s.len(), HEADERS + payload);
        assert_eq!(field16(s, 2) as usize, s.len(), "IP total length");
        assert_eq!(field16(s, 4), id.wrapping_add(i as u16), "IP ID + i (0xfffe, 0xffff, 0, 1)");
        assert_eq!(field32(s, 24), seq.wrapping_add((i * MSS) as u32), "sequence number + i x MSS");
        assert!(ip_checksum_ok(s), "IP header checksum of segment {i}");
        assert!(tcp_checksum_ok(s), "TCP checksum of segment {i}");
        let flags = s[33];
        assert_eq!(flags & ACK, ACK);
        assert_eq!(flags & (TCP_PSH | TCP_FIN) != 0, i == 3, "FIN and PSH on the last segment only");
        assert_eq!(flags & TCP_CWR != 0, i == 0, "CWR on the first segment only");
        assert_eq!(&s[..2], &p[..2], "version, IHL and TOS (ECN) copied");
        assert_eq!(&s[28..33], &p[28..33], "ACK and data offset copied");
        assert_eq!(&s[34..36], &p[34..36], "window copied");
        assert_eq!(&s[38..HEADERS], &p[38..HEADERS], "urgent pointer and options copied");
        assert_eq!(&s[HEADERS..], &p[HEADERS + i * MSS..HEADERS + i * MSS + payload], "payload in order");
    }
    let mut small = [0u8; 1000];
    assert_eq!(write_segment(&p, &g, 0, &mut small), None, "a segment never overruns its buffer");
}

#[test]
fn only_tcp_over_ipv4_is_cut() {
    let p = super_packet(2 * MSS, 1, 1, ACK);
    assert!(plan(&VnetHdr { gso_type: 4, ..tso(&p) }, &p).is_none(), "TCPv6");
    assert!(plan(&VnetHdr { gso_size: 0, ..tso(&p) }, &p).is_none());
    assert!(plan(&VnetHdr { gso_type: GSO_TCPV4 | GSO_ECN, ..tso(&p) }, &p).is_some());
    let mut udp = p.clone();
    udp[9] = PROTO_UDP;
    assert!(plan(&tso(&udp), &udp).is_none());
    assert!(plan(&tso(&p), &p[..p.len() - 1]).is_none(), "shorter than its IP length");
}

#[test]
fn a_checksum_left_to_the_device_is_completed() {
    let mut p = super_packet(700, 5, 5, ACK);
    // As the kernel leaves it: the pseudo-header's sum, not inverted (__tcp_v4_send_check).
    let partial = fold(pseudo_header(&p, PROTO_TCP, p.len() - 20));
    p[36..38].copy_from_slice(&partial.to_be_bytes());
    assert!(!tcp_checksum_ok(&p));
    let h = tso(&p);
    assert!(complete_checksum(&mut p, &h));
    assert!(tcp_checksum_ok(&p));
    let mut short = p.clone();
    assert!(!complete_checksum(&mut short[..30], &h), "offsets beyond the packet");
}

#[test]
fn segments_of_one_super_packet_merge_and_the_merge_cuts_back_into_them() {
    let p = super_packet(3 * MSS + 100, 0xffff_f000, 7, ACK | TCP_PSH);
    let segs = segments(&p);
    let mut merged = segs[0].clone();
    let mut ip_bytes = merged.len();
    for s in &segs[1..] {
        assert!(same_flow(&segs[0], s));
        let last =
            if ip_bytes == segs[0].len() { &segs[0] } else { &segs[segs.iter().position(|x| x == s).unwrap() - 1] };
        assert!(follows(&segs[0], last, s, MSS, ip_bytes));
        merged.extend_from_slice(&s[HEADERS..]);
        ip_bytes += s.len() - HEADERS;
    }
    let h = finish_merge(&mut merged, ip_bytes, segs.len(), MSS, segs[3][33]);
    assert_eq!((h.gso_type, h.gso_size as usize, h.hdr_len as usize), (GSO_TCPV4, MSS, HEADERS));
    assert_eq!((h.flags, h.csum_start, h.csum_offset), (F_NEEDS_CSUM, 20, 16));
    assert_eq!(field16(&merged, 2) as usize, merged.len());
    assert!(ip_checksum_ok(&merged));
    assert_eq!(merged[33] & TCP_PSH, TCP_PSH, "the last segment's PSH on the merge");
    // The receiving kernel trusts the checksum; completing it gives the real one.
    let mut completed = merged.clone();
    assert!(complete_checksum(&mut completed, &h));
    assert!(tcp_checksum_ok(&completed));
    // Cut again with the header written for it, the merge gives back the wire's segments.
    let g = plan(&h, &merged).unwrap();
    for (i, s) in segs.iter().enumerate() {
        let mut out = vec![0u8; 1500];
        let n = write_segment(&merged, &g, i, &mut out).unwrap();
        assert_eq!(&out[..n], &s[..], "segment {i}");
    }
}

#[test]
fn what_breaks_a_merge() {
    let segs = segments(&super_packet(3 * MSS, 100, 1, ACK));
    let (a, b) = (&segs[0], &segs[1]);
    let ok = |next: &[u8]| follows(a, a, next, MSS, a.len());
    assert!(ok(b));
    let edit = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut x = b.clone();
        f(&mut x);
        x
    };
    assert!(!ok(&segs[2]), "a hole in the sequence (a segment lost)");
    assert!(!ok(&edit(&|x| x[31] ^= 1)), "another ACK");
    assert!(!ok(&edit(&|x| x[35] ^= 1)), "another window");
    assert!(!ok(&edit(&|x| x[51] ^= 1)), "another timestamp");
    assert!(!ok(&edit(&|x| x[1] |= 3)), "CE-marked (another TOS)");
    assert!(!ok(&edit(&|x| x[8] -= 1)), "another TTL");
    assert!(!ok(&edit(&|x| x[33] |= TCP_CWR)), "CWR on the next");
    assert!(ok(&edit(&|x| x[33] |= TCP_PSH)), "PSH on the next joins, then ends the merge");
    assert!(ok(&edit(&|x| x[5] ^= 0x55)), "any IP ID with DF set");
    let mut psh = a.clone();
    psh[33] |= TCP_PSH;
    assert!(!follows(&psh, &psh, b, MSS, a.len()), "after PSH");
    assert!(!follows(a, a, b, MSS + 1, a.len()), "after a short segment");
    assert!(!follows(a, a, b, MSS, MAX_IP_BYTES - 100), "beyond 64 KB");
    let mut no_df = segs.clone();
    for s in &mut no_df {
        s[6] = 0;
    }
    assert!(follows(&no_df[0], &no_df[0], &no_df[1], MSS, a.len()), "consecutive IDs without DF");
    no_df[1][5] ^= 0x55;
    assert!(!follows(&no_df[0], &no_df[0], &no_df[1], MSS, a.len()), "IDs must be consecutive without DF");
    let mut ack_only = a[..HEADERS].to_vec();
    ack_only[2..4].copy_from_slice(&(HEADERS as u16).to_be_bytes());
    assert_eq!(mergeable(&ack_only), None, "a pure ACK is not merged");
    assert_eq!(mergeable(a), Some(MSS));
}

fn descriptor(slot: u32, ip_bytes: usize) -> Packet {
    Packet {
        flow: 0,
        conn: 0,
        src: 0,
        dst: 1,
        kind: PacketKind::Data,
        seq: slot as u64,
        payload_bytes: (ip_bytes - HEADERS) as u32,
        ip_bytes: ip_bytes as u32,
        ack: 0,
        window_bytes: 0,
        sack: SackBlocks::default(),
        ts_val: 0,
        ts_ecr: 0,
        retransmission: false,
        ecn: Ecn::default(),
    }
}

/// Two super-packets through a 1 Gb/s link whose queue holds two packets, released in one
/// pass to a device that takes super-packets (a datagram socket stands in for it: one
/// message per write): the first loses its fourth segment at the queue, so what reaches
/// the host is a merge of the first's three segments and one of the second's three, never
/// a merge across the hole.
#[test]
fn a_super_packet_crossing_a_drop_in_the_link_is_merged_on_each_side_of_the_hole() {
    let first = super_packet(4 * MSS, 1_000, 1, ACK);
    let second = super_packet(3 * MSS, 1_000 + 4 * MSS as u32, 5, ACK | TCP_PSH);
    let queue = QueueSpec::Droptail(DropTailConfig {
        limit_packets: Some(2),
        limit_bytes: None,
        cell_bytes: None,
        limit_cells: None,
        mark_threshold_packets: None,
    });
    let spec = LinkSpec {
        name: "l".into(),
        from: 0,
        to: 1,
        rate_bps: 1_000_000_000,
        delay_ps: 1_000_000_000,
        framing_bytes: 38,
        mtu_bytes: 1500,
        queue,
        impairments: vec![],
        tx_ring: None,
    };
    let mut link = Link::new(spec, 1);
    let mut pool = Pool::new(1500, 4);
    let offer = |pool: &mut Pool, link: &mut Link, at: u64, segs: Vec<Vec<u8>>| -> Vec<Vec<u8>> {
        let mut kept = Vec::new();
        for s in segs {
            let slot = pool.take();
            pool.buffer(slot)[..s.len()].copy_from_slice(&s);
            pool.set_len(slot, s.len());
            match link.offer(at, &descriptor(slot, s.len())) {
                Offered::Admitted { .. } => kept.push(s),
                _ => pool.put(slot),
            }
        }
        kept
    };
    let kept_first = offer(&mut pool, &mut link, 0, segments(&first));
    assert_eq!(kept_first.len(), 3, "one serializing, two queued, the fourth dropped");
    // The queue has drained when the second super-packet comes (3 x 12.3 us later).
    let kept_second = offer(&mut pool, &mut link, 40_000_000, segments(&second));
    assert_eq!(kept_second.len(), 3);

    let (tx, rx) = datagram_pair();
    let mut delivery = Delivery::new([(tx.as_raw_fd(), true, Coalescing::IMMEDIATE)], Clock::start());
    let end = link.last_evented_arrival().unwrap().max(2_000_000_000);
    while let Some(t) = link.next_arrival().filter(|&t| t <= end) {
        let pkt = link.pop_arrival(t);
        delivery.deliver(&mut pool, 0, pkt.seq as u32, t);
    }
    delivery.flush(&mut pool, end);
    assert_eq!(delivery.counters.writes, 2);
    assert_eq!((delivery.counters.super_packets, delivery.counters.super_packet_segments), (2, 6));

    for (expected, flags) in [(&kept_first, ACK), (&kept_second, ACK | TCP_PSH)] {
        let mut buf = vec![0u8; 70_000];
        // SAFETY: reads one datagram into the buffer.
        let n = unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        assert!(n > 0);
        let h = VnetHdr::read(&buf[..VNET_HDR_LEN]);
        let merged = &buf[VNET_HDR_LEN..n as usize];
        assert_eq!(field16(merged, 2) as usize, merged.len());
        assert_eq!(field32(merged, 24), field32(&expected[0], 24), "starts where the run starts");
        assert_eq!(merged.len(), HEADERS + 3 * MSS);
        assert_eq!(merged[33], flags);
        assert!(ip_checksum_ok(merged));
        let g = plan(&h, merged).unwrap();
        for (i, s) in expected.iter().enumerate() {
            let mut out = vec![0u8; 1500];
            let k = write_segment(merged, &g, i, &mut out).unwrap();
            assert_eq!(&out[..k], &s[..], "segment {i}");
        }
    }
}

/// Two connected datagram sockets: a device stand-in (`tx`) and what reads its writes.
fn datagram_pair() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: socketpair fills two descriptors, owned below.
    assert_eq!(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_DGRAM, 0, fds.as_mut_ptr()) }, 0);
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// A device without headers gets each packet as it comes, whole (the path before offloads).
#[test]
fn without_headers_every_packet_is_written_alone_and_at_once() {
    let segs = segments(&super_packet(2 * MSS, 9, 9, ACK));
    let (tx, rx) = datagram_pair();
    let mut delivery = Delivery::new([(tx.as_raw_fd(), false, Coalescing::IMMEDIATE)], Clock::start());
    let mut pool = Pool::new(1500, 2);
    delivery.count_lateness_from(0);
    for s in &segs {
        let slot = pool.take();
        pool.buffer(slot)[..s.len()].copy_from_slice(s);
        pool.set_len(slot, s.len());
        delivery.deliver(&mut pool, 0, slot, 5);
        let mut buf = vec![0u8; 2000];
        // SAFETY: reads one datagram into the buffer.
        let n = unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        assert_eq!(&buf[..n as usize], &s[..], "written before the next one is handed over");
    }
    assert_eq!((delivery.counters.writes, delivery.counters.super_packets), (2, 0));
    assert_eq!(delivery.lateness.count(), 2);
}

/// With interrupt coalescing the segments released over a while are held until the
/// interrupt (rx_usecs after the first) and reach the host as one super-packet.
#[test]
fn coalescing_holds_releases_until_the_interrupt_and_merges_them() {
    let segs = segments(&super_packet(3 * MSS, 9, 9, ACK));
    let (tx, rx) = datagram_pair();
    let us = 1_000_000;
    let coalescing = Coalescing { gro: true, rx_usecs_ps: 50 * us, rx_frames: 32 };
    let mut delivery = Delivery::new([(tx.as_raw_fd(), true, coalescing)], Clock::start());
    let mut pool = Pool::new(1500, 4);
    let recv =
        |buf: &mut [u8]| unsafe { libc::recv(rx.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
    let mut buf = vec![0u8; 70_000];
    for (i, s) in segs.iter().enumerate() {
        let slot = pool.take();
        pool.buffer(slot)[..s.len()].copy_from_slice(s);
        pool.set_len(slot, s.len());
        let t = 12 * us * i as u64;
        delivery.deliver(&mut pool, 0, slot, t);
        delivery.flush(&mut pool, t);
        assert!(recv(&mut buf) < 0, "nothing before the interrupt");
    }
    delivery.flush(&mut pool, 50 * us - 1);
    assert!(recv(&mut buf) < 0);
    delivery.flush(&mut pool, 50 * us);
    let n = recv(&mut buf);
    assert_eq!(n as usize, VNET_HDR_LEN + HEADERS + 3 * MSS, "one super-packet of the three");
    assert_eq!((delivery.counters.writes, delivery.counters.interrupts), (1, 1));
}
