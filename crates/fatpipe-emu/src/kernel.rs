//! From a flow of the scenario to the Linux knobs that give its TCP settings, and an honest
//! note for every setting Linux has no knob for.
//!
//! Per socket: TCP_CONGESTION, SO_SNDBUF, SO_RCVBUF, TCP_MAXSEG, SO_MAX_PACING_RATE, and
//! TCP_QUICKACK after each read for delayed_ack = false. Per host namespace (sysctls, which
//! Linux keeps per network namespace): SACK, timestamps, window scaling, ECN, the duplicate
//! ACK threshold (tcp_reordering), the RTO bounds, slow start after idle, the pacing ratios,
//! and the buffer ceilings. Per route (in the sender's namespace, to the receiver): the
//! initial window (initcwnd) and a fixed initial ssthresh. Two flows that need different
//! values of a host-wide sysctl cannot share the host: that is an error naming both.

use crate::traffic::tcp::TcpOptions;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::scenario::FlowSpec;
use fatpipe_core::tcp::config::{Recovery, RtoEstimator, StackKind, TcpConfig, WindowReduction};
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S, PS_PER_US};
use serde_json::Value;
use std::collections::BTreeMap;

mod notes;
use notes::parameter_notes;
pub use notes::{buffer_notes, host_setting_notes, route_notes, BufferHost, HOST_SYSCTLS};

/// Linux's initial window (TCP_INIT_CWND, include/net/tcp.h).
pub const LINUX_INITIAL_WINDOW: u32 = 10;
/// Linux's delayed-ACK floor (TCP_DELACK_MIN) and initial RTO (TCP_TIMEOUT_INIT).
pub const LINUX_DELACK_MIN_PS: Time = 40 * PS_PER_MS;
pub const LINUX_INITIAL_RTO_PS: Time = PS_PER_S;
/// Linux ACKs at least every second full-sized segment (__tcp_ack_snd_check).
pub const LINUX_ACK_EVERY: u32 = 2;
/// tcp_rto_max_ms accepts 1 s to 120 s (Documentation/networking/ip-sysctl.rst).
const RTO_MAX_RANGE_MS: (u64, u64) = (1_000, 120_000);

/// The Linux module that runs `cc`'s algorithm, and whether `cc` asks for the form that
/// module runs (its `variant`); None: mainline Linux has no such module. One exhaustive
/// match over the core's algorithms, so a new algorithm must say here what the kernel has.
/// Linux's reno grows as RFC 5681 does (in segments: variant "rfc"; BSD's growth in bytes
/// is not Linux's). Linux's "westwood" is Westwood+ (net/ipv4/tcp_westwood.c: "TCP
/// Westwood+"), so the original Westwood has no counterpart; FAST, GridDT and the
/// no-congestion-control stack have none in mainline either, a BPF object is its own, and a
/// Python controller and BBRv3 (out of tree) have none.
pub fn kernel_module(cc: &CcSpec) -> Option<(&'static str, bool)> {
    use fatpipe_core::cc::{bbr, cubic, highspeed, reno, scalable, vegas, westwood};
    Some(match cc {
        CcSpec::Reno(c) => ("reno", c.variant == reno::RenoVariant::Rfc),
        CcSpec::Cubic(c) => ("cubic", matches!(c.variant, cubic::CubicVariant::Linux)),
        CcSpec::Bbr(c) => ("bbr", matches!(c.variant, bbr::BbrVariant::Linux)),
        CcSpec::Bic(_) => ("bic", true),
        CcSpec::Htcp(_) => ("htcp", true),
        CcSpec::Highspeed(c) => ("highspeed", matches!(c.variant, highspeed::HighSpeedVariant::Linux)),
        CcSpec::Scalable(c) => ("scalable", matches!(c.variant, scalable::ScalableVariant::Linux)),
        CcSpec::Vegas(c) => ("vegas", matches!(c.variant, vegas::VegasVariant::Linux)),
        CcSpec::WestwoodPlus(c) => ("westwood", matches!(c.variant, westwood::WestwoodPlusVariant::Linux)),
        // Mainline modules whose scenario names are Linux's own (tcp_<name>.c).
        CcSpec::Hybla(_) => ("hybla", true),
        CcSpec::Illinois(_) => ("illinois", true),
        CcSpec::Veno(_) => ("veno", true),
        CcSpec::Yeah(_) => ("yeah", true),
        CcSpec::Nv(_) => ("nv", true),
        CcSpec::Cdg(_) => ("cdg", true),
        CcSpec::Lp(_) => ("lp", true),
        // tcp_dctcp.c is mainline; TCP Prague is the L4S team's out-of-tree module.
        CcSpec::Dctcp(_) => ("dctcp", true),
        // A Python controller runs in the simulator's process only; BBRv3 is Google's
        // out-of-tree tcp_bbr.c (v3 branch), not mainline's "bbr", which is v1.
        CcSpec::Westwood(_)
        | CcSpec::Bbr3(_)
        | CcSpec::Prague(_)
        | CcSpec::Fast(_)
        | CcSpec::GridDt(_)
        | CcSpec::Nocc(_)
        | CcSpec::Bpf(_)
        | CcSpec::Python(_) => return None,
    })
}

