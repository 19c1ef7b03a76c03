//! BBR v1 on a dumbbell of 100 Mb/s and 40 ms (BDP 326 packets of 1538 wire bytes), with SACK,
//! and the per-ACK information the core gives algorithms that control cwnd themselves.
//!
//! The delivery rate BBR measures is payload: 1448 bytes per 1538-byte frame on the bottleneck.
//! The core paces IP packets (1500 bytes for 1448 of payload) at BBR's rate, and Linux paces
//! 1 % below the model, so BBR's payload sending rate at gain 1 is 0.99 x 1448/1500 = 0.956 of
//! the bottleneck's.

mod support;
use fatpipe_core::cc::scenario_defaults;
use fatpipe_core::cc::{AckSample, CcSpec, CcState, CongestionControl};
use fatpipe_core::scenario::Scenario;
use fatpipe_core::source::{bulk::BulkConfig, SourceSpec};
use fatpipe_core::tcp::config::Recovery;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use std::sync::{Arc, Mutex};
use support::*;

const RATE_BPS: u64 = 100_000_000;
const RTT_PS: Time = 40 * PS_PER_MS;
const MSS_BYTES: u64 = 1448;
/// Bytes on the bottleneck per full segment: payload, TCP/IP headers with timestamps, framing.
const WIRE_BYTES: u64 = 1538;
/// IP bytes per full segment, the size the core paces.
const IP_BYTES: u64 = 1500;
/// Linux's pacing margin (`bbr_pacing_margin_percent`).
const PACING_MARGIN: f64 = 0.99;
const PROBE_BW_GAINS: [f64; 3] = [0.75, 1.0, 1.25];

fn bdp_packets_here() -> u64 {
    bdp_packets(RATE_BPS, RTT_PS, WIRE_BYTES)
}

/// Payload bits per second the bottleneck carries.
fn payload_rate_bps() -> f64 {
    RATE_BPS as f64 * MSS_BYTES as f64 / WIRE_BYTES as f64
}

fn bbr() -> CcSpec {
    CcSpec::Bbr(scenario_defaults("bbr"))
}

/// One bulk flow with SACK on the dumbbell, sampled every 5 ms.
fn scenario(cc: CcSpec, buffer_packets: u64, duration: Time) -> Scenario {
    let mut tcp = tcp_config();
    tcp.recovery = Recovery::Sack;
    let mut s = dumbbell(RATE_BPS, RTT_PS, buffer_packets, duration, tcp);
    s.flows[0].cc = Some(cc);
    s.sample_interval_ps = 5 * PS_PER_MS;
    s
}

fn run(s: Scenario) -> Simulation {
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    sim
}

/// Indices of the bottleneck's (link 1) queue samples from `from` on.
fn bottleneck_samples(sim: &Simulation, from: Time) -> Vec<usize> {
    let q = &sim.queue_series;
    (0..q.time_ps.len()).filter(|&i| q.link[i] == 1 && q.time_ps[i] >= from).collect()
}

/// Fraction of the bottleneck's capacity used from `from` to the end (wire bytes).
fn utilization_since(sim: &Simulation, from: Time) -> f64 {
    let q = &sim.queue_series;
    let idx = bottleneck_samples(sim, from);
    let (a, b) = (idx[0], *idx.last().unwrap());
    let bits = (q.departed_bytes[b] - q.departed_bytes[a]) as f64 * 8.0;
    let seconds = (q.time_ps[b] - q.time_ps[a]) as f64 / PS_PER_S as f64;
    bits / seconds / RATE_BPS as f64
}

/// Mean bottleneck queue from `from` to the end, packets.
fn mean_queue_since(sim: &Simulation, from: Time) -> f64 {
    let idx = bottleneck_samples(sim, from);
    idx.iter().map(|&i| sim.queue_series.queue_packets[i] as f64).sum::<f64>() / idx.len() as f64
}

