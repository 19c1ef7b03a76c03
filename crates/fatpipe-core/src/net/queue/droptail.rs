//! Drop-tail FIFO: admit a packet while it fits the limits, drop arrivals otherwise.
//! Limits count packets, IP bytes, or fixed-size buffer cells (a packet must fit all that
//! are set). Cells model routers that store packets in buffers of a fixed size, such as the
//! 2 KB buffers of document 002's ANSNET routers, where a packet takes ceil(size / cell).
//! With a marking threshold K it is also the DCTCP paper's switch (Alizadeh et al. 2010
//! section 3.1): an ECN-capable arrival that finds K packets or more waiting is marked CE
//! (step marking on the instantaneous queue).

use super::{Admission, QueueDiscipline};
use crate::packet::{Ecn, Packet};
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DropTailConfig {
    /// Most packets waiting (None: no packet limit).
    pub limit_packets: Option<u64>,
    /// Most IP bytes waiting (None: no byte limit).
    pub limit_bytes: Option<u64>,
    /// Size of one buffer cell, bytes, and how many cells there are (both or neither).
    pub cell_bytes: Option<u32>,
    pub limit_cells: Option<u64>,
    /// Step marking: an ECT arrival finding at least this many packets waiting is marked CE
    /// (None, the key absent: no marking).
    pub mark_threshold_packets: Option<u64>,
}

impl DropTailConfig {
    /// Cells a packet of `ip_bytes` occupies (0 without cell accounting).
    pub fn cells(&self, ip_bytes: u32) -> u64 {
        self.cell_bytes.map_or(0, |c| ip_bytes.div_ceil(c.max(1)) as u64)
    }
}

pub struct DropTail {
    cfg: DropTailConfig,
    /// What waits: packets, IP bytes, cells.
    packets: u64,
    bytes: u64,
    cells: u64,
    marks: u64,
}

impl DropTail {
    pub fn new(cfg: DropTailConfig) -> Self {
        DropTail { cfg, packets: 0, bytes: 0, cells: 0, marks: 0 }
    }
}

impl QueueDiscipline for DropTail {
    #[inline]
    fn admit(&mut self, _now: Time, pkt: &mut Packet, starts_now: bool) -> Result<(), Admission> {
        let size = pkt.ip_bytes as u64;
        let cells = self.cfg.cells(pkt.ip_bytes);
        let over_packets = self.cfg.limit_packets.is_some_and(|l| self.packets + 1 > l);
        let over_bytes = self.cfg.limit_bytes.is_some_and(|l| self.bytes + size > l);
        let over_cells = self.cfg.limit_cells.is_some_and(|l| self.cells + cells > l);
        if over_packets || over_bytes || over_cells {
            return Err(Admission::Overflow);
        }
        if self.cfg.mark_threshold_packets.is_some_and(|k| self.packets >= k) && pkt.ecn.is_ect() {
            pkt.ecn.set(Ecn::CE);
            self.marks += 1;
        }
        if starts_now {
            return Ok(());
        }
        self.packets += 1;
        self.bytes += size;
        self.cells += cells;
        Ok(())
    }

    #[inline]
    fn depart(&mut self, _t: Time, ip_bytes: u32) {
        self.packets -= 1;
        self.bytes -= ip_bytes as u64;
        self.cells -= self.cfg.cells(ip_bytes);
    }

    #[inline]
    fn room_packets(&self, ip_bytes: u32) -> u64 {
        let mut room = u64::MAX;
        if let Some(l) = self.cfg.limit_packets {
            room = room.min(l.saturating_sub(self.packets));
        }
        if let Some(l) = self.cfg.limit_bytes {
            room = room.min(l.saturating_sub(self.bytes) / (ip_bytes as u64).max(1));
        }
        if let Some(l) = self.cfg.limit_cells {
            room = room.min(l.saturating_sub(self.cells) / self.cfg.cells(ip_bytes).max(1));
        }
        room
    }

    #[inline]
    fn len_packets(&self) -> usize {
        self.packets as usize
    }

    #[inline]
    fn len_bytes(&self) -> u64 {
        self.bytes
    }

