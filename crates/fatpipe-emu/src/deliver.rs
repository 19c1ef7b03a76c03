//! Writing what the links release into the destination hosts' TUN devices.
//!
//! A device without the virtio-net header gets every packet by itself, at once (one
//! `write` each). A device with it (`tun::Offload::Tso`) gets, as a NIC with GRO hands its
//! kernel, the consecutive segments of one TCP flow that the links released in the same
//! pass of the relay merged into one super-packet (`gso::follows` decides), written with one
//! `writev` from the pool's slots: the virtio header, the first segment whole, then the
//! payload of each of the others, no copy. A merge holds segments only until the relay's
//! pass ends (`flush`): nothing is delayed past the wake-up that released it, and each
//! segment's release lateness is taken when it is written.

use crate::clock::Clock;
use crate::gso::{self, VnetHdr, VNET_HDR_LEN};
use crate::lateness::Lateness;
use crate::pool::Pool;
use fatpipe_core::time::Time;
use std::os::fd::RawFd;

/// Flows merged at once per device (`GRO_HASH_BUCKETS` is 8 in Linux's net/core/gro.c):
/// a further flow's segment writes the oldest merge out first.
const OPEN_MERGES: usize = 8;

/// The writes into the hosts' devices, for the summary.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteCounters {
    /// `write`/`writev` calls.
    pub writes: u64,
    /// Packets written (a super-packet counts its segments).
    pub segments: u64,
    /// Super-packets written (more than one segment), and the segments in them.
    pub super_packets: u64,
    pub super_packet_segments: u64,
    /// Writes the kernel refused, and the packets in them.
    pub failed_packets: u64,
}

/// One flow's segments being merged: their slots and scheduled times, in order.
struct Merge {
    slots: Vec<(u32, Time)>,
    mss: usize,
    ip_bytes: usize,
}

/// A destination device and its open merges.
struct Device {
    fd: RawFd,
    vnet: bool,
    merges: Vec<Merge>,
    /// Merges in use: `merges[..open]`, oldest first.
    open: usize,
    /// In `Delivery::pending`.
    queued: bool,
}

pub(crate) struct Delivery {
    devices: Vec<Device>,
    /// Devices that may have open merges.
    pending: Vec<usize>,
    iov: Iovecs,
    hdr: [u8; VNET_HDR_LEN],
    pub counters: WriteCounters,
    clock: Clock,
    /// How late each packet was written, from `since` (the run's epoch) on.
    pub lateness: Lateness,
    since: Option<Time>,
}

/// `writev`'s vector, reused; it holds pointers only during one call (empty between
/// calls), so moving the relay to its thread moves no live pointer.
struct Iovecs(Vec<libc::iovec>);
// SAFETY: see above: the vector is cleared before `write_merge` returns.
unsafe impl Send for Iovecs {}

impl Delivery {
    /// The hosts' devices (descriptor, whether it takes the virtio header), in port order.
    pub fn new(devices: impl IntoIterator<Item = (RawFd, bool)>, clock: Clock) -> Delivery {
        let devices = devices
            .into_iter()
            .map(|(fd, vnet)| Device {
                fd,
                vnet,
                merges: (0..OPEN_MERGES)
                    .map(|_| Merge { slots: Vec::with_capacity(64), mss: 0, ip_bytes: 0 })
                    .collect(),
                open: 0,
                queued: false,
            })
            .collect();
        Delivery {
            devices,
            pending: Vec::new(),
            iov: Iovecs(Vec::with_capacity(72)),
            hdr: [0; VNET_HDR_LEN],
            counters: WriteCounters::default(),
            clock,
            lateness: Lateness::default(),
            since: None,
        }
    }

    /// Lateness counts for packets scheduled from `epoch` on.
    pub fn count_lateness_from(&mut self, epoch: Time) {
        self.since = Some(epoch);
    }

