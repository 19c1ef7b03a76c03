//! TCP-LP, low priority (Kuzmanovic and Knightly, "TCP-LP: a distributed algorithm for low
//! priority data transfer", INFOCOM 2003), as Linux `net/ipv4/tcp_lp.c` runs it: a flow that
//! uses only the capacity other (fair-share) flows leave, by reacting to one-way delay before
//! they see a loss.
//!
//! - One-way delay from the timestamp option (`tcp_lp_owd_calculator`): the ACK's TSval, the
//!   receiver's clock scaled by 1000 / its estimated rate, less the echoed TSecr, the sender's
//!   own clock, in milliseconds (`LP_RESOL` = `TCP_TS_HZ`), as a u32. The receiver's rate is
//!   estimated from successive ACKs (`tcp_lp_remote_hz_estimator`, 63/64 old + 1/64 new of
//!   1000 x dTSval / dTSecr); a sample counts only when the estimate and the delay are
//!   positive, and only on ACKs with an RTT sample.
//! - The delay is smoothed with gain 1/8 (`sowd`, kept x 8); its minimum and maximum are kept,
//!   the maximum one new record behind the largest (`owd_max_rsv`), so one outlier does not
//!   stretch the range.
//! - Every ACK (`tcp_lp_pkts_acked`): the inference time is 3 x (now - TSecr), three RTTs as
//!   the sender's clock measures them, whenever that is positive; the ACK is within it when an
//!   indication came less than that long ago. The smoothed delay at or above min + 15 % of
//!   (max - min) is an early congestion indication: min restarts at the smoothed delay and max
//!   (and its reserve) at twice it, so that the next ACKs fall within the threshold (the
//!   reset tcp_lp.c marks as provisional in its own comment; it is what Linux runs, and the
//!   kernel comparison in docs/validation.md was made with it); the window halves, or falls
//!   to one segment within the inference time;
//!   the time is recorded. ssthresh is left alone.
//! - Within the inference time the window does not grow; otherwise as Reno
//!   (`tcp_reno_cong_avoid`); a loss halves it (`tcp_reno_ssthresh`).
//!
//! The arithmetic is Linux's u32 (and s64 where Linux widens). The timestamp clocks tick in
//! milliseconds and both start at 0 here (no per-connection random offset, as Linux's
//! `net.ipv4.tcp_timestamps = 2`), so the delay is the true one-way delay plus the time the
//! receiver held the ACK. TCP-LP needs timestamps (the scenario refuses it without them).

use super::{reno_cong_avoid, AckSample, CcState, CongestionControl};
use crate::time::{Time, PS_PER_MS};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The timestamp clock's tick (Linux `TCP_TS_HZ` = 1000: milliseconds).
const TS_TICK_PS: Time = PS_PER_MS;
/// The timestamp clock's rate, Hz (`TCP_TS_HZ`), and the delay's resolution (`LP_RESOL`).
const TS_HZ: u32 = 1000;
/// The remote rate estimate is kept x 64 (`remote_hz << 6`).
const RHZ_SHIFT: u32 = 6;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LpConfig {
    /// The threshold, percent of (max - min) one-way delay above the minimum, at which the
    /// smoothed delay indicates congestion (Kuzmanovic and Knightly 2003: delta = 0.15; Linux
    /// `tcp_lp.c` `15 * (owd_max - owd_min) / 100`, a constant).
    pub threshold_percent: u32,
    /// The inference time after an indication, in RTTs, within which a second one cuts the
    /// window to one segment and the window does not grow (Kuzmanovic and Knightly 2003: 3
    /// RTTs, after Padhye et al.; Linux `lp->inference = 3 * delta`, a constant).
    pub inference_rtts: u32,
}

impl LpConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.threshold_percent > 100 {
            return Err(format!("threshold_percent: {} is not allowed: 0..100", self.threshold_percent));
        }
        Ok(())
    }
}

