//! TCP-NV (Brakmo, "TCP-NV: an update to TCP-Vegas", 2010; Linux Plumbers 2010), as Linux
//! `net/ipv4/tcp_nv.c` runs it: Vegas for data centres, which predicts the window the measured
//! rate needs and takes off part of the excess before a loss.
//!
//! On every ACK NV smooths the RTT (half old, half new), turns the data in flight over it into
//! a rate, and keeps the round's largest rate and the smallest smoothed RTT (min_rtt, renewed
//! every `reset_period`, 3/4 to 5/4 of it at random, from the minimum of the last period). Once
//! per RTT it sets max_win = rate x min_rtt / MSS + pad, the window the rate needs plus `pad`
//! packets of queue:
//!
//! - cwnd > max_win (congestion): once enough samples back it (60 ACKs, 30 in the first slow
//!   start; two RTTs), ssthresh = max_win and cwnd falls by 30 % of the excess (at least 2), or
//!   to max_win when the excess is 2 or less; growth stops until the queue is gone;
//! - cwnd <= max_win - pad_buffer (no congestion, after 20 ACKs): growth resumes (Reno's, or
//!   slower after timeouts: one segment per cwnd x 2^k, k back to 0 one step per 8 RTTs of no
//!   congestion);
//! - in between: nothing.
//!
//! A loss keeps 80 % of the window. A window too small to give NV more than one ACK per RTT
//! (TSO, coalescing) raises NV's own floor, 4 segments, by 2 up to 81 and lets it grow.
//!
//! Departures from Linux: the data in flight is the pipe before the ACK (`prior_in_flight`),
//! where Linux counts the segments delivered since the acknowledged one was sent (both the
//! flight that segment saw); the RTT bounds a BPF sock_ops program may set (`nv_base_rtt`) do
//! not exist here; Linux's `nv_catchup` is never set and is left out.

use super::jiffies::Jiffies;
use super::{cong_avoid_ai, slow_start, AckSample, CaState, CcState, CongestionControl, INFINITE_SSTHRESH};
use crate::rng::Rng;
use crate::time::{Time, PS_PER_S, PS_PER_US};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Congestion takes this share of the excess off, in 128ths (`nv_cong_dec_mult` = 30 x 128 / 100).
const CONG_DEC_MULT: u64 = 30 * 128 / 100;
/// ssthresh on congestion = factor x max_win / 8 (`nv_ssthresh_factor` = 8: max_win).
const SSTHRESH_FACTOR: u64 = 8;
/// RTT smoothing, 256ths of the new sample (`nv_rtt_factor` = 128: half).
const RTT_FACTOR: u64 = 128;
/// A loss keeps this many 1024ths (`nv_loss_dec_factor` = 819: 80 %).
const LOSS_DEC_FACTOR: u64 = 819;
/// Growth after timeouts doubles back every this many uncongested RTTs
/// (`nv_cwnd_growth_rate_neg` = 8); above Reno's rate it never grows (`_pos` = 0).
const CWND_GROWTH_RATE_NEG: u32 = 8;
/// ACKs needed before a decision: to decrease, in the first slow start, to increase
/// (`nv_dec_eval_min_calls` 60, `nv_ssthresh_eval_min_calls` 30, `nv_inc_eval_min_calls` 20).
const DEC_EVAL_MIN_CALLS: u32 = 60;
const SSTHRESH_EVAL_MIN_CALLS: u32 = 30;
const INC_EVAL_MIN_CALLS: u32 = 20;
/// Growth stops after this many RTTs of undecided congestion (`nv_stop_rtt_cnt` = 10), and a
/// decision needs this many RTTs (`nv_rtt_min_cnt` = 2).
const STOP_RTT_CNT: u32 = 10;
const RTT_MIN_CNT: u32 = 2;
/// NV's own floor and its growth for TSO (`NV_MIN_CWND`, `NV_MIN_CWND_GROW`, `NV_TSO_CWND_BOUND`).
const NV_MIN_CWND: u32 = 4;
const NV_MIN_CWND_GROW: u32 = 2;
const NV_TSO_CWND_BOUND: u32 = 80;
/// The first min-RTT reset comes 2 s after the start (`jiffies + 2 * HZ`).
const FIRST_RESET_S: u64 = 2;
/// Counters saturate at a byte.
const COUNT_MAX: u32 = 255;
/// Rates are in 100s of bits per second: bytes x 8 / us x 10^6 / 100.
const RATE_UNIT: u64 = 80_000;
/// The slowest growth after timeouts: one segment per cwnd x 2^8 (`cwnd_growth_factor > -8`).
const MIN_GROWTH_FACTOR: i32 = -8;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NvConfig {
    /// Packets of queue allowed above the window the rate needs (Linux module parameter
    /// `nv_pad` = 10).
    pub pad: u32,
    /// No growth within this many packets of pad (Linux `nv_pad_buffer` = 2).
    pub pad_buffer: u32,
    /// How often min_rtt is renewed, picoseconds, drawn on [3/4, 5/4) of it (Linux module
    /// parameter `nv_reset_period` = 5 s).
    pub reset_period_ps: Time,
    /// NV never lowers cwnd below this without a loss, segments (Linux module parameter
    /// `nv_min_cwnd` = 2).
    pub min_cwnd: u32,
    /// Jiffies per second of the reset timer (Linux HZ).
    pub kernel_hz: u32,
}

