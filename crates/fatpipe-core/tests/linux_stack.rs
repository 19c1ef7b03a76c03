//! The Linux stack's loss recovery, packet by packet (issue 12, acceptance 1): PRR's
//! example from RFC 6937, RACK's from RFC 8985, a lost retransmission repaired without a
//! timeout, a tail loss repaired by a probe, a spurious fast retransmit undone through DSACK,
//! a spurious timeout undone through F-RTO, and reordering raising the reordering degree.

mod support;
use fatpipe_core::cc::reno::RenoConfig;
use fatpipe_core::cc::{CaState, CcSpec};
use fatpipe_core::packet::Packet;
use fatpipe_core::tcp::config::{Recovery, RtoEstimator, StackKind, WindowReduction};
use fatpipe_core::tcp::TcpConfig;
use fatpipe_core::time::{Time, PS_PER_MS};
use std::collections::HashSet;
use support::*;

const MSS: u64 = 1448;
const RTT: Time = 100 * PS_PER_MS;

/// Linux 6.x as shipped: SACK, D-SACK, RACK-TLP, F-RTO, undo, PRR, adaptive reordering and
/// Linux's RTO estimator; no delayed ACKs so that every segment is acknowledged.
fn linux() -> TcpConfig {
    let mut tcp = tcp_config();
    tcp.stack = StackKind::Linux;
    tcp.recovery = Recovery::Sack;
    tcp.dsack = true;
    tcp.rack = true;
    tcp.tlp = true;
    tcp.frto = true;
    tcp.undo = true;
    tcp.window_reduction = WindowReduction::Prr;
    tcp.adaptive_reordering = true;
    tcp.rto_estimator = RtoEstimator::Linux;
    tcp.delayed_ack = false;
    tcp
}

/// Reno counting acknowledged segments, as Linux's `tcp_reno_cong_avoid`.
fn reno() -> CcSpec {
    CcSpec::Reno(RenoConfig::aimd(1.0, 0.5, true))
}

/// Drops the first transmission of the given segments (numbered from 0).
fn drop_first(segments: &[u64]) -> Box<dyn FnMut(&Packet) -> bool> {
    let mut victims: HashSet<u64> = segments.iter().map(|s| s * MSS).collect();
    Box::new(move |p: &Packet| !p.retransmission && victims.remove(&p.seq))
}

/// Drops the first `n` transmissions of segment `k` (originals and retransmissions).
fn drop_times(k: u64, n: u32) -> Box<dyn FnMut(&Packet) -> bool> {
    let mut left = n;
    Box::new(move |p: &Packet| {
        let hit = p.seq == k * MSS && left > 0;
        left -= u32::from(hit);
        hit
    })
}

/// A FIFO bottleneck serving one data segment per `service` (unlimited buffer), as extra
/// delay on the harness's ideal path: segments leave in the order sent, spaced.
fn bottleneck(service: Time) -> Box<dyn FnMut(&Packet) -> Time> {
    let mut free_at: Time = 0;
    Box::new(move |p: &Packet| {
        let depart = p.ts_val.max(free_at);
        free_at = depart + service;
        depart - p.ts_val
    })
}

/// A window of `w` segments in flight with nothing growing it: the receiver's window.
fn fixed_window(w: u64) -> TcpConfig {
    let mut tcp = linux();
    tcp.initial_window_segments = w as u32;
    tcp.rcv_buffer_bytes = w * MSS;
    tcp.initial_ssthresh_segments = Some(w as u32);
    tcp
}

