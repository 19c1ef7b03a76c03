//! The normalized scenario the core runs (see `docs/core-interface.md`): every quantity in
//! base units, every field present. The Python layer turns users' files into this and
//! reports their mistakes; the checks here guard the API against inconsistent documents.

use crate::cc::CcSpec;
use crate::net::link::LinkSpec;
use crate::net::routing::{routing_table, RoutingTable};
use crate::net::split::SplitSpec;
use crate::packet::IPV4_UDP_HEADER_BYTES;
use crate::source::SourceSpec;
use crate::tcp::TcpConfig;
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod flow_check;
pub use flow_check::MAX_UDP_PAYLOAD_BYTES;

/// A flow's route as link indices: (data, ACKs); the ACKs' empty for a UDP flow.
pub type FlowRoute = (Vec<u32>, Vec<u32>);

/// What `Scenario::validate` refuses: a field (one line naming it, the value and what is
/// allowed), or a flow whose packets find no way. The second is data, not text, so that
/// the Python front names the user's flow (before its streams were expanded) without
/// reading the message apart.
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioError {
    Field(String),
    Route(RouteError),
    /// A field of one flow (its parameters are checked here, where they are used, so the
    /// Python front states no rule of its own, and names the user's flow).
    Flow(FlowFieldError),
}

/// A flow's field that `FlowSpec::check` refused.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowFieldError {
    /// The flow's index in the normalized scenario.
    pub flow: usize,
    /// The field's path inside the flow, from its first dot: `.cc.c`, `.tcp.mss_bytes`.
    pub field: String,
    /// The value and what is allowed: `0.001 is not allowed with variant = "linux": ...`.
    pub problem: String,
}

impl FlowFieldError {
    /// `check`'s message for flow `flow` (".cc.c: problem") taken apart at its first ": ".
    pub fn new(flow: usize, message: &str) -> FlowFieldError {
        let (field, problem) = message.split_once(": ").unwrap_or(("", message));
        FlowFieldError { flow, field: field.to_string(), problem: problem.to_string() }
    }
}

impl std::fmt::Display for FlowFieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flows[{}]{}: {}", self.flow, self.field, self.problem)
    }
}

/// A flow whose data, ACKs or datagrams find no route, or whose route loops.
#[derive(Clone, Debug, PartialEq)]
pub struct RouteError {
    /// The flow's index in the normalized scenario.
    pub flow: usize,
    /// The explicit routes send the packets round in a circle (else: no route at all).
    pub loops: bool,
    /// What is wrong, naming the packets and the hosts: `no route for the data from "a" to "b"`.
    pub problem: String,
}

impl std::fmt::Display for RouteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "flows[{}]: {}", self.flow, self.problem)
    }
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScenarioError::Field(message) => f.write_str(message),
            ScenarioError::Route(e) => e.fmt(f),
            ScenarioError::Flow(e) => e.fmt(f),
        }
    }
}

impl From<String> for ScenarioError {
    fn from(message: String) -> Self {
        ScenarioError::Field(message)
    }
}

impl From<&str> for ScenarioError {
    fn from(message: &str) -> Self {
        ScenarioError::Field(message.into())
    }
}

impl From<RouteError> for ScenarioError {
    fn from(e: RouteError) -> Self {
        ScenarioError::Route(e)
    }
}

impl From<ScenarioError> for String {
    fn from(e: ScenarioError) -> Self {
        e.to_string()
    }
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub duration_ps: Time,
    pub sample_interval_ps: Time,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    /// Explicit routes over the shortest paths (none by default).
    #[serde(default)]
    pub routes: Vec<crate::net::routing::RouteSpec>,
    /// Packet captures (pcap files); none by default.
    #[serde(default)]
    pub captures: Vec<crate::capture::CaptureSpec>,
    /// Groups of parallel links a packet chooses among at random (none by default).
    #[serde(default)]
    pub splits: Vec<SplitSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// An end system: TCP endpoints live here.
    Host,
    /// Forwards packets along static routes.
    Router,
}

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    /// Host that sends the data, and host that receives it.
    pub src: u32,
    pub dst: u32,
    pub source: SourceSpec,
    /// TCP flows only: a flow with a UDP source has neither (absent or null).
    pub tcp: Option<TcpConfig>,
    pub cc: Option<CcSpec>,
    /// The flow is one of parallel streams (iperf -P) reported together under this name.
    pub group: Option<String>,
    /// The source starts a uniform random time on [0, this] after its `start_ps`, drawn from
    /// the scenario seed and the flow's name, so that replications with different seeds do
    /// not start in lockstep. 0: exactly at `start_ps` (nothing is drawn).
    pub start_jitter_ps: Time,
}

