//! RACK-TLP loss detection (RFC 8985; Linux `tcp_recovery.c` and `tcp_send_loss_probe`).
//!
//! RACK marks a segment lost when a segment sent after it has been delivered and more than
//! RACK.rtt + reo_wnd has passed since it was sent: losses are detected by time, for
//! retransmissions as for originals, so a lost retransmission no longer needs the
//! retransmission timer. The reordering window reo_wnd is zero until reordering has been
//! seen (so a loss is detected as soon as three segments are SACKed above it, or during
//! recovery at once), and min_RTT / 4 x reo_wnd_steps otherwise, at most SRTT; each DSACK
//! widens it by one step, at most once per round trip, for 16 recoveries (Linux
//! `tcp_rack_reo_wnd`, `tcp_rack_update_reo_wnd`).
//!
//! The tail loss probe (TLP) sends, when the ACK clock stops with data outstanding and the
//! connection is not in recovery, one segment two smoothed RTTs later: new data if any, else
//! the last segment again, so that a tail loss is repaired by fast recovery rather than by a
//! timeout (Linux `tcp_schedule_loss_probe`: 2 SRTT, plus the delayed-ACK allowance
//! `tcp_rto_min` when one segment is out, else 2 ms; never after the RTO would fire).

use super::rtx_queue::{RtxQueue, Segment, Walk};
use crate::time::{Time, PS_PER_MS};

/// The reordering window grows by a step per DSACK round and keeps its size for this many
/// recoveries (Linux `TCP_RACK_RECOVERY_THRESH`).
pub const RECOVERY_THRESH: u32 = 16;
/// The RACK reordering timer fires at least this late (Linux `TCP_REO_TIMEOUT_MIN`, 2000 us).
pub const REO_TIMEOUT_MIN_PS: Time = 2 * PS_PER_MS;
/// TLP's allowance for the timer when several segments are out (Linux `TCP_TIMEOUT_MIN_US`).
pub const TLP_MIN_PS: Time = 2 * PS_PER_MS;

#[derive(Clone, Debug)]
pub struct Rack {
    /// Send time of the most recently sent segment delivered (RACK.xmit_ts), and its place
    /// among transmissions (which RFC 8985 approximates by RACK.end_seq); None before the
    /// first delivery.
    pub xmit_ps: Option<Time>,
    pub xmit_order: u64,
    /// RTT of the most recently delivered segment (RACK.rtt).
    pub rtt_ps: Time,
    /// Something was delivered since the last loss detection (Linux `rack.advanced`).
    pub advanced: bool,
    /// reo_wnd in steps of min_RTT / 4 (Linux `rack.reo_wnd_steps`).
    pub reo_wnd_steps: u32,
    /// A DSACK arrived since reo_wnd last changed (`rack.dsack_seen`).
    pub dsack_seen: bool,
    /// When reo_wnd last grew: one step per round trip at most.
    pub last_widened_ps: Option<Time>,
    /// Recoveries left before reo_wnd returns to one step (`rack.reo_wnd_persist`).
    pub reo_wnd_persist: u32,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            xmit_ps: None,
            xmit_order: 0,
            rtt_ps: 0,
            advanced: false,
            reo_wnd_steps: 1,
            dsack_seen: false,
            last_widened_ps: None,
            reo_wnd_persist: 0,
        }
    }
}

/// Segment 1 was sent after segment 2 (Linux `tcp_skb_sent_after`: by time, ties by
/// sequence; here ties by transmission order, exact).
fn sent_after(t1: Time, t2: Time, order1: u64, order2: u64) -> bool {
    t1 > t2 || (t1 == t2 && order1 > order2)
}

impl Rack {
    /// A segment was delivered (SACKed, or cumulatively ACKed without being SACKed first):
    /// RFC 8985 "update RACK.min_RTT ... Step 2: update RACK stats" (Linux
    /// `tcp_rack_advance`). A retransmitted segment delivered sooner than min_RTT after its
    /// retransmission was the original, delivered late: it says nothing.
    pub fn on_delivered(&mut self, now: Time, seg: &Segment, min_rtt: Option<Time>) {
        let rtt = now.saturating_sub(seg.xmit_ps);
        if seg.retransmitted() && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.advanced = true;
        self.rtt_ps = rtt;
        if self.xmit_ps.is_none_or(|t| sent_after(seg.xmit_ps, t, seg.xmit_order, self.xmit_order)) {
            self.xmit_ps = Some(seg.xmit_ps);
            self.xmit_order = seg.xmit_order;
        }
    }

