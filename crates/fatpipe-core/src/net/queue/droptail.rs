//! Drop-tail FIFO: admit a packet while it fits the limits, drop arrivals otherwise.
//! Limits count packets, IP bytes, or fixed-size buffer cells (a packet must fit all that
//! are set). Cells model routers that store packets in buffers of a fixed size, such as the
//! 2 KB buffers of document 002's ANSNET routers, where a packet takes ceil(size / cell).

use super::{Admission, QueueDiscipline};
use crate::packet::Packet;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropTailConfig {
    /// Most packets waiting (None: no packet limit).
    pub limit_packets: Option<u64>,
    /// Most IP bytes waiting (None: no byte limit).
    pub limit_bytes: Option<u64>,
    /// Size of one buffer cell, bytes, and how many cells there are (both or neither).
    #[serde(default)]
    pub cell_bytes: Option<u32>,
    #[serde(default)]
    pub limit_cells: Option<u64>,
}

impl DropTailConfig {
    /// Cells a packet of `ip_bytes` occupies (0 without cell accounting).
    pub fn cells(&self, ip_bytes: u32) -> u64 {
        self.cell_bytes.map_or(0, |c| ip_bytes.div_ceil(c.max(1)) as u64)
    }
}

pub struct DropTail {
    cfg: DropTailConfig,
    packets: VecDeque<Packet>,
    bytes: u64,
    cells: u64,
}

impl DropTail {
    pub fn new(cfg: DropTailConfig) -> Self {
        // Reserve what the limit can hold (bounded, so a huge byte limit does not reserve
        // gigabytes): the hot path then never reallocates.
        let reserve = cfg.limit_packets.unwrap_or(1024).min(1 << 16) as usize;
        DropTail { cfg, packets: VecDeque::with_capacity(reserve), bytes: 0, cells: 0 }
    }
}

impl QueueDiscipline for DropTail {
    #[inline]
    fn enqueue(&mut self, _now: Time, pkt: Packet) -> Result<(), (Packet, Admission)> {
        let size = pkt.ip_bytes as u64;
        let cells = self.cfg.cells(pkt.ip_bytes);
        let over_packets = self.cfg.limit_packets.is_some_and(|l| self.packets.len() as u64 + 1 > l);
        let over_bytes = self.cfg.limit_bytes.is_some_and(|l| self.bytes + size > l);
        let over_cells = self.cfg.limit_cells.is_some_and(|l| self.cells + cells > l);
        if over_packets || over_bytes || over_cells {
            return Err((pkt, Admission::Overflow));
        }
        self.bytes += size;
        self.cells += cells;
        self.packets.push_back(pkt);
        Ok(())
    }

    /// An empty queue admits the packet if it fits the limits on its own; no need to store it.
    #[inline]
    fn on_idle_arrival(&mut self, _now: Time, pkt: Packet) -> Result<Packet, (Packet, Admission)> {
        debug_assert!(self.packets.is_empty());
        let fits = self.cfg.limit_packets.is_none_or(|l| l >= 1)
            && self.cfg.limit_bytes.is_none_or(|l| pkt.ip_bytes as u64 <= l)
            && self.cfg.limit_cells.is_none_or(|l| self.cfg.cells(pkt.ip_bytes) <= l);
        if fits {
            Ok(pkt)
        } else {
            Err((pkt, Admission::Overflow))
        }
    }

    #[inline]
    fn dequeue(&mut self, _now: Time) -> Option<Packet> {
        let pkt = self.packets.pop_front()?;
        self.bytes -= pkt.ip_bytes as u64;
        self.cells -= self.cfg.cells(pkt.ip_bytes);
        Some(pkt)
    }

    fn peek(&self) -> Option<&Packet> {
        self.packets.front()
    }

