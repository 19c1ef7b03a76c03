//! The simulation: owns every element and the event queue, and moves packets between them.
//!
//! How a packet travels: a TCP endpoint pushes it into the scratch buffer `out`; `transmit`
//! looks up the first link on the route to its destination and offers it to that link, which
//! drops it or admits it. A FIFO link knows an admitted packet's departure and arrival times
//! at once, so the hop's only event is the `LinkArrival` of its head packet at the far node
//! (one event per hop; the queue's length follows lazily from the departure times,
//! `Link::advance`). That node either forwards it on its route or, at the destination host,
//! hands it to the flow's receiver (data) or sender (ACKs). A `LinkTxEnd` is scheduled only
//! for links that captures or refused senders watch. Most hops need not even that event: a
//! link hands a packet on to the next link at its arrival time when that is exact, and a
//! last hop that would be the next event anyway is handled at once (`sim/hand_on.rs`).
//! Time only advances by popping the earliest event.
//!
//! Local congestion: the first link of a flow leaves its sender's host, so it is that host's
//! interface and its queue is the interface queue (Linux txqueuelen). Before every call into
//! a sender the simulation tells it how many segments that queue can still take
//! (`set_tx_budget`); the sender sends no more, keeps the rest unsent and reduces its window
//! (CWR), as Linux does when `dev_queue_xmit` refuses a segment. Those segments are never
//! offered to the link, so they are not drops. A refused sender waits in the link's list and
//! is called again as soon as the queue has room (`wake_interface_waiters`).

use crate::capture::{Capture, FlowWire};
use crate::cc::{CcSpec, INFINITE_SSTHRESH};
use crate::event::{Event, EventQueue, TimerKind};
use crate::net::link::Link;
use crate::net::routing::{RoutingTable, NO_ROUTE};
use crate::net::split::Split;
use crate::packet::Packet;
use crate::probe::{FlowSeries, QueueSeries};
use crate::rng::Rng;
use crate::scenario::{FlowSpec, Scenario};
use crate::source::burst::BurstStats;
use crate::source::http::HttpSession;
use crate::source::udp::{UdpFlow, UdpSchedule};
use crate::source::SourceSpec;
use crate::tcp::metrics::MetricsCache;
use crate::tcp::send_delay::RandomSendDelay;
use crate::tcp::{Handshake, TcpConfig, TcpReceiver, TcpSender};
use crate::time::Time;
use crate::timer::{Fired, LazyTimer};
use serde_json::Value;
use std::collections::VecDeque;

mod build;
mod hand_on;
mod network;
mod summary;
mod transfers;
mod workload;

pub use summary::{CaptureSummary, FlowSummary, LinkSummary, Output, Summary, TcpFlowSummary, UdpFlowSummary};
pub use transfers::TransferSummary;

pub struct Flow {
    pub name: String,
    pub src: u32,
    pub dst: u32,
    pub source: SourceSpec,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    rto_timer: LazyTimer,
    delayed_ack_timer: LazyTimer,
    pacing_timer: LazyTimer,
    window_update_timer: LazyTimer,
    pub bursts: BurstStats,
    /// A UDP flow's sender and receiver. A UDP flow still carries TCP endpoints built from
    /// `IDLE_TCP`, never called: every flow keeps one shape (tests and summaries index
    /// `flows[i].sender`); a `Flow` enum per transport would remove them.
    pub udp: Option<UdpFlow>,
    pub losses: FlowLosses,
    /// Connection setup of the live connection, when modelled (`tcp.handshake`, HTTP).
    pub handshake: Option<Handshake>,
    /// HTTP client and server (an `http` source).
    pub http: Option<HttpSession>,
    /// The live connection (`Packet::conn`); packets of another are ignored.
    pub conn: u16,
    connection_timer: LazyTimer,
    /// Totals of the connections closed before the live one (HTTP/1.0), which reports add to
    /// the live connection's: bytes delivered and written, SYNs and SYN-ACKs retransmitted.
    closed: ClosedConnections,
    /// The sender's host interface: the first link toward the receiver.
    iface: u32,
    /// Size of the flow's largest segment, IP bytes (what the interface budget counts in).
    max_ip_bytes: u32,
    /// In `iface`'s list of senders waiting for room.
    iface_waiting: bool,
    /// A flow that repeats its transfer (`source.transfers`, `sim/transfers.rs`).
    transfers: Option<Box<transfers::Transfers>>,
}

