//! H-TCP (Leith & Shorten, "H-TCP: TCP for high-speed and long-distance networks",
//! PFLDnet 2004; Linux `tcp_htcp.c`): AIMD whose increase grows with the time since the last
//! congestion event and whose backoff adapts to the path's queueing.
//!
//! Increase. Let Delta be the time since the last congestion event. For Delta <= Delta_L the
//! flow is in low-speed mode and alpha(Delta) = 1, as standard TCP; after that
//!
//!   alpha(Delta) = 1 + 10 (Delta - Delta_L) + ((Delta - Delta_L) / 2)^2,
//!
//! in segments per RTT. So that a flow with backoff beta keeps standard TCP's average rate in
//! low-speed mode, the increase applied is 2 (1 - beta) alpha(Delta) (Leith & Shorten;
//! Linux). cwnd grows by that over cwnd per acknowledged segment.
//!
//! Backoff. On a congestion event cwnd is multiplied by beta. With adaptive backoff
//! beta = RTT_min / RTT_max, within [beta_min, beta_max], which drains the queue just enough
//! to keep the link busy; the adaptive reset returns it to beta_min when the throughput
//! reached before this event differs by more than 20% from that before the previous one, a
//! sign that the bandwidth share changed and flows must converge (Leith & Shorten).
//!
//! RTT scaling (optional; Leith & Shorten's "RTT unfairness" layer, on by default in Linux):
//! alpha is multiplied by RTT_min / RTT_ref, RTT_ref = 100 ms, so that flows with different
//! RTTs gain the same rate per second rather than per RTT. Linux bounds the ratio to
//! [0.1, 2] and never lets the scaled alpha(Delta) fall below 1; so does this file.
//!
//! Measurements follow Linux: RTT_min is the smallest RTT sample; RTT_max the largest
//! sample in normal operation (not in recovery), accepting at most 20 ms more than the
//! previous maximum per sample to ignore outliers, and fading 5% toward RTT_min at each
//! congestion event to follow route changes. Throughput is measured in normal operation
//! over intervals of at least RTT_min, smoothed with weight 1/4, and its maximum since the
//! last event is the B compared by the adaptive reset; the first three RTT_min after an
//! event restart the measurement because the window is still moving there.
//! Linux rounds to jiffies and requires RTT_min > 10 ms before adapting beta; simulated time is
//! exact, so neither applies here.
//!
//! Undo of a spurious reduction (Linux `htcp_cwnd_undo`): Delta runs again from the congestion
//! event before it, and the window comes back as `tcp_reno_undo_cwnd` gives it. (Linux also
//! restores RTT_max and the throughput baseline to the values they had when the reduction
//! began, which here they still have.)

use super::{slow_start_first, AckSample, CaState, CcState, CongestionControl};
use crate::time::{to_seconds, Time, PS_PER_MS};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// alpha(Delta) = 1 + ALPHA_LINEAR (Delta - Delta_L) + ((Delta - Delta_L) / ALPHA_QUADRATIC_HALF)^2
/// (Leith & Shorten 2004).
const ALPHA_LINEAR_PER_S: f64 = 10.0;
const ALPHA_QUADRATIC_HALF_S: f64 = 2.0;

/// Standard TCP's backoff. The paper's factor 2 (1 - beta) is (1 - beta) / (1 - 0.5): the
/// increase is scaled by how much less than standard TCP the flow backs off.
const STANDARD_BETA: f64 = 0.5;

/// The adaptive reset: a change of the pre-congestion throughput by more than this fraction
/// sets beta to beta_min (Leith & Shorten 2004; Linux `use_bandwidth_switch`, 4/5..6/5).
const THROUGHPUT_CHANGE_RESET: f64 = 0.2;

/// RTT scaling reference, picoseconds (Leith & Shorten; Linux: 100 ms).
const RTT_REF_PS: Time = 100 * PS_PER_MS;
/// Bounds of RTT_min / RTT_ref in RTT scaling (Linux clamps RTT_ref / RTT_min to [0.5, 10]).
const RTT_SCALE_MIN: f64 = 0.1;
const RTT_SCALE_MAX: f64 = 2.0;

/// An RTT sample may raise RTT_max by at most this much, picoseconds (Linux `measure_rtt`):
/// a single delayed or outlying sample must not lower beta.
const RTT_MAX_STEP_PS: Time = 20 * PS_PER_MS;
/// At each congestion event RTT_max keeps this percentage of its distance above RTT_min
/// (Linux `htcp_param_update`: 95/100).
const RTT_MAX_MEMORY_PERCENT: Time = 95;

