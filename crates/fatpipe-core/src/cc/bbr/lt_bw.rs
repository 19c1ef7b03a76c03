//! BBR's long-term bandwidth estimate for token-bucket policers (Linux `tcp_bbr.c`
//! `bbr_lt_bw_sampling`, `bbr_lt_bw_interval_done`, `bbr_reset_lt_bw_sampling`, in every
//! kernel from 4.9 to 6.x).
//!
//! A policer (Flach et al., "An Internet-Wide Analysis of Traffic Policing", SIGCOMM 2016)
//! lets a burst through while its bucket has tokens and drops everything above its rate
//! afterwards. BBR's max filter still sees the burst's rate, and PROBE_BW's gain of 5/4 keeps
//! offering more than the policer passes: a steady loss rate. BBR therefore watches for it:
//! after the first loss it samples the delivery rate over intervals of 4 to 16 round trips,
//! each ended by a loss; an interval whose loss rate is at least 50/256 (~20 %) is "lossy",
//! and two lossy intervals in a row whose rates differ by at most 1/8 (or 4 kbit/s) mean a
//! policer: BBR then paces at their average (`lt_bw`) with gain 1 for 48 round trips of
//! PROBE_BW, after which it samples afresh.
//!
//! Counts are segments (Linux `tp->delivered`, `tp->lost`); the interval is timed in whole
//! milliseconds of the last delivery (`delivered_mstamp / USEC_PER_MSEC`), and the rate is
//! payload bits per second, as the core's delivery-rate samples.

use crate::time::{Time, PS_PER_MS, PS_PER_S};

/// Fewest round trips in a sampling interval (Linux `bbr_lt_intvl_min_rtts`); an interval
/// longer than four times this is abandoned.
pub const INTERVAL_MIN_ROUNDS: u32 = 4;
/// An interval is lossy when lost / delivered >= this / 256 (Linux `bbr_lt_loss_thresh`, 50:
/// about 20 %).
pub const LOSS_THRESH: u64 = 50;
/// Two intervals' rates are consistent when they differ by at most this fraction of the
/// earlier (Linux `bbr_lt_bw_ratio`, BBR_UNIT / 8) ...
pub const BW_RATIO: (u64, u64) = (1, 8);
/// ... or by at most this many bits per second (Linux `bbr_lt_bw_diff`, 4000 / 8 bytes/s).
pub const BW_DIFF_BPS: u64 = 4_000;
/// Round trips of PROBE_BW that BBR keeps using lt_bw (Linux `bbr_lt_bw_max_rtts`).
pub const MAX_ROUNDS: u32 = 48;

/// What the ACK's sampling decided, for the caller to act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LtEvent {
    None,
    /// A policer was found: lt_bw is in use from now on; PROBE_BW paces with gain 1.
    Policed,
    /// lt_bw has been in use for `MAX_ROUNDS` rounds of PROBE_BW: BBR goes back to its max
    /// filter and restarts its gain cycle (Linux `bbr_reset_probe_bw_mode`).
    Expired,
}

/// One call of the sampling (an ACK with a valid rate sample, or a timeout).
#[derive(Clone, Copy, Debug)]
pub struct LtInput {
    /// BBR is in PROBE_BW.
    pub probe_bw: bool,
    /// This ACK (or timeout) started a round trip.
    pub round_start: bool,
    /// Segments newly marked lost (Linux `rs->losses`; they also count in `tp->lost`).
    pub losses: u64,
    /// The rate sample was application-limited.
    pub app_limited: bool,
    /// The connection's delivered segments so far (Linux `tp->delivered`).
    pub delivered_segments: u64,
    /// The connection's delivered bytes so far, for the rate.
    pub delivered_bytes: u64,
    /// When data was last delivered (Linux `tp->delivered_mstamp`).
    pub delivered_at: Time,
}

#[derive(Clone, Debug, Default)]
pub struct LtBw {
    /// The policed rate once found (or the previous interval's rate while sampling), bits
    /// per second; 0: none (Linux `lt_bw`).
    bw_bps: u64,
    /// lt_bw is in use (Linux `lt_use_bw`).
    in_use: bool,
    /// Sampling has begun, after the first loss (Linux `lt_is_sampling`).
    sampling: bool,
    /// Round trips in the interval, or in use (Linux `lt_rtt_cnt`).
    rounds: u32,
    /// The interval's start: milliseconds (Linux `lt_last_stamp`), segments delivered and
    /// lost, bytes delivered.
    start_ms: Time,
    start_delivered: u64,
    start_lost: u64,
    start_bytes: u64,
    /// Segments lost so far (Linux `tp->lost`).
    lost: u64,
}