/// Packets of a flow lost in the network (queue overflow, early drop, impairments).
#[derive(Clone, Debug, Default)]
pub struct FlowLosses {
    pub data_packets: u64,
    pub data_payload_bytes: u64,
    /// Retransmitted data segments lost again.
    pub retransmissions: u64,
    pub ack_packets: u64,
    /// Data segments first sent during the first slow start and lost.
    pub slow_start_data_packets: u64,
    /// SYNs, SYN-ACKs, handshake ACKs and HTTP requests lost.
    pub setup_packets: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ClosedConnections {
    delivered_bytes: u64,
    written_bytes: u64,
    syn_retransmits: u64,
    synack_retransmits: u64,
}

/// A fresh sender and receiver for connection `conn` of flow `i` (slow start from the initial
/// window, no RTT sample). A random send delay draws from the scenario seed, the flow's name
/// and the connection.
fn endpoints(i: u32, spec: &FlowSpec, conn: u16, seed: u64) -> (TcpSender, TcpReceiver) {
    let mut sender =
        TcpSender::new(i, spec.src, spec.dst, spec.tcp(), spec.cc.as_ref().map_or_else(idle_cc, CcSpec::build));
    let mut receiver = TcpReceiver::new(i, spec.dst, spec.src, spec.tcp());
    if spec.cc.as_ref().is_some_and(CcSpec::receiver_echoes_ce_changes) {
        receiver.use_dctcp_feedback();
    }
    sender.tcb.conn = conn;
    receiver.conn = conn;
    if sender.tcb.cc.uses_rng() {
        sender.tcb.cc.seed_rng(Rng::for_element(seed, &format!("{}/cc/{conn}", spec.name)));
    }
    let max_delay = spec.tcp().random_send_delay_ps;
    if max_delay > 0 {
        let rng = Rng::for_element(seed, &format!("{}/send_delay/{conn}", spec.name));
        sender.set_random_send_delay(RandomSendDelay::new(max_delay, rng));
    }
    (sender, receiver)
}

/// The flows with their start jitter drawn: each source starts a uniform random time on
/// [0, start_jitter] late, from the scenario seed and the flow's name.
fn jittered_flows(scenario: &mut Scenario) {
    for f in &mut scenario.flows {
        f.source.delay_start(start_jitter(scenario.seed, f));
    }
}

/// How late flow `f` starts by its start jitter (drawn from `seed` and its name; 0 without
/// jitter): the same draw wherever a scenario runs (simulated, or on real hosts).
pub fn start_jitter(seed: u64, f: &FlowSpec) -> Time {
    if f.start_jitter_ps == 0 {
        return 0;
    }
    let mut rng = Rng::for_element(seed, &format!("{}/start_jitter", f.name));
    (rng.uniform() * f.start_jitter_ps as f64) as Time
}

impl Flow {
    /// Bytes delivered in order to the receiving application, over all connections.
    pub fn delivered_bytes(&self) -> u64 {
        self.closed.delivered_bytes + self.receiver.rcv_nxt
    }

