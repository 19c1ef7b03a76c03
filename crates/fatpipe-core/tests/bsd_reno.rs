//! BSD's window, packet by packet: 4.3BSD-Reno's congestion avoidance with its eighth of a
//! segment per ACK (profile bsd-4.3-reno), 4.4BSD-Lite2's without it (bsd-4.4), and the
//! ssthresh both set at every expiry of the retransmission timer (`bsd_window`,
//! `ssthresh_every_timeout`). Sources: the CSRG SCCS history of sys/netinet/tcp_input.c (7.23
//! added the eighth on 1990-06-28, 7.25 is 4.3BSD-Reno's, 8.7 removed it on 1994-10-27) and
//! tcp_timer.c 7.18 (TCPT_REXMT).

mod support;
use fatpipe_core::cc::reno::{RenoConfig, RenoVariant};
use fatpipe_core::cc::CcSpec;
use fatpipe_core::packet::Packet;
use fatpipe_core::tcp::config::{Recovery, TcpConfig};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use support::*;

const RTT: Time = 68 * PS_PER_MS;

/// The RFC stack as the BSD profiles set it (timers aside: the fine ones keep the tests short).
fn bsd_tcp() -> TcpConfig {
    let mut t = tcp_config();
    t.recovery = Recovery::Reno;
    t.initial_window_segments = 1;
    t.ssthresh_every_timeout = true;
    t.bsd_window = true;
    t
}

fn bsd_reno(eighth: bool) -> CcSpec {
    CcSpec::Reno(RenoConfig {
        variant: RenoVariant::Bsd,
        eighth,
        ..fatpipe_core::cc::scenario_defaults::<RenoConfig>("reno")
    })
}

/// BSD's recurrence in bytes, written out here on its own: `acks` ACKs in congestion
/// avoidance from cw0 bytes, each adding maxseg * maxseg / cw (+ maxseg / 8 with the eighth).
fn closed_form(cw0: u64, maxseg: u64, acks: u64, eighth: bool) -> u64 {
    (0..acks).fold(cw0, |cw, _| cw + maxseg * maxseg / cw + if eighth { maxseg / 8 } else { 0 })
}

/// A lossless transfer that leaves slow start at once (ssthresh 2 segments), every segment
/// ACKed; returns (ACKs of new data that reached the sender, cwnd in bytes) at `until`.
fn lossless(eighth: bool, until: Time) -> (u64, u64) {
    let mut tcp = bsd_tcp();
    tcp.delayed_ack = false;
    tcp.initial_ssthresh_segments = Some(2);
    let mut h = Harness::new(tcp.clone(), bsd_reno(eighth), RTT, Box::new(|_| false));
    h.start(None);
    h.run_until(until);
    let one_way = RTT / 2;
    let mut highest = 0;
    let mut new_acks = 0;
    for (t, a) in &h.acks {
        if t + one_way <= h.now && a.ack > highest {
            highest = a.ack;
            new_acks += 1;
        }
    }
    let s = &h.sender.tcb.cc_state;
    (new_acks, s.cwnd as u64 * tcp.mss_bytes as u64 + s.cwnd_cnt as u64)
}

#[test]
fn reno_s_eighth_opens_the_window_as_the_closed_form_says() {
    // Slow start while cw <= ssthresh: 1 -> 2 -> 3 segments on the first two ACKs; every
    // later ACK is congestion avoidance.
    let mss = tcp_config().mss_bytes as u64;
    for eighth in [true, false] {
        let (acks, cw) = lossless(eighth, 3 * PS_PER_S);
        assert!(acks > 500, "{acks}");
        assert_eq!(cw, closed_form(3 * mss, mss, acks - 2, eighth), "eighth {eighth}, {acks} ACKs");
    }
    // The eighth is what grows the window: several times the 4.4BSD-Lite2 window by then.
    let (_, with) = lossless(true, 3 * PS_PER_S);
    let (_, without) = lossless(false, 3 * PS_PER_S);
    assert!(with > 4 * without, "{with} vs {without}");
}

#[test]
fn bsd_4_4_grows_at_most_one_segment_per_round_trip_and_reno_more() {
    // cwnd at the end of every round trip (a window of ACKs each): without the eighth each
    // ACK adds maxseg^2 / cw rounded down, so a window of ACKs adds less than one segment.
    let per_round = |eighth: bool| {
        let mut tcp = bsd_tcp();
        tcp.delayed_ack = false;
        tcp.initial_ssthresh_segments = Some(2);
        let mut h = Harness::new(tcp, bsd_reno(eighth), RTT, Box::new(|_| false));
        h.start(None);
        (1..=40)
            .map(|k| {
                h.run_until(k * RTT + RTT / 4);
                h.sender.tcb.cc_state.cwnd
            })
            .collect::<Vec<u32>>()
    };
    let lite2 = per_round(false);
    assert!(lite2.windows(2).all(|w| w[1] - w[0] <= 1), "{lite2:?}");
    assert!(lite2[39] > lite2[3], "{lite2:?}: it grows");
    let reno = per_round(true);
    let most = reno.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert!(most > 5, "{reno:?}: about W / 8 per round trip");
}