/// What the last ACK did (`tcp_lp_pkts_acked`), for tests and traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LpEvent {
    /// An early congestion indication came.
    pub indication: bool,
    /// The ACK fell within the inference time of the previous indication.
    pub within_inference: bool,
}

pub struct Lp {
    cfg: LpConfig,
    /// Smoothed one-way delay x 8, ms (`sowd`).
    sowd: u32,
    owd_min: u32,
    owd_max: u32,
    owd_max_rsv: u32,
    /// The receiver's timestamp clock rate, Hz, estimated (`remote_hz`).
    remote_hz: u32,
    /// TSval and TSecr of the previous ACK (`remote_ref_time`, `local_ref_time`).
    remote_ref: u32,
    local_ref: u32,
    /// When the last indication came, ms (0: never; `last_drop`).
    last_drop: u32,
    /// The inference time, ms.
    inference: u32,
    last: LpEvent,
}

fn ticks(t: Time) -> u32 {
    (t / TS_TICK_PS) as u32
}

impl Lp {
    pub fn new(cfg: LpConfig) -> Self {
        Lp {
            cfg,
            sowd: 0,
            owd_min: u32::MAX,
            owd_max: 0,
            owd_max_rsv: 0,
            remote_hz: 0,
            remote_ref: 0,
            local_ref: 0,
            last_drop: 0,
            inference: 0,
            last: LpEvent::default(),
        }
    }

    /// The smoothed one-way delay, ms.
    pub fn smoothed_owd_ms(&self) -> u32 {
        self.sowd >> 3
    }

    /// The delay range kept, ms: (min, max).
    pub fn owd_range_ms(&self) -> (u32, u32) {
        (self.owd_min, self.owd_max)
    }

    /// The receiver's timestamp clock rate as estimated, Hz.
    pub fn remote_hz(&self) -> u32 {
        self.remote_hz
    }

    /// The inference time, ms.
    pub fn inference_ms(&self) -> u32 {
        self.inference
    }

    /// What the last ACK did.
    pub fn last_event(&self) -> LpEvent {
        self.last
    }

    /// `tcp_lp_remote_hz_estimator`: 1000 x the receiver's clock advance over the sender's
    /// between this ACK and the previous one, averaged with gain 1/64; unchanged when either
    /// clock stood still. The references move on every call.
    fn estimate_remote_hz(&mut self, tsval: u32, tsecr: u32) -> u32 {
        let mut rhz = (self.remote_hz as i64) << RHZ_SHIFT;
        if self.remote_ref != 0 && self.local_ref != 0 && tsval != self.remote_ref && tsecr != self.local_ref {
            // Linux's u32 arithmetic: a TSecr older than the reference wraps to a huge divisor.
            let m =
                (TS_HZ.wrapping_mul(tsval.wrapping_sub(self.remote_ref)) / tsecr.wrapping_sub(self.local_ref)) as i64;
            rhz = if rhz > 0 { rhz + m - (rhz >> RHZ_SHIFT) } else { m << RHZ_SHIFT };
        }
        self.remote_ref = tsval;
        self.local_ref = tsecr;
        (rhz >> RHZ_SHIFT) as u32
    }

    /// `tcp_lp_owd_calculator`: TSval scaled to the sender's milliseconds less TSecr, in u32;
    /// 0 (no sample) while the estimator has no rate. Departure: the receiver's clock here
    /// ticks at 1000 Hz, so the scale is 1; Linux scales by the integer 1000 / remote_hz, which
    /// is 0 whenever the estimate exceeds 1000 Hz, and a 1000 Hz receiver's estimate does on
    /// about half the ACKs (the mean of 1000 x dTSval / dTSecr over ACK pairs sits above the
    /// ratio of the means), so that the "delay" becomes -TSecr as a u32, about 2^32
    /// (docs/validation.md shows the trace).
    fn owd(&mut self, tsval: u32, tsecr: u32) -> u32 {
        self.remote_hz = self.estimate_remote_hz(tsval, tsecr);
        if self.remote_hz == 0 {
            return 0;
        }
        tsval.wrapping_sub(tsecr)
    }

