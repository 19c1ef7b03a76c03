//! Slow start on a long fat network: one CUBIC flow over 1 Gb/s x 100 ms (BDP 8,128 frames of
//! 1538 bytes) with a drop-tail queue of one BDP, SACK recovery, delayed ACKs.
//!
//! Standard slow start doubles the window every round until the queue overflows: the window
//! that overflows it is about twice the path's capacity (2 BDP: pipe plus queue), and the round
//! after the first drop still sends at double rate, so thousands of segments are lost.
//! HyStart (Linux `tcp_cubic.c`) ends slow start near the BDP, from the ACK train or the delay
//! increase of one round, and HyStart++ (RFC 9406) from the delay increase, then probes on in
//! Conservative Slow Start. Both must lose far fewer.

mod support;
use fatpipe_core::cc::cubic::hystart::HyStartMode;
use fatpipe_core::cc::cubic::{CubicConfig, CubicVariant};
use fatpipe_core::cc::scenario_defaults;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::tcp::config::Recovery;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

const RATE_BPS: u64 = 1_000_000_000;
const RTT: Time = 100 * PS_PER_MS;
const WIRE_BYTES: u64 = 1500 + 38;
const DURATION: Time = 4 * PS_PER_S;
const BOTTLENECK: usize = 1;

struct SlowStart {
    /// Data segments first sent in the first slow start and lost (`slow_start_segments_lost`).
    lost: u64,
    /// cwnd when slow start ended, segments (ssthresh for an exit without loss).
    exit_cwnd: u32,
    end_ps: Time,
    /// Bytes delivered by the end of the run.
    delivered_bytes: u64,
}

fn first_slow_start(variant: CubicVariant, hystart: HyStartMode) -> SlowStart {
    let bdp = bdp_packets(RATE_BPS, RTT, WIRE_BYTES);
    let mut tcp = tcp_config();
    tcp.recovery = Recovery::Sack;
    let mut scenario = dumbbell(RATE_BPS, RTT, bdp, DURATION, tcp);
    scenario.flows[0].cc = Some(CcSpec::Cubic(CubicConfig { variant, hystart, ..scenario_defaults("cubic") }));
    let mut sim = Simulation::new(scenario).unwrap();
    let mut exit_cwnd = None;
    let mut t = 0;
    while t < DURATION {
        t += PS_PER_MS;
        sim.run_until(t);
        let sender = &sim.flows[0].sender;
        if exit_cwnd.is_none() && sender.tcb.milestones.slow_start_end_ps.is_some() {
            exit_cwnd = Some(sender.tcb.cc_state.cwnd);
        }
    }
    let flow = &sim.flows[0];
    let result = SlowStart {
        lost: flow.losses.slow_start_data_packets,
        exit_cwnd: exit_cwnd.expect("slow start ended"),
        end_ps: flow.sender.tcb.milestones.slow_start_end_ps.unwrap(),
        delivered_bytes: flow.delivered_bytes(),
    };
    eprintln!(
        "{variant:?} hystart {hystart:?}: slow start ended at {:.3} s with cwnd {} (BDP {bdp}), {} segments lost in it, {} lost in all; {:.1} MB delivered in {} s; bottleneck drops {}",
        result.end_ps as f64 / PS_PER_S as f64,
        result.exit_cwnd,
        result.lost,
        flow.losses.data_packets,
        result.delivered_bytes as f64 / 1e6,
        DURATION / PS_PER_S,
        sim.links[BOTTLENECK].stats.drops_packets,
    );
    result
}

#[test]
fn without_hystart_slow_start_ends_losing_thousands() {
    for variant in [CubicVariant::Rfc, CubicVariant::Linux] {
        let s = first_slow_start(variant, HyStartMode::Off);
        assert!(s.lost > 2_000, "{variant:?}: {} lost", s.lost);
    }
}

#[test]
fn linux_hystart_leaves_slow_start_near_the_bdp_with_few_losses() {
    let bdp = bdp_packets(RATE_BPS, RTT, WIRE_BYTES) as u32;
    let off = first_slow_start(CubicVariant::Linux, HyStartMode::Off);
    let on = first_slow_start(CubicVariant::Linux, HyStartMode::Linux);
    assert!(on.lost * 20 < off.lost, "HyStart: {} lost, standard slow start {}", on.lost, off.lost);
    // It leaves before the queue (one more BDP) is full.
    assert!(on.exit_cwnd < 2 * bdp, "exit at cwnd {}", on.exit_cwnd);
    assert!(on.end_ps < off.end_ps + RTT);
}

/// HyStart++ enters CSS in the round where cwnd passes the BDP, but this sender does not
/// pace: each slow-start round leaves in ACK-clocked bursts at twice the bottleneck rate, so
/// the queue rises and drains within a round, and later samples of the same round fall below
/// the baseline that triggered CSS. RFC 9406 takes that as a spurious exit and resumes slow
/// start (section 4.2), so the overshoot is cut by about a fifth, not avoided (12,741 segments
/// lost against 16,257 when measured).
#[test]
fn hystart_plus_plus_loses_fewer_than_standard_slow_start() {
    for variant in [CubicVariant::Rfc, CubicVariant::Linux] {
        let off = first_slow_start(variant, HyStartMode::Off);
        let on = first_slow_start(variant, HyStartMode::Rfc9406);
        assert!(
            on.lost * 10 < off.lost * 9,
            "{variant:?}: HyStart++ {} lost, standard slow start {}",
            on.lost,
            off.lost
        );
    }
}

#[test]
fn linux_hystart_works_in_the_rfc_form_too() {
    let off = first_slow_start(CubicVariant::Rfc, HyStartMode::Off);
    let on = first_slow_start(CubicVariant::Rfc, HyStartMode::Linux);
    assert!(on.lost * 20 < off.lost, "HyStart: {} lost, standard slow start {}", on.lost, off.lost);
}
