//! `fatpipe probe run`: the controller. It reaches the daemon, proves the secret, measures
//! the path over the control connection (base RTT by ping-pong, the path MTU), plans the
//! test, runs its own end beside the daemon's and puts the two ends' results together
//! (merge.rs). A `ProbeRun` does all of it on a thread, so that a caller can show progress
//! and stop it (closing the control connection stops the daemon's end at once).

use crate::document::{ProbeFacts, ProbeHost, ProbeOutput, ProbePath, TcpExtBySide};
use crate::end::{End, END_GRACE_PS};
use crate::merge;
use crate::plan::{Host, Plan};
use crate::protocol::{HostInfo, ToClient, ToDaemon};
use crate::wire::{Conn, WireError};
use crate::{auth, ip_of, MAX_RESULT_BYTES, PROTOCOL_VERSION, SOFTWARE};
use fatpipe_core::scenario::Scenario;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};
use fatpipe_emu::clock::{monotonic_ns, Clock};
use fatpipe_emu::traffic::tcp::fmt_ip;
use std::net::{SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The longest wait for the daemon's answer to anything but a test's result.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// Time 0 is this far after `start` is sent, plus two base RTTs: the daemon has the message
/// and every thread waits when it comes.
const START_MARGIN_PS: Time = 100 * PS_PER_MS;

#[derive(Clone, Debug)]
pub struct ControllerOptions {
    pub secret: Option<Vec<u8>>,
    /// The longest wait for the control connection and each data connection to open.
    pub connect_timeout_ps: Time,
    /// Ask the daemon for its data ports from this one on (flow i gets port + i).
    pub data_port: Option<u16>,
    /// Ping-pong exchanges that measure the base RTT.
    pub pings: u32,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions { secret: None, connect_timeout_ps: 10 * PS_PER_S, data_port: None, pings: 10 }
    }
}

/// Why a probe run failed, by whose move it is.
#[derive(Debug)]
pub enum ProbeError {
    /// What the user asked cannot be done: the scenario, the arguments, the secret, or a
    /// test the daemon refuses (an algorithm its host lacks, a port it does not own...).
    Refused(String),
    /// The daemon could not be reached, the connection failed, or an end failed.
    System(String),
    /// The run was stopped before its end.
    Stopped,
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProbeError::Refused(m) | ProbeError::System(m) => f.write_str(m),
            ProbeError::Stopped => f.write_str("the probe was stopped before its end"),
        }
    }
}

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// Time into the test, and its duration.
    progress_ps: AtomicU64,
    duration_ps: AtomicU64,
}

pub struct ProbeRun {
    shared: Arc<Shared>,
    worker: Option<JoinHandle<Result<ProbeOutput, ProbeError>>>,
}

impl ProbeRun {
    /// Starts a probe of the normalized scenario `scenario` against the daemon at `daemon`;
    /// flow i is sent from this host if `controller_sends[i]`, else from the daemon's.
    pub fn start(
        daemon: SocketAddrV4,
        scenario: Scenario,
        controller_sends: Vec<bool>,
        options: ControllerOptions,
    ) -> ProbeRun {
        let shared = Arc::new(Shared::default());
        // Known from the start, for a progress bar (the plan checks the scenario later).
        shared.duration_ps.store(scenario.duration_ps, Ordering::Relaxed);
        let s = shared.clone();
        let worker = std::thread::spawn(move || run(daemon, &scenario, &controller_sends, &options, &s));
        ProbeRun { shared, worker: Some(worker) }
    }

