//! Congestion window reduced without a loss (Linux `tcp_enter_cwr`): local congestion at the
//! sender host's interface queue (txqueuelen, document 001 E1.2 and E1.5) and ECN (RFC 3168).

mod support;
use fatpipe_core::cc::nocc::NoccConfig;
use fatpipe_core::cc::scalable::ScalableConfig;
use fatpipe_core::cc::scenario_defaults;
use fatpipe_core::cc::{CaState, CcSpec};
use fatpipe_core::net::queue::{droptail::DropTailConfig, red::RedConfig, tx_ring::TxRingSpec, QueueSpec};
use fatpipe_core::packet::{Ecn, Packet};
use fatpipe_core::scenario::Scenario;
use fatpipe_core::source::{bulk::BulkConfig, SourceSpec};
use fatpipe_core::tcp::config::Recovery;
use fatpipe_core::tcp::{TcpReceiver, TcpSender};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use serde_json::Value;
use support::*;

const MSS: u64 = 1448;

fn no_drops() -> Box<dyn FnMut(&Packet) -> bool> {
    Box::new(|_| false)
}

// ---- the sender, packet by packet -------------------------------------------------------

#[test]
fn a_refused_segment_stays_unsent_and_the_window_is_reduced_once() {
    let mut h = Harness::new(tcp_config(), reno(), 40 * PS_PER_MS, no_drops());
    // The interface takes 3 of the initial window's 10 segments.
    h.sender.set_tx_budget(3);
    h.start(None);
    let s = &h.sender;
    assert_eq!(h.sent.len(), 3);
    assert_eq!(s.tcb.snd_nxt, 3 * MSS, "snd_nxt stops at the refused segment");
    assert_eq!(s.tcb.stats.segments_sent, 3, "a refused segment is not counted as sent");
    assert_eq!((s.tcb.stats.local_congestion_events, s.tcb.stats.cwr_entries), (1, 1));
    assert_eq!(s.tcb.ca_state, CaState::Cwr);
    // Reno's ssthresh (cwnd / 2) and cwnd down to it at once.
    assert_eq!((s.tcb.cc_state.ssthresh, s.tcb.cc_state.cwnd), (5, 5));
    assert!(s.interface_blocked());

    // Still full when the first ACK (segments 0 and 1) arrives: refused again, but no
    // second reduction in this window and no new episode.
    h.sender.set_tx_budget(0);
    h.run_until(45 * PS_PER_MS);
    let s = &h.sender;
    assert_eq!(s.tcb.snd_una, 2 * MSS);
    assert_eq!(h.sent.len(), 3);
    assert!(s.interface_blocked());
    assert_eq!((s.tcb.stats.local_congestion_events, s.tcb.stats.cwr_entries, s.tcb.cc_state.ssthresh), (1, 1, 5));

    // Room again: the window goes on from snd_nxt at the next ACK, nothing is resent.
    h.sender.set_tx_budget(u64::MAX);
    h.run_until(2 * PS_PER_S);
    let s = &h.sender;
    assert_eq!(s.tcb.stats.segments_retransmitted, 0);
    assert_eq!(s.tcb.ca_state, CaState::Open, "CWR ends once data sent after it is acknowledged");
    assert_eq!((s.tcb.stats.local_congestion_events, s.tcb.stats.cwr_entries), (1, 1));
    // Every byte went out exactly once, in order.
    let mut next = 0;
    for (_, p) in &h.sent {
        assert_eq!(p.seq, next);
        next = p.end_seq();
    }
    assert_eq!(h.dropped.len(), 0);
}

#[test]
fn a_new_episode_after_cwr_reduces_again() {
    let mut h = Harness::new(tcp_config(), reno(), 40 * PS_PER_MS, no_drops());
    h.sender.set_tx_budget(3);
    h.start(None);
    h.sender.set_tx_budget(u64::MAX);
    h.run_until(PS_PER_S);
    assert_eq!(h.sender.tcb.ca_state, CaState::Open);
    let cwnd = h.sender.tcb.cc_state.cwnd;
    assert!(cwnd > 5, "the window grew after CWR: {cwnd}");
    // The interface fills up: the next ACKs cannot send.
    h.sender.set_tx_budget(0);
    h.run_until(h.now + 50 * PS_PER_MS);
    let s = &h.sender;
    assert_eq!((s.tcb.stats.local_congestion_events, s.tcb.stats.cwr_entries), (2, 2));
    assert!(s.tcb.prior_cwnd >= cwnd);
    assert_eq!(s.tcb.cc_state.ssthresh, s.tcb.prior_cwnd / 2);
    assert_eq!(s.tcb.ca_state, CaState::Cwr);
}

