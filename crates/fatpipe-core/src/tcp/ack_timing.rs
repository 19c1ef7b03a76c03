//! Per-ACK RTT samples for congestion controls that time every segment themselves, on the
//! RFC stack without timestamps.
//!
//! The RFC stack times one segment per round trip for its retransmission timer (RFC 6298,
//! Karn), as ns-2's `TcpAgent` does. ns-2's Vegas (`tcp-vegas.cc`, `VegasTcpAgent::recv`)
//! does not rely on that: it keeps its own send time and transmission count per packet
//! (`v_sendtime_`, `v_transmits_`) and on every new ACK takes `now - v_sendtime_[ack]`, the
//! send time of the newest packet acknowledged, provided it was sent once. Vegas's round
//! average and base RTT are built from those samples; with one sample per round trip its
//! round has a single sample and the algorithm starves (document 003's Vegas at 1 Gb/s).
//!
//! Vegas's base RTT (`v_baseRTT_`) is the smallest of these samples, so it is kept here, over
//! data segments only. ns-2 records the SYN's send time too, but skips a send time of exactly
//! 0.0 (`sendTime != 0.`), which is the SYN of a flow started at time 0, the usual set-up
//! (document 003's): its base RTT comes from full-size data packets. A base taken from the
//! 40-byte SYN would be shorter than any data packet's RTT by their serialization, which
//! Vegas reads as queueing (cwnd x 9.6 us / 25 ms exceeds alpha = 1 above 2,600 segments on
//! document 003's 1 Gb/s path) and so stops short of the path's window.
//!
//! Records are kept in sequence order in a deque that keeps its capacity: each segment is
//! pushed once when first sent, marked in place (binary search) when resent, and popped
//! once when acknowledged, so the cost per ACK is amortized O(1) whatever the window.

use crate::time::Time;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
struct Sent {
    end: u64,
    sent_ps: Time,
    retransmitted: bool,
}

#[derive(Debug, Default)]
pub struct AckTiming {
    records: VecDeque<Sent>,
    /// The smallest RTT sampled so far (ns-2's `v_baseRTT_`).
    pub min_rtt_ps: Option<Time>,
}

impl AckTiming {
    /// The segment `[seq, end)` leaves now, for the first time or again.
    pub fn on_send(&mut self, now: Time, seq: u64, end: u64) {
        match self.records.back() {
            Some(last) if seq < last.end => {
                let i = self.records.partition_point(|r| r.end <= seq);
                if let Some(r) = self.records.get_mut(i) {
                    r.retransmitted = true;
                }
            }
            _ => self.records.push_back(Sent { end, sent_ps: now, retransmitted: false }),
        }
    }

    /// The cumulative ACK reached `ack` at `now`: the RTT of the newest segment it
    /// acknowledges whole, if that segment was sent only once (ns-2's `transmits == 1`).
    pub fn on_ack(&mut self, now: Time, ack: u64) -> Option<Time> {
        let mut newest = None;
        while let Some(r) = self.records.front() {
            if r.end > ack {
                break;
            }
            newest = self.records.pop_front();
        }
        let rtt = newest.filter(|r| !r.retransmitted && r.end == ack).map(|r| now - r.sent_ps)?;
        self.min_rtt_ps = Some(self.min_rtt_ps.map_or(rtt, |m| m.min(rtt)));
        Some(rtt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_new_ack_times_the_newest_segment_it_covers() {
        let mut t = AckTiming::default();
        for k in 0..4u64 {
            t.on_send(10 * k, 1000 * k, 1000 * (k + 1));
        }
        // A delayed ACK of two segments: the second one's send time, as ns-2's v_sendtime_[ack].
        assert_eq!(t.on_ack(100, 2000), Some(90));
        assert_eq!(t.on_ack(105, 3000), Some(85));
        // An ACK inside a segment times nothing (the segment is not acknowledged whole).
        assert_eq!(t.on_ack(200, 3500), None);
        assert_eq!(t.min_rtt_ps, Some(85));
    }

    #[test]
    fn a_resent_segment_gives_no_sample_as_karn_and_ns2_require() {
        let mut t = AckTiming::default();
        for k in 0..3u64 {
            t.on_send(10 * k, 1000 * k, 1000 * (k + 1));
        }
        t.on_send(500, 1000, 2000); // the second segment again
        assert_eq!(t.on_ack(100, 2000), None);
        assert_eq!(t.on_ack(100, 3000), Some(80));
    }
}
