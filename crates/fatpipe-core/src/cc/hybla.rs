//! TCP Hybla (Caini and Firrincieli, "TCP Hybla: a TCP enhancement for heterogeneous networks",
//! International Journal of Satellite Communications and Networking 22(5), 2004), as Linux
//! `net/ipv4/tcp_hybla.c` runs it.
//!
//! Hybla makes a long-RTT flow grow as a flow with the reference RTT RTT0 would: with the
//! normalized RTT rho = RTT / RTT0 (at least 1), each ACK adds
//!
//! - in slow start 2^rho - 1 segments (the window multiplies by 2^rho per RTT, i.e. doubles
//!   every RTT0 of time), and
//! - in congestion avoidance rho^2 / W segments (rho^2 segments per RTT, i.e. one per RTT0),
//!
//! so that W(t) is the same function of time whatever the RTT and the rate W / RTT scales
//! with rho: the paper's equations (9) and (10). As Linux:
//!
//! - rho is kept in eighths, floor(8 x srtt / RTT0) and at least 8, and recomputed whenever
//!   srtt falls below the smallest srtt seen; 2^(fraction) comes from a table of eight steps
//!   (here computed, 128 x 2^(k/8) rounded down) and the exponent is capped at 16;
//! - the increment is counted in 1/128 segment, the fractions carried in `cents`; a window
//!   that earns less than 1/128 per ACK (W > 128 rho^2: 2 048 segments at rho 4) grows by one
//!   segment per window of ACKs, as Reno;
//! - growth is per ACK, whatever the ACK covers (the paper's per-ACK rules), only when cwnd
//!   limits the sender, and cwnd never exceeds 65535 (`snd_cwnd_clamp`);
//! - outside the Open state Hybla steps aside for Reno (`tcp_reno_cong_avoid`); a loss halves
//!   the window (`tcp_reno_ssthresh`), undo is `tcp_reno_undo_cwnd`;
//! - Linux's `init`, after the handshake, sets cwnd to rho (and ssthresh is still infinite, so
//!   the first ACK of a long path opens the window by 2^rho - 1). Here init comes at the
//!   handshake's end too ([`CongestionControl::established`]); a flow that starts established
//!   has no RTT then, keeps its initial window and takes rho from its first srtt.

use super::{reno_cong_avoid, AckSample, CaState, CcState, CongestionControl};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux `hybla_init`: `tp->snd_cwnd_clamp = 65535`.
const CWND_CLAMP_SEGMENTS: u32 = 65535;
/// rho is kept in eighths (`rho_3ls`), increments in 128ths (`<<7`).
const RHO_SHIFT: u32 = 3;
const ONE: u32 = 128;
/// The slow-start exponent is capped (`min(ca->rho, 16U)`): 2^16 x 128 still fits in u32.
const MAX_SLOW_START_EXPONENT: u32 = 16;

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HyblaConfig {
    /// The reference RTT RTT0, picoseconds: a flow with this RTT or less grows as Reno
    /// (Caini and Firrincieli 2004: 25 ms; Linux module parameter `rtt0` = 25 ms).
    pub rtt0_ps: Time,
}

impl HyblaConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.rtt0_ps == 0 {
            return Err("rtt0_ps: 0 is not allowed: the reference RTT must be positive".into());
        }
        Ok(())
    }
}

/// 2^(k/8) in 128ths, rounded down, for k = 0..7 (`hybla_fraction`).
fn fraction_128ths(eighths: u32) -> u32 {
    if eighths >= 8 {
        return ONE;
    }
    (ONE as f64 * 2f64.powf(eighths as f64 / 8.0)).floor() as u32
}

pub struct Hybla {
    cfg: HyblaConfig,
    /// Hybla's rules apply (the Open state).
    enabled: bool,
    /// Increments below one segment carried over, 128ths (`snd_cwnd_cents`).
    cents: u32,
    /// rho in eighths (`rho_3ls`), 0 before it is computed.
    rho_8ths: u32,
    /// The smallest srtt seen, from which rho was computed (`minrtt_us`); None before one.
    min_srtt: Option<Time>,
}

impl Hybla {
    pub fn new(cfg: HyblaConfig) -> Self {
        Hybla { cfg, enabled: true, cents: 0, rho_8ths: 0, min_srtt: None }
    }

    /// rho in eighths, as computed from the last srtt that lowered it.
    pub fn rho_8ths(&self) -> u32 {
        self.rho_8ths
    }

    /// `hybla_recalc_param`: rho from srtt, at least 1.
    fn recalc(&mut self, s: &CcState) {
        let srtt = s.srtt.unwrap_or(0) as u128;
        let eighths = (srtt << RHO_SHIFT) / self.cfg.rtt0_ps as u128;
        self.rho_8ths = eighths.clamp(1 << RHO_SHIFT, u32::MAX as u128) as u32;
    }

