//! YeAH-TCP (Baiocchi, Castellani and Vacirca, "YeAH-TCP: Yet Another Highspeed TCP",
//! PFLDnet 2007), as Linux `net/ipv4/tcp_yeah.c` runs it.
//!
//! Two modes, chosen once per RTT from Vegas's measurements (the round's minimum RTT against
//! the base RTT, `vegas/linux.rs`'s [`VegasRtt`]): the flow's packets queued,
//! Q = cwnd x (RTT - base) / RTT, and the queueing delay RTT - base:
//!
//! - Fast mode, while Q <= alpha and the delay <= base / phy: Scalable TCP's growth, one
//!   segment per min(cwnd, 100) acknowledged (1 % per RTT on large windows);
//! - Slow (Reno) mode otherwise: one segment per window of ACKs. Entering or staying in it
//!   with Q > alpha, YeAH drains its own queue at once (precautionary decongestion):
//!   cwnd -= min(Q / gamma, cwnd / 2^epsilon), not below `reno_count`, and ssthresh = cwnd.
//!
//! `reno_count` estimates the window a competing Reno flow would have (half the window on the
//! first slow round, one more per later slow round, halved at each loss, reset after zeta fast
//! rounds). A loss after fewer than rho slow rounds in a row takes off only the flow's queue,
//! between cwnd / 2^delta and cwnd / 2; after rho slow rounds (competing with Reno flows) it
//! halves as Reno.
//!
//! As Linux: Vegas's rounds, samples (microseconds + 1, decisions on rounds of more than two
//! samples), Open-state rule and idle restart; the growth applies only when cwnd limits the
//! sender; slow start is Linux's and decides nothing itself; undo is `tcp_reno_undo_cwnd`.

use super::vegas::linux::{VegasRtt, RENO_ROUND_SAMPLES};
use super::{cong_avoid_ai, slow_start, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Fast mode's Scalable increase: one segment per this many acknowledged (`TCP_SCALABLE_AI_CNT`).
const SCALABLE_AI_CNT: u32 = 100;
/// `doing_reno_now` saturates here (`0xffffff`).
const MAX_SLOW_ROUNDS: u32 = 0xff_ffff;
/// The smallest `reno_count` and ssthresh.
const MIN_WINDOW: u32 = 2;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct YeahConfig {
    /// Largest queue, packets, of the flow's own kept in fast mode (`TCP_YEAH_ALPHA` = 80).
    pub alpha: u32,
    /// Precautionary decongestion removes Q / gamma of the queue (`TCP_YEAH_GAMMA` = 1).
    pub gamma: u32,
    /// A loss in fast mode removes at least cwnd / 2^delta (`TCP_YEAH_DELTA` = 3).
    pub delta: u32,
    /// Decongestion removes at most cwnd / 2^epsilon (`TCP_YEAH_EPSILON` = 1).
    pub epsilon: u32,
    /// Slow mode once the queueing delay exceeds base RTT / phy (`TCP_YEAH_PHY` = 8).
    pub phy: u32,
    /// Slow rounds in a row after which a loss halves as Reno (`TCP_YEAH_RHO` = 16).
    pub rho: u32,
    /// Fast rounds after which `reno_count` resets (`TCP_YEAH_ZETA` = 50).
    pub zeta: u32,
}

impl YeahConfig {
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [("gamma", self.gamma), ("phy", self.phy)] {
            if v == 0 {
                return Err(format!("{name}: 0 is not allowed: it divides; must be at least 1"));
            }
        }
        for (name, v) in [("delta", self.delta), ("epsilon", self.epsilon)] {
            if v > 31 {
                return Err(format!("{name}: {v} is not allowed: a power of two of the window, 0..31"));
            }
        }
        Ok(())
    }
}

pub struct Yeah {
    cfg: YeahConfig,
    rtt: VegasRtt,
    /// The last round's queue Q, packets (`lastQ`).
    last_q: u32,
    /// Slow (Reno) rounds in a row; 0 in fast mode (`doing_reno_now`).
    slow_rounds: u32,
    reno_count: u32,
    fast_count: u32,
}

impl Yeah {
    pub fn new(cfg: YeahConfig) -> Self {
        Yeah { cfg, rtt: VegasRtt::new(), last_q: 0, slow_rounds: 0, reno_count: MIN_WINDOW, fast_count: 0 }
    }

    /// Whether the last round chose fast (Scalable) growth.
    pub fn fast_mode(&self) -> bool {
        self.slow_rounds == 0
    }

    /// The once-per-RTT decision on a round with enough samples.
    fn decide(&mut self, s: &mut CcState) {
        let (rtt, base) = (self.rtt.min_rtt_us, self.rtt.base_rtt_us);
        let queue_delay = rtt.saturating_sub(base);
        let queue = (s.cwnd as u64 * queue_delay / rtt.max(1)) as u32;
        if queue > self.cfg.alpha || queue_delay > base / self.cfg.phy as u64 {
            if queue > self.cfg.alpha && s.cwnd > self.reno_count {
                // Precautionary decongestion: drain the flow's own queue now.
                let reduction = (queue / self.cfg.gamma).min(s.cwnd >> self.cfg.epsilon);
                s.cwnd = (s.cwnd - reduction).max(self.reno_count);
                s.ssthresh = s.cwnd;
            }
            self.reno_count =
                if self.reno_count <= MIN_WINDOW { (s.cwnd >> 1).max(MIN_WINDOW) } else { self.reno_count + 1 };
            self.slow_rounds = (self.slow_rounds + 1).min(MAX_SLOW_ROUNDS);
        } else {
            self.fast_count += 1;
            if self.fast_count > self.cfg.zeta {
                self.reno_count = MIN_WINDOW;
                self.fast_count = 0;
            }
            self.slow_rounds = 0;
        }
        self.last_q = queue;
    }
}

