//! Per-flow time series of a run on real sockets: every `sample_interval`, each TCP flow's
//! TCP_INFO (sender and receiver) and what its applications wrote and read; for UDP flows
//! the applications' counts and, in an emulation, the bytes the relay holds in its links.
//!
//! The columns are fatpipe-core's `FlowSeries` (so the Python side reads them the same way),
//! with -1 where a flow has no value, plus TCP_INFO's own columns. The sender's columns come
//! from the sending socket and `delivered_bytes` from the receiving one, each only if this
//! process holds it: `fatpipe probe` samples each end on its own host, with the same times,
//! and puts the two together.

use crate::relay::Shared;
use crate::traffic::tcp::TcpStream;
use crate::traffic::tcp_info::{Field, Sampled, INFINITE_SSTHRESH};
use crate::traffic::{Counters, Schedule};
use fatpipe_core::probe::FlowSeries;
use fatpipe_core::time::{Time, PS_PER_US};
use schemars::JsonSchema;
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

#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowColumns {
    /// A simulation's columns. delivered_bytes: in-order bytes the receiving TCP took
    /// (tcpi_bytes_received; UDP: payload received); sent_bytes: payload sent,
    /// retransmissions included (tcpi_bytes_sent; UDP: sent).
    #[serde(flatten)]
    pub base: FlowSeries,
    // TCP_INFO beyond what a simulation records (-1 for UDP flows and before connection).
    pub rttvar_ps: Vec<i64>,
    /// The retransmission timeout now (tcpi_rto), backoff included.
    pub rto_ps: Vec<i64>,
    pub retransmitted_segments: Vec<i64>,
    /// Retransmission timeouts so far (tcpi_total_rto, Linux 6.7; -1 on older kernels).
    pub timeouts: Vec<i64>,
    pub lost_segments: Vec<i64>,
    pub delivery_rate_bps: Vec<i64>,
    pub pacing_rate_bps: Vec<i64>,
    pub bytes_acked: Vec<i64>,
    /// The sender's congestion state (tcpi_ca_state: 0 Open, 1 Disorder, 2 CWR, 3 Recovery,
    /// 4 Loss): CWR without a loss is a reduction on an ECN echo or on local congestion (a
    /// device queue refusing a packet, `tcp_enter_cwr`).
    pub ca_state: Vec<i64>,
    // The applications.
    pub written_bytes: Vec<u64>,
    pub read_bytes: Vec<u64>,
    // UDP (-1 for TCP flows): datagrams sent, received, and lost so far as the receiving
    // application sees them (gaps in the datagram numbers, iperf's count).
    pub datagrams_sent: Vec<i64>,
    pub datagrams_received: Vec<i64>,
    pub datagrams_lost: Vec<i64>,
}

/// The sender's and receiver's TCP_INFO at the run's end, and the largest window the
/// receiver announced (seen by the sender) over the run.
#[derive(Clone, Copy, Debug, Default)]
pub struct FinalState {
    pub sender: Option<Sampled>,
    pub receiver: Option<Sampled>,
    pub max_peer_window_bytes: u32,
    /// The receiving application's bytes read at the end, counted just before the
    /// receiver's TCP_INFO: an application reads only what has arrived, so this is never
    /// more than that TCP_INFO's bytes received (the application reads on after the end,
    /// and a later count could be).
    pub read_bytes: u64,
}

pub struct SamplerOutput {
    pub series: FlowColumns,
    pub finals: Vec<FinalState>,
}

/// Samples at 0, interval, 2 x interval ... up to the end, then reads the final state.
/// `relay`: the emulator's relay, which knows the UDP bytes in its links (None on a real
/// host: `outstanding_bytes` of a UDP flow is then 0, for whoever sees both ends to fill).
pub fn run(
    flows: Vec<SampledFlow>,
    interval_ps: Time,
    schedule: Schedule,
    relay: Option<Arc<Shared>>,
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
            sample(&mut series, t, i as u32, f, relay.as_deref(), &mut finals[i]);
        }
        t += interval_ps;
    }
    for (i, f) in flows.iter().enumerate() {
        finals[i].sender = f.sender.get().and_then(|s| s.info().ok());
        finals[i].read_bytes = f.counters.snapshot().read;
        finals[i].receiver = f.receiver.get().and_then(|s| s.info().ok());
    }
    SamplerOutput { series, finals }
}