impl LtBw {
    /// The policed rate while BBR uses it, bits per second (Linux `bbr_bw` with `lt_use_bw`).
    pub fn bw_bps(&self) -> Option<u64> {
        self.in_use.then_some(self.bw_bps)
    }

    /// Linux `bbr_reset_lt_bw_sampling_interval`.
    fn reset_interval(&mut self, at: &LtInput) {
        self.start_ms = at.delivered_at / PS_PER_MS;
        self.start_delivered = at.delivered_segments;
        self.start_lost = self.lost;
        self.start_bytes = at.delivered_bytes;
        self.rounds = 0;
    }

    /// Linux `bbr_reset_lt_bw_sampling`: forget everything, lt_bw included.
    pub fn reset(&mut self, at: &LtInput) {
        self.bw_bps = 0;
        self.in_use = false;
        self.sampling = false;
        self.reset_interval(at);
    }

    /// Linux `bbr_lt_bw_sampling`, once per ACK with a rate sample (after round counting) and
    /// on a timeout (`round_start`, and as `losses` what the timeout marked lost: Linux's
    /// `tcp_enter_loss` adds it to `tp->lost` and passes `rs.losses = 1`).
    pub fn sample(&mut self, at: &LtInput) -> LtEvent {
        self.lost += at.losses;
        if self.in_use {
            if at.probe_bw && at.round_start {
                self.rounds += 1;
                if self.rounds >= MAX_ROUNDS {
                    self.reset(at);
                    return LtEvent::Expired;
                }
            }
            return LtEvent::None;
        }
        // Sampling starts at the first loss: by then the policer's bucket is empty and what
        // gets through is its rate, not the burst its tokens allowed.
        if !self.sampling {
            if at.losses == 0 {
                return LtEvent::None;
            }
            self.reset_interval(at);
            self.sampling = true;
        }
        // An application-limited sample would underestimate the rate.
        if at.app_limited {
            self.reset(at);
            return LtEvent::None;
        }
        if at.round_start {
            self.rounds += 1;
        }
        if self.rounds < INTERVAL_MIN_ROUNDS {
            return LtEvent::None;
        }
        if self.rounds > 4 * INTERVAL_MIN_ROUNDS {
            self.reset(at);
            return LtEvent::None;
        }
        // An interval ends on a loss: the policer's tokens were exhausted.
        if at.losses == 0 {
            return LtEvent::None;
        }
        let lost = self.lost - self.start_lost;
        let delivered = at.delivered_segments - self.start_delivered;
        if delivered == 0 || (lost << 8) < LOSS_THRESH * delivered {
            return LtEvent::None;
        }
        let ms = (at.delivered_at / PS_PER_MS).saturating_sub(self.start_ms);
        if ms < 1 {
            return LtEvent::None;
        }
        let bits = u128::from(at.delivered_bytes - self.start_bytes) * 8;
        let bw = (bits * u128::from(PS_PER_S) / u128::from(ms * PS_PER_MS)).min(u128::from(u64::MAX)) as u64;
        self.interval_done(bw, at)
    }

