//! PIE, Proportional Integral controller Enhanced (RFC 8033; Linux `include/net/pie.h`,
//! `net/sched/sch_pie.c` since 5.6, with the packet timestamps of RFC 8033 section 5.2
//! rather than the optional departure-rate estimator: Linux's `dq_rate_estimator` off, its
//! default).
//!
//! Every `tupdate` (15 ms) the drop probability moves by `alpha (qdelay - target) + beta
//! (qdelay - qdelay_old)`, `qdelay` the sojourn time of the latest packet to leave (0 if the
//! queue emptied); alpha and beta are scaled down while the probability is small (RFC 8033
//! section 4.2's auto-tuning: / 2 below 10 %, / 8 below 1 %, ... / 2048 below 0.0001 %); a
//! step is at most 2 % once the probability is 10 % or more; a delay above 250 ms adds 2 %;
//! two updates in a row with no delay decay it by 1/64 (Linux `pie_calculate_probability`).
//! Two low-delay updates with the probability at 0 restart the measurement (Linux
//! `pie_vars_init`), which restores the burst allowance: 150 ms during which no packet is
//! dropped early, consumed by the time that passes between departures.
//!
//! Arrivals are dropped (or, with `ecn` and a probability of at most 10 %, ECN-capable ones
//! marked CE) with the probability, de-randomized as Linux does (RFC 8033 section 5.1): the
//! probabilities of the arrivals since the last drop accumulate, no drop below 0.85 of
//! accumulated probability, always one at 8.5. No early drop while fewer than two MTUs wait,
//! or while the delay is under half the target and the probability under 20 %.
//!
//! The periodic update needs no event: between two calls of the link the queue does not
//! change, so the updates due by `now` run first, at their own times, with what the queue
//! was then (`catch_up`).

use super::holding::{ecn_capable, AqmStats, HoldingDiscipline};
use super::slab::{PacketList, PacketSlab};
use super::Admission;
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

const MS: Time = 1_000_000_000;

/// PIE's settings (Linux `struct pie_params`, which FQ-PIE's `fq_pie.rs` holds too, for
/// every flow queue's controller).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PieConfig {
    /// Most packets waiting (Linux `limit`).
    pub limit_packets: u64,
    /// Queue delay the controller aims at (QDELAY_REF), picoseconds.
    pub target_ps: Time,
    /// Time between drop-probability updates (T_UPDATE).
    pub tupdate_ps: Time,
    /// The controller's gains, per second (RFC 8033: alpha 0.125, beta 1.25).
    pub alpha: f64,
    pub beta: f64,
    /// Burst allowance after a quiet spell (MAX_BURST).
    pub max_burst_ps: Time,
    /// Mark ECN-capable packets instead of dropping them while the probability is at most
    /// 10 %.
    pub ecn: bool,
    /// Scale each packet's probability by its size / MTU (Linux `bytemode`).
    pub bytemode: bool,
    /// The link's MTU, IP bytes.
    pub mtu_bytes: u32,
}

/// One queue's controller state (Linux `struct pie_vars`).
#[derive(Clone, Debug)]
pub struct PieVars {
    /// Drop probability, 0 to 1.
    pub prob: f64,
    /// Sojourn time of the latest packet to leave (0 once the queue emptied), and its value
    /// at the previous update.
    pub qdelay: Time,
    pub qdelay_old: Time,
    /// Burst allowance left.
    pub burst_left: Time,
    /// When the latest packet left (None: none since the measurement restarted).
    pub dq_tstamp: Option<Time>,
    /// Accumulated probability since the last early drop (de-randomization).
    pub accu_prob: f64,
}

impl PieVars {
    /// Linux `pie_vars_init`.
    pub fn new(p: &PieConfig) -> Self {
        PieVars { prob: 0.0, qdelay: 0, qdelay_old: 0, burst_left: p.max_burst_ps, dq_tstamp: None, accu_prob: 0.0 }
    }

    /// Whether an update would leave this state as it is (`pie_vars_init`'s state with no
    /// delay), given that its queue is empty: no update need run until a packet comes.
    pub fn at_rest(&self, p: &PieConfig) -> bool {
        self.prob == 0.0
            && self.qdelay == 0
            && self.qdelay_old == 0
            && self.burst_left == p.max_burst_ps
            && self.dq_tstamp.is_none()
            && self.accu_prob == 0.0
    }