#[test]
fn a_single_loss_is_repaired_by_fast_recovery_with_prr_pacing_the_window_down() {
    // RFC 6937 section 5: cwnd 20, one loss; PRR sends one segment for every other ACK
    // (ssthresh / prior_cwnd = 1/2) until the flight is down to ssthresh, instead of
    // nothing for half a window (RFC 6675) or a burst. cwnd starts at 20 in congestion
    // avoidance; a bottleneck of 2 ms per segment spaces the ACKs.
    let mut tcp = fixed_window(20);
    tcp.rcv_buffer_bytes = 1000 * MSS; // the sender has data to send during recovery
    let mut h = Harness::new(tcp, reno(), RTT, drop_first(&[40]));
    h.extra_delay = bottleneck(2 * PS_PER_MS);
    h.start(Some(200 * MSS));
    while h.sender.tcb.stats.fast_retransmits == 0 {
        let t = h.now + PS_PER_MS / 10;
        h.run_until(t);
    }
    let entered = h.now;
    // cwnd grew by one segment per round trip from 20 (congestion avoidance).
    let prior = h.sender.tcb.prior_cwnd;
    let ssthresh = prior / 2;
    assert!((20..=22).contains(&prior), "{prior}");
    assert_eq!(h.sender.tcb.cc_state.ssthresh, ssthresh);
    while h.sender.tcb.ca_state == CaState::Recovery {
        let t = h.now + PS_PER_MS / 10;
        h.run_until(t);
        assert!(h.now < entered + 2 * RTT, "recovery lasts about one round trip");
    }
    let left = h.now;
    // Segments sent during recovery, by instant: the retransmission first, then one for
    // every second ACK, never two at once.
    let mut per_instant = std::collections::BTreeMap::new();
    for (t, _) in h.sent.iter().filter(|(t, _)| *t >= entered && *t < left) {
        *per_instant.entry(*t).or_insert(0u32) += 1;
    }
    let counts: Vec<u32> = per_instant.values().copied().collect();
    assert!(counts.iter().all(|&c| c == 1), "{counts:?}");
    let n: u32 = counts.iter().sum();
    assert!((ssthresh - 1..=ssthresh + 1).contains(&n), "{n} segments sent during recovery, for ssthresh {ssthresh}");
    assert!(
        (ssthresh..=ssthresh + 1).contains(&h.sender.tcb.cc_state.cwnd),
        "cwnd {} after recovery",
        h.sender.tcb.cc_state.cwnd
    );
    h.run_until(entered + 20 * RTT);
    assert_eq!((h.sender.tcb.stats.timeouts, h.sender.tcb.stats.fast_retransmits), (0, 1));
    assert_eq!(h.receiver.rcv_nxt, 200 * MSS);
}

#[test]
fn rack_marks_the_loss_one_rtt_after_it_was_sent_and_a_lost_retransmission_needs_no_timeout() {
    // Segment 30 and its first retransmission are lost. RACK marks the retransmission lost
    // once a segment sent after it is SACKed more than RACK.rtt later (RFC 8985 6.2), so a
    // second fast retransmission repairs it: no timeout.
    let mut h = Harness::new(linux(), reno(), RTT, drop_times(30, 2));
    h.start(Some(300 * MSS));
    h.run_until(20 * RTT);
    assert_eq!(h.receiver.rcv_nxt, 300 * MSS, "everything delivered");
    assert_eq!(h.sender.tcb.stats.timeouts, 0, "no timeout for a lost retransmission");
    let resent: Vec<Time> =
        h.sent.iter().filter(|(_, p)| p.seq == 30 * MSS && p.retransmission).map(|(t, _)| *t).collect();
    assert_eq!(resent.len(), 2, "retransmitted twice: {resent:?}");
    // The second retransmission follows the first by about one RTT (RACK.rtt + reo_wnd, and
    // reo_wnd is 0 in recovery without reordering): not by an RTO of 300 ms or more.
    let gap = resent[1] - resent[0];
    assert!((RTT..RTT + 20 * PS_PER_MS).contains(&gap), "gap {} ms", gap / PS_PER_MS);
}

#[test]
fn a_tail_loss_is_repaired_by_a_probe_not_a_timeout() {
    // The last two segments of a 100-segment transfer are lost: no duplicate ACK follows.
    // Two SRTTs later the tail loss probe resends the last segment; its SACK lets RACK mark
    // the other lost, and fast recovery repairs it.
    let mut h = Harness::new(linux(), reno(), RTT, drop_first(&[98, 99]));
    h.start(Some(100 * MSS));
    h.run_until(30 * RTT);
    assert_eq!(h.receiver.rcv_nxt, 100 * MSS);
    let st = &h.sender.tcb.stats;
    assert_eq!(st.timeouts, 0, "a probe, not a timeout");
    assert_eq!(st.loss_probes, 1);
    assert!(st.fast_retransmits + st.loss_probe_recoveries >= 1);
}

