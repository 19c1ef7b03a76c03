//! fatpipe-probe: a scenario's flows between two real hosts, NetSpec's controller and daemon
//! pair (docs/probe.md).
//!
//! `fatpipe probe serve` runs the daemon (`server`); `fatpipe probe run HOST SCENARIO` the
//! controller (`controller`). They talk over one TCP control connection in JSON lines
//! (`protocol`, `wire`), with an optional shared secret proven by HMAC-SHA256 of fresh nonces
//! (`auth`, `sha256`). The test's flows run between the two hosts on the emulator's traffic
//! engine (`fatpipe_emu::traffic`), one end on each (`end`), as `plan` maps them; the two ends'
//! results become one result document in the simulator's shape (`merge`), typed (`document`).

pub mod auth;
pub mod controller;
pub mod document;
pub mod end;
pub mod host;
pub mod merge;
pub mod plan;
pub mod ports;
pub mod protocol;
pub mod server;
pub mod sha256;
pub mod wire;

pub use controller::{ControllerOptions, ProbeError, ProbeRun};
pub use server::{Server, ServerOptions};

use std::net::SocketAddr;

/// The control protocol's version: both ends must speak the same.
pub const PROTOCOL_VERSION: u32 = 1;
/// The daemon's control port unless told otherwise: iperf3's 5201 plus 100, so that both can
/// serve on one host.
pub const DEFAULT_PORT: u16 = 5301;
/// The longest message the daemon reads from a client (a test of `end::MAX_FLOWS` flows fits
/// many times over), and the longest a client reads (a result carries its end's series).
pub const MAX_CLIENT_MESSAGE_BYTES: usize = 1 << 20;
pub const MAX_RESULT_BYTES: usize = 1 << 30;
/// What each side says it runs.
pub const SOFTWARE: &str = concat!("fatpipe ", env!("CARGO_PKG_VERSION"));

/// The IPv4 address of a socket address (the traffic engine is IPv4 only).
pub fn ip_of(addr: SocketAddr) -> Option<[u8; 4]> {
    match addr {
        SocketAddr::V4(a) => Some(a.ip().octets()),
        SocketAddr::V6(a) => a.ip().to_ipv4_mapped().map(|ip| ip.octets()),
    }
}
