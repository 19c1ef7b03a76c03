//! An algorithm decided outside the core (`cc/external.rs`, what fatpipe-py attaches for a
//! Python class), driven here by Rust controllers: the per-ACK hooks reach the controller
//! exactly where the core's own algorithms are called (a controller delegating to the core's
//! Reno gives Reno's run), reports add up the interval's ACKs, and a failing controller stops
//! the run at the event it failed in.

mod support;

use fatpipe_core::cc::external::{
    Action, Attached, Controller, ControllerFactory, ExternalConfig, ExternalMode, Halt, Report, ReportEvery,
};
use fatpipe_core::cc::reno::{Reno, RenoConfig};
use fatpipe_core::cc::{AckSample, CaState, CcSpec, CcState, CongestionControl, CwndEvent};
use fatpipe_core::net::queue::QueueSpec;
use fatpipe_core::tcp::config::TcpConfig;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_core::Simulation;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use support::*;

const RATE: u64 = 100_000_000;
const RTT: Time = 40 * PS_PER_MS;

fn external(mode: ExternalMode, report_every: ReportEvery, factory: Arc<dyn ControllerFactory>) -> CcSpec {
    CcSpec::Python(ExternalConfig {
        class: "test:Controller".into(),
        module_dir: None,
        parameters: Default::default(),
        mode,
        report_every,
        factory: Attached(Some(factory)),
    })
}

fn run_with(cc: CcSpec, duration: Time) -> Simulation {
    let mut s = dumbbell(RATE, RTT, bdp_packets(RATE, RTT, 1538), duration, tcp_config());
    s.flows[0].cc = Some(cc);
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    sim
}

/// Hands every hook to the core's Reno.
struct Delegate(Reno);

