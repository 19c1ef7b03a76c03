//! Westwood+ as Linux `net/ipv4/tcp_westwood.c` runs it (`tcp_westwood_event`,
//! `tcp_westwood_ack`, `westwood_update_window`, `westwood_filter`):
//!
//! - the estimate counts bytes acknowledged (`bk`) over windows of at least max(RTT,
//!   `min_sample_interval`: Linux's `TCP_WESTWOOD_RTT_MIN`, HZ/20 = 50 ms), time in jiffies; a window's sample is bk / its length in jiffies (integer bytes per
//!   jiffy), the first filling both filters, later ones through two cascaded EWMAs of 7/8
//!   in integers;
//! - the RTT is the last sample, in jiffies (rounded up); RTTmin its minimum, taken afresh
//!   from the first sample after a timeout;
//! - a congestion event sets ssthresh as Reno does (half cwnd, `tcp_reno_ssthresh`); when the
//!   window reduction completes (`CwndEvent::CompleteCwr`, Linux `tcp_end_cwnd_reduction`),
//!   cwnd = ssthresh = BWE x RTTmin / MSS, at least 2, which may raise the window;
//! - a timeout (`CwndEvent::Loss`) sets ssthresh = BWE x RTTmin / MSS;
//! - growth is Reno's, counting acknowledged segments (`tcp_reno_cong_avoid`); undo is
//!   `tcp_reno_undo_cwnd`, the trait's default.
//!
//! Linux's estimate sees every ACK, counting a duplicate ACK as one segment delivered
//! (`westwood_acked_count`) and correcting when the cumulative ACK moves; the core tells
//! algorithms of new ACKs only, so the bytes delivered since the previous one (cumulatively
//! ACKed or SACKed, `CcState::delivered_bytes`) are counted when it arrives.

use super::WestwoodPlusConfig;
use crate::cc::jiffies::Jiffies;
use crate::cc::reno::{Reno, RenoConfig};
use crate::cc::{AckSample, CcState, CongestionControl, CwndEvent};
use crate::time::{Time, PS_PER_US};

/// RTT and RTTmin before any sample: 20 s (Linux `TCP_WESTWOOD_INIT_RTT` = 20 HZ).
const INIT_RTT_S: u64 = 20;
/// The filters keep 7/8 of the old value (Linux `westwood_do_filter`).
const FILTER_OLD_EIGHTHS: u64 = 7;
/// Smallest ssthresh and window the estimate sets, segments.
const MIN_WINDOW_SEGMENTS: u64 = 2;

pub struct LinuxWestwood {
    clock: Jiffies,
    /// The shortest sampling window, jiffies.
    min_window: u64,
    reno: Reno,
    /// Bandwidth estimates, bytes per jiffy: first stage and smoothed (Linux `bw_ns_est`,
    /// `bw_est`).
    bw_ns_est: u64,
    bw_est: u64,
    /// Start of the sampling window, jiffies, and bytes acknowledged in it.
    rtt_win_sx: u64,
    bk: u64,
    /// Last RTT and its minimum, jiffies.
    rtt: u64,
    rtt_min: u64,
    reset_rtt_min: bool,
    /// `CcState::delivered_bytes` at the previous ACK.
    delivered_seen: u64,
}

impl LinuxWestwood {
    pub fn new(cfg: &WestwoodPlusConfig) -> Self {
        let clock = Jiffies::new(cfg.kernel_hz);
        let hz = clock.hz();
        LinuxWestwood {
            clock,
            min_window: clock.at(cfg.min_sample_interval_ps),
            reno: Reno::new(RenoConfig::aimd(1.0, 0.5, true)),
            bw_ns_est: 0,
            bw_est: 0,
            rtt_win_sx: 0,
            bk: 0,
            rtt: INIT_RTT_S * hz,
            rtt_min: INIT_RTT_S * hz,
            reset_rtt_min: true,
            delivered_seen: 0,
        }
    }

    /// BWE, bytes per second.
    pub fn bandwidth_estimate_bytes_per_s(&self) -> u64 {
        self.bw_est * self.clock.hz()
    }

    /// RTTmin, jiffies.
    pub fn rtt_min_jiffies(&self) -> u64 {
        self.rtt_min
    }

    /// BWE x RTTmin in segments, at least 2 (Linux `tcp_westwood_bw_rttmin`).
    pub fn bw_rttmin(&self, s: &CcState) -> u32 {
        let segments = self.bw_est * self.rtt_min / s.mss_bytes.max(1) as u64;
        segments.clamp(MIN_WINDOW_SEGMENTS, u32::MAX as u64) as u32
    }

    /// Closes the sampling window once it spans max(RTT, 50 ms) (Linux
    /// `westwood_update_window`).
    fn update_window(&mut self, now: Time) {
        let delta = self.clock.at(now).saturating_sub(self.rtt_win_sx);
        if self.rtt > 0 && delta > self.rtt.max(self.min_window) {
            let sample = self.bk / delta;
            if self.bw_ns_est == 0 && self.bw_est == 0 {
                self.bw_ns_est = sample;
                self.bw_est = sample;
            } else {
                self.bw_ns_est = (FILTER_OLD_EIGHTHS * self.bw_ns_est + sample) >> 3;
                self.bw_est = (FILTER_OLD_EIGHTHS * self.bw_est + self.bw_ns_est) >> 3;
            }
            self.bk = 0;
            self.rtt_win_sx = self.clock.at(now);
        }
    }
}

