//! The three-way handshake packet by packet (issue 4): SYN, SYN-ACK and ACK timings, the
//! data one RTT later, losses survived by the 1 s initial RTO and its backoff, the sender's
//! RTT estimator seeded by the exchange; slow start after idle.

mod support;
use fatpipe_core::packet::{Packet, PacketKind};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

const RTT: Time = 67 * PS_PER_MS;

/// A harness whose sender opens the connection; `drop` picks the setup or data segments lost.
fn opened(tcp: fatpipe_core::tcp::TcpConfig, drop: Box<dyn FnMut(&Packet) -> bool>) -> Harness {
    let mut h = Harness::new(tcp.clone(), reno(), RTT, drop);
    h.start_with_handshake(&tcp, Some(100_000));
    h
}

fn setup(h: &Harness) -> Vec<(Time, PacketKind, bool)> {
    h.setup_sent.iter().map(|(t, p)| (*t, p.kind, p.retransmission)).collect()
}

/// Drops the first `n` segments of `kind`.
fn drop_first(kind: PacketKind, n: usize) -> Box<dyn FnMut(&Packet) -> bool> {
    let mut seen = 0;
    Box::new(move |p| {
        if p.kind == kind {
            seen += 1;
            return seen <= n;
        }
        false
    })
}

#[test]
fn syn_synack_ack_then_data_one_rtt_after_the_start() {
    let tcp = tcp_config();
    let mut h = opened(tcp.clone(), Box::new(|_| false));
    h.run_until(10 * PS_PER_S);
    let half = RTT / 2;
    assert_eq!(
        setup(&h),
        vec![(0, PacketKind::Syn, false), (half, PacketKind::SynAck, false), (RTT, PacketKind::HandshakeAck, false)]
    );
    // SYN and SYN-ACK: 40 header bytes + MSS (4), timestamps (12 with two NOPs or with
    // SACK-permitted), window scale (4 with a NOP) = 60; the ACK a plain header.
    let ip = |k| h.setup_sent.iter().find(|(_, p)| p.kind == k).unwrap().1.ip_bytes;
    assert_eq!(ip(PacketKind::Syn), 60);
    assert_eq!(ip(PacketKind::SynAck), 60);
    assert_eq!(ip(PacketKind::HandshakeAck), tcp.header_bytes());
    // The initial window goes out with the ACK, one RTT after the application started.
    let first: Vec<Time> = h.sent.iter().take(10).map(|(t, _)| *t).collect();
    assert_eq!(first, vec![RTT; 10]);
    assert!(h.handshake.as_ref().unwrap().listener_established());
    assert_eq!(h.handshake.as_ref().unwrap().deadline(), None);
    assert_eq!(h.receiver.rcv_nxt, 100_000);
}

#[test]
fn the_handshake_seeds_the_senders_rtt_estimator() {
    // Without timestamps and before any data is ACKed, the only sample is the SYN's.
    let mut tcp = tcp_config();
    tcp.timestamps = false;
    let mut h = opened(tcp, Box::new(|_| false));
    h.run_until(RTT);
    assert_eq!(h.sender.tcb.rtt.srtt, Some(RTT));
    // RFC 6298: RTO = SRTT + 4 RTTVAR = 3 RTT = 201 ms, above the 200 ms minimum.
    assert_eq!(h.sender.tcb.rtt.rto(), 3 * RTT);
}

#[test]
fn a_lost_syn_is_sent_again_after_the_initial_rto_of_one_second() {
    let tcp = tcp_config();
    let mut h = opened(tcp, drop_first(PacketKind::Syn, 1));
    h.run_until(10 * PS_PER_S);
    let s = PS_PER_S;
    assert_eq!(
        setup(&h),
        vec![
            (0, PacketKind::Syn, false),
            (s, PacketKind::Syn, true),
            (s + RTT / 2, PacketKind::SynAck, false),
            (s + RTT, PacketKind::HandshakeAck, false),
        ]
    );
    assert_eq!(h.sent[0].0, s + RTT, "data one RTT after the SYN that got through");
    // With timestamps the SYN-ACK echoes the retransmitted SYN's: a valid sample of one RTT.
    assert_eq!(h.handshake.as_ref().unwrap().retransmits(), (1, 0));
    assert_eq!(h.sender.tcb.rtt.min_rtt, Some(RTT));
    // One retransmission keeps the initial window (Linux cuts it only after a second).
    assert_eq!(h.sent.iter().filter(|(t, _)| *t == s + RTT).count(), 10);
    assert!(h.handshake.as_ref().unwrap().listener_established());
    assert_eq!(h.receiver.rcv_nxt, 100_000);
}

