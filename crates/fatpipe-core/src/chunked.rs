//! A double-ended queue stored in fixed-size chunks, for the state that grows with the
//! window: a link's packets (`net/link.rs`).
//!
//! A `VecDeque` grows by doubling and keeps its capacity: a link that once held 81,216
//! packets (the 10 Gb/s dumbbell at the end of slow start) keeps room for 131,072, and on
//! the way it held both the old buffer and the new one. Here the memory follows the entries
//! held, in chunks of `N` entries: a chunk emptied at the front is kept as the one spare (the next to
//! fill at the back: a steady flow of packets allocates nothing), and any further empty
//! chunk is freed, so other queues can reuse it (the data packets of slow start's peak and
//! the ACKs of the steady state take turns in the same memory). At most one chunk is
//! partly filled at each end, plus the spare.
//!
//! An entry is found by arithmetic (`N` is a power of two: a shift and a mask) and one
//! load more than in a `VecDeque`, the chunk's address, from a table of a few hundred
//! entries that stays in cache.

use std::collections::VecDeque;

pub struct ChunkedDeque<T, const N: usize> {
    /// The chunks in order. Entry `i` is at position `head + i`: chunk `(head + i) / N`,
    /// slot `(head + i) % N` (a fixed-size chunk: no bounds check on the slot).
    chunks: VecDeque<Box<[T; N]>>,
    /// Slots at the front of the first chunk that have been popped.
    head: usize,
    len: usize,
    /// An empty chunk kept for the next push that needs one.
    spare: Option<Box<[T; N]>>,
}

impl<T, const N: usize> Default for ChunkedDeque<T, N> {
    fn default() -> Self {
        const { assert!(N.is_power_of_two()) };
        ChunkedDeque { chunks: VecDeque::new(), head: 0, len: 0, spare: None }
    }
}

impl<T: Copy + Default + std::fmt::Debug, const N: usize> std::fmt::Debug for ChunkedDeque<T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Copy + Default, const N: usize> ChunkedDeque<T, N> {
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn push_back(&mut self, value: T) {
        let p = self.head + self.len;
        if p == self.chunks.len() * N {
            self.add_chunk();
        }
        // SAFETY: the chunk holding position `p` was just added if it was missing.
        unsafe { self.chunks.get_mut(p / N).unwrap_unchecked()[p % N] = value };
        self.len += 1;
    }

    #[cold]
    fn add_chunk(&mut self) {
        let chunk = self.spare.take().unwrap_or_else(|| {
            // Built in place on the heap (`Box::new([..; N])` may build it on the stack).
            vec![T::default(); N].into_boxed_slice().try_into().unwrap_or_else(|_| unreachable!("N entries"))
        });
        self.chunks.push_back(chunk);
    }

    /// Removes the front entry. A chunk left empty becomes the spare (or is freed).
    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let value = self.chunks[0][self.head % N];
        self.head += 1;
        self.len -= 1;
        if self.head == N || self.len == 0 {
            self.drop_front_chunk();
        }
        Some(value)
    }

    /// Removes the back entry.
    #[inline]
    pub fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let p = self.head + self.len;
        let value = self.chunks[p / N][p % N];
        if self.len == 0 {
            self.drop_front_chunk();
        } else if p.is_multiple_of(N) {
            let chunk = self.chunks.pop_back().expect("an empty last chunk");
            self.keep_spare(chunk);
        }
        Some(value)
    }

    #[cold]
    fn drop_front_chunk(&mut self) {
        let chunk = self.chunks.pop_front().expect("the front chunk");
        self.head = 0;
        self.keep_spare(chunk);
    }

    fn keep_spare(&mut self, chunk: Box<[T; N]>) {
        if self.spare.is_none() {
            self.spare = Some(chunk);
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        let p = self.head + i;
        // SAFETY: `head + len <= chunks.len() * N` (every entry is in a chunk), so chunk
        // `p / N` exists for `p < head + len`. Unchecked, since this is on every packet's
        // path and the check cost a few per cent of the simulation.
        Some(unsafe { &self.chunks.get(p / N).unwrap_unchecked()[p % N] })
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        let p = self.head + i;
        // SAFETY: as in `get`.
        Some(unsafe { &mut self.chunks.get_mut(p / N).unwrap_unchecked()[p % N] })
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    #[inline]
    pub fn back(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    #[inline]
    pub fn back_mut(&mut self) -> Option<&mut T> {
        self.len.checked_sub(1).and_then(|i| self.get_mut(i))
    }

    /// The entries, front to back.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter()).skip(self.head).take(self.len)
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> + '_ {
        self.chunks.iter_mut().flat_map(|c| c.iter_mut()).skip(self.head).take(self.len)
    }

    /// The index of the first entry for which `pred` is false, the entries being ordered so
    /// that `pred` holds for a prefix (as `slice::partition_point`).
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.get(mid).expect("below len")) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl<T: Copy + Default, const N: usize> std::ops::Index<usize> for ChunkedDeque<T, N> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        self.get(i).expect("index below len")
    }
}

impl<T: Copy + Default, const N: usize> std::ops::IndexMut<usize> for ChunkedDeque<T, N> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i).expect("index below len")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random pushes and pops at both ends, checked against a `VecDeque`.
    #[test]
    fn behaves_as_a_vecdeque() {
        let mut d: ChunkedDeque<u64, 4> = ChunkedDeque::default();
        let mut v: VecDeque<u64> = VecDeque::new();
        let mut x = 12345u64;
        for step in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Phases that grow, shrink and hover, so chunks come and go.
            let grow = (step / 1000) % 3 != 1;
            match x % 8 {
                0..=3 if grow => {
                    d.push_back(step);
                    v.push_back(step);
                }
                0..=4 => assert_eq!(d.pop_front(), v.pop_front()),
                5 => assert_eq!(d.pop_back(), v.pop_back()),
                _ => {
                    d.push_back(step);
                    v.push_back(step);
                }
            }
            assert_eq!(d.len(), v.len());
            assert_eq!(d.front(), v.front());
            assert_eq!(d.back(), v.back());
            if let Some(i) = (!v.is_empty()).then(|| (x >> 8) as usize % v.len()) {
                assert_eq!(d.get(i), v.get(i));
                assert_eq!(d.partition_point(|&e| e < v[i]), i);
            }
        }
        assert!(d.iter().eq(v.iter()));
        for e in d.iter_mut() {
            *e += 1;
        }
        assert!(d.iter().copied().eq(v.iter().map(|e| e + 1)));
    }

    #[test]
    fn memory_follows_the_entries_held() {
        let mut d: ChunkedDeque<u32, 8> = ChunkedDeque::default();
        for i in 0..100 {
            d.push_back(i);
        }
        assert_eq!(d.chunks.len(), 13);
        for _ in 0..95 {
            d.pop_front();
        }
        // 5 left, across the last two chunks (96..100 in the thirteenth, 95 in the twelfth).
        assert_eq!((d.len(), d.chunks.len()), (5, 2));
        assert!(d.spare.is_some(), "one empty chunk kept");
        // A steady flow reuses the spare: the chunks in use stay two or three.
        for i in 0..1000 {
            d.push_back(i);
            d.pop_front();
            assert!(d.chunks.len() <= 2);
        }
    }
}
