//! The traffic engine: applications on real sockets, as NetSpec and iperf run them.
//!
//! Nothing here knows about namespaces or the relay: a caller opens sockets where it wants
//! them (the emulator inside a host's namespace, `fatpipe probe` on a real host) and runs the
//! application loops on its own threads. Times are picoseconds of a `Clock` whose time 0 is
//! the start of the measurement; every loop ends by itself at the `Schedule`'s end or when
//! `stop` is set, and checks both at least every `POLL_PS`.
//!
//! - `tcp`: sockets with the options a scenario sets (congestion control, buffers asked and
//!   granted, MSS clamp, pacing), the writer (bulk, or NetSpec burst mode with failed burst
//!   cycles counted as fatpipe-core's `source/burst.rs` counts them) and the reader (at once,
//!   or at a limited rate with core's `AppReader`);
//! - `udp`: datagrams on the schedule of core's `UdpFlow` (CBR, bursts, on-off), and a
//!   counting receiver;
//! - `tcp_info`: the kernel's per-connection state;
//! - `app`: one end of a TCP flow on its thread (connect, accept, send, receive).

pub mod app;
pub mod tcp;
pub mod tcp_info;
pub mod udp;

use crate::clock::Clock;
use fatpipe_core::time::Time;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Longest a loop waits before checking its stop conditions.
pub const POLL_PS: Time = 20_000_000_000; // 20 ms

/// When an application runs.
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    /// Time 0 is the start of the measurement.
    pub clock: Clock,
    /// The application starts.
    pub start_ps: Time,
    /// It stops writing (what it wrote is still delivered); None: never.
    pub stop_ps: Option<Time>,
    /// The measurement ends: every loop returns.
    pub end_ps: Time,
}

impl Schedule {
    /// Sleeps until `t` in steps of at most `POLL_PS`; false if `stop` was set or the
    /// measurement ended first.
    pub fn sleep_until(&self, t: Time, stop: &AtomicBool) -> bool {
        loop {
            if stop.load(Ordering::Relaxed) || self.clock.reached(self.end_ps) {
                return false;
            }
            if self.clock.reached(t) {
                return true;
            }
            // Before the origin now() reads 0: the steps still end at t.
            self.clock.sleep_until(t.min(self.clock.now() + POLL_PS).min(self.end_ps));
        }
    }

    /// Whether the loop must end now.
    pub fn over(&self, stop: &AtomicBool) -> bool {
        stop.load(Ordering::Relaxed) || self.clock.reached(self.end_ps)
    }
}

/// What an application did, updated as it runs (read by samplers from other threads).
#[derive(Debug, Default)]
pub struct Counters {
    /// Bytes written into the socket (TCP: accepted into the send buffer; UDP: payload of
    /// datagrams sent).
    pub written: AtomicU64,
    /// Bytes read by the receiving application.
    pub read: AtomicU64,
    /// Datagrams sent and received (UDP).
    pub datagrams_sent: AtomicU64,
    pub datagrams_received: AtomicU64,
    /// One more than the highest datagram number received (each datagram's payload starts
    /// with its number): the datagrams received plus the gaps, as iperf counts UDP loss.
    pub datagrams_expected: AtomicU64,
    /// Bursts written, and burst periods that ended before their burst was fully written.
    pub bursts: AtomicU64,
    pub failed_cycles: AtomicU64,
    /// Time of the last read that returned data, plus one (0: nothing read yet).
    pub last_read_ps: AtomicU64,
    /// The sending application wrote all it had to (a bulk flow with a byte count).
    pub writer_done: AtomicBool,
}

/// `Counters` read at one moment, as plain numbers (`fatpipe probe` sends them between hosts).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CountersSnapshot {
    pub written: u64,
    pub read: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub datagrams_expected: u64,
    pub bursts: u64,
    pub failed_cycles: u64,
    pub last_read_ps: Option<Time>,
    pub writer_done: bool,
}

impl Counters {
    pub fn last_read(&self) -> Option<Time> {
        self.last_read_ps.load(Ordering::Relaxed).checked_sub(1)
    }

    pub fn snapshot(&self) -> CountersSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CountersSnapshot {
            written: get(&self.written),
            read: get(&self.read),
            datagrams_sent: get(&self.datagrams_sent),
            datagrams_received: get(&self.datagrams_received),
            datagrams_expected: get(&self.datagrams_expected),
            bursts: get(&self.bursts),
            failed_cycles: get(&self.failed_cycles),
            last_read_ps: self.last_read(),
            writer_done: self.writer_done.load(Ordering::Relaxed),
        }
    }

    fn note_read(&self, bytes: u64, now: Time) {
        self.read.fetch_add(bytes, Ordering::Relaxed);
        self.last_read_ps.store(now + 1, Ordering::Relaxed);
    }
}