/// ssthresh at the first fast retransmit and after each of the first `timeouts` timeouts,
/// with cwnd and the peer's window just before each (the window BSD halves).
fn through_timeouts(tcp: TcpConfig, timeouts: u64) -> Vec<(u32, u32, u64)> {
    // Segment 150 is lost three times: first send, fast retransmit, the first timeout's
    // resend. The first timeout comes during fast recovery (Reno without NewReno sends
    // nothing new once the inflation is used up), the second after a back-off, with cwnd 1.
    let mss = tcp.mss_bytes as u64;
    let mut times = 0;
    let drop = Box::new(move |p: &Packet| {
        p.seq == 150 * mss && {
            times += 1;
            times <= 3
        }
    });
    let mut h = Harness::new(tcp, bsd_reno(true), RTT, drop);
    h.start(Some(2000 * mss));
    let mut seen = Vec::new();
    let (mut cwnd_before, mut peer_before) = (0, 0);
    while (seen.len() as u64) < timeouts + 1 {
        h.run_until(h.now + PS_PER_MS / 10);
        assert!(h.now < 120 * PS_PER_S, "{seen:?}");
        let stats = &h.sender.tcb.stats;
        let events = stats.fast_retransmits.min(1) + stats.timeouts;
        if events > seen.len() as u64 {
            // The fast retransmit and a timeout outside Loss record the window they halved
            // as prior_cwnd; a back-to-back timeout comes after a stall, with the window of
            // the step before.
            let before = if stats.timeouts > 1 { cwnd_before } else { h.sender.tcb.prior_cwnd };
            seen.push((h.sender.tcb.cc_state.ssthresh, before, peer_before));
        }
        cwnd_before = h.sender.tcb.cc_state.cwnd;
        let arrived = h.acks.iter().rev().find(|(t, _)| t + RTT / 2 <= h.now);
        peer_before = arrived.map_or(u64::MAX, |(_, a)| a.window_bytes as u64);
    }
    seen
}

/// BSD's rule: max(2, min(snd_wnd, snd_cwnd) / 2 / maxseg) segments.
fn bsd_rule(cwnd: u32, peer_bytes: u64, mss: u64) -> u32 {
    ((cwnd as u64).min(peer_bytes / mss) / 2).max(2) as u32
}

#[test]
fn every_expiry_of_the_retransmission_timer_halves_the_window_as_it_stands() {
    let mss = tcp_config().mss_bytes as u64;
    let bsd = through_timeouts(bsd_tcp(), 2);
    eprintln!("(ssthresh, cwnd before, peer's window before): {bsd:?}");
    let (ss0, ss1, ss2) = (bsd[0].0, bsd[1].0, bsd[2].0);
    // The fast retransmit halves the window.
    assert_eq!(ss0, bsd_rule(bsd[0].1, bsd[0].2, mss), "{bsd:?}");
    // The timeout in recovery halves the inflated window (ssthresh + 3 + a duplicate ACK
    // per segment that left): more than the fast retransmit's ssthresh, which RFC 5681
    // would keep and ns-2 would halve again.
    assert!(bsd[1].1 > ss0 + 3, "{bsd:?}: the window is inflated");
    assert_eq!(ss1, bsd_rule(bsd[1].1, bsd[1].2, mss), "{bsd:?}");
    assert!(ss1 > ss0, "{bsd:?}");
    // Back to back: the backed-off timer expires with cwnd 1, ssthresh falls to 2.
    assert_eq!(bsd[2].1, 1, "{bsd:?}");
    assert_eq!(ss2, 2, "{bsd:?}");

    // Without the rule (RFC 5681: only a timeout that starts a congestion event lowers it).
    let mut rfc = bsd_tcp();
    rfc.ssthresh_every_timeout = false;
    let rfc = through_timeouts(rfc, 2);
    assert_eq!((rfc[1].0, rfc[2].0), (rfc[0].0, rfc[0].0), "{rfc:?}");
    // Without BSD's window (ns-2's cwnd_ without the inflation): half of ssthresh.
    let mut ns2 = bsd_tcp();
    ns2.bsd_window = false;
    let ns2 = through_timeouts(ns2, 1);
    assert_eq!(ns2[1].0, (ns2[0].0 / 2).max(2), "{ns2:?}");
}

#[test]
fn the_peer_s_window_bounds_the_window_halved() {
    // A receive buffer of 100 segments: the inflated window at the timeout is larger, BSD
    // halves min(snd_wnd, snd_cwnd).
    let mss = tcp_config().mss_bytes as u64;
    let mut tcp = bsd_tcp();
    tcp.rcv_buffer_bytes = 100 * mss;
    let seen = through_timeouts(tcp, 1);
    eprintln!("{seen:?}");
    assert!(seen[1].1 as u64 > seen[1].2 / mss, "{seen:?}: the inflated window exceeds the peer's");
    assert_eq!(seen[1].0, bsd_rule(seen[1].1, seen[1].2, mss), "{seen:?}");
    assert!((seen[1].0 as u64) <= seen[1].2 / mss / 2, "{seen:?}");
}