impl Controller for Delegate {
    fn ssthresh(&mut self, s: &CcState) -> Result<u32, Halt> {
        Ok(self.0.ssthresh(s))
    }
    fn cong_avoid(&mut self, s: &mut CcState, a: &AckSample) -> Result<(), Halt> {
        self.0.cong_avoid(s, a);
        Ok(())
    }
    fn set_state(&mut self, s: &mut CcState, n: CaState) -> Result<(), Halt> {
        self.0.set_state(s, n);
        Ok(())
    }
    fn cwnd_event(&mut self, s: &mut CcState, e: CwndEvent) -> Result<(), Halt> {
        self.0.cwnd_event(s, e);
        Ok(())
    }
    fn pkts_acked(&mut self, s: &mut CcState, a: &AckSample) -> Result<(), Halt> {
        self.0.pkts_acked(s, a);
        Ok(())
    }
    fn undo_cwnd(&mut self, s: &CcState, p: u32) -> Result<u32, Halt> {
        Ok(self.0.undo_cwnd(s, p))
    }
    fn has_cong_control(&self) -> bool {
        false
    }
    fn cong_control(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        unreachable!("a cong_avoid algorithm")
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn report(&mut self, _s: &CcState, _r: &Report) -> Result<Action, Halt> {
        unreachable!("per-ACK mode")
    }
}

struct Delegates;

impl ControllerFactory for Delegates {
    fn create(&self) -> Box<dyn Controller> {
        Box::new(Delegate(Reno::new(fatpipe_core::cc::scenario_defaults::<RenoConfig>("reno"))))
    }
}

#[test]
fn per_ack_hooks_reach_the_controller_where_the_core_calls_its_own() {
    let duration = 20 * PS_PER_S;
    let native = run_with(reno(), duration);
    let outside = run_with(external(ExternalMode::Ack, ReportEvery::Rtt, Arc::new(Delegates)), duration);
    let (a, b) = (&native.flows[0].sender.tcb.stats, &outside.flows[0].sender.tcb.stats);
    assert!(a.fast_retransmits >= 1 && a.segments_retransmitted > 0, "a recovery, so its hooks ran too: {a:?}");
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    assert_eq!(native.flows[0].delivered_bytes(), outside.flows[0].delivered_bytes());
}

/// Holds the window at `cwnd`, records every report, and fails at report `fail_at`.
struct Fixed {
    cwnd: u32,
    reports: Arc<Mutex<Vec<Report>>>,
    fail_at: Option<usize>,
    failed: Arc<AtomicBool>,
}

impl Controller for Fixed {
    fn ssthresh(&mut self, _s: &CcState) -> Result<u32, Halt> {
        unreachable!("report mode")
    }
    fn cong_avoid(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        unreachable!("report mode")
    }
    fn set_state(&mut self, _s: &mut CcState, _n: CaState) -> Result<(), Halt> {
        unreachable!("report mode")
    }
    fn cwnd_event(&mut self, _s: &mut CcState, _e: CwndEvent) -> Result<(), Halt> {
        unreachable!("report mode")
    }
    fn pkts_acked(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        unreachable!("report mode")
    }
    fn undo_cwnd(&mut self, _s: &CcState, _p: u32) -> Result<u32, Halt> {
        unreachable!("report mode")
    }
    fn has_cong_control(&self) -> bool {
        false
    }
    fn cong_control(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        unreachable!("report mode")
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn report(&mut self, _s: &CcState, r: &Report) -> Result<Action, Halt> {
        let mut reports = self.reports.lock().unwrap();
        reports.push(*r);
        if Some(reports.len()) == self.fail_at {
            self.failed.store(true, Ordering::Relaxed);
            return Err(Halt);
        }
        Ok(Action { cwnd: Some(self.cwnd), pacing_rate_bps: None })
    }
}

struct FixedFactory(Arc<Mutex<Vec<Report>>>, Option<usize>, Arc<AtomicBool>);

impl ControllerFactory for FixedFactory {
    fn create(&self) -> Box<dyn Controller> {
        Box::new(Fixed { cwnd: 20, reports: self.0.clone(), fail_at: self.1, failed: self.2.clone() })
    }
}

#[test]
fn reports_add_up_their_interval_and_the_window_they_set_holds() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let factory = Arc::new(FixedFactory(reports.clone(), None, Arc::new(AtomicBool::new(false))));
    let every = 100 * PS_PER_MS;
    let sim = run_with(external(ExternalMode::Report, ReportEvery::TimePs(every), factory), 10 * PS_PER_S);
    let reports = reports.lock().unwrap();
    // A report ends at the first ACK at least 100 ms after it began. The window of 20
    // segments leaves in a burst each round trip and its ACKs come back within a few
    // milliseconds, so that ACK comes less than one RTT later: 10 s / (100 to 140 ms).
    assert!((70..=100).contains(&reports.len()), "{} reports", reports.len());
    for (r, next) in reports.iter().zip(reports.iter().skip(1)) {
        assert!(r.end_ps - r.start_ps >= every && r.end_ps - r.start_ps < every + RTT, "{r:?}");
        assert_eq!(next.start_ps, r.end_ps);
    }
    let delivered: u64 = reports.iter().map(|r| r.delivered_bytes).sum();
    assert!(delivered <= sim.flows[0].delivered_bytes() + 20 * 1448);
    // After the first reports, a window of 20 segments: 20 x 1448 B per 40 ms round trip
    // (the bottleneck's queue holds at most the burst, 2.4 ms at 100 Mb/s).
    let steady = &reports[2..];
    for r in steady {
        assert_eq!(r.cwnd, 20);
        assert_eq!(r.lost_bytes, 0);
        assert!(r.min_rtt_ps.unwrap() >= RTT && r.mean_rtt_ps.unwrap() < RTT + 3 * PS_PER_MS, "{r:?}");
    }
    let bytes: u64 = steady.iter().map(|r| r.delivered_bytes).sum();
    let seconds = (steady.last().unwrap().end_ps - steady[0].start_ps) as f64 / PS_PER_S as f64;
    let expected = 20.0 * 1448.0 * 8.0 / (RTT as f64 / PS_PER_S as f64);
    assert!(
        (bytes as f64 * 8.0 / seconds / expected - 1.0).abs() < 0.02,
        "{} vs {expected}",
        bytes as f64 * 8.0 / seconds
    );
}

#[test]
fn a_failing_controller_stops_the_run_at_the_event_it_failed_in() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let failed = Arc::new(AtomicBool::new(false));
    let factory = Arc::new(FixedFactory(reports.clone(), Some(5), failed.clone()));
    let mut s = dumbbell(RATE, RTT, 1000, 10 * PS_PER_S, tcp_config());
    s.flows[0].cc = Some(external(ExternalMode::Report, ReportEvery::TimePs(100 * PS_PER_MS), factory));
    let mut sim = Simulation::new(s).unwrap();
    assert!(sim.run_until_halted(10 * PS_PER_S, &failed));
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 5);
    assert_eq!(sim.now(), reports[4].end_ps, "stopped after the ACK that failed, nothing later");
}

