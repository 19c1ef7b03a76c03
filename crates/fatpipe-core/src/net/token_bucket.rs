//! A token bucket, the arithmetic the policer (`impairment/policer.rs`, drops what exceeds
//! it) and the TBF shaper (`queue/tbf.rs`, holds what exceeds it) share: a bucket of
//! `depth_bytes` filling at `rate_bps`, starting full. Tokens are kept exactly, in
//! bit-picoseconds per second (bits x 10^12: a byte at 1 bit/s takes 8 x 10^12 of these per
//! second), so that no rounding accumulates over a long run. Linux keeps them as
//! nanoseconds of transmission time at the rate (`sch_tbf.c` `tokens`, `act_police.c`
//! `tcfp_toks`), which is the same bucket in other units.

use crate::time::{Time, PS_PER_S};

#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate_bps: u64,
    /// The bucket's depth and its tokens, bits x 10^12.
    depth: u128,
    tokens: u128,
    /// When the tokens were counted (None: not yet; the bucket is full).
    at: Option<Time>,
}

impl TokenBucket {
    /// A full bucket of `depth_bytes` filling at `rate_bps`.
    pub fn full(rate_bps: u64, depth_bytes: u64) -> Self {
        let depth = Self::scaled(depth_bytes);
        TokenBucket { rate_bps, depth, tokens: depth, at: None }
    }

    fn scaled(bytes: u64) -> u128 {
        u128::from(bytes) * 8 * u128::from(PS_PER_S)
    }

    /// The tokens at `now`, bits x 10^12.
    #[inline]
    fn tokens_at(&self, now: Time) -> u128 {
        let elapsed = self.at.map_or(0, |at| now.saturating_sub(at));
        (self.tokens + u128::from(elapsed) * u128::from(self.rate_bps)).min(self.depth)
    }

    /// Whether the bucket holds `bytes` at `now`.
    #[inline]
    pub fn holds(&self, now: Time, bytes: u32) -> bool {
        self.tokens_at(now) >= Self::scaled(u64::from(bytes))
    }

    /// Takes `bytes` at `now` if the bucket holds them; otherwise leaves it as it is.
    #[inline]
    pub fn take(&mut self, now: Time, bytes: u32) -> bool {
        // Counting the tokens now changes nothing when none are taken: the bucket fills
        // the same whether it is counted at one time or at two.
        self.tokens = self.tokens_at(now);
        self.at = Some(now);
        let need = Self::scaled(u64::from(bytes));
        if self.tokens < need {
            return false;
        }
        self.tokens -= need;
        true
    }

    /// How long after `now` the bucket holds `bytes` (0 if it does now): the missing
    /// tokens at the rate, rounded up to a whole picosecond.
    pub fn wait_for(&self, now: Time, bytes: u32) -> Time {
        let missing = Self::scaled(u64::from(bytes)).saturating_sub(self.tokens_at(now));
        missing.div_ceil(u128::from(self.rate_bps)) as Time
    }

    /// The whole bytes in the bucket when it was last counted (`take`).
    pub fn bytes(&self) -> u64 {
        (self.tokens / Self::scaled(1)) as u64
    }
}
