//! TCP-Illinois (Liu, Basar and Srikant, "TCP-Illinois: a loss- and delay-based congestion
//! control algorithm for high-speed networks", Performance Evaluation 65(6-7), 2008; VALUETOOLS
//! 2006), as Linux `net/ipv4/tcp_illinois.c` runs it.
//!
//! Loss decides the direction (AIMD), queueing delay the step: cwnd grows by alpha / cwnd per
//! acknowledged segment and a loss takes beta x cwnd off, where alpha and beta are set once per
//! RTT from the round's average queueing delay da = avg RTT - base RTT against the largest
//! seen, dm = max RTT - base RTT:
//!
//! - alpha = alpha_max (10) while da <= d1 = dm / 100; above, the convex curve
//!   alpha = k1 / (k2 + da) that falls to alpha_min (0.3) at da = dm (the paper's equation (2));
//!   after delay has risen above d1, alpha returns to alpha_max only when theta RTTs in a row
//!   are below it again;
//! - beta = beta_min (1/8) while da <= d2 = dm / 10, beta_max (1/2) from d3 = 8 dm / 10, linear
//!   in between;
//! - below `win_thresh` segments both are Reno's (alpha 1, beta 1/2); after a timeout too,
//!   until the next round.
//!
//! As Linux: RTTs are whole microseconds (capped at 3.3 s so the alpha arithmetic cannot
//! wrap), base and max RTT are the smallest and largest ever sampled, alpha is kept in 128ths
//! and beta in 64ths; a round ends on the first ACK above the `snd_nxt` of its start; the
//! increase is counted in `snd_cwnd_cnt`, the first ACK of an update with all the segments it
//! acknowledged and later calls with one (`ca->acked`); slow start is Linux's.

use super::{slow_start, AckSample, CaState, CcState, CongestionControl};
use crate::time::PS_PER_US;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// alpha in 128ths (`ALPHA_SHIFT`): alpha_max 10, alpha_min 3 x 128 / 10 (0.297), Reno's 1.
const ALPHA_SHIFT: u32 = 7;
const ALPHA_SCALE: u64 = 1 << ALPHA_SHIFT;
pub const ALPHA_MIN: u64 = 3 * ALPHA_SCALE / 10;
pub const ALPHA_MAX: u64 = 10 * ALPHA_SCALE;
const ALPHA_BASE: u64 = ALPHA_SCALE;
/// The largest RTT sample used, microseconds (`RTT_MAX`: U32_MAX / ALPHA_MAX, 3.3 s).
const RTT_MAX_US: u64 = u32::MAX as u64 / ALPHA_MAX;
/// beta in 64ths (`BETA_SHIFT`): beta_min 1/8, beta_max 1/2 (Reno's).
const BETA_SHIFT: u32 = 6;
const BETA_SCALE: u64 = 1 << BETA_SHIFT;
pub const BETA_MIN: u64 = BETA_SCALE / 8;
pub const BETA_MAX: u64 = BETA_SCALE / 2;
const BETA_BASE: u64 = BETA_MAX;
/// Linux's "no sample yet".
const NO_RTT_US: u64 = 0x7fff_ffff;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IllinoisConfig {
    /// Below this window, segments, alpha and beta are Reno's (Linux module parameter
    /// `win_thresh` = 15).
    pub win_thresh: u32,
    /// RTTs in a row with low delay before alpha returns to alpha_max (Linux module parameter
    /// `theta` = 5).
    pub theta: u32,
}

impl IllinoisConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.theta == 0 || self.theta > 255 {
            return Err(format!("theta: {} is not allowed: must be 1..255 RTTs", self.theta));
        }
        Ok(())
    }
}

