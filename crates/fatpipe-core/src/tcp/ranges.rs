//! Disjoint, sorted byte ranges `[start, end)`: the receiver's out-of-order queue (and, in
//! later steps, SACK blocks and the sender's scoreboard).
//!
//! The cost of an insertion depends on the number of *holes*, not on the number of segments:
//! segments arriving in order behind a hole extend the last range in O(1). The vector keeps
//! its capacity, so after warm-up it never allocates.

#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    /// Adds `[start, end)`, merging with overlapping or adjacent ranges.
    pub fn insert(&mut self, start: u64, end: u64) {
        if start >= end {
            return;
        }
        // Fast path: the range continues (or overlaps the end of) the last range.
        if let Some(last) = self.ranges.last_mut() {
            if start >= last.0 && start <= last.1 {
                last.1 = last.1.max(end);
                return;
            }
            if start > last.1 {
                self.ranges.push((start, end));
                return;
            }
        } else {
            self.ranges.push((start, end));
            return;
        }
        // General case: first range whose end reaches `start`.
        let i = self.ranges.partition_point(|r| r.1 < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            s = s.min(self.ranges[j].0);
            e = e.max(self.ranges[j].1);
            j += 1;
        }
        if i == j {
            self.ranges.insert(i, (s, e));
        } else {
            self.ranges[i] = (s, e);
            self.ranges.drain(i + 1..j);
        }
    }

    /// Removes and returns the end of the first range if it starts at or before `point`
    /// (the receiver uses this to advance its next expected byte over buffered data).
    pub fn pop_reached(&mut self, point: u64) -> Option<u64> {
        match self.ranges.first() {
            Some(&(s, e)) if s <= point => {
                self.ranges.remove(0);
                Some(e)
            }
            _ => None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Total bytes covered.
    pub fn bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.1 - r.0).sum()
    }

    pub fn iter(&self) -> impl Iterator<Item = &(u64, u64)> {
        self.ranges.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ranges: &[(u64, u64)]) -> RangeSet {
        let mut s = RangeSet::default();
        for &(a, b) in ranges {
            s.insert(a, b);
        }
        s
    }

    #[test]
    fn appends_extend_last_range() {
        let s = set(&[(10, 20), (20, 30), (30, 40)]);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![(10, 40)]);
    }

    #[test]
    fn fills_holes_and_merges() {
        let mut s = set(&[(10, 20), (30, 40), (50, 60)]);
        assert_eq!(s.len(), 3);
        s.insert(15, 55);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![(10, 60)]);
        s.insert(0, 5);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![(0, 5), (10, 60)]);
        assert_eq!(s.bytes(), 55);
    }

    #[test]
    fn inserts_between_without_touching() {
        let s = set(&[(0, 10), (40, 50), (20, 30)]);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![(0, 10), (20, 30), (40, 50)]);
    }

    #[test]
    fn pop_reached_advances_over_buffered_data() {
        let mut s = set(&[(10, 20), (30, 40)]);
        assert_eq!(s.pop_reached(5), None);
        assert_eq!(s.pop_reached(10), Some(20));
        assert_eq!(s.pop_reached(20), None);
        assert_eq!(s.len(), 1);
    }
}
