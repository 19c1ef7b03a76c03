//! BBRv3: BBR with a loss and ECN response and bounded bandwidth probing.
//!
//! Sources: Google's v3 `net/ipv4/tcp_bbr.c` (github.com/google/bbr, branch v3), whose
//! functions are named below and whose order of operations this module follows; and
//! draft-ietf-ccwg-bbr (BBR as the IETF describes it), whose section names are cited where it
//! states the same rule. The code is written from their behaviour, not copied.
//!
//! What v3 adds to BBRv1 (`cc/bbr.rs`):
//! - a model with two bounds: inflight_hi (and the 2-cycle max bw, "bw_hi") found by probing
//!   until loss or ECN marks exceed a threshold (2 % lost, 50 % marked), and the short-term
//!   bw_lo and inflight_lo, cut by beta (0.7) once per round trip with loss when not probing,
//!   and by 1 - ecn_factor x alpha with ECN marks (`signals.rs`);
//! - a PROBE_BW cycle of four phases, DOWN, CRUISE, REFILL and UP (`probe_bw.rs`), that
//!   probes every 2-3 s of wall-clock time (or after min(63, BDP) round trips, Reno's epoch),
//!   and drains until the flight leaves headroom (15 % below inflight_hi);
//! - STARTUP that also ends on persistent loss (6 loss events in a recovery round with a loss
//!   rate above 2 %) or ECN (two rounds above 50 % marked), pacing at 2.77 and cwnd at 2 x BDP;
//! - PROBE_RTT every 5 s (not 10) for 200 ms at half the BDP (not 4 packets).
//!
//! Units as in v1: bandwidth is payload bits per second, times picoseconds, windows segments.
//! Reused from v1: the pacing rate (`bbr/pacing.rs`, its 1 % margin), the saved window,
//! minimum window and the ACK-aggregation estimator (`bbr/ack_aggregation.rs`).
//!
//! Not modelled: the per-segment loss hook's probe check (`bbr_skb_marked_lost`, which
//! computes inflight_hi from the lost segment's own flight; here the loss rate is judged per
//! ACK from its rate sample, `bbr_adapt_upper_bounds`; the hook's `bbr_note_loss` is taken on
//! every ACK that marks a loss and on a timeout, `set_state`), the TLP-recovery hook, PLB, the fast path (a CPU
//! saving that skips model updates on app-limited ACKs), the earliest-departure-time
//! correction (`bbr_packets_in_net_at_edt`: the in-flight count is used as is), and the
//! receiver side of precise ECN ACKs (`dctcp_ece_ack_update`).

mod probe_bw;
mod signals;

