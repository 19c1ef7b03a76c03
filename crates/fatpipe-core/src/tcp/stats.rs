//! What a sender counts (`SenderStats`, the summary's per-flow counters); the milestones of
//! a connection's life are watched apart (`milestones.rs`).

use crate::time::Time;

/// The sender's counters. Each is published under the same name in the flow's summary entry
/// (`sim/summary.rs` `TcpFlowSummary`), whose field comments are the one description of what
/// it counts (they are the results schema's); a test there fails if a counter here is not
/// published or is renamed. Only what the summary does not say is noted here.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    pub bytes_sent: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub dupacks_received: u64,
    pub first_send_ps: Option<Time>,
    /// A retry refused while the queue stays full is not counted again.
    pub local_congestion_events: u64,
    pub cwr_entries: u64,
    pub ecn_echoes: u64,
    pub zero_window_probes: u64,
    pub dsacks_received: u64,
    pub undos: u64,
    pub spurious_timeouts: u64,
    pub loss_probes: u64,
    pub loss_probe_recoveries: u64,
    pub reordering_events: u64,
}
