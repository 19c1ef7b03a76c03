//! Constant bit rate UDP source (iperf -u -b): a datagram of `payload_bytes` every
//! payload_bytes x 8 / rate_bps, from `start_ps` until `stop_ps`. The rate counts UDP payload
//! bytes, as iperf's -b does; on the wire each datagram carries 28 more bytes of IP and UDP
//! headers (and the link's framing).

use crate::time::{transmission_time, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpCbrConfig {
    pub start_ps: Time,
    /// No datagram leaves at or after this time (None: until the run ends).
    pub stop_ps: Option<Time>,
    /// Payload bits per second.
    pub rate_bps: u64,
    /// UDP payload bytes per datagram.
    pub payload_bytes: u32,
}

/// When each datagram is due: datagram k at start + k x payload x 8 / rate, computed from k
/// (not by adding intervals), so the rate does not drift by rounding.
#[derive(Clone, Debug)]
pub struct CbrSchedule {
    cfg: UdpCbrConfig,
    sent: u64,
}

impl CbrSchedule {
    pub fn new(cfg: UdpCbrConfig) -> Self {
        CbrSchedule { cfg, sent: 0 }
    }

    /// The next datagram: (when it is due, payload bytes). Never ends; the stop time does.
    pub fn next_datagram(&mut self) -> Option<(Time, u32)> {
        let c = &self.cfg;
        let offset = transmission_time(self.sent.saturating_mul(c.payload_bytes as u64), c.rate_bps);
        self.sent += 1;
        Some((c.start_ps.saturating_add(offset), c.payload_bytes))
    }
}
