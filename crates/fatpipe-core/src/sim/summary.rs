//! The run's results as types: the summary (per flow, link and capture) and the columns
//! of `Simulation::finish`. These types are the results half of the contract with Python:
//! `schema.rs` turns them into the JSON Schema Python's tests check the real output, and the
//! test double, against. Field comments are the schema's descriptions.

use super::{Flow, Simulation};
use crate::capture::Capture;
use crate::cc::INFINITE_SSTHRESH;
use crate::net::link::Link;
use crate::net::queue::scheduled::AqmSummary;
use crate::probe::{FlowCounters, FlowSeries, QueueSeries};
use crate::source::http::RequestTable;
use crate::source::udp::UdpFlow;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Serialize;

/// What `Simulation::finish` returns: the summary and the columns (docs/core-interface.md).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Output {
    pub summary: Summary,
    /// One row per sample per flow.
    pub flow_series: FlowSeries,
    /// One row per sample per link.
    pub queue_series: QueueSeries,
    /// One row per completed HTTP request, all flows, in flow then request order.
    pub requests: RequestTable,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    pub name: String,
    pub seed: u64,
    pub duration_ps: Time,
    /// Events processed.
    pub events: u64,
    /// One entry per flow, in scenario order.
    pub flows: Vec<FlowSummary>,
    /// One entry per link, in scenario order.
    pub links: Vec<LinkSummary>,
    /// One entry per capture, in scenario order.
    pub captures: Vec<CaptureSummary>,
}

/// A flow's counters; `transport` says which kind.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum FlowSummary {
    /// Boxed: a TCP entry is several times a UDP one.
    Tcp(Box<TcpFlowSummary>),
    Udp(UdpFlowSummary),
}

/// A TCP flow. Counters cover all of its connections; the window and RTT values are the
/// live connection's.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpFlowSummary {
    pub name: String,
    /// The parallel-stream group the flow belongs to (None unless a stream of a group).
    pub group: Option<String>,
    pub algorithm: String,
    pub mss_bytes: u32,
    /// IP and TCP header bytes per segment, options included.
    pub header_bytes: u32,
    pub start_ps: Time,
    /// Last byte delivered in order, or None.
    pub end_ps: Option<Time>,
    /// A byte-limited flow delivered everything; HTTP: every request answered.
    pub completed: bool,
    pub bytes_delivered: u64,
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes_sent: u64,
    /// Data segments put on the wire, retransmissions included.
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    /// Recoveries started by duplicate ACKs or SACK information (fast retransmits).
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub dupacks_received: u64,
    pub acks_sent: u64,
    /// Data segments that arrived above a hole.
    pub out_of_order_segments: u64,
    pub duplicate_segments: u64,
    /// Bytes the receiving application read.
    pub bytes_read: u64,
    pub window_updates_sent: u64,
    pub zero_window_acks_sent: u64,
    pub out_of_window_segments: u64,
    /// Zero-window probes sent by the persist timer.
    pub zero_window_probes: u64,
    /// ACKs the receiver sent reporting a duplicate segment (D-SACK, RFC 2883), and those the
    /// sender received.
    pub dsacks_sent: u64,
    pub dsacks_received: u64,
    /// Window reductions taken back as spurious (DSACK, Eifel, F-RTO; Linux stack).
    pub undos: u64,
    /// Timeouts F-RTO found spurious (RFC 5682; Linux stack).
    pub spurious_timeouts: u64,
    /// Tail loss probes sent, and those that repaired a loss without a recovery (RFC 8985).
    pub loss_probes: u64,
    pub loss_probe_recoveries: u64,
    /// Deliveries out of order that showed the path reorders (Linux stack).
    pub reordering_events: u64,
    /// The reordering degree the Linux stack learnt; the duplicate-ACK threshold in the RFC
    /// stack. Segments.
    pub reordering_segments: u32,
    pub bytes_written: u64,
    /// Paced source or paced HTTP server.
    pub bursts: u64,
    pub failed_burst_cycles: u64,
    pub cwnd_segments: u32,
    /// None while unset.
    pub ssthresh_segments: Option<u32>,
    /// This flow's packets dropped anywhere in the network.
    pub data_packets_lost: u64,
    pub data_bytes_lost: u64,
    pub retransmissions_lost: u64,
    pub ack_packets_lost: u64,
    /// SYN, SYN-ACK, handshake ACK and HTTP request segments lost.
    pub setup_packets_lost: u64,
    /// When the first data segment went out.
    pub first_send_ps: Option<Time>,
    pub slow_start_end_ps: Option<Time>,
    pub slow_start_segments_sent: u64,
    pub slow_start_segments_lost: u64,
    pub first_loss_ps: Option<Time>,
    pub first_loss_cwnd_segments: Option<u32>,
    pub recovered_95_ps: Option<Time>,
    pub recovered_ps: Option<Time>,
    /// Times the host's interface queue refused a segment after accepting the one before:
    /// how often the queue filled up on the sender.
    pub local_congestion_events: u64,
    /// Window reductions without loss (local congestion or ECN).
    pub cwr_entries: u64,
    /// ACKs received with ECE.
    pub ecn_echoes: u64,
    /// Data segments that arrived marked CE.
    pub ce_segments_received: u64,
    /// None before a sample.
    pub srtt_ps: Option<Time>,
    pub min_rtt_ps: Option<Time>,
    /// 1, or HTTP's connections opened.
    pub connections: u64,
    pub syn_retransmits: u64,
    pub synack_retransmits: u64,
    /// HTTP flows; None otherwise.
    pub requests_completed: Option<u64>,
    pub request_retransmissions: Option<u64>,
    /// A flow with `transfers`: each transfer, its connection's own counters and the metrics
    /// it started from (`sim/transfers.rs`); `connections` counts them. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers: Option<Vec<super::TransferSummary>>,
}

