//! Congestion control algorithms behind one small trait, in the spirit of Linux's
//! `struct tcp_congestion_ops`.
//!
//! An algorithm decides how the window grows (`cong_avoid`), where it falls after a loss
//! (`ssthresh`), and may watch state changes and RTT samples. It never detects losses or
//! retransmits: duplicate ACKs, fast retransmit, fast recovery and timeouts live in the TCP
//! core (the stacks of `tcp/stack/`), as they do in Linux. The window is counted in segments,
//! as in Linux.

pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod bpf;
pub mod cdg;
pub mod cubic;
pub mod dctcp;
pub mod external;
pub mod fast;
pub mod griddt;
pub mod highspeed;
pub mod htcp;
pub mod hybla;
pub mod illinois;
pub mod jiffies;
pub mod lp;
pub mod nocc;
pub mod nv;
pub mod prague;
pub mod reno;
pub mod round;
pub mod scalable;
pub mod vegas;
pub mod veno;
pub mod westwood;
pub mod yeah;

use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Linux's `TCP_INFINITE_SSTHRESH`: no slow-start threshold set yet.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The window state an algorithm reads and changes.
#[derive(Clone, Debug)]
pub struct CcState {
    /// Congestion window, segments (Linux `snd_cwnd`).
    pub cwnd: u32,
    /// ACKed segments counted toward the next additive increase (Linux `snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Slow-start threshold, segments (Linux `snd_ssthresh`).
    pub ssthresh: u32,
    /// Whether the last transmissions were limited by cwnd rather than by the receiver window
    /// or the application (Linux `tcp_is_cwnd_limited`): only then may the window grow.
    pub cwnd_limited: bool,
    /// Segments sent and not yet acknowledged.
    pub in_flight_segments: u32,
    pub mss_bytes: u32,
    pub now: Time,
    /// Smoothed and minimum RTT, picoseconds (None before the first sample).
    pub srtt: Option<Time>,
    /// The RTT's variation as the stack's estimator keeps it (RFC 6298 RTTVAR; Linux
    /// mdev), picoseconds; 0 before the first sample.
    pub rttvar: Time,
    pub min_rtt: Option<Time>,
    /// Limited Slow Start (RFC 3742) threshold, segments; 0 turns it off. [`slow_start`]
    /// honours it, so every algorithm that grows through it gets LSS.
    pub max_ssthresh: u32,
    /// Bytes delivered to the receiver (cumulatively ACKed or SACKed) since the start.
    pub delivered_bytes: u64,
    /// Segments delivered since the start, and of them those the receiver reported CE-marked
    /// (Linux `tp->delivered`, `tp->delivered_ce`; kept by the Linux stack): with RFC 3168
    /// feedback every segment an ECE-flagged ACK delivers (`tcp_count_delivered`), with
    /// Accurate ECN the ACE field's count. DCTCP and Prague take their fraction per window.
    pub delivered_segments: u64,
    pub delivered_ce_segments: u64,
    /// Oldest unacknowledged byte (Linux `snd_una`) and the next new byte to send (Linux
    /// `snd_nxt`, the highest ever sent: a retransmission does not move it back), counted
    /// from 0 at the connection's first data byte. Algorithms that count rounds as Linux does
    /// (Vegas's `beg_snd_nxt`, HyStart's `end_seq`) read them.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// When the last data segment was sent (Linux `lsndtime`), None before the first. At
    /// `CwndEvent::TxStart` it is still the send before the idle period: CUBIC shifts its
    /// epoch by `now - last_send_ps`.
    pub last_send_ps: Option<Time>,
    /// Set by an algorithm that reduces the window without a loss on its own signal (CDG's
    /// delay backoff, Linux `tcp_enter_cwr` from `cong_avoid`); the stack takes it after
    /// `cong_avoid` and enters CWR, asking `ssthresh` for the reduced window.
    pub request_cwr: bool,
    /// The sender paces its segments (Linux `sk_pacing_status != SK_PACING_NONE`): HyStart
    /// and HyStart++ judge ACK spacing and burst limits differently then.
    pub paces: bool,
}

