//! The hosts' own elements, packet by packet (issue 26): Linux's internal pacing spaces
//! segments by MSS / rate at the rate `tcp_update_pacing_rate` gives (200 % of cwnd x MSS /
//! SRTT in slow start, 120 % after); TSO hands segments out in trains of
//! `tcp_tso_autosize`'s size, the pacing gap following each train. The closed forms are
//! restated here from the Linux functions (`host/pacing.rs`, `host/tso.rs` name them), not
//! read from the core.

mod support;
use fatpipe_core::cc::reno::RenoConfig;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::host::HostConfig;
use fatpipe_core::tcp::config::Recovery;
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{transmission_time, Time, PS_PER_MS, PS_PER_S, PS_PER_US};
use support::*;

const MSS: u64 = 1448;

/// Linux's pacing (and TSO if asked) at the scenario's defaults (`net.ipv4.tcp_pacing_ss_ratio`
/// 200, `tcp_pacing_ca_ratio` 120, GSO_LEGACY_MAX_SIZE, `tcp_min_tso_segs` 2,
/// `tcp_tso_rtt_log` 9, `sk_pacing_shift` 10), every other element off.
fn host(tso: bool) -> HostConfig {
    HostConfig { linux_pacing: true, tso, ..fatpipe_core::host::scenario_defaults() }
}

/// `ssthresh` chooses the pacing ratio.
use support::linux_host_tcp as linux;

fn reno() -> CcSpec {
    CcSpec::Reno(RenoConfig::aimd(1.0, 0.5, true))
}

/// ratio% x cwnd x MSS / SRTT in bits per second (`tcp_update_pacing_rate`).
fn linux_rate(ratio_percent: u64, cwnd: u64, srtt: Time) -> u64 {
    (ratio_percent as u128 * cwnd as u128 * MSS as u128 * 8 * PS_PER_S as u128 / (100 * srtt as u128)) as u64
}

/// Send times of the data segments in [from, to).
fn send_times(h: &Harness, from: Time, to: Time) -> Vec<Time> {
    h.sent.iter().map(|&(t, _)| t).filter(|&t| t >= from && t < to).collect()
}

/// The segments sent in [from, to), grouped by send instant: (time, segments).
fn trains(h: &Harness, from: Time, to: Time) -> Vec<(Time, u64)> {
    let mut trains: Vec<(Time, u64)> = Vec::new();
    for t in send_times(h, from, to) {
        match trains.last_mut() {
            Some((at, n)) if *at == t => *n += 1,
            _ => trains.push((t, 1)),
        }
    }
    trains
}

#[test]
fn linux_pacing_rate_is_120_percent_of_the_window_in_avoidance_and_200_in_slow_start() {
    let rtt = 100 * PS_PER_MS;
    for (ssthresh, ratio) in [(Some(2), 120), (None, 200)] {
        let mut h = Harness::new(linux(Some(host(false)), 10, ssthresh), reno(), rtt, Box::new(|_| false));
        h.start(None);
        h.run_until(rtt); // the initial window's ACKs are in
        let s = &h.sender.tcb;
        assert_eq!(s.rtt.srtt, Some(rtt));
        let expected = linux_rate(ratio, u64::from(s.cc_state.cwnd), rtt);
        assert_eq!(h.sender.pacing_rate_bps(), Some(expected), "ssthresh {ssthresh:?}");
    }
}