fn sample(all: &mut FlowColumns, t: Time, i: u32, f: &SampledFlow, relay: Option<&Shared>, last: &mut FinalState) {
    let c = &mut all.base;
    c.time_ps.push(t);
    c.flow.push(i);
    let counters = &f.counters;
    let written = counters.written.load(Ordering::Relaxed);
    let read = counters.read.load(Ordering::Relaxed);
    all.written_bytes.push(written);
    all.read_bytes.push(read);
    let tcp_only = [
        &mut all.rttvar_ps,
        &mut all.rto_ps,
        &mut all.retransmitted_segments,
        &mut all.timeouts,
        &mut all.lost_segments,
        &mut all.delivery_rate_bps,
        &mut all.pacing_rate_bps,
        &mut all.bytes_acked,
        &mut all.ca_state,
    ];
    if f.udp {
        let in_network = relay.map_or(0, |r| {
            let bytes = &r.flows[i as usize];
            let gone = bytes.lost.load(Ordering::Relaxed) + bytes.delivered.load(Ordering::Relaxed);
            bytes.entered.load(Ordering::Relaxed).saturating_sub(gone)
        });
        c.cwnd_segments.push(-1);
        c.ssthresh_segments.push(-1);
        c.outstanding_bytes.push(in_network);
        c.srtt_ps.push(-1);
        c.delivered_bytes.push(read);
        c.sent_bytes.push(written);
        tcp_only.into_iter().for_each(|col| col.push(-1));
        let received = counters.datagrams_received.load(Ordering::Relaxed);
        let expected = counters.datagrams_expected.load(Ordering::Relaxed);
        all.datagrams_sent.push(counters.datagrams_sent.load(Ordering::Relaxed) as i64);
        all.datagrams_received.push(received as i64);
        all.datagrams_lost.push(expected.saturating_sub(received) as i64);
        return;
    }
    for col in [&mut all.datagrams_sent, &mut all.datagrams_received, &mut all.datagrams_lost] {
        col.push(-1);
    }
    // In-order bytes the receiving TCP took, if this process holds the receiving socket.
    let received = f.receiver.get().and_then(|r| r.info().ok()).map_or(0, |r| r.info.bytes_received);
    c.delivered_bytes.push(received);
    let Some((stream, s)) = f.sender.get().and_then(|s| s.info().ok().map(|info| (s, info))) else {
        // Not connected yet, or the sending socket is on the other host.
        c.cwnd_segments.push(-1);
        c.ssthresh_segments.push(-1);
        c.outstanding_bytes.push(0);
        c.srtt_ps.push(-1);
        c.sent_bytes.push(0);
        tcp_only.into_iter().for_each(|col| col.push(-1));
        return;
    };
    let info = &s.info;
    last.max_peer_window_bytes = last.max_peer_window_bytes.max(info.snd_wnd);
    c.cwnd_segments.push(info.snd_cwnd as i64);
    c.ssthresh_segments.push(if info.snd_ssthresh >= INFINITE_SSTHRESH { -1 } else { info.snd_ssthresh as i64 });
    c.outstanding_bytes.push(stream.outstanding_bytes().unwrap_or(0));
    // tcpi_rtt is 0 until the first sample (the handshake gives one).
    c.srtt_ps.push(if info.rtt_us == 0 { -1 } else { info.rtt_us as i64 * PS_PER_US as i64 });
    c.sent_bytes.push(info.bytes_sent);
    all.rttvar_ps.push(info.rttvar_us as i64 * PS_PER_US as i64);
    all.rto_ps.push(info.rto_us as i64 * PS_PER_US as i64);
    all.retransmitted_segments.push(info.total_retrans as i64);
    all.timeouts.push(if s.has(Field::TotalRto) { i64::from(info.total_rto) } else { -1 });
    all.lost_segments.push(info.lost as i64);
    all.delivery_rate_bps.push((info.delivery_rate.saturating_mul(8)).min(i64::MAX as u64) as i64);
    all.pacing_rate_bps.push(if info.pacing_rate == u64::MAX {
        -1
    } else {
        info.pacing_rate.saturating_mul(8).min(i64::MAX as u64) as i64
    });
    all.bytes_acked.push(info.bytes_acked.min(i64::MAX as u64) as i64);
    all.ca_state.push(i64::from(info.ca_state));
}