/// Route metrics for the path to the flow's receiver (rtnetlink RTA_METRICS).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteMetrics {
    pub initcwnd: Option<u32>,
    pub initrwnd: Option<u32>,
    /// A fixed (locked) initial ssthresh, segments.
    pub ssthresh: Option<u32>,
}

impl RouteMetrics {
    pub fn is_empty(&self) -> bool {
        *self == RouteMetrics::default()
    }
}

/// What Linux's TCP_MAXSEG takes (`tcp_sock_set_maxseg`, net/ipv4/tcp.c): at least
/// TCP_MIN_MSS, 88 bytes ("(60+60+8) - (20+20)": the largest IP and TCP headers with 8 bytes
/// of data, less the smallest), at most MAX_TCP_WINDOW, 32767 (include/net/tcp.h); any
/// other value is EINVAL. A scenario's links may be as small as IPv4 allows (68 bytes, RFC
/// 791; a TUN device's least MTU too, drivers/net/tun.c MIN_MTU), which leaves an MSS of 28.
pub const TCP_MAXSEG_BYTES: std::ops::RangeInclusive<u32> = 88..=32767;

/// The TCP_MAXSEG a flow's sockets get: its MSS, plus the timestamp option's 12 bytes when
/// it has them (TCP_MAXSEG clamps the MSS without options; with timestamps Linux then
/// carries 12 bytes fewer per segment, `tcp_current_mss`, the scenario's mss). An MSS Linux
/// would refuse is refused here, before any namespace or socket exists: "tcp.mss_bytes: ...".
pub fn max_segment_bytes(t: &TcpConfig) -> Result<u32, String> {
    let ts = if t.timestamps { fatpipe_core::packet::TCP_TIMESTAMPS_OPTION_BYTES } else { 0 };
    let value = t.mss_bytes + ts;
    if TCP_MAXSEG_BYTES.contains(&value) {
        return Ok(value);
    }
    let (lo, hi) = (TCP_MAXSEG_BYTES.start() - ts, TCP_MAXSEG_BYTES.end() - ts);
    Err(format!(
        "tcp.mss_bytes: {} is not allowed on Linux: its TCP_MAXSEG takes {} to {} bytes (TCP_MIN_MSS and MAX_TCP_WINDOW, include/net/tcp.h), an MSS of {lo} to {hi}{}; give the links an MTU of at least {} (mtu)",
        t.mss_bytes,
        TCP_MAXSEG_BYTES.start(),
        TCP_MAXSEG_BYTES.end(),
        if t.timestamps { " with timestamps" } else { "" },
        lo + fatpipe_core::packet::IPV4_TCP_HEADER_BYTES + ts,
    ))
}

/// Everything the emulator sets for one TCP flow.
#[derive(Clone, Debug, Default)]
pub struct FlowKnobs {
    /// The kernel's name of the algorithm.
    pub congestion: String,
    pub sender: TcpOptions,
    pub receiver: TcpOptions,
    /// Sysctls of the sender's and the receiver's namespaces.
    pub sender_sysctls: BTreeMap<&'static str, String>,
    pub receiver_sysctls: BTreeMap<&'static str, String>,
    /// Sender's route to the receiver, receiver's route back.
    pub sender_route: RouteMetrics,
    pub receiver_route: RouteMetrics,
    /// The receiving application re-arms TCP_QUICKACK after every read.
    pub quick_ack: bool,
    /// What the kernel does differently from what the flow asks, one sentence each.
    pub notes: Vec<String>,
    /// The BPF program that runs the flow's algorithm (`bpf/<file>`), when fatpipe
    /// registered one for it.
    pub bpf_program: Option<String>,
}

/// The knobs for TCP flow `spec` (its algorithm and parameters: `spec.cc`); `available` is
/// the kernel's tcp_available_congestion_control; `sysctl_value` reads a numeric sysctl,
/// None if absent (the RTO bounds came in Linux 6.11 and 6.15).
pub fn flow_knobs(
    spec: &FlowSpec,
    available: &[String],
    sysctl_value: &dyn Fn(&str) -> Option<u64>,
    module_params: &dyn Fn(&str, &str) -> Option<String>,
) -> Result<FlowKnobs, String> {
    tcp_of(spec)?; // the MSS is refused before the algorithm
    let cc = spec.cc.as_ref().ok_or("cc: a TCP flow needs a congestion control")?;
    let table = &cc_table(spec);
    let algorithm = table.get("algorithm").and_then(Value::as_str).unwrap_or("?");
    let list = available.join(" ");
    let Some((linux, _)) = kernel_module(cc) else {
        return Err(format!(
            "cc: congestion control {algorithm:?} has no Linux implementation to emulate; the kernel offers: {list} (/proc/sys/net/ipv4/tcp_available_congestion_control)"
        ));
    };
    if !available.iter().any(|a| a == linux) {
        return Err(format!(
            "cc: congestion control {algorithm:?} (Linux {linux:?}) is not available in this kernel; available: {list} (/proc/sys/net/ipv4/tcp_available_congestion_control); load it (modprobe tcp_{linux}) or choose one of those"
        ));
    }
    let mut k = FlowKnobs { congestion: linux.to_string(), ..FlowKnobs::default() };
    k.notes.extend(parameter_notes(cc, table, module_params));
    tcp_knobs(spec, k, sysctl_value)
}