/// A UDP flow: none of the TCP keys. sent = received + lost + in flight.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpFlowSummary {
    pub name: String,
    /// The source's kind (udp_cbr, udp_burst, udp_onoff).
    pub source: String,
    pub payload_bytes: u32,
    /// IP and UDP header bytes per datagram (28).
    pub header_bytes: u32,
    pub start_ps: Time,
    /// Last datagram received, or None.
    pub end_ps: Option<Time>,
    /// UDP payload bytes.
    pub bytes_sent: u64,
    pub bytes_delivered: u64,
    pub bytes_lost: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Dropped by a queue or an impairment.
    pub datagrams_lost: u64,
    /// Still in a queue or on a link when the run ended.
    pub datagrams_in_flight_at_end: u64,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSummary {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub delay_ps: Time,
    /// Packets whose transmission started.
    pub packets_sent: u64,
    /// Wire bytes of those packets, framing included.
    pub bytes_sent: u64,
    /// Time spent transmitting up to the end of the run (a packet still being serialized
    /// then counts only its part before the end).
    pub busy_ps: Time,
    /// Packets dropped because the queue was full.
    pub drops_packets: u64,
    pub drops_bytes: u64,
    /// Packets dropped early by an active queue manager (RED on arrival, CoDel's, PIE's
    /// control law).
    pub early_drops_packets: u64,
    /// Packets lost to random loss (Bernoulli, Gilbert-Elliott) on entering the link.
    pub impairment_drops_packets: u64,
    /// Packets lost to scheduled outages on entering the link.
    pub outage_drops_packets: u64,
    /// Dropped above a token-bucket policer's rate; only for a link with a policer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policer_drops_packets: Option<u64>,
    /// Packets RED marked CE instead of dropping.
    pub ecn_marks: u64,
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    /// RED's thresholds and weight in effect (given, or ns-2's automatic values); None for
    /// other disciplines.
    pub red_min_th_packets: Option<f64>,
    pub red_max_th_packets: Option<f64>,
    pub red_w_q: Option<f64>,
    /// CoDel and FQ-CoDel: what the discipline did, by cause, and the sojourn times;
    /// absent for the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmSummary>,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureSummary {
    pub name: String,
    pub path: String,
    pub packets_written: u64,
    /// Over max_packets.
    pub packets_not_written: u64,
    /// None, or why the file could not be written.
    pub error: Option<String>,
    /// The file's time stamps are the simulated time plus this (whole seconds; 0 unless a
    /// flow that starts established starts within its handshake's round trip: its
    /// synthetic SYN, SYN-ACK and ACK are stamped before its start).
    pub clock_offset_ps: u64,
}

