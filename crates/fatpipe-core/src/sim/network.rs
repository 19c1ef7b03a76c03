//! How packets move between the simulation's elements: a node forwards a packet onto the
//! next link of its route or hands it to its endpoints; a link's arrival, dequeue and
//! end-of-serialization events; the per-flow loss counters every drop point reports to; the
//! captures' taps; and the interface queue's budget and wake-ups for the senders it refused.
//! The run loop and the endpoints' timers stay in `sim.rs`; hops without events are in
//! `hand_on.rs`.

use super::{Simulation, IN_SPLIT};
use crate::event::Event;
use crate::net::link::Link;
use crate::net::routing::NO_ROUTE;
use crate::packet::{Packet, PacketKind};

impl Simulation {
    /// Holding link `l` hands its transmitter the next packet; the packets its discipline
    /// dropped are counted against their flows; its captures see the start.
    pub(super) fn on_dequeue(&mut self, l: u32) {
        self.events.link_dequeue(&mut self.links[l as usize], l, self.now);
        self.count_held_drops(l);
        if !self.link_taps[l as usize].is_empty() {
            self.tap_started(l);
        }
        self.watch_link(l);
    }

    /// The packets holding link `l` dropped since last time, against their flows.
    pub(super) fn count_held_drops(&mut self, l: u32) {
        if !self.links[l as usize].has_dropped() {
            return;
        }
        let mut dropped = std::mem::take(&mut self.held_drops);
        self.links[l as usize].take_dropped(|p| dropped.push(*p));
        for p in dropped.drain(..) {
            self.count_drop(&p);
        }
        self.held_drops = dropped;
    }

    /// A serialization on watched link `l` ended: its captures see the next packet start,
    /// its refused senders may send (a place in the queue is free).
    #[cold]
    pub(super) fn on_tx_end(&mut self, l: u32) {
        self.link_watched[l as usize] = false;
        if !self.link_taps[l as usize].is_empty() {
            self.tap_started(l);
        }
        if !self.iface_waiters[l as usize].is_empty() {
            self.wake_interface_waiters(l);
        }
        self.watch_link(l);
    }

    /// Keeps a `LinkTxEnd` pending for link `l` while its captures or refused senders need
    /// to see its serializations end (most links have neither and cost no such event).
    #[inline]
    pub(super) fn watch_link(&mut self, l: u32) {
        let i = l as usize;
        if self.link_watched[i] || (self.link_taps[i].is_empty() && self.iface_waiters[i].is_empty()) {
            return;
        }
        if let Some(t) = self.links[i].busy_until(self.now) {
            self.link_watched[i] = true;
            self.events.schedule(t, Event::LinkTxEnd(l));
        }
    }

    /// The queue of interface `l` has room again (a packet left it): the senders it refused
    /// send, first refused first, while there is room. Linux 2.4/2.6 (document 001's hosts)
    /// retried only on the socket's next ACK or timer, since nothing woke a socket when the
    /// qdisc drained; modern Linux sends as soon as the device has room (TCP Small Queues'
    /// `tcp_wfree` and the driver's `netif_wake_queue`). We model the modern behaviour: a
    /// sender refused with nothing in flight has no ACK coming to retry on (Linux 2.4 fell
    /// back on its probe timer), and on a busy path the next ACK is only a few packet times
    /// away, so both send the same data at nearly the same time.
    #[cold]
    pub(super) fn wake_interface_waiters(&mut self, l: u32) {
        for _ in 0..self.iface_waiters[l as usize].len() {
            let Some(&f) = self.iface_waiters[l as usize].front() else { break };
            let flow = &self.flows[f as usize];
            if self.links[l as usize].room_packets(self.now, flow.max_ip_bytes) == 0 {
                break;
            }
            self.iface_waiters[l as usize].pop_front();
            // Still refused: back in the list, behind the others (`sync_timers`).
            let src = Some(flow.src);
            self.drive(f, true, src, |flow, now, out| {
                flow.iface_waiting = false;
                flow.sender.on_interface_ready(now, out)
            });
        }
    }

