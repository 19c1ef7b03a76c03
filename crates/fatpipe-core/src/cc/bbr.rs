//! BBR v1: congestion control from a model of the path ("Bottleneck Bandwidth and Round-trip
//! propagation time").
//!
//! Sources: Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-control-00
//! (2017), whose section names are cited below; Linux `net/ipv4/tcp_bbr.c` (v4.9 to 5.x),
//! whose constants and order of operations this file follows.
//!
//! On every ACK (Linux `bbr_main`) BBR
//! 1. updates its model of the path: BtlBw, the windowed maximum of the delivery rate over the
//!    last 10 round trips, and RTprop, the minimum RTT over the last 10 seconds;
//! 2. moves through its state machine: STARTUP doubles the sending rate every round trip until
//!    the bandwidth stops growing ("full pipe"), DRAIN empties the queue STARTUP built, then
//!    PROBE_BW cycles its pacing gain around 1 to probe for more bandwidth and give it back,
//!    and PROBE_RTT briefly cuts the window to 4 packets when RTprop was not refreshed for
//!    10 seconds, so that the queue drains and the true propagation delay can be seen;
//! 3. sets pacing_rate = pacing_gain x BtlBw and cwnd = cwnd_gain x BtlBw x RTprop (plus a
//!    small budget for send quanta).
//!
//! Losses are not a congestion signal. They only shape cwnd around loss recovery: lost
//! segments come off the window, the first round of fast recovery follows packet conservation
//! (one segment out per segment delivered), and the window saved on entry comes back when
//! recovery ends; after a timeout the core's window of one segment regrows toward the model.
//! A loss also ends a bandwidth probe early, since the buffer may not hold 1.25 BDP.
//!
//! Units: bandwidth is payload bits per second, as the core's delivery-rate samples
//! (`tcp/rate.rs`); times are picoseconds; cwnd is in segments, as everywhere in the core.
//!
//! Two forms (`BbrConfig::variant`). `"draft"`, the default, is the draft's algorithm with
//! Linux's constants and order of operations. `"linux"` adds what Linux 6.x `tcp_bbr.c` does
//! beyond the draft: an RTprop sample from an ACK that may have been delayed (a lone runt
//! acknowledged alone, `AckSample::is_ack_delayed`) does not refresh an expired RTprop unless
//! it is a new minimum (`bbr_update_min_rtt`), and a timeout counts as the end of a round
//! (`bbr_set_state`; in Linux that feeds only the long-term sampling, not modelled here).
//! Both undo a spurious recovery as Linux's `bbr_undo_cwnd` does: keep cwnd, restart
//! full-pipe detection.
//!
//! Linux refinements outside BBR v1 as the draft describes it: the ACK-aggregation allowance
//! (`extra_acked`, v5.1; `bbr/ack_aggregation.rs`) runs when `BbrConfig::extra_acked` is on,
//! in either form, now that the hosts' GRO and interrupt coalescing (`host/gro.rs`) make the
//! ACK bursts it answers. The long-term bandwidth estimate for token-bucket policers
//! (`lt_bw`, `bbr/lt_bw.rs`, in every Linux BBR) runs when `BbrConfig::lt_bw` is on, in either
//! form. Not modelled: the earliest-departure-time corrections (v4.20).

pub(crate) mod ack_aggregation;
mod lt_bw;
mod max_filter;
pub(crate) mod pacing;

pub use max_filter::MaxFilter;
use pacing::Pacing;