#[test]
fn linux_pacing_spaces_segments_by_mss_over_the_rate_after_the_first_ten() {
    let rtt = 100 * PS_PER_MS;
    let mut h = Harness::new(linux(Some(host(false)), 10, Some(2)), reno(), rtt, Box::new(|_| false));
    h.start(None);
    // The first 10 segments are not paced (tcp_update_skb_after_send): all at once.
    assert_eq!(send_times(&h, 0, 1).len(), 10);
    h.run_until(rtt);
    let cwnd = u64::from(h.sender.tcb.cc_state.cwnd);
    let gap = transmission_time(MSS, linux_rate(120, cwnd, rtt));
    h.run_until(2 * rtt - 1); // no ACK arrives in between: the rate holds
    let times = send_times(&h, rtt, 2 * rtt);
    assert_eq!(times.len() as u64, cwnd, "the window's worth goes out during the round");
    // The first segment of the round went on the first ACK, cwnd still 10 (Reno grows it on
    // the tenth), and came late (nothing was due since the start): half its gap is forgiven.
    // The others follow a whole gap apart, at the rate of the grown window.
    let first_gap = transmission_time(MSS, linux_rate(120, 10, rtt));
    assert_eq!(times[1] - times[0], first_gap - first_gap / 2);
    for w in times[1..].windows(2) {
        assert_eq!(w[1] - w[0], gap);
    }
}

#[test]
fn without_the_host_elements_the_window_leaves_in_one_burst() {
    let rtt = 100 * PS_PER_MS;
    let mut h = Harness::new(linux(None, 10, Some(2)), reno(), rtt, Box::new(|_| false));
    h.start(None);
    h.run_until(2 * rtt - 1);
    let times = send_times(&h, rtt, 2 * rtt);
    assert!(times.len() > 1 && times.iter().all(|&t| t == rtt), "{times:?}");
}

#[test]
fn tso_trains_have_autosizes_length_and_pacing_spaces_the_trains() {
    // 20 ms (no near-peer allowance: 20,000 us >> 9 = 39 >= 32) and a window of 200
    // segments: 120 % x 200 x 1448 B / 20 ms = 139 Mb/s, about 17 KB a millisecond.
    let rtt = 20 * PS_PER_MS;
    let mut h = Harness::new(linux(Some(host(true)), 200, Some(2)), reno(), rtt, Box::new(|_| false));
    h.start(None);
    h.run_until(rtt);
    let cwnd = u64::from(h.sender.tcb.cc_state.cwnd);
    let rate = linux_rate(120, cwnd, rtt);
    assert_eq!(h.sender.pacing_rate_bps(), Some(rate));
    // tcp_tso_autosize: (rate in bytes/s >> sk_pacing_shift) bytes, at most 65,536 - 321.
    let segs = (((rate / 8) >> 10).min(65_215) / MSS).max(2);
    assert!(segs > 2, "the closed form must be above the floor to test it: {segs}");
    h.run_until(2 * rtt - 1);
    let trains = trains(&h, rtt, 2 * rtt);
    assert!(trains.len() > 3, "{trains:?}");
    // The first ACK of the round opens room for one segment only, which leaves alone (Linux
    // would defer it, tcp_tso_should_defer, not modelled); the pacing timer then finds the
    // window open: full trains, the last one what remains of the window.
    let (full, last) = trains[1..].split_at(trains.len() - 2);
    assert_eq!(trains[0].1, 1);
    assert!(full.iter().all(|&(_, n)| n == segs), "train sizes {trains:?}, autosize {segs}");
    assert!(last[0].1 <= segs);
    // The gap follows the whole train: segs x MSS at the rate.
    let gap = transmission_time(segs * MSS, rate);
    for w in trains[1..].windows(2) {
        assert_eq!(w[1].0 - w[0].0, gap);
    }
}

/// The receiver's GRO on, interrupts `rx_usecs` = 16 us after the first frame or after
/// `rx_frames` frames.
fn gro_host(rx_frames: u32) -> HostConfig {
    HostConfig { gro: true, rx_coalesce_ps: 16 * PS_PER_US, rx_frames, ..host(false) }
}

/// (time, bytes newly acknowledged) of every ACK sent in [from, to).
fn ack_steps(h: &Harness, from: Time, to: Time) -> Vec<(Time, u64)> {
    let mut last = 0;
    let mut steps = Vec::new();
    for &(t, p) in &h.acks {
        if (from..to).contains(&t) {
            steps.push((t, p.ack - last));
        }
        last = p.ack;
    }
    steps
}