    /// Tells flow `f`'s sender how many segments its host's interface queue can take now.
    #[inline]
    pub(super) fn grant_tx_budget(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        let link = &mut self.links[flow.iface as usize];
        let room = link.room_packets(self.now, flow.max_ip_bytes);
        flow.sender.set_tx_budget(room);
        if flow.sender.has_tsq() {
            flow.sender.set_interface(link.tail_end(self.now), link.spec.rate_bps, link.spec.framing_bytes);
        }
    }

    /// A packet reaches `node`: deliver it there or forward it.
    pub(super) fn arrive(&mut self, node: u32, pkt: &Packet) {
        if pkt.dst != node {
            self.forward(node, pkt);
            return;
        }
        if !self.node_taps[node as usize].is_empty() {
            self.tap(node, false, pkt);
        }
        let f = pkt.flow;
        if pkt.kind == PacketKind::Ack {
            self.grant_tx_budget(f);
        }
        let flow = &mut self.flows[f as usize];
        if pkt.kind == PacketKind::Datagram {
            flow.udp.as_mut().expect("datagrams belong to UDP flows").on_datagram(self.now, pkt);
            return;
        }
        if pkt.conn != flow.conn {
            return; // a straggler of a closed connection: its endpoints are gone
        }
        let workload = pkt.kind == PacketKind::Data && (flow.http.is_some() || flow.handshake.is_some());
        match pkt.kind {
            // The sender's budget was granted above, before the checks.
            PacketKind::Data => {
                self.drive(f, false, Some(node), |flow, now, out| flow.receiver.on_segment(now, pkt, out))
            }
            PacketKind::Ack => {
                self.drive(f, false, Some(node), |flow, now, out| flow.sender.on_ack(now, pkt, out));
                if self.flows[f as usize].transfers.is_some() {
                    self.end_transfer_if_done(f);
                }
            }
            PacketKind::Datagram => unreachable!("handled above"),
            PacketKind::Syn | PacketKind::SynAck | PacketKind::HandshakeAck | PacketKind::Request => {
                self.on_connection_packet(node, pkt);
                return;
            }
        }
        if workload {
            self.after_data_delivery(f, pkt);
        }
    }

    /// The packet at the head of link `l` reaches the link's far node. A node that is not
    /// its destination forwards it from the link's FIFO straight into the next link's (one
    /// copy of the packet per hop); a destination gets a copy to hand to its endpoints.
    #[inline]
    pub(super) fn on_arrival(&mut self, l: u32) {
        let now = self.now;
        let link = &self.links[l as usize];
        let (node, dst) = (link.spec.to, link.head().dst);
        if dst == node {
            let pkt = self.events.link_arrival(&mut self.links[l as usize], l, now);
            self.arrive(node, &pkt);
            return;
        }
        // The order of the schedule calls is that of popping the packet, then forwarding it.
        if let Some(t) = link.second_arrival() {
            self.events.schedule(t, Event::LinkArrival(l));
        }
        let next = self.next_link(node, dst);
        debug_assert_ne!(next, l, "a link does not lead back to its own start");
        if self.hands_on(next, dst) {
            let pkt = *self.links[l as usize].head();
            self.offer_ahead(next, &pkt);
            self.links[l as usize].drop_head(now);
            return;
        }
        if self.direct_last_hop && self.links[next as usize].spec.to == dst && self.link_taps[next as usize].is_empty()
        {
            self.last_hop(l, next);
            return;
        }
        let (from, into) = two_links(&mut self.links, l, next);
        if self.events.link_offer(into, next, now, from.head()) {
            if !self.link_taps[next as usize].is_empty() {
                self.tap_started(next);
                self.watch_link(next);
            }
        } else {
            let dropped = *from.head();
            self.count_drop(&dropped);
        }
        self.links[l as usize].drop_head(now);
    }

    /// Sends what an endpoint at `node` emitted.
    pub(super) fn transmit(&mut self, node: u32, out: &mut Vec<Packet>) {
        for pkt in out.iter() {
            self.forward(node, pkt);
        }
        out.clear();
    }

