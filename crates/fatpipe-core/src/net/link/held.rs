//! A link's holding path: the disciplines that decide at dequeue (CoDel, FQ-CoDel, PIE,
//! FQ-PIE, the TBF shaper:
//! `net/queue/scheduled.rs`) keep their waiting packets themselves, and the link asks them
//! for the next packet each time its transmitter frees, one `LinkDequeue` event per
//! departure (the FIFO path in `link.rs` never comes here). Apart from the FIFO path so that
//! each reads on its own; both share the wire and the counters of `Link`.

use super::{Link, Offered};
use crate::net::queue::Queue;
use crate::packet::Packet;
use crate::time::Time;

/// What a driver schedules after a holding link was served (`Link::service`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Service {
    /// A packet started and is the only one on the wire: its arrival (`LinkArrival`).
    pub arrival: Option<Time>,
    /// The link's next dequeue (`LinkDequeue`).
    pub dequeue_at: Option<Time>,
}

impl Link {
    /// A holding discipline takes (or refuses) `pkt` at `now`. The packet waits in it even
    /// when the transmitter is free: `service` starts it then.
    #[inline(never)]
    pub(super) fn offer_held(&mut self, now: Time, pkt: &Packet) -> Offered {
        self.advance(now);
        let waits = self.dequeue_pending || self.started_end > now;
        let Queue::Held(q) = &mut self.queue else { unreachable!("a holding link") };
        let before = self.dropped.len();
        let result = q.enqueue(now, pkt, &mut self.dropped);
        self.record_dropped_since(before);
        if let Err(why) = result {
            self.record_drop(pkt.ip_bytes, why);
            return Offered::Dropped;
        }
        if waits {
            self.note_queue_length();
        }
        Offered::Queued
    }

    /// A holding link at `now`: if the transmitter is free and no dequeue event is due, the
    /// discipline hands it its next packet (dropping or marking on the way), which starts
    /// at once; while packets wait (or drops wait to be counted against their flows), the
    /// next dequeue is due when that serialization ends. The caller schedules what it says.
    pub fn service(&mut self, now: Time) -> Service {
        let mut out = Service::default();
        if self.dequeue_pending {
            return out;
        }
        if self.started_end <= now {
            let Queue::Held(q) = &mut self.queue else { unreachable!("service on a holding link") };
            let before = self.dropped.len();
            let next = q.dequeue(now, &mut self.dropped);
            self.record_dropped_since(before);
            if let Some(pkt) = next {
                let end = now + self.tx_time(pkt.ip_bytes);
                self.count_start(pkt.ip_bytes, now, end);
                self.tail_end = end;
                let arrival = end + self.spec.delay_ps;
                if self.wire.is_empty() {
                    out.arrival = Some(arrival);
                }
                self.wire.push_back((arrival, pkt));
            }
        }
        if self.queue.len_packets() > 0 || !self.dropped.is_empty() {
            self.dequeue_pending = true;
            // A shaper's head may wait for tokens beyond the line's end (`ready_at`).
            let ready = self.queue.held().map_or(0, |q| q.ready_at());
            out.dequeue_at = Some(self.started_end.max(now).max(ready));
        }
        out
    }

    /// A holding link's `LinkDequeue` event at `now`.
    pub fn dequeue_due(&mut self, now: Time) -> Service {
        self.dequeue_pending = false;
        self.service(now)
    }

    /// Hands the packets the holding discipline dropped since last time to `f` (the
    /// driver's per-flow loss accounting); their link counters are kept already.
    pub fn take_dropped(&mut self, mut f: impl FnMut(&Packet)) {
        for (pkt, _) in self.dropped.drain(..) {
            f(&pkt);
        }
    }

    /// Whether a holding discipline dropped packets not yet handed to `take_dropped`.
    #[inline]
    pub fn has_dropped(&self) -> bool {
        !self.dropped.is_empty()
    }

    fn record_dropped_since(&mut self, before: usize) {
        for i in before..self.dropped.len() {
            let (pkt, why) = self.dropped[i];
            self.record_drop(pkt.ip_bytes, why);
        }
    }
}
