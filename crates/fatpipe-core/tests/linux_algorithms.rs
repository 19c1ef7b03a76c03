//! Hybla, Illinois, Veno, YeAH, NV, CDG and TCP-LP (issue 28) on the full engine, each on the kind of path it
//! was made for, against Reno on the same path; the outcome each asserts follows from its
//! design (closed forms in the comments), not from a run of this code. The figures printed
//! here are the ones docs/validation.md shows.
//!
//! Every flow runs on the Linux stack with its SACK recovery (RACK, TLP, PRR, undo), as the
//! algorithms' presets do, and Reno is Linux's (byte counting).

mod support;
use fatpipe_core::cc::reno::RenoConfig;
use fatpipe_core::cc::scenario_defaults;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::net::impairment::{bernoulli::BernoulliConfig, ImpairmentSpec};
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

/// Ethernet frame of a full segment: 1500-byte MTU plus 38 bytes of framing (support::dumbbell).
const WIRE_BYTES: u64 = 1500 + 38;
/// Index of the forward bottleneck in support::dumbbell.
const BOTTLENECK: u32 = 1;

struct Path {
    rate_bps: u64,
    rtt: Time,
    /// Bottleneck queue, in bandwidth-delay products.
    queue_bdp: f64,
    /// Random loss of data packets on the bottleneck.
    loss: f64,
    duration: Time,
    /// Measure from here to the end.
    measure_from: Time,
    /// Initial ssthresh, segments (skips the first slow start's overshoot).
    initial_ssthresh: Option<u32>,
    handshake: bool,
}

/// A path without random loss, slow start from scratch and no handshake: `rate_bps`, an
/// RTT and a run in milliseconds and seconds, measured from `measure_from_s`.
fn path(rate_bps: u64, rtt_ms: u64, queue_bdp: f64, duration_s: u64, measure_from_s: u64) -> Path {
    Path {
        rate_bps,
        rtt: rtt_ms * PS_PER_MS,
        queue_bdp,
        loss: 0.0,
        duration: duration_s * PS_PER_S,
        measure_from: measure_from_s * PS_PER_S,
        initial_ssthresh: None,
        handshake: false,
    }
}

struct Outcome {
    /// Bottleneck utilization over the measured interval.
    utilization: f64,
    /// Mean bottleneck queue over the measured interval, packets.
    mean_queue_packets: f64,
}

fn run(path: &Path, cc: CcSpec) -> Outcome {
    let bdp = bdp_packets(path.rate_bps, path.rtt, WIRE_BYTES);
    let mut tcp = linux_tcp();
    tcp.handshake = path.handshake;
    tcp.initial_ssthresh_segments = path.initial_ssthresh;
    let queue = ((bdp as f64 * path.queue_bdp).ceil() as u64).max(1);
    let mut scenario = dumbbell(path.rate_bps, path.rtt, queue, path.duration, tcp);
    if path.loss > 0.0 {
        scenario.links[BOTTLENECK as usize].impairments =
            vec![ImpairmentSpec::Bernoulli(BernoulliConfig { probability: path.loss })];
    }
    scenario.flows[0].cc = Some(cc);
    scenario.validate().expect("valid scenario");
    let mut sim = Simulation::new(scenario).unwrap();
    sim.run();
    let qs = &sim.queue_series;
    let at = |t: Time| {
        let i = (0..qs.time_ps.len()).find(|&i| qs.time_ps[i] == t && qs.link[i] == BOTTLENECK).expect("sampled");
        qs.departed_bytes[i]
    };
    let seconds = (path.duration - path.measure_from) as f64 / PS_PER_S as f64;
    let utilization = (at(path.duration) - at(path.measure_from)) as f64 * 8.0 / seconds / path.rate_bps as f64;
    let queued: Vec<u64> = (0..qs.time_ps.len())
        .filter(|&i| qs.link[i] == BOTTLENECK && qs.time_ps[i] >= path.measure_from)
        .map(|i| qs.queue_packets[i])
        .collect();
    let mean_queue_packets = queued.iter().sum::<u64>() as f64 / queued.len().max(1) as f64;
    let sender = &sim.flows[0].sender;
    eprintln!(
        "{}: utilization {:.1}%, mean queue {:.0} packets (bdp {bdp}, limit {queue}); final cwnd {}; {:?}",
        sender.algorithm(),
        utilization * 100.0,
        mean_queue_packets,
        sender.tcb.cc_state.cwnd,
        sender.tcb.stats,
    );
    Outcome { utilization, mean_queue_packets }
}

fn reno() -> CcSpec {
    CcSpec::Reno(RenoConfig::aimd(1.0, 0.5, true))
}

/// The Linux stack as the `linux` profile runs it.
fn linux_tcp() -> TcpConfig {
    linux_profile_tcp()
}