    /// SYNs and SYN-ACKs retransmitted, over all connections.
    pub fn handshake_retransmits(&self) -> (u64, u64) {
        let (syn, synack) = self.handshake.as_ref().map_or((0, 0), |h| h.retransmits());
        (self.closed.syn_retransmits + syn as u64, self.closed.synack_retransmits + synack as u64)
    }
}

pub struct Simulation {
    scenario: Scenario,
    now: Time,
    events: EventQueue,
    pub links: Vec<Link>,
    /// `routes.get(node, dst)`: the link to forward on (`net/routing.rs`: a column per
    /// flow endpoint, never nodes x nodes).
    routes: RoutingTable,
    /// `routes` for the hot path, `next_hop[node * route_columns + route_column[dst]]`: the
    /// link, with `IN_SPLIT` set when it belongs to a split (`NO_ROUTE`: none). Two loads
    /// instead of four (`next_link` was 4 % of a dumbbell's profile).
    next_hop: Vec<u32>,
    route_column: Vec<u32>,
    route_columns: usize,
    /// Groups of parallel links (`net/split.rs`), and for each link the group it belongs to.
    splits: Vec<Split>,
    split_of: Vec<Option<u32>>,
    pub flows: Vec<Flow>,
    /// Scratch buffer for packets an endpoint emits; reused so sending never allocates.
    out: Vec<Packet>,
    pub flow_series: FlowSeries,
    pub queue_series: QueueSeries,
    pub captures: Vec<Capture>,
    /// Per flow, what a capture needs to build real headers.
    wire: Vec<FlowWire>,
    /// Per link, the captures that see what it transmits; per node, those that see what is
    /// delivered to it. Empty for almost every element, so the check costs one branch.
    link_taps: Vec<Vec<u32>>,
    node_taps: Vec<Vec<u32>>,
    /// Per link, the flows whose senders its queue refused, in the order they were refused
    /// (sized for every flow of the host at the start: waiting never allocates).
    iface_waiters: Vec<VecDeque<u32>>,
    /// Per link: a `LinkTxEnd` is pending (captures or refused senders watch the link), and
    /// how many of its packets' starts the captures have seen (`Link::for_each_started`).
    link_watched: Vec<bool>,
    link_starts_seen: Vec<u64>,
    /// Per link and destination, the next link it may hand packets on to without an event
    /// (`sim/hand_on.rs`), and what bounds that: the next probe's time, the end of the
    /// current `run_until`.
    hand_on: Vec<u32>,
    next_probe: Time,
    run_end: Time,
    /// Hops a packet made without an event (handed on), and arrivals at a destination
    /// handled without going through the event queue (`Simulation::last_hop`).
    pub hops_handed_on: u64,
    pub arrivals_direct: u64,
    direct_last_hop: bool,
    /// Scratch for the packets a holding link dropped (`count_held_drops`), kept for its room.
    held_drops: Vec<Packet>,
    /// Linux's per-destination metrics cache (`tcp/metrics.rs`): written when a connection
    /// closes, read when one opens.
    metrics: MetricsCache,
}

impl Simulation {
    pub fn from_json(text: &str) -> Result<Simulation, String> {
        Simulation::new(Scenario::from_json(text)?)
    }

    pub fn now(&self) -> Time {
        self.now
    }

    pub fn duration(&self) -> Time {
        self.scenario.duration_ps
    }

    /// Every flow's route (link indices: data, ACKs), from the routing table it runs on.
    pub fn flow_routes(&self) -> Vec<crate::scenario::FlowRoute> {
        self.scenario.flow_routes_with(&self.routes).expect("validated when the simulation was built")
    }

    pub fn events_processed(&self) -> u64 {
        self.events.popped
    }

    /// Runs every event up to and including `t` (at most the scenario's duration).
    pub fn run_until(&mut self, t: Time) {
        self.run_loop(t, || false);
    }

    /// `run_until`, but stops after the event under way once `halt` is set (a controller
    /// outside the core failed or its caller went away, `cc/external.rs`); returns whether
    /// it stopped so, with `now` the time of that event. A loop of its own, so that
    /// `run_until` checks nothing per event.
    pub fn run_until_halted(&mut self, t: Time, halt: &std::sync::atomic::AtomicBool) -> bool {
        let halted = || halt.load(std::sync::atomic::Ordering::Relaxed);
        self.run_loop(t, halted);
        halted()
    }

