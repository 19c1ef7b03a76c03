//! A simulation that pauses at every report of one flow for the caller's action: the
//! stepping behind `fatpipe.gym` (docs/python-cc.md).
//!
//! The flow's controller (`cc = { python = ..., mode = "report" }`) is a channel: at each
//! report the simulation's thread hands the report over and waits for the action, which
//! it applies at once, inside the same ACK, exactly where a Python `on_report` would
//! have answered; so a stepped run and the same controller run in-line give the same
//! results. The simulation runs in a thread of its own with the GIL released, from one
//! report to the next; the core's run loop is the ordinary one (`run_until_halted`, which
//! `run_until` does not pay for), and `close` stops it after the event under way.

use crate::pycc::{self, Failures};
use fatpipe_core::cc::external::{Action, Controller, ControllerFactory, ExternalMode, Halt, Report};
use fatpipe_core::cc::{AckSample, CaState, CcSpec, CcState, CwndEvent};
use fatpipe_core::scenario::Scenario;
use fatpipe_core::Simulation as CoreSimulation;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// The scenario (a dict) read, with Python controllers attached to the flows that name
/// them, and the run's `Failures` when there is any.
pub fn with_controllers(
    py: Python<'_>,
    scenario: &Bound<'_, PyAny>,
    controllers: Option<&Bound<'_, PyDict>>,
) -> PyResult<(Scenario, Option<Arc<Failures>>)> {
    let mut scenario = crate::boundary::scenario(scenario)?;
    let python = scenario.flows.iter().any(|f| matches!(f.cc, Some(CcSpec::Python(_))));
    if !python {
        return Ok((scenario, None));
    }
    let failures = Arc::new(Failures::default());
    pycc::attach(py, &mut scenario, controllers, &failures)?;
    Ok((scenario, Some(failures)))
}

enum Message {
    Report(Box<Report>),
    Ended,
}

/// The stepped flow's controllers: each connection's reports go out on one channel and
/// the actions come back on the other.
struct ChannelFactory {
    reports: Sender<Message>,
    actions: Arc<Mutex<Receiver<Action>>>,
    failures: Arc<Failures>,
}

impl ControllerFactory for ChannelFactory {
    fn create(&self) -> Box<dyn Controller> {
        Box::new(ChannelController {
            reports: Mutex::new(self.reports.clone()),
            actions: self.actions.clone(),
            failures: self.failures.clone(),
        })
    }
}

struct ChannelController {
    reports: Mutex<Sender<Message>>,
    actions: Arc<Mutex<Receiver<Action>>>,
    failures: Arc<Failures>,
}