fn drops_since(sim: &Simulation, from: Time) -> u64 {
    let idx = bottleneck_samples(sim, from);
    let q = &sim.queue_series;
    q.drops_packets[*idx.last().unwrap()] - q.drops_packets[idx[0]]
}

/// Spans (first, last sample time) during which `flow`'s cwnd was at most 4 segments.
fn min_cwnd_episodes(sim: &Simulation, flow: u32) -> Vec<(Time, Time)> {
    let fs = &sim.flow_series;
    let mut episodes: Vec<(Time, Time)> = Vec::new();
    let mut inside = false;
    for i in (0..fs.time_ps.len()).filter(|&i| fs.flow[i] == flow) {
        let low = fs.cwnd_segments[i] <= 4;
        match (low, inside) {
            (true, false) => episodes.push((fs.time_ps[i], fs.time_ps[i])),
            (true, true) => episodes.last_mut().unwrap().1 = fs.time_ps[i],
            _ => {}
        }
        inside = low;
    }
    episodes
}

/// Acceptance (1): with a drop-tail buffer of one BDP, BBR keeps the bottleneck busy.
#[test]
fn one_bdp_buffer_is_kept_busy() {
    let duration = 40 * PS_PER_S;
    let sim = run(scenario(bbr(), bdp_packets_here(), duration));
    let util = utilization_since(&sim, duration / 2);
    let drops_late = drops_since(&sim, duration / 2);
    eprintln!(
        "BBR, 1 BDP buffer: utilization over the second half {util:.4}, drops {} (second half {drops_late}), timeouts {}",
        sim.links[1].stats.drops_packets, sim.flows[0].sender.tcb.stats.timeouts
    );
    assert!(util > 0.90, "utilization {util}");
    // STARTUP overflows a one-BDP buffer (it paces at 2.885 x the rate); PROBE_BW then adds
    // at most 0.25 BDP for a round trip, which the buffer holds.
    assert_eq!(drops_late, 0);
    assert_eq!(sim.flows[0].sender.tcb.stats.timeouts, 0);
}

/// Acceptance (2): with a buffer of 10 BDP, BBR keeps the standing queue small where Reno
/// fills the buffer.
#[test]
fn deep_buffer_stays_nearly_empty_unlike_reno() {
    let duration = 40 * PS_PER_S;
    let bdp = bdp_packets_here();
    let bbr_sim = run(scenario(bbr(), 10 * bdp, duration));
    let reno_sim = run(scenario(reno(), 10 * bdp, duration));
    let bbr_queue = mean_queue_since(&bbr_sim, duration / 2);
    let reno_queue = mean_queue_since(&reno_sim, duration / 2);
    let bbr_util = utilization_since(&bbr_sim, duration / 2);
    let reno_util = utilization_since(&reno_sim, duration / 2);
    eprintln!(
        "10 BDP buffer, second half: BBR mean queue {bbr_queue:.1} packets ({:.3} BDP), utilization {bbr_util:.4}; \
         Reno mean queue {reno_queue:.1} packets ({:.2} BDP), utilization {reno_util:.4}",
        bbr_queue / bdp as f64,
        reno_queue / bdp as f64
    );
    assert!(bbr_queue < 0.25 * bdp as f64, "BBR queue {bbr_queue}");
    assert!(bbr_util > 0.90, "BBR utilization {bbr_util}");
    assert!(reno_queue > 5.0 * bdp as f64, "Reno queue {reno_queue}");
    assert_eq!(bbr_sim.links[1].stats.drops_packets, 0, "BBR never overflows 10 BDP");
}

