//! A congestion control decided outside the core: a class the user wrote in Python, which
//! fatpipe-py attaches (the core itself stays pure Rust and knows only the traits below). A
//! flow names it `cc = { python = "module:Class" }` (docs/python-cc.md).
//!
//! Two modes (`ExternalConfig::mode`):
//! - `ack`: every hook of the [`CongestionControl`] trait is handed to the [`Controller`] as
//!   the core calls it (after Linux's `tcp_congestion_ops`), with the window state to read
//!   and set. Exact, and as costly as the controller's language makes a call per ACK.
//! - `report`: as CCP does (Narayan et al., SIGCOMM 2018), the core aggregates the ACKs of an
//!   interval (every smoothed RTT, every N ACKs or a set time, `ReportEvery`) into a
//!   [`Report`] and calls the controller once per report; it applies the cwnd and pacing
//!   rate the controller returns ([`Action`]). The interval ends at the first ACK past its
//!   end, as CCP's datapath programs fire on ACKs. The algorithm controls cwnd itself
//!   (`has_cong_control`, as BBR): the stacks leave cwnd alone in recovery, and give it the
//!   ACK's delivery and loss counts.
//!
//! A controller that fails (an exception in the user's code, a window that is not a
//! window) returns [`Halt`]: from then on this algorithm changes nothing, and the binding,
//! which runs the simulation with [`crate::Simulation::run_until_halted`], stops the run
//! after the event under way and reports the failure with the simulated time.

use super::{AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The controller failed; the details are the binding's to report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Halt;

/// Which calls the controller gets (`ExternalConfig::mode`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ExternalMode {
    /// Every hook, on every ACK.
    Ack,
    /// One call per report interval.
    Report,
}

/// When a report interval ends (at the first ACK that reaches it).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ReportEvery {
    /// One smoothed RTT after it began (the first interval waits for an RTT sample).
    Rtt,
    /// After this many ACKs of data.
    Acks(u32),
    /// After this long, picoseconds.
    TimePs(Time),
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExternalConfig {
    /// The class, "module:Class" (what the binding imports; for messages here).
    pub class: String,
    /// The directory the module was found in when it stood beside the scenario file (so a
    /// run in another process imports it from there too); None: from the Python path.
    pub module_dir: Option<String>,
    /// Keyword arguments of the class's constructor, as the scenario wrote them.
    pub parameters: Map<String, Value>,
    pub mode: ExternalMode,
    /// `report` mode: when a report is due.
    pub report_every: ReportEvery,
    /// What makes the controllers, attached by the binding before the simulation is built.
    #[serde(skip)]
    #[schemars(skip)]
    pub factory: Attached,
}

/// The binding's factory, once attached (`ExternalConfig::factory`).
#[derive(Clone, Default)]
pub struct Attached(pub Option<Arc<dyn ControllerFactory>>);

impl std::fmt::Debug for Attached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Attached(Some)" } else { "Attached(None)" })
    }
}

impl ExternalConfig {
    pub fn validate(&self) -> Result<(), String> {
        match self.report_every {
            ReportEvery::Acks(0) => Err("report_every: 0 ACKs is not allowed: at least 1".into()),
            ReportEvery::TimePs(0) => Err("report_every: 0 s is not allowed: a positive duration".into()),
            _ => Ok(()),
        }
    }

    /// Checked when the simulation is built: a scenario read without the binding has no
    /// controller to call.
    pub fn check_attached(&self) -> Result<(), String> {
        match self.factory.0 {
            Some(_) => Ok(()),
            None => Err(format!(
                "python: {}: no controller attached; a Python congestion control runs through the Python \
                 package (fatpipe run, fatpipe.run), which imports the class",
                self.class
            )),
        }
    }
}

/// Makes the controllers of one flow: one per connection (a flow that repeats its
/// transfer, or HTTP/1.0, opens several).
pub trait ControllerFactory: Send + Sync {
    fn create(&self) -> Box<dyn Controller>;
}

/// What the controller returns from a report: the window (segments, at least 1) and the
/// pacing rate (bits per second, at least 1) to apply; None leaves either as it is.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Action {
    pub cwnd: Option<u32>,
    pub pacing_rate_bps: Option<u64>,
}