impl NvConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.pad_buffer > self.pad {
            return Err(format!("pad_buffer: {} is not allowed: must be at most pad ({})", self.pad_buffer, self.pad));
        }
        if self.kernel_hz == 0 {
            return Err("kernel_hz: 0 is not allowed: must be at least 1 jiffy per second".into());
        }
        Ok(())
    }
}

pub struct Nv {
    cfg: NvConfig,
    jiffies: Jiffies,
    rng: Rng,
    min_rtt_reset_at: u64,
    /// < 0: slower than Reno, one segment per cwnd x 2^-k (`cwnd_growth_factor`).
    growth_factor: i32,
    allow_cwnd_growth: bool,
    reset: bool,
    eval_call_cnt: u32,
    /// NV's own floor for deciding (`ca->nv_min_cwnd`).
    nv_min_cwnd: u32,
    rtt_cnt: u32,
    last_rtt_us: u64,
    min_rtt_us: u64,
    min_rtt_new_us: u64,
    rtt_max_rate: u64,
    rtt_start_seq: u64,
    last_snd_una: u64,
    no_cong_cnt: u32,
}

const NO_RTT: u64 = u32::MAX as u64;

impl Nv {
    pub fn new(cfg: NvConfig) -> Self {
        Nv {
            jiffies: Jiffies::new(cfg.kernel_hz),
            cfg,
            rng: Rng::new(0),
            min_rtt_reset_at: 0,
            growth_factor: 0,
            allow_cwnd_growth: true,
            reset: false,
            eval_call_cnt: 0,
            nv_min_cwnd: NV_MIN_CWND,
            rtt_cnt: 0,
            last_rtt_us: 0,
            min_rtt_us: NO_RTT,
            min_rtt_new_us: NO_RTT,
            rtt_max_rate: 0,
            rtt_start_seq: 0,
            last_snd_una: 0,
            no_cong_cnt: 0,
        }
    }

    /// Whether NV lets the window grow now.
    pub fn grows(&self) -> bool {
        self.allow_cwnd_growth
    }

    /// `tcpnv_reset`.
    fn reset_round(&mut self, s: &CcState) {
        self.reset = false;
        self.no_cong_cnt = 0;
        self.rtt_cnt = 0;
        self.last_rtt_us = 0;
        self.rtt_max_rate = 0;
        self.rtt_start_seq = s.snd_una;
        self.eval_call_cnt = 0;
        self.last_snd_una = s.snd_una;
    }

