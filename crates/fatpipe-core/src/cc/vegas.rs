//! TCP Vegas: congestion avoidance that keeps a few packets queued, measured by delay
//! (Brakmo and Peterson, "TCP Vegas: End to End Congestion Avoidance on a Global Internet",
//! IEEE JSAC 13(8), 1995; first in Brakmo, O'Malley and Peterson, SIGCOMM 1994).
//!
//! 1. BaseRTT is the RTT of the uncongested path: the minimum RTT measured so far (the core's
//!    `min_rtt`).
//! 2. Once per round-trip (`round.rs`) Vegas compares the throughput it expects with the one
//!    it gets: Expected = cwnd / BaseRTT, Actual = cwnd / RTT, and
//!    Diff = (Expected - Actual) x BaseRTT = cwnd x (RTT - BaseRTT) / RTT,
//!    which is the number of its own packets sitting in queues. Which RTT of the round:
//!    - in congestion avoidance the *minimum* sample, as Linux `tcp_vegas.c` takes it: a
//!      window smaller than the pipe goes out as one flight per RTT, and when the flight is
//!      odd the receiver delays the ACK of its last segment (40 ms by default); that one
//!      sample lifts a round's average by about two packets' worth of Diff, whatever the
//!      window, which held Vegas at a sixth of a 100 Mb/s x 40 ms path in our runs;
//!    - in slow start the *average* sample, as ns-2's `tcp-vegas.cc` (document 003's
//!      simulator) takes it: a doubling round sends two segments per ACK, so the queue
//!      grows within the round and only its later packets see it; the minimum would miss it
//!      until the window had doubled past the pipe twice.
//!
//!    Using cwnd in both rates follows Linux; the paper's Actual counts the bytes sent during
//!    the sample, which is cwnd once the window is steady.
//! 3. Congestion avoidance: Diff < alpha, too little queued: cwnd + 1 for the next RTT;
//!    Diff > beta, too much: cwnd - 1; otherwise leave it (linear increase and decrease).
//! 4. Slow start: the window doubles only every other RTT; in between it stays fixed so that
//!    Expected and Actual are measured at one window. A doubling round grows by every
//!    segment its ACKs deliver, the ACK that closes it included, so the window doubles. When,
//!    at the end of a fixed round, Diff exceeds gamma ("the equivalent of one router
//!    buffer"), Vegas leaves slow start for the linear mode, first taking back one eighth of
//!    the window as the USC/ns-2 Vegas does (`cwnd -= cwnd / 8`), since the doubling round
//!    put that much too much in flight.
//! 6. A round with fewer than three RTT samples measures nothing Vegas can trust: it grows as
//!    Reno would on the ACK that closes it, and the next round doubles again (Linux
//!    `tcp_vegas_cong_avoid`: `cntRTT <= 2` falls back to `tcp_reno_cong_avoid`). A window
//!    of one or two segments, or a few more with delayed ACKs, gets one or two ACKs a round;
//!    without this rule it would never grow.
//! 5. Losses are handled as in Reno (ssthresh = cwnd / 2). The paper's other changes are to
//!    loss detection (fine-grained timeouts, retransmitting on the first ACKs after a
//!    retransmission) and stay with the core, whose recovery is NewReno.
//!
//! Counting: slow start grows by the segments each ACK covers, as Linux does. The core's
//! slow-start test is cwnd < ssthresh, so whenever Vegas lowers the window outside slow start
//! it keeps ssthresh below it, as Linux's `tcp_vegas_ssthresh` does; otherwise a decrease
//! would drop the connection back into slow start.
//!
//! That is the `"paper"` form (`VegasConfig::variant`), after the paper and ns-2 (document
//! 003's simulator). The `"linux"` form, `vegas/linux.rs`, is Linux `tcp_vegas.c`: the
//! round's minimum RTT throughout, a decision every RTT, slow start every RTT that ends at
//! the rate measured, and a fresh start after idle.

pub mod linux;

use super::round::RoundTracker;
use super::{cong_avoid_ai, slow_start, slow_start_first, AckSample, CaState, CcState, CongestionControl};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The smallest window Vegas's linear decrease may reach, segments (Linux `tcp_vegas.c` and
/// ns-2 `tcp-vegas.cc` both clamp at 2).
pub const VEGAS_MIN_CWND_SEGMENTS: u32 = 2;

