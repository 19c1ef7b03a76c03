//! An emulation: a scenario's hosts as network namespaces, its network in the relay, and its
//! flows as applications on real sockets.
//!
//! Life of a run:
//! 1. `Emulation::new` checks the scenario can be emulated (privileges, sources, algorithms,
//!    settings that need the same host-wide value), makes a namespace per host with its
//!    sysctls, TUN device, address and routes, starts the relay, and connects every flow
//!    that starts established (the scenario's default) -- its handshake crosses the emulated
//!    path before time 0, as a simulation's connection is open at its start;
//! 2. `start` fixes time 0 a few milliseconds ahead and starts the applications and the
//!    sampler; flows with `tcp.handshake` connect at their start;
//! 3. `wait` returns once the run's duration has passed and every thread has stopped;
//!    `stop` ends a run early (Ctrl-C);
//! 4. `finish` gathers the results (`output.rs`); dropping the emulation stops and joins
//!    every thread and closes every descriptor, which removes the namespaces.

use crate::bpf_cc::BpfPolicy;
use crate::clock::Clock;
use crate::coalesce;
use crate::kernel::{self, FlowKnobs, RouteMetrics};
use crate::netns::{self, Interfaces, Namespace};
use crate::output::{self, EmulatedFlow, EmulatedRun};
use crate::relay::{self, FlowPorts, Port, Relay, RelayOptions, RelayReport, Shared};
use crate::sampler::{self, SampledFlow, SamplerOutput};
use crate::struct_ops::{RegisterError, Registration};
use crate::traffic::app::{self, App, Obtain};
use crate::traffic::tcp::{TcpListener, TcpStream, Writer};
use crate::traffic::udp::UdpSocket;
use crate::traffic::{self, Counters, Schedule};
use crate::tun::{Offload, Tun, DEVICE};
use fatpipe_core::capture::{node_ip, Capture};
use fatpipe_core::scenario::{FlowSpec, Scenario};
use fatpipe_core::source::udp::{UdpFlow, UdpSchedule};
use fatpipe_core::source::SourceSpec;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

/// Time 0 is this far after `start` is called, so every thread is waiting when it comes.
const START_MARGIN_PS: Time = 20 * PS_PER_MS;
/// How long after its end a run's threads may take to finish before they are told to stop
/// (they check at least every 20 ms; this only guards against a thread stuck in the kernel).
const OVERRUN_PS: Time = 10 * PS_PER_S;
/// A host's TUN device queue (Linux's Ethernet default): the kernel drops there only if
/// the relay falls this many packets behind.
const TUN_QUEUE_PACKETS: u32 = 1000;
/// Ports: the data sender's (Linux's first ephemeral port, plus the flow's index) and the
/// receiver's (iperf's 5001, plus the flow's index, so every flow has its own listener).
const SENDER_PORT_BASE: u16 = 32768;
const RECEIVER_PORT_BASE: u16 = 5001;

#[derive(Clone, Debug)]
pub struct Options {
    /// See `RelayOptions`.
    pub spin_margin_ps: Time,
    pub realtime_priority: bool,
    /// Longest wait for a connection to open.
    pub connect_timeout_ps: Time,
    /// When a flow's algorithm runs as fatpipe's BPF program (`bpf_cc.rs`).
    pub bpf: BpfPolicy,
    /// Ask the TUN devices for offloads (`tun::Offload::Tso`: the hosts' kernels hand the
    /// relay TSO super-packets and take GRO super-packets back); false: one packet per
    /// system call, as before.
    pub tun_offload: bool,
}

impl Default for Options {
    fn default() -> Self {
        // No spinning by default: waking 20 us early (about this VM's median wake-up delay)
        // brings the median release lateness from ~20 us to ~3 us, but spinning through
        // every wake-up costs the relay a quarter of a core at 100 Mb/s and caps the rate
        // it sustains (docs/benchmarks.md); 20 us is nothing next to the RTTs fatpipe models.
        // Offloads on: a host's TCP meets a device as on a NIC with TSO and GRO, as a current
        // kernel runs, and the relay spends one system call per super-packet
        // (docs/benchmarks.md, "Emulator").
        Options {
            spin_margin_ps: 0,
            realtime_priority: true,
            connect_timeout_ps: 10 * PS_PER_S,
            bpf: BpfPolicy::Auto,
            tun_offload: true,
        }
    }
}

