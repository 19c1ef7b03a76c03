//! TCP Prague (draft-briscoe-iccrg-prague-congestion-control; the L4S team's Linux
//! net/ipv4/tcp_prague.c, v0.6), the scalable congestion control of the L4S architecture
//! (RFC 9330).
//!
//! As the Linux module does:
//! - it marks its segments ECT(1), the L4S identifier (RFC 9331), and needs Accurate ECN
//!   feedback (RFC 9768), which tells it how many segments each ACK reports CE-marked
//!   (`AckSample::ce_segments`, Linux `rs->ece_delta`);
//! - it sets cwnd itself on every ACK (`cong_control`): the window is cwnd plus a signed
//!   fraction (`cwnd_cnt`, in 2^-20 segments); each ACK adds Reno's 1/cwnd per segment
//!   delivered unmarked (marked segments do not count), and moves cwnd by one segment
//!   whenever the fraction passes a whole one either way;
//! - alpha, the EWMA of the marked fraction (gain 1/16), is updated once per round trip,
//!   and only once a mark has shown there is an L4S AQM on the path;
//! - on an ECN echo the stack enters CWR (once per window) and Prague takes alpha x cwnd / 2
//!   off the fraction, so the reduction is spread over the ACKs that follow, at most one
//!   segment per ACK (the "per-ACK" response);
//! - a loss (fast recovery or timeout) takes half the window the same way and stops growth
//!   until the state is Open again: the classic response, as Reno;
//! - it paces at cwnd x MTU / SRTT (twice that in slow start below ssthresh / 2);
//! - RTT independence (`rtt_scaling = "rate"`, the module's default RTT_CONTROL_RATE): after
//!   `rtt_transition_rounds` round trips past slow start, a flow whose RTT is below
//!   `rtt_target` grows as if its RTT were the target (the increase scaled by
//!   (RTT / target)^2), updates alpha and reduces at most once per target RTT.
//!
//! Not modelled: the module's classic-ECN detection (`prague_ecn_fallback`, off by default)
//! and its TSO burst sizing (`prague_tso_segs`).

use super::{slow_start, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::packet::{IPV4_TCP_HEADER_BYTES, TCP_TIMESTAMPS_OPTION_BYTES};
use crate::time::{Time, PS_PER_S};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// alpha's fixed point (Linux `PRAGUE_ALPHA_BITS`) and the EWMA gain 1/2^4.
const ALPHA_BITS: u32 = 20;
const MAX_ALPHA: u64 = 1 << ALPHA_BITS;
const SHIFT_G: u32 = 4;
/// The fraction of cwnd, in 2^-20 segments (Linux `CWND_UNIT`, `ONE_CWND`).
const CWND_UNIT: u32 = 20;
const ONE_CWND: i64 = 1 << CWND_UNIT;
const MIN_CWND: u32 = 2;
/// Linux keeps RTTs for the scaling in units of 128 us (`RTT_UNIT`).
const RTT_UNIT_PS: Time = 128 * 1_000_000;

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RttScaling {
    /// RTT_CONTROL_NONE: growth of one segment per round trip, whatever the RTT.
    None,
    /// RTT_CONTROL_RATE: flows with RTTs up to the target get the same throughput.
    Rate,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PragueConfig {
    /// RTT independence heuristic (Linux module parameter `prague_rtt_scaling`).
    pub rtt_scaling: RttScaling,
    /// The RTT a flow behaves as if it had when below it (`prague_rtt_target`).
    pub rtt_target_ps: Time,
    /// Round trips after slow start before RTT independence starts (`prague_rtt_transition`).
    pub rtt_transition_rounds: u32,
}

impl PragueConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rtt_target_ps < RTT_UNIT_PS {
            return Err(format!("rtt_target_ps: {} is not allowed: must be at least 128 us", self.rtt_target_ps));
        }
        Ok(())
    }
}

pub struct Prague {
    cfg: PragueConfig,
    /// alpha x 16 in 2^-20 (Linux `upscaled_alpha`, which carries the EWMA's residue).
    upscaled_alpha: u64,
    /// Increase per unmarked segment acknowledged, before the division by cwnd, in 2^-20.
    ai_ack_increase: u64,
    /// The fraction of a segment cwnd has gained or lost beyond its integer value.
    cwnd_cnt: i64,
    loss_cwnd: u32,
    loss_cwnd_cnt: i64,
    /// The round being measured: it ends when snd_una reaches `next_seq`.
    next_seq: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
    /// Round trips since slow start ended.
    round: u32,
    alpha_stamp: Time,
    cwr_stamp: Time,
    saw_ce: bool,
    in_loss: bool,
    state: CaState,
}

