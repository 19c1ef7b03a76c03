//! CAIA Delay-Gradient, CDG (Hayes and Armitage, "Revisiting TCP congestion control using
//! delay gradients", IFIP Networking 2011), as Linux `net/ipv4/tcp_cdg.c` runs it.
//!
//! Once per RTT CDG takes the change of the round's smallest and largest RTT against the last
//! round's (gmin, gmax), sums them over a moving window of `window` rounds (the paper's
//! smoothed gradient, times the window), and uses gmin if positive, else gmax: a growing
//! queue. With a positive gradient g it backs off with probability 1 - e^(-g x factor / 10^6)
//! (g in microseconds; the paper's 1 - e^(-g/G)): Linux's `tcp_enter_cwr`, a reduction to
//! `backoff_beta` (0.7) of the window without a loss. Otherwise growth is Reno's.
//!
//! - Ineffectual backoff: after `use_ineff` backoffs in a row that did not shrink the RTT
//!   (neither gradient fell by 32 us), CDG stops backing off on delay (a loss-based competitor
//!   is filling the queue) until one does.
//! - Shadow window: the window CDG would have without its delay backoffs, grown as Reno's; a
//!   loss then keeps max(shadow / 2, cwnd / 2), so delay backoffs do not add up with the loss's
//!   halving against loss-based flows.
//! - Loss tolerance (off by default): a loss while the gradients say the queue is not full
//!   keeps the window.
//! - HyStart (ack trains and delay, Linux's variant) ends slow start.
//!
//! The random draws come from the connection's own seeded generator ([`CongestionControl::seed_rng`]).
//! Departures from Linux: the delayed-ACK filter counts an ACK as free of SACK information
//! when it delivered nothing beyond what it cumulatively acknowledged (Linux asks whether any
//! segment is SACKed, `sacked_out`); e^-x is computed in floating point (Linux a table).

use super::{reno_cong_avoid, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::rng::Rng;
use crate::time::PS_PER_US;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A gradient this far below zero (microseconds) shows that a backoff worked.
const EFFECTUAL_BACKOFF_US: i64 = -32;
/// Delayed-ACK filter: trust up to this many (`delack < 5`).
const MAX_DELACK: u32 = 5;
/// HyStart: ACKs closer than this are a train (3 ms), thresholds at least 125 us, delay
/// exceeds the minimum by 1/8 after 8 samples.
const HYSTART_TRAIN_GAP_US: u64 = 3000;
const HYSTART_MIN_US: i64 = 125;
const HYSTART_DELAY_SAMPLES: u32 = 8;
/// Tolerance's rounding of gradients (`DIV_ROUND_CLOSEST(g, 64)`).
const TOLERANCE_ROUNDING: i64 = 64;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CdgConfig {
    /// Rounds in the moving gradient window, a power of two up to 256 (Linux module parameter
    /// `window` = 8).
    pub window: u32,
    /// Window kept on a delay backoff (Linux `backoff_beta` = 0.7071 x 1024 / 1024).
    pub backoff_beta: f64,
    /// Scale of the backoff probability, per microsecond of gradient, x 10^-6 (Linux
    /// `backoff_factor` = 42; the paper's G = 1000 / (factor x window)).
    pub backoff_factor: u32,
    /// HyStart: 0 off, 1 ACK trains, 2 delay, 3 both (Linux `hystart_detect` = 3).
    pub hystart_detect: u32,
    /// Backoffs in a row without effect before delay backoff pauses; 0 never pauses (Linux
    /// `use_ineff` = 5).
    pub use_ineff: u32,
    /// A loss keeps half the shadow window (Linux `use_shadow` = true).
    pub use_shadow: bool,
    /// A loss while the queue is not full keeps the window (Linux `use_tolerance` = false).
    pub use_tolerance: bool,
}

impl CdgConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=256).contains(&self.window) || !self.window.is_power_of_two() {
            return Err(format!("window: {} is not allowed: a power of two from 1 to 256", self.window));
        }
        if !(self.backoff_beta > 0.0 && self.backoff_beta <= 1.0) {
            return Err(format!("backoff_beta: {} is not allowed: must be in (0, 1]", self.backoff_beta));
        }
        if self.hystart_detect > 3 {
            return Err(format!("hystart_detect: {} is not allowed: 0, 1, 2 or 3", self.hystart_detect));
        }
        Ok(())
    }
}

/// What the gradients say of the queue (`enum cdg_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CdgState {
    Unknown,
    Nonfull,
    Full,
    Backoff,
}

/// A round's smallest and largest RTT, microseconds; 0 is "none" (`struct cdg_minmax`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MinMax {
    min: i64,
    max: i64,
}

impl MinMax {
    fn is_empty(&self) -> bool {
        self.min == 0 && self.max == 0
    }
}