/// ssthresh after a refusal at a window of `cwnd` segments.
fn ssthresh_after_refusal(cc: CcSpec, cwnd: u32) -> u32 {
    let mut tcp = tcp_config();
    tcp.initial_window_segments = cwnd;
    let mut h = Harness::new(tcp, cc, 40 * PS_PER_MS, no_drops());
    h.sender.set_tx_budget(cwnd as u64 / 2);
    h.start(None);
    assert_eq!(h.sender.tcb.ca_state, CaState::Cwr);
    assert_eq!(h.sender.tcb.cc_state.cwnd, h.sender.tcb.cc_state.ssthresh);
    h.sender.tcb.cc_state.ssthresh
}

#[test]
fn highspeed_and_scalable_back_off_by_their_own_decrease() {
    // Scalable: b = 1/8 (document 001), cwnd - cwnd / 8.
    let scalable = CcSpec::Scalable(ScalableConfig { a: 0.02, b: 0.125, ..scenario_defaults("scalable") });
    assert_eq!(ssthresh_after_refusal(scalable, 1000), 875);
    // HighSpeed (RFC 3649): b(w) = (High_Decrease - 0.5) (log w - log Low_Window) /
    // (log High_Window - log Low_Window) + 0.5; about 0.33 at 1000 segments (Linux's table
    // rounds to its nearest row).
    let b = (0.1 - 0.5) * (1000f64.ln() - 38f64.ln()) / (83_000f64.ln() - 38f64.ln()) + 0.5;
    let hs = ssthresh_after_refusal(CcSpec::Highspeed(scenario_defaults("highspeed")), 1000) as f64;
    assert!((hs - 1000.0 * (1.0 - b)).abs() < 20.0, "HighSpeed ssthresh {hs}, RFC 3649 {}", 1000.0 * (1.0 - b));
    assert_eq!(ssthresh_after_refusal(reno(), 1000), 500);
}

#[test]
fn a_fast_retransmit_during_cwr_does_not_reduce_ssthresh_again() {
    // Segment 20 is lost; the interface refuses once at the start, so the sender is in CWR
    // (ssthresh 5) when the duplicate ACKs arrive: the recovery keeps that ssthresh.
    let mut lost = false;
    let drop = Box::new(move |p: &Packet| {
        let hit = !lost && p.seq == 4 * MSS;
        lost |= hit;
        hit
    });
    let mut tcp = tcp_config();
    tcp.delayed_ack = false;
    let mut h = Harness::new(tcp, reno(), 40 * PS_PER_MS, drop);
    h.sender.set_tx_budget(8);
    h.start(None);
    assert_eq!((h.sender.tcb.ca_state, h.sender.tcb.cc_state.ssthresh), (CaState::Cwr, 5));
    h.sender.set_tx_budget(u64::MAX);
    h.run_until(h.now + 40 * PS_PER_MS + PS_PER_MS);
    let s = &h.sender;
    assert_eq!(s.tcb.stats.fast_retransmits, 1);
    assert_eq!(s.tcb.cc_state.ssthresh, 5, "one reduction for this window");
    assert_eq!(s.tcb.stats.cwr_entries, 1);
}

// ---- the simulation: document 001's back-to-back with 30 ms delay ----------------------

const RATE_BPS: u64 = 1_000_000_000;
const RTT_PS: Time = 30 * PS_PER_MS;

/// Document 001's back-to-back with delay: the sender's 1 Gb/s NIC with an interface queue
/// of `txqueuelen` packets, then the 30 ms path at the same rate with a queue that cannot
/// overflow; jumbo frames (MTU 9000, MSS 8948 with timestamps), 16 MB windows, SACK.
fn back_to_back(txqueuelen: u64, cc: CcSpec, duration: Time) -> Scenario {
    let mut tcp = tcp_config();
    tcp.mss_bytes = 8948;
    tcp.rcv_buffer_bytes = 16 << 20;
    tcp.snd_buffer_bytes = 16 << 20;
    tcp.recovery = Recovery::Sack;
    let mut s = dumbbell(RATE_BPS, RTT_PS, 1_000_000, duration, tcp);
    for link in &mut s.links {
        link.mtu_bytes = 9000;
    }
    // Link 0 leaves the sender host: its NIC.
    s.links[0].rate_bps = RATE_BPS;
    s.links[0].queue = droptail(txqueuelen);
    s.flows[0].cc = Some(cc);
    s
}

