//! The SACK scoreboard of a sender (RFC 6675), kept so that an ACK costs O(SACK blocks) range
//! operations whatever the window.
//!
//! RFC 6675 defines `IsLost`, `NextSeg` and `SetPipe` as walks over every segment. Here they
//! are derived from a few running totals instead:
//! - `sacked`: the SACKed byte ranges above SND.UNA, and their total;
//! - the *loss boundary* L: a hole (unSACKed byte) below L is lost. With RFC 6675's rule a byte
//!   is lost when more than (DupThresh - 1) x SMSS bytes above it are SACKed, so L is the
//!   start of the SACKed range at which, counting from the top, the SACKed bytes exceed that;
//!   found by walking down from the highest range, which stops after a few ranges. With FACK
//!   (Mathis and Mahdavi 1996) L = highest SACKed byte - DupThresh x SMSS. After a timeout
//!   every hole below the highest byte sent then is lost (as Linux marks them);
//! - `high_rxt`: retransmissions walk the lost holes upward, so every hole below `high_rxt`
//!   has been retransmitted once in this recovery, and `rxt_in_flight` (unSACKed bytes in
//!   [SND.UNA, high_rxt)) is what of those retransmissions is still in the network.
//!
//! Then pipe = outstanding - SACKed - lost holes + retransmissions in flight (RFC 6675 SetPipe).

use crate::tcp::ranges::RangeSet;

#[derive(Clone, Debug, Default)]
pub struct Scoreboard {
    sacked: RangeSet,
    /// Bytes SACKed above SND.UNA.
    sacked_bytes: u64,
    /// One past the highest byte retransmitted in this recovery (HighRxt).
    high_rxt: u64,
    /// UnSACKed bytes in [SND.UNA, high_rxt): retransmissions still in flight.
    rxt_in_flight: u64,
    /// After a timeout every hole below this is lost.
    lost_after_timeout_below: u64,
}

/// Where losses end, and what is SACKed above that point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LossBoundary {
    /// Every hole below this byte is lost.
    pub below: u64,
    /// SACKed bytes at or above `below`.
    pub sacked_above: u64,
}

impl Scoreboard {
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    /// Highest SACKed byte + 1 (FACK's "forward-most" byte).
    pub fn highest_sacked(&self) -> Option<u64> {
        self.sacked.highest_end()
    }

    pub fn is_sacked(&self, seq: u64) -> bool {
        self.sacked.containing(seq).is_some()
    }

    /// Where the next unSACKed byte at or after `seq` is.
    pub fn next_unsacked(&self, seq: u64) -> u64 {
        self.sacked.gap_at_or_after(seq).0
    }

    /// A new recovery (or a timeout) starts: retransmissions start again from SND.UNA.
    pub fn start_recovery(&mut self, snd_una: u64) {
        self.high_rxt = snd_una;
        self.rxt_in_flight = 0;
    }

    /// After a timeout, every hole below `snd_max` counts as lost.
    pub fn mark_all_lost(&mut self, snd_una: u64, snd_max: u64) {
        self.start_recovery(snd_una);
        self.lost_after_timeout_below = snd_max;
    }

    /// The cumulative ACK moved from `old_una` to `new_una`; returns the bytes of that range
    /// that had been SACKed already (delivered before this ACK).
    pub fn on_cumulative_ack(&mut self, old_una: u64, new_una: u64) -> u64 {
        // Holes below high_rxt were retransmitted: those now acknowledged leave the pipe.
        let split = new_una.min(self.high_rxt.max(old_una));
        let sacked_below_split = self.sacked.remove_below(split);
        self.rxt_in_flight -= (split - old_una) - sacked_below_split;
        let sacked_rest = self.sacked.remove_below(new_una);
        self.sacked_bytes -= sacked_below_split + sacked_rest;
        self.high_rxt = self.high_rxt.max(new_una);
        sacked_below_split + sacked_rest
    }

