//! A token-bucket policer: what enters the link above `rate_bps` once a bucket of
//! `burst_bytes` is spent is dropped, nothing is queued or delayed (a single-rate, two-color
//! marker with red dropped, RFC 2697's committed bucket alone; Linux `act_police` with
//! `conform-exceed drop`, `tcf_police_act`). Flach et al., "An Internet-Wide Analysis of
//! Traffic Policing" (SIGCOMM 2016), found such policers on up to 7 % of the connections in
//! some regions, with loss rates around 20 % for the policed flows; BBR's `lt_bw`
//! (`cc/bbr/lt_bw.rs`) was made to detect them.
//!
//! The bucket holds at most `burst_bytes` and fills at `rate_bps`; a packet of `ip_bytes`
//! passes when the bucket holds at least that many and takes them, else it is dropped and
//! the bucket is left as it was. It starts full. The bucket's arithmetic (`token_bucket.rs`)
//! is the TBF shaper's too, which holds such packets instead (`queue/tbf.rs`).

use crate::net::token_bucket::TokenBucket;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicerConfig {
    /// The policed rate, bits per second of IP packets.
    pub rate_bps: u64,
    /// The bucket's depth, bytes: the burst that passes at any rate after a quiet period.
    pub burst_bytes: u64,
}

impl PolicerConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 {
            return Err("rate_bps: 0 is not allowed: a policer passes at a positive rate".into());
        }
        if self.burst_bytes == 0 {
            return Err("burst_bytes: 0 is not allowed: the bucket must hold at least one packet".into());
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub struct Policer {
    bucket: TokenBucket,
}

impl Policer {
    pub fn new(cfg: PolicerConfig) -> Self {
        Policer { bucket: TokenBucket::full(cfg.rate_bps, cfg.burst_bytes) }
    }

    /// Whether a packet of `ip_bytes` entering at `now` exceeds the rate (and is dropped).
    #[inline]
    pub fn drops(&mut self, now: Time, ip_bytes: u32) -> bool {
        !self.bucket.take(now, ip_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{transmission_time, PS_PER_MS, PS_PER_S};

    fn policer(rate_bps: u64, burst_bytes: u64) -> Policer {
        Policer::new(PolicerConfig { rate_bps, burst_bytes })
    }

    #[test]
    fn a_full_bucket_passes_the_burst_then_exactly_the_rate() {
        // 10 Mb/s, 15,000-byte bucket: ten 1500-byte packets at once pass, the eleventh not.
        let mut p = policer(10_000_000, 15_000);
        let passed = (0..11).filter(|_| !p.drops(0, 1500)).count();
        assert_eq!(passed, 10);
        // A packet's worth of tokens comes back in 1500 x 8 / 10 Mb/s = 1.2 ms, not before.
        let refill = transmission_time(1500, 10_000_000);
        assert_eq!(refill, 1_200_000_000);
        assert!(p.drops(refill - 1, 1500));
        assert!(!p.drops(refill, 1500));
    }

    #[test]
    fn offered_twice_the_rate_half_passes_over_a_long_run() {
        // 20 Mb/s offered into a 10 Mb/s policer for 10 s: the bucket plus 10 s of the rate.
        let mut p = policer(10_000_000, 30_000);
        let gap = transmission_time(1500, 20_000_000);
        let offered = 10_000 * PS_PER_MS / gap;
        let passed = (0..offered).filter(|&i| !p.drops(i * gap, 1500)).count() as u64;
        let expected = (10_000_000 * 10 / 8 + 30_000) / 1500;
        assert!(passed.abs_diff(expected) <= 1, "{passed} passed, {expected} expected");
    }

    #[test]
    fn a_quiet_period_refills_no_more_than_the_bucket() {
        let mut p = policer(1_000_000, 3000);
        assert!(!p.drops(0, 1500));
        assert!(!p.drops(0, 1500));
        assert!(p.drops(0, 1500));
        // An hour later: still only two packets.
        let hour = 3600 * PS_PER_S;
        assert_eq!((0..3).filter(|_| !p.drops(hour, 1500)).count(), 2);
        assert!(PolicerConfig { rate_bps: 0, burst_bytes: 1 }.validate().unwrap_err().starts_with("rate_bps: 0"));
    }
}