    fn room_packets(&self, ip_bytes: u32) -> u64 {
        let mut room = u64::MAX;
        if let Some(l) = self.cfg.limit_packets {
            room = room.min(l.saturating_sub(self.packets.len() as u64));
        }
        if let Some(l) = self.cfg.limit_bytes {
            room = room.min(l.saturating_sub(self.bytes) / (ip_bytes as u64).max(1));
        }
        if let Some(l) = self.cfg.limit_cells {
            room = room.min(l.saturating_sub(self.cells) / self.cfg.cells(ip_bytes).max(1));
        }
        room
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
    use crate::packet::testing::data as pkt;

    fn no_limits() -> DropTailConfig {
        DropTailConfig { limit_packets: None, limit_bytes: None, cell_bytes: None, limit_cells: None }
    }

    #[test]
    fn cells_of_two_kilobytes_hold_twenty_packets_of_4148_bytes() {
        // Document 002: 60 buffers of 2 KB; a 4096-byte segment + 52 header bytes takes 3.
        let mut q = DropTail::new(DropTailConfig { cell_bytes: Some(2048), limit_cells: Some(60), ..no_limits() });
        let admitted = (0..25).filter(|&i| q.enqueue(0, pkt(i, 4148)).is_ok()).count();
        assert_eq!(admitted, 20);
        // A small packet (one cell) no longer fits either: 60 of 60 cells are taken.
        assert!(q.enqueue(0, pkt(99, 100)).is_err());
        q.dequeue(0);
        assert!(q.enqueue(0, pkt(100, 4148)).is_ok(), "freed three cells");
    }

    #[test]
    fn idle_arrival_answers_as_enqueue_then_dequeue_would() {
        let cases = [
            (DropTailConfig { limit_packets: Some(1), ..no_limits() }, true),
            (DropTailConfig { limit_bytes: Some(1000), ..no_limits() }, false),
            (DropTailConfig { cell_bytes: Some(512), limit_cells: Some(2), ..no_limits() }, false),
            (DropTailConfig { cell_bytes: Some(512), limit_cells: Some(3), ..no_limits() }, true),
        ];
        for (cfg, admitted) in cases {
            let mut direct = DropTail::new(cfg.clone());
            let mut queued = DropTail::new(cfg);
            let via_queue = queued.enqueue(0, pkt(1, 1500)).is_ok() && queued.dequeue(0).is_some();
            assert_eq!(direct.on_idle_arrival(0, pkt(1, 1500)).is_ok(), admitted);
            assert_eq!(via_queue, admitted);
            assert_eq!(direct.len_packets(), 0, "nothing stays queued");
        }
    }

    #[test]
    fn room_is_what_enqueue_then_admits() {
        let cases = [
            DropTailConfig { limit_packets: Some(5), ..no_limits() },
            DropTailConfig { limit_bytes: Some(10_000), ..no_limits() },
            DropTailConfig { cell_bytes: Some(2048), limit_cells: Some(60), ..no_limits() },
            DropTailConfig { limit_packets: Some(4), limit_bytes: Some(10_000), ..no_limits() },
        ];
        for cfg in cases {
            let mut q = DropTail::new(cfg);
            q.enqueue(0, pkt(0, 700)).unwrap();
            let room = q.room_packets(1500);
            let admitted = (1..100).take_while(|&i| q.enqueue(0, pkt(i, 1500)).is_ok()).count() as u64;
            assert_eq!(room, admitted);
            assert_eq!(q.room_packets(1500), 0);
        }
        assert_eq!(DropTail::new(no_limits()).room_packets(1500), u64::MAX);
    }

    #[test]
    fn packet_limit_drops_the_arrival_and_keeps_fifo_order() {
        let mut q = DropTail::new(DropTailConfig { limit_packets: Some(2), ..no_limits() });
        assert!(q.enqueue(0, pkt(0, 1500)).is_ok());
        assert!(q.enqueue(0, pkt(1, 1500)).is_ok());
        assert_eq!(q.enqueue(0, pkt(2, 1500)).unwrap_err().0.seq, 2);
        assert_eq!(q.dequeue(0).unwrap().seq, 0);
        assert_eq!(q.dequeue(0).unwrap().seq, 1);
        assert!(q.dequeue(0).is_none());
    }

    #[test]
    fn byte_limit_counts_ip_bytes() {
        let mut q = DropTail::new(DropTailConfig { limit_bytes: Some(3000), ..no_limits() });
        assert!(q.enqueue(0, pkt(0, 1500)).is_ok());
        assert!(q.enqueue(0, pkt(1, 1000)).is_ok());
        assert!(q.enqueue(0, pkt(2, 1500)).is_err(), "2500 + 1500 > 3000");
        assert!(q.enqueue(0, pkt(3, 500)).is_ok(), "exactly 3000 fits");
        assert_eq!(q.len_bytes(), 3000);
        assert_eq!(q.len_packets(), 3);
    }
}