use super::bbr::ack_aggregation::AckAggregation;
use super::bbr::pacing::Pacing;
use super::bbr::{saved_cwnd, MIN_PIPE_CWND_SEGMENTS};
use super::{AckSample, CaState, CcState, CongestionControl, CwndEvent, INFINITE_SSTHRESH};
use crate::rng::Rng;
use crate::time::{Time, PS_PER_S, PS_PER_US};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// STARTUP's pacing gain: 4 ln 2 = 2.77, the smallest that doubles the rate every round
/// (v3 `bbr_startup_pacing_gain` = 277/100; draft-ietf-ccwg-bbr BBRStartupPacingGain).
pub const STARTUP_PACING_GAIN: f64 = 2.77;
/// STARTUP's and DRAIN's cwnd gain (v3 `bbr_startup_cwnd_gain`; draft BBRDefaultCwndGain).
pub const STARTUP_CWND_GAIN: f64 = 2.0;
/// DRAIN paces at 1/2.885 to drain STARTUP's queue in about a round (v3 `bbr_drain_gain` =
/// 1000/2885; the draft rounds it to 0.35).
pub const DRAIN_PACING_GAIN: f64 = 1000.0 / 2885.0;
/// PROBE_BW's cwnd gain (v3 `bbr_cwnd_gain`), 0.25 more in UP (`bbr_bw_probe_cwnd_gain` 1,
/// in units of 1/4: `bbr_update_gains`).
pub const CWND_GAIN: f64 = 2.0;
pub const PROBE_UP_CWND_GAIN: f64 = 2.25;
/// PROBE_BW pacing gains (v3 `bbr_pacing_gain[]`): UP 5/4, DOWN 91/100 (the draft: 0.9),
/// CRUISE and REFILL 1.
pub const PROBE_UP_PACING_GAIN: f64 = 1.25;
pub const PROBE_DOWN_PACING_GAIN: f64 = 0.91;
/// STARTUP (and a PROBE_UP) found the pipe full when the bandwidth grew less than 25 % in 3
/// rounds (v3 `bbr_full_bw_thresh`, `bbr_full_bw_cnt`).
const FULL_BW_GROWTH: f64 = 1.25;
const FULL_BW_ROUNDS: u32 = 3;
/// The initial window is remembered up to 127 segments (v3 `bbr_init`: 7 bits).
const INIT_CWND_MAX: u32 = 0x7F;
/// TSO burst goal (v3 `bbr_tso_segs_generic`): the bytes of 2^-10 s at the pacing rate
/// (`sk_pacing_shift` 10), plus 64 KB halved for every 512 us of min_rtt
/// (`bbr_tso_rtt_shift` 9), at most 64 KB less headers, at least 2 segments
/// (`tcp_min_tso_segs`). cwnd carries three such bursts (`bbr_quantization_budget`).
const PACING_SHIFT: u32 = 10;
const TSO_RTT_SHIFT_US: u32 = 9;
const GSO_MAX_BYTES: u64 = 65_536;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` on x86-64 (MAX_TCP_HEADER = 320).
const TSO_BURST_MAX_BYTES: u64 = GSO_MAX_BYTES - 1 - 320;
const MIN_TSO_SEGS: u32 = 2;
const QUANTA_IN_CWND: u32 = 3;
/// PROBE_UP adds 2 segments to the budget, so that even a tiny BDP probes above itself
/// (`bbr_quantization_budget`).
const PROBE_UP_EXTRA_SEGMENTS: u32 = 2;
/// Unset bounds (Linux `~0U`).
pub const UNSET_BW: u64 = u64::MAX;
pub const UNSET_INFLIGHT: u32 = u32::MAX;

/// The parameters, every one given by the scenario (its table, scenario/bbr3.py, owns the
/// defaults and their sources).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Bbr3Config {
    /// Loss rate over a flight above which probing went too far (v3 `bbr_loss_thresh` 2 %).
    pub loss_thresh: f64,
    /// Multiplicative cut of bw_lo and inflight_lo per round with loss, and of inflight_hi's
    /// floor (v3 `bbr_beta` = 30 % cut; draft BBRBeta 0.7).
    pub beta: f64,
    /// Use ECN: the path marks at a shallow threshold and ACKs echo each mark (v3
    /// `bbr_can_use_ecn`: ECN negotiated and the route's `ecn_low`).
    pub ecn: bool,
    /// CE-marked fraction of a flight above which probing went too far (v3 `bbr_ecn_thresh`
    /// 50 %).
    pub ecn_thresh: f64,
    /// inflight_lo is cut to 1 - ecn_factor x alpha per round with marks (v3 `bbr_ecn_factor`
    /// 1/3).
    pub ecn_factor: f64,
    /// Gain of alpha's EWMA of the marked fraction per round (v3 `bbr_ecn_alpha_gain` 1/16).
    pub ecn_alpha_gain: f64,
    /// ECN logic only below this min_rtt, picoseconds; 0: at any RTT (v3
    /// `bbr_ecn_max_rtt_us` 5 ms).
    pub ecn_max_rtt_ps: Time,
    /// Fraction of inflight_hi left unused after probing found its limit (v3
    /// `bbr_inflight_headroom` 15 %).
    pub inflight_headroom: f64,
    /// PROBE_RTT when no lower RTT was seen for this long, picoseconds (v3
    /// `bbr_probe_rtt_win_ms` 5 s).
    pub probe_rtt_interval_ps: Time,
    /// How long PROBE_RTT holds its window (and at least a round), picoseconds; 0 disables
    /// it (v3 `bbr_probe_rtt_mode_ms` 200 ms).
    pub probe_rtt_duration_ps: Time,
    /// PROBE_RTT's window, a fraction of the BDP (v3 `bbr_probe_rtt_cwnd_gain` 1/2).
    pub probe_rtt_cwnd_gain: f64,
    /// Window of the min_rtt filter, picoseconds (v3 `bbr_min_rtt_win_sec` 10 s).
    pub min_rtt_window_ps: Time,
    /// Wall-clock wait before probing: base plus a uniform draw below rand, picoseconds (v3
    /// `bbr_bw_probe_base_us` 2 s, `bbr_bw_probe_rand_us` 1 s).
    pub bw_probe_base_ps: Time,
    pub bw_probe_rand_ps: Time,
    /// Probe at most this many round trips apart (Reno's epoch at 25 Mb/s x 30 ms; v3
    /// `bbr_bw_probe_max_rounds` 63).
    pub bw_probe_max_rounds: u32,
    /// STARTUP ends after this many loss-marking ACKs in a recovery round with high loss (v3
    /// `bbr_full_loss_cnt` 6), or this many rounds with high ECN (`bbr_full_ecn_cnt` 2).
    pub full_loss_count: u32,
    pub full_ecn_rounds: u32,
}

impl Bbr3Config {
    /// What serde cannot check: fractions in range.
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [
            ("loss_thresh", self.loss_thresh),
            ("ecn_thresh", self.ecn_thresh),
            ("ecn_factor", self.ecn_factor),
            ("ecn_alpha_gain", self.ecn_alpha_gain),
            ("inflight_headroom", self.inflight_headroom),
        ] {
            if !(0.0..1.0).contains(&v) {
                return Err(format!("{name}: {v} is not allowed: must be in [0, 1)"));
            }
        }
        for (name, v) in [("beta", self.beta), ("probe_rtt_cwnd_gain", self.probe_rtt_cwnd_gain)] {
            if !(v > 0.0 && v <= 1.0) {
                return Err(format!("{name}: {v} is not allowed: must be in (0, 1]"));
            }
        }
        if self.min_rtt_window_ps < self.probe_rtt_interval_ps {
            return Err(format!(
                "min_rtt_window_ps: {} is not allowed: must be at least probe_rtt_interval_ps ({})",
                self.min_rtt_window_ps, self.probe_rtt_interval_ps
            ));
        }
        Ok(())
    }
}

/// The four states (v3 `enum bbr_mode`; draft "State Machine").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// PROBE_BW's phases (v3 `enum bbr_pacing_gain_phase`; draft ProbeBW_DOWN, _CRUISE,
/// _REFILL, _UP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Up,
    Down,
    Cruise,
    Refill,
}

/// What the ACKs arriving now say about the probing (v3 `enum bbr_ack_phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

