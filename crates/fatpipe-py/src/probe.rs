//! `fatpipe._core.ProbeServer` and `ProbeRun`: fatpipe-probe's daemon and controller
//! (docs/probe.md), driven from Python with the GIL released while they wait.

use fatpipe_probe::{ControllerOptions, ProbeError, ProbeRun as CoreRun, Server, ServerOptions};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::net::SocketAddrV4;

use crate::live::{Lifecycle, Live};
use std::time::Duration;

fn address(text: &str) -> PyResult<SocketAddrV4> {
    text.parse::<SocketAddrV4>().map_err(|_| PyValueError::new_err(format!("{text:?}: not an IPv4 ADDRESS:PORT")))
}

fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(s.clamp(0.0, 1e9))
}

/// The daemon, serving on a thread from construction until `stop`.
#[pyclass(module = "fatpipe._core")]
pub struct ProbeServer {
    inner: Option<Server>,
}

impl ProbeServer {
    fn get(&self) -> PyResult<&Server> {
        self.inner.as_ref().ok_or_else(|| PyRuntimeError::new_err("the server is closed"))
    }
}

#[pymethods]
impl ProbeServer {
    /// `bind`: "ADDRESS:PORT" (port 0: any free one); `secret`: bytes clients must prove;
    /// `data_ports`: (low, high) the daemon owns, or None; raises OSError if it cannot listen.
    #[new]
    #[pyo3(signature = (bind, secret=None, data_ports=None, max_duration_ps=None, max_clients=None, log=true))]
    fn new(
        bind: &str,
        secret: Option<Vec<u8>>,
        data_ports: Option<(u16, u16)>,
        max_duration_ps: Option<u64>,
        max_clients: Option<usize>,
        log: bool,
    ) -> PyResult<Self> {
        let mut options = ServerOptions { secret, data_ports, log, ..ServerOptions::default() };
        if let Some(d) = max_duration_ps {
            options.max_duration_ps = d;
        }
        if let Some(m) = max_clients {
            options.max_clients = m;
        }
        let server = Server::start(address(bind)?, options).map_err(PyOSError::new_err)?;
        Ok(ProbeServer { inner: Some(server) })
    }

    /// "ADDRESS:PORT" it listens on.
    #[getter]
    fn address(&self) -> PyResult<String> {
        Ok(self.get()?.address().to_string())
    }

    /// Clients connected now, connections and tests since the start, clients refused.
    fn stats(&self) -> PyResult<(usize, u64, u64, u64)> {
        let s = self.get()?.stats();
        let n = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        Ok((s.clients.load(std::sync::atomic::Ordering::Relaxed), n(&s.connections), n(&s.tests_run), n(&s.refused)))
    }

    /// Data ports some test holds now.
    fn ports_held(&self) -> PyResult<Vec<u16>> {
        Ok(self.get()?.ports_held())
    }

    /// Waits up to `timeout_s` with the GIL released; True once stopped.
    fn wait(&self, py: Python<'_>, timeout_s: f64) -> PyResult<bool> {
        let server = self.get()?;
        Ok(py.detach(|| server.wait(seconds(timeout_s))))
    }

    /// Stops serving and ends every client's session (idempotent).
    fn stop(&mut self, py: Python<'_>) {
        if let Some(server) = self.inner.take() {
            py.detach(move || {
                server.stop();
                server.wait(Duration::from_secs(10));
                drop(server)
            });
        }
    }
}

/// One probe run against a daemon, on a thread from construction: `wait` until it returns
/// True, then `finish` for the result document.
#[pyclass(module = "fatpipe._core")]
pub struct ProbeRun {
    run: Lifecycle<CoreRun>,
}

impl Live for CoreRun {
    const WHAT: &'static str = "the probe run";

    fn wait_s(&self, timeout_s: f64) -> bool {
        self.wait(seconds(timeout_s))
    }

    /// ValueError for what the user asked that cannot be done, OSError for a failure,
    /// RuntimeError if the run was stopped.
    type Output = fatpipe_probe::document::ProbeOutput;

    fn finish(self) -> Result<Self::Output, PyErr> {
        CoreRun::finish(self).map_err(|e| match e {
            ProbeError::Refused(m) => PyValueError::new_err(m),
            ProbeError::System(m) => PyOSError::new_err(m),
            ProbeError::Stopped => PyRuntimeError::new_err(e.to_string()),
        })
    }
}

#[pymethods]
impl ProbeRun {
    #[new]
    /// `scenario`: the normalized scenario (a dict); `controller_sends[i]`: flow i is sent
    /// from this host (else the daemon's).
    #[pyo3(signature = (daemon, scenario, controller_sends, secret=None, data_port=None, connect_timeout_ps=None, pings=None))]
    fn new(
        daemon: &str,
        scenario: &Bound<'_, PyAny>,
        controller_sends: Vec<bool>,
        secret: Option<Vec<u8>>,
        data_port: Option<u16>,
        connect_timeout_ps: Option<u64>,
        pings: Option<u32>,
    ) -> PyResult<Self> {
        let mut options = ControllerOptions { secret, data_port, ..ControllerOptions::default() };
        if let Some(t) = connect_timeout_ps {
            options.connect_timeout_ps = t;
        }
        if let Some(p) = pings {
            options.pings = p;
        }
        Ok(ProbeRun {
            run: Lifecycle::new(CoreRun::start(
                address(daemon)?,
                crate::boundary::scenario(scenario)?,
                controller_sends,
                options,
            )),
        })
    }

    fn wait(&self, py: Python<'_>, timeout_s: f64) -> PyResult<bool> {
        self.run.wait(py, timeout_s)
    }

    #[getter]
    fn progress_ps(&self) -> PyResult<u64> {
        Ok(self.run.get()?.progress_ps())
    }

    /// The test's duration.
    #[getter]
    fn duration_ps(&self) -> PyResult<u64> {
        Ok(self.run.get()?.duration_ps())
    }

    fn stop(&self) -> PyResult<()> {
        self.run.get()?.stop();
        Ok(())
    }

    /// The result document ({"summary", "flow_series", "queue_series"}); raises ValueError
    /// for what the user asked that cannot be done, OSError for a failure, RuntimeError if
    /// the run was stopped.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.run.finish(py)
    }

    /// Stops the run and waits for it (idempotent).
    fn close(&mut self, py: Python<'_>) {
        self.run.close(py)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ProbeServer>()?;
    m.add_class::<ProbeRun>()?;
    m.add("PROBE_DEFAULT_PORT", fatpipe_probe::DEFAULT_PORT)?;
    m.add("PROBE_PROTOCOL_VERSION", fatpipe_probe::PROTOCOL_VERSION)?;
    Ok(())
}
