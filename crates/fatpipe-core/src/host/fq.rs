//! The fq qdisc on the sending host's interface, as it treats one TCP flow (Linux
//! `net/sched/sch_fq.c` `fq_dequeue`).
//!
//! With fq on the interface, TCP sets `sk_pacing_status` to `SK_PACING_FQ`: it computes
//! departure times (EDT, `skb->tstamp`) as with its internal pacing (`pacing.rs`), and fq
//! holds each packet until then. fq's own `maxrate` (`flow_max_rate`) adds a second bound
//! per flow: after a packet (a TSO super-segment counts whole) of `plen` bytes the flow's
//! next may leave `plen / maxrate` later, less up to half that if fq dequeued it late; a
//! packet leaves at the later of its EDT and that time.
//!
//! `plen` is `qdisc_pkt_len`: the frame as the qdisc sees it, IP packet plus the 14-byte
//! Ethernet header, each segment of a super-segment counted with its own headers
//! (`qdisc_pkt_len_init`).
//!
//! The round robin between flows sharing the interface (`quantum`, `initial_quantum`, new
//! and old flows), `flow_limit` and `horizon` are `fq_sched.rs`'s, which no link runs yet
//! (the links serve first in, first out): each flow here has fq's pacing and maxrate as if it
//! had the interface to itself (TCP Small Queues, `tsq.rs`, keep fq's per-flow queue short).
//! Not modelled: `ce_threshold`, `low_rate_threshold`.

use super::pacing::after_gap;
use crate::time::{transmission_time, Time, PS_PER_S};

/// Ethernet header bytes in fq's packet length (ETH_HLEN; no FCS, preamble or gap).
pub const ETH_HEADER_BYTES: u64 = 14;

/// fq's `time_next_packet` for a flow after a packet of `plen_bytes` dequeued at `now`,
/// the previous being `prior` (None: the flow's first). fq clamps a gap to 1 s.
pub fn next_packet(prior: Option<Time>, now: Time, plen_bytes: u64, maxrate_bps: u64) -> Time {
    let gap = transmission_time(plen_bytes, maxrate_bps.max(1)).min(PS_PER_S);
    match prior {
        Some(prior) => after_gap(prior, now, gap),
        None => now + gap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_US;

    #[test]
    fn maxrate_spaces_frames_by_their_length() {
        // 1,514-byte frames at 1 Gb/s: 12.112 us apart.
        let gap = 12_112_000;
        assert_eq!(next_packet(None, 0, 1514, 1_000_000_000), gap);
        assert_eq!(next_packet(Some(gap), gap, 1514, 1_000_000_000), 2 * gap);
        // Dequeued 2 us late: 2 us forgiven.
        assert_eq!(next_packet(Some(gap), gap + 2 * PS_PER_US, 1514, 1_000_000_000), 2 * gap);
        // A gap longer than a second is cut to one.
        assert_eq!(next_packet(None, 0, 1514, 1_000), PS_PER_S);
    }
}
