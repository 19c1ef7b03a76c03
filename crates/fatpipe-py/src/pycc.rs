//! Congestion controls written in Python (`cc = { python = "module:Class" }`): the core's
//! `cc/external.rs` traits implemented by calling the user's class (docs/python-cc.md).
//!
//! Per ACK (`mode = "ack"`) every hook the class has is called with two objects made once
//! per connection and refreshed in place before each call, `CcView` (the window state, whose
//! cwnd, ssthresh, cwnd_cnt and pacing_rate_bps the hook may set) and `AckView` (the ACK):
//! nothing is allocated on the Rust side per ACK. Per report (`mode = "report"`) the class's
//! `on_report(report)` gets a dict once per interval and returns None or
//! `{"cwnd": .., "pacing_rate_bps": ..}`.
//!
//! A failure (an exception in the user's code, a value that is not a window or a rate)
//! is kept in the run's `Failures`, which sets the halt flag the simulation checks after
//! each event (`Simulation::run_until_halted`); `Simulation.run_until` then raises
//! `ControllerError`: one line naming the flow, the class and hook and the simulated time,
//! with the user's exception (and its traceback) as its cause.

use fatpipe_core::cc::external::{Action, Controller, ControllerFactory, ExternalMode, Halt, Report};
use fatpipe_core::cc::{AckSample, CaState, CcState, CwndEvent};
use fatpipe_core::scenario::Scenario;
use fatpipe_core::time::to_seconds;
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

create_exception!(
    _core,
    ControllerError,
    PyRuntimeError,
    "A Python congestion control failed during a run: the message says which flow, class and \
     hook, and the simulated time; `__cause__` is the user's own exception, with its traceback \
     (None when the hook gave a value that is not a window or a rate)."
);

/// What stopped a run: the first failure (one line, and the user's exception if any).
#[derive(Default)]
pub struct Failures {
    pub halt: AtomicBool,
    first: Mutex<Option<(String, Option<PyErr>)>>,
}

impl Failures {
    fn fail(&self, line: String, cause: Option<PyErr>) -> Halt {
        let mut first = self.first.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some((line, cause));
        }
        self.halt.store(true, Ordering::Relaxed);
        Halt
    }

    /// Stops the run without a failure to report (its caller went away).
    pub fn stop(&self) -> Halt {
        self.halt.store(true, Ordering::Relaxed);
        Halt
    }

    /// The failure as the exception to raise, if the run stopped for one.
    pub fn take(&self, py: Python<'_>) -> Option<PyErr> {
        let (line, cause) = self.first.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        let err = ControllerError::new_err(line);
        err.set_cause(py, cause);
        Some(err)
    }
}

/// The window state as a hook sees it (`view`): read everything, set cwnd, cwnd_cnt,
/// ssthresh and pacing_rate_bps.
#[pyclass(module = "fatpipe._core")]
pub struct CcView {
    #[pyo3(get)]
    cwnd: u64,
    #[pyo3(get, set)]
    cwnd_cnt: u32,
    #[pyo3(get)]
    ssthresh: u64,
    #[pyo3(get)]
    pacing_rate_bps: Option<u64>,
    #[pyo3(get)]
    now_ps: u64,
    #[pyo3(get)]
    mss_bytes: u32,
    #[pyo3(get)]
    in_flight: u32,
    #[pyo3(get)]
    cwnd_limited: bool,
    #[pyo3(get)]
    srtt_ps: Option<u64>,
    #[pyo3(get)]
    rttvar_ps: u64,
    #[pyo3(get)]
    min_rtt_ps: Option<u64>,
    #[pyo3(get)]
    delivered_bytes: u64,
    #[pyo3(get)]
    snd_una: u64,
    #[pyo3(get)]
    snd_nxt: u64,
    #[pyo3(get)]
    last_send_ps: Option<u64>,
    /// A value a hook set that is not allowed (kept to be reported after the hook returns).
    bad: Option<String>,
}

