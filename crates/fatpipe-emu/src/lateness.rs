//! How late the emulator released packets against the times its links scheduled: a
//! histogram of 1 us bins up to 10 ms (and one bin above), so recording costs one increment
//! and nothing is allocated per packet; the maximum is kept exactly.

use fatpipe_core::time::{Time, PS_PER_US};
use serde_json::{json, Value};

const BINS: usize = 10_000;

pub struct Lateness {
    bins: Vec<u64>,
    over: u64,
    count: u64,
    max_ps: Time,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness { bins: vec![0; BINS], over: 0, count: 0, max_ps: 0 }
    }
}

impl Lateness {
    #[inline]
    pub fn record(&mut self, late_ps: Time) {
        let bin = (late_ps / PS_PER_US) as usize;
        match self.bins.get_mut(bin) {
            Some(b) => *b += 1,
            None => self.over += 1,
        }
        self.count += 1;
        self.max_ps = self.max_ps.max(late_ps);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max_ps(&self) -> Time {
        self.max_ps
    }

    /// The `q` quantile (0..=1), to the upper edge of its 1 us bin (the maximum if it falls
    /// beyond the last bin); None without samples.
    pub fn quantile_ps(&self, q: f64) -> Option<Time> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(((i as u64 + 1) * PS_PER_US).min(self.max_ps));
            }
        }
        Some(self.max_ps)
    }

    pub fn summary(&self) -> Value {
        json!({
            "packets": self.count,
            "median_ps": self.quantile_ps(0.5),
            "p99_ps": self.quantile_ps(0.99),
            "max_ps": (self.count > 0).then_some(self.max_ps),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_to_the_microsecond() {
        let mut l = Lateness::default();
        assert_eq!(l.quantile_ps(0.5), None);
        for us in 1..=100u64 {
            l.record(us * PS_PER_US - 1);
        }
        l.record(50_000 * PS_PER_US); // 50 ms: beyond the bins
        assert_eq!(l.quantile_ps(0.5), Some(51 * PS_PER_US));
        assert_eq!(l.quantile_ps(0.99), Some(100 * PS_PER_US));
        assert_eq!(l.quantile_ps(1.0), Some(50_000 * PS_PER_US));
        assert_eq!(l.max_ps(), 50_000 * PS_PER_US);
    }
}