    /// Linux `pie_calculate_probability` (timestamps, no rate estimator); `backlog_empty`:
    /// the queue holds no packet.
    pub fn calculate_probability(&mut self, p: &PieConfig, backlog_empty: bool) {
        let (qdelay, qdelay_old) = (self.qdelay, self.qdelay_old);
        // A delay of 0 with packets waiting: too few to measure; no decay this round.
        let mut may_decay = qdelay != 0 || backlog_empty;
        let (mut alpha, mut beta) = (p.alpha, p.beta);
        if self.prob < 0.1 {
            alpha /= 2.0;
            beta /= 2.0;
            let mut power = 100.0;
            while self.prob < 1.0 / power && power <= 1e6 {
                alpha /= 4.0;
                beta /= 4.0;
                power *= 10.0;
            }
        }
        let s = |t: Time| t as f64 / 1e12;
        let mut delta = alpha * (s(qdelay) - s(p.target_ps)) + beta * (s(qdelay) - s(qdelay_old));
        if delta > 0.02 && self.prob >= 0.1 {
            delta = 0.02;
        }
        if qdelay > 250 * MS {
            delta += 0.02;
        }
        self.prob += delta;
        if self.prob >= 1.0 {
            self.prob = 1.0;
            may_decay = false;
        } else if self.prob < 0.0 {
            self.prob = 0.0;
        }
        if qdelay == 0 && qdelay_old == 0 && may_decay {
            self.prob -= self.prob / 64.0;
        }
        let half = p.target_ps / 2;
        if qdelay < half && qdelay_old < half && self.prob == 0.0 {
            // Restart the measurement: the burst allowance is back (Linux `pie_vars_init`).
            self.burst_left = p.max_burst_ps;
            self.dq_tstamp = None;
            self.accu_prob = 0.0;
        }
        self.qdelay_old = qdelay;
    }

    /// Linux `pie_drop_early`; `backlog_bytes`: what waits in the queue before the arrival.
    fn drop_early(&mut self, p: &PieConfig, rng: &mut Rng, backlog_bytes: u64, ip_bytes: u32) -> bool {
        if self.burst_left > 0 {
            return false;
        }
        if self.qdelay < p.target_ps / 2 && self.prob < 0.2 {
            return false;
        }
        if backlog_bytes < 2 * p.mtu_bytes as u64 {
            return false;
        }
        let prob = if p.bytemode && ip_bytes <= p.mtu_bytes {
            self.prob * ip_bytes as f64 / p.mtu_bytes as f64
        } else {
            self.prob
        };
        if prob == 0.0 {
            self.accu_prob = 0.0;
        } else {
            self.accu_prob += prob;
        }
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        if rng.uniform() < prob {
            self.accu_prob = 0.0;
            return true;
        }
        false
    }

    /// An arrival of `pkt`: taken as it is, taken marked CE (with `mark_below`, when
    /// ECN-capable and the probability is at most that), or dropped early (Linux
    /// `pie_qdisc_enqueue`, `fq_pie_qdisc_enqueue`), counted in `stats`. A drop restarts
    /// the de-randomization.
    #[inline]
    pub fn admit(
        &mut self,
        p: &PieConfig,
        rng: &mut Rng,
        backlog_bytes: u64,
        pkt: &mut Packet,
        mark_below: Option<f64>,
        stats: &mut AqmStats,
    ) -> Result<(), Admission> {
        if !self.drop_early(p, rng, backlog_bytes, pkt.ip_bytes) {
            return Ok(());
        }
        if mark_below.is_some_and(|m| self.prob <= m) && ecn_capable(pkt) {
            pkt.ecn.set(Ecn::CE);
            stats.ecn_marks += 1;
            return Ok(());
        }
        self.accu_prob = 0.0;
        stats.enqueue_drops += 1;
        Err(Admission::EarlyDrop)
    }

    /// Linux `pie_process_dequeue` (timestamps): a packet that entered at `enqueued` leaves
    /// at `now`, `emptied` its queue or not; the time since the last departure spends the
    /// burst allowance.
    #[inline]
    pub fn process_dequeue(&mut self, now: Time, enqueued: Time, emptied: bool) {
        self.qdelay = if emptied { 0 } else { now - enqueued };
        let dtime = self.dq_tstamp.map_or(0, |t| now - t);
        self.dq_tstamp = Some(now);
        self.burst_left = self.burst_left.saturating_sub(dtime);
    }
}

/// sch_pie marks below 10 % (RFC 8033 section 5.1).
const PIE_ECN_PROB: f64 = 0.1;