    /// The once-per-RTT decision (the end of `tcpnv_acked`).
    fn decide(&mut self, s: &mut CcState, bytes_acked: u64) {
        let mss = s.mss_bytes as u64;
        self.rtt_start_seq = s.snd_nxt;
        self.rtt_cnt = (self.rtt_cnt + 1).min(COUNT_MAX);
        // One ACK per RTT: the window is too small to measure (TSO, coalescing); raise the floor.
        if self.eval_call_cnt == 1
            && bytes_acked >= (self.nv_min_cwnd as u64 - 1) * mss
            && self.nv_min_cwnd < NV_TSO_CWND_BOUND + 1
        {
            self.nv_min_cwnd = (self.nv_min_cwnd + NV_MIN_CWND_GROW).min(NV_TSO_CWND_BOUND + 1);
            self.rtt_start_seq = s.snd_nxt + self.nv_min_cwnd as u64 * mss;
            self.eval_call_cnt = 0;
            self.allow_cwnd_growth = true;
            return;
        }
        let cwnd_by_slope = (self.rtt_max_rate as u128 * self.min_rtt_us as u128 / (RATE_UNIT * mss) as u128) as u64;
        let max_win = cwnd_by_slope + self.cfg.pad as u64;
        let cwnd = s.cwnd as u64;
        if cwnd > max_win {
            if self.rtt_cnt < RTT_MIN_CNT {
                return;
            } else if s.ssthresh == INFINITE_SSTHRESH {
                if self.eval_call_cnt < SSTHRESH_EVAL_MIN_CALLS {
                    return;
                }
            } else if self.eval_call_cnt < DEC_EVAL_MIN_CALLS {
                if self.allow_cwnd_growth && self.rtt_cnt > STOP_RTT_CNT {
                    self.allow_cwnd_growth = false;
                }
                return;
            }
            // Congestion: take part of the excess off now.
            self.allow_cwnd_growth = false;
            s.ssthresh = ((SSTHRESH_FACTOR * max_win) >> 3).min(u32::MAX as u64) as u32;
            if cwnd - max_win > 2 {
                let dec = (((cwnd - max_win) * CONG_DEC_MULT) >> 7).max(2);
                s.cwnd = (cwnd - dec) as u32;
            } else {
                s.cwnd = max_win as u32;
            }
            self.growth_factor = self.growth_factor.min(0);
            self.no_cong_cnt = 0;
        } else if cwnd + self.cfg.pad_buffer as u64 <= max_win {
            if self.eval_call_cnt < INC_EVAL_MIN_CALLS {
                return;
            }
            self.allow_cwnd_growth = true;
            self.no_cong_cnt += 1;
            if self.growth_factor < 0 && self.no_cong_cnt > CWND_GROWTH_RATE_NEG {
                self.growth_factor += 1;
                self.no_cong_cnt = 0;
            }
        } else {
            return;
        }
        self.eval_call_cnt = 0;
        self.rtt_cnt = 0;
        self.rtt_max_rate = 0;
        s.cwnd = s.cwnd.max(self.cfg.min_cwnd);
    }
}

