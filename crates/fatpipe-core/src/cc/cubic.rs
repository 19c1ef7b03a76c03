//! CUBIC (RFC 9438): the window is a cubic function of the time since the last congestion
//! event, with its plateau at the window where that event happened.
//!
//! Two forms (`CubicConfig::variant`): `"rfc"`, this file, RFC 9438's formulas in floating
//! point; `"linux"`, `cubic/linux.rs`, Linux 6.x `tcp_cubic.c`'s fixed-point arithmetic,
//! target from the minimum RTT, Reno emulation and epoch handling. Either can leave its first
//! slow start early with HyStart or HyStart++ (`CubicConfig::hystart`, `cubic/hystart.rs`).
//!
//! The `"rfc"` form:
//!
//! Section 4.2: in congestion avoidance, t seconds after the stage began,
//!
//!   W_cubic(t) = C (t - K)^3 + W_max,   K = cbrt((W_max - cwnd_epoch) / C),
//!
//! where cwnd_epoch is the window when the stage began (after a loss, beta x W_max, so
//! K = cbrt(W_max (1 - beta) / C)). On each ACK the target is W_cubic(t + RTT) with RTT the
//! smoothed RTT, bounded to [cwnd, 1.5 cwnd], and cwnd grows by (target - cwnd) / cwnd per
//! acknowledged segment (segments, as RFC 9438 section 4.1 allows and Linux does): below
//! W_max the window approaches the plateau concavely (section 4.4), above it probes
//! convexly (section 4.5).
//!
//! Section 4.3, the Reno-friendly region: W_est starts at cwnd_epoch and grows by
//! alpha_cubic x segments_acked / cwnd, alpha_cubic = 3 (1 - beta) / (1 + beta), which gives
//! AIMD(alpha_cubic, beta) Reno's average window; once W_est reaches cwnd_prior (the window
//! before the last cut) alpha becomes 1. While W_cubic(t) < W_est, cwnd follows W_est.
//!
//! Section 4.6-4.7: a congestion event sets ssthresh = beta x cwnd (cwnd, not flight size,
//! as Linux and as the RFC allows for senders that grow cwnd only when cwnd-limited, which
//! this core ensures), remembers cwnd_prior, and sets W_max to cwnd, or with fast
//! convergence, after a loss below the previous W_max, to cwnd (1 + beta) / 2.
//! Section 4.8: after a timeout the next stage starts with K = 0 and W_max = cwnd_epoch.
//! A stage (epoch) starts at the first ACK of congestion avoidance after a loss. Section
//! 5.8: t must not include the periods the flow was application-limited, so when it sends
//! after nothing was in flight (`CwndEvent::TxStart`) the stage's start moves forward by the
//! time since its last send, and the curve and W_est go on from where they were (as Linux
//! `bictcp_cwnd_event` does, commit 30927520dbae, which rejected restarting the stage: it
//! would grow steeply again from the current window). Restarting it was wrong in a second
//! way: a window of 2 segments with delayed ACKs drains every round trip without any idle
//! time, and a stage restarted each round left W_est's growth (0.53 segment a round at
//! cwnd 2) short of the next segment forever. Slow start is standard (section 4.10), or
//! HyStart/HyStart++ if configured.
//!
//! Arithmetic: W_cubic is computed in f64 with +, -, x, / only, which IEEE 754 rounds
//! exactly the same on every platform (Rust never fuses them into multiply-adds), and the
//! cube root by Newton's iteration on those operations rather than the platform's libm; so
//! a run is reproducible bit for bit anywhere. Linux uses fixed point (2^-10 s, cube root
//! by table and one Newton step); float avoids its rounding of K and t.

pub mod hystart;
pub mod linux;

use super::{cong_avoid_ai, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::time::{to_seconds, Time, PS_PER_US};
use hystart::{HyStartDetect, HyStartMode, SlowStartExit};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The target is at most this multiple of cwnd: growth never beats slow start's rate
/// (RFC 9438 section 4.2, after [SXEZ19]).
const MAX_TARGET_PER_CWND: f64 = 1.5;

/// Which CUBIC (`CubicConfig::variant`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CubicVariant {
    /// RFC 9438's formulas in floating point, target from the smoothed RTT (this file).
    Rfc,
    /// Linux 6.x `tcp_cubic.c` (`cubic/linux.rs`).
    Linux,
}

