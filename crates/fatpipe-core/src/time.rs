//! Simulated time: integer picoseconds.
//!
//! Picoseconds rather than nanoseconds because one byte at 10 Gb/s lasts 800 ps: nanosecond
//! ticks would round every 1538-byte Ethernet frame at 10 Gb/s by 0.4 ns (0.03 %), and the
//! error would accumulate over millions of frames. A `u64` of picoseconds still spans 213 days.

/// A point in simulated time or a duration, in picoseconds.
pub type Time = u64;

pub const PS_PER_NS: Time = 1_000;
pub const PS_PER_US: Time = 1_000_000;
pub const PS_PER_MS: Time = 1_000_000_000;
pub const PS_PER_S: Time = 1_000_000_000_000;

/// Time to serialize `bytes` onto a line of `rate_bps` bits per second, rounded to the
/// nearest picosecond (the rounding error is below 1e-6 of a frame time at any real rate).
#[inline]
pub fn transmission_time(bytes: u64, rate_bps: u64) -> Time {
    // bytes x 8e12 fits 64 bits below 2 MB (every packet): a 64-bit division is several
    // times cheaper than a 128-bit one on the per-packet path.
    if bytes < (1 << 21) {
        return (bytes * 8 * PS_PER_S + rate_bps / 2) / rate_bps;
    }
    let bits_ps = bytes as u128 * 8 * PS_PER_S as u128;
    ((bits_ps + rate_bps as u128 / 2) / rate_bps as u128) as Time
}

/// Seconds as a float, for reports only (never for simulation arithmetic).
#[inline]
pub fn to_seconds(t: Time) -> f64 {
    t as f64 / PS_PER_S as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethernet_frame_at_ten_gigabit_is_exact() {
        // 1538 bytes = 12,304 bits = 1230.4 ns at 10 Gb/s: representable exactly in ps.
        assert_eq!(transmission_time(1538, 10_000_000_000), 1_230_400);
    }

    #[test]
    fn ds3_rounds_to_nearest_picosecond() {
        // 4148 bytes at 44.736 Mb/s = 741,773,962.8 ps.
        assert_eq!(transmission_time(4148, 44_736_000), 741_773_963);
    }
}