#[test]
fn a_spurious_fast_retransmit_is_undone_through_dsack() {
    // Segment 50 is delayed by a third of an RTT: RACK's reordering window (min_RTT / 4)
    // does not cover it on the first reordering, so it is retransmitted; the delayed original
    // arrives first, the retransmission is a duplicate, the receiver reports it by D-SACK
    // and the sender undoes the reduction.
    let mut tcp = linux();
    tcp.initial_window_segments = 40;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.extra_delay = Box::new(|p: &Packet| if p.seq == 50 * MSS && !p.retransmission { RTT / 3 } else { 0 });
    h.start(Some(400 * MSS));
    let mut cwnd_before = 0;
    while h.sender.tcb.stats.fast_retransmits == 0 {
        cwnd_before = h.sender.tcb.cc_state.cwnd;
        let t = h.now + PS_PER_MS;
        h.run_until(t);
        assert!(h.now < 20 * RTT);
    }
    h.run_until(h.now + 3 * RTT);
    let st = &h.sender.tcb.stats;
    assert!(h.receiver.stats.dsacks_sent >= 1, "the duplicate was reported");
    assert!(st.dsacks_received >= 1);
    assert_eq!(st.undos, 1, "the reduction was undone");
    assert!(
        h.sender.tcb.cc_state.cwnd >= cwnd_before,
        "cwnd {} back to at least {}",
        h.sender.tcb.cc_state.cwnd,
        cwnd_before
    );
    assert_eq!(st.timeouts, 0);
}

#[test]
fn a_spurious_timeout_is_undone_through_frto() {
    // The path stalls for 1.5 s (longer than the RTO) with a window in flight: everything
    // sent during the stall arrives when it ends. The timer fires and the head is resent;
    // then the stalled originals arrive. F-RTO sends new data on the first ACK after the
    // timeout and, when the next ACK covers segments that were never retransmitted,
    // declares the timeout spurious and restores the window (RFC 5682 section 3.1). Without
    // timestamps, so that Eifel detection cannot tell first.
    let mut tcp = linux();
    tcp.timestamps = false;
    tcp.initial_window_segments = 20;
    tcp.rcv_buffer_bytes = 100 * MSS;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.start(None);
    h.run_until(5 * RTT);
    let (stall_from, stall_end) = (h.now, h.now + 1500 * PS_PER_MS);
    let sent_at = std::rc::Rc::new(std::cell::Cell::new(0));
    let clock = sent_at.clone();
    h.extra_delay = Box::new(move |_| {
        let t = clock.get();
        if (stall_from..stall_end).contains(&t) {
            stall_end - t
        } else {
            0
        }
    });
    let mut prior_cwnd = 0;
    while h.sender.tcb.stats.timeouts == 0 {
        prior_cwnd = h.sender.tcb.cc_state.cwnd;
        let t = h.now + PS_PER_MS;
        sent_at.set(h.now);
        h.run_until(t);
        assert!(h.now < stall_end, "no timeout during the stall");
    }
    while h.now < stall_end + 5 * RTT {
        let t = h.now + PS_PER_MS;
        sent_at.set(h.now);
        h.run_until(t);
    }
    let st = &h.sender.tcb.stats;
    assert_eq!(st.spurious_timeouts, 1, "F-RTO found the timeout spurious");
    assert!(st.undos >= 1);
    assert!(
        h.sender.tcb.cc_state.cwnd >= prior_cwnd,
        "cwnd {} restored to at least {}",
        h.sender.tcb.cc_state.cwnd,
        prior_cwnd
    );
}

