//! The order in which the Linux stack calls an algorithm's hooks on one ACK follows Linux's
//! tcp_ack: `pkts_acked` at the end of tcp_clean_rtx_queue, before the state machine
//! (tcp_fastretrans_alert) moves the state, so the ACK that ends a recovery reaches
//! `pkts_acked` while the algorithm still knows it is in Recovery. H-TCP counts throughput in
//! the Open state only (tcp_htcp.c measure_achieved_throughput): called after the return to
//! Open, it counted that ACK -- every segment SACKed during the recovery, delivered "at once"
//! -- and its throughput estimate exceeded the link's capacity (300 Mb/s x 100 ms: 48,615
//! segments/s where the link carries 24,400), which reset its adaptive backoff to beta_min
//! where the kernel running the same program kept 0.8 (docs/validation.md).

mod support;
use fatpipe_core::cc::{AckSample, CaState, CcState, CongestionControl};
use fatpipe_core::packet::Packet;
use fatpipe_core::tcp::config::{Recovery, StackKind};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use std::sync::{Arc, Mutex};
use support::*;

const MSS: u64 = 1448;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Hook {
    PktsAcked { at: Time, acked_bytes: u64 },
    SetState { at: Time, state: CaState },
}

struct Recorder(Arc<Mutex<Vec<Hook>>>);

impl CongestionControl for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd / 2).max(2)
    }
    fn cong_avoid(&mut self, _s: &mut CcState, _ack: &AckSample) {}
    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        self.0.lock().unwrap().push(Hook::SetState { at: s.now, state: new });
    }
    fn pkts_acked(&mut self, s: &mut CcState, ack: &AckSample) {
        self.0.lock().unwrap().push(Hook::PktsAcked { at: s.now, acked_bytes: ack.acked_bytes });
    }
}

#[test]
fn the_ack_that_ends_a_recovery_reaches_pkts_acked_before_the_state_returns_to_open() {
    let mut tcp = tcp_config();
    tcp.stack = StackKind::Linux;
    tcp.recovery = Recovery::Sack;
    tcp.delayed_ack = false;
    tcp.initial_window_segments = 20;
    let log = Arc::new(Mutex::new(Vec::new()));
    let lost = 5 * MSS;
    let mut once = false;
    let drop = Box::new(move |p: &Packet| {
        let hit = p.seq == lost && !once;
        once |= hit;
        hit
    });
    let mut h = Harness::with_algorithm(tcp, Box::new(Recorder(log.clone())), 100 * PS_PER_MS, drop);
    h.start(Some(60 * MSS));
    h.run_until(5 * PS_PER_S);
    assert!(h.sender.is_finished());
    let log = log.lock().unwrap();
    let recovery =
        log.iter().position(|e| matches!(e, Hook::SetState { state: CaState::Recovery, .. })).expect("a recovery");
    let open = recovery
        + log[recovery..]
            .iter()
            .position(|e| matches!(e, Hook::SetState { state: CaState::Open, .. }))
            .expect("it ends");
    let Hook::SetState { at: ended, .. } = log[open] else { unreachable!() };
    // The ACK that ended it acknowledged the retransmission and every segment SACKed above it
    // (22 segments: the path has no bottleneck, so ACKs arrive together); pkts_acked heard of
    // it before the state returned to Open, and once.
    let ending: Vec<usize> = (0..log.len())
        .filter(|&k| matches!(log[k], Hook::PktsAcked { at, acked_bytes } if at == ended && acked_bytes >= 10 * MSS))
        .collect();
    assert_eq!(ending.len(), 1, "{log:?}");
    assert!(
        ending[0] < open,
        "the state returned to Open before pkts_acked heard of the ACK that ended the recovery: {:?}",
        &log[open..=ending[0]]
    );
    assert_eq!(log[ending[0]], Hook::PktsAcked { at: ended, acked_bytes: 22 * MSS });
}