use super::{AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::rng::Rng;
use crate::time::{Time, PS_PER_MS, PS_PER_S};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// PROBE_BW pacing gains, one phase per RTprop (draft-00 "ProbeBW"; Linux `bbr_pacing_gain`):
/// probe with 5/4, drain what the probe queued with 3/4, then cruise at 1 for six phases.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// The phase that drains (gain 3/4): a cycle never starts there, since draining before probing
/// would only leave the pipe short (Linux `bbr_cycle_rand` = cycle length - 1 phases drawn).
const DRAIN_PHASE: usize = 1;
/// Smallest window in segments: enough for an ACK-every-other-segment receiver to keep the
/// pipe busy (draft-00 BBRMinPipeCwnd; Linux `bbr_cwnd_min_target`).
pub const MIN_PIPE_CWND_SEGMENTS: u32 = 4;
/// STARTUP has filled the pipe when BtlBw grew less than this factor ...
const FULL_BW_GROWTH: f64 = 1.25;
/// ... in this many consecutive rounds (draft-00 "Startup"; Linux `bbr_full_bw_thresh`,
/// `bbr_full_bw_cnt`: one round for receive-window autotuning, one to fill it, one to see it).
const FULL_BW_ROUNDS: u32 = 3;
/// Send quantum (draft-00 BBRSetSendQuantum): one segment below 1.2 Mb/s, two below 24 Mb/s,
/// otherwise 1 ms of data up to 64 KB, the size of the bursts a host's offload engines
/// handle. cwnd carries three quanta (one in the sender's queue, one in its offload engine,
/// one in the receiver's): Linux `bbr_quantization_budget`.
const QUANTUM_ONE_SEGMENT_BELOW_BPS: u64 = 1_200_000;
const QUANTUM_TWO_SEGMENTS_BELOW_BPS: u64 = 24_000_000;
const QUANTUM_INTERVAL_PS: Time = PS_PER_MS;
const QUANTUM_MAX_BYTES: u64 = 64 * 1024;
const QUANTA_IN_CWND: u64 = 3;

/// Which BBR (`BbrConfig::variant`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BbrVariant {
    /// draft-cardwell-iccrg-bbr-congestion-control-00 with Linux's constants.
    Draft,
    /// Linux 6.x `tcp_bbr.c`.
    Linux,
}

/// The parameters, every one given by the scenario (its table, scenario/congestion.py,
/// owns the defaults and their sources: the draft's and Linux's values).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BbrConfig {
    /// Which BBR: `draft` or `linux` (Linux 6.x `tcp_bbr.c`).
    pub variant: BbrVariant,
    /// Pacing and cwnd gain of STARTUP; DRAIN paces at its inverse. Dimensionless, > 1.
    /// Default 2.885 = 2/ln 2 (draft-00 BBRHighGain; Linux `bbr_high_gain`).
    pub high_gain: f64,
    /// cwnd gain of PROBE_BW: cwnd = cwnd_gain x BtlBw x RTprop + 3 send quanta.
    /// Dimensionless, > 0. Default 2 (Linux `bbr_cwnd_gain`).
    pub cwnd_gain: f64,
    /// Window of the BtlBw max filter, packet-timed round trips, >= 1. Default 10 (draft-00
    /// BtlBwFilterLen; Linux `bbr_bw_rtts`).
    pub bw_window_rounds: u64,
    /// Window of the RTprop min filter, picoseconds, > 0; when it passes without a new
    /// minimum, BBR enters PROBE_RTT. Default 10 s (draft-00 RTpropFilterLen; Linux
    /// `bbr_min_rtt_win_sec`).
    pub min_rtt_window_ps: Time,
    /// How long PROBE_RTT keeps cwnd at 4 segments (and at least one round trip),
    /// picoseconds; 0 turns PROBE_RTT off, as in Linux. Default 200 ms (draft-00
    /// ProbeRTTDuration; Linux `bbr_probe_rtt_mode_ms`).
    pub probe_rtt_duration_ps: Time,
    /// Linux 5.1's ACK-aggregation allowance (`bbr/ack_aggregation.rs`): cwnd's target grows
    /// by the data acknowledged beyond what bw expects, as ACKs arrive in bursts (GRO,
    /// stretch ACKs).
    pub extra_acked: bool,
    /// Linux's policer detection (`bbr/lt_bw.rs`): two lossy sampling intervals of about the
    /// same delivery rate make BBR pace at their average, gain 1, for 48 round trips.
    pub lt_bw: bool,
}