pub struct Pie {
    cfg: PieConfig,
    slab: PacketSlab,
    queue: PacketList,
    rng: Rng,
    vars: PieVars,
    /// The next update is due then.
    next_update: Time,
    stats: AqmStats,
}

impl Pie {
    pub fn new(cfg: &PieConfig, rng: Rng) -> Self {
        Pie {
            slab: PacketSlab::with_capacity(cfg.limit_packets.min(u32::MAX as u64) as usize),
            queue: PacketList::default(),
            rng,
            vars: PieVars::new(cfg),
            next_update: cfg.tupdate_ps,
            stats: AqmStats::default(),
            cfg: cfg.clone(),
        }
    }

    /// The drop probability now (tests, the series).
    pub fn probability(&self) -> f64 {
        self.vars.prob
    }

    /// The burst allowance left.
    pub fn burst_left(&self) -> Time {
        self.vars.burst_left
    }

    /// Runs the probability updates due by `now`, each with the queue as it was then.
    fn catch_up(&mut self, now: Time) {
        while self.next_update <= now {
            self.update();
            self.next_update += self.cfg.tupdate_ps;
            // A quiet queue settles (probability 0, no delay): the updates still to come
            // until now would change nothing.
            let v = &self.vars;
            let settled = v.prob == 0.0 && v.qdelay == 0 && v.qdelay_old == 0 && v.burst_left == self.cfg.max_burst_ps;
            if settled && self.next_update <= now {
                let missed = (now - self.next_update) / self.cfg.tupdate_ps + 1;
                self.next_update += missed * self.cfg.tupdate_ps;
            }
        }
    }

    fn update(&mut self) {
        self.vars.calculate_probability(&self.cfg, self.queue.is_empty());
    }
}

impl HoldingDiscipline for Pie {
    fn enqueue(&mut self, now: Time, pkt: &Packet, _dropped: &mut Vec<(Packet, Admission)>) -> Result<(), Admission> {
        self.catch_up(now);
        if self.queue.len() as u64 >= self.cfg.limit_packets {
            self.stats.overflow_drops += 1;
            self.vars.accu_prob = 0.0;
            return Err(Admission::Overflow);
        }
        let mut pkt = *pkt;
        let mark_below = self.cfg.ecn.then_some(PIE_ECN_PROB);
        self.vars.admit(&self.cfg, &mut self.rng, self.queue.bytes(), &mut pkt, mark_below, &mut self.stats)?;
        self.slab.push(&mut self.queue, now, &pkt);
        Ok(())
    }

    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        self.catch_up(now);
        let (enqueued, pkt) = self.slab.pop(&mut self.queue)?;
        self.vars.process_dequeue(now, enqueued, self.queue.is_empty());
        self.stats.sojourn(enqueued, now);
        Some(pkt)
    }

    fn len_packets(&self) -> usize {
        self.queue.len()
    }

    fn len_bytes(&self) -> u64 {
        self.queue.bytes()
    }

    fn room_packets(&self, _ip_bytes: u32) -> u64 {
        self.cfg.limit_packets.saturating_sub(self.queue.len() as u64)
    }

    fn stats(&self) -> &AqmStats {
        &self.stats
    }

    fn control(&self) -> (i64, f64) {
        (i64::from(self.vars.burst_left > 0), self.vars.prob)
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.slab.iter(&self.queue).for_each(f);
    }
}

/// Linux's PIE settings for tests (sch_fq_pie's too).
#[cfg(test)]
pub mod testing {
    use super::*;

