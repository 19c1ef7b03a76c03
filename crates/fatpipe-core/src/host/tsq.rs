//! TCP Small Queues (Linux `net/ipv4/tcp_output.c` `tcp_small_queue_check`, `tcp_wfree`,
//! `tcp_tsq_handler`): a socket keeps at most about 1 ms of its pacing rate below TCP -- in
//! the qdisc and the driver's transmit ring, from the moment TCP hands a packet down until the
//! NIC reports it sent -- and holds the rest in its own write queue. Without it, a sender
//! whose window exceeds what its interface can send queues the excess in txqueuelen (and is
//! refused there: local congestion, CWR); with it the host queue stays short and the window
//! waits in TCP, where it costs no one else latency.
//!
//! The limit (Linux 6.x): max(2 x the skb's truesize, `sk_pacing_rate >> sk_pacing_shift`),
//! and for a socket Linux does not pace (`sk_pacing_status == SK_PACING_NONE`) at most
//! `net.ipv4.tcp_limit_output_bytes`. The bytes below TCP (`sk_wmem_alloc`) count each skb's
//! truesize: its payload and the kernel's bookkeeping. Above the limit TCP stops
//! (`TSQ_THROTTLED`) unless its retransmission queue holds at most one skb (so a flow always
//! has something in flight), and `tcp_wfree` wakes it when the NIC frees a packet: it sends
//! again as soon as what is still below has fallen to the limit.
//!
//! Here the host's interface is its first link, first in first out (its queue and, with one,
//! its transmit ring, `net/queue/tx_ring.rs`: both count, as both hold the socket's
//! memory), so a packet's transmit completion is the end of its serialization, known when it
//! is handed down: the link's tail then (`Link::tail_end`, which the simulation passes with
//! every grant of the interface budget) plus its own serialization. The wake-up rides the
//! pacing timer: the sender is held until the completion that brings it to the limit. Not
//! modelled: the delay of the NIC's completion interrupt (the tx ring does not model it
//! either), BQL (which moves packets between qdisc and ring without changing a FIFO
//! interface's departures; it matters to a qdisc that reorders), `tcp_tx_delay`. A
//! retransmission may have twice the limit below it (`tcp_xmit_retransmit_queue`'s factor 1,
//! `Tcb::tsq_holds`), on the Linux stack, which chooses the segment before the check.

use crate::time::{transmission_time, Time};
use std::collections::VecDeque;

/// The kernel's bookkeeping in an skb's truesize besides its payload, bytes: `struct sk_buff`
/// (232 bytes, 256 cache-aligned) and `struct skb_shared_info` (320) on x86-64
/// (`SKB_TRUESIZE`), and the linear head TCP allocates for headers (`tcp_stream_alloc_skb`:
/// MAX_TCP_HEADER, 320, with kmalloc's rounding 704). An estimate of a 6.x x86-64 build;
/// it matters only while 2 x truesize exceeds a millisecond of the rate (below ~1 Gb/s).
pub const SKB_OVERHEAD_BYTES: u64 = 256 + 320 + 704;

/// The TSQ limit, bytes (`tcp_small_queue_check`, factor 0): `rate_bps` is the socket's
/// `sk_pacing_rate` in payload bits per second (None: not set yet, Linux's ~0), `paced`
/// whether Linux paces the socket (fq, BBR, internal pacing), `skb_truesize` the truesize
/// of the skb about to be sent.
pub fn limit_bytes(rate_bps: Option<u64>, pacing_shift: u32, skb_truesize: u64, paced: bool, limit_output: u64) -> u64 {
    let per_interval = rate_bps.map_or(u64::MAX, |r| r / 8).checked_shr(pacing_shift).unwrap_or(0);
    let limit = (2 * skb_truesize).max(per_interval);
    if paced {
        limit
    } else {
        limit.min(limit_output)
    }
}

/// A socket's bytes below TCP and when the NIC frees them.
#[derive(Clone, Debug, Default)]
pub struct Tsq {
    /// The interface: its rate and the framing each packet adds on the line.
    iface_rate_bps: u64,
    iface_framing_bytes: u32,
    /// When the last packet handed to the interface finishes serializing.
    tail: Time,
    /// The skbs below TCP, oldest first: (transmit completion, truesize).
    below: VecDeque<(Time, u64)>,
    /// Their truesize (Linux `sk_wmem_alloc`).
    below_bytes: u64,
    /// The skb being handed down: when it opened and how many more segments it takes.
    skb_at: Time,
    skb_segs_left: u32,
    /// Payload bytes of the newest skb.
    last_skb_payload: u64,
    /// Times TCP stopped at the limit.
    pub throttles: u64,
}

impl Tsq {
    pub fn new() -> Self {
        Tsq { below: VecDeque::with_capacity(64), ..Tsq::default() }
    }

    /// The interface as it is now (the simulation, before every call into the sender).
    #[inline]
    pub fn set_interface(&mut self, tail: Time, rate_bps: u64, framing_bytes: u32) {
        self.tail = tail;
        self.iface_rate_bps = rate_bps;
        self.iface_framing_bytes = framing_bytes;
    }

    /// Whether a segment handed out at `now` joins the skb being built (never held: TSQ
    /// checks once per skb).
    #[inline]
    pub fn in_skb(&self, now: Time) -> bool {
        self.skb_segs_left > 0 && self.skb_at == now
    }

    /// The NIC has freed what it finished sending by `now` (`tcp_wfree`).
    fn complete(&mut self, now: Time) {
        while let Some(&(done, bytes)) = self.below.front() {
            if done > now {
                break;
            }
            self.below.pop_front();
            self.below_bytes -= bytes;
        }
    }

    /// Bytes below TCP at `now`.
    pub fn below_bytes(&mut self, now: Time) -> u64 {
        self.complete(now);
        self.below_bytes
    }

