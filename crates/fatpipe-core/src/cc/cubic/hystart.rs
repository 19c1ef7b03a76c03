//! Leaving slow start before the first loss: HyStart as Linux `tcp_cubic.c` runs it, and
//! HyStart++ (RFC 9406). Both forms of CUBIC can use either (`CubicConfig::hystart`).
//!
//! HyStart (Ha and Rhee, "Taming the elephants: New TCP slow start", Computer Networks 55(9),
//! 2011; Linux `hystart_update`, `bictcp_hystart_reset`, `cubictcp_acked`). Once cwnd has
//! reached `hystart_low_window` (16 segments), every RTT sample in slow start feeds two tests
//! that run on rounds: a round starts when the cumulative ACK passes the `snd_nxt` of the
//! previous round's start (Linux `after(snd_una, end_seq)`).
//! - ACK train: ACKs that follow each other within `hystart_ack_delta` (2 ms) belong to one
//!   train; when a train has lasted longer than half the minimum RTT (plus a cushion for TSO
//!   and GRO, `hystart_ack_delay`; the whole minimum RTT when the sender paces), the window
//!   sent in one burst already spans the path: exit.
//! - Delay increase: the minimum of the round's first 8 RTT samples (and of later ones)
//!   exceeds the connection's minimum RTT by more than an eighth of it, clamped to 4..16 ms:
//!   a queue is building: exit.
//!
//! On exit ssthresh becomes cwnd, so the next ACK grows the window in congestion avoidance.
//! HyStart then stays off until a retransmission timeout resets it (Linux `cubictcp_state`).
//!
//! HyStart++ (RFC 9406 section 4). Per round (windowEnd = SND.NXT at its start) it keeps the
//! minimum RTT of the round and of the one before. Once a round has N_RTT_SAMPLE (8) samples
//! and its minimum exceeds the previous round's by RttThresh = clamp(lastRoundMinRTT / 8,
//! 4 ms, 16 ms), the sender leaves slow start for Conservative Slow Start (CSS): growth by a
//! quarter of what slow start would add. If a CSS round's minimum falls below the baseline
//! (the minimum that triggered CSS), the exit was spurious and slow start resumes; after
//! CSS_ROUNDS (5) rounds in CSS, ssthresh = cwnd and congestion avoidance begins. In slow start
//! and CSS an ACK adds at most L segments (L = 8 for a sender that does not pace, unlimited
//! for one that does). As RFC 9406 section 4.3 recommends, HyStart++ runs only in the first
//! slow start: any congestion event or timeout turns it off for the connection.

use crate::cc::{slow_start, slow_start_first, AckSample, CcState};
use crate::time::{Time, PS_PER_MS, PS_PER_US};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which slow-start exit runs (`CubicConfig::hystart`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HyStartMode {
    /// Standard slow start until the first loss (RFC 5681; RFC 9438 section 4.10 allows it).
    Off,
    /// HyStart as Linux `tcp_cubic.c` runs it (module parameter `hystart` = 1, the default).
    Linux,
    /// HyStart++ (RFC 9406).
    Rfc9406,
}

/// HyStart's two tests (Linux module parameter `hystart_detect`: 1 ACK train, 2 delay, 3 both).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum HyStartDetect {
    /// Both tests (Linux `hystart_detect` = 3, the default).
    Both,
    AckTrain,
    Delay,
}

impl HyStartDetect {
    fn ack_train(self) -> bool {
        self != HyStartDetect::Delay
    }

    fn delay(self) -> bool {
        self != HyStartDetect::AckTrain
    }
}

