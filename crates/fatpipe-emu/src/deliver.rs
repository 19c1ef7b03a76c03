//! Writing what the links release into the destination hosts' TUN devices.
//!
//! A device without the virtio-net header gets every packet by itself (one `write` each). A
//! device with it (`tun::Offload::Tso`) gets, as a NIC with GRO hands its kernel, the
//! consecutive segments of one TCP flow merged into one super-packet (`gso::follows`
//! decides), written with one `writev` from the pool's slots: the virtio header, the first
//! segment whole, then the payload of each of the others, no copy.
//!
//! When: each device has its receive side (`coalesce::Coalescing`). Without coalescing
//! (`rx_usecs` 0) what a link releases is written in the relay's pass that released it
//! (`flush` at its end), merged with what the same pass released. With it, the device holds
//! what arrives as a NIC does until its interrupt: `rx_usecs` after the release of the first
//! frame that found nothing pending, or at the release of the `rx_frames`-th frame
//! (`Device::due`). Every written segment records how late it was against its link's
//! release (`lateness`, which then includes the coalescing delay), against the interrupt it
//! was due at (`interrupt_lateness`, the relay's own lateness), and the delay coalescing
//! added (`coalescing_delay`, interrupt time less release time).

use crate::clock::Clock;
use crate::coalesce::Coalescing;
use crate::gso::{self, VnetHdr, VNET_HDR_LEN};
use crate::lateness::Lateness;
use crate::pool::Pool;
use fatpipe_core::time::Time;
use std::os::fd::RawFd;

/// Flows merged at once per device (`GRO_HASH_BUCKETS` is 8 in Linux's net/core/gro.c):
/// a further flow's segment closes the oldest merge (it is written at the interrupt).
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
    /// Interrupts: the times a device's held packets were written together.
    pub interrupts: u64,
}

/// What one write carries: one packet, or one flow's segments to merge (slots and release
/// times, in order).
struct Held {
    slots: Vec<(u32, Time)>,
    mss: usize,
    ip_bytes: usize,
    /// A TCP data segment (its checksum may be left to the device, it may merge).
    mergeable: bool,
}

/// A destination device and what it holds until its interrupt.
struct Device {
    fd: RawFd,
    vnet: bool,
    rx: Coalescing,
    /// `held[..n]` are held, in arrival order; the rest are kept for their room.
    held: Vec<Held>,
    n: usize,
    /// Indices in `held` of the merges that may still grow, oldest first.
    open: Vec<usize>,
    /// Frames held, and when the interrupt is due (None: nothing held).
    frames: u32,
    due: Option<Time>,
    /// In `Delivery::pending`.
    queued: bool,
}

pub(crate) struct Delivery {
    devices: Vec<Device>,
    /// Devices that may hold packets.
    pending: Vec<usize>,
    iov: Iovecs,
    hdr: [u8; VNET_HDR_LEN],
    pub counters: WriteCounters,
    clock: Clock,
    /// How late each packet was written against its release, against its interrupt, and
    /// the delay coalescing added, from `since` (the run's epoch) on.
    pub lateness: Lateness,
    pub interrupt_lateness: Lateness,
    pub coalescing_delay: Lateness,
    since: Option<Time>,
    /// The shortest coalescing delay of any device (0 if one writes at each release).
    min_hold_ps: Time,
}

/// `writev`'s vector, reused; it holds pointers only during one call (empty between
/// calls), so moving the relay to its thread moves no live pointer.
struct Iovecs(Vec<libc::iovec>);
// SAFETY: see above: the vector is cleared before each write returns.
unsafe impl Send for Iovecs {}

