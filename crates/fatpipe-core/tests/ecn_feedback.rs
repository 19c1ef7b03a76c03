//! ECN feedback packet by packet (issue 28): the receiver's echo as RFC 3168, DCTCP (RFC 8257
//! section 3.2) and Accurate ECN (RFC 9768) give it, and the sender's reading of the ACE
//! counter across its wrap.

mod support;

use fatpipe_core::packet::{Ecn, Packet, PacketKind};
use fatpipe_core::tcp::receiver::{AccEcnSender, TcpReceiver};
use fatpipe_core::time::PS_PER_US;
use support::tcp_config;

const MSS: u32 = 1448;

fn segment(k: u64, ce: bool) -> Packet {
    let mut ecn = Ecn::ECT;
    if ce {
        ecn.set(Ecn::CE);
    }
    Packet {
        kind: PacketKind::Data,
        seq: k * MSS as u64,
        payload_bytes: MSS,
        ip_bytes: MSS + 52,
        ecn,
        ..Default::default()
    }
}

/// The ACK packets a receiver sends for segments 0, 1, ... arriving 10 us apart with these
/// CE marks.
fn ack_packets(mut rx: TcpReceiver, marks: &[bool]) -> Vec<Packet> {
    let mut out = Vec::new();
    for (k, &ce) in marks.iter().enumerate() {
        rx.on_segment(k as u64 * 10 * PS_PER_US, &segment(k as u64, ce), &mut out);
    }
    out
}

/// The same as (segments acknowledged, ECE, ACE).
fn acks(rx: TcpReceiver, marks: &[bool]) -> Vec<(u64, bool, u8)> {
    ack_packets(rx, marks).iter().map(|a| (a.ack / MSS as u64, a.ecn.has(Ecn::ECE), a.ecn.ace())).collect()
}

fn receiver(accecn: bool) -> TcpReceiver {
    let cfg = fatpipe_core::tcp::config::TcpConfig { ecn: true, accecn, ..tcp_config() };
    TcpReceiver::new(0, 1, 0, &cfg)
}

const MARKS: [bool; 6] = [false, true, true, false, false, false];

#[test]
fn rfc3168_echoes_from_the_mark_until_cwr() {
    // Delayed ACKs every second segment; ECE from the first CE on, as no CWR arrives (the
    // ACE bits read 1: ECE alone).
    assert_eq!(acks(receiver(false), &MARKS), [(2, true, 1), (4, true, 1), (6, true, 1)]);
}

#[test]
fn dctcp_acknowledges_each_ce_change_at_once_with_the_old_state() {
    // RFC 8257 section 3.2 (Linux dctcp_ece_ack_update): segment 1 (CE) finds segment 0
    // waiting for a delayed ACK: it is acknowledged at once without ECE; segments 1-2 go
    // with ECE; segment 3 (unmarked) finds nothing waiting, so no extra ACK; 3-4 without
    // ECE. Every ECE-flagged ACK covers exactly the marked segments.
    let mut rx = receiver(false);
    rx.use_dctcp_feedback();
    let got = acks(rx, &MARKS);
    assert_eq!(got.iter().map(|&(a, e, _)| (a, e)).collect::<Vec<_>>(), [(1, false), (3, true), (5, false)]);
}

#[test]
fn accecn_counts_marks_in_ace_and_acks_on_a_new_mark() {
    // RFC 9768: ACE = r.cep mod 8 from 5; a CE after an unmarked segment is acknowledged at
    // once (change-triggered: segment 1), the rest as delayed ACKs. ACE 6 is AE and CWR.
    let mut rx = receiver(true);
    rx.use_dctcp_feedback(); // AccECN negotiated takes precedence, as in Linux
    let got = acks(rx, &MARKS);
    assert_eq!(got, [(2, false, 6), (4, true, 7), (6, true, 7)]);
    // Ten marks in a row: the first is change-triggered, then every second mark
    // (increment-triggered, n = 2) and the counter wraps through 0.
    let got = acks(receiver(true), &[true; 10]);
    let ace: Vec<u8> = got.iter().map(|&(_, _, a)| a).collect();
    assert_eq!(ace, [6, 0, 2, 4, 6], "r.cep = 5 + 1, 3, 5, 7, 9 ... mod 8");
}