#[test]
fn reordering_raises_the_reordering_degree_so_later_reordering_causes_no_recovery() {
    // Every 50th segment is delayed by 4 ms (about 10 segments' worth at this rate): the
    // first such event is taken for a loss (and undone), after which tp->reordering and
    // RACK's reordering window cover it and the later ones pass without a recovery.
    let mut tcp = linux();
    tcp.initial_window_segments = 30;
    tcp.rcv_buffer_bytes = 30 * MSS;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    h.extra_delay =
        Box::new(
            |p: &Packet| {
                if p.seq.is_multiple_of(50 * MSS) && p.seq > 0 && !p.retransmission {
                    4 * PS_PER_MS
                } else {
                    0
                }
            },
        );
    h.start(Some(3000 * MSS));
    h.run_until(200 * RTT);
    assert_eq!(h.receiver.rcv_nxt, 3000 * MSS);
    let st = &h.sender.tcb.stats;
    assert!(st.reordering_events >= 10, "{} reordering events seen", st.reordering_events);
    assert!(h.sender.reordering_segments() > 3, "reordering degree {}", h.sender.reordering_segments());
    // 59 reorderings, at most the first few taken for losses.
    assert!(st.fast_retransmits <= 3, "{} fast retransmits for 59 reorderings", st.fast_retransmits);
    assert_eq!(st.timeouts, 0);
}