    /// The link a packet for `dst` leaves `node` on.
    #[inline(always)]
    pub(super) fn next_link(&mut self, node: u32, dst: u32) -> u32 {
        let hop = self.next_hop[node as usize * self.route_columns + self.route_column[dst as usize] as usize];
        if hop & IN_SPLIT == 0 {
            return hop;
        }
        assert_ne!(hop, NO_ROUTE, "validated: every flow has a route");
        // Routes lead to one member of a group of parallel links; the packet draws its own.
        let s = self.split_of[(hop & !IN_SPLIT) as usize].expect("a member of a split");
        self.splits[s as usize].choose()
    }

    pub(super) fn forward(&mut self, node: u32, pkt: &Packet) {
        let l = self.next_link(node, pkt.dst);
        if self.hands_on(l, pkt.dst) {
            self.offer_ahead(l, pkt);
            return;
        }
        if self.events.link_offer(&mut self.links[l as usize], l, self.now, pkt) {
            if !self.link_taps[l as usize].is_empty() {
                self.tap_started(l);
                self.watch_link(l);
            }
        } else {
            self.count_drop(pkt);
        }
    }

    /// Hands the packets link `l` has started to serialize since last time to the link's
    /// captures, each at its start.
    #[cold]
    pub(super) fn tap_started(&mut self, l: u32) {
        let Simulation { links, link_starts_seen, link_taps, captures, wire, now, .. } = self;
        links[l as usize].for_each_started(*now, &mut link_starts_seen[l as usize], |t, pkt| {
            for &c in &link_taps[l as usize] {
                captures[c as usize].record(t, pkt, &wire[pkt.flow as usize]);
            }
        });
    }

    /// Per-flow loss counters: every packet of the flow lost in the network, and the data
    /// segments first sent during the flow's first slow start (document 003's loss rate).
    #[cold]
    pub(super) fn count_drop(&mut self, pkt: &Packet) {
        let flow = &mut self.flows[pkt.flow as usize];
        match pkt.kind {
            PacketKind::Data => {
                flow.losses.data_packets += 1;
                flow.losses.data_payload_bytes += pkt.payload_bytes as u64;
                flow.losses.retransmissions += u64::from(pkt.retransmission);
                let in_slow_start =
                    flow.sender.tcb.milestones.slow_start_end_seq.is_none_or(|end| pkt.end_seq() <= end);
                if in_slow_start && !pkt.retransmission {
                    flow.losses.slow_start_data_packets += 1;
                }
            }
            PacketKind::Ack => flow.losses.ack_packets += 1,
            // Every drop point comes here, so sent = received + lost + in flight holds exactly.
            PacketKind::Datagram => {
                if let Some(udp) = flow.udp.as_mut() {
                    udp.on_lost(pkt);
                }
            }
            PacketKind::Syn | PacketKind::SynAck | PacketKind::HandshakeAck | PacketKind::Request => {
                flow.losses.setup_packets += 1
            }
        }
    }

    /// Hands `pkt` to the captures of link `at` (`on_link`) or of node `at`.
    #[cold]
    pub(super) fn tap(&mut self, at: u32, on_link: bool, pkt: &Packet) {
        let taps = if on_link { &self.link_taps[at as usize] } else { &self.node_taps[at as usize] };
        let wire = &self.wire[pkt.flow as usize];
        for &c in taps {
            self.captures[c as usize].record(self.now, pkt, wire);
        }
    }
}

/// Links `a` and `b` (different) mutably at once.
#[inline]
fn two_links(links: &mut [Link], a: u32, b: u32) -> (&mut Link, &mut Link) {
    let (a, b) = (a as usize, b as usize);
    if a < b {
        let (lo, hi) = links.split_at_mut(b);
        (&mut lo[a], &mut hi[0])
    } else {
        let (lo, hi) = links.split_at_mut(a);
        (&mut hi[0], &mut lo[b])
    }
}
