//! The notes a flow gets where Linux has no knob for what it asks, or a host has otherwise:
//! the algorithm's parameters against the kernel module's (machine-wide, never changed),
//! the buffer ceilings, and what `fatpipe probe`, which never changes a host's settings,
//! reads on each host. Apart from `kernel.rs`, which turns a flow into the knobs it sets.

use super::RouteMetrics;
use fatpipe_core::cc::CcSpec;
use fatpipe_core::scenario::FlowSpec;
use fatpipe_core::time::{PS_PER_S, PS_PER_US};
use serde_json::Value;
use std::collections::BTreeMap;

/// A host as `buffer_notes` sees it: its numeric sysctls, and whether the buffers are set
/// with SO_*BUFFORCE past its ceilings (the emulator, whose namespaces' read-only ceilings
/// would otherwise cap them; a probe with CAP_NET_ADMIN).
pub type BufferHost<'a> = (&'a dyn Fn(&str) -> Option<u64>, bool);

/// Where `snd_buffer` (on the sending host) or `rcv_buffer` (on the receiving one) is above
/// the host's ceiling (net.core.wmem_max, rmem_max), where a plain setsockopt is capped
/// without a word.
pub fn buffer_notes(spec: &FlowSpec, sender: BufferHost, receiver: BufferHost) -> Vec<String> {
    let Some(t) = spec.tcp.as_ref() else { return Vec::new() };
    let mut notes = Vec::new();
    for (what, asked, ceiling, (sysctl_value, forced)) in [
        ("snd_buffer", t.snd_buffer_bytes, "net.core.wmem_max", sender),
        ("rcv_buffer", t.rcv_buffer_bytes, "net.core.rmem_max", receiver),
    ] {
        if let Some(max) = sysctl_value(ceiling).filter(|&max| asked > max) {
            notes.push(if forced {
                format!("{what} {asked} bytes is above {ceiling} ({max}), where a plain setsockopt would be silently capped; it is forced (SO_*BUFFORCE), and the kernel doubles it for its bookkeeping")
            } else {
                format!("{what} {asked} bytes is above {ceiling} ({max}) and the process lacks CAP_NET_ADMIN to force it: the kernel caps it at {max} (the granted size is reported)")
            });
        }
    }
    notes
}

/// Every sysctl `flow_knobs` may ask a host for, the buffer ceilings `buffer_notes` reads,
/// and the host's default algorithm: what `fatpipe probe`, which never changes a host's
/// settings, reads on each host to say where a host departs from what a flow asks.
pub const HOST_SYSCTLS: [&str; 19] = [
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_window_scaling",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_ecn",
    "net.ipv4.tcp_reordering",
    "net.ipv4.tcp_rto_min_us",
    "net.ipv4.tcp_rto_max_ms",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_pacing_ss_ratio",
    "net.ipv4.tcp_pacing_ca_ratio",
    "net.ipv4.tcp_recovery",
    "net.ipv4.tcp_early_retrans",
    "net.ipv4.tcp_frto",
    "net.ipv4.tcp_max_reordering",
    "net.ipv4.tcp_dsack",
    "net.ipv4.tcp_no_metrics_save",
    "net.ipv4.tcp_congestion_control",
];

/// One note per sysctl a flow asks of a host that the host has otherwise (`actual` reads
/// the host's value; a sysctl the host lacks is noted too). `host` names the host.
pub fn host_setting_notes(
    wanted: &BTreeMap<&'static str, String>,
    actual: &dyn Fn(&str) -> Option<String>,
    host: &str,
) -> Vec<String> {
    wanted
        .iter()
        .filter_map(|(&key, value)| match actual(key) {
            Some(v) if v.split_whitespace().eq(value.split_whitespace()) => None,
            Some(v) => Some(format!("{key} is {v} on {host}; the flow asks for {value} (not changed: a probe never changes a host's settings)")),
            None => Some(format!("{key} does not exist on {host}; the flow asks for {value}")),
        })
        .collect()
}

/// A note for route metrics the flow needs (the initial window, a fixed initial ssthresh),
/// which a probe does not set: they belong to the host's routing table.
pub fn route_notes(route: &RouteMetrics, host: &str) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(n) = route.initcwnd {
        notes.push(format!("initial_window {n}: Linux takes it from a route metric (ip route ... initcwnd {n}) that a probe does not set on {host}; the route's own (10 unless set) applies"));
    }
    if let Some(n) = route.ssthresh {
        notes.push(format!("initial_ssthresh {n}: Linux takes it from a route metric (ip route ... ssthresh lock {n}) that a probe does not set on {host}"));
    }
    notes
}

