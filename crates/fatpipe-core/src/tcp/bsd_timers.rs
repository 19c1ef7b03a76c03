//! 4.4BSD's coarse TCP timers (4.4BSD-Lite `netinet/tcp_timer.c`, `tcp_input.c`
//! `tcp_xmit_timer`; Stevens, TCP/IP Illustrated vol. 2, chapters 25 and 26).
//!
//! BSD keeps no timer per event: two clocks tick for every connection of the host.
//! - The *slow timer* (`tcp_slowtimo`, PR_SLOWHZ = 2: every 500 ms) decrements each
//!   connection's timers, kept in ticks; the retransmission timer set to k ticks expires on
//!   the k-th tick after it was set, 500 ms x (k - 1) to 500 ms x k later. Round-trip times
//!   are measured in the same ticks: a timed segment's counter starts at 1 and the slow
//!   timer increments it (with RFC 1323 timestamps, `tcp_now` counts the ticks and the
//!   sample is tcp_now - echoed stamp + 1). `tcp_xmit_timer` smooths them in fixed point
//!   (srtt x 8, rttvar x 4) and the timeout is srtt + 4 rttvar ticks, at least
//!   `t_rttmin` = TCPTV_MIN = 2 ticks (1 s), at most TCPTV_REXMTMAX = 128 ticks (64 s),
//!   doubled per backoff up to 64 times (`tcp_backoff[]`). After more than
//!   TCP_MAXRXTSHIFT / 4 = 3 backoffs the estimate is discarded (`tcp_timers`).
//! - The *fast timer* (`tcp_fasttimo`, PR_FASTHZ = 5: every 200 ms) sends the delayed ACK
//!   of every connection that has one pending (`TF_DELACK`): an ACK waits 0 to 200 ms.
//!
//! The clocks tick at whole multiples of their period from the run's start (a host's
//! clocks run independently of its connections; the phase is fixed, not drawn).

use crate::time::Time;

/// `tcp_backoff[]`: the timeout's multiplier per retransmission (4.4BSD `tcp_timer.c`).
const BACKOFF: [u32; 13] = [1, 2, 4, 8, 16, 32, 64, 64, 64, 64, 64, 64, 64];
/// TCP_MAXRXTSHIFT / 4: after this many backoffs the smoothed RTT is discarded.
const DISCARD_SRTT_AFTER_SHIFT: u32 = 12 / 4;

/// The first tick of a clock of `period` strictly after `now`.
#[inline]
pub fn next_tick(now: Time, period: Time) -> Time {
    (now / period + 1) * period
}

/// BSD's retransmission timeout, kept in ticks of the slow timer.
#[derive(Clone, Debug)]
pub struct BsdRto {
    /// The slow timer's period.
    pub tick: Time,
    /// Smoothed RTT x 8 and RTT variation x 4, in ticks (`t_srtt`, `t_rttvar`); srtt 0:
    /// no measurement yet.
    srtt8: i32,
    rttvar4: i32,
    /// The timeout before backoff, ticks (`TCP_REXMTVAL`, clamped); the initial timeout
    /// before the first measurement.
    base_ticks: u32,
    min_ticks: u32,
    max_ticks: u32,
    /// Backoffs since the last measurement (`t_rxtshift`).
    pub shift: u32,
}

impl BsdRto {
    /// `min_rto`, `max_rto` and `initial_rto` are rounded to whole ticks (at least one).
    pub fn new(tick: Time, initial_rto: Time, min_rto: Time, max_rto: Time) -> Self {
        let ticks = |t: Time| (t.div_ceil(tick.max(1))).clamp(1, u32::MAX as Time) as u32;
        BsdRto {
            tick: tick.max(1),
            srtt8: 0,
            rttvar4: 0,
            base_ticks: ticks(initial_rto),
            min_ticks: ticks(min_rto),
            max_ticks: ticks(max_rto),
            shift: 0,
        }
    }

    /// A segment sent at `sent` is acknowledged at `now`: the sample in ticks is the slow
    /// timer's ticks in between, plus one (`t_rtt` starts at 1).
    pub fn sample(&mut self, sent: Time, now: Time) {
        let ticks = (now / self.tick).saturating_sub(sent / self.tick) + 1;
        self.xmit_timer(ticks.min(i16::MAX as Time) as i32);
    }

    /// `tcp_xmit_timer(tp, rtt)`, `rtt` in ticks (origin 1).
    fn xmit_timer(&mut self, rtt: i32) {
        if self.srtt8 != 0 {
            // srtt = 7/8 srtt + 1/8 (rtt - 1); rttvar = 3/4 rttvar + 1/4 |error|.
            let mut delta = rtt - 1 - (self.srtt8 >> 3);
            self.srtt8 += delta;
            if self.srtt8 <= 0 {
                self.srtt8 = 1;
            }
            delta = delta.abs() - (self.rttvar4 >> 2);
            self.rttvar4 += delta;
            if self.rttvar4 <= 0 {
                self.rttvar4 = 1;
            }
        } else {
            // The first measurement: rttvar half of it, so the first timeout is 3 rtt.
            self.srtt8 = rtt << 3;
            self.rttvar4 = rtt << 1;
        }
        self.shift = 0;
        // TCP_REXMTVAL = srtt + 4 rttvar (t_rttvar holds 4 rttvar), TCPT_RANGESET.
        let rexmt = ((self.srtt8 >> 3) + self.rttvar4).max(0) as u32;
        self.base_ticks = rexmt.clamp(self.min_ticks, self.max_ticks);
    }