impl CongestionControl for Nv {
    fn name(&self) -> &'static str {
        "nv"
    }

    fn uses_rng(&self) -> bool {
        true
    }

    fn seed_rng(&mut self, rng: Rng) {
        self.rng = rng;
    }

    fn init(&mut self, s: &mut CcState) {
        self.reset_round(s);
        self.allow_cwnd_growth = true;
        self.min_rtt_reset_at = self.jiffies.at(s.now) + FIRST_RESET_S * self.jiffies.hz();
        self.min_rtt_us = NO_RTT;
        self.min_rtt_new_us = NO_RTT;
        self.nv_min_cwnd = NV_MIN_CWND;
        self.growth_factor = 0;
    }

    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        if self.reset {
            // Not in the Open state (Linux also acts in Disorder, which is Open here).
            return;
        }
        let bytes_acked = s.snd_una.saturating_sub(self.last_snd_una);
        self.last_snd_una = s.snd_una;
        let in_flight = ack.prior_in_flight_bytes;
        if in_flight == 0 {
            return;
        }
        let rtt_us = rtt / PS_PER_US;
        let avg_rtt = if self.last_rtt_us > 0 {
            (rtt_us * RTT_FACTOR + self.last_rtt_us * (256 - RTT_FACTOR)) >> 8
        } else {
            self.min_rtt_us = rtt_us << 1;
            rtt_us
        };
        self.last_rtt_us = avg_rtt;
        let rate = in_flight * RATE_UNIT / avg_rtt.max(1);
        self.rtt_max_rate = self.rtt_max_rate.max(rate);
        self.eval_call_cnt = (self.eval_call_cnt + 1).min(COUNT_MAX);
        self.min_rtt_us = self.min_rtt_us.min(avg_rtt);
        self.min_rtt_new_us = self.min_rtt_new_us.min(avg_rtt);
        let now = self.jiffies.at(s.now);
        if now >= self.min_rtt_reset_at {
            self.min_rtt_us = self.min_rtt_new_us;
            self.min_rtt_new_us = NO_RTT;
            let rand = self.rng.next_u64() & 0xff;
            let period_jiffies = (self.cfg.reset_period_ps as u128 * (384 + rand) as u128 * self.jiffies.hz() as u128
                / PS_PER_S as u128)
                >> 9;
            self.min_rtt_reset_at = now + period_jiffies as u64;
            self.nv_min_cwnd = (self.nv_min_cwnd / 2).max(NV_MIN_CWND);
        }
        if self.rtt_start_seq < s.snd_una {
            self.decide(s, bytes_acked);
        }
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if !s.cwnd_limited || !self.allow_cwnd_growth {
            return;
        }
        let mut acked = ack.delivered_segments;
        if s.in_slow_start() {
            acked = slow_start(s, acked);
            if acked == 0 {
                return;
            }
        }
        let per_segment = if self.growth_factor < 0 {
            s.cwnd.saturating_mul(1 << -self.growth_factor)
        } else {
            (s.cwnd >> self.growth_factor).max(4)
        };
        cong_avoid_ai(s, per_segment, acked);
    }

    /// A loss keeps 80 %.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        ((s.cwnd as u64 * LOSS_DEC_FACTOR) >> 10).max(2) as u32
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        if new == CaState::Open {
            if self.reset {
                self.reset_round(s);
            }
            return;
        }
        self.reset = true;
        self.allow_cwnd_growth = false;
        if new == CaState::Loss {
            self.growth_factor = self.growth_factor.min(0);
            if self.growth_factor > MIN_GROWTH_FACTOR {
                self.growth_factor -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{self, state};
    use crate::time::PS_PER_MS;

    const MSS: u32 = 1448;
    const BASE: Time = 10 * PS_PER_MS;

    fn nv() -> Nv {
        Nv::new(NvConfig { pad: 10, pad_buffer: 2, reset_period_ps: 5 * PS_PER_S, min_cwnd: 2, kernel_hz: 250 })
    }

    /// One round: an ACK per segment, each with RTT `rtt` and the window in flight, the last
    /// passing the round's end.
    fn round(c: &mut Nv, s: &mut CcState, rtt: Time) {
        let step = rtt / s.cwnd as Time;
        testing::round(s, c.rtt_start_seq, |s| {
            s.now += step;
            let ack = AckSample {
                rtt: Some(rtt),
                prior_in_flight_bytes: s.cwnd as u64 * MSS as u64,
                ..AckSample::of_segments(1, MSS)
            };
            c.pkts_acked(s, &ack);
            c.cong_avoid(s, &ack);
        });
    }

    fn started(cwnd: u32) -> (Nv, CcState) {
        let mut c = nv();
        let mut s = state(cwnd, cwnd / 2);
        c.init(&mut s);
        for _ in 0..3 {
            round(&mut c, &mut s, BASE);
        }
        (c, s)
    }

    #[test]
    fn no_queue_grows_as_reno() {
        let (mut c, mut s) = started(200);
        let w = s.cwnd;
        for _ in 0..4 {
            round(&mut c, &mut s, BASE);
        }
        assert!(c.grows());
        assert!((w + 3..=w + 4).contains(&s.cwnd), "{w} -> {}", s.cwnd);
    }

    /// A queue of q packets at window W raises the RTT to base x W / (W - q), and the rate
    /// falls to (W - q) / base. NV keeps the largest rate since its last decision: the first
    /// sample after the step, whose smoothed RTT is halfway, (base + RTT) / 2. So max_win =
    /// W x base / ((base + RTT) / 2) + pad, ssthresh = max_win, and cwnd loses 30 % of its
    /// excess over max_win.
    #[test]
    fn a_queue_above_pad_cuts_thirty_percent_of_the_excess() {
        let (mut c, mut s) = started(200);
        let w = s.cwnd as u64;
        let q = 50;
        let rtt = BASE * w / (w - q);
        let mut rounds = 0;
        while c.grows() {
            s.cwnd = w as u32;
            round(&mut c, &mut s, rtt);
            rounds += 1;
            assert!(rounds < 5, "no cut");
        }
        let (base_us, rtt_us) = (BASE / PS_PER_US, rtt / PS_PER_US);
        let first_avg = (rtt_us * 128 + base_us * 128) >> 8;
        let max_rate = w * MSS as u64 * RATE_UNIT / first_avg;
        let max_win = max_rate * base_us / (RATE_UNIT * MSS as u64) + 10;
        assert_eq!(s.ssthresh as u64, max_win);
        // cwnd grew by at most a segment in the round before the cut.
        let after_cut = |cwnd: u64| cwnd - (((cwnd - max_win) * CONG_DEC_MULT) >> 7).max(2);
        assert!((after_cut(w)..=after_cut(w + 1)).contains(&(s.cwnd as u64)), "cwnd {} vs {}", s.cwnd, after_cut(w));
        // And a loss keeps 80 %.
        assert_eq!(c.ssthresh(&s), s.cwnd * 819 / 1024);
    }

    #[test]
    fn timeouts_slow_the_growth_and_recovery_stops_it() {
        let (mut c, mut s) = started(200);
        c.set_state(&mut s, CaState::Recovery);
        assert!(!c.grows());
        c.set_state(&mut s, CaState::Loss);
        assert_eq!(c.growth_factor, -1, "one segment per 2 cwnd after a timeout");
        c.set_state(&mut s, CaState::Open);
        s.cwnd = 200;
        s.ssthresh = 100;
        // Growth resumes after 20 uncongested ACKs, at half Reno's rate.
        let w = s.cwnd;
        for _ in 0..4 {
            round(&mut c, &mut s, BASE);
        }
        assert!(c.grows());
        assert!((w + 1..=w + 2).contains(&s.cwnd), "{w} -> {}", s.cwnd);
    }
}
