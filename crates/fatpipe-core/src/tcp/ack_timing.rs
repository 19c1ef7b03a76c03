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

    /// The cumulative ACK reached `ack`: the send time of the newest segment it acknowledges
    /// whole, if that segment was sent only once (ns-2's `transmits == 1`).
    pub fn on_ack(&mut self, ack: u64) -> Option<Time> {
        let mut newest = None;
        while let Some(r) = self.records.front() {
            if r.end > ack {
                break;
            }
            newest = self.records.pop_front();
        }
        newest.filter(|r| !r.retransmitted && r.end == ack).map(|r| r.sent_ps)
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
        assert_eq!(t.on_ack(2000), Some(10));
        assert_eq!(t.on_ack(3000), Some(20));
        // An ACK inside a segment times nothing (the segment is not acknowledged whole).
        assert_eq!(t.on_ack(3500), None);
    }

    #[test]
    fn a_resent_segment_gives_no_sample_as_karn_and_ns2_require() {
        let mut t = AckTiming::default();
        for k in 0..3u64 {
            t.on_send(10 * k, 1000 * k, 1000 * (k + 1));
        }
        t.on_send(500, 1000, 2000); // the second segment again
        assert_eq!(t.on_ack(2000), None);
        assert_eq!(t.on_ack(3000), Some(20));
    }
}