impl LinkSummary {
    /// A link's entry in the summary at `now` (the simulation's and the emulator's).
    pub fn of(l: &Link, now: Time) -> LinkSummary {
        let st = &l.stats;
        let red = l.queue().red_parameters();
        LinkSummary {
            name: l.spec.name.clone(),
            from: l.spec.from,
            to: l.spec.to,
            rate_bps: l.spec.rate_bps,
            delay_ps: l.spec.delay_ps,
            packets_sent: st.packets_sent,
            bytes_sent: st.bytes_sent,
            busy_ps: l.busy_ps_until(now),
            drops_packets: st.drops_packets,
            drops_bytes: st.drops_bytes,
            early_drops_packets: st.early_drops_packets,
            impairment_drops_packets: st.impairment_drops_packets,
            outage_drops_packets: st.outage_drops_packets,
            policer_drops_packets: l.has_policer().then_some(st.policer_drops_packets),
            ecn_marks: l.queue().ecn_marks(),
            max_queue_packets: st.max_queue_packets,
            max_queue_bytes: st.max_queue_bytes,
            red_min_th_packets: red.map(|r| r.0),
            red_max_th_packets: red.map(|r| r.1),
            red_w_q: red.map(|r| r.2),
            aqm: l.queue().held().map(AqmSummary::of),
        }
    }
}

impl CaptureSummary {
    /// A capture's entry in the summary.
    pub fn of(c: &Capture) -> CaptureSummary {
        CaptureSummary {
            name: c.spec.name.clone(),
            path: c.spec.path.clone(),
            packets_written: c.packets_written,
            packets_not_written: c.packets_not_written,
            error: c.error.clone(),
            clock_offset_ps: c.clock_offset_ps,
        }
    }
}

impl Simulation {
    /// The summary of the run so far.
    pub fn report(&self) -> Summary {
        let flows = self.flows.iter().zip(&self.scenario.flows).enumerate().map(|(i, (f, spec))| match &f.udp {
            Some(udp) => FlowSummary::Udp(udp_summary(f, udp)),
            None => {
                let mut tcp = self.tcp_summary(f, spec.group.clone());
                tcp.transfers = self.transfer_summaries(i as u32);
                if let Some(t) = &tcp.transfers {
                    tcp.connections = t.len() as u64;
                }
                FlowSummary::Tcp(Box::new(tcp))
            }
        });
        let links = self.links.iter().map(|l| LinkSummary::of(l, self.now));
        let captures = self.captures.iter().map(CaptureSummary::of);
        Summary {
            name: self.scenario.name.clone(),
            seed: self.scenario.seed,
            duration_ps: self.scenario.duration_ps,
            events: self.events.popped,
            flows: flows.collect(),
            links: links.collect(),
            captures: captures.collect(),
        }
    }

