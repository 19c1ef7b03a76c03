//! Vegas as Linux `net/ipv4/tcp_vegas.c` runs it (`tcp_vegas_cong_avoid`,
//! `tcp_vegas_pkts_acked`, `tcp_vegas_state`, `tcp_vegas_cwnd_event`):
//!
//! - RTTs are whole microseconds plus one (never zero); baseRTT is Vegas's own minimum since
//!   the connection or the last restart, and each round keeps its minimum RTT and a count of
//!   samples;
//! - a round ends on the first ACK above the `snd_nxt` of the round's start (`beg_snd_nxt`),
//!   and the decision is made then, every RTT, from the round's minimum RTT:
//!   diff = cwnd x (rtt - baseRTT) / baseRTT and target = cwnd x baseRTT / rtt, in integers;
//! - a round with 2 samples or fewer (ACKs of a window of one or two segments, or delayed
//!   ones) grows as Reno (`tcp_reno_cong_avoid`);
//! - in slow start the window grows on every ACK, every RTT (not every other RTT as in the
//!   paper); when diff exceeds gamma, cwnd = min(cwnd, target + 1) and ssthresh = cwnd: slow
//!   start ends at the rate the round measured;
//! - in congestion avoidance, diff > beta: cwnd - 1 (ssthresh below it); diff < alpha:
//!   cwnd + 1; neither asks whether cwnd limits the sender;
//! - cwnd stays at least 2; after each decision ssthresh is raised to at least 3/4 cwnd
//!   (`tcp_current_ssthresh`);
//! - Vegas runs only in the Open state: entering any other state turns it off (Reno's growth),
//!   returning to Open turns it on with a new round; an idle restart (`TxStart`,
//!   `CwndRestart`) starts afresh, baseRTT included;
//! - a loss halves the window (`tcp_reno_ssthresh`); undo is `tcp_reno_undo_cwnd`, the
//!   trait's default.

use super::VegasConfig;
use crate::cc::{reno_cong_avoid, slow_start, AckSample, CaState, CcState, CongestionControl, CwndEvent};
use crate::time::PS_PER_US;

/// Linux's "no sample yet" (0x7fffffff).
pub const NO_RTT_US: u64 = 0x7fff_ffff;
/// Vegas decides only on rounds with more samples than this (`cntRTT <= 2`: Reno).
pub const RENO_ROUND_SAMPLES: u32 = 2;
/// The smallest window Vegas sets.
const MIN_CWND_SEGMENTS: u32 = 2;

/// Vegas's RTT accounting, `struct vegas` of Linux `tcp_vegas.h`, which YeAH shares (and
/// Veno's `struct veno` copies): baseRTT, the round's minimum RTT and sample count, the
/// round's end (`beg_snd_nxt`), and whether the Open state lets the algorithm act
/// (`doing_vegas_now`). RTTs are whole microseconds plus one, never zero.
#[derive(Clone, Debug)]
pub struct VegasRtt {
    pub doing_vegas_now: bool,
    pub beg_snd_nxt: u64,
    /// The smallest RTT since the connection or the last restart, microseconds + 1.
    pub base_rtt_us: u64,
    /// The smallest RTT of the current round, microseconds + 1 (`NO_RTT_US` before one).
    pub min_rtt_us: u64,
    /// RTT samples in the current round.
    pub cnt_rtt: u32,
}

impl VegasRtt {
    /// Nothing measured yet; `restart` (Linux `tcp_vegas_init`) starts the first round.
    pub fn new() -> Self {
        VegasRtt { doing_vegas_now: true, beg_snd_nxt: 0, base_rtt_us: NO_RTT_US, min_rtt_us: NO_RTT_US, cnt_rtt: 0 }
    }

    /// baseRTT, microseconds (+1), if measured.
    pub fn base_rtt_us(&self) -> Option<u64> {
        (self.base_rtt_us != NO_RTT_US).then_some(self.base_rtt_us)
    }

    /// Linux `vegas_enable`: a new round from now.
    pub fn enable(&mut self, s: &CcState) {
        self.doing_vegas_now = true;
        self.next_round(s);
    }

