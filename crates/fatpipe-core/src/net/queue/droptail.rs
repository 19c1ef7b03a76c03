//! Drop-tail FIFO: admit a packet while it fits the limits, drop arrivals otherwise.
//! Limits count packets, IP bytes, or both (a packet must fit both).

use super::QueueDiscipline;
use crate::packet::Packet;
use crate::time::Time;
use serde::Deserialize;
use std::collections::VecDeque;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailConfig {
    /// Most packets waiting (None: no packet limit).
    pub limit_packets: Option<u64>,
    /// Most IP bytes waiting (None: no byte limit).
    pub limit_bytes: Option<u64>,
}

pub struct DropTail {
    cfg: DropTailConfig,
    packets: VecDeque<Packet>,
    bytes: u64,
}

impl DropTail {
    pub fn new(cfg: DropTailConfig) -> Self {
        // Reserve what the limit can hold (bounded, so a huge byte limit does not reserve
        // gigabytes): the hot path then never reallocates.
        let reserve = cfg.limit_packets.unwrap_or(1024).min(1 << 16) as usize;
        DropTail { cfg, packets: VecDeque::with_capacity(reserve), bytes: 0 }
    }
}

impl QueueDiscipline for DropTail {
    #[inline]
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Result<(), Packet> {
        let size = pkt.ip_bytes as u64;
        let over_packets = self.cfg.limit_packets.is_some_and(|l| self.packets.len() as u64 + 1 > l);
        let over_bytes = self.cfg.limit_bytes.is_some_and(|l| self.bytes + size > l);
        if over_packets || over_bytes {
            return Err(pkt);
        }
        self.bytes += size;
        self.packets.push_back(pkt);
        Ok(())
    }

    #[inline]
    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let pkt = self.packets.pop_front()?;
        self.bytes -= pkt.ip_bytes as u64;
        Some(pkt)
    }

    fn len_packets(&self) -> usize {
        self.packets.len()
    }

    fn len_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketKind;

    fn pkt(seq: u64, ip_bytes: u32) -> Packet {
        Packet {
            flow: 0,
            src: 0,
            dst: 1,
            kind: PacketKind::Data,
            seq,
            payload_bytes: ip_bytes - 40,
            ip_bytes,
            ack: 0,
            window_bytes: 0,
            sack: Default::default(),
            ts_val: 0,
            ts_ecr: 0,
            retransmission: false,
        }
    }

    #[test]
    fn packet_limit_drops_the_arrival_and_keeps_fifo_order() {
        let mut q = DropTail::new(DropTailConfig { limit_packets: Some(2), limit_bytes: None });
        assert!(q.enqueue(0, pkt(0, 1500)).is_ok());
        assert!(q.enqueue(0, pkt(1, 1500)).is_ok());
        assert_eq!(q.enqueue(0, pkt(2, 1500)).unwrap_err().seq, 2);
        assert_eq!(q.dequeue(0).unwrap().seq, 0);
        assert_eq!(q.dequeue(0).unwrap().seq, 1);
        assert!(q.dequeue(0).is_none());
    }

    #[test]
    fn byte_limit_counts_ip_bytes() {
        let mut q = DropTail::new(DropTailConfig { limit_packets: None, limit_bytes: Some(3000) });
        assert!(q.enqueue(0, pkt(0, 1500)).is_ok());
        assert!(q.enqueue(0, pkt(1, 1000)).is_ok());
        assert!(q.enqueue(0, pkt(2, 1500)).is_err(), "2500 + 1500 > 3000");
        assert!(q.enqueue(0, pkt(3, 500)).is_ok(), "exactly 3000 fits");
        assert_eq!(q.len_bytes(), 3000);
        assert_eq!(q.len_packets(), 3);
    }
}
