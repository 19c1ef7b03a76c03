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
//! Linux refinements outside BBR v1 as the draft describes it are not modelled: the
//! long-term bandwidth estimate for token-bucket policers (`lt_bw`), the ACK-aggregation
//! allowance (`extra_acked`, v5.1) and the earliest-departure-time corrections (v4.20),
//! which exist because of host offloads the simulator does not have.

use super::{AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::rng::Rng;
use crate::time::{Time, PS_PER_MS, PS_PER_S};
use serde::Deserialize;

/// STARTUP's gain: 2/ln 2 = 2.885, the smallest that doubles the delivery rate every round
/// trip (draft-00 BBRHighGain; Linux `bbr_high_gain`, 739/256 = 2.887 in its fixed point).
pub const DEFAULT_HIGH_GAIN: f64 = 2.885;
/// PROBE_BW's cwnd gain: two BDPs tolerate delayed and stretched ACKs (Linux `bbr_cwnd_gain`).
pub const DEFAULT_CWND_GAIN: f64 = 2.0;
/// BtlBw filter window, round trips (draft-00 BtlBwFilterLen; Linux `bbr_bw_rtts` =
/// gain-cycle length + 2 = 10), long enough to span a whole gain cycle.
pub const DEFAULT_BW_WINDOW_ROUNDS: u64 = 10;
/// RTprop filter window; its expiry triggers PROBE_RTT (draft-00 RTpropFilterLen; Linux
/// `bbr_min_rtt_win_sec`).
pub const DEFAULT_MIN_RTT_WINDOW_PS: Time = 10 * PS_PER_S;
/// Time PROBE_RTT holds the window at its minimum (draft-00 ProbeRTTDuration; Linux
/// `bbr_probe_rtt_mode_ms`): 200 ms every 10 s bounds the cost to about 2 %.
pub const DEFAULT_PROBE_RTT_DURATION_PS: Time = 200 * PS_PER_MS;

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
/// Linux paces 1 % below the model (`bbr_pacing_margin_percent`, since v4.20 "tcp_bbr:
/// adjust TCP BBR for departure time pacing") so that the average rate slightly undershoots
/// the bottleneck and queues stay low; the draft has no margin.
const PACING_MARGIN: f64 = 0.01;
/// RTT assumed for the initial pacing rate before any sample (Linux
/// `bbr_init_pacing_rate_from_rtt`: a nominal 1 ms).
const NOMINAL_RTT_PS: Time = PS_PER_MS;
/// Send quantum (draft-00 BBRSetSendQuantum): one segment below 1.2 Mb/s, two below 24 Mb/s,
/// otherwise 1 ms of data up to 64 KB, the size of the bursts a host's offload engines
/// handle. cwnd carries three quanta (one in the sender's queue, one in its offload engine,
/// one in the receiver's): Linux `bbr_quantization_budget`.
const QUANTUM_ONE_SEGMENT_BELOW_BPS: u64 = 1_200_000;
const QUANTUM_TWO_SEGMENTS_BELOW_BPS: u64 = 24_000_000;
const QUANTUM_INTERVAL_PS: Time = PS_PER_MS;
const QUANTUM_MAX_BYTES: u64 = 64 * 1024;
const QUANTA_IN_CWND: u64 = 3;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BbrConfig {
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
}

impl Default for BbrConfig {
    /// The draft's and Linux's values.
    fn default() -> Self {
        BbrConfig {
            high_gain: DEFAULT_HIGH_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            bw_window_rounds: DEFAULT_BW_WINDOW_ROUNDS,
            min_rtt_window_ps: DEFAULT_MIN_RTT_WINDOW_PS,
            probe_rtt_duration_ps: DEFAULT_PROBE_RTT_DURATION_PS,
        }
    }
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

/// Windowed maximum over the last `window` rounds in O(1) time and memory: the best sample
/// and the best ones of later sub-windows, which take over as older ones expire (Kathleen
/// Nichols' algorithm, as Linux `lib/win_minmax.c`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxFilter {
    /// (round, value): best, second best (newer), third best (newest).
    samples: [(u64, u64); 3],
}

impl MaxFilter {
    pub fn get(&self) -> u64 {
        self.samples[0].1
    }

    fn reset(&mut self, round: u64, value: u64) -> u64 {
        self.samples = [(round, value); 3];
        value
    }

    /// Feeds `value` measured in `round`; returns the maximum over rounds
    /// [round - window, round] (a sample expires once it is more than `window` rounds old).
    pub fn update(&mut self, window: u64, round: u64, value: u64) -> u64 {
        let s = &mut self.samples;
        if value >= s[0].1 || round - s[2].0 > window {
            // A new maximum, or every kept sample is too old: start over.
            return self.reset(round, value);
        }
        if value >= s[1].1 {
            s[1] = (round, value);
            s[2] = (round, value);
        } else if value >= s[2].1 {
            s[2] = (round, value);
        }
        let age = round - s[0].0;
        if age > window {
            // The best expired: the runners-up move up (twice if the second expired too).
            s[0] = s[1];
            s[1] = s[2];
            s[2] = (round, value);
            if round - s[0].0 > window {
                s[0] = s[1];
                s[1] = s[2];
                s[2] = (round, value);
            }
        } else if s[1].0 == s[0].0 && age > window / 4 {
            // A quarter of the window without a second choice: take one from this quarter.
            s[1] = (round, value);
            s[2] = (round, value);
        } else if s[2].0 == s[1].0 && age > window / 2 {
            // Half the window without a third choice: take one from the second half.
            s[2] = (round, value);
        }
        s[0].1
    }
}

pub struct Bbr {
    cfg: BbrConfig,
    mode: Mode,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// Current pacing rate, payload bits per second.
    pacing_rate_bps: u64,
    /// The pacing rate has been set from a measured RTT (Linux `has_seen_rtt`).
    has_seen_rtt: bool,
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
fn recovering(state: CaState) -> bool {
    matches!(state, CaState::Recovery | CaState::Loss)
}

impl Bbr {
    pub fn new(cfg: BbrConfig) -> Self {
        let high_gain = cfg.high_gain;
        Bbr {
            cfg,
            mode: Mode::Startup,
            pacing_gain: high_gain,
            cwnd_gain: high_gain,
            pacing_rate_bps: 0,
            has_seen_rtt: false,
            initial_cwnd: MIN_PIPE_CWND_SEGMENTS,
            max_bw: MaxFilter::default(),
            round_count: 0,
            next_round_delivered_bytes: 0,
            round_start: false,
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

    // ---- Pacing rate (draft-00 "Pacing Rate") ----

    /// gain x bw, less Linux's margin, bits per second.
    fn rate_with_gain(bw_bps: u64, gain: f64) -> u64 {
        (bw_bps as f64 * gain * (1.0 - PACING_MARGIN)) as u64
    }

    /// Before any bandwidth sample: high_gain x cwnd / RTT, with the smoothed RTT if there is
    /// one, else a nominal 1 ms (Linux `bbr_init_pacing_rate_from_rtt`).
    fn init_pacing_rate(&mut self, s: &CcState) {
        let rtt_ps = match s.srtt {
            Some(srtt) => {
                self.has_seen_rtt = true;
                srtt.max(1)
            }
            None => NOMINAL_RTT_PS,
        };
        let bw_bps = (s.cwnd as u128 * s.mss_bytes as u128 * 8 * PS_PER_S as u128 / rtt_ps as u128) as u64;
        self.pacing_rate_bps = Self::rate_with_gain(bw_bps, self.cfg.high_gain);
    }

    /// Until the pipe is full the rate never falls, so that a low early sample cannot slow
    /// STARTUP down (draft-00 BBRSetPacingRateWithGain).
    fn set_pacing_rate(&mut self, s: &CcState, bw_bps: u64, gain: f64) {
        if !self.has_seen_rtt && s.srtt.is_some() {
            self.init_pacing_rate(s);
        }
        let rate = Self::rate_with_gain(bw_bps, gain);
        if self.full_bw_reached || rate > self.pacing_rate_bps {
            self.pacing_rate_bps = rate;
        }
    }

    // ---- Window (draft-00 "Send Quantum", "Congestion Window") ----

    fn send_quantum_bytes(&self, mss: u64) -> u64 {
        if self.pacing_rate_bps < QUANTUM_ONE_SEGMENT_BELOW_BPS {
            mss
        } else if self.pacing_rate_bps < QUANTUM_TWO_SEGMENTS_BELOW_BPS {
            2 * mss
        } else {
            let one_interval =
                (self.pacing_rate_bps as u128 * QUANTUM_INTERVAL_PS as u128 / 8 / PS_PER_S as u128) as u64;
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
        if !recovering(self.prev_ca_state) && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = s.cwnd;
        } else {
            // Already cut: keep the larger value saved before the cut.
            self.prior_cwnd = self.prior_cwnd.max(s.cwnd);
        }
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
                let target = self.inflight_segments(s, bw_bps, self.cwnd_gain);
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
        if let Some(rtt) = ack.rtt {
            if self.min_rtt_ps.is_none_or(|m| rtt <= m) || expired {
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
        self.init_pacing_rate(s);
    }

    /// BBR does not reduce on loss: it remembers cwnd and keeps ssthresh (Linux `bbr_ssthresh`).
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.save_cwnd(s);
        s.ssthresh
    }

    /// Never called: `cong_control` sets cwnd on every ACK.
    fn cong_avoid(&mut self, _s: &mut CcState, _ack: &AckSample) {}

    fn set_state(&mut self, _s: &mut CcState, new: CaState) {
        self.ca_state = new;
        if new == CaState::Loss {
            // After a timeout (the core has set cwnd = 1) the window regrows toward the
            // target, and leaving Loss restores the saved window like leaving recovery.
            self.prev_ca_state = CaState::Loss;
            // The bandwidth after the timeout is a new measurement: restart the full-pipe
            // baseline (Linux `bbr_set_state`).
            self.full_bw_bps = 0;
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        match ev {
            // The core signals this only when nothing is in flight: a restart from idle.
            CwndEvent::TxStart => {
                self.idle_restart = true;
                match self.mode {
                    // No need to probe on a restart: pace at the estimate (Linux
                    // `bbr_cwnd_event`).
                    Mode::ProbeBw => self.set_pacing_rate(s, self.max_bw.get(), 1.0),
                    // The idle period drained the queue as PROBE_RTT would.
                    Mode::ProbeRtt => self.check_probe_rtt_done(s),
                    Mode::Startup | Mode::Drain => {}
                }
            }
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// Linux `bbr_main`: update the model and the state, then pacing rate and cwnd.
    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) {
        self.mark_app_limited = false;
        if ack.delivered_bytes > 0 {
            self.last_delivery_ps = s.now;
        }
        self.update_btl_bw(s, ack);
        self.update_cycle_phase(s, ack);
        self.check_full_pipe(ack);
        self.check_drain(s, ack);
        self.update_rt_prop(s, ack);
        self.update_gains();
        let bw = self.max_bw.get();
        self.set_pacing_rate(s, bw, self.pacing_gain);
        self.set_cwnd(s, ack, bw);
    }

    fn pacing_rate_bps(&self, _s: &CcState) -> Option<u64> {
        Some(self.pacing_rate_bps)
    }

    fn marks_app_limited(&self) -> bool {
        self.mark_app_limited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;
    use std::collections::VecDeque;

    const MSS: u64 = 1000;
    /// A path of 80 Mb/s and 10 ms: 10 segments of 1000 bytes per ms, BDP 100 segments.
    const BW_BPS: u64 = 80_000_000;
    const RTT_PS: Time = 10 * PS_PER_MS;
    const BDP_SEGMENTS: u64 = 100;
    /// The driver below ACKs every half millisecond.
    const STEP_PS: Time = PS_PER_MS / 2;

    fn state() -> CcState {
        CcState::new(10, INFINITE_SSTHRESH, MSS as u32)
    }

    /// What is in flight after each ACK.
    #[derive(Clone, Copy)]
    enum Flight {
        /// All cwnd allows: the sender is window-limited (and a queue holds the excess).
        Window,
        /// This many segments; in the probing phase of PROBE_BW, enough to end it.
        Segments(u64),
    }

    /// Feeds BBR a synthetic ACK stream: the delivery rate, RTT and flight are chosen by the
    /// test; rounds come out of the delivered counts as in the core.
    struct Driver {
        bbr: Bbr,
        s: CcState,
        now: Time,
        /// (time, delivered bytes then): the `prior_delivered` of a segment sent at that time.
        sent: VecDeque<(Time, u64)>,
    }

    impl Driver {
        fn new() -> Driver {
            let mut bbr = Bbr::new(BbrConfig::default());
            let mut s = state();
            bbr.init(&mut s);
            Driver { bbr, s, now: 0, sent: VecDeque::new() }
        }

        fn sample(&mut self, now: Time, bytes: u64, rtt: Time, in_flight_segments: u64) -> AckSample {
            self.now = now;
            self.s.now = now;
            self.sent.push_back((now, self.s.delivered_bytes));
            // The data acknowledged now was sent one RTT ago.
            let mut prior = 0;
            while let Some(&(t, d)) = self.sent.front() {
                if t + rtt > now {
                    break;
                }
                prior = d;
                self.sent.pop_front();
            }
            self.s.delivered_bytes += bytes;
            self.s.srtt = Some(rtt);
            self.s.min_rtt = Some(self.s.min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.s.in_flight_segments = in_flight_segments as u32;
            AckSample {
                acked_segments: bytes.div_ceil(MSS) as u32,
                acked_bytes: bytes,
                rtt: Some(rtt),
                delivered_bytes: bytes,
                prior_delivered_bytes: prior,
                prior_in_flight_bytes: in_flight_segments * MSS + bytes,
                in_flight_bytes: in_flight_segments * MSS,
                ..Default::default()
            }
        }

        /// One ACK at `now` delivering `bytes`, sampling `rate_bps` and `rtt`, leaving
        /// `in_flight_segments` in the network.
        fn ack_at(&mut self, now: Time, bytes: u64, rate_bps: u64, rtt: Time, in_flight_segments: u64) {
            let mut sample = self.sample(now, bytes, rtt, in_flight_segments);
            sample.delivery_rate_bps = Some(rate_bps);
            self.bbr.cong_control(&mut self.s, &sample);
        }

        /// The next ACK, STEP_PS after the last, delivering what `bw` carries in a step.
        fn step(&mut self, bw: u64, rtt: Time, flight: Flight) {
            let bytes = (bw as u128 * STEP_PS as u128 / 8 / PS_PER_S as u128) as u64;
            let in_flight = match flight {
                Flight::Window => (self.s.cwnd as u64).saturating_sub(bytes.div_ceil(MSS)),
                Flight::Segments(_) if self.bbr.mode == Mode::ProbeBw && self.bbr.cycle_index == 0 => 3 * BDP_SEGMENTS,
                Flight::Segments(n) => n,
            };
            self.ack_at(self.now + STEP_PS, bytes, bw, rtt, in_flight);
        }

        fn run(&mut self, duration: Time, bw: u64, rtt: Time, flight: Flight) {
            let end = self.now + duration;
            while self.now < end {
                self.step(bw, rtt, flight);
            }
        }

        /// Steps until `done`, at most `limit`; returns the time it took.
        fn run_until(&mut self, limit: Time, bw: u64, rtt: Time, flight: Flight, done: impl Fn(&Bbr) -> bool) -> Time {
            let start = self.now;
            while !done(&self.bbr) {
                assert!(self.now - start < limit, "not done after {limit} ps");
                self.step(bw, rtt, flight);
            }
            self.now - start
        }

        /// STARTUP on the 80 Mb/s path until the pipe is full, then a flight of one BDP:
        /// DRAIN ends at once.
        fn reach_probe_bw(&mut self) {
            self.run_until(300 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Window, |b| b.full_bw_reached());
            self.run_until(PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS), |b| b.mode() == Mode::ProbeBw);
        }

        fn target_cwnd(&self) -> u32 {
            self.bbr.inflight_segments(&self.s, self.bbr.btl_bw_bps(), self.bbr.cwnd_gain)
        }
    }

    #[test]
    fn max_filter_keeps_the_best_sample_for_the_window_then_forgets_it() {
        let mut f = MaxFilter::default();
        assert_eq!(f.update(10, 1, 100), 100);
        // Lower samples do not displace it while it is in the window ...
        for round in 2..=11 {
            assert_eq!(f.update(10, round, 50), 100, "round {round}");
        }
        // ... and it expires after 10 rounds: a runner-up from a later sub-window takes over.
        assert_eq!(f.update(10, 12, 40), 50);
        // A new maximum replaces everything at once.
        assert_eq!(f.update(10, 13, 500), 500);
    }

    #[test]
    fn max_filter_tracks_a_falling_rate_within_the_window() {
        let mut f = MaxFilter::default();
        // A rate falling by 3 per round from 100.
        for round in 0..30u64 {
            let est = f.update(10, round, 100 - round * 3);
            // Never above the largest sample of the last 11 rounds, never below the newest.
            let oldest = round.saturating_sub(10);
            assert!(est <= 100 - oldest * 3, "round {round}: {est}");
            assert!(est >= 100 - round * 3, "round {round}: {est}");
        }
    }

    #[test]
    fn min_rtt_is_kept_for_the_window_then_replaced_by_any_sample() {
        let mut d = Driver::new();
        d.ack_at(PS_PER_MS, MSS, BW_BPS, 10 * PS_PER_MS, 5);
        d.ack_at(2 * PS_PER_MS, MSS, BW_BPS, 12 * PS_PER_MS, 5);
        assert_eq!(d.bbr.rt_prop_ps(), Some(10 * PS_PER_MS), "a larger sample does not replace it");
        d.ack_at(5 * PS_PER_S, MSS, BW_BPS, 15 * PS_PER_MS, 5);
        assert_eq!(d.bbr.rt_prop_ps(), Some(10 * PS_PER_MS));
        // 10 s after the minimum was set the filter has expired: the next sample is taken.
        d.ack_at(10 * PS_PER_S + 2 * PS_PER_MS, MSS, BW_BPS, 15 * PS_PER_MS, 5);
        assert_eq!(d.bbr.rt_prop_ps(), Some(15 * PS_PER_MS));
        assert_eq!(d.bbr.mode(), Mode::ProbeRtt, "and PROBE_RTT starts");
        assert_eq!(d.s.cwnd, MIN_PIPE_CWND_SEGMENTS);
    }

    #[test]
    fn startup_detects_the_full_pipe_then_drains() {
        let mut d = Driver::new();
        // A constant delivery rate: the pipe is full from the first round.
        d.run_until(300 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Window, |b| b.full_bw_reached());
        // The first round sets the baseline; three more without 25 % growth fill the pipe.
        assert_eq!(d.bbr.round_count, 1 + FULL_BW_ROUNDS as u64);
        assert_eq!(d.bbr.mode(), Mode::Drain);
        assert!((d.bbr.pacing_gain() - 1.0 / DEFAULT_HIGH_GAIN).abs() < 1e-12);
        assert!(d.s.ssthresh > BDP_SEGMENTS as u32 && d.s.ssthresh < 2 * BDP_SEGMENTS as u32);
        // DRAIN lasts while the flight exceeds one BDP plus the send quanta ...
        d.run(5 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS + 20));
        assert_eq!(d.bbr.mode(), Mode::Drain);
        // ... and ends as soon as it does not.
        d.step(BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS));
        assert_eq!(d.bbr.mode(), Mode::ProbeBw);
        assert_ne!(d.bbr.cycle_index, DRAIN_PHASE);
    }

    #[test]
    fn full_pipe_waits_while_the_bandwidth_grows() {
        let mut d = Driver::new();
        // The delivery rate doubles every round trip for eight round trips.
        for i in 0..8u64 {
            d.run(RTT_PS, BW_BPS << i >> 7, RTT_PS, Flight::Window);
        }
        assert!(d.bbr.round_count >= 7);
        assert!(!d.bbr.full_bw_reached());
        assert_eq!(d.bbr.mode(), Mode::Startup);
        assert!((d.bbr.pacing_gain() - DEFAULT_HIGH_GAIN).abs() < 1e-12);
        // STARTUP never lowers the pacing rate, even if a sample does.
        let rate = d.bbr.pacing_rate_bps(&d.s).unwrap();
        d.run(RTT_PS, BW_BPS / 100, RTT_PS, Flight::Window);
        assert!(d.bbr.pacing_rate_bps(&d.s).unwrap() >= rate);
    }

    #[test]
    fn start_phase_is_never_the_draining_one_and_repeats() {
        let mut seen = [0u32; 8];
        for seed in 0..2000u64 {
            let mut b = Bbr::new(BbrConfig::default());
            let mut s = state();
            s.now = seed * 7919;
            s.delivered_bytes = seed;
            b.enter_probe_bw(&s);
            seen[b.cycle_index] += 1;
            // The same flow state draws the same phase.
            let mut b2 = Bbr::new(BbrConfig::default());
            b2.enter_probe_bw(&s);
            assert_eq!(b.cycle_index, b2.cycle_index);
        }
        assert_eq!(seen[DRAIN_PHASE], 0);
        for (phase, &n) in seen.iter().enumerate() {
            if phase != DRAIN_PHASE {
                // 2000 / 7 = 286 expected, binomial standard deviation 16: allow 5 of them.
                assert!((n as i64 - 286).abs() < 80, "phase {phase}: {n}");
            }
        }
    }

    #[test]
    fn gain_cycle_advances_one_phase_per_rt_prop() {
        let mut d = Driver::new();
        d.reach_probe_bw();
        let mut phases = vec![d.bbr.cycle_index];
        let mut changes = vec![d.now];
        let end = d.now + 200 * PS_PER_MS;
        while d.now < end {
            d.step(BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS));
            if *phases.last().unwrap() != d.bbr.cycle_index {
                phases.push(d.bbr.cycle_index);
                changes.push(d.now);
            }
            assert_eq!(d.bbr.pacing_gain(), PACING_GAIN_CYCLE[d.bbr.cycle_index]);
        }
        // Phases follow each other in order ...
        for w in phases.windows(2) {
            assert_eq!(w[1], (w[0] + 1) % PACING_GAIN_CYCLE.len(), "{phases:?}");
        }
        // ... each lasting one RTprop (to the next ACK), except the draining phase, which ends
        // at once when the flight is already down to one BDP.
        for (i, w) in changes.windows(2).enumerate().skip(1) {
            let len = w[1] - w[0];
            if phases[i] == DRAIN_PHASE {
                assert_eq!(len, STEP_PS);
            } else {
                assert!(len > RTT_PS && len <= RTT_PS + STEP_PS, "phase {} lasted {len}", phases[i]);
            }
        }
        assert!(phases.len() >= 16, "{phases:?}");
    }

    #[test]
    fn probe_phase_persists_until_the_flight_reaches_its_target_or_a_loss() {
        let mut d = Driver::new();
        d.reach_probe_bw();
        d.bbr.cycle_index = 0;
        d.bbr.cycle_start_ps = d.now;
        for _ in 0..100 {
            d.ack_at(d.now + STEP_PS, 5 * MSS, BW_BPS, RTT_PS, BDP_SEGMENTS);
        }
        assert_eq!(d.bbr.cycle_index, 0, "a flight short of 1.25 BDP keeps probing");
        let mut lossy = d.sample(d.now + STEP_PS, 5 * MSS, RTT_PS, BDP_SEGMENTS);
        lossy.delivery_rate_bps = Some(BW_BPS);
        lossy.newly_lost_bytes = MSS;
        d.bbr.cong_control(&mut d.s, &lossy);
        assert_eq!(d.bbr.cycle_index, 1, "a loss ends the probe");
    }

    #[test]
    fn pacing_and_cwnd_follow_the_model() {
        let mut d = Driver::new();
        d.reach_probe_bw();
        d.run_until(100 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS), |b| b.cycle_index == 2);
        d.run(5 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS));
        assert_eq!(d.bbr.cycle_index, 2);
        // Cruising: pacing at 0.99 x BtlBw; a send quantum is 1 ms of that, 9900 bytes.
        assert_eq!(d.bbr.pacing_rate_bps(&d.s), Some(79_200_000));
        assert_eq!(d.bbr.send_quantum_bytes(MSS), 9_900);
        // cwnd = 2 x BDP + 3 quanta = 200,000 + 29,700 bytes = 230 segments.
        assert_eq!(d.s.cwnd, 230);
        // The probing phase paces at 1.25 x 0.99 x BtlBw.
        d.run_until(100 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS), |b| b.cycle_index == 0);
        assert_eq!(d.bbr.pacing_rate_bps(&d.s), Some(99_000_000));
    }

    #[test]
    fn recovery_conserves_packets_then_restores_the_window() {
        let mut d = Driver::new();
        d.reach_probe_bw();
        d.run(100 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS));
        let before = d.s.cwnd;
        // The core enters recovery: ssthresh saves cwnd and changes nothing.
        let ssthresh = d.s.ssthresh;
        assert_eq!(d.bbr.ssthresh(&d.s), ssthresh);
        d.bbr.set_state(&mut d.s, CaState::Recovery);
        // First recovery ACK: 60 segments in flight and 2 delivered make cwnd 62 ...
        d.ack_at(d.now + STEP_PS, 2 * MSS, BW_BPS, RTT_PS, 60);
        assert_eq!(d.s.cwnd, 62);
        // ... and for a round trip one segment goes out per segment delivered.
        d.ack_at(d.now + STEP_PS, 2 * MSS, BW_BPS, RTT_PS, 60);
        assert_eq!(d.s.cwnd, 62);
        // Lost segments come off the window.
        let mut lossy = d.sample(d.now + STEP_PS, 2 * MSS, RTT_PS, 50);
        lossy.delivery_rate_bps = Some(BW_BPS);
        lossy.newly_lost_bytes = 10 * MSS;
        d.bbr.cong_control(&mut d.s, &lossy);
        assert_eq!(d.s.cwnd, 52);
        // After the round trip the window grows by what is delivered: two out per one in.
        for _ in 0..RTT_PS / STEP_PS {
            d.ack_at(d.now + STEP_PS, 2 * MSS, BW_BPS, RTT_PS, 50);
        }
        assert!(!d.bbr.packet_conservation);
        let grown = d.s.cwnd;
        d.ack_at(d.now + STEP_PS, 2 * MSS, BW_BPS, RTT_PS, 50);
        assert_eq!(d.s.cwnd, grown + 2);
        // Recovery ends: the window saved on entry comes back (capped by the target).
        d.bbr.set_state(&mut d.s, CaState::Open);
        d.ack_at(d.now + STEP_PS, 2 * MSS, BW_BPS, RTT_PS, 50);
        assert_eq!(d.s.cwnd, (before + 2).min(d.target_cwnd()));
        assert!(d.s.cwnd >= before.min(d.target_cwnd()));
    }

    #[test]
    fn after_a_timeout_cwnd_regrows_from_one_toward_the_target() {
        let mut d = Driver::new();
        d.reach_probe_bw();
        d.run(100 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS));
        let before = d.s.cwnd;
        d.bbr.ssthresh(&d.s);
        d.s.cwnd = 1; // the core's loss window
        d.bbr.set_state(&mut d.s, CaState::Loss);
        d.ack_at(d.now + STEP_PS, MSS, BW_BPS, RTT_PS, 0);
        assert_eq!(d.s.cwnd, MIN_PIPE_CWND_SEGMENTS, "1 + 1 delivered, raised to the minimum");
        d.ack_at(d.now + STEP_PS, 3 * MSS, BW_BPS, RTT_PS, 0);
        assert_eq!(d.s.cwnd, MIN_PIPE_CWND_SEGMENTS + 3);
        d.bbr.set_state(&mut d.s, CaState::Open);
        d.ack_at(d.now + STEP_PS, MSS, BW_BPS, RTT_PS, 7);
        assert_eq!(d.s.cwnd, (before + 1).min(d.target_cwnd()), "leaving Loss restores the saved window");
    }

    #[test]
    fn probe_rtt_holds_four_segments_for_the_duration_and_a_round() {
        let mut d = Driver::new();
        d.reach_probe_bw();
        let stamp = d.bbr.min_rtt_stamp_ps;
        // RTT samples above the minimum for 10 s: the filter expires.
        d.run_until(11 * PS_PER_S, BW_BPS, RTT_PS + PS_PER_MS, Flight::Segments(BDP_SEGMENTS), |b| {
            b.mode() == Mode::ProbeRtt
        });
        assert!(d.now > stamp + DEFAULT_MIN_RTT_WINDOW_PS && d.now <= stamp + DEFAULT_MIN_RTT_WINDOW_PS + STEP_PS);
        assert!(d.bbr.marks_app_limited());
        assert_eq!(d.s.cwnd, MIN_PIPE_CWND_SEGMENTS);
        let saved = d.bbr.prior_cwnd;
        assert!(saved > 200);
        // Once the flight is down to 4 segments, PROBE_RTT lasts 200 ms and at least a round.
        let lasted = d.run_until(300 * PS_PER_MS, BW_BPS, RTT_PS, Flight::Segments(3), |b| b.mode() != Mode::ProbeRtt);
        assert!(
            lasted > DEFAULT_PROBE_RTT_DURATION_PS && lasted <= DEFAULT_PROBE_RTT_DURATION_PS + 2 * STEP_PS,
            "{lasted}"
        );
        assert_eq!(d.bbr.mode(), Mode::ProbeBw);
        assert_eq!(d.bbr.min_rtt_stamp_ps, d.now, "RTprop counts as fresh again");
        assert!(d.s.cwnd >= saved.min(d.target_cwnd()), "the saved window is restored");
        // The exiting ACK still marks what follows it as app-limited (as Linux); later ones
        // do not.
        d.step(BW_BPS, RTT_PS, Flight::Segments(BDP_SEGMENTS));
        assert!(!d.bbr.marks_app_limited());
    }

    #[test]
    fn app_limited_samples_only_raise_the_estimate() {
        let mut d = Driver::new();
        d.ack_at(PS_PER_MS, MSS, BW_BPS, RTT_PS, 5);
        let mut low = d.sample(2 * PS_PER_MS, MSS, RTT_PS, 5);
        low.delivery_rate_bps = Some(BW_BPS / 10);
        low.is_app_limited = true;
        d.bbr.cong_control(&mut d.s, &low);
        assert_eq!(d.bbr.btl_bw_bps(), BW_BPS);
        let high = AckSample { delivery_rate_bps: Some(BW_BPS * 2), ..low };
        d.bbr.cong_control(&mut d.s, &high);
        assert_eq!(d.bbr.btl_bw_bps(), BW_BPS * 2);
    }

    #[test]
    fn config_checks() {
        assert!(BbrConfig::default().validate().is_ok());
        assert!(BbrConfig { high_gain: 1.0, ..Default::default() }.validate().is_err());
        assert!(BbrConfig { cwnd_gain: 0.0, ..Default::default() }.validate().is_err());
        assert!(BbrConfig { bw_window_rounds: 0, ..Default::default() }.validate().is_err());
        assert!(BbrConfig { min_rtt_window_ps: 0, ..Default::default() }.validate().is_err());
        let json = r#"{"high_gain": 2.885, "cwnd_gain": 2.0, "bw_window_rounds": 10,
            "min_rtt_window_ps": 10000000000000, "probe_rtt_duration_ps": 200000000000}"#;
        let cfg: BbrConfig = serde_json::from_str(json).unwrap();
        assert_eq!(cfg.min_rtt_window_ps, DEFAULT_MIN_RTT_WINDOW_PS);
        assert!(serde_json::from_str::<BbrConfig>(r#"{"high_gain": 3}"#).is_err());
    }
}