    /// `pie_params_init` and `pie_vars_init`: 15 ms, 15 ms, alpha 2/16, beta 20/16, 150 ms
    /// of burst allowance, ECN and bytemode off; a 1500-byte MTU.
    pub fn cfg(limit_packets: u64) -> PieConfig {
        PieConfig {
            limit_packets,
            target_ps: 15 * MS,
            tupdate_ps: 15 * MS,
            alpha: 0.125,
            beta: 1.25,
            max_burst_ps: 150 * MS,
            ecn: false,
            bytemode: false,
            mtu_bytes: 1500,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testing::data;

    fn cfg() -> PieConfig {
        testing::cfg(1000)
    }

    fn pie() -> Pie {
        Pie::new(&cfg(), Rng::new(1))
    }

    #[test]
    fn the_probability_moves_by_alpha_and_beta_scaled_while_small() {
        // From 0, a delay of 45 ms (target 15 ms, previous 0): RFC 8033's p = 0.125 x 0.030 +
        // 1.25 x 0.045 = 0.06, scaled by 1/2048 while the probability is below 0.0001 %.
        let mut q = pie();
        q.vars.qdelay = 45 * MS;
        q.update();
        let step = (0.125 * 0.030 + 1.25 * 0.045) / 2048.0;
        assert!((q.vars.prob - step).abs() < 1e-15, "{}", q.vars.prob);
        assert_eq!(q.vars.qdelay_old, 45 * MS);
        // At 5 %: the gains are halved only; the delay steady: only the alpha term.
        q.vars.prob = 0.05;
        q.update();
        assert!((q.vars.prob - (0.05 + 0.125 * 0.030 / 2.0)).abs() < 1e-12, "{}", q.vars.prob);
        // At 50 %, a large step is cut to 2 %.
        q.vars.prob = 0.5;
        q.vars.qdelay_old = 0;
        q.vars.qdelay = 200 * MS;
        q.update();
        assert!((q.vars.prob - 0.52).abs() < 1e-12, "{}", q.vars.prob);
        // Below target the probability falls; no delay twice decays it by 1/64.
        q.vars.prob = 0.5;
        q.vars.qdelay_old = 0;
        q.vars.qdelay = 0;
        q.update();
        let after = 0.5 - 0.125 * 0.015;
        assert!((q.vars.prob - (after - after / 64.0)).abs() < 1e-12, "{}", q.vars.prob);
    }

    #[test]
    fn no_early_drop_during_the_burst_allowance_then_drops_follow_the_probability() {
        let mut q = pie();
        q.vars.prob = 0.5;
        q.vars.qdelay = 100 * MS;
        let mut dropped = Vec::new();
        // 150 ms of allowance: arrivals are all taken while departures spend it.
        for i in 0..100u64 {
            assert!(q.enqueue(i * MS, &data(i, 1500), &mut dropped).is_ok(), "packet {i}");
            if i % 2 == 0 {
                q.dequeue(i * MS, &mut dropped);
                q.vars.qdelay = 100 * MS;
            }
            q.vars.prob = 0.5;
            q.next_update = Time::MAX;
        }
        assert_eq!(q.burst_left(), 52 * MS, "98 ms spent between the departures at 0 and 98 ms");
        // Spend the rest; then drops follow the probability, de-randomized: at p = 0.5 none
        // until 0.85 has accumulated (the first arrival after a drop), then each arrival with
        // p: one drop in 3 arrivals on average, 133 of 400.
        q.dequeue(160 * MS, &mut dropped);
        q.vars.qdelay = 100 * MS;
        assert_eq!(q.burst_left(), 0);
        let refused = (0..400u64).filter(|i| q.enqueue(161 * MS, &data(*i, 1500), &mut dropped).is_err()).count();
        assert!((110..160).contains(&refused), "{refused}");
    }

    #[test]
    fn ecn_marks_below_ten_percent_and_drops_above() {
        let mut q = Pie::new(&PieConfig { ecn: true, ..cfg() }, Rng::new(2));
        q.vars.burst_left = 0;
        q.vars.qdelay = 100 * MS;
        q.next_update = Time::MAX;
        let mut dropped = Vec::new();
        for i in 0..10 {
            q.enqueue(0, &data(i, 1500), &mut dropped).unwrap();
        }
        let mut ect = data(99, 1500);
        ect.ecn.set(Ecn::ECT);
        q.vars.prob = 0.09;
        q.vars.accu_prob = 8.5;
        assert!(q.enqueue(0, &ect, &mut dropped).is_ok());
        assert_eq!(q.stats().ecn_marks, 1);
        q.vars.prob = 0.11;
        q.vars.accu_prob = 8.5;
        assert_eq!(q.enqueue(0, &ect, &mut dropped), Err(Admission::EarlyDrop));
    }

    #[test]
    fn a_quiet_queue_restores_the_burst_allowance() {
        let mut q = pie();
        q.vars.burst_left = 0;
        q.vars.prob = 0.0;
        q.dequeue(0, &mut Vec::new());
        // Two updates with no delay and no probability restart the measurement.
        q.catch_up(30 * MS);
        assert_eq!(q.burst_left(), 150 * MS);
        // A long quiet spell costs nothing: the updates settle.
        q.catch_up(3_600_000 * MS);
        assert_eq!(q.next_update, 3_600_000 * MS + 15 * MS);
    }
}