    fn ecn_marks(&self) -> u64 {
        self.marks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testing::data;

    fn no_limits() -> DropTailConfig {
        DropTailConfig {
            limit_packets: None,
            limit_bytes: None,
            cell_bytes: None,
            limit_cells: None,
            mark_threshold_packets: None,
        }
    }

    #[test]
    fn step_marking_marks_ect_arrivals_at_or_above_k_waiting() {
        // The DCTCP paper's switch: mark when the queue the packet joins exceeds K.
        let mut q = DropTail::new(DropTailConfig { mark_threshold_packets: Some(2), ..no_limits() });
        let mut marked = Vec::new();
        for i in 0..4 {
            let mut p = data(i, 1500);
            p.ecn.set(if i % 2 == 0 { Ecn::ECT } else { Ecn::ECT1 });
            q.admit(0, &mut p, false).unwrap();
            marked.push(p.ecn.has(Ecn::CE));
        }
        assert_eq!(marked, [false, false, true, true]);
        let mut plain = data(9, 1500);
        q.admit(0, &mut plain, false).unwrap();
        assert!(!plain.ecn.has(Ecn::CE), "not ECN-capable: queued unmarked");
        assert_eq!(q.ecn_marks(), 2);
        for _ in 0..4 {
            q.depart(0, 1500);
        }
        let mut p = data(10, 1500);
        p.ecn.set(Ecn::ECT);
        q.admit(0, &mut p, false).unwrap();
        assert!(!p.ecn.has(Ecn::CE), "one waiting: below K again after departures");
    }

    fn admit(q: &mut DropTail, ip_bytes: u32) -> bool {
        q.admit(0, &mut data(0, ip_bytes), false).is_ok()
    }

    #[test]
    fn cells_of_two_kilobytes_hold_twenty_packets_of_4148_bytes() {
        // Document 002: 60 buffers of 2 KB; a 4096-byte segment + 52 header bytes takes 3.
        let mut q = DropTail::new(DropTailConfig { cell_bytes: Some(2048), limit_cells: Some(60), ..no_limits() });
        let admitted = (0..25).filter(|_| admit(&mut q, 4148)).count();
        assert_eq!(admitted, 20);
        // A small packet (one cell) no longer fits either: 60 of 60 cells are taken.
        assert!(!admit(&mut q, 100));
        q.depart(0, 4148);
        assert!(admit(&mut q, 4148), "freed three cells");
    }

    #[test]
    fn room_is_what_admit_then_takes() {
        let cases = [
            DropTailConfig { limit_packets: Some(5), ..no_limits() },
            DropTailConfig { limit_bytes: Some(10_000), ..no_limits() },
            DropTailConfig { cell_bytes: Some(2048), limit_cells: Some(60), ..no_limits() },
            DropTailConfig { limit_packets: Some(4), limit_bytes: Some(10_000), ..no_limits() },
        ];
        for cfg in cases {
            let mut q = DropTail::new(cfg);
            assert!(admit(&mut q, 700));
            let room = q.room_packets(1500);
            let admitted = (1..100).take_while(|_| admit(&mut q, 1500)).count() as u64;
            assert_eq!(room, admitted);
            assert_eq!(q.room_packets(1500), 0);
        }
        assert_eq!(DropTail::new(no_limits()).room_packets(1500), u64::MAX);
    }

    #[test]
    fn packet_limit_drops_the_arrival_and_departures_make_room() {
        let mut q = DropTail::new(DropTailConfig { limit_packets: Some(2), ..no_limits() });
        assert!(admit(&mut q, 1500));
        assert!(admit(&mut q, 1500));
        assert_eq!(q.admit(0, &mut data(2, 1500), false), Err(Admission::Overflow));
        q.depart(0, 1500);
        assert_eq!(q.len_packets(), 1);
        assert!(admit(&mut q, 1500));
    }

    #[test]
    fn byte_limit_counts_ip_bytes() {
        let mut q = DropTail::new(DropTailConfig { limit_bytes: Some(3000), ..no_limits() });
        assert!(admit(&mut q, 1500));
        assert!(admit(&mut q, 1000));
        assert!(!admit(&mut q, 1500), "2500 + 1500 > 3000");
        assert!(admit(&mut q, 500), "exactly 3000 fits");
        assert_eq!(q.len_bytes(), 3000);
        assert_eq!(q.len_packets(), 3);
    }
}