    /// `tcp_lp_rtt_sample`: one one-way delay sample, ms.
    fn owd_sample(&mut self, tsval: u32, tsecr: u32) {
        let owd = self.owd(tsval, tsecr);
        if owd == 0 {
            return;
        }
        self.owd_min = self.owd_min.min(owd);
        if owd > self.owd_max {
            if owd > self.owd_max_rsv {
                self.owd_max = if self.owd_max_rsv == 0 { owd } else { self.owd_max_rsv };
                self.owd_max_rsv = owd;
            } else {
                self.owd_max = owd;
            }
        }
        // sowd is a u32 in Linux: error and sum wrap.
        self.sowd = if self.sowd != 0 { self.sowd.wrapping_add(owd.wrapping_sub(self.sowd >> 3)) } else { owd << 3 };
    }
}

impl CongestionControl for Lp {
    fn name(&self) -> &'static str {
        "lp"
    }

    fn init(&mut self, _s: &mut CcState) {
        *self = Lp::new(self.cfg.clone());
    }

    /// Reno's growth, but not within the inference time of an indication.
    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if !self.last.within_inference {
            reno_cong_avoid(s, ack.delivered_segments);
        }
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd >> 1).max(2)
    }

    /// `tcp_lp_pkts_acked`: the delay sample, the inference time, and the early congestion
    /// indication with its response.
    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some((ts_val, ts_ecr)) = ack.timestamps else { return };
        let (tsval, tsecr, now) = (ticks(ts_val), ticks(ts_ecr), ticks(s.now));
        if ack.rtt.is_some_and(|r| r > 0) {
            self.owd_sample(tsval, tsecr);
        }
        let delta = now.wrapping_sub(tsecr);
        if (delta as i32) > 0 {
            self.inference = self.cfg.inference_rtts.wrapping_mul(delta);
        }
        let within_inference = self.last_drop != 0 && now.wrapping_sub(self.last_drop) < self.inference;
        let spread = self.owd_max.wrapping_sub(self.owd_min);
        let threshold = self.owd_min.wrapping_add(self.cfg.threshold_percent.wrapping_mul(spread) / 100);
        self.last = LpEvent { indication: self.sowd >> 3 >= threshold, within_inference };
        if !self.last.indication {
            return;
        }
        // Restart the range around the smoothed delay, so the ACKs that follow (sent before
        // the cut) fall within the threshold.
        self.owd_min = self.sowd >> 3;
        self.owd_max = self.sowd >> 2;
        self.owd_max_rsv = self.sowd >> 2;
        s.cwnd = if within_inference { 1 } else { (s.cwnd >> 1).max(1) };
        self.last_drop = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::state;

    fn lp() -> Lp {
        Lp::new(LpConfig { threshold_percent: 15, inference_rtts: 3 })
    }

    /// One ACK, all times in ms: the sender's clock `now`, the receiver's TSval, the echoed
    /// TSecr; with an RTT sample.
    fn ack_ms(c: &mut Lp, s: &mut CcState, now: u32, tsval: u32, tsecr: u32) -> LpEvent {
        let ms = |t: u32| t as Time * PS_PER_MS;
        s.now = ms(now);
        let a = AckSample {
            rtt: Some(ms(now - tsecr)),
            timestamps: Some((ms(tsval), ms(tsecr))),
            ..AckSample::of_segments(1, 1448)
        };
        c.pkts_acked(s, &a);
        c.last_event()
    }

    /// An ACK without an RTT sample: the inference time and the threshold test only.
    fn ack_no_sample(c: &mut Lp, s: &mut CcState, now: u32, tsecr: u32) -> LpEvent {
        s.now = now as Time * PS_PER_MS;
        let stamps = Some(((tsecr + 10) as Time * PS_PER_MS, tsecr as Time * PS_PER_MS));
        c.pkts_acked(s, &AckSample { rtt: None, timestamps: stamps, ..AckSample::of_segments(1, 1448) });
        c.last_event()
    }

    /// ACKs every `step` ms from `from`, each for a segment sent `rtt` ms before with a
    /// one-way delay of `owd` ms (both clocks in step, at 1000 Hz), until `to`.
    fn acks(c: &mut Lp, s: &mut CcState, from: u32, to: u32, step: u32, rtt: u32, owd: u32) -> Vec<LpEvent> {
        (from..to).step_by(step as usize).map(|t| ack_ms(c, s, t, t - rtt + owd, t - rtt)).collect()
    }

    /// A connection whose range is min 10, max 40 ms and whose smoothed delay sits at 10 ms,
    /// long past any indication, at cwnd 100.
    fn seasoned() -> (Lp, CcState) {
        let mut c = lp();
        let mut s = state(100, u32::MAX);
        s.cwnd_limited = true;
        c.init(&mut s);
        // The first ACK only sets the rate references; at 1000 Hz on both sides the estimate
        // is 1000 x 1 / 1 from the second on.
        acks(&mut c, &mut s, 1000, 1010, 1, 50, 10);
        c.owd_max = 40;
        c.owd_max_rsv = 40;
        acks(&mut c, &mut s, 1010, 2000, 1, 50, 10);
        assert_eq!((c.smoothed_owd_ms(), c.owd_range_ms()), (10, (10, 40)));
        s.cwnd = 100;
        (c, s)
    }

    #[test]
    fn the_remote_clock_rate_is_estimated_from_successive_acks_before_any_sample() {
        let mut c = lp();
        let mut s = state(10, u32::MAX);
        c.init(&mut s);
        // First ACK: no reference yet, no rate, no sample (the window stays).
        ack_ms(&mut c, &mut s, 100, 60, 50);
        assert_eq!((c.remote_hz(), c.smoothed_owd_ms()), (0, 0));
        // Receiver clock advancing 1 ms per sender ms: 1000 Hz, then the delay TSval - TSecr.
        ack_ms(&mut c, &mut s, 101, 61, 51);
        assert_eq!((c.remote_hz(), c.smoothed_owd_ms()), (1000, 10));
        // A receiver clock at twice the rate moves the estimate 1/64 of the way: 1000 +
        // (2000 - 1000) / 64 = 1015. Linux would now scale TSval by the integer 1000 / 1015 =
        // 0; here the receiver's clock is known to tick at 1000 Hz and the sample is TSval -
        // TSecr = 11 ms, which moves the smoothed delay (x 8) from 80 to 81.
        ack_ms(&mut c, &mut s, 102, 63, 52);
        assert_eq!(c.remote_hz(), 1015);
        assert_eq!(c.sowd, 81);
        // Equal TSvals or TSecrs leave the estimate alone.
        ack_ms(&mut c, &mut s, 103, 63, 53);
        assert_eq!(c.remote_hz(), 1015);
    }

    #[test]
    fn the_threshold_is_min_plus_fifteen_percent_of_the_range() {
        // min 10, max 40: threshold 10 + 15 x 30 / 100 = 14 ms. A step to 16 ms moves the
        // smoothed delay (x 8) by 16 - sowd / 8 per ACK; the indication comes on the first
        // ACK whose sowd / 8 reaches 14, not before.
        let (mut c, mut s) = seasoned();
        let mut events = Vec::new();
        for t in 2000..2020 {
            events.push(ack_ms(&mut c, &mut s, t, t - 50 + 16, t - 50));
            if events.last().unwrap().indication {
                break;
            }
        }
        let n = events.len();
        assert!(events[..n - 1].iter().all(|e| !e.indication));
        assert!(events[n - 1].indication);
        let mut sowd8 = 80u32;
        let mut expect = 0;
        while sowd8 >> 3 < 14 {
            sowd8 += 16 - (sowd8 >> 3);
            expect += 1;
        }
        assert_eq!(n, expect);
        assert!(!events[n - 1].within_inference);
        assert_eq!(s.cwnd, 50, "outside the inference time: halved");
    }

    #[test]
    fn an_indication_restarts_min_and_max_around_the_smoothed_delay() {
        let (mut c, mut s) = seasoned();
        let mut t = 2000;
        while !ack_ms(&mut c, &mut s, t, t - 50 + 30, t - 50).indication {
            t += 1;
        }
        let sowd = c.smoothed_owd_ms();
        assert_eq!(c.owd_range_ms(), (c.sowd >> 3, c.sowd >> 2), "min = sowd, max = 2 sowd (of the x 8 value)");
        assert_eq!(c.owd_max_rsv, c.sowd >> 2);
        // The next ACK at the smoothed delay is within the new threshold, sowd + 15 % of sowd.
        t += 1;
        assert!(!ack_ms(&mut c, &mut s, t, t - 50 + sowd, t - 50).indication);
    }

    #[test]
    fn a_second_indication_within_three_rtts_cuts_to_one_segment_and_growth_waits() {
        let (mut c, mut s) = seasoned();
        // RTT 50 ms as the sender's clock sees it (now - TSecr): inference 150 ms.
        let mut t = 2000;
        while !ack_ms(&mut c, &mut s, t, t - 50 + 30, t - 50).indication {
            t += 1;
        }
        assert_eq!((s.cwnd, c.inference_ms()), (50, 150));
        // Within the inference time the window does not grow.
        let a = AckSample::of_segments(1, 1448);
        t += 1;
        let sowd = c.smoothed_owd_ms();
        assert!(ack_ms(&mut c, &mut s, t, t - 50 + sowd, t - 50).within_inference);
        c.cong_avoid(&mut s, &a);
        assert_eq!(s.cwnd, 50);
        // A delay far above the restarted range before 150 ms have passed: one segment.
        loop {
            t += 1;
            let e = ack_ms(&mut c, &mut s, t, t - 50 + 200, t - 50);
            if e.indication {
                assert!(e.within_inference);
                break;
            }
        }
        assert_eq!(s.cwnd, 1);
        // 150 ms after the last indication, at the base delay: out of the inference time, and
        // the window grows as Reno (slow start: ssthresh is untouched by LP's cuts).
        // ACKs without an RTT sample (no delay sample: the range stays as restarted).
        let last = t;
        assert!(ack_no_sample(&mut c, &mut s, last + 149, last + 99).within_inference);
        assert!(!ack_no_sample(&mut c, &mut s, last + 150, last + 100).within_inference);
        let cwnd = s.cwnd;
        c.cong_avoid(&mut s, &a);
        assert_eq!(s.cwnd, cwnd + 1);
    }

    #[test]
    fn the_maximum_stays_one_record_behind_the_largest() {
        // tcp_lp_rtt_sample alone (pkts_acked would restart the range at each indication).
        let mut c = lp();
        c.owd_sample(60, 50); // the rate estimator's first reference: no sample
        assert_eq!((c.owd_max, c.owd_max_rsv), (0, 0));
        c.owd_sample(61, 51); // the first sample: the maximum is the sample, and the reserve
        assert_eq!((c.owd_min, c.owd_max, c.owd_max_rsv), (10, 10, 10));
        c.owd_sample(102, 52); // a record: the maximum takes the old reserve, the reserve it
        assert_eq!((c.owd_max, c.owd_max_rsv), (10, 50));
        c.owd_sample(83, 53); // above the maximum, below the reserve: the maximum takes it
        assert_eq!((c.owd_max, c.owd_max_rsv), (30, 50));
        c.owd_sample(114, 54); // another record
        assert_eq!((c.owd_min, c.owd_max, c.owd_max_rsv), (10, 50, 60));
    }

    #[test]
    fn a_loss_halves_as_reno() {
        let mut c = lp();
        assert_eq!(c.ssthresh(&state(100, u32::MAX)), 50);
        assert_eq!(c.ssthresh(&state(3, u32::MAX)), 2);
    }
}