impl CongestionControl for Yeah {
    fn name(&self) -> &'static str {
        "yeah"
    }

    fn init(&mut self, s: &mut CcState) {
        *self = Yeah::new(self.cfg.clone());
        self.rtt.restart(s);
    }

    fn pkts_acked(&mut self, _s: &mut CcState, ack: &AckSample) {
        self.rtt.sample(ack);
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        self.rtt.set_state(s, new);
    }

    fn cwnd_event(&mut self, s: &mut CcState, ev: CwndEvent) {
        self.rtt.cwnd_event(s, ev);
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if !s.cwnd_limited {
            return;
        }
        let mut acked = ack.delivered_segments;
        if s.in_slow_start() {
            acked = slow_start(s, acked);
        }
        if acked > 0 {
            let per_segment = if self.fast_mode() { s.cwnd.min(SCALABLE_AI_CNT) } else { s.cwnd };
            cong_avoid_ai(s, per_segment, acked);
        }
        if self.rtt.round_ended(s) {
            if self.rtt.cnt_rtt > RENO_ROUND_SAMPLES {
                self.decide(s);
            }
            self.rtt.next_round(s);
        }
    }

    /// Fast mode: take off the flow's queue, between cwnd / 2^delta and cwnd / 2; after rho
    /// slow rounds, half as Reno.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        let half = (s.cwnd >> 1).max(MIN_WINDOW);
        let reduction =
            if self.slow_rounds < self.cfg.rho { self.last_q.min(half).max(s.cwnd >> self.cfg.delta) } else { half };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(MIN_WINDOW);
        s.cwnd.saturating_sub(reduction).max(MIN_WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{self, state};
    use crate::time::{Time, PS_PER_MS};

    const MSS: u32 = 1448;
    const BASE: Time = 100 * PS_PER_MS;

    fn yeah() -> Yeah {
        Yeah::new(YeahConfig { alpha: 80, gamma: 1, delta: 3, epsilon: 1, phy: 8, rho: 16, zeta: 50 })
    }

    fn ack(rtt: Time) -> AckSample {
        AckSample { rtt: Some(rtt), ..AckSample::of_segments(1, MSS) }
    }

    /// One round: an ACK per segment with RTT `rtt`, the last passing the round's end.
    fn round(y: &mut Yeah, s: &mut CcState, rtt: Time) {
        testing::round(s, y.rtt.beg_snd_nxt, |s| {
            y.pkts_acked(s, &ack(rtt));
            y.cong_avoid(s, &ack(rtt));
        });
    }

    fn started(cwnd: u32) -> (Yeah, CcState) {
        let mut y = yeah();
        let mut s = state(cwnd, cwnd / 2);
        y.init(&mut s);
        round(&mut y, &mut s, BASE);
        (y, s)
    }

    #[test]
    fn fast_mode_grows_one_percent_per_rtt_and_slow_mode_one_segment() {
        let (mut y, mut s) = started(2000);
        assert!(y.fast_mode());
        let w = s.cwnd;
        round(&mut y, &mut s, BASE);
        assert!((w + 19..=w + 20).contains(&s.cwnd), "Scalable: {w} -> {}", s.cwnd);
        // 20 ms of queueing delay is above base / 8 = 12.5 ms, with Q = cwnd x 20 / 120 far
        // above alpha: slow mode, and the queue is drained at once.
        round(&mut y, &mut s, BASE + 20 * PS_PER_MS);
        assert!(!y.fast_mode());
        let w = s.cwnd;
        round(&mut y, &mut s, BASE + 2 * PS_PER_MS);
        assert!((w..=w + 1).contains(&s.cwnd), "Reno in the round after: {w} -> {}", s.cwnd);
        // A round back at the base RTT returns to fast mode.
        assert!(y.fast_mode());
    }

    #[test]
    fn precautionary_decongestion_removes_the_flows_queue() {
        let (mut y, mut s) = started(1000);
        // 10 ms over a 100 ms base: below base / 8, but Q = 1020 x 10 / 110 = 92 > alpha.
        round(&mut y, &mut s, BASE + 10 * PS_PER_MS);
        let before = 1000 + 10 + 10; // two fast rounds' growth, 1 % each
        let q = before as u64 * 10_000 / 110_001; // RTTs in microseconds + 1
        assert_eq!(y.last_q as u64, q);
        assert_eq!(s.cwnd as u64, before as u64 - q, "cwnd -= Q");
        assert_eq!(s.ssthresh, s.cwnd, "and ssthresh follows: congestion avoidance");
        // reno_count = half the window on the first slow round.
        assert_eq!(y.reno_count, s.cwnd / 2);
    }

    #[test]
    fn a_loss_in_fast_mode_removes_the_queue_within_an_eighth_and_a_half() {
        let (mut y, mut s) = started(1000);
        round(&mut y, &mut s, BASE + PS_PER_MS); // Q = 10: fast mode
        assert!(y.fast_mode());
        let w = s.cwnd;
        assert_eq!(y.ssthresh(&s), w - w / 8, "Q = 10 < cwnd / 8: an eighth");
        y.last_q = 300;
        assert_eq!(y.ssthresh(&s), w - 300, "Q itself between the bounds");
        y.last_q = 900;
        assert_eq!(y.ssthresh(&s), w - w / 2, "at most half");
        // After rho slow rounds in a row: Reno's half, whatever Q.
        y.slow_rounds = 16;
        y.last_q = 0;
        assert_eq!(y.ssthresh(&s), w - w / 2);
    }
}