/// Weight of a new throughput sample in the smoothed throughput (Linux: (3 B + sample) / 4).
const THROUGHPUT_SAMPLE_WEIGHT: f64 = 0.25;
/// For this many RTT_min after a congestion event the throughput estimate restarts from
/// each sample (Linux `htcp_ccount(ca) <= 3`).
const THROUGHPUT_SETTLE_RTTS: u64 = 3;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HtcpConfig {
    /// Delta_L: time after a congestion event during which H-TCP increases as standard TCP,
    /// picoseconds (Leith & Shorten 2004 and Linux: 1 s).
    pub delta_l_ps: Time,
    /// Smallest backoff factor, the one used without adaptive backoff or after an adaptive
    /// reset (Leith & Shorten 2004 and Linux `BETA_MIN`: 0.5, standard TCP's).
    pub beta_min: f64,
    /// Largest backoff factor (Leith & Shorten 2004 and Linux `BETA_MAX`: 0.8).
    pub beta_max: f64,
    /// beta = RTT_min / RTT_max with the adaptive reset, rather than always beta_min
    /// (Leith & Shorten 2004 and Linux `use_bandwidth_switch`: on).
    pub adaptive_backoff: bool,
    /// Scale the increase by RTT_min / 100 ms. Off by default: the paper's basic H-TCP
    /// increases per RTT and adds RTT scaling as a separate layer, and FreeBSD `cc_htcp`
    /// ships it off (`rtt_scaling` = 0); Linux turns it on (`use_rtt_scaling` = 1).
    pub rtt_scaling: bool,
}

impl HtcpConfig {
    /// Checks the parameters; the error names the parameter, its value and the rule.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.beta_min > 0.0 && self.beta_min < 1.0) {
            return Err(format!("beta_min: {} is not allowed: must be in (0, 1)", self.beta_min));
        }
        if !(self.beta_max >= self.beta_min && self.beta_max < 1.0) {
            return Err(format!(
                "beta_max: {} is not allowed: must be in [beta_min ({}), 1)",
                self.beta_max, self.beta_min
            ));
        }
        Ok(())
    }
}

pub struct Htcp {
    cfg: HtcpConfig,
    /// Current backoff factor.
    beta: f64,
    /// When the last congestion event began (or the connection started), picoseconds.
    last_congestion: Time,
    ca_state: CaState,
    rtt_min: Option<Time>,
    rtt_max: Option<Time>,
    /// Throughput measurement: start of the current interval and segments acknowledged in it.
    interval_start: Time,
    interval_segments: u64,
    /// Smoothed throughput and its maximum since the last congestion event, segments/s.
    throughput: f64,
    max_throughput: Option<f64>,
    /// The maximum before the previous congestion event, segments/s.
    previous_max_throughput: Option<f64>,
    /// Increase earned in congestion avoidance and not yet applied, segments (below 1):
    /// alpha / cwnd per acknowledged segment accumulates exactly here, where Linux's integer
    /// counter drops the remainder at each increment.
    increase_credit: f64,
    /// `last_congestion` before the reduction under way, for undo (Linux `undo_last_cong`).
    undo_last_congestion: Option<Time>,
}

impl Htcp {
    pub fn new(cfg: HtcpConfig) -> Self {
        Htcp {
            beta: cfg.beta_min,
            cfg,
            last_congestion: 0,
            ca_state: CaState::Open,
            rtt_min: None,
            rtt_max: None,
            interval_start: 0,
            interval_segments: 0,
            throughput: 0.0,
            max_throughput: None,
            previous_max_throughput: None,
            increase_credit: 0.0,
            undo_last_congestion: None,
        }
    }

    /// The current backoff factor.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// alpha(Delta) at `now`, RTT-scaled if configured: segments per RTT before the
    /// 2 (1 - beta) normalization.
    pub fn alpha_delta(&self, now: Time) -> f64 {
        let delta = to_seconds(now.saturating_sub(self.last_congestion));
        let delta_l = to_seconds(self.cfg.delta_l_ps);
        let mut alpha = 1.0;
        if delta > delta_l {
            let d = delta - delta_l;
            let q = d / ALPHA_QUADRATIC_HALF_S;
            alpha += ALPHA_LINEAR_PER_S * d + q * q;
        }
        if self.cfg.rtt_scaling {
            if let Some(rtt_min) = self.rtt_min {
                let scale = (rtt_min as f64 / RTT_REF_PS as f64).clamp(RTT_SCALE_MIN, RTT_SCALE_MAX);
                alpha = (alpha * scale).max(1.0);
            }
        }
        alpha
    }

