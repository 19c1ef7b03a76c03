//! TCP Small Queues and BBR's policer detection (issue 26), packet by packet and as runs:
//! TSQ holds a sender once more than its limit is below TCP and lets the next skb go at the
//! transmit completion that brings it to the limit (`host/tsq.rs`, after Linux
//! `tcp_small_queue_check` and `tcp_wfree`); a token-bucket policer on the path makes BBR
//! with `lt_bw` pace at the policed rate and lose less than without it (`cc/bbr/lt_bw.rs`,
//! after Linux `bbr_lt_bw_sampling`).

mod support;
use fatpipe_core::cc::bbr::BbrConfig;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::host::tsq::SKB_OVERHEAD_BYTES;
use fatpipe_core::host::HostConfig;
use fatpipe_core::net::impairment::policer::PolicerConfig;
use fatpipe_core::net::impairment::ImpairmentSpec;
use fatpipe_core::tcp::config::Recovery;
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{transmission_time, Time, PS_PER_MS, PS_PER_S};
use support::*;

const MSS: u64 = 1448;

fn tsq_host(limit_output_bytes: u64) -> HostConfig {
    HostConfig { tsq: true, limit_output_bytes, ..fatpipe_core::host::scenario_defaults() }
}

fn linux(host: Option<HostConfig>, initial_window: u32) -> TcpConfig {
    linux_host_tcp(host, initial_window, None)
}

#[test]
fn tsq_holds_the_sender_at_its_limit_and_wakes_it_at_each_transmit_completion() {
    // An unpaced sender before any RTT sample: Linux's sk_pacing_rate is ~0, so the limit is
    // tcp_limit_output_bytes, here ten single-segment skbs. An initial window of 40 segments
    // into a 100 Mb/s interface: eleven go at once (the check is "more than the limit"),
    // then one each time the interface finishes one, 1538 wire bytes at 100 Mb/s apart.
    let skb = MSS + SKB_OVERHEAD_BYTES;
    let tcp = linux(Some(tsq_host(10 * skb)), 40);
    let rtt = 100 * PS_PER_MS;
    let mut h = Harness::new(tcp, reno(), rtt, Box::new(|_| false));
    h.sender.set_interface(0, 100_000_000, 38);
    h.start(None);
    h.run_until(rtt / 2);
    let times: Vec<Time> = h.sent.iter().map(|&(t, _)| t).collect();
    assert_eq!(times.len(), 40);
    let tx = transmission_time(1538, 100_000_000);
    assert!(times[..11].iter().all(|&t| t == 0), "{:?}", &times[..12]);
    for (i, &t) in times.iter().enumerate().skip(11) {
        assert_eq!(t, (i as u64 - 10) * tx, "segment {i}");
    }
    // Without TSQ the window leaves at once.
    let mut free = Harness::new(linux(None, 40), reno(), rtt, Box::new(|_| false));
    free.start(None);
    assert_eq!(free.sent.len(), 40);
}

#[test]
fn a_retransmission_may_have_twice_the_limit_below_it() {
    // Linux tcp_xmit_retransmit_queue checks TSQ with factor 1 (limit << 1), tcp_write_xmit
    // with factor 0. A cap of one skb (tcp_limit_output_bytes, an unpaced socket): new data
    // goes only while at most one skb is below TCP, so never more than two are; a
    // retransmission goes while two are, and makes three. The 400th segment is lost once,
    // when the window is past the path's 162 packets and TSQ, not cwnd, paces the sender.
    let skb = MSS + SKB_OVERHEAD_BYTES;
    let (rate, rtt) = (100_000_000, 20 * PS_PER_MS);
    let lost_seq = 399 * MSS;
    let mut h = Harness::new(
        linux(Some(tsq_host(skb)), 10),
        reno(),
        rtt,
        Box::new(move |p| p.seq == lost_seq && !p.retransmission),
    );
    h.sender.set_interface(0, rate, 38);
    h.start(None);
    h.run_until(20 * rtt);
    // The interface's FIFO: each segment's transmit completion, and how many are below TCP
    // (handed down, not yet completed) once it is handed down.
    let tx = transmission_time(1538, rate);
    let mut tail = 0;
    let mut completions: Vec<Time> = Vec::new();
    let (mut most_new, mut below_retransmissions) = (0, Vec::new());
    for (t, p) in &h.sent {
        tail = tail.max(*t) + tx;
        completions.push(tail);
        let below = completions.iter().filter(|&&c| c > *t).count();
        if p.retransmission {
            below_retransmissions.push(below);
        } else {
            most_new = most_new.max(below);
        }
    }
    assert_eq!(most_new, 2, "new data: at most the limit and the skb it lets go");
    assert_eq!(below_retransmissions, vec![3], "the one retransmission went while two skbs were below");
}

