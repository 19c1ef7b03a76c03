//! The paced (NetSpec burst mode) source of document 000 (issue 4, acceptance 5).

mod support;
use fatpipe_core::source::{burst::BurstConfig, SourceSpec};
use fatpipe_core::time::{PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

const BURST_BYTES: u64 = 64_000;
const PERIOD_MS: u64 = 10;

fn run(snd_buffer_bytes: u64, carry_over: bool) -> Simulation {
    // Document 000's path: OC-12, 67 ms RTT, buffers of one BDP (5,209,300 bytes).
    let mut tcp = tcp_config();
    tcp.snd_buffer_bytes = snd_buffer_bytes;
    tcp.rcv_buffer_bytes = 5_209_300;
    let mut s = dumbbell(622_000_000, 67 * PS_PER_MS, 100_000, 10 * PS_PER_S, tcp);
    s.flows[0].source = SourceSpec::Burst(BurstConfig {
        start_ps: 0,
        stop_ps: None,
        burst_bytes: BURST_BYTES,
        period_ps: PERIOD_MS * PS_PER_MS,
        carry_over,
    });
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    sim
}

fn delivered_at(sim: &Simulation, t: u64) -> u64 {
    let fs = &sim.flow_series;
    fs.delivered_bytes[fs.time_ps.iter().position(|&x| x == t).unwrap()]
}

#[test]
fn a_burst_that_fits_offers_burst_size_over_period() {
    let sim = run(5_209_300, false);
    let f = &sim.flows[0];
    assert_eq!(f.bursts.failed_cycles, 0);
    // Bursts at 0, 10 ms, ..., 10 s.
    assert_eq!(f.bursts.bursts, 1001);
    assert_eq!(f.sender.bytes_written(), 1001 * BURST_BYTES);
    // Once slow start is past, what arrives is what is offered: 64,000 B x 8 / 10 ms.
    let offered_bps = BURST_BYTES as f64 * 8.0 / (PERIOD_MS as f64 / 1000.0);
    let received_bps = (delivered_at(&sim, 10 * PS_PER_S) - delivered_at(&sim, 2 * PS_PER_S)) as f64 * 8.0 / 8.0;
    assert!((received_bps / offered_bps - 1.0).abs() < 0.01, "{received_bps} vs {offered_bps}");
}

#[test]
fn a_send_buffer_smaller_than_a_burst_fails_cycles() {
    let dropped = run(32_000, false);
    let carried = run(32_000, true);
    let (fd, fc) = (&dropped.flows[0], &carried.flows[0]);
    // 32 KB drain in about one RTT (67 ms): far below a 64 KB burst every 10 ms. Every
    // period ends with its burst unwritten, whether the rest is dropped or carried over.
    assert!(fd.bursts.failed_cycles >= fd.bursts.bursts - 2, "{:?}", fd.bursts);
    assert!(fc.bursts.failed_cycles >= fc.bursts.bursts - 2, "{:?}", fc.bursts);
    assert!(fd.sender.bytes_written() < fd.bursts.bursts * BURST_BYTES / 4);
}
