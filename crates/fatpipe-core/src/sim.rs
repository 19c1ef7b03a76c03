//! The simulation: owns every element and the event queue, and moves packets between them.
//!
//! How a packet travels: a TCP endpoint pushes it into the scratch buffer `out`; `transmit`
//! looks up the first link on the route to its destination and hands it to that link. An idle
//! link starts serializing at once (`LinkTxDone` after the transmission time), a busy one
//! queues or drops it. When serialization ends the packet enters the link's propagation FIFO
//! (`LinkArrival` for the head only), then arrives at the far node, which either forwards it
//! on its route or, at the destination host, hands it to the flow's receiver (data) or sender
//! (ACKs). Time only advances by popping the earliest event.
//!
//! Local congestion: the first link of a flow leaves its sender's host, so it is that host's
//! interface and its queue is the interface queue (Linux txqueuelen). Before every call into
//! a sender the simulation tells it how many segments that queue can still take
//! (`set_tx_budget`); the sender sends no more, keeps the rest unsent and reduces its window
//! (CWR), as Linux does when `dev_queue_xmit` refuses a segment. Those segments are never
//! offered to the link, so they are not drops. A refused sender waits in the link's list and
//! is called again as soon as the queue has room (`wake_interface_waiters`).

use crate::capture::{Capture, FlowWire};
use crate::cc::INFINITE_SSTHRESH;
use crate::rng::Rng;
use crate::event::{Event, EventQueue, TimerKind};
use crate::net::link::Link;
use crate::net::routing::shortest_path_table;
use crate::packet::{Packet, PacketKind};
use crate::probe::{FlowSeries, QueueSeries};
use crate::scenario::Scenario;
use crate::source::burst::BurstStats;
use crate::source::SourceSpec;
use crate::tcp::{TcpReceiver, TcpSender};
use crate::time::Time;
use crate::timer::{Fired, LazyTimer};
use serde_json::{json, Value};
use std::collections::VecDeque;

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
    pub bursts: BurstStats,
    pub losses: FlowLosses,
    /// The sender's host interface: the first link toward the receiver.
    iface: u32,
    /// Size of the flow's largest segment, IP bytes (what the interface budget counts in).
    max_ip_bytes: u32,
    /// In `iface`'s list of senders waiting for room.
    iface_waiting: bool,
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
}

pub struct Simulation {
    scenario: Scenario,
    now: Time,
    events: EventQueue,
    pub links: Vec<Link>,
    /// `routes[node][dst]`: the link to forward on.
    routes: Vec<Vec<Option<u32>>>,
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
}

