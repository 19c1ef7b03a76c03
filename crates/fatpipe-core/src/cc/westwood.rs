//! TCP Westwood and Westwood+: after a loss, set the window to the bandwidth the connection
//! was actually getting, measured from the ACK stream, instead of halving it.
//!
//! - TCP Westwood: Mascolo, Casetti, Gerla, Sanadidi and Wang, "TCP Westwood: Bandwidth
//!   Estimation for Enhanced Transport over Wireless Links", ACM MobiCom 2001. Every ACK gives
//!   a bandwidth sample b_k = d_k / (t_k - t_{k-1}) (bytes it acknowledges over the time since
//!   the previous ACK), smoothed by a discrete low-pass filter (the Tustin form of a first-order
//!   filter with time constant tau, cut-off frequency 1/tau):
//!   BWE_k = a_k BWE_{k-1} + (1 - a_k) (b_k + b_{k-1}) / 2,  a_k = (2 tau - D_k) / (2 tau + D_k),
//!   D_k = t_k - t_{k-1}. To respect the sampling theorem when ACKs stop, the paper feeds a
//!   virtual null sample for each tau/m without an ACK, m >= 2; we use m = 2, as ns-2's UCLA
//!   Westwood (`filter_type_ 3`) does.
//! - TCP Westwood+: Grieco and Mascolo, "Performance evaluation and comparison of Westwood+,
//!   New Reno, and Vegas TCP congestion control", ACM CCR 34(2), 2004. ACK compression makes
//!   per-ACK samples overestimate, so Westwood+ takes one sample per round-trip: the bytes
//!   acknowledged during it over its duration. As Linux `tcp_westwood.c` does, a sample spans
//!   at least max(RTT, 50 ms) (the last RTT sample), and goes through two cascaded EWMAs of
//!   gain 1/8, the first sample filling both.
//!
//! Both react to a loss alike (the papers' pseudocode):
//! - three duplicate ACKs: ssthresh = BWE x RTTmin / MSS, and cwnd = ssthresh if cwnd is
//!   above it (never raised). Here `ssthresh` computes it and `set_state(Recovery)` lowers the
//!   window the core inflated to ssthresh + dupthresh, keeping the inflation by the segments
//!   that left the network (RFC 5681 3.2);
//! - timeout: cwnd = 1 (the core) and ssthresh = BWE x RTTmin / MSS, at least 2.
//!
//! RTTmin is the minimum RTT measured (the core's `min_rtt`). Between losses the window grows
//! as Reno's (slow start, then one segment per RTT; `reno.rs` with a = 1), per ACK or, with
//! `byte_counting`, per acknowledged segment.
//!
//! That is the `"paper"` form of Westwood+ (`WestwoodPlusConfig::variant`). The `"linux"`
//! form, `westwood/linux.rs`, is Linux `tcp_westwood.c`: a loss halves the window as Reno,
//! and only when the reduction completes (`CwndEvent::CompleteCwr`) do cwnd and ssthresh
//! become the bandwidth estimate times the minimum RTT, in Linux's integer units.
//!
//! Westwood counts each duplicate ACK as one segment delivered, and a cumulative ACK then
//! only for what the duplicates did not already account for (MobiCom 2001 section 2.1; ns-2
//! `unaccounted_`, Linux `westwood_acked_count`). Without that the bytes of a whole recovery
//! arrive with the one cumulative ACK that ends it, microseconds after the previous ACK: a
//! sample of terabits per second, which the per-ACK filter weighs by the next, longer
//! interval (its b_{k-1} term), so the estimate overshot the link many times over (ssthresh
//! 74,229 segments on a path of 5,625 at 1 Gb/s x 45 ms, document 003's pairs). Westwood+'s
//! per-RTT sample sums the bytes of its window and is not thrown by the timing, and keeps
//! counting new ACKs only, as before.

pub mod linux;