pub struct Bbr3 {
    cfg: Bbr3Config,
    mode: Mode,
    phase: Phase,
    ack_phase: AckPhase,
    pacing_gain: f64,
    cwnd_gain: f64,
    pacing: Pacing,
    init_cwnd: u32,
    prior_cwnd: u32,
    mss: u64,

    // Rounds.
    next_rtt_delivered: u64,
    round_start: bool,
    /// Rounds counted from `loss_round_delivered`, restarted at the first loss of a round
    /// (v3 `loss_round_delivered`, `loss_round_start`).
    loss_round_delivered: u64,
    loss_round_start: bool,
    rounds_since_probe: u32,

    // The model (v3 `bw_hi[2]`, `bw_lo`, `inflight_hi`, `inflight_lo`).
    bw_hi: [u64; 2],
    bw_lo: u64,
    inflight_hi: u32,
    inflight_lo: u32,
    /// Max delivery rate and delivered volume of the latest round (segments).
    bw_latest: u64,
    inflight_latest: u32,
    undo_bw_lo: u64,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    aggregation: AckAggregation,

    // min_rtt and PROBE_RTT.
    min_rtt_ps: Option<Time>,
    min_rtt_stamp: Time,
    probe_rtt_min_ps: Option<Time>,
    probe_rtt_min_stamp: Time,
    probe_rtt_done: Option<Time>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    mark_app_limited: bool,

    // Full-pipe detection (v3 `full_bw`, `full_bw_cnt`, `full_bw_now`, `full_bw_reached`).
    full_bw_bps: u64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,

    // Congestion signals.
    loss_in_round: bool,
    ecn_in_round: bool,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_events_in_round: u32,
    startup_ecn_rounds: u32,
    ecn_eligible: bool,
    ecn_alpha: f64,
    delivered_ce_bytes: u64,
    alpha_last_delivered: u64,
    alpha_last_delivered_ce: u64,

    // PROBE_BW.
    cycle_stamp: Time,
    probe_wait_ps: Time,
    bw_probe_up_rounds: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    /// Draws the probe waits; seeded from the flow's own state when first needed, as v1's.
    rng: Option<Rng>,

