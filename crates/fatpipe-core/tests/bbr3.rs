//! BBRv3 on the dumbbell of 100 Mb/s and 40 ms (BDP 326 packets of 1538 wire bytes), on the
//! Linux stack as the `linux` profile runs it (SACK, RACK-TLP, PRR, F-RTO, undo; CUBIC and
//! BBRv1 in their Linux forms): outcomes its design fixes, beside BBRv1's on the same paths.
//!
//! - A shallow buffer (0.1 BDP, drop-tail): BBRv1 ignores loss and probes at 1.25 x every
//!   8 phases, so it retransmits a few percent of what it sends; BBRv3 bounds its flight by
//!   inflight_hi, set where loss passed 2 %, and cuts bw_lo / inflight_lo by 0.7 per round with
//!   loss: it retransmits far less while keeping the link busy.
//! - Two BBRv3 flows: bw_lo / inflight_lo drain the larger flow, and the 2-3 s probes
//!   (randomized) share the bandwidth out; they converge to near-even shares.
//! - Beside CUBIC in a 1-BDP buffer: v3 answers loss (inflight_hi where a probe lost more
//!   than 2 %, bw_lo / inflight_lo cut by 0.7 per lossy round, 15 % headroom when cruising),
//!   which v1 does not, so CUBIC keeps more of the link beside v3 than beside v1 (Google's
//!   stated aim for v3, IETF 117/119 CCWG). The share itself is a measurement, not pinned.

mod support;
use fatpipe_core::cc::bbr::{BbrConfig, BbrVariant};
use fatpipe_core::cc::cubic::hystart::HyStartMode;
use fatpipe_core::cc::cubic::{CubicConfig, CubicVariant};
use fatpipe_core::cc::scenario_defaults;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::scenario::Scenario;
use fatpipe_core::source::{bulk::BulkConfig, SourceSpec};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

const RATE_BPS: u64 = 100_000_000;
const RTT_PS: Time = 40 * PS_PER_MS;
const WIRE_BYTES: u64 = 1538;

fn bdp() -> u64 {
    bdp_packets(RATE_BPS, RTT_PS, WIRE_BYTES)
}

fn bbr3() -> CcSpec {
    CcSpec::Bbr3(scenario_defaults("bbr3"))
}

fn bbr() -> CcSpec {
    CcSpec::Bbr(BbrConfig { variant: BbrVariant::Linux, ..scenario_defaults("bbr") })
}

fn cubic() -> CcSpec {
    CcSpec::Cubic(CubicConfig {
        variant: CubicVariant::Linux,
        hystart: HyStartMode::Linux,
        ..scenario_defaults("cubic")
    })
}

/// Flows with these algorithms (the i-th starting at i x `stagger`) on the dumbbell.
fn scenario(ccs: &[CcSpec], buffer_packets: u64, duration: Time, stagger: Time) -> Scenario {
    let mut s = dumbbell(RATE_BPS, RTT_PS, buffer_packets, duration, linux_profile_tcp());
    s.sample_interval_ps = 10 * PS_PER_MS;
    let first = s.flows[0].clone();
    s.flows.clear();
    for (i, cc) in ccs.iter().enumerate() {
        let mut f = first.clone();
        f.name = format!("flow{i}");
        f.cc = Some(cc.clone());
        f.source = SourceSpec::Bulk(BulkConfig {
            start_ps: i as Time * stagger,
            stop_ps: None,
            bytes: None,
            transfers: None,
            transfer_gap_ps: 0,
        });
        s.flows.push(f);
    }
    s
}

fn run(s: Scenario) -> Simulation {
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    sim
}

/// The bottleneck's (link 1) departed bytes over [from, end) as a fraction of its capacity.
fn utilization_since(sim: &Simulation, from: Time) -> f64 {
    let q = &sim.queue_series;
    let idx: Vec<usize> = (0..q.time_ps.len()).filter(|&i| q.link[i] == 1 && q.time_ps[i] >= from).collect();
    let (a, b) = (idx[0], *idx.last().unwrap());
    let bits = (q.departed_bytes[b] - q.departed_bytes[a]) as f64 * 8.0;
    bits / ((q.time_ps[b] - q.time_ps[a]) as f64 / PS_PER_S as f64) / RATE_BPS as f64
}

/// Each flow's delivered bytes over [from, end).
fn delivered_since(sim: &Simulation, from: Time) -> Vec<f64> {
    let fs = &sim.flow_series;
    (0..sim.flows.len() as u32)
        .map(|flow| {
            let idx: Vec<usize> =
                (0..fs.time_ps.len()).filter(|&i| fs.flow[i] == flow && fs.time_ps[i] >= from).collect();
            (fs.delivered_bytes[*idx.last().unwrap()] - fs.delivered_bytes[idx[0]]) as f64
        })
        .collect()
}

