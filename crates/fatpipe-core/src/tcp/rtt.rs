//! Round-trip time estimation and the retransmission timeout: RFC 6298, or Linux's
//! `tcp_rtt_estimator` and `tcp_set_rto` (net/ipv4/tcp_input.c).
//!
//! Linux's estimator keeps SRTT as RFC 6298 does but treats the variation differently:
//! mdev (4 x the mean deviation) takes falling samples with an eighth of the gain, so a
//! shrinking RTT does not pull the RTO down fast (an Eifel finding), and the RTTVAR used in
//! the RTO is the largest mdev of the last round trip, never below min_rto, decaying toward
//! it once per round trip. So RTO = SRTT + max(4 mdev, min_rto): about 300 ms on a 100 ms
//! path, where RFC 6298's SRTT + 4 RTTVAR, clamped at min_rto, decays toward 200 ms.
//!
//! With 4.4BSD's coarse timers (`bsd_timers.rs`) the timeout is BSD's, counted in ticks of
//! its 500 ms slow timer, and the timer expires on a tick; SRTT is still kept exactly here
//! for reports and pacing.

use super::bsd_timers::BsdRto;
use crate::time::Time;

#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// Smoothed RTT (RFC 6298 SRTT), picoseconds; None before the first sample.
    pub srtt: Option<Time>,
    /// RTT variation (RFC 6298 RTTVAR), picoseconds.
    pub rttvar: Time,
    /// Smallest RTT sample seen, picoseconds.
    pub min_rtt: Option<Time>,
    /// Most recent RTT sample.
    pub latest: Option<Time>,
    /// Current timeout before backoff, picoseconds.
    rto_base: Time,
    /// Exponential backoff: the timeout is doubled this many times (RFC 6298 5.5).
    pub backoff: u32,
    min_rto: Time,
    max_rto: Time,
    /// Linux's estimator state, in its scaled units (8 SRTT, 4 mdev), picoseconds; srtt8 is
    /// 0 before the first sample. `rtt_seq`: the round trip ends when SND.UNA passes it.
    srtt8: i64,
    mdev4: i64,
    mdev_max4: i64,
    rttvar4: i64,
    rtt_seq: u64,
    /// 4.4BSD's timeout in ticks of the slow timer, when the flow runs BSD's timers.
    bsd: Option<BsdRto>,
}

impl RttEstimator {
    pub fn new(initial_rto: Time, min_rto: Time, max_rto: Time) -> Self {
        RttEstimator {
            srtt: None,
            rttvar: 0,
            min_rtt: None,
            latest: None,
            rto_base: initial_rto,
            backoff: 0,
            min_rto,
            max_rto,
            srtt8: 0,
            mdev4: 0,
            mdev_max4: 0,
            rttvar4: 0,
            rtt_seq: 0,
            bsd: None,
        }
    }

    /// The timeout is 4.4BSD's, in ticks of the slow timer of period `tick`.
    pub fn with_bsd_timer(mut self, tick: Time) -> Self {
        self.bsd = Some(BsdRto::new(tick, self.rto_base, self.min_rto, self.max_rto));
        self
    }

    /// A segment sent at `sent` is acknowledged at `now` (an RFC stack sample): RFC 6298,
    /// and BSD's tick count too when the flow runs BSD's timers.
    pub fn sample_sent(&mut self, sent: Time, now: Time) {
        if let Some(bsd) = &mut self.bsd {
            bsd.sample(sent, now);
        }
        self.sample(now.saturating_sub(sent));
    }

    /// When a retransmission timer started at `now` expires: after the timeout, or with
    /// BSD's timers on the slow timer's tick.
    pub fn deadline(&self, now: Time) -> Time {
        match &self.bsd {
            Some(bsd) => bsd.deadline(now),
            None => now + self.rto(),
        }
    }

