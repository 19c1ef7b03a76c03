//! What a sender counts (`SenderStats`, the summary's per-flow counters); the milestones of
//! a connection's life are watched apart (`milestones.rs`).

use crate::time::Time;

#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments put on the wire, retransmissions included.
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    /// Payload bytes put on the wire, retransmissions included.
    pub bytes_sent: u64,
    /// Recoveries started by duplicate ACKs or SACK information (fast retransmits).
    pub fast_retransmits: u64,
    pub timeouts: u64,
    pub dupacks_received: u64,
    pub acks_received: u64,
    /// When the first data segment went out.
    pub first_send_ps: Option<Time>,
    /// Times the host's interface queue refused a segment of this flow after accepting the
    /// one before: how often the queue filled up on the sender (retries refused while it
    /// stays full are not counted again).
    pub local_congestion_events: u64,
    /// Entries into CWR (window reduced without a loss: local congestion or ECN).
    pub cwr_entries: u64,
    /// ACKs received with ECN-Echo set.
    pub ecn_echoes: u64,
    /// Zero-window probes sent by the persist timer.
    pub zero_window_probes: u64,
    /// Linux stack: ACKs carrying a D-SACK block (RFC 2883).
    pub dsacks_received: u64,
    /// Linux stack: window reductions taken back as spurious (DSACK, Eifel, F-RTO).
    pub undos: u64,
    /// Linux stack: timeouts F-RTO found spurious (RFC 5682).
    pub spurious_timeouts: u64,
    /// Linux stack: tail loss probes sent (RFC 8985 section 7), and those that repaired a
    /// loss without a recovery.
    pub loss_probes: u64,
    pub loss_probe_recoveries: u64,
    /// Linux stack: deliveries out of order that showed the path reorders.
    pub reordering_events: u64,
}