/// TCP settings for the idle endpoints a UDP flow carries (they never send or receive; any
/// valid values do, and none of them is a default of anything).
pub const IDLE_TCP: TcpConfig = TcpConfig {
    mss_bytes: 536,
    initial_window_segments: 1,
    rcv_buffer_bytes: 65_535,
    snd_buffer_bytes: 65_535,
    window_scaling: false,
    timestamps: false,
    delayed_ack: false,
    delayed_ack_timeout_ps: 0,
    ack_every_segments: 1,
    dupack_threshold: 3,
    recovery: crate::tcp::config::Recovery::Reno,
    fack: false,
    dcr_div: None,
    max_ssthresh_segments: 0,
    initial_ssthresh_segments: None,
    pacing_gain: None,
    newreno_impatient: false,
    ecn: false,
    accecn: false,
    min_rto_ps: 0,
    max_rto_ps: 0,
    initial_rto_ps: 0,
    handshake: false,
    slow_start_after_idle: false,
    receiver_drain_rate_bps: None,
    random_send_delay_ps: 0,
    stack: crate::tcp::config::StackKind::Rfc,
    limited_transmit: false,
    ssthresh_every_timeout: false,
    bsd_window: false,
    reno_recover_guard: false,
    sack_variant: crate::tcp::config::SackVariant::Rfc6675,
    rto_estimator: crate::tcp::config::RtoEstimator::Rfc6298,
    dsack: false,
    rack: false,
    tlp: false,
    frto: false,
    undo: false,
    window_reduction: crate::tcp::config::WindowReduction::Prr,
    adaptive_reordering: false,
    max_reordering_segments: 3,
    slow_timer_ps: None,
    fast_timer_ps: None,
    metrics: None,
    host: None,
    max_send_rate_bps: None,
};

impl FlowSpec {
    /// The flow's TCP settings; a UDP flow (none) gets `IDLE_TCP` for its idle endpoints.
    pub fn tcp(&self) -> &TcpConfig {
        self.tcp.as_ref().unwrap_or(&IDLE_TCP)
    }
}

