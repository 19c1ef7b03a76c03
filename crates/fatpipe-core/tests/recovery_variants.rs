//! Step-2 acceptance checks of loss recovery in the TCP core (Tahoe, Reno, NewReno, SACK),
//! Limited Slow Start and Delayed Congestion Response, driven packet by packet.

mod support;
use fatpipe_core::cc::CaState;
use fatpipe_core::packet::Packet;
use fatpipe_core::rng::Rng;
use fatpipe_core::tcp::config::{Recovery, SackVariant};
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{Time, PS_PER_MS};
use std::collections::HashSet;
use support::*;

const MSS: u64 = 1448;
const RTT: Time = 40 * PS_PER_MS;

fn config(recovery: Recovery) -> TcpConfig {
    let mut tcp = tcp_config();
    tcp.recovery = recovery;
    tcp.delayed_ack = false;
    tcp
}

/// Drops the first transmission of the given segments (numbered from 0).
fn drop_first_transmission(segments: &[u64]) -> Box<dyn FnMut(&Packet) -> bool> {
    let mut victims: HashSet<u64> = segments.iter().map(|s| s * MSS).collect();
    Box::new(move |p: &Packet| !p.retransmission && victims.remove(&p.seq))
}

fn run(recovery: Recovery, drops: &[u64], total_segments: u64) -> Harness {
    run_with(config(recovery), drops, total_segments)
}

/// Sends `total_segments` with this configuration, losing `drops` once each; checks that
/// everything arrives within 30 s.
fn run_with(tcp: TcpConfig, drops: &[u64], total_segments: u64) -> Harness {
    let recovery = tcp.recovery;
    let mut h = Harness::new(tcp, reno(), RTT, drop_first_transmission(drops));
    h.start(Some(total_segments * MSS));
    h.run_until(30_000 * PS_PER_MS);
    assert_eq!(h.receiver.rcv_nxt, total_segments * MSS, "{recovery:?}: everything delivered");
    h
}

#[test]
fn tahoe_returns_to_one_segment_after_a_fast_retransmit() {
    let mut h = Harness::new(config(Recovery::Tahoe), reno(), RTT, drop_first_transmission(&[60]));
    h.start(Some(400 * MSS));
    while h.sender.tcb.stats.fast_retransmits == 0 {
        let t = h.now + PS_PER_MS / 10;
        h.run_until(t);
    }
    assert_eq!(h.sender.tcb.cc_state.cwnd, 1, "Tahoe: slow start from one segment");
    assert_eq!(h.sender.tcb.ca_state, CaState::Loss);
    h.run_until(h.now + 10_000 * PS_PER_MS);
    assert_eq!(h.receiver.rcv_nxt, 400 * MSS);
    assert_eq!(h.sender.tcb.stats.timeouts, 0);
}

#[test]
fn duplicate_acks_of_go_back_n_resends_start_no_second_fast_retransmit() {
    // Tahoe resends everything after the hole. Once the hole's retransmission arrives, the
    // cumulative ACK reaches `recover` (all that was sent before the loss), and each resent
    // segment the receiver already holds brings a duplicate ACK at that point. They tell of
    // no new loss: RFC 6582 3.2 step 2 (ns-2's bugFix_) starts fast retransmit only when the
    // cumulative ACK covers more than `recover`.
    // Four holes in one window: each resent segment above the last hole brings such an
    // ACK. Without the strict guard this run made 91 fast retransmits.
    let h = run(Recovery::Tahoe, &[60, 62, 64, 66], 400);
    assert_eq!(h.sender.tcb.stats.fast_retransmits, 1, "one window of losses, one fast retransmit");
    assert_eq!(h.sender.tcb.stats.timeouts, 0);
}

#[test]
fn a_burst_of_drops_times_reno_out_but_not_newreno_or_sack() {
    // Three losses in the window of cwnd 40 (segments 30-69 travel together).
    let drops = [40, 44, 48];
    let reno = run(Recovery::Reno, &drops, 300);
    let newreno = run(Recovery::Newreno, &drops, 300);
    let sack = run(Recovery::Sack, &drops, 300);
    eprintln!(
        "timeouts: reno {}, newreno {}, sack {}",
        reno.sender.tcb.stats.timeouts, newreno.sender.tcb.stats.timeouts, sack.sender.tcb.stats.timeouts
    );
    assert!(reno.sender.tcb.stats.timeouts >= 1, "Reno leaves recovery on the first partial ACK");
    assert_eq!(newreno.sender.tcb.stats.timeouts, 0);
    assert_eq!(sack.sender.tcb.stats.timeouts, 0);
    // SACK and NewReno retransmit exactly the three lost segments.
    assert_eq!(newreno.sender.tcb.stats.segments_retransmitted, 3);
    assert_eq!(sack.sender.tcb.stats.segments_retransmitted, 3);
}

