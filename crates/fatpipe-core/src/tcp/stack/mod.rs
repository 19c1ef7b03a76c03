//! Loss detection and recovery, a value per flow: the stack (`Stack`), chosen once from the
//! flow's profile (`TcpConfig::stack`) and owning its state. Each stack is a type that
//! implements `TcpStack`, the few calls the sender makes into it; what every stack shares
//! (sequence space, windows, RTT, pacing, the congestion control, the counters) is the
//! sender's `Tcb`, which the stack takes as an argument.
//!
//! - `rfc/`: the RFC stack (profiles `rfc`, `bsd-4.4`, `ns2`): RFC 5681, 6582, 6675 and 6298
//!   as written, with one file per recovery variant (Tahoe, Reno, NewReno, RFC 6675 SACK,
//!   ns-2's Sack1).
//! - `linux/`: the Linux stack (profiles `linux`, `linux-2.4`): `tcp_input.c`'s state
//!   machine over a per-segment retransmission queue, with RACK-TLP, PRR, undo, F-RTO and
//!   the adaptive reordering degree beside it.
//!
//! Why an enum and not `Box<dyn TcpStack>`: the sender calls into its stack on every ACK and
//! every send pass, the hottest path of a run. With an enum the stack lives inside the
//! sender (no pointer to follow), the call is a match on a tag that never changes for a flow
//! (so the branch predicts perfectly), and each arm is a direct call the compiler can inline;
//! a trait object costs an indirect call per entry that cannot be inlined. The trait is
//! still the contract: a new stack is a type implementing `TcpStack` and one variant here.
//!
//! `Stack`'s own impl of `TcpStack` is the one place that chooses between the stacks.

pub mod linux;
pub mod rfc;

use super::config::StackKind;
use super::tcb::Tcb;
use crate::cc::CaState;
use crate::packet::Packet;
use crate::time::Time;
use linux::LinuxStack;
use rfc::RfcStack;

/// What the sender asks of its loss detection and recovery stack.
pub trait TcpStack {
    /// Handles one arriving ACK (Linux `tcp_ack`), then sends what it allows.
    fn on_ack(&mut self, tcb: &mut Tcb, now: Time, ack: &Packet, out: &mut Vec<Packet>);

    /// The retransmission timer expired (the sender has already served the persist timer).
    fn on_rto_timer(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>);

    /// Reduces the window without a loss (Linux `tcp_enter_cwr`, state CWR): the host's
    /// interface queue refused a segment (local congestion), or an ACK echoed a router's CE
    /// mark (ECN, RFC 3168). Once per window of data, and never on top of a recovery.
    fn enter_cwr(&mut self, tcb: &mut Tcb, now: Time);

    /// The stack's part of a send pass: retransmissions and new data, as far as its window
    /// and pacing allow.
    fn send_segments(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>);

    /// The reordering degree the stack judges losses against, segments (Linux
    /// `tp->reordering`; the duplicate-ACK threshold of the RFC stack).
    fn reordering_segments(&self, tcb: &Tcb) -> u32;

    /// In state Open with nothing dubious (Linux `tcp_update_metrics` trusts cwnd only
    /// then): the RFC stack has no Disorder state, so Open alone.
    fn undisturbed_open(&self, tcb: &Tcb) -> bool {
        tcb.ca_state == CaState::Open
    }

    /// Starts from a destination's cached reordering degree (Linux `tcp_init_metrics`);
    /// the RFC stack has no such degree to seed.
    fn seed_reordering(&mut self, _reordering: u32, _disable_fack: bool) {}

    /// A send pass (what the application's writes, the ACKs and the timers end in): the
    /// application tops up the send buffer, slow start after idle, the stack's segments,
    /// then local congestion (a refused segment reduces the window, as Linux
    /// `tcp_transmit_skb` calls `tcp_enter_cwr`) and the persist timer.
    fn send(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        tcb.refill();
        if tcb.snd_max == tcb.snd_una && tcb.written > tcb.snd_max && tcb.cfg.slow_start_after_idle {
            tcb.restart_after_idle(now);
        }
        tcb.pacing_deadline = None;
        tcb.refused = false;
        self.send_segments(tcb, now, out);
        if let Some(d) = &mut tcb.send_delay {
            d.end_pass();
        }
        if tcb.refused {
            self.enter_cwr(tcb, now);
        }
        tcb.interface_blocked = tcb.refused;
        tcb.after_send_pass(now);
    }
}

/// The flow's stack. The variants differ in size (the Linux stack carries its retransmission
/// queue, RACK and PRR inline); one per flow, built once and never moved on the hot path, so
/// the difference costs a few hundred bytes per flow, while a box would cost a pointer to
/// follow on every call.
#[allow(clippy::large_enum_variant)]
pub enum Stack {
    Rfc(RfcStack),
    Linux(LinuxStack),
}

impl Stack {
    /// The stack the configuration names; it sets up what it needs in the TCB.
    pub(crate) fn new(tcb: &mut Tcb) -> Stack {
        match tcb.cfg.stack {
            StackKind::Rfc => Stack::Rfc(RfcStack::new(tcb)),
            StackKind::Linux => Stack::Linux(LinuxStack::new(tcb)),
        }
    }
}

/// Calls the same method on whichever stack the flow runs.
macro_rules! on_each_stack {
    ($stack:expr, $s:ident => $call:expr) => {
        match $stack {
            Stack::Rfc($s) => $call,
            Stack::Linux($s) => $call,
        }
    };
}

impl TcpStack for Stack {
    fn on_ack(&mut self, tcb: &mut Tcb, now: Time, ack: &Packet, out: &mut Vec<Packet>) {
        on_each_stack!(self, s => s.on_ack(tcb, now, ack, out))
    }

    fn on_rto_timer(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        on_each_stack!(self, s => s.on_rto_timer(tcb, now, out))
    }

    fn enter_cwr(&mut self, tcb: &mut Tcb, now: Time) {
        on_each_stack!(self, s => s.enter_cwr(tcb, now))
    }

    fn send_segments(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        on_each_stack!(self, s => s.send_segments(tcb, now, out))
    }

    fn reordering_segments(&self, tcb: &Tcb) -> u32 {
        on_each_stack!(self, s => s.reordering_segments(tcb))
    }

    fn undisturbed_open(&self, tcb: &Tcb) -> bool {
        on_each_stack!(self, s => s.undisturbed_open(tcb))
    }

    fn seed_reordering(&mut self, reordering: u32, disable_fack: bool) {
        on_each_stack!(self, s => s.seed_reordering(reordering, disable_fack))
    }

    /// Chooses once per pass: the whole pass runs in the stack's own (monomorphized) code.
    fn send(&mut self, tcb: &mut Tcb, now: Time, out: &mut Vec<Packet>) {
        on_each_stack!(self, s => s.send(tcb, now, out))
    }
}