/// Leaving slow start gives back cwnd / this (ns-2 `tcp-vegas.cc`, after USC's NetBSD Vegas).
pub const SLOW_START_EXIT_DIVISOR: u32 = 8;

/// Smallest ssthresh after a loss, segments (RFC 5681 eq. 4: at least 2 x SMSS).
pub const MIN_SSTHRESH_SEGMENTS: u32 = 2;

/// A round needs at least this many RTT samples for Vegas to decide on it; with fewer it
/// grows as Reno (Linux `tcp_vegas_cong_avoid`: `if (vegas->cntRTT <= 2)`).
pub const MIN_ROUND_RTT_SAMPLES: u64 = 3;

/// Which Vegas (`VegasConfig::variant`).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum VegasVariant {
    /// Brakmo and Peterson 1995 as ns-2 runs it (this file).
    Paper,
    /// Linux `tcp_vegas.c` (`vegas/linux.rs`); its module parameters are alpha 2, beta 4,
    /// gamma 1.
    Linux,
}

/// The parameters, every one given by the scenario (its table, scenario/congestion.py, owns
/// the defaults and their sources).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VegasConfig {
    /// Which Vegas: `paper` or `linux`.
    pub variant: VegasVariant,
    /// Fewer of the flow's packets than this queued in the network: grow by one segment per
    /// RTT. Packets; default 1 (Brakmo and Peterson 1995; ns-2 `v_alpha_`). Linux uses 2.
    pub alpha: f64,
    /// More of the flow's packets than this queued: shrink by one segment per RTT. Packets;
    /// default 3 (Brakmo and Peterson 1995; ns-2 `v_beta_`). Linux uses 4.
    pub beta: f64,
    /// More of the flow's packets than this queued at the end of a fixed slow-start round:
    /// leave slow start. Packets; default 1 (Brakmo and Peterson 1995; ns-2 `v_gamma_`,
    /// Linux `gamma`).
    pub gamma: f64,
}

impl VegasConfig {
    pub fn validate(&self) -> Result<(), String> {
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta), ("gamma", self.gamma)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name}: {v} is not allowed: must be a number of packets >= 0"));
            }
        }
        if self.beta < self.alpha {
            return Err(format!("beta: {} is not allowed: must be at least alpha ({})", self.beta, self.alpha));
        }
        Ok(())
    }
}

/// Builds the configured form.
pub fn build(cfg: &VegasConfig) -> Box<dyn CongestionControl> {
    match cfg.variant {
        VegasVariant::Paper => Box::new(Vegas::new(cfg.clone())),
        VegasVariant::Linux => Box::new(linux::LinuxVegas::new(cfg)),
    }
}

pub struct Vegas {
    cfg: VegasConfig,
    round: RoundTracker,
    /// Sum, number and minimum of the RTT samples of the current round, picoseconds.
    round_rtt_sum_ps: u128,
    round_rtt_samples: u64,
    round_min_rtt_ps: Option<Time>,
    /// In slow start: whether this round doubles the window (else it holds it to measure).
    growing_round: bool,
}

impl Vegas {
    pub fn new(cfg: VegasConfig) -> Self {
        Vegas {
            cfg,
            round: RoundTracker::default(),
            round_rtt_sum_ps: 0,
            round_rtt_samples: 0,
            round_min_rtt_ps: None,
            growing_round: true,
        }
    }

    /// The flow's packets queued in the network, from the last round's RTT.
    fn diff_packets(s: &CcState, rtt: Time, base_rtt: Time) -> f64 {
        s.cwnd as f64 * rtt.saturating_sub(base_rtt) as f64 / rtt as f64
    }

    /// Lowers cwnd to `cwnd` and keeps ssthresh below it, so that the core does not take the
    /// smaller window for slow start.
    fn lower_window(s: &mut CcState, cwnd: u32) {
        s.cwnd = cwnd.max(VEGAS_MIN_CWND_SEGMENTS);
        s.ssthresh = s.ssthresh.min(s.cwnd - 1);
    }

    /// The RTT of the round that just ended (the average in slow start, else the minimum),
    /// and a fresh start for the next one.
    fn take_round_rtt(&mut self, slow_start: bool) -> Option<Time> {
        let n = std::mem::take(&mut self.round_rtt_samples);
        let sum = std::mem::take(&mut self.round_rtt_sum_ps);
        let min = self.round_min_rtt_ps.take();
        if slow_start {
            (n > 0).then(|| (sum / n as u128) as Time)
        } else {
            min
        }
    }