    fn tcp_summary(&self, f: &Flow, group: Option<String>) -> TcpFlowSummary {
        let sender = &f.sender;
        let s = &sender.tcb;
        let r = &f.receiver;
        let ssthresh = s.cc_state.ssthresh;
        let (syn_retransmits, synack_retransmits) = f.handshake_retransmits();
        let http = f.http.as_ref();
        TcpFlowSummary {
            name: f.name.clone(),
            group,
            algorithm: sender.algorithm().to_string(),
            mss_bytes: sender.mss(),
            header_bytes: sender.header_bytes(),
            start_ps: f.source.start_ps(),
            end_ps: r.stats.last_delivery_ps,
            completed: http.map_or(sender.is_finished(), |h| h.is_done()),
            bytes_delivered: f.delivered_bytes(),
            bytes_sent: s.stats.bytes_sent,
            segments_sent: s.stats.segments_sent,
            segments_retransmitted: s.stats.segments_retransmitted,
            fast_retransmits: s.stats.fast_retransmits,
            timeouts: s.stats.timeouts,
            dupacks_received: s.stats.dupacks_received,
            acks_sent: r.stats.acks_sent,
            out_of_order_segments: r.stats.out_of_order_segments,
            duplicate_segments: r.stats.duplicate_segments,
            bytes_read: r.bytes_read(self.now),
            window_updates_sent: r.stats.window_updates_sent,
            zero_window_acks_sent: r.stats.zero_window_acks_sent,
            out_of_window_segments: r.stats.out_of_window_segments,
            zero_window_probes: s.stats.zero_window_probes,
            dsacks_sent: r.stats.dsacks_sent,
            dsacks_received: s.stats.dsacks_received,
            undos: s.stats.undos,
            spurious_timeouts: s.stats.spurious_timeouts,
            loss_probes: s.stats.loss_probes,
            loss_probe_recoveries: s.stats.loss_probe_recoveries,
            reordering_events: s.stats.reordering_events,
            reordering_segments: sender.reordering_segments(),
            bytes_written: f.closed.written_bytes + sender.bytes_written(),
            bursts: f.bursts.bursts,
            failed_burst_cycles: f.bursts.failed_cycles,
            cwnd_segments: s.cc_state.cwnd,
            ssthresh_segments: (ssthresh < INFINITE_SSTHRESH).then_some(ssthresh),
            data_packets_lost: f.losses.data_packets,
            data_bytes_lost: f.losses.data_payload_bytes,
            retransmissions_lost: f.losses.retransmissions,
            ack_packets_lost: f.losses.ack_packets,
            setup_packets_lost: f.losses.setup_packets,
            first_send_ps: s.stats.first_send_ps,
            slow_start_end_ps: s.milestones.slow_start_end_ps,
            slow_start_segments_sent: s.milestones.slow_start_segments_sent,
            slow_start_segments_lost: f.losses.slow_start_data_packets,
            first_loss_ps: s.milestones.first_loss_ps,
            first_loss_cwnd_segments: s.milestones.first_loss_ps.map(|_| s.milestones.first_loss_cwnd_segments),
            recovered_95_ps: s.milestones.recovered_95_ps,
            recovered_ps: s.milestones.recovered_ps,
            local_congestion_events: s.stats.local_congestion_events,
            cwr_entries: s.stats.cwr_entries,
            ecn_echoes: s.stats.ecn_echoes,
            ce_segments_received: r.stats.ce_segments,
            srtt_ps: s.rtt.srtt,
            min_rtt_ps: s.rtt.min_rtt,
            connections: http.map_or(1, |h| h.connections),
            syn_retransmits,
            synack_retransmits,
            requests_completed: http.map(|h| h.records.len() as u64),
            request_retransmissions: http.map(|h| h.request_retransmissions),
            transfers: None,
        }
    }