use super::reno::{Reno, RenoConfig};
use super::{AckSample, CaState, CcState, CongestionControl};
use crate::time::{Time, PS_PER_S};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Smallest ssthresh after a loss, segments (the papers' "if ssthresh < 2 then ssthresh = 2").
pub const MIN_SSTHRESH_SEGMENTS: u32 = 2;

/// Westwood's filter adds a virtual null sample after every tau / this without an ACK
/// (MobiCom 2001 section 2.2 asks for tau / m, m >= 2; ns-2's UCLA Westwood uses 2).
pub const NULL_SAMPLE_DIVISOR: u64 = 2;

/// Westwood+ smooths with EWMAs of this gain per sample (Linux `westwood_do_filter`: 7/8 old).
pub const WESTWOOD_PLUS_EWMA_GAIN: f64 = 1.0 / 8.0;

/// Reno's growth between losses: one segment per RTT in congestion avoidance (RFC 5681).
const RENO_INCREASE_SEGMENTS_PER_RTT: f64 = 1.0;
/// Unused by Westwood, which sets ssthresh from its estimate; Reno's value for completeness.
const RENO_DECREASE_FRACTION: f64 = 0.5;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WestwoodConfig {
    /// Time constant tau of the bandwidth filter (cut-off frequency 1/tau), picoseconds.
    /// Default 1 s (ns-2's UCLA TCP Westwood, `tau_ 1.0`).
    pub filter_time_constant_ps: Time,
    /// Grow by the segments each ACK covers (RFC 3465, as Linux) rather than per ACK.
    /// Default false (RFC 5681, as Reno here and ns-2's Westwood, document 003's).
    pub byte_counting: bool,
}

impl WestwoodConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.filter_time_constant_ps < NULL_SAMPLE_DIVISOR {
            return Err(format!(
                "filter_time_constant_ps: {} is not allowed: must be at least {NULL_SAMPLE_DIVISOR} ps",
                self.filter_time_constant_ps
            ));
        }
        Ok(())
    }
}

/// Which Westwood+ (`WestwoodPlusConfig::variant`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WestwoodPlusVariant {
    /// Grieco and Mascolo 2004's response to losses (this file).
    Paper,
    /// Linux `tcp_westwood.c` (`westwood/linux.rs`).
    Linux,
}

/// The parameters, every one given by the scenario (its table, scenario/congestion.py, owns
/// the defaults and their sources).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WestwoodPlusConfig {
    /// Which Westwood+: `paper` or `linux`.
    pub variant: WestwoodPlusVariant,
    /// Shortest bandwidth-sampling interval, picoseconds: a sample spans at least
    /// max(RTT, this), so on short paths it covers several round-trips; 0 leaves one RTT.
    /// Default 50 ms (Linux `TCP_WESTWOOD_RTT_MIN`, which avoids estimating over short
    /// intervals).
    pub min_sample_interval_ps: Time,
    /// Grow by the segments each ACK covers (RFC 3465, as Linux) rather than per ACK.
    /// Default false (RFC 5681, as Reno here); the Linux form requires true.
    pub byte_counting: bool,
    /// The Linux form's clock, jiffies per second (Linux `CONFIG_HZ`).
    pub kernel_hz: u32,
}

impl WestwoodPlusConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.kernel_hz == 0 {
            return Err("kernel_hz: 0 is not allowed: must be at least 1 jiffy per second".into());
        }
        if self.variant == WestwoodPlusVariant::Linux && !self.byte_counting {
            return Err("byte_counting: false is not allowed with variant = \"linux\": Linux grows by tcp_reno_cong_avoid, which counts the segments each ACK covers".into());
        }
        Ok(())
    }
}

/// Builds the configured form of Westwood+.
pub fn build_plus(cfg: &WestwoodPlusConfig) -> Box<dyn CongestionControl> {
    match cfg.variant {
        WestwoodPlusVariant::Paper => Box::new(WestwoodPlus::new(cfg.clone())),
        WestwoodPlusVariant::Linux => Box::new(linux::LinuxWestwood::new(cfg)),
    }
}