/// `value` as a whole number from `min` to `max`: finite, fractions dropped (as C's
/// conversion to an unsigned window does); the error says what is allowed.
fn whole(value: f64, min: f64, max: f64, what: &str) -> Result<u64, String> {
    if value.is_finite() && value >= min && value <= max {
        Ok(value as u64)
    } else {
        Err(format!("{value} is not allowed: {what} from {min} to {max}"))
    }
}

const WINDOW: &str = "a number of segments";
const RATE: &str = "a rate in bits per second";

#[pymethods]
impl CcView {
    #[setter]
    fn set_cwnd(&mut self, value: f64) {
        match whole(value, 1.0, u32::MAX as f64, WINDOW) {
            Ok(v) => self.cwnd = v,
            Err(e) => self.bad = Some(format!("set cwnd = {e}")),
        }
    }

    #[setter]
    fn set_ssthresh(&mut self, value: f64) {
        match whole(value, 1.0, u32::MAX as f64, WINDOW) {
            Ok(v) => self.ssthresh = v,
            Err(e) => self.bad = Some(format!("set ssthresh = {e}")),
        }
    }

    /// None: no pacing.
    #[setter]
    fn set_pacing_rate_bps(&mut self, value: Option<f64>) {
        match value.map(|v| whole(v, 1.0, u64::MAX as f64, RATE)).transpose() {
            Ok(v) => self.pacing_rate_bps = v,
            Err(e) => self.bad = Some(format!("set pacing_rate_bps = {e}")),
        }
    }

    /// cwnd < ssthresh (Linux `tcp_in_slow_start`).
    #[getter]
    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

impl CcView {
    fn new() -> CcView {
        CcView {
            cwnd: 0,
            cwnd_cnt: 0,
            ssthresh: 0,
            pacing_rate_bps: None,
            now_ps: 0,
            mss_bytes: 0,
            in_flight: 0,
            cwnd_limited: false,
            srtt_ps: None,
            rttvar_ps: 0,
            min_rtt_ps: None,
            delivered_bytes: 0,
            snd_una: 0,
            snd_nxt: 0,
            last_send_ps: None,
            bad: None,
        }
    }

