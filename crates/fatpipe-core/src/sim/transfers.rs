//! Transfers one after another on one flow, as a user reruns iperf (`source.transfers`):
//! each transfer is a connection of its own. It closes when its application has written
//! the transfer and every byte is acknowledged, leaving what Linux's per-destination metrics
//! cache keeps (`tcp/metrics.rs`, `tcp_update_metrics`), and the next opens
//! `transfer_gap_ps` later. Every connection of a bulk flow opens from that cache
//! (`tcp_init_metrics`), so a later flow between the same hosts finds it too. A flow
//! without `transfers` holds its one connection to the end of the run (fatpipe models no
//! FIN), so it never closes and leaves nothing in the cache.
//!
//! All of this runs at a connection's opening and closing, never per packet (one branch per
//! ACK asks whether the flow repeats).

use super::Simulation;
use crate::cc::INFINITE_SSTHRESH;
use crate::event::Event;
use crate::source::SourceSpec;
use crate::tcp::metrics::Seed;
use crate::tcp::Handshake;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Serialize;

/// A repeating flow's progress.
#[derive(Debug)]
pub(super) struct Transfers {
    count: u32,
    gap_ps: Time,
    /// How long each transfer writes (stop - start), when time-limited.
    duration_ps: Option<Time>,
    /// When the live transfer's application stops writing.
    pub(super) stop_ps: Option<Time>,
    /// The flow's cumulative counters when the live transfer began.
    base: Counters,
    pub(super) records: Vec<TransferSummary>,
}

/// One transfer of a flow with `transfers`: its connection's own counters and what it
/// started from.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransferSummary {
    /// When the application started the transfer (its connection opened then).
    pub start_ps: Time,
    /// When its last byte was acknowledged and its connection closed; None: still open at
    /// the end of the run.
    pub end_ps: Option<Time>,
    pub bytes_delivered: u64,
    pub bytes_written: u64,
    pub segments_retransmitted: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    /// The connection opened from the destination's cached metrics (an entry was there).
    pub metrics_seeded: bool,
    /// ssthresh the connection started with, segments (None: Linux's "infinite").
    pub initial_ssthresh_segments: Option<u32>,
    /// The reordering degree it started with, segments.
    pub initial_reordering_segments: u32,
    /// Its retransmission timeout before the first RTT sample of its data.
    pub initial_rto_ps: Time,
    /// cwnd and ssthresh when it closed (None: not closed, or ssthresh never set).
    pub final_cwnd_segments: Option<u32>,
    pub final_ssthresh_segments: Option<u32>,
}

/// A flow's cumulative counters (over all its connections).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    delivered: u64,
    written: u64,
    retransmitted: u64,
    fast_retransmits: u64,
    timeouts: u64,
}

impl Transfers {
    /// The state of a flow whose source repeats (None otherwise).
    pub(super) fn of(source: &SourceSpec) -> Option<Box<Transfers>> {
        let SourceSpec::Bulk(b) = source else { return None };
        let count = b.transfers?;
        Some(Box::new(Transfers {
            count,
            gap_ps: b.transfer_gap_ps,
            duration_ps: b.stop_ps.map(|s| s.saturating_sub(b.start_ps)),
            stop_ps: b.stop_ps,
            base: Counters::default(),
            records: Vec::with_capacity(count as usize),
        }))
    }

    /// The live transfer has not closed yet.
    fn live(&self) -> bool {
        self.records.last().is_some_and(|r| r.end_ps.is_none())
    }

    /// The records with the live transfer's counters brought up to now (for the summary).
    pub(super) fn summary(&self, now: Counters) -> Vec<TransferSummary> {
        let mut records = self.records.clone();
        if let Some(r) = records.last_mut().filter(|r| r.end_ps.is_none()) {
            r.fill(&self.base, &now);
        }
        records
    }
}

impl TransferSummary {
    fn fill(&mut self, base: &Counters, now: &Counters) {
        self.bytes_delivered = now.delivered - base.delivered;
        self.bytes_written = now.written - base.written;
        self.segments_retransmitted = now.retransmitted - base.retransmitted;
        self.fast_retransmits = now.fast_retransmits - base.fast_retransmits;
        self.timeouts = now.timeouts - base.timeouts;
    }
}

impl Simulation {
    fn counters(&self, f: u32) -> Counters {
        let flow = &self.flows[f as usize];
        let s = &flow.sender.tcb.stats;
        Counters {
            delivered: flow.delivered_bytes(),
            written: flow.closed.written_bytes + flow.sender.bytes_written(),
            retransmitted: s.segments_retransmitted,
            fast_retransmits: s.fast_retransmits,
            timeouts: s.timeouts,
        }
    }

