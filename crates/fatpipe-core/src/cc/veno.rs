//! TCP Veno (Fu and Liew, "TCP Veno: TCP enhancement for transmission over wireless access
//! networks", IEEE JSAC 21(2), 2003), as Linux `net/ipv4/tcp_veno.c` runs it.
//!
//! Veno reads Vegas's backlog N = cwnd x (RTT - BaseRTT) / RTT, the flow's packets queued in
//! the network, only to tell a congestive state (N >= beta) from a non-congestive one, and:
//!
//! - on a loss in the non-congestive state takes it for a random (wireless) loss and keeps
//!   4/5 of the window; in the congestive state halves it as Reno;
//! - in congestion avoidance grows as Reno while N < beta, and by one segment every other
//!   window of ACKs once N >= beta, staying longer near the point where the queue fills.
//!
//! As Linux: RTTs are whole microseconds plus one; BaseRTT is the smallest since the start or
//! an idle restart; the RTT compared is the smallest sample since the last ACK (Linux clears
//! it on every `cong_avoid`), and N is kept in halves (`V_PARAM_SHIFT`); Veno decides only once
//! it has more than two samples (counted from the start, never cleared: Linux's `cntrtt = 0`
//! is commented out) and grows as Reno (`tcp_reno_cong_avoid`) before, and outside the Open
//! state; slow start is Linux's; cwnd stays at least 2.

use super::vegas::linux::{VegasRtt, RENO_ROUND_SAMPLES};
use super::{cong_avoid_ai, reno_cong_avoid, slow_start, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// N is kept in halves (`V_PARAM_SHIFT` = 1).
const N_SHIFT: u32 = 1;
/// The window kept after a loss in the non-congestive state: 4/5 (Fu and Liew 2003).
const RANDOM_LOSS_KEEP_NUM: u32 = 4;
const RANDOM_LOSS_KEEP_DEN: u32 = 5;
/// The smallest window Veno leaves.
const MIN_CWND_SEGMENTS: u32 = 2;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VenoConfig {
    /// Backlog N, packets, at or above which the path counts as congested (Fu and Liew 2003:
    /// 3; Linux `tcp_veno.c` `beta = 3 << V_PARAM_SHIFT`, a constant). Halves of a packet
    /// count, as Linux keeps N.
    pub beta: f64,
}

impl VenoConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.beta.is_finite() && self.beta >= 0.0) {
            return Err(format!("beta: {} is not allowed: must be a number of packets >= 0", self.beta));
        }
        Ok(())
    }
}

pub struct Veno {
    /// beta in halves of a packet.
    beta_halves: u64,
    rtt: VegasRtt,
    /// In the congestive state, whether the next window of ACKs adds a segment (`inc`).
    inc: bool,
    /// The last backlog N computed, halves of a packet (`diff`).
    diff_halves: u64,
}

impl Veno {
    pub fn new(cfg: VenoConfig) -> Self {
        Veno {
            beta_halves: (cfg.beta * (1 << N_SHIFT) as f64).round() as u64,
            rtt: VegasRtt::new(),
            inc: true,
            diff_halves: 0,
        }
    }

    /// The last backlog N, packets.
    pub fn backlog(&self) -> f64 {
        self.diff_halves as f64 / (1 << N_SHIFT) as f64
    }

    fn congestive(&self) -> bool {
        self.diff_halves >= self.beta_halves
    }

    /// `veno_enable`: on, with a fresh minimum.
    fn enable(&mut self) {
        self.rtt.doing_vegas_now = true;
        self.rtt.clear_min();
    }

    /// `tcp_veno_init`: BaseRTT forgotten; the sample count carries on.
    fn restart(&mut self) {
        self.rtt = VegasRtt { cnt_rtt: self.rtt.cnt_rtt, ..VegasRtt::new() };
        self.inc = true;
        self.enable();
    }

    fn veno_cong_avoid(&mut self, s: &mut CcState, mut acked: u32) {
        let cwnd = s.cwnd as u64;
        let target_halves = ((cwnd * self.rtt.base_rtt_us) << N_SHIFT) / self.rtt.min_rtt_us.max(1);
        self.diff_halves = (cwnd << N_SHIFT).saturating_sub(target_halves);
        if s.in_slow_start() {
            acked = slow_start(s, acked);
        }
        if acked > 0 {
            if !self.congestive() {
                cong_avoid_ai(s, s.cwnd, acked);
            } else if s.cwnd_cnt >= s.cwnd {
                // Congestive: one segment every other window of ACKs.
                if self.inc {
                    s.cwnd += 1;
                }
                self.inc = !self.inc;
                s.cwnd_cnt = 0;
            } else {
                s.cwnd_cnt += acked;
            }
        }
        s.cwnd = s.cwnd.max(MIN_CWND_SEGMENTS);
    }
}

