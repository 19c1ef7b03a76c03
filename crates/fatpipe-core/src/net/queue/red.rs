//! Random Early Detection (Floyd and Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1993), with the gentle variant (Floyd 2000) and ns-2's automatic
//! parameters (Floyd, Gummadi, Shenker, "Adaptive RED", 2001), which document 003 used.
//!
//! On every arrival the average queue is updated, avg <- (1 - w_q) avg + w_q q; after an idle
//! period it first decays as if m = idle time / s packets of size s had arrived to an empty
//! queue: avg <- (1 - w_q)^m avg. Then, as ns-2's `REDQueue::enque`:
//! - avg < min_th, or at most one packet waiting: admit. ns-2 never drops early while the
//!   instantaneous queue holds one packet or none (`qavg >= th_min && qlen > 1`): the
//!   average lags the queue by about 1 / w_q arrivals, and after a burst it would otherwise
//!   refuse every packet to an empty queue until it has decayed, locking flows out;
//! - the first arrival after the average crosses min_th is admitted and starts the count;
//! - min_th <= avg < max_th: p_b = max_p (avg - min_th) / (max_th - min_th) and, spacing
//!   drops by the count of packets since the last one, p_a = p_b / (1 - count p_b);
//! - gentle, max_th <= avg < 2 max_th: p_b = max_p + (1 - max_p)(avg - max_th) / max_th;
//! - above (max_th, or 2 max_th when gentle): drop.
//!
//! In byte mode the count is in mean-sized packets of the bytes since the last drop and p_a
//! is scaled by the packet's size over the mean packet size (ns-2 `modify_p`). The hard limit
//! (`limit_packets`) still drops arrivals to a full queue. Every drop, early or forced,
//! restarts the count (ns-2 since Philip Liu's fix, `ns1_compat_` off).
//!
//! Buffer cells (`cell_bytes`): a router that stores packets in fixed-size buffers, such as
//! document 002's RS/960 cards (2 KB buffers, a 4 KB packet takes 3), runs RED on what it
//! counts: the queue, its average, the thresholds and the hard limit (`limit_cells`) are in
//! cells, a packet taking ceil(IP bytes / cell). Document 002's "r200" build counts the 200
//! cells of the transmit side and drops as they near full (section 4.2).
//!
//! With `ecn` (RFC 3168 section 7) a probabilistic decision marks an ECN-capable packet
//! Congestion Experienced and admits it instead of dropping it; packets that are not
//! ECN-capable are dropped as before. As ns-2's RED (`setbit_`; `drop_early` marks, the
//! forced drop above max_th, or 2 max_th when gentle, drops), so marks cover the gentle
//! region too and only the forced region and the hard limit drop ECN-capable packets.
//! (Linux sch_red marks in the forced region as well unless `harddrop` is set.)

use super::{Admission, QueueDiscipline};
use crate::packet::{Ecn, Packet};
use crate::rng::Rng;
use crate::time::{transmission_time, Time};
use schemars::JsonSchema;
use serde::Deserialize;

/// Floyd and Jacobson's recommended floor for min_th, packets (ns-2 automatic: 5).
pub const MIN_TH_FLOOR_PACKETS: f64 = 5.0;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Hard limit, packets (None: none).
    pub limit_packets: Option<u64>,
    /// Thresholds on the average queue, packets. None: ns-2's automatic choice,
    /// min_th = max(5, target_delay x C / 2) and max_th = 3 x min_th, C the link rate in
    /// packets of `mean_packet_bytes` per second.
    pub min_th_packets: Option<f64>,
    pub max_th_packets: Option<f64>,
    /// Drop probability at max_th.
    pub max_p: f64,
    /// EWMA weight; None: ns-2's automatic 1 - exp(-1 / C), C the link rate in packets/s.
    pub w_q: Option<f64>,
    /// Gentle RED: the drop probability climbs from max_p to 1 between max_th and 2 max_th.
    pub gentle: bool,
    /// Byte mode: large packets are more likely dropped (p_b x size / mean size).
    pub byte_mode: bool,
    /// Typical packet size for the idle decay and byte mode, bytes.
    pub mean_packet_bytes: u32,
    /// ns-2 `wait_`: space drops further apart, p_a = p_b / (2 - count p_b) and none while
    /// count p_b < 1. False: Floyd and Jacobson's p_a = p_b / (1 - count p_b).
    pub wait: bool,
    /// Target queueing delay of the automatic thresholds, picoseconds.
    pub target_delay_ps: Time,
    /// Mark ECN-capable packets instead of dropping them early (RFC 3168). Off by default.
    pub ecn: bool,
    /// Count the queue in buffer cells of this many bytes (a packet takes ceil(IP bytes /
    /// cell)): the average, the thresholds and `limit_cells` are then in cells. None: packets.
    pub cell_bytes: Option<u32>,
    /// Hard limit in cells (with `cell_bytes`; None: none).
    pub limit_cells: Option<u64>,
}

