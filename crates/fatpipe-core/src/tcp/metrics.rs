//! Linux's per-destination metrics cache: what a closing connection leaves for the next one
//! from the same host to the same destination (RTT, its deviation, ssthresh, the reordering
//! degree), and how the next one starts from it.
//!
//! Two kernels, two sets of rules, read from their source:
//! - Linux 2.4 (`net/ipv4/tcp_input.c` `tcp_update_metrics`, `tcp_init_metrics`,
//!   `tcp_init_cwnd`; 2.4.27 read): the values live in the route cache's host entry
//!   (`dst->rtt`, `rttvar`, `ssthresh`, `cwnd`, `reordering`). The new connection takes
//!   ssthresh and the reordering degree (turning FACK off), raises SRTT and mdev to the
//!   cached ones and recomputes the RTO; without a SYN sample, or without timestamps when
//!   that RTO is below TCP_TIMEOUT_INIT (3 s), it keeps neither ("FORGET ALL AND RESET");
//!   when it keeps them, cwnd starts from `tcp_init_cwnd`. The reordering degree is saved
//!   at every close.
//! - Linux 3.6 and later (`net/ipv4/tcp_metrics.c`, as 6.x has it): a table of its own,
//!   whose entries go stale after an hour (TCP_METRICS_TIMEOUT, `tcpm_check_stamp`). The
//!   cached RTT seeds only the first RTO (RTT + max(2 RTT, rto_min)), the estimator is left
//!   alone; the reordering degree is saved only when the connection ended neither in its
//!   initial slow start nor in congestion avoidance in state Open; since Linux 5.6
//!   `net.ipv4.tcp_no_ssthresh_metrics_save` = 1 keeps ssthresh out of it (commit
//!   65e6d90168f3, "net-tcp: Disable TCP ssthresh metrics cache by default").
//!
//! Both: `net.ipv4.tcp_no_metrics_save` = 1 saves nothing (the next connection still reads
//! what is there). A connection that backed off its RTO or never measured an RTT only
//! clears the cached RTT. ssthresh is first saved from congestion avoidance in state Open
//! (max(cwnd / 2, ssthresh)); a connection still in its initial slow start, or in recovery,
//! only raises a value saved before. Route locks (`ip route ... lock`) are not modelled.

use crate::cc::INFINITE_SSTHRESH;
use crate::time::{Time, PS_PER_MS, PS_PER_S};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whose rules the cache follows (the flow's profile's kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MetricsKernel {
    /// Linux 2.4 `tcp_input.c`: the route cache's host entry.
    Linux24,
    /// Linux 3.6 and later `tcp_metrics.c` (6.x).
    Linux,
}

/// The cache as a flow's kernel has it.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    pub kernel: MetricsKernel,
    /// `net.ipv4.tcp_no_metrics_save`: a closing connection saves nothing.
    pub no_metrics_save: bool,
    /// `net.ipv4.tcp_no_ssthresh_metrics_save` (Linux 5.6 and later): ssthresh is neither
    /// saved nor read. False for kernels without it.
    pub no_ssthresh_metrics_save: bool,
}

/// Linux 2.4 TCP_TIMEOUT_INIT (3 * HZ): the RTO a reset falls back to, and the smallest
/// cached RTT used without an RTT sample from the SYN.
const TIMEOUT_INIT_24: Time = 3 * PS_PER_S;
/// Linux TCP_METRICS_TIMEOUT (60 * 60 * HZ): an entry older than this is refilled from the
/// route (nothing, without route metrics) before it is read or updated.
const METRICS_TIMEOUT: Time = 3600 * PS_PER_S;
/// Linux 2.4 `tcp_init_cwnd`: an SRTT above HZ / 50 keeps the window at 2 unless a cached
/// ssthresh is known.
const INIT_CWND_FAST_RTT_24: Time = 20 * PS_PER_MS;