/// Why an emulation cannot run, by whose move it is.
#[derive(Debug)]
pub enum Error {
    /// Not root (no CAP_SYS_ADMIN / CAP_NET_ADMIN).
    Privileges(String),
    /// The scenario asks for something the emulator or the kernel cannot do.
    Scenario(String),
    /// The system failed (a system call, a connection that never opened, a thread).
    System(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Privileges(m) | Error::Scenario(m) | Error::System(m) => f.write_str(m),
        }
    }
}

fn system(what: &str) -> impl Fn(io::Error) -> Error + '_ {
    move |e| Error::System(format!("{what}: {e}"))
}

pub(crate) struct Host {
    pub node: u32,
    pub ns: Namespace,
    pub tun: Tun,
}

/// A flow's sockets, applications and what the kernel granted.
pub(crate) struct FlowState {
    pub spec: FlowSpec,
    pub knobs: Option<FlowKnobs>,
    pub ports: FlowPorts,
    pub sender: Arc<OnceLock<TcpStream>>,
    pub receiver: Arc<OnceLock<TcpStream>>,
    listener: Option<TcpListener>,
    udp_sockets: Option<(UdpSocket, UdpSocket)>,
    pub counters: Arc<Counters>,
}

impl FlowState {
    /// The flow's part of the result document's input, once its threads have ended.
    fn at_end(&self) -> EmulatedFlow<'_> {
        EmulatedFlow {
            spec: &self.spec,
            udp: self.ports.udp,
            counters: self.counters.snapshot(),
            knobs: self.knobs.as_ref(),
            granted_sender: self.sender.get().and_then(|s| s.granted().ok()),
            granted_receiver: self.receiver.get().and_then(|s| s.granted().ok()),
        }
    }
}

pub struct Emulation {
    pub(crate) scenario: Scenario,
    clock: Clock,
    pub(crate) shared: Arc<Shared>,
    pub(crate) hosts: Vec<Host>,
    pub(crate) flows: Vec<FlowState>,
    relay: Option<JoinHandle<io::Result<RelayReport>>>,
    apps: Vec<(String, JoinHandle<()>)>,
    sampler: Option<JoinHandle<SamplerOutput>>,
    /// The first error an application thread met (it also stops the run).
    failure: Arc<Mutex<Option<String>>>,
    pub(crate) notes: Vec<String>,
    pub(crate) options: Options,
    /// How long the namespaces and connections took to set up.
    pub(crate) setup_ps: Time,
    pub(crate) available: Vec<String>,
    /// Why the kernel refused the devices' offloads, if it did (the relay then passes one
    /// packet per system call).
    pub(crate) offload_refused: Option<String>,
    /// The BPF congestion controls registered for this run: last, so that they are
    /// unregistered after every socket has closed.
    _registrations: Vec<Registration>,
}

/// The kernel's congestion control algorithms (modules are machine-wide, so every namespace
/// offers the same).
pub fn available_algorithms() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

