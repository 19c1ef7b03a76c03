//! Round-trip rounds for algorithms that decide once per RTT (Vegas, FAST).
//!
//! A round starts on some ACK and ends on the first ACK that covers every byte that was
//! outstanding when it started: the data sent just after the start has then come back, one
//! round-trip later. This is Linux Vegas's `beg_snd_nxt` test (`after(ack, beg_snd_nxt)`),
//! counted here from acknowledged bytes because the algorithms do not see sequence numbers.

use super::CcState;

#[derive(Clone, Debug, Default)]
pub struct RoundTracker {
    /// Bytes acknowledged since the tracker was (re)started.
    acked_bytes: u64,
    /// `acked_bytes` at which the current round ends; None before the first round starts.
    round_end_bytes: Option<u64>,
    /// Rounds completed since the connection began (kept across restarts).
    completed: u64,
}

impl RoundTracker {
    /// Forgets the current round: the next ACK starts a new one (after loss recovery, whose
    /// ACKs say nothing about the window that is sent next).
    pub fn restart(&mut self) {
        *self = RoundTracker { completed: self.completed, ..RoundTracker::default() };
    }

    pub fn rounds_completed(&self) -> u64 {
        self.completed
    }

    /// Counts an ACK of `acked_bytes` new bytes, `s` being the state after it. Returns true
    /// when this ACK completes a round; the next round then starts at once.
    pub fn on_ack(&mut self, s: &CcState, acked_bytes: u64) -> bool {
        self.acked_bytes += acked_bytes;
        let outstanding_bytes = s.in_flight_segments as u64 * s.mss_bytes as u64;
        match self.round_end_bytes {
            Some(end) if self.acked_bytes >= end => {
                self.round_end_bytes = Some(self.acked_bytes + outstanding_bytes);
                self.completed += 1;
                true
            }
            Some(_) => false,
            None => {
                self.round_end_bytes = Some(self.acked_bytes + outstanding_bytes);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::INFINITE_SSTHRESH;

    fn state(in_flight_segments: u32) -> CcState {
        CcState { in_flight_segments, ..CcState::new(10, INFINITE_SSTHRESH, 1000) }
    }

    #[test]
    fn a_round_ends_when_the_data_outstanding_at_its_start_is_acknowledged() {
        let mut r = RoundTracker::default();
        // The first ACK starts a round with 4 segments outstanding.
        assert!(!r.on_ack(&state(4), 1000));
        assert!(!r.on_ack(&state(4), 1000));
        assert!(!r.on_ack(&state(4), 2000));
        // 4000 bytes later the round is over; the next one covers 6 segments.
        assert!(r.on_ack(&state(6), 1000));
        for _ in 0..5 {
            assert!(!r.on_ack(&state(6), 1000));
        }
        assert!(r.on_ack(&state(6), 1000));
        assert_eq!(r.rounds_completed(), 2);
        r.restart();
        assert!(!r.on_ack(&state(1), 1000), "a restarted tracker begins a fresh round");
    }
}