impl BbrConfig {
    /// What serde cannot check: gains and windows that make a working algorithm.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.high_gain > 1.0 && self.high_gain.is_finite()) {
            return Err(format!("high_gain: {} is not allowed: must exceed 1", self.high_gain));
        }
        if !(self.cwnd_gain > 0.0 && self.cwnd_gain.is_finite()) {
            return Err(format!("cwnd_gain: {} is not allowed: must be positive", self.cwnd_gain));
        }
        if self.bw_window_rounds == 0 {
            return Err("bw_window_rounds: 0 is not allowed: must be at least 1".into());
        }
        if self.min_rtt_window_ps == 0 {
            return Err("min_rtt_window_ps: 0 is not allowed: must be positive".into());
        }
        Ok(())
    }
}

/// The four states (draft-00 "State Machine").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

pub struct Bbr {
    cfg: BbrConfig,
    /// The ACK-aggregation allowance, with `extra_acked` on.
    aggregation: Option<ack_aggregation::AckAggregation>,
    /// The long-term (policed) bandwidth estimate, with `lt_bw` on.
    lt: Option<lt_bw::LtBw>,
    /// Segments delivered so far (Linux `tp->delivered`), for `lt`.
    delivered_segments: u64,
    mode: Mode,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// The pacing rate (`bbr/pacing.rs`).
    pacing: Pacing,
    /// cwnd when the connection started: the fallback before RTprop is known.
    initial_cwnd: u32,

    // Path model.
    /// BtlBw filter over delivery-rate samples, bits per second.
    max_bw: MaxFilter,
    /// Packet-timed round trips so far (draft-00 round_count).
    round_count: u64,
    /// A round ends when a segment sent after this many bytes were delivered is delivered
    /// (draft-00 next_round_delivered; Linux `next_rtt_delivered`).
    next_round_delivered_bytes: u64,
    /// This ACK started a new round.
    round_start: bool,
    /// RTprop, picoseconds; None before the first RTT sample.
    min_rtt_ps: Option<Time>,
    /// When RTprop was last set.
    min_rtt_stamp_ps: Time,
    /// Time of the last ACK that delivered data (Linux `delivered_mstamp`).
    last_delivery_ps: Time,

    // STARTUP: full-pipe detection.
    full_bw_reached: bool,
    /// BtlBw at the last round that grew it by 25 %, bits per second.
    full_bw_bps: u64,
    /// Rounds since then.
    full_bw_count: u32,

    // PROBE_BW.
    cycle_index: usize,
    cycle_start_ps: Time,
    /// Draws the first phase of each gain cycle. Seeded from the flow's own state when it
    /// first enters PROBE_BW, so a run repeats exactly and flows starting at different times
    /// draw differently.
    rng: Option<Rng>,

    // PROBE_RTT.
    /// When PROBE_RTT may end, once the flight has fallen to the minimum.
    probe_rtt_done_ps: Option<Time>,
    /// A full round has passed at the minimum flight.
    probe_rtt_round_done: bool,
    /// Sending restarted from idle: PROBE_RTT is pointless until data is delivered again.
    idle_restart: bool,
    /// Ask the core to mark the rate samples of what it sends next as app-limited.
    mark_app_limited: bool,

    // Loss recovery.
    /// State the core last reported through `set_state`.
    ca_state: CaState,
    /// State seen on the previous ACK (Linux `prev_ca_state`).
    prev_ca_state: CaState,
    /// First round of fast recovery: send one segment per segment delivered.
    packet_conservation: bool,
    /// Last good cwnd, restored after recovery and PROBE_RTT, segments.
    prior_cwnd: u32,
}

/// Linux's `state >= TCP_CA_Recovery`: CWR (local congestion, ECN) is not a recovery, and
/// BBR sets its window through it as in the open state.
pub(crate) fn recovering(state: CaState) -> bool {
    matches!(state, CaState::Recovery | CaState::Loss)
}