impl Emulation {
    /// Sets up the emulation of the normalized scenario (its captures' paths are where the
    /// pcap files go).
    pub fn new(mut scenario: Scenario, options: Options) -> Result<Emulation, Error> {
        // The relay drives links through offers and arrivals only: a discipline that
        // decides at dequeue (CoDel, FQ-CoDel) needs the simulation's dequeue events.
        if let Some((i, l)) = scenario.links.iter().enumerate().find(|(_, l)| l.queue.holds_packets()) {
            return Err(Error::Scenario(format!(
                "links[{i}] ({}).queue: this discipline is not emulated yet (the relay runs drop-tail and RED); \
                 run it with fatpipe run",
                l.name
            )));
        }
        // Start jitter: the simulation's own draw, so a flow starts when it would there.
        let seed = scenario.seed;
        for f in &mut scenario.flows {
            f.source.delay_start(fatpipe_core::sim::start_jitter(seed, f));
        }
        if !netns::has_privileges() {
            return Err(Error::Privileges(
                "emulation needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) to create network namespaces and TUN devices"
                    .into(),
            ));
        }
        if !std::path::Path::new("/dev/net/tun").exists() {
            return Err(Error::System("/dev/net/tun is missing: load the tun module (modprobe tun)".into()));
        }
        let available = available_algorithms();
        let mut registrations = Vec::new();
        let flows = plan_flows(&scenario, &available, options.bpf, &mut registrations)?;
        let mut notes = Vec::new();
        for (f, spec) in flows.iter().zip(&scenario.flows) {
            for n in f.knobs.iter().flat_map(|k| &k.notes) {
                notes.push(format!("{}: {n}", spec.name));
            }
        }
        coalesce::per_node(&scenario).map_err(Error::Scenario)?;
        for spec in &scenario.flows {
            for n in spec.tcp.as_ref().and_then(|t| t.host.as_ref()).map(coalesce::host_notes).unwrap_or_default() {
                notes.push(format!("{}: {n}", spec.name));
            }
        }
        let plans = host_plans(&scenario, &flows)?;
        let clock = Clock::start();
        let mut hosts = Vec::new();
        let mut offload_refused = None;
        let offload = if options.tun_offload { Offload::Tso } else { Offload::None };
        for plan in plans {
            let name = scenario.nodes[plan.node as usize].name.clone();
            let (ns, (tun, refused)) = Namespace::create(&name, || setup_host(&plan, offload))
                .map_err(|e| Error::System(format!("host {name}: {e}")))?;
            if let Some(why) = refused {
                offload_refused.get_or_insert(format!("host {name}: {why}"));
            }
            hosts.push(Host { node: plan.node, ns, tun });
        }
        let shared = Arc::new(Shared::new(flows.len()));
        let mut emulation = Emulation {
            scenario,
            clock,
            shared,
            hosts,
            flows,
            relay: None,
            apps: Vec::new(),
            sampler: None,
            failure: Arc::new(Mutex::new(None)),
            notes,
            options,
            setup_ps: 0,
            available,
            offload_refused,
            _registrations: registrations,
        };
        emulation.start_relay()?;
        emulation.open_sockets()?;
        emulation.setup_ps = emulation.clock.now();
        Ok(emulation)
    }

    fn start_relay(&mut self) -> Result<(), Error> {
        let mut captures = Vec::new();
        for spec in &self.scenario.captures {
            captures.push(Capture::create(spec.clone()).map_err(Error::System)?);
        }
        let rx = coalesce::per_node(&self.scenario).map_err(Error::Scenario)?;
        let ports = self
            .hosts
            .iter()
            .map(|h| Port {
                node: h.node,
                tun: h.tun.raw(),
                vnet: h.tun.offload() == Offload::Tso,
                rx: rx[h.node as usize],
            })
            .collect();
        let flow_ports = self.flows.iter().map(|f| f.ports).collect();
        let options = RelayOptions {
            spin_margin_ps: self.options.spin_margin_ps,
            realtime_priority: self.options.realtime_priority,
        };
        let relay = Relay::new(&self.scenario, self.clock, self.shared.clone(), ports, flow_ports, captures, options);
        let handle = std::thread::Builder::new()
            .name("fatpipe-relay".into())
            .spawn(move || relay.run())
            .map_err(system("relay thread"))?;
        self.relay = Some(handle);
        Ok(())
    }

    fn host(&self, node: u32) -> &Host {
        self.hosts.iter().find(|h| h.node == node).expect("every flow's hosts have namespaces")
    }

