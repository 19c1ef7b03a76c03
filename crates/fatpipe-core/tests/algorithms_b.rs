//! Vegas, Westwood, Westwood+, FAST, GridDT and NOCC on the full engine.

mod support;
use fatpipe_core::cc::vegas::VegasConfig;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

/// The bottleneck link of `dumbbell` (sender side to receiver side).
const BOTTLENECK: u32 = 1;
/// Ethernet frame of a full 1448-byte segment with timestamps: 1500 bytes of IP + 38 framing.
const WIRE_BYTES: u64 = 1500 + 38;

fn run(rate_bps: u64, rtt: Time, queue_packets: u64, duration: Time, cc: CcSpec, tcp: TcpConfig) -> Simulation {
    let mut scenario = dumbbell(rate_bps, rtt, queue_packets, duration, tcp);
    scenario.flows[0].cc = cc;
    let mut sim = Simulation::new(scenario).unwrap();
    sim.run();
    sim
}

/// Indices of the bottleneck's queue samples taken in [from, to].
fn bottleneck_samples(sim: &Simulation, from: Time, to: Time) -> Vec<usize> {
    let qs = &sim.queue_series;
    (0..qs.time_ps.len()).filter(|&i| qs.link[i] == BOTTLENECK && qs.time_ps[i] >= from && qs.time_ps[i] <= to).collect()
}

/// Mean bottleneck queue over the samples in [from, to], packets.
fn mean_queue_packets(sim: &Simulation, from: Time, to: Time) -> f64 {
    let idx = bottleneck_samples(sim, from, to);
    idx.iter().map(|&i| sim.queue_series.queue_packets[i] as f64).sum::<f64>() / idx.len() as f64
}

/// Fraction of [from, to] the bottleneck spent transmitting, from the bytes it put on the wire.
fn utilization(sim: &Simulation, rate_bps: u64, from: Time, to: Time) -> f64 {
    let idx = bottleneck_samples(sim, from, to);
    let (first, last) = (idx[0], idx[idx.len() - 1]);
    let qs = &sim.queue_series;
    let bits = (qs.departed_bytes[last] - qs.departed_bytes[first]) as f64 * 8.0;
    let seconds = (qs.time_ps[last] - qs.time_ps[first]) as f64 / PS_PER_S as f64;
    bits / seconds / rate_bps as f64
}

/// Bottleneck drops in [from, to].
fn drops(sim: &Simulation, from: Time, to: Time) -> u64 {
    let idx = bottleneck_samples(sim, from, to);
    let qs = &sim.queue_series;
    qs.drops_packets[idx[idx.len() - 1]] - qs.drops_packets[idx[0]]
}

fn vegas() -> CcSpec {
    CcSpec::Vegas(VegasConfig { alpha: 1.0, beta: 3.0, gamma: 1.0 })
}

#[test]
fn vegas_holds_between_alpha_and_beta_packets_in_the_bottleneck_queue() {
    let rate = 10_000_000;
    let rtt = 40 * PS_PER_MS;
    let duration = 60 * PS_PER_S;
    let sim = run(rate, rtt, 100, duration, vegas(), tcp_config());
    let from = 20 * PS_PER_S;
    let q = mean_queue_packets(&sim, from, duration);
    let u = utilization(&sim, rate, from, duration);
    let d = drops(&sim, 0, duration);
    let st = &sim.flows[0].sender.stats;
    eprintln!("vegas: mean queue {q:.2} packets, utilization {u:.4}, drops {d}, {st:?}, cwnd {}", sim.flows[0].sender.cc_state.cwnd);
}
