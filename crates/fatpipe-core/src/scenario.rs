//! The normalized scenario the core runs (see `docs/core-interface.md`): every quantity in
//! base units, every field present. The Python layer turns users' files into this and
//! reports their mistakes; the checks here guard the API against inconsistent documents.

use crate::cc::CcSpec;
use crate::net::link::LinkSpec;
use crate::net::routing::shortest_path_table;
use crate::net::split::SplitSpec;
use crate::source::SourceSpec;
use crate::tcp::TcpConfig;
use crate::time::Time;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub duration_ps: Time,
    pub sample_interval_ps: Time,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    pub flows: Vec<FlowSpec>,
    /// Groups of parallel links a packet chooses among at random (none by default).
    #[serde(default)]
    pub splits: Vec<SplitSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// An end system: TCP endpoints live here.
    Host,
    /// Forwards packets along static routes.
    Router,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub kind: NodeKind,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub name: String,
    /// Host that sends the data, and host that receives it.
    pub src: u32,
    pub dst: u32,
    pub source: SourceSpec,
    pub tcp: TcpConfig,
    pub cc: CcSpec,
}

impl Scenario {
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| format!("scenario: {e}"))?;
        s.validate()?;
        Ok(s)
    }

    /// Checks what serde cannot: references, positive quantities, MSS against MTU on the route.
    // Each `if let` on a spec enum becomes a real match as step 2/3 add variants.
    #[allow(irrefutable_let_patterns)]
    pub fn validate(&self) -> Result<(), String> {
        let n = self.nodes.len() as u32;
        if self.duration_ps == 0 {
            return Err("duration_ps: 0 is not allowed: must be positive".into());
        }
        if self.sample_interval_ps == 0 {
            return Err("sample_interval_ps: 0 is not allowed: must be positive".into());
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.from >= n || l.to >= n {
                return Err(format!("links[{i}].from/to: node index out of range 0..{n}"));
            }
            if l.rate_bps == 0 {
                return Err(format!("links[{i}].rate_bps: 0 is not allowed: must be positive"));
            }
            match &l.queue {
                crate::net::queue::QueueSpec::Droptail(d) => {
                    if d.cell_bytes.is_some() != d.limit_cells.is_some() || d.cell_bytes == Some(0) {
                        return Err(format!("links[{i}].queue: cell_bytes and limit_cells go together, cell_bytes > 0"));
                    }
                }
                crate::net::queue::QueueSpec::Red(r) => {
                    if !(r.max_p > 0.0 && r.max_p <= 1.0) || r.w_q.is_some_and(|w| !(w > 0.0 && w <= 1.0)) || r.mean_packet_bytes == 0 {
                        return Err(format!("links[{i}].queue: RED needs 0 < max_p <= 1, 0 < w_q <= 1, mean_packet_bytes > 0"));
                    }
                    if let (Some(lo), Some(hi)) = (r.min_th_packets, r.max_th_packets) {
                        if !(lo >= 0.0 && hi > lo) {
                            return Err(format!("links[{i}].queue: RED needs 0 <= min_th < max_th (got {lo}, {hi})"));
                        }
                    }
                }
            }
            for (j, imp) in l.impairments.iter().enumerate() {
                imp.validate().map_err(|e| format!("links[{i}].impairments[{j}].{e}"))?;
            }
            if l.mtu_bytes <= crate::packet::IPV4_TCP_HEADER_BYTES {
                return Err(format!("links[{i}].mtu_bytes: {} is not allowed: must exceed 40", l.mtu_bytes));
            }
        }
        self.validate_splits()?;
        let routes = shortest_path_table(self.nodes.len(), &self.links);
        for (i, f) in self.flows.iter().enumerate() {
            for (what, node) in [("src", f.src), ("dst", f.dst)] {
                if node >= n {
                    return Err(format!("flows[{i}].{what}: node index {node} out of range 0..{n}"));
                }
                if self.nodes[node as usize].kind != NodeKind::Host {
                    return Err(format!("flows[{i}].{what}: node {node} is a router; flows run between hosts"));
                }
            }
            if f.src == f.dst {
                return Err(format!("flows[{i}]: src and dst are the same host"));
            }
            let t = &f.tcp;
            if t.mss_bytes == 0 || t.initial_window_segments == 0 || t.ack_every_segments == 0 || t.dupack_threshold == 0 {
                return Err(format!("flows[{i}].tcp: mss, initial window, ack_every and dupack threshold must be positive"));
            }
            if t.rcv_buffer_bytes < t.mss_bytes as u64 || t.snd_buffer_bytes < t.mss_bytes as u64 {
                return Err(format!("flows[{i}].tcp: buffers must hold at least one MSS ({} bytes)", t.mss_bytes));
            }
            if t.min_rto_ps > t.max_rto_ps {
                return Err(format!("flows[{i}].tcp.min_rto_ps: larger than max_rto_ps"));
            }
            let packet = t.mss_bytes + t.header_bytes();
            for (a, b) in [(f.src, f.dst), (f.dst, f.src)] {
                let mut node = a;
                while node != b {
                    let Some(l) = routes[node as usize][b as usize] else {
                        return Err(format!(
                            "flows[{i}]: no route from node {} to node {}",
                            self.nodes[node as usize].name, self.nodes[b as usize].name
                        ));
                    };
                    let link = &self.links[l as usize];
                    if packet > link.mtu_bytes {
                        return Err(format!(
                            "flows[{i}].tcp.mss_bytes: {} is not allowed: with {} header bytes the packet exceeds link {}'s MTU {}",
                            t.mss_bytes,
                            t.header_bytes(),
                            link.name,
                            link.mtu_bytes
                        ));
                    }
                    node = link.to;
                }
            }
            if let SourceSpec::Burst(b) = &f.source {
                if b.burst_bytes == 0 || b.period_ps == 0 {
                    return Err(format!("flows[{i}].source: burst_bytes and period_ps must be positive"));
                }
                if b.stop_ps.is_some_and(|s| s <= b.start_ps) {
                    return Err(format!("flows[{i}].source.stop_ps: must be after start_ps"));
                }
            }
            if let SourceSpec::Bulk(b) = &f.source {
                if b.stop_ps.is_some_and(|s| s <= b.start_ps) {
                    return Err(format!("flows[{i}].source.stop_ps: must be after start_ps"));
                }
                if b.bytes == Some(0) {
                    return Err(format!("flows[{i}].source.bytes: 0 is not allowed: must be positive"));
                }
            }
            if let CcSpec::Reno(r) = &f.cc {
                if !(r.a > 0.0) || !(r.b > 0.0 && r.b < 1.0) {
                    return Err(format!("flows[{i}].cc: reno needs a > 0 and 0 < b < 1"));
                }
            }
            // Every algorithm's parameters; exhaustive, so a new algorithm cannot skip its checks.
            let cc_params = match &f.cc {
                CcSpec::Reno(_) => Ok(()),
                CcSpec::Vegas(c) => c.validate(),
                CcSpec::Westwood(c) => c.validate(),
                CcSpec::WestwoodPlus(_) => Ok(()), // no parameter can be out of range (durations, a flag)
                CcSpec::GridDt(c) => c.validate(),
                CcSpec::Fast(c) => c.validate(),
                CcSpec::Nocc(c) => c.validate(),
                CcSpec::Bbr(c) => c.validate(),
                CcSpec::Highspeed(c) => c.validate(),
                CcSpec::Scalable(c) => c.validate(),
                CcSpec::Htcp(c) => c.validate(),
                CcSpec::Bic(c) => c.validate(),
                CcSpec::Cubic(c) => c.validate(),
            };
            cc_params.map_err(|e| format!("flows[{i}].cc.{e}"))?;
        }
        Ok(())
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
                    return Err(format!("splits[{i}].links: {} and {} must join the same nodes with the same MTU", head.name, link.name));
                }
                if std::mem::replace(&mut member[l as usize], true) {
                    return Err(format!("splits[{i}].links: link {} is in more than one split (or twice)", link.name));
                }
            }
        }
        Ok(())
    }
}
