//! Flow control against a slow receiving application (document 000's 130 Mb/s hosts):
//! the window closes and reopens, receiver silly-window avoidance, window updates, and the
//! sender's persist timer when a window update is lost. Packet by packet on the harness, then
//! on the full engine.

mod support;
use fatpipe_core::packet::Packet;
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

const RTT: Time = 40 * PS_PER_MS;
const MSS: u64 = 1448;

/// Bytes per second the application reads in these tests: 100 kb/s, so reading one MSS
/// (115.84 ms) takes longer than the 40 ms RTT and the window closes between updates.
const READ_BYTES_PER_S: u64 = 12_500;

/// 64 KiB of buffer without window scaling (a window granularity of one byte), read slowly.
fn slow_reader() -> TcpConfig {
    let mut tcp = tcp_config();
    tcp.rcv_buffer_bytes = 65_535;
    tcp.window_scaling = false;
    tcp.receiver_drain_rate_bps = Some(8 * READ_BYTES_PER_S);
    tcp
}

/// Bytes an application reading since the first segment arrived (half an RTT in) has read
/// at `t`, if it never ran dry.
fn read_without_pause(t: Time) -> u64 {
    ((t - RTT / 2) as u128 * READ_BYTES_PER_S as u128 / PS_PER_S as u128) as u64
}

fn harness(tcp: TcpConfig) -> Harness {
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.start(None);
    h
}

/// (time, right edge) of every ACK: ack + window.
fn edges(h: &Harness) -> Vec<(Time, u64)> {
    h.acks.iter().map(|(t, a)| (*t, a.ack + a.window_bytes as u64)).collect()
}

#[test]
fn window_closes_and_the_flow_runs_at_the_reading_rate() {
    let mut h = harness(slow_reader());
    h.run_until(20 * PS_PER_S);
    let r = &h.receiver.stats;
    assert!(r.zero_window_acks_sent > 0, "the buffer filled: {r:?}");
    assert!(r.window_updates_sent > 0, "the reader reopened it: {r:?}");
    assert_eq!(r.out_of_window_segments, 0, "the sender kept within the window");
    // The application never ran dry, and what arrived is what it read plus at most a buffer.
    let read = h.receiver.bytes_read(h.now);
    assert_eq!(read, read_without_pause(h.now));
    let unread = h.receiver.rcv_nxt - read;
    assert!(unread <= 65_535, "unread {unread}");
    assert_eq!(h.sender.tcb.stats.timeouts, 0);
    assert_eq!(h.sender.tcb.stats.zero_window_probes, 0, "no update was lost");
}

#[test]
fn right_edge_never_recedes_and_moves_in_steps_of_at_least_one_mss() {
    // RFC 1122 4.2.3.3 with Fr = 1/2: a step of at least min(65,535 / 2, MSS) = MSS.
    let mut h = harness(slow_reader());
    h.run_until(10 * PS_PER_S);
    let e = edges(&h);
    let mut steps = 0;
    for pair in e.windows(2) {
        let (a, b) = (pair[0].1, pair[1].1);
        assert!(b >= a, "edge receded from {a} to {b} at {}", pair[1].0);
        if b > a {
            assert!(b - a >= MSS, "edge moved by only {} bytes at {}", b - a, pair[1].0);
            steps += 1;
        }
    }
    assert!(steps > 50, "the edge moved {steps} times");
}

#[test]
fn window_update_goes_out_the_moment_reading_makes_room_for_one_mss() {
    let mut h = harness(slow_reader());
    h.run_until(5 * PS_PER_S);
    let acks = &h.acks;
    let updates: Vec<usize> = (1..acks.len())
        .filter(|&i| {
            acks[i - 1].1.window_bytes == 0 && acks[i].1.ack == acks[i - 1].1.ack && acks[i].1.window_bytes > 0
        })
        .collect();
    assert!(updates.len() > 10, "zero windows reopened by updates: {}", updates.len());
    for &i in &updates {
        let (t, a) = acks[i];
        // RFC 1122's step: the edge moves by exactly one MSS, at the first picosecond at which
        // the application has read enough for it (buffer - unread = MSS).
        assert_eq!(a.window_bytes as u64, MSS);
        let room_at = |t: Time| 65_535 - (a.ack - read_without_pause(t));
        assert_eq!(room_at(t), MSS, "update at {t}");
        assert!(room_at(t - 1) < MSS, "update at {t} came late");
    }
}

/// Runs in steps of a millisecond until `done`.
fn run_until_true(h: &mut Harness, limit: Time, mut done: impl FnMut(&Harness) -> bool) {
    while !done(h) {
        assert!(h.now < limit, "not reached by {limit}");
        let t = h.now + PS_PER_MS;
        h.run_until(t);
    }
}

