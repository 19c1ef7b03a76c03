//! TCP-LP, low priority (Kuzmanovic and Knightly, "TCP-LP: a distributed algorithm for low
//! priority data transfer", INFOCOM 2003), as Linux `net/ipv4/tcp_lp.c` runs it: a flow that
//! uses only the capacity other (fair-share) flows leave, by reacting to one-way delay before
//! they see a loss.
//!
//! - One-way delay from the timestamp option: the receiver's TSval less the echoed TSecr, in
//!   the timestamp clock's ticks (ms), smoothed with gain 1/8 (sowd); its minimum and maximum
//!   are kept (the maximum one sample behind the largest, so one outlier does not stretch it).
//! - Early congestion indication: the smoothed delay at or above min + 15 % of (max - min).
//!   Then the window halves, or, if the last indication was less than an inference time ago
//!   (3 RTTs, from the timestamps), falls to one segment; min and max restart around the
//!   smoothed delay.
//! - Within the inference time after an indication the window does not grow; otherwise it
//!   grows as Reno (`tcp_reno_cong_avoid`), and a loss halves it (`tcp_reno_ssthresh`).
//!
//! As Linux: the first sample sets min and max to itself, so the first ACK is an indication
//! (the window halves once at the start); the arithmetic is Linux's u32. Departure: Linux
//! estimates the remote timestamp clock's rate and scales TSval by 1000 / that rate in integer
//! division (1 when the estimate is 501..1000 Hz, 0 above, when the delay it computes is
//! meaningless); both ends here tick at 1000 Hz, so the factor is 1 and the estimator is left
//! out. TCP-LP needs timestamps (the scenario refuses it without them).

use super::{reno_cong_avoid, AckSample, CcState, CongestionControl};
use crate::time::{Time, PS_PER_MS};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The timestamp clock's tick (Linux `TCP_TS_HZ` = 1000: milliseconds).
const TS_TICK_PS: Time = PS_PER_MS;

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

