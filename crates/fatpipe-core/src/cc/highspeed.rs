//! HighSpeed TCP (Floyd, RFC 3649): AIMD whose increase a(w) and decrease b(w) depend on the
//! window w, so that a large window needs a realistic loss rate.
//!
//! RFC 3649 replaces the standard response function w = 1.2/sqrt(p) above Low_Window by a
//! line in log-log space through (Low_Window, Low_P) and (High_Window, High_P):
//!
//! - p(w) = Low_P x (w / Low_Window)^(1/S), S = (log High_Window - log Low_Window) /
//!   (log High_P - log Low_P); with the defaults this is the RFC's w = 0.12/p^0.835;
//! - b(w) = (High_Decrease - 0.5) x (log w - log Low_Window) / (log High_Window -
//!   log Low_Window) + 0.5, falling from standard TCP's 0.5 to High_Decrease;
//! - a(w) = w^2 x p(w) x 2 b(w) / (2 - b(w)), the increase that keeps the average window of
//!   AIMD(a(w), b(w)) on that response function.
//!
//! Low_P is the loss rate at which standard TCP's window is Low_Window, (1.2/Low_Window)^2
//! (the RFC's 10^-3 for Low_Window = 38), so tuning Low_Window keeps the curves continuous.
//!
//! Like RFC 3649 appendix B and Linux `tcp_highspeed.c`, the increase comes from a table of
//! integers: row k holds a = k from the smallest window whose a(w) reaches k - 1/2, so a
//! window grows by a(w) rounded to the nearest integer. That gives the RFC's rows exactly
//! (a(w) = 2.02, 3.04, 4.05, 5.07 at its windows 118, 221, 347, 495) and no bias between
//! rows, so the mean window follows the response function (tests/response_functions.rs).
//! Rounding down instead would keep it some 20% under near w = 200; Linux, and the kernel of
//! document 001, take the next row up (a = 4 at 262), which errs the other way. The decrease
//! b(w) is needed only at a loss and comes straight from the formula.
//! Here the table is computed from the parameters when the algorithm is built, so tuning
//! them works; the window's entry is found by an index that moves one step at a time as
//! cwnd changes, never by a scan of the table. Below the second entry (a(w) < 2, which
//! includes everything below Low_Window) the algorithm is standard TCP: a = 1,
//! b = b(Low_Window) = 0.5.
//!
//! Slow start, fast retransmit and recovery are standard (RFC 3649). Growth counts
//! acknowledged segments (RFC 3465), so delayed ACKs do not slow it; without
//! `byte_counting` it counts ACKs, as Linux 2.4's `tcp_cong_avoid` and the 2.4.19 HighSpeed
//! patch of document 001 did ("HighSpeed TCP uses the same slow start": one segment per ACK).
//! With `cwr_halves` a window reduction without a loss halves, as 2.4's `__tcp_enter_cwr`.
//!
//! That is the `"rfc"` form (`HighSpeedConfig::variant`). The `"linux"` form,
//! `highspeed/linux.rs`, is Linux `tcp_highspeed.c`: RFC 3649 appendix B's fixed table read
//! one row up, a(w) added per ACK whatever it acknowledged, and the decrease of the row last
//! used by congestion avoidance.

pub mod linux;