impl Simulation {
    pub fn new(scenario: Scenario) -> Result<Simulation, String> {
        scenario.validate()?;
        let routes = shortest_path_table(scenario.nodes.len(), &scenario.links);
        let links: Vec<Link> = scenario.links.iter().cloned().map(|l| Link::new(l, scenario.seed)).collect();
        let flows: Vec<Flow> = scenario
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| Flow {
                name: f.name.clone(),
                src: f.src,
                dst: f.dst,
                source: f.source.clone(),
                sender: TcpSender::new(i as u32, f.src, f.dst, &f.tcp, f.cc.build()),
                receiver: TcpReceiver::new(i as u32, f.dst, f.src, &f.tcp),
                rto_timer: LazyTimer::default(),
                delayed_ack_timer: LazyTimer::default(),
                pacing_timer: LazyTimer::default(),
                bursts: BurstStats::default(),
                losses: FlowLosses::default(),
                iface: routes[f.src as usize][f.dst as usize].expect("validated: every flow has a route"),
                max_ip_bytes: f.tcp.header_bytes() + f.tcp.mss_bytes,
                iface_waiting: false,
            })
            .collect();
        let mut senders_per_link = vec![0; links.len()];
        for f in &flows {
            senders_per_link[f.iface as usize] += 1;
        }
        let iface_waiters = senders_per_link.into_iter().map(VecDeque::with_capacity).collect();
        let mut events = EventQueue::default();
        for (i, f) in flows.iter().enumerate() {
            events.schedule(f.source.start_ps(), Event::SourceStart(i as u32));
            if let Some(stop) = f.source.stop_ps() {
                events.schedule(stop, Event::SourceStop(i as u32));
            }
        }
        events.schedule(0, Event::Probe);
        let wire = scenario
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut rng = Rng::for_element(scenario.seed, &format!("{}/isn", f.name));
                FlowWire {
                    sender_isn: rng.next_u64() as u32,
                    receiver_isn: rng.next_u64() as u32,
                    // Linux's first ephemeral port, one per flow; iperf's server port.
                    sender_port: 32768 + (i % 28232) as u16,
                    receiver_port: 5001,
                    window_shift: f.tcp.window_shift(),
                    sender_window_bytes: f.tcp.advertised_window_bytes(),
                    timestamps: f.tcp.timestamps,
                }
            })
            .collect();
        let mut link_taps = vec![Vec::new(); links.len()];
        let mut node_taps = vec![Vec::new(); scenario.nodes.len()];
        let mut captures = Vec::with_capacity(scenario.captures.len());
        for (c, spec) in scenario.captures.iter().enumerate() {
            match spec.point {
                crate::capture::CapturePoint::Host { node } => {
                    node_taps[node as usize].push(c as u32);
                    for (l, link) in links.iter().enumerate() {
                        if link.spec.from == node {
                            link_taps[l].push(c as u32);
                        }
                    }
                }
                crate::capture::CapturePoint::Link { link } => link_taps[link as usize].push(c as u32),
            }
            captures.push(Capture::create(spec.clone())?);
        }
        Ok(Simulation {
            scenario,
            now: 0,
            events,
            links,
            routes,
            flows,
            out: Vec::with_capacity(256),
            flow_series: FlowSeries::default(),
            queue_series: QueueSeries::default(),
            captures,
            wire,
            link_taps,
            node_taps,
            iface_waiters,
        })
    }

    pub fn from_json(text: &str) -> Result<Simulation, String> {
        Simulation::new(Scenario::from_json(text)?)
    }

    pub fn now(&self) -> Time {
        self.now
    }

    pub fn duration(&self) -> Time {
        self.scenario.duration_ps
    }

    pub fn events_processed(&self) -> u64 {
        self.events.popped
    }

    /// Runs every event up to and including `t` (at most the scenario's duration).
    pub fn run_until(&mut self, t: Time) {
        let end = t.min(self.scenario.duration_ps);
        while let Some(et) = self.events.peek_time() {
            if et > end {
                break;
            }
            let (time, event) = self.events.pop().expect("peeked");
            self.now = time;
            self.dispatch(event);
        }
        self.now = self.now.max(end);
    }

    pub fn run(&mut self) {
        self.run_until(self.scenario.duration_ps);
    }

    fn dispatch(&mut self, event: Event) {
        match event {
            Event::LinkTxDone(l) => self.on_tx_done(l),
            Event::LinkArrival(l) => {
                let link = &mut self.links[l as usize];
                let (_, pkt) = link.propagating.pop_front().expect("arrival event without packet");
                if let Some(&(next, _)) = link.propagating.front() {
                    self.events.schedule(next, Event::LinkArrival(l));
                }
                let to = link.spec.to;
                self.arrive(to, pkt);
            }
            Event::Timer(f, kind) => self.on_timer(f, kind),
            Event::SourceStart(f) => {
                self.grant_tx_budget(f);
                let flow = &mut self.flows[f as usize];
                let mut out = std::mem::take(&mut self.out);
                match &flow.source {
                    SourceSpec::Bulk(b) => flow.sender.start_bulk(self.now, b.bytes, &mut out),
                    SourceSpec::Burst(_) => {
                        self.out = out;
                        self.on_burst_tick(f);
                        return;
                    }
                }
                let node = flow.src;
                self.transmit(node, &mut out);
                self.out = out;
                self.sync_timers(f);
            }
            Event::SourceTick(f) => self.on_burst_tick(f),
            Event::SourceStop(f) => self.flows[f as usize].sender.stop_application(),
            Event::Probe => {
                self.sample();
                let next = self.now + self.scenario.sample_interval_ps;
                if next <= self.scenario.duration_ps {
                    self.events.schedule(next, Event::Probe);
                }
            }
        }
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
        self.grant_tx_budget(f);
        let flow = &mut self.flows[f as usize];
        let mut out = std::mem::take(&mut self.out);
        let failed = flow.sender.write_burst(now, burst, carry_over, &mut out);
        flow.bursts.bursts += 1;
        flow.bursts.failed_cycles += u64::from(failed);
        let node = flow.src;
        self.transmit(node, &mut out);
        self.out = out;
        self.sync_timers(f);
        let next = now + period;
        if next <= self.scenario.duration_ps && stop.is_none_or(|s| next < s) {
            self.events.schedule(next, Event::SourceTick(f));
        }
    }

    fn on_tx_done(&mut self, l: u32) {
        let now = self.now;
        let link = &mut self.links[l as usize];
        let pkt = link.transmitting.take().expect("tx done without packet");
        if let Some(next) = link.queue.dequeue(now) {
            let done = link.start_tx(now, next);
            self.events.schedule(done, Event::LinkTxDone(l));
            if !self.link_taps[l as usize].is_empty() {
                self.tap(l, true, &next);
            }
        }
        let link = &mut self.links[l as usize];
        let to = link.spec.to;
        if link.spec.delay_ps == 0 {
            self.arrive(to, pkt);
        } else {
            let arrival = now + link.spec.delay_ps;
            link.propagating.push_back((arrival, pkt));
            if link.propagating.len() == 1 {
                self.events.schedule(arrival, Event::LinkArrival(l));
            }
        }
        if !self.iface_waiters[l as usize].is_empty() {
            self.wake_interface_waiters(l);
        }
    }

    /// The queue of interface `l` has room again (a packet left it): the senders it refused
    /// send, first refused first, while there is room. Linux 2.4/2.6 (document 001's hosts)
    /// retried only on the socket's next ACK or timer, since nothing woke a socket when the
    /// qdisc drained; modern Linux sends as soon as the device has room (TCP Small Queues'
    /// `tcp_wfree` and the driver's `netif_wake_queue`). We model the modern behaviour: a
    /// sender refused with nothing in flight would otherwise wait for a zero-window-probe
    /// timer this simulation does not have, and on a busy path the next ACK is only a few
    /// packet times away, so both send the same data at nearly the same time.
    #[cold]
    fn wake_interface_waiters(&mut self, l: u32) {
        for _ in 0..self.iface_waiters[l as usize].len() {
            let Some(&f) = self.iface_waiters[l as usize].front() else { break };
            let flow = &self.flows[f as usize];
            if self.links[l as usize].room_packets(flow.max_ip_bytes) == 0 {
                break;
            }
            self.iface_waiters[l as usize].pop_front();
            self.grant_tx_budget(f);
            let flow = &mut self.flows[f as usize];
            flow.iface_waiting = false;
            let mut out = std::mem::take(&mut self.out);
            flow.sender.on_interface_ready(self.now, &mut out);
            let node = flow.src;
            self.transmit(node, &mut out);
            self.out = out;
            // Still refused: back in the list, behind the others.
            self.sync_timers(f);
        }
    }

    /// Tells flow `f`'s sender how many segments its host's interface queue can take now.
    #[inline]
    fn grant_tx_budget(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        let room = self.links[flow.iface as usize].room_packets(flow.max_ip_bytes);
        flow.sender.set_tx_budget(room);
    }

    /// A packet reaches `node`: deliver it there or forward it.
    fn arrive(&mut self, node: u32, pkt: Packet) {
        if pkt.dst != node {
            self.forward(node, pkt);
            return;
        }
        if !self.node_taps[node as usize].is_empty() {
            self.tap(node, false, &pkt);
        }
        let f = pkt.flow;
        if pkt.kind == PacketKind::Ack {
            self.grant_tx_budget(f);
        }
        let flow = &mut self.flows[f as usize];
        let mut out = std::mem::take(&mut self.out);
        match pkt.kind {
            PacketKind::Data => flow.receiver.on_segment(self.now, &pkt, &mut out),
            PacketKind::Ack => flow.sender.on_ack(self.now, &pkt, &mut out),
        }
        self.transmit(node, &mut out);
        self.out = out;
        self.sync_timers(f);
    }

    /// Sends what an endpoint at `node` emitted.
    fn transmit(&mut self, node: u32, out: &mut Vec<Packet>) {
        for pkt in out.drain(..) {
            self.forward(node, pkt);
        }
    }

    fn forward(&mut self, node: u32, pkt: Packet) {
        let l = self.routes[node as usize][pkt.dst as usize].expect("validated: every flow has a route");
        let now = self.now;
        let link = &mut self.links[l as usize];
        if link.impaired(now, &pkt) {
            self.count_drop(&pkt);
            return;
        }
        if link.transmitting.is_none() {
            match link.queue.on_idle_arrival(now, pkt) {
                Ok(next) => {
                    let done = link.start_tx(now, next);
                    self.events.schedule(done, Event::LinkTxDone(l));
                    if !self.link_taps[l as usize].is_empty() {
                        self.tap(l, true, &next);
                    }
                }
                Err((dropped, why)) => {
                    link.record_drop(&dropped, why);
                    self.count_drop(&dropped);
                }
            }
        } else {
            match link.queue.enqueue(now, pkt) {
                Ok(()) => link.note_queue_length(),
                Err((dropped, why)) => {
                    link.record_drop(&dropped, why);
                    self.count_drop(&dropped);
                }
            }
        }
    }

    /// Per-flow loss counters: every packet of the flow lost in the network, and the data
    /// segments first sent during the flow's first slow start (document 003's loss rate).
    #[cold]
    fn count_drop(&mut self, pkt: &Packet) {
        let flow = &mut self.flows[pkt.flow as usize];
        match pkt.kind {
            PacketKind::Data => {
                flow.losses.data_packets += 1;
                flow.losses.data_payload_bytes += pkt.payload_bytes as u64;
                flow.losses.retransmissions += u64::from(pkt.retransmission);
                let in_slow_start = flow.sender.stats.slow_start_end_seq.is_none_or(|end| pkt.end_seq() <= end);
                if in_slow_start && !pkt.retransmission {
                    flow.losses.slow_start_data_packets += 1;
                }
            }
            PacketKind::Ack => flow.losses.ack_packets += 1,
        }
    }

    /// Hands `pkt` to the captures of link `at` (`on_link`) or of node `at`.
    #[cold]
    fn tap(&mut self, at: u32, on_link: bool, pkt: &Packet) {
        let taps = if on_link { &self.link_taps[at as usize] } else { &self.node_taps[at as usize] };
        let wire = &self.wire[pkt.flow as usize];
        for &c in taps {
            self.captures[c as usize].record(self.now, pkt, wire);
        }
    }

    fn on_timer(&mut self, f: u32, kind: TimerKind) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let timer = match kind {
            TimerKind::Retransmission => &mut flow.rto_timer,
            TimerKind::DelayedAck => &mut flow.delayed_ack_timer,
            TimerKind::Pacing => &mut flow.pacing_timer,
        };
        match timer.fire(now) {
            Fired::Ignore => {}
            Fired::Rearm(t) => self.events.schedule(t, Event::Timer(f, kind)),
            Fired::Expired => {
                if kind != TimerKind::DelayedAck {
                    self.grant_tx_budget(f);
                }
                let flow = &mut self.flows[f as usize];
                let mut out = std::mem::take(&mut self.out);
                let node = match kind {
                    TimerKind::Retransmission => {
                        flow.sender.on_rto_timer(now, &mut out);
                        flow.src
                    }
                    TimerKind::DelayedAck => {
                        flow.receiver.on_delayed_ack_timer(now, &mut out);
                        flow.dst
                    }
                    TimerKind::Pacing => {
                        flow.sender.on_pacing_timer(now, &mut out);
                        flow.src
                    }
                };
                self.transmit(node, &mut out);
                self.out = out;
                self.sync_timers(f);
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
        if flow.sender.interface_blocked() && !flow.iface_waiting {
            flow.iface_waiting = true;
            self.iface_waiters[flow.iface as usize].push_back(f);
        }
    }

    fn sample(&mut self) {
        let now = self.now;
        let fs = &mut self.flow_series;
        for (i, flow) in self.flows.iter().enumerate() {
            let s = &flow.sender;
            fs.time_ps.push(now);
            fs.flow.push(i as u32);
            fs.cwnd_segments.push(s.cc_state.cwnd);
            let ssthresh = s.cc_state.ssthresh;
            fs.ssthresh_segments.push(if ssthresh >= INFINITE_SSTHRESH { -1 } else { ssthresh as i64 });
            fs.outstanding_bytes.push(s.outstanding_bytes());
            fs.srtt_ps.push(s.rtt.srtt.map_or(-1, |v| v as i64));
            fs.delivered_bytes.push(flow.receiver.rcv_nxt);
            fs.sent_bytes.push(s.stats.bytes_sent);
        }
        let qs = &mut self.queue_series;
        for (i, link) in self.links.iter().enumerate() {
            qs.time_ps.push(now);
            qs.link.push(i as u32);
            qs.queue_packets.push(link.queue.len_packets() as u64);
            qs.queue_bytes.push(link.queue.len_bytes());
            qs.drops_packets.push(link.stats.drops_packets);
            qs.departed_bytes.push(link.stats.bytes_sent);
        }
    }

    /// Per-flow and per-link totals (docs/core-interface.md).
    pub fn summary(&self) -> Value {
        let flows: Vec<Value> = self
            .flows
            .iter()
            .map(|f| {
                let s = &f.sender;
                let r = &f.receiver;
                let ssthresh = s.cc_state.ssthresh;
                json!({
                    "name": f.name,
                    "algorithm": s.algorithm(),
                    "mss_bytes": s.mss(),
                    "header_bytes": s.header_bytes(),
                    "start_ps": f.source.start_ps(),
                    "end_ps": r.stats.last_delivery_ps,
                    "completed": s.is_finished(),
                    "bytes_delivered": r.rcv_nxt,
                    "bytes_sent": s.stats.bytes_sent,
                    "segments_sent": s.stats.segments_sent,
                    "segments_retransmitted": s.stats.segments_retransmitted,
                    "fast_retransmits": s.stats.fast_retransmits,
                    "timeouts": s.stats.timeouts,
                    "dupacks_received": s.stats.dupacks_received,
                    "acks_sent": r.stats.acks_sent,
                    "bytes_written": s.bytes_written(),
                    "bursts": f.bursts.bursts,
                    "failed_burst_cycles": f.bursts.failed_cycles,
                    "cwnd_segments": s.cc_state.cwnd,
                    "ssthresh_segments": if ssthresh >= INFINITE_SSTHRESH { None } else { Some(ssthresh) },
                    "data_packets_lost": f.losses.data_packets,
                    "data_bytes_lost": f.losses.data_payload_bytes,
                    "retransmissions_lost": f.losses.retransmissions,
                    "ack_packets_lost": f.losses.ack_packets,
                    "first_send_ps": s.stats.first_send_ps,
                    "slow_start_end_ps": s.stats.slow_start_end_ps,
                    "slow_start_segments_sent": s.stats.slow_start_segments_sent,
                    "slow_start_segments_lost": f.losses.slow_start_data_packets,
                    "first_loss_ps": s.stats.first_loss_ps,
                    "first_loss_cwnd_segments": s.stats.first_loss_ps.map(|_| s.stats.first_loss_cwnd_segments),
                    "recovered_95_ps": s.stats.recovered_95_ps,
                    "recovered_ps": s.stats.recovered_ps,
                    "local_congestion_events": s.stats.local_congestion_events,
                    "cwr_entries": s.stats.cwr_entries,
                    "ecn_echoes": s.stats.ecn_echoes,
                    "ce_segments_received": r.stats.ce_segments,
                    "srtt_ps": s.rtt.srtt,
                    "min_rtt_ps": s.rtt.min_rtt,
                })
            })
            .collect();
        let links: Vec<Value> = self
            .links
            .iter()
            .map(|l| {
                let st = &l.stats;
                json!({
                    "name": l.spec.name,
                    "from": l.spec.from,
                    "to": l.spec.to,
                    "rate_bps": l.spec.rate_bps,
                    "delay_ps": l.spec.delay_ps,
                    "packets_sent": st.packets_sent,
                    "bytes_sent": st.bytes_sent,
                    "busy_ps": st.busy_ps,
                    "drops_packets": st.drops_packets,
                    "drops_bytes": st.drops_bytes,
                    "early_drops_packets": st.early_drops_packets,
                    "impairment_drops_packets": st.impairment_drops_packets,
                    "outage_drops_packets": st.outage_drops_packets,
                    "ecn_marks": l.queue.ecn_marks(),
                    "max_queue_packets": st.max_queue_packets,
                    "max_queue_bytes": st.max_queue_bytes,
                })
            })
            .collect();
        let captures: Vec<Value> = self
            .captures
            .iter()
            .map(|c| {
                json!({
                    "name": c.spec.name,
                    "path": c.spec.path,
                    "packets_written": c.packets_written,
                    "packets_not_written": c.packets_not_written,
                    "error": c.error,
                })
            })
            .collect();
        json!({
            "name": self.scenario.name,
            "seed": self.scenario.seed,
            "duration_ps": self.scenario.duration_ps,
            "events": self.events.popped,
            "flows": flows,
            "links": links,
            "captures": captures,
        })
    }

    /// Runs to the end and returns the summary and both time series.
    /// A capture that could not be written says so in its summary entry (`error`).
    pub fn finish(&mut self) -> Value {
        self.run();
        for c in &mut self.captures {
            c.flush();
        }
        json!({
            "summary": self.summary(),
            "flow_series": self.flow_series,
            "queue_series": self.queue_series,
        })
    }
}
