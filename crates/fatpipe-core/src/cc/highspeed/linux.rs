//! HighSpeed TCP as Linux `net/ipv4/tcp_highspeed.c` runs it (`hstcp_cong_avoid`,
//! `hstcp_ssthresh`):
//!
//! - the table is RFC 3649 appendix B's 72 rows (windows 38 to 89,053), each with b(w) as
//!   md = floor(256 b(w)); it is fixed, whatever the RFC's parameters would give;
//! - in congestion avoidance the row index `ai` moves, one step at a time, to the row whose
//!   window is the first at or above cwnd (rows[ai - 1] < cwnd <= rows[ai]), so the increase
//!   is ai + 1 segments per window of ACKs: the RFC's a(w) one row up (2 from 39 on, where
//!   RFC 3649 keeps 1 until 118);
//! - each ACK adds ai + 1 to the ACK counter (`snd_cwnd_cnt`) whatever it acknowledged, and
//!   cwnd grows by one when the counter reaches cwnd: with delayed ACKs, half the increase;
//! - a loss sets ssthresh = cwnd - cwnd x md >> 8 with the row congestion avoidance last
//!   used: at the end of the first slow start that is still row 0, which halves;
//! - slow start is standard, and an ACK that ends it grows the window no further; it counts
//!   acknowledged segments (`tcp_slow_start`), or ACKs without `byte_counting`, as Linux 2.4
//!   and its 2.4.19 HighSpeed patch did;
//! - with `cwr_halves` a reduction without a loss halves (Linux 2.4 `__tcp_enter_cwr`);
//! - undo is Linux's `tcp_reno_undo_cwnd`, the trait's default.

use crate::cc::{counted_segments, linux_2_4_cwr_ssthresh, slow_start, AckSample, CaState, CcState, CongestionControl};

/// RFC 3649 appendix B as Linux tabulates it (`hstcp_aimd_vals`): (window in segments,
/// decrease x 256).
pub const LINUX_AIMD_TABLE: [(u32, u32); 72] = [
    (38, 128),
    (118, 112),
    (221, 104),
    (347, 98),
    (495, 93),
    (663, 89),
    (851, 86),
    (1058, 83),
    (1284, 81),
    (1529, 78),
    (1793, 76),
    (2076, 74),
    (2378, 72),
    (2699, 71),
    (3039, 69),
    (3399, 68),
    (3778, 66),
    (4177, 65),
    (4596, 64),
    (5036, 62),
    (5497, 61),
    (5979, 60),
    (6483, 59),
    (7009, 58),
    (7558, 57),
    (8130, 56),
    (8726, 55),
    (9346, 54),
    (9991, 53),
    (10661, 52),
    (11358, 52),
    (12082, 51),
    (12834, 50),
    (13614, 49),
    (14424, 48),
    (15265, 48),
    (16137, 47),
    (17042, 46),
    (17981, 45),
    (18955, 45),
    (19965, 44),
    (21013, 43),
    (22101, 43),
    (23230, 42),
    (24402, 41),
    (25618, 41),
    (26881, 40),
    (28193, 39),
    (29557, 39),
    (30975, 38),
    (32450, 38),
    (33986, 37),
    (35586, 36),
    (37253, 36),
    (38992, 35),
    (40808, 35),
    (42707, 34),
    (44694, 33),
    (46776, 33),
    (48961, 32),
    (51258, 32),
    (53677, 31),
    (56230, 30),
    (58932, 30),
    (61799, 29),
    (64851, 28),
    (68113, 28),
    (71617, 27),
    (75401, 26),
    (79517, 26),
    (84035, 25),
    (89053, 24),
];

/// The decrease is md / 2^this (Linux `hstcp_ssthresh`).
const MD_SHIFT: u32 = 8;

/// Linux's HighSpeed state (`struct hstcp`): the row index; and how slow start counts and
/// CWR decreases (`HighSpeedConfig::byte_counting`, `cwr_halves`).
#[derive(Debug)]
pub struct LinuxHighSpeed {
    ai: usize,
    byte_counting: bool,
    cwr_halves: bool,
}

impl Default for LinuxHighSpeed {
    /// Linux today: slow start counts segments, CWR decreases by the row's b.
    fn default() -> Self {
        LinuxHighSpeed::new(true, false)
    }
}

impl LinuxHighSpeed {
    pub fn new(byte_counting: bool, cwr_halves: bool) -> Self {
        LinuxHighSpeed { ai: 0, byte_counting, cwr_halves }
    }

    /// The row congestion avoidance uses now, and its increase per window of ACKs (ai + 1).
    pub fn row(&self) -> (usize, u32) {
        (self.ai, self.ai as u32 + 1)
    }

    /// Moves the index to the first row at or above `cwnd`, the last row at most.
    fn seek(&mut self, cwnd: u32) {
        while cwnd > LINUX_AIMD_TABLE[self.ai].0 && self.ai < LINUX_AIMD_TABLE.len() - 1 {
            self.ai += 1;
        }
        while self.ai > 0 && cwnd <= LINUX_AIMD_TABLE[self.ai - 1].0 {
            self.ai -= 1;
        }
    }
}

