//! Traffic sources: the applications that write into a flow's send buffer (TCP) or send
//! datagrams (UDP). One file each; udp.rs holds what the UDP sources share.

pub mod bulk;
pub mod burst;
pub mod http;
pub mod udp;
pub mod udp_burst;
pub mod udp_cbr;
pub mod udp_onoff;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SourceSpec {
    Bulk(bulk::BulkConfig),
    Burst(burst::BurstConfig),
    /// The UDP sources: a flow with one of these is a UDP flow (no TCP endpoints).
    #[serde(rename = "udp_cbr")]
    UdpCbr(udp_cbr::UdpCbrConfig),
    #[serde(rename = "udp_burst")]
    UdpBurst(udp_burst::UdpBurstConfig),
    #[serde(rename = "udp_onoff")]
    UdpOnoff(udp_onoff::UdpOnOffConfig),
    Http(http::HttpConfig),
}

impl SourceSpec {
    pub fn start_ps(&self) -> crate::time::Time {
        match self {
            SourceSpec::Bulk(b) => b.start_ps,
            SourceSpec::Burst(b) => b.start_ps,
            SourceSpec::UdpCbr(u) => u.start_ps,
            SourceSpec::UdpBurst(u) => u.start_ps,
            SourceSpec::UdpOnoff(u) => u.start_ps,
            SourceSpec::Http(h) => h.start_ps,
        }
    }

    /// Moves the start later by `by` (a flow's start jitter); the stop stays.
    pub fn delay_start(&mut self, by: crate::time::Time) {
        let start = match self {
            SourceSpec::Bulk(b) => &mut b.start_ps,
            SourceSpec::Burst(b) => &mut b.start_ps,
            SourceSpec::UdpCbr(u) => &mut u.start_ps,
            SourceSpec::UdpBurst(u) => &mut u.start_ps,
            SourceSpec::UdpOnoff(u) => &mut u.start_ps,
            SourceSpec::Http(h) => &mut h.start_ps,
        };
        *start = start.saturating_add(by);
    }

    pub fn stop_ps(&self) -> Option<crate::time::Time> {
        match self {
            SourceSpec::Bulk(b) => b.stop_ps,
            SourceSpec::Burst(b) => b.stop_ps,
            SourceSpec::UdpCbr(u) => u.stop_ps,
            SourceSpec::UdpBurst(u) => u.stop_ps,
            SourceSpec::UdpOnoff(u) => u.stop_ps,
            SourceSpec::Http(h) => h.stop_ps,
        }
    }

    /// The source's `kind` as the normalized scenario names it.
    pub fn kind(&self) -> &'static str {
        match self {
            SourceSpec::Bulk(_) => "bulk",
            SourceSpec::Burst(_) => "burst",
            SourceSpec::UdpCbr(_) => "udp_cbr",
            SourceSpec::UdpBurst(_) => "udp_burst",
            SourceSpec::UdpOnoff(_) => "udp_onoff",
            SourceSpec::Http(_) => "http",
        }
    }

    /// Whether the flow carries UDP datagrams rather than a TCP connection.
    pub fn is_udp(&self) -> bool {
        matches!(self, SourceSpec::UdpCbr(_) | SourceSpec::UdpBurst(_) | SourceSpec::UdpOnoff(_))
    }

    /// UDP payload bytes per datagram (None for TCP sources).
    pub fn udp_payload_bytes(&self) -> Option<u32> {
        match self {
            SourceSpec::UdpCbr(u) => Some(u.payload_bytes),
            SourceSpec::UdpBurst(u) => Some(u.payload_bytes),
            SourceSpec::UdpOnoff(u) => Some(u.payload_bytes),
            SourceSpec::Bulk(_) | SourceSpec::Burst(_) | SourceSpec::Http(_) => None,
        }
    }
}