/// The knobs for TCP flow `spec` whose algorithm the kernel runs as `name`: a BPF program
/// fatpipe registered for this run (`bpf_cc.rs`), which takes the flow's parameters as they
/// are. `notes` are the program's own.
pub fn flow_knobs_registered(
    spec: &FlowSpec,
    name: &str,
    program: &str,
    notes: Vec<String>,
    sysctl_value: &dyn Fn(&str) -> Option<u64>,
) -> Result<FlowKnobs, String> {
    let k = FlowKnobs {
        congestion: name.to_string(),
        bpf_program: Some(program.to_string()),
        notes,
        ..FlowKnobs::default()
    };
    tcp_knobs(spec, k, sysctl_value)
}

/// The flow's algorithm and parameters as a table by key (every parameter present, its
/// default filled in by the core's `CcSpec`), for the checks against the kernel's values.
pub fn cc_table(spec: &FlowSpec) -> Value {
    serde_json::to_value(&spec.cc).expect("a CcSpec serializes")
}

/// Whether the kernel's own module runs the flow's algorithm as asked: it is available, in
/// its Linux form, with the flow's parameters.
pub fn module_runs_as_asked(
    spec: &FlowSpec,
    available: &[String],
    module_params: &dyn Fn(&str, &str) -> Option<String>,
) -> bool {
    let Some(cc) = spec.cc.as_ref() else { return false };
    kernel_module(cc).is_some_and(|(linux, linux_form)| linux_form && available.iter().any(|a| a == linux))
        && parameter_notes(cc, &cc_table(spec), module_params).is_empty()
}

/// The flow's TCP settings and the TCP_MAXSEG its MSS asks for: what is refused first,
/// before anything is set up (a BPF program registered too: `bpf_cc::flow_knobs`).
pub fn tcp_of(spec: &FlowSpec) -> Result<(&TcpConfig, u32), String> {
    let t = spec.tcp.as_ref().ok_or("tcp: a TCP flow needs tcp settings")?;
    Ok((t, max_segment_bytes(t)?))
}

