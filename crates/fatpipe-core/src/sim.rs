//! The simulation: owns every element and the event queue, and moves packets between them.
//!
//! How a packet travels: a TCP endpoint pushes it into the scratch buffer `out`; `transmit`
//! looks up the first link on the route to its destination and hands it to that link. An idle
//! link starts serializing at once (`LinkTxDone` after the transmission time), a busy one
//! queues or drops it. When serialization ends the packet enters the link's propagation FIFO
//! (`LinkArrival` for the head only), then arrives at the far node, which either forwards it
//! on its route or, at the destination host, hands it to the flow's receiver (data) or sender
//! (ACKs). Time only advances by popping the earliest event.

use crate::cc::INFINITE_SSTHRESH;
use crate::event::{Event, EventQueue, TimerKind};
use crate::net::link::Link;
use crate::net::routing::shortest_path_table;
use crate::net::split::Split;
use crate::packet::{Packet, PacketKind};
use crate::probe::{FlowSeries, QueueSeries};
use crate::scenario::Scenario;
use crate::source::burst::BurstStats;
use crate::source::SourceSpec;
use crate::tcp::{TcpReceiver, TcpSender};
use crate::time::Time;
use crate::timer::{Fired, LazyTimer};
use serde_json::{json, Value};

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
}

pub struct Simulation {
    scenario: Scenario,
    now: Time,
    events: EventQueue,
    pub links: Vec<Link>,
    /// `routes[node][dst]`: the link to forward on.
    routes: Vec<Vec<Option<u32>>>,
    /// Groups of parallel links (`net/split.rs`), and for each link the group it belongs to.
    splits: Vec<Split>,
    split_of: Vec<Option<u32>>,
    pub flows: Vec<Flow>,
    /// Scratch buffer for packets an endpoint emits; reused so sending never allocates.
    out: Vec<Packet>,
    pub flow_series: FlowSeries,
    pub queue_series: QueueSeries,
}

impl Simulation {
    pub fn new(scenario: Scenario) -> Result<Simulation, String> {
        scenario.validate()?;
        let routes = shortest_path_table(scenario.nodes.len(), &scenario.links);
        let links: Vec<Link> = scenario.links.iter().cloned().map(|l| Link::new(l, scenario.seed)).collect();
        let splits: Vec<Split> = scenario.splits.iter().map(|s| Split::new(s, scenario.seed)).collect();
        let mut split_of = vec![None; links.len()];
        for (i, s) in scenario.splits.iter().enumerate() {
            for &l in &s.links {
                split_of[l as usize] = Some(i as u32);
            }
        }
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
                window_update_timer: LazyTimer::default(),
                bursts: BurstStats::default(),
            })
            .collect();
        let mut events = EventQueue::default();
        for (i, f) in flows.iter().enumerate() {
            events.schedule(f.source.start_ps(), Event::SourceStart(i as u32));
            if let Some(stop) = f.source.stop_ps() {
                events.schedule(stop, Event::SourceStop(i as u32));
            }
        }
        events.schedule(0, Event::Probe);
        Ok(Simulation {
            scenario,
            now: 0,
            events,
            links,
            routes,
            splits,
            split_of,
            flows,
            out: Vec::with_capacity(256),
            flow_series: FlowSeries::default(),
            queue_series: QueueSeries::default(),
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
        }
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
    }

    /// A packet reaches `node`: deliver it there or forward it.
    fn arrive(&mut self, node: u32, pkt: Packet) {
        if pkt.dst != node {
            self.forward(node, pkt);
            return;
        }
        let f = pkt.flow;
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
        let mut l = self.routes[node as usize][pkt.dst as usize].expect("validated: every flow has a route");
        if let Some(s) = self.split_of[l as usize] {
            // Routes lead to one member of a group of parallel links; the packet draws its own.
            l = self.splits[s as usize].choose();
        }
        let now = self.now;
        let link = &mut self.links[l as usize];
        if link.impaired(now, &pkt) {
            return;
        }
        if link.transmitting.is_none() {
            match link.queue.on_idle_arrival(now, pkt) {
                Ok(next) => {
                    let done = link.start_tx(now, next);
                    self.events.schedule(done, Event::LinkTxDone(l));
                }
                Err((dropped, why)) => link.record_drop(&dropped, why),
            }
        } else {
            match link.queue.enqueue(now, pkt) {
                Ok(()) => link.note_queue_length(),
                Err((dropped, why)) => link.record_drop(&dropped, why),
            }
        }
    }

    fn on_timer(&mut self, f: u32, kind: TimerKind) {
        let now = self.now;
        let flow = &mut self.flows[f as usize];
        let timer = match kind {
            TimerKind::Retransmission => &mut flow.rto_timer,
            TimerKind::DelayedAck => &mut flow.delayed_ack_timer,
            TimerKind::Pacing => &mut flow.pacing_timer,
            TimerKind::WindowUpdate => &mut flow.window_update_timer,
        };
        match timer.fire(now) {
            Fired::Ignore => {}
            Fired::Rearm(t) => self.events.schedule(t, Event::Timer(f, kind)),
            Fired::Expired => {
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
                    TimerKind::WindowUpdate => {
                        flow.receiver.on_window_update_timer(now, &mut out);
                        flow.dst
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
        if let Some(t) = flow.window_update_timer.set(flow.receiver.window_update_deadline()) {
            self.events.schedule(t, Event::Timer(f, TimerKind::WindowUpdate));
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
                    "out_of_order_segments": r.stats.out_of_order_segments,
                    "duplicate_segments": r.stats.duplicate_segments,
                    "bytes_read": r.bytes_read(self.now),
                    "window_updates_sent": r.stats.window_updates_sent,
                    "zero_window_acks_sent": r.stats.zero_window_acks_sent,
                    "out_of_window_segments": r.stats.out_of_window_segments,
                    "zero_window_probes": s.stats.zero_window_probes,
                    "bytes_written": s.bytes_written(),
                    "bursts": f.bursts.bursts,
                    "failed_burst_cycles": f.bursts.failed_cycles,
                    "cwnd_segments": s.cc_state.cwnd,
                    "ssthresh_segments": if ssthresh >= INFINITE_SSTHRESH { None } else { Some(ssthresh) },
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
                    "max_queue_packets": st.max_queue_packets,
                    "max_queue_bytes": st.max_queue_bytes,
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
        })
    }

    /// Runs to the end and returns the summary and both time series.
    pub fn finish(&mut self) -> Value {
        self.run();
        json!({
            "summary": self.summary(),
            "flow_series": self.flow_series,
            "queue_series": self.queue_series,
        })
    }
}
