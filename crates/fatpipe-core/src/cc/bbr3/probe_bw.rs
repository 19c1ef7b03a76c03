//! BBRv3's PROBE_BW: DOWN, CRUISE, REFILL, UP, and the upper bounds (inflight_hi, the
//! 2-cycle max bw) that probing moves. v3 `tcp_bbr.c` functions named on each;
//! draft-ietf-ccwg-bbr "ProbeBW", "BBRAdaptUpperBounds".
//!
//! A cycle: DOWN (pace 0.91) until the flight leaves headroom below inflight_hi and is at
//! most the BDP; CRUISE (pace 1, cwnd capped at inflight_hi less 15 %) until the randomized
//! wait (2-3 s, or min(63, BDP) rounds) is over; REFILL (pace 1, cwnd up to inflight_hi) for
//! a round; UP (pace 1.25) raising inflight_hi by 1, 2, 4 ... segments per round until the
//! bandwidth stops growing, the flight reaches an inflight_hi that proved too high before,
//! or loss (2 %) or ECN (50 %) says it went too far: then inflight_hi is set to the flight
//! at that point and the cycle starts again with DOWN.

use super::{AckPhase, Bbr3, Mode, Phase, Sample, UNSET_INFLIGHT};
use crate::cc::{CaState, CcState};

/// Doubling of the probing volume stops here (v3 `bbr_raise_inflight_hi_slope`).
const MAX_PROBE_UP_ROUNDS: u32 = 30;
/// Random extra rounds before a Reno-coexistence probe (v3 `bbr_bw_probe_rand_rounds` 2:
/// `get_random_u32_below(2)`).
const PROBE_RAND_ROUNDS: u32 = 2;
/// After a cycle with ECN marks and no loss, the first round of the next probe raises
/// inflight_hi by this fraction of it (v3 `bbr_ecn_reprobe_gain` 1/2).
const ECN_REPROBE_GAIN: f64 = 0.5;

