//! Python bindings of fatpipe-core, built by maturin as `fatpipe._core`.
//!
//! Thin on purpose: the Python package validates scenarios and shapes results; this module
//! only builds a simulation (or an emulation, fatpipe-emu; or a probe between two hosts,
//! fatpipe-probe) from a normalized scenario, advances it with the GIL released, and hands
//! back its results: the summary as Python objects, the time series and request tables as
//! columns whose memory numpy views without a copy (`Column.__array_interface__`), so a
//! run's largest data is never copied or turned into Python objects.
//!
//! Documents cross as Python objects, never as JSON text: the scenario (a dict) is read
//! straight into the core's serde types, the summary written straight into dicts and lists
//! (`boundary.rs`, on pythonize).

use fatpipe_core::probe::Column as CoreColumn;
use fatpipe_core::Simulation as CoreSimulation;
use fatpipe_emu::bpf_cc::BpfPolicy;
use fatpipe_emu::{Emulation as CoreEmulation, Error as EmuError, Options as EmuOptions};
use pyo3::exceptions::{PyOSError, PyPermissionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

mod boundary;
mod live;
mod probe;
mod pycc;
mod stepper;

use boundary::{scenario_error, to_python};

use live::{Lifecycle, Live};

/// A simulation built from a normalized scenario (see docs/core-interface.md).
#[pyclass(module = "fatpipe._core")]
struct Simulation {
    inner: CoreSimulation,
    /// Some flow runs a Python congestion control: the run keeps the GIL (its hooks take it
    /// on every ACK) and stops at a failure (`pycc.rs`).
    python: Option<std::sync::Arc<pycc::Failures>>,
}

/// One column of results, owned here; `numpy.asarray(column)` views it read-only through
/// the array interface, and keeps this object alive as long as the array lives.
#[pyclass(module = "fatpipe._core", frozen)]
struct Column {
    data: CoreColumn,
}

#[pymethods]
impl Column {
    fn __len__(&self) -> usize {
        self.data.len()
    }

    /// numpy's array interface (version 3): shape, element type, and the data's address.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let endian = if cfg!(target_endian = "little") { "<" } else { ">" };
        let (address, len, kind) = match &self.data {
            CoreColumn::U64(v) => (v.as_ptr() as usize, v.len(), "u8"),
            CoreColumn::I64(v) => (v.as_ptr() as usize, v.len(), "i8"),
            CoreColumn::U32(v) => (v.as_ptr() as usize, v.len(), "u4"),
            CoreColumn::F64(v) => (v.as_ptr() as usize, v.len(), "f8"),
        };
        let interface = PyDict::new(py);
        interface.set_item("version", 3)?;
        interface.set_item("shape", PyTuple::new(py, [len])?)?;
        interface.set_item("typestr", format!("{endian}{kind}"))?;
        interface.set_item("data", (address, true))?;
        Ok(interface)
    }
}

/// A table's columns as a dict of `Column`s, moved out of the simulation.
fn columns<'py>(py: Python<'py>, table: Vec<(&'static str, CoreColumn)>) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, data) in table {
        dict.set_item(name, Py::new(py, Column { data })?)?;
    }
    Ok(dict)
}

#[pymethods]
impl Simulation {
    /// `scenario`: the normalized scenario, a dict (`fatpipe.load_scenario`).
    /// `controllers`: for flows whose `cc` names a Python class, the class by flow index
    /// (else it is imported from the "module:Class" the scenario names).
    #[new]
    #[pyo3(signature = (scenario, controllers=None))]
    fn new(py: Python<'_>, scenario: &Bound<'_, PyAny>, controllers: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let (scenario, python) = stepper::with_controllers(py, scenario, controllers)?;
        let inner = CoreSimulation::new(scenario).map_err(PyValueError::new_err)?;
        Ok(Simulation { inner, python })
    }

    /// Simulated time reached, picoseconds.
    #[getter]
    fn now_ps(&self) -> u64 {
        self.inner.now()
    }

    /// The scenario's duration, picoseconds.
    #[getter]
    fn duration_ps(&self) -> u64 {
        self.inner.duration()
    }

    /// Events processed so far.
    #[getter]
    fn events(&self) -> u64 {
        self.inner.events_processed()
    }

    /// Every flow's route: a list of (data, ACKs) link-index lists, as `flow_routes`.
    fn flow_routes(&self) -> Vec<fatpipe_core::scenario::FlowRoute> {
        self.inner.flow_routes()
    }