/// The parameters, every one given by the scenario (its table, scenario/congestion.py,
/// owns the defaults and their sources).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CubicConfig {
    /// Which CUBIC: `rfc` (RFC 9438) or `linux` (Linux 6.x `tcp_cubic.c`).
    pub variant: CubicVariant,
    /// C: aggressiveness of the cubic growth, segments per second cubed (RFC 9438 section 5:
    /// 0.4; Linux `bic_scale` 41 gives 41 x 10 / 1024 = 0.40).
    pub c: f64,
    /// beta_cubic: window kept after a congestion event, as a fraction (RFC 9438 section 4.6:
    /// 0.7; Linux 717/1024).
    pub beta: f64,
    /// Lower W_max when a loss comes below the previous one (RFC 9438 section 4.7: SHOULD be
    /// implemented, on; Linux `fast_convergence` = 1).
    pub fast_convergence: bool,
    /// Follow the Reno-friendly window W_est when it is larger (RFC 9438 section 4.3, on;
    /// Linux `tcp_friendliness` = 1).
    pub tcp_friendliness: bool,
    /// Slow-start exit: off (standard slow start), `linux` (HyStart as Linux runs it,
    /// its module parameter `hystart` = 1) or `rfc9406` (HyStart++).
    pub hystart: HyStartMode,
    /// HyStart's tests: both (Linux `hystart_detect` = 3), ack_train or delay.
    pub hystart_detect: HyStartDetect,
    /// HyStart runs from this window on, segments (Linux `hystart_low_window`: 16).
    pub hystart_low_window: u32,
    /// ACKs closer than this form a train, picoseconds (Linux `hystart_ack_delta_us`: 2 ms).
    pub hystart_ack_delta_ps: Time,
    /// The `linux` form's clock: jiffies per second (Linux `CONFIG_HZ`).
    pub kernel_hz: u32,
}

/// Builds the configured form.
pub fn build(cfg: &CubicConfig) -> Box<dyn CongestionControl> {
    match cfg.variant {
        CubicVariant::Rfc => Box::new(Cubic::new(cfg.clone())),
        CubicVariant::Linux => Box::new(linux::LinuxCubic::new(cfg)),
    }
}

impl CubicConfig {
    /// Checks the parameters; the error names the parameter, its value and the rule.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.c > 0.0 && self.c.is_finite()) {
            return Err(format!("c: {} is not allowed: must be positive", self.c));
        }
        if !(self.beta > 0.0 && self.beta < 1.0) {
            return Err(format!("beta: {} is not allowed: must be in (0, 1)", self.beta));
        }
        if self.variant == CubicVariant::Linux {
            // Linux's fixed point: C = bic_scale x 10 / 1024, beta = beta / 1024.
            if self.bic_scale() == 0 {
                return Err(format!("c: {} is not allowed with variant = \"linux\": Linux's bic_scale = C x 1024 / 10 would round to 0; must be at least 0.005", self.c));
            }
            if !(1..linux::BETA_SCALE).contains(&self.beta_fixed()) {
                return Err(format!(
                    "beta: {} is not allowed with variant = \"linux\": must round to 1..1023 / 1024",
                    self.beta
                ));
            }
        }
        if self.kernel_hz == 0 {
            return Err("kernel_hz: 0 is not allowed: must be at least 1 jiffy per second".into());
        }
        if self.hystart_low_window == 0 {
            return Err("hystart_low_window: 0 is not allowed: must be at least 1 segment".into());
        }
        if self.hystart_ack_delta_ps < PS_PER_US {
            return Err(format!(
                "hystart_ack_delta_ps: {} is not allowed: must be at least 1 microsecond",
                self.hystart_ack_delta_ps
            ));
        }
        Ok(())
    }

    /// beta in Linux's fixed point, x / 1024 (0.7 gives Linux's 717).
    pub fn beta_fixed(&self) -> u32 {
        (self.beta * linux::BETA_SCALE as f64).round() as u32
    }

    /// C in Linux's fixed point, `bic_scale`: C = bic_scale x 10 / 1024 (0.4 gives Linux's 41).
    pub fn bic_scale(&self) -> u32 {
        (self.c * linux::BETA_SCALE as f64 / 10.0).round() as u32
    }

    fn slow_start_exit(&self) -> SlowStartExit {
        SlowStartExit::new(self.hystart, self.hystart_detect, self.hystart_low_window, self.hystart_ack_delta_ps)
    }

    /// alpha_cubic = 3 (1 - beta) / (1 + beta): the Reno-friendly additive increase
    /// (RFC 9438 section 4.3).
    pub fn alpha_cubic(&self) -> f64 {
        3.0 * (1.0 - self.beta) / (1.0 + self.beta)
    }
}