    /// Records one SACK block; returns the bytes it newly SACKs, and calls `on_new` for each
    /// newly SACKed part (the delivery-rate sampler needs them).
    pub fn on_sack_block(&mut self, start: u64, end: u64, snd_una: u64, mut on_new: impl FnMut(u64, u64)) -> u64 {
        let start = start.max(snd_una);
        if end <= start {
            return 0;
        }
        let mut newly = 0;
        if start < self.high_rxt {
            let n = self.sacked.insert_reporting(start, end.min(self.high_rxt), &mut on_new);
            self.rxt_in_flight -= n; // a retransmitted hole was SACKed
            newly += n;
        }
        if end > self.high_rxt {
            newly += self.sacked.insert_reporting(start.max(self.high_rxt), end, &mut on_new);
        }
        self.sacked_bytes += newly;
        newly
    }

    /// The loss boundary under RFC 6675's rule, or FACK's.
    pub fn loss_boundary(&self, snd_una: u64, mss: u64, dupthresh: u64, fack: bool) -> LossBoundary {
        let mut target = snd_una;
        if fack {
            if let Some(fack_seq) = self.sacked.highest_end() {
                target = fack_seq.saturating_sub(dupthresh * mss);
            }
        }
        target = target.max(self.lost_after_timeout_below);
        let threshold = (dupthresh.saturating_sub(1)) * mss;
        let mut acc = 0;
        for &(s, e) in self.sacked.iter_rev() {
            if e <= target {
                break; // everything below `target` is lost anyway
            }
            let above_target = e - s.max(target);
            if s >= target && !fack && acc + (e - s) > threshold {
                // RFC 6675: holes below this range have more than the threshold SACKed above.
                return LossBoundary { below: s, sacked_above: acc + (e - s) };
            }
            acc += above_target;
            if s < target {
                break;
            }
        }
        LossBoundary { below: target.max(snd_una), sacked_above: acc }
    }

    /// Unacknowledged bytes still in the network (RFC 6675 SetPipe).
    pub fn pipe(&self, snd_una: u64, snd_max: u64, lost: LossBoundary) -> u64 {
        let outstanding = snd_max - snd_una;
        let below = lost.below.min(snd_max);
        let lost_holes = (below - snd_una).saturating_sub(self.sacked_bytes - lost.sacked_above.min(self.sacked_bytes));
        (outstanding - self.sacked_bytes - lost_holes) + self.rxt_in_flight
    }

    /// Bytes of `[start, end)` not SACKed. Walks the SACKed ranges down from the highest, so
    /// it is cheap when `end` is near the top of the scoreboard (the loss boundary is: only a
    /// few segments are SACKed above it).
    pub fn unsacked_bytes(&self, start: u64, end: u64) -> u64 {
        if end <= start {
            return 0;
        }
        let mut sacked = 0;
        for &(s, e) in self.sacked.iter_rev() {
            if e <= start {
                break;
            }
            if s < end {
                sacked += e.min(end) - s.max(start);
            }
        }
        (end - start) - sacked
    }

    /// RFC 6675 NextSeg rule 1: the first lost hole not yet retransmitted, as (seq, length).
    pub fn next_lost_hole(&self, snd_una: u64, snd_max: u64, lost: LossBoundary, mss: u64) -> Option<(u64, u64)> {
        let (seq, gap_end) = self.sacked.gap_at_or_after(self.high_rxt.max(snd_una));
        if seq >= lost.below || seq >= snd_max {
            return None;
        }
        let end = gap_end.unwrap_or(snd_max).min(snd_max);
        Some((seq, (end - seq).min(mss)))
    }