    /// Before a new skb at `now`: None if it may go, else when the NIC will have freed
    /// enough for it (the sender waits until then). `outstanding_bytes` is what is sent and
    /// not acknowledged: at most one skb of it, and TCP sends anyway.
    pub fn hold(&mut self, now: Time, limit: u64, outstanding_bytes: u64) -> Option<Time> {
        self.complete(now);
        if self.below_bytes <= limit || outstanding_bytes <= self.last_skb_payload {
            return None;
        }
        self.throttles += 1;
        let mut left = self.below_bytes;
        self.below.iter().find_map(|&(done, bytes)| {
            left -= bytes;
            (left <= limit).then_some(done)
        })
    }

    /// A segment of `ip_bytes` (`payload` bytes) handed to the interface at `now`; a new skb
    /// takes up to `skb_segs` segments (TSO autosizing, or 1).
    pub fn on_segment(&mut self, now: Time, ip_bytes: u32, payload: u32, skb_segs: u32) {
        let start = self.tail.max(now);
        let wire = u64::from(ip_bytes + self.iface_framing_bytes);
        self.tail = start + transmission_time(wire, self.iface_rate_bps.max(1));
        if self.in_skb(now) {
            self.skb_segs_left -= 1;
            self.last_skb_payload += u64::from(payload);
            let last = self.below.back_mut().expect("an open skb is below");
            last.0 = self.tail;
            last.1 += u64::from(payload);
            self.below_bytes += u64::from(payload);
        } else {
            self.skb_at = now;
            self.skb_segs_left = skb_segs.max(1) - 1;
            self.last_skb_payload = u64::from(payload);
            let truesize = u64::from(payload) + SKB_OVERHEAD_BYTES;
            self.below.push_back((self.tail, truesize));
            self.below_bytes += truesize;
        }
    }

    /// The send pass is over: the next segment opens a new skb.
    pub fn close_skb(&mut self) {
        self.skb_segs_left = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{PS_PER_MS, PS_PER_US};

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_limit_is_a_millisecond_of_the_pacing_rate_or_two_skbs() {
        let skb = 65_160 + SKB_OVERHEAD_BYTES; // 45 segments of 1448
                                               // 10 Gb/s: 1.25 GB/s >> 10 = 1,220,703 bytes.
        assert_eq!(limit_bytes(Some(10_000_000_000), 10, skb, true, 4 * MIB), 1_220_703);
        // 100 Mb/s: 12,207 bytes, less than two 64 KB skbs.
        assert_eq!(limit_bytes(Some(100_000_000), 10, skb, true, 4 * MIB), 2 * skb);
        // Unpaced sockets are capped by tcp_limit_output_bytes; paced ones are not.
        assert_eq!(limit_bytes(Some(100_000_000_000), 10, skb, false, 4 * MIB), 4 * MIB);
        assert_eq!(limit_bytes(Some(100_000_000_000), 10, skb, true, 4 * MIB), 12_207_031);
        // Before any rate: ~0 >> 10, the cap (unpaced) or unlimited (paced).
        assert_eq!(limit_bytes(None, 10, skb, false, MIB), MIB);
        assert_eq!(limit_bytes(None, 10, skb, true, MIB), u64::MAX >> 10);
        // sk_pacing_shift 8 (Wi-Fi drivers): 4 ms of the rate.
        assert_eq!(limit_bytes(Some(10_000_000_000), 8, skb, true, 4 * MIB), 4_882_812);
    }

    #[test]
    fn bytes_below_leave_as_the_interface_serializes_them_and_the_wakeup_is_the_freeing_completion() {
        // A 1 Gb/s interface, 38 bytes of framing: a 1500-byte packet takes 12.304 us.
        let tx = transmission_time(1538, 1_000_000_000);
        assert_eq!(tx, 12_304 * PS_PER_US / 1000);
        let mut t = Tsq::new();
        t.set_interface(0, 1_000_000_000, 38);
        // Ten single-segment skbs at time 0, the line idle.
        for _ in 0..10 {
            t.close_skb();
            t.on_segment(0, 1500, 1448, 1);
        }
        let truesize = 1448 + SKB_OVERHEAD_BYTES;
        assert_eq!(t.below_bytes(0), 10 * truesize);
        assert_eq!(t.below_bytes(3 * tx), 7 * truesize, "three sent, three freed");
        // A limit of four skbs: held until three more have left, at the sixth's completion.
        assert_eq!(t.hold(3 * tx, 4 * truesize, 100_000), Some(6 * tx));
        assert_eq!(t.throttles, 1);
        // With one skb outstanding at most, TCP sends regardless.
        assert_eq!(t.hold(3 * tx, 4 * truesize, 1448), None);
        // Below the limit: no hold.
        assert_eq!(t.hold(9 * tx, 4 * truesize, 100_000), None);
    }

    #[test]
    fn a_tso_skb_counts_once_and_completes_with_its_last_segment() {
        let mut t = Tsq::new();
        // Behind 1 ms of others' packets on a 10 Gb/s interface.
        t.set_interface(PS_PER_MS, 10_000_000_000, 38);
        for _ in 0..4 {
            t.on_segment(0, 1500, 1448, 4);
        }
        assert!(!t.in_skb(0), "four of four segments");
        let end = PS_PER_MS + 4 * transmission_time(1538, 10_000_000_000);
        assert_eq!(t.below.len(), 1);
        assert_eq!(t.below[0], (end, 4 * 1448 + SKB_OVERHEAD_BYTES));
        assert_eq!(t.below_bytes(end - 1), 4 * 1448 + SKB_OVERHEAD_BYTES);
        assert_eq!(t.below_bytes(end), 0);
    }
}