    ca_state: CaState,
    prev_ca_state: CaState,
}

/// What one ACK's rate sample says, in segments (Linux `struct rate_sample` as v3 reads it).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Sample {
    /// The sample is valid (Linux `rs->interval_us > 0`) and the ACK delivered something.
    pub valid: bool,
    pub bw_bps: u64,
    pub delivered: u32,
    pub acked_sacked: u32,
    pub tx_in_flight: u32,
    pub lost: u32,
    pub delivered_ce: u32,
    pub newly_lost: u32,
    pub is_app_limited: bool,
    pub prior_in_flight: u32,
}

impl Sample {
    fn from_ack(ack: &AckSample, mss: u64) -> Sample {
        let seg = |bytes: u64| bytes.div_ceil(mss).min(u32::MAX as u64) as u32;
        Sample {
            valid: ack.delivery_rate_bps.is_some(),
            bw_bps: ack.delivery_rate_bps.unwrap_or(0),
            delivered: seg(ack.rate_delivered_bytes),
            acked_sacked: seg(ack.delivered_bytes),
            tx_in_flight: seg(ack.tx_in_flight_bytes),
            lost: seg(ack.rate_lost_bytes),
            delivered_ce: seg(ack.rate_delivered_ce_bytes),
            newly_lost: seg(ack.newly_lost_bytes),
            is_app_limited: ack.is_app_limited,
            prior_in_flight: seg(ack.prior_in_flight_bytes),
        }
    }
}

impl Bbr3 {
    pub fn new(cfg: Bbr3Config) -> Self {
        Bbr3 {
            cfg,
            mode: Mode::Startup,
            phase: Phase::Up,
            ack_phase: AckPhase::Init,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            pacing: Pacing::default(),
            init_cwnd: MIN_PIPE_CWND_SEGMENTS,
            prior_cwnd: 0,
            mss: 1,
            next_rtt_delivered: 0,
            round_start: false,
            loss_round_delivered: 0,
            loss_round_start: false,
            rounds_since_probe: 0,
            bw_hi: [0; 2],
            bw_lo: UNSET_BW,
            inflight_hi: UNSET_INFLIGHT,
            inflight_lo: UNSET_INFLIGHT,
            bw_latest: 0,
            inflight_latest: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            aggregation: AckAggregation::default(),
            min_rtt_ps: None,
            min_rtt_stamp: 0,
            probe_rtt_min_ps: None,
            probe_rtt_min_stamp: 0,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            mark_app_limited: false,
            full_bw_bps: 0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            loss_in_round: false,
            ecn_in_round: false,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_events_in_round: 0,
            startup_ecn_rounds: 0,
            ecn_eligible: false,
            // 1.0 lets a flow that starts into a congested bottleneck respond at once (v3
            // `bbr_ecn_alpha_init`).
            ecn_alpha: 1.0,
            delivered_ce_bytes: 0,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            cycle_stamp: 0,
            probe_wait_ps: 0,
            bw_probe_up_rounds: 0,
            bw_probe_up_cnt: UNSET_INFLIGHT,
            bw_probe_up_acks: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rng: None,
            ca_state: CaState::Open,
            prev_ca_state: CaState::Open,
        }
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
    pub fn phase(&self) -> Phase {
        self.phase
    }
    pub fn inflight_hi(&self) -> u32 {
        self.inflight_hi
    }
    pub fn inflight_lo(&self) -> u32 {
        self.inflight_lo
    }
    pub fn bw_lo_bps(&self) -> u64 {
        self.bw_lo
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn ecn_alpha(&self) -> f64 {
        self.ecn_alpha
    }
    pub fn min_rtt_ps(&self) -> Option<Time> {
        self.min_rtt_ps
    }

    /// The 2-cycle max of the delivery rate (v3 `bbr_max_bw`).
    pub fn max_bw_bps(&self) -> u64 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// The bandwidth the model uses: max bw bounded by bw_lo (v3 `bbr_bw`).
    pub fn bw_bps(&self) -> u64 {
        self.max_bw_bps().min(self.bw_lo)
    }

    // ---- Pacing (v3 `bbr_set_pacing_rate`; `bbr/pacing.rs`) ----

    fn set_pacing_rate(&mut self, s: &CcState, bw_bps: u64, gain: f64) {
        self.pacing.set(s, bw_bps, gain, self.full_bw_reached, STARTUP_PACING_GAIN);
    }

    // ---- Windows (v3 `bbr_bdp`, `bbr_quantization_budget`, `bbr_inflight`) ----

    /// ceil(bw x min_rtt x gain) in segments; the initial window before any RTT sample.
    fn bdp(&self, bw_bps: u64, gain: f64) -> u32 {
        let Some(rtt) = self.min_rtt_ps else { return self.init_cwnd };
        let bytes = bw_bps as f64 * rtt as f64 / (8.0 * PS_PER_S as f64);
        (bytes * gain / self.mss as f64).ceil().min(u32::MAX as f64) as u32
    }

    /// Segments per TSO burst (v3 `bbr_tso_segs_goal`).
    fn tso_segs_goal(&self) -> u32 {
        let mut bytes = (self.pacing.rate_bps / 8) >> PACING_SHIFT;
        let min_rtt_us = self.min_rtt_ps.unwrap_or(u32::MAX as Time) / PS_PER_US;
        let halvings = min_rtt_us >> TSO_RTT_SHIFT_US;
        if halvings < 32 {
            bytes += GSO_MAX_BYTES >> halvings;
        }
        ((bytes.min(TSO_BURST_MAX_BYTES) / self.mss) as u32).max(MIN_TSO_SEGS)
    }

    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.max(QUANTA_IN_CWND * self.tso_segs_goal()).max(MIN_PIPE_CWND_SEGMENTS);
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            cwnd += PROBE_UP_EXTRA_SEGMENTS;
        }
        cwnd
    }