/// Time from the first fast retransmit until every dropped segment is delivered.
fn repair_time(recovery: Recovery, drops: &[u64]) -> f64 {
    let last = *drops.iter().max().unwrap();
    let mut h = Harness::new(config(recovery), reno(), RTT, drop_first_transmission(drops));
    h.start(Some(4000 * MSS));
    while h.sender.tcb.stats.fast_retransmits == 0 {
        let t = h.now + PS_PER_MS / 10;
        h.run_until(t);
    }
    let start = h.now;
    while h.receiver.rcv_nxt <= last * MSS {
        let t = h.now + PS_PER_MS / 10;
        h.run_until(t);
        assert!(h.now < start + 200 * RTT, "{recovery:?} never repaired");
    }
    assert_eq!(h.sender.tcb.stats.timeouts, 0, "{recovery:?}");
    (h.now - start) as f64 / RTT as f64
}

#[test]
fn sack_repairs_ten_drops_in_one_window_within_two_rtts() {
    // Ten losses spread over one window of ~160 segments.
    let drops: Vec<u64> = (0..10).map(|i| 200 + 12 * i).collect();
    let sack = repair_time(Recovery::Sack, &drops);
    let newreno = repair_time(Recovery::Newreno, &drops);
    eprintln!("repair of 10 drops: SACK {sack:.2} RTT, NewReno {newreno:.2} RTT");
    assert!(sack <= 2.2, "SACK took {sack} RTTs");
    assert!(newreno >= 9.0, "NewReno repairs one hole per RTT: {newreno}");
}

#[test]
fn sack_receiver_reports_most_recent_block_first() {
    let mut h = Harness::new(config(Recovery::Sack), reno(), RTT, drop_first_transmission(&[1, 3, 5]));
    h.start(Some(7 * MSS));
    let mut out = Vec::new();
    // Deliver the surviving segments 0, 2, 4, 6 straight to the receiver.
    for seg in [0u64, 2, 4, 6] {
        let p = h.sent.iter().find(|(_, p)| p.seq == seg * MSS).unwrap().1;
        h.receiver.on_segment(0, &p, &mut out);
    }
    let last = out.last().unwrap();
    let blocks: Vec<_> = last.sack.iter(last.ack).map(|(s, e)| (s / MSS, e / MSS)).collect();
    // Three blocks beside timestamps (RFC 2018), newest first.
    assert_eq!(blocks, vec![(6, 7), (4, 5), (2, 3)]);
    assert_eq!(last.ack, MSS);
}

#[test]
fn limited_slow_start_adds_half_max_ssthresh_per_rtt() {
    let mut tcp = config(Recovery::Sack);
    tcp.max_ssthresh_segments = 100;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.start(None);
    // Sample cwnd once per RTT, half an RTT after the ACKs of a round arrive.
    let mut cwnds = Vec::new();
    h.run_until(RTT / 2);
    for _ in 0..40 {
        cwnds.push(h.sender.tcb.cc_state.cwnd);
        h.run_until(h.now + RTT);
    }
    eprintln!("cwnd per RTT: {cwnds:?}");
    // Below max_ssthresh: doubling.
    assert_eq!(&cwnds[..4], &[10, 20, 40, 80]);
    // Well above it (K >= 10): max_ssthresh / 2 = 50 segments per RTT, within 10%.
    for w in cwnds.windows(2).filter(|w| w[0] >= 500) {
        let growth = (w[1] - w[0]) as f64;
        assert!((growth / 50.0 - 1.0).abs() <= 0.1, "growth {growth} at cwnd {}", w[0]);
    }
    assert!(*cwnds.last().unwrap() > 1000);
}