/// One destination's entry (scaled as the kernel keeps them: 8 x RTT, 4 x deviation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DestinationMetrics {
    /// 8 x the RTT, picoseconds (`tp->srtt`'s scale); 0: none.
    pub rtt8: i64,
    /// 4 x the mean deviation, picoseconds (`tp->mdev`'s scale).
    pub rttvar4: i64,
    /// Segments; 0: none.
    pub ssthresh: u32,
    /// Segments (kept as the kernel keeps it; read only through a route lock, not modelled).
    pub cwnd: u32,
    /// Segments; 0: none.
    pub reordering: u32,
    /// When it was last updated.
    pub stamp: Time,
}

/// What `tcp_update_metrics` reads of a closing connection.
#[derive(Clone, Copy, Debug)]
pub struct Closing {
    /// The RTO was backed off (`icsk_backoff`).
    pub backed_off: bool,
    /// 8 x SRTT and 4 x mdev, picoseconds (0: no RTT measured).
    pub srtt8: i64,
    pub mdev4: i64,
    pub cwnd: u32,
    /// `INFINITE_SSTHRESH` in the initial slow start.
    pub ssthresh: u32,
    /// State Open (not Disorder, CWR, Recovery or Loss).
    pub open: bool,
    pub reordering: u32,
    /// `net.ipv4.tcp_reordering`: a degree equal to it is not worth saving.
    pub default_reordering: u32,
}

/// What `tcp_init_metrics` gives a new connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seed {
    pub ssthresh: Option<u32>,
    /// The reordering degree, and whether FACK goes off with it (Linux 2.4).
    pub reordering: Option<u32>,
    pub disable_fack: bool,
    pub rtt: RttSeed,
    /// Linux 2.4's `tcp_init_cwnd`, when the cached RTT was kept.
    pub cwnd: Option<u32>,
}

/// What happens to the RTT estimator of the new connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RttSeed {
    #[default]
    Keep,
    /// Linux 2.4: SRTT and mdev raised to these where they are larger (8 x, 4 x,
    /// picoseconds; `RttEstimator::seed_linux24`).
    Raise { srtt8: i64, mdev4: i64 },
    /// Linux 2.4's reset: no SRTT, RTO = TCP_TIMEOUT_INIT.
    Forget { timeout: Time },
    /// Linux 3.6+: the first RTO only.
    FirstRto(Time),
}

/// What the new connection knows when `tcp_init_metrics` runs.
#[derive(Clone, Copy, Debug)]
pub struct Opening {
    /// 8 x SRTT from the SYN exchange, picoseconds (0: none).
    pub srtt8: i64,
    pub mdev4: i64,
    /// The RTO's variation term (`tp->rttvar`), picoseconds.
    pub rttvar4: i64,
    /// Timestamps are in use (`tp->saw_tstamp` on the SYN-ACK).
    pub timestamps: bool,
    pub reordering: u32,
    pub mss_bytes: u32,
    pub min_rto: Time,
}

/// The cache of one simulation: an entry per (sending host, destination host). Touched only
/// when a connection opens or closes, never per packet.
#[derive(Debug, Default)]
pub struct MetricsCache {
    entries: Vec<((u32, u32), DestinationMetrics)>,
}

impl MetricsCache {
    /// The entry for `src` -> `dst` as the kernel would read it at `now` (an expired one is
    /// empty under Linux 3.6+'s rules).
    pub fn get(&self, src: u32, dst: u32, kernel: MetricsKernel, now: Time) -> Option<DestinationMetrics> {
        let e = self.entries.iter().find(|(k, _)| *k == (src, dst)).map(|(_, e)| *e)?;
        (kernel == MetricsKernel::Linux24 || now.saturating_sub(e.stamp) <= METRICS_TIMEOUT).then_some(e)
    }

    fn entry(&mut self, src: u32, dst: u32) -> Option<&mut DestinationMetrics> {
        self.entries.iter_mut().find(|(k, _)| *k == (src, dst)).map(|(_, e)| e)
    }