impl CcState {
    /// A window of `cwnd` segments of `mss_bytes`, all in flight (from sequence 0) and
    /// cwnd-limited, with no RTT measured yet: the usual starting point of an algorithm's tests.
    pub fn new(cwnd: u32, ssthresh: u32, mss_bytes: u32) -> CcState {
        CcState {
            cwnd,
            cwnd_cnt: 0,
            ssthresh,
            cwnd_limited: true,
            in_flight_segments: cwnd,
            mss_bytes,
            now: 0,
            srtt: None,
            rttvar: 0,
            min_rtt: None,
            max_ssthresh: 0,
            delivered_bytes: 0,
            delivered_segments: 0,
            delivered_ce_segments: 0,
            snd_una: 0,
            snd_nxt: cwnd as u64 * mss_bytes as u64,
            last_send_ps: None,
            request_cwr: false,
            paces: false,
        }
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// Loss-recovery state of the connection (Linux `TCP_CA_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaState {
    /// Normal operation.
    Open,
    /// Congestion window reduced without a loss (Linux `TCP_CA_CWR`): the host's interface
    /// queue refused a segment (local congestion) or an ACK echoed an ECN mark. Lasts until
    /// everything sent before the reduction is acknowledged: one reduction per window.
    Cwr,
    /// Fast recovery after duplicate ACKs (or SACK-detected loss).
    Recovery,
    /// Recovery after a retransmission timeout.
    Loss,
}

/// Events outside the ACK stream (Linux `enum tcp_ca_event`, include/net/tcp.h). The core
/// raises each where Linux calls `tcp_ca_event`; an algorithm answers those it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CwndEvent {
    /// The first transmission after the connection was idle (nothing in flight), Linux
    /// `CA_EVENT_TX_START`: time-based algorithms (BIC, CUBIC) restart their epoch.
    TxStart,
    /// The window was restarted after an idle period (slow start after idle), Linux
    /// `CA_EVENT_CWND_RESTART` from `tcp_cwnd_restart`.
    CwndRestart,
    /// A window reduction (fast recovery or CWR) has ended and cwnd is set to ssthresh,
    /// Linux `CA_EVENT_COMPLETE_CWR` from `tcp_end_cwnd_reduction`.
    CompleteCwr,
    /// A retransmission timeout: the window is about to become the loss window, Linux
    /// `CA_EVENT_LOSS` from `tcp_enter_loss` (raised only when ssthresh is recomputed).
    Loss,
    /// An ACK carried ECN-Echo (Linux `CA_EVENT_ECN_IS_CE`, for algorithms that count
    /// marks, such as DCTCP).
    EcnIsCe,
    /// An ACK of new data without ECN-Echo (Linux `CA_EVENT_ECN_NO_CE`).
    EcnNoCe,
}