/// A slow-reader harness run until an ACK with a zero window has acknowledged everything
/// sent: the sender persists.
fn closed_window(tcp: TcpConfig) -> Harness {
    let mut h = harness(tcp);
    run_until_true(&mut h, 5 * PS_PER_S, |h| {
        h.acks.last().is_some_and(|(t, a)| a.window_bytes == 0 && a.ack == h.sender.tcb.snd_max && h.now >= t + RTT / 2)
    });
    h
}

#[test]
fn lost_window_update_is_recovered_by_a_zero_window_probe_after_one_rto() {
    let mut h = closed_window(slow_reader());
    let (zero_ack_t, zero_ack) = *h.acks.last().unwrap();
    let rto = h.sender.tcb.rtt.rto();
    // Every window update the application's reading brings is lost, until the sender probes.
    h.drop_ack = Box::new(|a: &Packet| a.window_bytes > 0);
    run_until_true(&mut h, 5 * PS_PER_S, |h| h.sender.tcb.stats.zero_window_probes > 0);
    h.drop_ack = Box::new(|_| false);
    assert!(h.receiver.stats.window_updates_sent > 0, "an update was sent and lost");
    let &(t_probe, probe) = h.sent.iter().find(|(_, p)| p.payload_bytes == 0).unwrap();
    // One RTO after the zero-window ACK reached the sender, a probe at SND.UNA.
    assert_eq!(
        t_probe,
        zero_ack_t + RTT / 2 + rto,
        "probe at {t_probe}, zero-window ACK sent at {zero_ack_t}, RTO {rto}"
    );
    assert_eq!(probe.seq, zero_ack.ack);
    // The answer carries the window the reading has opened, and data follows at once.
    h.run_until(t_probe + RTT);
    let (t_answer, answer) = *h.acks.last().unwrap();
    assert_eq!(t_answer, t_probe + RTT / 2);
    assert!(answer.window_bytes as u64 >= MSS, "the answer opens the window: {answer:?}");
    assert!(h.sent.iter().any(|(t, p)| *t == t_probe + RTT && p.payload_bytes > 0), "data right after the answer");
    assert_eq!(h.sender.tcb.stats.timeouts, 0, "a probe is not a retransmission timeout");
    assert_eq!(h.receiver.stats.probes_received, 1);
    // The stall cost the application nothing (its buffer held data), and the flow goes on.
    h.run_until(10 * PS_PER_S);
    assert_eq!(h.receiver.bytes_read(h.now), read_without_pause(h.now));
    assert_eq!(h.sender.tcb.stats.zero_window_probes, 1);
    assert!(h.receiver.stats.window_updates_sent > 20);
}

#[test]
fn unanswered_probes_back_off_exponentially_up_to_max_rto() {
    let mut tcp = slow_reader();
    tcp.max_rto_ps = 2 * PS_PER_S;
    let mut h = closed_window(tcp);
    // Every ACK is lost for 8 seconds.
    let closed = h.now;
    h.drop_ack = Box::new(|_| true);
    h.run_until(closed + 8 * PS_PER_S);
    h.drop_ack = Box::new(|_| false);
    let probes: Vec<Time> = h.sent.iter().filter(|(_, p)| p.payload_bytes == 0).map(|(t, _)| *t).collect();
    let gaps: Vec<Time> = probes.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.len() >= 4, "probes at {probes:?}");
    // Each gap doubles the last (2 RTO, 4 RTO, ...) until it reaches max_rto.
    for w in gaps.windows(2) {
        assert_eq!(w[1], (2 * w[0]).min(2 * PS_PER_S), "gaps {gaps:?}");
    }
    assert_eq!(*gaps.last().unwrap(), 2 * PS_PER_S, "capped at max_rto: {gaps:?}");
    assert_eq!(h.sender.tcb.stats.timeouts, 0);
    // The next probe is answered and the flow resumes.
    let before = h.receiver.rcv_nxt;
    h.run_until(closed + 11 * PS_PER_S);
    assert!(h.receiver.rcv_nxt >= before + 10 * MSS, "resumed: {} bytes", h.receiver.rcv_nxt - before);
}

#[test]
fn without_a_drain_cap_the_full_buffer_is_always_advertised() {
    let mut h = harness(tcp_config());
    h.run_until(2 * PS_PER_S);
    let full = tcp_config().advertised_window_bytes();
    assert!(h.acks.iter().all(|(_, a)| a.window_bytes == full));
    assert_eq!(h.receiver.bytes_read(h.now), h.receiver.rcv_nxt);
    assert_eq!(h.receiver.window_update_deadline(), None);
}

