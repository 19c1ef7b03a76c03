//! BBR's allowance for ACK aggregation (Linux 5.1+ `tcp_bbr.c` `bbr_update_ack_aggregation`,
//! `bbr_ack_aggregation_cwnd`, `bbr_extra_acked`).
//!
//! When ACKs come in bursts -- a receiver's GRO or interrupt coalescing acknowledging a train
//! at once, stretch ACKs, a Wi-Fi or cellular link's batches -- more data is acknowledged
//! over an epoch than the bandwidth estimate expects, and the sender must keep that much
//! more in flight to stay busy while the next burst is in the making. BBR measures the
//! excess per ACK epoch (`extra_acked`: acknowledged since the epoch began, less
//! bw x its length), keeps its maximum over two windows of 5 round trips each, and adds it
//! (at most 100 ms of bw) to its cwnd target once the pipe is full.

use crate::time::{Time, PS_PER_MS, PS_PER_S};

/// Round trips per window of the max filter (Linux `bbr_extra_acked_win_rtts`).
pub const WIN_RTTS: u32 = 5;
/// An epoch restarts after this many segments acknowledged in it (Linux
/// `bbr_ack_epoch_acked_reset_thresh`, 1 << 20).
pub const EPOCH_ACKED_RESET_SEGMENTS: u32 = 1 << 20;
/// The allowance is at most this long at bw (Linux `bbr_extra_acked_max_us`, 100 ms).
pub const MAX_ALLOWANCE: Time = 100 * PS_PER_MS;

#[derive(Clone, Debug, Default)]
pub struct AckAggregation {
    /// Round trips into the current window (Linux `extra_acked_win_rtts`).
    win_rtts: u32,
    /// Which of the two windows is current (Linux `extra_acked_win_idx`).
    idx: usize,
    /// The largest excess seen in each window, segments (Linux `extra_acked[2]`).
    extra: [u32; 2],
    /// When the epoch began (Linux `ack_epoch_mstamp`).
    epoch_start: Time,
    /// Segments acknowledged in the epoch (Linux `ack_epoch_acked`).
    epoch_acked: u32,
}

impl AckAggregation {
    /// One ACK with a valid rate sample that acknowledged or SACKed `acked` segments at `now`
    /// (Linux `delivered_mstamp`), `bw_bps` the bandwidth estimate, `round_start` whether a
    /// round trip began with it.
    pub fn update(&mut self, now: Time, round_start: bool, bw_bps: u64, mss_bytes: u32, acked: u32, cwnd: u32) {
        self.update_in_window(now, round_start, bw_bps, mss_bytes, acked, cwnd, WIN_RTTS);
    }

    /// [`update`](Self::update) with windows of `window_rtts` round trips: BBRv3 uses 1
    /// until STARTUP has filled the pipe (v3 `bbr_update_ack_aggregation`).
    #[allow(clippy::too_many_arguments)]
    pub fn update_in_window(
        &mut self,
        now: Time,
        round_start: bool,
        bw_bps: u64,
        mss_bytes: u32,
        acked: u32,
        cwnd: u32,
        window_rtts: u32,
    ) {
        if acked == 0 {
            return;
        }
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1F);
            if self.win_rtts >= window_rtts {
                self.win_rtts = 0;
                self.idx ^= 1;
                self.extra[self.idx] = 0;
            }
        }
        let epoch = now.saturating_sub(self.epoch_start);
        let bits = u128::from(bw_bps) * u128::from(epoch) / u128::from(PS_PER_S);
        let mut expected = (bits / (8 * u128::from(mss_bytes.max(1)))).min(u128::from(u32::MAX)) as u32;
        // The ACKs came slower than bw expects, or the epoch is old: a new epoch.
        if self.epoch_acked <= expected || self.epoch_acked + acked >= EPOCH_ACKED_RESET_SEGMENTS {
            self.epoch_acked = 0;
            self.epoch_start = now;
            expected = 0;
        }
        self.epoch_acked = (self.epoch_acked + acked).min(0xF_FFFF);
        let extra = (self.epoch_acked - expected).min(cwnd);
        self.extra[self.idx] = self.extra[self.idx].max(extra);
    }

    /// A new epoch from `now`: sending restarts from idle (v3 `bbr_cwnd_event`, `bbr_init`).
    pub fn restart_epoch(&mut self, now: Time) {
        self.epoch_start = now;
        self.epoch_acked = 0;
    }

    /// The excess the filter holds, segments (Linux `bbr_extra_acked`).
    pub fn extra_acked(&self) -> u32 {
        self.extra[0].max(self.extra[1])
    }

    /// What cwnd's target gets for aggregation, segments (Linux `bbr_ack_aggregation_cwnd`,
    /// `bbr_extra_acked_gain` 1): the excess, at most 100 ms of bw; nothing before the pipe
    /// is full.
    pub fn cwnd_segments(&self, bw_bps: u64, mss_bytes: u32, full_bw_reached: bool) -> u32 {
        if !full_bw_reached {
            return 0;
        }
        let bits = u128::from(bw_bps) * u128::from(MAX_ALLOWANCE) / u128::from(PS_PER_S);
        let max = (bits / (8 * u128::from(mss_bytes.max(1)))).min(u128::from(u32::MAX)) as u32;
        self.extra_acked().min(max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1000;
    /// 8 Mb/s of 1000-byte segments: one segment per millisecond.
    const BW: u64 = 8_000_000;

    #[test]
    fn acks_at_the_expected_rate_show_no_excess() {
        let mut a = AckAggregation::default();
        for i in 0..100 {
            a.update(i * PS_PER_MS, false, BW, MSS, 1, 1000);
        }
        assert!(a.extra_acked() <= 1, "{}", a.extra_acked());
    }

    #[test]
    fn a_burst_of_acks_after_a_silence_is_the_excess() {
        // Ten segments acknowledged every 10 ms (what GRO or coalescing makes of a train):
        // at each burst the epoch has expected 10 and seen 10 more at once.
        let mut a = AckAggregation::default();
        for i in 0..20 {
            a.update(i * 10 * PS_PER_MS, false, BW, MSS, 10, 1000);
        }
        assert_eq!(a.extra_acked(), 10);
        assert_eq!(a.cwnd_segments(BW, MSS, false), 0, "nothing before the pipe is full");
        assert_eq!(a.cwnd_segments(BW, MSS, true), 10);
        // At most 100 ms of bw: 100 segments here, whatever the bursts.
        let mut big = AckAggregation::default();
        big.update(0, false, BW, MSS, 1, 10_000);
        big.update(PS_PER_MS, false, BW, MSS, 500, 10_000);
        assert_eq!(big.cwnd_segments(BW, MSS, true), 100);
    }

    #[test]
    fn the_excess_is_forgotten_after_two_windows_of_rounds() {
        let mut a = AckAggregation::default();
        a.update(0, false, BW, MSS, 1, 1000);
        a.update(PS_PER_MS / 10, false, BW, MSS, 30, 1000);
        assert_eq!(a.extra_acked(), 31, "the epoch's first segment and 30 more, none expected yet");
        for r in 1..=2 * WIN_RTTS as u64 {
            a.update(PS_PER_S * r, true, BW, MSS, 1, 1000);
        }
        assert!(a.extra_acked() <= 1);
    }
}
