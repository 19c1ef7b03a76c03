//! Linux's per-destination metrics cache across transfers one after another (issue 25
//! section 3): a flow that repeats its transfer closes each connection, leaving ssthresh,
//! RTT, its deviation and the reordering degree for the next one (`tcp_update_metrics`),
//! which starts from them (`tcp_init_metrics`). Each test runs the whole simulation and
//! reads the senders packet by packet; the rules' arithmetic is `tcp/metrics.rs`'s unit
//! tests.

mod support;
use fatpipe_core::cc::reno::RenoConfig;
use fatpipe_core::cc::{CaState, CcSpec, INFINITE_SSTHRESH};
use fatpipe_core::scenario::Scenario;
use fatpipe_core::sim::{FlowSummary, TransferSummary};
use fatpipe_core::source::SourceSpec;
use fatpipe_core::tcp::config::{Recovery, RtoEstimator, StackKind, WindowReduction};
use fatpipe_core::tcp::metrics::{Closing, MetricsConfig, MetricsKernel};
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

const RATE: u64 = 100_000_000;
const RTT: Time = 50 * PS_PER_MS;
const STEP: Time = PS_PER_MS;

/// The Linux stack as the profile's kernel has it, with the cache on.
fn linux(kernel: MetricsKernel) -> TcpConfig {
    let mut tcp = tcp_config();
    tcp.stack = StackKind::Linux;
    tcp.recovery = Recovery::Sack;
    tcp.dsack = true;
    tcp.undo = true;
    tcp.adaptive_reordering = true;
    tcp.rto_estimator = RtoEstimator::Linux;
    if kernel == MetricsKernel::Linux24 {
        tcp.fack = true;
        tcp.window_reduction = WindowReduction::RateHalving;
        tcp.max_reordering_segments = 127;
    } else {
        tcp.rack = true;
        tcp.tlp = true;
        tcp.frto = true;
    }
    tcp.metrics = Some(MetricsConfig { kernel, no_metrics_save: false, no_ssthresh_metrics_save: false });
    tcp
}

/// Two transfers of `stop` writing each, `gap` apart, over a 100 Mb/s, 50 ms dumbbell whose
/// 100-packet queue the first slow start overflows.
fn repeated(tcp: TcpConfig, stop: Time, gap: Time, duration: Time) -> Scenario {
    let mut s = dumbbell(RATE, RTT, 100, duration, tcp);
    s.flows[0].cc = Some(CcSpec::Reno(RenoConfig::aimd(1.0, 0.5, false)));
    let SourceSpec::Bulk(b) = &mut s.flows[0].source else { unreachable!() };
    b.stop_ps = Some(stop);
    b.transfers = Some(2);
    b.transfer_gap_ps = gap;
    s
}

fn transfers(sim: &Simulation) -> Vec<TransferSummary> {
    match &sim.report().flows[0] {
        FlowSummary::Tcp(t) => t.transfers.clone().expect("a flow with transfers"),
        FlowSummary::Udp(_) => unreachable!(),
    }
}

/// Runs until transfer `n` (from 1) has started (or closed, `closed`), in 1 ms steps.
fn run_until_transfer(sim: &mut Simulation, n: usize, closed: bool) {
    while sim.now() < sim.duration() {
        let t = transfers(sim);
        if t.len() >= n && (!closed || t[n - 1].end_ps.is_some()) {
            return;
        }
        sim.run_until(sim.now() + STEP);
    }
    panic!("transfer {n} never {}", if closed { "closed" } else { "started" });
}

/// The first connection's state as it closes (the sender is kept until the next opens).
fn closing_state(sim: &mut Simulation) -> Closing {
    run_until_transfer(sim, 1, true);
    sim.flows[0].sender.closing_metrics()
}

#[test]
fn the_second_connection_starts_from_the_cached_ssthresh() {
    // Each transfer: 6 s of writing, then the 64 MB send buffer's backlog (about 5 s).
    let s = repeated(linux(MetricsKernel::Linux24), 6 * PS_PER_S, PS_PER_S, 30 * PS_PER_S);
    let mut sim = Simulation::new(s.clone()).unwrap();
    let c = closing_state(&mut sim);
    // The first connection left slow start by a loss and closed in congestion avoidance,
    // Open: Linux 2.4 saves max(cwnd / 2, ssthresh).
    assert!(c.open && c.ssthresh < INFINITE_SSTHRESH && c.cwnd > c.ssthresh, "{c:?}");
    let cached = (c.cwnd >> 1).max(c.ssthresh);
    run_until_transfer(&mut sim, 2, false);
    let t = transfers(&sim);
    assert!(t[1].metrics_seeded);
    assert_eq!(t[1].initial_ssthresh_segments, Some(cached));
    assert_eq!(sim.flows[0].sender.tcb.cc_state.ssthresh, cached);
    // Packet by packet: the second connection's slow start ends at the cached ssthresh
    // without a loss, where the first one's ended by overflowing the queue.
    let before = sim.flows[0].sender.tcb.stats.segments_retransmitted;
    while sim.flows[0].sender.tcb.cc_state.cwnd < cached {
        sim.run_until(sim.now() + STEP);
    }
    assert_eq!(sim.flows[0].sender.tcb.stats.segments_retransmitted, before);
    assert!(t[0].segments_retransmitted > 0);

    // With the cache off the second connection starts as the first: on an empty path with
    // nothing random, it repeats the first one segment for segment.
    let mut off = s;
    if let Some(tcp) = &mut off.flows[0].tcp {
        tcp.metrics = Some(MetricsConfig { no_metrics_save: true, ..tcp.metrics.unwrap() });
    }
    let mut sim = Simulation::new(off).unwrap();
    sim.run();
    let t = transfers(&sim);
    assert!(t[1].end_ps.is_some(), "both transfers closed");
    assert!(!t[1].metrics_seeded);
    assert_eq!(t[1].initial_ssthresh_segments, None);
    assert_eq!(
        (t[1].bytes_delivered, t[1].segments_retransmitted, t[1].fast_retransmits),
        (t[0].bytes_delivered, t[0].segments_retransmitted, t[0].fast_retransmits)
    );
}

