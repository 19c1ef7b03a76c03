//! Per-flow time series of an emulated run: every `sample_interval`, each TCP flow's
//! TCP_INFO (sender and receiver) and what its applications wrote and read; for UDP flows
//! the applications' counts and the bytes the relay holds in its links.
//!
//! The columns are fatpipe-core's `FlowSeries` (so the Python side reads them the same way),
//! with -1 where a UDP flow has no value, plus TCP_INFO's own columns.

use crate::relay::Shared;
use crate::traffic::tcp::TcpStream;
use crate::traffic::tcp_info::{Sampled, INFINITE_SSTHRESH};
use crate::traffic::{Counters, Schedule};
use fatpipe_core::probe::FlowSeries;
use fatpipe_core::time::{Time, PS_PER_US};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// A flow as the sampler sees it.
pub struct SampledFlow {
    pub udp: bool,
    pub sender: Arc<OnceLock<TcpStream>>,
    pub receiver: Arc<OnceLock<TcpStream>>,
    pub counters: Arc<Counters>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct FlowColumns {
    /// A simulation's columns. delivered_bytes: in-order bytes the receiving TCP took
    /// (tcpi_bytes_received; UDP: payload received); sent_bytes: payload sent,
    /// retransmissions included (tcpi_bytes_sent; UDP: sent).
    #[serde(flatten)]
    pub base: FlowSeries,
    // TCP_INFO beyond what a simulation records (-1 for UDP flows and before connection).
    pub rttvar_ps: Vec<i64>,
    pub retransmitted_segments: Vec<i64>,
    pub lost_segments: Vec<i64>,
    pub delivery_rate_bps: Vec<i64>,
    pub pacing_rate_bps: Vec<i64>,
    pub bytes_acked: Vec<i64>,
    // The applications.
    pub written_bytes: Vec<u64>,
    pub read_bytes: Vec<u64>,
}

/// The sender's and receiver's TCP_INFO at the run's end, and the largest window the
/// receiver announced (seen by the sender) over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct FinalState {
    pub sender: Option<Sampled>,
    pub receiver: Option<Sampled>,
    pub max_peer_window_bytes: u32,
}

pub struct SamplerOutput {
    pub series: FlowColumns,
    pub finals: Vec<FinalState>,
}

/// Samples at 0, interval, 2 x interval ... up to the end, then once more at the end.
pub fn run(
    flows: Vec<SampledFlow>,
    interval_ps: Time,
    schedule: Schedule,
    shared: Arc<Shared>,
    stop: &AtomicBool,
) -> SamplerOutput {
    crate::clock::tight_timer_slack();
    let mut series = FlowColumns::default();
    let mut finals = vec![FinalState::default(); flows.len()];
    let mut t: Time = 0;
    while t <= schedule.end_ps {
        // Late (the run's end passed) still samples; only a stop request ends early.
        if !schedule.sleep_until(t, stop) && stop.load(Ordering::Relaxed) {
            break;
        }
        for (i, f) in flows.iter().enumerate() {
            sample(&mut series, t, i as u32, f, &shared, &mut finals[i]);
        }
        t += interval_ps;
    }
    for (i, f) in flows.iter().enumerate() {
        finals[i].sender = f.sender.get().and_then(|s| s.info().ok());
        finals[i].receiver = f.receiver.get().and_then(|s| s.info().ok());
    }
    SamplerOutput { series, finals }
}

fn sample(all: &mut FlowColumns, t: Time, i: u32, f: &SampledFlow, shared: &Shared, last: &mut FinalState) {
    let c = &mut all.base;
    c.time_ps.push(t);
    c.flow.push(i);
    let written = f.counters.written.load(Ordering::Relaxed);
    let read = f.counters.read.load(Ordering::Relaxed);
    all.written_bytes.push(written);
    all.read_bytes.push(read);
    let tx = f.sender.get().and_then(|s| s.info().ok().map(|info| (s, info)));
    if f.udp || tx.is_none() {
        let bytes = &shared.flows[i as usize];
        let in_network = bytes
            .entered
            .load(Ordering::Relaxed)
            .saturating_sub(bytes.lost.load(Ordering::Relaxed) + bytes.delivered.load(Ordering::Relaxed));
        c.cwnd_segments.push(-1);
        c.ssthresh_segments.push(-1);
        c.outstanding_bytes.push(if f.udp { in_network } else { 0 });
        c.srtt_ps.push(-1);
        c.delivered_bytes.push(if f.udp { read } else { 0 });
        c.sent_bytes.push(if f.udp { written } else { 0 });
        for col in [
            &mut all.rttvar_ps,
            &mut all.retransmitted_segments,
            &mut all.lost_segments,
            &mut all.delivery_rate_bps,
            &mut all.pacing_rate_bps,
            &mut all.bytes_acked,
        ] {
            col.push(-1);
        }
        return;
    }
    let (stream, s) = tx.expect("checked");
    let info = &s.info;
    let received = f.receiver.get().and_then(|r| r.info().ok()).map_or(0, |r| r.info.bytes_received);
    last.max_peer_window_bytes = last.max_peer_window_bytes.max(info.snd_wnd);
    c.cwnd_segments.push(info.snd_cwnd as i64);
    c.ssthresh_segments.push(if info.snd_ssthresh >= INFINITE_SSTHRESH { -1 } else { info.snd_ssthresh as i64 });
    c.outstanding_bytes.push(stream.outstanding_bytes().unwrap_or(0));
    // tcpi_rtt is 0 until the first sample (the handshake gives one).
    c.srtt_ps.push(if info.rtt_us == 0 { -1 } else { info.rtt_us as i64 * PS_PER_US as i64 });
    c.delivered_bytes.push(received);
    c.sent_bytes.push(info.bytes_sent);
    all.rttvar_ps.push(info.rttvar_us as i64 * PS_PER_US as i64);
    all.retransmitted_segments.push(info.total_retrans as i64);
    all.lost_segments.push(info.lost as i64);
    all.delivery_rate_bps.push((info.delivery_rate.saturating_mul(8)).min(i64::MAX as u64) as i64);
    all.pacing_rate_bps.push(if info.pacing_rate == u64::MAX {
        -1
    } else {
        info.pacing_rate.saturating_mul(8).min(i64::MAX as u64) as i64
    });
    all.bytes_acked.push(info.bytes_acked.min(i64::MAX as u64) as i64);
}
