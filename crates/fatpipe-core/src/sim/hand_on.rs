//! Hops without events: a link hands a packet on to the next link at once when that is
//! exact (issue 16; docs/architecture.md, "Hops without events").
//!
//! A FIFO link knows an admitted packet's arrival time `t1` at the far end when it admits
//! it. If that far end is a router whose next link `L2` receives packets from this link
//! only, what `L2` does with the packet at `t1` depends only on what it received before,
//! all of which came from this link, in order. So the packet can be offered to `L2` at
//! `t1` right away, and the hop costs arithmetic instead of an event, exactly when nothing
//! can see `L2` between now and `t1` or put anything into it in between:
//! - `L2` has one feeder, this link: no other link and no endpoint sends into it (worked
//!   out from every flow's route both ways; not at all when the scenario has splits,
//!   whose members are drawn per packet). So `L2` is no host's interface either, whose
//!   room senders ask for.
//! - no capture taps either link (a capture sees a link's starts at their time);
//! - the packet is not for this link's far node (it is forwarded there);
//! - every earlier packet on this link was handed on too (`Link::offer_or_hand_on`), so
//!   `L2` receives this link's packets in order;
//! - `L2` still holds a packet that arrives after `t1`: the packet then goes behind it, and
//!   its own arrival event is scheduled when that one arrives, at the same point of the
//!   run as with the event at `t1`. (Handed to an `L2` that would be empty at `t1`, its
//!   arrival would be scheduled earlier, and among events at the same picosecond it could
//!   come before one scheduled in between: the two-to-one example moved so.)
//! - `t1` comes before the next probe (which reads every link's queue and counters) and
//!   no later than the end of the current `run_until` (whose caller may read the links).
//!
//! Within those, `L2` sees the same calls with the same times in the same order as when
//! the arrival was an event, and every event keeps its place in the order of the run: the
//! results are the same, byte for byte (docs/benchmarks.md, issue 16). A loss at `L2` is
//! counted against its flow at once instead of at `t1`: the counters are read only by the
//! summary, and whether the segment was first sent in slow start depends only on the
//! segment (`slow_start_end_seq` is the highest sequence sent when slow start ended, set
//! once).
//!
//! The last hop into a destination is cheaper a second way (`last_hop`): its arrival is
//! handled at once when it would be the next event anyway.

use super::*;
use crate::net::link::Offered;

/// No hand-on for this link and destination.
pub(super) const NO_HAND_ON: u32 = u32::MAX;

/// Who sends into a link, as far as the flows' routes tell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Feed {
    Nobody,
    Only(u32),
    /// Several links, or an endpoint (a host's own packets).
    Many,
}

/// `table[l * columns + routes.column(dst)]`: the link that link `l` may hand packets for
/// `dst` on to, or `NO_HAND_ON` (the static conditions of the module doc). One column per
/// destination of the routing table (the flows' hosts), as the routes have.
pub(super) fn hand_on_table(scenario: &Scenario, routes: &RoutingTable, link_taps: &[Vec<u32>]) -> Vec<u32> {
    let (links, columns) = (&scenario.links, routes.columns());
    let mut table = vec![NO_HAND_ON; links.len() * columns];
    if !scenario.splits.is_empty() {
        return table;
    }
    // Every route a packet takes: each flow's, both ways (data and ACKs, setup, requests).
    let paths = scenario.flows.iter().flat_map(|f| [(f.src, f.dst), (f.dst, f.src)]);
    let walk = |from: u32, to: u32, visit: &mut dyn FnMut(Option<u32>, u32)| {
        let (mut node, mut prev) = (from, None);
        for _ in 0..links.len() {
            let Some(l) = routes.get(node, to) else { return };
            visit(prev, l);
            if links[l as usize].to == to {
                return;
            }
            (node, prev) = (links[l as usize].to, Some(l));
        }
    };
    let mut feed = vec![Feed::Nobody; links.len()];
    for (from, to) in paths.clone() {
        walk(from, to, &mut |prev, l| {
            let f = &mut feed[l as usize];
            *f = match (*f, prev) {
                (Feed::Nobody, Some(p)) => Feed::Only(p),
                (Feed::Only(q), Some(p)) if q == p => Feed::Only(p),
                _ => Feed::Many,
            };
        });
    }
    for (from, to) in paths {
        walk(from, to, &mut |prev, l| {
            if let Some(p) = prev {
                // A link that decides at dequeue knows no departure time at admission.
                if feed[l as usize] == Feed::Only(p)
                    && link_taps[p as usize].is_empty()
                    && link_taps[l as usize].is_empty()
                    && !links[p as usize].queue.holds_packets()
                    && !links[l as usize].queue.holds_packets()
                {
                    table[p as usize * columns + routes.column(to) as usize] = l;
                }
            }
        });
    }
    table
}