fn droptail(limit_packets: u64) -> QueueSpec {
    QueueSpec::Droptail(DropTailConfig {
        limit_packets: Some(limit_packets),
        limit_bytes: None,
        cell_bytes: None,
        limit_cells: None,
        mark_threshold_packets: None,
    })
}

fn summary(s: Scenario) -> Value {
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    sim.summary()
}

fn total_link_drops(sum: &Value) -> u64 {
    sum["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            ["drops_packets", "early_drops_packets", "impairment_drops_packets", "outage_drops_packets"]
                .iter()
                .map(|k| l[*k].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum()
}

fn goodput_bps(flow: &Value, duration: Time) -> f64 {
    flow["bytes_delivered"].as_u64().unwrap() as f64 * 8.0 * PS_PER_S as f64 / duration as f64
}

#[test]
fn txqueuelen_100_reduces_the_window_without_network_loss_and_10000_does_not() {
    let duration = 10 * PS_PER_S;
    let short = summary(back_to_back(100, reno(), duration));
    let f = &short["flows"][0];
    assert!(f["cwr_entries"].as_u64().unwrap() > 0, "{f}");
    assert!(f["local_congestion_events"].as_u64().unwrap() > 0);
    assert_eq!(total_link_drops(&short), 0, "no packet is lost anywhere");
    assert_eq!(f["data_packets_lost"], 0);
    assert_eq!(f["segments_retransmitted"], 0, "a refused segment is sent later, not resent");
    assert_eq!((f["fast_retransmits"].as_u64(), f["timeouts"].as_u64()), (Some(0), Some(0)));
    let nic = &short["links"][0];
    assert!(nic["max_queue_packets"].as_u64().unwrap() <= 100, "{nic}");

    let long = summary(back_to_back(10_000, reno(), duration));
    let g = &long["flows"][0];
    assert_eq!((g["cwr_entries"].as_u64(), g["local_congestion_events"].as_u64()), (Some(0), Some(0)));
    assert_eq!(total_link_drops(&long), 0);
    // The 16 MB window (1875 segments) minus the path's 415 fits 10,000 packets.
    let window = (16u64 << 20).div_ceil(8948);
    let bdp = bdp_packets(RATE_BPS, RTT_PS, 9038);
    assert!(long["links"][0]["max_queue_packets"].as_u64().unwrap() >= window - bdp - 2);
    // Backing off costs throughput (document 001: 828 against 966 Mb/s).
    assert!(goodput_bps(f, duration) < goodput_bps(g, duration));
}

#[test]
fn a_transmit_ring_holds_packets_beyond_txqueuelen_and_delays_the_back_off() {
    // Document 001's hosts: txqueuelen 100 in front of an e1000 ring of 256 descriptors of
    // 4096 bytes. A jumbo frame takes 3, so the interface holds 85 + 100 packets before a
    // segment is refused.
    let duration = 10 * PS_PER_S;
    let bare = summary(back_to_back(100, reno(), duration));
    let mut with_ring = back_to_back(100, reno(), duration);
    with_ring.links[0].tx_ring = Some(TxRingSpec { descriptors: 256, descriptor_bytes: 4096 });
    let ring = summary(with_ring);
    let (f, nic) = (&ring["flows"][0], &ring["links"][0]);
    assert_eq!(total_link_drops(&ring), 0, "the interface refuses segments, it never loses them");
    assert_eq!(f["segments_retransmitted"], 0);
    assert!(f["local_congestion_events"].as_u64().unwrap() > 0, "a 16 MB window still overflows it: {f}");
    assert_eq!(nic["max_queue_packets"].as_u64(), Some(85 + 100 - 1), "ring and queue full, one being sent: {nic}");
    assert_eq!(bare["links"][0]["max_queue_packets"].as_u64(), Some(100));
    // The first back-off comes at a larger window, so it costs less.
    let first_cut = |sum: &Value| sum["flows"][0]["first_loss_cwnd_segments"].as_u64().unwrap();
    assert!(first_cut(&ring) > first_cut(&bare) + 50, "{} vs {}", first_cut(&ring), first_cut(&bare));
    assert!(goodput_bps(f, duration) > goodput_bps(&bare["flows"][0], duration));
}

#[test]
fn a_send_rate_cap_paces_the_flow_below_its_interface() {
    // A host that puts at most 300 Mb/s of IP packets on its 1 Gb/s line: the flow never
    // fills the 100-packet interface queue, and its goodput is the cap's payload share.
    let duration = 10 * PS_PER_S;
    let mut s = back_to_back(100, reno(), duration);
    let cap = 300_000_000;
    s.flows[0].tcp.as_mut().unwrap().max_send_rate_bps = Some(cap);
    let sum = summary(s);
    let f = &sum["flows"][0];
    assert_eq!(f["local_congestion_events"], 0, "{f}");
    assert!(sum["links"][0]["max_queue_packets"].as_u64().unwrap() <= 1);
    let payload_share = 8948.0 / 9000.0;
    let got = goodput_bps(f, duration);
    assert!(got <= cap as f64 * payload_share, "{got}");
    assert!(got > 0.9 * cap as f64 * payload_share, "{got}");
}

#[test]
fn parallel_streams_share_the_interface_and_a_late_one_is_woken_when_it_has_room() {
    // Two flows from the same host. The first never reduces its window (NOCC), so the
    // 100-packet interface queue stays full; the second starts at 1 s behind a full queue
    // and must get its first segment out as soon as a slot frees, not at a timer.
    let duration = 3 * PS_PER_S;
    let mut s = back_to_back(100, CcSpec::Nocc(NoccConfig { cwnd_segments: None }), duration);
    let mut second = s.flows[0].clone();
    second.name = "late".into();
    second.cc = Some(reno());
    let start = PS_PER_S;
    second.source = SourceSpec::Bulk(BulkConfig {
        start_ps: start,
        stop_ps: None,
        bytes: None,
        transfers: None,
        transfer_gap_ps: 0,
    });
    s.flows.push(second);
    let sum = summary(s);
    let (a, b) = (&sum["flows"][0], &sum["flows"][1]);
    assert!(a["local_congestion_events"].as_u64().unwrap() > 0);
    assert!(b["local_congestion_events"].as_u64().unwrap() > 0, "{b}");
    assert_eq!(total_link_drops(&sum), 0);
    assert!(sum["links"][0]["max_queue_packets"].as_u64().unwrap() <= 100);
    let waited = b["first_send_ps"].as_u64().unwrap() - start;
    // The first slot that frees goes to the flow refused first, the second to this one; a
    // 9038-byte frame takes 72.3 us at 1 Gb/s.
    let frame_ps = 9038 * 8 * PS_PER_S / RATE_BPS;
    assert!(waited <= 2 * frame_ps, "waited {waited} ps for room");
    assert!(b["bytes_delivered"].as_u64().unwrap() > 0);
}

// ---- ECN --------------------------------------------------------------------------------

#[test]
fn the_receiver_echoes_ce_until_cwr_and_the_sender_reduces_once() {
    let mut tcp = tcp_config();
    tcp.ecn = true;
    let mut sender = TcpSender::new(0, 0, 1, &tcp, reno().build());
    let mut receiver = TcpReceiver::new(0, 1, 0, &tcp);
    let (mut data, mut acks) = (Vec::new(), Vec::new());
    sender.start_bulk(0, None, &mut data);
    assert_eq!(data.len(), 10);
    assert!(data.iter().all(|p| p.ecn.has(Ecn::ECT) && !p.ecn.has(Ecn::CWR)), "new data is ECN-capable");
    // A router marks segment 1; the delayed ACK covering segments 0 and 1 echoes it, and so
    // does every ACK after it until a CWR arrives (RFC 3168 6.1.3).
    data[1].ecn.set(Ecn::CE);
    for seg in &data[..6] {
        receiver.on_segment(1, seg, &mut acks);
    }
    assert_eq!(acks.len(), 3);
    assert!(acks.iter().all(|a| a.ecn.has(Ecn::ECE)));
    // The sender reduces on the first echo, and only once for this window.
    let mut out = Vec::new();
    for ack in &acks {
        sender.on_ack(2, ack, &mut out);
    }
    assert_eq!((sender.tcb.stats.ecn_echoes, sender.tcb.stats.cwr_entries), (3, 1));
    assert_eq!((sender.tcb.ca_state, sender.tcb.cc_state.ssthresh, sender.tcb.cc_state.cwnd), (CaState::Cwr, 5, 5));
    assert_eq!(sender.tcb.stats.segments_retransmitted, 0);
    // cwnd 5 with 4 in flight: one new segment, carrying CWR.
    assert_eq!(out.len(), 1);
    assert!(out[0].ecn.has(Ecn::CWR) && out[0].ecn.has(Ecn::ECT) && out[0].seq == 10 * MSS);
    // Segments before the CWR still get ECE; the CWR segment (and what follows) do not.
    acks.clear();
    for seg in data[6..].iter().chain(&out) {
        receiver.on_segment(3, seg, &mut acks);
    }
    assert_eq!(acks.len(), 2);
    assert!(acks[0].ecn.has(Ecn::ECE), "segments 6 and 7 came before the CWR");
    receiver.on_delayed_ack_timer(4, &mut acks);
    assert!(!acks[2].ecn.has(Ecn::ECE), "the ACK after the CWR segment: {:?}", acks[2]);
    // A retransmission is never ECN-capable (RFC 3168 6.1.5).
    let mut rto = Vec::new();
    sender.on_rto_timer(PS_PER_S, &mut rto);
    assert!(rto[0].retransmission && !rto[0].ecn.has(Ecn::ECT) && !rto[0].ecn.has(Ecn::CWR));
}

/// One flow through a 100 Mb/s, 40 ms dumbbell whose bottleneck runs RED with thresholds
/// far below the hard limit, marking if `red_ecn`.
fn red_dumbbell(red_ecn: bool, tcp_ecn: bool) -> Scenario {
    let mut tcp = tcp_config();
    tcp.recovery = Recovery::Sack;
    tcp.ecn = tcp_ecn;
    let mut s = dumbbell(100_000_000, 40 * PS_PER_MS, 1000, 20 * PS_PER_S, tcp);
    for l in [1, 4] {
        s.links[l].queue = QueueSpec::Red(RedConfig {
            limit_packets: Some(1000),
            min_th_packets: Some(30.0),
            max_th_packets: Some(300.0),
            max_p: 0.1,
            w_q: Some(0.002),
            gentle: false,
            byte_mode: false,
            mean_packet_bytes: 1500,
            wait: true,
            target_delay_ps: 5 * PS_PER_MS,
            ecn: red_ecn,
            cell_bytes: None,
            limit_cells: None,
        });
    }
    s
}

#[test]
fn red_with_ecn_marks_and_the_flow_reduces_without_retransmitting() {
    let sum = summary(red_dumbbell(true, true));
    let (f, bottleneck) = (&sum["flows"][0], &sum["links"][1]);
    assert!(bottleneck["ecn_marks"].as_u64().unwrap() > 0, "{bottleneck}");
    // Non-gentle RED drops every arrival while avg >= max_th: none means avg stayed below.
    assert_eq!(bottleneck["early_drops_packets"], 0);
    assert_eq!(total_link_drops(&sum), 0);
    assert!(f["ecn_echoes"].as_u64().unwrap() > 0);
    assert!(f["cwr_entries"].as_u64().unwrap() > 1, "{f}");
    assert_eq!(f["segments_retransmitted"], 0);
    assert_eq!((f["fast_retransmits"].as_u64(), f["timeouts"].as_u64()), (Some(0), Some(0)));
    assert!(f["ce_segments_received"].as_u64().unwrap() >= f["cwr_entries"].as_u64().unwrap());
    // One reduction per window: far fewer reductions than marks would each have caused.
    assert!(f["cwr_entries"].as_u64().unwrap() <= bottleneck["ecn_marks"].as_u64().unwrap());
}

#[test]
fn a_flow_without_ecn_through_the_same_red_is_dropped_early() {
    let sum = summary(red_dumbbell(true, false));
    let (f, bottleneck) = (&sum["flows"][0], &sum["links"][1]);
    assert_eq!(bottleneck["ecn_marks"], 0);
    assert!(bottleneck["early_drops_packets"].as_u64().unwrap() > 0);
    assert!(f["segments_retransmitted"].as_u64().unwrap() > 0);
    assert_eq!((f["ecn_echoes"].as_u64(), f["cwr_entries"].as_u64()), (Some(0), Some(0)));
    // And an ECN flow through RED without ECN is dropped too.
    let off = summary(red_dumbbell(false, true));
    assert_eq!(off["links"][1]["ecn_marks"], 0);
    assert!(off["links"][1]["early_drops_packets"].as_u64().unwrap() > 0);
}
