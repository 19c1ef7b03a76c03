//! TBF, the token bucket filter (Linux `net/sched/sch_tbf.c` with its default child, a
//! byte-limited FIFO, `bfifo`): a shaper. Packets wait in the FIFO; the one at its head
//! leaves only when the bucket (`burst_bytes` deep, filling at `rate_bps`, full at the
//! start) holds its IP bytes, and takes them (`tbf_dequeue`); until then the link's line
//! stays idle and the discipline says when the tokens will be there (`ready_at`, Linux's
//! `qdisc_watchdog_schedule_ns(now + -toks)`), so the link's next dequeue event comes then.
//! An arrival that would take the FIFO beyond `limit_bytes` is dropped (`bfifo_enqueue`).
//! So after a quiet spell `burst_bytes` leave at the line's rate, then the rate holds:
//! in any interval at most burst + rate x interval bytes leave.
//!
//! With `peakrate_bps`, a second bucket of `minburst_bytes` (Linux's `mtu`) filling at the
//! peak rate must hold the packet too: bursts leave at the peak rate rather than the
//! line's. Linux bounds the time a bucket has been filling by the main bucket's depth
//! before adding it to the peak bucket; with the peak bucket the smaller in time, as
//! `tc` requires of sane settings, that bound changes nothing.
//!
//! Unlike the policer (`impairment/policer.rs`), which drops what exceeds the same bucket
//! (`token_bucket.rs`), a shaper delays it. Packet lengths are IP bytes (Linux's
//! `qdisc_pkt_len` counts the Ethernet header too).

use super::holding::{AqmStats, HoldingDiscipline};
use super::slab::{PacketList, PacketSlab};
use super::Admission;
use crate::net::token_bucket::TokenBucket;
use crate::packet::Packet;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TbfConfig {
    /// The shaped rate, bits per second of IP packets (Linux `rate`).
    pub rate_bps: u64,
    /// The bucket's depth, bytes (Linux `burst`): what leaves at the line's rate after a
    /// quiet spell.
    pub burst_bytes: u64,
    /// Most IP bytes waiting (the bfifo's `limit`).
    pub limit_bytes: u64,
    /// The rate of a second bucket that bursts must also fit (Linux `peakrate`); None: none.
    pub peakrate_bps: Option<u64>,
    /// That bucket's depth, bytes (Linux `mtu`, or `minburst`); set with peakrate_bps.
    pub minburst_bytes: Option<u64>,
}

impl TbfConfig {
    /// The core's own check of what the scenario's validator refuses with a message.
    pub fn validate(&self) -> Result<(), String> {
        if self.rate_bps == 0 || self.burst_bytes == 0 || self.limit_bytes == 0 {
            return Err("TBF needs rate_bps, burst_bytes and limit_bytes > 0".into());
        }
        match (self.peakrate_bps, self.minburst_bytes) {
            (None, None) => Ok(()),
            (Some(p), Some(m)) if p > self.rate_bps && m > 0 => Ok(()),
            _ => Err("TBF: peakrate_bps above rate_bps goes with minburst_bytes > 0".into()),
        }
    }
}

pub struct Tbf {
    cfg: TbfConfig,
    slab: PacketSlab,
    queue: PacketList,
    rate: TokenBucket,
    peak: Option<TokenBucket>,
    /// The head packet waits for tokens until then (the last dequeue found too few).
    ready_at: Time,
    stats: AqmStats,
}

impl Tbf {
    /// `slab_packets`: room reserved for the packets the byte limit can hold.
    pub fn new(cfg: &TbfConfig, slab_packets: usize) -> Self {
        Tbf {
            slab: PacketSlab::with_capacity(slab_packets),
            queue: PacketList::default(),
            rate: TokenBucket::full(cfg.rate_bps, cfg.burst_bytes),
            peak: cfg.peakrate_bps.zip(cfg.minburst_bytes).map(|(r, d)| TokenBucket::full(r, d)),
            ready_at: 0,
            stats: AqmStats::default(),
            cfg: cfg.clone(),
        }
    }
}

