//! A network interface's transmit ring: the driver's descriptor ring between the host's queue
//! discipline (Linux `txqueuelen`, `pfifo_fast`) and the line.
//!
//! Linux hands a packet from the qdisc to the driver (`qdisc_restart`, `dev->hard_start_xmit`)
//! while the driver's ring has free descriptors for it; a packet takes one descriptor per
//! `descriptor_bytes` of its frame (Intel e1000: `E1000_MAX_DATA_PER_TXD` = 4096 bytes, so a
//! 9014-byte jumbo frame takes 3 and a 1514-byte one 1), and holds them until the hardware
//! has sent it (the driver cleans them on the transmit interrupt, `e1000_clean_tx_irq`). When
//! the ring is short of descriptors the driver stops the queue (`netif_stop_queue`) and the
//! packet waits in the qdisc; once descriptors are freed the qdisc runs again. So the
//! interface holds the ring's packets *plus* txqueuelen packets before the qdisc refuses one
//! (and a TCP sender sees local congestion): document 001's hosts (e1000, 256 descriptors by
//! default, `E1000_DEFAULT_TXD`) held far more than txqueuelen = 100 jumbo frames.
//!
//! Both stages are first in, first out, so packets keep their order; the ring takes packets
//! only from the head of the qdisc. The cleaning delay of the transmit interrupt is not
//! modelled: a packet's descriptors are free when its serialization ends.

use super::{Admission, Queue, QueueDiscipline};
use crate::packet::Packet;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

/// Bytes of the Ethernet header a driver hands the NIC with every IP packet (the frame
/// the descriptors hold: no preamble, no FCS, which the hardware adds).
pub const ETHERNET_HEADER_BYTES: u32 = 14;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TxRingSpec {
    /// Descriptors in the ring (e1000: 256 by default).
    pub descriptors: u64,
    /// Most frame bytes one descriptor holds (e1000: 4096).
    pub descriptor_bytes: u32,
}

impl TxRingSpec {
    /// Descriptors a packet of `ip_bytes` takes.
    #[inline]
    pub fn descriptors_for(&self, ip_bytes: u32) -> u64 {
        (ip_bytes + ETHERNET_HEADER_BYTES).div_ceil(self.descriptor_bytes.max(1)) as u64
    }
}

/// The ring in front of a queue discipline (the qdisc). Like the disciplines it counts and
/// does not hold packets (the link keeps them in order, `net/link.rs`); it keeps the sizes of
/// the packets in each stage, since a packet moves from the qdisc to the ring when the ring
/// has descriptors for it.
pub struct TxRing {
    spec: TxRingSpec,
    qdisc: Queue,
    /// IP bytes of the packets waiting in the qdisc, first first.
    qdisc_sizes: VecDeque<u32>,
    /// IP bytes of the packets handed to the driver, not yet being sent.
    ring: VecDeque<u32>,
    /// Their bytes.
    ring_bytes: u64,
    /// Descriptors held: by the ring's packets and by the one being sent.
    used: u64,
    /// Descriptors of the packet being sent, freed when its serialization ends.
    in_service: u64,
}

impl TxRing {
    pub fn new(spec: TxRingSpec, qdisc: Queue) -> Self {
        let reserve = spec.descriptors.min(1 << 16) as usize;
        TxRing {
            spec,
            qdisc,
            qdisc_sizes: VecDeque::new(),
            ring: VecDeque::with_capacity(reserve),
            ring_bytes: 0,
            used: 0,
            in_service: 0,
        }
    }

    fn free(&self) -> u64 {
        self.spec.descriptors.saturating_sub(self.used)
    }

    fn push_ring(&mut self, ip_bytes: u32) {
        self.used += self.spec.descriptors_for(ip_bytes);
        self.ring_bytes += ip_bytes as u64;
        self.ring.push_back(ip_bytes);
    }

    /// The qdisc runs while the driver has descriptors for its head packet.
    fn refill(&mut self, now: Time) {
        while let Some(&head) = self.qdisc_sizes.front() {
            if self.spec.descriptors_for(head) > self.free() {
                break;
            }
            self.qdisc_sizes.pop_front();
            self.qdisc.depart(now, head);
            self.push_ring(head);
        }
    }

    /// The packet on the line has been sent: its descriptors are free again.
    fn sent(&mut self, now: Time) {
        self.used -= std::mem::take(&mut self.in_service);
        self.refill(now);
    }
}

impl QueueDiscipline for TxRing {
    fn admit(&mut self, now: Time, pkt: &mut Packet, starts_now: bool) -> Result<(), Admission> {
        let descriptors = self.spec.descriptors_for(pkt.ip_bytes);
        if starts_now {
            // An idle link: ring and qdisc are empty, and the driver puts the packet on the
            // line at once; it holds its descriptors until it is sent.
            self.sent(now);
            self.used += descriptors;
            self.in_service = descriptors;
            return Ok(());
        }
        // Linux enqueues into the qdisc and runs it at once: with an empty qdisc and room in
        // the ring the packet goes straight to the driver.
        if self.qdisc_sizes.is_empty() && descriptors <= self.free() {
            self.push_ring(pkt.ip_bytes);
            return Ok(());
        }
        self.qdisc.admit(now, pkt, false)?;
        self.qdisc_sizes.push_back(pkt.ip_bytes);
        self.refill(now);
        Ok(())
    }