    /// Waits up to `timeout`; true once the run has ended.
    pub fn wait(&self, timeout: Duration) -> bool {
        let until = std::time::Instant::now() + timeout;
        loop {
            if self.worker.as_ref().is_none_or(|h| h.is_finished()) {
                return true;
            }
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn progress_ps(&self) -> Time {
        self.shared.progress_ps.load(Ordering::Relaxed)
    }

    pub fn duration_ps(&self) -> Time {
        self.shared.duration_ps.load(Ordering::Relaxed)
    }

    /// Stops the run: both ends stop at once.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    /// Waits for the end and returns the result document.
    pub fn finish(mut self) -> Result<ProbeOutput, ProbeError> {
        let worker = self.worker.take().expect("finish once");
        worker.join().unwrap_or_else(|_| Err(ProbeError::System("the probe's thread panicked".into())))
    }
}

impl Drop for ProbeRun {
    fn drop(&mut self) {
        self.stop();
        if let Some(h) = self.worker.take() {
            let _ = h.join();
        }
    }
}

fn system(what: impl std::fmt::Display) -> impl Fn(WireError) -> ProbeError {
    move |e| match e {
        // The daemon's own error line: a refusal of what was asked.
        WireError::Remote { message, .. } => ProbeError::Refused(format!("the daemon at {what} refused: {message}")),
        WireError::Version(m) => ProbeError::Refused(format!("the daemon at {what}: {m}")),
        other => ProbeError::System(format!("the daemon at {what}: {other}")),
    }
}

/// Path measurements over the control connection.
struct PathMeasure {
    rtts_ps: Vec<Time>,
    tcp_min_rtt_ps: Option<Time>,
    mtu_bytes: Option<u32>,
}

impl PathMeasure {
    fn base_rtt_ps(&self) -> Time {
        self.rtts_ps.iter().copied().min().unwrap_or(0)
    }
}

fn run(
    daemon: SocketAddrV4,
    scenario: &Scenario,
    controller_sends: &[bool],
    options: &ControllerOptions,
    shared: &Shared,
) -> Result<ProbeOutput, ProbeError> {
    let at = daemon.to_string();
    let timeout = Duration::from_nanos(options.connect_timeout_ps / PS_PER_NS);
    let stream = TcpStream::connect_timeout(&daemon.into(), timeout).map_err(|e| {
        ProbeError::System(format!("cannot reach the daemon at {at}: {e} (is `fatpipe probe serve` running there, and listening on that address?)"))
    })?;
    let (Some(local_ip), remote_ip) = (stream.local_addr().ok().and_then(ip_of), daemon.ip().octets()) else {
        return Err(ProbeError::System("the control connection has no IPv4 address".into()));
    };
    let mut conn = Conn::new(stream, MAX_RESULT_BYTES).map_err(|e| ProbeError::System(e.to_string()))?;
    let (daemon_host, authenticated) = handshake(&mut conn, &at, options)?;
    let path = measure_path(&mut conn, &at, options.pings)?;
    let local_host = HostInfo::local();
    let module_params = |m: &str, p: &str| std::fs::read_to_string(format!("/sys/module/{m}/parameters/{p}")).ok();
    let unknown = |_: &str, _: &str| None;
    let here = Host {
        info: &local_host,
        label: format!("this host ({})", local_host.hostname),
        module_params: &module_params,
    };
    let there = Host {
        info: &daemon_host,
        label: format!("the daemon's host {} ({})", fmt_ip(remote_ip), daemon_host.hostname),
        module_params: &unknown,
    };
    let plan = Plan::new(scenario, controller_sends, &here, &there).map_err(ProbeError::Refused)?;
    shared.duration_ps.store(plan.duration_ps, Ordering::Relaxed);
    let ports: Vec<Option<u16>> =
        (0..plan.flows.len()).map(|i| options.data_port.map(|p| p.saturating_add(i as u16))).collect();
    let (mut end, udp_ports) = End::prepare(
        &plan.setup(true, &[], &[]),
        &local_host.available_congestion_control,
        local_host.cap_net_admin,
        local_ip,
        remote_ip,
        options.connect_timeout_ps,
    )
    .map_err(ProbeError::Refused)?;
    let send = |conn: &mut Conn, m: &ToDaemon| {
        conn.send(m).map_err(|e| ProbeError::System(format!("the daemon at {at}: {e}")))
    };
    send(&mut conn, &ToDaemon::Setup { test: plan.setup(false, &ports, &udp_ports) })?;
    let ToClient::Ready { ports } = conn.read(ANSWER_TIMEOUT).map_err(system(&at))? else {
        return Err(ProbeError::System(format!("the daemon at {at} did not answer the setup with ready")));
    };
    end.connect(&ports).map_err(ProbeError::System)?;
    // Time 0: START_MARGIN_PS plus two RTTs from now here; at the daemon, from when the
    // message arrives, half an RTT later.
    let base_rtt = path.base_rtt_ps();
    let start_in = START_MARGIN_PS + 2 * base_rtt;
    let clock = Clock::start().shifted(start_in);
    send(&mut conn, &ToDaemon::Start { in_ps: start_in - base_rtt / 2 })?;
    end.start(clock);
    let ToClient::Started {} = conn.read(ANSWER_TIMEOUT).map_err(system(&at))? else {
        return Err(ProbeError::System(format!("the daemon at {at} did not answer start with started")));
    };
    let daemon_report = wait_for_result(&mut conn, &end, &at, shared)?;
    let controller_report = end.finish();
    let probe = ProbeFacts {
        protocol_version: PROTOCOL_VERSION,
        authenticated,
        controller: probe_host(&local_host, &fmt_ip(local_ip)),
        daemon: probe_host(&daemon_host, &at),
        path: ProbePath {
            base_rtt_ps: base_rtt,
            rtt_samples_ps: path.rtts_ps,
            control_tcp_min_rtt_ps: path.tcp_min_rtt_ps,
            path_mtu_bytes: path.mtu_bytes,
            // Time 0 is agreed over the control path: off by at most half its RTT.
            clock_offset_bound_ps: base_rtt / 2,
        },
        data_ports: ports,
        tcp_ext: TcpExtBySide::default(), // merge::document fills in both ends'
    };
    merge::document(&plan, &controller_report, &daemon_report, probe).map_err(ProbeError::System)
}

fn probe_host(h: &HostInfo, address: &str) -> ProbeHost {
    ProbeHost {
        address: address.to_string(),
        hostname: h.hostname.clone(),
        kernel: h.kernel.clone(),
        software: h.software.clone(),
        available_congestion_control: h.available_congestion_control.clone(),
        cap_net_admin: h.cap_net_admin,
    }
}

/// hello, hello, welcome: the version on both sides, and the secret proven both ways.
fn handshake(conn: &mut Conn, at: &str, options: &ControllerOptions) -> Result<(HostInfo, bool), ProbeError> {
    let ToClient::Hello { nonce: daemon_nonce, secret_required, .. } = conn.read(ANSWER_TIMEOUT).map_err(system(at))?
    else {
        return Err(ProbeError::System(format!("{at} did not greet with hello: is it a fatpipe probe daemon?")));
    };
    let secret = options.secret.as_deref();
    if secret_required && secret.is_none() {
        return Err(ProbeError::Refused(format!(
            "the daemon at {at} needs the shared secret: give --secret-file (or FATPIPE_PROBE_SECRET)"
        )));
    }
    let nonce = auth::nonce().map_err(|e| ProbeError::System(e.to_string()))?;
    let mac = secret.map(|s| auth::client_mac(s, &daemon_nonce, &nonce));
    conn.send(&ToDaemon::Hello { software: SOFTWARE.into(), nonce: nonce.clone(), mac })
        .map_err(|e| ProbeError::System(format!("the daemon at {at}: {e}")))?;
    let ToClient::Welcome { mac, host } = conn.read(ANSWER_TIMEOUT).map_err(system(at))? else {
        return Err(ProbeError::System(format!("the daemon at {at} did not welcome the client")));
    };
    if let Some(secret) = secret {
        match mac {
            Some(m) if auth::mac_matches(&m, &auth::daemon_mac(secret, &nonce, &daemon_nonce)) => {}
            Some(_) => {
                return Err(ProbeError::Refused(format!(
                    "the daemon at {at} did not prove it knows the shared secret: not the daemon you meant, or another secret"
                )))
            }
            None => {
                return Err(ProbeError::Refused(format!(
                    "the daemon at {at} runs without a shared secret, but one was given: start it with the same --secret-file"
                )))
            }
        }
    }
    Ok((host, secret.is_some()))
}

/// The base RTT (ping-pong over the control connection, the smallest of `pings`; the kernel's
/// min_rtt of the connection beside it) and the path MTU the kernel knows for the route.
fn measure_path(conn: &mut Conn, at: &str, pings: u32) -> Result<PathMeasure, ProbeError> {
    let mut rtts_ps = Vec::new();
    for seq in 0..u64::from(pings.max(1)) {
        let sent = monotonic_ns();
        conn.send(&ToDaemon::Ping { seq }).map_err(|e| ProbeError::System(format!("the daemon at {at}: {e}")))?;
        match conn.read(ANSWER_TIMEOUT).map_err(system(at))? {
            ToClient::Pong { seq: s } if s == seq => rtts_ps.push((monotonic_ns() - sent) * PS_PER_NS),
            _ => return Err(ProbeError::System(format!("the daemon at {at} did not answer ping {seq}"))),
        }
    }
    let fd = conn.stream();
    let tcp_min_rtt_ps = fatpipe_emu::traffic::tcp_info::read(fd)
        .ok()
        .map(|s| s.info.min_rtt_us)
        .filter(|&us| us > 0 && us != u32::MAX)
        .map(|us| u64::from(us) * PS_PER_US);
    Ok(PathMeasure { rtts_ps, tcp_min_rtt_ps, mtu_bytes: ip_mtu(fd) })
}

/// IP_MTU of a connected socket: the path MTU the kernel has for its route.
fn ip_mtu(stream: &TcpStream) -> Option<u32> {
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: IP_MTU writes one int.
    let ret = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_MTU,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (ret == 0 && mtu > 0).then_some(mtu as u32)
}

/// While this end runs: progress, the stop flag, and anything the daemon says; then the
/// daemon's result (it sends it when its end has finished).
fn wait_for_result(
    conn: &mut Conn,
    end: &End,
    at: &str,
    shared: &Shared,
) -> Result<crate::protocol::EndReport, ProbeError> {
    let duration = shared.duration_ps.load(Ordering::Relaxed);
    loop {
        if shared.stop.load(Ordering::Relaxed) {
            end.stop();
            return Err(ProbeError::Stopped);
        }
        shared.progress_ps.store(end.progress_ps(), Ordering::Relaxed);
        // The daemon stops by itself past its end and grace; a daemon silent that long
        // after has gone.
        if end.clock().is_some_and(|c| c.reached(duration + END_GRACE_PS + 30 * PS_PER_S)) {
            return Err(ProbeError::System(format!("the daemon at {at} sent no result after the test's end")));
        }
        match conn.read::<ToClient>(Duration::from_millis(50)) {
            Err(WireError::Timeout) => continue,
            Ok(ToClient::Result { end: report }) => return Ok(report),
            Ok(_) => return Err(ProbeError::System(format!("the daemon at {at} sent something else than the result"))),
            Err(e) => {
                end.stop();
                return Err(system(at)(e));
            }
        }
    }
}