/// A bandwidth estimator fed with the ACK stream.
pub trait BandwidthEstimator: Send + Sync {
    /// The algorithm's name in scenarios.
    const NAME: &'static str;

    /// An ACK of `acked_bytes` new bytes arrived at `now`, with this RTT sample if any.
    fn on_ack(&mut self, now: Time, acked_bytes: u64, rtt: Option<Time>);

    /// The bandwidth estimate BWE, bytes per second (0 before the first sample).
    fn bytes_per_s(&self) -> f64;

    /// Whether duplicate ACKs count as one segment delivered each (`WestwoodFamily::accounted_bytes`).
    const COUNTS_DUPLICATE_ACKS: bool;
}

/// Westwood's per-ACK samples through the MobiCom 2001 low-pass filter.
pub struct PerAckFilter {
    tau_ps: Time,
    last_ack_ps: Option<Time>,
    /// Bytes of ACKs that arrived at the same instant as the previous one: they join the next
    /// sample, since a zero interval gives no rate.
    pending_bytes: u64,
    /// The previous sample b_{k-1}, bytes per second.
    prev_sample: f64,
    estimate: f64,
}

impl PerAckFilter {
    pub fn new(cfg: &WestwoodConfig) -> Self {
        PerAckFilter {
            tau_ps: cfg.filter_time_constant_ps,
            last_ack_ps: None,
            pending_bytes: 0,
            prev_sample: 0.0,
            estimate: 0.0,
        }
    }

    /// a_k for a sampling interval `dt`.
    fn coefficient(&self, dt: Time) -> f64 {
        let two_tau = 2.0 * self.tau_ps as f64;
        (two_tau - dt as f64) / (two_tau + dt as f64)
    }

    fn filter(&mut self, dt: Time, sample: f64) {
        let a = self.coefficient(dt);
        self.estimate = a * self.estimate + (1.0 - a) * (sample + self.prev_sample) / 2.0;
        self.prev_sample = sample;
    }
}

impl BandwidthEstimator for PerAckFilter {
    const NAME: &'static str = "westwood";
    const COUNTS_DUPLICATE_ACKS: bool = true;

    fn on_ack(&mut self, now: Time, acked_bytes: u64, _rtt: Option<Time>) {
        // The first ACK only starts the clock: there is no interval to divide by yet.
        let Some(last) = self.last_ack_ps.replace(now) else { return };
        let bytes = acked_bytes + std::mem::take(&mut self.pending_bytes);
        let mut dt = now - last;
        if dt == 0 {
            self.pending_bytes = bytes;
            return;
        }
        // One virtual null sample per tau/2 of silence, the ACK itself covering the rest
        // (at most tau/2). After the first, null samples only decay the estimate, so they
        // are applied at once.
        let null_interval = self.tau_ps / NULL_SAMPLE_DIVISOR;
        let nulls = (dt - 1) / null_interval;
        if nulls > 0 {
            self.filter(null_interval, 0.0);
            self.estimate *= self.coefficient(null_interval).powf((nulls - 1) as f64);
            dt -= nulls * null_interval;
        }
        self.filter(dt, bytes as f64 * PS_PER_S as f64 / dt as f64);
    }

    fn bytes_per_s(&self) -> f64 {
        self.estimate
    }
}

/// Westwood+'s one sample per round-trip through two cascaded EWMAs (Linux).
pub struct PerRttFilter {
    min_interval_ps: Time,
    window_start_ps: Option<Time>,
    /// Bytes acknowledged since the window started (Linux `bk`).
    window_bytes: u64,
    last_rtt_ps: Option<Time>,
    /// First-stage ("not too smoothed") and final estimates, bytes per second; None until the
    /// first sample fills both.
    estimates: Option<(f64, f64)>,
}

impl PerRttFilter {
    pub fn new(cfg: &WestwoodPlusConfig) -> Self {
        PerRttFilter {
            min_interval_ps: cfg.min_sample_interval_ps,
            window_start_ps: None,
            window_bytes: 0,
            last_rtt_ps: None,
            estimates: None,
        }
    }
}

