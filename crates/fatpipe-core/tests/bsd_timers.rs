//! 4.4BSD's coarse timers in the RFC stack (`tcp/bsd_timers.rs`): the retransmission timer
//! expires on a tick of the 500 ms slow timer, and delayed ACKs go out on the ticks of the
//! 200 ms fast timer.

mod support;
use fatpipe_core::packet::Packet;
use fatpipe_core::tcp::config::{Recovery, RtoEstimator, TcpConfig};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use support::*;

const SLOW: Time = 500 * PS_PER_MS;
const FAST: Time = 200 * PS_PER_MS;

fn bsd() -> TcpConfig {
    let mut t = tcp_config();
    t.recovery = Recovery::Reno;
    t.initial_window_segments = 1;
    t.rto_estimator = RtoEstimator::Bsd;
    t.slow_timer_ps = Some(SLOW);
    t.fast_timer_ps = Some(FAST);
    t.min_rto_ps = PS_PER_S;
    t.max_rto_ps = 64 * PS_PER_S;
    t.initial_rto_ps = 6 * PS_PER_S;
    t
}

#[test]
fn a_delayed_ack_waits_for_the_fast_timers_tick() {
    // One segment, one way 34 ms: it arrives at 34 ms and its ACK leaves on the fast
    // timer's first tick, at 200 ms, not delayed_ack_timeout (40 ms) after it.
    let mut h = Harness::new(bsd(), reno(), 68 * PS_PER_MS, Box::new(|_| false));
    h.start(Some(1448));
    h.run_until(PS_PER_S);
    assert_eq!(h.acks.len(), 1);
    assert_eq!(h.acks[0].0, FAST);
    // Without the fast timer: 34 + 40 ms.
    let mut t = bsd();
    t.fast_timer_ps = None;
    let mut h = Harness::new(t, reno(), 68 * PS_PER_MS, Box::new(|_| false));
    h.start(Some(1448));
    h.run_until(PS_PER_S);
    assert_eq!(h.acks[0].0, 74 * PS_PER_MS);
}

#[test]
fn the_retransmission_timer_expires_on_a_slow_tick_and_backs_off_in_ticks() {
    // Every segment after the first ten is lost, retransmissions too: only the timer
    // sends them, and it runs out on ticks.
    let mut sent = 0;
    let drop = Box::new(move |_: &Packet| {
        sent += 1;
        sent > 10
    });
    let mut h = Harness::new(bsd(), reno(), 68 * PS_PER_MS, drop);
    h.start(None);
    h.run_until(60 * PS_PER_S);
    let rtx: Vec<Time> = h.sent.iter().filter(|(_, p)| p.retransmission).map(|(t, _)| *t).collect();
    assert!(rtx.len() >= 3, "{rtx:?}");
    assert!(h.sender.tcb.stats.timeouts >= 1);
    assert_eq!(h.sender.tcb.stats.timeouts as usize, rtx.len(), "every retransmission is a timeout's");
    for t in &rtx {
        assert_eq!(t % SLOW, 0, "a retransmission at {} ms is not on a tick", t / PS_PER_MS);
    }
    // Then the timeout doubles (tcp_backoff[]), in whole ticks; its base here is a few ticks
    // (srtt + 4 rttvar in ticks: delayed ACKs wait for the 200 ms fast timer, so some RTT
    // samples span a slow tick), far above the path's 68 ms.
    let gaps: Vec<Time> = rtx.windows(2).map(|w| (w[1] - w[0]) / SLOW).collect();
    assert!(gaps[0] >= 2 * 3, "retransmissions at {rtx:?}");
    assert_eq!(gaps[..3], [gaps[0], 2 * gaps[0], 4 * gaps[0]], "retransmissions at {rtx:?}");
}

#[test]
fn exact_timers_are_unchanged_without_the_slow_timer() {
    // The same losses with RFC 6298's exact timer: the retransmission is not tick-aligned
    // and comes at min_rto (1 s) after the last restart.
    let mut t = bsd();
    t.rto_estimator = RtoEstimator::Rfc6298;
    t.slow_timer_ps = None;
    let mut sent = 0;
    let drop = Box::new(move |_: &Packet| {
        sent += 1;
        sent > 10
    });
    let mut h = Harness::new(t, reno(), 68 * PS_PER_MS, drop);
    h.start(None);
    h.run_until(5 * PS_PER_S);
    let first = h.sent.iter().find(|(_, p)| p.retransmission).map(|(t, _)| *t).unwrap();
    assert_ne!(first % SLOW, 0);
}