    /// Hands the packet in `slot`, scheduled at `time`, to device `d`: written now, or held
    /// to merge with what the relay releases next in this pass. The slot returns to the pool
    /// once written.
    pub fn deliver(&mut self, pool: &mut Pool, d: usize, slot: u32, time: Time) {
        let dev = &mut self.devices[d];
        if !dev.vnet {
            self.write_single(pool, d, slot, time, false);
            return;
        }
        let Some(payload) = gso::mergeable(pool.packet(slot)) else {
            // Not for merging (an ACK, a SYN, UDP): after this device's merges, so a flow's
            // packets keep their order.
            self.flush_device(pool, d);
            self.write_single(pool, d, slot, time, false);
            return;
        };
        let p = pool.packet(slot);
        let dev = &mut self.devices[d];
        let found = dev.merges[..dev.open].iter().position(|m| gso::same_flow(pool.packet(m.slots[0].0), p));
        if let Some(i) = found {
            let m = &mut dev.merges[i];
            let (first, last) = (pool.packet(m.slots[0].0), pool.packet(m.slots[m.slots.len() - 1].0));
            if gso::follows(first, last, p, m.mss, m.ip_bytes) {
                m.ip_bytes += payload;
                m.slots.push((slot, time));
                return;
            }
            self.close_merge(pool, d, i);
        } else if dev.open == OPEN_MERGES {
            self.close_merge(pool, d, 0);
        }
        let dev = &mut self.devices[d];
        if !dev.queued {
            dev.queued = true;
            self.pending.push(d);
        }
        let m = &mut dev.merges[dev.open];
        m.slots.push((slot, time));
        m.mss = payload;
        m.ip_bytes = pool.packet(slot).len();
        dev.open += 1;
    }

    /// Writes every open merge (the end of the relay's pass).
    pub fn flush(&mut self, pool: &mut Pool) {
        while let Some(d) = self.pending.pop() {
            self.devices[d].queued = false;
            self.flush_device(pool, d);
        }
    }

    fn flush_device(&mut self, pool: &mut Pool, d: usize) {
        while self.devices[d].open > 0 {
            self.close_merge(pool, d, 0);
        }
    }

    /// Writes merge `i` of device `d` and closes it (the later merges move up one).
    fn close_merge(&mut self, pool: &mut Pool, d: usize, i: usize) {
        let dev = &mut self.devices[d];
        let mut m = std::mem::replace(&mut dev.merges[i], Merge { slots: Vec::new(), mss: 0, ip_bytes: 0 });
        dev.merges[i..dev.open].rotate_left(1);
        dev.open -= 1;
        let n = m.slots.len();
        if n == 1 {
            self.write_single(pool, d, m.slots[0].0, m.slots[0].1, true);
        } else {
            self.write_merge(pool, d, &m);
        }
        m.slots.clear();
        let dev = &mut self.devices[d];
        dev.merges[dev.open] = m;
    }

    /// One packet by itself; with the virtio header, a TCP segment with data leaves its
    /// checksum to the device (`offload_checksum`), anything else goes whole.
    fn write_single(&mut self, pool: &mut Pool, d: usize, slot: u32, time: Time, offload_checksum: bool) {
        let dev = &self.devices[d];
        let ok = if dev.vnet {
            let h = if offload_checksum {
                let len = pool.packet(slot).len();
                let flags = pool.packet(slot)[33];
                gso::finish_merge(pool.packet_mut(slot), len, 1, 0, flags)
            } else {
                VnetHdr::default()
            };
            h.write(&mut self.hdr);
            let p = pool.packet(slot);
            self.iov.0.push(iovec(&self.hdr));
            self.iov.0.push(iovec(p));
            let ok = crate::sys::writev(dev.fd, &self.iov.0).is_ok();
            self.iov.0.clear();
            ok
        } else {
            crate::sys::write(dev.fd, pool.packet(slot)).is_ok()
        };
        self.count(1, ok);
        self.record(time);
        pool.put(slot);
    }

    /// A merge of several segments as one super-packet.
    fn write_merge(&mut self, pool: &mut Pool, d: usize, m: &Merge) {
        let last = m.slots[m.slots.len() - 1].0;
        let last_flags = pool.packet(last)[33];
        let h = gso::finish_merge(pool.packet_mut(m.slots[0].0), m.ip_bytes, m.slots.len(), m.mss, last_flags);
        h.write(&mut self.hdr);
        self.iov.0.push(iovec(&self.hdr));
        self.iov.0.push(iovec(pool.packet(m.slots[0].0)));
        for &(slot, _) in &m.slots[1..] {
            let p = pool.packet(slot);
            self.iov.0.push(iovec(&p[h.hdr_len as usize..]));
        }
        let ok = crate::sys::writev(self.devices[d].fd, &self.iov.0).is_ok();
        self.iov.0.clear();
        self.count(m.slots.len() as u64, ok);
        self.counters.super_packets += 1;
        self.counters.super_packet_segments += m.slots.len() as u64;
        for &(slot, time) in &m.slots {
            self.record(time);
            pool.put(slot);
        }
    }

    fn count(&mut self, packets: u64, ok: bool) {
        self.counters.writes += 1;
        self.counters.segments += packets;
        if !ok {
            self.counters.failed_packets += packets;
        }
    }

    fn record(&mut self, time: Time) {
        if self.since.is_some_and(|e| time >= e) {
            self.lateness.record(self.clock.now().saturating_sub(time));
        }
    }
}

fn iovec(b: &[u8]) -> libc::iovec {
    libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() }
}
