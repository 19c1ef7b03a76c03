//! CUBIC as Linux 6.x `net/ipv4/tcp_cubic.c` computes it (`bictcp_update`,
//! `cubictcp_cong_avoid`, `cubictcp_recalc_ssthresh`, `cubictcp_acked`,
//! `cubictcp_cwnd_event`, `cubictcp_state`), in its own fixed point:
//!
//! - time is counted in jiffies (`kernel_hz` per second, Linux `tcp_jiffies32`) and the curve's
//!   time in units of 2^-10 s (`BICTCP_HZ`); C is `bic_scale` / 1024 x 10 (41 gives 0.4004)
//!   and beta `beta` / 1024 (717 gives 0.7002), the configured c and beta rounded to them;
//! - the target is the curve one minimum RTT ahead, t = now - epoch_start + delay_min (rounded
//!   up to a jiffy), where delay_min is CUBIC's own minimum RTT (microseconds, samples
//!   discarded for 1 s after an epoch starts), not the smoothed RTT;
//! - K = cbrt(cube_factor x (W_max - cwnd)), cube_factor = 2^40 / (bic_scale x 10); Linux
//!   takes the cube root from a table and one Newton step (0.2 % mean error), this file the
//!   exact integer root;
//! - the increase is one segment per `cnt` acknowledged segments, cnt = cwnd / (target -
//!   cwnd), or 100 cwnd when the target is not above cwnd; before the first loss (W_max = 0)
//!   cnt is at most 20 (at least 5 % per RTT); cnt is at least 2 (at most 1.5x per RTT);
//! - cnt is recomputed at most once per jiffy, and not at all while cwnd is unchanged and less
//!   than HZ/32 has passed since the last computation;
//! - Reno emulation ("TCP friendliness"): tcp_cwnd starts at cwnd with the epoch and grows by
//!   one per (cwnd x beta_scale) / 8 acknowledged segments, beta_scale = 8 (1024 + beta) / 3 /
//!   (1024 - beta) = 15: alpha = 8/15 = 0.533 segment per RTT for the whole epoch (RFC 9438's
//!   alpha_cubic is 0.529, and becomes 1 once W_est passes cwnd_prior; Linux never switches);
//!   when tcp_cwnd is above cwnd, cnt is at most cwnd / (tcp_cwnd - cwnd);
//! - a loss sets W_max = cwnd, or cwnd (1 + beta) / 2 with fast convergence below the previous
//!   W_max, and ssthresh = max(cwnd x beta / 1024, 2); it ends the epoch;
//! - after idle (`CwndEvent::TxStart`) the epoch start moves forward by the idle time (now -
//!   last send), so that idle time does not count as time on the curve;
//! - a timeout (`CaState::Loss`) forgets everything: W_max, the epoch, delay_min, and resets
//!   HyStart;
//! - undo (`undo_cwnd`) is Linux's `tcp_reno_undo_cwnd`, the trait's default.
//!
//! Slow start is `tcp_slow_start`, with HyStart or HyStart++ if configured (`hystart.rs`).