    #[inline(always)]
    fn run_loop(&mut self, t: Time, halted: impl Fn() -> bool) {
        let end = t.min(self.scenario.duration_ps);
        self.run_end = end;
        while let Some((time, event)) = self.events.pop_until(end) {
            self.now = time;
            self.dispatch(event);
            if halted() {
                return;
            }
        }
        self.now = self.now.max(end);
        // Links are brought up to date lazily (`Link::advance`); whoever reads them next
        // (reports, the caller) sees them as they are now.
        for link in &mut self.links {
            link.advance(self.now);
        }
        for l in 0..self.links.len() as u32 {
            self.count_held_drops(l);
        }
    }

    pub fn run(&mut self) {
        self.run_until(self.scenario.duration_ps);
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::LinkArrival(l) => self.on_arrival(l),
            Event::LinkTxEnd(l) => self.on_tx_end(l),
            Event::LinkDequeue(l) => self.on_dequeue(l),
            Event::Timer(f, kind) => self.on_timer(f, kind),
            Event::SourceStart(f) => self.on_source_start(f),
            Event::SourceTick(f) => {
                if self.flows[f as usize].udp.is_some() {
                    self.on_udp_tick(f);
                } else if self.flows[f as usize].http.is_some() {
                    self.on_http_tick(f);
                } else {
                    self.on_burst_tick(f);
                }
            }
            Event::SourceStop(f) => {
                if self.stale_stop(f) {
                    return;
                }
                // An HTTP client checks its stop time itself and completes the response under way.
                let flow = &mut self.flows[f as usize];
                if flow.http.is_none() {
                    flow.sender.stop_application();
                }
                self.end_transfer_if_done(f);
            }
            Event::Probe => {
                self.sample();
                let next = self.now + self.scenario.sample_interval_ps;
                if next <= self.scenario.duration_ps {
                    self.events.schedule(next, Event::Probe);
                    self.next_probe = next;
                } else {
                    self.next_probe = Time::MAX;
                }
            }
        }
    }

    /// The application starts writing, on an established connection (unless its stop time
    /// passed while the connection was being opened).
    fn start_application(&mut self, f: u32) {
        let flow = &self.flows[f as usize];
        let stop = flow.transfers.as_ref().map_or(flow.source.stop_ps(), |t| t.stop_ps);
        if stop.is_some_and(|s| self.now >= s) {
            return;
        }
        self.grant_tx_budget(f);
        if matches!(self.flows[f as usize].source, SourceSpec::Bulk(_)) {
            self.open_from_metrics(f);
        }
        let flow = &self.flows[f as usize];
        match &flow.source {
            SourceSpec::Bulk(b) => {
                let (bytes, src) = (b.bytes, Some(flow.src));
                self.drive(f, false, src, |flow, now, out| flow.sender.start_bulk(now, bytes, out));
            }
            SourceSpec::Burst(_) => self.on_burst_tick(f),
            SourceSpec::Http(_) => unreachable!("an HTTP client starts in sim/workload.rs"),
            SourceSpec::UdpCbr(_) | SourceSpec::UdpBurst(_) | SourceSpec::UdpOnoff(_) => self.on_udp_tick(f),
        }
    }

    /// Drives an endpoint of flow `f`: grants its sender the interface budget (`grant`),
    /// calls `call` with the flow, now and the reused output buffer, sends what it emitted
    /// from node `from` (None: each packet from its own source, for calls that may speak for
    /// either end), and brings the flow's timers in line with the endpoints' deadlines. One
    /// helper for what every endpoint call needs, in this order. (Three calls in
    /// `sim/workload.rs` keep their own sequence: they schedule or start more between
    /// sending and the timers.)
    #[inline(always)]
    fn drive<R>(
        &mut self,
        f: u32,
        grant: bool,
        from: Option<u32>,
        call: impl FnOnce(&mut Flow, Time, &mut Vec<Packet>) -> R,
    ) -> R {
        if grant {
            self.grant_tx_budget(f);
        }
        let mut out = std::mem::take(&mut self.out);
        let result = call(&mut self.flows[f as usize], self.now, &mut out);
        match from {
            Some(node) => self.transmit(node, &mut out),
            None => self.send_all(&mut out),
        }
        self.out = out;
        self.sync_timers(f);
        result
    }