    /// The increase applied, segments per RTT: 2 (1 - beta) alpha(Delta).
    pub fn alpha(&self, now: Time) -> f64 {
        (1.0 - self.beta) / (1.0 - STANDARD_BETA) * self.alpha_delta(now)
    }

    /// Sets beta for the congestion event happening now (adaptive backoff with reset).
    fn update_beta(&mut self) {
        let max_throughput = self.max_throughput.take();
        let previous = std::mem::replace(&mut self.previous_max_throughput, max_throughput);
        self.beta = self.cfg.beta_min;
        if !self.cfg.adaptive_backoff {
            return;
        }
        // No earlier event to compare with counts as a change: the first backoff is standard.
        let steady =
            matches!((previous, max_throughput), (Some(p), Some(b)) if (b - p).abs() <= THROUGHPUT_CHANGE_RESET * p);
        if let (true, Some(min), Some(max)) = (steady, self.rtt_min, self.rtt_max) {
            self.beta = (min as f64 / max as f64).clamp(self.cfg.beta_min, self.cfg.beta_max);
        }
    }

    fn measure_rtt(&mut self, rtt: Time) {
        let min = self.rtt_min.map_or(rtt, |m| m.min(rtt));
        self.rtt_min = Some(min);
        if self.ca_state == CaState::Open {
            let max = self.rtt_max.map_or(min, |m| m.max(min));
            self.rtt_max = Some(if rtt > max && rtt <= max + RTT_MAX_STEP_PS { rtt } else { max });
        }
    }

    fn measure_throughput(&mut self, now: Time, acked_segments: u32) {
        if self.ca_state != CaState::Open {
            self.interval_start = now;
            self.interval_segments = 0;
            return;
        }
        self.interval_segments += acked_segments as u64;
        let Some(rtt_min) = self.rtt_min else { return };
        let elapsed = now.saturating_sub(self.interval_start);
        if elapsed < rtt_min || elapsed == 0 {
            return;
        }
        let sample = self.interval_segments as f64 / to_seconds(elapsed);
        let settling = now.saturating_sub(self.last_congestion) <= THROUGHPUT_SETTLE_RTTS * rtt_min;
        if settling || self.max_throughput.is_none() {
            self.throughput = sample;
            self.max_throughput = Some(sample);
        } else {
            self.throughput += THROUGHPUT_SAMPLE_WEIGHT * (sample - self.throughput);
            self.max_throughput = self.max_throughput.map(|m| m.max(self.throughput));
        }
        self.interval_start = now;
        self.interval_segments = 0;
    }
}