/// Notes for the algorithm's parameters that differ from what the kernel runs (module
/// parameters are machine-wide, so the emulator never changes them). The scenario's values
/// are read from the typed `cc` (every one present: the core has no defaults); `table` is
/// the same as written, for naming values in notes.
pub(super) fn parameter_notes(
    cc: &CcSpec,
    table: &Value,
    module_params: &dyn Fn(&str, &str) -> Option<String>,
) -> Vec<String> {
    let algorithm = table.get("algorithm").and_then(Value::as_str).unwrap_or("?");
    let module_num = |module: &str, p: &str, default: f64| {
        module_params(module, p).and_then(|v| v.trim().parse::<f64>().ok()).unwrap_or(default)
    };
    let flag = |b: bool| f64::from(u8::from(b));
    // (parameter, the scenario's value, the kernel's value)
    let mut checks: Vec<(&str, f64, f64)> = Vec::new();
    match cc {
        CcSpec::Reno(c) => {
            checks.push(("a", c.a, 1.0));
            checks.push(("b", c.b, 0.5));
            // tcp_reno_cong_avoid grows by the segments an ACK covers: byte counting.
            checks.push(("byte_counting", flag(c.byte_counting), 1.0));
            // BSD's growth in bytes, and 4.3BSD-Reno's eighth of a segment per ACK: Linux has neither.
            checks.push(("variant", flag(c.variant == fatpipe_core::cc::reno::RenoVariant::Bsd), 0.0));
            checks.push(("eighth", flag(c.eighth), 0.0));
        }
        CcSpec::Cubic(c) => {
            use fatpipe_core::cc::cubic::hystart::{HyStartDetect, HyStartMode};
            // net/ipv4/tcp_cubic.c: beta = 717/1024, C = bic_scale x 10 / 1024 (41: 0.40).
            checks.push(("beta", c.beta, module_num("tcp_cubic", "beta", 717.0) / 1024.0));
            checks.push(("c", c.c, module_num("tcp_cubic", "bic_scale", 41.0) * 10.0 / 1024.0));
            checks.push((
                "fast_convergence",
                flag(c.fast_convergence),
                module_num("tcp_cubic", "fast_convergence", 1.0),
            ));
            checks.push((
                "tcp_friendliness",
                flag(c.tcp_friendliness),
                module_num("tcp_cubic", "tcp_friendliness", 1.0),
            ));
            // HyStart: module parameters hystart (1), hystart_detect (3: both tests),
            // hystart_low_window (16), hystart_ack_delta_us (2000).
            let mode = match c.hystart {
                HyStartMode::Off => 0.0,
                HyStartMode::Linux => 1.0,
                HyStartMode::Rfc9406 => 2.0,
            };
            checks.push(("hystart", mode, module_num("tcp_cubic", "hystart", 1.0)));
            if mode == 1.0 {
                let detect = match c.hystart_detect {
                    HyStartDetect::AckTrain => 1.0,
                    HyStartDetect::Delay => 2.0,
                    HyStartDetect::Both => 3.0,
                };
                checks.push(("hystart_detect", detect, module_num("tcp_cubic", "hystart_detect", 3.0)));
                checks.push((
                    "hystart_low_window",
                    f64::from(c.hystart_low_window),
                    module_num("tcp_cubic", "hystart_low_window", 16.0),
                ));
                checks.push((
                    "hystart_ack_delta_us",
                    c.hystart_ack_delta_ps as f64 / PS_PER_US as f64,
                    module_num("tcp_cubic", "hystart_ack_delta_us", 2000.0),
                ));
            }
        }
        CcSpec::Bbr(c) => {
            // net/ipv4/tcp_bbr.c: bbr_high_gain 2885/1000 (739/256), bbr_cwnd_gain 2,
            // bbr_bw_rtts 10, bbr_min_rtt_win_sec 10, bbr_probe_rtt_mode_ms 200.
            checks.push(("high_gain", c.high_gain, 739.0 / 256.0));
            checks.push(("cwnd_gain", c.cwnd_gain, 2.0));
            checks.push(("bw_window_rounds", c.bw_window_rounds as f64, 10.0));
            checks.push(("min_rtt_window_s", c.min_rtt_window_ps as f64 / PS_PER_S as f64, 10.0));
            checks.push(("probe_rtt_duration_s", c.probe_rtt_duration_ps as f64 / PS_PER_S as f64, 0.2));
        }
        _ => {
            let params: Vec<String> = table
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, _)| *k != "algorithm")
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            if !params.is_empty() {
                return vec![format!(
                    "{algorithm} parameters are the kernel module's own; the scenario's ({}) are not applied",
                    params.join(", ")
                )];
            }
        }
    }
    checks
        .into_iter()
        // Within 1 %: Linux's fixed-point constants (717/1024 for 0.7) are the same values.
        .filter(|(_, asked, linux)| (asked - linux).abs() > 0.01 * linux.abs().max(1e-9))
        .map(|(p, asked, linux)| match p {
            "byte_counting" => "byte_counting = false: Linux's reno grows by the segments each ACK covers (byte counting, RFC 3465)".to_string(),
            "variant" => "reno variant = \"bsd\": Linux's reno grows in segments, not BSD's bytes".to_string(),
            "eighth" => "reno eighth = true: Linux's reno has no 4.3BSD-Reno eighth of a segment per ACK".to_string(),
            "hystart" => format!(
                "cubic hystart = {}: the kernel's cubic runs {} (module parameter hystart = {linux}, machine-wide, not changed)",
                table.get("hystart").unwrap_or(&Value::Null),
                if linux == 1.0 { "HyStart" } else { "no HyStart" }
            ),
            _ => format!("{algorithm} {p} = {asked}: the kernel runs {linux:.4} (a module parameter for the whole machine, not changed)"),
        })
        .collect()
}