fn reordering_run(dcr_div: Option<u32>) -> Harness {
    let mut tcp = config(Recovery::Sack);
    tcp.dcr_div = dcr_div;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    // One data segment in twenty takes a 10 ms longer path: reordering, never loss.
    let mut rng = Rng::for_element(1, "reordering");
    h.extra_delay = Box::new(move |_| if rng.bernoulli(0.05) { 10 * PS_PER_MS } else { 0 });
    h.start(Some(2000 * MSS));
    h.run_until(60_000 * PS_PER_MS);
    assert_eq!(h.receiver.rcv_nxt, 2000 * MSS);
    h
}

#[test]
fn dcr_rides_out_reordering_that_triggers_fast_retransmits_without_it() {
    let plain = reordering_run(None);
    let dcr = reordering_run(Some(1));
    eprintln!(
        "spurious fast retransmits: without DCR {}, with DCR {}",
        plain.sender.tcb.stats.fast_retransmits, dcr.sender.tcb.stats.fast_retransmits
    );
    assert!(plain.sender.tcb.stats.fast_retransmits > 0);
    assert_eq!(dcr.sender.tcb.stats.fast_retransmits, 0);
    assert_eq!(dcr.sender.tcb.stats.segments_retransmitted, 0);
}

#[test]
fn every_recovery_variant_fills_the_reference_path() {
    // Step 1's scenario: 100 Mb/s, 40 ms, one BDP of drop-tail buffer, 60 s, delayed ACKs.
    use fatpipe_core::time::PS_PER_S;
    use fatpipe_core::Simulation;
    let (rate, rtt) = (100_000_000u64, 40 * PS_PER_MS);
    for recovery in [Recovery::Tahoe, Recovery::Reno, Recovery::Newreno, Recovery::Sack] {
        let mut tcp = tcp_config();
        tcp.recovery = recovery;
        let bdp = bdp_packets(rate, rtt, 1538);
        let mut sim = Simulation::new(dumbbell(rate, rtt, bdp, 60 * PS_PER_S, tcp)).unwrap();
        sim.run();
        let qs = &sim.queue_series;
        let departed = |t: u64| {
            let i = (0..qs.time_ps.len()).find(|&i| qs.time_ps[i] == t && qs.link[i] == 1).unwrap();
            qs.departed_bytes[i]
        };
        let utilization = (departed(60 * PS_PER_S) - departed(20 * PS_PER_S)) as f64 * 8.0 / (40.0 * rate as f64);
        eprintln!("{recovery:?}: bottleneck utilization over the last 40 s {utilization:.3}");
        assert!(utilization > 0.8, "{recovery:?}: {utilization}");
    }
}

/// ssthresh when the first fast retransmit starts, and after each of the first `timeouts`
/// timeouts, for a NewReno flow (the Impatient variant, as ns-2's) that loses `drops`.
fn ssthresh_through_timeouts(
    every_timeout: bool,
    mut drop: Box<dyn FnMut(&Packet) -> bool>,
    timeouts: u64,
) -> Vec<u32> {
    let mut tcp = config(Recovery::Newreno);
    tcp.newreno_impatient = true;
    tcp.ssthresh_every_timeout = every_timeout;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(move |p: &Packet| drop(p)));
    h.start(Some(2000 * MSS));
    let mut seen = Vec::new();
    while (seen.len() as u64) < timeouts + 1 {
        let t = h.now + PS_PER_MS / 10;
        h.run_until(t);
        assert!(h.now < 60_000 * PS_PER_MS, "{seen:?}");
        let events = h.sender.tcb.stats.fast_retransmits.min(1) + h.sender.tcb.stats.timeouts;
        if events > seen.len() as u64 {
            seen.push(h.sender.tcb.cc_state.ssthresh);
        }
    }
    seen
}

#[test]
fn a_timeout_in_recovery_halves_ssthresh_again_only_as_ns2_does() {
    // Every other segment of 100-180 lost: NewReno repairs one per RTT and the Impatient
    // timer (restarted on the first partial ACK only) expires in recovery. RFC 5681 keeps
    // the ssthresh this congestion event set; ns-2's TcpAgent::timeout halves cwnd_ (the
    // window without recovery's inflation, which is ssthresh) again.
    let drops: Vec<u64> = (100..180).step_by(2).collect();
    let rfc = ssthresh_through_timeouts(false, drop_first_transmission(&drops), 1);
    let ns2 = ssthresh_through_timeouts(true, drop_first_transmission(&drops), 1);
    assert_eq!(rfc[0], ns2[0], "the fast retransmit is the same");
    assert!(rfc[0] > 20, "{rfc:?}");
    assert_eq!(rfc[1], rfc[0], "RFC 5681: the event's ssthresh stays");
    assert_eq!(ns2[1], ns2[0] / 2, "ns-2: half of the window without inflation");
}

