//! Loss recovery driven packet by packet (acceptance 4 of step 1).

mod support;
use fatpipe_core::cc::CaState;
use fatpipe_core::time::PS_PER_MS;
use std::collections::HashSet;
use support::*;

#[test]
fn newreno_repairs_three_drops_in_one_window_without_timeout() {
    let rtt = 40 * PS_PER_MS;
    let mss = 1448u64;
    // Drop the first transmission of segments 40, 45 and 52, which travel in one window.
    let mut victims: HashSet<u64> = [40u64, 45, 52].iter().map(|s| s * mss).collect();
    let drop = Box::new(move |p: &fatpipe_core::packet::Packet| !p.retransmission && victims.remove(&p.seq));
    let mut h = Harness::new(tcp_config(), reno(), rtt, drop);
    h.start(Some(200 * mss));
    h.run_until(5_000 * PS_PER_MS);

    assert_eq!(h.dropped.len(), 3, "all three segments were dropped once");
    assert_eq!(h.receiver.rcv_nxt, 200 * mss, "everything delivered");
    let st = &h.sender.tcb.stats;
    assert_eq!(st.timeouts, 0, "NewReno recovers without a timeout");
    assert_eq!(st.fast_retransmits, 1, "one fast retransmit for one window of losses");
    // Exactly the three lost segments were retransmitted: two by partial ACKs.
    assert_eq!(st.segments_retransmitted, 3);
    assert_eq!(h.sender.tcb.ca_state, CaState::Open);
    assert!(h.sender.is_finished());
}

#[test]
fn single_drop_halves_the_window() {
    let rtt = 40 * PS_PER_MS;
    let mss = 1448u64;
    let mut done = false;
    let drop = Box::new(move |p: &fatpipe_core::packet::Packet| {
        let hit = !done && p.seq == 300 * mss;
        done |= hit;
        hit
    });
    let mut h = Harness::new(tcp_config(), reno(), rtt, drop);
    h.start(None);
    // Watch cwnd just before and after recovery.
    let mut before = 0;
    while h.sender.tcb.stats.fast_retransmits == 0 {
        before = h.sender.tcb.cc_state.cwnd;
        let t = h.now + PS_PER_MS / 10;
        h.run_until(t);
    }
    h.run_until(h.now + 2 * rtt);
    let prior = h.sender.tcb.prior_cwnd;
    assert!(prior >= before, "cwnd at the loss is at least the last cwnd observed before it");
    assert_eq!(h.sender.tcb.cc_state.ssthresh, prior / 2, "ssthresh = cwnd / 2 at the loss");
    assert_eq!(h.sender.tcb.ca_state, CaState::Open);
    assert!(h.sender.tcb.cc_state.cwnd <= prior / 2 + 1, "deflated to ssthresh after recovery");
    assert_eq!(h.sender.tcb.stats.timeouts, 0);
}

#[test]
fn lost_retransmission_needs_the_timer_then_slow_start_from_one() {
    let rtt = 40 * PS_PER_MS;
    let mss = 1448u64;
    // Drop segment 50 and also its first retransmission.
    let mut count = 0;
    let drop = Box::new(move |p: &fatpipe_core::packet::Packet| {
        let hit = p.seq == 50 * mss && count < 2;
        count += hit as u32;
        hit
    });
    let mut tcp = tcp_config();
    tcp.min_rto_ps = 200 * PS_PER_MS;
    let mut h = Harness::new(tcp, reno(), rtt, drop);
    h.start(Some(400 * mss));
    while h.sender.tcb.stats.timeouts == 0 {
        let t = h.now + PS_PER_MS;
        h.run_until(t);
        assert!(h.now < 10_000 * PS_PER_MS, "timeout never fired");
    }
    assert_eq!(h.sender.tcb.cc_state.cwnd, 1, "loss window of one segment after a timeout");
    assert_eq!(h.sender.tcb.ca_state, CaState::Loss);
    h.run_until(h.now + 5_000 * PS_PER_MS);
    assert_eq!(h.receiver.rcv_nxt, 400 * mss);
    assert_eq!(h.sender.tcb.stats.timeouts, 1);
}

#[test]
fn karn_and_rtt_without_timestamps() {
    let rtt = 70 * PS_PER_MS;
    let mut tcp = tcp_config();
    tcp.timestamps = false;
    tcp.delayed_ack = false;
    let mut h = Harness::new(tcp, reno(), rtt, Box::new(|_| false));
    h.start(Some(100 * 1448));
    h.run_until(2_000 * PS_PER_MS);
    // The path is ideal and ACKs are immediate: every sample is exactly one RTT.
    assert_eq!(h.sender.tcb.rtt.min_rtt, Some(rtt));
    assert_eq!(h.sender.tcb.rtt.srtt, Some(rtt));
}

#[test]
fn after_a_timeout_segments_sacked_before_it_do_not_open_the_window() {
    // A window of 40 segments (the receiver's window allows no more); the first is lost, and
    // so is its retransmission, until the retransmission timer fires (1 s, the initial RTO),
    // while the other 39 arrive and are SACKed. After the timeout cwnd restarts at one
    // segment and the head goes out again. Its ACK covers the 39 segments SACKed long
    // before: they were delivered then, so cwnd grows by the one segment this ACK delivered
    // (Linux tcp_cong_avoid with acked_sacked; RFC 3465 2.3: at most one segment per ACK
    // after a timeout), and two segments leave, not a burst of ssthresh.
    let rtt = 40 * PS_PER_MS;
    let mss = 1448u64;
    let drop = Box::new(move |p: &fatpipe_core::packet::Packet| p.seq == 0 && p.ts_val < 900 * PS_PER_MS);
    let mut tcp = tcp_config();
    tcp.recovery = fatpipe_core::tcp::config::Recovery::Sack;
    tcp.delayed_ack = false;
    tcp.initial_window_segments = 40;
    tcp.rcv_buffer_bytes = 40 * mss;
    // Reno counting acknowledged segments, as Linux's tcp_reno_cong_avoid does.
    let reno = fatpipe_core::cc::CcSpec::Reno(fatpipe_core::cc::reno::RenoConfig {
        byte_counting: true,
        ..fatpipe_core::cc::scenario_defaults::<fatpipe_core::cc::reno::RenoConfig>("reno")
    });
    let mut h = Harness::new(tcp, reno, rtt, drop);
    h.start(None);
    while h.sender.tcb.stats.timeouts == 0 {
        let t = h.now + PS_PER_MS;
        h.run_until(t);
        assert!(h.now < 5_000 * PS_PER_MS, "timeout never fired");
    }
    let timeout_at = h.now;
    assert_eq!(h.sender.tcb.cc_state.cwnd, 1);
    assert_eq!(h.sender.tcb.snd_max, 40 * mss, "nothing new in flight at the timeout");
    assert!(h.sender.tcb.cc_state.ssthresh >= 10, "ssthresh {} leaves room for a jump", h.sender.tcb.cc_state.ssthresh);
    // The head's ACK arrives one RTT after the timeout.
    h.run_until(timeout_at + rtt);
    assert_eq!(h.sender.tcb.snd_una, 40 * mss, "the head's ACK covers everything SACKed");
    assert_eq!(h.sender.tcb.cc_state.cwnd, 2, "one segment newly delivered: cwnd 1 -> 2");
    let after: Vec<u64> = h.sent.iter().filter(|(t, _)| *t >= timeout_at).map(|(_, p)| p.seq / mss).collect();
    assert_eq!(after, vec![0, 40, 41], "the head, then two new segments");
    assert_eq!(h.sender.tcb.stats.timeouts, 1);
}