/// What one ACK told the sender.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    /// Newly cumulatively acknowledged segments, SACKed before or not (Linux
    /// `ack_sample.pkts_acked`, what `pkts_acked` sees).
    pub acked_segments: u32,
    /// Segments newly delivered by this ACK: cumulatively acknowledged and not SACKed before,
    /// plus newly SACKed (Linux `acked_sacked`, the `acked` argument of `cong_avoid`). The
    /// window grows by these: after a timeout the first cumulative ACK may cover dozens of
    /// segments SACKed before it, which were counted when they were SACKed and must not
    /// open the window again (one burst of that size would leave at once).
    pub delivered_segments: u32,
    pub acked_bytes: u64,
    /// RTT measured from this ACK, if any.
    pub rtt: Option<Time>,
    /// Bytes newly delivered: newly SACKed, plus cumulatively ACKed but not SACKed before, so
    /// that each byte counts once (Linux `rs->acked_sacked`; `CcState::delivered_bytes` sums
    /// these).
    pub delivered_bytes: u64,
    /// Delivery rate over the sampling interval (Linux `tcp_rate.c`), bits per second;
    /// None when no valid sample.
    pub delivery_rate_bps: Option<u64>,
    /// The sample was taken while the application, not the network, limited sending.
    pub is_app_limited: bool,
    /// The ACK may have been delayed by the receiver (Linux `rs->is_ack_delayed`, from
    /// `FLAG_ACK_MAYBE_DELAYED` in `tcp_clean_rtx_queue`): it newly acknowledges exactly one
    /// segment, never retransmitted, shorter than the MSS and sent when nothing else was
    /// outstanding (its end less than an MSS above snd_una), and nothing else was delivered
    /// between its sending and this ACK, which carries no SACK or ECN echo. Such a lone runt
    /// waits out the receiver's delayed-ACK timer, so its RTT sample overstates the path;
    /// BBR does not let it refresh an expired RTprop (Linux `bbr_update_min_rtt`).
    pub is_ack_delayed: bool,
    /// The ACK's timestamp option (RFC 7323) when the connection uses timestamps: its TSval,
    /// the receiver's clock when it sent the ACK, and its TSecr, the sender's clock echoed
    /// (Linux `rx_opt.rcv_tsval`, `rcv_tsecr`), picoseconds. TCP-LP reads one-way delay from
    /// them.
    pub timestamps: Option<(Time, Time)>,
    /// Bytes in the network before this ACK (Linux `prior_in_flight`, from
    /// `tcp_packets_in_flight`): with SACK the RFC 6675 pipe (outstanding minus SACKed minus
    /// lost plus retransmitted), otherwise every byte outstanding.
    pub prior_in_flight_bytes: u64,
    /// The same after this ACK. Filled only for algorithms with `cong_control`.
    pub in_flight_bytes: u64,
    /// The connection's delivered bytes when the segment behind the rate sample was sent
    /// (Linux `rs->prior_delivered`); 0 without a sample. Filled only for algorithms with
    /// `cong_control`: BBR counts round trips with it.
    pub prior_delivered_bytes: u64,
    /// Bytes newly marked lost by this ACK (Linux `rs->losses`): with SACK, holes that fell
    /// below the RFC 6675 (or FACK) loss boundary; otherwise the head segment retransmitted on
    /// entering fast recovery or on a NewReno partial ACK. Losses marked by a retransmission
    /// timeout are not reported by any ACK, as in Linux. Filled only for algorithms with
    /// `cong_control`.
    pub newly_lost_bytes: u64,
    /// The ACK echoed ECN (ECE; Linux `rs->is_ece`). Filled only for algorithms with
    /// `cong_control`.
    pub is_ece: bool,
    /// Of the rate sample (filled only for algorithms with `cong_control`; 0 without a
    /// sample): bytes delivered over its interval (Linux `rs->delivered`); bytes in flight
    /// when its segment was sent (BBRv3's `rs->tx_in_flight`); bytes marked lost and bytes
    /// delivered by ECN-echoing ACKs since then (v3 `rs->lost`, `rs->delivered_ce`). Losses
    /// count as ACKs report them (`newly_lost_bytes`).
    pub rate_delivered_bytes: u64,
    pub tx_in_flight_bytes: u64,
    pub rate_lost_bytes: u64,
    pub rate_delivered_ce_bytes: u64,
    /// Of the segments this ACK delivered, those the receiver reported CE-marked (Linux
    /// `rs->ece_delta`, the change of `delivered_ce`; Linux stack only).
    pub ce_segments: u32,
}

impl AckSample {
    /// Bytes of this ACK's delivery the receiver reported CE-marked (Linux's
    /// `tcp_count_delivered` with the ECE flag): all of them with RFC 3168 feedback, where
    /// every delivered segment counts; with Accurate ECN only the marked segments the stack
    /// counted (`ce_segments`), at most what was delivered.
    pub fn ce_delivered_bytes(&self, mss_bytes: u64) -> u64 {
        self.delivered_bytes.min(u64::from(self.ce_segments) * mss_bytes)
    }

    /// An ACK that newly acknowledges `segments` full segments of `mss_bytes`, nothing else
    /// known: the usual input of an algorithm's tests.
    pub fn of_segments(segments: u32, mss_bytes: u32) -> AckSample {
        let bytes = segments as u64 * mss_bytes as u64;
        AckSample {
            acked_segments: segments,
            delivered_segments: segments,
            acked_bytes: bytes,
            delivered_bytes: bytes,
            ..Default::default()
        }
    }
}