#[test]
fn without_timestamps_karn_forbids_a_sample_from_a_retransmitted_syn() {
    let mut tcp = tcp_config();
    tcp.timestamps = false;
    let mut h = opened(tcp, drop_first(PacketKind::Syn, 1));
    h.run_until(PS_PER_S + RTT);
    assert_eq!(h.sender.tcb.rtt.srtt, None);
}

#[test]
fn repeated_syn_losses_back_off_and_cut_the_initial_window_to_one() {
    let tcp = tcp_config();
    let mut h = opened(tcp, drop_first(PacketKind::Syn, 3));
    h.run_until(20 * PS_PER_S);
    let syns: Vec<Time> = h.setup_sent.iter().filter(|(_, p)| p.kind == PacketKind::Syn).map(|(t, _)| *t).collect();
    // 1 s, then doubled: 2 s and 4 s later (RFC 6298 5.5).
    assert_eq!(syns, vec![0, PS_PER_S, 3 * PS_PER_S, 7 * PS_PER_S]);
    let start = 7 * PS_PER_S + RTT;
    assert_eq!(h.sent[0].0, start);
    assert_eq!(h.sent.iter().filter(|(t, _)| *t == start).count(), 1, "initial window of one segment");
    assert_eq!(h.receiver.rcv_nxt, 100_000);
}

#[test]
fn a_lost_synack_is_resent_when_the_syn_comes_again() {
    let tcp = tcp_config();
    let mut h = opened(tcp, drop_first(PacketKind::SynAck, 1));
    h.run_until(10 * PS_PER_S);
    let s = PS_PER_S;
    let half = RTT / 2;
    // The opener times out after 1 s and resends its SYN; it reaches the listener at
    // 1.0335 s, just when the listener's own timer would expire, and draws the SYN-ACK again
    // (which restarts the listener's timer, backed off to 2 s).
    assert_eq!(
        setup(&h),
        vec![
            (0, PacketKind::Syn, false),
            (half, PacketKind::SynAck, false),
            (s, PacketKind::Syn, true),
            (s + half, PacketKind::SynAck, true),
            (s + RTT, PacketKind::HandshakeAck, false),
        ]
    );
    assert_eq!(h.handshake.as_ref().unwrap().retransmits(), (1, 1));
    assert_eq!(h.sent[0].0, s + RTT);
    assert_eq!(h.receiver.rcv_nxt, 100_000);
}

#[test]
fn the_listener_resends_its_synack_on_its_own_timer() {
    // The first SYN-ACK and every retransmitted SYN are lost: only the listener's timer helps.
    let mut synacks = 0;
    let drop = Box::new(move |p: &Packet| match p.kind {
        PacketKind::SynAck => {
            synacks += 1;
            synacks == 1
        }
        PacketKind::Syn => p.retransmission,
        _ => false,
    });
    let mut h = opened(tcp_config(), drop);
    h.run_until(10 * PS_PER_S);
    let resent: Vec<Time> =
        h.setup_sent.iter().filter(|(_, p)| p.kind == PacketKind::SynAck).map(|(t, _)| *t).collect();
    assert_eq!(resent, vec![RTT / 2, RTT / 2 + PS_PER_S]);
    assert_eq!(h.sent[0].0, PS_PER_S + RTT);
    assert_eq!(h.receiver.rcv_nxt, 100_000);
}

#[test]
fn a_lost_ack_is_covered_by_the_first_data_segment() {
    let tcp = tcp_config();
    let mut h = opened(tcp, drop_first(PacketKind::HandshakeAck, 1));
    h.run_until(10 * PS_PER_S);
    // The data segments carry the ACK: the listener never times out.
    assert_eq!(h.setup_sent.len(), 3);
    assert!(h.handshake.as_ref().unwrap().listener_established());
    assert_eq!(h.receiver.rcv_nxt, 100_000);
}

/// A bytes-limited flow on the dumbbell, with or without the handshake.
fn transfer(handshake: bool) -> Simulation {
    let mut tcp = tcp_config();
    tcp.handshake = handshake;
    let mut s = dumbbell(100_000_000, RTT, 1000, 5 * PS_PER_S, tcp);
    if let fatpipe_core::source::SourceSpec::Bulk(b) = &mut s.flows[0].source {
        b.bytes = Some(1_000_000);
    }
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    sim
}