/// Document 000: a 622 Mb/s, 67 ms path, buffers of one BDP (5,209,300 bytes).
fn doc000(drain_bps: Option<u64>, duration: Time) -> Simulation {
    // Built here, run by the caller.
    let rate = 622_000_000;
    let rtt = 67 * PS_PER_MS;
    let mut tcp = tcp_config();
    tcp.rcv_buffer_bytes = 5_209_300;
    tcp.snd_buffer_bytes = 5_209_300;
    tcp.receiver_drain_rate_bps = drain_bps;
    let queue = bdp_packets(rate, rtt, 1538);
    Simulation::new(dumbbell(rate, rtt, queue, duration, tcp)).unwrap()
}

#[test]
fn document_000_receiver_limited_to_130_mbps() {
    let duration = 30 * PS_PER_S;
    let steady_from = 5 * PS_PER_S;
    let run = |drain| {
        let mut sim = doc000(drain, duration);
        sim.run_until(steady_from);
        let read_then = sim.flows[0].receiver.bytes_read(steady_from);
        sim.run();
        (sim, read_then)
    };
    let (capped, read_then) = run(Some(130_000_000));
    let (free, _) = run(None);
    let secs = |t: Time| t as f64 / PS_PER_S as f64;
    let r = &capped.flows[0].receiver;
    let steady_bps = (r.bytes_read(duration) - read_then) as f64 * 8.0 / secs(duration - steady_from);
    // Goodput as the summary reports it: bytes delivered in order over the flow's active time.
    let goodput = |sim: &Simulation| {
        let r = &sim.flows[0].receiver;
        r.rcv_nxt as f64 * 8.0 / secs(r.stats.last_delivery_ps.unwrap())
    };
    eprintln!(
        "130 Mb/s reader: steady reading {:.3} Mb/s, goodput {:.2} Mb/s; no cap: {:.2} Mb/s",
        steady_bps / 1e6,
        goodput(&capped) / 1e6,
        goodput(&free) / 1e6
    );
    // Once the buffer has filled, the application never waits for data.
    assert!((steady_bps / 130e6 - 1.0).abs() < 1e-4, "steady {steady_bps}");
    // Over the run (slow start included) within 2 %.
    assert!((goodput(&capped) / 130e6 - 1.0).abs() < 0.02);
    assert!(goodput(&free) > 500e6);
    for sim in [&capped, &free] {
        let drops: u64 = sim.links.iter().map(|l| l.stats.drops_packets).sum();
        assert_eq!(drops, 0, "no network loss");
        assert_eq!(sim.flows[0].sender.tcb.stats.segments_retransmitted, 0);
    }
    assert_eq!(r.stats.out_of_window_segments, 0);
}

/// An ACK from the receiver as the sender sees it.
fn ack(ack: u64, window_bytes: u32) -> Packet {
    Packet {
        flow: 0,
        src: 1,
        dst: 0,
        kind: fatpipe_core::packet::PacketKind::Ack,
        seq: 0,
        payload_bytes: 0,
        ip_bytes: 52,
        ack,
        window_bytes,
        sack: Default::default(),
        ts_val: 0,
        ts_ecr: 0,
        retransmission: false,
        conn: 0,
        ecn: Default::default(),
    }
}

#[test]
fn a_reordered_old_ack_does_not_reopen_the_window_and_a_timeout_resends_the_head_anyway() {
    let tcp = slow_reader();
    let mut s = fatpipe_core::tcp::TcpSender::new(0, 0, 1, &tcp, reno().build());
    let mut out = Vec::new();
    s.start_bulk(0, None, &mut out);
    assert_eq!(out.len(), 10, "the initial window");
    out.clear();
    // Five segments acknowledged, and the window shrunk to nothing (the other five in flight).
    s.on_ack(RTT, &ack(5 * MSS, 0), &mut out);
    assert!(out.is_empty());
    // An older ACK arriving late carries an older, larger window: ignored (RFC 9293 SND.WL2).
    s.on_ack(RTT + 1, &ack(3 * MSS, 65_535), &mut out);
    assert!(out.is_empty(), "sent {out:?}");
    // The five in flight are lost: the timeout resends the first even though the window is shut.
    let t = s.rto_deadline().expect("the retransmission timer runs");
    s.on_rto_timer(t, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].seq, out[0].payload_bytes as u64, out[0].retransmission), (5 * MSS, MSS, true));
    assert_eq!(s.tcb.stats.timeouts, 1);
    assert_eq!(s.tcb.stats.zero_window_probes, 0, "in flight: no persist timer");
}
