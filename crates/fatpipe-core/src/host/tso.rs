//! TSO/GSO as Linux sizes it (`net/ipv4/tcp_output.c` `tcp_tso_autosize`, `tcp_tso_segs`):
//! TCP hands the interface one super-segment of several MSS at a time, which the NIC (TSO)
//! or the stack just above the driver (GSO) cuts into MTU-sized packets that leave back to
//! back at line rate. Its size is about 1 ms of the pacing rate (`sk_pacing_rate >>
//! sk_pacing_shift`, shift 10), plus an allowance for near peers (`gso_max_size >> (min_rtt
//! >> tcp_tso_rtt_log)`: halved for every 512 us of minimum RTT, so nothing at WAN RTTs), at
//! most the socket's `sk_gso_max_size` and at least `tcp_min_tso_segs`.
//!
//! In the simulation a super-segment is a train: the segments a send pass hands out together
//! without a pacing check between them, the pacing gap following the whole train
//! (`tcp_update_skb_after_send` once per skb). Every segment of the train is still its own
//! packet on the links. Not modelled: `tcp_tso_should_defer` (waiting for a fuller
//! super-segment when the window allows only part of one), `sk_gso_max_segs` (65,535 on
//! common NICs, never the bound at MSS 1448).

use super::HostConfig;
use crate::time::{Time, PS_PER_US};

/// Linux `MAX_TCP_HEADER` on x86-64 distribution kernels: L1_CACHE_ALIGN(128 + MAX_HEADER),
/// MAX_HEADER = LL_MAX_HEADER (128) + 48 for tunnels = 176, so 304 rounded up to 64 bytes.
/// `sk_setup_caps` subtracts it and one more byte from the device's `gso_max_size`.
pub const MAX_TCP_HEADER_BYTES: u32 = 320;

/// The socket's `sk_gso_max_size`: the device's less `MAX_TCP_HEADER` + 1 (`sk_setup_caps`);
/// 65,215 bytes from the legacy 64 KiB, 45 segments of 1448 bytes.
pub fn sk_gso_max_size(host: &HostConfig) -> u64 {
    u64::from(host.gso_max_size_bytes.saturating_sub(MAX_TCP_HEADER_BYTES + 1))
}

/// Segments per super-segment (`tcp_tso_autosize`), at a pacing rate of `pacing_rate_bps`
/// payload bits per second (None: `sk_pacing_rate` still ~0, unlimited) and a minimum RTT
/// (None: no sample yet, Linux's ~0U, no near-peer allowance).
pub fn autosize_segs(host: &HostConfig, pacing_rate_bps: Option<u64>, min_rtt: Option<Time>, mss_bytes: u32) -> u32 {
    let gso_max = sk_gso_max_size(host);
    let mut bytes = pacing_rate_bps.map_or(u64::MAX, |r| (r / 8).checked_shr(host.pacing_shift).unwrap_or(0));
    // tcp_min_rtt is in microseconds; the allowance applies while the shift stays below 32.
    if let Some(r) = min_rtt.and_then(|rtt| (rtt / PS_PER_US).checked_shr(host.tso_rtt_log)).filter(|&r| r < 32) {
        bytes = bytes.saturating_add(gso_max >> r);
    }
    let segs = bytes.min(gso_max) / u64::from(mss_bytes.max(1));
    (segs as u32).max(host.min_tso_segs)
}

/// The super-segment being handed out: opened by the first segment of a send pass's train,
/// closed when it holds `autosize_segs` segments or the pass ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct Train {
    /// When it opened (trains never span instants).
    pub at: Time,
    /// Segments it may still take.
    pub segs_left: u32,
    /// Payload bytes (or IP bytes, for a sender that paces by the packet) in it so far.
    pub bytes: u64,
    /// Its length as a qdisc counts it (`fq.rs`: frames, headers of every segment).
    pub wire_bytes: u64,
    /// The earliest departure in force before it (Linux `prior_wstamp`).
    pub prior: Time,
    /// fq's `time_next_packet` for the flow before it.
    pub fq_prior: Option<Time>,
}

impl Train {
    /// Whether a segment handed out at `now` joins this train.
    pub fn open(&self, now: Time) -> bool {
        self.segs_left > 0 && self.at == now
    }

    /// Opens a train of up to `segs` segments at `now`, the earliest departures in force
    /// being `prior` (TCP's) and `fq_prior` (fq's).
    pub fn start(&mut self, now: Time, segs: u32, prior: Time, fq_prior: Option<Time>) {
        *self = Train { at: now, segs_left: segs.max(1), bytes: 0, wire_bytes: 0, prior, fq_prior };
    }

    /// A segment of `bytes` (`wire_bytes` as a qdisc counts it) joins.
    pub fn add(&mut self, bytes: u64, wire_bytes: u64) {
        self.segs_left -= 1;
        self.bytes += bytes;
        self.wire_bytes += wire_bytes;
    }

    pub fn close(&mut self) {
        self.segs_left = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    fn host() -> HostConfig {
        HostConfig { tso: true, ..crate::host::pacing::tests::host() }
    }

    #[test]
    fn legacy_gso_max_size_holds_45_segments_of_1448_bytes() {
        assert_eq!(sk_gso_max_size(&host()), 65_215);
        assert_eq!(autosize_segs(&host(), None, None, 1448), 45);
    }

    #[test]
    fn a_super_segment_is_about_a_millisecond_of_the_pacing_rate() {
        let wan = Some(100 * PS_PER_MS);
        // 100 Mb/s: 12,500,000 B/s >> 10 = 12,207 bytes = 8 segments.
        assert_eq!(autosize_segs(&host(), Some(100_000_000), wan, 1448), 8);
        // 1 Gb/s: 122,070 bytes, capped at sk_gso_max_size.
        assert_eq!(autosize_segs(&host(), Some(1_000_000_000), wan, 1448), 45);
        // 10 Mb/s: 1,220 bytes is no whole segment; tcp_min_tso_segs.
        assert_eq!(autosize_segs(&host(), Some(10_000_000), wan, 1448), 2);
    }

    #[test]
    fn near_peers_get_an_allowance_halving_every_512_us() {
        // 1 ms: 1000 >> 9 = 1, 65,215 >> 1 = 32,607 more bytes: 12,207 + 32,607 = 44,814.
        assert_eq!(autosize_segs(&host(), Some(100_000_000), Some(PS_PER_MS), 1448), 30);
        // 100 us: r = 0, the whole 64 KB.
        assert_eq!(autosize_segs(&host(), Some(100_000_000), Some(PS_PER_MS / 10), 1448), 45);
    }
}