impl Bbr3 {
    /// v3 `bbr_update_cycle_phase`.
    pub(super) fn update_cycle_phase(&mut self, s: &mut CcState, rs: &Sample) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(s, rs) || self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = rs.prior_in_flight;
        match self.phase {
            Phase::Cruise => {
                self.check_time_to_probe_bw(s);
            }
            Phase::Refill => {
                // A round of REFILL: the samples now reflect a full pipe.
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(s, rs);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    // Back at the level that proved too high: stop before the queue overflows.
                    self.stopped_risky_probe = true;
                    done = true;
                } else if s.cwnd_limited && s.cwnd >= self.inflight_hi {
                    // inflight_hi limits growth: the plateau test must wait.
                    self.reset_full_bw();
                    self.full_bw_bps = rs.bw_bps;
                } else if self.full_bw_now {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(s);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(s) {
                    return;
                }
                if self.check_time_to_cruise(inflight) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }

    /// Follows the feedback of a probe, and moves inflight_hi down when loss or ECN says the
    /// probe went too far, up when a higher flight proved safe (v3 `bbr_adapt_upper_bounds`).
    /// Returns true when it started a new phase itself.
    fn adapt_upper_bounds(&mut self, s: &mut CcState, rs: &Sample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // The last samples of the probe have arrived.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            // Now the freshest sample is the best one of this cycle: forget the older cycle.
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            // The probe reached the old inflight_hi without trouble: probe again from there.
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(s, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(s, rs);
            }
            return false;
        }
        if self.inflight_hi == UNSET_INFLIGHT {
            return false;
        }
        // Random loss must not ratchet inflight_hi down: any flight that proved safe raises it.
        if rs.tx_in_flight > self.inflight_hi {
            self.inflight_hi = rs.tx_in_flight;
        }
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            self.probe_inflight_hi_upward(s, rs);
        }
        false
    }

    /// The flight of the sample was too much: inflight_hi becomes it (at least beta x the
    /// target), once per probe (v3 `bbr_handle_inflight_too_high`; draft
    /// BBRHandleInflightTooHigh).
    pub(super) fn handle_inflight_too_high(&mut self, s: &mut CcState, rs: &Sample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.is_app_limited {
            let floor = (self.target_inflight(s) as f64 * self.cfg.beta) as u32;
            self.inflight_hi = rs.tx_in_flight.max(floor);
        }
        if self.mode == Mode::ProbeBw && self.phase == Phase::Up {
            self.start_bw_probe_down(s);
        }
    }

    /// v3 `bbr_probe_inflight_hi_upward`: one segment per `bw_probe_up_cnt` delivered, while
    /// cwnd-limited at inflight_hi; the slope doubles every round.
    fn probe_inflight_hi_upward(&mut self, s: &CcState, rs: &Sample) {
        if !s.cwnd_limited || s.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks += rs.acked_sacked;
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(s);
        }
    }

    /// v3 `bbr_raise_inflight_hi_slope`: 2^rounds more segments this round.
    fn raise_inflight_hi_slope(&mut self, s: &CcState) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(MAX_PROBE_UP_ROUNDS);
        self.bw_probe_up_cnt = (s.cwnd / growth_this_round).max(1);
    }

    /// v3 `bbr_advance_max_bw_filter`: bw_hi keeps the max of the last 1-2 cycles.
    fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return; // no sample in this cycle: keep the older one
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// Time to refill and probe: ECN marks stopped after a cycle without loss, the
    /// randomized wall-clock wait is over, or Reno would have probed by now (v3
    /// `bbr_check_time_to_probe_bw`).
    fn check_time_to_probe_bw(&mut self, s: &mut CcState) -> bool {
        if self.ecn_eligible && self.ecn_in_cycle && !self.loss_in_cycle && self.ca_state == CaState::Open {
            let volume = (self.inflight_hi as f64 * ECN_REPROBE_GAIN) as u64;
            let n = volume.max(1).ilog2().min(MAX_PROBE_UP_ROUNDS);
            self.start_bw_probe_refill(s, n);
            return true;
        }
        let waited = s.now > self.cycle_stamp + self.probe_wait_ps;
        // Reno at our BDP probes (loses) every BDP round trips; probe at least that often
        // (v3 `bbr_is_reno_coexistence_probe_time`).
        let reno_rounds = self.cfg.bw_probe_max_rounds.min(self.target_inflight(s));
        if waited || self.rounds_since_probe >= reno_rounds {
            self.start_bw_probe_refill(s, 0);
            return true;
        }
        false
    }

    /// DOWN is over when the flight leaves headroom below inflight_hi and is at most the BDP
    /// (v3 `bbr_check_time_to_cruise`).
    fn check_time_to_cruise(&self, inflight: u32) -> bool {
        inflight <= self.inflight_with_headroom() && inflight <= self.inflight(self.max_bw_bps(), 1.0)
    }

    /// v3 `bbr_pick_probe_wait`: 0 or 1 extra rounds, 2 s plus up to 1 s.
    fn pick_probe_wait(&mut self, s: &CcState) {
        let (rand_ps, base_ps) = (self.cfg.bw_probe_rand_ps, self.cfg.bw_probe_base_ps);
        let rng = self.rng(s);
        let rounds = ((rng.uniform() * PROBE_RAND_ROUNDS as f64) as u32).min(PROBE_RAND_ROUNDS - 1);
        let extra = (rng.uniform() * rand_ps as f64) as u64;
        self.rounds_since_probe = rounds;
        self.probe_wait_ps = base_ps + extra.min(rand_ps.saturating_sub(1));
    }

    /// REFILL: pace at bw with the lower bounds lifted, to fill the pipe before probing
    /// above it (v3 `bbr_start_bw_probe_refill`).
    fn start_bw_probe_refill(&mut self, s: &CcState, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = s.delivered_bytes;
        self.phase = Phase::Refill;
    }

    /// v3 `bbr_start_bw_probe_up`.
    fn start_bw_probe_up(&mut self, s: &CcState, rs: &Sample) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = s.delivered_bytes;
        self.cycle_stamp = s.now;
        self.reset_full_bw();
        self.full_bw_bps = rs.bw_bps;
        self.phase = Phase::Up;
        self.raise_inflight_hi_slope(s);
    }

    /// DOWN, which starts a cycle: the congestion signals start over and the wait before the
    /// next probe is drawn (v3 `bbr_start_bw_probe_down`).
    pub(super) fn start_bw_probe_down(&mut self, s: &CcState) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET_INFLIGHT;
        self.pick_probe_wait(s);
        self.cycle_stamp = s.now;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = s.delivered_bytes;
        self.phase = Phase::Down;
    }

    /// v3 `bbr_start_bw_probe_cruise`.
    pub(super) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET_INFLIGHT {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.phase = Phase::Cruise;
    }
}