use super::{
    cong_avoid_ai, counted_segments, linux_2_4_cwr_ssthresh, slow_start_first, AckSample, CaState, CcState,
    CongestionControl,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which HighSpeed TCP (`HighSpeedConfig::variant`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HighSpeedVariant {
    /// RFC 3649's formulas, tabulated from the parameters (this file).
    Rfc,
    /// Linux `tcp_highspeed.c` (`highspeed/linux.rs`).
    Linux,
}

/// Standard TCP's decrease, the fraction of the window given up on a loss (RFC 5681 eq. 4).
/// b(w) starts here at Low_Window (RFC 3649).
const STANDARD_DECREASE: f64 = 0.5;

/// The constant of standard TCP's response function w = 1.2/sqrt(p) that RFC 3649 uses; it
/// fixes Low_P = (1.2/Low_Window)^2.
const STANDARD_RESPONSE_CONSTANT: f64 = 1.2;

/// Most table entries (one per segment of increase per RTT) a parameter set may ask for;
/// the defaults need 73 as in RFC 3649 appendix B. A bound keeps a mistyped high_window or
/// high_p from allocating without limit.
pub const MAX_TABLE_ENTRIES: usize = 100_000;

/// The parameters, every one given by the scenario (its table, scenario/congestion.py, owns
/// the defaults and their sources).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HighSpeedConfig {
    /// Which HighSpeed: `rfc` (RFC 3649's formulas) or `linux` (Linux
    /// `tcp_highspeed.c`, whose table is fixed: the other parameters must keep their defaults).
    pub variant: HighSpeedVariant,
    /// Low_Window: the window, segments, up to which HighSpeed TCP is standard TCP
    /// (RFC 3649: 38, where standard TCP's loss rate is 10^-3).
    pub low_window: u32,
    /// High_Window: the window, segments, that the response function reaches at loss rate
    /// High_P (RFC 3649: 83000, 10 Gb/s with 1500-byte packets and 100 ms RTT).
    pub high_window: u32,
    /// High_P: the loss rate at which the window is High_Window (RFC 3649: 1e-7).
    pub high_p: f64,
    /// High_Decrease: b(w) at High_Window, the fraction of the window given up on a loss
    /// (RFC 3649: 0.1).
    pub high_decrease: f64,
    /// Count the segments each ACK covers (RFC 3465) rather than the ACKs (Linux 2.4). The
    /// linux form counts ACKs in congestion avoidance either way (`hstcp_cong_avoid`); this
    /// decides its slow start.
    pub byte_counting: bool,
    /// A window reduction without a loss (CWR: local congestion, ECN) sets ssthresh to half
    /// the window, as Linux 2.4's `__tcp_enter_cwr` did, instead of by b(w).
    pub cwr_halves: bool,
}

impl HighSpeedConfig {
    /// Low_P: standard TCP's loss rate at Low_Window (w = 1.2/sqrt(p) solved for p).
    pub fn low_p(&self) -> f64 {
        let r = STANDARD_RESPONSE_CONSTANT / self.low_window as f64;
        r * r
    }

    /// b(w): the decrease at window `w` segments (RFC 3649).
    pub fn b(&self, w: f64) -> f64 {
        let (lw, hw) = (self.low_window as f64, self.high_window as f64);
        (self.high_decrease - STANDARD_DECREASE) * (w.ln() - lw.ln()) / (hw.ln() - lw.ln()) + STANDARD_DECREASE
    }

    /// p(w): the loss rate at which the HighSpeed response function gives window `w`.
    pub fn p(&self, w: f64) -> f64 {
        let (lw, hw) = (self.low_window as f64, self.high_window as f64);
        let low_p = self.low_p();
        let s = (hw.ln() - lw.ln()) / (self.high_p.ln() - low_p.ln());
        low_p * ((w.ln() - lw.ln()) / s).exp()
    }

    /// a(w): the increase at window `w`, segments per RTT (RFC 3649).
    pub fn a(&self, w: f64) -> f64 {
        let b = self.b(w);
        w * w * self.p(w) * 2.0 * b / (2.0 - b)
    }

    /// Table entries the parameters need: one per integer increase up to a(High_Window).
    fn table_len(&self) -> f64 {
        self.a(self.high_window as f64).floor().max(1.0)
    }

    /// d ln a(w) / d ln w at High_Window. ln a(w) = (2 + 1/S) ln w + ln(2b / (2 - b)) + const
    /// and b falls linearly in ln w, so the slope is smallest at High_Window (where b is
    /// smallest): a(w) increases on [Low_Window, High_Window] exactly when this is positive.
    fn a_slope_at_high_window(&self) -> f64 {
        let (lw, hw) = (self.low_window as f64, self.high_window as f64);
        let s = (hw.ln() - lw.ln()) / (self.high_p.ln() - self.low_p().ln());
        let db_dlnw = (self.high_decrease - STANDARD_DECREASE) / (hw.ln() - lw.ln());
        let b = self.high_decrease;
        2.0 + 1.0 / s + 2.0 / (b * (2.0 - b)) * db_dlnw
    }

    /// Checks the parameters; the error names the parameter, its value and the rule.
    pub fn validate(&self) -> Result<(), String> {
        if self.variant == HighSpeedVariant::Linux {
            // The Linux form reads its fixed table, none of the parameters below. That they
            // keep the table's values is the scenario's rule (scenario/congestion.py
            // `_check_fixed_table`), which owns those values.
            return Ok(());
        }
        if self.low_window == 0 {
            return Err("low_window: 0 is not allowed: must be at least 1 segment".into());
        }
        if self.high_window <= self.low_window {
            return Err(format!(
                "high_window: {} is not allowed: must exceed low_window ({})",
                self.high_window, self.low_window
            ));
        }
        let low_p = self.low_p();
        if !(self.high_p > 0.0 && self.high_p < low_p) {
            return Err(format!(
                "high_p: {} is not allowed: must be above 0 and below standard TCP's loss rate at low_window, (1.2/{})^2 = {low_p:.3e}",
                self.high_p, self.low_window
            ));
        }
        if !(self.high_decrease > 0.0 && self.high_decrease <= STANDARD_DECREASE) {
            return Err(format!("high_decrease: {} is not allowed: must be in (0, 0.5]", self.high_decrease));
        }
        let slope = self.a_slope_at_high_window();
        if slope.is_nan() || slope <= 0.0 {
            return Err(format!(
                "high_decrease: {} is not allowed: with high_p {} the increase a(w) would fall before high_window; raise high_decrease or high_p",
                self.high_decrease, self.high_p
            ));
        }
        let entries = self.table_len();
        if entries > MAX_TABLE_ENTRIES as f64 {
            return Err(format!(
                "high_window: {} is not allowed: with high_p {} the increase at high_window is {entries:.0} segments per RTT, above {MAX_TABLE_ENTRIES}",
                self.high_window, self.high_p
            ));
        }
        Ok(())
    }
}

/// One row of the table: from window `w_segments` on, grow by `a` segments per RTT and give
/// up the fraction `b` on a loss.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdEntry {
    pub w_segments: u32,
    pub a: u32,
    pub b: f64,
}