pub struct Lp {
    cfg: LpConfig,
    /// Smoothed one-way delay x 8, ticks.
    sowd: u32,
    owd_min: u32,
    owd_max: u32,
    owd_max_rsv: u32,
    /// When the last indication came, ticks (0: never).
    last_drop: u32,
    /// The inference time, ticks.
    inference: u32,
    within_inference: bool,
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
            last_drop: 0,
            inference: 0,
            within_inference: false,
        }
    }

    /// The smoothed one-way delay, ticks (ms).
    pub fn smoothed_owd(&self) -> u32 {
        self.sowd >> 3
    }

    /// Whether the last ACK fell within the inference time of an indication.
    pub fn within_inference(&self) -> bool {
        self.within_inference
    }

    /// `tcp_lp_rtt_sample`: one one-way delay sample, ticks.
    fn owd_sample(&mut self, owd: u32) {
        if owd == 0 {
            return; // Linux: no valid OWD
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
        if self.sowd != 0 {
            let error = owd.wrapping_sub(self.sowd >> 3);
            self.sowd = self.sowd.wrapping_add(error);
        } else {
            self.sowd = owd << 3;
        }
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
        if !self.within_inference {
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
            self.owd_sample(tsval.abs_diff(tsecr));
        }
        let delta = now.wrapping_sub(tsecr) as i32;
        if delta > 0 {
            self.inference = self.cfg.inference_rtts.saturating_mul(delta as u32);
        }
        self.within_inference = self.last_drop != 0 && now.wrapping_sub(self.last_drop) < self.inference;
        let spread = self.owd_max.wrapping_sub(self.owd_min);
        let threshold = self.owd_min.wrapping_add((self.cfg.threshold_percent as u64 * spread as u64 / 100) as u32);
        if self.sowd >> 3 < threshold {
            return;
        }
        // Early congestion indication: restart min and max around the smoothed delay.
        self.owd_min = self.sowd >> 3;
        self.owd_max = self.sowd >> 2;
        self.owd_max_rsv = self.sowd >> 2;
        s.cwnd = if self.within_inference { 1 } else { (s.cwnd >> 1).max(1) };
        self.last_drop = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::state;

    const MSS: u32 = 1448;
    const RTT: Time = 100 * PS_PER_MS;

    fn lp() -> Lp {
        Lp::new(LpConfig { threshold_percent: 15, inference_rtts: 3 })
    }

    /// An ACK at `now` for a segment sent at `now - RTT` whose one-way trip took `owd`.
    fn ack_at(s: &mut CcState, now: Time, owd: Time) -> AckSample {
        s.now = now;
        let sent = now - RTT;
        AckSample { rtt: Some(RTT), timestamps: Some((sent + owd, sent)), ..AckSample::of_segments(1, MSS) }
    }

    /// A connection past its first ACK (which halves once) that has seen one-way delays from
    /// 50 ms (empty queue) to 150 ms (full).
    fn seasoned() -> (Lp, CcState) {
        let mut c = lp();
        let mut s = state(100, 1000);
        c.init(&mut s);
        let mut t = 10 * RTT;
        for owd in [50, 50, 150, 150, 150, 50] {
            let a = ack_at(&mut s, t, owd * PS_PER_MS);
            c.pkts_acked(&mut s, &a);
            t += RTT;
        }
        // Let the smoothed delay fall back to the minimum and the inference time pass.
        for _ in 0..60 {
            let a = ack_at(&mut s, t, 50 * PS_PER_MS);
            c.pkts_acked(&mut s, &a);
            t += RTT;
        }
        s.cwnd = 100;
        (c, s)
    }

    #[test]
    fn the_first_ack_is_an_indication_and_halves() {
        let mut c = lp();
        let mut s = state(10, 1000);
        c.init(&mut s);
        let a = ack_at(&mut s, RTT, 50 * PS_PER_MS);
        c.pkts_acked(&mut s, &a);
        assert_eq!(s.cwnd, 5, "min = max = the sample: not below min + 15 %");
    }

    #[test]
    fn a_delay_past_fifteen_percent_halves_then_a_second_within_three_rtts_cuts_to_one() {
        let (mut c, mut s) = seasoned();
        let (min, max) = (c.owd_min, c.owd_max);
        assert!(c.smoothed_owd() < min + 15 * (max - min) / 100, "below the threshold: nothing");
        let mut t = s.now + RTT;
        // Delays at the maximum: the smoothed delay rises 1/8 of the way per ACK and crosses
        // min + 15 % (max - min) after a few ACKs: the window halves.
        let mut acks = 0;
        while s.cwnd == 100 {
            let a = ack_at(&mut s, t, (max as Time) * PS_PER_MS);
            c.pkts_acked(&mut s, &a);
            t += RTT / 10;
            acks += 1;
            assert!(acks < 20);
        }
        assert_eq!(s.cwnd, 50);
        // The next ACK, at the smoothed delay: no indication (min and max restarted around it),
        // but it falls within the inference time (3 RTTs of 100 ms), so the window does not
        // grow.
        let a = ack_at(&mut s, t, c.smoothed_owd() as Time * PS_PER_MS);
        c.pkts_acked(&mut s, &a);
        t += RTT / 10;
        c.cong_avoid(&mut s, &AckSample::of_segments(1, MSS));
        assert!(c.within_inference());
        assert_eq!(s.cwnd, 50);
        // Another indication within it: one segment.
        while s.cwnd == 50 {
            let a = ack_at(&mut s, t, 3 * (max as Time) * PS_PER_MS);
            c.pkts_acked(&mut s, &a);
            t += RTT / 10;
        }
        assert_eq!(s.cwnd, 1);
    }

    #[test]
    fn after_the_inference_time_it_grows_as_reno() {
        let (mut c, mut s) = seasoned();
        assert!(!c.within_inference());
        s.ssthresh = 50;
        for _ in 0..100 {
            c.cong_avoid(&mut s, &AckSample::of_segments(1, MSS));
        }
        assert_eq!(s.cwnd, 101);
        assert_eq!(c.ssthresh(&s), 50);
    }
}