/// RTT samples the delay test waits for in each round (Linux `HYSTART_MIN_SAMPLES`).
pub const HYSTART_MIN_SAMPLES: u32 = 8;
/// The delay test's threshold, delay_min / 8, is clamped to [4 ms, 16 ms] (Linux
/// `HYSTART_DELAY_MIN`, `HYSTART_DELAY_MAX`), microseconds.
pub const HYSTART_DELAY_MIN_US: u64 = 4_000;
pub const HYSTART_DELAY_MAX_US: u64 = 16_000;
/// The ACK-train cushion for TSO/GRO aggregation is the time to send 4 GSO packets at the
/// pacing rate, at most 1 ms (Linux `hystart_ack_delay`). The algorithm does not see the
/// flow's host, so the GSO size and Linux's pacing ratios are the host's defaults
/// (`host::scenario_defaults`: 64 KiB, 200 % and 120 %). Linux divides the socket's
/// `sk_gso_max_size` (65,215 bytes, `host/tso.rs`), 0.5 % less than the device's 64 KiB used
/// here; kept as it was, so that results do not move.
const ACK_DELAY_GSO_PACKETS: u128 = 4;
const ACK_DELAY_MAX_US: u64 = 1_000;

/// RFC 9406 section 4.3's constants.
pub const MIN_RTT_THRESH: Time = 4 * PS_PER_MS;
pub const MAX_RTT_THRESH: Time = 16 * PS_PER_MS;
pub const MIN_RTT_DIVISOR: Time = 8;
pub const N_RTT_SAMPLE: u32 = 8;
pub const CSS_GROWTH_DIVISOR: u32 = 4;
pub const CSS_ROUNDS: u32 = 5;
/// L for a sender that does not pace: an ACK grows cwnd by at most this many segments.
pub const NON_PACED_L: u32 = 8;

/// HyStart's state (Linux `struct bictcp`'s HyStart fields).
#[derive(Clone, Debug)]
pub struct HyStart {
    detect: HyStartDetect,
    low_window: u32,
    ack_delta_us: u64,
    found: bool,
    round_start_us: u64,
    last_ack_us: u64,
    end_seq: u64,
    /// Minimum RTT of the round so far, microseconds.
    curr_rtt_us: u64,
    sample_cnt: u32,
}

impl HyStart {
    pub fn new(detect: HyStartDetect, low_window: u32, ack_delta: Time) -> Self {
        HyStart {
            detect,
            low_window,
            ack_delta_us: ack_delta / PS_PER_US,
            found: false,
            round_start_us: 0,
            last_ack_us: 0,
            end_seq: 0,
            curr_rtt_us: u64::MAX,
            sample_cnt: 0,
        }
    }

    /// A new round begins (Linux `bictcp_hystart_reset`).
    fn reset(&mut self, s: &CcState) {
        self.round_start_us = s.now / PS_PER_US;
        self.last_ack_us = self.round_start_us;
        self.end_seq = s.snd_nxt;
        self.curr_rtt_us = u64::MAX;
        self.sample_cnt = 0;
    }

    /// The ACK train's allowance for TSO/GRO aggregation, microseconds (Linux
    /// `hystart_ack_delay`): 4 x 64 KiB at the rate Linux would pace at, at most 1 ms.
    fn ack_delay_us(s: &CcState) -> u64 {
        let Some(srtt) = s.srtt.filter(|&r| r > 0) else { return 0 };
        let host = crate::host::scenario_defaults();
        let ratio = crate::host::pacing::ratio_percent(&host, s.cwnd, s.ssthresh) as u128;
        let segments = s.cwnd.max(s.in_flight_segments) as u128;
        // bytes per second = MSS x segments x ratio / 100 / srtt.
        let rate_num = s.mss_bytes as u128 * segments * ratio * crate::time::PS_PER_S as u128;
        let rate_den = 100 * srtt as u128;
        if rate_num == 0 {
            return 0;
        }
        let gso_bytes = host.gso_max_size_bytes as u128;
        let us = gso_bytes * ACK_DELAY_GSO_PACKETS * 1_000_000 * rate_den / rate_num;
        (us.min(ACK_DELAY_MAX_US as u128)) as u64
    }