impl RedConfig {
    /// What a packet of `ip_bytes` counts for in the queue: its cells, or 1.
    #[inline]
    fn units(&self, ip_bytes: u32) -> u64 {
        self.cell_bytes.map_or(1, |c| ip_bytes.div_ceil(c.max(1)) as u64)
    }
}

/// What RED decides for an arrival before the hard limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Early {
    Admit,
    /// The probabilistic decision (between the thresholds): drop, or mark with ECN.
    Signal,
    /// Above max_th (2 max_th when gentle): drop whatever the packet.
    Force,
}

pub struct Red {
    cfg: RedConfig,
    min_th: f64,
    max_th: f64,
    w_q: f64,
    /// Transmission time of a typical packet: the unit of the idle decay.
    typical_tx_ps: Time,
    /// What waits: packets and IP bytes.
    packets: u64,
    bytes: u64,
    /// The queue in the unit RED counts: packets, or cells (`cell_bytes`).
    units: u64,
    /// Average queue, packets (cells with `cell_bytes`).
    pub avg: f64,
    /// Arrivals since the last drop, this one included (ns-2 `count`), and their bytes
    /// (`count_bytes`, byte mode).
    count: u64,
    count_bytes: u64,
    /// The previous arrival found avg above min_th with packets waiting (ns-2 `old`).
    old: bool,
    /// When the queue went idle, if it is.
    idle_since: Option<Time>,
    rng: Rng,
    /// Packets marked CE instead of dropped.
    marks: u64,
}

impl Red {
    pub fn new(cfg: RedConfig, link_rate_bps: u64, rng: Rng) -> Self {
        let packets_per_s = link_rate_bps as f64 / (8.0 * cfg.mean_packet_bytes as f64);
        let target_s = cfg.target_delay_ps as f64 / crate::time::PS_PER_S as f64;
        // Automatic thresholds are in packets of the mean size; in cells, as many cells as
        // such packets take.
        let unit = cfg.units(cfg.mean_packet_bytes) as f64;
        let min_th =
            cfg.min_th_packets.unwrap_or_else(|| MIN_TH_FLOOR_PACKETS.max(target_s * packets_per_s / 2.0) * unit);
        let max_th = cfg.max_th_packets.unwrap_or(3.0 * min_th);
        let w_q = cfg.w_q.unwrap_or_else(|| 1.0 - (-1.0 / packets_per_s).exp());
        let typical_tx_ps = transmission_time(cfg.mean_packet_bytes as u64, link_rate_bps).max(1);
        Red {
            cfg,
            min_th,
            max_th,
            w_q,
            typical_tx_ps,
            packets: 0,
            bytes: 0,
            units: 0,
            avg: 0.0,
            count: 0,
            count_bytes: 0,
            old: false,
            idle_since: Some(0),
            rng,
            marks: 0,
        }
    }

    pub fn thresholds(&self) -> (f64, f64, f64) {
        (self.min_th, self.max_th, self.w_q)
    }

    fn update_average(&mut self, now: Time) {
        let q = self.units as f64;
        if let Some(since) = self.idle_since.take() {
            // As if m typical packets had arrived to an empty queue while it was idle.
            let m = (now - since) as f64 / self.typical_tx_ps as f64;
            self.avg *= (1.0 - self.w_q).powf(m);
        }
        self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q;
    }

