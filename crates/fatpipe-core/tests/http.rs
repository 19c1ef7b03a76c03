//! HTTP/1.0 and persistent HTTP/1.1 on document 000's path (issue 4, acceptance 6): the
//! handshake costs HTTP/1.0 at least one RTT per object; a paced server's response takes
//! about size / burst_size periods; losses of SYNs and requests are survived.

mod support;
use fatpipe_core::cc::{nocc::NoccConfig, CcSpec};
use fatpipe_core::net::impairment::{outage::OutageConfig, ImpairmentSpec};
use fatpipe_core::source::http::{HttpConfig, RequestRecord, ServerPacing};
use fatpipe_core::source::SourceSpec;
use fatpipe_core::tcp::config::Recovery;
use fatpipe_core::time::{transmission_time, Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use support::*;

const RTT: Time = 67 * PS_PER_MS;
const RATE_BPS: u64 = 622_000_000;
/// Document 000's file sizes (KB = 1000 bytes).
const OBJECTS: [u64; 6] = [2_000, 7_000, 10_000, 30_000, 100_000, 422_000];

struct Run {
    /// An outage on the client-to-server bottleneck (ps, half-open): it loses SYNs, requests.
    reverse_outage: Option<(Time, Time)>,
    persistent: bool,
    handshake: bool,
    requests: u64,
    pacing: Option<ServerPacing>,
    nocc: bool,
}

impl Run {
    fn new(persistent: bool) -> Run {
        Run {
            reverse_outage: None,
            persistent,
            handshake: true,
            requests: OBJECTS.len() as u64,
            pacing: None,
            nocc: false,
        }
    }

    /// Document 000's hosts: initial window 2, SACK, timestamps, socket buffers of one BDP.
    fn sim(&self) -> Simulation {
        let mut tcp = tcp_config();
        tcp.initial_window_segments = 2;
        tcp.recovery = Recovery::Sack;
        tcp.rcv_buffer_bytes = 5_209_300;
        tcp.snd_buffer_bytes = 5_209_300;
        tcp.handshake = self.handshake;
        let mut s = dumbbell(RATE_BPS, RTT, 100_000, 60 * PS_PER_S, tcp);
        s.flows[0].source = SourceSpec::Http(HttpConfig {
            start_ps: 0,
            stop_ps: None,
            persistent: self.persistent,
            objects_bytes: OBJECTS.to_vec(),
            requests: self.requests,
            request_bytes: 120,
            server_pacing: self.pacing,
        });
        if let Some(w) = self.reverse_outage {
            let rev = s.links.iter_mut().find(|l| l.name == "bottleneck_rev").unwrap();
            rev.impairments.push(ImpairmentSpec::Outage(OutageConfig { windows_ps: vec![w] }));
        }
        if self.nocc {
            s.flows[0].cc = Some(CcSpec::Nocc(NoccConfig { cwnd_segments: None }));
        }
        let mut sim = Simulation::new(s).unwrap();
        sim.run();
        sim
    }

    fn records(&self) -> Vec<RequestRecord> {
        let sim = self.sim();
        let http = sim.flows[0].http.as_ref().unwrap();
        assert!(http.is_done(), "{} of {} requests", http.records.len(), self.requests);
        http.records.clone()
    }
}

#[test]
fn every_http10_object_costs_at_least_one_rtt_more_than_on_a_persistent_connection() {
    let http10 = Run::new(false).records();
    // Persistent, on a connection opened beforehand: every object compares.
    let warm = Run { handshake: false, ..Run::new(true) }.records();
    // Persistent, opening its connection with the first request.
    let cold = Run::new(true).records();
    for i in 0..OBJECTS.len() {
        let (a, b, c) = (&http10[i], &warm[i], &cold[i]);
        assert_eq!((a.size_bytes, b.size_bytes), (OBJECTS[i], OBJECTS[i]));
        assert!(
            a.response_time_ps() >= b.response_time_ps() + RTT,
            "object {i}: HTTP/1.0 {} ms vs persistent {} ms",
            a.response_time_ps() as f64 / 1e9,
            b.response_time_ps() as f64 / 1e9
        );
        if i > 0 {
            assert!(a.response_time_ps() >= c.response_time_ps() + RTT, "object {i}");
        }
        assert_eq!((a.connection, b.connection, c.connection), (i as u64, 0, 0));
    }
    // The first request opens a connection either way: the same setup, the same window.
    assert_eq!(http10[0].response_time_ps(), cold[0].response_time_ps());
    // HTTP/1.0's request leaves one handshake RTT after its connect(); the persistent one at once.
    for r in &http10 {
        assert!(r.request_sent_ps - r.start_ps > RTT && r.request_sent_ps - r.start_ps < RTT + PS_PER_MS / 10);
    }
    for r in &warm {
        assert_eq!(r.request_sent_ps, r.start_ps);
    }
    // Each request starts when the previous response's last byte arrives.
    for w in http10.windows(2) {
        assert_eq!(w[1].start_ps, w[0].last_byte_ps);
    }
}

#[test]
fn a_small_object_takes_two_rtts_on_http10_and_one_on_a_warm_connection() {
    // 2 KB = two segments, within the initial window: connection setup (1 RTT) + request and
    // response (1 RTT) + serialization, which at 622 Mb/s is a few microseconds.
    let http10 = Run::new(false).records();
    let warm = Run { handshake: false, ..Run::new(true) }.records();
    let (a, b) = (http10[0].response_time_ps(), warm[0].response_time_ps());
    assert!(a > 2 * RTT && a < 2 * RTT + PS_PER_MS / 10, "{a}");
    assert!(b > RTT && b < RTT + PS_PER_MS / 10, "{b}");
}

#[test]
fn persistent_connections_keep_the_window_and_http10_restarts_it() {
    // With the window carried over, the persistent connection fetches the later objects in
    // fewer round trips than HTTP/1.0's slow start from two segments.
    let sim10 = Run::new(false).sim();
    let sim11 = Run::new(true).sim();
    let (f10, f11) = (&sim10.flows[0], &sim11.flows[0]);
    assert_eq!(f10.http.as_ref().unwrap().connections, 6);
    assert_eq!(f11.http.as_ref().unwrap().connections, 1);
    assert!(f11.sender.tcb.cc_state.cwnd > f10.sender.tcb.cc_state.cwnd);
    // Every byte delivered, counted over all connections.
    assert_eq!(f10.delivered_bytes(), OBJECTS.iter().sum::<u64>());
    assert_eq!(f11.delivered_bytes(), OBJECTS.iter().sum::<u64>());
    let last = |s: &Simulation| s.flows[0].http.as_ref().unwrap().records.last().unwrap().last_byte_ps;
    assert!(last(&sim10) > last(&sim11) + 5 * RTT);
}

#[test]
fn a_paced_server_takes_about_size_over_burst_size_periods() {
    // NOCC, so the window never holds a burst back (document 000's NOCC + pacing): the
    // response ends RTT after the request plus (bursts - 1) periods plus the last burst's
    // serialization on the bottleneck.
    let burst = 32_000;
    let period = 10 * PS_PER_MS;
    let pacing = Some(ServerPacing { burst_bytes: burst, period_ps: period });
    let paced = Run { pacing, nocc: true, handshake: false, ..Run::new(true) };
    let sim = paced.sim();
    let flow = &sim.flows[0];
    let records = &flow.http.as_ref().unwrap().records;
    let mut bursts = 0;
    for r in records {
        let n = r.size_bytes.div_ceil(burst);
        bursts += n;
        let last_burst = r.size_bytes - (n - 1) * burst;
        let last_burst_wire = last_burst + last_burst.div_ceil(1448) * (52 + 38);
        let low = RTT + (n - 1) * period + transmission_time(last_burst_wire, RATE_BPS);
        let t = r.response_time_ps();
        assert!(t >= low && t < low + PS_PER_MS / 2, "{} bytes: {t} vs {low}", r.size_bytes);
    }
    assert_eq!(flow.bursts.bursts, bursts);
    assert_eq!(flow.bursts.failed_cycles, 0);
    // Without pacing the 422 KB object takes one RTT plus its serialization.
    let unpaced = Run { nocc: true, handshake: false, ..Run::new(true) }.records();
    let big = unpaced.last().unwrap();
    assert!(big.response_time_ps() < RTT + transmission_time(422_000 * 1538 / 1448 + 1538, RATE_BPS) + PS_PER_MS / 2);
    // Paced: 13 periods after the first burst instead of 5.8 ms of serialization.
    assert!(records.last().unwrap().response_time_ps() > big.response_time_ps() + 12 * period);
}

#[test]
fn requests_cycle_through_the_objects() {
    let records = Run { requests: 14, ..Run::new(true) }.records();
    let objects: Vec<u32> = records.iter().map(|r| r.object).collect();
    assert_eq!(objects, vec![0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1]);
    assert_eq!(records[13].size_bytes, 7_000);
}

#[test]
fn a_lost_request_is_sent_again_after_the_clients_rto() {
    // The first request crosses the reverse bottleneck at 67 ms (after the handshake).
    let run = Run { reverse_outage: Some((60 * PS_PER_MS, 80 * PS_PER_MS)), ..Run::new(false) };
    let sim = run.sim();
    let http = sim.flows[0].http.as_ref().unwrap();
    assert!(http.is_done());
    assert_eq!(http.request_retransmissions, 1);
    let r = &http.records[0];
    // The client's RTO from the handshake's sample: SRTT + 4 RTTVAR = 3 RTT = 201 ms.
    let resent = r.request_sent_ps + 3 * RTT;
    assert!(r.first_byte_ps > resent + RTT && r.first_byte_ps < resent + RTT + PS_PER_MS / 10, "{}", r.first_byte_ps);
}

#[test]
fn a_lost_syn_costs_http10_the_initial_rto_of_one_second() {
    let run = Run { reverse_outage: Some((0, 10 * PS_PER_MS)), ..Run::new(false) };
    let records = run.records();
    let lost = records[0].response_time_ps();
    let clean = Run::new(false).records()[0].response_time_ps();
    assert_eq!(lost, clean + PS_PER_S);
    assert_eq!(run.sim().flows[0].handshake_retransmits(), (1, 0));
}