/// Everything but the algorithm: socket options, sysctls, route metrics and notes.
fn tcp_knobs(
    spec: &FlowSpec,
    mut k: FlowKnobs,
    sysctl_value: &dyn Fn(&str) -> Option<u64>,
) -> Result<FlowKnobs, String> {
    let sysctl_exists = |key: &str| sysctl_value(key).is_some();
    let (t, max_segment_bytes) = tcp_of(spec)?;
    let linux = k.congestion.clone();
    for opts in [&mut k.sender, &mut k.receiver] {
        opts.congestion = Some(linux.to_string());
        opts.max_segment_bytes = Some(max_segment_bytes);
    }
    k.sender.snd_buffer_bytes = Some(t.snd_buffer_bytes);
    k.receiver.rcv_buffer_bytes = Some(t.rcv_buffer_bytes);
    // fatpipe's sender has no Nagle algorithm: a short segment leaves when the window allows.
    k.sender.nodelay = true;
    let bool01 = |b: bool| if b { "1" } else { "0" }.to_string();
    for sysctls in [&mut k.sender_sysctls, &mut k.receiver_sysctls] {
        sysctls.insert("net.ipv4.tcp_window_scaling", bool01(t.window_scaling));
        // 2: timestamps without the per-connection random offset (Linux 4.10+ adds one at 1),
        // as fatpipe's hosts stamp them: both ends' clocks agree, so TSval - TSecr is the
        // one-way delay, which TCP-LP reads (tcp_lp.c); differences, all else reads, are alike.
        sysctls.insert("net.ipv4.tcp_timestamps", if t.timestamps { "2" } else { "0" }.to_string());
        sysctls.insert("net.ipv4.tcp_sack", bool01(t.recovery == Recovery::Sack));
    }
    // ECN: the sender asks for it (1); a receiver always accepts (Linux's default 2).
    k.sender_sysctls.insert("net.ipv4.tcp_ecn", if t.ecn { "1" } else { "2" }.to_string());
    if t.accecn {
        k.notes
            .push("accecn: the emulator asks the kernel for classic ECN (RFC 3168); Accurate ECN is not set up".into());
    }
    match t.recovery {
        Recovery::Sack | Recovery::Newreno => {}
        Recovery::Reno | Recovery::Tahoe => k.notes.push(format!(
            "recovery {:?}: Linux has only SACK-based and NewReno recovery; without SACK (tcp_sack = 0) it recovers as NewReno (RFC 6582)",
            format!("{:?}", t.recovery).to_lowercase()
        )),
    }
    stack_knobs(t, &mut k);
    if t.fack {
        k.notes.push("fack: Linux removed FACK in 4.15 (RACK replaces it)".into());
    }
    if t.dcr_div.is_some() {
        k.notes.push("dcr_div: Linux has no Delayed Congestion Response (its reordering detection adapts tcp_reordering instead)".into());
    }
    if t.max_ssthresh_segments > 0 {
        k.notes.push(format!(
            "max_ssthresh {}: Linux has no Limited Slow Start (removed in 3.x)",
            t.max_ssthresh_segments
        ));
    }
    if t.newreno_impatient {
        k.notes.push("newreno_impatient: Linux rearms the retransmission timer on every ACK of new data (the Slow-but-Steady variant)".into());
    }
    if t.delayed_ack_timeout_ps != LINUX_DELACK_MIN_PS && t.delayed_ack {
        k.notes.push(format!(
            "delayed_ack_timeout {} ms: Linux adapts its delayed-ACK timer between 40 ms and 200 ms",
            t.delayed_ack_timeout_ps / PS_PER_MS
        ));
    }
    if t.ack_every_segments != LINUX_ACK_EVERY && t.delayed_ack {
        k.notes.push(format!("ack_every {}: Linux acknowledges every second full-sized segment", t.ack_every_segments));
    }
    k.quick_ack = !t.delayed_ack;
    if k.quick_ack {
        k.notes.push("delayed_ack = false: Linux cannot turn delayed ACKs off; the receiver sets TCP_QUICKACK after every read, which the kernel honours only until its own heuristics return".into());
    }
    if t.dupack_threshold != 3 {
        k.sender_sysctls.insert("net.ipv4.tcp_reordering", t.dupack_threshold.to_string());
    }
    if t.initial_rto_ps != LINUX_INITIAL_RTO_PS {
        k.notes.push(format!("initial_rto {} ms: Linux's is 1 s (TCP_TIMEOUT_INIT)", t.initial_rto_ps / PS_PER_MS));
    }
    if sysctl_exists("net.ipv4.tcp_rto_min_us") {
        k.sender_sysctls.insert("net.ipv4.tcp_rto_min_us", (t.min_rto_ps / PS_PER_US).max(1).to_string());
    } else if t.min_rto_ps != 200 * PS_PER_MS {
        k.notes.push("min_rto: this kernel has no net.ipv4.tcp_rto_min_us (Linux 6.11); its floor is 200 ms".into());
    }
    let max_rto_ms = t.max_rto_ps / PS_PER_MS;
    if sysctl_exists("net.ipv4.tcp_rto_max_ms") && (RTO_MAX_RANGE_MS.0..=RTO_MAX_RANGE_MS.1).contains(&max_rto_ms) {
        k.sender_sysctls.insert("net.ipv4.tcp_rto_max_ms", max_rto_ms.to_string());
    } else if max_rto_ms != RTO_MAX_RANGE_MS.1 {
        k.notes.push(format!("max_rto {max_rto_ms} ms: not settable here (net.ipv4.tcp_rto_max_ms takes 1 s to 120 s, Linux 6.15); the kernel's is 120 s"));
    }
    k.sender_sysctls.insert("net.ipv4.tcp_slow_start_after_idle", bool01(t.slow_start_after_idle));
    if let Some(gain) = t.pacing_gain {
        // Linux paces at tcp_pacing_ss_ratio (slow start) or tcp_pacing_ca_ratio percent of
        // cwnd / srtt once pacing is on; SO_MAX_PACING_RATE turns it on without fq.
        let percent = (gain * 100.0).round().max(1.0) as u64;
        k.sender_sysctls.insert("net.ipv4.tcp_pacing_ss_ratio", percent.to_string());
        k.sender_sysctls.insert("net.ipv4.tcp_pacing_ca_ratio", percent.to_string());
        k.sender.max_pacing_rate_bps = Some(u64::MAX);
    }
    host_pacing_knobs(t, &mut k);
    if let Some(cap) = t.max_send_rate_bps {
        // SO_MAX_PACING_RATE is the same cap (Linux paces a socket with it even without fq);
        // the flow's cap counts IP bytes, the kernel's payload.
        let cap = payload_rate_bps(cap, t, 0);
        k.sender.max_pacing_rate_bps = Some(k.sender.max_pacing_rate_bps.map_or(cap, |r| r.min(cap)));
    }
    if t.slow_timer_ps.is_some() || t.fast_timer_ps.is_some() {
        k.notes.push("slow_timer, fast_timer: 4.4BSD's coarse timers; Linux's run per connection on jiffies (retransmission timer at least 200 ms, delayed ACKs 40 ms to 200 ms)".into());
    }
    if t.initial_window_segments != LINUX_INITIAL_WINDOW {
        k.sender_route.initcwnd = Some(t.initial_window_segments);
        // The receiver must announce room for it: its initial window is 10 segments too.
        k.receiver_route.initrwnd = Some(t.initial_window_segments.max(LINUX_INITIAL_WINDOW));
    }
    k.sender_route.ssthresh = t.initial_ssthresh_segments;
    Ok(k)
}