    /// Every flow's counters now (`probe::FlowCounters`).
    pub fn flow_counters(&self) -> FlowCounters {
        let mut c = FlowCounters::default();
        c.reserve(self.flows.len());
        for flow in &self.flows {
            let s = &flow.sender;
            match &flow.udp {
                Some(udp) => {
                    c.delivered_bytes.push(udp.stats.bytes_received);
                    c.sent_bytes.push(udp.stats.bytes_sent);
                    c.segments_sent.push(udp.stats.datagrams_sent);
                    c.segments_retransmitted.push(0);
                    c.outstanding_bytes.push(udp.stats.bytes_in_flight());
                    c.datagrams_lost.push(udp.stats.datagrams_lost);
                    c.cwnd_segments.push(-1);
                    c.srtt_ps.push(-1);
                    c.rto_ps.push(-1);
                    c.timeouts.push(0);
                }
                None => {
                    c.delivered_bytes.push(flow.delivered_bytes());
                    c.sent_bytes.push(s.tcb.stats.bytes_sent);
                    c.segments_sent.push(s.tcb.stats.segments_sent);
                    c.segments_retransmitted.push(s.tcb.stats.segments_retransmitted);
                    c.outstanding_bytes.push(s.outstanding_bytes());
                    c.datagrams_lost.push(0);
                    c.cwnd_segments.push(i64::from(s.tcb.cc_state.cwnd));
                    c.srtt_ps.push(s.tcb.rtt.srtt.map_or(-1, |v| v as i64));
                    c.rto_ps.push(s.tcb.rtt.rto() as i64);
                    c.timeouts.push(s.tcb.stats.timeouts);
                }
            }
        }
        c
    }

    /// Runs to the end and returns the summary and the columns, moving the columns out (a
    /// second call returns empty ones). A capture that could not be written says so in its
    /// summary entry (`error`).
    pub fn finish_output(&mut self) -> Output {
        self.run();
        for c in &mut self.captures {
            c.flush();
        }
        let mut requests = RequestTable::default();
        for (i, flow) in self.flows.iter().enumerate() {
            for r in flow.http.iter().flat_map(|h| &h.records) {
                requests.push(i as u32, r);
            }
        }
        Output {
            summary: self.report(),
            flow_series: std::mem::take(&mut self.flow_series),
            queue_series: std::mem::take(&mut self.queue_series),
            requests,
        }
    }
}

/// A UDP flow's summary entry: no TCP keys at all, so that nothing reads a window or a
/// retransmission count a UDP flow does not have.
fn udp_summary(f: &Flow, udp: &UdpFlow) -> UdpFlowSummary {
    let st = &udp.stats;
    UdpFlowSummary {
        name: f.name.clone(),
        source: f.source.kind().to_string(),
        payload_bytes: f.source.udp_payload_bytes().unwrap_or(0),
        header_bytes: crate::packet::IPV4_UDP_HEADER_BYTES,
        start_ps: f.source.start_ps(),
        end_ps: st.last_arrival_ps,
        bytes_sent: st.bytes_sent,
        bytes_delivered: st.bytes_received,
        bytes_lost: st.bytes_lost,
        datagrams_sent: st.datagrams_sent,
        datagrams_received: st.datagrams_received,
        datagrams_lost: st.datagrams_lost,
        datagrams_in_flight_at_end: st.datagrams_in_flight(),
    }
}

#[cfg(test)]
mod tests {
    use super::{LinkSummary, TcpFlowSummary};
    use crate::net::link::LinkStats;
    use crate::tcp::stats::SenderStats;

    /// The names of a summary type's keys, from its JSON Schema.
    fn published<T: schemars::JsonSchema>() -> Vec<String> {
        let schema = serde_json::to_value(schemars::schema_for!(T)).expect("a schema");
        schema["properties"].as_object().expect("an object's properties").keys().cloned().collect()
    }

    /// The names of a counters struct's fields.
    fn counted<T: Default + serde::Serialize>() -> Vec<String> {
        let value = serde_json::to_value(T::default()).expect("counters serialize");
        value.as_object().expect("a struct").keys().cloned().collect()
    }

    /// Each counter is described once, in the summary: one kept and not published, or
    /// renamed on its way out, would have a second meaning of its own.
    #[test]
    fn every_counter_is_published_under_its_own_name() {
        for (counters, summary) in [
            (counted::<LinkStats>(), published::<LinkSummary>()),
            (counted::<SenderStats>(), published::<TcpFlowSummary>()),
        ] {
            for name in counters {
                assert!(summary.contains(&name), "counter {name} has no summary key of that name");
            }
        }
    }
}