/// A host whose 100 Mb/s interface is the bottleneck (txqueuelen 1000 packets), behind it a
/// 1 Gb/s path of 20 ms: (interface queue's largest bytes, local congestion events, payload
/// bits per second delivered) of reno over 5 s.
fn slow_interface(host: Option<HostConfig>) -> (u64, u64, f64) {
    let rate = 100_000_000;
    let tcp = TcpConfig { host, ..linux(None, 10) };
    let mut s = dumbbell(10 * rate, 20 * PS_PER_MS, 10_000, 5 * PS_PER_S, tcp);
    s.links[0].rate_bps = rate;
    if let fatpipe_core::net::queue::QueueSpec::Droptail(q) = &mut s.links[0].queue {
        q.limit_packets = Some(1000);
    }
    let mut sim = fatpipe_core::Simulation::new(s).unwrap();
    sim.run();
    let summary = sim.summary();
    let iface = &summary["links"][0];
    let flow = &summary["flows"][0];
    (
        iface["max_queue_bytes"].as_u64().unwrap(),
        flow["local_congestion_events"].as_u64().unwrap(),
        flow["bytes_delivered"].as_u64().unwrap() as f64 * 8.0 / 5.0,
    )
}

#[test]
fn tsq_keeps_the_interface_queue_at_its_limit_where_txqueuelen_refused_the_window() {
    // Without TSQ reno's window fills the interface's 1000 packets and is refused there
    // (local congestion, CWR). With TSQ at 1 MiB (tcp_limit_output_bytes of Linux 5.x to
    // 6.15) the host queue never holds more than the limit and an skb, and nothing is refused.
    let (free_queue, free_refusals, _) = slow_interface(None);
    assert!(free_queue >= 999 * 1500, "{free_queue}");
    assert!(free_refusals > 0);
    let limit = 1 << 20;
    let (queue, refusals, goodput) = slow_interface(Some(tsq_host(limit)));
    assert!(queue <= limit + MSS + 52, "{queue} bytes queued");
    assert_eq!(refusals, 0);
    assert!(goodput > 90e6, "the interface stays busy: {goodput}");
}