/// One congestion avoidance stage.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    /// t_epoch, picoseconds.
    start: Time,
    /// K, seconds.
    k_s: f64,
    /// The plateau of this stage's curve, segments: W_max, or cwnd_epoch when the stage
    /// starts at or above W_max (K = 0).
    plateau: f64,
    /// W_est, segments.
    w_est: f64,
}

pub struct Cubic {
    cfg: CubicConfig,
    /// W_max, segments; 0 before the first congestion event and after a timeout.
    w_max: f64,
    /// cwnd_prior: cwnd before the last cut, segments (0 before any).
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    exit: SlowStartExit,
}

impl Cubic {
    pub fn new(cfg: CubicConfig) -> Self {
        let exit = cfg.slow_start_exit();
        Cubic { cfg, w_max: 0.0, cwnd_prior: 0.0, epoch: None, exit }
    }

    /// The slow-start exit (HyStart) has fired, or HyStart++ has entered CSS.
    pub fn slow_start_exited(&self) -> bool {
        self.exit.found()
    }

    /// W_max, segments (0 when unknown).
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// K of the current stage, seconds, if one has begun.
    pub fn k_seconds(&self) -> Option<f64> {
        self.epoch.map(|e| e.k_s)
    }

    fn start_epoch(&self, s: &CcState) -> Epoch {
        let cwnd = s.cwnd as f64;
        let (k_s, plateau) =
            if self.w_max > cwnd { (cube_root((self.w_max - cwnd) / self.cfg.c), self.w_max) } else { (0.0, cwnd) };
        Epoch { start: s.now, k_s, plateau, w_est: cwnd }
    }

    /// W_cubic(t) of the stage `e`, t in seconds since its start.
    fn w_cubic(&self, e: &Epoch, t_s: f64) -> f64 {
        let d = t_s - e.k_s;
        self.cfg.c * d * d * d + e.plateau
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, s: &mut CcState) {
        self.exit.init(s);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.exit.on_congestion();
        let cwnd = s.cwnd as f64;
        self.w_max =
            if self.cfg.fast_convergence && cwnd < self.w_max { cwnd * (1.0 + self.cfg.beta) / 2.0 } else { cwnd };
        self.cwnd_prior = cwnd;
        self.epoch = None;
        ((cwnd * self.cfg.beta) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = self.exit.slow_start_first(s, ack.delivered_segments) else {
            return;
        };
        let mut e = match self.epoch {
            Some(e) => e,
            None => self.start_epoch(s),
        };
        let t_s = to_seconds(s.now.saturating_sub(e.start));
        let cwnd = s.cwnd as f64;
        let friendly = if self.cfg.tcp_friendliness {
            let alpha = if e.w_est >= self.cwnd_prior { 1.0 } else { self.cfg.alpha_cubic() };
            e.w_est += alpha * acked as f64 / cwnd;
            self.w_cubic(&e, t_s) < e.w_est
        } else {
            false
        };
        self.epoch = Some(e);
        if friendly {
            // Reno-friendly region: cwnd = W_est (never lowered: W_est only lags cwnd by
            // the rounding of a window that has just left the cubic region).
            s.cwnd = s.cwnd.max(e.w_est as u32);
            return;
        }
        let rtt_s = s.srtt.or(s.min_rtt).map_or(0.0, to_seconds);
        let target = self.w_cubic(&e, t_s + rtt_s).clamp(cwnd, MAX_TARGET_PER_CWND * cwnd);
        if target > cwnd {
            // (target - cwnd) / cwnd per segment = one segment per cwnd / (target - cwnd).
            let per_segment = (cwnd / (target - cwnd)) as u32;
            cong_avoid_ai(s, per_segment.max(1), acked);
        }
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Loss {
            // RFC 9438 section 4.8: after a timeout, K = 0 and W_max = cwnd_epoch.
            self.w_max = 0.0;
            self.epoch = None;
            self.exit.on_timeout(s);
        }
    }

    /// HyStart's delay samples, against the connection's minimum RTT.
    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        if matches!(self.exit, SlowStartExit::Off) {
            return;
        }
        let delay_us = ack.rtt.map(|r| (r / PS_PER_US).max(1));
        let delay_min_us = s.min_rtt.map_or(0, |r| (r / PS_PER_US).max(1));
        self.exit.on_ack(s, ack, delay_us, delay_min_us);
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        if ev != CwndEvent::TxStart {
            return;
        }
        // Section 5.8: idle time is not time on the curve; never past now.
        if let (Some(e), Some(last_send)) = (self.epoch.as_mut(), s.last_send_ps) {
            e.start = (e.start + s.now.saturating_sub(last_send)).min(s.now);
        }
    }
}