    fn depart(&mut self, t: Time, ip_bytes: u32) {
        // The previous packet has been sent; the ring's head goes on the line.
        self.sent(t);
        let head = self.ring.pop_front().expect("a departure from an empty ring");
        debug_assert_eq!(head, ip_bytes, "the ring serves in order");
        self.ring_bytes -= head as u64;
        self.in_service = self.spec.descriptors_for(head);
        self.refill(t);
    }

    fn idle(&mut self, t: Time) {
        self.sent(t);
    }

    fn holds_packet_in_service(&self) -> bool {
        true
    }

    fn room_packets(&self, ip_bytes: u32) -> u64 {
        let qdisc_room = self.qdisc.room_packets(ip_bytes);
        if !self.qdisc_sizes.is_empty() {
            return qdisc_room;
        }
        // An empty qdisc: the ring takes what fits, the qdisc the rest.
        (self.free() / self.spec.descriptors_for(ip_bytes)).saturating_add(qdisc_room)
    }

    fn ecn_marks(&self) -> u64 {
        self.qdisc.ecn_marks()
    }

    fn red_parameters(&self) -> Option<(f64, f64, f64)> {
        self.qdisc.red_parameters()
    }

    fn red_average(&self, now: Time) -> Option<f64> {
        self.qdisc.red_average(now)
    }

    fn len_packets(&self) -> usize {
        self.ring.len() + self.qdisc.len_packets()
    }

    fn len_bytes(&self) -> u64 {
        self.ring_bytes + self.qdisc.len_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::droptail::{DropTail, DropTailConfig};
    use crate::packet::testing::data as pkt;

    fn ring(descriptors: u64, txqueuelen: u64) -> TxRing {
        let qdisc = DropTail::new(DropTailConfig {
            limit_packets: Some(txqueuelen),
            limit_bytes: None,
            cell_bytes: None,
            limit_cells: None,
            mark_threshold_packets: None,
        });
        TxRing::new(TxRingSpec { descriptors, descriptor_bytes: 4096 }, Queue::DropTail(qdisc))
    }

    #[test]
    fn a_jumbo_frame_takes_three_e1000_descriptors_and_a_standard_one_one() {
        let spec = TxRingSpec { descriptors: 256, descriptor_bytes: 4096 };
        assert_eq!(spec.descriptors_for(9000), 3);
        assert_eq!(spec.descriptors_for(1500), 1);
        assert_eq!(spec.descriptors_for(4082), 1, "4082 + 14 = 4096 fits one");
        assert_eq!(spec.descriptors_for(4083), 2);
    }

    #[test]
    fn the_interface_holds_the_ring_and_then_txqueuelen_packets() {
        // 256 descriptors hold 85 jumbo frames (255 descriptors); then 100 in the qdisc.
        let mut q = ring(256, 100);
        assert_eq!(q.room_packets(9000), 185);
        let admitted = (0..300).take_while(|&i| q.admit(0, &mut pkt(i, 9000), false).is_ok()).count();
        assert_eq!(admitted, 185);
        assert_eq!(q.len_packets(), 185);
        assert_eq!(q.room_packets(9000), 0);
        // Standard frames take one descriptor each: 256 + 100.
        let mut q = ring(256, 100);
        assert_eq!(q.room_packets(1500), 356);
        assert_eq!((0..400).take_while(|&i| q.admit(0, &mut pkt(i, 1500), false).is_ok()).count(), 356);
    }

    #[test]
    fn descriptors_are_freed_when_the_packet_is_sent_and_the_qdisc_refills_the_ring() {
        let mut q = ring(6, 2);
        for i in 0..4 {
            q.admit(0, &mut pkt(i, 9000), false).unwrap(); // two in the ring (6 descriptors), two in the qdisc
        }
        assert_eq!(q.room_packets(9000), 0);
        q.depart(1, 9000);
        // Packet 0 is being sent: it still holds its descriptors, so nothing moved yet.
        assert_eq!(q.room_packets(9000), 0);
        assert_eq!(q.len_packets(), 3);
        q.depart(2, 9000);
        assert_eq!(q.room_packets(9000), 1, "packet 0 sent: 2 moved into the ring, the qdisc has one slot again");
        assert_eq!(q.len_packets(), 2);
        q.depart(3, 9000);
        q.depart(4, 9000);
        q.idle(5);
        assert_eq!(q.len_packets(), 0);
        assert_eq!(q.room_packets(9000), 4, "an empty interface: 2 in the ring, 2 in the qdisc");
    }

    #[test]
    fn room_is_what_enqueue_then_admits() {
        for (descriptors, txqueuelen, size) in [(256, 100, 9000), (10, 3, 1500), (7, 1, 9000), (3, 5, 9000)] {
            let mut q = ring(descriptors, txqueuelen);
            q.admit(0, &mut pkt(0, 700), true).unwrap(); // an idle link sends it at once
            let room = q.room_packets(size);
            let admitted = (1..1000).take_while(|&i| q.admit(0, &mut pkt(i, size), false).is_ok()).count() as u64;
            assert_eq!(room, admitted, "{descriptors} descriptors, txqueuelen {txqueuelen}, {size} bytes");
        }
    }
}
