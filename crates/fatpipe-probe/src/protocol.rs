//! The messages of the control protocol (version `PROTOCOL_VERSION`), one JSON object per
//! line with a `type` (docs/probe.md lists the exchange).
//!
//! ```text
//! daemon -> client   hello    {software, nonce, secret_required, max_message_bytes}
//! client -> daemon   hello    {software, nonce, mac}          mac: auth.rs, null without a secret
//! daemon -> client   welcome  {mac, host}                     host: kernel, algorithms, sysctls
//! client -> daemon   ping     {seq}           (any number)    -> pong {seq}
//! client -> daemon   setup    {test}          one test        -> ready {ports}
//!   the client connects to those ports
//! client -> daemon   start    {in_ps}         time 0 in in_ps -> started {}
//!   both ends run until the test's end; the daemon sends
//! daemon -> client   result   {end}           its end's counters, TCP_INFO and series
//! ... another ping / setup, or the client closes. Any error: error {code, message}.
//! ```
//!
//! Closing the connection stops the client's test at once. Every message carries
//! `"version": 1` (added and checked by `wire`).

use fatpipe_core::time::Time;
use fatpipe_emu::traffic::tcp::{Granted, TcpOptions};
use fatpipe_emu::traffic::tcp_info::Sampled;
use fatpipe_emu::traffic::CountersSnapshot;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// What a client sends.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToDaemon {
    Hello { software: String, nonce: String, mac: Option<String> },
    Ping { seq: u64 },
    Setup { test: TestSetup },
    Start { in_ps: Time },
}

/// What the daemon sends (errors are `wire`'s error messages).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToClient {
    Hello { software: String, nonce: String, secret_required: bool, max_message_bytes: u64 },
    Welcome { mac: Option<String>, host: HostInfo },
    Pong { seq: u64 },
    Ready { ports: Vec<u16> },
    Started {},
    Result { end: EndReport },
}

/// A host as a probe needs to know it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    /// "fatpipe 0.1.0".
    pub software: String,
    pub hostname: String,
    /// /proc/sys/kernel/osrelease.
    pub kernel: String,
    /// /proc/sys/net/ipv4/tcp_available_congestion_control.
    pub available_congestion_control: Vec<String>,
    /// `kernel::HOST_SYSCTLS` as the host has them (those it has).
    pub sysctls: BTreeMap<String, String>,
    /// Whether the probe process may force socket buffers past net.core.rmem_max/wmem_max.
    pub cap_net_admin: bool,
}

/// One test, as the client asks the daemon to run its end of it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestSetup {
    pub duration_ps: Time,
    pub sample_interval_ps: Time,
    pub flows: Vec<EndPlan>,
}

/// One flow at one end.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndPlan {
    /// The flow of the normalized scenario (`FlowSpec`), its start jitter drawn already.
    pub spec: Value,
    /// This end runs the sending application (else the receiving one).
    pub sends: bool,
    /// TCP: this end's socket options (the algorithm on the sending end only).
    pub tcp: Option<TcpOptions>,
    /// TCP, receiving end: TCP_QUICKACK after every read (delayed_ack = false).
    pub quick_ack: bool,
    /// A data port the client asks the daemon for (None: the daemon chooses).
    pub port: Option<u16>,
    /// UDP: the client's port of this flow (the daemon sends to it, or accepts only it).
    pub peer_udp_port: Option<u16>,
}

/// One end's results of a test.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndReport {
    pub flows: Vec<EndFlow>,
    /// `sampler::FlowColumns`: column name -> values, one row per flow and sample.
    pub series: Value,
    /// The host's TcpExt counters (/proc/net/netstat) that moved during the test: host-wide,
    /// every connection of the host counted.
    pub tcp_ext: BTreeMap<String, u64>,
    /// The first thing that failed at this end (the test was stopped), if any.
    pub failure: Option<String>,
}

/// One flow at one end, at the test's end.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndFlow {
    pub counters: CountersSnapshot,
    /// This end's socket (TCP): its last TCP_INFO and what the kernel granted.
    pub tcp_info: Option<Sampled>,
    pub granted: Option<Granted>,
    /// The largest window the peer announced (sending end).
    pub max_peer_window_bytes: u32,
}
