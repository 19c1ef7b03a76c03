//! BBR's pacing rate, shared by v1 (`cc/bbr.rs`) and v3 (`cc/bbr3/`): gain x bw less Linux's
//! 1 % margin, started from the initial window over the RTT, and never lowered before the
//! pipe is full (Linux `bbr_set_pacing_rate`, `bbr_init_pacing_rate_from_rtt`, the same in
//! v1 and Google's v3 `tcp_bbr.c`; draft-00 BBRSetPacingRateWithGain).

use crate::cc::CcState;
use crate::time::{Time, PS_PER_MS, PS_PER_S};

/// Linux paces 1 % below the model (`bbr_pacing_margin_percent`, since v4.20 "tcp_bbr:
/// adjust TCP BBR for departure time pacing"; v3 keeps it) so that the average rate slightly
/// undershoots the bottleneck and queues stay low; draft-00 has no margin.
const PACING_MARGIN: f64 = 0.01;
/// RTT assumed for the initial pacing rate before any sample (Linux
/// `bbr_init_pacing_rate_from_rtt`: a nominal 1 ms).
const NOMINAL_RTT_PS: Time = PS_PER_MS;

#[derive(Clone, Copy, Debug, Default)]
pub struct Pacing {
    /// Current pacing rate, payload bits per second.
    pub rate_bps: u64,
    /// The rate has been set from a measured RTT (Linux `has_seen_rtt`).
    has_seen_rtt: bool,
}

impl Pacing {
    /// gain x bw, less Linux's margin, bits per second.
    pub fn rate_with_gain(bw_bps: u64, gain: f64) -> u64 {
        (bw_bps as f64 * gain * (1.0 - PACING_MARGIN)) as u64
    }

    /// Before any bandwidth sample: `startup_gain` x cwnd / RTT, with the smoothed RTT if
    /// there is one, else a nominal 1 ms.
    pub fn init_from_rtt(&mut self, s: &CcState, startup_gain: f64) {
        let rtt_ps = match s.srtt {
            Some(srtt) => {
                self.has_seen_rtt = true;
                srtt.max(1)
            }
            None => NOMINAL_RTT_PS,
        };
        let bw_bps = (s.cwnd as u128 * s.mss_bytes as u128 * 8 * PS_PER_S as u128 / rtt_ps as u128) as u64;
        self.rate_bps = Self::rate_with_gain(bw_bps, startup_gain);
    }

    /// Until the pipe is full the rate never falls, so that a low early sample cannot slow
    /// STARTUP down.
    pub fn set(&mut self, s: &CcState, bw_bps: u64, gain: f64, full_bw_reached: bool, startup_gain: f64) {
        if !self.has_seen_rtt && s.srtt.is_some() {
            self.init_from_rtt(s, startup_gain);
        }
        let rate = Self::rate_with_gain(bw_bps, gain);
        if full_bw_reached || rate > self.rate_bps {
            self.rate_bps = rate;
        }
    }
}
