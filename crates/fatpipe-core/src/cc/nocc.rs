//! NOCC: TCP with congestion control switched off (document 000, chapter 3: a Linux 2.2.13
//! patch, enabled per socket with `setsockopt(TCP_NO_CONGESTION)`).
//!
//! With NOCC the congestion window plays no part: the receiver's advertised window alone
//! bounds the data in flight, so the connection starts by sending a whole advertised window,
//! never slow-starts, does not cut its window on a loss, and after a retransmission timeout
//! resends without waiting for a window to reopen ("retransmissions not gated by cwnd"). Loss
//! detection and retransmission stay as in TCP. The core always sends within
//! min(cwnd, rwnd), so NOCC keeps cwnd out of the way:
//! - `init` opens the window to [`UNLIMITED_WINDOW_SEGMENTS`], far above any receiver window;
//! - `ssthresh` returns the window itself, so fast recovery inflates from it and ends on it;
//! - `set_state` restores the window wherever the core set its own (deflation to
//!   min(ssthresh, FlightSize + 1) leaving recovery; one segment after a timeout), and keeps
//!   ssthresh at "none", since NOCC has no slow start;
//! - `cong_avoid` never grows it.
//!
//! A fixed window (`cwnd_segments: Some(n)`): document 000's `TCP_SET_CWND` lets the
//! application set the window to a value it chose from past measurements of the path. Here
//! the window then stays at n segments: no growth, no reduction, no slow start.
//!
//! In fast recovery the core adds one segment per duplicate ACK; the unlimited window of
//! 2^31 - 1 segments leaves 2^31 more below `u32::MAX`, more duplicate ACKs than any
//! simulation sends, and a fixed window is bounded by the same value.

use super::{AckSample, CaState, CcState, CongestionControl, INFINITE_SSTHRESH};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The window NOCC uses when no fixed window is given, segments: Linux's
/// `TCP_INFINITE_SSTHRESH` (2^31 - 1), so that only the receiver's window limits sending.
pub const UNLIMITED_WINDOW_SEGMENTS: u32 = INFINITE_SSTHRESH;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoccConfig {
    /// None (default, document 000's `TCP_NO_CONGESTION`): no congestion window; the receiver's
    /// advertised window alone limits the sender. Some(n): the window is fixed at n segments,
    /// as an application would set it with document 000's `TCP_SET_CWND`.
    pub cwnd_segments: Option<u32>,
}

impl NoccConfig {
    pub fn validate(&self) -> Result<(), String> {
        match self.cwnd_segments {
            Some(n) if n == 0 || n > UNLIMITED_WINDOW_SEGMENTS => Err(format!(
                "cwnd_segments: {n} is not allowed: must be between 1 and {UNLIMITED_WINDOW_SEGMENTS}, or null for no window"
            )),
            _ => Ok(()),
        }
    }
}

pub struct Nocc {
    /// The window NOCC holds, segments.
    window_segments: u32,
}

impl Nocc {
    pub fn new(cfg: NoccConfig) -> Self {
        Nocc { window_segments: cfg.cwnd_segments.unwrap_or(UNLIMITED_WINDOW_SEGMENTS) }
    }

    fn restore(&self, s: &mut CcState) {
        s.cwnd = self.window_segments;
        s.cwnd_cnt = 0;
        s.ssthresh = INFINITE_SSTHRESH;
    }
}