    /// The timeout in force, in ticks: the base times `tcp_backoff[shift]`, clamped.
    pub fn rto_ticks(&self) -> u32 {
        let mult = BACKOFF[(self.shift as usize).min(BACKOFF.len() - 1)];
        self.base_ticks.saturating_mul(mult).clamp(self.min_ticks, self.max_ticks)
    }

    /// The timeout in force.
    pub fn rto(&self) -> Time {
        self.rto_ticks() as Time * self.tick
    }

    /// A retransmission timer set at `now` expires on the `rto_ticks`-th tick after it.
    pub fn deadline(&self, now: Time) -> Time {
        (now / self.tick + self.rto_ticks() as Time) * self.tick
    }

    /// The timer expired (`tcp_timers`, TCPT_REXMT): back off; after more than 3 backoffs
    /// the smoothed RTT is dropped, its value added to the variation.
    pub fn back_off(&mut self) {
        self.shift = (self.shift + 1).min(BACKOFF.len() as u32 - 1);
        if self.shift > DISCARD_SRTT_AFTER_SHIFT && self.srtt8 != 0 {
            self.rttvar4 += self.srtt8 >> 3;
            self.srtt8 = 0;
        }
    }

    /// The smoothed RTT, if measured (a tick count, so coarse).
    pub fn srtt(&self) -> Option<Time> {
        (self.srtt8 != 0).then(|| (self.srtt8 as Time) * self.tick / 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    const TICK: Time = 500 * PS_PER_MS;

    fn bsd() -> BsdRto {
        // 4.4BSD: initial timeout 12 ticks (6 s, TCPTV_SRTTDFLT), t_rttmin 2 ticks, 64 s max.
        BsdRto::new(TICK, 6_000 * PS_PER_MS, 1_000 * PS_PER_MS, 64_000 * PS_PER_MS)
    }

    #[test]
    fn before_any_measurement_the_timeout_is_the_initial_one() {
        assert_eq!(bsd().rto_ticks(), 12);
        assert_eq!(bsd().rto(), 6_000 * PS_PER_MS);
    }

    #[test]
    fn a_short_path_measures_one_tick_and_settles_on_the_two_tick_minimum() {
        // A 68 ms round trip rarely spans a tick: the first sample is 1 (origin 1), so
        // srtt = 1 tick, rttvar = 1/2 tick: 1 + 4 x 1/2 = 3 ticks (1.5 s).
        let mut r = bsd();
        r.sample(100 * PS_PER_MS, 168 * PS_PER_MS);
        assert_eq!(r.rto_ticks(), 3);
        // Later samples of 1 mean zero ticks after the origin: srtt decays to 7/8 of a tick
        // (0 when shifted), but the fixed point keeps 4 rttvar at 3 (3 >> 2 = 0 takes
        // nothing off): the timeout stays 3 ticks, above t_rttmin.
        for i in 0..100 {
            let t = 1_000 * PS_PER_MS + i * TICK;
            r.sample(t, t + 68 * PS_PER_MS);
        }
        assert_eq!((r.srtt8, r.rttvar4), (7, 3));
        assert_eq!(r.rto_ticks(), 3);
    }

    #[test]
    fn a_sample_counts_the_ticks_it_spans() {
        // Sent just before a tick and acknowledged just after: one tick in between, sample 2.
        let mut r = bsd();
        r.sample(TICK - PS_PER_MS, TICK + PS_PER_MS);
        // srtt = 2, rttvar = 1: 2 + 4 = 6 ticks.
        assert_eq!(r.rto_ticks(), 6);
    }

    #[test]
    fn the_timer_expires_on_a_tick() {
        let mut r = bsd();
        r.sample(0, 10 * PS_PER_MS); // 3 ticks
                                     // Set at 0.7 s, 3 ticks: the ticks at 1.0, 1.5 and 2.0 s; it expires at 2.0 s.
        assert_eq!(r.deadline(700 * PS_PER_MS), 2_000 * PS_PER_MS);
        assert_eq!(next_tick(700 * PS_PER_MS, 200 * PS_PER_MS), 800 * PS_PER_MS);
        assert_eq!(next_tick(800 * PS_PER_MS, 200 * PS_PER_MS), 1_000 * PS_PER_MS);
    }

    #[test]
    fn backoff_follows_tcp_backoff_and_forgets_srtt_after_three() {
        let mut r = bsd();
        for i in 0..20 {
            let t = i * TICK;
            r.sample(t, t + PS_PER_MS);
        }
        assert_eq!(r.rto_ticks(), 3);
        let expected = [6, 12, 24, 48, 96, 128, 128];
        for want in expected {
            r.back_off();
            assert_eq!(r.rto_ticks(), want, "shift {}", r.shift);
        }
        assert!(r.srtt().is_none(), "the estimate is discarded after the fourth backoff");
        r.sample(0, PS_PER_MS);
        assert_eq!(r.shift, 0, "a new measurement ends the backoff");
    }
}