use super::hystart::SlowStartExit;
use super::CubicConfig;
use crate::cc::jiffies::Jiffies;
use crate::cc::{cong_avoid_ai, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::time::{Time, PS_PER_US};

/// beta and C are fractions of this in Linux (`BICTCP_BETA_SCALE`).
pub const BETA_SCALE: u32 = 1024;
/// The curve's time unit is 2^-BICTCP_HZ seconds (Linux `BICTCP_HZ`).
const BICTCP_HZ: u32 = 10;
/// Before the first loss cnt is at most this: at least 5 % growth per RTT (Linux
/// `bictcp_update`).
const NO_LOSS_MAX_CNT: u32 = 20;
/// When the target is not above cwnd: one segment per this many windows.
const FLAT_CNT_PER_CWND: u32 = 100;
/// cnt is at least this: at most 1.5x per RTT (Linux `bictcp_update`).
const MIN_CNT: u32 = 2;
/// cnt is recomputed at least every HZ / this jiffies while cwnd stays the same.
const UPDATES_PER_SECOND_WHEN_FLAT: u64 = 32;
/// After an epoch starts, RTT samples are ignored for this long, in seconds (HZ jiffies):
/// right after fast recovery they are inflated (Linux `cubictcp_acked`).
const DELAY_SAMPLE_HOLDOFF_S: u64 = 1;

/// Linux's fixed-point parameters, derived once (`cubictcp_register`).
#[derive(Clone, Copy, Debug)]
struct Params {
    beta: u32,
    cube_rtt_scale: u64,
    cube_factor: u64,
    beta_scale: u32,
    fast_convergence: bool,
    tcp_friendliness: bool,
    clock: Jiffies,
}

/// Linux's per-connection state (`struct bictcp` without HyStart's fields): all zero at the
/// start and after a timeout (`bictcp_reset`).
#[derive(Clone, Debug, Default)]
struct Bictcp {
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    /// Jiffies of the last computation of cnt.
    last_time: u64,
    origin_point: u32,
    /// K, 2^-10 s.
    k: u64,
    /// CUBIC's minimum RTT, microseconds; 0 before the first sample.
    delay_min_us: u64,
    /// Jiffies at which the epoch began (Linux uses 0 for none).
    epoch_start: Option<u64>,
    ack_cnt: u32,
    tcp_cwnd: u32,
}

pub struct LinuxCubic {
    p: Params,
    ca: Bictcp,
    exit: SlowStartExit,
}

impl LinuxCubic {
    pub fn new(cfg: &CubicConfig) -> Self {
        let beta = cfg.beta_fixed();
        let cube_rtt_scale = cfg.bic_scale() as u64 * 10;
        let p = Params {
            beta,
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale,
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            fast_convergence: cfg.fast_convergence,
            tcp_friendliness: cfg.tcp_friendliness,
            clock: Jiffies::new(cfg.kernel_hz),
        };
        LinuxCubic { p, ca: Bictcp::default(), exit: cfg.slow_start_exit() }
    }

    /// W_max, segments (Linux `last_max_cwnd`; 0 before the first loss and after a timeout).
    pub fn last_max_cwnd(&self) -> u32 {
        self.ca.last_max_cwnd
    }

    /// K of the current epoch in 2^-10 s, if one has begun.
    pub fn k(&self) -> Option<u64> {
        self.ca.epoch_start.map(|_| self.ca.k)
    }

    /// The epoch's start, jiffies.
    pub fn epoch_start(&self) -> Option<u64> {
        self.ca.epoch_start
    }

    /// Acknowledged segments per one-segment increase (Linux `ca->cnt`).
    pub fn cnt(&self) -> u32 {
        self.ca.cnt
    }

    pub fn delay_min_us(&self) -> u64 {
        self.ca.delay_min_us
    }

    /// The slow-start exit (HyStart) has fired.
    pub fn slow_start_exited(&self) -> bool {
        self.exit.found()
    }

    pub fn jiffies(&self, t: Time) -> u64 {
        self.p.clock.at(t)
    }

    /// Linux `bictcp_update`: recomputes `cnt` for window `cwnd` after `acked` segments.
    fn update(&mut self, cwnd: u32, acked: u32, now: Time) {
        self.ca.ack_cnt = self.ca.ack_cnt.saturating_add(acked);
        let j = self.jiffies(now);
        if self.ca.last_cwnd == cwnd
            && j.saturating_sub(self.ca.last_time) <= self.p.clock.hz() / UPDATES_PER_SECOND_WHEN_FLAT
        {
            return;
        }
        // At most once per jiffy; an epoch start always computes.
        if !(self.ca.epoch_start.is_some() && j == self.ca.last_time) {
            self.ca.last_cwnd = cwnd;
            self.ca.last_time = j;
            let epoch_start = match self.ca.epoch_start {
                Some(e) => e,
                None => self.start_epoch(cwnd, acked, j),
            };
            let mut t = j.saturating_sub(epoch_start) + self.p.clock.from_us(self.ca.delay_min_us);
            t = (t << BICTCP_HZ) / self.p.clock.hz();
            let offs = t.abs_diff(self.ca.k) as u128;
            let delta = ((self.p.cube_rtt_scale as u128 * offs * offs * offs) >> (10 + 3 * BICTCP_HZ))
                .min(u32::MAX as u128) as u32;
            let target = if t < self.ca.k {
                self.ca.origin_point.saturating_sub(delta)
            } else {
                self.ca.origin_point.saturating_add(delta)
            };
            self.ca.cnt = if target > cwnd { cwnd / (target - cwnd) } else { FLAT_CNT_PER_CWND.saturating_mul(cwnd) };
            if self.ca.last_max_cwnd == 0 {
                self.ca.cnt = self.ca.cnt.min(NO_LOSS_MAX_CNT);
            }
        }
        if self.p.tcp_friendliness {
            let per_segment = (cwnd.saturating_mul(self.p.beta_scale)) >> 3;
            if per_segment > 0 && self.ca.ack_cnt > per_segment {
                let n = (self.ca.ack_cnt - 1) / per_segment;
                self.ca.ack_cnt -= n * per_segment;
                self.ca.tcp_cwnd = self.ca.tcp_cwnd.saturating_add(n);
            }
            if self.ca.tcp_cwnd > cwnd {
                self.ca.cnt = self.ca.cnt.min(cwnd / (self.ca.tcp_cwnd - cwnd));
            }
        }
        self.ca.cnt = self.ca.cnt.max(MIN_CNT);
    }

    fn start_epoch(&mut self, cwnd: u32, acked: u32, j: u64) -> u64 {
        self.ca.epoch_start = Some(j);
        self.ca.ack_cnt = acked;
        self.ca.tcp_cwnd = cwnd;
        if self.ca.last_max_cwnd <= cwnd {
            self.ca.k = 0;
            self.ca.origin_point = cwnd;
        } else {
            self.ca.k = cube_root(self.p.cube_factor as u128 * (self.ca.last_max_cwnd - cwnd) as u128);
            self.ca.origin_point = self.ca.last_max_cwnd;
        }
        j
    }
}

impl CongestionControl for LinuxCubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, s: &mut CcState) {
        self.exit.init(s);
    }

    fn ssthresh(&mut self, s: &CcState) -> u32 {
        self.ca.epoch_start = None;
        self.exit.on_congestion();
        let cwnd = s.cwnd;
        self.ca.last_max_cwnd = if cwnd < self.ca.last_max_cwnd && self.p.fast_convergence {
            (cwnd as u64 * (BETA_SCALE + self.p.beta) as u64 / (2 * BETA_SCALE) as u64) as u32
        } else {
            cwnd
        };
        ((cwnd as u64 * self.p.beta as u64 / BETA_SCALE as u64) as u32).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(acked) = self.exit.slow_start_first(s, ack.delivered_segments) else {
            return;
        };
        self.update(s.cwnd, acked, s.now);
        cong_avoid_ai(s, self.ca.cnt, acked);
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Loss {
            self.ca = Bictcp::default();
            self.exit.on_timeout(s);
        }
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        if ev != CwndEvent::TxStart {
            return;
        }
        // Idle (application-limited) for a while: shift the epoch so that growth follows the
        // curve from where it left off, never into the future.
        let (Some(epoch_start), Some(last_send)) = (self.ca.epoch_start, s.last_send_ps) else { return };
        let now = self.jiffies(s.now);
        let idle = now.saturating_sub(self.jiffies(last_send));
        if idle > 0 {
            self.ca.epoch_start = Some((epoch_start + idle).min(now));
        }
    }

    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        if let Some(e) = self.ca.epoch_start {
            if self.jiffies(s.now).saturating_sub(e) < DELAY_SAMPLE_HOLDOFF_S * self.p.clock.hz() {
                return;
            }
        }
        let delay_us = (rtt / PS_PER_US).max(1);
        if self.ca.delay_min_us == 0 || self.ca.delay_min_us > delay_us {
            self.ca.delay_min_us = delay_us;
        }
        self.exit.on_ack(s, ack, Some(delay_us), self.ca.delay_min_us);
    }
}