#[test]
fn a_scenario_without_its_controller_is_refused_by_name() {
    let mut s = dumbbell(RATE, RTT, 1000, PS_PER_S, tcp_config());
    s.flows[0].cc = Some(CcSpec::Python(ExternalConfig {
        class: "mine:Cc".into(),
        module_dir: None,
        parameters: Default::default(),
        mode: ExternalMode::Ack,
        report_every: ReportEvery::Rtt,
        factory: Attached(None),
    }));
    let err = Simulation::new(s).err().expect("refused");
    assert!(err.starts_with("flows[0].cc.python: mine:Cc: no controller attached"), "{err}");
}

#[test]
fn the_first_report_starts_when_the_flow_first_sends() {
    let reports = Arc::new(Mutex::new(Vec::new()));
    let factory = Arc::new(FixedFactory(reports.clone(), None, Arc::new(AtomicBool::new(false))));
    let mut s = dumbbell(RATE, RTT, 1000, 3 * PS_PER_S, tcp_config());
    s.flows[0].cc = Some(external(ExternalMode::Report, ReportEvery::TimePs(100 * PS_PER_MS), factory));
    let start = 2 * PS_PER_S;
    if let fatpipe_core::source::SourceSpec::Bulk(b) = &mut s.flows[0].source {
        b.start_ps = start;
    }
    Simulation::new(s).unwrap().run();
    let first = reports.lock().unwrap()[0];
    // Built at 0, sending from 2 s: the first interval is the first 100 ms of sending, not 2.1 s.
    assert!(first.start_ps >= start && first.start_ps < start + PS_PER_MS, "{first:?}");
    assert!(first.end_ps - first.start_ps < 100 * PS_PER_MS + RTT, "{first:?}");
}

#[test]
fn reports_count_the_segments_the_acks_report_ce_marked() {
    // A window of 20 segments through a 5 Mb/s x 40 ms path (its BDP: 17 segments) whose
    // drop-tail queue marks an ECN-capable arrival finding 2 or more packets waiting: the
    // window stands 3 segments in the queue, so most segments are marked. With Accurate ECN the receiver's counts
    // are exact, so the reports' sum is the receiver's count less what the last, unfinished
    // interval acknowledged (100 ms at 5 Mb/s: 43 segments) and what was still
    // unacknowledged at the end (at most one window, 20).
    let reports = Arc::new(Mutex::new(Vec::new()));
    let factory = Arc::new(FixedFactory(reports.clone(), None, Arc::new(AtomicBool::new(false))));
    let tcp = TcpConfig { ecn: true, accecn: true, ..linux_host_tcp(None, 10, None) };
    let mut s = dumbbell(5_000_000, RTT, 1000, 5 * PS_PER_S, tcp);
    for link in &mut s.links {
        if let QueueSpec::Droptail(q) = &mut link.queue {
            q.mark_threshold_packets = Some(2);
        }
    }
    s.flows[0].cc = Some(external(ExternalMode::Report, ReportEvery::TimePs(100 * PS_PER_MS), factory));
    let mut sim = Simulation::new(s).unwrap();
    sim.run();
    let marked: u64 = reports.lock().unwrap().iter().map(|r| r.marked_segments).sum();
    let received = sim.flows[0].receiver.stats.ce_segments;
    assert!(received > 500, "the queue marked {received}");
    assert!(marked <= received && marked + 43 + 20 >= received, "reports {marked}, receiver {received}");
}