    /// Advances to `t_ps` (at most the duration) with the GIL released, so other Python
    /// threads run meanwhile. A BPF congestion control's fault ends the run with a
    /// ValueError (one line); the simulation is unusable after it.
    /// A Python congestion control's failure raises `ControllerError` (`pycc.rs`).
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<()> {
        let inner = &mut self.inner;
        if let Some(failures) = &self.python {
            if inner.run_until_halted(t_ps, &failures.halt) {
                return Err(failures.take(py).unwrap_or_else(|| PyValueError::new_err("the run was stopped")));
            }
            return Ok(());
        }
        let run = py.detach(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.run_until(t_ps))));
        match run {
            Ok(()) => Ok(()),
            Err(payload) => match payload.downcast::<fatpipe_core::cc::bpf::BpfFault>() {
                Ok(fault) => Err(PyValueError::new_err(fault.0)),
                Err(other) => std::panic::resume_unwind(other),
            },
        }
    }

    /// Turns the engine's hops without events off or on (`Simulation::set_event_shortcuts`
    /// in the core): the results are the same either way, which the tests check.
    fn set_event_shortcuts(&mut self, on: bool) {
        self.inner.set_event_shortcuts(on);
    }

    /// Every flow's counters now, as columns (for reports while the run goes on).
    fn flow_counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        columns(py, self.inner.flow_counters().into_columns())
    }

    /// Runs to the end; returns {"summary": dict, "flow_series", "queue_series",
    /// "requests": {column name: Column}}. The columns are moved out: call it once.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.python.is_some() {
            let end = self.inner.duration();
            self.run_until(py, end)?;
        }
        let inner = &mut self.inner;
        let output = py.detach(|| inner.finish_output());
        output_dict(py, output)
    }
}

/// A finished run's output as `Simulation.finish` returns it.
fn output_dict(py: Python<'_>, output: fatpipe_core::sim::Output) -> PyResult<Bound<'_, PyDict>> {
    {
        let result = PyDict::new(py);
        result.set_item("summary", to_python(py, &output.summary)?)?;
        result.set_item("flow_series", columns(py, output.flow_series.into_columns())?)?;
        result.set_item("queue_series", columns(py, output.queue_series.into_columns())?)?;
        result.set_item("requests", columns(py, output.requests.into_columns())?)?;
        Ok(result)
    }
}

/// Checks a normalized scenario (a dict) as `Simulation` would (references, routes, MTU
/// along them), without building anything; raises ValueError("<path>: <message>"), or its
/// subclass RouteError for a flow whose packets find no way (attributes `flow`, `loops`,
/// `problem`), or FlowFieldError for a flow's field (attributes `flow`, `field`, `problem`).
#[pyfunction]
fn check(scenario: &Bound<'_, PyAny>) -> PyResult<()> {
    boundary::scenario(scenario)?.validate().map(|_| ()).map_err(|e| scenario_error(scenario.py(), e))
}

/// Every flow's route in a normalized scenario (a dict), as link indices: a list of (data,
/// ACKs) pairs, the ACKs' empty for a UDP flow; ValueError as `check` for a bad document.
#[pyfunction]
fn flow_routes(scenario: &Bound<'_, PyAny>) -> PyResult<Vec<fatpipe_core::scenario::FlowRoute>> {
    boundary::scenario(scenario)?.flow_routes().map_err(|e| scenario_error(scenario.py(), e))
}

/// A real-time emulation of a normalized scenario (fatpipe-emu, docs/emulation.md): hosts as
/// network namespaces, the scenario's links in a relay, real Linux TCP. Built (namespaces,
/// connections) by the constructor; `start`, then `wait` until it returns True, then
/// `finish`. `close` (or dropping the object) stops every thread and removes the namespaces.
#[pyclass(module = "fatpipe._core")]
struct Emulation {
    run: Lifecycle<CoreEmulation>,
}

fn emu_error(e: EmuError) -> PyErr {
    match e {
        EmuError::Privileges(m) => PyPermissionError::new_err(m),
        EmuError::Scenario(m) => PyValueError::new_err(m),
        EmuError::System(m) => PyOSError::new_err(m),
    }
}

impl Live for CoreEmulation {
    const WHAT: &'static str = "the emulation";

    fn wait_s(&self, timeout_s: f64) -> bool {
        self.wait((timeout_s.max(0.0) * 1e12) as u64)
    }

    type Output = fatpipe_emu::summary::EmulationOutput;

    fn finish(self) -> Result<Self::Output, PyErr> {
        CoreEmulation::finish(self).map_err(emu_error)
    }
}

#[pymethods]
impl Emulation {
    /// `spin_margin_ps`: the relay wakes this early and spins to each event (None: the
    /// default, 0);
    /// `realtime_priority`: run the relay under SCHED_FIFO (default True);
    /// `bpf`: when an algorithm runs as fatpipe's BPF program: "auto" (default: where the
    /// kernel's module does not run it as asked), "always", "never";
    /// `tun_offload`: TSO and GRO super-packets through the TUN devices (default True).
    #[new]
    #[pyo3(signature = (scenario, spin_margin_ps=None, realtime_priority=None, bpf=None, tun_offload=None))]
    fn new(
        py: Python<'_>,
        scenario: &Bound<'_, PyAny>,
        spin_margin_ps: Option<u64>,
        realtime_priority: Option<bool>,
        bpf: Option<&str>,
        tun_offload: Option<bool>,
    ) -> PyResult<Self> {
        let bpf = match bpf.unwrap_or("auto") {
            "auto" => BpfPolicy::Auto,
            "always" => BpfPolicy::Always,
            "never" => BpfPolicy::Never,
            other => {
                return Err(PyValueError::new_err(format!("bpf: {other:?} is not allowed: one of auto, always, never")))
            }
        };
        let mut options = EmuOptions { bpf, ..EmuOptions::default() };
        if let Some(m) = spin_margin_ps {
            options.spin_margin_ps = m;
        }
        if let Some(r) = realtime_priority {
            options.realtime_priority = r;
        }
        if let Some(t) = tun_offload {
            options.tun_offload = t;
        }
        let scenario = boundary::scenario(scenario)?;
        let inner = py.detach(|| CoreEmulation::new(scenario, options)).map_err(emu_error)?;
        Ok(Emulation { run: Lifecycle::new(inner) })
    }

    /// Starts the run (time 0 is a few milliseconds later).
    fn start(&mut self) -> PyResult<()> {
        self.run.get_mut()?.start().map_err(emu_error)
    }

    /// Waits up to `timeout_s` with the GIL released; True once the run has ended.
    fn wait(&self, py: Python<'_>, timeout_s: f64) -> PyResult<bool> {
        self.run.wait(py, timeout_s)
    }

    /// Time into the run, picoseconds.
    #[getter]
    fn progress_ps(&self) -> PyResult<u64> {
        Ok(self.run.get()?.progress_ps())
    }

    #[getter]
    fn duration_ps(&self) -> PyResult<u64> {
        Ok(self.run.get()?.duration_ps())
    }

    /// Asks every thread to stop (an interrupted run).
    fn stop(&self) -> PyResult<()> {
        self.run.get()?.stop();
        Ok(())
    }

    /// The hosts' namespaces while the emulation lives: [(host, path, inode)].
    fn namespaces(&self) -> PyResult<Vec<(String, String, u64)>> {
        Ok(self.run.get()?.namespaces())
    }

    /// Waits for the end and returns {"summary", "flow_series", "queue_series"} as a dict;
    /// the emulation is closed after.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run.finish(py)
    }

    /// Stops every thread and removes the namespaces (idempotent).
    fn close(&mut self, py: Python<'_>) {
        self.run.close(py)
    }
}