pub trait CongestionControl: Send + Sync {
    /// Short name as used in scenarios ("reno").
    fn name(&self) -> &'static str;

    /// Called once before the first transmission (Linux `init`).
    fn init(&mut self, _s: &mut CcState) {}

    /// Whether the algorithm draws random numbers (NV's min-RTT reset period, CDG's backoff,
    /// where Linux calls `get_random_*`): it then gets its own generator, [`Self::seed_rng`].
    fn uses_rng(&self) -> bool {
        false
    }

    /// The generator of this connection's algorithm, from the scenario's seed and the flow's
    /// name (`{flow}/cc/{connection}`), so the same seed gives the same draws.
    fn seed_rng(&mut self, _rng: crate::rng::Rng) {}

    /// The three-way handshake completed and seeded the RTT estimator (`s.srtt` is its
    /// sample): Linux calls the module's `init` only then (`tcp_init_transfer`), after setting
    /// the initial window. Algorithms whose `init` reads the RTT (Hybla's rho) finish it here;
    /// a flow that starts established never gets this call.
    fn established(&mut self, _s: &mut CcState) {}

    /// The slow-start threshold after a congestion signal, segments (Linux `ssthresh`).
    fn ssthresh(&mut self, s: &CcState) -> u32;

    /// Grows the window on an ACK of new data outside loss recovery (Linux `cong_avoid`), by
    /// `ack.delivered_segments`.
    fn cong_avoid(&mut self, s: &mut CcState, ack: &AckSample);

    /// The connection entered a new loss-recovery state (Linux `set_state`). Called after the
    /// core has set cwnd for the transition (ssthresh + dupthresh entering NewReno recovery,
    /// ssthresh leaving it, ssthresh entering CWR, 1 after a timeout), so an algorithm may
    /// override it.
    fn set_state(&mut self, _s: &mut CcState, _new: CaState) {}

    /// An event outside the ACK stream (Linux `cwnd_event`).
    fn cwnd_event(&mut self, _s: &mut CcState, _ev: CwndEvent) {}

    /// Every ACK that acknowledges data, with its RTT sample (Linux `pkts_acked`). It may set
    /// ssthresh, as CUBIC's HyStart does when it ends slow start.
    fn pkts_acked(&mut self, _s: &mut CcState, _ack: &AckSample) {}

    /// A recovery turned out to be spurious (DSACK, Eifel or F-RTO undo): the window to go
    /// back to, given cwnd just before the reduction (`prior_cwnd`). Linux `undo_cwnd`; the
    /// default is Linux's `tcp_reno_undo_cwnd`, max(cwnd, prior_cwnd). The core restores
    /// ssthresh itself (to the larger of it and the one before the reduction), and calls this
    /// before it returns the state to Open, as Linux's `tcp_undo_cwnd_reduction` comes before
    /// `tcp_set_ca_state` (H-TCP's undo relies on it).
    fn undo_cwnd(&mut self, s: &CcState, prior_cwnd: u32) -> u32 {
        s.cwnd.max(prior_cwnd)
    }

    /// An algorithm that sets cwnd itself on every ACK, in recovery too (Linux
    /// `cong_control`, as BBR). When true the core calls [`CongestionControl::cong_control`]
    /// instead of `cong_avoid` and leaves cwnd alone on entering and leaving recovery.
    fn has_cong_control(&self) -> bool {
        false
    }

    /// Sets cwnd (and pacing) from a delivery-rate sample (Linux `cong_control`).
    fn cong_control(&mut self, _s: &mut CcState, _ack: &AckSample) {}

    /// The rate the sender must pace at, bits per second, if the algorithm paces (BBR).
    fn pacing_rate_bps(&self, _s: &CcState) -> Option<u64> {
        None
    }

    /// Asked after each `cong_control`: whether delivery-rate samples of what is sent from now
    /// until the data in flight is delivered must count as application-limited, so that a
    /// deliberately low sending rate does not enter a bandwidth estimate (BBR's PROBE_RTT, where
    /// Linux sets `tp->app_limited` itself).
    fn marks_app_limited(&self) -> bool {
        false
    }