    /// Listeners and UDP sockets for every flow; connections for those that start
    /// established (one thread per connection, so their handshakes overlap).
    fn open_sockets(&mut self) -> Result<(), Error> {
        for i in 0..self.flows.len() {
            let (spec, ports) = (&self.flows[i].spec, self.flows[i].ports);
            let (src, dst) = (self.host(spec.src), self.host(spec.dst));
            let what = format!("flows[{i}] ({})", spec.name);
            if ports.udp {
                let rx =
                    dst.ns.run(|| UdpSocket::bind(node_ip(spec.dst), ports.receiver_port)).map_err(system(&what))?;
                let tx = src.ns.run(|| {
                    let s = UdpSocket::bind(node_ip(spec.src), ports.sender_port)?;
                    s.connect(node_ip(spec.dst), ports.receiver_port)?;
                    Ok(s)
                });
                self.flows[i].udp_sockets = Some((tx.map_err(system(&what))?, rx));
            } else {
                let opts = self.flows[i].knobs.as_ref().expect("TCP flows have knobs").receiver.clone();
                let listener = dst
                    .ns
                    .run(|| TcpListener::bind(node_ip(spec.dst), ports.receiver_port, &opts))
                    .map_err(system(&what))?;
                self.flows[i].listener = Some(listener);
            }
        }
        let timeout = self.options.connect_timeout_ps;
        let results: Vec<(usize, io::Result<TcpStream>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..self.flows.len())
                .filter(|&i| !self.flows[i].ports.udp && !self.flows[i].spec.tcp().handshake)
                .map(|i| {
                    let f = &self.flows[i];
                    let ns = &self.host(f.spec.src).ns;
                    let opts = f.knobs.as_ref().expect("TCP").sender.clone();
                    let (src, dst, ports) = (f.spec.src, f.spec.dst, f.ports);
                    (
                        i,
                        s.spawn(move || {
                            ns.run(|| {
                                TcpStream::connect(
                                    (node_ip(src), ports.sender_port),
                                    (node_ip(dst), ports.receiver_port),
                                    &opts,
                                    timeout,
                                )
                            })
                        }),
                    )
                })
                .collect();
            handles
                .into_iter()
                .map(|(i, h)| (i, h.join().unwrap_or_else(|_| Err(io::Error::other("connect panicked")))))
                .collect()
        });
        for (i, result) in results {
            let name = self.flows[i].spec.name.clone();
            let stream =
                result.map_err(|e| Error::System(format!("flows[{i}] ({name}): the connection did not open: {e}")))?;
            let listener = self.flows[i].listener.take().expect("listener");
            let accepted = listener
                .accept(timeout)
                .map_err(|e| Error::System(format!("flows[{i}] ({name}): the receiver did not accept: {e}")))?;
            let _ = self.flows[i].sender.set(stream);
            let _ = self.flows[i].receiver.set(accepted);
        }
        Ok(())
    }

    /// Starts the run: time 0 is a few milliseconds from now.
    pub fn start(&mut self) -> Result<(), Error> {
        let epoch = self.clock.now() + START_MARGIN_PS;
        self.shared.epoch_ps.store(epoch, Ordering::Release);
        let clock = self.clock.shifted(epoch);
        let duration = self.scenario.duration_ps;
        for i in 0..self.flows.len() {
            let f = &mut self.flows[i];
            let schedule = Schedule {
                clock,
                start_ps: f.spec.source.start_ps(),
                stop_ps: f.spec.source.stop_ps(),
                end_ps: duration,
            };
            let name = f.spec.name.clone();
            if let Some((tx, rx)) = f.udp_sockets.take() {
                let schedule_of = UdpSchedule::of(&f.spec.source).expect("a UDP source");
                let line = first_link(&self.scenario, &f.spec);
                let flow = UdpFlow::new(
                    i as u32,
                    f.spec.src,
                    f.spec.dst,
                    schedule_of,
                    f.spec.source.stop_ps(),
                    line.0,
                    line.1,
                );
                let counters = f.counters.clone();
                let (c, stop) = (counters.clone(), self.shared.clone());
                self.spawn(format!("{name} udp sender"), move || {
                    traffic::udp::send(&tx, flow, &schedule, &c, &stop.stop)
                });
                let stop = self.shared.clone();
                self.spawn(format!("{name} udp receiver"), move || {
                    traffic::udp::receive(&rx, &schedule, &counters, &stop.stop)
                });
                continue;
            }
            self.spawn_tcp(i, schedule)?;
        }
        let sampled = self
            .flows
            .iter()
            .map(|f| SampledFlow {
                udp: f.ports.udp,
                sender: f.sender.clone(),
                receiver: f.receiver.clone(),
                counters: f.counters.clone(),
            })
            .collect();
        let schedule = Schedule { clock, start_ps: 0, stop_ps: None, end_ps: duration };
        let (shared, interval) = (self.shared.clone(), self.scenario.sample_interval_ps);
        let realtime = self.options.realtime_priority;
        self.sampler = Some(
            std::thread::Builder::new()
                .name("fatpipe-sampler".into())
                .spawn(move || {
                    // Samples on time, like the applications (below the relay).
                    if realtime {
                        relay::set_realtime_priority(relay::APPLICATION_PRIORITY);
                    }
                    sampler::run(sampled, interval, schedule, Some(shared.clone()), &shared.stop)
                })
                .map_err(system("sampler thread"))?,
        );
        Ok(())
    }

    fn spawn_tcp(&mut self, i: usize, schedule: Schedule) -> Result<(), Error> {
        let f = &mut self.flows[i];
        let name = f.spec.name.clone();
        let knobs = f.knobs.clone().expect("TCP flows have knobs");
        let writer = Writer::of(&f.spec.source).expect("checked by plan_flows");
        // A flow with a handshake connects when its application starts, from its host.
        let obtain = if f.spec.tcp().handshake {
            let (src, dst, ports) = (f.spec.src, f.spec.dst, f.ports);
            let ns_src = self.host(src).ns.try_clone().map_err(system(&name))?;
            let opts = knobs.sender.clone();
            let connect: app::Connect = Box::new(move |timeout_ps| {
                ns_src.enter()?;
                TcpStream::connect(
                    (node_ip(src), ports.sender_port),
                    (node_ip(dst), ports.receiver_port),
                    &opts,
                    timeout_ps,
                )
            });
            Obtain::ConnectAtStart { connect, timeout_ps: self.options.connect_timeout_ps }
        } else {
            Obtain::Open
        };
        let f = &mut self.flows[i];
        let (sender, counters, shared) = (f.sender.clone(), f.counters.clone(), self.shared.clone());
        self.spawn(format!("{name} sender"), move || {
            app::run(obtain, &sender, App::Send(writer), &schedule, &counters, &shared.stop)
        });
        let f = &mut self.flows[i];
        let obtain = match f.listener.take() {
            Some(listener) => Obtain::Accept { listener, peer: None },
            None => Obtain::Open,
        };
        let (receiver, counters, shared) = (f.receiver.clone(), f.counters.clone(), self.shared.clone());
        let receive = App::Receive { drain_rate_bps: f.spec.tcp().receiver_drain_rate_bps, quick_ack: knobs.quick_ack };
        self.spawn(format!("{name} receiver"), move || {
            app::run(obtain, &receiver, receive, &schedule, &counters, &shared.stop)
        });
        Ok(())
    }

    /// Runs `f` on a named thread; an error is kept as the run's failure and stops the run.
    fn spawn(&mut self, name: String, f: impl FnOnce() -> io::Result<()> + Send + 'static) {
        let (failure, shared) = (self.failure.clone(), self.shared.clone());
        let label = name.clone();
        let realtime = self.options.realtime_priority;
        let handle =
            std::thread::Builder::new().name(format!("fp {name}").chars().take(15).collect()).spawn(move || {
                crate::clock::tight_timer_slack();
                if realtime {
                    relay::set_realtime_priority(relay::APPLICATION_PRIORITY);
                }
                if let Err(e) = f() {
                    failure.lock().expect("unpoisoned").get_or_insert(format!("{label}: {e}"));
                    shared.stop.store(true, Ordering::Relaxed);
                }
            });
        match handle {
            Ok(h) => self.apps.push((name, h)),
            Err(e) => {
                self.failure.lock().expect("unpoisoned").get_or_insert(format!("{name}: cannot start a thread: {e}"));
                self.shared.stop.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Waits up to `timeout_ps` for the run to end; true when it has (every thread done).
    /// A run still going `OVERRUN_PS` after its end is stopped: every run ends by itself.
    pub fn wait(&self, timeout_ps: Time) -> bool {
        let until = crate::clock::monotonic_ns() + timeout_ps / 1000;
        loop {
            if self.shared.epoch().is_some_and(|e| self.clock.now() > e + self.scenario.duration_ps + OVERRUN_PS) {
                self.shared.stop.store(true, Ordering::Relaxed);
            }
            let done = self.relay.as_ref().is_none_or(|h| h.is_finished())
                && self.sampler.as_ref().is_none_or(|h| h.is_finished())
                && self.apps.iter().all(|(_, h)| h.is_finished());
            if done {
                return true;
            }
            let now = crate::clock::monotonic_ns();
            if now >= until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_nanos((until - now).min(10_000_000)));
        }
    }

    /// Time into the run (0 before it starts).
    pub fn progress_ps(&self) -> Time {
        match self.shared.epoch() {
            Some(e) => self.shared.now_ps.load(Ordering::Relaxed).saturating_sub(e).min(self.scenario.duration_ps),
            None => 0,
        }
    }

    pub fn duration_ps(&self) -> Time {
        self.scenario.duration_ps
    }

    /// Asks every thread to stop now.
    pub fn stop(&self) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }

    /// Paths to the hosts' namespaces while the emulation lives, with their inode numbers.
    pub fn namespaces(&self) -> Vec<(String, String, u64)> {
        self.hosts.iter().map(|h| (h.ns.name.clone(), h.ns.path(), h.ns.inode().unwrap_or(0))).collect()
    }

    /// Waits for the end, then gathers the results: the same document a simulation's
    /// `finish` returns, with an `emulation` section (docs/emulation.md).
    pub fn finish(mut self) -> Result<crate::summary::EmulationOutput, Error> {
        while !self.wait(PS_PER_S) {}
        let relay = self.relay.take().map(|h| h.join());
        let sampler = self.sampler.take().map(|h| h.join());
        for (name, h) in self.apps.drain(..) {
            if h.join().is_err() {
                self.failure.lock().expect("unpoisoned").get_or_insert(format!("{name}: the thread panicked"));
            }
        }
        if let Some(failure) = self.failure.lock().expect("unpoisoned").take() {
            return Err(Error::System(failure));
        }
        let relay = match relay {
            Some(Ok(Ok(report))) => report,
            Some(Ok(Err(e))) => return Err(Error::System(format!("relay: {e}"))),
            _ => return Err(Error::System("relay: the thread panicked".into())),
        };
        let sampler = match sampler {
            Some(Ok(out)) => out,
            _ => return Err(Error::System("sampler: the thread did not finish".into())),
        };
        if self.shared.stop.load(Ordering::Relaxed) {
            return Err(Error::System("the run was stopped before its end".into()));
        }
        let run = EmulatedRun {
            scenario: &self.scenario,
            epoch: self.shared.epoch().expect("the run started"),
            flows: self.flows.iter().map(FlowState::at_end).collect(),
            namespaces: self.hosts.iter().map(|h| &h.ns).collect(),
            available: &self.available,
            setup_ps: self.setup_ps,
            spin_margin_ps: self.options.spin_margin_ps,
            tun_offload_asked: self.options.tun_offload,
            offload_refused: self.offload_refused.as_deref(),
            notes: &self.notes,
        };
        Ok(output::document(&run, relay, sampler))
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for (_, h) in self.apps.drain(..) {
            let _ = h.join();
        }
        if let Some(h) = self.sampler.take() {
            let _ = h.join();
        }
        if let Some(h) = self.relay.take() {
            let _ = h.join();
        }
        // The sockets, TUN devices and namespace descriptors close as the fields drop.
    }
}

