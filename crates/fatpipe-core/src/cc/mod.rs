//! Congestion control algorithms behind one small trait, in the spirit of Linux's
//! `struct tcp_congestion_ops`.
//!
//! An algorithm decides how the window grows (`cong_avoid`), where it falls after a loss
//! (`ssthresh`), and may watch state changes and RTT samples. It never detects losses or
//! retransmits: duplicate ACKs, fast retransmit, fast recovery and timeouts live in the TCP
//! core (`tcp/sender.rs`), as they do in Linux. The window is counted in segments, as in Linux.

pub mod reno;

use crate::time::Time;
use serde::Deserialize;

/// Linux's `TCP_INFINITE_SSTHRESH`: no slow-start threshold set yet.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The window state an algorithm reads and changes.
#[derive(Clone, Debug)]
pub struct CcState {
    /// Congestion window, segments (Linux `snd_cwnd`).
    pub cwnd: u32,
    /// ACKed segments counted toward the next additive increase (Linux `snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Slow-start threshold, segments (Linux `snd_ssthresh`).
    pub ssthresh: u32,
    /// Whether the last transmissions were limited by cwnd rather than by the receiver window
    /// or the application (Linux `tcp_is_cwnd_limited`): only then may the window grow.
    pub cwnd_limited: bool,
    /// Segments sent and not yet acknowledged.
    pub in_flight_segments: u32,
    pub mss_bytes: u32,
    pub now: Time,
    /// Smoothed and minimum RTT, picoseconds (None before the first sample).
    pub srtt: Option<Time>,
    pub min_rtt: Option<Time>,
}

impl CcState {
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// Loss-recovery state of the connection (Linux `TCP_CA_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    /// Normal operation.
    Open,
    /// Fast recovery after duplicate ACKs.
    Recovery,
    /// Recovery after a retransmission timeout.
    Loss,
}

/// What one ACK acknowledged.
#[derive(Clone, Copy, Debug)]
pub struct AckSample {
    /// Newly acknowledged segments (Linux's `acked`).
    pub acked_segments: u32,
    pub acked_bytes: u64,
    /// RTT measured from this ACK, if any.
    pub rtt: Option<Time>,
}

pub trait CongestionControl: Send + Sync {
    /// Short name as used in scenarios ("reno").
    fn name(&self) -> &'static str;

    /// The slow-start threshold after a congestion signal, segments (Linux `ssthresh`).
    fn ssthresh(&mut self, s: &CcState) -> u32;

    /// Grows the window on an ACK of new data outside loss recovery (Linux `cong_avoid`).
    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample);

    /// The connection entered a new loss-recovery state (Linux `set_state`).
    fn set_state(&mut self, _s: &CcState, _new: CaState) {}

    /// Every ACK that acknowledges data, with its RTT sample (Linux `pkts_acked`).
    fn pkts_acked(&mut self, _s: &CcState, _ack: &AckSample) {}
}

/// Standard slow start (Linux `tcp_slow_start`): grow by the acknowledged segments up to
/// ssthresh; return the part of `acked` left over for congestion avoidance.
pub fn slow_start(s: &mut CcState, acked: u32) -> u32 {
    let cwnd = s.cwnd.saturating_add(acked).min(s.ssthresh);
    let used = cwnd - s.cwnd;
    s.cwnd = cwnd;
    acked - used
}

/// Additive increase of one segment per `w` acknowledged segments (Linux `tcp_cong_avoid_ai`).
pub fn cong_avoid_ai(s: &mut CcState, w: u32, acked: u32) {
    let w = w.max(1);
    if s.cwnd_cnt >= w {
        s.cwnd_cnt = 0;
        s.cwnd += 1;
    }
    s.cwnd_cnt += acked;
    if s.cwnd_cnt >= w {
        let delta = s.cwnd_cnt / w;
        s.cwnd_cnt -= delta * w;
        s.cwnd += delta;
    }
}

/// Which algorithm a flow uses and its parameters, as the scenario gives them.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "algorithm", rename_all = "lowercase", deny_unknown_fields)]
pub enum CcSpec {
    Reno(reno::RenoConfig),
}

impl CcSpec {
    pub fn build(&self) -> Box<dyn CongestionControl> {
        match self {
            CcSpec::Reno(cfg) => Box::new(reno::Reno::new(cfg.clone())),
        }
    }
}
