//! How the window comes down during a reduction (fast recovery or CWR) in the Linux stack.
//!
//! - Proportional Rate Reduction (RFC 6937; Linux `tcp_cwnd_reduction`, the default since
//!   3.2): while more is in flight than ssthresh, send in proportion to what is delivered,
//!   sndcnt = ceil(ssthresh x prr_delivered / prior_cwnd) - prr_out, so that the flight
//!   falls to ssthresh over one round trip; once it is below, rebuild toward ssthresh by at
//!   most what each ACK delivered, one more when the ACK advanced SND.UNA and reported no
//!   new loss (PRR-SSRB). cwnd = in_flight + sndcnt after every ACK.
//! - Rate halving (Linux 2.4/2.6 `tcp_cwnd_down`, after Mathis et al.'s rate-halving):
//!   cwnd falls by one segment every second ACK, not below ssthresh / 2 (Linux 2.4's
//!   limit), and never above in_flight + 1; leaving the reduction sets cwnd to
//!   min(cwnd, ssthresh) (`tcp_complete_cwr`).

use crate::tcp::config::WindowReduction;

/// PRR's counters (Linux `prr_delivered`, `prr_out`), reset when a reduction starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Prr {
    /// Segments delivered to the receiver since the reduction started.
    pub delivered: u32,
    /// Segments sent since the reduction started.
    pub out: u32,
    /// Rate halving: ACKs counted toward the next one-segment decrease.
    halving_count: u32,
}

impl Prr {
    /// The congestion window after an ACK during a reduction. `newly_delivered`: segments
    /// the ACK delivered (cumulatively or by SACK); `newly_lost`: segments it marked lost;
    /// `una_advanced`: it moved SND.UNA. Returns None when the ACK delivered nothing (Linux
    /// leaves cwnd as it is).
    #[allow(clippy::too_many_arguments)]
    pub fn cwnd_after_ack(
        &mut self,
        mode: WindowReduction,
        cwnd: u32,
        ssthresh: u32,
        prior_cwnd: u32,
        in_flight: u32,
        newly_delivered: u32,
        newly_lost: u32,
        una_advanced: bool,
    ) -> Option<u32> {
        if newly_delivered == 0 || prior_cwnd == 0 {
            return None;
        }
        match mode {
            WindowReduction::Prr => {
                self.delivered += newly_delivered;
                let sndcnt = if in_flight > ssthresh {
                    // Proportional part (RFC 6937 section 3): ceil(ssthresh x delivered / prior_cwnd).
                    let allowed = (ssthresh as u64 * self.delivered as u64).div_ceil(prior_cwnd as u64);
                    allowed.saturating_sub(self.out as u64) as u32
                } else {
                    // Slow-start reduction bound: at most what was delivered, one more for an
                    // ACK that advanced SND.UNA without new loss.
                    let delta = ssthresh - in_flight;
                    let mut n = self.delivered.saturating_sub(self.out).max(newly_delivered);
                    if una_advanced && newly_lost == 0 {
                        n += 1;
                    }
                    n.min(delta)
                };
                // The first ACK of a recovery always lets the fast retransmission go.
                let sndcnt = sndcnt.max(u32::from(self.out == 0));
                Some(in_flight + sndcnt)
            }
            WindowReduction::RateHalving => {
                self.halving_count += 1;
                let decrease = self.halving_count / 2;
                self.halving_count %= 2;
                let mut cwnd = cwnd;
                if decrease > 0 && cwnd > ssthresh / 2 {
                    cwnd -= decrease.min(cwnd - ssthresh / 2);
                }
                Some(cwnd.min(in_flight + 1).max(1))
            }
        }
    }

    /// A segment went out during the reduction.
    pub fn on_send(&mut self) {
        self.out += 1;
    }

    /// The window when a reduction ends (Linux `tcp_end_cwnd_reduction`, 2.4/2.6
    /// `tcp_complete_cwr`).
    pub fn cwnd_at_end(mode: WindowReduction, cwnd: u32, ssthresh: u32) -> u32 {
        match mode {
            WindowReduction::Prr => ssthresh,
            WindowReduction::RateHalving => cwnd.min(ssthresh),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6937 section 5's first example: a window of 20 segments, one loss, ssthresh 10.
    /// Every ACK delivers one segment; PRR sends one segment for every other ACK, the
    /// retransmission on the first, so that 10 are in flight when recovery ends, where
    /// RFC 6675 would send nothing for 10 ACKs and then one per ACK.
    #[test]
    fn rfc6937_single_loss_sends_every_other_ack() {
        let mut prr = Prr::default();
        let (prior_cwnd, ssthresh) = (20, 10);
        let mut in_flight = 19; // 20 sent, one lost
        let mut sent_per_ack = vec![];
        for _ in 0..18 {
            in_flight -= 1; // the ACK reports one more segment delivered
            let cwnd =
                prr.cwnd_after_ack(WindowReduction::Prr, 0, ssthresh, prior_cwnd, in_flight, 1, 0, false).unwrap();
            let sent = cwnd.saturating_sub(in_flight);
            for _ in 0..sent {
                prr.on_send();
            }
            in_flight += sent;
            sent_per_ack.push(sent);
        }
        // ceil(10 k / 20) - out: 1, 0, 1, 0, ... ending with the flight at ssthresh.
        assert_eq!(&sent_per_ack[..8], &[1, 0, 1, 0, 1, 0, 1, 0], "{sent_per_ack:?}");
        assert_eq!(sent_per_ack.iter().sum::<u32>(), 9);
        assert_eq!(in_flight, ssthresh, "{sent_per_ack:?}");
    }

    #[test]
    fn below_ssthresh_the_window_rebuilds_by_what_is_delivered() {
        // Heavy losses left 4 segments in flight against ssthresh 10: each ACK that
        // advances SND.UNA delivering 2 lets 3 go (PRR-SSRB), never beyond ssthresh.
        let mut prr = Prr { delivered: 20, out: 20, halving_count: 0 };
        let cwnd = prr.cwnd_after_ack(WindowReduction::Prr, 0, 10, 20, 4, 2, 0, true).unwrap();
        assert_eq!(cwnd, 4 + 3);
        let cwnd = prr.cwnd_after_ack(WindowReduction::Prr, 0, 10, 20, 9, 2, 0, true).unwrap();
        assert_eq!(cwnd, 10, "capped at ssthresh");
        // Nothing delivered: the window stays.
        assert_eq!(prr.cwnd_after_ack(WindowReduction::Prr, 0, 10, 20, 9, 0, 0, true), None);
    }

    #[test]
    fn rate_halving_takes_one_segment_every_second_ack() {
        let mut prr = Prr::default();
        let mut cwnd = 20;
        let mut windows = vec![];
        for _ in 0..6 {
            cwnd = prr.cwnd_after_ack(WindowReduction::RateHalving, cwnd, 10, 20, 30, 1, 0, false).unwrap();
            windows.push(cwnd);
        }
        assert_eq!(windows, vec![20, 19, 19, 18, 18, 17]);
        // Never above what is in flight plus one.
        assert_eq!(prr.cwnd_after_ack(WindowReduction::RateHalving, 17, 10, 20, 5, 1, 0, false), Some(6));
        assert_eq!(Prr::cwnd_at_end(WindowReduction::RateHalving, 12, 10), 10);
        assert_eq!(Prr::cwnd_at_end(WindowReduction::RateHalving, 6, 10), 6);
    }
}