/// One report interval, as the controller sees it in `report` mode.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Report {
    pub start_ps: Time,
    pub end_ps: Time,
    /// ACKs of data in the interval.
    pub acks: u32,
    /// Bytes newly delivered (cumulatively ACKed or SACKed, each byte once).
    pub delivered_bytes: u64,
    /// Bytes the ACKs newly marked lost (Linux `rs->losses`; losses found by a
    /// retransmission timeout are not reported by any ACK).
    pub lost_bytes: u64,
    /// Segments the interval's ACKs reported CE-marked (Linux `rs->ece_delta`: classic ECE
    /// or Accurate ECN's counters, as the Linux stack counts them; `AckSample::ce_segments`).
    pub marked_segments: u64,
    /// New data sent (snd_nxt's advance), bytes.
    pub sent_bytes: u64,
    /// The interval's RTT samples: smallest and mean, picoseconds; None without a sample.
    pub min_rtt_ps: Option<Time>,
    pub mean_rtt_ps: Option<Time>,
    pub rtt_samples: u32,
    /// sent_bytes and delivered_bytes over the interval's length, bits per second.
    pub sending_rate_bps: f64,
    pub delivery_rate_bps: f64,
    /// The connection's state at the end of the interval.
    pub cwnd: u32,
    pub ssthresh: u32,
    pub in_flight_segments: u32,
    pub mss_bytes: u32,
    pub srtt_ps: Option<Time>,
    /// The smallest RTT the connection has seen.
    pub min_rtt_ever_ps: Option<Time>,
    pub pacing_rate_bps: Option<u64>,
    pub in_recovery: bool,
}

/// The user's controller, as the binding implements it. `ack` mode calls the hooks (those
/// the class lacks are the binding's to skip); `report` mode calls only `report`. Every hook
/// returns [`Halt`] when it failed.
pub trait Controller: Send + Sync {
    fn init(&mut self, _s: &mut CcState) -> Result<(), Halt> {
        Ok(())
    }
    fn ssthresh(&mut self, s: &CcState) -> Result<u32, Halt>;
    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) -> Result<(), Halt>;
    fn set_state(&mut self, s: &mut CcState, new: CaState) -> Result<(), Halt>;
    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) -> Result<(), Halt>;
    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) -> Result<(), Halt>;
    fn undo_cwnd(&mut self, s: &CcState, prior_cwnd: u32) -> Result<u32, Halt>;
    /// Whether the class sets cwnd itself on every ACK (it has `cong_control`).
    fn has_cong_control(&self) -> bool;
    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) -> Result<(), Halt>;
    /// The pacing rate the controller set, bits per second (None: it does not pace).
    fn pacing_rate_bps(&self) -> Option<u64>;
    fn report(&mut self, s: &CcState, r: &Report) -> Result<Action, Halt>;
}

/// The running sums of a report interval.
#[derive(Clone, Copy, Debug, Default)]
struct Interval {
    report: Report,
    start_snd_nxt: u64,
    rtt_sum_ps: u128,
}

/// The algorithm a flow runs: the controller behind the trait.
pub struct External {
    controller: Box<dyn Controller>,
    mode: ExternalMode,
    every: ReportEvery,
    /// The controller failed: from now on nothing changes (the run is being stopped).
    halted: bool,
    interval: Interval,
    /// `report` mode: the pacing rate the last action set.
    pacing_rate_bps: Option<u64>,
    in_recovery: bool,
    /// An ACK has been seen: the first interval starts when the connection first sent, not
    /// when it was built (a flow may start long after).
    acked: bool,
}

/// The algorithm of a new connection of the flow.
pub fn build(cfg: &ExternalConfig) -> Box<dyn CongestionControl> {
    let factory = cfg.factory.0.as_ref().expect("attached: checked when the simulation was built");
    Box::new(External {
        controller: factory.create(),
        mode: cfg.mode,
        every: cfg.report_every,
        halted: false,
        interval: Interval::default(),
        pacing_rate_bps: None,
        in_recovery: false,
        acked: false,
    })
}

impl External {
    /// Runs `hook` unless the controller already failed; a failure stops every later call.
    fn call<T>(&mut self, fallback: T, hook: impl FnOnce(&mut dyn Controller) -> Result<T, Halt>) -> T {
        if self.halted {
            return fallback;
        }
        match hook(self.controller.as_mut()) {
            Ok(v) => v,
            Err(Halt) => {
                self.halted = true;
                fallback
            }
        }
    }

    fn start_interval(&mut self, s: &CcState) {
        self.interval = Interval {
            report: Report { start_ps: s.now, ..Report::default() },
            start_snd_nxt: s.snd_nxt,
            rtt_sum_ps: 0,
        };
    }