/// Cube root of `x` >= 0 by Newton's iteration y <- (2y + x/y^2) / 3 from a power of two
/// above the root, from which the iterates decrease monotonically to it; stops when they
/// stop decreasing. Only correctly rounded IEEE 754 operations: the same bits everywhere.
pub fn cube_root(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 0.0;
    }
    if !x.is_finite() {
        return x;
    }
    const EXPONENT_BIAS: i64 = 1023;
    const MANTISSA_BITS: u32 = 52;
    const EXPONENT_MASK: u64 = 0x7ff;
    // x < 2^e, so cbrt(x) < 2^ceil(e/3).
    let e = ((x.to_bits() >> MANTISSA_BITS) & EXPONENT_MASK) as i64 - EXPONENT_BIAS + 1;
    let e3 = (e + 2).div_euclid(3);
    let mut y = f64::from_bits(((e3 + EXPONENT_BIAS) as u64) << MANTISSA_BITS);
    loop {
        let next = (2.0 * y + x / (y * y)) / 3.0;
        if next >= y {
            return y;
        }
        y = next;
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::cc::testing::ack;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::{PS_PER_MS, PS_PER_S};

    fn state(cwnd: u32, ssthresh: u32, rtt: Time) -> CcState {
        CcState { srtt: Some(rtt), min_rtt: Some(rtt), ..CcState::new(cwnd, ssthresh, 1448) }
    }

    /// An ACK of `segments` with an RTT sample.
    pub(super) fn ack_rtt(segments: u32, rtt: Time) -> AckSample {
        AckSample { rtt: Some(rtt), ..ack(segments) }
    }

    /// A loss as the core handles it, after one RTT sample of the state's min_rtt: ssthresh,
    /// cwnd cut to it, recovery, open again.
    pub(super) fn loss(c: &mut dyn CongestionControl, s: &mut CcState) {
        c.pkts_acked(s, &ack_rtt(1, s.min_rtt.unwrap()));
        let ssthresh = c.ssthresh(s);
        s.ssthresh = ssthresh;
        s.cwnd = ssthresh;
        s.cwnd_cnt = 0;
        c.set_state(s, CaState::Recovery);
        c.set_state(s, CaState::Open);
    }

    /// Drives congestion avoidance for `duration` with one ACK per segment spread evenly over
    /// each RTT, each with that RTT sample; returns (seconds since the start, cwnd) at the
    /// start of every RTT.
    pub(super) fn drive(c: &mut dyn CongestionControl, s: &mut CcState, rtt: Time, duration: Time) -> Vec<(f64, u32)> {
        let start = s.now;
        let mut trace = Vec::new();
        while s.now - start < duration {
            trace.push((to_seconds(s.now - start), s.cwnd));
            let round = s.now;
            let n = s.cwnd as u64;
            for i in 0..n {
                s.now = round + rtt * i / n;
                c.pkts_acked(s, &ack_rtt(1, rtt));
                c.cong_avoid(s, &ack_rtt(1, rtt));
            }
            s.now = round + rtt;
        }
        trace
    }

    pub(super) fn cwnd_at(trace: &[(f64, u32)], t: f64) -> f64 {
        trace.iter().rev().find(|(ts, _)| *ts <= t).unwrap().1 as f64
    }

    #[test]
    fn cube_root_is_exact_enough() {
        for x in [1e-9, 0.001, 1.0, 2.0, 27.0, 750.0, 1e6, 1e15, 3.3e-300] {
            let y = cube_root(x);
            assert!((y * y * y / x - 1.0).abs() < 1e-14, "cbrt({x}) = {y}");
        }
        assert!((cube_root(27.0) - 3.0).abs() <= 4.0 * f64::EPSILON);
        assert_eq!(cube_root(0.0), 0.0);
    }

    #[test]
    fn window_follows_the_cubic_after_a_loss() {
        // Acceptance 8: RTT 100 ms, a loss at W_max = 1000; W_est grows 0.53 segment per RTT,
        // far slower than the curve here, so the cubic region governs.
        let rtt = 100 * PS_PER_MS;
        let mut c = Cubic::new(CubicConfig::default());
        let mut s = state(1000, INFINITE_SSTHRESH, rtt);
        loss(&mut c, &mut s);
        assert_eq!(s.cwnd, 700);
        let trace = drive(&mut c, &mut s, rtt, 20 * PS_PER_S);
        let k = c.k_seconds().unwrap();
        assert!((k - (1000.0f64 * 0.3 / 0.4).cbrt()).abs() < 1e-9, "K = cbrt(W_max (1 - beta) / C) = {k}");
        for t in [0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 9.0, 10.0, 12.0, 14.0, 16.0, 18.0, 19.5] {
            let law = 0.4 * (t - k).powi(3) + 1000.0;
            let cwnd = cwnd_at(&trace, t);
            assert!((cwnd / law - 1.0).abs() < 0.05, "t = {t}: cwnd {cwnd} vs W_cubic {law:.1}");
        }
        // Concave below W_max, plateau near K, convex beyond.
        assert!((cwnd_at(&trace, k) - 1000.0).abs() < 10.0);
        assert!(cwnd_at(&trace, 19.5) > 1400.0);
    }

    #[test]
    fn reno_friendly_region_takes_over_at_small_rtt() {
        // RTT 1 ms: W_est grows 0.53 segment per millisecond, the curve needs K = 9 s.
        let rtt = PS_PER_MS;
        let mut c = Cubic::new(CubicConfig::default());
        let mut s = state(1000, INFINITE_SSTHRESH, rtt);
        loss(&mut c, &mut s);
        let trace = drive(&mut c, &mut s, rtt, PS_PER_S);
        let alpha = CubicConfig::default().alpha_cubic();
        assert!((alpha - 0.9 / 1.7).abs() < 1e-12);
        // 200 RTTs: 700 + 200 alpha; W_cubic(0.2 s) would be about 719.
        let at_200 = cwnd_at(&trace, 0.2);
        assert!((at_200 - (700.0 + 200.0 * alpha)).abs() <= 2.0, "cwnd {at_200} at 0.2 s");
        // W_est reaches cwnd_prior = 1000 after 300 / alpha = 567 RTTs; then Reno's 1 per RTT.
        let rtts_to_prior = 300.0 / alpha;
        let at_1s = cwnd_at(&trace, 1.0 - 1e-9);
        let expected = 1000.0 + (1000.0 - 1.0 - rtts_to_prior);
        assert!((at_1s - expected).abs() <= 3.0, "cwnd {at_1s} at 1 s vs {expected:.1}");

        // Without friendliness the curve alone is far lower.
        let mut c = Cubic::new(CubicConfig { tcp_friendliness: false, ..Default::default() });
        let mut s = state(1000, INFINITE_SSTHRESH, rtt);
        loss(&mut c, &mut s);
        let trace = drive(&mut c, &mut s, rtt, PS_PER_S);
        let law = 0.4 * (0.2 - c.k_seconds().unwrap()).powi(3) + 1000.0;
        let at_200 = cwnd_at(&trace, 0.2);
        assert!((at_200 / law - 1.0).abs() < 0.01, "cwnd {at_200} vs W_cubic {law:.1}");
    }

    #[test]
    fn decrease_and_fast_convergence() {
        let mut c = Cubic::new(CubicConfig::default());
        assert_eq!(c.ssthresh(&state(1000, 10, PS_PER_MS)), 700);
        assert_eq!(c.w_max(), 1000.0);
        // A loss below W_max: W_max = 900 x 1.7 / 2.
        assert_eq!(c.ssthresh(&state(900, 10, PS_PER_MS)), 630);
        assert!((c.w_max() - 765.0).abs() < 1e-9);
        let mut c = Cubic::new(CubicConfig { fast_convergence: false, beta: 0.5, ..Default::default() });
        c.ssthresh(&state(1000, 10, PS_PER_MS));
        assert_eq!(c.ssthresh(&state(900, 10, PS_PER_MS)), 450);
        assert_eq!(c.w_max(), 900.0);
    }

    #[test]
    fn larger_c_reaches_w_max_sooner() {
        let rtt = 100 * PS_PER_MS;
        let mut k = Vec::new();
        for c_param in [0.4, 4.0] {
            let mut c = Cubic::new(CubicConfig { c: c_param, tcp_friendliness: false, ..Default::default() });
            let mut s = state(1000, INFINITE_SSTHRESH, rtt);
            loss(&mut c, &mut s);
            drive(&mut c, &mut s, rtt, rtt);
            k.push(c.k_seconds().unwrap());
        }
        assert!((k[0] / k[1] - 10f64.cbrt()).abs() < 1e-9, "K scales as C^(-1/3): {k:?}");
    }

    #[test]
    fn convex_probing_without_a_previous_loss_and_after_a_timeout() {
        // No W_max: the stage starts at its plateau (K = 0) and probes convexly,
        // W(t) = C t^3 + cwnd_epoch; the Reno-friendly line leads for the first seconds.
        let rtt = 100 * PS_PER_MS;
        let mut c = Cubic::new(CubicConfig::default());
        let mut s = state(500, 400, rtt);
        let trace = drive(&mut c, &mut s, rtt, 10 * PS_PER_S);
        assert_eq!(c.k_seconds(), Some(0.0));
        let law = 0.4 * 9.0f64.powi(3) + 500.0;
        assert!((cwnd_at(&trace, 9.0) / law - 1.0).abs() < 0.05, "{} vs {law}", cwnd_at(&trace, 9.0));
        // A timeout forgets W_max (RFC 9438 section 4.8).
        c.ssthresh(&s);
        c.set_state(&mut s, CaState::Loss);
        assert_eq!(c.w_max(), 0.0);
    }

    #[test]
    fn idle_time_is_not_time_on_the_curve() {
        let rtt = 100 * PS_PER_MS;
        let mut c = Cubic::new(CubicConfig::default());
        let mut s = state(1000, INFINITE_SSTHRESH, rtt);
        loss(&mut c, &mut s);
        drive(&mut c, &mut s, rtt, 2 * PS_PER_S);
        let k = c.k_seconds().unwrap();
        // An idle minute, then a send with nothing in flight.
        s.last_send_ps = Some(s.now);
        s.now += 60 * PS_PER_S;
        c.cwnd_event(&mut s, CwndEvent::TxStart);
        let cwnd = s.cwnd;
        c.cong_avoid(&mut s, &ack(1));
        assert_eq!(c.k_seconds(), Some(k), "the same stage goes on (RFC 9438 5.8; not restarted)");
        assert!(s.cwnd <= cwnd + 1, "no jump after idle");
        // The same with no idle time at all (a window that drained): the stage is untouched,
        // so its W_est keeps what it gained.
        let before = c.epoch.unwrap();
        s.last_send_ps = Some(s.now);
        c.cwnd_event(&mut s, CwndEvent::TxStart);
        let after = c.epoch.unwrap();
        assert_eq!((after.start, after.w_est), (before.start, before.w_est));
    }

    #[test]
    fn validation_names_the_parameter() {
        let bad = CubicConfig { beta: 1.0, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("beta: 1 is not allowed"));
        let bad = CubicConfig { c: -0.4, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("c: -0.4 is not allowed"));
        assert!(CubicConfig::default().validate().is_ok());
    }
}
