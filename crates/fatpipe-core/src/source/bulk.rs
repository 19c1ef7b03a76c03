//! Bulk ("full blast", iperf or NetSpec full-blast mode) source: the application writes as
//! fast as the send buffer takes data, from `start_ps` until it has written `bytes` or until
//! `stop_ps`. What it wrote before stopping is still delivered.

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
}