    /// A hole `[seq, seq + len)` was retransmitted.
    pub fn on_retransmit(&mut self, seq: u64, len: u64) {
        if seq >= self.high_rxt {
            self.rxt_in_flight += len;
            self.high_rxt = seq + len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// Segments 0..20 sent; 2, 5 and 6 lost; the rest SACKed.
    fn board() -> Scoreboard {
        let mut b = Scoreboard::default();
        for seg in [1u64, 3, 4, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19] {
            b.on_sack_block(seg * MSS, (seg + 1) * MSS, 0, |_, _| {});
        }
        b.on_cumulative_ack(0, MSS); // segment 0 arrived in order
        b
    }

    #[test]
    fn rfc6675_loss_boundary_and_pipe() {
        let b = board();
        assert_eq!(b.sacked_bytes(), 16 * MSS);
        let lost = b.loss_boundary(MSS, MSS, 3, false);
        // Holes 2, 5, 6 all have more than 2 segments SACKed above them: all lost.
        assert_eq!(lost.below, 7 * MSS);
        // Outstanding 1..20 = 19 segments, 16 SACKed, 3 lost, nothing retransmitted yet.
        assert_eq!(b.pipe(MSS, 20 * MSS, lost), 0);
    }

    #[test]
    fn next_seg_walks_holes_and_pipe_counts_retransmissions() {
        let mut b = board();
        let (una, max) = (MSS, 20 * MSS);
        b.start_recovery(una);
        let lost = b.loss_boundary(una, MSS, 3, false);
        let mut sent = Vec::new();
        while let Some((seq, len)) = b.next_lost_hole(una, max, lost, MSS) {
            b.on_retransmit(seq, len);
            sent.push(seq / MSS);
        }
        assert_eq!(sent, vec![2, 5, 6]);
        assert_eq!(b.pipe(una, max, lost), 3 * MSS, "the three retransmissions");
    }

    #[test]
    fn sack_and_ack_of_retransmissions_leave_the_pipe() {
        let mut b = board();
        let (una, max) = (MSS, 20 * MSS);
        b.start_recovery(una);
        let lost = b.loss_boundary(una, MSS, 3, false);
        while let Some((seq, len)) = b.next_lost_hole(una, max, lost, MSS) {
            b.on_retransmit(seq, len);
        }
        // The retransmission of 5 is SACKed, then 2 arrives and the cumulative ACK jumps to 5.
        b.on_sack_block(5 * MSS, 6 * MSS, una, |_, _| {});
        // [1, 5) held SACKed segments 1, 3 and 4 and the retransmitted 2.
        assert_eq!(b.on_cumulative_ack(una, 5 * MSS), 3 * MSS);
        let lost = b.loss_boundary(5 * MSS, MSS, 3, false);
        assert_eq!(b.pipe(5 * MSS, max, lost), MSS, "only the retransmission of 6 is in flight");
    }

    #[test]
    fn fack_counts_everything_three_segments_below_the_highest_sack_as_lost() {
        let mut b = Scoreboard::default();
        b.on_sack_block(10 * MSS, 11 * MSS, 0, |_, _| {});
        let rfc = b.loss_boundary(0, MSS, 3, false);
        assert_eq!(rfc.below, 0, "one SACKed segment is not enough under RFC 6675");
        let fack = b.loss_boundary(0, MSS, 3, true);
        assert_eq!(fack.below, 8 * MSS);
    }

    #[test]
    fn unsacked_bytes_counts_the_holes_of_a_range() {
        let b = board();
        // Segments 2, 5 and 6 are the holes of [1, 20); [2, 7) holds three of them.
        assert_eq!(b.unsacked_bytes(2 * MSS, 7 * MSS), 3 * MSS);
        assert_eq!(b.unsacked_bytes(2 * MSS + 500, 5 * MSS + 100), 500 + 100);
        assert_eq!(b.unsacked_bytes(7 * MSS, 20 * MSS), 0);
        assert_eq!(b.unsacked_bytes(20 * MSS, 25 * MSS), 5 * MSS);
    }

    #[test]
    fn after_a_timeout_every_hole_is_lost() {
        let mut b = Scoreboard::default();
        b.on_sack_block(5 * MSS, 6 * MSS, 0, |_, _| {});
        b.mark_all_lost(0, 10 * MSS);
        let lost = b.loss_boundary(0, MSS, 3, false);
        assert_eq!(lost.below, 10 * MSS);
        assert_eq!(b.pipe(0, 10 * MSS, lost), 0);
    }
}