/// A geostationary satellite path: 10 Mb/s, 600 ms, one loss in a thousand packets (the
/// paper's setting: long RTT and link errors). Reno's window is bounded by its response
/// function, 1.22 / sqrt(p) = 39 segments, 0.75 Mb/s; Hybla's rho = 24 multiplies the growth
/// per RTT by rho^2 = 576 and so the window by rho (sqrt(576)), 24 x 39 = 930 segments, more
/// than the path's 488: it fills the link but for the losses' toll. Both start with an
/// ssthresh of 300, below the path: from an infinite one Linux's Hybla opens the window by
/// 2^16 - 1 at the first ACK (rho = 24, capped at 16) to its clamp of 65,535, a burst whose
/// repair holds it in the Loss state for more than a minute.
#[test]
fn hybla_fills_a_long_lossy_path_where_reno_cannot() {
    let path = Path { loss: 1e-3, initial_ssthresh: Some(300), handshake: true, ..path(10_000_000, 600, 1.0, 120, 30) };
    let reno = run(&path, reno());
    let hybla = run(&path, CcSpec::Hybla(scenario_defaults("hybla")));
    assert!(reno.utilization < 0.2, "Reno near its response function: {:.3}", reno.utilization);
    assert!(hybla.utilization > 0.6, "Hybla: {:.3}", hybla.utilization);
    assert!(hybla.utilization > 4.0 * reno.utilization);
}

/// 1 Gb/s x 100 ms (8,127 packets), slow start ended at half of it: Reno adds one segment per
/// RTT, so 60 s (600 RTTs) take it from 4,064 to 4,664, an average of 4,364 / 8,127 = 54 %.
/// Illinois sees no queueing delay below the pipe, so alpha = 10: it reaches the pipe after
/// about 406 RTTs (41 s) and then keeps it busy (alpha falls and beta rises as the queue
/// builds).
#[test]
fn illinois_fills_a_1gbps_100ms_path_faster_than_reno() {
    let path = Path { initial_ssthresh: Some(4064), ..path(1_000_000_000, 100, 0.5, 60, 10) };
    let reno = run(&path, reno());
    let illinois = run(&path, CcSpec::Illinois(scenario_defaults("illinois")));
    assert!((0.48..0.62).contains(&reno.utilization), "Reno: {:.3}", reno.utilization);
    assert!(illinois.utilization > reno.utilization + 0.15, "Illinois {:.3}", illinois.utilization);
}

/// 20 Mb/s x 100 ms (163 packets) with random loss 1e-3 and a buffer of one BDP: the losses
/// come without a queue, in Veno's non-congestive state, so it keeps 4/5 of the window where
/// Reno halves: AIMD(1, 1/5) against AIMD(1, 1/2), windows sqrt(4.5 / p) = 67 against
/// sqrt(1.5 / p) = 39, a ratio of sqrt(3) = 1.73 while both are below the pipe.
#[test]
fn veno_keeps_more_of_its_window_under_random_loss() {
    let path = Path { loss: 1e-3, ..path(20_000_000, 100, 1.0, 120, 20) };
    let reno = run(&path, reno());
    let veno = run(&path, CcSpec::Veno(scenario_defaults("veno")));
    let ratio = veno.utilization / reno.utilization;
    assert!((1.3..2.0).contains(&ratio), "Veno / Reno = {ratio:.2} (closed form 1.73)");
}

/// 100 Mb/s x 40 ms (326 packets) with a one-BDP buffer, no random loss. Reno fills the buffer
/// and halves, its mean queue about half the buffer; YeAH drains its own queue whenever it
/// exceeds alpha = 80 packets (precautionary decongestion), so it keeps the link busy with a
/// mean queue of the order of alpha.
#[test]
fn yeah_keeps_the_link_busy_with_a_short_queue() {
    let path = path(100_000_000, 40, 1.0, 60, 20);
    let reno = run(&path, reno());
    let yeah = run(&path, CcSpec::Yeah(scenario_defaults("yeah")));
    assert!(yeah.utilization > 0.9, "YeAH: {:.3}", yeah.utilization);
    assert!(yeah.mean_queue_packets < 2.0 * 80.0, "YeAH's queue: {:.0}", yeah.mean_queue_packets);
    assert!(yeah.mean_queue_packets < 0.5 * reno.mean_queue_packets);
}

/// 100 Mb/s x 10 ms (82 packets) with a buffer of four BDPs: NV predicts the window its rate
/// needs and keeps about `pad` (10) of its packets queued, cutting before the buffer fills,
/// where Reno fills the buffer to its loss and halves. Both keep the link busy.
#[test]
fn nv_keeps_a_few_packets_queued_without_losses() {
    let path = path(100_000_000, 10, 4.0, 30, 10);
    let reno = run(&path, reno());
    let nv = run(&path, CcSpec::Nv(scenario_defaults("nv")));
    assert!(nv.utilization > 0.9, "NV: {:.3}", nv.utilization);
    assert!(nv.mean_queue_packets < 4.0 * 10.0, "NV's queue: {:.0} (pad 10)", nv.mean_queue_packets);
    assert!(reno.mean_queue_packets > 100.0, "Reno's queue: {:.0}", reno.mean_queue_packets);
}

