//! Paced ("burst mode") source, as NetSpec's burst mode and document 000's application-level
//! pacing: every `period_ps` the application writes a burst of `burst_bytes` into the send
//! buffer (a blocking write: it goes on writing as ACKs free space). The offered load is
//! burst_bytes x 8 / period. A *failed burst cycle* is a period that ends before its burst was
//! fully written (the socket buffer was full); the unwritten rest is then dropped, or with
//! `carry_over` (NetSpec's queued-burst mode) written after the next burst's start.

use crate::packet::Packet;
use crate::tcp::TcpSender;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BurstConfig {
    pub start_ps: Time,
    /// No burst starts at or after this time (None: until the run ends).
    pub stop_ps: Option<Time>,
    /// Bytes written per burst.
    pub burst_bytes: u64,
    /// Time between the starts of two bursts.
    pub period_ps: Time,
    /// Keep writing a burst's unwritten rest after the next period starts.
    pub carry_over: bool,
}

/// What the source did, for the summary.
#[derive(Clone, Debug, Default)]
pub struct BurstStats {
    pub bursts: u64,
    pub failed_cycles: u64,
}

impl BurstStats {
    /// The application hands `sender` a burst of `burst_bytes` and counts it, and the cycle as
    /// failed if the previous burst is not fully written yet (`TcpSender::write_burst`). Shared
    /// by this source and a paced HTTP server (`http.rs`).
    pub fn write(
        &mut self,
        sender: &mut TcpSender,
        now: Time,
        burst_bytes: u64,
        carry_over: bool,
        out: &mut Vec<Packet>,
    ) {
        let failed = sender.write_burst(now, burst_bytes, carry_over, out);
        self.bursts += 1;
        self.failed_cycles += u64::from(failed);
    }
}
