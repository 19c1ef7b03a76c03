//! One end of a probe test: the flows' sockets and applications on this host, sampled, and
//! what they measured. The controller runs one end and the daemon the other, with the same
//! code and the emulator's traffic engine (`fatpipe_emu::traffic`).
//!
//! The controller always opens the data connections and the daemon accepts them (only from
//! the controller's address, on ports it owns for the test), whichever end sends: a daemon
//! behind a firewall needs only its ports open.

use crate::ports::{PortLease, PortPool};
use crate::protocol::{EndFlow, EndReport, TestSetup};
use fatpipe_core::scenario::FlowSpec;
use fatpipe_core::source::udp::{UdpFlow, UdpSchedule};
use fatpipe_core::source::SourceSpec;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_emu::clock::Clock;
use fatpipe_emu::sampler::{self, SampledFlow, SamplerOutput};
use fatpipe_emu::traffic::app::{self, App, Obtain};
use fatpipe_emu::traffic::tcp::{fmt_ip, TcpListener, TcpOptions, TcpStream, Writer};
use fatpipe_emu::traffic::udp::{self, UdpSocket};
use fatpipe_emu::traffic::{Counters, Schedule};
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

/// A UDP sender here is paced by its host's own interface (a blocking write waits for it),
/// not by a modelled line: core's `UdpFlow` gets a line so fast it never holds a datagram.
const UNMODELLED_LINE_BPS: u64 = 1_000_000_000_000_000;
/// How long after the test's end an end may take to stop (its loops check every 20 ms; this
/// only guards against a thread stuck in the kernel) before it is told to stop.
pub const END_GRACE_PS: Time = 5 * PS_PER_S;
/// The most flows a test may have, the shortest sample interval, and the most series rows
/// (flows x samples) an end keeps: a bound on what a client can make a daemon hold.
pub const MAX_FLOWS: usize = 256;
pub const MIN_SAMPLE_INTERVAL_PS: Time = PS_PER_MS;
pub const MAX_SERIES_ROWS: u64 = 4_000_000;

struct FlowState {
    spec: FlowSpec,
    sends: bool,
    tcp: Option<TcpOptions>,
    quick_ack: bool,
    sender: Arc<OnceLock<TcpStream>>,
    receiver: Arc<OnceLock<TcpStream>>,
    counters: Arc<Counters>,
    listener: Option<TcpListener>,
    /// Kept open until the end is dropped, past its thread: a datagram still on its way at
    /// the test's end must find the socket, or an ICMP error goes back to the sender.
    udp: Option<Arc<UdpSocket>>,
    /// How a TCP flow at the connecting end opens its connection when it has a handshake.
    connect_at_start: Option<([u8; 4], u16)>,
}

pub struct End {
    flows: Vec<FlowState>,
    setup: TestSetup,
    local_ip: [u8; 4],
    peer_ip: [u8; 4],
    connect_timeout_ps: Time,
    stop: Arc<AtomicBool>,
    apps: Vec<JoinHandle<()>>,
    sampler: Option<JoinHandle<SamplerOutput>>,
    failure: Arc<Mutex<Option<String>>>,
    clock: Option<Clock>,
    tcp_ext_start: BTreeMap<String, u64>,
    _ports: Option<PortLease>,
}