impl Scenario {
    /// Parses a normalized scenario (serde's checks only: keys, types). `validate` checks the
    /// rest; `Simulation::new` calls it, once.
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        serde_json::from_str(text).map_err(|e| format!("scenario: {e}"))
    }

    /// Checks what serde cannot: references, positive quantities, MSS against MTU on the
    /// route. Returns the routing table (`RoutingTable::get(node, dst)`: the link to forward on), which
    /// the checks need and the simulation uses: it is computed once, here.
    // Each `if let` on a spec enum becomes a real match as step 2/3 add variants.
    #[allow(irrefutable_let_patterns)]
    pub fn validate(&self) -> Result<RoutingTable, ScenarioError> {
        let n = self.nodes.len() as u32;
        if self.duration_ps == 0 {
            return Err("duration_ps: 0 is not allowed: must be positive".into());
        }
        if self.sample_interval_ps == 0 {
            return Err("sample_interval_ps: 0 is not allowed: must be positive".into());
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.from >= n || l.to >= n {
                return Err(format!("links[{i}].from/to: node index out of range 0..{n}").into());
            }
            if l.rate_bps == 0 {
                return Err(format!("links[{i}].rate_bps: 0 is not allowed: must be positive").into());
            }
            match &l.queue {
                crate::net::queue::QueueSpec::Droptail(d) => {
                    if d.cell_bytes.is_some() != d.limit_cells.is_some() || d.cell_bytes == Some(0) {
                        return Err(format!(
                            "links[{i}].queue: cell_bytes and limit_cells go together, cell_bytes > 0"
                        )
                        .into());
                    }
                }
                crate::net::queue::QueueSpec::Red(r) => {
                    if !(r.max_p > 0.0 && r.max_p <= 1.0)
                        || r.w_q.is_some_and(|w| !(w > 0.0 && w <= 1.0))
                        || r.mean_packet_bytes == 0
                    {
                        return Err(format!(
                            "links[{i}].queue: RED needs 0 < max_p <= 1, 0 < w_q <= 1, mean_packet_bytes > 0"
                        )
                        .into());
                    }
                    if let (Some(lo), Some(hi)) = (r.min_th_packets, r.max_th_packets) {
                        if !(lo >= 0.0 && hi > lo) {
                            return Err(
                                format!("links[{i}].queue: RED needs 0 <= min_th < max_th (got {lo}, {hi})").into()
                            );
                        }
                    }
                }
                crate::net::queue::QueueSpec::Codel(c) => {
                    check_codel(i, c.limit_packets, c.target_ps, c.interval_ps)?;
                }
                crate::net::queue::QueueSpec::FqCodel(c) => {
                    check_codel(i, c.limit_packets, c.target_ps, c.interval_ps)?;
                    if c.flows == 0 || c.quantum_bytes == 0 || c.drop_batch_size == 0 {
                        return Err(format!(
                            "links[{i}].queue: FQ-CoDel needs flows, quantum_bytes and drop_batch_size > 0"
                        )
                        .into());
                    }
                }
                crate::net::queue::QueueSpec::Pie(p) => check_pie(i, p)?,
                crate::net::queue::QueueSpec::FqPie(p) => {
                    check_pie(i, &p.pie)?;
                    if p.flows == 0 || p.quantum_bytes == 0 {
                        return Err(format!("links[{i}].queue: FQ-PIE needs flows and quantum_bytes > 0").into());
                    }
                }
                crate::net::queue::QueueSpec::Tbf(t) => {
                    t.validate().map_err(|e| format!("links[{i}].queue: {e}"))?;
                    let bucket = t.burst_bytes.min(t.minburst_bytes.unwrap_or(u64::MAX));
                    if bucket < l.mtu_bytes as u64 {
                        return Err(format!(
                            "links[{i}].queue: TBF's bucket ({bucket} bytes) is below the link's MTU ({}): no full-size packet could leave",
                            l.mtu_bytes
                        )
                        .into());
                    }
                }
                crate::net::queue::QueueSpec::Dualpi2(d) => {
                    if d.limit_packets == 0
                        || d.memory_limit_bytes == 0
                        || d.tupdate_ps == 0
                        || !(d.alpha >= 0.0 && d.beta >= 0.0 && d.coupling_factor > 0.0)
                        || d.c_protection_percent > 100
                        || d.step_thresh_ps.is_some() == d.step_thresh_packets.is_some()
                    {
                        return Err(format!(
                            "links[{i}].queue: DualPI2 needs limit_packets, memory_limit_bytes, tupdate_ps > 0, alpha, beta >= 0, coupling_factor > 0, c_protection_percent <= 100 and one of step_thresh_ps, step_thresh_packets"
                        )
                        .into());
                    }
                }
            }
            if l.tx_ring.is_some() && l.queue.holds_packets() {
                return Err(format!(
                    "links[{i}].tx_ring: a transmit ring runs only behind drop-tail or RED, not a discipline that holds its packets"
                )
                .into());
            }
            for (j, imp) in l.impairments.iter().enumerate() {
                imp.validate().map_err(|e| format!("links[{i}].impairments[{j}].{e}"))?;
            }
            if l.mtu_bytes <= crate::packet::IPV4_TCP_HEADER_BYTES {
                return Err(format!("links[{i}].mtu_bytes: {} is not allowed: must exceed 40", l.mtu_bytes).into());
            }
        }
        for (i, c) in self.captures.iter().enumerate() {
            match c.point {
                crate::capture::CapturePoint::Host { node }
                    if node >= n || self.nodes[node as usize].kind != NodeKind::Host =>
                {
                    return Err(format!("captures[{i}].point.node: {node} is not a host").into());
                }
                crate::capture::CapturePoint::Link { link } if link as usize >= self.links.len() => {
                    return Err(format!("captures[{i}].point.link: {link} out of range 0..{}", self.links.len()).into());
                }
                _ => {}
            }
            if c.snaplen_bytes < 64 {
                return Err(
                    format!("captures[{i}].snaplen_bytes: {} is not allowed: at least 64", c.snaplen_bytes).into()
                );
            }
        }
        self.validate_splits()?;
        for (i, r) in self.routes.iter().enumerate() {
            if r.links.is_empty() || r.links.iter().any(|&l| l as usize >= self.links.len()) {
                return Err(
                    format!("routes[{i}].links: at least one link, each an index in 0..{}", self.links.len()).into()
                );
            }
            for w in r.links.windows(2) {
                if self.links[w[0] as usize].to != self.links[w[1] as usize].from {
                    return Err(format!(
                        "routes[{i}].links: {} does not continue {}",
                        self.links[w[1] as usize].name, self.links[w[0] as usize].name
                    )
                    .into());
                }
            }
        }
        let routes = self.routing_table();
        for (i, f) in self.flows.iter().enumerate() {
            for (what, node) in [("src", f.src), ("dst", f.dst)] {
                if node >= n {
                    return Err(format!("flows[{i}].{what}: node index {node} out of range 0..{n}").into());
                }
                if self.nodes[node as usize].kind != NodeKind::Host {
                    return Err(format!("flows[{i}].{what}: node {node} is a router; flows run between hosts").into());
                }
            }
            if f.src == f.dst {
                return Err(format!("flows[{i}]: src and dst are the same host").into());
            }
            f.check().map_err(|e| ScenarioError::Flow(FlowFieldError::new(i, &e)))?;
            if f.source.is_udp() {
                // UDP is not fragmented here: a datagram fits every link on its way.
                let payload = f.source.udp_payload_bytes().expect("a UDP source");
                let link = self.smallest_mtu(&self.route_links(&routes, i, f.src, f.dst, "datagrams")?);
                if payload + IPV4_UDP_HEADER_BYTES > link.mtu_bytes {
                    return Err(format!(
                        "flows[{i}].source.payload_bytes: {payload} is not allowed: must be positive and, with {IPV4_UDP_HEADER_BYTES} header bytes, fit link {}'s MTU {}",
                        link.name, link.mtu_bytes
                    ).into());
                }
                continue;
            }
            let t = f.tcp();
            let packet = t.mss_bytes + t.header_bytes();
            for (a, b, what) in [(f.src, f.dst, "data"), (f.dst, f.src, "ACKs")] {
                let link = self.smallest_mtu(&self.route_links(&routes, i, a, b, what)?);
                if packet > link.mtu_bytes {
                    return Err(format!(
                        "flows[{i}].tcp.mss_bytes: {} is not allowed: with {} header bytes the packet exceeds link {}'s MTU {}",
                        t.mss_bytes,
                        t.header_bytes(),
                        link.name,
                        link.mtu_bytes
                    ).into());
                }
            }
        }
        Ok(routes)
    }

    /// The routing table for the packets of this scenario's flows: to each flow's
    /// receiving host (data) and sending host (ACKs).
    pub fn routing_table(&self) -> RoutingTable {
        let ends = self.flows.iter().flat_map(|f| [f.dst, f.src]);
        routing_table(self.nodes.len(), &self.links, &self.routes, ends)
    }

    /// The link of least MTU among `links` (a route: never empty, src != dst).
    fn smallest_mtu(&self, links: &[u32]) -> &LinkSpec {
        let smallest = links.iter().map(|&l| &self.links[l as usize]).min_by_key(|l| l.mtu_bytes);
        smallest.expect("src != dst: the route has a link")
    }

    /// The links, in order, that packets from node `a` to node `b` take, or why there are
    /// none (for flow `i`; `what` goes that way: data, ACKs, datagrams).
    fn route_links(&self, routes: &RoutingTable, i: usize, a: u32, b: u32, what: &str) -> Result<Vec<u32>, RouteError> {
        let name = |n: u32| serde_json::to_string(&self.nodes[n as usize].name).expect("a string serializes");
        let mut links = Vec::new();
        let mut node = a;
        while node != b {
            if links.len() >= self.links.len() {
                // Explicit routes can send a packet round in a circle.
                return Err(RouteError {
                    flow: i,
                    loops: true,
                    problem: format!(
                        "the route for the {what} from {} to {} loops (check the explicit routes)",
                        name(a),
                        name(b)
                    ),
                });
            }
            let Some(l) = routes.get(node, b) else {
                let stuck = if node == a { String::new() } else { format!(" (none onward from {})", name(node)) };
                let problem = format!("no route for the {what} from {} to {}{stuck}", name(a), name(b));
                return Err(RouteError { flow: i, loops: false, problem });
            };
            links.push(l);
            node = self.links[l as usize].to;
        }
        Ok(links)
    }

    /// Every flow's route, as link indices: (data, ACKs), the ACKs' empty for a UDP flow.
    /// Validates first (the routes are the simulation's); for what the scenario asks of its
    /// paths before a run, such as the bandwidth-delay product a flow's buffers must hold.
    pub fn flow_routes(&self) -> Result<Vec<FlowRoute>, ScenarioError> {
        let routes = self.validate()?;
        Ok(self.flow_routes_with(&routes)?)
    }

    /// Every flow's route by the routing table `routes` (`validate`'s).
    pub fn flow_routes_with(&self, routes: &RoutingTable) -> Result<Vec<FlowRoute>, RouteError> {
        self.flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let data = self.route_links(routes, i, f.src, f.dst, "data")?;
                let acks =
                    if f.source.is_udp() { Vec::new() } else { self.route_links(routes, i, f.dst, f.src, "ACKs")? };
                Ok((data, acks))
            })
            .collect()
    }

    /// Each split: valid probabilities, members that exist, join the same two nodes with the
    /// same MTU (routes, and the MTU check along them, reach a group through one member), and
    /// belong to no other split.
    fn validate_splits(&self) -> Result<(), String> {
        let mut member = vec![false; self.links.len()];
        for (i, s) in self.splits.iter().enumerate() {
            s.validate().map_err(|e| format!("splits[{i}].{e}"))?;
            if let Some(&l) = s.links.iter().find(|&&l| l as usize >= self.links.len()) {
                return Err(format!("splits[{i}].links: link index {l} out of range 0..{}", self.links.len()));
            }
            let head = &self.links[s.links[0] as usize];
            for &l in &s.links {
                let link = &self.links[l as usize];
                if link.from != head.from || link.to != head.to || link.mtu_bytes != head.mtu_bytes {
                    return Err(format!(
                        "splits[{i}].links: {} and {} must join the same nodes with the same MTU",
                        head.name, link.name
                    ));
                }
                if std::mem::replace(&mut member[l as usize], true) {
                    return Err(format!("splits[{i}].links: link {} is in more than one split (or twice)", link.name));
                }
            }
        }
        Ok(())
    }
}

/// What CoDel's state machine needs of its parameters (the scenario's tables check them in
/// the user's terms first).
fn check_codel(i: usize, limit_packets: u64, target_ps: Time, interval_ps: Time) -> Result<(), ScenarioError> {
    if limit_packets == 0 || target_ps == 0 || interval_ps <= target_ps {
        return Err(format!("links[{i}].queue: CoDel needs limit_packets > 0 and 0 < target_ps < interval_ps").into());
    }
    Ok(())
}

/// PIE's settings, alone or each FQ-PIE queue's.
fn check_pie(i: usize, p: &crate::net::queue::pie::PieConfig) -> Result<(), ScenarioError> {
    if p.limit_packets == 0 || p.target_ps == 0 || p.tupdate_ps == 0 || !(p.alpha >= 0.0 && p.beta >= 0.0) {
        return Err(format!(
            "links[{i}].queue: PIE needs limit_packets, target_ps, tupdate_ps > 0 and alpha, beta >= 0"
        )
        .into());
    }
    Ok(())
}