/// Delivered bytes of each of two flows over the measured interval, the second starting at
/// `second_start`.
fn shares(path: &Path, first: CcSpec, second: CcSpec, second_start: Time, seed: u64) -> (u64, u64) {
    let bdp = bdp_packets(path.rate_bps, path.rtt, WIRE_BYTES);
    let mut tcp = linux_tcp();
    tcp.initial_ssthresh_segments = path.initial_ssthresh;
    let queue = ((bdp as f64 * path.queue_bdp).ceil() as u64).max(1);
    let mut scenario = dumbbell(path.rate_bps, path.rtt, queue, path.duration, tcp);
    scenario.seed = seed;
    let mut other = scenario.flows[0].clone();
    other.name = "flow1".into();
    other.cc = Some(second);
    if let fatpipe_core::source::SourceSpec::Bulk(b) = &mut other.source {
        b.start_ps = second_start;
    }
    scenario.flows[0].cc = Some(first);
    scenario.flows.push(other);
    scenario.validate().expect("valid scenario");
    let mut sim = Simulation::new(scenario).unwrap();
    sim.run();
    let fs = &sim.flow_series;
    let at = |flow: u32, t: Time| {
        let i = (0..fs.time_ps.len()).find(|&i| fs.time_ps[i] == t && fs.flow[i] == flow).expect("sampled");
        fs.delivered_bytes[i]
    };
    let got = |flow| at(flow, path.duration) - at(flow, path.measure_from);
    eprintln!("shares over the measured interval: {} and {} bytes", got(0), got(1));
    (got(0), got(1))
}

/// 100 Mb/s x 40 ms, one BDP of buffer: CDG backs off on the delay gradient as the queue
/// grows, with a probability from the gradient, so its mean queue stays far below Reno's,
/// which fills the buffer to a loss. Its draws come from the scenario's seed: the same seed
/// gives the same run, another seed another.
#[test]
fn cdg_backs_off_on_the_delay_gradient_before_the_buffer_fills() {
    let path = path(100_000_000, 40, 1.0, 60, 20);
    let reno = run(&path, reno());
    let cdg = run(&path, CcSpec::Cdg(scenario_defaults("cdg")));
    assert!(cdg.mean_queue_packets < 0.5 * reno.mean_queue_packets, "CDG's queue {:.0}", cdg.mean_queue_packets);
    assert!(cdg.utilization > 0.7, "CDG: {:.3}", cdg.utilization);
    let cdg_cc = || CcSpec::Cdg(scenario_defaults("cdg"));
    let short = Path { duration: 20 * PS_PER_S, measure_from: 10 * PS_PER_S, ..path };
    let a = shares(&short, cdg_cc(), cdg_cc(), 0, 7);
    assert_eq!(a, shares(&short, cdg_cc(), cdg_cc(), 0, 7), "same seed, same run");
    assert_ne!(a, shares(&short, cdg_cc(), cdg_cc(), 0, 8), "the draws follow the seed");
}

/// TCP-LP (tcp_lp.c's rules) on 10 Mb/s x 20 ms (17 packets) with two BDPs of buffer, the
/// path where the kernel ran the same rules (bpf/lp.bpf.c through `fatpipe emulate`, with
/// offset-free timestamps; docs/validation.md). Alone, a delay indication within the
/// inference time cuts the window to one segment; the receiver then holds each lone segment's
/// ACK for its 40 ms delayed-ACK timer, which TSval - TSecr counts as one-way delay (10 ms of
/// path), so the smoothed delay keeps crossing 1.15 x itself (the range restarted at each
/// indication) and the window stays near one segment: the kernel carried 0.63 Mb/s (6.7 % of
/// the link) in 20 s, far from the paper's lone flow that uses the link. The test holds
/// fatpipe to the kernel's regime, not to the paper's.
#[test]
fn lp_alone_sits_near_one_segment_as_the_kernel_does() {
    let path = path(10_000_000, 20, 2.0, 20, 0);
    let lp = run(&path, CcSpec::Lp(scenario_defaults("lp")));
    assert!(lp.utilization < 0.15, "LP alone: {:.3} of the link (kernel: 0.067)", lp.utilization);
    assert!(lp.mean_queue_packets < 2.0, "LP alone keeps no queue: {:.1}", lp.mean_queue_packets);
}

/// The same path, a Reno flow from 0 s and a second flow from 5 s. A second Reno flow takes
/// about half of the link; a TCP-LP flow sees the queue Reno builds as one-way delay and
/// yields nearly all of it (the kernel, same rules: Reno 9.08 Mb/s, LP 0.40 Mb/s over 30 s).
#[test]
fn lp_yields_to_a_reno_flow() {
    let path = path(10_000_000, 20, 2.0, 30, 10);
    let (reno_a, reno_b) = shares(&path, reno(), reno(), 5 * PS_PER_S, 1);
    let even = reno_b as f64 / (reno_a + reno_b) as f64;
    assert!((0.3..0.7).contains(&even), "two Reno flows: the second's share {even:.2}");
    let (reno_bytes, lp_bytes) = shares(&path, reno(), CcSpec::Lp(scenario_defaults("lp")), 5 * PS_PER_S, 1);
    let lp_share = lp_bytes as f64 / (reno_bytes + lp_bytes) as f64;
    assert!(lp_share < 0.1, "LP's share beside Reno: {lp_share:.3}");
}