/// BBR (Linux form) through a 100 Mb/s x 40 ms dumbbell whose bottleneck is policed at
/// 10 Mb/s with a 50 KB bucket, for 60 s: (pacing rates sampled every 100 ms over the last
/// 30 s, segments retransmitted, segments sent, policer drops).
fn policed_bbr(lt_bw: bool) -> (Vec<u64>, u64, u64, u64) {
    let (rate, rtt) = (100_000_000, 40 * PS_PER_MS);
    let tcp = TcpConfig { recovery: Recovery::Sack, ..tcp_config() };
    let mut s = dumbbell(rate, rtt, bdp_packets(rate, rtt, 1538), 60 * PS_PER_S, tcp);
    s.links[1].impairments.push(ImpairmentSpec::Policer(PolicerConfig { rate_bps: POLICED_BPS, burst_bytes: 50_000 }));
    let mut bbr: BbrConfig = fatpipe_core::cc::scenario_defaults("bbr");
    bbr.variant = fatpipe_core::cc::bbr::BbrVariant::Linux;
    bbr.lt_bw = lt_bw;
    s.flows[0].cc = Some(CcSpec::Bbr(bbr));
    let mut sim = fatpipe_core::Simulation::new(s).unwrap();
    let mut rates = Vec::new();
    let mut t = 30 * PS_PER_S;
    while t <= 60 * PS_PER_S {
        sim.run_until(t);
        rates.push(sim.flows[0].sender.pacing_rate_bps().unwrap());
        t += 100 * PS_PER_MS;
    }
    sim.run();
    let summary = sim.summary();
    let flow = &summary["flows"][0];
    let drops = summary["links"][1]["policer_drops_packets"].as_u64().unwrap();
    (rates, flow["segments_retransmitted"].as_u64().unwrap(), flow["segments_sent"].as_u64().unwrap(), drops)
}

const POLICED_BPS: u64 = 10_000_000;

/// The pacing rates held for at least 1 s (ten samples 100 ms apart), with the samples in them.
fn plateaus(rates: &[u64]) -> Vec<(u64, usize)> {
    let mut runs: Vec<(u64, usize)> = Vec::new();
    for &r in rates {
        match runs.last_mut() {
            Some((rate, n)) if *rate == r => *n += 1,
            _ => runs.push((r, 1)),
        }
    }
    runs.retain(|&(_, n)| n >= 10);
    runs
}

#[test]
fn bbr_with_lt_bw_paces_at_the_policers_rate_and_loses_less() {
    // The policer passes 10 Mb/s of IP packets: 10 x 1448/1500 = 9.65 Mb/s of payload, the
    // rate BBR's delivery samples see. Once it finds the policer, BBR paces at gain 1 at
    // lt_bw, the average of two lossy intervals' delivery rates within 1/8 of each other,
    // less its 1 % margin, for 48 round trips (1.9 s at 40 ms): a pacing rate held for
    // seconds. Without lt_bw the gain cycle moves the rate every 8 round trips (320 ms):
    // nothing is held for a second.
    let payload = POLICED_BPS * MSS / 1500;
    let (with, rtx_with, sent_with, drops_with) = policed_bbr(true);
    let (without, rtx_without, sent_without, drops_without) = policed_bbr(false);
    let mut held = plateaus(&with);
    assert!(plateaus(&without).is_empty(), "{without:?}");
    let held_share = held.iter().map(|&(_, n)| n).sum::<usize>() as f64 / with.len() as f64;
    assert!(held_share > 0.5, "at lt_bw {:.0} % of the time: {held:?}", held_share * 100.0);
    // An interval's rate is what got through: at most the policer's rate plus its bucket
    // spread over the shortest interval (4 round trips); less when the sender slowed down
    // in it (a recovery), so two slow intervals can agree on a rate below the policer's.
    // Typically, though, lt_bw is the policed rate: the median held rate within 1/8 of it.
    let bucket_bps = 50_000 * 8 * PS_PER_S / (4 * 40 * PS_PER_MS);
    assert!(held.iter().all(|&(rate, _)| rate <= payload + bucket_bps), "{held:?}");
    held.sort_unstable();
    let median = held[held.len() / 2].0;
    assert!(median.abs_diff(payload * 99 / 100) <= payload / 8, "median held {median} b/s: {held:?}");
    // Paced at the policed rate it stops overrunning the bucket: the loss rate falls.
    let loss = |rtx: u64, sent: u64| rtx as f64 / sent as f64;
    assert!(drops_with > 0 && drops_without > 0);
    assert!(
        loss(rtx_with, sent_with) < loss(rtx_without, sent_without),
        "retransmitted {rtx_with}/{sent_with} with lt_bw, {rtx_without}/{sent_without} without"
    );
}