/// The payload rate (bits per second) of full segments that puts `wire_bps` on the wire, each
/// segment carrying its IP and TCP headers (timestamps included when the flow has them) and
/// `frame_bytes` more (fq's 14-byte Ethernet header): what SO_MAX_PACING_RATE, which counts
/// payload, needs to give a cap set on the wire.
pub fn payload_rate_bps(wire_bps: u64, t: &TcpConfig, frame_bytes: u64) -> u64 {
    let ts = if t.timestamps { fatpipe_core::packet::TCP_TIMESTAMPS_OPTION_BYTES } else { 0 };
    let mss = u64::from(t.mss_bytes);
    let frame = mss + u64::from(fatpipe_core::packet::IPV4_TCP_HEADER_BYTES + ts) + frame_bytes;
    (u128::from(wire_bps) * u128::from(mss) / u128::from(frame)) as u64
}

/// The flow's `[flows.host]` pacing on the sender's socket. `linux_pacing` is Linux's internal
/// pacing itself: the ratios are the namespace's tcp_pacing_ss_ratio / tcp_pacing_ca_ratio
/// (tcp_update_pacing_rate reads them per network namespace), and SO_MAX_PACING_RATE turns it
/// on (SK_PACING_NEEDED, tcp_needs_internal_pacing), as bbr_init does for BBR. `fq` asks for
/// the fq qdisc, with which TCP computes the same departure times (SK_PACING_FQ,
/// tcp_update_skb_after_send) and fq holds each packet until its time; this kernel has no
/// sch_fq, so the socket paces them itself (internal pacing: the same times, kept by TCP's
/// pacing timer instead of the qdisc). fq's `maxrate` becomes the socket's cap: the payload
/// rate whose frames (IP packet and Ethernet header, fq's `qdisc_pkt_len`) make maxrate.
/// What stays fq's alone is in `coalesce::host_notes`.
fn host_pacing_knobs(t: &TcpConfig, k: &mut FlowKnobs) {
    let Some(host) = t.host.as_ref().filter(|h| h.linux_paces()) else { return };
    k.sender_sysctls.insert("net.ipv4.tcp_pacing_ss_ratio", host.pacing_ss_ratio_percent.to_string());
    k.sender_sysctls.insert("net.ipv4.tcp_pacing_ca_ratio", host.pacing_ca_ratio_percent.to_string());
    let cap = host
        .fq_maxrate_bps
        .filter(|_| host.fq)
        .map(|maxrate| payload_rate_bps(maxrate, t, fatpipe_core::host::fq::ETH_HEADER_BYTES));
    k.sender.max_pacing_rate_bps = Some(cap.unwrap_or(u64::MAX));
}