/// Acceptance (3): after STARTUP the flow paces at gain x BtlBw (less Linux's 1 % margin),
/// gain cycling through 1.25, 0.75 and 1, and sends about BtlBw x RTprop x gain per RTT.
#[test]
fn pacing_follows_btl_bw_times_the_gain_cycle() {
    let duration = 30 * PS_PER_S;
    let settle = 5 * PS_PER_S;
    let step = 5 * PS_PER_MS;
    let mut sim = Simulation::new(scenario(bbr(), bdp_packets_here(), duration)).unwrap();
    let mut time_at_gain = [0u32; 3];
    let mut sent_bytes = Vec::new();
    let mut t = 0;
    while t < duration {
        t += step;
        sim.run_until(t);
        if t < settle {
            continue;
        }
        let sender = &sim.flows[0].sender;
        let gain = sender.pacing_rate_bps().unwrap() as f64 / (payload_rate_bps() * PACING_MARGIN);
        let nearest = (0..3)
            .min_by(|&a, &b| (PROBE_BW_GAINS[a] - gain).abs().total_cmp(&(PROBE_BW_GAINS[b] - gain).abs()))
            .unwrap();
        assert!((gain / PROBE_BW_GAINS[nearest] - 1.0).abs() < 0.005, "t = {t}: pacing at {gain} x BtlBw");
        time_at_gain[nearest] += 1;
        sent_bytes.push(sender.tcb.stats.bytes_sent);
    }
    let samples = time_at_gain.iter().sum::<u32>() as f64;
    let share: Vec<f64> = time_at_gain.iter().map(|&n| n as f64 / samples).collect();
    eprintln!("share of time pacing at 0.75 / 1 / 1.25 x BtlBw: {share:.3?}");
    // One phase in eight drains, one probes (and lasts until the flight reaches 1.25 BDP,
    // which takes longer than one RTprop), six cruise; PROBE_RTT paces at 1.
    assert!(share[0] > 0.06 && share[0] < 0.15, "{share:?}");
    assert!(share[2] > 0.10 && share[2] < 0.30, "{share:?}");
    assert!(share[1] > 0.55, "{share:?}");

    // Payload sent per RTT (8 samples of 5 ms = 40 ms) against BtlBw x RTprop.
    let bdp_bytes = payload_rate_bps() * RTT_PS as f64 / PS_PER_S as f64 / 8.0;
    let per_rtt: Vec<f64> = sent_bytes.windows(9).step_by(8).map(|w| (w[8] - w[0]) as f64 / bdp_bytes).collect();
    let mean = per_rtt.iter().sum::<f64>() / per_rtt.len() as f64;
    let max = per_rtt.iter().cloned().fold(0.0, f64::max);
    let paced_payload = PACING_MARGIN * MSS_BYTES as f64 / IP_BYTES as f64;
    eprintln!("payload per RTT / BDP: mean {mean:.4}, max {max:.4} (gain 1 paces {paced_payload:.4})");
    // Never more than the probing gain allows ...
    assert!(max < 1.25 * paced_payload * 1.01, "max {max}");
    assert!(max > 1.25 * paced_payload * 0.97, "the probing phase reaches its rate: {max}");
    // ... and on average what gain 1 sends (the cycle's gains average to 1), less the
    // PROBE_RTT episodes.
    assert!(mean > 0.95 * paced_payload && mean < 1.01 * paced_payload, "mean {mean}");
}

