//! The wall clock the emulation runs on: CLOCK_MONOTONIC in picoseconds since the clock was
//! made, the unit of fatpipe-core's `Time`, so links driven in real time compute with the same
//! integers as in a simulation.

use fatpipe_core::time::{Time, PS_PER_NS};

/// Nanoseconds of CLOCK_MONOTONIC (never jumps, unlike the time of day).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A clock reading picoseconds from its origin. Copy: every thread keeps its own.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin_ns: u64,
}

impl Clock {
    /// A clock whose time 0 is now.
    pub fn start() -> Clock {
        Clock { origin_ns: monotonic_ns() }
    }

    /// A clock whose time 0 is `offset_ps` after this one's.
    pub fn shifted(&self, offset_ps: Time) -> Clock {
        Clock { origin_ns: self.origin_ns + offset_ps / PS_PER_NS }
    }

    /// Time since the origin (0 before it: use `reached` to wait for a time).
    #[inline]
    pub fn now(&self) -> Time {
        monotonic_ns().saturating_sub(self.origin_ns) * PS_PER_NS
    }

    /// Whether this clock has reached `t` (false before its origin, unlike `now() >= t`).
    #[inline]
    pub fn reached(&self, t: Time) -> bool {
        monotonic_ns() >= self.origin_ns + t / PS_PER_NS
    }

    /// Sleeps until this clock reads `t` (returns at once if it has passed). Absolute, so
    /// repeated sleeps do not drift.
    pub fn sleep_until(&self, t: Time) {
        let deadline_ns = self.origin_ns + t / PS_PER_NS;
        let ts = crate::sys::timespec(deadline_ns);
        // SAFETY: valid timespec; EINTR simply returns early and the callers loop on time.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
}

/// Asks the kernel to wake this thread's timers on time: the default timer slack of 50 us
/// would be added to every sleep (prctl(2) PR_SET_TIMERSLACK).
pub fn tight_timer_slack() {
    // SAFETY: prctl with an integer argument; failure only leaves the default slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}
