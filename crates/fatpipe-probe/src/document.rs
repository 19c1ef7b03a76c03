//! The result document of a probe run, as types: the emulator's flows (`fatpipe_emu::summary`)
//! in the shape of a simulation's output, with the probe's own section (the two hosts, the
//! control path, the data ports, the hosts' TCP counters). Its JSON Schema,
//! `probe-results.schema.json`, is generated from these types (`probe_schema`,
//! `tests/contract.rs`), as the simulator's and the emulator's are from theirs.

use fatpipe_core::probe::QueueSeries;
use fatpipe_core::sim::{CaptureSummary, LinkSummary};
use fatpipe_core::time::Time;
use fatpipe_emu::sampler::FlowColumns;
use fatpipe_emu::summary::RealFlow;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeMap;

/// What `ProbeRun::finish` returns (docs/probe.md).
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeOutput {
    pub summary: ProbeSummary,
    /// One row per sample per flow: each column from the host that measures it, the
    /// emulator's columns (`merge.rs` joins the two ends' tables by name).
    #[schemars(with = "FlowColumns")]
    pub flow_series: serde_json::Value,
    /// Always empty: a probe sees no queue.
    pub queue_series: QueueSeries,
}

#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeSummary {
    pub name: String,
    pub seed: u64,
    pub duration_ps: Time,
    /// One entry per flow, in scenario order.
    pub flows: Vec<RealFlow>,
    /// Always empty: a probe sees no network in between.
    pub links: Vec<LinkSummary>,
    pub captures: Vec<CaptureSummary>,
    pub probe: ProbeFacts,
}

/// The probe's own section of the summary.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeFacts {
    /// `PROTOCOL_VERSION`, which both ends spoke.
    pub protocol_version: u32,
    /// Whether both ends proved the shared secret.
    pub authenticated: bool,
    pub controller: ProbeHost,
    pub daemon: ProbeHost,
    pub path: ProbePath,
    /// The daemon's data ports, one per flow.
    pub data_ports: Vec<u16>,
    /// Each host's TcpExt counters (/proc/net/netstat) that moved during the test: host-wide.
    pub tcp_ext: TcpExtBySide,
}

/// One of the two hosts as it described itself.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbeHost {
    /// The address the controller used (its own, or the daemon's ADDRESS:PORT).
    pub address: String,
    pub hostname: String,
    /// /proc/sys/kernel/osrelease.
    pub kernel: String,
    /// "fatpipe 0.1.0".
    pub software: String,
    /// /proc/sys/net/ipv4/tcp_available_congestion_control.
    pub available_congestion_control: Vec<String>,
    /// Whether the probe process may force socket buffers past net.core.rmem_max/wmem_max.
    pub cap_net_admin: bool,
}

/// The control path as the controller measured it before the test.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProbePath {
    /// The least of the ping RTTs over the control connection.
    pub base_rtt_ps: Time,
    pub rtt_samples_ps: Vec<Time>,
    /// tcpi_min_rtt of the control connection, if the kernel gave one.
    pub control_tcp_min_rtt_ps: Option<Time>,
    /// IP_MTU of the control connection, if the kernel gave one.
    pub path_mtu_bytes: Option<u32>,
    /// Time 0 is agreed over the control path: the ends' clocks differ by at most half its RTT.
    pub clock_offset_bound_ps: Time,
}

#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpExtBySide {
    pub controller: BTreeMap<String, u64>,
    pub daemon: BTreeMap<String, u64>,
}

/// JSON Schema of `ProbeRun::finish`'s output; no other key is allowed.
pub fn probe_schema() -> serde_json::Value {
    fatpipe_core::schema::output_schema::<ProbeOutput>(
        "fatpipe probe results",
        "What ProbeRun::finish returns (docs/probe.md).",
    )
}