    /// The reordering window (Linux `tcp_rack_reo_wnd`).
    pub fn reo_wnd(
        &self,
        reord_seen: bool,
        in_recovery: bool,
        sacked_out: u32,
        reordering: u32,
        min_rtt: Option<Time>,
        srtt: Option<Time>,
    ) -> Time {
        if !reord_seen && (in_recovery || sacked_out >= reordering) {
            // No reordering seen: be aggressive in recovery, or when DupThresh segments are
            // SACKed (RFC 8985 6.2: the RACK equivalent of the dupack threshold).
            return 0;
        }
        let Some(min_rtt) = min_rtt else { return 0 };
        (min_rtt / 4 * self.reo_wnd_steps as Time).min(srtt.unwrap_or(Time::MAX))
    }

    /// RFC 8985 6.2 step 5 (Linux `tcp_rack_detect_loss`): marks lost every segment sent
    /// before the most recently delivered one whose time is up; returns the segments
    /// marked, and when the next one's time will be up, if one is waiting.
    pub fn detect_loss(&mut self, q: &mut RtxQueue, now: Time, reo_wnd: Time) -> (u32, Option<Time>) {
        let Some(rack_xmit) = self.xmit_ps else { return (0, None) };
        let (rack_order, rack_rtt) = (self.xmit_order, self.rtt_ps);
        let mut wait: Option<Time> = None;
        let marked = q.walk_by_time(|s| {
            if !sent_after(rack_xmit, s.xmit_ps, rack_order, s.xmit_order) {
                return Walk::Stop;
            }
            let deadline = s.xmit_ps + rack_rtt + reo_wnd;
            if deadline <= now {
                Walk::MarkLost
            } else {
                wait = Some(wait.map_or(deadline - now, |w| w.max(deadline - now)));
                Walk::Skip
            }
        });
        (marked, wait)
    }

    /// Linux `tcp_rack_mark_lost`: detection only after something new was delivered.
    /// Returns (segments marked, reordering timer to arm).
    pub fn mark_lost(&mut self, q: &mut RtxQueue, now: Time, reo_wnd: Time) -> (u32, Option<Time>) {
        if !self.advanced {
            return (0, None);
        }
        self.advanced = false;
        let (marked, wait) = self.detect_loss(q, now, reo_wnd);
        (marked, wait.map(|w| now + w + REO_TIMEOUT_MIN_PS))
    }

    /// After an ACK: widen reo_wnd by a step if a DSACK arrived and a round trip passed
    /// since it last grew; forget the widening after RECOVERY_THRESH recoveries (Linux
    /// `tcp_rack_update_reo_wnd`).
    pub fn update_reo_wnd(&mut self, now: Time, srtt: Option<Time>) {
        if self.dsack_seen && self.last_widened_ps.is_some_and(|t| now.saturating_sub(t) < srtt.unwrap_or(0)) {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xFF);
            self.dsack_seen = false;
            self.last_widened_ps = Some(now);
            self.reo_wnd_persist = RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }
}

