//! A random delay before sending, to break phase effects (Floyd and Jacobson, "On Traffic
//! Phase Effects in Packet-Switched Gateways", Internetworking: Research and Experience 3,
//! 1992): without randomness, flows through a drop-tail queue can lock into fixed phases
//! and one flow takes every loss.
//!
//! This is ns-2's `Agent/TCP overhead_` (tcp.cc `TcpAgent::send_much`, default 0): when the
//! window lets a segment go, the sender waits a uniform random time on [0, max] first; while
//! that wait runs, ACKs may open the window further but send nothing; when it ends, the
//! sender sends everything the window then allows. Real hosts get the same dither from
//! interrupt and scheduling jitter. Retransmissions on duplicate or partial ACKs go at once,
//! as ns-2's fast retransmit does. Off (max 0) it draws nothing, so runs stay byte-identical.

use crate::rng::Rng;
use crate::time::Time;

pub struct RandomSendDelay {
    /// Longest wait, picoseconds.
    max_ps: Time,
    /// The flow's own generator (scenario seed and flow name).
    rng: Rng,
    /// When the wait now running ends.
    deadline: Option<Time>,
    /// The wait has ended: this send pass goes without waiting (ns-2's `force`).
    released: bool,
}

impl RandomSendDelay {
    pub fn new(max_ps: Time, rng: Rng) -> Self {
        RandomSendDelay { max_ps, rng, deadline: None, released: false }
    }

    /// A segment could go now: returns when it may (None: at once). The first call draws a
    /// wait; once it is over, every segment of that send pass goes (ns-2's `force`).
    pub fn hold(&mut self, now: Time) -> Option<Time> {
        if self.released {
            return None;
        }
        match self.deadline {
            Some(deadline) if deadline <= now => {
                self.deadline = None;
                self.released = true;
                None
            }
            Some(deadline) => Some(deadline),
            None => {
                let deadline = now + (self.rng.uniform() * self.max_ps as f64) as Time;
                self.deadline = Some(deadline);
                Some(deadline)
            }
        }
    }

    /// A send pass is over: the next segment waits again.
    pub fn end_pass(&mut self) {
        self.released = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::PS_PER_MS;

    #[test]
    fn waits_are_uniform_up_to_the_maximum_and_one_wait_covers_a_pass() {
        let max = 10 * PS_PER_MS;
        let mut d = RandomSendDelay::new(max, Rng::new(3));
        let n = 20_000;
        let mut sum = 0.0;
        let mut now = 0;
        for _ in 0..n {
            let t = d.hold(now).expect("a wait is drawn");
            assert!(t >= now && t <= now + max);
            assert_eq!(d.hold(now), Some(t), "a running wait is not drawn again");
            d.end_pass();
            assert_eq!(d.hold(t), None, "the wait is over: the pass sends");
            assert_eq!(d.hold(t), None, "every segment of the pass");
            d.end_pass();
            sum += (t - now) as f64;
            now = t;
        }
        let mean = sum / n as f64 / max as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean wait {mean} of the maximum");
    }
}