impl CongestionControl for Veno {
    fn name(&self) -> &'static str {
        "veno"
    }

    fn init(&mut self, _s: &mut CcState) {
        self.restart();
    }

    fn pkts_acked(&mut self, _s: &mut CcState, ack: &AckSample) {
        self.rtt.sample(ack);
    }

    fn set_state(&mut self, _s: &mut CcState, new: CaState) {
        if new == CaState::Open {
            self.enable();
        } else {
            self.rtt.doing_vegas_now = false;
        }
    }

    fn cwnd_event(&mut self, _s: &mut CcState, ev: CwndEvent) {
        if matches!(ev, CwndEvent::CwndRestart | CwndEvent::TxStart) {
            self.restart();
        }
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let acked = ack.delivered_segments;
        if !self.rtt.doing_vegas_now {
            reno_cong_avoid(s, acked);
            return;
        }
        if !s.cwnd_limited {
            return;
        }
        if self.rtt.cnt_rtt <= RENO_ROUND_SAMPLES {
            reno_cong_avoid(s, acked);
        } else {
            self.veno_cong_avoid(s, acked);
        }
        self.rtt.clear_min();
    }

    /// 4/5 of the window in the non-congestive state (a random loss), half in the congestive.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        if self.congestive() {
            (s.cwnd >> 1).max(2)
        } else {
            (s.cwnd * RANDOM_LOSS_KEEP_NUM / RANDOM_LOSS_KEEP_DEN).max(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::state;
    use crate::time::{Time, PS_PER_MS, PS_PER_US};

    const MSS: u32 = 1448;
    const BASE: Time = 100 * PS_PER_MS;

    fn veno() -> Veno {
        Veno::new(VenoConfig { beta: 3.0 })
    }

    fn ack(rtt: Time) -> AckSample {
        AckSample { rtt: Some(rtt), ..AckSample::of_segments(1, MSS) }
    }

    fn on_ack(v: &mut Veno, s: &mut CcState, rtt: Time) {
        v.pkts_acked(s, &ack(rtt));
        v.cong_avoid(s, &ack(rtt));
    }

    /// The RTT at which `n` of a window of `cwnd` are queued: N = cwnd (RTT - base) / RTT.
    fn rtt_for_backlog(cwnd: u32, n: f64) -> Time {
        let base_us = (BASE / PS_PER_US + 1) as f64;
        ((base_us * cwnd as f64 / (cwnd as f64 - n)).ceil() as Time - 1) * PS_PER_US
    }

    /// A flow in congestion avoidance that has seen its base RTT.
    fn started(cwnd: u32) -> (Veno, CcState) {
        let mut v = veno();
        let mut s = state(cwnd, cwnd / 2);
        v.init(&mut s);
        for _ in 0..3 {
            on_ack(&mut v, &mut s, BASE);
        }
        s.cwnd = cwnd;
        (v, s)
    }

    #[test]
    fn a_loss_keeps_four_fifths_below_beta_and_half_at_or_above_it() {
        for (n, kept) in [(0.0, 80), (2.0, 80), (3.0, 50), (10.0, 50)] {
            let (mut v, mut s) = started(100);
            on_ack(&mut v, &mut s, rtt_for_backlog(100, n));
            assert!((v.backlog() - n).abs() <= 0.5, "backlog {} for {n}", v.backlog());
            assert_eq!(v.ssthresh(&s), kept * s.cwnd / 100, "N = {n}");
        }
    }

    #[test]
    fn growth_is_reno_below_beta_and_half_of_it_above() {
        let grow = |n: f64| {
            let (mut v, mut s) = started(200);
            for _ in 0..10 {
                let rtt = rtt_for_backlog(s.cwnd, n);
                for _ in 0..s.cwnd {
                    on_ack(&mut v, &mut s, rtt);
                }
            }
            s.cwnd - 200
        };
        assert_eq!(grow(1.0), 10, "one segment per window of ACKs");
        let congested = grow(5.0);
        assert!((4..=5).contains(&congested), "one every other window: {congested}");
    }

    #[test]
    fn reno_until_three_samples_and_outside_the_open_state() {
        let mut v = veno();
        let mut s = state(100, 50);
        v.init(&mut s);
        // Two samples with a deep queue: too few, Reno grows as if nothing were queued.
        on_ack(&mut v, &mut s, 3 * BASE);
        on_ack(&mut v, &mut s, 3 * BASE);
        assert_eq!(v.backlog(), 0.0);
        let (mut v, mut s) = started(100);
        v.set_state(&mut s, CaState::Recovery);
        on_ack(&mut v, &mut s, 3 * BASE);
        assert_eq!(v.backlog(), 0.0, "no Veno outside Open");
    }
}
