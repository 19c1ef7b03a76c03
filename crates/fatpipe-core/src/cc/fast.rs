//! FAST TCP: delay-based window control for large windows (Jin, Wei and Low, "FAST TCP:
//! Motivation, Architecture, Algorithms, Performance", IEEE Infocom 2004), with the details
//! document 004 reports of the Caltech Linux prototype it tested.
//!
//! 1. Estimation: baseRTT is the minimum RTT measured (the core's `min_rtt`); RTT is the
//!    average RTT, here the mean of the samples taken since the last update (ns-2's FAST
//!    module keeps an exponential average instead).
//! 2. Window control, once per update period:
//!    `w <- min{ 2w, (1 - gamma) w + gamma (baseRTT / RTT x w + alpha) }`.
//!    At its fixed point w (RTT - baseRTT) / RTT = alpha: the flow keeps alpha of its packets
//!    queued, whatever the path's capacity; far below it the window doubles, and gamma in
//!    (0, 1] sets how much of the way to the target one update goes. The period is one RTT
//!    by default (`update_interval_ps` = 0); the prototype updated on its own schedule, which
//!    the ns-2 FAST module (Cui and Andrew, Melbourne, 2005-07) models as "every other RTT,
//!    as in Linux", at least 10 ms apart; `update_interval_ps` sets a fixed period instead.
//! 3. beta: document 004 (section 5.2) defines alpha as "the number of packets to be
//!    buffered inside the network at equilibrium" and beta as "the maximum number of packets
//!    buffered before a FAST TCP flow needs to reduce its window". The ns-2 FAST module gives
//!    beta that meaning: the window is updated only while the flow's queued packets,
//!    w (RTT - baseRTT) / RTT, lie outside [alpha, beta); inside that band it is left alone.
//!    Document 004's pairs 200/212 and 500/512 thus leave a 12-packet dead band around the
//!    equilibrium; beta = alpha (ns-2's default) updates every period.
//! 4. Increases take effect at most one segment per acknowledged segment through the next
//!    period (slow-start pace, which the 2w bound allows), so a large step does not leave as
//!    one burst; decreases take effect at once. This stands in for the prototype's
//!    burstiness control (document 004 section 2.4); ns-2 spreads increments evenly over the
//!    period's ACKs.
//! 5. Cautious slow start: FAST begins with standard slow start (and Limited Slow Start when
//!    the core sets it) and leaves it at the first period end at which its estimated queued
//!    packets exceed `slow_start_exit_packets`; window control then takes over, growing by at
//!    most gamma x alpha per period. Document 004 says the prototype's parameter it calls
//!    gamma "is used to monitor the packets buffered during slow start in order to avoid
//!    packet loss" (FAST there needed 15 s to exceed 900 Mb/s at 120 ms); that is this
//!    threshold. Our `gamma` is the step weight of item 2, as in the Infocom paper and ns-2.
//! 6. Loss: "When a packet loss is detected, FAST halves its window and enters loss
//!    recovery" (document 004 section 2.4, on the prototype; ns-2's FAST does the same):
//!    ssthresh = cwnd / 2; recovery itself is the core's. After a timeout the window slow
//!    starts from one segment up to that ssthresh (or until queueing shows), then FAST resumes.
//!
//! Window control keeps ssthresh at or below cwnd, because the core takes cwnd < ssthresh for
//! slow start. The window grows only while it limits sending (Linux `tcp_is_cwnd_limited`);
//! otherwise an empty queue would raise it without bound.

use super::round::RoundTracker;
use super::{slow_start, AckSample, CaState, CcState, CongestionControl};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Smallest window FAST's update may set, segments (ns-2 FAST: `if (target_cwnd<2) target_cwnd=2`).
pub const FAST_MIN_CWND_SEGMENTS: u32 = 2;

/// The window may at most double per update (the paper's min{2w, ...}).
pub const MAX_GROWTH_PER_UPDATE: f64 = 2.0;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FastConfig {
    /// The flow's packets queued in the network at equilibrium. Packets; default 200
    /// (document 004: the prototype's default alpha/beta 200/212; it also ran 500/512).
    pub alpha: f64,
    /// Upper edge of the band [alpha, beta) of queued packets in which the window is left
    /// unchanged. Packets, at least alpha; default 212 (document 004, with alpha 200).
    pub beta: f64,
    /// Weight of one update's step towards the target window, in (0, 1]. Default 0.5 (ns-2's
    /// FAST module, `gamma_`; the Infocom 2004 paper leaves it in (0, 1]).
    pub gamma: f64,
    /// Time between window updates, picoseconds; 0 updates once per RTT (default, as the
    /// Infocom 2004 paper describes the control). The ns-2 FAST module updates at most every
    /// 10 ms and, by default, every other RTT.
    pub update_interval_ps: Time,
    /// Slow start ends at the first update at which more of the flow's packets than this are
    /// queued. Packets; default 1, the threshold Vegas uses for the same test (Brakmo and
    /// Peterson 1995): document 004 describes the prototype's slow-start parameter in these
    /// terms but gives no value.
    pub slow_start_exit_packets: f64,
}