    /// A paced application writes its next burst and schedules the one after.
    fn on_burst_tick(&mut self, f: u32) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let SourceSpec::Burst(b) = &flow.source else { return };
        let (burst, period, carry_over, stop) = (b.burst_bytes, b.period_ps, b.carry_over, b.stop_ps);
        if stop.is_some_and(|s| now >= s) {
            return;
        }
        let src = Some(flow.src);
        self.drive(f, true, src, |flow, now, out| flow.bursts.write(&mut flow.sender, now, burst, carry_over, out));
        let next = now + period;
        if next <= self.scenario.duration_ps && stop.is_none_or(|s| next < s) {
            self.events.schedule(next, Event::SourceTick(f));
        }
    }

    /// A UDP source sends its datagram if it is due and schedules the next: one pending
    /// event per UDP flow, whatever its rate.
    fn on_udp_tick(&mut self, f: u32) {
        let now = self.now;
        let udp = self.flows[f as usize].udp.as_mut().expect("a UDP flow");
        let Some(t) = udp.next_departure() else { return };
        if t > now {
            if t <= self.scenario.duration_ps {
                self.events.schedule(t, Event::SourceTick(f));
            }
            return;
        }
        let pkt = udp.send(now);
        let next = udp.next_departure();
        let node = self.flows[f as usize].src;
        self.forward(node, &pkt);
        if let Some(t) = next.filter(|&t| t <= self.scenario.duration_ps) {
            self.events.schedule(t, Event::SourceTick(f));
        }
    }

    fn on_timer(&mut self, f: u32, kind: TimerKind) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let timer = match kind {
            TimerKind::Retransmission => &mut flow.rto_timer,
            TimerKind::DelayedAck => &mut flow.delayed_ack_timer,
            TimerKind::Pacing => &mut flow.pacing_timer,
            TimerKind::Connection => &mut flow.connection_timer,
            TimerKind::WindowUpdate => &mut flow.window_update_timer,
        };
        match timer.fire(now) {
            Fired::Ignore => {}
            Fired::Rearm(t) => self.events.schedule(t, Event::Timer(f, kind)),
            Fired::Expired if kind == TimerKind::Connection => self.on_connection_timer(f),
            Fired::Expired => {
                let (src, dst) = (Some(flow.src), Some(flow.dst));
                match kind {
                    TimerKind::Retransmission => {
                        self.drive(f, true, src, |fl, now, out| fl.sender.on_rto_timer(now, out))
                    }
                    TimerKind::DelayedAck => {
                        self.drive(f, false, dst, |fl, now, out| fl.receiver.on_delayed_ack_timer(now, out))
                    }
                    TimerKind::Pacing => self.drive(f, true, src, |fl, now, out| fl.sender.on_pacing_timer(now, out)),
                    TimerKind::Connection => unreachable!("handled above"),
                    TimerKind::WindowUpdate => {
                        self.drive(f, true, dst, |fl, now, out| fl.receiver.on_window_update_timer(now, out))
                    }
                }
            }
        }
    }

    /// Brings the flow's timers in line with its endpoints' deadlines.
    fn sync_timers(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        if let Some(t) = flow.rto_timer.set(flow.sender.rto_deadline()) {
            self.events.schedule(t, Event::Timer(f, TimerKind::Retransmission));
        }
        if let Some(t) = flow.delayed_ack_timer.set(flow.receiver.delayed_ack_deadline()) {
            self.events.schedule(t, Event::Timer(f, TimerKind::DelayedAck));
        }
        if let Some(t) = flow.pacing_timer.set(flow.sender.pacing_deadline()) {
            self.events.schedule(t, Event::Timer(f, TimerKind::Pacing));
        }
        if flow.handshake.is_some() || flow.http.is_some() {
            let setup = flow.handshake.as_ref().and_then(|h| h.deadline());
            let request = flow.http.as_ref().and_then(|h| h.request_deadline());
            let deadline = [setup, request].into_iter().flatten().min();
            if let Some(t) = flow.connection_timer.set(deadline) {
                self.events.schedule(t, Event::Timer(f, TimerKind::Connection));
            }
        }
        if let Some(t) = flow.window_update_timer.set(flow.receiver.window_update_deadline()) {
            self.events.schedule(t, Event::Timer(f, TimerKind::WindowUpdate));
        }
        if flow.sender.interface_blocked() && !flow.iface_waiting {
            flow.iface_waiting = true;
            let l = flow.iface;
            self.iface_waiters[l as usize].push_back(f);
            self.watch_link(l);
        }
    }

    fn sample(&mut self) {
        let now = self.now;
        let fs = &mut self.flow_series;
        for (i, flow) in self.flows.iter().enumerate() {
            let s = &flow.sender;
            fs.time_ps.push(now);
            fs.flow.push(i as u32);
            if let Some(udp) = &flow.udp {
                // No window, threshold or RTT: -1, as for an unset threshold.
                let st = &udp.stats;
                fs.cwnd_segments.push(-1);
                fs.ssthresh_segments.push(-1);
                fs.outstanding_bytes.push(st.bytes_in_flight());
                fs.srtt_ps.push(-1);
                fs.delivered_bytes.push(st.bytes_received);
                fs.sent_bytes.push(st.bytes_sent);
                continue;
            }
            fs.cwnd_segments.push(s.tcb.cc_state.cwnd as i64);
            let ssthresh = s.tcb.cc_state.ssthresh;
            fs.ssthresh_segments.push(if ssthresh >= INFINITE_SSTHRESH { -1 } else { ssthresh as i64 });
            fs.outstanding_bytes.push(s.outstanding_bytes());
            fs.srtt_ps.push(s.tcb.rtt.srtt.map_or(-1, |v| v as i64));
            fs.delivered_bytes.push(flow.delivered_bytes());
            fs.sent_bytes.push(s.tcb.stats.bytes_sent);
        }
        for link in &mut self.links {
            link.advance(now);
        }
        self.queue_series.sample(now, &self.links);
    }

    /// The summary as JSON (`report` is the typed one).
    pub fn summary(&self) -> Value {
        serde_json::to_value(self.report()).expect("the summary serializes")
    }

    /// Runs to the end and returns the summary and the columns as JSON (`finish_output` is
    /// the typed one, which moves the columns out).
    pub fn finish(&mut self) -> Value {
        serde_json::to_value(self.finish_output()).expect("the output serializes")
    }
}

/// A time-series table with room for every sample of `rows_per_sample` rows, so that the
/// columns are allocated once at their final size rather than doubled (and copied) as they
/// grow: a run's largest memory is its flow series. Capped, so that a document from the Rust
/// API with an absurd sample count does not reserve more than it fills.
fn series<T: Default>(scenario: &Scenario, rows_per_sample: usize, reserve: fn(&mut T, usize)) -> T {
    const MAX_RESERVED_ROWS: u64 = 1 << 27;
    let samples = (scenario.duration_ps / scenario.sample_interval_ps.max(1)).saturating_add(1);
    let rows = samples.saturating_mul(rows_per_sample as u64).min(MAX_RESERVED_ROWS);
    let mut table = T::default();
    reserve(&mut table, rows as usize);
    table
}

const IN_SPLIT: u32 = 1 << 31;

/// The idle endpoints' congestion control (never consulted).
fn idle_cc() -> Box<dyn crate::cc::CongestionControl> {
    Box::new(crate::cc::nocc::Nocc::new(crate::cc::nocc::NoccConfig { cwnd_segments: None }))
}
