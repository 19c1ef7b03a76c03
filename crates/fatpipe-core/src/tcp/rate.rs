//! Delivery-rate sampling, after Linux `tcp_rate.c` (Cheng, Cardwell et al.,
//! draft-cheng-iccrg-delivery-rate-estimation): every transmission remembers how much had been
//! delivered when it left and when; when it is delivered (cumulatively ACKed or SACKed), the
//! bytes delivered since then over the time elapsed is a sample of the delivery rate.
//!
//! Records are kept in sequence order in a deque that keeps its capacity: each segment is
//! recorded once, updated in place when retransmitted, and delivered once, so the cost per ACK
//! is amortized O(1) whatever the window.

use crate::time::{Time, PS_PER_S};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
struct TxRecord {
    seq: u64,
    end: u64,
    /// Connection's delivered bytes when this segment was (last) sent.
    delivered: u64,
    /// When that delivered count was reached.
    delivered_time: Time,
    /// Send time of the first segment of the flight this one belongs to.
    first_sent_time: Time,
    sent_time: Time,
    is_app_limited: bool,
    /// Already counted as delivered (SACKed before the cumulative ACK reached it).
    delivered_done: bool,
    /// Bytes in flight when this segment left, itself included (BBRv3's `tx.in_flight`,
    /// Google's v3 tcp_output.c `tcp_set_tx_in_flight`).
    tx_in_flight: u64,
    /// The connection's lost and CE-echoed delivered bytes when it left (v3 `tx.lost`,
    /// `tx.delivered_ce`).
    lost: u64,
    delivered_ce: u64,
}

/// One rate sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    pub delivery_rate_bps: Option<u64>,
    pub interval_ps: Time,
    pub is_app_limited: bool,
    /// The connection's delivered bytes when the sampled segment was sent (Linux
    /// `rs->prior_delivered`): BBR counts round trips with it.
    pub prior_delivered_bytes: u64,
    /// Bytes delivered over the sample's interval (Linux `rs->delivered`).
    pub delivered_bytes: u64,
    /// Bytes in flight when the sampled segment was sent (v3 `rs->tx_in_flight`), and the
    /// bytes marked lost and delivered with an ECN echo since then (v3 `rs->lost`,
    /// `rs->delivered_ce`): BBRv3's loss and ECN rates over the flight.
    pub tx_in_flight_bytes: u64,
    pub lost_bytes: u64,
    pub delivered_ce_bytes: u64,
}

#[derive(Debug, Default)]
pub struct RateSampler {
    records: VecDeque<TxRecord>,
    /// Time of the last delivery (Linux `delivered_mstamp`).
    delivered_time: Time,
    /// Send time of the newest segment delivered (Linux `first_tx_mstamp`).
    first_sent_time: Time,
    /// Nonzero while the flow is application-limited: the delivered count at which the
    /// app-limited period's data will all be delivered (Linux `app_limited`).
    app_limited_until: u64,
    // Per-ACK accumulation: the most recently sent delivered segment.
    best: Option<TxRecord>,
    /// Bytes in the network as the sender last knew it: the stack's pipe after the last ACK
    /// plus what was sent since (Linux `tcp_packets_in_flight` at send time).
    in_flight: u64,
    /// Bytes marked lost (Linux `tp->lost`, as ACKs report it) and delivered by ACKs that
    /// echoed ECN (Linux `tp->delivered_ce`) since the start.
    lost: u64,
    delivered_ce: u64,
}

impl RateSampler {
    /// A segment `[seq, end)` goes out (first time or again).
    pub fn on_send(&mut self, now: Time, seq: u64, end: u64, delivered: u64, nothing_in_flight: bool) {
        if nothing_in_flight {
            // A new flight: its clocks start now.
            self.first_sent_time = now;
            self.delivered_time = now;
            self.in_flight = 0;
        }
        self.in_flight += end - seq;
        let rec = TxRecord {
            seq,
            end,
            delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            sent_time: now,
            is_app_limited: self.app_limited_until != 0,
            delivered_done: false,
            tx_in_flight: self.in_flight,
            lost: self.lost,
            delivered_ce: self.delivered_ce,
        };
        match self.records.back() {
            Some(last) if seq < last.end => {
                // A retransmission: refresh the record that holds `seq`.
                let i = self.records.partition_point(|r| r.end <= seq);
                if let Some(r) = self.records.get_mut(i) {
                    *r = TxRecord { seq: r.seq, end: r.end, ..rec };
                }
            }
            _ => self.records.push_back(rec),
        }
    }