impl Prague {
    pub fn new(cfg: PragueConfig) -> Self {
        Prague {
            cfg,
            upscaled_alpha: MAX_ALPHA << SHIFT_G,
            ai_ack_increase: ONE_CWND as u64,
            cwnd_cnt: 0,
            loss_cwnd: 0,
            loss_cwnd_cnt: 0,
            next_seq: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            round: 0,
            alpha_stamp: 0,
            cwr_stamp: 0,
            saw_ce: false,
            in_loss: false,
            state: CaState::Open,
        }
    }

    /// alpha as a fraction.
    pub fn alpha(&self) -> f64 {
        (self.upscaled_alpha >> SHIFT_G) as f64 / MAX_ALPHA as f64
    }

    /// cwnd and its fraction, in segments.
    pub fn fractional_cwnd(&self, s: &CcState) -> f64 {
        s.cwnd as f64 + self.cwnd_cnt as f64 / ONE_CWND as f64
    }

    /// Linux `prague_is_rtt_indep`.
    fn rtt_indep(&self, s: &CcState) -> bool {
        self.cfg.rtt_scaling != RttScaling::None && !s.in_slow_start() && self.round >= self.cfg.rtt_transition_rounds
    }

    /// Linux `prague_ai_ack_increase` with `prague_rate_scaled_ai_ack_increase`.
    fn update_ai_ack_increase(&mut self, s: &CcState) {
        let rtt = s.srtt.map_or(0, |t| t / RTT_UNIT_PS);
        let target = self.cfg.rtt_target_ps / RTT_UNIT_PS;
        self.ai_ack_increase = if self.cfg.rtt_scaling == RttScaling::None
            || self.round < self.cfg.rtt_transition_rounds
            || rtt == 0
            || rtt >= target
        {
            ONE_CWND as u64
        } else {
            let divisor = target * target;
            ((rtt << CWND_UNIT) * rtt + (divisor >> 1)) / divisor
        };
    }

    /// Linux `prague_new_round`.
    fn new_round(&mut self, s: &CcState) {
        self.next_seq = s.snd_nxt;
        self.old_delivered = s.delivered_segments;
        self.old_delivered_ce = s.delivered_ce_segments;
        if !s.in_slow_start() {
            self.round = self.round.saturating_add(1);
        }
        self.update_ai_ack_increase(s);
    }

    /// Linux `prague_should_update_ewma`: a round trip has passed (and with RTT independence
    /// the target RTT too).
    fn should_update_ewma(&self, s: &CcState) -> bool {
        s.snd_una >= self.next_seq && (!self.rtt_indep(s) || s.now >= self.alpha_stamp + self.cfg.rtt_target_ps)
    }

    /// Linux `prague_update_alpha`: alpha = (1 - g) alpha + g F over the round, F the marked
    /// fraction of the segments delivered in it; not before a first mark.
    fn update_alpha(&mut self, s: &CcState) {
        if self.saw_ce {
            let marked = s.delivered_ce_segments - self.old_delivered_ce;
            let delivered = (s.delivered_segments - self.old_delivered).max(1);
            let f = if marked > 0 { (marked << ALPHA_BITS) / delivered } else { 0 };
            let alpha = self.upscaled_alpha - (self.upscaled_alpha >> SHIFT_G) + f;
            self.upscaled_alpha = alpha.min(MAX_ALPHA << SHIFT_G);
            self.alpha_stamp = s.now;
        }
        self.new_round(s);
    }

    /// Linux `prague_update_cwnd`.
    fn update_cwnd(&mut self, s: &mut CcState, ack: &AckSample) {
        let mut acked = ack.delivered_segments as i64;
        if ack.ce_segments > 0 {
            self.saw_ce = true;
            acked -= ack.ce_segments as i64;
        }
        if acked > 0 && !self.in_loss && s.cwnd_limited {
            if s.in_slow_start() {
                acked = slow_start(s, acked as u32) as i64;
                if acked == 0 {
                    self.update_ai_ack_increase(s);
                    return;
                }
            }
            let cwnd = s.cwnd.max(1) as u64;
            let increase = (acked as u64 * self.ai_ack_increase + (cwnd >> 1)) / cwnd;
            self.cwnd_cnt += (increase as i64).max(acked);
        }
        if self.cwnd_cnt <= -ONE_CWND {
            self.cwnd_cnt += ONE_CWND;
            s.cwnd = s.cwnd.saturating_sub(1);
            if s.cwnd < MIN_CWND {
                s.cwnd = MIN_CWND;
                self.cwnd_cnt = 0; // no point in further reductions
            }
            s.ssthresh = s.cwnd;
            self.update_ai_ack_increase(s);
        } else if self.cwnd_cnt >= ONE_CWND {
            self.cwnd_cnt -= ONE_CWND;
            s.cwnd += 1;
            self.update_ai_ack_increase(s);
        }
    }

