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

use super::{Admission, QueueDiscipline};
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

/// The ring in front of a queue discipline (the qdisc).
pub struct TxRing {
    spec: TxRingSpec,
    qdisc: Box<dyn QueueDiscipline>,
    /// Packets handed to the driver, not yet being sent.
    ring: VecDeque<Packet>,
    /// Their bytes.
    ring_bytes: u64,
    /// Descriptors held: by the ring's packets and by the one being sent.
    used: u64,
    /// Descriptors of the packet being sent, freed when its serialization ends.
    in_service: u64,
}

impl TxRing {
    pub fn new(spec: TxRingSpec, qdisc: Box<dyn QueueDiscipline>) -> Self {
        let reserve = spec.descriptors.min(1 << 16) as usize;
        TxRing { spec, qdisc, ring: VecDeque::with_capacity(reserve), ring_bytes: 0, used: 0, in_service: 0 }
    }

    fn free(&self) -> u64 {
        self.spec.descriptors.saturating_sub(self.used)
    }

    fn push_ring(&mut self, pkt: Packet) {
        self.used += self.spec.descriptors_for(pkt.ip_bytes);
        self.ring_bytes += pkt.ip_bytes as u64;
        self.ring.push_back(pkt);
    }

    /// The qdisc runs while the driver has descriptors for its head packet.
    fn refill(&mut self, now: Time) {
        while let Some(head) = self.qdisc.peek() {
            if self.spec.descriptors_for(head.ip_bytes) > self.free() {
                break;
            }
            let pkt = self.qdisc.dequeue(now).expect("peeked");
            self.push_ring(pkt);
        }
    }
}

impl QueueDiscipline for TxRing {
    fn enqueue(&mut self, now: Time, pkt: Packet) -> Result<(), (Packet, Admission)> {
        // Linux enqueues into the qdisc and runs it at once: with an empty qdisc and room in
        // the ring the packet goes straight to the driver.
        if self.qdisc.len_packets() == 0 && self.spec.descriptors_for(pkt.ip_bytes) <= self.free() {
            self.push_ring(pkt);
            return Ok(());
        }
        self.qdisc.enqueue(now, pkt)?;
        self.refill(now);
        Ok(())
    }

    fn dequeue(&mut self, now: Time) -> Option<Packet> {
        // The link asks for the next packet when the previous one is sent: its descriptors
        // are free again.
        self.used -= std::mem::take(&mut self.in_service);
        self.refill(now);
        let pkt = self.ring.pop_front()?;
        self.ring_bytes -= pkt.ip_bytes as u64;
        self.in_service = self.spec.descriptors_for(pkt.ip_bytes);
        self.refill(now);
        Some(pkt)
    }

    fn peek(&self) -> Option<&Packet> {
        self.ring.front().or_else(|| self.qdisc.peek())
    }

    fn holds_packet_in_service(&self) -> bool {
        true
    }

    fn room_packets(&self, ip_bytes: u32) -> u64 {
        let qdisc_room = self.qdisc.room_packets(ip_bytes);
        if self.qdisc.len_packets() > 0 {
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
        });
        TxRing::new(TxRingSpec { descriptors, descriptor_bytes: 4096 }, Box::new(qdisc))
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
        let admitted = (0..300).take_while(|&i| q.enqueue(0, pkt(i, 9000)).is_ok()).count();
        assert_eq!(admitted, 185);
        assert_eq!(q.len_packets(), 185);
        assert_eq!(q.room_packets(9000), 0);
        // Standard frames take one descriptor each: 256 + 100.
        let mut q = ring(256, 100);
        assert_eq!(q.room_packets(1500), 356);
        assert_eq!((0..400).take_while(|&i| q.enqueue(0, pkt(i, 1500)).is_ok()).count(), 356);
    }

    #[test]
    fn descriptors_are_freed_when_the_packet_is_sent_and_the_qdisc_refills_the_ring() {
        let mut q = ring(6, 2);
        for i in 0..4 {
            q.enqueue(0, pkt(i, 9000)).unwrap(); // two in the ring (6 descriptors), two in the qdisc
        }
        assert_eq!(q.room_packets(9000), 0);
        assert_eq!(q.dequeue(1).unwrap().seq, 0, "first in, first out");
        // Packet 0 is being sent: it still holds its descriptors, so nothing moved yet.
        assert_eq!(q.room_packets(9000), 0);
        assert_eq!(q.dequeue(2).unwrap().seq, 1, "packet 0 sent: 2 moves into the ring");
        assert_eq!(q.room_packets(9000), 1, "the qdisc has one slot again");
        assert_eq!(q.dequeue(3).unwrap().seq, 2);
        assert_eq!(q.dequeue(4).unwrap().seq, 3);
        assert!(q.dequeue(5).is_none());
        assert_eq!(q.len_packets(), 0);
        assert_eq!(q.room_packets(9000), 4, "an empty interface: 2 in the ring, 2 in the qdisc");
    }

    #[test]
    fn room_is_what_enqueue_then_admits() {
        for (descriptors, txqueuelen, size) in [(256, 100, 9000), (10, 3, 1500), (7, 1, 9000), (3, 5, 9000)] {
            let mut q = ring(descriptors, txqueuelen);
            q.enqueue(0, pkt(0, 700)).unwrap();
            q.dequeue(0);
            let room = q.room_packets(size);
            let admitted = (1..1000).take_while(|&i| q.enqueue(0, pkt(i, size)).is_ok()).count() as u64;
            assert_eq!(room, admitted, "{descriptors} descriptors, txqueuelen {txqueuelen}, {size} bytes");
        }
    }
}