    fn load(&mut self, s: &CcState, pacing_rate_bps: Option<u64>) {
        self.cwnd = s.cwnd as u64;
        self.cwnd_cnt = s.cwnd_cnt;
        self.ssthresh = s.ssthresh as u64;
        self.pacing_rate_bps = pacing_rate_bps;
        self.now_ps = s.now;
        self.mss_bytes = s.mss_bytes;
        self.in_flight = s.in_flight_segments;
        self.cwnd_limited = s.cwnd_limited;
        self.srtt_ps = s.srtt;
        self.rttvar_ps = s.rttvar;
        self.min_rtt_ps = s.min_rtt;
        self.delivered_bytes = s.delivered_bytes;
        self.snd_una = s.snd_una;
        self.snd_nxt = s.snd_nxt;
        self.last_send_ps = s.last_send_ps;
        self.bad = None;
    }
}

/// What one ACK told the sender (the core's `AckSample`), read-only.
#[pyclass(module = "fatpipe._core", get_all)]
#[derive(Default)]
pub struct AckView {
    acked_segments: u32,
    delivered_segments: u32,
    acked_bytes: u64,
    delivered_bytes: u64,
    rtt_ps: Option<u64>,
    delivery_rate_bps: Option<u64>,
    is_app_limited: bool,
    prior_in_flight_bytes: u64,
    in_flight_bytes: u64,
    prior_delivered_bytes: u64,
    newly_lost_bytes: u64,
}

impl AckView {
    fn load(&mut self, a: &AckSample) {
        *self = AckView {
            acked_segments: a.acked_segments,
            delivered_segments: a.delivered_segments,
            acked_bytes: a.acked_bytes,
            delivered_bytes: a.delivered_bytes,
            rtt_ps: a.rtt,
            delivery_rate_bps: a.delivery_rate_bps,
            is_app_limited: a.is_app_limited,
            prior_in_flight_bytes: a.prior_in_flight_bytes,
            in_flight_bytes: a.in_flight_bytes,
            prior_delivered_bytes: a.prior_delivered_bytes,
            newly_lost_bytes: a.newly_lost_bytes,
        };
    }
}

/// The hooks of `tcp_congestion_ops` a per-ACK class may define, in `Hooks`' order.
pub const HOOKS: [&str; 8] =
    ["init", "ssthresh", "cong_avoid", "set_state", "cwnd_event", "pkts_acked", "undo_cwnd", "cong_control"];
const INIT: usize = 0;
const SSTHRESH: usize = 1;
const CONG_AVOID: usize = 2;
const SET_STATE: usize = 3;
const CWND_EVENT: usize = 4;
const PKTS_ACKED: usize = 5;
const UNDO_CWND: usize = 6;
const CONG_CONTROL: usize = 7;

/// What a class must have: the one line saying what it lacks.
pub fn check_class(cls: &Bound<'_, PyAny>, name: &str, mode: ExternalMode) -> Result<(), String> {
    let has = |hook: &str| cls.hasattr(hook).unwrap_or(false);
    match mode {
        ExternalMode::Ack if !has("ssthresh") || !(has("cong_avoid") || has("cong_control")) => Err(format!(
            "{name} lacks {}: a per-ACK controller (mode = \"ack\") needs ssthresh, and cong_avoid or cong_control",
            if has("ssthresh") { "cong_avoid and cong_control" } else { "ssthresh" }
        )),
        ExternalMode::Report if !has("on_report") => {
            Err(format!("{name} has no on_report: a per-report controller (mode = \"report\") needs on_report(report)"))
        }
        _ => Ok(()),
    }
}

/// Makes a flow's controllers: the class called with the scenario's parameters.
pub struct PyFactory {
    pub class: Py<PyAny>,
    pub class_name: String,
    pub flow: String,
    pub parameters: Py<PyDict>,
    pub failures: Arc<Failures>,
}

impl ControllerFactory for PyFactory {
    fn create(&self) -> Box<dyn Controller> {
        Python::attach(|py| {
            let made = self.class.bind(py).call((), Some(self.parameters.bind(py))).and_then(|obj| {
                let mut hooks: [Option<Py<PyAny>>; HOOKS.len()] = Default::default();
                for (slot, name) in hooks.iter_mut().zip(HOOKS) {
                    if obj.hasattr(name)? {
                        *slot = Some(obj.getattr(name)?.unbind());
                    }
                }
                let on_report = if obj.hasattr("on_report")? { Some(obj.getattr("on_report")?.unbind()) } else { None };
                Ok(PyController {
                    view: Py::new(py, CcView::new())?,
                    ack: Py::new(py, AckView::default())?,
                    hooks,
                    on_report,
                    pacing_rate_bps: None,
                    factory: self.clone_for(py),
                })
            });
            match made {
                Ok(c) => Box::new(c) as Box<dyn Controller>,
                Err(e) => {
                    let line = format!("flow {:?}: {}(...) raised {}", self.flow, self.class_name, one_line(py, &e));
                    self.failures.fail(line, Some(e));
                    Box::new(Failed)
                }
            }
        })
    }
}

impl PyFactory {
    fn clone_for(&self, py: Python<'_>) -> Where {
        Where {
            class_name: self.class_name.clone(),
            flow: self.flow.clone(),
            failures: self.failures.clone(),
            _class: self.class.clone_ref(py),
        }
    }
}

/// What a controller says about itself in messages, and where it reports failures.
struct Where {
    class_name: String,
    flow: String,
    failures: Arc<Failures>,
    _class: Py<PyAny>,
}

/// "TypeError: message", the exception's first line.
fn one_line(py: Python<'_>, e: &PyErr) -> String {
    let kind = e.get_type(py).name().map(|n| n.to_string()).unwrap_or_else(|_| "exception".into());
    let text = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    let text = text.lines().next().unwrap_or("");
    if text.is_empty() {
        kind
    } else {
        format!("{kind}: {text}")
    }
}

/// A controller whose class could not be made: every call fails (the run is stopping).
struct Failed;

impl Controller for Failed {
    fn ssthresh(&mut self, _s: &CcState) -> Result<u32, Halt> {
        Err(Halt)
    }
    fn cong_avoid(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        Err(Halt)
    }
    fn set_state(&mut self, _s: &mut CcState, _n: CaState) -> Result<(), Halt> {
        Err(Halt)
    }
    fn cwnd_event(&mut self, _s: &mut CcState, _e: CwndEvent) -> Result<(), Halt> {
        Err(Halt)
    }
    fn pkts_acked(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        Err(Halt)
    }
    fn undo_cwnd(&mut self, _s: &CcState, _p: u32) -> Result<u32, Halt> {
        Err(Halt)
    }
    fn has_cong_control(&self) -> bool {
        false
    }
    fn cong_control(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        Err(Halt)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn report(&mut self, _s: &CcState, _r: &Report) -> Result<Action, Halt> {
        Err(Halt)
    }
}

pub struct PyController {
    view: Py<CcView>,
    ack: Py<AckView>,
    /// The instance's bound methods, by `HOOKS`' index (None: the class lacks it).
    hooks: [Option<Py<PyAny>>; HOOKS.len()],
    on_report: Option<Py<PyAny>>,
    pacing_rate_bps: Option<u64>,
    factory: Where,
}

fn state_name(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Cwr => "cwr",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

fn event_name(e: CwndEvent) -> &'static str {
    match e {
        CwndEvent::TxStart => "tx_start",
        CwndEvent::CwndRestart => "cwnd_restart",
        CwndEvent::CompleteCwr => "complete_cwr",
        CwndEvent::Loss => "loss",
        CwndEvent::EcnIsCe => "ecn_is_ce",
        CwndEvent::EcnNoCe => "ecn_no_ce",
    }
}

/// How a hook is called: (view), (view, ack), (view, name) or (view, number).
enum Args<'a> {
    View,
    Ack(&'a AckSample),
    Name(&'static str),
    Number(u32),
}

impl PyController {
    fn at(&self, hook: &str, now: u64) -> String {
        format!(
            "flow {:?}: {}.{hook} at {:.6} s simulated time",
            self.factory.flow,
            self.factory.class_name,
            to_seconds(now)
        )
    }

    fn fail(&self, py: Python<'_>, hook: &str, now: u64, e: PyErr) -> Halt {
        let line = format!("{}: raised {}", self.at(hook, now), one_line(py, &e));
        self.factory.failures.fail(line, Some(e))
    }

    /// Calls hook `k` with the state loaded into the view; writes back what it set (with
    /// `write_back`); returns what the hook returned (None when the class lacks it).
    fn call(&mut self, k: usize, s: &mut CcState, args: Args<'_>, write_back: bool) -> Result<Option<Py<PyAny>>, Halt> {
        let Some(hook) = &self.hooks[k] else { return Ok(None) };
        let pacing = self.pacing_rate_bps;
        let (result, pacing) = Python::attach(|py| {
            let view = self.view.bind(py);
            view.borrow_mut().load(s, pacing);
            let result = match args {
                Args::View => hook.call1(py, (view,)),
                Args::Ack(a) => {
                    let ack = self.ack.bind(py);
                    ack.borrow_mut().load(a);
                    hook.call1(py, (view, ack))
                }
                Args::Name(name) => hook.call1(py, (view, PyString::intern(py, name))),
                Args::Number(n) => hook.call1(py, (view, n)),
            };
            let result = result.map_err(|e| self.fail(py, HOOKS[k], s.now, e))?;
            let v = view.borrow();
            if let Some(bad) = &v.bad {
                let line = format!("{}: {bad}", self.at(HOOKS[k], s.now));
                return Err(self.factory.failures.fail(line, None));
            }
            if !write_back {
                return Ok((result, pacing));
            }
            s.cwnd = v.cwnd as u32;
            s.cwnd_cnt = v.cwnd_cnt;
            s.ssthresh = v.ssthresh as u32;
            Ok((result, v.pacing_rate_bps))
        })?;
        self.pacing_rate_bps = pacing;
        Ok(Some(result))
    }

    /// A hook's return value as a window (ssthresh, undo_cwnd).
    fn window(&self, k: usize, now: u64, value: Py<PyAny>) -> Result<u32, Halt> {
        Python::attach(|py| {
            let value = value.bind(py);
            let number = value.extract::<f64>().map_err(|_| {
                let kind = value.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                format!(
                    "returned {} ({kind}), not a number of segments",
                    value.repr().map(|r| r.to_string()).unwrap_or_default()
                )
            });
            match number.and_then(|n| whole(n, 1.0, u32::MAX as f64, WINDOW).map_err(|e| format!("returned {e}"))) {
                Ok(w) => Ok(w as u32),
                Err(e) => Err(self.factory.failures.fail(format!("{}: {e}", self.at(HOOKS[k], now)), None)),
            }
        })
    }
}

impl Controller for PyController {
    fn init(&mut self, s: &mut CcState) -> Result<(), Halt> {
        self.call(INIT, s, Args::View, true).map(drop)
    }

    fn ssthresh(&mut self, s: &CcState) -> Result<u32, Halt> {
        let mut copy = s.clone();
        let value = self.call(SSTHRESH, &mut copy, Args::View, false)?.expect("checked: the class has ssthresh");
        self.window(SSTHRESH, s.now, value)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) -> Result<(), Halt> {
        self.call(CONG_AVOID, s, Args::Ack(ack), true).map(drop)
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) -> Result<(), Halt> {
        self.call(SET_STATE, s, Args::Name(state_name(new)), true).map(drop)
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) -> Result<(), Halt> {
        self.call(CWND_EVENT, s, Args::Name(event_name(ev)), true).map(drop)
    }

    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) -> Result<(), Halt> {
        self.call(PKTS_ACKED, s, Args::Ack(ack), true).map(drop)
    }

    fn undo_cwnd(&mut self, s: &CcState, prior_cwnd: u32) -> Result<u32, Halt> {
        let mut copy = s.clone();
        match self.call(UNDO_CWND, &mut copy, Args::Number(prior_cwnd), false)? {
            Some(value) => self.window(UNDO_CWND, s.now, value),
            // Linux's tcp_reno_undo_cwnd, as the trait's default.
            None => Ok(s.cwnd.max(prior_cwnd)),
        }
    }

    fn has_cong_control(&self) -> bool {
        self.hooks[CONG_CONTROL].is_some()
    }

    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) -> Result<(), Halt> {
        self.call(CONG_CONTROL, s, Args::Ack(ack), true).map(drop)
    }