    fn deliver(best: &mut Option<TxRecord>, r: &mut TxRecord) {
        if r.delivered_done {
            return;
        }
        r.delivered_done = true;
        if best.is_none_or(|b| r.delivered > b.delivered || (r.delivered == b.delivered && r.sent_time > b.sent_time)) {
            *best = Some(*r);
        }
    }

    /// The cumulative ACK reached `ack`.
    pub fn on_cumulative_ack(&mut self, ack: u64) {
        while let Some(r) = self.records.front_mut() {
            if r.end > ack {
                break;
            }
            Self::deliver(&mut self.best, r);
            self.records.pop_front();
        }
    }

    /// `[start, end)` was newly SACKed.
    pub fn on_sacked(&mut self, start: u64, end: u64) {
        let i = self.records.partition_point(|r| r.end <= start);
        for r in self.records.range_mut(i..) {
            if r.seq >= end {
                break;
            }
            Self::deliver(&mut self.best, r);
        }
    }

    /// Ends an ACK's processing: returns its rate sample. `delivered` is the connection's
    /// delivered count after this ACK; samples over less than `min_rtt` are rejected, as
    /// Linux does, because ACK compression makes them too high.
    pub fn finish_ack(&mut self, now: Time, delivered: u64, min_rtt: Option<Time>) -> RateSample {
        let Some(best) = self.best.take() else {
            return RateSample::default();
        };
        self.delivered_time = now;
        self.first_sent_time = best.sent_time;
        if self.app_limited_until != 0 && delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let send_elapsed = best.sent_time - best.first_sent_time;
        let ack_elapsed = now - best.delivered_time;
        let interval = send_elapsed.max(ack_elapsed);
        let bytes = delivered - best.delivered;
        let valid = interval > 0 && min_rtt.is_none_or(|m| interval >= m);
        RateSample {
            delivery_rate_bps: valid.then(|| (bytes as u128 * 8 * PS_PER_S as u128 / interval as u128) as u64),
            interval_ps: interval,
            is_app_limited: best.is_app_limited,
            prior_delivered_bytes: best.delivered,
            delivered_bytes: bytes,
            tx_in_flight_bytes: best.tx_in_flight,
            lost_bytes: self.lost - best.lost,
            delivered_ce_bytes: self.delivered_ce - best.delivered_ce,
        }
    }

    /// Before an ACK's [`finish_ack`](Self::finish_ack): what it marked lost, and what it
    /// delivered if it echoed ECN (`ece`), counted into the connection's totals; also what a
    /// timeout marks lost, with no ECN (Linux counts both in `tp->lost`).
    pub fn count_lost_and_ce(&mut self, lost: u64, ce_bytes: u64) {
        self.lost += lost;
        self.delivered_ce += ce_bytes;
    }

    /// After an ACK: the stack's count of bytes in the network (its pipe), from which the
    /// next sends count up.
    pub fn set_in_flight(&mut self, in_flight: u64) {
        self.in_flight = in_flight;
    }

    /// The application has nothing more to send while the window would allow it: samples
    /// until this flight is delivered say so (Linux `tcp_rate_check_app_limited`).
    pub fn mark_app_limited(&mut self, delivered: u64, in_flight: u64) {
        self.app_limited_until = (delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    #[test]
    fn steady_flight_measures_the_bottleneck_rate() {
        // 10 segments of 1000 bytes sent at t=0, delivered one per ms from t = 50 ms.
        let mut r = RateSampler::default();
        for i in 0..10u64 {
            r.on_send(0, i * 1000, (i + 1) * 1000, 0, i == 0);
        }
        let mut last = RateSample::default();
        for i in 0..10u64 {
            let now = 50 * PS_PER_MS + i * PS_PER_MS;
            r.on_cumulative_ack((i + 1) * 1000);
            last = r.finish_ack(now, (i + 1) * 1000, Some(10 * PS_PER_MS));
        }
        // Last sample: 10,000 bytes over 59 ms (since the flight's delivery clock started).
        let rate = last.delivery_rate_bps.unwrap();
        assert_eq!(rate, 10_000 * 8 * 1000 / 59);
    }

    #[test]
    fn sacked_segments_count_once() {
        let mut r = RateSampler::default();
        for i in 0..4u64 {
            r.on_send(0, i * 1000, (i + 1) * 1000, 0, i == 0);
        }
        r.on_sacked(2000, 4000);
        let s = r.finish_ack(30 * PS_PER_MS, 2000, None);
        assert!(s.delivery_rate_bps.is_some());
        r.on_cumulative_ack(4000);
        // Segments 2 and 3 were delivered already; only 0 and 1 are new.
        let s2 = r.finish_ack(40 * PS_PER_MS, 4000, None);
        assert!(s2.delivery_rate_bps.is_some());
        assert!(r.records.is_empty());
    }
}