#[test]
fn linux_seeds_the_first_rto_from_the_cached_rtt_and_keeps_ssthresh_out() {
    let mut tcp = linux(MetricsKernel::Linux);
    tcp.metrics = Some(MetricsConfig { no_ssthresh_metrics_save: true, ..tcp.metrics.unwrap() });
    let mut sim = Simulation::new(repeated(tcp, 6 * PS_PER_S, PS_PER_S, 20 * PS_PER_S)).unwrap();
    let c = closing_state(&mut sim);
    run_until_transfer(&mut sim, 2, false);
    let t = transfers(&sim);
    // tcp_metrics.c tcp_init_metrics: RTO = RTT + max(2 RTT, rto_min) from the cached RTT,
    // the first connection's SRTT (8 x SRTT >> 3); ssthresh not cached (5.6's default).
    let rtt = (c.srtt8 >> 3) as Time;
    assert_eq!(t[1].initial_rto_ps, rtt + (2 * rtt).max(200 * PS_PER_MS));
    assert_eq!(t[0].initial_rto_ps, PS_PER_S, "the first connection: the initial RTO");
    assert_eq!(t[1].initial_ssthresh_segments, None);
    assert!(t[0].final_ssthresh_segments.is_some(), "there was an ssthresh to save");
    // The estimator itself is untouched: the first data sample starts it afresh.
    assert_eq!(sim.flows[0].sender.tcb.rtt.srtt, None);
}

#[test]
fn linux24_without_timestamps_forgets_the_cached_rtt() {
    for timestamps in [false, true] {
        let mut tcp = linux(MetricsKernel::Linux24);
        tcp.handshake = true;
        tcp.timestamps = timestamps;
        let mut sim = Simulation::new(repeated(tcp, 6 * PS_PER_S, PS_PER_S, 20 * PS_PER_S)).unwrap();
        run_until_transfer(&mut sim, 2, false);
        // The second transfer's data starts after its handshake.
        while transfers(&sim)[1].initial_rto_ps == 0 {
            sim.run_until(sim.now() + STEP);
        }
        let t = transfers(&sim);
        if timestamps {
            // SRTT raised from the SYN's 50 ms to the first connection's (queueing
            // included): a larger RTO than the first connection's, under 3 s.
            assert!(t[1].initial_rto_ps > t[0].initial_rto_ps, "{t:?}");
            assert!(t[1].initial_rto_ps < 3 * PS_PER_S);
        } else {
            // "FORGET ALL AND RESET!": an RTO under TCP_TIMEOUT_INIT without timestamps.
            assert_eq!(t[1].initial_rto_ps, 3 * PS_PER_S);
            assert_eq!(sim.flows[0].sender.tcb.rtt.srtt, None);
        }
        // ssthresh is cached either way.
        assert!(t[1].initial_ssthresh_segments.is_some());
    }
}

#[test]
fn a_connection_still_in_its_first_slow_start_saves_no_ssthresh() {
    // 300 segments: the first connection never meets the queue's limit.
    let mut s = repeated(linux(MetricsKernel::Linux24), 6 * PS_PER_S, PS_PER_S, 20 * PS_PER_S);
    let SourceSpec::Bulk(b) = &mut s.flows[0].source else { unreachable!() };
    b.bytes = Some(300 * 1448);
    let mut sim = Simulation::new(s).unwrap();
    let c = closing_state(&mut sim);
    assert_eq!(c.ssthresh, INFINITE_SSTHRESH);
    assert_eq!(sim.flows[0].sender.tcb.ca_state, CaState::Open);
    sim.run();
    let t = transfers(&sim);
    assert!(t[1].metrics_seeded, "the RTT was saved");
    assert_eq!(t[1].initial_ssthresh_segments, None);
    assert_eq!(t[0].segments_retransmitted + t[1].segments_retransmitted, 0);
    assert_eq!(t[1].bytes_delivered, 300 * 1448);
}