impl CongestionControl for LinuxWestwood {
    fn name(&self) -> &'static str {
        "westwood_plus"
    }

    fn init(&mut self, s: &mut CcState) {
        self.rtt_win_sx = self.clock.at(s.now);
        self.delivered_seen = s.delivered_bytes;
    }

    /// Linux `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd >> 1).max(MIN_WINDOW_SEGMENTS as u32)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        self.reno.cong_avoid(s, ack);
    }

    /// Linux's order: the ACK event (window, bytes, RTTmin) before `pkts_acked` (the RTT).
    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        self.update_window(s.now);
        self.bk += s.delivered_bytes - self.delivered_seen;
        self.delivered_seen = s.delivered_bytes;
        if std::mem::take(&mut self.reset_rtt_min) {
            self.rtt_min = self.rtt;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
        if let Some(rtt) = ack.rtt.filter(|&r| r >= PS_PER_US) {
            self.rtt = self.clock.from_us(rtt / PS_PER_US);
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        match ev {
            CwndEvent::CompleteCwr => {
                s.ssthresh = self.bw_rttmin(s);
                s.cwnd = s.ssthresh;
            }
            CwndEvent::Loss => {
                s.ssthresh = self.bw_rttmin(s);
                // RTTmin is taken afresh from the next ACK.
                self.reset_rtt_min = true;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::westwood::WestwoodPlusVariant;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::{PS_PER_MS, PS_PER_S};

    const MSS: u32 = 1000;

    fn linux() -> LinuxWestwood {
        LinuxWestwood::new(&WestwoodPlusConfig {
            variant: WestwoodPlusVariant::Linux,
            byte_counting: true,
            ..Default::default()
        })
    }

    fn state(cwnd: u32) -> CcState {
        CcState::new(cwnd, INFINITE_SSTHRESH, MSS)
    }

    /// One 1000-byte ACK every millisecond (1 MB/s = 4000 bytes per jiffy at HZ 250) with RTT
    /// `rtt`, from `s.now` for `duration`.
    fn ack_stream(w: &mut LinuxWestwood, s: &mut CcState, duration: Time, rtt: Time) {
        let end = s.now + duration;
        while s.now < end {
            s.now += PS_PER_MS;
            s.delivered_bytes += MSS as u64;
            w.pkts_acked(s, &AckSample { rtt: Some(rtt), ..AckSample::of_segments(1, MSS) });
        }
    }

    #[test]
    fn estimate_counts_bytes_per_jiffy_over_windows_of_an_rtt() {
        let mut w = linux();
        let mut s = state(10);
        w.init(&mut s);
        ack_stream(&mut w, &mut s, 5 * PS_PER_S, 100 * PS_PER_MS);
        // 4000 bytes per 4 ms jiffy; windows of 26 jiffies (more than the 25 of 100 ms) hold
        // 103 or 104 ACKs: samples of 3961 or 4000 bytes per jiffy.
        let bwe = w.bandwidth_estimate_bytes_per_s();
        assert!((990_000..=1_000_000).contains(&bwe), "BWE {bwe} B/s");
        assert_eq!(w.rtt_min_jiffies(), 25);
        // BWE x RTTmin: about 1 MB/s x 100 ms / 1000 B.
        assert!((99..=100).contains(&w.bw_rttmin(&s)), "{}", w.bw_rttmin(&s));
    }

    #[test]
    fn a_loss_halves_and_the_end_of_the_reduction_sets_the_bandwidth_window() {
        let mut w = linux();
        let mut s = state(10);
        w.init(&mut s);
        ack_stream(&mut w, &mut s, 5 * PS_PER_S, 100 * PS_PER_MS);
        let bdp = w.bw_rttmin(&s);
        // tcp_reno_ssthresh at the loss, whatever the estimate.
        s.cwnd = 400;
        assert_eq!(w.ssthresh(&s), 200);
        // COMPLETE_CWR: cwnd = ssthresh = BWE x RTTmin, here raising a small window.
        s.cwnd = 50;
        w.cwnd_event(&mut s, CwndEvent::CompleteCwr);
        assert_eq!((s.cwnd, s.ssthresh), (bdp, bdp));
    }

    #[test]
    fn a_timeout_sets_ssthresh_and_takes_rtt_min_afresh() {
        let mut w = linux();
        let mut s = state(10);
        w.init(&mut s);
        ack_stream(&mut w, &mut s, 5 * PS_PER_S, 100 * PS_PER_MS);
        // The route changed: RTTs of 200 ms (300 ms with the queue before the timeout).
        ack_stream(&mut w, &mut s, 10 * PS_PER_MS, 300 * PS_PER_MS);
        assert_eq!(w.rtt_min_jiffies(), 25);
        let bdp = w.bw_rttmin(&s);
        w.cwnd_event(&mut s, CwndEvent::Loss);
        assert_eq!(s.ssthresh, bdp);
        // The next ACK restarts RTTmin from the last RTT (75 jiffies), then the minimum goes on.
        ack_stream(&mut w, &mut s, 10 * PS_PER_MS, 200 * PS_PER_MS);
        assert_eq!(w.rtt_min_jiffies(), 50);
    }

    #[test]
    fn without_an_estimate_the_window_is_two() {
        let w = linux();
        assert_eq!(w.bw_rttmin(&state(100)), 2);
        let e = WestwoodPlusConfig { variant: WestwoodPlusVariant::Linux, byte_counting: false, ..Default::default() }
            .validate()
            .unwrap_err();
        assert!(e.starts_with("byte_counting: false is not allowed with variant = \"linux\""), "{e}");
    }
}
