//! The receiving application when it reads at a limited rate (document 000: "the end hosts
//! limited TCP to about 130 Mb/s"): it reads in-order bytes from the receive buffer at
//! `rate_bps` whenever there are any.
//!
//! Computed lazily, with no event per byte: while the reader is busy, the bytes it has read are
//! an affine function of time from an anchor (the moment it last started after running dry),
//! rounded down to whole bytes. The anchor moves only when new data finds it idle, so rounding
//! never accumulates.

use crate::time::{Time, PS_PER_S};

/// Bits times picoseconds per byte-second: bytes = (t x rate) / BITS_PS_PER_BYTE.
const BITS_PS_PER_BYTE: u128 = 8 * PS_PER_S as u128;

#[derive(Clone, Debug)]
pub struct AppReader {
    rate_bps: u64,
    /// When the reader last started reading after running dry, and its count then.
    anchor_ps: Time,
    anchor_read: u64,
}

impl AppReader {
    pub fn new(rate_bps: u64) -> AppReader {
        AppReader { rate_bps: rate_bps.max(1), anchor_ps: 0, anchor_read: 0 }
    }

    /// Bytes read by `now`, when `available` in-order bytes have arrived.
    #[inline]
    pub fn read(&self, now: Time, available: u64) -> u64 {
        let elapsed = now.saturating_sub(self.anchor_ps) as u128;
        let could = self.anchor_read as u128 + elapsed * self.rate_bps as u128 / BITS_PS_PER_BYTE;
        could.min(available as u128) as u64
    }

    /// In-order data arrives at `now`; `available` is the in-order byte count before it. A
    /// reader that had run dry starts again now.
    #[inline]
    pub fn on_arrival(&mut self, now: Time, available: u64) {
        if self.read(now, available) == available {
            self.anchor_ps = now;
            self.anchor_read = available;
        }
    }

    /// The earliest time at which `target` bytes have been read, given that `available >=
    /// target` bytes are in order and nothing in the reading before `now` is changed.
    pub fn time_to_read(&self, now: Time, available: u64, target: u64) -> Time {
        debug_assert!(target <= available);
        if self.read(now, available) >= target {
            return now;
        }
        let bytes = (target - self.anchor_read) as u128;
        let t = self.anchor_ps as u128 + (bytes * BITS_PS_PER_BYTE).div_ceil(self.rate_bps as u128);
        t.min(Time::MAX as u128) as Time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    #[test]
    fn reads_at_the_rate_and_waits_when_dry() {
        // 8 Mb/s = 1000 bytes per ms.
        let mut r = AppReader::new(8_000_000);
        r.on_arrival(0, 0); // 5000 bytes arrive at 0
        assert_eq!(r.read(2 * PS_PER_MS, 5000), 2000);
        assert_eq!(r.read(9 * PS_PER_MS, 5000), 5000, "runs dry at 5 ms");
        r.on_arrival(9 * PS_PER_MS, 5000); // 1000 more at 9 ms: reading restarts then
        assert_eq!(r.read(9 * PS_PER_MS + PS_PER_MS / 2, 6000), 5500);
        assert_eq!(r.time_to_read(9 * PS_PER_MS, 6000, 5800), 9 * PS_PER_MS + 4 * PS_PER_MS / 5);
        // Arrivals while busy do not move the anchor.
        r.on_arrival(9 * PS_PER_MS + PS_PER_MS / 2, 6000);
        assert_eq!(r.read(10 * PS_PER_MS, 9000), 6000);
    }

    #[test]
    fn time_to_read_is_the_first_picosecond_with_the_bytes() {
        let mut r = AppReader::new(130_000_000);
        r.on_arrival(12_345, 0);
        let t = r.time_to_read(12_345, 1_000_000, 777_777);
        assert!(r.read(t, 1_000_000) >= 777_777);
        assert!(r.read(t - 1, 1_000_000) < 777_777);
    }
}