    /// `report` mode: adds an ACK to the interval; at its end, asks the controller and applies
    /// what it says.
    fn aggregate(&mut self, s: &mut CcState, ack: &AckSample) {
        let i = &mut self.interval;
        let r = &mut i.report;
        if !self.acked {
            // The first ACK: its segment left an RTT sample ago (else the interval starts now).
            self.acked = true;
            r.start_ps = ack.rtt.map_or(s.now, |rtt| s.now.saturating_sub(rtt)).max(r.start_ps);
        }
        r.acks += 1;
        r.delivered_bytes += ack.delivered_bytes;
        r.lost_bytes += ack.newly_lost_bytes;
        r.marked_segments += u64::from(ack.ce_segments);
        if let Some(rtt) = ack.rtt {
            r.min_rtt_ps = Some(r.min_rtt_ps.map_or(rtt, |m| m.min(rtt)));
            r.rtt_samples += 1;
            i.rtt_sum_ps += rtt as u128;
        }
        let elapsed = s.now - r.start_ps;
        let due = match self.every {
            ReportEvery::Rtt => s.srtt.is_some_and(|srtt| elapsed >= srtt),
            ReportEvery::Acks(n) => r.acks >= n,
            ReportEvery::TimePs(t) => elapsed >= t,
        };
        if !due || self.halted {
            return;
        }
        r.end_ps = s.now;
        r.sent_bytes = s.snd_nxt.saturating_sub(i.start_snd_nxt);
        r.mean_rtt_ps = (r.rtt_samples > 0).then(|| (i.rtt_sum_ps / r.rtt_samples as u128) as Time);
        let seconds = crate::time::to_seconds(elapsed.max(1));
        r.sending_rate_bps = r.sent_bytes as f64 * 8.0 / seconds;
        r.delivery_rate_bps = r.delivered_bytes as f64 * 8.0 / seconds;
        r.cwnd = s.cwnd;
        r.ssthresh = s.ssthresh;
        r.in_flight_segments = s.in_flight_segments;
        r.mss_bytes = s.mss_bytes;
        r.srtt_ps = s.srtt;
        r.min_rtt_ever_ps = s.min_rtt;
        r.pacing_rate_bps = self.pacing_rate_bps;
        r.in_recovery = self.in_recovery;
        let report = *r;
        let action = self.call(Action::default(), |c| c.report(s, &report));
        if let Some(cwnd) = action.cwnd {
            s.cwnd = cwnd.max(1);
        }
        if let Some(rate) = action.pacing_rate_bps {
            self.pacing_rate_bps = Some(rate.max(1));
        }
        self.start_interval(s);
    }
}

impl CongestionControl for External {
    fn name(&self) -> &'static str {
        "python"
    }

    fn init(&mut self, s: &mut CcState) {
        self.start_interval(s);
        if self.mode == ExternalMode::Ack {
            self.call((), |c| c.init(s));
        }
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        if self.mode == ExternalMode::Report {
            return s.ssthresh; // the controller sets cwnd itself (as BBR's ssthresh)
        }
        self.call(s.ssthresh.max(2), |c| c.ssthresh(s))
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        self.call((), |c| c.cong_avoid(s, ack));
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        self.in_recovery = matches!(new, CaState::Recovery | CaState::Loss);
        if self.mode == ExternalMode::Ack {
            self.call((), |c| c.set_state(s, new));
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        match self.mode {
            ExternalMode::Ack => self.call((), |c| c.cwnd_event(s, ev)),
            // CE marks reach a report through the ACKs (`aggregate`), not this event.
            ExternalMode::Report => {}
        }
    }

    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        if self.mode == ExternalMode::Ack {
            self.call((), |c| c.pkts_acked(s, ack));
        }
    }

    fn undo_cwnd(&mut self, s: &CcState, prior_cwnd: u32) -> u32 {
        let fallback = s.cwnd.max(prior_cwnd);
        if self.mode == ExternalMode::Report {
            return s.cwnd; // cwnd is the controller's, never undone by the stack
        }
        self.call(fallback, |c| c.undo_cwnd(s, prior_cwnd))
    }

    fn has_cong_control(&self) -> bool {
        self.mode == ExternalMode::Report || self.controller.has_cong_control()
    }

    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) {
        match self.mode {
            ExternalMode::Ack => self.call((), |c| c.cong_control(s, ack)),
            ExternalMode::Report => self.aggregate(s, ack),
        }
    }

    fn pacing_rate_bps(&self, _s: &CcState) -> Option<u64> {
        match self.mode {
            ExternalMode::Ack => self.controller.pacing_rate_bps(),
            ExternalMode::Report => self.pacing_rate_bps,
        }
    }
}
