//! Step-1 acceptance checks against closed forms, on the full engine (links, queues, routes).

mod support;
use fatpipe_core::time::{PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

/// Payload bytes delivered in order at time `t` (from the probe series; one flow).
fn delivered_at(sim: &Simulation, t: u64) -> u64 {
    let fs = &sim.flow_series;
    let i = fs.time_ps.iter().position(|&x| x == t).expect("sampled time");
    fs.delivered_bytes[i]
}

#[test]
fn reno_fills_a_100mbps_40ms_path_with_one_bdp_of_buffer() {
    let rate = 100_000_000;
    let rtt = 40 * PS_PER_MS;
    let wire = 1500 + 38;
    let bdp = bdp_packets(rate, rtt, wire);
    let mut sim = Simulation::new(dumbbell(rate, rtt, bdp, 60 * PS_PER_S, tcp_config())).unwrap();
    sim.run();
    let payload_rate = rate as f64 * 1448.0 / wire as f64;
    let last40 = (delivered_at(&sim, 60 * PS_PER_S) - delivered_at(&sim, 20 * PS_PER_S)) as f64 * 8.0 / 40.0;
    let whole = delivered_at(&sim, 60 * PS_PER_S) as f64 * 8.0 / 60.0;
    eprintln!(
        "goodput last 40 s {:.2} Mb/s, whole run {:.2} Mb/s, payload rate {:.2} Mb/s",
        last40 / 1e6,
        whole / 1e6,
        payload_rate / 1e6
    );
    assert!(last40 >= 0.95 * payload_rate, "last 40 s goodput {last40} < 95% of {payload_rate}");
    assert!(last40 <= payload_rate * 1.0001, "cannot beat the payload rate");

    // The congestion-avoidance sawtooth: after the start-up recovery, cwnd climbs half a
    // segment per RTT (delayed ACKs, no byte counting) to BDP + queue, halves, and climbs again.
    let f = &sim.flows[0].sender.tcb.stats;
    assert!(f.fast_retransmits >= 2, "start-up loss and at least one sawtooth loss: {f:?}");
    assert_eq!(f.timeouts, 0, "NewReno needs no timeout here: {f:?}");
    // The last loss came when the window filled the pipe and the queue (2 x BDP), and it set
    // ssthresh to half of that.
    let sender = &sim.flows[0].sender;
    let (prior, ssthresh) = (sender.tcb.prior_cwnd as f64, sender.tcb.cc_state.ssthresh as f64);
    eprintln!("window at last loss {prior}, ssthresh {ssthresh}, bdp {bdp}");
    assert!((prior / (2.0 * bdp as f64) - 1.0).abs() < 0.1, "window at loss {prior} vs 2 x BDP {bdp}");
    assert!((ssthresh / bdp as f64 - 1.0).abs() < 0.1, "ssthresh {ssthresh} vs BDP {bdp}");
    // And between losses cwnd stays in congestion avoidance between those bounds.
    let fs = &sim.flow_series;
    let after = fs.time_ps.iter().position(|&t| t >= 40 * PS_PER_S).unwrap();
    let lo = *fs.cwnd_segments[after..].iter().min().unwrap() as f64;
    assert!(lo >= 0.9 * ssthresh, "cwnd {lo} fell below ssthresh {ssthresh} without a loss");
}

fn window_limited_goodput(delayed_ack: bool) -> f64 {
    let rate = 1_000_000_000;
    let rtt = 70 * PS_PER_MS;
    let mut tcp = tcp_config();
    tcp.rcv_buffer_bytes = 64 * 1024;
    tcp.window_scaling = false;
    tcp.delayed_ack = delayed_ack;
    let mut sim = Simulation::new(dumbbell(rate, rtt, 10_000, 20 * PS_PER_S, tcp)).unwrap();
    sim.run();
    assert_eq!(sim.flows[0].sender.tcb.stats.segments_retransmitted, 0);
    (delivered_at(&sim, 20 * PS_PER_S) - delivered_at(&sim, 10 * PS_PER_S)) as f64 * 8.0 / 10.0
}

#[test]
fn window_limited_goodput_is_window_over_rtt() {
    let goodput = window_limited_goodput(false);
    let expected = 65_535.0 * 8.0 / 0.070;
    eprintln!("goodput {:.3} Mb/s, 65535 B / 70 ms = {:.3} Mb/s", goodput / 1e6, expected / 1e6);
    assert!((goodput / expected - 1.0).abs() < 0.02, "goodput {goodput} vs {expected}");
}

#[test]
fn delayed_acks_hold_back_the_odd_segment_of_a_limited_window() {
    // 65,535 bytes hold 45 full segments. ACKs cover pairs, so the 45th waits for the
    // delayed-ACK timer (40 ms < RTT) each round and the window moves 44 segments per RTT.
    let goodput = window_limited_goodput(true);
    let expected = 44.0 * 1448.0 * 8.0 / 0.070;
    eprintln!("goodput {:.3} Mb/s, 44 x 1448 B / 70 ms = {:.3} Mb/s", goodput / 1e6, expected / 1e6);
    assert!((goodput / expected - 1.0).abs() < 0.01, "goodput {goodput} vs {expected}");
}

/// Time from the first sample to the first with cwnd >= w.
fn time_to_reach(sim: &Simulation, w: u32) -> f64 {
    let fs = &sim.flow_series;
    let i = fs.cwnd_segments.iter().position(|&c| c >= w as i64).expect("window reached");
    fs.time_ps[i] as f64 / PS_PER_S as f64
}

fn slow_start_run(delayed_ack: bool) -> Simulation {
    let rate = 10_000_000_000;
    let rtt = 100 * PS_PER_MS;
    let mut tcp = tcp_config();
    tcp.delayed_ack = delayed_ack;
    let mut s = dumbbell(rate, rtt, 100_000, 3 * PS_PER_S, tcp);
    s.sample_interval_ps = PS_PER_MS;
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    assert_eq!(sim.flows[0].sender.tcb.stats.segments_retransmitted, 0, "no loss");
    sim
}

#[test]
fn slow_start_doubles_per_rtt_with_an_ack_per_segment() {
    let sim = slow_start_run(false);
    let (iw, rtt) = (10.0f64, 0.1);
    for w in [160u32, 640, 2560] {
        let t = time_to_reach(&sim, w);
        let law = rtt * (w as f64 / iw).log2();
        eprintln!("W={w}: {t:.3} s, RTT*log2(W/IW) = {law:.3} s");
        assert!((t - law).abs() <= rtt, "W={w}: {t} vs {law}");
    }
}

#[test]
fn slow_start_grows_by_half_per_rtt_with_delayed_acks() {
    let sim = slow_start_run(true);
    let (iw, rtt) = (10.0f64, 0.1);
    for w in [160u32, 640, 2560] {
        let t = time_to_reach(&sim, w);
        // Document 000 eq. 3.2 counted from the initial window.
        let law = rtt * (w as f64 / iw).ln() / 1.5f64.ln();
        eprintln!("W={w}: {t:.3} s, RTT*log1.5(W/IW) = {law:.3} s");
        assert!((t - law).abs() <= rtt, "W={w}: {t} vs {law}");
    }
}

#[test]
fn same_scenario_same_results() {
    let run = || {
        let mut sim = Simulation::new(dumbbell(100_000_000, 40 * PS_PER_MS, 100, 10 * PS_PER_S, tcp_config())).unwrap();
        sim.finish().to_string()
    };
    let a = run();
    assert!(a.contains("\"fast_retransmits\""));
    assert_eq!(a, run());
}