impl FastConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.alpha.is_finite() && self.alpha > 0.0) {
            return Err(format!("alpha: {} is not allowed: must be a positive number of packets", self.alpha));
        }
        if !(self.beta.is_finite() && self.beta >= self.alpha) {
            return Err(format!("beta: {} is not allowed: must be at least alpha ({})", self.beta, self.alpha));
        }
        if !(self.gamma > 0.0 && self.gamma <= 1.0) {
            return Err(format!("gamma: {} is not allowed: must be in (0, 1]", self.gamma));
        }
        if !(self.slow_start_exit_packets.is_finite() && self.slow_start_exit_packets >= 0.0) {
            return Err(format!(
                "slow_start_exit_packets: {} is not allowed: must be a number of packets >= 0",
                self.slow_start_exit_packets
            ));
        }
        Ok(())
    }
}

pub struct Fast {
    cfg: FastConfig,
    /// Once-per-RTT periods (when `update_interval_ps` is 0).
    round: RoundTracker,
    /// Start of the current timed period (when `update_interval_ps` > 0).
    period_start_ps: Option<Time>,
    /// Sum and number of the RTT samples of the current period, picoseconds.
    rtt_sum_ps: u128,
    rtt_samples: u64,
    /// The window the last update asked for, reached one segment per acknowledged segment.
    target_cwnd: Option<u32>,
    /// Update periods completed.
    periods: u64,
}

impl Fast {
    pub fn new(cfg: FastConfig) -> Self {
        Fast {
            cfg,
            round: RoundTracker::default(),
            period_start_ps: None,
            rtt_sum_ps: 0,
            rtt_samples: 0,
            target_cwnd: None,
            periods: 0,
        }
    }

    /// Whether this ACK ends an update period.
    fn period_ends(&mut self, s: &CcState, ack: &AckSample) -> bool {
        if self.cfg.update_interval_ps == 0 {
            return self.round.on_ack(s, ack.acked_bytes);
        }
        let start = *self.period_start_ps.get_or_insert(s.now);
        if s.now - start >= self.cfg.update_interval_ps {
            self.period_start_ps = Some(s.now);
            return true;
        }
        false
    }

    fn take_average_rtt(&mut self) -> Option<Time> {
        let n = std::mem::take(&mut self.rtt_samples);
        let sum = std::mem::take(&mut self.rtt_sum_ps);
        (n > 0).then(|| (sum / n as u128) as Time)
    }

    /// The window control of one period end.
    fn update(&mut self, s: &mut CcState) {
        self.periods += 1;
        let (Some(rtt), Some(base_rtt)) = (self.take_average_rtt(), s.min_rtt) else { return };
        let w = s.cwnd as f64;
        let queued = w * rtt.saturating_sub(base_rtt) as f64 / rtt as f64;
        if s.in_slow_start() && queued <= self.cfg.slow_start_exit_packets {
            return; // no queue to speak of yet: keep doubling
        }
        let in_band = queued >= self.cfg.alpha && queued < self.cfg.beta;
        let new_w = if in_band {
            w
        } else {
            let g = self.cfg.gamma;
            let target = (1.0 - g) * w + g * (base_rtt as f64 / rtt as f64 * w + self.cfg.alpha);
            target.min(MAX_GROWTH_PER_UPDATE * w)
        };
        let new_cwnd = (new_w.round().min(u32::MAX as f64) as u32).max(FAST_MIN_CWND_SEGMENTS);
        if new_cwnd < s.cwnd {
            s.cwnd = new_cwnd;
            self.target_cwnd = None;
        } else {
            self.target_cwnd = Some(new_cwnd);
        }
        // Window control rules from here on: out of slow start, even as the window falls.
        s.ssthresh = s.ssthresh.min(s.cwnd);
    }

    fn restart_period(&mut self) {
        self.round.restart();
        self.period_start_ps = None;
        self.take_average_rtt();
        self.target_cwnd = None;
    }
}

