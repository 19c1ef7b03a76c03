//! Response functions: mean congestion window under random (Bernoulli) loss rate p, one ACK
//! per segment, on a path fast enough never to queue (step 2, acceptance 2).
//!   Standard TCP: w = 1.22 / sqrt(p)      (Mathis et al. 1997; RFC 3649 section 5)
//!   HighSpeed:    w = 0.12 / p^0.835      (RFC 3649 section 5, above w = 38)
//!   Scalable:     w = a / (b p)           (Kelly 2003)
//! Each point simulates about `cycles` loss events, i.e. cycles / p packets.

mod support;
use fatpipe_core::cc::scenario_defaults;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::net::impairment::{bernoulli::BernoulliConfig, ImpairmentSpec};
use fatpipe_core::tcp::config::Recovery;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

/// Time-averaged cwnd (segments) of one flow under loss rate `p` over about `cycles` loss
/// events, after a warm-up of a sixth of the run.
pub fn mean_cwnd(cc: CcSpec, p: f64, expected_w: f64, cycles: f64) -> f64 {
    let rtt: Time = 10 * PS_PER_MS;
    // Each loss event comes every 1/p packets, w packets per RTT: 1/(p w) RTTs apart.
    let rtts_per_loss = 1.0 / (p * expected_w);
    let duration = ((1.2 * cycles * rtts_per_loss * rtt as f64) as Time).max(2 * PS_PER_S);
    let warmup = duration / 6;
    let mut tcp = tcp_config();
    tcp.delayed_ack = false;
    tcp.recovery = Recovery::Sack;
    tcp.rcv_buffer_bytes = 1 << 30;
    tcp.snd_buffer_bytes = 1 << 31;
    // Fast enough that even three times the expected window never queues.
    let rate = ((3.0 * expected_w * 1538.0 * 8.0 / 0.010) as u64).max(1_000_000_000);
    let mut s = dumbbell(rate, rtt, 1_000_000, duration, tcp);
    s.flows[0].cc = Some(cc);
    s.links[1].impairments = vec![ImpairmentSpec::Bernoulli(BernoulliConfig { probability: p })];
    s.sample_interval_ps = rtt;
    let mut sim = Simulation::new(s).unwrap();
    // The response function is a steady-state law. Slow start would overshoot far past it at
    // low loss rates (the first loss comes after ~1/p packets), and the algorithms' gentle
    // decreases (b = 0.1 .. 0.125) would take longer than the run to come back: end slow
    // start at the expected window instead.
    sim.flows[0].sender.tcb.cc_state.ssthresh = expected_w as u32;
    sim.run();
    assert_eq!(sim.links[1].stats.drops_packets, 0, "no queue overflow: losses are the Bernoulli ones");
    let fs = &sim.flow_series;
    let samples: Vec<f64> =
        fs.time_ps.iter().zip(&fs.cwnd_segments).filter(|(&t, _)| t >= warmup).map(|(_, &c)| c as f64).collect();
    samples.iter().sum::<f64>() / samples.len() as f64
}

#[test]
fn standard_tcp_follows_1_22_over_sqrt_p() {
    for p in [1e-5f64, 1e-4, 1e-3] {
        let expected = 1.22 / p.sqrt();
        let got = mean_cwnd(reno(), p, expected, 60.0);
        eprintln!("reno p={p:e}: mean cwnd {got:.1}, 1.22/sqrt(p) = {expected:.1}");
        assert!((got / expected - 1.0).abs() < 0.2, "p={p}: {got} vs {expected}");
    }
}

#[test]
fn highspeed_follows_rfc3649() {
    use fatpipe_core::cc::highspeed::HighSpeedConfig;
    let cc = || {
        CcSpec::Highspeed(HighSpeedConfig {
            low_window: 38,
            high_window: 83_000,
            high_p: 1e-7,
            high_decrease: 0.1,
            ..scenario_defaults("highspeed")
        })
    };
    for p in [1e-3f64, 1e-4, 1e-5, 1e-6] {
        let expected = 0.12 / p.powf(0.835);
        let got = mean_cwnd(cc(), p, expected, if p >= 1e-5 { 200.0 } else { 40.0 });
        eprintln!("highspeed p={p:e}: mean cwnd {got:.1}, 0.12/p^0.835 = {expected:.1}");
        assert!((got / expected - 1.0).abs() < 0.2, "p={p}: {got} vs {expected}");
    }
}

#[test]
fn scalable_follows_a_over_b_p() {
    use fatpipe_core::cc::scalable::ScalableConfig;
    let (a, b) = (0.01, 0.125);
    for p in [1e-4f64, 1e-5, 1e-6] {
        let expected = a / (b * p);
        let got = mean_cwnd(
            CcSpec::Scalable(ScalableConfig { a, b, ..scenario_defaults("scalable") }),
            p,
            expected,
            if p >= 1e-5 { 200.0 } else { 40.0 },
        );
        eprintln!("scalable p={p:e}: mean cwnd {got:.1}, a/(b p) = {expected:.1}");
        assert!((got / expected - 1.0).abs() < 0.2, "p={p}: {got} vs {expected}");
    }
}