/// The host's first link toward the flow's receiver: (rate, framing bytes).
fn first_link(scenario: &Scenario, spec: &FlowSpec) -> (u64, u32) {
    let routes = scenario.routing_table();
    let l = routes.get(spec.src, spec.dst).expect("validated route");
    let link = &scenario.links[l as usize];
    (link.rate_bps, link.framing_bytes)
}

/// Every flow with its knobs and ports, or the first reason one cannot be emulated.
fn plan_flows(
    scenario: &Scenario,
    available: &[String],
    bpf: BpfPolicy,
    registrations: &mut Vec<Registration>,
) -> Result<Vec<FlowState>, Error> {
    let mut flows = Vec::new();
    for (i, spec) in scenario.flows.iter().enumerate() {
        let label = format!("flows[{i}] ({})", spec.name);
        if matches!(spec.source, SourceSpec::Http(_)) {
            return Err(Error::Scenario(format!(
                "{label}: HTTP workloads cannot be emulated yet (bulk, burst and UDP sources can)"
            )));
        }
        if matches!(&spec.source, SourceSpec::Bulk(b) if b.transfers.is_some()) {
            return Err(Error::Scenario(format!(
                "{label}: transfers cannot be emulated yet (one connection per flow; run the command again, \
                 as iperf is rerun)"
            )));
        }
        let udp = spec.source.is_udp();
        let knobs = if udp {
            None
        } else {
            let value = |key: &str| {
                netns::read_sysctl(key)
                    .ok()
                    .and_then(|v| v.split_whitespace().next().and_then(|x| x.parse::<u64>().ok()))
            };
            let module = |m: &str, p: &str| std::fs::read_to_string(format!("/sys/module/{m}/parameters/{p}")).ok();
            let mut k = crate::bpf_cc::flow_knobs(spec, available, &value, &module, bpf, registrations).map_err(
                |e| match e {
                    RegisterError::Object(e) => Error::Scenario(format!("{label}.{e}")),
                    RegisterError::System(e) => Error::System(format!("{label}.{e}")),
                },
            )?;
            // A namespace cannot raise net.core.rmem_max / wmem_max (read-only outside the
            // initial namespace), and raising the machine's would touch every other
            // program: force instead.
            k.sender.force_buffers = true;
            k.receiver.force_buffers = true;
            k.notes.extend(kernel::buffer_notes(spec, (&value, true), (&value, true)));
            Some(k)
        };
        let ports = FlowPorts {
            udp,
            sender_node: spec.src,
            receiver_node: spec.dst,
            sender_port: SENDER_PORT_BASE + i as u16,
            receiver_port: RECEIVER_PORT_BASE + i as u16,
        };
        flows.push(FlowState {
            spec: spec.clone(),
            knobs,
            ports,
            sender: Arc::new(OnceLock::new()),
            receiver: Arc::new(OnceLock::new()),
            listener: None,
            udp_sockets: None,
            counters: Arc::new(Counters::default()),
        });
    }
    if flows.len() > usize::from(u16::MAX - SENDER_PORT_BASE) {
        return Err(Error::Scenario(format!(
            "flows: {} is too many to emulate (at most {})",
            flows.len(),
            u16::MAX - SENDER_PORT_BASE
        )));
    }
    Ok(flows)
}

