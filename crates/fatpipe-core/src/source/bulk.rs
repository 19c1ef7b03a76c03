//! Bulk ("full blast", iperf or NetSpec full-blast mode) source: the application writes as
//! fast as the send buffer takes data, from `start_ps` until it has written `bytes` or until
//! `stop_ps`. What it wrote before stopping is still delivered.
//!
//! With `transfers` the flow is a user running the transfer again and again (iperf run
//! `transfers` times): each connection ends when its transfer is written and acknowledged
//! (`bytes`, or `stop_ps - start_ps` of writing), and the next opens `transfer_gap_ps` after
//! (`sim/transfers.rs`).

use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkConfig {
    pub start_ps: Time,
    /// The application stops writing at this time (None: it writes until the run ends).
    pub stop_ps: Option<Time>,
    /// Total bytes the application writes (None: without end).
    pub bytes: Option<u64>,
    /// Transfers one after another, each on a new connection that closes at its end (None:
    /// one connection held to the end of the run, closing never).
    pub transfers: Option<u32>,
    /// From one connection's close to the next one's opening.
    pub transfer_gap_ps: Time,
}