impl CongestionControl for Fast {
    fn name(&self) -> &'static str {
        "fast"
    }

    /// Halve (document 004 section 2.4), at least 2 segments.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd / 2).max(FAST_MIN_CWND_SEGMENTS)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if let Some(rtt) = ack.rtt {
            self.rtt_sum_ps += rtt as u128;
            self.rtt_samples += 1;
        }
        if self.period_ends(s, ack) {
            self.update(s);
            // An update that leaves slow start on still lets this ACK grow the window, as
            // Linux's tcp_vegas_cong_avoid slow-starts on its once-per-RTT ACK: with one or
            // two segments in flight (after a timeout) every ACK ends a period, and the
            // window would otherwise never grow.
            if !s.in_slow_start() {
                return;
            }
        }
        if !s.cwnd_limited {
            return;
        }
        if s.in_slow_start() {
            slow_start(s, ack.delivered_segments);
        } else if let Some(target) = self.target_cwnd {
            s.cwnd = target.min(s.cwnd.saturating_add(ack.delivered_segments)).max(s.cwnd);
        }
    }

    fn set_state(&mut self, _s: &mut CcState, _new: CaState) {
        // Samples and targets from before a loss say nothing about the window after it.
        self.restart_period();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::PS_PER_MS;

    const MSS: u32 = 1000;
    const BASE_RTT: Time = 100 * PS_PER_MS;

    fn config() -> FastConfig {
        FastConfig { alpha: 200.0, beta: 212.0, gamma: 0.5, update_interval_ps: 0, slow_start_exit_packets: 1.0 }
    }

    fn state(cwnd: u32, ssthresh: u32) -> CcState {
        CcState { srtt: Some(BASE_RTT), min_rtt: Some(BASE_RTT), ..CcState::new(cwnd, ssthresh, MSS) }
    }

    fn ack(rtt: Time) -> AckSample {
        AckSample {
            acked_segments: 1,
            delivered_segments: 1,
            acked_bytes: MSS as u64,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    /// One-segment ACKs with a full window in flight and the same RTT, one per `gap`, until
    /// an update period ends (the first call also opens the first period).
    fn period(f: &mut Fast, s: &mut CcState, rtt: Time, gap: Time) {
        let periods = f.periods;
        while f.periods == periods {
            s.in_flight_segments = s.cwnd;
            s.now += gap;
            f.cong_avoid(s, &ack(rtt));
        }
    }

    /// RTT at which `queued` of the flow's packets are queued with window `cwnd`.
    fn rtt_for_queue(cwnd: u32, queued: f64) -> Time {
        (BASE_RTT as f64 * cwnd as f64 / (cwnd as f64 - queued)) as Time
    }

    #[test]
    fn an_empty_queue_raises_the_window_by_gamma_alpha_spread_over_the_next_period() {
        let mut f = Fast::new(config());
        let mut s = state(1000, 500);
        period(&mut f, &mut s, BASE_RTT, PS_PER_MS);
        // (1 - 0.5) 1000 + 0.5 (1000 + 200) = 1100, reached one segment per ACK.
        assert_eq!(f.target_cwnd, Some(1100));
        assert_eq!(s.cwnd, 1000);
        for i in 1..=100 {
            s.in_flight_segments = s.cwnd;
            f.cong_avoid(&mut s, &ack(BASE_RTT));
            assert_eq!(s.cwnd, 1000 + i);
        }
        f.cong_avoid(&mut s, &ack(BASE_RTT));
        assert_eq!(s.cwnd, 1100, "and no further");
    }

    #[test]
    fn far_below_equilibrium_the_window_at_most_doubles() {
        let mut f = Fast::new(config());
        let mut s = state(50, 20);
        period(&mut f, &mut s, BASE_RTT, PS_PER_MS);
        // 0.5 x 50 + 0.5 (50 + 200) = 150 > 2 x 50.
        assert_eq!(f.target_cwnd, Some(100));
    }

    #[test]
    fn too_many_queued_packets_lower_the_window_at_once() {
        let mut f = Fast::new(config());
        let mut s = state(1000, 500);
        // 400 queued: RTT = 1000/600 baseRTT; new w = 500 + 0.5 (600 + 200) = 900.
        let rtt = rtt_for_queue(1000, 400.0);
        period(&mut f, &mut s, rtt, PS_PER_MS);
        assert!((899..=901).contains(&s.cwnd), "{}", s.cwnd);
        assert!(!s.in_slow_start());
    }

    #[test]
    fn between_alpha_and_beta_the_window_is_left_alone() {
        let mut f = Fast::new(config());
        let mut s = state(1000, 500);
        let rtt = rtt_for_queue(1000, 205.0);
        for _ in 0..4 {
            period(&mut f, &mut s, rtt, PS_PER_MS);
        }
        assert_eq!(s.cwnd, 1000);
        // With beta = alpha there is no band: the same queue pulls the window down to alpha.
        let mut f = Fast::new(FastConfig { beta: 200.0, ..config() });
        let mut s = state(1000, 500);
        period(&mut f, &mut s, rtt, PS_PER_MS);
        assert!(s.cwnd < 1000);
    }

    #[test]
    fn converges_to_alpha_queued_packets() {
        // A fluid path: capacity 10 packets/ms, baseRTT 100 ms, so RTT = max(w / 10 ms,
        // baseRTT) once the pipe of 1000 packets is full.
        let mut f = Fast::new(FastConfig { beta: 200.0, ..config() });
        let mut s = state(1000, 500);
        for _ in 0..60 {
            let rtt = (s.cwnd as u64 * PS_PER_MS / 10).max(BASE_RTT);
            period(&mut f, &mut s, rtt, PS_PER_MS / 10);
        }
        let queued = s.cwnd as f64 - 1000.0;
        assert!((queued - 200.0).abs() <= 2.0, "cwnd {} queues {queued}", s.cwnd);
    }

    #[test]
    fn after_a_timeout_slow_start_grows_even_when_every_ack_ends_a_period() {
        // cwnd 2 after a timeout, nothing else in flight: each delayed ACK covers the whole
        // window and so ends an update period. The window must still double per round trip
        // (it stayed at 2 for the rest of document 004's outage run).
        let mut f = Fast::new(config());
        let mut s = state(2, 500);
        for _ in 0..6 {
            s.in_flight_segments = 0;
            s.cwnd_limited = true;
            s.now += BASE_RTT;
            let two =
                AckSample { acked_segments: 2, delivered_segments: 2, acked_bytes: 2 * MSS as u64, ..ack(BASE_RTT) };
            f.cong_avoid(&mut s, &two);
        }
        assert!(s.in_slow_start());
        assert_eq!(s.cwnd, 2 + 6 * 2, "each 2-segment ACK adds 2 in slow start");
    }

    #[test]
    fn slow_start_lasts_until_packets_queue() {
        let mut f = Fast::new(config());
        let mut s = state(10, INFINITE_SSTHRESH);
        period(&mut f, &mut s, BASE_RTT, PS_PER_MS);
        period(&mut f, &mut s, BASE_RTT, PS_PER_MS);
        assert!(s.in_slow_start(), "no queue: still doubling at {}", s.cwnd);
        assert!(s.cwnd > 30);
        let w = s.cwnd;
        let rtt = rtt_for_queue(w, 2.0);
        period(&mut f, &mut s, rtt, PS_PER_MS);
        assert!(!s.in_slow_start(), "2 queued > 1: window control from now on");
        assert!(s.ssthresh <= s.cwnd);
        // A larger threshold lets the same queue pass.
        let mut f = Fast::new(FastConfig { slow_start_exit_packets: 5.0, ..config() });
        let mut s = state(10, INFINITE_SSTHRESH);
        period(&mut f, &mut s, BASE_RTT, PS_PER_MS);
        let rtt = rtt_for_queue(s.cwnd, 2.0);
        period(&mut f, &mut s, rtt, PS_PER_MS);
        assert!(s.in_slow_start());
    }

    #[test]
    fn a_fixed_update_interval_updates_several_times_per_rtt() {
        let interval = 20 * PS_PER_MS;
        let mut f = Fast::new(FastConfig { update_interval_ps: interval, ..config() });
        let mut s = state(1000, 500);
        // One ACK per 0.1 ms for 100 ms: the first opens a period, which then ends every 20 ms.
        for _ in 0..1000 {
            s.now += PS_PER_MS / 10;
            s.in_flight_segments = s.cwnd;
            f.cong_avoid(&mut s, &ack(BASE_RTT));
        }
        assert_eq!(f.periods, 4, "the first ACK opens the first period");
    }

    #[test]
    fn a_loss_halves() {
        let mut f = Fast::new(config());
        assert_eq!(f.ssthresh(&state(1000, 500)), 500);
        assert_eq!(f.ssthresh(&state(3, 500)), 2);
        let mut s = state(1000, 500);
        period(&mut f, &mut s, BASE_RTT, PS_PER_MS);
        assert!(f.target_cwnd.is_some());
        f.set_state(&mut s, CaState::Recovery);
        assert_eq!(f.target_cwnd, None, "no growth carried across a loss");
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(config().validate().is_ok());
        let e = FastConfig { beta: 100.0, ..config() }.validate().unwrap_err();
        assert!(e.starts_with("beta: 100 is not allowed"), "{e}");
        let e = FastConfig { gamma: 0.0, ..config() }.validate().unwrap_err();
        assert!(e.starts_with("gamma: 0 is not allowed"), "{e}");
        let spec: crate::cc::CcSpec = serde_json::from_str(
            r#"{"algorithm": "fast", "alpha": 200, "beta": 212, "gamma": 0.5, "update_interval_ps": 0, "slow_start_exit_packets": 1}"#,
        )
        .unwrap();
        assert_eq!(spec.build().name(), "fast");
    }
}