/// Retransmitted segments per segment sent over the whole run.
fn retransmission_rate(sim: &Simulation, flow: usize) -> f64 {
    let st = &sim.flows[flow].sender.tcb.stats;
    st.segments_retransmitted as f64 / st.segments_sent as f64
}

fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    sum * sum / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

#[test]
fn shallow_buffer_retransmits_far_less_than_bbr_v1_at_high_utilization() {
    let duration = 30 * PS_PER_S;
    let buffer = bdp() / 10;
    let v3 = run(scenario(&[bbr3()], buffer, duration, 0));
    let v1 = run(scenario(&[bbr()], buffer, duration, 0));
    let (r3, r1) = (retransmission_rate(&v3, 0), retransmission_rate(&v1, 0));
    let (u3, u1) = (utilization_since(&v3, 5 * PS_PER_S), utilization_since(&v1, 5 * PS_PER_S));
    eprintln!(
        "0.1 BDP buffer ({buffer} packets), 30 s: retransmitted/sent BBRv3 {r3:.5} BBRv1 {r1:.5}; \
         utilization after 5 s BBRv3 {u3:.4} BBRv1 {u1:.4}; timeouts v3 {} v1 {}",
        v3.flows[0].sender.tcb.stats.timeouts, v1.flows[0].sender.tcb.stats.timeouts
    );
    // v1 loses part of every 1.25 x probe (every 8 phases) and ignores it; v3 probes every
    // 2-3 s, stops at 2 % loss and cuts on loss.
    assert!(r3 < r1 / 3.0, "v3 {r3} v1 {r1}");
    // v3 cruises at 0.85 x inflight_hi, which a probe sets near what the path holds (1.1
    // BDP here): 0.94 BDP; PROBE_RTT every 5 s costs about 2 %, and a timeout leaves
    // inflight_hi at its floor (0.7 x BDP) until the next probe. Measured 0.932.
    assert!(u3 > 0.85, "utilization {u3}");
}

#[test]
fn two_bbr3_flows_converge_to_near_even_shares() {
    let duration = 60 * PS_PER_S;
    let sim = run(scenario(&[bbr3(), bbr3()], bdp(), duration, 2 * PS_PER_S));
    let shares = delivered_since(&sim, 30 * PS_PER_S);
    let j = jain(&shares);
    let util = utilization_since(&sim, 30 * PS_PER_S);
    eprintln!("two BBRv3 flows, 1 BDP buffer, 30-60 s: delivered {shares:?}, Jain index {j:.4}, utilization {util:.4}");
    assert!(j > 0.95, "Jain {j}");
    assert!(util > 0.9, "utilization {util}");
}

/// The same scenario and seed give the same run, sample for sample.
#[test]
fn same_seed_same_run() {
    let make = || Simulation::new(scenario(&[bbr3(), bbr3()], bdp(), 8 * PS_PER_S, PS_PER_S)).unwrap().finish();
    let (a, b) = (make(), make());
    assert_eq!(a, b);
}

/// CUBIC's share of the link's deliveries over 20-60 s beside `cc`, both from 0 on a 1-BDP
/// drop-tail buffer (docs/validation.md, "BBRv3 beside BBRv1").
fn cubic_share_beside(cc: CcSpec, name: &str) -> f64 {
    let sim = run(scenario(&[cc, cubic()], bdp(), 60 * PS_PER_S, 0));
    let d = delivered_since(&sim, 20 * PS_PER_S);
    let share = d[1] / (d[0] + d[1]);
    let st = |i: usize| {
        let s = &sim.flows[i].sender.tcb.stats;
        (s.segments_retransmitted as f64 / s.segments_sent as f64, s.timeouts)
    };
    eprintln!(
        "{name} beside CUBIC, 1 BDP, 20-60 s: CUBIC's share {share:.4}, utilization {:.4}; \
         retransmitted/sent and timeouts: {name} {:?}, CUBIC {:?}",
        utilization_since(&sim, 20 * PS_PER_S),
        st(0),
        st(1)
    );
    share
}

#[test]
fn cubic_keeps_more_of_a_deep_buffer_beside_bbr3_than_beside_bbr_v1() {
    let v3 = cubic_share_beside(bbr3(), "BBRv3");
    let v1 = cubic_share_beside(bbr(), "BBRv1");
    // v1 keeps its 2 x BDP window whatever it loses and so holds most of the buffer; v3
    // gives way to loss. On the RFC stack with CUBIC's RFC form (the conditions the first
    // table was measured under) this failed: 0.010 beside v3 against 0.375 beside v1, CUBIC
    // stuck at 2 segments after a timeout (docs/validation.md).
    assert!(v3 > v1, "CUBIC's share beside BBRv3 {v3}, beside BBRv1 {v1}");
}
