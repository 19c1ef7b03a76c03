//! Loss detection and recovery of the Linux stack (`Stack::Linux`), piece by piece as Linux
//! divides it:
//! - `rtx_queue.rs`: the per-segment scoreboard (Linux's retransmission queue) and the
//!   counters in flight is made of;
//! - `rack.rs`: RACK-TLP, time-based loss detection and tail loss probes (RFC 8985);
//! - `prr.rs`: how the window comes down in recovery (PRR, RFC 6937; or rate halving);
//! - `loss_detection.rs`: which segments are lost (RACK, the duplicate-ACK threshold, FACK,
//!   NewReno without SACK) and the reordering degree they are judged against;
//! - `undo.rs`: taking back a reduction that proves spurious (DSACK, Eifel, F-RTO);
//! - `linux.rs`: the ACK path and the state machine that ties them (`tcp_ack`,
//!   `tcp_fastretrans_alert`), and the window after each ACK (`tcp_cong_control`);
//! - `linux_send.rs`: the send loop and the timer slot (RTO, reordering timer, loss probe).
//!
//! The RFC stack (`Stack::Rfc`) has its shared ACK path in `rfc.rs` and one file per recovery
//! variant: `tahoe.rs`, `reno.rs`, `newreno.rs`, `rfc6675.rs` (SACK) and `sack1.rs` (ns-2's SACK).

pub mod linux;
pub mod linux_send;
pub mod loss_detection;
pub mod newreno;
pub mod prr;
pub mod rack;
pub mod reno;
pub mod rfc;
pub mod rfc6675;
pub mod rtx_queue;
pub mod sack1;
pub mod tahoe;
pub mod undo;