    /// Linux `tcp_update_metrics` for a connection from `src` to `dst` closing at `now`.
    pub fn update(&mut self, src: u32, dst: u32, cfg: &MetricsConfig, c: &Closing, now: Time) {
        if cfg.no_metrics_save {
            return;
        }
        if c.backed_off || c.srtt8 == 0 {
            // "This session failed to estimate rtt": the cached RTT is cleared, nothing saved.
            if let Some(e) = self.entry(src, dst) {
                e.rtt8 = 0;
            }
            return;
        }
        let expired = self.get(src, dst, cfg.kernel, now).is_none();
        if self.entry(src, dst).is_none() {
            self.entries.push(((src, dst), DestinationMetrics::default()));
        }
        let e = self.entry(src, dst).expect("inserted above");
        if expired {
            *e = DestinationMetrics::default();
        }
        // RTT: a larger one replaces the cached, a smaller one pulls it down by an eighth
        // ("rtt overestimation is always better than underestimation").
        let m = e.rtt8 - c.srtt8;
        e.rtt8 = if m <= 0 { c.srtt8 } else { e.rtt8 - (m >> 3) };
        // Deviation: half the RTT's change (to mdev's scale), at least the connection's mdev;
        // a larger one replaces the cached, a smaller one pulls it down by a quarter.
        let var = (m.abs() >> 1).max(c.mdev4);
        e.rttvar4 = if var >= e.rttvar4 { var } else { e.rttvar4 - ((e.rttvar4 - var) >> 2) };
        let save_ssthresh = !cfg.no_ssthresh_metrics_save;
        let linux24 = cfg.kernel == MetricsKernel::Linux24;
        // Linux 2.4 tests `snd_ssthresh >= 0xFFFF`, 3.6+ `tcp_in_initial_slowstart`; both
        // mean: no ssthresh was ever set.
        let initial_slow_start = if linux24 { c.ssthresh >= 0xFFFF } else { c.ssthresh >= INFINITE_SSTHRESH };
        // Congestion avoidance: 2.4 `snd_cwnd > snd_ssthresh`, 3.6+ `!tcp_in_slow_start`.
        let avoiding = if linux24 { c.cwnd > c.ssthresh } else { c.cwnd >= c.ssthresh };
        let mut reordering_saved = linux24;
        if initial_slow_start {
            if save_ssthresh && e.ssthresh != 0 && c.cwnd >> 1 > e.ssthresh {
                e.ssthresh = c.cwnd >> 1;
            }
            e.cwnd = e.cwnd.max(c.cwnd);
        } else if avoiding && c.open {
            // "Cong. avoidance phase, cwnd is reliable."
            if save_ssthresh {
                e.ssthresh = (c.cwnd >> 1).max(c.ssthresh);
            }
            e.cwnd = ((e.cwnd as u64 + c.cwnd as u64) >> 1) as u32;
        } else {
            // "Slow start did not finish, cwnd is non-sense, ssthresh may be also invalid."
            e.cwnd = ((e.cwnd as u64 + c.ssthresh as u64) >> 1) as u32;
            if save_ssthresh && e.ssthresh != 0 && c.ssthresh > e.ssthresh {
                e.ssthresh = c.ssthresh;
            }
            reordering_saved = true;
        }
        if reordering_saved && e.reordering < c.reordering && c.reordering != c.default_reordering {
            e.reordering = c.reordering;
        }
        e.stamp = now;
    }

    /// Linux `tcp_init_metrics` for a connection from `src` to `dst` opening at `now`; None
    /// when there is no entry (the connection starts as a fresh one).
    pub fn seed(&self, src: u32, dst: u32, cfg: &MetricsConfig, o: &Opening, now: Time) -> Option<Seed> {
        let e = self.get(src, dst, cfg.kernel, now)?;
        let mut seed = Seed::default();
        if e.ssthresh != 0 && !cfg.no_ssthresh_metrics_save {
            seed.ssthresh = Some(e.ssthresh);
        }
        if e.reordering != 0 && e.reordering != o.reordering {
            seed.reordering = Some(e.reordering);
            seed.disable_fack = cfg.kernel == MetricsKernel::Linux24;
        }
        match cfg.kernel {
            MetricsKernel::Linux => {
                // "Set RTO like tcp_rtt_estimator(), but from cached RTT."
                if e.rtt8 > o.srtt8 {
                    let rtt = (e.rtt8 >> 3) as Time;
                    seed.rtt = RttSeed::FirstRto(rtt + (2 * rtt).max(o.min_rto));
                }
            }
            MetricsKernel::Linux24 => seed.rtt = Self::seed_rtt_24(&e, o, &mut seed),
        }
        Some(seed)
    }