/// The flows of a test checked as this end will run them; the first problem as one line.
/// `available`: this host's congestion control algorithms.
fn checked(setup: &TestSetup, available: &[String]) -> Result<Vec<FlowState>, String> {
    if setup.flows.is_empty() || setup.flows.len() > MAX_FLOWS {
        return Err(format!("test.flows: {} flows; a test has 1 to {MAX_FLOWS}", setup.flows.len()));
    }
    if setup.duration_ps == 0 {
        return Err("test.duration_ps: must be above 0".into());
    }
    if setup.sample_interval_ps < MIN_SAMPLE_INTERVAL_PS {
        return Err(format!(
            "test.sample_interval_ps: {} is below the shortest a probe samples at, 1 ms",
            setup.sample_interval_ps
        ));
    }
    let rows = (setup.duration_ps / setup.sample_interval_ps + 1).saturating_mul(setup.flows.len() as u64);
    if rows > MAX_SERIES_ROWS {
        return Err(format!("test: {rows} series rows (flows x samples) is above the {MAX_SERIES_ROWS} a probe keeps; sample less often"));
    }
    let mut flows = Vec::new();
    for (i, plan) in setup.flows.iter().enumerate() {
        let spec: FlowSpec =
            serde_json::from_value(plan.spec.clone()).map_err(|e| format!("test.flows[{i}].spec: {e}"))?;
        // The rules every scenario's flows meet (`FlowSpec::check`, as `Scenario::validate`
        // runs it): a peer's flow is held to them before anything runs it.
        spec.check().map_err(|e| format!("test.flows[{i}].spec{e}"))?;
        let label = format!("test.flows[{i}] ({})", spec.name);
        let udp = spec.source.is_udp();
        if matches!(spec.source, SourceSpec::Http(_)) {
            return Err(format!("{label}: HTTP workloads cannot be probed (bulk, burst and UDP sources can)"));
        }
        if matches!(&spec.source, SourceSpec::Bulk(b) if b.transfers.is_some()) {
            return Err(format!("{label}: transfers cannot be probed yet (one connection per flow)"));
        }
        if udp == plan.tcp.is_some() {
            return Err(format!("{label}: a TCP flow has tcp options, a UDP flow none"));
        }
        if !udp && spec.tcp.is_none() {
            return Err(format!("{label}.spec.tcp: missing"));
        }
        if let Some(cc) = plan.tcp.as_ref().and_then(|t| t.congestion.as_ref()) {
            if !available.iter().any(|a| a == cc) {
                return Err(format!(
                    "{label}: congestion control {cc:?} is not available on this host; available: {} (/proc/sys/net/ipv4/tcp_available_congestion_control)",
                    available.join(" ")
                ));
            }
        }
        flows.push(FlowState {
            spec,
            sends: plan.sends,
            tcp: plan.tcp.clone(),
            quick_ack: plan.quick_ack,
            sender: Arc::new(OnceLock::new()),
            receiver: Arc::new(OnceLock::new()),
            counters: Arc::new(Counters::default()),
            listener: None,
            udp: None,
            connect_at_start: None,
        });
    }
    Ok(flows)
}

impl End {
    fn new(
        setup: &TestSetup,
        flows: Vec<FlowState>,
        local_ip: [u8; 4],
        peer_ip: [u8; 4],
        connect_timeout_ps: Time,
    ) -> End {
        End {
            flows,
            setup: setup.clone(),
            local_ip,
            peer_ip,
            connect_timeout_ps,
            stop: Arc::new(AtomicBool::new(false)),
            apps: Vec::new(),
            sampler: None,
            failure: Arc::new(Mutex::new(None)),
            clock: None,
            tcp_ext_start: BTreeMap::new(),
            _ports: None,
        }
    }

    /// The daemon's end: a listener (TCP) or a socket (UDP) per flow on `local_ip`, each on
    /// a port of `pool` held for this test; returns the end and the ports, in flow order.
    pub fn listen(
        setup: &TestSetup,
        available: &[String],
        force_buffers: bool,
        local_ip: [u8; 4],
        peer_ip: [u8; 4],
        pool: &Arc<PortPool>,
    ) -> Result<(End, Vec<u16>), String> {
        let mut flows = checked(setup, available)?;
        let mut lease = PortLease::new(pool.clone());
        let mut ports = Vec::new();
        for (i, (f, plan)) in flows.iter_mut().zip(&setup.flows).enumerate() {
            let what = format!("test.flows[{i}] ({})", f.spec.name);
            if let Some(opts) = &mut f.tcp {
                opts.force_buffers = force_buffers;
                let opts = opts.clone();
                let listener = lease.claim(plan.port, |port| {
                    let l = TcpListener::bind(local_ip, port, &opts)?;
                    let bound = l.local_port()?;
                    Ok((l, bound))
                });
                let (listener, port) = listener.map_err(|e| format!("{what}: {e}"))?;
                f.listener = Some(listener);
                ports.push(port);
            } else {
                let peer_port =
                    plan.peer_udp_port.ok_or_else(|| format!("{what}: a UDP flow needs the client's peer_udp_port"))?;
                let sock = lease.claim(plan.port, |port| {
                    let s = UdpSocket::bind(local_ip, port)?;
                    let bound = s.local_port()?;
                    // Only the client's datagrams count; ours go only to the client.
                    s.connect(peer_ip, peer_port)?;
                    Ok((s, bound))
                });
                let (sock, port) = sock.map_err(|e| format!("{what}: {e}"))?;
                f.udp = Some(Arc::new(sock));
                ports.push(port);
            }
        }
        let mut end = End::new(setup, flows, local_ip, peer_ip, 0);
        end._ports = Some(lease);
        Ok((end, ports))
    }

