//! Linux's coarse clock, for the Linux forms of the algorithms that count time in jiffies
//! (`tcp_jiffies32`): CUBIC's epoch, Westwood+'s sampling windows.

use crate::time::{Time, PS_PER_S};

/// A jiffies clock of `hz` ticks per second, from simulated time 0.
#[derive(Clone, Copy, Debug)]
pub struct Jiffies {
    hz: u64,
}

impl Jiffies {
    pub fn new(hz: u32) -> Self {
        Jiffies { hz: hz as u64 }
    }

    /// Ticks per second (Linux `HZ`).
    pub fn hz(&self) -> u64 {
        self.hz
    }

    /// The jiffy count at `t`.
    pub fn at(&self, t: Time) -> u64 {
        (t as u128 * self.hz as u128 / PS_PER_S as u128) as u64
    }

    /// Linux `usecs_to_jiffies`: rounds up.
    pub fn from_us(&self, us: u64) -> u64 {
        (us as u128 * self.hz as u128).div_ceil(1_000_000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    #[test]
    fn jiffies_count_down_and_microseconds_round_up() {
        let j = Jiffies::new(250); // HZ_250: a jiffy is 4 ms
        assert_eq!(j.at(4 * PS_PER_MS - 1), 0);
        assert_eq!(j.at(4 * PS_PER_MS), 1);
        assert_eq!(j.from_us(1), 1);
        assert_eq!(j.from_us(4_000), 1);
        assert_eq!(j.from_us(4_001), 2);
    }
}