    fn inflight(&self, bw_bps: u64, gain: f64) -> u32 {
        self.quantization_budget(self.bdp(bw_bps, gain))
    }

    /// What we want in flight: the BDP, unless congestion cut cwnd (v3 `bbr_target_inflight`).
    fn target_inflight(&self, s: &CcState) -> u32 {
        self.inflight(self.bw_bps(), 1.0).min(s.cwnd)
    }

    fn probe_rtt_cwnd(&self) -> u32 {
        self.bdp(self.bw_bps(), self.cfg.probe_rtt_cwnd_gain).max(MIN_PIPE_CWND_SEGMENTS)
    }

    fn save_cwnd(&mut self, s: &CcState) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, s.cwnd, self.prev_ca_state, self.mode == Mode::ProbeRtt);
    }

    /// Grow toward the target by what was delivered, or snap down to it once the pipe was
    /// full (v3 `bbr_set_cwnd`).
    fn set_cwnd(&mut self, s: &mut CcState, acked: u32, bw_bps: u64) {
        let mut cwnd = s.cwnd;
        if acked > 0 {
            let aggregation = self.aggregation.cwnd_segments(bw_bps, s.mss_bytes, true);
            let target = self.quantization_budget(self.bdp(bw_bps, self.cwnd_gain) + aggregation);
            if self.full_bw_reached {
                cwnd = (cwnd + acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd += acked;
            }
            cwnd = cwnd.max(MIN_PIPE_CWND_SEGMENTS);
        }
        s.cwnd = cwnd;
        if self.mode == Mode::ProbeRtt {
            s.cwnd = s.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// Caps cwnd by the model's bounds for the phase (v3 `bbr_bound_cwnd_for_inflight_model`).
    fn bound_cwnd_for_inflight_model(&self, s: &mut CcState) {
        let mut cap = UNSET_INFLIGHT;
        if self.mode == Mode::ProbeBw && self.phase != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || self.mode == Mode::ProbeBw {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(MIN_PIPE_CWND_SEGMENTS);
        s.cwnd = s.cwnd.min(cap);
    }

    /// inflight_hi less the headroom left for other flows (v3 `bbr_inflight_with_headroom`).
    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET_INFLIGHT {
            return UNSET_INFLIGHT;
        }
        let headroom = ((self.inflight_hi as f64 * self.cfg.inflight_headroom) as u32).max(1);
        self.inflight_hi.saturating_sub(headroom).max(MIN_PIPE_CWND_SEGMENTS)
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            Mode::Drain => (DRAIN_PACING_GAIN, STARTUP_CWND_GAIN),
            Mode::ProbeBw => match self.phase {
                Phase::Up => (PROBE_UP_PACING_GAIN, PROBE_UP_CWND_GAIN),
                Phase::Down => (PROBE_DOWN_PACING_GAIN, CWND_GAIN),
                Phase::Cruise | Phase::Refill => (1.0, CWND_GAIN),
            },
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    // ---- Rounds, full pipe, DRAIN ----

    /// v3 `bbr_update_round_start`.
    fn update_round_start(&mut self, s: &CcState, ack: &AckSample, rs: &Sample) {
        self.round_start = false;
        if rs.valid && ack.prior_delivered_bytes >= self.next_rtt_delivered {
            self.next_rtt_delivered = s.delivered_bytes;
            self.round_start = true;
        }
    }

    fn reset_full_bw(&mut self) {
        self.full_bw_bps = 0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    /// 25 % growth in 3 rounds, on samples the network limited (v3
    /// `bbr_check_full_bw_reached`; draft BBRCheckFullBWReached). Runs in every state: a
    /// PROBE_UP ends on the same plateau.
    fn check_full_bw_reached(&mut self, rs: &Sample) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        if rs.bw_bps as f64 >= self.full_bw_bps as f64 * FULL_BW_GROWTH {
            self.reset_full_bw();
            self.full_bw_bps = rs.bw_bps;
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_ROUNDS;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// STARTUP -> DRAIN once the pipe is full; DRAIN -> PROBE_BW (DOWN) when the flight is
    /// down to the BDP (v3 `bbr_check_drain`; draft BBRCheckStartupDone, BBRCheckDrainDone).
    fn check_drain(&mut self, s: &mut CcState, ack: &AckSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            // Only for tools: marks the end of STARTUP, as Linux does.
            s.ssthresh = self.inflight(self.max_bw_bps(), 1.0);
            self.reset_congestion_signals();
        }
        let in_flight = ack.in_flight_bytes.div_ceil(self.mss) as u32;
        if self.mode == Mode::Drain && in_flight <= self.inflight(self.max_bw_bps(), 1.0) {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(s);
        }
    }

    // ---- min_rtt and PROBE_RTT (v3 `bbr_update_min_rtt`; draft BBRUpdateMinRTT) ----

    fn update_min_rtt(&mut self, s: &mut CcState, ack: &AckSample, rs: &Sample) {
        let now = s.now;
        let probe_rtt_expired = now > self.probe_rtt_min_stamp + self.cfg.probe_rtt_interval_ps;
        if let Some(rtt) = ack.rtt {
            if self.probe_rtt_min_ps.is_none_or(|m| rtt < m) || (probe_rtt_expired && !ack.is_ack_delayed) {
                self.probe_rtt_min_ps = Some(rtt);
                self.probe_rtt_min_stamp = now;
            }
        }
        let min_rtt_expired = now > self.min_rtt_stamp + self.cfg.min_rtt_window_ps;
        let lower = match (self.probe_rtt_min_ps, self.min_rtt_ps) {
            (Some(p), Some(m)) => p <= m,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if lower || min_rtt_expired {
            self.min_rtt_ps = self.probe_rtt_min_ps;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if self.cfg.probe_rtt_duration_ps > 0 && probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt
        {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(s);
            self.probe_rtt_done = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = s.delivered_bytes;
        }
        if self.mode == Mode::ProbeRtt {
            // The low rate of this state says nothing about the path.
            self.mark_app_limited = true;
            let in_flight = ack.in_flight_bytes.div_ceil(self.mss) as u32;
            match self.probe_rtt_done {
                None if in_flight <= self.probe_rtt_cwnd() => {
                    self.probe_rtt_done = Some(now + self.cfg.probe_rtt_duration_ps);
                    self.probe_rtt_round_done = false;
                    self.next_rtt_delivered = s.delivered_bytes;
                }
                None => {}
                Some(_) => {
                    self.probe_rtt_round_done |= self.round_start;
                    if self.probe_rtt_round_done {
                        self.check_probe_rtt_done(s);
                    }
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn check_probe_rtt_done(&mut self, s: &mut CcState) {
        if self.probe_rtt_done.is_none_or(|done| s.now <= done) {
            return;
        }
        // The next PROBE_RTT is due an interval from now.
        self.probe_rtt_min_stamp = s.now;
        s.cwnd = s.cwnd.max(self.prior_cwnd);
        // v3 `bbr_exit_probe_rtt`: back to PROBE_BW, cruising (the flight is below the BDP)
        // with the next probe scheduled afresh, or to STARTUP.
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(s);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn rng(&mut self, s: &CcState) -> &mut Rng {
        self.rng.get_or_insert_with(|| Rng::new(s.now ^ s.delivered_bytes.rotate_left(32)))
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    /// v3 `bbr_init`.
    fn init(&mut self, s: &mut CcState) {
        self.mss = s.mss_bytes.max(1) as u64;
        self.init_cwnd = s.cwnd.clamp(1, INIT_CWND_MAX);
        s.ssthresh = INFINITE_SSTHRESH;
        self.next_rtt_delivered = s.delivered_bytes;
        self.min_rtt_ps = s.min_rtt;
        self.probe_rtt_min_ps = s.min_rtt;
        self.min_rtt_stamp = s.now;
        self.probe_rtt_min_stamp = s.now;
        self.pacing.init_from_rtt(s, STARTUP_PACING_GAIN);
        self.aggregation.restart_epoch(s.now);
        // Start sampling loss rounds after the first flight is acknowledged.
        self.loss_round_delivered = s.delivered_bytes + 1;
    }

    /// Entering recovery: remember cwnd and the bounds for an undo (v3 `bbr_ssthresh`).
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.save_cwnd(s);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        s.ssthresh
    }

    fn cong_avoid(&mut self, _s: &mut CcState, _ack: &AckSample) {}

    /// v3 `bbr_set_state`.
    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        self.ca_state = new;
        if new == CaState::Loss {
            // The timeout has just marked at least the head segment lost
            // (tcp_timeout_mark_lost), which in v3 reaches `bbr_skb_marked_lost` and so
            // `bbr_note_loss`: this round is a loss round, and the lower bounds are cut when
            // it ends.
            self.note_loss(s);
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET_INFLIGHT {
                // The lower bounds' next cut starts from the window before the timeout.
                self.inflight_lo = s.cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss {
            s.cwnd = s.cwnd.max(self.prior_cwnd);
        }
    }

    /// A spurious recovery: the bounds and cwnd before it come back (v3 `bbr_undo_cwnd`).
    fn undo_cwnd(&mut self, _s: &CcState, _prior_cwnd: u32) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.prior_cwnd
    }

    /// A restart from idle: pace at the estimate, no probing (v3 `bbr_cwnd_event`).
    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        if ev == CwndEvent::TxStart {
            self.idle_restart = true;
            self.aggregation.restart_epoch(s.now);
            match self.mode {
                Mode::ProbeBw => self.set_pacing_rate(s, self.bw_bps(), 1.0),
                Mode::ProbeRtt => self.check_probe_rtt_done(s),
                Mode::Startup | Mode::Drain => {}
            }
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// v3 `bbr_main`.
    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) {
        self.mark_app_limited = false;
        let rs = Sample::from_ack(ack, self.mss);
        // What the stack does before cong_control: count CE-echoed deliveries (Linux
        // `tcp_count_delivered`) and note the losses it marked (v3 `bbr_note_loss`, from
        // `bbr_skb_marked_lost`).
        self.delivered_ce_bytes += ack.ce_delivered_bytes(self.mss);
        if rs.newly_lost > 0 {
            self.note_loss(s);
        }
        self.update_round_start(s, ack, &rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            self.update_ecn_alpha(s);
        }
        self.ecn_in_round |= self.ecn_eligible && ack.is_ece;
        self.update_latest_delivery_signals(s, ack, &rs);

        // v3 `bbr_update_model`.
        self.update_congestion_signals(s, &rs);
        if rs.valid {
            let bw = self.bw_bps();
            let window = if self.full_bw_reached { super::bbr::ack_aggregation::WIN_RTTS } else { 1 };
            self.aggregation.update_in_window(
                s.now,
                self.round_start,
                bw,
                s.mss_bytes,
                rs.acked_sacked,
                s.cwnd,
                window,
            );
        }
        self.check_loss_too_high_in_startup(&rs);
        self.check_full_bw_reached(&rs);
        self.check_drain(s, ack);
        self.update_cycle_phase(s, &rs);
        self.update_min_rtt(s, ack, &rs);

        self.update_gains();
        let bw = self.bw_bps();
        self.set_pacing_rate(s, bw, self.pacing_gain);
        self.set_cwnd(s, rs.acked_sacked, bw);
        self.bound_cwnd_for_inflight_model(s);

        self.advance_latest_delivery_signals(&rs);
        self.prev_ca_state = self.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
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
