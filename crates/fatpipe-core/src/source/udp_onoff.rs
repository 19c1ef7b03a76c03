//! On-off UDP source: constant bit rate `rate_bps` (UDP payload, as iperf counts it) for
//! `on_ps`, then silent for `off_ps`, over and over from `start_ps`; the period is
//! on + off, the mean rate rate x on / (on + off).

use crate::time::{transmission_time, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpOnOffConfig {
    pub start_ps: Time,
    /// No datagram leaves at or after this time (None: until the run ends).
    pub stop_ps: Option<Time>,
    /// Payload bits per second while on.
    pub rate_bps: u64,
    pub on_ps: Time,
    pub off_ps: Time,
    /// UDP payload bytes per datagram.
    pub payload_bytes: u32,
}

/// Within on-period c (from start + c x (on + off)), datagram j is due at the period's start
/// + j x payload x 8 / rate, as long as that is before the period's on-time ends.
#[derive(Clone, Debug)]
pub struct OnOffSchedule {
    cfg: UdpOnOffConfig,
    /// The current on-period, and datagrams already due in it.
    cycle: u64,
    in_cycle: u64,
}

impl OnOffSchedule {
    pub fn new(cfg: UdpOnOffConfig) -> Self {
        OnOffSchedule { cfg, cycle: 0, in_cycle: 0 }
    }

    /// The next datagram: (when it is due, payload bytes). Never ends; the stop time does.
    pub fn next_datagram(&mut self) -> Option<(Time, u32)> {
        let c = &self.cfg;
        loop {
            let on_start = c.start_ps.saturating_add(self.cycle.saturating_mul(c.on_ps + c.off_ps));
            if on_start == Time::MAX {
                // Past the last picosecond time can hold: no datagram is ever due (without
                // this the loop never found one and never ended, for a start near 2^64 ps).
                return None;
            }
            let t = on_start.saturating_add(transmission_time(self.in_cycle * c.payload_bytes as u64, c.rate_bps));
            // on_ps > 0 (validated): the first datagram of a cycle, due at its start, fits.
            if t < on_start.saturating_add(c.on_ps) {
                self.in_cycle += 1;
                return Some((t, c.payload_bytes));
            }
            self.cycle += 1;
            self.in_cycle = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_near_the_end_of_time_ends_the_schedule_instead_of_looping() {
        // A probe daemon got such a flow from a peer; the loop looked for an on-period that
        // time cannot reach, for ever.
        let cfg = UdpOnOffConfig {
            start_ps: Time::MAX - 5,
            stop_ps: None,
            rate_bps: 1_000_000,
            on_ps: 3,
            off_ps: 3,
            payload_bytes: 1000,
        };
        let mut s = OnOffSchedule::new(cfg);
        assert_eq!(s.next_datagram(), Some((Time::MAX - 5, 1000)));
        assert_eq!(s.next_datagram(), None);
    }
}
