//! The receiving host's GRO and interrupt coalescing (Linux `net/core/gro.c`
//! `dev_gro_receive`, `net/ipv4/tcp_offload.c` `tcp_gro_receive`; the NIC's interrupt
//! moderation, ethtool `rx-usecs` / `rx-frames`).
//!
//! The NIC raises its interrupt `rx_usecs` after the first frame that finds none pending, or
//! once `rx-frames` frames have arrived; the NAPI poll then hands the frames to GRO, which
//! merges consecutive in-order segments of a connection into one super-segment before TCP
//! sees them. TCP then takes one segment of many MSS: its ACK (more than one full segment
//! unacknowledged, `__tcp_ack_snd_check`) covers them all -- a stretch ACK.
//!
//! A segment joins the held super-segment when `tcp_gro_receive` would let it: it starts
//! where the held one ends, carries the same TCP options (the timestamp: Linux's TSval
//! ticks in milliseconds, so segments sent within the same millisecond match) and the same
//! IP TOS (ECN bits), is no longer than the first segment (the super-segment's gso_size)
//! while every earlier one was that long, and the whole stays below `gro_max_size` (64 KiB).
//! A segment that cannot join completes the held one and is held in its place; TCP takes
//! the completed ones, in order, when the interrupt fires. Not modelled: adaptive moderation (net_dim), GRO's
//! per-poll flush of other flows (one receiver, one connection here), LRO.

use crate::packet::Packet;
use crate::time::{Time, PS_PER_MS};

/// A receiver's GRO state: the super-segments waiting for the interrupt.
#[derive(Clone, Debug)]
pub struct Gro {
    /// Completed super-segments, oldest first; kept between interrupts so that its room is
    /// allocated once (it holds at most `rx_frames` packets).
    done: Vec<Packet>,
    coalesce: Time,
    max_frames: u32,
    max_bytes: u32,
    mss_bytes: u32,
    held: Option<Packet>,
    /// The held super-segment ended with a segment shorter than its first: it takes no more.
    closed: bool,
    /// Frames since the interrupt was armed.
    frames: u32,
    /// When the pending interrupt fires.
    pub deadline: Option<Time>,
}

impl Gro {
    pub fn new(host: &super::HostConfig, mss_bytes: u32) -> Gro {
        Gro {
            done: Vec::new(),
            coalesce: host.rx_coalesce_ps,
            max_frames: host.rx_frames.max(1),
            max_bytes: host.gro_max_size_bytes,
            mss_bytes: mss_bytes.max(1),
            held: None,
            closed: false,
            frames: 0,
            deadline: None,
        }
    }

    /// How many wire segments a (super-)segment of `payload_bytes` stands for.
    pub fn segments(&self, payload_bytes: u32) -> u32 {
        payload_bytes.div_ceil(self.mss_bytes).max(1)
    }

    fn joins(&self, held: &Packet, seg: &Packet) -> bool {
        let gso_size = held.payload_bytes.min(self.mss_bytes);
        !self.closed
            && seg.seq == held.end_seq()
            && seg.payload_bytes > 0
            && seg.payload_bytes <= gso_size
            && seg.ts_val / PS_PER_MS == held.ts_val / PS_PER_MS
            && seg.ecn == held.ecn
            && held.ip_bytes + seg.payload_bytes < self.max_bytes
    }

    /// A data segment arrives from the wire. Returns whether the interrupt is due at once
    /// (rx-frames reached, or no coalescing).
    pub fn arrive(&mut self, now: Time, seg: &Packet) -> bool {
        self.frames += 1;
        if self.deadline.is_none() {
            self.deadline = Some(now + self.coalesce);
        }
        match self.held.filter(|held| self.joins(held, seg)) {
            Some(mut held) => {
                self.closed = seg.payload_bytes < held.payload_bytes.min(self.mss_bytes);
                held.payload_bytes += seg.payload_bytes;
                held.ip_bytes += seg.payload_bytes;
                held.retransmission |= seg.retransmission;
                self.held = Some(held);
            }
            None => {
                if let Some(done) = self.held.replace(*seg) {
                    self.done.push(done);
                }
                self.closed = seg.payload_bytes < self.mss_bytes;
            }
        }
        self.frames >= self.max_frames || self.coalesce == 0
    }

    /// The interrupt fires: the poll hands TCP every super-segment, oldest first, in a
    /// buffer lent from here (`restore` gives it back, so that its room is reused).
    pub fn interrupt(&mut self) -> Vec<Packet> {
        self.deadline = None;
        self.frames = 0;
        let mut all = std::mem::take(&mut self.done);
        all.extend(self.held.take());
        all
    }

    /// Returns the buffer `interrupt` lent, emptied.
    pub fn restore(&mut self, mut buffer: Vec<Packet>) {
        buffer.clear();
        self.done = buffer;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_US;

    fn host() -> super::super::HostConfig {
        super::super::HostConfig {
            gro: true,
            gro_max_size_bytes: 65_536,
            rx_coalesce_ps: 16 * PS_PER_US,
            rx_frames: 32,
            ..crate::host::pacing::tests::host()
        }
    }

    fn seg(i: u64, len: u32, ts: Time) -> Packet {
        Packet { seq: i * 1448, ts_val: ts, ip_bytes: len + 52, ..crate::packet::testing::data(0, len + 40) }
    }

    #[test]
    fn a_train_within_the_interrupt_delay_becomes_one_super_segment() {
        let mut g = Gro::new(&host(), 1448);
        for i in 0..10 {
            assert!(!g.arrive(i * 1_200_000, &seg(i, 1448, 0)));
        }
        assert_eq!(g.deadline, Some(16 * PS_PER_US));
        let [s] = g.interrupt()[..] else { panic!("one super-segment") };
        assert_eq!((s.seq, s.payload_bytes, s.ip_bytes), (0, 14_480, 14_480 + 52));
        assert_eq!(g.segments(s.payload_bytes), 10);
    }

    #[test]
    fn a_gap_a_new_millisecond_or_64_kib_starts_another() {
        let mut g = Gro::new(&host(), 1448);
        g.arrive(0, &seg(0, 1448, 0));
        g.arrive(1, &seg(2, 1448, 0)); // a hole
        g.arrive(2, &seg(3, 1448, PS_PER_MS)); // another TSval tick (1 ms)
        g.arrive(3, &seg(4, 1448, PS_PER_MS));
        let got: Vec<(u64, u32)> = g.interrupt().iter().map(|p| (p.seq / 1448, p.payload_bytes)).collect();
        assert_eq!(got, [(0, 1448), (2, 1448), (3, 2 * 1448)]);
        // 45 segments fit below 65,536 bytes (45 x 1448 + 52 = 65,212), the 46th does not.
        let mut g = Gro { max_frames: 1000, ..Gro::new(&host(), 1448) };
        for i in 0..46 {
            g.arrive(0, &seg(i, 1448, 0));
        }
        let sizes: Vec<u32> = g.interrupt().iter().map(|p| p.payload_bytes).collect();
        assert_eq!(sizes, [45 * 1448, 1448]);
    }

    #[test]
    fn rx_frames_fire_the_interrupt_early() {
        let mut g = Gro::new(&host(), 1448);
        for i in 0..31 {
            assert!(!g.arrive(0, &seg(i, 1448, 0)));
        }
        assert!(g.arrive(0, &seg(31, 1448, 0)));
        let sizes: Vec<u32> = g.interrupt().iter().map(|p| p.payload_bytes).collect();
        assert_eq!(sizes, [32 * 1448]);
        assert_eq!(g.deadline, None);
    }
}