/// When the tail loss probe fires after the last transmission or ACK at `now` (Linux
/// `tcp_schedule_loss_probe`), given the time left before the RTO.
pub fn probe_timeout(srtt: Option<Time>, packets_out: u32, rto_min: Time, initial_rto: Time) -> Time {
    match srtt {
        Some(srtt) => 2 * srtt + if packets_out == 1 { rto_min } else { TLP_MIN_PS },
        None => initial_rto,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;
    const RTT: Time = 100 * PS_PER_MS;

    fn sent(n: u64, spacing: Time) -> RtxQueue {
        let mut q = RtxQueue::default();
        for i in 0..n {
            q.push(i * MSS, (i + 1) * MSS, i as Time * spacing);
        }
        q
    }

    /// RFC 8985 section 3.4's example: segments P1..P3 sent, P1 lost, P2 and P3 delivered.
    /// With reo_wnd 0, P1 is lost as soon as P3's SACK arrives (it was sent before P3 and
    /// RACK.rtt has passed since). With reo_wnd = min_RTT / 4 it waits that long.
    #[test]
    fn a_segment_sent_before_a_delivered_one_is_lost_after_rack_rtt_plus_reo_wnd() {
        let spacing = PS_PER_MS;
        let mut q = sent(3, spacing);
        let mut rack = Rack::default();
        let now = 2 * spacing + RTT; // P3's SACK, one RTT after P3 went
        for id in [1, 2] {
            let seg = q.get(id).unwrap();
            rack.on_delivered(now, &seg, Some(RTT));
        }
        q.sack(MSS, 3 * MSS, |_, _| {});
        assert_eq!(rack.rtt_ps, RTT);
        let reo_wnd = RTT / 4;
        let (marked, timer) = rack.detect_loss(&mut q, now, reo_wnd);
        // P1 went at 0: it is lost RTT + reo_wnd after that, 23 ms from now.
        assert_eq!(marked, 0);
        assert_eq!(timer, Some(RTT + reo_wnd - now));
        let (marked, _) = rack.detect_loss(&mut q, RTT + reo_wnd, reo_wnd);
        assert_eq!(marked, 1);
        assert_eq!(q.next_lost(), Some(0));
        // Without a reordering window, at once.
        let mut q = sent(3, spacing);
        q.sack(MSS, 3 * MSS, |_, _| {});
        let (marked, timer) = rack.detect_loss(&mut q, now, 0);
        assert_eq!((marked, timer), (1, None));
    }

    #[test]
    fn a_lost_retransmission_is_detected_by_time_too() {
        // P1 lost, retransmitted at t = 150 ms; P5, sent after the retransmission, is
        // delivered at 260 ms: the retransmission is lost (150 + 100 < 260).
        let mut q = sent(4, PS_PER_MS);
        let mut rack = Rack::default();
        q.mark_lost(0);
        q.on_retransmit(0, 150 * PS_PER_MS);
        let p5 = q.push(4 * MSS, 5 * MSS, 160 * PS_PER_MS);
        let now = 260 * PS_PER_MS;
        rack.on_delivered(now, &q.get(p5).unwrap(), Some(RTT));
        q.sack(4 * MSS, 5 * MSS, |_, _| {});
        let (marked, _) = rack.detect_loss(&mut q, now, 0);
        assert!(marked >= 1);
        assert_eq!(
            q.get(0).unwrap().flags & super::super::rtx_queue::RETRANS,
            0,
            "its retransmission is no longer in flight"
        );
        assert_eq!(q.next_lost(), Some(0), "to be sent again");
    }

    #[test]
    fn the_reordering_window_opens_when_reordering_is_seen_and_grows_with_dsacks() {
        let mut rack = Rack::default();
        let min_rtt = Some(RTT);
        let srtt = Some(2 * RTT);
        assert_eq!(rack.reo_wnd(false, false, 3, 3, min_rtt, srtt), 0, "DupThresh SACKed, no reordering seen");
        assert_eq!(rack.reo_wnd(false, false, 1, 3, min_rtt, srtt), RTT / 4);
        assert_eq!(rack.reo_wnd(true, true, 5, 3, min_rtt, srtt), RTT / 4);
        rack.dsack_seen = true;
        rack.update_reo_wnd(0, srtt);
        assert_eq!(rack.reo_wnd(true, true, 5, 3, min_rtt, srtt), RTT / 2);
        // A second DSACK within a round trip does not widen it again.
        rack.dsack_seen = true;
        rack.update_reo_wnd(RTT, srtt);
        assert_eq!(rack.reo_wnd_steps, 2);
        // Capped at SRTT.
        rack.reo_wnd_steps = 20;
        assert_eq!(rack.reo_wnd(true, true, 5, 3, min_rtt, srtt), 2 * RTT);
    }

    #[test]
    fn probe_timeout_is_two_srtt_plus_an_allowance() {
        let rto_min = 200 * PS_PER_MS;
        assert_eq!(probe_timeout(Some(RTT), 10, rto_min, 1000 * PS_PER_MS), 2 * RTT + 2 * PS_PER_MS);
        assert_eq!(probe_timeout(Some(RTT), 1, rto_min, 1000 * PS_PER_MS), 2 * RTT + rto_min);
        assert_eq!(probe_timeout(None, 1, rto_min, 1000 * PS_PER_MS), 1000 * PS_PER_MS);
    }
}