impl Simulation {
    /// Turns the hops without events off (`on` false) or back on: every hop is then an
    /// event again. The results are the same either way; tests compare the two.
    pub fn set_event_shortcuts(&mut self, on: bool) {
        if on {
            let (scenario, routes, taps) = (&self.scenario, &self.routes, &self.link_taps);
            self.hand_on = hand_on_table(scenario, routes, taps);
        } else {
            self.hand_on.fill(NO_HAND_ON);
        }
        self.direct_last_hop = on;
    }

    /// The latest arrival time a link may hand a packet on at now (module doc).
    #[inline]
    fn hand_on_until(&self) -> Time {
        self.run_end.min(self.next_probe.saturating_sub(1))
    }

    /// Whether link `l` may hand packets for `dst` on (then `offer_ahead` takes them).
    #[inline]
    pub(super) fn hands_on(&self, l: u32, dst: u32) -> bool {
        self.hand_on[l as usize * self.route_columns + self.route_column[dst as usize] as usize] != NO_HAND_ON
    }

    /// Offers `pkt` to link `l` now and, while the links hand it on, to each next link at
    /// its arrival there; the last link that keeps it schedules its arrival as usual.
    pub(super) fn offer_ahead(&mut self, mut l: u32, pkt: &Packet) {
        let mut pkt = *pkt;
        let until = self.hand_on_until();
        let column = self.route_column[pkt.dst as usize] as usize;
        let mut at = self.now;
        loop {
            let next = self.hand_on[l as usize * self.route_columns + column];
            let until = match next {
                NO_HAND_ON => 0,
                // Only behind a packet of `next` that arrives after this one reaches `next`.
                _ => self.links[next as usize].last_evented_arrival().map_or(0, |t| until.min(t - 1)),
            };
            match self.links[l as usize].offer_or_hand_on(at, &mut pkt, until) {
                Offered::HandedOn { arrival } => {
                    self.hops_handed_on += 1;
                    (l, at) = (next, arrival);
                }
                Offered::Admitted { arrival, head } => {
                    if head {
                        self.events.schedule(arrival, Event::LinkArrival(l));
                    }
                    if !self.link_taps[l as usize].is_empty() {
                        debug_assert_eq!(at, self.now, "tapped links are never handed to");
                        self.tap_started(l);
                        self.watch_link(l);
                    }
                    return;
                }
                Offered::Dropped => {
                    self.count_drop(&pkt);
                    return;
                }
                Offered::Queued => unreachable!("no hand-on into a holding link (hand_on_table)"),
            }
        }
    }
}

impl Simulation {
    /// The head packet of link `l` reached a router at `now` and goes on to `next`, the last
    /// link before its destination (untapped). When it arrives there before every pending
    /// event (strictly: an event at the same time was scheduled first) and within the
    /// current `run_until`, its arrival would be the next event popped anyway, so it is
    /// handled now, at its time, without the event queue: the order of everything is
    /// unchanged (this is the last thing the event at `now` does). Otherwise its arrival is
    /// scheduled as usual.
    pub(super) fn last_hop(&mut self, l: u32, next: u32) {
        let now = self.now;
        let mut pkt = *self.links[l as usize].head();
        self.links[l as usize].drop_head(now);
        let until = self.run_end.min(self.events.peek_time().map_or(Time::MAX, |t| t.saturating_sub(1)));
        match self.links[next as usize].offer_or_hand_on(now, &mut pkt, until) {
            Offered::HandedOn { arrival } => {
                self.arrivals_direct += 1;
                self.now = arrival;
                self.arrive(pkt.dst, &pkt);
            }
            Offered::Admitted { arrival, head } => {
                if head {
                    self.events.schedule(arrival, Event::LinkArrival(next));
                }
            }
            Offered::Dropped => self.count_drop(&pkt),
            Offered::Queued => self.events.link_service(&mut self.links[next as usize], next, now),
        }
    }
}