    fn rho(&self) -> u32 {
        self.rho_8ths >> RHO_SHIFT
    }

    /// rho^2 in 128ths (`rho2_7ls`): (8 rho)^2 x 2 = rho^2 x 128.
    fn rho_squared_128ths(&self) -> u64 {
        let r = self.rho_8ths as u64;
        (r * r) << 1
    }
}

impl CongestionControl for Hybla {
    fn name(&self) -> &'static str {
        "hybla"
    }

    fn init(&mut self, s: &mut CcState) {
        *self = Hybla::new(self.cfg.clone());
        if s.srtt.is_some() {
            self.established(s);
        }
    }

    /// `hybla_init` once the handshake has measured the RTT: cwnd = rho.
    fn established(&mut self, s: &mut CcState) {
        if s.srtt.is_none() {
            return;
        }
        self.recalc(s);
        self.min_srtt = s.srtt;
        s.cwnd = self.rho().min(CWND_CLAMP_SEGMENTS);
    }

    /// `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, s: &CcState) -> u32 {
        (s.cwnd >> 1).max(2)
    }

    fn set_state(&mut self, _s: &mut CcState, new: CaState) {
        self.enabled = new == CaState::Open;
    }

    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample) {
        if let Some(srtt) = s.srtt {
            if self.min_srtt.is_none_or(|m| srtt < m) {
                self.recalc(s);
                self.min_srtt = Some(srtt);
            }
        }
        if !s.cwnd_limited {
            return;
        }
        if !self.enabled {
            reno_cong_avoid(s, ack.delivered_segments);
            s.cwnd = s.cwnd.min(CWND_CLAMP_SEGMENTS);
            return;
        }
        if self.rho_8ths == 0 {
            self.recalc(s);
        }
        let slow_start = s.in_slow_start();
        let increment: u64 = if slow_start {
            // 2^rho - 1 segments: 2^(integer part) x 2^(eighths) in 128ths, less one segment.
            let fraction = fraction_128ths(self.rho_8ths - (self.rho() << RHO_SHIFT));
            (1u64 << self.rho().min(MAX_SLOW_START_EXPONENT)) * fraction as u64 - ONE as u64
        } else {
            // rho^2 / W segments.
            let inc = self.rho_squared_128ths() / s.cwnd.max(1) as u64;
            if inc < ONE as u64 {
                s.cwnd_cnt += 1;
            }
            inc
        };
        let odd = (increment % ONE as u64) as u32;
        s.cwnd = s.cwnd.saturating_add((increment / ONE as u64).min(u32::MAX as u64) as u32);
        self.cents += odd;
        if self.cents >= ONE {
            s.cwnd = s.cwnd.saturating_add(self.cents / ONE);
            self.cents %= ONE;
            s.cwnd_cnt = 0;
        }
        // A window so large that rho^2 / W rounds to nothing: one segment per window of ACKs.
        if increment == 0 && s.cwnd_cnt >= s.cwnd {
            s.cwnd += 1;
            s.cwnd_cnt = 0;
        }
        if slow_start {
            s.cwnd = s.cwnd.min(s.ssthresh);
        }
        s.cwnd = s.cwnd.min(CWND_CLAMP_SEGMENTS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::testing::{ack, state};
    use crate::cc::INFINITE_SSTHRESH;
    use crate::time::PS_PER_MS;

    const RTT0: Time = 25 * PS_PER_MS;

    fn hybla() -> Hybla {
        Hybla::new(HyblaConfig { rtt0_ps: RTT0 })
    }

    /// A window state with srtt = `rho` x RTT0.
    fn at_rho(rho: f64, cwnd: u32, ssthresh: u32) -> CcState {
        CcState { srtt: Some((RTT0 as f64 * rho) as Time), ..state(cwnd, ssthresh) }
    }

    #[test]
    fn the_fraction_table_is_two_to_the_eighths() {
        // tcp_hybla.c's table: 128, 139, 152, 165, 181, 197, 215, 234.
        let table: Vec<u32> = (0..8).map(fraction_128ths).collect();
        assert_eq!(table, [128, 139, 152, 165, 181, 197, 215, 234]);
    }

    #[test]
    fn established_sets_cwnd_to_rho_and_reno_rtts_give_rho_one() {
        let mut h = hybla();
        let mut s = at_rho(24.0, 10, INFINITE_SSTHRESH);
        h.init(&mut state(10, INFINITE_SSTHRESH));
        h.established(&mut s);
        assert_eq!((h.rho(), s.cwnd), (24, 24), "600 ms over 25 ms");
        let mut s = at_rho(0.4, 10, INFINITE_SSTHRESH);
        h.established(&mut s);
        assert_eq!(h.rho_8ths(), 8, "rho is at least 1");
    }

    /// Slow start multiplies the window by 2^rho per window of ACKs: each ACK adds 2^rho - 1.
    #[test]
    fn slow_start_adds_two_to_the_rho_minus_one_per_ack() {
        for (rho, per_ack) in [(1.0, 1), (2.0, 3), (4.0, 15), (8.0, 255)] {
            let mut h = hybla();
            let mut s = at_rho(rho, 10, INFINITE_SSTHRESH);
            h.established(&mut s);
            let start = s.cwnd;
            for _ in 0..3 {
                // Delayed ACKs of two segments: still one increment per ACK.
                h.cong_avoid(&mut s, &ack(2));
            }
            assert_eq!(s.cwnd, start + 3 * per_ack, "rho {rho}");
        }
        // rho = 2.5: 2^2.5 - 1 = 4.66 per ACK; Linux's table gives 4 x 181/128 - 1 = 4.656.
        let mut h = hybla();
        let mut s = at_rho(2.5, 10, INFINITE_SSTHRESH);
        h.established(&mut s);
        assert_eq!(h.rho_8ths(), 20);
        let start = s.cwnd;
        for _ in 0..128 {
            h.cong_avoid(&mut s, &ack(1));
        }
        assert_eq!(s.cwnd - start, 4 * 181 - 128, "128 ACKs of (4 x 181 - 128) / 128 each");
    }

    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut h = hybla();
        let mut s = at_rho(8.0, 10, 100);
        h.established(&mut s);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!(s.cwnd, 100, "255 more would overshoot ssthresh");
    }

    /// Congestion avoidance adds rho^2 segments per window of ACKs (rho^2 / W each): rho^2
    /// times Reno's one, the paper's equation (10).
    #[test]
    fn congestion_avoidance_adds_rho_squared_per_rtt() {
        for rho in [2u32, 4, 8] {
            let w = 100;
            let mut h = hybla();
            let mut s = at_rho(rho as f64, w, 10);
            h.established(&mut s);
            s.cwnd = w;
            for _ in 0..w {
                h.cong_avoid(&mut s, &ack(1));
            }
            let grown = (s.cwnd - w) as f64;
            // dW/dn = rho^2 / W over n = W0 ACKs: W^2 = W0^2 + 2 rho^2 W0, which is W0 + rho^2
            // when rho^2 << W0 (here the window grows much within the window); the 128ths
            // lose less than one segment.
            let rho2 = (rho * rho) as f64;
            let w0 = w as f64;
            let ode = (w0 * w0 + 2.0 * rho2 * w0).sqrt() - w0;
            assert!((grown - ode).abs() <= 1.5, "rho {rho}: grew {grown}, dW/dn = rho^2 / W gives {ode:.1}");
        }
    }

    /// Linux's 128ths truncate rho^2 / W to nothing once W > 128 rho^2: the window then grows
    /// one segment per window of ACKs, as Reno (kept, as Linux does it).
    #[test]
    fn beyond_128_rho_squared_the_increment_truncates_to_renos() {
        let (rho, w) = (2.0, 2000);
        let mut h = hybla();
        let mut s = at_rho(rho, w, 10);
        h.established(&mut s);
        s.cwnd = w;
        for _ in 0..=w {
            h.cong_avoid(&mut s, &ack(1));
        }
        assert_eq!(s.cwnd, w + 1);
    }

    #[test]
    fn reno_outside_the_open_state_and_rho_follows_a_smaller_srtt() {
        let mut h = hybla();
        let mut s = at_rho(8.0, 100, 50);
        h.established(&mut s);
        s.cwnd = 100;
        h.set_state(&mut s, CaState::Recovery);
        for _ in 0..100 {
            h.cong_avoid(&mut s, &ack(1));
        }
        assert_eq!(s.cwnd, 101, "Reno: one segment per window");
        h.set_state(&mut s, CaState::Open);
        s.srtt = Some(2 * RTT0);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!(h.rho(), 2, "a smaller srtt lowers rho");
        s.srtt = Some(4 * RTT0);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!(h.rho(), 2, "a larger one does not raise it");
        assert_eq!(h.ssthresh(&s), s.cwnd / 2);
    }

    #[test]
    fn without_a_handshake_rho_comes_from_the_first_srtt() {
        let mut h = hybla();
        let mut s = state(10, INFINITE_SSTHRESH);
        h.init(&mut s);
        assert_eq!(s.cwnd, 10, "no RTT yet: the initial window stays");
        s.srtt = Some(4 * RTT0);
        h.cong_avoid(&mut s, &ack(1));
        assert_eq!((h.rho(), s.cwnd), (4, 25));
    }
}