impl HoldingDiscipline for Tbf {
    /// `bfifo_enqueue`: the arrival is taken if the bytes waiting stay within the limit.
    fn enqueue(&mut self, now: Time, pkt: &Packet, _dropped: &mut Vec<(Packet, Admission)>) -> Result<(), Admission> {
        if self.queue.bytes() + u64::from(pkt.ip_bytes) > self.cfg.limit_bytes {
            self.stats.overflow_drops += 1;
            return Err(Admission::Overflow);
        }
        self.slab.push(&mut self.queue, now, pkt);
        Ok(())
    }

    /// `tbf_dequeue`: the head leaves if both buckets hold its bytes; otherwise nothing
    /// leaves, and `ready_at` says when they will.
    fn dequeue(&mut self, now: Time, _dropped: &mut Vec<(Packet, Admission)>) -> Option<Packet> {
        let (_, head) = self.slab.front(&self.queue)?;
        let bytes = head.ip_bytes;
        let peak_holds = self.peak.as_ref().is_none_or(|p| p.holds(now, bytes));
        if !(peak_holds && self.rate.holds(now, bytes)) {
            let wait = self.peak.as_ref().map_or(0, |p| p.wait_for(now, bytes)).max(self.rate.wait_for(now, bytes));
            self.ready_at = now + wait;
            return None;
        }
        self.rate.take(now, bytes);
        if let Some(p) = self.peak.as_mut() {
            p.take(now, bytes);
        }
        let (enqueued, pkt) = self.slab.pop(&mut self.queue)?;
        self.stats.sojourn(enqueued, now);
        Some(pkt)
    }

    fn ready_at(&self) -> Time {
        self.ready_at
    }

    fn len_packets(&self) -> usize {
        self.queue.len()
    }

    fn len_bytes(&self) -> u64 {
        self.queue.bytes()
    }

    fn room_packets(&self, ip_bytes: u32) -> u64 {
        self.cfg.limit_bytes.saturating_sub(self.queue.bytes()) / u64::from(ip_bytes.max(1))
    }

    fn stats(&self) -> &AqmStats {
        &self.stats
    }