/// Acceptance (4): PROBE_RTT cuts cwnd to 4 segments when RTprop has not been seen again for
/// 10 s, for at least 200 ms.
///
/// Two flows share the 10-BDP buffer: each flow's bandwidth estimate includes samples from when
/// the other one drained, so together they keep a small standing queue and neither sees the
/// propagation delay again until PROBE_RTT drains it; they then synchronize their PROBE_RTTs
/// (Cardwell et al. 2016). A single flow on this jitter-free path is different: pacing at
/// 0.99 x BtlBw it drains its own queue and re-measures exactly the same minimum RTT in every
/// cruising phase, which counts as seeing RTprop again ("matches or decreases" in the draft),
/// so after its first PROBE_RTT (at 10 s, the minimum of STARTUP being lower than any later
/// sample) it needs no other.
#[test]
fn probe_rtt_every_ten_seconds_for_flows_sharing_a_queue() {
    let duration = 30 * PS_PER_S;
    let mut s = scenario(bbr(), 10 * bdp_packets_here(), duration);
    let mut second = s.flows[0].clone();
    second.name = "flow1".into();
    second.source = SourceSpec::Bulk(BulkConfig {
        start_ps: 2 * PS_PER_S,
        stop_ps: None,
        bytes: None,
        transfers: None,
        transfer_gap_ps: 0,
    });
    s.flows.push(second);
    let sim = run(s);
    let first = min_cwnd_episodes(&sim, 0);
    let other = min_cwnd_episodes(&sim, 1);
    let secs = |e: &[(Time, Time)]| e.iter().map(|&(a, b)| (a as f64 / 1e12, b as f64 / 1e12)).collect::<Vec<_>>();
    eprintln!("cwnd <= 4 segments: flow 0 {:.3?}, flow 1 {:.3?}", secs(&first), secs(&other));
    assert!(first.len() >= 2, "{first:?}");
    for w in first.windows(2) {
        let gap = w[1].0 - w[0].0;
        // The filter expires 10 s after the last refresh, which is the end of a PROBE_RTT or a
        // later matching sample.
        assert!(gap > 10 * PS_PER_S && gap < 13 * PS_PER_S, "{first:?}");
    }
    // The first PROBE_RTT comes 10 s after STARTUP's minimum.
    assert!(first[0].0 > 10 * PS_PER_S && first[0].0 < 10 * PS_PER_S + 100 * PS_PER_MS, "{first:?}");
    for &(a, b) in first.iter().chain(&other) {
        // 200 ms at the minimum flight (the probe samples every 5 ms, so allow one sample).
        assert!(b - a >= 195 * PS_PER_MS && b - a < 300 * PS_PER_MS, "episode {a}..{b}");
    }
    // The flows drain the queue together at least once.
    let overlap = first.iter().any(|&(a, b)| other.iter().any(|&(c, d)| a <= d && c <= b));
    assert!(overlap, "{first:?} {other:?}");
    let single = run(scenario(bbr(), 10 * bdp_packets_here(), duration));
    let alone = min_cwnd_episodes(&single, 0);
    eprintln!("single flow: cwnd <= 4 segments {:.3?}", secs(&alone));
    assert!(!alone.is_empty() && alone[0].0 < 10 * PS_PER_S + 100 * PS_PER_MS);
}

/// Acceptance (5): the same scenario and seed give the same run, sample for sample.
#[test]
fn same_seed_same_run() {
    let make = || {
        let mut s = scenario(bbr(), bdp_packets_here(), 15 * PS_PER_S);
        let mut second = s.flows[0].clone();
        second.name = "flow1".into();
        second.source = SourceSpec::Bulk(BulkConfig {
            start_ps: PS_PER_S,
            stop_ps: None,
            bytes: None,
            transfers: None,
            transfer_gap_ps: 0,
        });
        s.flows.push(second);
        Simulation::new(s).unwrap().finish()
    };
    let (a, b) = (make(), make());
    assert_eq!(a, b);
    assert!(a["summary"]["flows"][1]["bytes_delivered"].as_u64().unwrap() > 0);
}

/// What an algorithm with `cong_control` is told on every ACK: recorded by a probe that holds
/// cwnd at 20 segments.
#[derive(Default)]
struct Recorded {
    /// (sample, connection's delivered bytes after it, segments outstanding after it)
    acks: Vec<(AckSample, u64, u32)>,
}

struct Recorder(Arc<Mutex<Recorded>>);

impl CongestionControl for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        s.ssthresh
    }
    fn cong_avoid(&mut self, _s: &mut CcState, _ack: &AckSample) {}
    fn has_cong_control(&self) -> bool {
        true
    }
    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) {
        s.cwnd = 20;
        self.0.lock().unwrap().acks.push((*ack, s.delivered_bytes, s.in_flight_segments));
    }
}

