//! Python bindings of fatpipe-core, built by maturin as `fatpipe._core`.
//!
//! Thin on purpose: the Python package validates scenarios and shapes results; this module
//! only builds a simulation from a normalized scenario (JSON), advances it with the GIL
//! released, and returns its results.

use fatpipe_core::Simulation as CoreSimulation;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// A simulation built from a normalized scenario (see docs/core-interface.md).
#[pyclass(module = "fatpipe._core")]
struct Simulation {
    inner: CoreSimulation,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(scenario_json: &str) -> PyResult<Self> {
        let inner = CoreSimulation::from_json(scenario_json).map_err(PyValueError::new_err)?;
        Ok(Simulation { inner })
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

    /// Advances to `t_ps` (at most the duration) with the GIL released, so other Python
    /// threads run meanwhile.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) {
        let inner = &mut self.inner;
        py.detach(|| inner.run_until(t_ps));
    }

    /// Runs to the end; returns {"summary", "flow_series", "queue_series"} as a dict.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = &mut self.inner;
        let text = py.detach(|| inner.finish().to_string());
        py.import("json")?.call_method1("loads", (text,))
    }
}

/// Version of the Rust core.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