    /// A duplicate ACK arrived (it moved no cumulative ACK), Linux `in_ack_event` with
    /// `CA_ACK_SLOWPATH` on an ACK that leaves `snd_una`: Westwood counts it as one segment
    /// delivered (MobiCom 2001; Linux `westwood_acked_count`). ACKs of new data come through
    /// `pkts_acked`. Of the state only `now` and `mss_bytes` are current here.
    fn duplicate_ack(&mut self, _s: &CcState) {}

    /// The algorithm times every segment itself, as ns-2's Vegas does (`v_sendtime_`): on the
    /// RFC stack without timestamps, where the core times one segment per round trip, each
    /// new ACK then carries the RTT of the newest segment it acknowledges (`tcp/ack_timing.rs`).
    /// The Linux stack and timestamps give such samples anyway.
    fn times_every_ack(&self) -> bool {
        false
    }

    /// The algorithm marks its segments ECT(1), the L4S identifier (RFC 9331; Linux
    /// `TCP_ECN_ECT_1`, which Prague sets) instead of ECT(0). Asked once.
    fn sends_ect1(&self) -> bool {
        false
    }
}

/// Standard slow start (Linux `tcp_slow_start`): grow by the acknowledged segments up to
/// ssthresh; return the part of `acked` left over for congestion avoidance.
///
/// With Limited Slow Start (RFC 3742, `s.max_ssthresh > 0`), above max_ssthresh the window
/// grows by 1/K segment per acknowledged segment, K = int(cwnd / (max_ssthresh / 2)), so at
/// most max_ssthresh/2 segments per RTT.
pub fn slow_start(s: &mut CcState, acked: u32) -> u32 {
    if s.max_ssthresh > 0 && s.cwnd > s.max_ssthresh {
        let k = (s.cwnd / (s.max_ssthresh / 2).max(1)).max(1);
        s.cwnd_cnt += acked;
        if s.cwnd_cnt >= k {
            let add = s.cwnd_cnt / k;
            s.cwnd_cnt -= add * k;
            s.cwnd = s.cwnd.saturating_add(add).min(s.ssthresh.max(s.cwnd));
        }
        return 0;
    }
    let cwnd = s.cwnd.saturating_add(acked).min(s.ssthresh);
    let used = cwnd - s.cwnd;
    s.cwnd = cwnd;
    acked - used
}

/// The common start of `cong_avoid` (Linux `tcp_reno_cong_avoid`'s first half): no growth
/// unless cwnd-limited; in slow start grow by `acked` (with Limited Slow Start); returns the
/// acknowledged segments left for congestion avoidance, if any.
pub fn slow_start_first(s: &mut CcState, acked: u32) -> Option<u32> {
    if !s.cwnd_limited {
        return None;
    }
    let left = if s.in_slow_start() { slow_start(s, acked) } else { acked };
    (left > 0).then_some(left)
}

/// What an ACK counts for window growth: the segments it delivered (byte counting, RFC 3465,
/// as Linux counts since 2.6.13 in `tcp_slow_start` and `tcp_cong_avoid_ai`), or one (Linux
/// 2.4's `tcp_cong_avoid` ran once per ACK whatever it acknowledged, and so did the 2.4.19
/// HighSpeed and Scalable patches): with delayed ACKs one per two segments.
pub fn counted_segments(ack: &AckSample, byte_counting: bool) -> u32 {
    if byte_counting {
        ack.delivered_segments
    } else {
        1
    }
}

/// Linux 2.4's window reduction without a loss (`__tcp_enter_cwr` in include/net/tcp.h) set
/// ssthresh with `tcp_recalc_ssthresh`, max(cwnd / 2, 2), whatever the algorithm. An
/// algorithm with `cwr_halves` sets this in `set_state(Cwr)`, from cwnd, which the Linux
/// stack leaves untouched until then (the RFC stack has already cut it: the scenario refuses
/// `cwr_halves` there).
pub fn linux_2_4_cwr_ssthresh(cwnd: u32) -> u32 {
    (cwnd / 2).max(2)
}