    /// Feeds one RTT measurement to Linux's estimator (`tcp_rtt_estimator`, `tcp_set_rto`);
    /// `snd_una` and `snd_nxt` delimit its round trips. A new sample ends backoff. The
    /// minimum RTT is kept apart (`note_min_rtt`), from the newest segment's sample, as
    /// Linux's `tcp_update_rtt_min` does.
    pub fn sample_linux(&mut self, rtt: Time, snd_una: u64, snd_nxt: u64) {
        let m = rtt.min(i64::MAX as Time) as i64;
        let rto_min = self.min_rto as i64;
        if self.srtt8 != 0 {
            let mut err = m - (self.srtt8 >> 3);
            self.srtt8 += err;
            if err < 0 {
                err = -err - (self.mdev4 >> 2);
                if err > 0 {
                    err >>= 3; // a falling RTT moves mdev with gain 1/32, not 1/4
                }
            } else {
                err -= self.mdev4 >> 2;
            }
            self.mdev4 += err;
            if self.mdev4 > self.mdev_max4 {
                self.mdev_max4 = self.mdev4;
                self.rttvar4 = self.rttvar4.max(self.mdev_max4);
            }
            if snd_una > self.rtt_seq {
                // A round trip ended: RTTVAR decays toward this round's largest mdev.
                if self.mdev_max4 < self.rttvar4 {
                    self.rttvar4 -= (self.rttvar4 - self.mdev_max4) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max4 = rto_min;
            }
        } else {
            self.srtt8 = m << 3;
            self.mdev4 = m << 1; // RTO = 3 RTT at first
            self.rttvar4 = self.mdev4.max(rto_min);
            self.mdev_max4 = self.rttvar4;
            self.rtt_seq = snd_nxt;
        }
        self.srtt8 = self.srtt8.max(1);
        let srtt = (self.srtt8 >> 3) as Time;
        self.srtt = Some(srtt);
        self.rttvar = (self.rttvar4 / 4) as Time;
        self.latest = Some(rtt);
        self.rto_base = srtt + self.rttvar4 as Time;
        self.backoff = 0;
    }

    /// Linux's estimator state on its own scales (8 x SRTT, `tp->srtt`; 4 x mean deviation,
    /// `tp->mdev`; the RTO's variation term, `tp->rttvar`), picoseconds; zeros before the
    /// first sample. An RFC 6298 estimator gives its SRTT and 4 RTTVAR on the same scales, so
    /// a metrics cache reads either.
    pub fn linux_scaled(&self) -> (i64, i64, i64) {
        if self.srtt8 != 0 {
            return (self.srtt8, self.mdev4, self.rttvar4);
        }
        match self.srtt {
            Some(s) => {
                let var4 = (self.rttvar.min(i64::MAX as Time / 4) as i64) << 2;
                ((s.min(i64::MAX as Time / 8) as i64) << 3, var4, var4)
            }
            None => (0, 0, 0),
        }
    }

    /// Linux 2.4 `tcp_init_metrics`: SRTT raised to a destination's cached one, mdev to its
    /// cached deviation (then `mdev_max` and `rttvar` at least min_rto), and the RTO computed
    /// again from them (`tcp_set_rto`: SRTT + rttvar).
    pub fn seed_linux24(&mut self, srtt8: i64, mdev4: i64) {
        if srtt8 > self.srtt8 {
            self.srtt8 = srtt8;
        }
        if mdev4 > self.mdev4 {
            self.mdev4 = mdev4;
            self.rttvar4 = mdev4.max(self.min_rto as i64);
            self.mdev_max4 = self.rttvar4;
        }
        self.srtt = (self.srtt8 > 0).then_some((self.srtt8 >> 3) as Time);
        self.rttvar = (self.rttvar4 / 4) as Time;
        self.rto_base = (self.srtt8 >> 3) as Time + self.rttvar4 as Time;
    }

    /// Linux 2.4 `tcp_init_metrics`' reset ("FORGET ALL AND RESET!"): no SRTT, and mdev,
    /// rttvar and the RTO at `timeout` (TCP_TIMEOUT_INIT).
    pub fn forget(&mut self, timeout: Time) {
        let t = timeout.min(i64::MAX as Time) as i64;
        self.srtt8 = 0;
        self.srtt = None;
        self.mdev4 = t;
        self.mdev_max4 = t;
        self.rttvar4 = t;
        self.rttvar = timeout / 4;
        self.rto_base = timeout;
    }

    /// The RTO before the first sample, the estimator left as it is (Linux 3.6 and later
    /// `tcp_init_metrics`: a cached RTT "only influences the first RTO").
    pub fn set_first_rto(&mut self, rto: Time) {
        self.rto_base = rto;
    }

    /// A sample for the minimum RTT only.
    pub fn note_min_rtt(&mut self, rtt: Time) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// The smallest timeout allowed.
    pub fn min_rto(&self) -> Time {
        self.min_rto
    }

    /// Feeds one RTT measurement (RFC 6298 2.2-2.3, alpha 1/8, beta 1/4, K 4; the clock
    /// granularity G is zero: the simulator's clock is exact). A new sample ends backoff.
    pub fn sample(&mut self, rtt: Time) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                self.rttvar = (3 * self.rttvar + err) / 4;
                self.srtt = Some((7 * srtt + rtt) / 8);
            }
        }
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.latest = Some(rtt);
        self.rto_base = self.srtt.unwrap() + 4 * self.rttvar;
        self.backoff = 0;
    }

    /// The retransmission timeout in force: clamped to [min_rto, max_rto] and backed off.
    pub fn rto(&self) -> Time {
        if let Some(bsd) = &self.bsd {
            return bsd.rto();
        }
        let base = self.rto_base.clamp(self.min_rto, self.max_rto);
        base.checked_shl(self.backoff).unwrap_or(Time::MAX).min(self.max_rto)
    }

    /// The largest timeout.
    pub fn max_rto(&self) -> Time {
        self.max_rto
    }

    /// Doubles the timeout after an expiry (RFC 6298 5.5; BSD's `tcp_backoff[]`).
    pub fn back_off(&mut self) {
        if let Some(bsd) = &mut self.bsd {
            bsd.back_off();
            return;
        }
        if self.rto() < self.max_rto {
            self.backoff += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    #[test]
    fn first_sample_and_smoothing_follow_rfc6298() {
        let mut e = RttEstimator::new(1000 * PS_PER_MS, 0, 60_000 * PS_PER_MS);
        assert_eq!(e.rto(), 1000 * PS_PER_MS);
        e.sample(100 * PS_PER_MS);
        // SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR = 3R.
        assert_eq!(e.rto(), 300 * PS_PER_MS);
        e.sample(200 * PS_PER_MS);
        // RTTVAR = 3/4*50 + 1/4*100 = 62.5; SRTT = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.srtt, Some(112_500_000_000));
        assert_eq!(e.rttvar, 62_500_000_000);
    }

    #[test]
    fn min_rto_and_backoff() {
        let mut e = RttEstimator::new(1000 * PS_PER_MS, 200 * PS_PER_MS, 1000 * PS_PER_MS);
        for _ in 0..50 {
            e.sample(10 * PS_PER_MS);
        }
        assert_eq!(e.rto(), 200 * PS_PER_MS);
        e.back_off();
        assert_eq!(e.rto(), 400 * PS_PER_MS);
        e.back_off();
        e.back_off();
        assert_eq!(e.rto(), 1000 * PS_PER_MS, "capped at max_rto");
        e.sample(10 * PS_PER_MS);
        assert_eq!(e.rto(), 200 * PS_PER_MS, "a new sample ends backoff");
    }

    #[test]
    fn linux_rto_stays_near_srtt_plus_min_rto() {
        // A steady 100 ms path sampled every ACK, 10 ACKs per round trip: RFC 6298's RTO
        // decays to its 200 ms floor, Linux's stays at SRTT + 200 ms = 300 ms.
        let (rtt, min_rto) = (100 * PS_PER_MS, 200 * PS_PER_MS);
        let mut rfc = RttEstimator::new(1000 * PS_PER_MS, min_rto, 120_000 * PS_PER_MS);
        let mut linux = rfc.clone();
        let mut una = 0;
        for round in 0..50u64 {
            for k in 0..10 {
                una = round * 10 + k;
                rfc.sample(rtt);
                linux.sample_linux(rtt, una, una + 10);
            }
        }
        assert_eq!(rfc.rto(), min_rto);
        assert_eq!(linux.rto(), rtt + min_rto);
        assert_eq!(linux.srtt, Some(rtt));
        // The first sample gives 3 RTT, as RFC 6298 does, but never less than RTT + min_rto.
        let mut first = RttEstimator::new(1000 * PS_PER_MS, min_rto, 120_000 * PS_PER_MS);
        first.sample_linux(rtt, una, una + 10);
        assert_eq!(first.rto(), rtt + min_rto);
        let mut long = RttEstimator::new(1000 * PS_PER_MS, min_rto, 120_000 * PS_PER_MS);
        long.sample_linux(1000 * PS_PER_MS, 0, 10);
        assert_eq!(long.rto(), 3000 * PS_PER_MS);
    }

    #[test]
    fn linux_damps_a_falling_rtt_and_follows_a_rising_one() {
        // After a 300 ms sample on a 100 ms estimate, mdev jumps (gain 1/4); after a 0 ms
        // sample it moves with gain 1/32: the RTO falls far less.
        let min_rto = 10 * PS_PER_MS;
        let base = || {
            let mut e = RttEstimator::new(1000 * PS_PER_MS, min_rto, 120_000 * PS_PER_MS);
            for i in 0..40 {
                e.sample_linux(100 * PS_PER_MS, i, i + 1);
            }
            e
        };
        let mut up = base();
        up.sample_linux(300 * PS_PER_MS, 100, 101);
        let mut down = base();
        down.sample_linux(0, 100, 101);
        let steady = base().rto();
        assert!(up.rto() - steady > 3 * (steady - down.rto().min(steady)), "{} {} {}", up.rto(), steady, down.rto());
    }
}