    /// (1 while packets wait behind the bucket, else 0; the bytes in the bucket when last
    /// counted).
    fn control(&self) -> (i64, f64) {
        (i64::from(!self.queue.is_empty()), self.rate.bytes() as f64)
    }

    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.slab.iter(&self.queue).for_each(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testing::data;
    use crate::time::{transmission_time, PS_PER_MS, PS_PER_S};

    fn tbf(rate_bps: u64, burst_bytes: u64, limit_bytes: u64) -> Tbf {
        let cfg = TbfConfig { rate_bps, burst_bytes, limit_bytes, peakrate_bps: None, minburst_bytes: None };
        Tbf::new(&cfg, 64)
    }

    /// Serves `q` as a link of `line_bps` does (`Link::service`): the next dequeue when the
    /// line frees or, if the head waits for tokens, at `ready_at`. The departure times.
    fn serve(q: &mut Tbf, line_bps: u64, until: Time) -> Vec<(Time, u32)> {
        let (mut now, mut out, mut dropped) = (0, Vec::new(), Vec::new());
        while now <= until && q.len_packets() > 0 {
            match q.dequeue(now, &mut dropped) {
                Some(p) => {
                    out.push((now, p.ip_bytes));
                    now += transmission_time(u64::from(p.ip_bytes), line_bps);
                }
                None => {
                    assert!(q.ready_at() > now, "a throttled head waits for a later time");
                    now = q.ready_at();
                }
            }
        }
        out
    }

    #[test]
    fn a_full_bucket_lets_exactly_burst_bytes_go_at_once_then_the_rate() {
        // 10 Mb/s, a 15,000-byte bucket, and a line so fast that serialization takes no
        // time: ten 1500-byte packets (the burst) leave at 0, then one per 1.2 ms
        // (1500 x 8 / 10 Mb/s), each the moment its tokens are there.
        let mut q = tbf(10_000_000, 15_000, 1_000_000);
        for i in 0..30 {
            q.enqueue(0, &data(i, 1500), &mut Vec::new()).unwrap();
        }
        let out = serve(&mut q, u64::MAX, PS_PER_S);
        let gap = transmission_time(1500, 10_000_000);
        assert_eq!(gap, 1_200_000_000);
        assert_eq!(out.iter().filter(|(t, _)| *t == 0).count(), 10);
        for (k, (t, _)) in out.iter().enumerate().skip(10) {
            assert_eq!(*t, (k as u64 - 9) * gap, "packet {k}");
        }
        assert_eq!(q.stats().sojourn_max_ps, 20 * gap);
    }

    #[test]
    fn the_output_settles_at_the_rate_burst_plus_rate_times_time() {
        // Offered far above 10 Mb/s on a 100 Mb/s line for 2 s: what leaves by t is the
        // burst plus rate x t (to a packet); while the burst lasts, packets leave back to
        // back at the line's rate.
        let mut q = tbf(10_000_000, 30_000, 10_000_000);
        for i in 0..3000 {
            q.enqueue(0, &data(i, 1500), &mut Vec::new()).unwrap();
        }
        let line = 100_000_000;
        let out = serve(&mut q, line, 2 * PS_PER_S);
        let sent = |until: Time| out.iter().filter(|(t, _)| *t <= until).map(|(_, b)| u64::from(*b)).sum::<u64>();
        for t in [100 * PS_PER_MS, PS_PER_S, 2 * PS_PER_S] {
            let expected = 30_000 + 10_000_000 / 8 * t / PS_PER_S;
            assert!(sent(t).abs_diff(expected) <= 1500, "by {t}: {} against {expected}", sent(t));
        }
        // At the start, back to back at the line's rate: 30,000 bytes plus what the bucket
        // gains meanwhile (1/10 of what leaves): 22 packets.
        let tx = transmission_time(1500, line);
        let back_to_back = out.windows(2).take_while(|w| w[1].0 - w[0].0 == tx).count() + 1;
        assert_eq!(back_to_back, 22);
    }

    #[test]
    fn the_byte_limit_is_respected() {
        let mut q = tbf(1_000_000, 3000, 10_000);
        let mut dropped = Vec::new();
        let taken = (0..10).filter(|&i| q.enqueue(0, &data(i, 1500), &mut dropped).is_ok()).count();
        // 6 x 1500 = 9000 <= 10,000; a seventh would make 10,500.
        assert_eq!((taken, q.len_bytes(), q.stats().overflow_drops), (6, 9000, 4));
        assert_eq!(q.room_packets(1000), 1);
        assert!(q.enqueue(0, &data(20, 1000), &mut dropped).is_ok());
        assert!(dropped.is_empty(), "refused arrivals are returned, not pushed out");
    }

    #[test]
    fn a_peak_bucket_spaces_the_burst_at_the_peak_rate() {
        // rate 10 Mb/s, burst 15,000; peak 20 Mb/s with a one-packet bucket: the burst
        // leaves one packet per 0.6 ms (1500 x 8 / 20 Mb/s) instead of all at once, until
        // the main bucket runs dry; it gains 750 bytes per 0.6 ms, so 19 go at the peak
        // rate (15,000 + 18 x 750 = 28,500 = 19 x 1500), then one per 1.2 ms.
        let cfg = TbfConfig {
            rate_bps: 10_000_000,
            burst_bytes: 15_000,
            limit_bytes: 1_000_000,
            peakrate_bps: Some(20_000_000),
            minburst_bytes: Some(1500),
        };
        let mut q = Tbf::new(&cfg, 64);
        for i in 0..40 {
            q.enqueue(0, &data(i, 1500), &mut Vec::new()).unwrap();
        }
        let out = serve(&mut q, u64::MAX, PS_PER_S);
        let peak_gap = transmission_time(1500, 20_000_000);
        let gaps: Vec<Time> = out.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps[..18].iter().all(|&g| g == peak_gap), "{:?}", &gaps[..20]);
        assert!(gaps[18..].iter().all(|&g| g == 2 * peak_gap), "{:?}", &gaps[18..]);
    }
}