#[test]
fn a_backed_off_timeout_drops_ssthresh_to_two_only_as_ns2_does() {
    // Segment 150 is lost three times (first send, fast retransmit, first timeout's resend):
    // the timer backs off and expires again with cwnd 1.
    let drop_150 = || {
        let mut times = 0;
        Box::new(move |p: &Packet| {
            p.seq == 150 * MSS && {
                times += 1;
                times <= 3
            }
        }) as Box<dyn FnMut(&Packet) -> bool>
    };
    let rfc = ssthresh_through_timeouts(false, drop_150(), 2);
    let ns2 = ssthresh_through_timeouts(true, drop_150(), 2);
    assert_eq!(rfc[1], rfc[0], "{rfc:?}: the first timeout in recovery keeps it");
    assert_eq!(rfc[2], rfc[0], "{rfc:?}: RFC 5681 holds ssthresh on a repeated timeout");
    assert_eq!(ns2[1], ns2[0] / 2, "{ns2:?}");
    assert_eq!(ns2[2], 2, "{ns2:?}: half of a one-segment window, at least two");
}

#[test]
fn reno_with_the_recover_guard_waits_for_the_timeout_as_ns2s_reno() {
    // Holes far apart in one window: Reno leaves recovery on the first partial ACK; new data
    // sent during its inflation brings three more duplicate ACKs for the next hole. Classic
    // Reno (RFC 5681) retransmits again and halves again; ns-2's (bug_fix_) does not until
    // the cumulative ACK passes `recover`, so the next hole waits for the timer.
    let drops = [40, 60, 80];
    let stats = |guard: bool| {
        let mut tcp = config(Recovery::Reno);
        tcp.reno_recover_guard = guard;
        run_with(tcp, &drops, 400).sender.tcb.stats
    };
    let classic = stats(false);
    let guarded = stats(true);
    eprintln!("classic {classic:?}\nguarded {guarded:?}");
    assert!(classic.fast_retransmits >= 2, "{classic:?}");
    assert_eq!(guarded.fast_retransmits, 1, "{guarded:?}");
    assert!(guarded.timeouts >= 1, "{guarded:?}");
}

#[test]
fn ns2_sack1_resends_every_hole_below_the_highest_sack_before_new_data() {
    // Slow start's overshoot, as document 003's 200-packet queue drops it: every other
    // segment lost in a stretch early in the last round and in a longer one late in it. By
    // the time pipe falls below the halved cwnd the SACKs have passed the first stretch, not
    // the second. RFC 6675 counts a hole lost only once three segments are SACKed above it,
    // so as the SACKs climb through the second stretch it sends a hole and new data per ACK,
    // interleaved; ns-2's Sack1 resends every hole below the highest SACK first
    // (ScoreBoard::GetNextRetran), then new data.
    let drops: Vec<u64> = (300..330).step_by(2).chain((480..600).step_by(2)).collect();
    let new_sent_before_last_hole = |variant: SackVariant| {
        let mut tcp = config(Recovery::Sack);
        tcp.sack_variant = variant;
        let h = run_with(tcp, &drops, 3000);
        assert_eq!(h.sender.tcb.stats.timeouts, 0, "{variant:?}");
        assert_eq!(h.sender.tcb.stats.segments_retransmitted, drops.len() as u64, "{variant:?}");
        let first_rtx = h.sent.iter().position(|(_, p)| p.retransmission).unwrap();
        let last_rtx = h.sent.iter().rposition(|(_, p)| p.retransmission).unwrap();
        let highest_before = h.sent[..first_rtx].iter().map(|(_, p)| p.seq).max().unwrap();
        h.sent[first_rtx..last_rtx].iter().filter(|(_, p)| !p.retransmission && p.seq > highest_before).count()
    };
    let (rfc, sack1) = (new_sent_before_last_hole(SackVariant::Rfc6675), new_sent_before_last_hole(SackVariant::Sack1));
    assert!(rfc > 0 && sack1 == 0, "new segments among the resends: rfc6675 {rfc}, sack1 {sack1}");
}