    /// Linux 2.4's RTT part of `tcp_init_metrics`, and `tcp_init_cwnd` when it keeps them.
    fn seed_rtt_24(e: &DestinationMetrics, o: &Opening, seed: &mut Seed) -> RttSeed {
        let timeout = TIMEOUT_INIT_24 as i64;
        let reset = || {
            if !o.timestamps && o.srtt8 != 0 {
                RttSeed::Forget { timeout: TIMEOUT_INIT_24 }
            } else {
                RttSeed::Keep
            }
        };
        if e.rtt8 == 0 || (o.srtt8 == 0 && e.rtt8 < timeout << 3) {
            return reset();
        }
        let srtt8 = o.srtt8.max(e.rtt8);
        let rttvar4 = if e.rttvar4 > o.mdev4 { e.rttvar4.max(o.min_rto as i64) } else { o.rttvar4 };
        let rto = (srtt8 >> 3) + rttvar4;
        if rto < timeout && !o.timestamps {
            return reset();
        }
        // tcp_init_cwnd (RFC 2414's numbers): 2 above an MSS of 1460; else 3 (MSS > 1095) or
        // 4, but 2 on a path slower than 20 ms without a cached ssthresh, and at most ssthresh.
        let ssthresh = seed.ssthresh.unwrap_or(INFINITE_SSTHRESH);
        let srtt = (srtt8 >> 3) as Time;
        let slow_unknown_path = ssthresh >= 0xFFFF && srtt > INIT_CWND_FAST_RTT_24;
        seed.cwnd = Some(if o.mss_bytes > 1460 || slow_unknown_path {
            2
        } else {
            (if o.mss_bytes > 1095 { 3 } else { 4 }).min(ssthresh)
        });
        RttSeed::Raise { srtt8: e.rtt8, mdev4: e.rttvar4 }
    }
}

#[cfg(test)]
mod tests {
    //! The rules of `tcp_update_metrics` and `tcp_init_metrics`, each from the kernel source
    //! named in the module's comment, on hand-made connection states.
    use super::*;

    const MS: i64 = PS_PER_MS as i64;

    fn cfg(kernel: MetricsKernel) -> MetricsConfig {
        MetricsConfig { kernel, no_metrics_save: false, no_ssthresh_metrics_save: false }
    }

    /// A connection that ended in congestion avoidance, Open, after a loss: 100 ms, cwnd 300,
    /// ssthresh 200, reordering learnt to 12.
    fn avoiding() -> Closing {
        Closing {
            backed_off: false,
            srtt8: 800 * MS,
            mdev4: 40 * MS,
            cwnd: 300,
            ssthresh: 200,
            open: true,
            reordering: 12,
            default_reordering: 3,
        }
    }

    fn opening() -> Opening {
        Opening {
            srtt8: 0,
            mdev4: 0,
            rttvar4: 0,
            timestamps: true,
            reordering: 3,
            mss_bytes: 1448,
            min_rto: 200 * PS_PER_MS,
        }
    }

    #[test]
    fn congestion_avoidance_saves_half_the_window_or_ssthresh() {
        for kernel in [MetricsKernel::Linux24, MetricsKernel::Linux] {
            let mut cache = MetricsCache::default();
            cache.update(0, 1, &cfg(kernel), &avoiding(), 0);
            let e = cache.get(0, 1, kernel, 0).unwrap();
            assert_eq!(e.ssthresh, 200, "max(cwnd >> 1 = 150, ssthresh 200)");
            assert_eq!(e.rtt8, 800 * MS, "the first RTT is stored as it is");
            assert_eq!(e.rttvar4, 400 * MS, "|0 - srtt8| >> 1 = 400 ms, above mdev");
            let wide = Closing { cwnd: 500, ..avoiding() };
            cache.update(0, 1, &cfg(kernel), &wide, 0);
            assert_eq!(cache.get(0, 1, kernel, 0).unwrap().ssthresh, 250, "cwnd 500 >> 1");
            // The reordering degree: 2.4 saves it at every close, 3.6+ not from Open
            // congestion avoidance.
            let reordering = cache.get(0, 1, kernel, 0).unwrap().reordering;
            assert_eq!(reordering, if kernel == MetricsKernel::Linux24 { 12 } else { 0 });
        }
    }