/// The smaller of two values of which 0 means "none" (Linux `min_not_zero`).
fn min_not_zero(a: i64, b: i64) -> i64 {
    match (a, b) {
        (0, b) => b,
        (a, 0) => a,
        (a, b) => a.min(b),
    }
}

pub struct Cdg {
    cfg: CdgConfig,
    rng: Rng,
    rtt: MinMax,
    rtt_prev: MinMax,
    /// The last `window` rounds' gradients (allocated once) and their sum.
    gradients: Vec<MinMax>,
    gsum: MinMax,
    gfilled: bool,
    tail: usize,
    state: CdgState,
    delack: u32,
    rtt_seq: u64,
    shadow_wnd: u32,
    backoff_cnt: u32,
    sample_cnt: u32,
    delay_min_us: i64,
    last_ack_us: u64,
    round_start_us: u64,
}

impl Cdg {
    pub fn new(cfg: CdgConfig) -> Self {
        Cdg {
            gradients: vec![MinMax::default(); cfg.window as usize],
            cfg,
            rng: Rng::new(0),
            rtt: MinMax::default(),
            rtt_prev: MinMax::default(),
            gsum: MinMax::default(),
            gfilled: false,
            tail: 0,
            state: CdgState::Unknown,
            delack: 0,
            rtt_seq: 0,
            shadow_wnd: 0,
            backoff_cnt: 0,
            sample_cnt: 0,
            delay_min_us: 0,
            last_ack_us: 0,
            round_start_us: 0,
        }
    }

    pub fn state(&self) -> CdgState {
        self.state
    }

    pub fn shadow_window(&self) -> u32 {
        self.shadow_wnd
    }

    /// The probability of a backoff at gradient `grad_us` (summed over the window):
    /// 1 - e^(-grad x factor / 10^6).
    pub fn backoff_probability(&self, grad_us: i64) -> f64 {
        1.0 - (-(grad_us as f64) * self.cfg.backoff_factor as f64 * 1e-6).exp()
    }

    /// `tcp_cdg_hystart_update`.
    fn hystart_update(&mut self, s: &mut CcState) {
        self.delay_min_us = min_not_zero(self.delay_min_us, self.rtt.min);
        if self.delay_min_us == 0 {
            return;
        }
        if self.cfg.hystart_detect & 1 != 0 {
            let now_us = s.now / PS_PER_US;
            if self.last_ack_us == 0 || !s.cwnd_limited {
                self.last_ack_us = now_us;
                self.round_start_us = now_us;
            } else if now_us < self.last_ack_us + HYSTART_TRAIN_GAP_US {
                let base_owd = (self.delay_min_us / 2).max(HYSTART_MIN_US) as u64;
                self.last_ack_us = now_us;
                if now_us > self.round_start_us + base_owd {
                    s.ssthresh = s.cwnd;
                    return;
                }
            }
        }
        if self.cfg.hystart_detect & 2 != 0 {
            if self.sample_cnt < HYSTART_DELAY_SAMPLES {
                self.sample_cnt += 1;
            } else {
                let thresh = (self.delay_min_us + self.delay_min_us / 8).max(HYSTART_MIN_US);
                if self.rtt.min > thresh {
                    s.ssthresh = s.cwnd;
                }
            }
        }
    }

    /// `tcp_cdg_grad`: the window's summed gradient, extrapolated while it fills.
    fn gradient(&mut self) -> i64 {
        let g = MinMax { min: self.rtt.min - self.rtt_prev.min, max: self.rtt.max - self.rtt_prev.max };
        let old = self.gradients[self.tail];
        self.gsum.min += g.min - old.min;
        self.gsum.max += g.max - old.max;
        self.gradients[self.tail] = g;
        self.tail = (self.tail + 1) & (self.cfg.window as usize - 1);
        let (gmin, gmax) = (self.gsum.min, self.gsum.max);
        let mut grad = if gmin > 0 { gmin } else { gmax };
        if !self.gfilled {
            if self.tail == 0 {
                self.gfilled = true;
            } else {
                grad = grad * self.cfg.window as i64 / self.tail as i64;
            }
        }
        if gmin <= EFFECTUAL_BACKOFF_US || gmax <= EFFECTUAL_BACKOFF_US {
            self.backoff_cnt = 0;
        }
        if self.cfg.use_tolerance {
            let round = |g: i64| (g + g.signum() * TOLERANCE_ROUNDING / 2) / TOLERANCE_ROUNDING;
            let (gmin, gmax) = (round(gmin), round(gmax));
            if gmin > 0 && gmax <= 0 {
                self.state = CdgState::Full;
            } else if (gmin > 0 && gmax > 0) || gmax < 0 {
                self.state = CdgState::Nonfull;
            }
        }
        grad
    }