/// Only `report` is called: the stepped flow runs in `report` mode.
impl Controller for ChannelController {
    fn ssthresh(&mut self, s: &CcState) -> Result<u32, Halt> {
        Ok(s.ssthresh)
    }
    fn cong_avoid(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        Ok(())
    }
    fn set_state(&mut self, _s: &mut CcState, _n: CaState) -> Result<(), Halt> {
        Ok(())
    }
    fn cwnd_event(&mut self, _s: &mut CcState, _e: CwndEvent) -> Result<(), Halt> {
        Ok(())
    }
    fn pkts_acked(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        Ok(())
    }
    fn undo_cwnd(&mut self, s: &CcState, _p: u32) -> Result<u32, Halt> {
        Ok(s.cwnd)
    }
    fn has_cong_control(&self) -> bool {
        true
    }
    fn cong_control(&mut self, _s: &mut CcState, _a: &AckSample) -> Result<(), Halt> {
        Ok(())
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn report(&mut self, _s: &CcState, r: &Report) -> Result<Action, Halt> {
        let sent = self.reports.lock().unwrap_or_else(|e| e.into_inner()).send(Message::Report(Box::new(*r)));
        if sent.is_err() {
            return Err(self.failures.stop());
        }
        let action = self.actions.lock().unwrap_or_else(|e| e.into_inner()).recv();
        action.map_err(|_| self.failures.stop())
    }
}

/// A simulation stepped from report to report of one flow (`fatpipe.gym`).
#[pyclass(module = "fatpipe._core")]
pub struct Stepper {
    actions: Option<Sender<Action>>,
    reports: Mutex<Receiver<Message>>,
    thread: Option<JoinHandle<CoreSimulation>>,
    ended: Option<CoreSimulation>,
    failures: Arc<Failures>,
    /// A report is out and the simulation waits for its action.
    waiting: bool,
}

#[pymethods]
impl Stepper {
    /// `scenario`: a normalized scenario whose flow `flow` has `cc = { python = ...,
    /// mode = "report" }` (its class is not called: the caller answers each report);
    /// `controllers` as `Simulation`'s, for the other flows.
    #[new]
    #[pyo3(signature = (scenario, flow, controllers=None))]
    fn new(
        py: Python<'_>,
        scenario: &Bound<'_, PyAny>,
        flow: usize,
        controllers: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let mut doc = crate::boundary::scenario(scenario)?;
        let Some(spec) = doc.flows.get_mut(flow) else {
            return Err(PyValueError::new_err(format!(
                "flow: {flow} is not allowed: the scenario has {} flows",
                doc.flows.len()
            )));
        };
        let Some(CcSpec::Python(stepped)) = spec.cc.take() else {
            return Err(PyValueError::new_err(format!(
                "flows[{flow}].cc: the stepped flow needs cc = {{ python = ..., mode = \"report\" }}"
            )));
        };
        if stepped.mode != ExternalMode::Report {
            return Err(PyValueError::new_err(format!(
                "flows[{flow}].cc.mode: \"ack\" is not allowed for the stepped flow: \"report\""
            )));
        }
        let failures = Arc::new(Failures::default());
        pycc::attach(py, &mut doc, controllers, &failures)?;
        let (report_tx, report_rx) = channel();
        let (action_tx, action_rx) = channel();
        let mut stepped = stepped;
        stepped.factory.0 = Some(Arc::new(ChannelFactory {
            reports: report_tx.clone(),
            actions: Arc::new(Mutex::new(action_rx)),
            failures: failures.clone(),
        }));
        doc.flows[flow].cc = Some(CcSpec::Python(stepped));
        let mut sim = CoreSimulation::new(doc).map_err(PyValueError::new_err)?;
        let halt = failures.clone();
        let thread = std::thread::spawn(move || {
            let end = sim.duration();
            sim.run_until_halted(end, &halt.halt);
            let _ = report_tx.send(Message::Ended);
            sim
        });
        Ok(Stepper {
            actions: Some(action_tx),
            reports: Mutex::new(report_rx),
            thread: Some(thread),
            ended: None,
            failures,
            waiting: false,
        })
    }

    /// Answers the report last returned with `action` (None, or a dict with cwnd and/or
    /// pacing_rate_bps; the first call gives none) and runs to the next report: returns it
    /// as a dict, or None when the run has ended. A Python controller's failure in another
    /// flow raises `ControllerError`.
    #[pyo3(signature = (action=None))]
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        action: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.waiting {
            let action = match action {
                Some(a) => pycc::action(a).map_err(|e| PyValueError::new_err(format!("action: {e}")))?,
                None => Action::default(),
            };
            self.waiting = false;
            let sender = self.actions.as_ref().ok_or_else(|| PyRuntimeError::new_err("the stepper is closed"))?;
            if sender.send(action).is_err() {
                return Err(PyRuntimeError::new_err("the simulation has stopped"));
            }
        } else if self.thread.is_none() {
            return Ok(None);
        }
        let reports = &self.reports;
        match py.detach(|| reports.lock().unwrap_or_else(|e| e.into_inner()).recv()) {
            Ok(Message::Report(r)) => {
                self.waiting = true;
                Ok(Some(crate::boundary::to_python(py, &*r)?))
            }
            Ok(Message::Ended) | Err(_) => {
                self.join(py);
                match self.failures.take(py) {
                    Some(e) => Err(e),
                    None => Ok(None),
                }
            }
        }
    }

    /// The run's output as `Simulation.finish` gives it, once `step` has returned None.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut sim = self.ended.take().ok_or_else(|| PyRuntimeError::new_err("finish: the run has not ended"))?;
        let output = py.detach(|| sim.finish_output());
        crate::output_dict(py, output)
    }

    /// Stops the simulation's thread (after the event under way) and waits for it.
    fn close(&mut self, py: Python<'_>) {
        self.failures.stop();
        self.actions = None;
        self.join(py);
    }
}

impl Stepper {
    fn join(&mut self, py: Python<'_>) {
        if let Some(thread) = self.thread.take() {
            if let Ok(sim) = py.detach(|| thread.join()) {
                self.ended = Some(sim);
            }
        }
    }
}

impl Drop for Stepper {
    fn drop(&mut self) {
        if self.thread.is_some() {
            Python::attach(|py| self.close(py));
        }
    }
}