    /// One RTT sample of `delay_us` (Linux `cubictcp_acked` then `hystart_update`); the caller
    /// has folded it into `delay_min_us`.
    fn on_sample(&mut self, s: &mut CcState, delay_us: u64, delay_min_us: u64) {
        if self.found || !s.in_slow_start() {
            return;
        }
        if s.snd_una > self.end_seq {
            self.reset(s);
        }
        // Rounds are counted from the first sample, below the low window too (Linux 6.11's
        // "tcp_cubic: fix incorrect HyStart round start detection"): gated by it, the first
        // reset came late, and every later round began that far into its ACK train, so
        // the train test fired a round early (cwnd 272 instead of the kernel's 488 on
        // 100 Mb/s x 40 ms) or the delay test saw a round's queue as delay.
        if s.cwnd < self.low_window {
            return;
        }
        if self.detect.ack_train() {
            let now_us = s.now / PS_PER_US;
            if now_us.saturating_sub(self.last_ack_us) <= self.ack_delta_us {
                self.last_ack_us = now_us;
                let mut threshold = delay_min_us + Self::ack_delay_us(s);
                // Without pacing a window leaves in bursts, and the train of its ACKs may take
                // only half the RTT before the path is full (Linux: `SK_PACING_NONE`).
                if !s.paces {
                    threshold >>= 1;
                }
                if now_us.saturating_sub(self.round_start_us) > threshold {
                    self.exit(s);
                }
            }
        }
        if self.detect.delay() {
            self.curr_rtt_us = self.curr_rtt_us.min(delay_us);
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else if self.curr_rtt_us
                > delay_min_us + (delay_min_us >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US)
            {
                self.exit(s);
            }
        }
    }

    fn exit(&mut self, s: &mut CcState) {
        self.found = true;
        s.ssthresh = s.cwnd;
    }
}

/// HyStart++'s state (RFC 9406 section 4.2's variables).
#[derive(Clone, Debug, Default)]
pub struct HyStartPlusPlus {
    /// End of the current round: the round ends when everything below it is acknowledged.
    window_end: Option<u64>,
    last_round_min_rtt: Option<Time>,
    current_round_min_rtt: Option<Time>,
    rtt_sample_count: u32,
    /// Some while in CSS: the round minimum that triggered it.
    css_baseline_min_rtt: Option<Time>,
    /// Rounds completed in CSS (the partial round of entry included).
    css_rounds: u32,
    /// Off for the rest of the connection: CSS ended, or a congestion event came.
    done: bool,
    /// Segments acknowledged in CSS not yet turned into growth (it grows by a quarter of them).
    css_credit: u32,
}

impl HyStartPlusPlus {
    fn on_ack(&mut self, s: &mut CcState, rtt: Option<Time>) {
        if self.done || !s.in_slow_start() {
            return;
        }
        if let Some(rtt) = rtt {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        let enough = self.rtt_sample_count >= N_RTT_SAMPLE;
        match (self.css_baseline_min_rtt, self.current_round_min_rtt, self.last_round_min_rtt) {
            (None, Some(current), Some(last)) if enough => {
                let rtt_thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if current >= last + rtt_thresh {
                    self.css_baseline_min_rtt = Some(current);
                    self.css_rounds = 0;
                }
            }
            (Some(baseline), Some(current), _) if enough && current < baseline => {
                // The delay increase was not the flow's own queue: back to slow start.
                self.css_baseline_min_rtt = None;
            }
            _ => {}
        }
        if self.window_end.is_some_and(|end| s.snd_una < end) {
            return;
        }
        // A round ended (or the first one starts).
        if self.css_baseline_min_rtt.is_some() && self.window_end.is_some() {
            self.css_rounds += 1;
            if self.css_rounds >= CSS_ROUNDS {
                s.ssthresh = s.cwnd;
                self.done = true;
                return;
            }
        }
        self.window_end = Some(s.snd_nxt);
        self.last_round_min_rtt = self.current_round_min_rtt.take();
        self.rtt_sample_count = 0;
    }

    /// Slow start's growth: at most L segments per ACK, a quarter of that in CSS.
    fn slow_start(&mut self, s: &mut CcState, acked: u32) -> u32 {
        let limited = if s.paces { acked } else { acked.min(NON_PACED_L) };
        if self.css_baseline_min_rtt.is_none() {
            return slow_start(s, limited);
        }
        self.css_credit += limited;
        let add = self.css_credit / CSS_GROWTH_DIVISOR;
        self.css_credit -= add * CSS_GROWTH_DIVISOR;
        let before = s.cwnd;
        s.cwnd = s.cwnd.saturating_add(add).min(s.ssthresh.max(s.cwnd));
        // Growth the ssthresh cap cut off goes to congestion avoidance, in acknowledged segments.
        (add - (s.cwnd - before)) * CSS_GROWTH_DIVISOR
    }

    pub fn in_css(&self) -> bool {
        self.css_baseline_min_rtt.is_some() && !self.done
    }
}

/// The slow-start exit a CUBIC flow runs.
#[derive(Clone, Debug)]
pub enum SlowStartExit {
    Off,
    Linux(HyStart),
    PlusPlus(HyStartPlusPlus),
}

impl SlowStartExit {
    pub fn new(mode: HyStartMode, detect: HyStartDetect, low_window: u32, ack_delta: Time) -> Self {
        match mode {
            HyStartMode::Off => SlowStartExit::Off,
            HyStartMode::Linux => SlowStartExit::Linux(HyStart::new(detect, low_window, ack_delta)),
            HyStartMode::Rfc9406 => SlowStartExit::PlusPlus(HyStartPlusPlus::default()),
        }
    }