    /// The marking probability before count spacing (p_b), or None for "drop for sure".
    fn base_probability(&self) -> Option<f64> {
        let (min_th, max_th, max_p) = (self.min_th, self.max_th, self.cfg.max_p);
        if self.avg < max_th {
            Some(max_p * (self.avg - min_th) / (max_th - min_th))
        } else if self.cfg.gentle && self.avg < 2.0 * max_th {
            Some(max_p + (1.0 - max_p) * (self.avg - max_th) / max_th)
        } else {
            None
        }
    }

    /// p_a from p_b by count spacing (ns-2 `modify_p`).
    fn spaced_probability(&self, p_b: f64, size_bytes: u32) -> f64 {
        let mean = self.cfg.mean_packet_bytes as f64;
        let count = if self.cfg.byte_mode { (self.count_bytes as f64 / mean).floor() } else { self.count as f64 };
        let c = count * p_b;
        let mut p_a = if self.cfg.wait {
            if c < 1.0 {
                0.0
            } else if c < 2.0 {
                p_b / (2.0 - c)
            } else {
                1.0
            }
        } else if c < 1.0 {
            p_b / (1.0 - c)
        } else {
            1.0
        };
        if self.cfg.byte_mode && p_a < 1.0 {
            p_a = p_a * size_bytes as f64 / mean;
        }
        p_a.min(1.0)
    }

    /// Whether the arriving packet is dropped (or marked) early, `queued` packets waiting.
    fn early_drop(&mut self, size_bytes: u32, queued: u64) -> Early {
        self.count += 1;
        self.count_bytes += size_bytes as u64;
        if self.avg < self.min_th || queued <= 1 {
            self.old = false;
            return Early::Admit;
        }
        let Some(p_b) = self.base_probability() else {
            return Early::Force;
        };
        if !self.old {
            // The average has just crossed min_th: count from this packet (ns-2).
            self.old = true;
            self.count = 1;
            self.count_bytes = size_bytes as u64;
            return Early::Admit;
        }
        if self.rng.uniform() < self.spaced_probability(p_b, size_bytes) {
            Early::Signal
        } else {
            Early::Admit
        }
    }

    /// A drop or a mark: the count starts again.
    fn restart_count(&mut self) {
        self.count = 0;
        self.count_bytes = 0;
    }
}

impl QueueDiscipline for Red {
    fn admit(&mut self, now: Time, pkt: &mut Packet, starts_now: bool) -> Result<(), Admission> {
        self.update_average(now);
        let early = self.early_drop(pkt.ip_bytes, self.packets);
        if early != Early::Admit {
            self.restart_count();
        }
        let mark = early == Early::Signal && self.cfg.ecn && pkt.ecn.is_ect();
        if early == Early::Force || (early == Early::Signal && !mark) {
            return Err(Admission::EarlyDrop);
        }
        let units = self.cfg.units(pkt.ip_bytes);
        let over_packets = self.cfg.limit_packets.is_some_and(|l| self.packets >= l);
        let over_cells = self.cfg.limit_cells.is_some_and(|l| self.units + units > l);
        if over_packets || over_cells {
            self.restart_count();
            return Err(Admission::Overflow);
        }
        if mark {
            pkt.ecn.set(Ecn::CE);
            self.marks += 1;
        }
        if starts_now {
            return Ok(());
        }
        self.packets += 1;
        self.bytes += pkt.ip_bytes as u64;
        self.units += units;
        Ok(())
    }

    fn depart(&mut self, _t: Time, ip_bytes: u32) {
        self.packets -= 1;
        self.bytes -= ip_bytes as u64;
        self.units -= self.cfg.units(ip_bytes);
    }

    fn idle(&mut self, t: Time) {
        self.idle_since.get_or_insert(t);
    }

    fn room_packets(&self, ip_bytes: u32) -> u64 {
        let packets = self.cfg.limit_packets.map_or(u64::MAX, |l| l.saturating_sub(self.packets));
        let cells = self.cfg.limit_cells.map_or(u64::MAX, |l| l.saturating_sub(self.units) / self.cfg.units(ip_bytes));
        packets.min(cells)
    }

