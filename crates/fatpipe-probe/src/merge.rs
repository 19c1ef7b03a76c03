//! The two ends' reports of a test put together into one result document, the one a
//! simulation's `finish` returns (docs/core-interface.md), so that `Result`, `fatpipe
//! report` and `fatpipe compare` read a probe run as they read any other.
//!
//! Each flow's sender columns and counters come from the host that sent it, the receiver's
//! (`delivered_bytes`, what was read, datagrams received) from the host that received it;
//! both ends sampled at the same times of the test (time 0 agreed over the control
//! connection, within half its RTT). A probe sees no network in between: there are no links,
//! and a count only the network knows (packets lost in it) is absent, never zero.

use crate::document::{ProbeFacts, ProbeOutput, ProbeSummary, TcpExtBySide};
use crate::plan::Plan;
use crate::protocol::{EndFlow, EndReport};
use fatpipe_core::probe::QueueSeries;
use fatpipe_emu::output::{tcp_entry, udp_entry, TcpFlowEnd};
use fatpipe_emu::summary::{RealFlow, UdpProbe};
use serde_json::{json, Map, Value};

/// Columns the receiving host samples; every other column is the sending host's.
const RECEIVER_COLUMNS: [&str; 4] = ["delivered_bytes", "read_bytes", "datagrams_received", "datagrams_lost"];

/// Which host was which: (controller's name, daemon's name), as summaries say them.
pub const SIDES: (&str, &str) = ("controller", "daemon");

/// The result document of a test: `probe` goes into the summary as its `probe` section,
/// with the two hosts' TcpExt counters.
pub fn document(
    plan: &Plan,
    controller: &EndReport,
    daemon: &EndReport,
    probe: ProbeFacts,
) -> Result<ProbeOutput, String> {
    for (end, report) in [("controller", controller), ("daemon", daemon)] {
        if let Some(failure) = &report.failure {
            return Err(format!("the {end}'s end failed: {failure}"));
        }
        if report.flows.len() != plan.flows.len() {
            return Err(format!("the {end} reported {} flows of {}", report.flows.len(), plan.flows.len()));
        }
    }
    let ends = |i: usize| -> (&EndFlow, &EndFlow, &str) {
        let (c, d) = (&controller.flows[i], &daemon.flows[i]);
        if plan.flows[i].controller_sends {
            (c, d, SIDES.0)
        } else {
            (d, c, SIDES.1)
        }
    };
    let mut flows = Vec::new();
    for (i, f) in plan.flows.iter().enumerate() {
        let (tx, rx, sender) = ends(i);
        let entry = if let Some(congestion) = &f.congestion {
            let (mut e, mut kernel) = tcp_entry(&TcpFlowEnd {
                spec: &f.spec,
                congestion_asked: congestion,
                sender: tx.tcp_info,
                receiver: rx.tcp_info,
                granted_sender: tx.granted.clone(),
                granted_receiver: rx.granted.clone(),
                max_peer_window_bytes: tx.max_peer_window_bytes,
                sent: &tx.counters,
                got: &rx.counters,
                notes: &f.notes,
            });
            kernel.sender = Some(sender.into());
            kernel.path_mtu_bytes = Some(tx.tcp_info.map(|s| s.info.pmtu).filter(|&m| m > 0));
            e.probe = Some(kernel);
            RealFlow::Tcp(Box::new(e))
        } else {
            let payload = u64::from(f.spec.source.udp_payload_bytes().unwrap_or(0));
            let (sent, got) = (&tx.counters, &rx.counters);
            let mut e = udp_entry(&f.spec, sent, got);
            // Lost: the gaps in the datagram numbers the receiver saw (iperf's count); in
            // flight at the end: sent after the highest number received. Datagrams too short
            // to carry their number (under 8 bytes) leave the two apart.
            if (got.datagrams_expected >= got.datagrams_received && got.datagrams_expected > 0)
                || sent.datagrams_sent == 0
            {
                let lost = got.datagrams_expected - got.datagrams_received;
                e.datagrams_lost = Some(lost);
                e.bytes_lost = Some(lost * payload);
                e.datagrams_in_flight_at_end = Some(sent.datagrams_sent.saturating_sub(got.datagrams_expected));
            }
            e.probe = Some(UdpProbe { sender: sender.into(), loss_count: "gaps in the datagram numbers".into() });
            RealFlow::Udp(Box::new(e))
        };
        flows.push(entry);
    }
    let series = merge_series(plan, &controller.series, &daemon.series)?;
    let probe = ProbeFacts {
        tcp_ext: TcpExtBySide { controller: controller.tcp_ext.clone(), daemon: daemon.tcp_ext.clone() },
        ..probe
    };
    Ok(ProbeOutput {
        summary: ProbeSummary {
            name: plan.name.clone(),
            seed: plan.seed,
            duration_ps: plan.duration_ps,
            flows,
            links: Vec::new(),
            captures: Vec::new(),
            probe,
        },
        flow_series: series,
        queue_series: QueueSeries::default(),
    })
}

/// The flow series of both ends as one: per row (a flow at a sample time), each column from
/// the host that measures it.
fn merge_series(plan: &Plan, controller: &Value, daemon: &Value) -> Result<Value, String> {
    let (Some(c), Some(d)) = (controller.as_object(), daemon.as_object()) else {
        return Err("an end's series is not a table of columns".into());
    };
    let column = |m: &Map<String, Value>, name: &str| -> Result<Vec<Value>, String> {
        m.get(name).and_then(Value::as_array).cloned().ok_or_else(|| format!("an end's series lacks the column {name}"))
    };
    let n = plan.flows.len();
    let (times, flow) = (column(c, "time_ps")?, column(c, "flow")?);
    if times != column(d, "time_ps")? || flow != column(d, "flow")? {
        return Err("the two ends sampled different times".into());
    }
    if flow.iter().enumerate().any(|(r, v)| v.as_u64() != Some((r % n) as u64)) {
        return Err("an end's series is not one row per flow per sample".into());
    }
    let mut out = Map::new();
    for name in c.keys() {
        let (from_c, from_d) = (column(c, name)?, column(d, name)?);
        if from_c.len() != times.len() || from_d.len() != times.len() {
            return Err(format!("column {name}: the ends' lengths differ"));
        }
        let receiver = RECEIVER_COLUMNS.contains(&name.as_str());
        let merged: Vec<Value> = (0..times.len())
            .map(|r| {
                let controller_sends = plan.flows[r % n].controller_sends;
                if controller_sends != receiver {
                    from_c[r].clone()
                } else {
                    from_d[r].clone()
                }
            })
            .collect();
        out.insert(name.clone(), Value::Array(merged));
    }
    // A UDP flow's bytes in flight: sent, less what arrived and the gaps (lost).
    let number = |name: &str, r: usize| out[name][r].as_i64().unwrap_or(0);
    let outstanding: Vec<Value> = (0..times.len())
        .map(|r| {
            let f = &plan.flows[r % n];
            match f.spec.source.udp_payload_bytes() {
                Some(payload) => {
                    let datagrams =
                        number("datagrams_sent", r) - number("datagrams_received", r) - number("datagrams_lost", r);
                    json!(datagrams.max(0) * i64::from(payload))
                }
                None => out["outstanding_bytes"][r].clone(),
            }
        })
        .collect();
    out.insert("outstanding_bytes".into(), Value::Array(outstanding));
    Ok(Value::Object(out))
}