/// Linux `tcp_reno_cong_avoid`: slow start by the segments acknowledged, then one segment
/// per window of them. The Linux forms fall back to it where they leave their own rule
/// (Vegas, Veno and Hybla outside the Open state, CDG).
pub fn reno_cong_avoid(s: &mut CcState, acked: u32) {
    if let Some(left) = slow_start_first(s, acked) {
        cong_avoid_ai(s, s.cwnd, left);
    }
}

/// Additive increase of one segment per `w` acknowledged segments (Linux `tcp_cong_avoid_ai`).
pub fn cong_avoid_ai(s: &mut CcState, w: u32, acked: u32) {
    let w = w.max(1);
    if s.cwnd_cnt >= w {
        s.cwnd_cnt = 0;
        s.cwnd += 1;
    }
    s.cwnd_cnt += acked;
    if s.cwnd_cnt >= w {
        let delta = s.cwnd_cnt / w;
        s.cwnd_cnt -= delta * w;
        s.cwnd += delta;
    }
}

/// Which algorithm a flow uses and its parameters, as the scenario gives them.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "algorithm", rename_all = "lowercase", deny_unknown_fields)]
pub enum CcSpec {
    Reno(reno::RenoConfig),
    Vegas(vegas::VegasConfig),
    Westwood(westwood::WestwoodConfig),
    #[serde(rename = "westwood_plus")]
    WestwoodPlus(westwood::WestwoodPlusConfig),
    GridDt(griddt::GridDtConfig),
    Fast(fast::FastConfig),
    Nocc(nocc::NoccConfig),
    Bbr(bbr::BbrConfig),
    Highspeed(highspeed::HighSpeedConfig),
    Scalable(scalable::ScalableConfig),
    Htcp(htcp::HtcpConfig),
    Bic(bic::BicConfig),
    Cubic(cubic::CubicConfig),
    Bbr3(bbr3::Bbr3Config),
    Dctcp(dctcp::DctcpConfig),
    Prague(prague::PragueConfig),
    /// A BPF struct_ops program (`cc/bpf.rs`).
    Bpf(bpf::BpfConfig),
    /// A controller written in Python (`cc/external.rs`; fatpipe-py attaches it).
    Python(external::ExternalConfig),
    Hybla(hybla::HyblaConfig),
    Illinois(illinois::IllinoisConfig),
    Veno(veno::VenoConfig),
    Yeah(yeah::YeahConfig),
    Nv(nv::NvConfig),
    Cdg(cdg::CdgConfig),
    Lp(lp::LpConfig),
}

impl CcSpec {
    pub fn build(&self) -> Box<dyn CongestionControl> {
        match self {
            CcSpec::Reno(cfg) => Box::new(reno::Reno::new(cfg.clone())),
            CcSpec::Vegas(cfg) => vegas::build(cfg),
            CcSpec::Westwood(cfg) => Box::new(westwood::Westwood::new(cfg.clone())),
            CcSpec::WestwoodPlus(cfg) => westwood::build_plus(cfg),
            CcSpec::GridDt(cfg) => Box::new(griddt::GridDt::new(cfg.clone())),
            CcSpec::Fast(cfg) => Box::new(fast::Fast::new(cfg.clone())),
            CcSpec::Nocc(cfg) => Box::new(nocc::Nocc::new(cfg.clone())),
            CcSpec::Bbr(cfg) => Box::new(bbr::Bbr::new(cfg.clone())),
            CcSpec::Highspeed(cfg) => highspeed::build(cfg),
            CcSpec::Scalable(cfg) => Box::new(scalable::Scalable::new(cfg.clone())),
            CcSpec::Htcp(cfg) => Box::new(htcp::Htcp::new(cfg.clone())),
            CcSpec::Bic(cfg) => Box::new(bic::Bic::new(cfg.clone())),
            CcSpec::Cubic(cfg) => cubic::build(cfg),
            CcSpec::Dctcp(cfg) => Box::new(dctcp::Dctcp::new(cfg.clone())),
            CcSpec::Prague(cfg) => Box::new(prague::Prague::new(cfg.clone())),
            CcSpec::Bpf(cfg) => bpf::build(cfg),
            CcSpec::Python(cfg) => external::build(cfg),
            CcSpec::Bbr3(cfg) => Box::new(bbr3::Bbr3::new(cfg.clone())),
            CcSpec::Hybla(cfg) => Box::new(hybla::Hybla::new(cfg.clone())),
            CcSpec::Illinois(cfg) => Box::new(illinois::Illinois::new(cfg.clone())),
            CcSpec::Veno(cfg) => Box::new(veno::Veno::new(cfg.clone())),
            CcSpec::Yeah(cfg) => Box::new(yeah::Yeah::new(cfg.clone())),
            CcSpec::Nv(cfg) => Box::new(nv::Nv::new(cfg.clone())),
            CcSpec::Cdg(cfg) => Box::new(cdg::Cdg::new(cfg.clone())),
            CcSpec::Lp(cfg) => Box::new(lp::Lp::new(cfg.clone())),
        }
    }
}

