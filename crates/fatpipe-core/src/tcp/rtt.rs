//! Round-trip time estimation and the retransmission timeout (RFC 6298).

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
        }
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
        let base = self.rto_base.clamp(self.min_rto, self.max_rto);
        base.checked_shl(self.backoff).unwrap_or(Time::MAX).min(self.max_rto)
    }

    /// The largest timeout.
    pub fn max_rto(&self) -> Time {
        self.max_rto
    }

    /// Doubles the timeout after an expiry (RFC 6298 5.5).
    pub fn back_off(&mut self) {
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
}