    fn ecn_marks(&self) -> u64 {
        self.marks
    }

    fn red_parameters(&self) -> Option<(f64, f64, f64)> {
        Some(self.thresholds())
    }

    fn red_average(&self, now: Time) -> Option<f64> {
        // The idle decay the next arrival will apply (update_average), up to now.
        Some(match self.idle_since {
            Some(since) => {
                self.avg * (1.0 - self.w_q).powf(now.saturating_sub(since) as f64 / self.typical_tx_ps as f64)
            }
            None => self.avg,
        })
    }

    fn len_packets(&self) -> usize {
        self.packets as usize
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    fn pkt(ip_bytes: u32) -> Packet {
        crate::packet::testing::data(0, ip_bytes)
    }

    impl Red {
        /// Counts a packet as waiting without RED's decision (to hold the queue at a length).
        fn hold(&mut self, p: Packet) {
            self.packets += 1;
            self.bytes += p.ip_bytes as u64;
            self.units += self.cfg.units(p.ip_bytes);
        }
    }

    fn config(min_th: f64, max_th: f64, w_q: f64) -> RedConfig {
        RedConfig {
            limit_packets: Some(10_000),
            min_th_packets: Some(min_th),
            max_th_packets: Some(max_th),
            max_p: 0.1,
            w_q: Some(w_q),
            gentle: false,
            byte_mode: false,
            mean_packet_bytes: 1000,
            wait: false,
            target_delay_ps: 5 * PS_PER_MS,
            ecn: false,
            cell_bytes: None,
            limit_cells: None,
        }
    }

    /// The long-run drop rate of count spacing with base probability `p_b`: the k-th packet
    /// after a drop is dropped with the hazard p_a(k); rate = 1 / E[gap].
    fn expected_rate(p_b: f64, wait: bool) -> f64 {
        let (mut survive, mut mean_gap) = (1.0, 0.0);
        for k in 1..100_000 {
            let c = k as f64 * p_b;
            let p_a: f64 = if wait {
                if c < 1.0 {
                    0.0
                } else if c < 2.0 {
                    p_b / (2.0 - c)
                } else {
                    1.0
                }
            } else if c < 1.0 {
                p_b / (1.0 - c)
            } else {
                1.0
            };
            let p_a = p_a.min(1.0);
            mean_gap += k as f64 * survive * p_a;
            survive *= 1.0 - p_a;
            if survive < 1e-12 {
                break;
            }
        }
        1.0 / mean_gap
    }

    /// Fills the queue to `q` packets (no questions asked).
    fn hold(red: &mut Red, q: usize) {
        red.packets = q as u64;
        red.bytes = q as u64 * 1000;
        red.units = q as u64 * red.cfg.units(1000);
    }

    /// Holds the instantaneous queue at `q` packets and offers `n` arrivals; returns drops.
    fn drops_at_queue(red: &mut Red, q: usize, n: usize) -> usize {
        hold(red, q);
        let mut drops = 0;
        for i in 0..n {
            match red.admit(i as Time, &mut pkt(1000), false) {
                Ok(()) => red.depart(i as Time, 1000),
                Err(_) => drops += 1,
            }
        }
        drops
    }

    #[test]
    fn average_follows_the_ewma() {
        let w = 0.002;
        let mut red = Red::new(config(1000.0, 3000.0, w), 1_000_000_000, Rng::new(1));
        drops_at_queue(&mut red, 50, 500);
        // avg_n = q (1 - (1 - w)^n) from avg_0 = 0 with a constant queue of q.
        let expected = 50.0 * (1.0 - (1.0 - w).powi(500));
        assert!((red.avg - expected).abs() < 1e-9, "{} vs {}", red.avg, expected);
    }

    #[test]
    fn the_sampled_average_decays_over_an_idle_spell_as_the_next_arrival_will() {
        let w = 0.002;
        let mut red = Red::new(config(1000.0, 3000.0, w), 1_000_000_000, Rng::new(1));
        drops_at_queue(&mut red, 50, 500);
        let busy = red.avg;
        assert_eq!(red.red_average(600), Some(busy), "not idle: the average as it stands");
        hold(&mut red, 0);
        red.idle(1_000);
        // m = idle time / a typical packet's transmission: (1 - w)^m (Floyd and Jacobson 1993).
        let m = 10_000_000.0 / red.typical_tx_ps as f64;
        let sampled = red.red_average(1_000 + 10_000_000).unwrap();
        assert!((sampled - busy * (1.0 - w).powf(m)).abs() < 1e-9 && sampled < busy);
        // The next arrival (to the empty queue) starts from the sampled value, then adds itself.
        red.update_average(1_000 + 10_000_000);
        assert!((red.avg - (1.0 - w) * sampled).abs() < 1e-9);
    }

    #[test]
    fn drop_rate_between_thresholds_follows_max_p_with_count_spacing() {
        // avg = q (w_q = 1): p_b = 0.1 (30 - 10) / (50 - 10) = 0.05.
        let mut red = Red::new(config(10.0, 50.0, 1.0), 1_000_000_000, Rng::new(7));
        let n = 200_000;
        let rate = drops_at_queue(&mut red, 30, n) as f64 / n as f64;
        // Floyd and Jacobson: p_a = p_b / (1 - count p_b) makes the gaps uniform in
        // 1..1/p_b - 1, so the rate is 2 p_b = 0.1.
        let expected = expected_rate(0.05, false);
        assert!((expected - 0.1).abs() < 1e-9);
        assert!((rate / expected - 1.0).abs() < 0.1, "rate {rate} vs {expected}");
    }

    #[test]
    fn ns2_wait_spaces_drops_further() {
        let mut cfg = config(10.0, 50.0, 1.0);
        cfg.wait = true;
        let mut red = Red::new(cfg, 1_000_000_000, Rng::new(7));
        let n = 200_000;
        let rate = drops_at_queue(&mut red, 30, n) as f64 / n as f64;
        // Gaps uniform in 1/p_b .. 2/p_b - 1: mean 1.5 / p_b - 0.5.
        let expected = expected_rate(0.05, true);
        assert!((expected - 1.0 / 29.5).abs() < 1e-9);
        assert!((rate / expected - 1.0).abs() < 0.1, "rate {rate} vs {expected}");
    }

    #[test]
    fn gentle_region_climbs_to_one_and_plain_red_drops_all_above_max_th() {
        let mut cfg = config(10.0, 50.0, 1.0);
        let mut plain = Red::new(cfg.clone(), 1_000_000_000, Rng::new(3));
        assert_eq!(drops_at_queue(&mut plain, 60, 1000), 1000);
        cfg.gentle = true;
        let mut gentle = Red::new(cfg, 1_000_000_000, Rng::new(3));
        // avg 55: p_b = 0.1 + 0.9 (55 - 50) / 50 = 0.19.
        let n = 100_000;
        let rate = drops_at_queue(&mut gentle, 55, n) as f64 / n as f64;
        let expected = expected_rate(0.19, false);
        assert!((rate / expected - 1.0).abs() < 0.1, "rate {rate} vs {expected}");
        // And at 2 max_th everything is dropped.
        assert_eq!(drops_at_queue(&mut gentle, 100, 1000), 1000);
    }

    /// Offers `n` arrivals of `ect` packets at a queue held at `q` packets; returns (drops,
    /// marks).
    fn signals_at_queue(red: &mut Red, q: usize, n: usize, ect: bool) -> (usize, u64) {
        hold(red, q);
        let (mut drops, mut marked) = (0, 0);
        for i in 0..n {
            let mut p = pkt(1000);
            if ect {
                p.ecn.set(Ecn::ECT);
            }
            match red.admit(i as Time, &mut p, false) {
                Ok(()) => {
                    marked += u64::from(p.ecn.has(Ecn::CE));
                    red.depart(i as Time, 1000);
                }
                Err(_) => drops += 1,
            }
        }
        assert_eq!(marked, red.ecn_marks(), "every mark is on an admitted packet");
        (drops, marked)
    }

    #[test]
    fn ecn_marks_capable_packets_where_red_would_drop_them() {
        let mut cfg = config(10.0, 50.0, 1.0);
        cfg.ecn = true;
        cfg.gentle = true;
        let n = 100_000;
        // Between the thresholds: the same decisions, marks instead of drops (same seed).
        let (drops, _) =
            signals_at_queue(&mut Red::new(config(10.0, 50.0, 1.0), 1_000_000_000, Rng::new(5)), 30, n, true);
        let (ecn_drops, marks) = signals_at_queue(&mut Red::new(cfg.clone(), 1_000_000_000, Rng::new(5)), 30, n, true);
        assert_eq!(ecn_drops, 0);
        assert_eq!(marks as usize, drops);
        // Packets that are not ECN-capable are still dropped.
        let (plain_drops, plain_marks) =
            signals_at_queue(&mut Red::new(cfg.clone(), 1_000_000_000, Rng::new(5)), 30, n, false);
        assert_eq!((plain_drops, plain_marks), (drops, 0));
        // The gentle region marks too (ns-2); above 2 max_th every packet is dropped.
        let (gentle_drops, gentle_marks) =
            signals_at_queue(&mut Red::new(cfg.clone(), 1_000_000_000, Rng::new(5)), 55, n, true);
        assert_eq!(gentle_drops, 0);
        assert!(gentle_marks > 0);
        let (forced, forced_marks) = signals_at_queue(&mut Red::new(cfg, 1_000_000_000, Rng::new(5)), 100, 1000, true);
        assert_eq!((forced, forced_marks), (1000, 0));
    }

    #[test]
    fn average_decays_while_idle() {
        let w = 0.01;
        let mut red = Red::new(config(1000.0, 3000.0, w), 1_000_000_000, Rng::new(1));
        drops_at_queue(&mut red, 100, 1000);
        hold(&mut red, 0);
        let before = red.avg;
        let idle_start = 1_000_000;
        red.idle(idle_start);
        // 1000-byte packets at 1 Gb/s take 8 us: 500 of them fit in 4 ms of idleness.
        let now = idle_start + 4 * PS_PER_MS;
        red.admit(now, &mut pkt(1000), false).unwrap();
        let expected = before * (1.0 - w).powf(500.0) * (1.0 - w);
        assert!((red.avg / expected - 1.0).abs() < 1e-6, "{} vs {}", red.avg, expected);
    }

    #[test]
    fn no_early_drop_while_at_most_one_packet_waits() {
        // After a burst the average lags the queue by about 1 / w_q arrivals. ns-2 admits
        // every arrival while one packet or none waits, whatever the average; without that
        // an emptied queue with a high average refused everything and locked flows out.
        let mut red = Red::new(config(10.0, 30.0, 0.0004), 1_000_000_000, Rng::new(1));
        red.avg = 100.0;
        assert!(red.admit(0, &mut pkt(1000), true).is_ok(), "an idle link takes the packet");
        assert!(red.admit(1, &mut pkt(1000), false).is_ok(), "nothing waits: admitted");
        assert!(red.admit(2, &mut pkt(1000), false).is_ok(), "one packet waits: admitted");
        assert_eq!(red.admit(3, &mut pkt(1000), false), Err(Admission::EarlyDrop), "two wait: above 2 max_th, dropped");
    }

    #[test]
    fn the_first_arrival_above_min_th_is_admitted_and_starts_the_count() {
        // ns-2: when the average has just crossed min_th (`old == 0`) the packet is admitted
        // and the count starts at 1, even where p_b would be 1.
        let mut cfg = config(10.0, 50.0, 1.0);
        cfg.max_p = 1.0;
        let mut red = Red::new(cfg, 1_000_000_000, Rng::new(1));
        hold(&mut red, 49);
        assert!(red.admit(0, &mut pkt(1000), false).is_ok(), "first above min_th");
        assert_eq!(red.count, 1);
        assert!(red.admit(1, &mut pkt(1000), false).is_err(), "p_b near 1 from the second on");
    }

    #[test]
    fn automatic_parameters_follow_ns2() {
        let mut cfg = config(0.0, 0.0, 0.0);
        cfg.min_th_packets = None;
        cfg.max_th_packets = None;
        cfg.w_q = None;
        cfg.mean_packet_bytes = 500; // ns-2's mean_pktsize_
                                     // 100 Mb/s in 500-byte packets: C = 25,000 packets/s; 5 ms target queue = 125 packets.
        let red = Red::new(cfg.clone(), 100_000_000, Rng::new(1));
        let (min_th, max_th, w_q) = red.thresholds();
        assert!((min_th - 62.5).abs() < 1e-9);
        assert!((max_th - 187.5).abs() < 1e-9);
        assert!((w_q - (1.0 - (-1.0f64 / 25_000.0).exp())).abs() < 1e-15);
        // A slow link keeps the floor of 5 packets.
        let slow = Red::new(cfg, 1_500_000, Rng::new(1));
        assert_eq!(slow.thresholds().0, 5.0);
    }

    #[test]
    fn cells_count_the_queue_the_average_and_the_hard_limit() {
        // Document 002's r200: 200 cells of 2 KB; a 4148-byte packet takes 3, so 66 fit.
        let mut cfg = config(100.0, 200.0, 1.0);
        cfg.limit_packets = None;
        cfg.cell_bytes = Some(2048);
        cfg.limit_cells = Some(200);
        cfg.max_p = 1e-9; // (almost) no early drop: the hard limit decides
        let mut red = Red::new(cfg, 44_736_000, Rng::new(1));
        let admitted = (0..100).filter(|&i| red.admit(i, &mut pkt(4148), false).is_ok()).count();
        assert_eq!(admitted, 66);
        assert_eq!(red.room_packets(4148), 0);
        assert_eq!(red.room_packets(1000), 2, "198 of 200 cells are taken: two one-cell packets fit");
        // w_q = 1: the average is the queue in cells the last arrival found (66 x 3; refused
        // arrivals update the average too).
        assert_eq!(red.avg, 198.0);
        red.depart(100, 4148);
        assert_eq!(red.room_packets(4148), 1, "a departure frees three cells");
    }

    #[test]
    fn thresholds_in_cells_drop_where_packets_would_not() {
        // 30 packets of 4148 bytes are 90 cells: between thresholds of 60 and 120 cells RED
        // drops early, while 30 packets are below a 60-packet min_th.
        let mut in_cells = config(60.0, 120.0, 1.0);
        in_cells.cell_bytes = Some(2048);
        let mut red = Red::new(in_cells, 1_000_000_000, Rng::new(7));
        let mut drops = 0;
        for _ in 0..30 {
            red.hold(pkt(4148));
        }
        for i in 0..10_000 {
            match red.admit(i, &mut pkt(4148), false) {
                Ok(()) => red.depart(i, 4148),
                Err(_) => drops += 1,
            }
        }
        // p_b = 0.1 x (90 - 60) / 60 = 0.05; Floyd and Jacobson's spacing doubles it.
        assert!((800..1200).contains(&drops), "{drops} early drops of 10,000");
        let mut red = Red::new(config(60.0, 120.0, 1.0), 1_000_000_000, Rng::new(7));
        assert_eq!(drops_at_queue(&mut red, 30, 10_000), 0, "in packets the queue is below min_th");
    }

    #[test]
    fn automatic_thresholds_in_cells_are_the_packet_thresholds_in_cells() {
        let mut cfg = config(0.0, 0.0, 0.0);
        cfg.min_th_packets = None;
        cfg.max_th_packets = None;
        cfg.w_q = None;
        cfg.mean_packet_bytes = 4148;
        let packets = Red::new(cfg.clone(), 1_000_000_000, Rng::new(1)).thresholds();
        cfg.cell_bytes = Some(2048);
        let cells = Red::new(cfg, 1_000_000_000, Rng::new(1)).thresholds();
        assert_eq!(cells.0, 3.0 * packets.0);
        assert_eq!(cells.1, 3.0 * packets.1);
        assert_eq!(cells.2, packets.2, "the weight is per arrival, whatever the unit");
    }
}