    /// The controller's end: a UDP socket per UDP flow on `local_ip` (their ports go to the
    /// daemon in the setup; 0 for TCP flows).
    pub fn prepare(
        setup: &TestSetup,
        available: &[String],
        force_buffers: bool,
        local_ip: [u8; 4],
        peer_ip: [u8; 4],
        connect_timeout_ps: Time,
    ) -> Result<(End, Vec<u16>), String> {
        let mut flows = checked(setup, available)?;
        let mut ports = Vec::new();
        for f in &mut flows {
            if let Some(opts) = &mut f.tcp {
                opts.force_buffers = force_buffers;
                ports.push(0);
            } else {
                let sock = UdpSocket::bind(local_ip, 0).map_err(|e| format!("flow {}: {e}", f.spec.name))?;
                ports.push(sock.local_port().map_err(|e| e.to_string())?);
                f.udp = Some(Arc::new(sock));
            }
        }
        Ok((End::new(setup, flows, local_ip, peer_ip, connect_timeout_ps), ports))
    }

    /// Controller: connects to the daemon's `ports` -- now for TCP flows that start
    /// established (in parallel, so their handshakes overlap), at their start for those with
    /// `tcp.handshake`.
    pub fn connect(&mut self, ports: &[u16]) -> Result<(), String> {
        if ports.len() != self.flows.len() {
            return Err(format!("the daemon gave {} ports for {} flows", ports.len(), self.flows.len()));
        }
        let (local, remote, timeout) = (self.local_ip, self.peer_ip, self.connect_timeout_ps);
        for (f, &port) in self.flows.iter_mut().zip(ports) {
            if f.tcp.is_some() && f.spec.tcp().handshake {
                f.connect_at_start = Some((remote, port));
            }
        }
        let results: Vec<Option<io::Result<TcpStream>>> = std::thread::scope(|s| {
            let handles: Vec<_> = self
                .flows
                .iter()
                .zip(ports)
                .map(|(f, &port)| {
                    if let Some(sock) = &f.udp {
                        return Some(s.spawn(move || sock.connect(remote, port).map(|_| None)));
                    }
                    if f.connect_at_start.is_some() {
                        return None;
                    }
                    let opts = f.tcp.clone().expect("TCP");
                    Some(s.spawn(move || TcpStream::connect((local, 0), (remote, port), &opts, timeout).map(Some)))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.map(|h| h.join().unwrap_or_else(|_| Err(io::Error::other("connect panicked"))).transpose()))
                .map(Option::flatten)
                .collect()
        });
        for ((f, result), port) in self.flows.iter().zip(results).zip(ports) {
            match result {
                Some(Ok(stream)) => {
                    let slot = if f.sends { &f.sender } else { &f.receiver };
                    let _ = slot.set(stream);
                }
                Some(Err(e)) => {
                    return Err(format!("flow {}: connecting to {}:{port}: {e}", f.spec.name, fmt_ip(remote)))
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Starts the applications and the sampler; `clock` reads 0 at the test's time 0.
    pub fn start(&mut self, clock: Clock) {
        self.clock = Some(clock);
        self.tcp_ext_start = read_tcp_ext();
        let end_ps = self.setup.duration_ps;
        for i in 0..self.flows.len() {
            let f = &mut self.flows[i];
            let schedule =
                Schedule { clock, start_ps: f.spec.source.start_ps(), stop_ps: f.spec.source.stop_ps(), end_ps };
            let (counters, stop) = (f.counters.clone(), self.stop.clone());
            if let Some(sock) = f.udp.clone() {
                if f.sends {
                    let schedule_of = UdpSchedule::of(&f.spec.source).expect("a UDP source");
                    let flow =
                        UdpFlow::new(i as u32, 0, 1, schedule_of, f.spec.source.stop_ps(), UNMODELLED_LINE_BPS, 0);
                    self.spawn(move || udp::send(&sock, flow, &schedule, &counters, &stop));
                } else {
                    self.spawn(move || udp::receive(&sock, &schedule, &counters, &stop));
                }
                continue;
            }
            let opts = f.tcp.clone().expect("TCP");
            let obtain = match (f.listener.take(), f.connect_at_start) {
                (Some(listener), _) => Obtain::Accept { listener, peer: Some(self.peer_ip) },
                (None, Some(remote)) => {
                    let local = self.local_ip;
                    let connect: app::Connect =
                        Box::new(move |timeout| TcpStream::connect((local, 0), remote, &opts, timeout));
                    Obtain::ConnectAtStart { connect, timeout_ps: self.connect_timeout_ps }
                }
                (None, None) => Obtain::Open,
            };
            let (slot, application) = if f.sends {
                (f.sender.clone(), App::Send(Writer::of(&f.spec.source).expect("a TCP source")))
            } else {
                let drain_rate_bps = f.spec.tcp().receiver_drain_rate_bps;
                (f.receiver.clone(), App::Receive { drain_rate_bps, quick_ack: f.quick_ack })
            };
            self.spawn(move || app::run(obtain, &slot, application, &schedule, &counters, &stop));
        }
        let sampled = self
            .flows
            .iter()
            .map(|f| SampledFlow {
                udp: f.tcp.is_none(),
                sender: f.sender.clone(),
                receiver: f.receiver.clone(),
                counters: f.counters.clone(),
            })
            .collect();
        let schedule = Schedule { clock, start_ps: 0, stop_ps: None, end_ps };
        let (stop, interval) = (self.stop.clone(), self.setup.sample_interval_ps);
        self.sampler = Some(std::thread::spawn(move || sampler::run(sampled, interval, schedule, None, &stop)));
    }

    /// Runs `f` on a thread; an error is kept as the end's failure and stops the end.
    fn spawn(&mut self, f: impl FnOnce() -> io::Result<()> + Send + 'static) {
        let (failure, stop) = (self.failure.clone(), self.stop.clone());
        self.apps.push(std::thread::spawn(move || {
            fatpipe_emu::clock::tight_timer_slack();
            if let Err(e) = f() {
                failure.lock().expect("unpoisoned").get_or_insert(e.to_string());
                stop.store(true, Ordering::Relaxed);
            }
        }));
    }

    /// Whether every thread has ended.
    pub fn finished(&self) -> bool {
        self.sampler.as_ref().is_none_or(|h| h.is_finished()) && self.apps.iter().all(|h| h.is_finished())
    }

    /// The test's clock (time 0 at its start), once started.
    pub fn clock(&self) -> Option<Clock> {
        self.clock
    }

    /// Time into the test (0 before it starts).
    pub fn progress_ps(&self) -> Time {
        self.clock.map_or(0, |c| c.now().min(self.setup.duration_ps))
    }

    /// Stops every thread now (the test ends early).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether the test's end plus `END_GRACE_PS` has passed: the end must stop now.
    pub fn overdue(&self) -> bool {
        self.clock.is_some_and(|c| c.reached(self.setup.duration_ps + END_GRACE_PS))
    }

    /// Waits for every thread (stopping them past the grace), then reports.
    pub fn finish(mut self) -> EndReport {
        while !self.finished() {
            if self.overdue() {
                self.stop();
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        for h in self.apps.drain(..) {
            if h.join().is_err() {
                self.failure.lock().expect("unpoisoned").get_or_insert("an application thread panicked".into());
            }
        }
        let sampled = self.sampler.take().and_then(|h| h.join().ok());
        let mut failure = self.failure.lock().expect("unpoisoned").take();
        let Some(sampled) = sampled else {
            return EndReport {
                failure: failure.or(Some("the sampler did not finish".into())),
                ..EndReport::default()
            };
        };
        if failure.is_none() && self.stopped() {
            failure = Some("stopped before the test's end".into());
        }
        let flows = self
            .flows
            .iter()
            .zip(&sampled.finals)
            .map(|(f, last)| {
                let socket = if f.sends { f.sender.get() } else { f.receiver.get() };
                // The sending end reads its TCP_INFO once more, now that its application has
                // stopped: the controller finishes only after the daemon's report, so a
                // sender here is read after the receiver there, and the bytes it sent are
                // never fewer than the bytes that arrived (the two ends' samplers end at
                // nearly the same instant; at loopback's tens of Gb/s "nearly" was 200 KB).
                let sender_now = if f.sends { f.sender.get().and_then(|s| s.info().ok()) } else { None };
                let mut counters = f.counters.snapshot();
                if f.tcp.is_some() && !f.sends {
                    // Bytes read as of the receiver's last TCP_INFO (`FinalState::read_bytes`).
                    counters.read = last.read_bytes;
                }
                EndFlow {
                    counters,
                    tcp_info: if f.sends { sender_now.or(last.sender) } else { last.receiver },
                    granted: socket.and_then(|s| s.granted().ok()),
                    max_peer_window_bytes: last.max_peer_window_bytes,
                }
            })
            .collect();
        let tcp_ext = read_tcp_ext()
            .into_iter()
            .filter_map(|(k, v)| {
                let moved = v.saturating_sub(self.tcp_ext_start.get(&k).copied().unwrap_or(0));
                (moved > 0).then_some((k, moved))
            })
            .collect();
        EndReport { flows, series: serde_json::to_value(&sampled.series).expect("columns serialize"), tcp_ext, failure }
    }
}

impl Drop for End {
    fn drop(&mut self) {
        self.stop();
        for h in self.apps.drain(..) {
            let _ = h.join();
        }
        if let Some(h) = self.sampler.take() {
            let _ = h.join();
        }
    }
}

/// This host's TcpExt counters (of the calling thread's network namespace).
fn read_tcp_ext() -> BTreeMap<String, u64> {
    std::fs::read_to_string("/proc/thread-self/net/netstat")
        .ok()
        .and_then(|text| fatpipe_emu::output::tcp_ext(&text))
        .unwrap_or_default()
}