/// The window to restore after recovery or PROBE_RTT, as v1 and v3 save it (Linux
/// `bbr_save_cwnd`): cwnd now, unless recovery (`prev_ca_state`) or PROBE_RTT already cut
/// it; then the larger of it and the one saved before the cut.
pub(crate) fn saved_cwnd(prior_cwnd: u32, cwnd: u32, prev_ca_state: CaState, in_probe_rtt: bool) -> u32 {
    if !recovering(prev_ca_state) && !in_probe_rtt {
        cwnd
    } else {
        prior_cwnd.max(cwnd)
    }
}

impl Bbr {
    pub fn new(cfg: BbrConfig) -> Self {
        let high_gain = cfg.high_gain;
        let (extra_acked, lt_bw) = (cfg.extra_acked, cfg.lt_bw);
        Bbr {
            cfg,
            mode: Mode::Startup,
            pacing_gain: high_gain,
            cwnd_gain: high_gain,
            pacing: Pacing::default(),
            initial_cwnd: MIN_PIPE_CWND_SEGMENTS,
            max_bw: MaxFilter::default(),
            round_count: 0,
            next_round_delivered_bytes: 0,
            round_start: false,
            aggregation: extra_acked.then(ack_aggregation::AckAggregation::default),
            lt: lt_bw.then(lt_bw::LtBw::default),
            delivered_segments: 0,
            min_rtt_ps: None,
            min_rtt_stamp_ps: 0,
            last_delivery_ps: 0,
            full_bw_reached: false,
            full_bw_bps: 0,
            full_bw_count: 0,
            cycle_index: 0,
            cycle_start_ps: 0,
            rng: None,
            probe_rtt_done_ps: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            mark_app_limited: false,
            ca_state: CaState::Open,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            prior_cwnd: 0,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// BtlBw, payload bits per second (0 before the first sample).
    pub fn btl_bw_bps(&self) -> u64 {
        self.max_bw.get()
    }

    /// The policed rate BBR is using instead of BtlBw (`lt_bw`), bits per second.
    pub fn lt_bw_bps(&self) -> Option<u64> {
        self.lt.as_ref().and_then(lt_bw::LtBw::bw_bps)
    }

    /// The bandwidth pacing and cwnd follow: the policed rate while in use, else BtlBw
    /// (Linux `bbr_bw`).
    fn bw(&self) -> u64 {
        self.lt_bw_bps().unwrap_or_else(|| self.max_bw.get())
    }

    /// Runs the long-term sampling (with `lt_bw` on) and acts on what it decided.
    fn lt_bw_sampling(&mut self, s: &CcState, losses: u64, round_start: bool, app_limited: bool) {
        let Some(lt) = self.lt.as_mut() else { return };
        let input = lt_bw::LtInput {
            probe_bw: self.mode == Mode::ProbeBw,
            round_start,
            losses,
            app_limited,
            delivered_segments: self.delivered_segments,
            delivered_bytes: s.delivered_bytes,
            delivered_at: self.last_delivery_ps,
        };
        if lt.sample(&input) == lt_bw::LtEvent::Expired {
            // Back to BtlBw and a fresh gain cycle (Linux `bbr_reset_probe_bw_mode`).
            self.enter_probe_bw(s);
        }
    }

    /// RTprop, picoseconds.
    pub fn rt_prop_ps(&self) -> Option<Time> {
        self.min_rtt_ps
    }

    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// The last ACK (or a timeout, in the Linux form) started a round trip.
    pub fn round_start(&self) -> bool {
        self.round_start
    }

    // ---- Pacing rate (draft-00 "Pacing Rate"; `bbr/pacing.rs`) ----

    fn set_pacing_rate(&mut self, s: &CcState, bw_bps: u64, gain: f64) {
        self.pacing.set(s, bw_bps, gain, self.full_bw_reached, self.cfg.high_gain);
    }

    // ---- Window (draft-00 "Send Quantum", "Congestion Window") ----

    fn send_quantum_bytes(&self, mss: u64) -> u64 {
        if self.pacing.rate_bps < QUANTUM_ONE_SEGMENT_BELOW_BPS {
            mss
        } else if self.pacing.rate_bps < QUANTUM_TWO_SEGMENTS_BELOW_BPS {
            2 * mss
        } else {
            let one_interval =
                (self.pacing.rate_bps as u128 * QUANTUM_INTERVAL_PS as u128 / 8 / PS_PER_S as u128) as u64;
            one_interval.min(QUANTUM_MAX_BYTES)
        }
    }

    /// The flight that `gain` x BtlBw x RTprop and the send quanta make, segments (draft-00
    /// BBRInflight); the initial window while RTprop is unknown.
    fn inflight_segments(&self, s: &CcState, bw_bps: u64, gain: f64) -> u32 {
        let Some(rtt_ps) = self.min_rtt_ps else {
            return self.initial_cwnd;
        };
        let mss = s.mss_bytes.max(1) as u64;
        let bdp_bytes = bw_bps as f64 * rtt_ps as f64 / (8.0 * PS_PER_S as f64);
        let quanta_bytes = QUANTA_IN_CWND * self.send_quantum_bytes(mss);
        ((gain * bdp_bytes + quanta_bytes as f64) / mss as f64).ceil() as u32
    }

    /// Remembers cwnd before recovery or PROBE_RTT cuts it (Linux `bbr_save_cwnd`).
    fn save_cwnd(&mut self, s: &CcState) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, s.cwnd, self.prev_ca_state, self.mode == Mode::ProbeRtt);
    }

