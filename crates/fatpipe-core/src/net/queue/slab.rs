//! Packet storage for the disciplines that hold their packets (`net/queue/scheduled.rs`):
//! one slab of slots, sized for the queue's limit when the link is built, and first-in
//! first-out lists threaded through it. A discipline with many queues (FQ-CoDel's 1024)
//! keeps one `PacketList` per queue, three words, and every packet in one slab, so a
//! packet costs no allocation and a queue no memory of its own while it is empty.

use crate::packet::Packet;
use crate::time::Time;

/// No slot: the end of a list, or of the free list.
const NIL: u32 = u32::MAX;

/// A waiting packet, the time it entered the queue (sojourn times, CoDel), and the next
/// slot of its list.
#[derive(Clone, Copy, Default)]
struct Slot {
    pkt: Packet,
    enqueued: Time,
    next: u32,
}

/// Every slot of one queue discipline; free slots form a list of their own.
pub struct PacketSlab {
    slots: Vec<Slot>,
    free: u32,
}

/// One first-in first-out list in a `PacketSlab`, with its packets and IP bytes.
#[derive(Clone, Copy, Debug)]
pub struct PacketList {
    head: u32,
    tail: u32,
    len: u32,
    bytes: u64,
}

impl Default for PacketList {
    fn default() -> Self {
        PacketList { head: NIL, tail: NIL, len: 0, bytes: 0 }
    }
}

impl PacketList {
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// IP bytes of the list's packets (Linux's per-queue backlog).
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl PacketSlab {
    /// Room for `capacity` packets, reserved now (a queue's limit; capped so that a huge
    /// limit costs memory only when packets fill it: the slab then grows by doubling).
    pub fn with_capacity(capacity: usize) -> Self {
        PacketSlab { slots: Vec::with_capacity(capacity.min(1 << 20)), free: NIL }
    }

    /// Appends `pkt`, entering at `now`, to `list`.
    #[inline]
    pub fn push(&mut self, list: &mut PacketList, now: Time, pkt: &Packet) {
        let slot = Slot { pkt: *pkt, enqueued: now, next: NIL };
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.slots[i as usize].next;
            self.slots[i as usize] = slot;
            i
        } else {
            self.slots.push(slot);
            (self.slots.len() - 1) as u32
        };
        if list.tail == NIL {
            list.head = i;
        } else {
            self.slots[list.tail as usize].next = i;
        }
        list.tail = i;
        list.len += 1;
        list.bytes += pkt.ip_bytes as u64;
    }

    /// Takes the first packet of `list`, with the time it entered.
    #[inline]
    pub fn pop(&mut self, list: &mut PacketList) -> Option<(Time, Packet)> {
        if list.head == NIL {
            return None;
        }
        let i = list.head;
        let slot = self.slots[i as usize];
        list.head = slot.next;
        if list.head == NIL {
            list.tail = NIL;
        }
        list.len -= 1;
        list.bytes -= slot.pkt.ip_bytes as u64;
        self.slots[i as usize].next = self.free;
        self.free = i;
        Some((slot.enqueued, slot.pkt))
    }

    /// The first packet of `list` and when it entered, without taking it.
    #[inline]
    pub fn front(&self, list: &PacketList) -> Option<(Time, &Packet)> {
        (list.head != NIL).then(|| {
            let s = &self.slots[list.head as usize];
            (s.enqueued, &s.pkt)
        })
    }

    /// The packets of `list`, first first.
    pub fn iter<'a>(&'a self, list: &PacketList) -> impl Iterator<Item = &'a Packet> + 'a {
        let mut i = list.head;
        std::iter::from_fn(move || {
            (i != NIL).then(|| {
                let s = &self.slots[i as usize];
                i = s.next;
                &s.pkt
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::testing::data;

    #[test]
    fn lists_share_the_slab_and_keep_their_order() {
        let mut slab = PacketSlab::with_capacity(4);
        let (mut a, mut b) = (PacketList::default(), PacketList::default());
        slab.push(&mut a, 1, &data(1, 100));
        slab.push(&mut b, 2, &data(2, 200));
        slab.push(&mut a, 3, &data(3, 300));
        assert_eq!((a.len(), a.bytes(), b.len(), b.bytes()), (2, 400, 1, 200));
        assert_eq!(slab.iter(&a).map(|p| p.seq).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(slab.pop(&mut a).map(|(t, p)| (t, p.seq)), Some((1, 1)));
        // The freed slot is reused: no growth while packets come and go.
        slab.push(&mut b, 4, &data(4, 400));
        assert_eq!(slab.slots.len(), 3);
        assert_eq!(slab.front(&b).map(|(t, p)| (t, p.seq)), Some((2, 2)));
        assert_eq!(slab.pop(&mut b).map(|(_, p)| p.seq), Some(2));
        assert_eq!(slab.pop(&mut b).map(|(_, p)| p.seq), Some(4));
        assert!(slab.pop(&mut b).is_none() && b.is_empty() && b.bytes() == 0);
        assert_eq!(slab.pop(&mut a).map(|(_, p)| p.seq), Some(3));
        assert!(a.is_empty());
    }
}