    /// Linux `prague_enter_cwr`: alpha x cwnd / 2 off the fraction (rounded to nearest).
    fn enter_cwr(&mut self, s: &CcState) {
        if self.rtt_indep(s) && s.now < self.cwr_stamp + self.cfg.rtt_target_ps {
            return;
        }
        self.cwr_stamp = s.now;
        let alpha = self.upscaled_alpha >> SHIFT_G;
        let reduction = (alpha * ((s.cwnd as u64) << CWND_UNIT) + MAX_ALPHA) >> (ALPHA_BITS + 1);
        self.cwnd_cnt -= reduction as i64;
    }

    /// Linux `prague_enter_loss`: half the window (and half the fraction) off.
    fn enter_loss(&mut self, s: &CcState) {
        self.loss_cwnd = s.cwnd;
        self.loss_cwnd_cnt = self.cwnd_cnt;
        self.cwnd_cnt -= ((s.cwnd as i64) << (CWND_UNIT - 1)) + (self.cwnd_cnt >> 1);
        self.in_loss = true;
    }
}

impl CongestionControl for Prague {
    fn name(&self) -> &'static str {
        "prague"
    }

    fn init(&mut self, s: &mut CcState) {
        self.saw_ce = s.delivered_ce_segments > 0;
        self.new_round(s);
    }

    /// Prague reduces through its fraction; ssthresh follows cwnd down (`update_cwnd`).
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        s.ssthresh
    }

    fn cong_avoid(&mut self, _s: &mut CcState, _ack: &AckSample) {}

    fn has_cong_control(&self) -> bool {
        true
    }

    /// Linux `prague_cong_control`.
    fn cong_control(&mut self, s: &mut CcState, ack: &AckSample) {
        self.update_cwnd(s, ack);
        if self.should_update_ewma(s) {
            self.update_alpha(s);
        }
    }

    /// Linux `prague_update_pacing_rate`: max(cwnd, in flight) MTUs per SRTT, doubled in
    /// slow start below ssthresh / 2. The MTU counts the IPv4 and TCP headers with
    /// timestamps (Linux `tcp_mss_to_mtu`).
    fn pacing_rate_bps(&self, s: &CcState) -> Option<u64> {
        let srtt = s.srtt?.max(1);
        let mtu = (s.mss_bytes + IPV4_TCP_HEADER_BYTES + TCP_TIMESTAMPS_OPTION_BYTES) as u128;
        let inflight = s.cwnd.max(s.in_flight_segments) as u128;
        let mut bits = mtu * 8 * inflight * PS_PER_S as u128 / srtt as u128;
        if s.cwnd < s.ssthresh / 2 {
            bits *= 2;
        }
        Some(bits.min(u64::MAX as u128) as u64)
    }

    /// Linux `prague_state`.
    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new != self.state {
            match new {
                CaState::Recovery => self.enter_loss(s),
                CaState::Cwr => self.enter_cwr(s),
                CaState::Open => self.in_loss = false,
                CaState::Loss => {}
            }
        }
        self.state = new;
    }

    /// Linux `prague_cwnd_event`: a timeout is a loss. The Linux stack has set cwnd to the
    /// segments in flight + 1 (`tcp_enter_loss`), 1 once all are marked lost; this core
    /// leaves cwnd to algorithms with `cong_control`, so Prague sets it.
    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        if ev == CwndEvent::Loss {
            self.enter_loss(s);
            s.cwnd = 1;
        }
    }

    /// Linux `prague_cwnd_undo`.
    fn undo_cwnd(&mut self, s: &CcState, _prior_cwnd: u32) -> u32 {
        self.cwnd_cnt += self.cwnd_cnt - self.loss_cwnd_cnt;
        self.loss_cwnd.max(s.cwnd)
    }

    fn sends_ect1(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::state;

    fn prague(rtt_scaling: RttScaling) -> Prague {
        Prague::new(PragueConfig { rtt_scaling, ..PragueConfig::default() })
    }

    fn ack(delivered: u32, ce: u32) -> AckSample {
        AckSample { ce_segments: ce, ..crate::cc::testing::ack(delivered) }
    }

    #[test]
    fn a_mark_takes_alpha_half_cwnd_spread_one_segment_per_ack() {
        // tcp_prague.c prague_enter_cwr: the cut is alpha x cwnd / 2 of the fraction; each
        // following ACK moves cwnd by at most one segment (prague_update_cwnd's adjust).
        let mut p = prague(RttScaling::None);
        let mut s = state(100, 100); // out of slow start
        p.init(&mut s);
        p.upscaled_alpha = (MAX_ALPHA / 4) << SHIFT_G; // alpha = 1/4
        p.set_state(&mut s, CaState::Cwr);
        assert_eq!(p.cwnd_cnt, -(12 * ONE_CWND + ONE_CWND / 2)); // 100 x 1/8 = 12.5 segments
                                                                 // ACKs that deliver only marked segments add nothing; each takes one segment off.
        for k in 1..=12 {
            p.cong_control(&mut s, &ack(1, 1));
            assert_eq!(s.cwnd, 100 - k);
            assert_eq!(s.ssthresh, s.cwnd, "ssthresh follows cwnd down");
        }
        p.cong_control(&mut s, &ack(1, 1));
        assert_eq!(s.cwnd, 88, "the half segment left stays in the fraction");
        assert!((p.fractional_cwnd(&s) - 87.5).abs() < 1e-6);
    }

    #[test]
    fn unmarked_segments_grow_reno_like_one_segment_per_window() {
        let mut p = prague(RttScaling::None);
        let mut s = state(50, 10);
        p.init(&mut s);
        for _ in 0..50 {
            p.cong_control(&mut s, &ack(1, 0));
        }
        assert_eq!(s.cwnd, 51);
        // A marked segment delivers no growth (prague_update_cwnd: acked -= ece_delta).
        let before = p.cwnd_cnt;
        p.cong_control(&mut s, &ack(1, 1));
        assert_eq!(p.cwnd_cnt, before);
        assert!(p.saw_ce);
    }

    #[test]
    fn alpha_starts_at_one_and_waits_for_a_first_mark() {
        let mut p = prague(RttScaling::None);
        let mut s = state(20, 10);
        s.snd_nxt = 0;
        p.init(&mut s);
        // A round without marks before any mark was seen: alpha stays 1 (no AQM proven).
        s.snd_nxt = 20 * 1448;
        p.new_round(&s);
        s.snd_una = s.snd_nxt;
        s.delivered_segments += 20;
        p.cong_control(&mut s, &ack(1, 0));
        assert_eq!(p.alpha(), 1.0);
        // A round of 20 with 5 marked: alpha = 15/16 + 1/16 x 1/4.
        s.snd_nxt += 20 * 1448;
        p.new_round(&s);
        s.snd_una = s.snd_nxt;
        s.delivered_segments += 20;
        s.delivered_ce_segments += 5;
        p.cong_control(&mut s, &ack(1, 1));
        assert!((p.alpha() - (15.0 / 16.0 + 0.25 / 16.0)).abs() < 1e-6, "{}", p.alpha());
    }

    #[test]
    fn loss_halves_and_holds_growth_until_open() {
        let mut p = prague(RttScaling::None);
        let mut s = state(40, 40);
        p.init(&mut s);
        p.set_state(&mut s, CaState::Recovery);
        for _ in 0..40 {
            p.cong_control(&mut s, &ack(1, 0));
        }
        assert_eq!(s.cwnd, 20);
        p.set_state(&mut s, CaState::Open);
        p.cong_control(&mut s, &ack(40, 0));
        assert_eq!(s.cwnd, 21);
    }

    #[test]
    fn rate_scaling_slows_growth_below_the_target_rtt() {
        // prague_rate_scaled_ai_ack_increase: (RTT / target)^2 of Reno's increase.
        let mut p = prague(RttScaling::Rate);
        let mut s = state(50, 10);
        s.srtt = Some(p.cfg.rtt_target_ps / 2);
        p.round = p.cfg.rtt_transition_rounds;
        p.update_ai_ack_increase(&s);
        // A quarter, within the 128-us units Linux rounds RTTs to.
        assert!((p.ai_ack_increase as f64 / ONE_CWND as f64 - 0.25).abs() < 0.01, "{}", p.ai_ack_increase);
        s.srtt = Some(p.cfg.rtt_target_ps * 2);
        p.update_ai_ack_increase(&s);
        assert_eq!(p.ai_ack_increase, ONE_CWND as u64);
    }

    #[test]
    fn paces_at_cwnd_mtus_per_srtt() {
        let p = prague(RttScaling::None);
        let mut s = state(100, 50);
        s.srtt = Some(10 * 1_000_000_000); // 10 ms
                                           // 100 x 1500 bytes x 8 / 10 ms = 120 Mb/s.
        assert_eq!(p.pacing_rate_bps(&s), Some(120_000_000));
        assert!(p.sends_ect1());
    }
}