    /// The once-per-RTT decision.
    fn end_of_round(&mut self, s: &mut CcState) {
        let rtt = self.take_round_rtt(s.in_slow_start());
        if s.in_slow_start() && self.growing_round {
            // The window just doubled; hold it one round to measure it.
            self.growing_round = false;
            return;
        }
        // Without an RTT sample in the round (possible without timestamps) there is nothing
        // to compare: keep the window as it is for another round.
        let (Some(rtt), Some(base_rtt)) = (rtt, s.min_rtt) else { return };
        let diff = Self::diff_packets(s, rtt, base_rtt);
        if s.in_slow_start() {
            if diff > self.cfg.gamma {
                Self::lower_window(s, s.cwnd - s.cwnd / SLOW_START_EXIT_DIVISOR);
            } else {
                self.growing_round = true;
            }
        } else if diff > self.cfg.beta {
            Self::lower_window(s, s.cwnd - 1);
        } else if diff < self.cfg.alpha && s.cwnd_limited {
            s.cwnd += 1;
        }
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    /// ns-2's `VegasTcpAgent` times every packet (`v_sendtime_`), the paper's fine-grained clock.
    fn times_every_ack(&self) -> bool {
        true
    }

    /// As Reno: half the window, at least 2 segments (RFC 5681 eq. 4).
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd / 2).max(MIN_SSTHRESH_SEGMENTS)
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if let Some(rtt) = ack.rtt {
            self.round_rtt_sum_ps += rtt as u128;
            self.round_rtt_samples += 1;
            self.round_min_rtt_ps = Some(self.round_min_rtt_ps.map_or(rtt, |m| m.min(rtt)));
        }
        let closes_round = self.round.on_ack(s, ack.acked_bytes);
        if closes_round && self.round_rtt_samples < MIN_ROUND_RTT_SAMPLES {
            // Too few samples to compare rates: Reno's growth, and double again next round.
            self.take_round_rtt(false);
            self.growing_round = true;
            if let Some(left) = slow_start_first(s, ack.delivered_segments) {
                cong_avoid_ai(s, s.cwnd, left);
            }
            return;
        }
        if s.in_slow_start() && self.growing_round && s.cwnd_limited {
            // Growth beyond ssthresh is left to the next round's linear decision.
            slow_start(s, ack.delivered_segments);
        }
        if closes_round {
            self.end_of_round(s);
        }
    }

    fn set_state(&mut self, _s: &mut CcState, new: CaState) {
        // The ACKs of a recovery do not measure the window sent next: start afresh. After a
        // timeout the window slow-starts again from one segment, growing first.
        self.round.restart();
        self.take_round_rtt(false);
        if new == CaState::Loss {
            self.growing_round = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::PS_PER_MS;

    const MSS: u32 = 1000;
    const BASE_RTT: Time = 100 * PS_PER_MS;

    fn state(cwnd: u32, ssthresh: u32) -> CcState {
        CcState { srtt: Some(BASE_RTT), min_rtt: Some(BASE_RTT), ..CcState::new(cwnd, ssthresh, MSS) }
    }

    fn defaults() -> Vegas {
        Vegas::new(VegasConfig { variant: VegasVariant::Paper, alpha: 1.0, beta: 3.0, gamma: 1.0 })
    }

    fn ack(segments: u32, rtt: Time) -> AckSample {
        AckSample {
            acked_segments: segments,
            delivered_segments: segments,
            acked_bytes: (segments * MSS) as u64,
            rtt: Some(rtt),
            ..Default::default()
        }
    }

    /// ACKs of one segment each, all with the same RTT and a full window in flight, until a
    /// round ends (the first call also opens the first round).
    fn round_trip(v: &mut Vegas, s: &mut CcState, rtt: Time) {
        let rounds = v.round.rounds_completed();
        while v.round.rounds_completed() == rounds {
            s.in_flight_segments = s.cwnd;
            v.cong_avoid(s, &ack(1, rtt));
        }
    }

    /// RTT at which `queued` of the flow's packets sit in the queue with window `cwnd`:
    /// queued = cwnd (RTT - base) / RTT.
    fn rtt_for_queue(cwnd: u32, queued: f64) -> Time {
        (BASE_RTT as f64 * cwnd as f64 / (cwnd as f64 - queued)) as Time
    }

    #[test]
    fn linear_increase_and_decrease_around_alpha_and_beta() {
        let mut v = defaults();
        let mut s = state(100, 50);
        round_trip(&mut v, &mut s, BASE_RTT); // opens the first round
        let start = s.cwnd;
        // Half a packet queued: below alpha, grow by one per round-trip.
        for i in 1..=3 {
            let rtt = rtt_for_queue(s.cwnd, 0.5);
            round_trip(&mut v, &mut s, rtt);
            assert_eq!(s.cwnd, start + i);
        }
        // Two packets queued: between alpha and beta, hold.
        let held = s.cwnd;
        for _ in 0..3 {
            let rtt = rtt_for_queue(s.cwnd, 2.0);
            round_trip(&mut v, &mut s, rtt);
        }
        assert_eq!(s.cwnd, held);
        // Five queued: above beta, shrink by one per round-trip, ssthresh staying below.
        for i in 1..=3 {
            let rtt = rtt_for_queue(s.cwnd, 5.0);
            round_trip(&mut v, &mut s, rtt);
            assert_eq!(s.cwnd, held - i);
            assert!(!s.in_slow_start());
        }
    }

    /// One round with the given RTT for every other ACK and `base` for the rest.
    fn mixed_round(v: &mut Vegas, s: &mut CcState, other: Time) {
        let mut k = 0;
        let rounds = v.round.rounds_completed();
        while v.round.rounds_completed() == rounds {
            s.in_flight_segments = s.cwnd;
            v.cong_avoid(s, &ack(1, if k % 2 == 0 { BASE_RTT } else { other }));
            k += 1;
        }
    }

    #[test]
    fn congestion_avoidance_decides_on_the_minimum_sample_of_a_round() {
        // Delayed ACKs lengthen some samples; the shortest shows the queue.
        let mut v = defaults();
        let mut s = state(100, 50);
        round_trip(&mut v, &mut s, BASE_RTT);
        assert_eq!(s.cwnd, 101);
        mixed_round(&mut v, &mut s, BASE_RTT + 40 * PS_PER_MS);
        assert_eq!(s.cwnd, 102, "no queue: grow");
    }

    #[test]
    fn slow_start_decides_on_the_average_sample_of_a_round() {
        // In a measuring round half the packets met an empty queue and half met 4 packets: 2
        // on average, more than gamma, so slow start ends.
        let mut v = defaults();
        let mut s = state(10, INFINITE_SSTHRESH);
        round_trip(&mut v, &mut s, BASE_RTT); // growing round
        let w = s.cwnd;
        mixed_round(&mut v, &mut s, rtt_for_queue(w, 4.0));
        assert!(!s.in_slow_start());
        assert_eq!(s.cwnd, w - w / 8);
    }

    #[test]
    fn slow_start_doubles_every_other_round_trip() {
        let mut v = defaults();
        let mut s = state(10, INFINITE_SSTHRESH);
        v.cong_avoid(&mut s, &ack(1, BASE_RTT)); // opens a growing round
        let mut windows = vec![s.cwnd];
        for _ in 0..4 {
            round_trip(&mut v, &mut s, BASE_RTT);
            windows.push(s.cwnd);
        }
        // Grow, hold, grow, hold: each growing round doubles the window it started with, the
        // ACK that closes it growing too before it decides.
        assert_eq!(windows[2], windows[1], "a measuring round holds the window: {windows:?}");
        assert_eq!(windows[3], 2 * windows[2], "{windows:?}");
        assert_eq!(windows[4], windows[3], "{windows:?}");
        assert!(s.in_slow_start());
    }

    #[test]
    fn slow_start_ends_when_more_than_gamma_packets_queue() {
        let mut v = defaults();
        let mut s = state(10, INFINITE_SSTHRESH);
        v.cong_avoid(&mut s, &ack(1, BASE_RTT));
        round_trip(&mut v, &mut s, BASE_RTT); // growing round ends: hold next
        let w = s.cwnd;
        round_trip(&mut v, &mut s, rtt_for_queue(w, 2.0)); // measured: 2 queued > gamma
        assert_eq!(s.cwnd, w - w / 8, "one eighth given back");
        assert!(!s.in_slow_start(), "ssthresh {} below cwnd {}", s.ssthresh, s.cwnd);
        // A larger gamma tolerates the same queue and keeps doubling.
        let mut v = Vegas::new(VegasConfig { variant: VegasVariant::Paper, alpha: 1.0, beta: 3.0, gamma: 4.0 });
        let mut s = state(10, INFINITE_SSTHRESH);
        v.cong_avoid(&mut s, &ack(1, BASE_RTT));
        round_trip(&mut v, &mut s, BASE_RTT);
        let w = s.cwnd;
        round_trip(&mut v, &mut s, rtt_for_queue(w, 2.0));
        assert!(s.in_slow_start());
        assert_eq!(s.cwnd, w);
        round_trip(&mut v, &mut s, rtt_for_queue(w, 2.0));
        assert_eq!(s.cwnd, 2 * w);
    }

    /// One round with `acks` ACKs, each delivering `per_ack` segments, the round closing on
    /// the last: what a window of one or two segments gets, with or without delayed ACKs.
    fn short_round(v: &mut Vegas, s: &mut CcState, acks: u32, per_ack: u32) {
        for k in 0..acks {
            // The round ends when what was outstanding at its start is acknowledged.
            s.in_flight_segments = if k == acks - 1 { 0 } else { per_ack };
            v.cong_avoid(s, &ack(per_ack, BASE_RTT));
        }
    }

    #[test]
    fn rounds_with_fewer_than_three_samples_grow_as_reno() {
        // Initial window 1, no delayed ACKs: one ACK per round at first. Before the fix the
        // ACK closing a round never grew the window and it stayed at 2 for ever.
        let mut v = defaults();
        let mut s = state(1, INFINITE_SSTHRESH);
        let mut windows = vec![];
        for _ in 0..4 {
            let acks = s.cwnd.min(2);
            short_round(&mut v, &mut s, acks, 1);
            windows.push(s.cwnd);
        }
        assert!(windows.windows(2).all(|w| w[1] > w[0]), "slow start grows every short round: {windows:?}");
        assert!(s.cwnd >= 8, "{windows:?}");
        // In congestion avoidance a short round adds as Reno: one segment per window.
        let mut s = state(2, 2);
        for _ in 0..4 {
            short_round(&mut v, &mut s, 1, 2);
        }
        assert!(s.cwnd > 2, "cwnd {} after 4 short rounds in congestion avoidance", s.cwnd);
    }

    #[test]
    fn losses_halve_as_reno_and_the_window_never_falls_below_two() {
        let mut v = defaults();
        assert_eq!(v.ssthresh(&state(100, 50)), 50);
        assert_eq!(v.ssthresh(&state(3, 50)), 2);
        // Diff never exceeds cwnd, so only a beta below 2 packets can push a window of 2 down.
        let mut v = Vegas::new(VegasConfig { variant: VegasVariant::Paper, alpha: 0.0, beta: 0.5, gamma: 1.0 });
        let mut s = state(2, 1);
        round_trip(&mut v, &mut s, BASE_RTT);
        round_trip(&mut v, &mut s, 10 * BASE_RTT);
        assert_eq!(s.cwnd, VEGAS_MIN_CWND_SEGMENTS);
        assert!(!s.in_slow_start());
    }

    #[test]
    fn no_growth_unless_the_window_limits_sending() {
        let mut v = defaults();
        let mut s = state(100, 50);
        s.cwnd_limited = false;
        round_trip(&mut v, &mut s, BASE_RTT);
        round_trip(&mut v, &mut s, BASE_RTT);
        assert_eq!(s.cwnd, 100);
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(VegasConfig { variant: VegasVariant::Paper, alpha: 1.0, beta: 3.0, gamma: 1.0 }.validate().is_ok());
        let e = VegasConfig { variant: VegasVariant::Paper, alpha: 4.0, beta: 3.0, gamma: 1.0 }.validate().unwrap_err();
        assert!(e.starts_with("beta: 3 is not allowed"), "{e}");
        let e =
            VegasConfig { variant: VegasVariant::Paper, alpha: 1.0, beta: 3.0, gamma: -1.0 }.validate().unwrap_err();
        assert!(e.starts_with("gamma: -1 is not allowed"), "{e}");
    }
}