    #[test]
    fn the_initial_slow_start_and_recovery_only_raise_a_saved_ssthresh() {
        for kernel in [MetricsKernel::Linux24, MetricsKernel::Linux] {
            let mut cache = MetricsCache::default();
            let slow_start = Closing { ssthresh: INFINITE_SSTHRESH, cwnd: 64, ..avoiding() };
            cache.update(0, 1, &cfg(kernel), &slow_start, 0);
            assert_eq!(cache.get(0, 1, kernel, 0).unwrap().ssthresh, 0, "nothing saved before, nothing now");
            let recovery = Closing { open: false, ssthresh: 90, cwnd: 80, ..avoiding() };
            cache.update(0, 1, &cfg(kernel), &recovery, 0);
            assert_eq!(cache.get(0, 1, kernel, 0).unwrap().ssthresh, 0, "recovery does not save a first one");
            assert_eq!(cache.get(0, 1, kernel, 0).unwrap().reordering, 12, "saved outside Open avoidance");
            cache.update(0, 1, &cfg(kernel), &Closing { cwnd: 100, ssthresh: 60, ..avoiding() }, 0);
            assert_eq!(cache.get(0, 1, kernel, 0).unwrap().ssthresh, 60);
            cache.update(0, 1, &cfg(kernel), &recovery, 0);
            assert_eq!(cache.get(0, 1, kernel, 0).unwrap().ssthresh, 90, "recovery raises it to its ssthresh");
            cache.update(0, 1, &cfg(kernel), &Closing { cwnd: 400, ..slow_start }, 0);
            assert_eq!(cache.get(0, 1, kernel, 0).unwrap().ssthresh, 200, "slow start raises it to cwnd >> 1");
        }
    }

    #[test]
    fn rtt_rises_at_once_and_falls_by_an_eighth() {
        let kernel = MetricsKernel::Linux;
        let mut cache = MetricsCache::default();
        cache.update(0, 1, &cfg(kernel), &avoiding(), 0);
        let faster = Closing { srtt8: 400 * MS, mdev4: 10 * MS, ..avoiding() };
        cache.update(0, 1, &cfg(kernel), &faster, 0);
        let e = cache.get(0, 1, kernel, 0).unwrap();
        assert_eq!(e.rtt8, 800 * MS - ((400 * MS) >> 3), "m = 400 ms: rtt8 - m / 8");
        // Deviation: m >> 1 = 200 ms below the cached 400 ms: a quarter of the way down.
        assert_eq!(e.rttvar4, 400 * MS - ((400 * MS - 200 * MS) >> 2));
        let slower = Closing { srtt8: 1600 * MS, ..avoiding() };
        cache.update(0, 1, &cfg(kernel), &slower, 0);
        assert_eq!(cache.get(0, 1, kernel, 0).unwrap().rtt8, 1600 * MS, "a larger RTT replaces the cached one");
        // A connection that backed off clears the RTT and saves nothing else.
        cache.update(0, 1, &cfg(kernel), &Closing { backed_off: true, cwnd: 2000, ..avoiding() }, 0);
        let e = cache.get(0, 1, kernel, 0).unwrap();
        assert_eq!((e.rtt8, e.ssthresh), (0, 200));
    }