    /// Linux `bbr_lt_bw_interval_done`: a lossy interval of rate `bw`; with one before it of
    /// about the same rate, a policer.
    fn interval_done(&mut self, bw: u64, at: &LtInput) -> LtEvent {
        if self.bw_bps > 0 {
            let diff = bw.abs_diff(self.bw_bps);
            // Linux compares the difference in bytes per second after its 1 % pacing margin
            // (`bbr_rate_bytes_per_sec`).
            let diff_paced = diff - diff / 100;
            if diff * BW_RATIO.1 <= BW_RATIO.0 * self.bw_bps || diff_paced <= BW_DIFF_BPS {
                self.bw_bps = (bw + self.bw_bps) / 2;
                self.in_use = true;
                self.rounds = 0;
                return LtEvent::Policed;
            }
        }
        self.bw_bps = bw;
        self.reset_interval(at);
        LtEvent::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bits per second of `segs` 1000-byte segments delivered over `ms` milliseconds.
    fn rate(segs: u64, ms: u64) -> u64 {
        segs * 8_000 * 1000 / ms
    }

    /// A flow through a policer: an ACK every millisecond delivers `segs_per_ms` segments of
    /// 1000 bytes, a round trip lasts 10 ms, and the round's losses are reported on its first
    /// ACK.
    struct Policed {
        lt: LtBw,
        at: LtInput,
        ms: u64,
    }

    impl Policed {
        fn new() -> Self {
            let at = LtInput {
                probe_bw: true,
                round_start: false,
                losses: 0,
                app_limited: false,
                delivered_segments: 0,
                delivered_bytes: 0,
                delivered_at: 0,
            };
            Policed { lt: LtBw::default(), at, ms: 0 }
        }

        fn round(&mut self, segs_per_ms: u64, lost: u64) -> Vec<LtEvent> {
            (0..10)
                .map(|i| {
                    self.ms += 1;
                    self.at.delivered_segments += segs_per_ms;
                    self.at.delivered_bytes += segs_per_ms * 1000;
                    self.at.delivered_at = self.ms * PS_PER_MS;
                    self.at.round_start = i == 0;
                    self.at.losses = if i == 0 { lost } else { 0 };
                    self.lt.sample(&self.at)
                })
                .collect()
        }
    }

    #[test]
    fn sampling_waits_for_the_first_loss_then_needs_four_rounds_and_a_lossy_end() {
        let mut p = Policed::new();
        // No loss: nothing starts.
        for _ in 0..10 {
            assert!(p.round(10, 0).iter().all(|&e| e == LtEvent::None));
        }
        assert!(!p.lt.sampling);
        // The first loss starts the interval, and its round is the interval's first.
        p.round(10, 25);
        assert!(p.lt.sampling);
        assert_eq!(p.lt.rounds, 1);
        for _ in 0..2 {
            p.round(10, 25);
        }
        assert_eq!(p.lt.bw_bps, 0, "three rounds: too short an interval");
        // The fourth round's loss ends it: 75 lost of 300 delivered (64/256, lossy), 300
        // segments over the 30 ms between the deliveries that bound it.
        p.round(10, 25);
        assert_eq!(p.lt.bw_bps, rate(300, 30));
        assert_eq!(p.lt.bw_bps, 80_000_000);
        assert_eq!(p.lt.bw_bps(), None, "one interval is no evidence yet");
    }

    #[test]
    fn two_consistent_lossy_intervals_mean_a_policer_and_lt_bw_is_their_average() {
        let mut p = Policed::new();
        for _ in 0..4 {
            p.round(10, 25);
        }
        assert_eq!(p.lt.bw_bps, 80_000_000);
        // The next interval: the rest of that round at 10 segments a ms, then 11 a ms;
        // 431 segments over 40 ms, 86.2 Mb/s, within 1/8 of 80.
        let mut events = Vec::new();
        for _ in 0..4 {
            events.extend(p.round(11, 25));
        }
        assert_eq!(events.iter().filter(|&&e| e == LtEvent::Policed).count(), 1);
        assert_eq!(p.lt.bw_bps(), Some((80_000_000 + rate(431, 40)) / 2));
    }

    #[test]
    fn intervals_too_different_or_not_lossy_enough_find_no_policer() {
        // 80 then 142 Mb/s: more than 1/8 and more than 4 kbit/s apart.
        let mut p = Policed::new();
        for _ in 0..4 {
            p.round(10, 25);
        }
        for _ in 0..4 {
            p.round(20, 50);
        }
        assert_eq!(p.lt.bw_bps(), None);
        assert_eq!(p.lt.bw_bps, rate(90 + 600 + 20, 40), "the newer interval becomes the reference");
        // 10 lost per 100 delivered is 25.6/256, below 50/256: never lossy.
        let mut p = Policed::new();
        for _ in 0..8 {
            p.round(10, 10);
        }
        assert_eq!(p.lt.bw_bps, 0);
        // An interval past 16 rounds starts over (at the next loss).
        for _ in 0..9 {
            p.round(10, 10);
        }
        assert!(p.lt.rounds < 2, "reset after 16 rounds: {}", p.lt.rounds);
    }

    #[test]
    fn lt_bw_is_used_for_48_rounds_of_probe_bw_then_dropped() {
        let mut p = Policed::new();
        for _ in 0..8 {
            p.round(10, 25);
        }
        assert_eq!(p.lt.bw_bps(), Some(80_000_000));
        // Rounds outside PROBE_BW do not count.
        p.at.probe_bw = false;
        for _ in 0..60 {
            p.round(10, 0);
        }
        assert_eq!(p.lt.bw_bps(), Some(80_000_000));
        p.at.probe_bw = true;
        let expired_after = (1..=60).find(|_| p.round(10, 0).contains(&LtEvent::Expired));
        assert_eq!(expired_after, Some(MAX_ROUNDS));
        assert_eq!(p.lt.bw_bps(), None);
        assert!(!p.lt.sampling, "sampling starts again at the next loss");
    }

    #[test]
    fn an_application_limited_sample_resets_sampling() {
        let mut p = Policed::new();
        for _ in 0..4 {
            p.round(10, 25);
        }
        assert_eq!(p.lt.bw_bps, 80_000_000);
        p.at.app_limited = true;
        p.round(10, 0);
        assert_eq!((p.lt.bw_bps, p.lt.sampling), (0, false));
    }
}