fn ewma(old: f64, sample: f64) -> f64 {
    old + WESTWOOD_PLUS_EWMA_GAIN * (sample - old)
}

impl BandwidthEstimator for PerRttFilter {
    const NAME: &'static str = "westwood_plus";
    const COUNTS_DUPLICATE_ACKS: bool = false;

    fn on_ack(&mut self, now: Time, acked_bytes: u64, rtt: Option<Time>) {
        if let Some(r) = rtt {
            self.last_rtt_ps = Some(r);
        }
        // As Linux, the first ACK starts the first window and its own bytes count for none.
        let Some(start) = self.window_start_ps else {
            self.window_start_ps = Some(now);
            return;
        };
        let elapsed = now - start;
        if let Some(rtt) = self.last_rtt_ps {
            if elapsed > rtt.max(self.min_interval_ps) {
                let sample = self.window_bytes as f64 * PS_PER_S as f64 / elapsed as f64;
                self.estimates = Some(match self.estimates {
                    None => (sample, sample),
                    Some((first, smooth)) => {
                        let first = ewma(first, sample);
                        (first, ewma(smooth, first))
                    }
                });
                self.window_bytes = 0;
                self.window_start_ps = Some(now);
            }
        }
        self.window_bytes += acked_bytes;
    }

    fn bytes_per_s(&self) -> f64 {
        self.estimates.map_or(0.0, |(_, smooth)| smooth)
    }
}

/// The Westwood response to losses on top of a bandwidth estimator.
pub struct WestwoodFamily<E: BandwidthEstimator> {
    estimator: E,
    /// Reno's growth between losses.
    reno: Reno,
    /// cwnd when the last congestion signal came (the core has inflated it since).
    cwnd_at_signal: u32,
    /// Bytes that duplicate ACKs counted as delivered and no cumulative ACK has covered yet
    /// (Linux `accounted`, ns-2 `unaccounted_`).
    accounted_bytes: u64,
}

pub type Westwood = WestwoodFamily<PerAckFilter>;
pub type WestwoodPlus = WestwoodFamily<PerRttFilter>;

fn reno(byte_counting: bool) -> Reno {
    Reno::new(RenoConfig::aimd(RENO_INCREASE_SEGMENTS_PER_RTT, RENO_DECREASE_FRACTION, byte_counting))
}

impl Westwood {
    pub fn new(cfg: WestwoodConfig) -> Self {
        WestwoodFamily {
            estimator: PerAckFilter::new(&cfg),
            reno: reno(cfg.byte_counting),
            cwnd_at_signal: 0,
            accounted_bytes: 0,
        }
    }
}

impl WestwoodPlus {
    pub fn new(cfg: WestwoodPlusConfig) -> Self {
        WestwoodFamily {
            estimator: PerRttFilter::new(&cfg),
            reno: reno(cfg.byte_counting),
            cwnd_at_signal: 0,
            accounted_bytes: 0,
        }
    }
}

impl<E: BandwidthEstimator> WestwoodFamily<E> {
    pub fn bandwidth_estimate_bytes_per_s(&self) -> f64 {
        self.estimator.bytes_per_s()
    }

    /// BWE x RTTmin in segments, at least 2: the window that carries the measured rate over the
    /// empty path.
    fn bandwidth_window(&self, s: &CcState) -> u32 {
        let rtt_min_s = s.min_rtt.map_or(0.0, |r| r as f64 / PS_PER_S as f64);
        let segments = self.estimator.bytes_per_s() * rtt_min_s / s.mss_bytes as f64;
        (segments.min(u32::MAX as f64) as u32).max(MIN_SSTHRESH_SEGMENTS)
    }
}