    /// Linux `tcp_vegas_init`: forget baseRTT too.
    pub fn restart(&mut self, s: &CcState) {
        self.base_rtt_us = NO_RTT_US;
        self.enable(s);
    }

    /// Whether this ACK passed the `snd_nxt` of the round's start (`after(ack, beg_snd_nxt)`).
    pub fn round_ended(&self, s: &CcState) -> bool {
        s.snd_una > self.beg_snd_nxt
    }

    /// The next round starts at the current `snd_nxt`, with no samples.
    pub fn next_round(&mut self, s: &CcState) {
        self.beg_snd_nxt = s.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt_us = NO_RTT_US;
    }

    /// Forgets the round's minimum (Veno does so on every ACK).
    pub fn clear_min(&mut self) {
        self.min_rtt_us = NO_RTT_US;
    }

    /// Linux `tcp_vegas_pkts_acked`: an RTT sample, if the ACK has one.
    pub fn sample(&mut self, ack: &AckSample) {
        let Some(rtt) = ack.rtt else { return };
        let vrtt = rtt / PS_PER_US + 1;
        self.base_rtt_us = self.base_rtt_us.min(vrtt);
        self.min_rtt_us = self.min_rtt_us.min(vrtt);
        self.cnt_rtt += 1;
    }

    /// Linux `tcp_vegas_state`: on in the Open state (with a new round), off in any other.
    pub fn set_state(&mut self, s: &CcState, new: CaState) {
        if new == CaState::Open {
            self.enable(s);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// Linux `tcp_vegas_cwnd_event`: an idle restart starts afresh, baseRTT included.
    pub fn cwnd_event(&mut self, s: &CcState, ev: CwndEvent) {
        if matches!(ev, CwndEvent::CwndRestart | CwndEvent::TxStart) {
            self.restart(s);
        }
    }
}

impl Default for VegasRtt {
    fn default() -> Self {
        VegasRtt::new()
    }
}

pub struct LinuxVegas {
    alpha: f64,
    beta: f64,
    gamma: f64,
    rtt: VegasRtt,
}

impl LinuxVegas {
    pub fn new(cfg: &VegasConfig) -> Self {
        LinuxVegas { alpha: cfg.alpha, beta: cfg.beta, gamma: cfg.gamma, rtt: VegasRtt::new() }
    }

    /// baseRTT, microseconds (+1), if measured.
    pub fn base_rtt_us(&self) -> Option<u64> {
        self.rtt.base_rtt_us()
    }

    /// The once-per-RTT decision on a round with enough samples.
    fn decide(&mut self, s: &mut CcState, acked: u32) {
        let (rtt, base) = (self.rtt.min_rtt_us, self.rtt.base_rtt_us);
        let cwnd = s.cwnd as u64;
        let target = cwnd * base / rtt;
        let diff = (cwnd * (rtt - base) / base) as f64;
        if diff > self.gamma && s.in_slow_start() {
            // Too fast: leave slow start at the rate measured, plus one for the truncation.
            s.cwnd = s.cwnd.min((target + 1).min(u32::MAX as u64) as u32);
            s.ssthresh = s.ssthresh.min(s.cwnd);
        } else if s.in_slow_start() {
            slow_start(s, acked);
        } else if diff > self.beta {
            s.cwnd -= 1;
            s.ssthresh = s.ssthresh.min(s.cwnd);
        } else if diff < self.alpha {
            s.cwnd += 1;
        }
        s.cwnd = s.cwnd.max(MIN_CWND_SEGMENTS);
        // tcp_current_ssthresh in the Open state.
        s.ssthresh = s.ssthresh.max((s.cwnd >> 1) + (s.cwnd >> 2));
    }
}

impl CongestionControl for LinuxVegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn init(&mut self, s: &mut CcState) {
        self.rtt.restart(s);
    }

    /// Linux `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd >> 1).max(2)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        let acked = ack.delivered_segments;
        if !self.rtt.doing_vegas_now {
            reno_cong_avoid(s, acked);
            return;
        }
        if self.rtt.round_ended(s) {
            if self.rtt.cnt_rtt <= RENO_ROUND_SAMPLES {
                reno_cong_avoid(s, acked);
            } else {
                self.decide(s, acked);
            }
            self.rtt.next_round(s);
        } else if s.in_slow_start() {
            slow_start(s, acked);
        }
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::vegas::VegasVariant;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::{Time, PS_PER_MS};

    const MSS: u32 = 1000;
    const BASE_RTT: Time = 100 * PS_PER_MS;

    /// Linux's module parameters.
    fn linux() -> LinuxVegas {
        LinuxVegas::new(&VegasConfig { variant: VegasVariant::Linux, alpha: 2.0, beta: 4.0, gamma: 1.0 })
    }

    fn state(cwnd: u32, ssthresh: u32) -> CcState {
        CcState { snd_nxt: cwnd as u64 * MSS as u64, ..CcState::new(cwnd, ssthresh, MSS) }
    }

    fn ack(rtt: Time) -> AckSample {
        AckSample { rtt: Some(rtt), ..AckSample::of_segments(1, MSS) }
    }

    /// One round: an ACK per segment of the window with RTT `rtt`, the last one passing the
    /// `snd_nxt` of the round's start; new data goes out as the window allows. Returns cwnd.
    fn round(v: &mut LinuxVegas, s: &mut CcState, rtt: Time) -> u32 {
        let end = v.rtt.beg_snd_nxt;
        for _ in 1..s.cwnd {
            s.snd_una = end;
            v.pkts_acked(s, &ack(rtt));
            v.cong_avoid(s, &ack(rtt));
            s.snd_nxt = s.snd_una + s.cwnd as u64 * MSS as u64;
        }
        s.snd_una = end + MSS as u64;
        v.pkts_acked(s, &ack(rtt));
        v.cong_avoid(s, &ack(rtt));
        s.snd_nxt = s.snd_una + s.cwnd as u64 * MSS as u64;
        s.cwnd
    }

    /// The smallest RTT at which Linux's integer diff = cwnd (rtt - base) / base, both in
    /// microseconds plus one, is `diff` packets.
    fn rtt_for_diff(cwnd: u32, diff: u64) -> Time {
        let base = BASE_RTT / PS_PER_US + 1;
        (BASE_RTT / PS_PER_US + (diff * base).div_ceil(cwnd as u64)) * PS_PER_US
    }

    /// A round with a queue of `diff` of the flow's packets at the current window.
    fn queue_round(v: &mut LinuxVegas, s: &mut CcState, diff: u64) -> u32 {
        let rtt = rtt_for_diff(s.cwnd, diff);
        round(v, s, rtt)
    }

    fn started(cwnd: u32, ssthresh: u32) -> (LinuxVegas, CcState) {
        let mut v = linux();
        let mut s = state(cwnd, ssthresh);
        v.init(&mut s);
        round(&mut v, &mut s, BASE_RTT); // baseRTT measured
        (v, s)
    }

    #[test]
    fn congestion_avoidance_decides_every_rtt_between_alpha_2_and_beta_4() {
        let (mut v, mut s) = started(100, 50);
        let w = s.cwnd;
        // diff 1 < alpha: +1 per RTT, every RTT.
        assert_eq!(queue_round(&mut v, &mut s, 1), w + 1);
        assert_eq!(queue_round(&mut v, &mut s, 1), w + 2);
        // diff 3, between alpha and beta: hold.
        assert_eq!(queue_round(&mut v, &mut s, 3), w + 2);
        // diff 5 > beta: -1; ssthresh at most cwnd, at least 3/4 of it.
        assert_eq!(queue_round(&mut v, &mut s, 5), w + 1);
        assert!(!s.in_slow_start());
        assert_eq!(s.ssthresh, 50.max((s.cwnd >> 1) + (s.cwnd >> 2)).min(s.cwnd));
    }

    #[test]
    fn the_rounds_minimum_decides() {
        // Half the samples delayed by 40 ms: the minimum shows no queue, so it grows.
        let (mut v, mut s) = started(100, 50);
        let w = s.cwnd;
        let end = v.rtt.beg_snd_nxt;
        for i in 0..w {
            s.snd_una = if i + 1 == w { end + 1 } else { end };
            let rtt = if i % 2 == 0 { BASE_RTT } else { BASE_RTT + 40 * PS_PER_MS };
            v.pkts_acked(&mut s, &ack(rtt));
            v.cong_avoid(&mut s, &ack(rtt));
        }
        assert_eq!(s.cwnd, w + 1);
    }

    #[test]
    fn slow_start_doubles_every_rtt_and_ends_at_the_measured_rate() {
        let mut v = linux();
        let mut s = state(8, INFINITE_SSTHRESH);
        v.init(&mut s);
        assert_eq!(round(&mut v, &mut s, BASE_RTT), 16);
        assert_eq!(round(&mut v, &mut s, BASE_RTT), 32, "no measuring round in between");
        assert_eq!(round(&mut v, &mut s, BASE_RTT), 64);
        // 10 % queueing: diff = 64 x 10 / 100 = 6 > gamma. The round's ACKs grew cwnd to 127
        // first; target = 127 x 100 / 110 = 115, cwnd = 116 = ssthresh.
        let rtt = BASE_RTT + BASE_RTT / 10;
        let cwnd = round(&mut v, &mut s, rtt);
        let grown = 127u64;
        let target = grown * (BASE_RTT / PS_PER_US + 1) / (rtt / PS_PER_US + 1);
        assert_eq!(cwnd as u64, target + 1);
        assert_eq!(s.ssthresh, cwnd);
    }

    /// Rounds of `acks` ACKs with the RTT doubled by queueing (diff = cwnd, above beta); returns
    /// cwnd after each.
    fn queued_short_rounds(acks: u32) -> Vec<u32> {
        let (mut v, mut s) = started(10, 5);
        (0..4)
            .map(|_| {
                let end = v.rtt.beg_snd_nxt;
                for i in 0..acks {
                    s.snd_una = if i + 1 == acks { end + 1 } else { end };
                    v.pkts_acked(&mut s, &ack(2 * BASE_RTT));
                    v.cong_avoid(&mut s, &ack(2 * BASE_RTT));
                }
                s.snd_nxt = s.snd_una + s.cwnd as u64 * MSS as u64;
                s.cwnd
            })
            .collect()
    }

    #[test]
    fn rounds_with_two_samples_or_fewer_grow_as_reno() {
        // Two samples a round cannot be trusted (delayed ACKs): Reno's growth, never a cut.
        let reno = queued_short_rounds(2);
        assert!(reno.windows(2).all(|w| w[1] >= w[0]), "{reno:?}");
        // With three Vegas sees the queue and shrinks.
        let vegas = queued_short_rounds(3);
        assert!(vegas.windows(2).all(|w| w[1] < w[0]), "{vegas:?}");
    }

    #[test]
    fn vegas_is_off_outside_the_open_state_and_restarts_after_idle() {
        let (mut v, mut s) = started(100, 50);
        v.set_state(&mut s, CaState::Recovery);
        let w = s.cwnd;
        // Reno's growth, whatever the RTT says.
        queue_round(&mut v, &mut s, 10);
        assert_eq!(s.cwnd, w + 1);
        v.set_state(&mut s, CaState::Open);
        assert_eq!(v.base_rtt_us(), Some(BASE_RTT / PS_PER_US + 1));
        v.cwnd_event(&mut s, CwndEvent::TxStart);
        assert_eq!(v.base_rtt_us(), None, "an idle restart forgets baseRTT");
        v.pkts_acked(&mut s, &ack(2 * BASE_RTT));
        assert_eq!(v.base_rtt_us(), Some(2 * BASE_RTT / PS_PER_US + 1));
        assert_eq!(v.ssthresh(&state(100, 50)), 50);
        assert_eq!(v.ssthresh(&state(3, 50)), 2);
    }
}