    /// The connection starts (Linux `cubictcp_init`: `bictcp_hystart_reset`).
    pub fn init(&mut self, s: &CcState) {
        match self {
            SlowStartExit::Off => {}
            SlowStartExit::Linux(h) => h.reset(s),
            SlowStartExit::PlusPlus(h) => h.window_end = Some(s.snd_nxt),
        }
    }

    /// An ACK with `delay_us`, its RTT sample in microseconds if any and if the algorithm
    /// keeps it, and the algorithm's minimum RTT with it folded in.
    pub fn on_ack(&mut self, s: &mut CcState, ack: &AckSample, delay_us: Option<u64>, delay_min_us: u64) {
        match self {
            SlowStartExit::Off => {}
            SlowStartExit::Linux(h) => {
                if let Some(d) = delay_us {
                    h.on_sample(s, d, delay_min_us);
                }
            }
            SlowStartExit::PlusPlus(h) => h.on_ack(s, ack.rtt),
        }
    }

    /// The start of `cong_avoid`: nothing unless cwnd-limited; in slow start, grow; returns the
    /// acknowledged segments left for congestion avoidance, if any.
    pub fn slow_start_first(&mut self, s: &mut CcState, acked: u32) -> Option<u32> {
        match self {
            SlowStartExit::PlusPlus(h) if !h.done && s.cwnd_limited && s.in_slow_start() => {
                let left = h.slow_start(s, acked);
                (left > 0).then_some(left)
            }
            _ => slow_start_first(s, acked),
        }
    }

    /// A congestion event (loss, ECN, local congestion): HyStart++ is over for this connection.
    pub fn on_congestion(&mut self) {
        if let SlowStartExit::PlusPlus(h) = self {
            h.done = true;
        }
    }

    /// A retransmission timeout: HyStart starts afresh (Linux `cubictcp_state` resets it),
    /// HyStart++ stays off.
    pub fn on_timeout(&mut self, s: &CcState) {
        match self {
            SlowStartExit::Off => {}
            SlowStartExit::Linux(h) => {
                h.found = false;
                h.reset(s);
            }
            SlowStartExit::PlusPlus(h) => h.done = true,
        }
    }

    /// HyStart has ended slow start, or HyStart++ has entered CSS or ended.
    pub fn found(&self) -> bool {
        match self {
            SlowStartExit::Off => false,
            SlowStartExit::Linux(h) => h.found,
            SlowStartExit::PlusPlus(h) => h.css_baseline_min_rtt.is_some() || h.done,
        }
    }