impl<E: BandwidthEstimator> CongestionControl for WestwoodFamily<E> {
    fn name(&self) -> &'static str {
        E::NAME
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.cwnd_at_signal = s.cwnd;
        self.bandwidth_window(s)
    }

    /// Reno's probing: slow start, then one segment per RTT.
    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        self.reno.cong_avoid(s, ack);
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Recovery {
            // The core set cwnd = ssthresh + dupthresh; Westwood's cwnd is min(cwnd, ssthresh),
            // inflated by the same dupthresh segments that have left the network.
            let inflation = s.cwnd.saturating_sub(s.ssthresh);
            s.cwnd = s.ssthresh.min(self.cwnd_at_signal).saturating_add(inflation);
        }
    }

    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        let mut bytes = ack.acked_bytes;
        let mss = s.mss_bytes as u64;
        if E::COUNTS_DUPLICATE_ACKS && bytes > mss {
            // Linux westwood_acked_count: a cumulative ACK of more than a segment after
            // duplicates counts only what they did not (at least one segment).
            if self.accounted_bytes >= bytes {
                self.accounted_bytes -= bytes;
                bytes = mss;
            } else {
                bytes -= self.accounted_bytes;
                self.accounted_bytes = 0;
            }
        }
        self.estimator.on_ack(s.now, bytes, ack.rtt);
    }

    fn duplicate_ack(&mut self, s: &CcState) {
        if E::COUNTS_DUPLICATE_ACKS {
            let mss = s.mss_bytes as u64;
            self.accounted_bytes += mss;
            self.estimator.on_ack(s.now, mss, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::PS_PER_MS;

    const MSS: u32 = 1000;

    fn state(cwnd: u32, ssthresh: u32) -> CcState {
        CcState { srtt: Some(100 * PS_PER_MS), min_rtt: Some(100 * PS_PER_MS), ..CcState::new(cwnd, ssthresh, MSS) }
    }

    fn ack(segments: u32, rtt: Time) -> AckSample {
        AckSample {
            acked_segments: segments,
            delivered_segments: segments,
            acked_bytes: (segments * MSS) as u64,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    fn westwood() -> Westwood {
        Westwood::new(WestwoodConfig { filter_time_constant_ps: PS_PER_S, byte_counting: true })
    }

    fn westwood_plus() -> WestwoodPlus {
        WestwoodPlus::new(WestwoodPlusConfig::default())
    }

    /// Feeds one MSS-sized ACK every `gap` from `from` to `to`; returns the last ACK time.
    fn ack_stream<E: BandwidthEstimator>(
        cc: &mut WestwoodFamily<E>,
        s: &mut CcState,
        from: Time,
        to: Time,
        gap: Time,
    ) -> Time {
        let mut t = from;
        while t <= to {
            s.now = t;
            cc.pkts_acked(s, &ack(1, 100 * PS_PER_MS));
            t += gap;
        }
        t - gap
    }

    #[test]
    fn a_recovery_s_bytes_count_when_their_duplicate_acks_arrive_not_all_at_its_end() {
        // 1 MB/s of single-segment ACKs for 5 s, then a recovery: 1000 duplicate ACKs at the
        // same pace, and the cumulative ACK of those 1000 segments 10 us after the last
        // one, then the steady stream again. The rate never changed, and BWE must not either.
        // Counting the whole recovery in the cumulative ACK made a 1e11 B/s sample that the
        // filter weighed by the following 1 ms interval: BWE jumped to 46 MB/s.
        let mut w = westwood();
        let mut s = state(10, INFINITE_SSTHRESH);
        let mut t = ack_stream(&mut w, &mut s, 0, 5 * PS_PER_S, PS_PER_MS);
        for _ in 0..1000 {
            t += PS_PER_MS;
            s.now = t;
            w.duplicate_ack(&s);
        }
        s.now = t + 10 * crate::time::PS_PER_US;
        w.pkts_acked(&mut s, &ack(1000, 100 * PS_PER_MS));
        let resume = s.now + PS_PER_MS;
        ack_stream(&mut w, &mut s, resume, resume + PS_PER_S / 10, PS_PER_MS);
        // Within 5 %: the cumulative ACK still counts one segment (Linux's rule), 10 us
        // after the last duplicate, which the filter sees as a short burst.
        let bwe = w.bandwidth_estimate_bytes_per_s();
        assert!((bwe / 1e6 - 1.0).abs() < 0.05, "BWE {bwe}");
    }

    #[test]
    fn westwood_filter_converges_to_a_steady_ack_rate() {
        // 1000 bytes per millisecond = 1 MB/s; after 5 time constants within 1%.
        let mut w = westwood();
        let mut s = state(10, INFINITE_SSTHRESH);
        ack_stream(&mut w, &mut s, 0, 5 * PS_PER_S, PS_PER_MS);
        let bwe = w.bandwidth_estimate_bytes_per_s();
        assert!((bwe / 1e6 - 1.0).abs() < 0.01, "BWE {bwe}");
        // A longer time constant follows a rate change more slowly.
        let mut slow = Westwood::new(WestwoodConfig { filter_time_constant_ps: 4 * PS_PER_S, byte_counting: true });
        let mut s = state(10, INFINITE_SSTHRESH);
        ack_stream(&mut slow, &mut s, 0, PS_PER_S, PS_PER_MS);
        let mut fast = westwood();
        let mut s = state(10, INFINITE_SSTHRESH);
        ack_stream(&mut fast, &mut s, 0, PS_PER_S, PS_PER_MS);
        assert!(slow.bandwidth_estimate_bytes_per_s() < fast.bandwidth_estimate_bytes_per_s());
    }

    #[test]
    fn westwood_filter_decays_through_virtual_null_samples_when_acks_stop() {
        let mut w = westwood();
        let mut s = state(10, INFINITE_SSTHRESH);
        let last = ack_stream(&mut w, &mut s, 0, 10 * PS_PER_S, PS_PER_MS);
        let before = w.bandwidth_estimate_bytes_per_s();
        // Two seconds of silence are four null samples of tau/2 (a = 3/5 each), then one ACK.
        s.now = last + 2 * PS_PER_S;
        w.pkts_acked(&mut s, &ack(1, 100 * PS_PER_MS));
        let after = w.bandwidth_estimate_bytes_per_s();
        let three_fifths_cubed = 0.6f64.powi(3);
        assert!(after < before * three_fifths_cubed, "{before} -> {after}");
        // ACKs at the same instant do not divide by zero: their bytes join the next sample.
        let t = s.now + PS_PER_MS;
        s.now = t;
        w.pkts_acked(&mut s, &ack(1, 100 * PS_PER_MS));
        w.pkts_acked(&mut s, &ack(1, 100 * PS_PER_MS));
        assert!(w.bandwidth_estimate_bytes_per_s().is_finite());
    }

    #[test]
    fn westwood_plus_takes_one_sample_per_rtt_through_two_ewmas() {
        let mut w = westwood_plus();
        let mut s = state(10, INFINITE_SSTHRESH);
        // 1 MB/s in 1000-byte ACKs each millisecond, RTT 100 ms: one sample per 100 ms.
        ack_stream(&mut w, &mut s, 0, 100 * PS_PER_MS, PS_PER_MS);
        assert_eq!(w.bandwidth_estimate_bytes_per_s(), 0.0, "no full window yet");
        ack_stream(&mut w, &mut s, 101 * PS_PER_MS, 102 * PS_PER_MS, PS_PER_MS);
        let first = w.bandwidth_estimate_bytes_per_s();
        assert!((first / 1e6 - 1.0).abs() < 0.02, "the first sample fills the filter: {first}");
        // The rate doubles: the cascade moves 1/8 of 1/8 of the step on the next sample.
        let t = ack_stream(&mut w, &mut s, 103 * PS_PER_MS, 204 * PS_PER_MS, PS_PER_MS / 2);
        let second = w.bandwidth_estimate_bytes_per_s();
        let step = second - first;
        assert!(step > 0.0 && step < first * WESTWOOD_PLUS_EWMA_GAIN, "{first} -> {second}");
        // And keeps converging to the new rate.
        ack_stream(&mut w, &mut s, t + PS_PER_MS / 2, 10 * PS_PER_S, PS_PER_MS / 2);
        let late = w.bandwidth_estimate_bytes_per_s();
        assert!((late / 2e6 - 1.0).abs() < 0.02, "{late}");
    }

    #[test]
    fn three_dupacks_set_ssthresh_to_the_bandwidth_window_and_never_raise_cwnd() {
        let mut w = westwood_plus();
        let mut s = state(10, INFINITE_SSTHRESH);
        ack_stream(&mut w, &mut s, 0, 2 * PS_PER_S, PS_PER_MS);
        // 1 MB/s x 100 ms / 1000 B = 100 segments.
        let mut s = state(150, INFINITE_SSTHRESH);
        let ssthresh = w.ssthresh(&s);
        assert!((99..=100).contains(&ssthresh), "{ssthresh}");
        // The core inflates to ssthresh + 3; Westwood keeps min(cwnd, ssthresh) + 3.
        s.ssthresh = ssthresh;
        s.cwnd = ssthresh + 3;
        w.set_state(&mut s, CaState::Recovery);
        assert_eq!(s.cwnd, ssthresh + 3);
        // A window below the bandwidth window is not raised to it.
        let mut s = state(60, INFINITE_SSTHRESH);
        let ssthresh = w.ssthresh(&s);
        s.ssthresh = ssthresh;
        s.cwnd = ssthresh + 3;
        w.set_state(&mut s, CaState::Recovery);
        assert_eq!(s.cwnd, 60 + 3);
    }

    #[test]
    fn without_an_estimate_ssthresh_is_two() {
        let mut w = westwood();
        assert_eq!(w.ssthresh(&state(100, INFINITE_SSTHRESH)), MIN_SSTHRESH_SEGMENTS);
        // A timeout leaves the core's window of one segment alone.
        let mut s = state(1, 2);
        w.set_state(&mut s, CaState::Loss);
        assert_eq!(s.cwnd, 1);
    }

    #[test]
    fn grows_as_reno() {
        // Byte counting: the segments each ACK covers; without: one per ACK.
        let mut w = westwood();
        let mut s = state(10, INFINITE_SSTHRESH);
        for _ in 0..5 {
            w.cong_avoid(&mut s, &ack(2, 100 * PS_PER_MS));
        }
        assert_eq!(s.cwnd, 20);
        let mut w = westwood_plus();
        let mut s = state(10, INFINITE_SSTHRESH);
        for _ in 0..5 {
            w.cong_avoid(&mut s, &ack(2, 100 * PS_PER_MS));
        }
        assert_eq!(s.cwnd, 15);
        let mut s = state(100, 50);
        for _ in 0..100 {
            w.cong_avoid(&mut s, &ack(1, 100 * PS_PER_MS));
        }
        assert_eq!(s.cwnd, 101);
    }

    #[test]
    fn names_and_validation() {
        assert_eq!(westwood().name(), "westwood");
        assert_eq!(westwood_plus().name(), "westwood_plus");
        for (json, name) in [
            (
                r#"{"algorithm": "westwood", "filter_time_constant_ps": 1000000000000, "byte_counting": false}"#,
                "westwood",
            ),
            (
                r#"{"algorithm": "westwood_plus", "variant": "paper", "min_sample_interval_ps": 50000000000,
                    "byte_counting": false, "kernel_hz": 100}"#,
                "westwood_plus",
            ),
        ] {
            let spec: crate::cc::CcSpec = serde_json::from_str(json).unwrap();
            assert_eq!(spec.build().name(), name);
        }
        let e = WestwoodConfig { filter_time_constant_ps: 0, byte_counting: false }.validate().unwrap_err();
        assert!(e.starts_with("filter_time_constant_ps: 0 is not allowed"), "{e}");
    }
}