    fn pacing_rate_bps(&self) -> Option<u64> {
        self.pacing_rate_bps
    }

    fn report(&mut self, s: &CcState, r: &Report) -> Result<Action, Halt> {
        let hook = self.on_report.as_ref().expect("checked: the class has on_report");
        Python::attach(|py| {
            let report = crate::boundary::to_python(py, r).and_then(|d| hook.call1(py, (d,)));
            let result = report.map_err(|e| self.fail(py, "on_report", s.now, e))?;
            action(result.bind(py)).map_err(|e| {
                let line = format!("{}: {e}", self.at("on_report", s.now));
                self.factory.failures.fail(line, None)
            })
        })
    }
}

/// What `on_report` returned as an action: None, or a dict with `cwnd` and/or
/// `pacing_rate_bps`; the error says what is wrong.
pub fn action(value: &Bound<'_, PyAny>) -> Result<Action, String> {
    if value.is_none() {
        return Ok(Action::default());
    }
    let Ok(dict) = value.cast::<PyDict>() else {
        return Err(format!(
            "returned {}: expected None or a dict with cwnd and/or pacing_rate_bps",
            value.repr().map(|r| r.to_string()).unwrap_or_default()
        ));
    };
    let mut out = Action::default();
    for (key, v) in dict.iter() {
        let key = key.str().map(|k| k.to_string()).unwrap_or_default();
        let number = |what: &str, max: f64| -> Result<Option<u64>, String> {
            if v.is_none() {
                return Ok(None);
            }
            let n = v.extract::<f64>().map_err(|_| {
                format!("returned {key} = {}: not a number", v.repr().map(|r| r.to_string()).unwrap_or_default())
            })?;
            whole(n, 1.0, max, what).map(Some).map_err(|e| format!("returned {key} = {e}"))
        };
        match key.as_str() {
            "cwnd" => out.cwnd = number(WINDOW, u32::MAX as f64)?.map(|c| c as u32),
            "pacing_rate_bps" => out.pacing_rate_bps = number(RATE, u64::MAX as f64)?,
            other => return Err(format!("returned the key {other:?}: allowed keys are cwnd and pacing_rate_bps")),
        }
    }
    Ok(out)
}

/// Attaches a controller factory to every flow of `scenario` that names a Python class:
/// the class given in `classes` (flow index -> class) or imported from "module:Class".
/// The error is one line naming the flow.
pub fn attach(
    py: Python<'_>,
    scenario: &mut Scenario,
    classes: Option<&Bound<'_, PyDict>>,
    failures: &Arc<Failures>,
) -> PyResult<()> {
    for (i, flow) in scenario.flows.iter_mut().enumerate() {
        let Some(fatpipe_core::cc::CcSpec::Python(cfg)) = &mut flow.cc else { continue };
        let path = format!("flows[{i}].cc.python");
        let class = match classes.map(|c| c.get_item(i)).transpose()?.flatten() {
            Some(c) => c,
            None => import_class(py, &cfg.class, cfg.module_dir.as_deref())
                .map_err(|e| PyValueError::new_err(format!("{path}: {e}")))?,
        };
        check_class(&class, &cfg.class, cfg.mode).map_err(|e| PyValueError::new_err(format!("{path}: {e}")))?;
        let parameters = crate::boundary::to_python(py, &cfg.parameters)?.cast_into::<PyDict>()?.unbind();
        cfg.factory.0 = Some(Arc::new(PyFactory {
            class: class.unbind(),
            class_name: cfg.class.clone(),
            flow: flow.name.clone(),
            parameters,
            failures: failures.clone(),
        }));
    }
    Ok(())
}

/// "module:Class" (the class may be dotted, "module:Outer.Inner") imported, its module looked
/// for in `directory` first (where it stood beside the scenario file); the error is one line.
pub fn import_class<'py>(py: Python<'py>, spec: &str, directory: Option<&str>) -> Result<Bound<'py, PyAny>, String> {
    let Some((module, name)) = spec.split_once(':').filter(|(m, n)| !m.is_empty() && !n.is_empty()) else {
        return Err(format!("{spec:?} is not allowed: expected \"module:Class\""));
    };
    let sys_path = py.import("sys").and_then(|sys| sys.getattr("path")).map_err(|e| one_line(py, &e))?;
    let added = match directory {
        Some(dir) if !sys_path.contains(dir).unwrap_or(true) => sys_path.call_method1("insert", (0, dir)).is_ok(),
        _ => false,
    };
    let imported = py.import(module);
    if added {
        let _ = sys_path.call_method1("remove", (directory,));
    }
    let mut obj =
        imported.map_err(|e| format!("{spec:?}: module {module} does not import: {}", one_line(py, &e)))?.into_any();
    for part in name.split('.') {
        obj = obj.getattr(part).map_err(|_| format!("{spec:?}: module {module} has no {name}"))?;
    }
    Ok(obj)
}