/// The Linux stack through the whole simulator: one flow over a dumbbell with random loss
/// and reordering on parallel paths, both with and without SACK, keeps its books straight
/// (checked by debug assertions and overflow checks in debug builds) and delivers.
#[test]
fn the_linux_stack_runs_end_to_end_with_loss() {
    use fatpipe_core::net::impairment::ImpairmentSpec;
    use fatpipe_core::sim::Simulation;
    for recovery in [Recovery::Sack, Recovery::Newreno] {
        let mut tcp = linux();
        tcp.recovery = recovery;
        tcp.delayed_ack = true;
        let mut s = dumbbell(100_000_000, 40 * PS_PER_MS, 200, 20_000 * PS_PER_MS, tcp);
        s.flows[0].cc = Some(reno());
        s.links[1].impairments =
            vec![serde_json::from_str::<ImpairmentSpec>(r#"{"kind": "bernoulli", "probability": 0.001}"#).unwrap()];
        let mut sim = Simulation::new(s).unwrap();
        sim.run_until(20_000 * PS_PER_MS);
        let f = &sim.flows[0];
        let goodput = f.delivered_bytes() as f64 * 8.0 / 20.0;
        eprintln!(
            "{recovery:?}: {:.1} Mb/s, {} fast retransmits, {} timeouts, {} probes",
            goodput / 1e6,
            f.sender.tcb.stats.fast_retransmits,
            f.sender.tcb.stats.timeouts,
            f.sender.tcb.stats.loss_probes
        );
        assert!(goodput > 5e6, "{recovery:?}: {goodput}");
        assert!(f.sender.tcb.stats.fast_retransmits > 10);
    }
}

#[test]
fn after_a_timeout_the_lowest_lost_segment_goes_first() {
    // Without SACK: segment 30 is lost three times (the original, the fast retransmission and
    // the first timeout's), so a second timeout finds the segments above it still marked lost
    // from the first, and the head marked lost again. Retransmission must restart from the
    // head (Linux walks its queue from SND.UNA), not from the segments marked longest ago, or
    // the head waits for a third timeout, backed off to seconds.
    let mut tcp = linux();
    tcp.recovery = Recovery::Newreno;
    tcp.timestamps = false;
    let mut h = Harness::new(tcp, reno(), RTT, drop_times(30, 3));
    h.extra_delay = bottleneck(PS_PER_MS);
    h.start(Some(400 * MSS));
    let mut firsts = vec![];
    while h.sender.tcb.stats.timeouts < 2 {
        let before = h.now;
        let timeouts = h.sender.tcb.stats.timeouts;
        h.run_until(h.now + PS_PER_MS);
        if h.sender.tcb.stats.timeouts > timeouts {
            firsts.push(h.sent.iter().find(|(t, _)| *t > before).map(|(_, p)| p.seq / MSS));
        }
        assert!(h.now < 200 * RTT, "fewer than two timeouts");
    }
    assert_eq!(firsts, vec![Some(30), Some(30)], "the head goes first after each timeout");
    h.run_until(h.now + 100 * RTT);
    assert_eq!(h.receiver.rcv_nxt, 400 * MSS);
    assert_eq!(h.sender.tcb.stats.timeouts, 2, "the second timeout repairs it");
}

/// Issue 22: without SACK and without timestamps, NewReno's partial ACKs each cover a
/// retransmission and original segments sent before the loss. Karn's rule (RFC 6298 3; Linux
/// `tcp_clean_rtx_queue`, no sample when FLAG_RETRANS_DATA_ACKED) takes no RTT sample from
/// them. Timing the originals instead made srtt grow by one recovery round per partial ACK.
#[test]
fn newreno_partial_acks_covering_retransmissions_take_no_rtt_sample() {
    let mut tcp = fixed_window(100);
    tcp.recovery = Recovery::Newreno;
    tcp.timestamps = false;
    tcp.rack = false;
    tcp.tlp = false;
    // Eight holes in one window: NewReno repairs one per round trip (RFC 6582).
    let holes = [10, 20, 30, 40, 50, 60, 70, 80];
    let mut h = Harness::new(tcp, reno(), RTT, drop_first(&holes));
    h.start(None);
    let mut worst = 0;
    let mut t = 0;
    while t < 20 * RTT {
        t += RTT / 20;
        h.run_until(t);
        worst = worst.max(h.sender.tcb.rtt.srtt.unwrap_or(0));
    }
    let retransmitted: HashSet<u64> =
        h.sent.iter().filter(|(_, p)| p.retransmission).map(|(_, p)| p.seq / MSS).collect();
    for k in holes {
        assert!(retransmitted.contains(&k), "hole {k} was not repaired by a retransmission");
    }
    assert_eq!(h.sender.tcb.stats.timeouts, 0, "NewReno repaired every hole without a timeout");
    // The path's RTT is 100 ms and nothing queues (a fixed window well inside an ideal path):
    // every valid sample is 100 ms, so srtt never exceeds it.
    assert!(worst <= RTT + RTT / 100, "srtt reached {} ms on a 100 ms path", worst / PS_PER_MS);
}

/// Issue 22: the ACK path goes dark for longer than the RTO while the data path works, so the
/// timeout is spurious: every segment had arrived. The head is resent, arrives as a duplicate,
/// and the receiver acknowledges everything. Its ACK must echo the timestamp of the last
/// segment that advanced the window, not the duplicate's: RFC 7323 section 4.3 takes TS.Recent
/// only from a segment that covers Last.ACK.sent (SEG.SEQ <= Last.ACK.sent < SEG.SEQ +
/// SEG.LEN), and Linux drops an old duplicate before it could (`tcp_sequence`). The echo is
/// then older than the first retransmission, and Eifel detection (RFC 3522; Linux
/// `tcp_try_undo_loss`) undoes the timeout's reduction, as the kernel did on a 40 ms path
/// with its ACKs lost for 300 ms (TCPLossUndo = 1 in every run).
#[test]
fn a_timeout_after_lost_acks_is_undone_by_the_timestamp_echo_without_sack() {
    let mut tcp = fixed_window(20);
    tcp.recovery = Recovery::Newreno;
    tcp.rack = false;
    tcp.tlp = false;
    tcp.frto = false; // the echo alone decides
    let dark_from = 10 * RTT;
    let dark_to = dark_from + 6 * RTT;
    let mut h = Harness::new(tcp, reno(), RTT, Box::new(|_| false));
    // An ACK carries the receiver's clock as its TSval: drop those it sends in the dark.
    h.drop_ack = Box::new(move |p: &Packet| (dark_from..dark_to).contains(&p.ts_val));
    h.start(None);
    h.run_until(dark_from);
    let prior_cwnd = h.sender.tcb.cc_state.cwnd;
    let prior_ssthresh = h.sender.tcb.cc_state.ssthresh;
    h.run_until(dark_to + 10 * RTT);
    let st = &h.sender.tcb.stats;
    assert!(st.timeouts >= 1, "the ACKs' absence set off the timer");
    assert!(h.dropped.is_empty(), "no data segment was lost");
    assert_eq!(st.undos, 1, "the echo showed the timeout spurious");
    assert_eq!(h.sender.tcb.cc_state.ssthresh, prior_ssthresh, "ssthresh restored");
    assert!(h.sender.tcb.cc_state.cwnd >= prior_cwnd, "cwnd {} restored to {}", h.sender.tcb.cc_state.cwnd, prior_cwnd);
    assert_eq!(h.sender.tcb.ca_state, CaState::Open);
}