#[test]
fn accecn_acks_carry_the_option_with_the_ce_bytes_where_sack_leaves_room() {
    // Timestamps (12 bytes) and no SACK block leave 28 option bytes: the whole AccECN option
    // (three 24-bit fields, 11 bytes padded to 12), whose ECEB counts CE-marked payload bytes.
    let got = ack_packets(receiver(true), &MARKS);
    assert_eq!(got.iter().map(|a| a.accecn_eceb()).collect::<Vec<_>>(), [Some(MSS), Some(2 * MSS), Some(2 * MSS)]);
    assert!(got.iter().all(|a| a.ip_bytes == 40 + 12 + 12));
    // Without AccECN no option and no counter.
    let classic = ack_packets(receiver(false), &MARKS);
    assert!(classic.iter().all(|a| a.accecn_eceb().is_none() && a.ip_bytes == 52));
    // Linux's fitting (SACK first): 12 bytes of room or more, the whole option; 8 to 11,
    // two fields (EE0B, ECEB); less, none.
    use fatpipe_core::packet::accecn_option_bytes;
    assert_eq!([28, 12, 11, 8, 7, 0].map(accecn_option_bytes), [12, 12, 8, 8, 0, 0]);
}

/// The marks an ACK delivering `delivered` full segments reports, ECEB absent.
fn ace_only(s: &mut AccEcnSender, ace: u8, delivered: u32) -> u32 {
    s.ce_delta(ace, None, delivered, delivered as u64 * MSS as u64, MSS, true)
}

#[test]
fn the_sender_follows_ace_across_its_wrap() {
    // s.cep starts at 5 (RFC 9768 section 3.2.1). ACKs each delivering 2 segments, both CE:
    // ACE 7, 1, 3, 5, 7: every step +2 across the wrap at 8.
    let mut s = AccEcnSender::default();
    let got: Vec<u32> = [7u8, 1, 3, 5, 7].iter().map(|&ace| ace_only(&mut s, ace, 2)).collect();
    assert_eq!(got, [2, 2, 2, 2, 2]);
    assert_eq!(s.cep, 15);
    // An ACK of 3 segments whose ACE did not move: none marked.
    assert_eq!(ace_only(&mut s, 7, 3), 0);
}

#[test]
fn an_ack_of_more_than_seven_segments_assumes_the_most_marks_ace_allows() {
    // RFC 9768 Appendix A.2 (Linux safe_delta): 10 segments delivered, ACE moved by 2: 2 or
    // 10 may have been marked; the sender takes 10, the count that keeps it safe.
    let mut s = AccEcnSender::default();
    assert_eq!(ace_only(&mut s, 7, 10), 10);
    assert_eq!(s.cep & 7, 7);
    // 12 delivered, ACE moved by 1: 1 or 9 marked; 9 (the most not above 12).
    assert_eq!(ace_only(&mut s, 0, 12), 9);
}

#[test]
fn the_option_s_ce_bytes_settle_what_ace_leaves_ambiguous() {
    // Linux __tcp_accecn_process with the option. 10 segments delivered, ACE +2, ECEB +2
    // segments' bytes: fewer than half the safe count's bytes, so 2, not 10.
    let mss = MSS as u64;
    let mut s = AccEcnSender::default();
    assert_eq!(s.ce_delta(7, Some(2 * MSS), 10, 10 * mss, MSS, true), 2);
    // ECEB unchanged: no byte was marked, the ACE change stands.
    assert_eq!(s.ce_delta(7, Some(2 * MSS), 10, 10 * mss, MSS, true), 0);
    // 20 delivered (16 or more), ACE +4, ECEB +12 segments' bytes: the bytes' share says
    // 12 = 4 + 8, below the safe count (20).
    assert_eq!(s.ce_delta(3, Some(14 * MSS), 20, 20 * mss, MSS, true), 12);
    // More CE bytes than the ACE change's segments hold (and under 16 delivered): safe.
    let mut s = AccEcnSender::default();
    assert_eq!(s.ce_delta(6, Some(5 * MSS), 9, 9 * mss, MSS, true), 9);
    // ECEB wraps at 2^24 like the field.
    let mut s = AccEcnSender { ceb: 0xFF_FFFF - 100, ..AccEcnSender::default() };
    assert_eq!(s.ce_delta(6, Some(MSS - 101), 1, mss, MSS, true), 1);
    assert_eq!(s.ceb, 0xFF_FFFF - 100 + MSS);
}