impl CongestionControl for Nocc {
    fn name(&self) -> &'static str {
        "nocc"
    }

    fn init(&mut self, s: &mut CcState) {
        self.restore(s);
    }

    /// No reduction: the window after a loss is the window before it.
    fn ssthresh(&mut self, _s: &CcState) -> u32 {
        self.window_segments
    }

    fn cong_avoid(&mut self, s: &mut CcState, _ack: &AckSample) {
        self.restore(s);
    }

    fn set_state(&mut self, s: &mut CcState, new: CaState) {
        match new {
            // Keep the core's inflation by the segments that left the network, on top of the
            // unreduced window (ssthresh returned it).
            CaState::Recovery => s.ssthresh = INFINITE_SSTHRESH,
            // Undo the deflation on leaving recovery, the one-segment window of a timeout and
            // the reduction of CWR (local congestion, ECN): no congestion control at all.
            CaState::Open | CaState::Loss | CaState::Cwr => self.restore(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> CcState {
        CcState { in_flight_segments: 0, ..CcState::new(10, INFINITE_SSTHRESH, 1448) }
    }

    fn unlimited() -> Nocc {
        Nocc::new(NoccConfig { cwnd_segments: None })
    }

    /// The core's steps through a fast recovery and a timeout, as the RFC stack
    /// (`tcp/stack/rfc/`) takes them.
    fn recovery_and_timeout(n: &mut Nocc, s: &mut CcState) -> (u32, u32, u32) {
        let ssthresh = n.ssthresh(s);
        s.ssthresh = ssthresh;
        s.cwnd = ssthresh + 3;
        n.set_state(s, CaState::Recovery);
        for _ in 0..1000 {
            s.cwnd += 1; // one duplicate ACK each
        }
        let in_recovery = s.cwnd;
        s.cwnd = s.ssthresh.min(5 + 1); // full ACK: deflate to min(ssthresh, flight + 1)
        n.set_state(s, CaState::Open);
        let after_recovery = s.cwnd;
        s.cwnd = 1; // timeout
        n.set_state(s, CaState::Loss);
        (in_recovery, after_recovery, s.cwnd)
    }

    #[test]
    fn the_window_is_unlimited_and_never_reduced() {
        let mut n = unlimited();
        let mut s = state();
        n.init(&mut s);
        assert_eq!(s.cwnd, UNLIMITED_WINDOW_SEGMENTS);
        assert!(!s.in_slow_start());
        let (in_recovery, after_recovery, after_timeout) = recovery_and_timeout(&mut n, &mut s);
        assert_eq!(in_recovery, UNLIMITED_WINDOW_SEGMENTS + 3 + 1000, "inflation on top, no overflow");
        assert_eq!(after_recovery, UNLIMITED_WINDOW_SEGMENTS);
        assert_eq!(after_timeout, UNLIMITED_WINDOW_SEGMENTS, "no slow start after a timeout");
        assert_eq!(s.ssthresh, INFINITE_SSTHRESH);
        n.cong_avoid(&mut s, &AckSample { acked_segments: 5, delivered_segments: 5, ..Default::default() });
        assert_eq!(s.cwnd, UNLIMITED_WINDOW_SEGMENTS, "no growth");
    }

    #[test]
    fn a_fixed_window_stays_fixed() {
        let mut n = Nocc::new(NoccConfig { cwnd_segments: Some(40) });
        let mut s = state();
        n.init(&mut s);
        assert_eq!(s.cwnd, 40);
        for _ in 0..100 {
            n.cong_avoid(&mut s, &AckSample { acked_segments: 2, delivered_segments: 2, ..Default::default() });
        }
        assert_eq!(s.cwnd, 40);
        let (in_recovery, after_recovery, after_timeout) = recovery_and_timeout(&mut n, &mut s);
        assert_eq!((in_recovery, after_recovery, after_timeout), (40 + 3 + 1000, 40, 40));
    }

    #[test]
    fn validation_names_the_parameter() {
        assert!(NoccConfig { cwnd_segments: None }.validate().is_ok());
        let e = NoccConfig { cwnd_segments: Some(0) }.validate().unwrap_err();
        assert!(e.starts_with("cwnd_segments: 0 is not allowed"), "{e}");
        for json in [r#"{"algorithm": "nocc", "cwnd_segments": null}"#, r#"{"algorithm": "nocc", "cwnd_segments": 64}"#]
        {
            let spec: crate::cc::CcSpec = serde_json::from_str(json).unwrap();
            assert_eq!(spec.build().name(), "nocc");
        }
    }
}