/// The loss detection and recovery stack: the Linux stack's members become the namespace's
/// sysctls (all per network namespace since Linux 4.x-5.x); what Linux cannot switch is
/// noted. The RFC stack is a different machine altogether, so it gets one note.
fn stack_knobs(t: &fatpipe_core::tcp::config::TcpConfig, k: &mut FlowKnobs) {
    let bool01 = |b: bool| if b { "1" } else { "0" }.to_string();
    if t.stack == StackKind::Rfc {
        if t.recovery == Recovery::Sack {
            k.notes.push("stack rfc: Linux runs its own SACK recovery instead of RFC 6675's: RACK-TLP (RFC 8985), proportional rate reduction (RFC 6937), undo on DSACK and timestamps (RFC 2883, 3522, 5682) and adaptive reordering; profile = \"linux\" models it".into());
        } else {
            k.notes.push("stack rfc: Linux's loss recovery is not RFC 5681/6582's as written (it undoes spurious reductions and adapts reordering); profile = \"linux\" models it".into());
        }
        return;
    }
    // tcp_recovery bit 0 is RACK (ip-sysctl.rst); tcp_early_retrans 3 is TLP, 0 off.
    k.sender_sysctls.insert("net.ipv4.tcp_recovery", bool01(t.rack));
    k.sender_sysctls.insert("net.ipv4.tcp_early_retrans", if t.tlp { "3" } else { "0" }.to_string());
    k.sender_sysctls.insert("net.ipv4.tcp_frto", if t.frto { "2" } else { "0" }.to_string());
    k.sender_sysctls.insert("net.ipv4.tcp_max_reordering", t.max_reordering_segments.to_string());
    // D-SACK is sent by the receiver and used by the sender.
    for sysctls in [&mut k.sender_sysctls, &mut k.receiver_sysctls] {
        sysctls.insert("net.ipv4.tcp_dsack", bool01(t.dsack));
    }
    if !t.undo {
        k.notes.push("undo = false: Linux always undoes spurious reductions (tcp_try_undo_*: no sysctl)".into());
    }
    if t.window_reduction == WindowReduction::RateHalving {
        k.notes.push("window_reduction rate_halving: Linux reduces with PRR (RFC 6937) since 3.2".into());
    }
    if !t.adaptive_reordering {
        k.notes.push("adaptive_reordering = false: Linux always raises tp->reordering from what SACKs show (up to tcp_max_reordering)".into());
    }
    if t.rto_estimator == RtoEstimator::Rfc6298 {
        k.notes.push("rto_estimator rfc6298: Linux computes its RTO by tcp_rtt_estimator and tcp_set_rto".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn flow(tcp: Value, cc: Value) -> FlowSpec {
        serde_json::from_value(json!({
            "name": "f", "src": 0, "dst": 3, "start_jitter_ps": 0,
            "source": {"kind": "bulk", "start_ps": 0, "stop_ps": null, "bytes": null, "transfers": null, "transfer_gap_ps": 0},
            "tcp": tcp, "cc": cc,
        }))
        .unwrap()
    }

    /// A flow's cc table as `fatpipe.load_scenario` normalizes `cc = "<algorithm>"` (every
    /// parameter written: the core's CcSpec requires them), with `changes` laid over it.
    fn cc(algorithm: &str, changes: Value) -> Value {
        let mut table = match algorithm {
            "cubic" => json!({"algorithm": "cubic", "variant": "linux", "c": 0.4, "beta": 0.7,
                "fast_convergence": true, "tcp_friendliness": true, "hystart": "linux", "hystart_detect": "both",
                "hystart_low_window": 16, "hystart_ack_delta_ps": 2_000_000_000u64, "kernel_hz": 250}),
            "reno" => {
                json!({"algorithm": "reno", "a": 1.0, "b": 0.5, "byte_counting": true, "variant": "rfc", "eighth": false})
            }
            "bbr" => json!({"algorithm": "bbr", "variant": "linux", "high_gain": 2.885, "cwnd_gain": 2.0,
                "bw_window_rounds": 10, "min_rtt_window_ps": 10_000_000_000_000u64,
                "probe_rtt_duration_ps": 200_000_000_000u64, "extra_acked": false, "lt_bw": false}),
            "highspeed" => json!({"algorithm": "highspeed", "variant": "linux", "low_window": 38, "high_window": 83000,
                "high_p": 1e-7, "high_decrease": 0.1, "byte_counting": true, "cwr_halves": false}),
            "fast" => json!({"algorithm": "fast", "alpha": 200.0, "beta": 212.0, "gamma": 0.5,
                "update_interval_ps": 0, "slow_start_exit_packets": 1.0}),
            other => panic!("no table for {other}"),
        };
        for (key, value) in changes.as_object().expect("a table") {
            table[key] = value.clone();
        }
        table
    }

    fn tcp() -> Value {
        // Built in two steps: one json! of every key reaches the macro's recursion limit.
        let mut t = tcp_without_accecn();
        t["accecn"] = json!(false);
        t
    }

    fn tcp_without_accecn() -> Value {
        json!({"mss_bytes": 1448, "initial_window_segments": 10, "rcv_buffer_bytes": 8388608, "snd_buffer_bytes": 8388608,
            "window_scaling": true, "timestamps": true, "delayed_ack": true, "delayed_ack_timeout_ps": 40_000_000_000u64,
            "ack_every_segments": 2, "dupack_threshold": 3, "newreno_impatient": false, "ecn": false, "recovery": "sack",
            "fack": false, "dcr_div": null, "max_ssthresh_segments": 0, "initial_ssthresh_segments": null,
            "receiver_drain_rate_bps": null, "pacing_gain": null, "min_rto_ps": 200_000_000_000u64,
            "max_rto_ps": 120_000_000_000_000u64, "initial_rto_ps": 1_000_000_000_000u64, "handshake": false, "slow_start_after_idle": true,
            "stack": "linux", "rto_estimator": "linux", "dsack": true, "rack": true, "tlp": true, "frto": true, "undo": true,
            "window_reduction": "prr", "adaptive_reordering": true, "max_reordering_segments": 300,
            "random_send_delay_ps": 0, "limited_transmit": false, "ssthresh_every_timeout": false,
            "bsd_window": false, "reno_recover_guard": false, "sack_variant": "rfc6675", "metrics": null})
    }

    fn available() -> Vec<String> {
        ["reno", "bbr", "cubic"].map(String::from).to_vec()
    }

    #[test]
    fn the_linux_profile_needs_no_note() {
        let spec = flow(tcp(), cc("cubic", json!({})));
        let k = flow_knobs(&spec, &available(), &|_| Some(1 << 30), &|_, _| None).unwrap();
        assert_eq!(k.congestion, "cubic");
        assert_eq!(k.sender.max_segment_bytes, Some(1460), "1448 + 12 timestamp bytes");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_sack"], "1");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_rto_min_us"], "200000");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_recovery"], "1");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_early_retrans"], "3");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_frto"], "2");
        assert_eq!(k.receiver_sysctls["net.ipv4.tcp_dsack"], "1");
        assert!(k.sender_route.is_empty());
        assert!(k.notes.is_empty(), "{:?}", k.notes);
    }

    #[test]
    fn the_linux_2_4_profile_switches_rack_tlp_frto_off_and_notes_the_rest() {
        let mut t = tcp();
        for (key, value) in [
            ("rack", json!(false)),
            ("tlp", json!(false)),
            ("frto", json!(false)),
            ("fack", json!(true)),
            ("window_reduction", json!("rate_halving")),
            ("max_reordering_segments", json!(127)),
        ] {
            t[key] = value;
        }
        let spec = flow(t, cc("reno", json!({"byte_counting": false})));
        let k = flow_knobs(&spec, &available(), &|_| Some(1 << 30), &|_, _| None).unwrap();
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_recovery"], "0");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_early_retrans"], "0");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_frto"], "0");
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_max_reordering"], "127");
        let text = k.notes.join("\n");
        assert!(text.contains("FACK") && text.contains("PRR"), "{text}");
    }

    #[test]
    fn the_module_runs_as_asked_only_in_its_linux_form_with_its_parameters() {
        let runs = |alg: &str, changes: Value| {
            module_runs_as_asked(&flow(tcp(), cc(alg, changes)), &available(), &|_, _| None)
        };
        // Linux's reno is RFC 5681's growth in segments; BSD's bytes and its eighth are not.
        assert!(runs("reno", json!({})));
        assert!(!runs("reno", json!({"variant": "bsd"})));
        assert!(!runs("reno", json!({"eighth": true})));
        assert!(runs("cubic", json!({})));
        assert!(!runs("cubic", json!({"variant": "rfc", "hystart": "off"})));
        assert!(!runs("cubic", json!({"beta": 0.5})));
        assert!(runs("bbr", json!({})));
        assert!(!runs("bbr", json!({"high_gain": 2.0})));
        // A module this kernel does not offer, and an algorithm mainline Linux lacks.
        assert!(!runs("highspeed", json!({})));
        assert!(!runs("fast", json!({})));
    }

    #[test]
    fn the_rfc_stack_is_one_note() {
        let mut t = tcp();
        t["stack"] = json!("rfc");
        t["rto_estimator"] = json!("rfc6298");
        let spec = flow(t, cc("reno", json!({})));
        let k = flow_knobs(&spec, &available(), &|_| Some(1 << 30), &|_, _| None).unwrap();
        assert!(!k.sender_sysctls.contains_key("net.ipv4.tcp_recovery"));
        assert_eq!(k.notes.len(), 1, "{:?}", k.notes);
        assert!(k.notes[0].starts_with("stack rfc"));
    }

    #[test]
    fn settings_linux_lacks_are_noted() {
        let mut t = tcp();
        t["recovery"] = json!("reno");
        t["max_ssthresh_segments"] = json!(100);
        t["initial_window_segments"] = json!(3);
        let spec = flow(t, cc("cubic", json!({"beta": 0.5})));
        let k = flow_knobs(&spec, &available(), &|_| Some(4194304), &|_, _| None).unwrap();
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_sack"], "0");
        assert_eq!(k.sender_route.initcwnd, Some(3));
        let text = k.notes.join("\n");
        assert!(text.contains("cubic beta = 0.5: the kernel runs 0.7002"), "{text}");
        assert!(text.contains("recovers as NewReno") && text.contains("Limited Slow Start"), "{text}");
        // 8 MiB asked, 4 MiB ceiling: the plain setsockopt would be capped; forced or not.
        let small = |_: &str| Some(4194304);
        let large = |_: &str| Some(1 << 30);
        let forced = buffer_notes(&spec, (&small, true), (&small, true)).join("\n");
        assert!(forced.contains("rcv_buffer 8388608 bytes is above net.core.rmem_max (4194304)"), "{forced}");
        assert!(forced.contains("forced (SO_*BUFFORCE)"), "{forced}");
        // Each buffer against its own host's ceiling.
        let capped = buffer_notes(&spec, (&large, false), (&small, false));
        assert_eq!(capped.len(), 1, "{capped:?}");
        assert!(capped[0].starts_with("rcv_buffer") && capped[0].contains("lacks CAP_NET_ADMIN"), "{capped:?}");
        assert!(capped[0].contains("caps it at 4194304"), "{capped:?}");
        assert!(buffer_notes(&spec, (&large, false), (&large, false)).is_empty());
    }

    #[test]
    fn every_sysctl_a_flow_asks_for_is_one_a_probe_reads() {
        let mut t = tcp();
        t["ecn"] = json!(true);
        t["dupack_threshold"] = json!(5);
        t["pacing_gain"] = json!(1.2);
        t["recovery"] = json!("newreno");
        let spec = flow(t, cc("bbr", json!({})));
        let k = flow_knobs(&spec, &available(), &|_| Some(1 << 30), &|_, _| None).unwrap();
        assert!(k.sender_sysctls.len() >= 15, "{:?}", k.sender_sysctls);
        for key in k.sender_sysctls.keys().chain(k.receiver_sysctls.keys()) {
            assert!(HOST_SYSCTLS.contains(key), "{key} is not in HOST_SYSCTLS");
        }
        assert!(k.sender.nodelay, "fatpipe's sender has no Nagle algorithm");
        // A host that has the flow's settings gets no note; one that differs gets one line.
        let same = |key: &str| k.sender_sysctls.get(key).cloned();
        assert!(host_setting_notes(&k.sender_sysctls, &same, "the daemon's host").is_empty());
        let other = |key: &str| if key == "net.ipv4.tcp_sack" { Some("1".to_string()) } else { same(key) };
        let notes = host_setting_notes(&k.sender_sysctls, &other, "the daemon's host");
        assert_eq!(notes, ["net.ipv4.tcp_sack is 1 on the daemon's host; the flow asks for 0 (not changed: a probe never changes a host's settings)"]);
    }

    #[test]
    fn the_hosts_pacing_reaches_the_senders_socket() {
        let host = |changes: Value| {
            let mut h = serde_json::to_value(fatpipe_core::host::scenario_defaults()).unwrap();
            for (key, value) in changes.as_object().unwrap() {
                h[key] = value.clone();
            }
            let mut t = tcp();
            t["host"] = h;
            flow_knobs(&flow(t, cc("cubic", json!({}))), &available(), &|_| Some(1 << 30), &|_, _| None).unwrap()
        };
        // No pacing asked: no option, no ratio.
        let off = host(json!({}));
        assert_eq!(off.sender.max_pacing_rate_bps, None);
        assert!(!off.sender_sysctls.contains_key("net.ipv4.tcp_pacing_ss_ratio"));
        // linux_pacing and fq: pacing on, uncapped, at the host's ratios.
        for on in [json!({"linux_pacing": true}), json!({"fq": true})] {
            let k = host(on);
            assert_eq!(k.sender.max_pacing_rate_bps, Some(u64::MAX));
            assert_eq!(k.sender_sysctls["net.ipv4.tcp_pacing_ss_ratio"], "200");
            assert_eq!(k.sender_sysctls["net.ipv4.tcp_pacing_ca_ratio"], "120");
        }
        // fq maxrate 950 Mb/s of 1,514-byte frames (1,448 payload + 40 headers + 12
        // timestamps + 14 Ethernet): 950e6 x 1448 / 1514 payload bits per second.
        let k = host(json!({"fq": true, "fq_maxrate_bps": 950_000_000u64, "pacing_ca_ratio_percent": 130}));
        assert_eq!(k.sender.max_pacing_rate_bps, Some(950_000_000 * 1448 / 1514));
        assert_eq!(k.sender_sysctls["net.ipv4.tcp_pacing_ca_ratio"], "130");
        // ~0 would leave pacing off (sk_setsockopt): "on, uncapped" is the value below it.
        use crate::traffic::tcp::{max_pacing_rate_option, PACING_ON_UNCAPPED};
        assert_eq!(max_pacing_rate_option(u64::MAX), PACING_ON_UNCAPPED);
        assert_ne!(PACING_ON_UNCAPPED, u64::MAX);
        assert_eq!(max_pacing_rate_option(8_000), 1_000);
    }

    #[test]
    fn an_mss_linux_refuses_is_refused_before_anything_is_set_up() {
        // mtu = 68, the IPv4 minimum, left an MSS of 28 (16 with timestamps): the scenario
        // validated, and emulate failed at setsockopt(TCP_MAXSEG) with EINVAL.
        for (mss, timestamps, ok) in [
            (28, false, false),
            (87, false, false),
            (88, false, true),
            (76, true, true),
            (75, true, false),
            (32767, false, true),
            (32768, false, false),
        ] {
            let mut t = tcp();
            t["mss_bytes"] = json!(mss);
            t["timestamps"] = json!(timestamps);
            let spec = flow(t, cc("cubic", json!({})));
            let got = flow_knobs(&spec, &available(), &|_| Some(1 << 30), &|_, _| None);
            assert_eq!(got.is_ok(), ok, "mss {mss}, timestamps {timestamps}");
            if let Err(e) = got {
                assert!(
                    e.starts_with(&format!(
                        "tcp.mss_bytes: {mss} is not allowed on Linux: its TCP_MAXSEG takes 88 to 32767"
                    )),
                    "{e}"
                );
            }
        }
        let mut t = tcp();
        t["mss_bytes"] = json!(28);
        t["timestamps"] = json!(false);
        let spec = flow(t, cc("cubic", json!({})));
        let e = flow_knobs(&spec, &available(), &|_| Some(1 << 30), &|_, _| None).unwrap_err();
        assert!(e.ends_with("an MSS of 88 to 32767; give the links an MTU of at least 128 (mtu)"), "{e}");
    }

    #[test]
    fn a_missing_algorithm_lists_the_available_ones() {
        let spec = flow(tcp(), cc("highspeed", json!({})));
        let err = flow_knobs(&spec, &available(), &|_| Some(4194304), &|_, _| None).unwrap_err();
        assert!(err.contains("not available") && err.contains("available: reno bbr cubic"), "{err}");
        let spec = flow(tcp(), cc("fast", json!({})));
        assert!(flow_knobs(&spec, &available(), &|_| Some(4194304), &|_, _| None)
            .unwrap_err()
            .contains("no Linux implementation"));
    }
}