    #[test]
    fn switches_and_staleness() {
        let off = MetricsConfig { no_metrics_save: true, ..cfg(MetricsKernel::Linux) };
        let mut cache = MetricsCache::default();
        cache.update(0, 1, &off, &avoiding(), 0);
        assert!(cache.get(0, 1, MetricsKernel::Linux, 0).is_none(), "tcp_no_metrics_save = 1 saves nothing");
        let no_ssthresh = MetricsConfig { no_ssthresh_metrics_save: true, ..cfg(MetricsKernel::Linux) };
        cache.update(0, 1, &no_ssthresh, &avoiding(), 0);
        assert_eq!(cache.get(0, 1, MetricsKernel::Linux, 0).unwrap().ssthresh, 0);
        cache.update(0, 1, &cfg(MetricsKernel::Linux), &avoiding(), 0);
        let seed = cache.seed(0, 1, &no_ssthresh, &opening(), 0).unwrap();
        assert_eq!(seed.ssthresh, None, "nor is a saved one read");
        assert!(cache.get(2, 1, MetricsKernel::Linux, 0).is_none(), "per sending host");
        // Linux 3.6+: an hour without an update and the entry is gone; 2.4's route cache
        // entry stays (its expiry is not modelled).
        let later = METRICS_TIMEOUT + 1;
        assert!(cache.seed(0, 1, &cfg(MetricsKernel::Linux), &opening(), later).is_none());
        let mut old = MetricsCache::default();
        old.update(0, 1, &cfg(MetricsKernel::Linux24), &avoiding(), 0);
        assert!(old.seed(0, 1, &cfg(MetricsKernel::Linux24), &opening(), later).is_some());
    }

    #[test]
    fn linux_seeds_the_first_rto_only() {
        let mut cache = MetricsCache::default();
        cache.update(0, 1, &cfg(MetricsKernel::Linux), &avoiding(), 0);
        let seed = cache.seed(0, 1, &cfg(MetricsKernel::Linux), &opening(), 0).unwrap();
        // RTT 100 ms: 100 + max(200, 200) ms.
        assert_eq!(seed.rtt, RttSeed::FirstRto(300 * PS_PER_MS));
        assert_eq!((seed.ssthresh, seed.reordering, seed.disable_fack, seed.cwnd), (Some(200), None, false, None));
        // A SYN sample above the cached RTT leaves the RTO alone.
        let syn = Opening { srtt8: 900 * MS, ..opening() };
        assert_eq!(cache.seed(0, 1, &cfg(MetricsKernel::Linux), &syn, 0).unwrap().rtt, RttSeed::Keep);
    }

    #[test]
    fn linux24_keeps_the_rtt_only_with_a_syn_sample_and_a_safe_rto() {
        let c = cfg(MetricsKernel::Linux24);
        let mut cache = MetricsCache::default();
        cache.update(0, 1, &c, &Closing { open: false, ..avoiding() }, 0);
        cache.update(0, 1, &c, &avoiding(), 0);
        // No SYN sample and a cached RTT under 3 s: nothing of the RTT is kept.
        let seed = cache.seed(0, 1, &c, &opening(), 0).unwrap();
        assert_eq!(seed.rtt, RttSeed::Keep);
        assert_eq!((seed.ssthresh, seed.reordering, seed.disable_fack), (Some(200), Some(12), true));
        // A SYN sample of 80 ms with timestamps: SRTT and mdev raised, cwnd from tcp_init_cwnd
        // (MSS 1448 > 1095: 3, at most the cached ssthresh).
        let syn = Opening { srtt8: 640 * MS, mdev4: 160 * MS, rttvar4: 200 * MS, ..opening() };
        let seed = cache.seed(0, 1, &c, &syn, 0).unwrap();
        // The deviation: 400 ms from the first close, then 40 ms a quarter of the way: 310 ms.
        assert_eq!(seed.rtt, RttSeed::Raise { srtt8: 800 * MS, mdev4: 310 * MS });
        assert_eq!(seed.cwnd, Some(3));
        // Without timestamps the RTO (100 + 310 ms) is under TCP_TIMEOUT_INIT: reset to 3 s.
        let bare = Opening { timestamps: false, ..syn };
        let seed = cache.seed(0, 1, &c, &bare, 0).unwrap();
        assert_eq!(seed.rtt, RttSeed::Forget { timeout: 3 * PS_PER_S });
        assert_eq!(seed.cwnd, None, "tcp_init_cwnd only when the RTT was kept");
    }
}