/// The ACKs (time, bytes newly acknowledged) of an initial window of 200 segments, sent at
/// once (no RTT yet, nothing paced) over 20 ms: they arrive together, with one timestamp.
fn initial_window_acks(host: Option<HostConfig>) -> Vec<(Time, u64)> {
    let rtt = 20 * PS_PER_MS;
    let mut h = Harness::new(linux(host, 200, None), reno(), rtt, Box::new(|_| false));
    h.start(None);
    h.run_until(rtt / 2 + PS_PER_MS);
    ack_steps(&h, 0, rtt)
}

#[test]
fn gro_merges_what_arrives_together_and_one_stretch_ack_covers_it() {
    // Super-segments of as many segments as stay below 64 KiB (45 x 1448 + 52 header bytes
    // = 65,212), each answered by one ACK when the interrupt fires 16 us after the first frame.
    let at = 10 * PS_PER_MS + 16 * PS_PER_US;
    let acks = initial_window_acks(Some(gro_host(1000)));
    assert_eq!(acks, [45, 45, 45, 45, 20].map(|n| (at, n * MSS)));
    // Without GRO this receiver (no delayed ACKs) acknowledges every segment: 200 ACKs.
    assert_eq!(initial_window_acks(None).len(), 200);
}

#[test]
fn rx_frames_cut_the_super_segments_and_fire_the_interrupt_early() {
    // 32 frames fire the interrupt at once: 6 super-segments of 32 at the arrival, the last
    // 8 segments 16 us later.
    let mut expected = vec![(10 * PS_PER_MS, 32 * MSS); 6];
    expected.push((10 * PS_PER_MS + 16 * PS_PER_US, 8 * MSS));
    assert_eq!(initial_window_acks(Some(gro_host(32))), expected);
}

#[test]
fn with_tso_and_gro_each_paced_train_gets_one_ack() {
    // The second round of the TSO test above: trains of autosize's length, paced apart;
    // each arrives together and is acknowledged by one ACK covering the whole train.
    let rtt = 20 * PS_PER_MS;
    let host = HostConfig { tso: true, ..gro_host(1000) };
    let mut h = Harness::new(linux(Some(host), 200, Some(2)), reno(), rtt, Box::new(|_| false));
    h.start(None);
    h.run_until(3 * rtt);
    let trains = trains(&h, rtt, 2 * rtt);
    let acks = ack_steps(&h, rtt + rtt / 2, 2 * rtt + rtt / 2);
    let expected: Vec<(Time, u64)> = trains.iter().map(|&(t, n)| (t + rtt / 2 + 16 * PS_PER_US, n * MSS)).collect();
    assert!(trains.iter().any(|&(_, n)| n > 2), "{trains:?}");
    assert_eq!(acks, expected);
}

/// Wire bytes (IP + 14-byte Ethernet header, as fq counts them) sent in [from, to).
fn frame_bytes(h: &Harness, from: Time, to: Time) -> u64 {
    h.sent.iter().filter(|&&(t, _)| (from..to).contains(&t)).map(|(_, p)| u64::from(p.ip_bytes) + 14).sum()
}

const MAXRATE: u64 = 100_000_000;

/// A bulk flow over an ideal 20 ms path through fq with maxrate 100 Mb/s, after 3 s.
fn through_fq(tso: bool) -> Harness {
    let fq = HostConfig { linux_pacing: false, fq: true, fq_maxrate_bps: Some(MAXRATE), ..host(tso) };
    let mut h = Harness::new(linux(Some(fq), 10, None), reno(), 20 * PS_PER_MS, Box::new(|_| false));
    h.start(None);
    h.run_until(3 * PS_PER_S);
    h
}