/// What one host's namespace gets.
struct HostPlan {
    node: u32,
    mtu: u32,
    sysctls: BTreeMap<&'static str, String>,
    /// Routes with metrics: (destination node, metrics).
    routes: Vec<(u32, RouteMetrics)>,
}

/// Sysctls every namespace gets: no cached metrics from earlier connections (a fresh
/// namespace has none anyway), and no IPv6 on the TUN devices (router solicitations would
/// only be refused by the relay).
const BASELINE_SYSCTLS: [(&str, &str); 3] = [
    ("net.ipv4.tcp_no_metrics_save", "1"),
    ("net.ipv6.conf.all.disable_ipv6", "1"),
    ("net.ipv6.conf.default.disable_ipv6", "1"),
];

/// Per host: the sysctls and routes its flows need; two flows wanting different values of
/// one host-wide setting are an error naming both.
fn host_plans(scenario: &Scenario, flows: &[FlowState]) -> Result<Vec<HostPlan>, Error> {
    let mut plans: Vec<HostPlan> = Vec::new();
    // (host node, sysctl) -> (value, flow index)
    let mut owner: BTreeMap<(u32, &'static str), (String, usize)> = BTreeMap::new();
    for (node, _) in scenario.nodes.iter().enumerate().filter(|(n, _)| relay::is_host(scenario, *n as u32)) {
        let node = node as u32;
        let mtu =
            scenario.links.iter().filter(|l| l.from == node || l.to == node).map(|l| l.mtu_bytes).max().unwrap_or(1500);
        let sysctls: BTreeMap<&'static str, String> =
            BASELINE_SYSCTLS.iter().map(|&(k, v)| (k, v.to_string())).collect();
        plans.push(HostPlan { node, mtu, sysctls, routes: Vec::new() });
    }
    for (i, f) in flows.iter().enumerate() {
        let Some(k) = &f.knobs else { continue };
        for (node, wanted, route, peer) in [
            (f.spec.src, &k.sender_sysctls, k.sender_route, f.spec.dst),
            (f.spec.dst, &k.receiver_sysctls, k.receiver_route, f.spec.src),
        ] {
            let plan = plans.iter_mut().find(|p| p.node == node).expect("hosts have plans");
            for (&key, value) in wanted {
                match owner.get(&(node, key)) {
                    Some((v, j)) if v != value => {
                        return Err(Error::Scenario(format!(
                            "flows[{i}] ({}) needs {key} = {value} on host {} but flows[{j}] ({}) needs {v}: Linux sets it per host (network namespace); give flows that share a host the same setting",
                            f.spec.name, scenario.nodes[node as usize].name, flows[*j].spec.name
                        )));
                    }
                    Some(_) => {}
                    None => {
                        owner.insert((node, key), (value.clone(), i));
                        plan.sysctls.insert(key, value.clone());
                    }
                }
            }
            if !route.is_empty() {
                match plan.routes.iter().find(|(d, _)| *d == peer) {
                    Some((_, m)) if *m != route => {
                        return Err(Error::Scenario(format!(
                            "flows[{i}] ({}): another flow from host {} to the same host needs other route settings (initial window, initial ssthresh); Linux sets them per route",
                            f.spec.name, scenario.nodes[node as usize].name
                        )));
                    }
                    Some(_) => {}
                    None => plan.routes.push((peer, route)),
                }
            }
        }
    }
    Ok(plans)
}

/// Inside a new namespace: sysctls, loopback, the TUN device with the host's address, routes.
/// Returns the device and why the kernel refused its offloads, if it did.
fn setup_host(plan: &HostPlan, offload: Offload) -> io::Result<(Tun, Option<String>)> {
    for (key, value) in &plan.sysctls {
        if netns::sysctl_exists(key) {
            netns::write_sysctl(key, value)?;
        }
    }
    let ifs = Interfaces::new()?;
    ifs.up("lo")?;
    let (tun, refused) = Tun::create(DEVICE, offload)?;
    ifs.set_mtu(DEVICE, plan.mtu)?;
    ifs.set_txqueuelen(DEVICE, TUN_QUEUE_PACKETS)?;
    // node_ip numbers the nodes in 10.0.0.0/8 (as simulated captures do): the connected
    // route of the /8 sends every other host's traffic into the device, and nothing else
    // exists in the namespace, so no packet can leave it for anywhere else.
    ifs.set_ipv4(DEVICE, node_ip(plan.node), 8)?;
    ifs.up(DEVICE)?;
    for (peer, metrics) in &plan.routes {
        crate::rtnl::set_host_route(node_ip(*peer), DEVICE, metrics)
            .map_err(|e| netns::with_context(e, "route metrics"))?;
    }
    Ok((tun, refused))
}
