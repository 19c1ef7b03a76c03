//! Disjoint, sorted byte ranges `[start, end)`: the receiver's out-of-order queue (and, in
//! later steps, SACK blocks and the sender's scoreboard).
//!
//! The cost of an insertion depends on the number of *holes*, not on the number of segments:
//! segments arriving in order behind a hole extend the last range in O(1). The ranges sit
//! in a ring (`VecDeque`): the cumulative ACK and the receiver's in-order point remove
//! ranges at the front (`remove_below`, `pop_reached`), which in a vector shifted every
//! range behind them. The ring keeps its capacity, so after warm-up it never allocates.

use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    ranges: VecDeque<(u64, u64)>,
}

impl RangeSet {
    /// Adds `[start, end)`, merging with overlapping or adjacent ranges; returns how many
    /// bytes were not covered before.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        // Fast path: the range continues (or overlaps the end of) the last range.
        if let Some(last) = self.ranges.back_mut() {
            if start >= last.0 && start <= last.1 {
                let added = end.saturating_sub(last.1);
                last.1 = last.1.max(end);
                return added;
            }
            if start > last.1 {
                self.ranges.push_back((start, end));
                return end - start;
            }
        } else {
            self.ranges.push_back((start, end));
            return end - start;
        }
        // General case: first range whose end reaches `start`.
        let i = self.ranges.partition_point(|r| r.1 < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        let mut covered = 0;
        while j < self.ranges.len() && self.ranges[j].0 <= e {
            let (rs, re) = self.ranges[j];
            covered += re.min(end).saturating_sub(rs.max(start));
            s = s.min(rs);
            e = e.max(re);
            j += 1;
        }
        if i == j {
            self.ranges.insert(i, (s, e));
        } else {
            self.ranges[i] = (s, e);
            self.ranges.drain(i + 1..j);
        }
        (end - start) - covered
    }

    /// Calls `newly(start, end)` for each part of `[start, end)` not covered yet, in order,
    /// then inserts the range. Costs O(ranges overlapping it + log ranges).
    pub fn insert_reporting(&mut self, start: u64, end: u64, mut newly: impl FnMut(u64, u64)) -> u64 {
        if start >= end {
            return 0;
        }
        let mut cursor = start;
        let i = self.ranges.partition_point(|r| r.1 <= start);
        for &(rs, re) in self.ranges.range(i..) {
            if rs >= end {
                break;
            }
            if rs > cursor {
                newly(cursor, rs);
            }
            cursor = cursor.max(re);
        }
        if cursor < end {
            newly(cursor, end);
        }
        self.insert(start, end)
    }

    /// Forgets everything below `point`; returns the bytes removed. Amortized O(1) per range.
    pub fn remove_below(&mut self, point: u64) -> u64 {
        let whole = self.ranges.partition_point(|r| r.1 <= point);
        let mut removed: u64 = self.ranges.range(..whole).map(|r| r.1 - r.0).sum();
        self.ranges.drain(..whole);
        if let Some(first) = self.ranges.front_mut() {
            if first.0 < point {
                removed += point - first.0;
                first.0 = point;
            }
        }
        removed
    }

    /// The range containing byte `x`, if any.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        let i = self.ranges.partition_point(|r| r.1 <= x);
        self.ranges.get(i).copied().filter(|r| r.0 <= x)
    }

    /// The first uncovered byte at or after `x`, and where that gap ends (the start of the
    /// next range, or None when nothing is covered above it).
    pub fn gap_at_or_after(&self, x: u64) -> (u64, Option<u64>) {
        let i = self.ranges.partition_point(|r| r.1 <= x);
        match self.ranges.get(i) {
            Some(&(s, e)) if s <= x => (e, self.ranges.get(i + 1).map(|r| r.0)),
            Some(&(s, _)) => (x, Some(s)),
            None => (x, None),
        }
    }

    /// One past the highest covered byte.
    pub fn highest_end(&self) -> Option<u64> {
        self.ranges.back().map(|r| r.1)
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    /// Ranges from the highest down.
    pub fn iter_rev(&self) -> impl Iterator<Item = &(u64, u64)> {
        self.ranges.iter().rev()
    }

    /// Removes and returns the end of the first range if it starts at or before `point`
    /// (the receiver uses this to advance its next expected byte over buffered data).
    pub fn pop_reached(&mut self, point: u64) -> Option<u64> {
        match self.ranges.front() {
            Some(&(s, e)) if s <= point => {
                self.ranges.pop_front();
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
    fn insert_reports_newly_covered_bytes() {
        let mut s = set(&[(10, 20), (30, 40)]);
        assert_eq!(s.insert(15, 35), 10, "20..30 was new");
        assert_eq!(s.insert(0, 50), 20, "0..10 and 40..50");
        assert_eq!(s.insert(5, 45), 0);
        assert_eq!(s.insert(50, 60), 10, "adjacent append");
    }

    #[test]
    fn insert_reporting_names_the_new_parts() {
        let mut s = set(&[(10, 20), (30, 40)]);
        let mut parts = Vec::new();
        let n = s.insert_reporting(5, 45, |a, b| parts.push((a, b)));
        assert_eq!(parts, vec![(5, 10), (20, 30), (40, 45)]);
        assert_eq!(n, 20);
    }

    #[test]
    fn remove_below_trims_and_counts() {
        let mut s = set(&[(10, 20), (30, 40), (50, 60)]);
        assert_eq!(s.remove_below(35), 15);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![(35, 40), (50, 60)]);
        assert_eq!(s.remove_below(0), 0);
    }

    #[test]
    fn gaps_and_containing() {
        let s = set(&[(10, 20), (30, 40)]);
        assert_eq!(s.gap_at_or_after(0), (0, Some(10)));
        assert_eq!(s.gap_at_or_after(12), (20, Some(30)));
        assert_eq!(s.gap_at_or_after(20), (20, Some(30)));
        assert_eq!(s.gap_at_or_after(35), (40, None));
        assert_eq!(s.containing(15), Some((10, 20)));
        assert_eq!(s.containing(20), None);
        assert_eq!(s.highest_end(), Some(40));
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