#[test]
fn fq_maxrate_caps_the_flow_on_the_wire() {
    // An ideal 20 ms path and an unlimited window: slow start runs away without a cap. With
    // fq's maxrate at 100 Mb/s the flow puts at most 100 Mb of frames on the wire a second,
    // and once its window is past the cap's BDP, exactly that (to a frame).
    let maxrate = MAXRATE;
    let h = through_fq(false);
    let second = frame_bytes(&h, 2 * PS_PER_S, 3 * PS_PER_S) * 8;
    let frame_bits = (MSS + 52 + 14) * 8;
    assert!(second <= maxrate + frame_bits && second >= maxrate - frame_bits, "{second} bits in a second");
    // Segments leave (1448 + 52 + 14) bytes at 100 Mb/s apart: 121.12 us.
    let gap = transmission_time(MSS + 52 + 14, maxrate);
    let times = send_times(&h, 2 * PS_PER_S, 2 * PS_PER_S + 10 * PS_PER_MS);
    assert!(times.windows(2).all(|w| w[1] - w[0] == gap), "{times:?}");
    // fq alone (no maxrate) paces at Linux's rate: past 200 Mb/s within half a second.
    let fq_only = HostConfig { fq: true, ..host(false) };
    let mut free = Harness::new(linux(Some(fq_only), 10, None), reno(), 20 * PS_PER_MS, Box::new(|_| false));
    free.start(None);
    free.run_until(PS_PER_S / 2);
    assert!(frame_bytes(&free, 4 * PS_PER_S / 10, PS_PER_S / 2) * 8 > 2 * maxrate / 10);
}

#[test]
fn fq_maxrate_spaces_tso_super_segments_by_their_whole_length() {
    let h = through_fq(true);
    let trains = trains(&h, 2 * PS_PER_S, 2 * PS_PER_S + 20 * PS_PER_MS);
    assert!(trains.iter().all(|&(_, n)| n > 1), "{trains:?}");
    for w in trains.windows(2) {
        assert_eq!(w[1].0 - w[0].0, transmission_time(w[0].1 * (MSS + 52 + 14), MAXRATE), "{trains:?}");
    }
}

/// The largest cwnd BBR holds over the last 3 s of 6 s through a 100 Mb/s x 40 ms dumbbell
/// (one BDP of buffer) to a receiver whose NIC interrupts every 5 ms: ACKs come in bursts.
fn bbr_cwnd_under_aggregation(extra_acked: bool) -> i64 {
    use fatpipe_core::cc::bbr::BbrConfig;
    let (rate, rtt) = (100_000_000, 40 * PS_PER_MS);
    let host = HostConfig { linux_pacing: false, rx_coalesce_ps: 5 * PS_PER_MS, rx_frames: 65_535, ..gro_host(1) };
    let tcp = TcpConfig { recovery: Recovery::Sack, host: Some(host), ..tcp_config() };
    let mut s = dumbbell(rate, rtt, bdp_packets(rate, rtt, 1538), 6 * PS_PER_S, tcp);
    s.flows[0].cc = Some(CcSpec::Bbr(BbrConfig { extra_acked, ..fatpipe_core::cc::scenario_defaults("bbr") }));
    s.sample_interval_ps = 10 * PS_PER_MS;
    let mut sim = fatpipe_core::Simulation::new(s).unwrap();
    sim.run();
    let f = &sim.flow_series;
    (0..f.time_ps.len()).filter(|&i| f.time_ps[i] >= 3 * PS_PER_S).map(|i| f.cwnd_segments[i]).max().unwrap()
}

#[test]
fn bbr_extra_acked_raises_cwnd_under_aggregated_acks() {
    // 5 ms of ACKs arrive at once: 5 ms of BtlBw (about 94 Mb/s of payload: 41 segments)
    // beyond what BtlBw expects at that instant. With extra_acked the window's target
    // carries that excess (Linux bbr_ack_aggregation_cwnd); without, it stays at 2 x BDP +
    // 3 quanta.
    let (without, with) = (bbr_cwnd_under_aggregation(false), bbr_cwnd_under_aggregation(true));
    assert!((35..=48).contains(&(with - without)), "cwnd {without} without extra_acked, {with} with");
}
