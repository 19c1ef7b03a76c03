//! From the normalized scenario to what each end of a probe runs: per flow, which host
//! sends, each end's socket options (`kernel::flow_knobs`, as the emulator maps a flow's TCP
//! settings), and one note for every setting a probe cannot apply or a host has otherwise.
//! A probe never changes a host's settings (sysctls, routes, modules): it reads them.

use crate::protocol::{EndPlan, HostInfo, TestSetup};
use fatpipe_core::scenario::{FlowSpec, Scenario};
use fatpipe_core::source::SourceSpec;
use fatpipe_core::time::Time;
use fatpipe_emu::kernel::{self, buffer_notes, host_setting_notes, route_notes};
use fatpipe_emu::traffic::tcp::TcpOptions;
use serde_json::Value;

/// A host as the plan names it in messages ("the daemon's host 10.0.0.2 (name)").
pub struct Host<'a> {
    pub info: &'a HostInfo,
    pub label: String,
    /// Reads the algorithms' module parameters (only this host's own can be read).
    pub module_params: &'a dyn Fn(&str, &str) -> Option<String>,
}

pub struct FlowPlan {
    pub spec: FlowSpec,
    /// The flow as the daemon receives it (normalized, its start jitter drawn).
    pub spec_json: Value,
    pub controller_sends: bool,
    /// TCP: the kernel's name of the algorithm, and each end's socket options.
    pub congestion: Option<String>,
    pub sender: Option<TcpOptions>,
    pub receiver: Option<TcpOptions>,
    pub quick_ack: bool,
    /// Where the hosts or Linux depart from what the flow asks.
    pub notes: Vec<String>,
}

pub struct Plan {
    pub name: String,
    pub seed: u64,
    pub duration_ps: Time,
    pub sample_interval_ps: Time,
    pub flows: Vec<FlowPlan>,
}

impl Plan {
    /// `controller_sends[i]`: flow i is sent from the controller's host (else the daemon's).
    pub fn new(
        scenario: &Scenario,
        controller_sends: &[bool],
        controller: &Host,
        daemon: &Host,
    ) -> Result<Plan, String> {
        if controller_sends.len() != scenario.flows.len() {
            return Err(format!("{} sending hosts given for {} flows", controller_sends.len(), scenario.flows.len()));
        }
        let mut flows = Vec::new();
        for (i, spec) in scenario.flows.iter().enumerate() {
            let label = format!("flows[{i}] ({})", spec.name);
            if matches!(spec.source, SourceSpec::Http(_)) {
                return Err(format!("{label}: HTTP workloads cannot be probed yet (bulk, burst and UDP sources can)"));
            }
            let mut spec = spec.clone();
            let jitter = fatpipe_core::sim::start_jitter(scenario.seed, &spec);
            spec.source.delay_start(jitter);
            let spec_json = serde_json::to_value(&spec).expect("a flow serializes");
            let sends_here = controller_sends[i];
            let (tx, rx) = if sends_here { (controller, daemon) } else { (daemon, controller) };
            let mut plan = FlowPlan {
                spec_json,
                controller_sends: sends_here,
                congestion: None,
                sender: None,
                receiver: None,
                quick_ack: false,
                notes: Vec::new(),
                spec,
            };
            if !plan.spec.source.is_udp() {
                tcp_plan(&mut plan, tx, rx).map_err(|e| format!("{label}.{e}"))?;
            }
            flows.push(plan);
        }
        Ok(Plan {
            name: scenario.name.clone(),
            seed: scenario.seed,
            duration_ps: scenario.duration_ps,
            sample_interval_ps: scenario.sample_interval_ps,
            flows,
        })
    }

    /// What one end runs: the controller's end (`controller` true) or the daemon's. `ports`:
    /// per flow, the data port to ask the daemon for (daemon's end; None: its choice), and
    /// `udp_ports` the controller's UDP ports (daemon's end).
    pub fn setup(&self, controller: bool, ports: &[Option<u16>], udp_ports: &[u16]) -> TestSetup {
        let flows = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let sends = f.controller_sends == controller;
                let udp = f.spec.source.is_udp();
                EndPlan {
                    spec: f.spec_json.clone(),
                    sends,
                    tcp: if sends { f.sender.clone() } else { f.receiver.clone() },
                    quick_ack: !sends && f.quick_ack,
                    port: if controller { None } else { ports.get(i).copied().flatten() },
                    peer_udp_port: (udp && !controller).then(|| udp_ports.get(i).copied().unwrap_or(0)),
                }
            })
            .collect();
        TestSetup { duration_ps: self.duration_ps, sample_interval_ps: self.sample_interval_ps, flows }
    }
}

/// A TCP flow's options and notes: the algorithm must be on the sending host (the receiving
/// end keeps its default: it only acknowledges).
fn tcp_plan(plan: &mut FlowPlan, tx: &Host, rx: &Host) -> Result<(), String> {
    let (tx_info, rx_info) = (tx.info, rx.info);
    let tx_value = |key: &str| tx_info.sysctl_u64(key);
    let rx_value = |key: &str| rx_info.sysctl_u64(key);
    let k = kernel::flow_knobs(&plan.spec, &tx.info.available_congestion_control, &tx_value, tx.module_params)
        .map_err(|e| match e.split_once(": ") {
            Some((field, what)) => format!("{field}: on {}: {what}", tx.label),
            None => format!("on {}: {e}", tx.label),
        })?;
    plan.notes.extend(k.notes.iter().cloned());
    plan.notes.extend(buffer_notes(&plan.spec, (&tx_value, tx.info.cap_net_admin), (&rx_value, rx.info.cap_net_admin)));
    let tx_text = |key: &str| tx_info.sysctls.get(key).cloned();
    let rx_text = |key: &str| rx_info.sysctls.get(key).cloned();
    plan.notes.extend(host_setting_notes(&k.sender_sysctls, &tx_text, &tx.label));
    plan.notes.extend(host_setting_notes(&k.receiver_sysctls, &rx_text, &rx.label));
    plan.notes.extend(route_notes(&k.sender_route, &tx.label));
    plan.congestion = Some(k.congestion.clone());
    plan.sender = Some(k.sender.clone());
    plan.receiver = Some(TcpOptions { congestion: None, ..k.receiver.clone() });
    plan.quick_ack = k.quick_ack;
    Ok(())
}