/// The core counts each byte delivered once, reports a SACK loss once, and gives the pipe
/// (not what is outstanding) as the flight.
#[test]
fn core_reports_delivery_losses_and_pipe_once() {
    let mut tcp = tcp_config();
    tcp.recovery = Recovery::Sack;
    tcp.delayed_ack = false;
    tcp.initial_window_segments = 20;
    let log = Arc::new(Mutex::new(Recorded::default()));
    let lost_seq = 30 * MSS_BYTES;
    let mut dropped_once = false;
    let drop = Box::new(move |p: &fatpipe_core::packet::Packet| {
        let hit = p.seq == lost_seq && !dropped_once;
        dropped_once |= hit;
        hit
    });
    let mut h = Harness::with_algorithm(tcp, Box::new(Recorder(log.clone())), 100 * PS_PER_MS, drop);
    let total = 200 * MSS_BYTES;
    h.start(Some(total));
    h.run_until(10 * PS_PER_S);
    assert!(h.sender.is_finished());
    let log = log.lock().unwrap();
    let delivered: u64 = log.acks.iter().map(|(a, _, _)| a.delivered_bytes).sum();
    assert_eq!(delivered, total, "every byte delivered once, SACKed or not");
    assert_eq!(log.acks.last().unwrap().1, total);
    let lost: u64 = log.acks.iter().map(|(a, _, _)| a.newly_lost_bytes).sum();
    assert_eq!(lost, MSS_BYTES, "one segment lost, reported once");
    // When the loss is detected, three segments above it are SACKed and the lost one has just
    // been retransmitted: the pipe is what is outstanding less those three.
    let (at_loss, _, outstanding) = log.acks.iter().find(|(a, _, _)| a.newly_lost_bytes > 0).unwrap();
    assert_eq!(at_loss.in_flight_bytes, (*outstanding as u64 - 3) * MSS_BYTES, "{at_loss:?}");
    for (a, delivered_after, _) in log.acks.iter() {
        if a.delivery_rate_bps.is_some() {
            assert!(a.prior_delivered_bytes < *delivered_after);
        }
    }
    // The first window's samples started at zero delivered: one round trip.
    assert_eq!(log.acks[0].0.prior_delivered_bytes, 0);
}

/// The ACKs of a transfer of `bytes`, with delayed ACKs (40 ms) on a 100 ms path.
fn recorded_acks(bytes: u64) -> Vec<AckSample> {
    let log = Arc::new(Mutex::new(Recorded::default()));
    let mut h =
        Harness::with_algorithm(tcp_config(), Box::new(Recorder(log.clone())), 100 * PS_PER_MS, Box::new(|_| false));
    h.start(Some(bytes));
    h.run_until(2 * PS_PER_S);
    assert!(h.sender.is_finished());
    let acks = log.lock().unwrap().acks.iter().map(|(a, _, _)| *a).collect();
    acks
}

/// Linux's FLAG_ACK_MAYBE_DELAYED (tcp_clean_rtx_queue): the ACK of a lone segment shorter
/// than the MSS, sent with nothing else outstanding, waited for the receiver's delayed-ACK
/// timer; its RTT is 140 ms on this 100 ms path.
#[test]
fn core_flags_the_ack_of_a_lone_runt_as_maybe_delayed() {
    let acks = recorded_acks(500);
    assert_eq!(acks.len(), 1);
    assert!(acks[0].is_ack_delayed);
    assert_eq!(acks[0].rtt, Some(140 * PS_PER_MS));
    // A runt behind full segments was not alone when it left: no ACK is flagged.
    let acks = recorded_acks(2 * MSS_BYTES + 500);
    assert!(acks.len() >= 2);
    assert!(acks.iter().all(|a| !a.is_ack_delayed), "{acks:?}");
    // Nor is the ACK of full segments.
    assert!(recorded_acks(4 * MSS_BYTES).iter().all(|a| !a.is_ack_delayed));
}