/// alpha (128ths) for average queueing delay `da` and maximum `dm`, microseconds, with the
/// convex curve of the paper between d1 = dm / 100 and dm (`alpha()` without its theta rule).
pub fn alpha_curve(da: u64, dm: u64) -> u64 {
    let d1 = dm / 100;
    if da <= d1 {
        return ALPHA_MAX;
    }
    let (dm, da) = (dm - d1, da - d1);
    // k1 / (k2 + da) written so that da = 0 gives alpha_max and da = dm alpha_min.
    (dm * ALPHA_MAX) / (dm + da * (ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN).max(1)
}

/// beta (64ths) for average queueing delay `da` and maximum `dm` (`beta()`).
pub fn beta_line(da: u64, dm: u64) -> u64 {
    let d2 = dm / 10;
    if da <= d2 {
        return BETA_MIN;
    }
    let d3 = 8 * dm / 10;
    if da >= d3 || d3 <= d2 {
        return BETA_MAX;
    }
    (BETA_MIN * d3 + (BETA_MAX - BETA_MIN) * da - BETA_MAX * d2) / (d3 - d2)
}

pub struct Illinois {
    cfg: IllinoisConfig,
    sum_rtt_us: u64,
    cnt_rtt: u32,
    base_rtt_us: u64,
    max_rtt_us: u64,
    end_seq: u64,
    /// 128ths and 64ths.
    alpha: u64,
    beta: u64,
    /// Segments the current ACK acknowledged (`ca->acked`), set by `pkts_acked`.
    acked: u32,
    rtt_above: bool,
    rtt_low: u32,
}

impl Illinois {
    pub fn new(cfg: IllinoisConfig) -> Self {
        Illinois {
            cfg,
            sum_rtt_us: 0,
            cnt_rtt: 0,
            base_rtt_us: NO_RTT_US,
            max_rtt_us: 0,
            end_seq: 0,
            alpha: ALPHA_MAX,
            beta: BETA_BASE,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        }
    }

    /// alpha in 128ths and beta in 64ths, as last set.
    pub fn alpha_beta(&self) -> (u64, u64) {
        (self.alpha, self.beta)
    }

    /// `rtt_reset`: a new round from `snd_nxt`.
    fn rtt_reset(&mut self, s: &CcState) {
        self.end_seq = s.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt_us = 0;
    }

    /// alpha with the theta rule: after delay rose above d1, alpha_max only after theta low
    /// rounds in a row.
    fn next_alpha(&mut self, da: u64, dm: u64) -> u64 {
        if da <= dm / 100 {
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            self.rtt_low += 1;
            if self.rtt_low < self.cfg.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        alpha_curve(da, dm)
    }

    /// `update_params`, once per RTT.
    fn update_params(&mut self, s: &CcState) {
        if s.cwnd < self.cfg.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if self.cnt_rtt > 0 {
            let dm = self.max_rtt_us - self.base_rtt_us;
            let da = (self.sum_rtt_us / self.cnt_rtt as u64).saturating_sub(self.base_rtt_us);
            self.alpha = self.next_alpha(da, dm);
            self.beta = beta_line(da, dm);
        }
        self.rtt_reset(s);
    }
}

impl CongestionControl for Illinois {
    fn name(&self) -> &'static str {
        "illinois"
    }

    fn init(&mut self, s: &mut CcState) {
        *self = Illinois::new(self.cfg.clone());
        self.rtt_reset(s);
    }

    fn pkts_acked(&mut self, _s: &mut CcState, ack: &AckSample) {
        self.acked = ack.acked_segments;
        let Some(rtt) = ack.rtt else { return };
        let rtt_us = (rtt / PS_PER_US).min(RTT_MAX_US);
        self.base_rtt_us = self.base_rtt_us.min(rtt_us);
        self.max_rtt_us = self.max_rtt_us.max(rtt_us);
        self.cnt_rtt += 1;
        self.sum_rtt_us += rtt_us;
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if s.snd_una > self.end_seq {
            self.update_params(s);
        }
        if !s.cwnd_limited {
            return;
        }
        if s.in_slow_start() {
            slow_start(s, ack.delivered_segments);
            return;
        }
        s.cwnd_cnt += self.acked;
        self.acked = 1;
        // cwnd += alpha / cwnd per segment, in whole segments.
        let delta = (s.cwnd_cnt as u64 * self.alpha) >> ALPHA_SHIFT;
        if delta >= s.cwnd as u64 {
            s.cwnd = s.cwnd.saturating_add((delta / s.cwnd as u64) as u32);
            s.cwnd_cnt = 0;
        }
    }

    /// The multiplicative decrease: cwnd - beta x cwnd, at least 2.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let cut = (s.cwnd as u64 * self.beta) >> BETA_SHIFT;
        ((s.cwnd as u64 - cut) as u32).max(2)
    }

    /// A timeout starts over with Reno's alpha and beta.
    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{self, state};
    use crate::time::{Time, PS_PER_MS};

    const MSS: u32 = 1448;
    const BASE: Time = 100 * PS_PER_MS;

    fn illinois() -> Illinois {
        Illinois::new(IllinoisConfig { win_thresh: 15, theta: 5 })
    }

    fn ack(rtt: Time) -> AckSample {
        AckSample { rtt: Some(rtt), ..AckSample::of_segments(1, MSS) }
    }

    /// One round of `cwnd` ACKs, every sample `rtt`, the last one passing the round's end.
    fn round(c: &mut Illinois, s: &mut CcState, rtt: Time) {
        testing::round(s, c.end_seq, |s| {
            c.pkts_acked(s, &ack(rtt));
            c.cong_avoid(s, &ack(rtt));
        });
    }

    /// A flow in congestion avoidance that has seen RTTs from BASE to BASE + 100 ms.
    fn seasoned(cwnd: u32) -> (Illinois, CcState) {
        let mut c = illinois();
        let mut s = state(cwnd, cwnd / 2);
        c.init(&mut s);
        round(&mut c, &mut s, BASE);
        round(&mut c, &mut s, BASE + 100 * PS_PER_MS);
        (c, s)
    }

    #[test]
    fn the_curves_ends() {
        let dm = 100_000;
        // alpha: 10 up to d1 = dm / 100, about 0.3 at dm, convex (already below 1 at half).
        assert_eq!(alpha_curve(0, dm), ALPHA_MAX);
        assert_eq!(alpha_curve(dm / 100, dm), ALPHA_MAX);
        assert_eq!(alpha_curve(dm, dm), ALPHA_MIN, "alpha_min at the largest delay");
        assert!(alpha_curve(dm / 2, dm) < ALPHA_SCALE, "convex: {}", alpha_curve(dm / 2, dm));
        // beta: 1/8 up to d2 = dm / 10, 1/2 from d3 = 0.8 dm, linear in between.
        assert_eq!(beta_line(dm / 10, dm), BETA_MIN);
        assert_eq!(beta_line(8 * dm / 10, dm), BETA_MAX);
        assert_eq!(beta_line(dm, dm), BETA_MAX);
        assert_eq!(beta_line(45 * dm / 100, dm), (BETA_MIN + BETA_MAX) / 2, "midpoint of the line");
    }

    #[test]
    fn no_queueing_delay_grows_ten_segments_per_rtt_and_backs_off_by_an_eighth() {
        let (mut c, mut s) = seasoned(1000);
        // Rounds at the base RTT: da = 0 <= d1, but delay was above d1 last round, so alpha
        // holds its low value for theta - 1 rounds, then returns to 10.
        for _ in 0..5 {
            round(&mut c, &mut s, BASE);
        }
        assert_eq!(c.alpha_beta(), (ALPHA_MAX, BETA_MIN));
        let w = s.cwnd;
        round(&mut c, &mut s, BASE);
        assert!((w + 9..=w + 10).contains(&s.cwnd), "alpha 10: {} -> {}", w, s.cwnd);
        // beta = 1/8: a loss keeps 7/8 of the window.
        assert_eq!(c.ssthresh(&s), s.cwnd - s.cwnd / 8);
    }

    #[test]
    fn full_queueing_delay_grows_a_third_of_a_segment_per_rtt_and_halves() {
        let (mut c, mut s) = seasoned(1000);
        round(&mut c, &mut s, BASE + 100 * PS_PER_MS);
        assert_eq!(c.alpha_beta(), (ALPHA_MIN, BETA_MAX));
        let w = s.cwnd;
        for _ in 0..10 {
            round(&mut c, &mut s, BASE + 100 * PS_PER_MS);
        }
        // 0.297 segment per RTT: 2.97 in ten rounds, 2 or 3 by where the count stood.
        assert!((w + 2..=w + 3).contains(&s.cwnd), "alpha_min: {w} -> {}", s.cwnd);
        assert_eq!(c.ssthresh(&s), s.cwnd / 2);
    }

    #[test]
    fn small_windows_and_timeouts_are_reno() {
        let (mut c, mut s) = seasoned(10);
        s.cwnd = 10; // alpha 10 grew it meanwhile
        round(&mut c, &mut s, BASE);
        assert_eq!(c.alpha_beta(), (ALPHA_BASE, BETA_BASE), "below win_thresh");
        let (mut c, mut s) = seasoned(1000);
        round(&mut c, &mut s, BASE);
        c.set_state(&mut s, CaState::Loss);
        assert_eq!(c.alpha_beta(), (ALPHA_BASE, BETA_BASE));
    }
}