    /// Fast recovery: one round of packet conservation, then growth; the old window back when
    /// recovery ends (draft-00 "Modulating cwnd in Loss Recovery"; Linux
    /// `bbr_set_cwnd_to_recover_or_restore`). Returns the window and whether conservation
    /// holds it.
    fn cwnd_for_recovery(&mut self, s: &CcState, ack: &AckSample, delivered_segments: u32) -> (u32, bool) {
        let mss = s.mss_bytes.max(1) as u64;
        let in_flight_segments = ack.in_flight_bytes.div_ceil(mss) as u32;
        let mut cwnd = s.cwnd;
        if ack.newly_lost_bytes > 0 {
            // Lost segments left the network without an ACK clocking a new one out.
            let lost = ack.newly_lost_bytes.div_ceil(mss) as u32;
            cwnd = cwnd.saturating_sub(lost).max(1);
        }
        let state = self.ca_state;
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            self.packet_conservation = true;
            // The conservation round starts now.
            self.next_round_delivered_bytes = s.delivered_bytes;
            // Window left unused by the application is not a reason to send a burst now.
            cwnd = in_flight_segments + delivered_segments;
        } else if recovering(self.prev_ca_state) && !recovering(state) {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(in_flight_segments + delivered_segments), true);
        }
        (cwnd, false)
    }

    /// draft-00 BBRSetCwnd; Linux `bbr_set_cwnd`.
    fn set_cwnd(&mut self, s: &mut CcState, ack: &AckSample, bw_bps: u64) {
        let mss = s.mss_bytes.max(1) as u64;
        let delivered_segments = ack.delivered_bytes.div_ceil(mss) as u32;
        if delivered_segments > 0 {
            let (mut cwnd, conserving) = self.cwnd_for_recovery(s, ack, delivered_segments);
            if !conserving {
                let aggregation =
                    self.aggregation.as_ref().map_or(0, |a| a.cwnd_segments(bw_bps, s.mss_bytes, self.full_bw_reached));
                let target = self.inflight_segments(s, bw_bps, self.cwnd_gain) + aggregation;
                if self.full_bw_reached {
                    // Grow toward the target by what was delivered (at most two segments out
                    // per segment delivered), or snap down to it.
                    cwnd = (cwnd + delivered_segments).min(target);
                } else if cwnd < target || s.delivered_bytes < self.initial_cwnd as u64 * mss {
                    // STARTUP: never cut, the estimate is still rising.
                    cwnd += delivered_segments;
                }
                cwnd = cwnd.max(MIN_PIPE_CWND_SEGMENTS);
            }
            s.cwnd = cwnd;
        }
        if self.mode == Mode::ProbeRtt {
            s.cwnd = s.cwnd.min(MIN_PIPE_CWND_SEGMENTS);
        }
    }

    // ---- Path model (draft-00 "BBR.BtlBw", "BBR.RTprop") ----

    /// Round counting and the BtlBw filter (Linux `bbr_update_bw`).
    fn update_btl_bw(&mut self, s: &CcState, ack: &AckSample) {
        self.round_start = false;
        let Some(rate_bps) = ack.delivery_rate_bps else {
            return; // no valid sample: neither a rate nor a round boundary
        };
        // The segment behind this sample was sent after the round began: a round trip passed.
        if ack.prior_delivered_bytes >= self.next_round_delivered_bytes {
            self.next_round_delivered_bytes = s.delivered_bytes;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        let lost_segments = ack.newly_lost_bytes.div_ceil(s.mss_bytes.max(1) as u64);
        self.lt_bw_sampling(s, lost_segments, self.round_start, ack.is_app_limited);
        // An app-limited sample shows what the application sent, not what the path carries;
        // it may only raise the estimate.
        if !ack.is_app_limited || rate_bps >= self.max_bw.get() {
            self.max_bw.update(self.cfg.bw_window_rounds, self.round_count, rate_bps);
        }
    }

    /// RTprop filter and PROBE_RTT entry and exit (draft-00 BBRUpdateRTprop,
    /// BBRCheckProbeRTT; Linux `bbr_update_min_rtt`).
    fn update_rt_prop(&mut self, s: &mut CcState, ack: &AckSample) {
        let expired = s.now > self.min_rtt_stamp_ps + self.cfg.min_rtt_window_ps;
        // Linux: a sample that may include the receiver's delayed-ACK wait does not replace an
        // expired RTprop, or PROBE_RTT would lift RTprop by up to the delayed-ACK timeout.
        let linux = self.cfg.variant == BbrVariant::Linux;
        let trusted = !(linux && ack.is_ack_delayed);
        if let Some(rtt) = ack.rtt {
            // A sample equal to RTprop renews it in the draft (BBRUpdateRTprop: rtt <=
            // RTprop); Linux takes only a smaller one (`rs->rtt_us < bbr->min_rtt_us`), so on
            // a path whose queue empties RTprop still expires every 10 s and PROBE_RTT runs.
            let new_minimum = self.min_rtt_ps.is_none_or(|m| if linux { rtt < m } else { rtt <= m });
            if new_minimum || (expired && trusted) {
                self.min_rtt_ps = Some(rtt);
                self.min_rtt_stamp_ps = s.now;
            }
        }
        let probe_rtt_enabled = self.cfg.probe_rtt_duration_ps > 0;
        if probe_rtt_enabled && expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(s);
            self.probe_rtt_done_ps = None;
        }
        if self.mode == Mode::ProbeRtt {
            // The low rate of this state says nothing about the path.
            self.mark_app_limited = true;
            let in_flight_segments = ack.in_flight_bytes.div_ceil(s.mss_bytes.max(1) as u64);
            match self.probe_rtt_done_ps {
                None if in_flight_segments <= MIN_PIPE_CWND_SEGMENTS as u64 => {
                    // The flight is down to the minimum: hold it for the duration and a round.
                    self.probe_rtt_done_ps = Some(s.now + self.cfg.probe_rtt_duration_ps);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered_bytes = s.delivered_bytes;
                }
                None => {}
                Some(_) => {
                    if self.round_start {
                        self.probe_rtt_round_done = true;
                    }
                    if self.probe_rtt_round_done {
                        self.check_probe_rtt_done(s);
                    }
                }
            }
        }
        if ack.delivered_bytes > 0 {
            self.idle_restart = false;
        }
    }

    /// Leaves PROBE_RTT once its time is up: RTprop counts as fresh, the window comes back
    /// (Linux `bbr_check_probe_rtt_done`).
    fn check_probe_rtt_done(&mut self, s: &mut CcState) {
        if self.probe_rtt_done_ps.is_some_and(|done| s.now > done) {
            self.min_rtt_stamp_ps = s.now;
            s.cwnd = s.cwnd.max(self.prior_cwnd);
            self.reset_mode(s);
        }
    }

    // ---- State machine (draft-00 "Startup", "Drain", "ProbeBW") ----

    /// Full-pipe detection, once per round on samples the network limited (draft-00
    /// BBRCheckFullPipe).
    fn check_full_pipe(&mut self, ack: &AckSample) {
        if self.full_bw_reached || !self.round_start || ack.is_app_limited {
            return;
        }
        let bw = self.max_bw.get();
        if bw as f64 >= self.full_bw_bps as f64 * FULL_BW_GROWTH {
            self.full_bw_bps = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= FULL_BW_ROUNDS;
    }

    /// STARTUP -> DRAIN when the pipe is full; DRAIN -> PROBE_BW when the flight is down to
    /// one BDP (draft-00 BBRCheckDrain).
    fn check_drain(&mut self, s: &mut CcState, ack: &AckSample) {
        let bw = self.max_bw.get();
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            // Not used by BBR; Linux sets it so that tools show the estimated BDP.
            s.ssthresh = self.inflight_segments(s, bw, 1.0);
        }
        let in_flight_segments = ack.in_flight_bytes.div_ceil(s.mss_bytes.max(1) as u64);
        if self.mode == Mode::Drain && in_flight_segments <= self.inflight_segments(s, bw, 1.0) as u64 {
            self.enter_probe_bw(s);
        }
    }

    fn enter_probe_bw(&mut self, s: &CcState) {
        self.mode = Mode::ProbeBw;
        let rng = self.rng.get_or_insert_with(|| Rng::new(s.now ^ s.delivered_bytes.rotate_left(32)));
        // Any phase but the draining one, uniformly (Linux `bbr_reset_probe_bw_mode`).
        let draws = PACING_GAIN_CYCLE.len() - 1;
        let k = ((rng.uniform() * draws as f64) as usize).min(draws - 1);
        let phase = (DRAIN_PHASE + 1 + k) % PACING_GAIN_CYCLE.len();
        self.cycle_index = phase;
        self.cycle_start_ps = self.last_delivery_ps;
    }

    /// Back to STARTUP if the pipe was never filled, else to PROBE_BW (Linux `bbr_reset_mode`).
    fn reset_mode(&mut self, s: &CcState) {
        if self.full_bw_reached {
            self.enter_probe_bw(s);
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// Whether the current gain phase is over (draft-00 BBRIsNextCyclePhase).
    fn is_next_cycle_phase(&self, s: &CcState, ack: &AckSample) -> bool {
        let rt_prop = self.min_rtt_ps.unwrap_or(0);
        let full_length = self.last_delivery_ps.saturating_sub(self.cycle_start_ps) > rt_prop;
        let gain = PACING_GAIN_CYCLE[self.cycle_index];
        if gain == 1.0 {
            return full_length;
        }
        let prior_in_flight_segments = ack.prior_in_flight_bytes.div_ceil(s.mss_bytes.max(1) as u64);
        let bw = self.max_bw.get();
        if gain > 1.0 {
            // Probe until the flight reaches gain x BDP, unless losses say it will not fit.
            full_length
                && (ack.newly_lost_bytes > 0 || prior_in_flight_segments >= self.inflight_segments(s, bw, gain) as u64)
        } else {
            // Drain for a round trip, or less if the queue is already gone.
            full_length || prior_in_flight_segments <= self.inflight_segments(s, bw, 1.0) as u64
        }
    }

    fn update_cycle_phase(&mut self, s: &CcState, ack: &AckSample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(s, ack) {
            self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
            self.cycle_start_ps = self.last_delivery_ps;
        }
    }

    /// Gains of the current state (Linux `bbr_update_gains`).
    fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Mode::Startup => (self.cfg.high_gain, self.cfg.high_gain),
            // Drain the queue STARTUP built in about one round; keep the window meanwhile.
            Mode::Drain => (1.0 / self.cfg.high_gain, self.cfg.high_gain),
            // Policed: pace at the policer's rate, no probing (Linux `bbr_update_gains`).
            Mode::ProbeBw if self.lt_bw_bps().is_some() => (1.0, self.cfg.cwnd_gain),
            Mode::ProbeBw => (PACING_GAIN_CYCLE[self.cycle_index], self.cfg.cwnd_gain),
            Mode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn init(&mut self, s: &mut CcState) {
        self.initial_cwnd = s.cwnd.max(1);
        self.min_rtt_ps = s.min_rtt;
        self.min_rtt_stamp_ps = s.now;
        self.pacing.init_from_rtt(s, self.cfg.high_gain);
    }

    /// BBR does not reduce on loss: it remembers cwnd and keeps ssthresh (Linux `bbr_ssthresh`).
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.save_cwnd(s);
        s.ssthresh
    }

    /// Never called: `cong_control` sets cwnd on every ACK.
    fn cong_avoid(&mut self, _s: &mut CcState, _ack: &AckSample) {}

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        self.ca_state = new;
        if new == CaState::Loss {
            // After a timeout (the core has set cwnd = 1) the window regrows toward the
            // target, and leaving Loss restores the saved window like leaving recovery.
            self.prev_ca_state = CaState::Loss;
            // The bandwidth after the timeout is a new measurement: restart the full-pipe
            // baseline (Linux `bbr_set_state`).
            self.full_bw_bps = 0;
            if self.cfg.variant == BbrVariant::Linux {
                // Linux treats a timeout as the end of a round.
                self.round_start = true;
            }
            // Everything in flight is marked lost: a lossy end for the long-term sampling
            // (Linux `bbr_set_state`, a timeout ending a round in either form here).
            let lost = u64::from(s.in_flight_segments).max(1);
            self.lt_bw_sampling(s, lost, true, false);
        }
    }

    /// A spurious recovery: BBR did not cut cwnd for it, so it keeps cwnd, and the slowdown
    /// must not count against the pipe being full (Linux `bbr_undo_cwnd`).
    fn undo_cwnd(&mut self, s: &CcState, _prior_cwnd: u32) -> u32 {
        self.full_bw_bps = 0;
        self.full_bw_count = 0;
        s.cwnd
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        // The core signals this only when nothing is in flight: a restart from idle.
        if ev == CwndEvent::TxStart {
            self.idle_restart = true;
            match self.mode {
                // No need to probe on a restart: pace at the estimate (Linux
                // `bbr_cwnd_event`).
                Mode::ProbeBw => self.set_pacing_rate(s, self.bw(), 1.0),
                // The idle period drained the queue as PROBE_RTT would.
                Mode::ProbeRtt => self.check_probe_rtt_done(s),
                Mode::Startup | Mode::Drain => {}
            }
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// Linux `bbr_main`: update the model and the state, then pacing rate and cwnd.
    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) {
        self.mark_app_limited = false;
        self.delivered_segments += u64::from(ack.delivered_segments);
        if ack.delivered_bytes > 0 {
            self.last_delivery_ps = s.now;
        }
        self.update_btl_bw(s, ack);
        if let Some(a) = self.aggregation.as_mut().filter(|_| ack.delivery_rate_bps.is_some()) {
            a.update(s.now, self.round_start, self.max_bw.get(), s.mss_bytes, ack.delivered_segments, s.cwnd);
        }
        self.update_cycle_phase(s, ack);
        self.check_full_pipe(ack);
        self.check_drain(s, ack);
        self.update_rt_prop(s, ack);
        self.update_gains();
        let bw = self.bw();
        self.set_pacing_rate(s, bw, self.pacing_gain);
        self.set_cwnd(s, ack, bw);
    }

    fn pacing_rate_bps(&self, _s: &CcState) -> Option<u64> {
        Some(self.pacing.rate_bps)
    }

    fn marks_app_limited(&self) -> bool {
        self.mark_app_limited
    }
}

#[cfg(test)]
mod tests;
