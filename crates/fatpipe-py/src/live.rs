//! The lifecycle that `Emulation` and `ProbeRun` share: a run on threads of its own that
//! Python starts by constructing it, waits for with the GIL released, watches (progress),
//! stops, finishes for the result document, and closes; once finished or closed, every call
//! says so. Written once here; each class is a row of one-line delegates (PyO3 makes no
//! Python class of a generic type).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use serde::Serialize;

/// A run on threads of its own, as the Python classes drive it.
pub trait Live: Send + Sync + Sized {
    /// What the run is called in "... is closed", such as "the emulation".
    const WHAT: &'static str;
    /// Waits up to `timeout_s` (seconds, as Python gives them); true once the run ended.
    fn wait_s(&self, timeout_s: f64) -> bool;
    /// The result document's type (Python receives it as dicts and lists).
    type Output: Serialize + Send;
    /// Waits for the end and returns the result document, or the Python exception that says
    /// why there is none.
    fn finish(self) -> Result<Self::Output, PyErr>;
}

/// A `Live` run until `finish` or `close` takes it; then every call says it is closed.
pub struct Lifecycle<T: Live> {
    inner: Option<T>,
}

impl<T: Live> Lifecycle<T> {
    pub fn new(run: T) -> Self {
        Lifecycle { inner: Some(run) }
    }

    pub fn get(&self) -> PyResult<&T> {
        self.inner.as_ref().ok_or_else(closed::<T>)
    }

    pub fn get_mut(&mut self) -> PyResult<&mut T> {
        self.inner.as_mut().ok_or_else(closed::<T>)
    }

    /// Waits up to `timeout_s` with the GIL released; true once the run has ended.
    pub fn wait(&self, py: Python<'_>, timeout_s: f64) -> PyResult<bool> {
        let run = self.get()?;
        Ok(py.detach(|| run.wait_s(timeout_s)))
    }

    /// The result document as Python objects; the run is closed after.
    pub fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let run = self.inner.take().ok_or_else(closed::<T>)?;
        let output = py.detach(|| run.finish())?;
        crate::boundary::to_python(py, &output)
    }

    /// Stops the run and releases everything it holds, with the GIL released (idempotent).
    pub fn close(&mut self, py: Python<'_>) {
        if let Some(run) = self.inner.take() {
            py.detach(move || drop(run));
        }
    }
}

fn closed<T: Live>() -> PyErr {
    PyRuntimeError::new_err(format!("{} is closed", T::WHAT))
}