/// The kernel's congestion control algorithms (tcp_available_congestion_control).
#[pyfunction]
fn available_congestion_control() -> Vec<String> {
    fatpipe_emu::emulation::available_algorithms()
}

/// fatpipe's BPF program (bpf/) for a normalized `cc` table (a dict) with its parameters
/// written in: (program file name, object bytes), to run in the simulator as
/// `cc = { bpf = ... }` beside the built-in algorithm it implements. Needs clang.
#[pyfunction]
#[pyo3(signature = (cc, kernel_hz=250))]
fn bpf_program_object(cc: &Bound<'_, PyAny>, kernel_hz: u32) -> PyResult<(&'static str, Vec<u8>)> {
    let cc: fatpipe_core::cc::CcSpec = boundary::from_python(cc, "cc")?;
    fatpipe_emu::bpf_cc::object_with_parameters(&cc, kernel_hz).map_err(PyValueError::new_err)
}

/// Version of the Rust core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_class::<Column>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(flow_routes, m)?)?;
    m.add_class::<Emulation>()?;
    m.add_function(wrap_pyfunction!(available_congestion_control, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(bpf_program_object, m)?)?;
    m.add("RouteError", m.py().get_type::<boundary::RouteError>())?;
    m.add("FlowFieldError", m.py().get_type::<boundary::FlowFieldError>())?;
    m.add("ControllerError", m.py().get_type::<pycc::ControllerError>())?;
    m.add_class::<pycc::CcView>()?;
    m.add_class::<pycc::AckView>()?;
    m.add_class::<stepper::Stepper>()?;
    probe::register(m)?;
    Ok(())
}