impl Delivery {
    /// The hosts' devices (descriptor, whether it takes the virtio header, its receive
    /// side), in port order.
    pub fn new(devices: impl IntoIterator<Item = (RawFd, bool, Coalescing)>, clock: Clock) -> Delivery {
        let devices: Vec<Device> = devices
            .into_iter()
            .map(|(fd, vnet, rx)| Device {
                fd,
                vnet,
                rx,
                held: Vec::new(),
                n: 0,
                open: Vec::with_capacity(OPEN_MERGES),
                frames: 0,
                due: None,
                queued: false,
            })
            .collect();
        let min_hold_ps = devices.iter().map(|d| d.rx.rx_usecs_ps).min().unwrap_or(0);
        Delivery {
            devices,
            pending: Vec::new(),
            iov: Iovecs(Vec::with_capacity(72)),
            hdr: [0; VNET_HDR_LEN],
            counters: WriteCounters::default(),
            clock,
            lateness: Lateness::default(),
            interrupt_lateness: Lateness::default(),
            coalescing_delay: Lateness::default(),
            since: None,
            min_hold_ps,
        }
    }

    /// Lateness counts for packets scheduled from `epoch` on.
    pub fn count_lateness_from(&mut self, epoch: Time) {
        self.since = Some(epoch);
    }

    /// Nothing a link releases at `t` is due before `t + min_hold_ps()`: the relay may sleep
    /// that long past its next link event.
    pub fn min_hold_ps(&self) -> Time {
        self.min_hold_ps
    }

    /// The earliest interrupt due among the devices holding packets.
    pub fn next_due(&self) -> Option<Time> {
        self.pending.iter().filter_map(|&d| self.devices[d].due).min()
    }

    /// Hands the packet in `slot`, released at `time`, to device `d`: held until the
    /// device's interrupt (at the end of this pass without coalescing), merged with the
    /// flow's segment before it where GRO allows. The slot returns to the pool once written.
    pub fn deliver(&mut self, pool: &mut Pool, d: usize, slot: u32, time: Time) {
        let dev = &mut self.devices[d];
        let payload = if dev.vnet && dev.rx.gro { gso::mergeable(pool.packet(slot)) } else { None };
        if payload.is_none() && dev.rx.rx_usecs_ps == 0 {
            // As before coalescing: at once, after what the device holds (a flow's order).
            self.write_device(pool, d);
            self.counters.interrupts += 1;
            self.write_one(pool, d, slot, time, time, false);
            return;
        }
        match payload {
            Some(payload) => self.hold_segment(pool, d, slot, time, payload),
            None => {
                let dev = &mut self.devices[d];
                // Later segments must not merge into what came before this packet.
                dev.open.clear();
                let h = dev.push();
                h.slots.push((slot, time));
                h.mergeable = false;
            }
        }
        let dev = &mut self.devices[d];
        dev.frames += 1;
        let mut due = dev.due.unwrap_or(time + dev.rx.rx_usecs_ps);
        if dev.frames >= dev.rx.rx_frames {
            due = due.min(time);
        }
        dev.due = Some(due);
        if !dev.queued {
            dev.queued = true;
            self.pending.push(d);
        }
    }

    /// A TCP data segment of `payload` bytes joins its flow's open merge, or opens one.
    fn hold_segment(&mut self, pool: &Pool, d: usize, slot: u32, time: Time, payload: usize) {
        let p = pool.packet(slot);
        let dev = &mut self.devices[d];
        let found = dev.open.iter().position(|&i| gso::same_flow(pool.packet(dev.held[i].slots[0].0), p));
        if let Some(k) = found {
            let i = dev.open[k];
            let m = &mut dev.held[i];
            let (first, last) = (pool.packet(m.slots[0].0), pool.packet(m.slots[m.slots.len() - 1].0));
            if gso::follows(first, last, p, m.mss, m.ip_bytes) {
                m.ip_bytes += payload;
                m.slots.push((slot, time));
                return;
            }
            dev.open.remove(k);
        } else if dev.open.len() == OPEN_MERGES {
            dev.open.remove(0);
        }
        let i = dev.n;
        let m = dev.push();
        m.slots.push((slot, time));
        m.mss = payload;
        m.ip_bytes = p.len();
        m.mergeable = true;
        dev.open.push(i);
    }

    /// Writes what every device whose interrupt is due at `t` holds.
    pub fn flush(&mut self, pool: &mut Pool, t: Time) {
        let mut k = 0;
        while k < self.pending.len() {
            let d = self.pending[k];
            match self.devices[d].due {
                Some(due) if due > t => k += 1,
                _ => {
                    self.pending.swap_remove(k);
                    self.devices[d].queued = false;
                    self.write_device(pool, d);
                }
            }
        }
    }