    /// The transfers of flow `f` for its summary (None unless it repeats).
    pub(super) fn transfer_summaries(&self, f: u32) -> Option<Vec<TransferSummary>> {
        let t = self.flows[f as usize].transfers.as_ref()?;
        Some(t.summary(self.counters(f)))
    }

    /// The next transfer of a repeating flow begins (its `SourceStart`): after the first, on
    /// a fresh connection, with its own stop time.
    pub(super) fn begin_transfer(&mut self, f: u32) {
        let now = self.now;
        let base = self.counters(f);
        let flow = &mut self.flows[f as usize];
        let t = flow.transfers.as_mut().expect("a repeating flow");
        let first = t.records.is_empty();
        if !first {
            t.stop_ps = t.duration_ps.map(|d| now + d);
        }
        let stop = t.stop_ps;
        t.base = base;
        t.records.push(TransferSummary {
            start_ps: now,
            end_ps: None,
            bytes_delivered: 0,
            bytes_written: 0,
            segments_retransmitted: 0,
            fast_retransmits: 0,
            timeouts: 0,
            metrics_seeded: false,
            initial_ssthresh_segments: None,
            initial_reordering_segments: 0,
            initial_rto_ps: 0,
            final_cwnd_segments: None,
            final_ssthresh_segments: None,
        });
        if first {
            return; // the stop was scheduled with the run, the connection is the flow's first
        }
        if let Some(stop) = stop {
            self.events.schedule(stop, Event::SourceStop(f));
        }
        self.reset_connection(f);
        let spec = &self.scenario.flows[f as usize];
        if spec.tcp().handshake {
            let flow = &mut self.flows[f as usize];
            flow.handshake = Some(Handshake::new(f, flow.conn, flow.src, flow.dst, spec.tcp()));
        }
    }

    /// A `SourceStop` that belongs to an earlier transfer of a repeating flow (that transfer
    /// ended by its byte count before its stop time).
    pub(super) fn stale_stop(&self, f: u32) -> bool {
        let t = self.flows[f as usize].transfers.as_ref();
        t.is_some_and(|t| t.stop_ps.is_none_or(|s| self.now < s))
    }

    /// The application of a bulk flow is about to write on a new connection: the connection
    /// starts from the destination's cached metrics, if its kernel keeps them and there are
    /// any (Linux `tcp_init_metrics`, after the handshake when there is one).
    pub(super) fn open_from_metrics(&mut self, f: u32) {
        let now = self.now;
        let spec = &self.scenario.flows[f as usize];
        let Some(cfg) = spec.tcp().metrics else { return };
        let flow = &mut self.flows[f as usize];
        let seed: Option<Seed> = self.metrics.seed(flow.src, flow.dst, &cfg, &flow.sender.opening_metrics(), now);
        if let Some(seed) = &seed {
            flow.sender.apply_metrics(seed);
        }
        let sender = &flow.sender;
        if let Some(r) = flow.transfers.as_mut().and_then(|t| t.records.last_mut()) {
            let ssthresh = sender.tcb.cc_state.ssthresh;
            r.metrics_seeded = seed.is_some();
            r.initial_ssthresh_segments = (ssthresh < INFINITE_SSTHRESH).then_some(ssthresh);
            r.initial_reordering_segments = sender.reordering_segments();
            r.initial_rto_ps = sender.tcb.rtt.rto();
        }
    }

    /// After an ACK or the application's stop: a repeating flow whose transfer is written and
    /// acknowledged closes its connection (Linux `tcp_update_metrics` as it enters TIME-WAIT)
    /// and schedules the next transfer.
    pub(super) fn end_transfer_if_done(&mut self, f: u32) {
        let now = self.now;
        let flow = &self.flows[f as usize];
        let Some(t) = flow.transfers.as_ref() else { return };
        if !t.live() || !flow.sender.is_finished() {
            return;
        }
        if let Some(cfg) = self.scenario.flows[f as usize].tcp().metrics {
            self.metrics.update(flow.src, flow.dst, &cfg, &flow.sender.closing_metrics(), now);
        }
        let counters = self.counters(f);
        let flow = &mut self.flows[f as usize];
        let cc = &flow.sender.tcb.cc_state;
        let (cwnd, ssthresh) = (cc.cwnd, cc.ssthresh);
        let t = flow.transfers.as_mut().expect("checked");
        let base = t.base;
        let r = t.records.last_mut().expect("live");
        r.fill(&base, &counters);
        r.end_ps = Some(now);
        r.final_cwnd_segments = Some(cwnd);
        r.final_ssthresh_segments = (ssthresh < INFINITE_SSTHRESH).then_some(ssthresh);
        if (t.records.len() as u32) < t.count {
            let next = now + t.gap_ps;
            self.events.schedule(next, Event::SourceStart(f));
        }
    }
}