    /// `tcp_cdg_backoff`: a random draw against e^(-grad x factor); a backoff asks the stack
    /// for a window reduction (CWR).
    fn backoff(&mut self, s: &mut CcState, grad: i64) -> bool {
        let keep = (-(grad as f64) * self.cfg.backoff_factor as f64 * 1e-6).exp();
        if self.rng.uniform() < keep {
            return false;
        }
        if self.cfg.use_ineff > 0 {
            self.backoff_cnt += 1;
            if self.backoff_cnt > self.cfg.use_ineff {
                return false;
            }
        }
        self.shadow_wnd = self.shadow_wnd.max(s.cwnd);
        self.state = CdgState::Backoff;
        s.request_cwr = true;
        true
    }
}

impl CongestionControl for Cdg {
    fn name(&self) -> &'static str {
        "cdg"
    }

    fn uses_rng(&self) -> bool {
        true
    }

    fn seed_rng(&mut self, rng: Rng) {
        self.rng = rng;
    }

    fn init(&mut self, s: &mut CcState) {
        self.rtt_seq = s.snd_nxt;
        self.shadow_wnd = s.cwnd;
    }

    fn pkts_acked(&mut self, _s: &mut CcState, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        let rtt_us = (rtt / PS_PER_US) as i64;
        if rtt_us <= 0 {
            return;
        }
        // Hayes's delayed-ACK filter: after ACKs of several segments, a lone one is likely
        // delayed and may only lower the minimum.
        if ack.delivered_segments <= ack.acked_segments {
            if ack.acked_segments == 1 && self.delack > 0 {
                self.rtt.min = if self.rtt.min == 0 { 0 } else { self.rtt.min.min(rtt_us) };
                self.delack -= 1;
                return;
            } else if ack.acked_segments > 1 && self.delack < MAX_DELACK {
                self.delack += 1;
            }
        }
        self.rtt.min = min_not_zero(self.rtt.min, rtt_us);
        self.rtt.max = self.rtt.max.max(rtt_us);
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if s.in_slow_start() && self.cfg.hystart_detect != 0 {
            self.hystart_update(s);
        }
        if s.snd_una > self.rtt_seq && !self.rtt.is_empty() {
            let grad = if self.rtt_prev.is_empty() { 0 } else { self.gradient() };
            self.rtt_seq = s.snd_nxt;
            self.rtt_prev = self.rtt;
            self.rtt = MinMax::default();
            self.last_ack_us = 0;
            self.sample_cnt = 0;
            if grad > 0 && self.backoff(s, grad) {
                return;
            }
        }
        if !s.cwnd_limited {
            self.shadow_wnd = self.shadow_wnd.min(s.cwnd);
            return;
        }
        let prior = s.cwnd;
        reno_cong_avoid(s, ack.delivered_segments);
        self.shadow_wnd = self.shadow_wnd.saturating_add(s.cwnd.saturating_sub(prior));
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        if self.state == CdgState::Backoff {
            return ((s.cwnd as f64 * self.cfg.backoff_beta) as u32).max(2);
        }
        if self.state == CdgState::Nonfull && self.cfg.use_tolerance {
            return s.cwnd;
        }
        self.shadow_wnd = (self.shadow_wnd >> 1).min(s.cwnd);
        if self.cfg.use_shadow {
            return self.shadow_wnd.max(s.cwnd >> 1).max(2);
        }
        (s.cwnd >> 1).max(2)
    }

    /// The RFC stack raises no `CompleteCwr` when a reduction ends: leaving CWR for Open does
    /// what it would (on the Linux stack the event came first and this finds nothing to do).
    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Open && self.state == CdgState::Backoff {
            self.cwnd_event(s, CwndEvent::CompleteCwr);
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        match ev {
            CwndEvent::CwndRestart => {
                let mut fresh = Cdg::new(self.cfg.clone());
                fresh.rng = self.rng.clone();
                *self = fresh;
                self.rtt_seq = s.snd_nxt;
                self.shadow_wnd = s.cwnd;
            }
            CwndEvent::CompleteCwr => {
                self.state = CdgState::Unknown;
                self.rtt_seq = s.snd_nxt;
                self.rtt_prev = self.rtt;
                self.rtt = MinMax::default();
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{self, state};
    use crate::time::{Time, PS_PER_MS};

    const MSS: u32 = 1448;
    const BASE: Time = 50 * PS_PER_MS;

    /// The scenario's defaults (Linux's module parameters), without HyStart.
    fn config() -> CdgConfig {
        CdgConfig { hystart_detect: 0, ..crate::cc::scenario_defaults("cdg") }
    }

    fn cdg(seed: u64) -> Cdg {
        let mut c = Cdg::new(config());
        c.seed_rng(Rng::new(seed));
        c
    }

    fn ack(rtt: Time) -> AckSample {
        AckSample { rtt: Some(rtt), ..AckSample::of_segments(1, MSS) }
    }

    /// One round of ACKs with RTT `rtt`, the last passing the round's end. Returns whether
    /// CDG asked for a reduction.
    fn round(c: &mut Cdg, s: &mut CcState, rtt: Time) -> bool {
        let mut backed_off = false;
        testing::round(s, c.rtt_seq, |s| {
            c.pkts_acked(s, &ack(rtt));
            c.cong_avoid(s, &ack(rtt));
            if std::mem::take(&mut s.request_cwr) {
                backed_off = true;
                // The stack's reduction (its end, a round later, is not modelled here).
                s.ssthresh = c.ssthresh(s);
                s.cwnd = s.ssthresh;
            }
        });
        backed_off
    }

    #[test]
    fn the_backoff_probability_follows_the_gradient() {
        let c = cdg(1);
        assert_eq!(c.backoff_probability(0), 0.0);
        // The paper's G: with factor 42 a summed gradient of 1000 / 42 us gives 1 - 1/e.
        assert!((c.backoff_probability(1_000_000 / 42) - (1.0 - (-1.0f64).exp())).abs() < 1e-3);
        assert!(c.backoff_probability(100) < c.backoff_probability(1000));
    }

    /// Rounds whose RTT rises by `step_us` each: the summed gradient is window x step, so
    /// each round backs off with probability 1 - e^(-8 x step x 42e-6). Over many rounds the
    /// share of rounds that back off must match it.
    fn backoff_share(step_us: u64, seed: u64) -> f64 {
        let mut c = cdg(seed);
        let mut c_cfg = config();
        c_cfg.use_ineff = 0; // count every draw
        c.cfg = c_cfg;
        let mut s = state(100, 50);
        c.init(&mut s);
        let rounds = 4000;
        let mut backoffs = 0;
        let mut rtt = BASE;
        for _ in 0..rounds {
            s.cwnd = 100;
            rtt += step_us * PS_PER_US;
            if round(&mut c, &mut s, rtt) {
                backoffs += 1;
            }
        }
        backoffs as f64 / rounds as f64
    }

    #[test]
    fn backoffs_come_with_the_probability_the_gradient_gives() {
        for step_us in [100u64, 500, 2000] {
            let p = 1.0 - (-(8.0 * step_us as f64) * 42e-6).exp();
            let share = backoff_share(step_us, 7);
            // 4000 draws: the binomial's standard deviation is at most 0.008.
            assert!((share - p).abs() < 0.03, "step {step_us} us: share {share:.3}, p {p:.3}");
        }
        // The same seed draws the same, another seed otherwise.
        assert_eq!(backoff_share(500, 7), backoff_share(500, 7));
        assert_ne!(backoff_share(500, 7), backoff_share(500, 8));
    }

    #[test]
    fn no_backoff_without_a_rising_gradient_and_the_backoff_keeps_beta() {
        let mut c = cdg(3);
        let mut s = state(100, 50);
        c.init(&mut s);
        for _ in 0..50 {
            assert!(!round(&mut c, &mut s, BASE), "flat RTT: no backoff");
        }
        // A steep rise backs off almost surely, to backoff_beta (0.7071) of the window.
        let w = s.cwnd;
        let mut rtt = BASE;
        let mut backed = false;
        for _ in 0..5 {
            rtt += 20 * PS_PER_MS;
            s.cwnd = w;
            if round(&mut c, &mut s, rtt) {
                backed = true;
                break;
            }
        }
        assert!(backed);
        assert_eq!(s.cwnd, ((w as f64) * c.cfg.backoff_beta) as u32);
    }

    #[test]
    fn a_loss_keeps_half_the_shadow_window() {
        let mut c = cdg(3);
        let mut s = state(100, 50);
        c.init(&mut s);
        c.shadow_wnd = 160;
        assert_eq!(c.ssthresh(&s), 80, "max(shadow / 2, cwnd / 2)");
        c.shadow_wnd = 60;
        assert_eq!(c.ssthresh(&s), 50);
    }

    #[test]
    fn ineffectual_backoffs_stop_after_use_ineff() {
        let mut c = cdg(5);
        let mut s = state(100, 50);
        c.init(&mut s);
        let mut rtt = BASE;
        let mut backoffs = 0;
        for _ in 0..200 {
            // The queue keeps growing whatever CDG does (a loss-based competitor).
            rtt += 10 * PS_PER_MS;
            s.cwnd = 100;
            if round(&mut c, &mut s, rtt) {
                backoffs += 1;
            }
        }
        assert_eq!(backoffs, 5, "use_ineff = 5 backoffs, then none while the RTT never falls");
    }
}