impl CongestionControl for Htcp {
    fn name(&self) -> &'static str {
        "htcp"
    }

    fn init(&mut self, s: &mut CcState) {
        self.last_congestion = s.now;
        self.interval_start = s.now;
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.update_beta();
        if let (Some(min), Some(max)) = (self.rtt_min, self.rtt_max) {
            self.rtt_max = Some(min + (max - min) * RTT_MAX_MEMORY_PERCENT / 100);
        }
        ((s.cwnd as f64 * self.beta) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = slow_start_first(s, ack.delivered_segments) else {
            return;
        };
        // cwnd += alpha / cwnd per acknowledged segment, at most one segment per segment
        // (slow start's rate), as Linux.
        let per_segment = (self.alpha(s.now) / s.cwnd as f64).min(1.0);
        self.increase_credit += per_segment * acked as f64;
        let whole = self.increase_credit.floor();
        if whole >= 1.0 {
            self.increase_credit -= whole;
            s.cwnd = s.cwnd.saturating_add(whole as u32);
        }
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new != CaState::Open {
            // Delta restarts, and throughput measured across a recovery would mix two windows.
            self.undo_last_congestion = Some(self.last_congestion);
            self.last_congestion = s.now;
            self.interval_start = s.now;
            self.interval_segments = 0;
            self.increase_credit = 0.0;
        }
        if new == CaState::Open {
            self.undo_last_congestion = None;
        }
        self.ca_state = new;
    }

    /// Called before the state returns to Open, as Linux does (`tcp_undo_cwnd_reduction`).
    fn undo_cwnd(&mut self, s: &CcState, prior_cwnd: u32) -> u32 {
        if let Some(t) = self.undo_last_congestion.take() {
            self.last_congestion = t;
        }
        s.cwnd.max(prior_cwnd)
    }

    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        if let Some(rtt) = ack.rtt {
            self.measure_rtt(rtt);
        }
        self.measure_throughput(s.now, ack.acked_segments);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_S;

    const RTT: Time = 100 * PS_PER_MS;

    fn state(cwnd: u32, ssthresh: u32) -> CcState {
        CcState { srtt: Some(RTT), min_rtt: Some(RTT), ..CcState::new(cwnd, ssthresh, 1448) }
    }

    fn ack(segments: u32, rtt: Time) -> AckSample {
        AckSample {
            acked_segments: segments,
            delivered_segments: segments,
            acked_bytes: segments as u64 * 1448,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    /// One RTT of ACKs, one per segment, spread evenly, each with RTT sample `rtt`; the
    /// clock advances by `rtt`.
    fn one_rtt(h: &mut Htcp, s: &mut CcState, rtt: Time) {
        let n = s.cwnd;
        let start = s.now;
        for i in 0..n {
            s.now = start + rtt * i as u64 / n as u64;
            let a = ack(1, rtt);
            h.pkts_acked(s, &a);
            h.cong_avoid(s, &a);
        }
        s.now = start + rtt;
    }

    /// A congestion event as the core runs it: ssthresh, recovery, back to open.
    fn congestion(h: &mut Htcp, s: &mut CcState) {
        let ssthresh = h.ssthresh(s);
        s.ssthresh = ssthresh;
        s.cwnd = ssthresh;
        h.set_state(s, CaState::Recovery);
        h.set_state(s, CaState::Open);
    }

    #[test]
    fn undo_restores_delta_from_the_previous_congestion_event() {
        let mut h = Htcp::new(HtcpConfig::default());
        let mut s = state(100, 10);
        h.init(&mut s);
        s.now = 5 * PS_PER_S;
        h.ssthresh(&s);
        h.set_state(&mut s, CaState::Recovery);
        assert_eq!(h.alpha_delta(5 * PS_PER_S), 1.0, "Delta restarted at 5 s");
        s.cwnd = 50;
        assert_eq!(h.undo_cwnd(&s, 100), 100, "tcp_reno_undo_cwnd");
        // Delta counts from the start again: 5 s - Delta_L = 4 s, 1 + 40 + 4.
        assert!((h.alpha_delta(5 * PS_PER_S) - 45.0).abs() < 1e-9);
        h.set_state(&mut s, CaState::Open);
        assert!((h.alpha_delta(5 * PS_PER_S) - 45.0).abs() < 1e-9);
    }

    #[test]
    fn alpha_follows_the_papers_function() {
        let mut h = Htcp::new(HtcpConfig::default());
        h.set_state(&mut state(100, 10), CaState::Recovery);
        h.set_state(&mut state(100, 10), CaState::Open);
        assert_eq!(h.alpha_delta(PS_PER_S / 2), 1.0, "low-speed mode");
        assert_eq!(h.alpha_delta(PS_PER_S), 1.0, "Delta = Delta_L");
        // Delta = 3 s: 1 + 10 x 2 + (2/2)^2 = 22; Delta = 11 s: 1 + 100 + 25 = 126.
        assert!((h.alpha_delta(3 * PS_PER_S) - 22.0).abs() < 1e-9);
        assert!((h.alpha_delta(11 * PS_PER_S) - 126.0).abs() < 1e-9);
        // beta = 0.5 leaves alpha as it is; beta = 0.8 scales it by 2 (1 - 0.8) = 0.4.
        assert!((h.alpha(3 * PS_PER_S) - 22.0).abs() < 1e-9);
        h.beta = 0.8;
        assert!((h.alpha(3 * PS_PER_S) - 8.8).abs() < 1e-9);
    }

    #[test]
    fn standard_tcp_increase_in_low_speed_mode_then_faster() {
        let mut h = Htcp::new(HtcpConfig::default());
        let mut s = state(1000, 10);
        h.init(&mut s);
        // First RTT: Delta < 1 s, one segment per RTT.
        one_rtt(&mut h, &mut s, RTT);
        assert_eq!(s.cwnd, 1001);
        // Move to Delta = 5 s: alpha = 1 + 40 + 4 = 45 segments per RTT, 46.2 by the RTT's
        // end; the RTT's 1001 ACKs each add alpha / cwnd of a window grown by then to ~1045.
        s.now = 5 * PS_PER_S;
        let before = s.cwnd;
        one_rtt(&mut h, &mut s, RTT);
        let grew = s.cwnd - before;
        assert!((44..=46).contains(&grew), "grew {grew} in one RTT at Delta = 5 s");
    }

    #[test]
    fn adaptive_backoff_uses_rtt_ratio_once_throughput_is_steady() {
        let mut h = Htcp::new(HtcpConfig::default());
        let mut s = state(1000, 10);
        h.init(&mut s);
        // Base RTT 100 ms; the queue fills and raises it to 140 ms before each loss, and
        // every cycle repeats the last (steady throughput).
        let cycle = |h: &mut Htcp, s: &mut CcState| {
            s.cwnd = 1000;
            for _ in 0..20 {
                one_rtt(h, s, RTT);
            }
            for rtt_ms in [115, 130, 140] {
                one_rtt(h, s, rtt_ms * PS_PER_MS);
            }
            congestion(h, s);
        };
        cycle(&mut h, &mut s);
        assert_eq!(h.beta(), 0.5, "first event: nothing to compare, standard backoff");
        cycle(&mut h, &mut s);
        let expected = 100.0 / 140.0;
        assert!((h.beta() - expected).abs() < 0.01, "beta {} vs RTT_min/RTT_max {expected}", h.beta());
        assert_eq!(h.ssthresh(&state(1000, 10)), (1000.0 * h.beta()) as u32);
    }

    #[test]
    fn beta_is_clamped_and_reset_by_a_throughput_change() {
        let mut h = Htcp::new(HtcpConfig::default());
        h.rtt_min = Some(RTT);
        h.rtt_max = Some(RTT + PS_PER_MS);
        h.previous_max_throughput = Some(10_000.0);
        h.max_throughput = Some(10_500.0);
        h.update_beta();
        assert_eq!(h.beta(), 0.8, "RTT ratio 0.99 clamped to beta_max");
        h.max_throughput = Some(13_000.0); // +24% against 10,500
        h.update_beta();
        assert_eq!(h.beta(), 0.5, "adaptive reset");
        let mut off = Htcp::new(HtcpConfig { adaptive_backoff: false, ..Default::default() });
        off.rtt_min = Some(RTT);
        off.rtt_max = Some(RTT);
        off.previous_max_throughput = Some(1.0);
        off.max_throughput = Some(1.0);
        off.update_beta();
        assert_eq!(off.beta(), 0.5);
    }

    #[test]
    fn rtt_scaling_scales_alpha_within_linux_bounds() {
        let mut h = Htcp::new(HtcpConfig { rtt_scaling: true, ..Default::default() });
        h.rtt_min = Some(20 * PS_PER_MS);
        // Delta = 3 s: alpha(Delta) = 22, x 20/100 = 4.4.
        assert!((h.alpha_delta(3 * PS_PER_S) - 4.4).abs() < 1e-9);
        assert_eq!(h.alpha_delta(PS_PER_S / 2), 1.0, "never below standard TCP");
        h.rtt_min = Some(PS_PER_S);
        assert!((h.alpha_delta(3 * PS_PER_S) - 44.0).abs() < 1e-9, "ratio 10 clamped to 2");
        h.rtt_min = Some(PS_PER_MS);
        assert!((h.alpha_delta(11 * PS_PER_S) - 12.6).abs() < 1e-9, "ratio 0.01 clamped to 0.1");
    }

    #[test]
    fn rtt_max_ignores_jumps_and_fades() {
        let mut h = Htcp::new(HtcpConfig::default());
        h.measure_rtt(RTT);
        h.measure_rtt(RTT + 50 * PS_PER_MS);
        assert_eq!(h.rtt_max, Some(RTT), "a 50 ms jump is an outlier");
        h.measure_rtt(RTT + 15 * PS_PER_MS);
        h.measure_rtt(RTT + 30 * PS_PER_MS);
        assert_eq!(h.rtt_max, Some(RTT + 30 * PS_PER_MS), "a queue that grows gradually is followed");
        h.ssthresh(&state(100, 10));
        assert_eq!(h.rtt_max, Some(RTT + 28_500_000_000), "95% of 30 ms above RTT_min remains");
    }

    #[test]
    fn delta_l_sets_the_low_speed_interval() {
        let mut h = Htcp::new(HtcpConfig { delta_l_ps: 3 * PS_PER_S, ..Default::default() });
        h.init(&mut state(100, 10));
        assert_eq!(h.alpha_delta(3 * PS_PER_S), 1.0);
        assert!((h.alpha_delta(5 * PS_PER_S) - 22.0).abs() < 1e-9);
    }

    #[test]
    fn validation_names_the_parameter() {
        let bad = HtcpConfig { beta_min: 0.0, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("beta_min: 0 is not allowed"));
        let bad = HtcpConfig { beta_max: 0.4, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("beta_max: 0.4 is not allowed"));
        assert!(HtcpConfig::default().validate().is_ok());
    }
}