    pub fn in_css(&self) -> bool {
        matches!(self, SlowStartExit::PlusPlus(h) if h.in_css())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;

    const MSS: u32 = 1448;

    fn linux_hystart(detect: HyStartDetect) -> SlowStartExit {
        SlowStartExit::new(HyStartMode::Linux, detect, 16, 2 * PS_MS)
    }

    const PS_MS: Time = PS_PER_MS;

    /// Slow start at `cwnd` segments with everything in flight; no srtt, so Linux's TSO/GRO
    /// cushion is 0 unless a test sets one.
    fn state(cwnd: u32) -> CcState {
        CcState::new(cwnd, INFINITE_SSTHRESH, MSS)
    }

    fn ack(rtt: Time) -> AckSample {
        AckSample { rtt: Some(rtt), ..AckSample::of_segments(1, MSS) }
    }

    /// Feeds HyStart one ACK of the current round with an RTT sample at `now`; delay_min is
    /// `delay_min`.
    fn sample(h: &mut SlowStartExit, s: &mut CcState, now: Time, rtt: Time, delay_min: Time) {
        s.now = now;
        h.on_ack(s, &ack(rtt), Some(rtt / PS_PER_US), delay_min / PS_PER_US);
    }

    /// Starts a new HyStart round at `now` (the cumulative ACK passes the round's end).
    fn new_round(h: &mut SlowStartExit, s: &mut CcState, now: Time, delay_min: Time) {
        s.snd_una = s.snd_nxt + 1;
        s.snd_nxt += s.cwnd as u64 * MSS as u64;
        sample(h, s, now, delay_min, delay_min);
    }

    /// Delay test: a round of `rtt` samples 3 ms apart (no ACK train) after delay_min.
    fn delay_round(delay_min: Time, rtt: Time) -> bool {
        let mut h = linux_hystart(HyStartDetect::Both);
        let mut s = state(100);
        h.init(&s);
        new_round(&mut h, &mut s, PS_MS, delay_min);
        // The round's first sample was delay_min itself: start a fresh round of raised samples.
        s.snd_una = s.snd_nxt + 1;
        s.snd_nxt += 100 * MSS as u64;
        for i in 0..(HYSTART_MIN_SAMPLES + 1) as u64 {
            sample(&mut h, &mut s, delay_min + i * 3 * PS_MS, rtt, delay_min);
        }
        let found = h.found();
        assert_eq!(found, s.ssthresh == s.cwnd, "exit sets ssthresh = cwnd");
        found
    }

    #[test]
    fn delay_increase_threshold_is_an_eighth_of_delay_min_clamped_to_4_16_ms() {
        let us = PS_PER_US;
        // 100 ms: 12.5 ms.
        assert!(delay_round(100 * PS_MS, 112_600 * us));
        assert!(!delay_round(100 * PS_MS, 112_400 * us));
        // 20 ms: 2.5 ms, raised to 4 ms.
        assert!(delay_round(20 * PS_MS, 24_100 * us));
        assert!(!delay_round(20 * PS_MS, 23_900 * us));
        // 200 ms: 25 ms, lowered to 16 ms.
        assert!(delay_round(200 * PS_MS, 216_100 * us));
        assert!(!delay_round(200 * PS_MS, 215_900 * us));
    }

    #[test]
    fn delay_test_waits_for_eight_samples() {
        let mut h = linux_hystart(HyStartDetect::Delay);
        let mut s = state(100);
        h.init(&s);
        new_round(&mut h, &mut s, PS_MS, 100 * PS_MS);
        s.snd_una = s.snd_nxt + 1;
        s.snd_nxt += 100 * MSS as u64;
        for i in 0..HYSTART_MIN_SAMPLES as u64 {
            sample(&mut h, &mut s, 200 * PS_MS + i * 3 * PS_MS, 150 * PS_MS, 100 * PS_MS);
            assert!(!h.found(), "sample {i}");
        }
        sample(&mut h, &mut s, 300 * PS_MS, 150 * PS_MS, 100 * PS_MS);
        assert!(h.found());
    }

    /// ACKs every `spacing` from a round's start; returns the time of the one that ends slow
    /// start, if any within `span`.
    fn ack_train(paces: bool, srtt: Option<Time>, spacing: Time, span: Time) -> Option<Time> {
        let delay_min = 100 * PS_MS;
        let mut h = linux_hystart(HyStartDetect::AckTrain);
        let mut s = CcState { paces, srtt, ..state(100) };
        h.init(&s);
        new_round(&mut h, &mut s, 0, delay_min);
        let mut t = 0;
        while t < span {
            t += spacing;
            sample(&mut h, &mut s, t, delay_min, delay_min);
            if h.found() {
                return Some(t);
            }
        }
        None
    }

    #[test]
    fn ack_train_longer_than_half_the_minimum_rtt_ends_slow_start() {
        let quarter_ms = PS_MS / 4;
        // Without pacing, threshold delay_min / 2 = 50 ms: the ACK at 50.25 ms ends it.
        assert_eq!(ack_train(false, None, quarter_ms, 200 * PS_MS), Some(50 * PS_MS + quarter_ms));
        // With an srtt, Linux adds the TSO/GRO cushion: 4 x 64 KiB at its pacing rate, here
        // 2 x 100 x 1448 B / 100 ms = 2.9 MB/s, far more than the 1 ms cap: (100 + 1) / 2 ms.
        assert_eq!(ack_train(false, Some(100 * PS_MS), quarter_ms, 200 * PS_MS), Some(50 * PS_MS + 3 * quarter_ms));
        // A paced sender's train must span the whole minimum RTT.
        assert_eq!(ack_train(true, None, quarter_ms, 200 * PS_MS), Some(100 * PS_MS + quarter_ms));
        // ACKs more than hystart_ack_delta (2 ms) apart are no train.
        assert_eq!(ack_train(false, None, 3 * PS_MS, 200 * PS_MS), None);
    }

    #[test]
    fn a_round_begins_at_its_first_sample_even_below_the_low_window() {
        let mut h = linux_hystart(HyStartDetect::AckTrain);
        let mut s = state(10);
        h.init(&s);
        // A round begins at 1 ms with cwnd 10, below hystart_low_window = 16; its ACK train
        // goes on every 0.25 ms while cwnd grows past 16.
        new_round(&mut h, &mut s, PS_MS, 100 * PS_MS);
        let mut now = PS_MS;
        while !h.found() && now < 200 * PS_MS {
            now += PS_MS / 4;
            s.cwnd += 1;
            sample(&mut h, &mut s, now, 100 * PS_MS, 100 * PS_MS);
        }
        // delay_min / 2 = 50 ms after the round began (Linux 6.11+), not after cwnd reached
        // 16 (which would be 52.75 ms).
        assert_eq!(now, PS_MS + 50 * PS_MS + PS_MS / 4);
    }

    #[test]
    fn hystart_waits_for_the_low_window_and_fires_once_until_a_timeout() {
        let mut h = linux_hystart(HyStartDetect::Both);
        let mut s = state(15);
        h.init(&s);
        for i in 0..100 {
            sample(&mut h, &mut s, i * PS_MS / 4, 200 * PS_MS, 100 * PS_MS);
        }
        assert!(!h.found(), "below hystart_low_window = 16");
        s.cwnd = 16;
        sample(&mut h, &mut s, 30 * PS_MS, 200 * PS_MS, 100 * PS_MS);
        for i in 0..10 {
            sample(&mut h, &mut s, 40 * PS_MS + i * 3 * PS_MS, 200 * PS_MS, 100 * PS_MS);
        }
        assert!(h.found());
        h.on_timeout(&s);
        assert!(!h.found(), "a timeout resets HyStart (cubictcp_state)");
    }

    fn plus_plus() -> SlowStartExit {
        SlowStartExit::new(HyStartMode::Rfc9406, HyStartDetect::Both, 16, 2 * PS_MS)
    }

    /// One HyStart++ round: `n` ACKs with `rtt`, the last one ending the round.
    /// The sender has already sent the next round's data when the round ends.
    fn pp_round(h: &mut SlowStartExit, s: &mut CcState, n: u32, rtt: Time) {
        let end = s.snd_nxt;
        s.snd_nxt += 100 * MSS as u64;
        for i in 0..n {
            s.snd_una = if i + 1 == n { end } else { end - 1 };
            s.now += PS_MS;
            h.on_ack(s, &ack(rtt), None, 0);
        }
    }

    /// RFC 9406 section 4.2: CSS begins when the round's minimum reaches lastRoundMinRTT +
    /// RttThresh, RttThresh = clamp(lastRoundMinRTT / 8, 4 ms, 16 ms), with 8 samples.
    fn pp_enters_css(last: Time, current: Time, samples: u32) -> bool {
        let mut h = plus_plus();
        let mut s = state(100);
        h.init(&s);
        pp_round(&mut h, &mut s, 1, last); // ends the initial round
        pp_round(&mut h, &mut s, 20, last);
        for _ in 0..samples {
            s.now += PS_MS;
            h.on_ack(&mut s, &ack(current), None, 0);
        }
        h.in_css()
    }

    #[test]
    fn hystart_plus_plus_rtt_thresh_and_sample_count() {
        let us = PS_PER_US;
        assert!(pp_enters_css(100 * PS_MS, 112_500 * us, 8), "100 ms: RttThresh 12.5 ms, reached");
        assert!(!pp_enters_css(100 * PS_MS, 112_499 * us, 8));
        assert!(!pp_enters_css(100 * PS_MS, 150 * PS_MS, 7), "N_RTT_SAMPLE = 8");
        assert!(pp_enters_css(20 * PS_MS, 24 * PS_MS, 8), "20 ms: 2.5 ms raised to MIN_RTT_THRESH");
        assert!(!pp_enters_css(20 * PS_MS, 23_999 * us, 8));
        assert!(pp_enters_css(200 * PS_MS, 216 * PS_MS, 8), "200 ms: 25 ms lowered to MAX_RTT_THRESH");
        assert!(!pp_enters_css(200 * PS_MS, 215_999 * us, 8));
    }

    #[test]
    fn hystart_plus_plus_css_grows_a_quarter_and_ends_after_five_rounds() {
        let mut h = plus_plus();
        let mut s = state(100);
        h.init(&s);
        pp_round(&mut h, &mut s, 1, 100 * PS_MS);
        pp_round(&mut h, &mut s, 20, 100 * PS_MS);
        for _ in 0..8 {
            h.on_ack(&mut s, &ack(120 * PS_MS), None, 0);
        }
        assert!(h.in_css());
        // An ACK of 2 segments adds 1/2: 8 such ACKs add 4 (slow start would add 16).
        let cwnd = s.cwnd;
        for _ in 0..8 {
            assert_eq!(h.slow_start_first(&mut s, 2), None);
        }
        assert_eq!(s.cwnd, cwnd + 4);
        // The round of entry counts (RFC 9406): its end and four more end CSS, ssthresh = cwnd.
        for round in 1..=CSS_ROUNDS {
            pp_round(&mut h, &mut s, 10, 120 * PS_MS);
            assert_eq!(s.ssthresh == s.cwnd, round == CSS_ROUNDS, "round {round}");
        }
        assert!(!h.in_css());
    }

    #[test]
    fn hystart_plus_plus_resumes_slow_start_when_the_rtt_falls_back() {
        let mut h = plus_plus();
        let mut s = state(100);
        h.init(&s);
        pp_round(&mut h, &mut s, 1, 100 * PS_MS);
        pp_round(&mut h, &mut s, 20, 100 * PS_MS);
        pp_round(&mut h, &mut s, 20, 120 * PS_MS);
        assert!(h.in_css());
        pp_round(&mut h, &mut s, 20, 110 * PS_MS);
        assert!(!h.in_css(), "a CSS round's minimum below the baseline (120 ms): spurious exit");
        assert_eq!(s.ssthresh, INFINITE_SSTHRESH);
        let cwnd = s.cwnd;
        assert_eq!(h.slow_start_first(&mut s, 2), None);
        assert_eq!(s.cwnd, cwnd + 2, "full slow start again");
    }

    #[test]
    fn hystart_plus_plus_limits_an_ack_to_l_segments_unless_paced() {
        let mut h = plus_plus();
        let mut s = state(100);
        h.init(&s);
        h.slow_start_first(&mut s, 20);
        assert_eq!(s.cwnd, 100 + NON_PACED_L);
        s.paces = true;
        h.slow_start_first(&mut s, 20);
        assert_eq!(s.cwnd, 128, "L = infinity when paced");
    }

    #[test]
    fn hystart_plus_plus_runs_in_the_first_slow_start_only() {
        let mut h = plus_plus();
        let mut s = state(100);
        h.init(&s);
        h.on_congestion();
        h.slow_start_first(&mut s, 20);
        assert_eq!(s.cwnd, 120, "standard slow start after a congestion event");
    }
}