impl CongestionControl for LinuxHighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let md = LINUX_AIMD_TABLE[self.ai].1 as u64;
        let cwnd = s.cwnd as u64;
        ((cwnd - ((cwnd * md) >> MD_SHIFT)) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if !s.cwnd_limited {
            return;
        }
        if s.in_slow_start() {
            slow_start(s, counted_segments(ack, self.byte_counting));
            return;
        }
        self.seek(s.cwnd);
        s.cwnd_cnt += self.ai as u32 + 1;
        if s.cwnd_cnt >= s.cwnd {
            s.cwnd_cnt -= s.cwnd;
            s.cwnd += 1;
        }
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Cwr && self.cwr_halves {
            s.ssthresh = linux_2_4_cwr_ssthresh(s.cwnd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::highspeed::HighSpeedConfig;
    use crate::cc::testing::{ack, state};

    /// One window of ACKs in congestion avoidance, each of `per_ack` segments.
    fn one_rtt(h: &mut LinuxHighSpeed, s: &mut CcState, per_ack: u32) -> u32 {
        let before = s.cwnd;
        for _ in 0..s.cwnd / per_ack {
            h.cong_avoid(s, &ack(per_ack));
        }
        s.cwnd - before
    }

    #[test]
    fn table_is_rfc_3649_appendix_b_with_md_the_floor_of_256_b() {
        // An independent check of the data: md from RFC 3649's b(w) at each row's window.
        let rfc = HighSpeedConfig::default();
        for (w, md) in LINUX_AIMD_TABLE {
            assert_eq!(md, (256.0 * rfc.b(w as f64)).floor() as u32, "row at {w}");
        }
        // From standard TCP's window to one row past High_Window (a(89053) = 73.8).
        assert_eq!((LINUX_AIMD_TABLE[0].0, LINUX_AIMD_TABLE[71].0), (rfc.low_window, 89_053));
        assert!(LINUX_AIMD_TABLE.windows(2).all(|r| r[1].0 > r[0].0 && r[1].1 <= r[0].1));
    }

    #[test]
    fn grows_ai_plus_one_per_window_of_acks_one_row_up() {
        let mut h = LinuxHighSpeed::default();
        // 4596 < 5000 <= 5036: row 19, 20 x 5000 credits per window of ACKs, 19 increments
        // as cwnd passes 5000 (RFC 3649's a(5000) is 19.4).
        let mut s = state(5000, 10);
        assert_eq!(one_rtt(&mut h, &mut s, 1), 19);
        assert_eq!(h.row(), (19, 20));
        // Up to 38: standard TCP; from 39 the next row, 2 per RTT, where the RFC has 1 until 118.
        let mut s = state(38, 10);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!(h.row(), (0, 1));
        let mut s = state(39, 10);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!(h.row(), (1, 2));
        let mut s = state(100, 10);
        let grown: u32 = (0..10).map(|_| one_rtt(&mut h, &mut s, 1)).sum();
        assert!((19..=20).contains(&grown), "{grown} in 10 RTTs");
        let mut s = state(30, 10);
        let grown: u32 = (0..5).map(|_| one_rtt(&mut h, &mut s, 1)).sum();
        assert_eq!(grown, 5);
    }

    #[test]
    fn each_ack_counts_once_whatever_it_acknowledged() {
        // Delayed ACKs covering 2 segments: half as many ACKs, half the growth (2500 x 20
        // credits: 9 increments from 5000; counting segments would give 19).
        let mut h = LinuxHighSpeed::default();
        let mut s = state(5000, 10);
        assert_eq!(one_rtt(&mut h, &mut s, 2), 9);
    }

    #[test]
    fn decrease_uses_the_row_congestion_avoidance_last_used() {
        let mut h = LinuxHighSpeed::default();
        // Straight out of slow start the index is still row 0 (md 128): the window halves.
        assert_eq!(h.ssthresh(&state(5000, 10)), 2500);
        let mut s = state(5000, 10);
        one_rtt(&mut h, &mut s, 1);
        // Row 19, md 62: cwnd - cwnd x 62 / 256.
        assert_eq!(s.cwnd, 5019);
        assert_eq!(h.ssthresh(&s), 5019 - ((5019 * 62) >> 8));
        // The index follows the window down on the next ACK: 3778 < 3800 <= 4177, row 17.
        let mut s = state(3800, 10);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!(h.row(), (17, 18));
        assert_eq!(h.ssthresh(&state(2, 1)), 2);
    }

    #[test]
    fn beyond_the_table_the_last_row_holds() {
        let mut h = LinuxHighSpeed::default();
        let mut s = state(200_000, 10);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!(h.row(), (71, 72));
        assert_eq!(h.ssthresh(&state(100_000, 10)), 100_000 - ((100_000 * 24) >> 8));
    }

    #[test]
    fn slow_start_is_standard_and_its_last_ack_grows_no_further() {
        let mut h = LinuxHighSpeed::default();
        let mut s = state(100, 102);
        h.cong_avoid(&mut s, &ack(5));
        assert_eq!((s.cwnd, s.cwnd_cnt), (102, 0));
        s.cwnd_limited = false;
        h.cong_avoid(&mut s, &ack(5));
        assert_eq!(s.cwnd, 102);
    }

    #[test]
    fn linux_2_4_slow_start_counts_acks_and_cwr_halves() {
        // From slow start, 5 delayed ACKs: 5 segments (as Reno on Linux 2.4), not 10.
        let mut h = LinuxHighSpeed::new(false, true);
        let mut s = state(10, u32::MAX);
        for _ in 0..5 {
            h.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 15);
        // In congestion avoidance at row 19, CWR halves where a loss gives up md 62/256.
        let mut s = state(5000, 10);
        one_rtt(&mut h, &mut s, 1);
        s.ssthresh = h.ssthresh(&s);
        assert_eq!(s.ssthresh, s.cwnd - ((s.cwnd * 62) >> 8));
        h.set_state(&mut s, CaState::Cwr);
        assert_eq!(s.ssthresh, s.cwnd / 2);
    }
}