#[test]
fn with_the_handshake_a_transfer_ends_one_rtt_later() {
    let (with, without) = (transfer(true), transfer(false));
    let end = |sim: &Simulation| sim.flows[0].receiver.stats.last_delivery_ps.unwrap();
    let extra = end(&with) - end(&without);
    // One RTT, plus the serialization of the 60-byte SYN and SYN-ACK (98 wire bytes) on two
    // 1 Gb/s access links and the 100 Mb/s bottleneck each way, plus the 52-byte ACK (90 wire
    // bytes) that goes onto the sender's access link just before the first data segment.
    use fatpipe_core::time::transmission_time as tx;
    let (access, bottleneck) = (1_000_000_000, 100_000_000);
    let serialization = 2 * (2 * tx(98, access) + tx(98, bottleneck)) + tx(90, access);
    assert_eq!(extra, RTT + serialization, "{extra}");
    assert!(with.flows[0].sender.is_finished());
}

#[test]
fn slow_start_after_idle_restarts_from_the_initial_window() {
    // A transfer, then more data after 2 s of idle (longer than the RTO, 201 ms).
    let tcp = tcp_config();
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.start(Some(2_000_000));
    h.run_until(5 * PS_PER_S);
    let (cwnd, ssthresh) = (h.sender.tcb.cc_state.cwnd, h.sender.tcb.cc_state.ssthresh);
    assert!(cwnd > 100, "{cwnd}");
    let mut out = Vec::new();
    let now = 5 * PS_PER_S;
    h.sender.write_burst(now, 1_000_000, true, &mut out);
    // Idle ~4.7 s = 23 RTOs: halved until the initial window of 10.
    assert_eq!(h.sender.tcb.cc_state.cwnd, 10);
    assert_eq!(out.len(), 10);
    // Linux tcp_current_ssthresh: at least 3/4 of the window before the idle time (here
    // ssthresh was never set, and stays so).
    assert_eq!(h.sender.tcb.cc_state.ssthresh, ssthresh.max((cwnd >> 1) + (cwnd >> 2)));

    // Off, the window carries over.
    let mut tcp = tcp_config();
    tcp.slow_start_after_idle = false;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.start(Some(2_000_000));
    h.run_until(5 * PS_PER_S);
    let cwnd = h.sender.tcb.cc_state.cwnd;
    let mut out = Vec::new();
    h.sender.write_burst(5 * PS_PER_S, 1_000_000, true, &mut out);
    assert_eq!(h.sender.tcb.cc_state.cwnd, cwnd);
    assert_eq!(out.len() as u32, cwnd);
}

#[test]
fn an_idle_shorter_than_two_rtos_halves_the_window_once() {
    let tcp = tcp_config();
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.start(Some(2_000_000));
    h.run_until(2 * PS_PER_S);
    let last = h.sent.last().unwrap().0;
    let rto = h.sender.tcb.rtt.rto();
    let cwnd = h.sender.tcb.cc_state.cwnd;
    let mut out = Vec::new();
    // Between one and two RTOs after the last data segment.
    h.sender.write_burst(last + rto + rto / 2, 1_000_000, true, &mut out);
    assert_eq!(h.sender.tcb.cc_state.cwnd, cwnd / 2);
    let mut out = Vec::new();
    let mut h2 = Harness::new(tcp_config(), reno(), RTT, Box::new(|_| false));
    h2.start(Some(2_000_000));
    h2.run_until(2 * PS_PER_S);
    // Not idle for an RTO yet: nothing changes.
    h2.sender.write_burst(last + rto, 1_000_000, true, &mut out);
    assert_eq!(h2.sender.tcb.cc_state.cwnd, cwnd);
}

#[test]
fn an_application_stopped_before_its_connection_opened_writes_nothing() {
    let mut tcp = tcp_config();
    tcp.handshake = true;
    let mut s = dumbbell(100_000_000, RTT, 1000, PS_PER_S, tcp);
    if let fatpipe_core::source::SourceSpec::Bulk(b) = &mut s.flows[0].source {
        b.stop_ps = Some(RTT / 2); // before the SYN-ACK returns
    }
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    let flow = &sim.flows[0];
    assert!(flow.handshake.as_ref().unwrap().listener_established());
    assert_eq!((flow.sender.bytes_written(), flow.sender.tcb.stats.segments_sent), (0, 0));
}