/// The table of RFC 3649 appendix B computed from `cfg`: entry k - 1 holds a = k from the
/// smallest window with a(w) >= k - 1/2 (a(w) rounded to the nearest integer), for k up to
/// a(High_Window); the first entry (a = 1, standard TCP) starts at 0. Beyond High_Window the last entry holds (the RFC's table ends
/// there too, one row later: a = 73 from 84035).
pub fn aimd_table(cfg: &HighSpeedConfig) -> Vec<AimdEntry> {
    let n = cfg.table_len() as u32;
    let mut table = Vec::with_capacity(n as usize);
    table.push(AimdEntry { w_segments: cfg.low_window, a: 1, b: cfg.b(cfg.low_window as f64) });
    let mut lo = cfg.low_window;
    for a in 2..=n {
        // a(w) grows with w (`validate` ensures it) and a(High_Window) >= a, so the first
        // window reaching `a` lies in [previous row, High_Window]: bisection.
        let reaches = |w: u32| cfg.a(w as f64) >= a as f64 - 0.5;
        let mut hi = cfg.high_window;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if reaches(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        table.push(AimdEntry { w_segments: lo, a, b: cfg.b(lo as f64) });
    }
    table
}

/// Builds the configured form.
pub fn build(cfg: &HighSpeedConfig) -> Box<dyn CongestionControl> {
    match cfg.variant {
        HighSpeedVariant::Rfc => Box::new(HighSpeed::new(cfg.clone())),
        HighSpeedVariant::Linux => Box::new(linux::LinuxHighSpeed::new(cfg.byte_counting, cfg.cwr_halves)),
    }
}

pub struct HighSpeed {
    cfg: HighSpeedConfig,
    table: Vec<AimdEntry>,
    /// Index of the entry for the current window; moves one step per entry boundary crossed.
    entry: usize,
}

impl HighSpeed {
    pub fn new(cfg: HighSpeedConfig) -> Self {
        HighSpeed { table: aimd_table(&cfg), entry: 0, cfg }
    }

    /// Moves `entry` to the row whose range holds `cwnd` (amortized O(1): the window moves a
    /// few segments per ACK, crossing at most one boundary at a time between losses).
    fn seek(&mut self, cwnd: u32) -> AimdEntry {
        while self.entry + 1 < self.table.len() && cwnd >= self.table[self.entry + 1].w_segments {
            self.entry += 1;
        }
        while self.entry > 0 && cwnd < self.table[self.entry].w_segments {
            self.entry -= 1;
        }
        self.table[self.entry]
    }

    /// a (from the table) and b (from the formula; standard TCP's 0.5 up to Low_Window) at
    /// window `cwnd`, segments.
    pub fn aimd_at(&mut self, cwnd: u32) -> (u32, f64) {
        let a = self.seek(cwnd).a;
        let b =
            if cwnd <= self.cfg.low_window { self.cfg.b(self.cfg.low_window as f64) } else { self.cfg.b(cwnd as f64) };
        (a, b)
    }
}

impl CongestionControl for HighSpeed {
    fn name(&self) -> &'static str {
        "highspeed"
    }

    /// ssthresh = (1 - b(w)) x cwnd, at least 2 (RFC 3649 with cwnd for
    /// FlightSize, as Linux; they coincide when the sender is cwnd-limited).
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let (_, b) = self.aimd_at(s.cwnd);
        ((s.cwnd as f64 * (1.0 - b)) as u32).max(2)
    }

    /// cwnd += a(w)/cwnd per acknowledged segment: a(w) segments per RTT.
    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = slow_start_first(s, counted_segments(ack, self.cfg.byte_counting)) else {
            return;
        };
        let (a, _) = self.aimd_at(s.cwnd);
        cong_avoid_ai(s, s.cwnd, acked.saturating_mul(a));
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Cwr && self.cfg.cwr_halves {
            s.ssthresh = linux_2_4_cwr_ssthresh(s.cwnd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{ack, state};

    /// Acknowledges one window, one segment per ACK: one RTT of congestion avoidance.
    fn one_rtt(h: &mut HighSpeed, s: &mut CcState) {
        for _ in 0..s.cwnd {
            h.cong_avoid(s, &ack(1));
        }
    }

    #[test]
    fn table_matches_rfc_3649_and_document_001() {
        // Document 001 table 1 (RFC 3649 appendix B): w, a(w), b(w).
        let expected = [(38, 1, 0.50), (118, 2, 0.44), (221, 3, 0.41), (347, 4, 0.38), (495, 5, 0.37)];
        let mut h = HighSpeed::new(HighSpeedConfig::default());
        for (w, a, b) in expected {
            let (ta, tb) = h.aimd_at(w);
            assert_eq!(ta, a, "a({w})");
            assert!((tb - b).abs() <= 0.01, "b({w}) = {tb}, table {b}");
        }
        let cfg = HighSpeedConfig::default();
        assert!((cfg.b(83_000.0) - 0.1).abs() < 1e-12, "b(High_Window) = High_Decrease");
        // The row holding 83000 starts near 80,800 (a = 72): b = 0.101, Linux's 26/256.
        let (_, b_high) = h.aimd_at(83_000);
        assert!((b_high - 0.1).abs() <= 0.01, "table b at 83000: {b_high}");
        // The response function the RFC quotes: w = 0.12/p^0.835 above Low_Window.
        for w in [100.0f64, 1_000.0, 10_000.0, 83_000.0] {
            let law = (0.12 / w).powf(1.0 / 0.835);
            assert!((cfg.p(w) / law - 1.0).abs() < 0.05, "p({w}) = {} vs {law}", cfg.p(w));
        }
    }

    #[test]
    fn table_has_the_rfcs_rows_up_to_high_window_and_is_monotonic() {
        let t = aimd_table(&HighSpeedConfig::default());
        assert_eq!(t.len(), 72, "a(High_Window) = 72.5; the RFC's 73rd row lies beyond it");
        for pair in t.windows(2) {
            assert!(pair[1].w_segments > pair[0].w_segments);
            assert_eq!(pair[1].a, pair[0].a + 1);
            assert!(pair[1].b < pair[0].b);
        }
        // The last row (a = 72) starts where a(w) reaches 71.5, below High_Window.
        let cfg = HighSpeedConfig::default();
        let last = t.last().unwrap().w_segments;
        assert!(cfg.a(last as f64) >= 71.5 && cfg.a(last as f64 - 1.0) < 71.5, "last row at {last}");
        assert!(last < cfg.high_window);
    }

    #[test]
    fn index_moves_both_ways_without_scanning() {
        let mut h = HighSpeed::new(HighSpeedConfig::default());
        assert_eq!(h.aimd_at(10_000).0, h.table.iter().rposition(|e| e.w_segments <= 10_000).unwrap() as u32 + 1);
        assert_eq!(h.aimd_at(30).0, 1);
        assert_eq!(h.aimd_at(495).0, 5);
        assert_eq!(h.aimd_at(1_000_000).0, 72, "beyond the table: the last row");
    }

    #[test]
    fn standard_tcp_below_low_window() {
        let mut h = HighSpeed::new(HighSpeedConfig::default());
        let mut s = state(30, 20);
        one_rtt(&mut h, &mut s);
        assert_eq!(s.cwnd, 31, "one segment per RTT");
        assert_eq!(h.ssthresh(&state(30, 20)), 15, "halves");
    }

    #[test]
    fn table_a_is_a_w_rounded_to_nearest() {
        // The increase is a(w) rounded to the nearest integer, the decrease b(w) itself.
        let cfg = HighSpeedConfig::default();
        let mut h = HighSpeed::new(cfg.clone());
        let last = aimd_table(&cfg).last().unwrap().a;
        for w in (40..83_000).step_by(97) {
            let (a, b) = h.aimd_at(w);
            let exact = cfg.a(w as f64);
            assert_eq!(a, (exact.round() as u32).clamp(1, last), "a({w}) = {exact}");
            assert_eq!(b, cfg.b(w as f64), "b({w})");
        }
    }

    #[test]
    fn grows_a_w_segments_per_rtt() {
        let mut h = HighSpeed::new(HighSpeedConfig::default());
        for w in [400u32, 5_000, 83_000] {
            let (a, _) = h.aimd_at(w);
            let mut s = state(w, 10);
            one_rtt(&mut h, &mut s);
            assert!((s.cwnd - w).abs_diff(a) <= 1, "w={w}: grew {} in one RTT, a(w) = {a}", s.cwnd - w);
        }
        assert_eq!(h.aimd_at(83_000).0, 72, "a(High_Window) = 72.5");
    }

    #[test]
    fn decrease_follows_b_w() {
        let mut h = HighSpeed::new(HighSpeedConfig::default());
        // Document 001 figure 3: a loss at w = 408 (b(408) = 0.375) leaves about 255 segments.
        let after = h.ssthresh(&state(408, 10));
        assert!((248..=261).contains(&after), "ssthresh {after}");
        let big = h.ssthresh(&state(83_000, 10));
        assert!((74_500..=74_700).contains(&big), "b(83000) ~ 0.1: {big}");
    }

    #[test]
    fn parameters_change_the_table() {
        // A lower High_Decrease makes large windows gentler to cut; a higher High_P (the same
        // High_Window at a higher loss rate) makes them quicker to grow.
        let mut base = HighSpeed::new(HighSpeedConfig::default());
        let tuned_cfg = HighSpeedConfig { high_p: 1e-6, high_decrease: 0.08, ..Default::default() };
        assert!(tuned_cfg.validate().is_ok());
        let mut tuned = HighSpeed::new(tuned_cfg);
        let (a0, b0) = base.aimd_at(10_000);
        let (a1, b1) = tuned.aimd_at(10_000);
        assert!(a1 > a0 && b1 < b0, "base ({a0}, {b0}) tuned ({a1}, {b1})");
        // Raising Low_Window keeps standard TCP up to it.
        let mut late = HighSpeed::new(HighSpeedConfig { low_window: 100, ..Default::default() });
        assert_eq!(late.aimd_at(100), (1, 0.5));
        assert_eq!(base.aimd_at(100).0, 2, "the default table is past standard TCP there");
    }

    #[test]
    fn validation_names_the_parameter() {
        let bad = HighSpeedConfig { high_window: 20, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("high_window: 20 is not allowed"));
        let bad = HighSpeedConfig { high_p: 0.01, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("high_p: 0.01 is not allowed"));
        let bad = HighSpeedConfig { high_decrease: 0.7, ..Default::default() };
        assert!(bad.validate().unwrap_err().starts_with("high_decrease: 0.7 is not allowed"));
        // So low a decrease that a(w) would peak before High_Window and fall.
        let bad = HighSpeedConfig { high_decrease: 0.05, ..Default::default() };
        assert!(bad.validate().unwrap_err().contains("would fall before high_window"));
        let bad = HighSpeedConfig { high_window: 4_000_000_000, high_p: 1e-12, ..Default::default() };
        assert!(bad.validate().is_err(), "a table of millions of rows");
        assert!(HighSpeedConfig::default().validate().is_ok());
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut h = HighSpeed::new(HighSpeedConfig::default());
        let mut s = state(1000, 10);
        s.cwnd_limited = false;
        one_rtt(&mut h, &mut s);
        assert_eq!(s.cwnd, 1000);
    }

    #[test]
    fn without_byte_counting_slow_start_and_growth_count_acks() {
        let mut h = HighSpeed::new(HighSpeedConfig { byte_counting: false, ..Default::default() });
        let mut s = state(10, u32::MAX);
        for _ in 0..5 {
            h.cong_avoid(&mut s, &ack(2));
        }
        assert_eq!(s.cwnd, 15, "one segment per ACK, as Reno on Linux 2.4");
        // a(w) per window of ACKs: delayed ACKs (2500 of 2) give half of a(5000) = 20.
        let a = h.aimd_at(5000).0;
        let mut s = state(5000, 10);
        for _ in 0..2500 {
            h.cong_avoid(&mut s, &ack(2));
        }
        assert!((s.cwnd - 5000).abs_diff(a / 2) <= 1, "grew {} with a = {a}", s.cwnd - 5000);
    }

    #[test]
    fn cwr_halves_only_when_asked() {
        let mut h = HighSpeed::new(HighSpeedConfig { cwr_halves: true, ..Default::default() });
        let mut s = state(2000, 10);
        s.ssthresh = h.ssthresh(&s);
        assert!(s.ssthresh > 1000);
        h.set_state(&mut s, CaState::Recovery);
        assert!(s.ssthresh > 1000, "a loss keeps b(w)");
        h.set_state(&mut s, CaState::Cwr);
        assert_eq!(s.ssthresh, 1000);
        let mut h = HighSpeed::new(HighSpeedConfig::default());
        let mut s = state(2000, 10);
        s.ssthresh = h.ssthresh(&s);
        h.set_state(&mut s, CaState::Cwr);
        assert!(s.ssthresh > 1000);
    }
}