/// floor(cbrt(x)) by Newton's iteration on integers from a power of two above the root.
pub fn cube_root(x: u128) -> u64 {
    if x == 0 {
        return 0;
    }
    let bits = 128 - x.leading_zeros();
    let mut y: u128 = 1 << bits.div_ceil(3);
    loop {
        let next = (2 * y + x / (y * y)) / 3;
        if next >= y {
            break;
        }
        y = next;
    }
    while y * y * y > x {
        y -= 1;
    }
    while (y + 1) * (y + 1) * (y + 1) <= x {
        y += 1;
    }
    y as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::cubic::tests::{ack_rtt, cwnd_at, drive, loss};
    use crate::cc::cubic::{Cubic, CubicVariant};
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::{PS_PER_MS, PS_PER_S};

    const RTT: Time = 100 * PS_PER_MS;
    /// Linux's C: bic_scale 41 x 10 / 1024.
    const C_LINUX: f64 = 410.0 / 1024.0;

    fn linux() -> CubicConfig {
        CubicConfig { variant: CubicVariant::Linux, ..Default::default() }
    }

    fn state(cwnd: u32, ssthresh: u32, srtt: Time) -> CcState {
        CcState { srtt: Some(srtt), min_rtt: Some(RTT), ..CcState::new(cwnd, ssthresh, 1448) }
    }

    fn ack(segments: u32, rtt: Time) -> AckSample {
        ack_rtt(segments, rtt)
    }

    #[test]
    fn fixed_point_constants_are_linuxs() {
        let c = LinuxCubic::new(&linux());
        // cubictcp_register with beta 717 and bic_scale 41.
        assert_eq!(c.p.beta, 717);
        assert_eq!(c.p.cube_rtt_scale, 410);
        assert_eq!(c.p.cube_factor, (1u64 << 40) / 410);
        assert_eq!(c.p.beta_scale, 15, "8 x 1741 / 3 / 307");
        assert_eq!(c.p.clock.hz(), 250);
    }

    #[test]
    fn decrease_and_fast_convergence_in_fixed_point() {
        let mut c = LinuxCubic::new(&linux());
        assert_eq!(c.ssthresh(&state(1000, 10, RTT)), 700, "1000 x 717 / 1024");
        assert_eq!(c.last_max_cwnd(), 1000);
        assert_eq!(c.ssthresh(&state(900, 10, RTT)), 630);
        assert_eq!(c.last_max_cwnd(), 765, "900 x (1024 + 717) / 2048");
        assert_eq!(c.ssthresh(&state(2, 10, RTT)), 2);
        let mut c = LinuxCubic::new(&CubicConfig { fast_convergence: false, ..linux() });
        c.ssthresh(&state(1000, 10, RTT));
        c.ssthresh(&state(900, 10, RTT));
        assert_eq!(c.last_max_cwnd(), 900);
    }

    #[test]
    fn window_follows_linuxs_curve_from_delay_min_whatever_srtt() {
        // A loss at W_max = 1000 with delay_min 100 ms; K = cbrt(cube_factor x 300) = 9300 / 1024 s.
        let mut traces = Vec::new();
        for srtt in [RTT, 3 * RTT] {
            let mut c = LinuxCubic::new(&linux());
            let mut s = state(1000, INFINITE_SSTHRESH, srtt);
            loss(&mut c, &mut s);
            assert_eq!(s.cwnd, 700);
            let trace = drive(&mut c, &mut s, RTT, 20 * PS_PER_S);
            assert_eq!(c.k(), Some(9300));
            traces.push(trace);
        }
        assert_eq!(traces[0], traces[1], "the target is computed from delay_min, not srtt");
        let k: f64 = 9300.0 / 1024.0;
        for t in [1.0, 4.0, 8.0, 9.0, 10.0, 12.0, 16.0, 19.5] {
            let law = C_LINUX * (t - k).powi(3) + 1000.0;
            let cwnd = cwnd_at(&traces[0], t);
            assert!((cwnd / law - 1.0).abs() < 0.05, "t = {t}: cwnd {cwnd} vs W(t) {law:.1}");
        }
        // The RFC form aims at W(t + srtt): a larger srtt changes its trajectory.
        let rfc: Vec<_> = [RTT, 3 * RTT]
            .into_iter()
            .map(|srtt| {
                let mut c = Cubic::new(CubicConfig::default());
                let mut s = state(1000, INFINITE_SSTHRESH, srtt);
                loss(&mut c, &mut s);
                drive(&mut c, &mut s, RTT, 20 * PS_PER_S)
            })
            .collect();
        assert_ne!(rfc[0], rfc[1]);
    }

    #[test]
    fn before_any_loss_grows_at_least_five_percent_per_rtt() {
        // W_max = 0: cnt is at most 20 (bictcp_update), 50 segments per RTT at cwnd 1000.
        let mut c = LinuxCubic::new(&linux());
        let mut s = state(1000, 500, RTT);
        let trace = drive(&mut c, &mut s, RTT, 2 * RTT);
        let grown = trace[1].1 - trace[0].1;
        assert!((49..=51).contains(&grown), "grew {grown} in one RTT");
        // The RFC form has no such floor: its curve starts flat at cwnd.
        let mut c = Cubic::new(CubicConfig::default());
        let mut s = state(1000, 500, RTT);
        let trace = drive(&mut c, &mut s, RTT, 2 * RTT);
        assert!(trace[1].1 - trace[0].1 < 5);
    }

    #[test]
    fn reno_emulation_grows_eight_fifteenths_per_rtt_for_the_whole_epoch() {
        // RTT 1 ms: the curve needs K = 9 s, so the Reno emulation governs: tcp_cwnd grows one
        // segment per cwnd x 15 / 8 acknowledged, 8/15 per RTT, also past the old W_max (RFC
        // 9438 would switch to 1 per RTT there).
        let rtt = PS_PER_MS;
        let mut c = LinuxCubic::new(&linux());
        let mut s = state(1000, INFINITE_SSTHRESH, rtt);
        c.pkts_acked(&mut s, &ack(1, rtt));
        let ssthresh = c.ssthresh(&s);
        (s.ssthresh, s.cwnd) = (ssthresh, ssthresh);
        let trace = drive(&mut c, &mut s, rtt, PS_PER_S);
        let at_1s = cwnd_at(&trace, 1.0 - 1e-9);
        let expected = 700.0 + 1000.0 * 8.0 / 15.0;
        assert!((at_1s / expected - 1.0).abs() < 0.02, "cwnd {at_1s} at 1 s vs {expected:.0}");
        let mut c = LinuxCubic::new(&CubicConfig { tcp_friendliness: false, ..linux() });
        let mut s = state(1000, INFINITE_SSTHRESH, rtt);
        c.pkts_acked(&mut s, &ack(1, rtt));
        let ssthresh = c.ssthresh(&s);
        (s.ssthresh, s.cwnd) = (ssthresh, ssthresh);
        let trace = drive(&mut c, &mut s, rtt, PS_PER_S);
        assert!(cwnd_at(&trace, 1.0 - 1e-9) < 800.0, "without it the curve alone: {trace:?}");
    }

    #[test]
    fn idle_time_shifts_the_epoch_instead_of_restarting_it() {
        let mut c = LinuxCubic::new(&linux());
        let mut s = state(1000, INFINITE_SSTHRESH, RTT);
        loss(&mut c, &mut s);
        drive(&mut c, &mut s, RTT, 2 * PS_PER_S);
        let (epoch, k, cwnd) = (c.epoch_start().unwrap(), c.k(), s.cwnd);
        s.last_send_ps = Some(s.now);
        s.now += 60 * PS_PER_S;
        c.cwnd_event(&mut s, CwndEvent::TxStart);
        assert_eq!(c.epoch_start(), Some(epoch + 60 * 250), "shifted by 60 s of jiffies");
        assert_eq!(c.k(), k, "the same curve goes on");
        c.cong_avoid(&mut s, &ack(1, RTT));
        assert!(s.cwnd <= cwnd + 1, "no jump after idle");
        // Never into the future.
        s.last_send_ps = Some(0);
        c.cwnd_event(&mut s, CwndEvent::TxStart);
        assert_eq!(c.epoch_start(), Some(c.jiffies(s.now)));
    }

    #[test]
    fn rtt_samples_wait_a_second_after_an_epoch_starts() {
        let mut c = LinuxCubic::new(&linux());
        let mut s = state(1000, INFINITE_SSTHRESH, RTT);
        loss(&mut c, &mut s);
        assert_eq!(c.delay_min_us(), 100_000);
        c.cong_avoid(&mut s, &ack(1, RTT)); // the epoch starts
        s.now += PS_PER_S / 2;
        c.pkts_acked(&mut s, &ack(1, 50 * PS_PER_MS));
        assert_eq!(c.delay_min_us(), 100_000, "right after recovery samples are inflated: ignored");
        s.now += PS_PER_S / 2 + 10 * PS_PER_MS;
        c.pkts_acked(&mut s, &ack(1, 50 * PS_PER_MS));
        assert_eq!(c.delay_min_us(), 50_000);
    }

    #[test]
    fn a_timeout_forgets_w_max_and_delay_min() {
        let mut c = LinuxCubic::new(&linux());
        let mut s = state(1000, INFINITE_SSTHRESH, RTT);
        loss(&mut c, &mut s);
        c.cong_avoid(&mut s, &ack(1, RTT));
        c.ssthresh(&s);
        c.set_state(&mut s, CaState::Loss);
        assert_eq!((c.last_max_cwnd(), c.delay_min_us(), c.k()), (0, 0, None));
    }

    #[test]
    fn integer_cube_root_is_the_floor() {
        for x in [0u128, 1, 7, 8, 26, 27, 999, 1000, 1001, 804_520_703_100, u64::MAX as u128] {
            let y = cube_root(x) as u128;
            assert!(y * y * y <= x && (y + 1) * (y + 1) * (y + 1) > x, "cbrt({x}) = {y}");
        }
    }
}
