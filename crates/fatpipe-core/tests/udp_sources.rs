//! UDP sources (issue 4): constant bit rate, NetSpec-style bursts, on-off; UDP ignores loss;
//! document 000's single minimal congestion event (E0.10).

mod support;
use fatpipe_core::net::impairment::{bernoulli::BernoulliConfig, ImpairmentSpec};
use fatpipe_core::net::link::LinkSpec;
use fatpipe_core::scenario::{FlowSpec, NodeKind, NodeSpec, Scenario};
use fatpipe_core::source::udp::UdpStats;
use fatpipe_core::source::udp_burst::UdpBurstConfig;
use fatpipe_core::source::udp_cbr::UdpCbrConfig;
use fatpipe_core::source::udp_onoff::UdpOnOffConfig;
use fatpipe_core::source::SourceSpec;
use fatpipe_core::time::{transmission_time, Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

/// 1500-byte MTU less the IP and UDP headers.
const PAYLOAD: u32 = 1472;
const WIRE: u64 = 1500 + 38;

fn udp(source: SourceSpec) -> FlowSpec {
    FlowSpec { name: "udp".into(), src: 0, dst: 3, source, tcp: None, cc: None, group: None, start_jitter_ps: 0 }
}

/// The support dumbbell (access links 10 x `rate_bps`) carrying only `flow`.
fn udp_only(rate_bps: u64, duration: Time, flow: FlowSpec) -> Scenario {
    let mut s = dumbbell(rate_bps, 40 * PS_PER_MS, 100_000, duration, tcp_config());
    s.flows = vec![flow];
    s
}

fn cbr(rate_bps: u64) -> SourceSpec {
    SourceSpec::UdpCbr(UdpCbrConfig { start_ps: 0, stop_ps: None, rate_bps, payload_bytes: PAYLOAD })
}

fn run(s: Scenario) -> Simulation {
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    sim
}

fn stats(sim: &Simulation, flow: usize) -> &UdpStats {
    &sim.flows[flow].udp.as_ref().expect("a UDP flow").stats
}

/// A flow's cumulative series `column` at sample time `t`.
fn at(sim: &Simulation, flow: u32, column: &[u64], t: Time) -> u64 {
    let fs = &sim.flow_series;
    let i = (0..fs.time_ps.len()).find(|&i| fs.time_ps[i] == t && fs.flow[i] == flow).expect("sampled time");
    column[i]
}

fn sent_at(sim: &Simulation, flow: u32, t: Time) -> u64 {
    at(sim, flow, &sim.flow_series.sent_bytes, t)
}

fn delivered_at(sim: &Simulation, flow: u32, t: Time) -> u64 {
    at(sim, flow, &sim.flow_series.delivered_bytes, t)
}

#[test]
fn cbr_delivers_its_configured_payload_rate() {
    let rate = 50_000_000;
    let sim = run(udp_only(100_000_000, 10 * PS_PER_S, udp(cbr(rate))));
    let st = stats(&sim, 0);
    // Received payload over the last 9 s (the first datagrams are 20 ms on the way).
    let measured = (delivered_at(&sim, 0, 10 * PS_PER_S) - delivered_at(&sim, 0, PS_PER_S)) as f64 * 8.0 / 9.0;
    assert!((measured / rate as f64 - 1.0).abs() < 0.01, "{measured} vs {rate}");
    // Datagram k is due at k x 1472 x 8 / rate: those due at or before 10 s were sent.
    let interval = PAYLOAD as u64 * 8 * PS_PER_S / rate;
    assert_eq!(st.datagrams_sent, 10 * PS_PER_S / interval + 1);
    assert_eq!(st.bytes_sent, st.datagrams_sent * PAYLOAD as u64);
    assert_eq!(st.datagrams_lost, 0);
    assert_eq!(st.datagrams_sent, st.datagrams_received + st.datagrams_in_flight());
    // No window, no RTT: the series says so with -1.
    let fs = &sim.flow_series;
    assert!(fs.cwnd_segments.iter().chain(&fs.ssthresh_segments).chain(&fs.srtt_ps).all(|&v| v == -1));
}

#[test]
fn cbr_above_line_rate_gets_the_line_rate() {
    // The sender's access link runs at 1 Gb/s; ask for 2 Gb/s of payload.
    let sim = run(udp_only(100_000_000, PS_PER_S, udp(cbr(2_000_000_000))));
    let st = stats(&sim, 0);
    // Back to back at 1 Gb/s: one 1538-byte frame every 12.304 us, 0 s through 1 s.
    let frame = transmission_time(WIRE, 1_000_000_000);
    assert_eq!(st.datagrams_sent, PS_PER_S / frame + 1);
    // The host's line never queues its own datagrams: the socket waits for it instead.
    assert_eq!(sim.links[0].stats.max_queue_packets, 0);
}

fn burst(
    burst_bytes: u64,
    repeats: u64,
    period_ps: Option<Time>,
    count: Option<u64>,
    rate_bps: Option<u64>,
) -> SourceSpec {
    SourceSpec::UdpBurst(UdpBurstConfig {
        start_ps: 0,
        stop_ps: None,
        burst_bytes,
        repeats,
        period_ps,
        count,
        rate_bps,
        payload_bytes: PAYLOAD,
    })
}

#[test]
fn bursts_send_exactly_burst_times_repeats_per_period() {
    let (block, repeats, period) = (100_000, 3, 100 * PS_PER_MS);
    let sim = run(udp_only(100_000_000, PS_PER_S, udp(burst(block, repeats, Some(period), Some(5), None))));
    let st = stats(&sim, 0);
    // Each 100,000-byte block is 67 full datagrams and one of 1376 bytes.
    let per_block = block.div_ceil(PAYLOAD as u64);
    assert_eq!(per_block, 68);
    assert_eq!(st.datagrams_sent, 5 * repeats * per_block);
    assert_eq!(st.bytes_sent, 5 * repeats * block);
    // 300,000 bytes leave in 2.5 ms at the 1 Gb/s line: by 50 ms into period p, p + 1
    // periods' bytes have left, and nothing more until the next period.
    for p in 0..7 {
        let expected = (p + 1).min(5) * repeats * block;
        assert_eq!(sent_at(&sim, 0, p * period + 50 * PS_PER_MS), expected, "period {p}");
        assert_eq!(sent_at(&sim, 0, p * period + 90 * PS_PER_MS), expected, "period {p}");
    }
    assert_eq!(st.datagrams_lost, 0);
    assert_eq!(st.datagrams_received, st.datagrams_sent);
}

#[test]
fn count_one_sends_a_single_burst() {
    let sim = run(udp_only(100_000_000, 2 * PS_PER_S, udp(burst(64_000, 10, None, Some(1), None))));
    let st = stats(&sim, 0);
    assert_eq!(st.bytes_sent, 640_000);
    assert_eq!(st.datagrams_sent, 10 * 64_000u64.div_ceil(PAYLOAD as u64));
    // All of it within the first 10 ms (640 kB at 1 Gb/s: 5.3 ms).
    assert_eq!(sent_at(&sim, 0, 10 * PS_PER_MS), 640_000);
}

#[test]
fn a_burst_at_line_rate_leaves_back_to_back_and_a_burst_at_a_rate_is_spread() {
    let line = run(udp_only(100_000_000, PS_PER_S, udp(burst(300_000, 1, None, Some(1), None))));
    // Back to back on the 1 Gb/s line: 204 frames (203 full, one of 1184 payload bytes).
    let frames = 300_000u64.div_ceil(PAYLOAD as u64);
    let last_payload = 300_000 - (frames - 1) * PAYLOAD as u64;
    let burst_ps = (frames - 1) * transmission_time(WIRE, 1_000_000_000)
        + transmission_time(last_payload + 28 + 38, 1_000_000_000);
    assert_eq!(line.links[0].stats.busy_ps, burst_ps);
    assert_eq!(line.links[0].stats.max_queue_packets, 0);

    // At 24 Mb/s of payload the same 300,000 bytes take 100 ms: half of them by 50 ms.
    let paced = run(udp_only(100_000_000, PS_PER_S, udp(burst(300_000, 1, None, Some(1), Some(24_000_000)))));
    let half = sent_at(&paced, 0, 50 * PS_PER_MS) as i64;
    assert!((half - 150_000).abs() <= PAYLOAD as i64, "{half}");
    assert_eq!(sent_at(&paced, 0, 100 * PS_PER_MS), 300_000);
}

#[test]
fn on_off_sends_at_rate_while_on_and_nothing_while_off() {
    let (rate, on, off) = (40_000_000u64, 200 * PS_PER_MS, 300 * PS_PER_MS);
    let source = SourceSpec::UdpOnoff(UdpOnOffConfig {
        start_ps: 0,
        stop_ps: None,
        rate_bps: rate,
        on_ps: on,
        off_ps: off,
        payload_bytes: PAYLOAD,
    });
    let sim = run(udp_only(100_000_000, 10 * PS_PER_S, udp(source)));
    let st = stats(&sim, 0);
    // Mean rate = rate x on / (on + off) = 16 Mb/s.
    let mean = st.bytes_sent as f64 * 8.0 / 10.0;
    let duty = on as f64 / (on + off) as f64;
    assert!((mean / (rate as f64 * duty) - 1.0).abs() < 0.01, "{mean}");
    // Each on-period sends the datagrams due within its 200 ms at 40 Mb/s (the first at its
    // start): 200 ms x 40 Mb/s / (1472 x 8 bits) = 679.3, so 680.
    let per_on = (0..).take_while(|&j| transmission_time(j * PAYLOAD as u64, rate) < on).count() as u64;
    assert_eq!(per_on, 680);
    let period = on + off;
    for c in 0..19 {
        let start = c * period;
        let before = if c == 0 { 0 } else { sent_at(&sim, 0, start - 10 * PS_PER_MS) };
        assert_eq!(sent_at(&sim, 0, start + on + 10 * PS_PER_MS) - before, per_on * PAYLOAD as u64, "cycle {c}");
        // Silent while off.
        assert_eq!(
            sent_at(&sim, 0, start + on + 10 * PS_PER_MS),
            sent_at(&sim, 0, start + period - 10 * PS_PER_MS),
            "cycle {c}"
        );
    }
}

#[test]
fn udp_does_not_slow_down_under_loss() {
    let clean = run(udp_only(100_000_000, 5 * PS_PER_S, udp(cbr(50_000_000))));
    let mut s = udp_only(100_000_000, 5 * PS_PER_S, udp(cbr(50_000_000)));
    s.links[1].impairments = vec![ImpairmentSpec::Bernoulli(BernoulliConfig { probability: 0.1 })];
    let lossy = run(s);
    let (c, l) = (stats(&clean, 0), stats(&lossy, 0));
    // The same datagrams at the same times, whatever is lost.
    assert_eq!(l.datagrams_sent, c.datagrams_sent);
    assert_eq!(lossy.flow_series.sent_bytes, clean.flow_series.sent_bytes);
    // About 10 % lost: within 5 standard deviations of the binomial.
    let n = l.datagrams_sent as f64;
    let sd = (n * 0.1 * 0.9).sqrt();
    assert!((l.datagrams_lost as f64 - 0.1 * n).abs() < 5.0 * sd, "{l:?}");
    assert_eq!(l.datagrams_lost, lossy.links[1].stats.impairment_drops_packets);
    assert_eq!(l.datagrams_sent, l.datagrams_received + l.datagrams_lost + l.datagrams_in_flight());
}

#[test]
fn datagrams_in_flight_are_those_on_the_links() {
    // Stop mid-stream: the datagrams neither received nor lost are in the links' queues,
    // transmitters and propagation FIFOs. A 10 Mb/s bottleneck under 50 Mb/s overflows.
    let mut s = udp_only(10_000_000, 2 * PS_PER_S, udp(cbr(50_000_000)));
    s.links[1].queue =
        fatpipe_core::net::queue::QueueSpec::Droptail(fatpipe_core::net::queue::droptail::DropTailConfig {
            limit_packets: Some(100),
            limit_bytes: None,
            cell_bytes: None,
            limit_cells: None,
            mark_threshold_packets: None,
        });
    let mut sim = Simulation::new(s).unwrap();
    sim.run_until(1_234_567_890_123);
    let on_links: u64 = sim.links.iter().map(|l| l.packets().count() as u64).sum();
    let st = stats(&sim, 0);
    assert!(st.datagrams_lost > 1000, "{st:?}");
    assert_eq!(st.datagrams_in_flight(), on_links);
    assert_eq!(st.datagrams_lost, sim.links[1].stats.drops_packets);
}

/// Adds a second host pair, "udp_sender" -> r1 and r2 -> "udp_receiver", with access links
/// like the first pair's, and a UDP flow over it.
fn add_udp_pair(s: &mut Scenario, source: SourceSpec) {
    let access = s.links[0].clone();
    let (host_s, host_r) = (s.nodes.len() as u32, s.nodes.len() as u32 + 1);
    s.nodes.push(NodeSpec { name: "udp_sender".into(), kind: NodeKind::Host });
    s.nodes.push(NodeSpec { name: "udp_receiver".into(), kind: NodeKind::Host });
    s.links.push(LinkSpec { name: "access_udp_sender".into(), from: host_s, to: 1, ..access.clone() });
    s.links.push(LinkSpec { name: "access_udp_receiver".into(), from: 2, to: host_r, ..access });
    s.flows.push(FlowSpec {
        name: "udp".into(),
        src: host_s,
        dst: host_r,
        source,
        tcp: None,
        cc: None,
        group: None,
        start_jitter_ps: 0,
    });
}

/// Document 000's E0.10 path: OC-12 (622 Mb/s), 67 ms RTT, socket buffers of one BDP
/// (5,209,300 bytes), a bottleneck queue of one BDP; a single UDP burst of `burst_bytes`
/// from another host pair at 5.5 s. Returns the simulation at `until`.
fn e0_10(burst_bytes: u64, until: Time) -> Simulation {
    let mut tcp = tcp_config();
    tcp.rcv_buffer_bytes = 5_209_300;
    tcp.snd_buffer_bytes = 5_209_300;
    let mut s = dumbbell(OC12, RTT, bdp_packets(OC12, RTT, WIRE), 10 * PS_PER_S, tcp);
    let source = SourceSpec::UdpBurst(UdpBurstConfig {
        start_ps: BURST_AT,
        stop_ps: None,
        burst_bytes,
        repeats: 1,
        period_ps: None,
        count: Some(1),
        rate_bps: None,
        payload_bytes: PAYLOAD,
    });
    add_udp_pair(&mut s, source);
    let mut sim = Simulation::new(s).unwrap();
    sim.run_until(until);
    sim
}

const OC12: u64 = 622_000_000;
const RTT: Time = 67 * PS_PER_MS;
const BURST_AT: Time = 5_500 * PS_PER_MS;

/// Datagrams that fill the bottleneck queue left free by the TCP flow. The flow is limited
/// by its receive window, 5,209,216 bytes (40,697 x 128 with window scale 7) = 3597
/// segments of 1448 bytes, 3597 frames of 1538 bytes; the pipe holds 3387 of them
/// (622 Mb/s x 67 ms), so 210 wait in the queue of 3388. While the burst arrives at the
/// 6.22 Gb/s access rate, the TCP flow's own arrivals replace what the bottleneck sends, so
/// the burst's datagrams add up in the queue: about 3388 - 210 of them fill it.
fn datagrams_to_fill_queue() -> u64 {
    let window_segments = 5_209_216 / 1448;
    let pipe_packets = (OC12 as u128 * RTT as u128 / 8 / PS_PER_S as u128 / WIRE as u128) as u64;
    bdp_packets(OC12, RTT, WIRE) - (window_segments - pipe_packets)
}

#[test]
fn e0_10_one_udp_burst_causes_one_minimal_loss_event() {
    let fill = datagrams_to_fill_queue();
    assert_eq!(fill, 3178);
    // A burst 20 datagrams past the free space: the TCP flow's first loss comes with it.
    let burst = (fill + 20) * PAYLOAD as u64;
    let at_burst = e0_10(burst, BURST_AT);
    let before = &at_burst.flows[0].sender.tcb.stats;
    assert_eq!(
        (before.segments_retransmitted, before.fast_retransmits, before.timeouts),
        (0, 0, 0),
        "no loss before the burst"
    );
    assert!(before.segments_sent > 200_000, "the flow is running: {before:?}");

    let sim = e0_10(burst, 10 * PS_PER_S);
    let tcp = &sim.flows[0].sender;
    let u = stats(&sim, 1);
    eprintln!(
        "E0.10: burst {burst} bytes, TCP {:?}, cwnd at loss {}, ssthresh {}, UDP {u:?}",
        tcp.tcb.stats, tcp.tcb.prior_cwnd, tcp.tcb.cc_state.ssthresh
    );
    assert_eq!(tcp.tcb.stats.fast_retransmits, 1, "one loss event: {:?}", tcp.tcb.stats);
    assert_eq!(tcp.tcb.stats.timeouts, 0);
    // Minimal: a handful of segments, not a window's worth.
    assert!(tcp.tcb.stats.segments_retransmitted <= 10, "{:?}", tcp.tcb.stats);
    assert!(u.datagrams_lost > 0 && u.datagrams_lost < 50, "{u:?}");
    // The event is at 5-6 s (the documents' figure): the retransmission follows the burst
    // within a round trip or two.
    let by_6s = e0_10(burst, 6 * PS_PER_S);
    assert_eq!(by_6s.flows[0].sender.tcb.stats.fast_retransmits, 1);
    // And Reno halves the window: ssthresh = cwnd / 2 at the loss.
    assert_eq!(tcp.tcb.cc_state.ssthresh, tcp.tcb.prior_cwnd / 2);

    // A burst 3 % smaller than the free space costs the TCP flow nothing.
    let small = e0_10(fill * 97 / 100 * PAYLOAD as u64, 10 * PS_PER_S);
    assert_eq!(small.flows[0].sender.tcb.stats.segments_retransmitted, 0);
    assert_eq!(stats(&small, 1).datagrams_lost, 0);
}

#[test]
fn the_core_rejects_inconsistent_udp_flows() {
    let err = |f: &dyn Fn(&mut Scenario)| {
        let mut s = udp_only(100_000_000, PS_PER_S, udp(cbr(1_000_000)));
        f(&mut s);
        Simulation::new(s).err().expect("rejected")
    };
    assert_eq!(err(&|s| s.flows[0].tcp = Some(tcp_config())), "flows[0]: a UDP flow (udp_cbr) takes no tcp or cc");
    assert_eq!(
        err(&|s| s.flows[0].source = SourceSpec::UdpCbr(UdpCbrConfig { start_ps: 0, stop_ps: None, rate_bps: 1, payload_bytes: 1473 })),
        "flows[0].source.payload_bytes: 1473 is not allowed: must be positive and, with 28 header bytes, fit link access_fwd_sender's MTU 1500"
    );
    assert_eq!(
        err(&|s| s.flows[0].source = burst(1000, 1, None, Some(2), None)),
        "flows[0].source.period_ps: null is not allowed unless count = 1"
    );
    assert_eq!(err(&|s| s.flows[0].source = cbr(0)), "flows[0].source.rate_bps: 0 is not allowed: must be positive");
    // A TCP flow still needs both.
    let mut s = dumbbell(100_000_000, 40 * PS_PER_MS, 100, PS_PER_S, tcp_config());
    s.flows[0].cc = None;
    assert_eq!(Simulation::new(s).err().unwrap(), "flows[0]: a TCP flow needs tcp and cc");
}

#[test]
fn a_udp_flow_in_json_has_no_tcp_keys() {
    let s = r#"{"name": "u", "seed": 1, "duration_ps": 1000000000000, "sample_interval_ps": 10000000000,
      "nodes": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
      "links": [{"name": "ab", "from": 0, "to": 1, "rate_bps": 1000000000, "delay_ps": 1000000000,
                 "framing_bytes": 38, "mtu_bytes": 1500,
                 "queue": {"discipline": "droptail", "limit_packets": 100, "limit_bytes": null, "cell_bytes": null, "limit_cells": null}}],
      "flows": [{"name": "u", "src": 0, "dst": 1, "start_jitter_ps": 0,
                 "source": {"kind": "udp_onoff", "start_ps": 0, "stop_ps": 500000000000, "rate_bps": 100000000,
                            "on_ps": 100000000000, "off_ps": 100000000000, "payload_bytes": 1472}}]}"#;
    let mut sim = Simulation::from_json(s).unwrap();
    let out = sim.finish();
    let f = &out["summary"]["flows"][0];
    assert_eq!(f["transport"], "udp");
    assert_eq!(f["source"], "udp_onoff");
    assert!(f.get("cwnd_segments").is_none() && f.get("fast_retransmits").is_none());
    // On during [0, 100) and [200, 300) and [400, 500) ms at 100 Mb/s: 3 x 850 datagrams
    // (100 ms x 100 Mb/s / 11,776 bits = 849.2, the first at each start), a route one way only.
    assert_eq!(f["datagrams_sent"], 3 * 850);
    assert_eq!(f["datagrams_received"], f["datagrams_sent"]);
    assert_eq!(f["datagrams_lost"], 0);
    assert_eq!(f["datagrams_in_flight_at_end"], 0);
}
