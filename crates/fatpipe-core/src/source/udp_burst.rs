//! UDP bursts, as NetSpec's UDP burst mode (document 000, appendix A.5: `type = burst
//! (blocksize, period, repeats)`, `protocol = udp`): every `period_ps` the application
//! writes `repeats` blocks of `burst_bytes` back to back (document 000: repeats "send
//! multiple burst sized packets in one burst period", so bytes per period = burst x repeats),
//! for `count` periods (None: until stopped). Document 000's single minimal congestion
//! event is count = 1; its periodic congestion a burst every 3 s.
//!
//! Each block is cut into datagrams of `payload_bytes` (the last one shorter). NetSpec sent
//! each 32,000-byte block as one datagram that IP fragmented to the MTU; here the fragments
//! are whole datagrams, so one lost fragment costs only itself, and they carry 8 bytes more
//! (a UDP header each, 0.5 % at 1472-byte payloads).
//!
//! The datagrams of a period leave at `rate_bps` (UDP payload, as iperf counts it), or with
//! None as fast as the host's line sends them: a blocking socket write returns only as the
//! interface drains, so the burst leaves at line rate rather than all at once.

use crate::time::{transmission_time, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpBurstConfig {
    pub start_ps: Time,
    /// No datagram leaves at or after this time (None: until the run ends).
    pub stop_ps: Option<Time>,
    /// Bytes of one block (NetSpec's blocksize).
    pub burst_bytes: u64,
    /// Blocks written back to back in each period (NetSpec's repeats).
    pub repeats: u64,
    /// Time between the starts of two periods; None only with count = 1.
    pub period_ps: Option<Time>,
    /// Periods in all (None: until stopped).
    pub count: Option<u64>,
    /// Payload bits per second within a period; None: the host's line rate.
    pub rate_bps: Option<u64>,
    /// UDP payload bytes per datagram.
    pub payload_bytes: u32,
}

/// Within period p (from start + p x period), a datagram is due when the bytes of the
/// period before it have left at `rate_bps` (at the period's start with no rate: the host's
/// line then spaces them).
#[derive(Clone, Debug)]
pub struct BurstSchedule {
    cfg: UdpBurstConfig,
    period: u64,
    /// Bytes of the current period already due.
    in_period: u64,
}

impl BurstSchedule {
    pub fn new(cfg: UdpBurstConfig) -> Self {
        BurstSchedule { cfg, period: 0, in_period: 0 }
    }

    /// The next datagram: (when it is due, payload bytes), or None after the last period.
    pub fn next_datagram(&mut self) -> Option<(Time, u32)> {
        let c = &self.cfg;
        if c.count.is_some_and(|n| self.period >= n) {
            return None;
        }
        let period_start = c.start_ps.saturating_add(self.period.saturating_mul(c.period_ps.unwrap_or(0)));
        let t = period_start.saturating_add(c.rate_bps.map_or(0, |r| transmission_time(self.in_period, r)));
        // A block's last datagram carries what is left of the block.
        let left_in_block = c.burst_bytes - self.in_period % c.burst_bytes;
        let size = left_in_block.min(c.payload_bytes as u64);
        self.in_period += size;
        if self.in_period == c.burst_bytes * c.repeats {
            self.period += 1;
            self.in_period = 0;
        }
        Some((t, size as u32))
    }
}