    /// The interrupt of device `d`: everything it holds, in order.
    fn write_device(&mut self, pool: &mut Pool, d: usize) {
        let Some(due) = self.devices[d].due else { return };
        self.counters.interrupts += 1;
        for i in 0..self.devices[d].n {
            let mut m = std::mem::take(&mut self.devices[d].held[i].slots);
            let (mss, ip_bytes, mergeable) = {
                let h = &self.devices[d].held[i];
                (h.mss, h.ip_bytes, h.mergeable)
            };
            if m.len() == 1 {
                self.write_one(pool, d, m[0].0, m[0].1, due, mergeable);
            } else {
                self.write_merge(pool, d, &m, mss, ip_bytes, due);
            }
            m.clear();
            self.devices[d].held[i].slots = m;
        }
        let dev = &mut self.devices[d];
        dev.n = 0;
        dev.open.clear();
        dev.frames = 0;
        dev.due = None;
    }

    /// One packet by itself; with the virtio header, a TCP segment with data leaves its
    /// checksum to the device (`offload_checksum`), anything else goes whole.
    fn write_one(&mut self, pool: &mut Pool, d: usize, slot: u32, time: Time, due: Time, offload_checksum: bool) {
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
        self.record(time, due);
        pool.put(slot);
    }

    /// One flow's segments as one super-packet.
    fn write_merge(
        &mut self,
        pool: &mut Pool,
        d: usize,
        slots: &[(u32, Time)],
        mss: usize,
        ip_bytes: usize,
        due: Time,
    ) {
        let last = slots[slots.len() - 1].0;
        let last_flags = pool.packet(last)[33];
        let h = gso::finish_merge(pool.packet_mut(slots[0].0), ip_bytes, slots.len(), mss, last_flags);
        h.write(&mut self.hdr);
        self.iov.0.push(iovec(&self.hdr));
        self.iov.0.push(iovec(pool.packet(slots[0].0)));
        for &(slot, _) in &slots[1..] {
            let p = pool.packet(slot);
            self.iov.0.push(iovec(&p[h.hdr_len as usize..]));
        }
        let ok = crate::sys::writev(self.devices[d].fd, &self.iov.0).is_ok();
        self.iov.0.clear();
        self.count(slots.len() as u64, ok);
        self.counters.super_packets += 1;
        self.counters.super_packet_segments += slots.len() as u64;
        for &(slot, time) in slots {
            self.record(time, due);
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

    /// A packet released at `time` went out at the interrupt due at `due`; a packet released
    /// after that (in the same pass, or while the relay was late) was due at its release.
    fn record(&mut self, time: Time, due: Time) {
        let due = due.max(time);
        if self.since.is_some_and(|e| time >= e) {
            let now = self.clock.now();
            self.lateness.record(now.saturating_sub(time));
            self.interrupt_lateness.record(now.saturating_sub(due));
            self.coalescing_delay.record(due.saturating_sub(time));
        }
    }
}

impl Device {
    /// A new held entry at the end (its room reused from earlier interrupts).
    fn push(&mut self) -> &mut Held {
        if self.n == self.held.len() {
            self.held.push(Held { slots: Vec::with_capacity(64), mss: 0, ip_bytes: 0, mergeable: false });
        }
        self.n += 1;
        &mut self.held[self.n - 1]
    }
}

fn iovec(b: &[u8]) -> libc::iovec {
    libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fatpipe_core::time::PS_PER_US;
    use std::os::fd::AsRawFd;

    /// A device that writes to /dev/null (no virtio header: one write per packet), with
    /// `rx_usecs` and `rx_frames`, and a pool with one packet per delivery.
    fn setup(rx_usecs: u64, rx_frames: u32) -> (Delivery, Pool, std::fs::File) {
        let null = std::fs::OpenOptions::new().write(true).open("/dev/null").expect("/dev/null");
        let rx = Coalescing { gro: true, rx_usecs_ps: rx_usecs * PS_PER_US, rx_frames };
        let d = Delivery::new([(null.as_raw_fd(), false, rx)], Clock::start());
        (d, Pool::new(64, 16), null)
    }

    fn deliver_at(d: &mut Delivery, pool: &mut Pool, us: u64) {
        let slot = pool.take();
        pool.set_len(slot, 40);
        d.deliver(pool, 0, slot, us * PS_PER_US);
    }

    #[test]
    fn held_until_rx_usecs_after_the_first_frame() {
        let (mut d, mut pool, _null) = setup(50, 32);
        assert_eq!(d.min_hold_ps(), 50 * PS_PER_US);
        for us in [0, 10, 20] {
            deliver_at(&mut d, &mut pool, us);
            d.flush(&mut pool, us * PS_PER_US);
        }
        assert_eq!((d.counters.writes, d.next_due()), (0, Some(50 * PS_PER_US)));
        d.flush(&mut pool, 50 * PS_PER_US - 1);
        assert_eq!(d.counters.writes, 0);
        d.flush(&mut pool, 50 * PS_PER_US);
        assert_eq!((d.counters.writes, d.counters.interrupts, d.next_due()), (3, 1, None));
        // A lone packet later: written by its own deadline, not before.
        deliver_at(&mut d, &mut pool, 100);
        d.flush(&mut pool, 149 * PS_PER_US);
        assert_eq!(d.counters.writes, 3);
        d.flush(&mut pool, 150 * PS_PER_US);
        assert_eq!((d.counters.writes, d.counters.interrupts), (4, 2));
    }

    #[test]
    fn rx_frames_fire_the_interrupt_at_once() {
        let (mut d, mut pool, _null) = setup(50, 4);
        for us in 0..3 {
            deliver_at(&mut d, &mut pool, us);
        }
        assert_eq!(d.next_due(), Some(50 * PS_PER_US));
        deliver_at(&mut d, &mut pool, 3);
        assert_eq!(d.next_due(), Some(3 * PS_PER_US));
        d.flush(&mut pool, 3 * PS_PER_US);
        assert_eq!((d.counters.writes, d.counters.interrupts), (4, 1));
    }

    #[test]
    fn interrupts_at_most_every_rx_usecs_and_each_packet_by_its_deadline() {
        // A packet every 3 us for 3 ms, the relay's passes at every release and deadline.
        let (mut d, mut pool, _null) = setup(50, 1000);
        d.count_lateness_from(0);
        let mut interrupts = Vec::new();
        let mut t = 0;
        while t <= 3000 {
            deliver_at(&mut d, &mut pool, t);
            let before = d.counters.interrupts;
            let due = d.next_due().expect("held");
            // Nothing is due before the deadline the first frame set.
            d.flush(&mut pool, due - 1);
            assert_eq!(d.counters.interrupts, before);
            if due <= (t + 3) * PS_PER_US {
                d.flush(&mut pool, due);
                assert_eq!(d.counters.interrupts, before + 1);
                interrupts.push(due);
            }
            t += 3;
        }
        assert!(interrupts.len() > 50);
        assert!(interrupts.windows(2).all(|w| w[1] - w[0] >= 50 * PS_PER_US), "{interrupts:?}");
        // Each packet waited at most rx_usecs, and the first of each interrupt that long.
        assert_eq!(d.coalescing_delay.count(), d.counters.writes);
        assert_eq!(d.coalescing_delay.max_ps(), 50 * PS_PER_US);
    }

    #[test]
    fn without_coalescing_every_pass_writes_what_it_released() {
        let (mut d, mut pool, _null) = setup(0, 1);
        assert_eq!(d.min_hold_ps(), 0);
        d.count_lateness_from(0);
        for us in 0..5 {
            deliver_at(&mut d, &mut pool, us);
            d.flush(&mut pool, us * PS_PER_US);
            assert_eq!(d.counters.writes, us + 1);
        }
        assert_eq!(d.coalescing_delay.max_ps(), 0);
    }
}