impl CcSpec {
    /// The receiving end runs DCTCP too, and so echoes CE as RFC 8257 section 3.2 says
    /// (`TcpReceiver::use_dctcp_feedback`).
    pub fn receiver_echoes_ce_changes(&self) -> bool {
        matches!(self, CcSpec::Dctcp(_))
    }
}

/// The scenario's parameters of `algorithm` at their defaults, for tests and benchmarks,
/// which build configs without Python. The core has no defaults: the scenario's tables
/// (python/fatpipe/scenario/congestion.py) own them and give the core every value; they also
/// write them to `python/fatpipe/schemas/cc-defaults.json`, which tests/test_contract.py
/// keeps equal to the tables. The simulation never calls this.
#[doc(hidden)]
pub fn scenario_defaults<T: serde::de::DeserializeOwned>(algorithm: &str) -> T {
    let all: serde_json::Value =
        serde_json::from_str(include_str!("../../../../python/fatpipe/schemas/cc-defaults.json")).expect("valid JSON");
    let mut params = all[algorithm].clone();
    params.as_object_mut().unwrap_or_else(|| panic!("no defaults for {algorithm:?}")).remove("algorithm");
    serde_json::from_value(params).unwrap_or_else(|e| panic!("{algorithm}: {e}"))
}

/// Unit tests start from the scenario's defaults (`Config::default()`).
#[cfg(test)]
macro_rules! default_from_the_scenario {
    ($($config:ty => $algorithm:literal),* $(,)?) => {
        $(impl Default for $config {
            fn default() -> Self {
                scenario_defaults($algorithm)
            }
        })*
    };
}

#[cfg(test)]
default_from_the_scenario!(
    reno::RenoConfig => "reno",
    cubic::CubicConfig => "cubic",
    bbr::BbrConfig => "bbr",
    westwood::WestwoodPlusConfig => "westwood_plus",
    highspeed::HighSpeedConfig => "highspeed",
    scalable::ScalableConfig => "scalable",
    htcp::HtcpConfig => "htcp",
    bic::BicConfig => "bic",
    bbr3::Bbr3Config => "bbr3",
    dctcp::DctcpConfig => "dctcp",
    prague::PragueConfig => "prague",
);

/// Test helpers shared by the algorithms' unit tests: a window state and an ACK with the
/// 1448-byte MSS of a 1500-byte MTU with timestamps.
#[cfg(test)]
pub(crate) mod testing {
    use super::{AckSample, CcState};

    pub fn state(cwnd: u32, ssthresh: u32) -> CcState {
        CcState::new(cwnd, ssthresh, 1448)
    }

    pub fn ack(segments: u32) -> AckSample {
        AckSample::of_segments(segments, 1448)
    }

    /// One round trip of a window sent from `end`: an ACK per segment of the window as it
    /// stands at the start, `on_ack` called for each with `snd_una` at `end` (nothing passed
    /// yet) and, for the last, just past it; then the next window goes out from there. The
    /// round-based algorithms (Linux's `after(ack, end_seq)`) end a round on its last ACK.
    pub fn round(s: &mut CcState, end: u64, mut on_ack: impl FnMut(&mut CcState)) {
        let n = s.cwnd;
        for i in 0..n {
            s.snd_una = if i + 1 == n { end + 1 } else { end };
            on_ack(s);
        }
        s.snd_nxt = s.snd_una + s.cwnd as u64 * s.mss_bytes as u64;
    }
}
