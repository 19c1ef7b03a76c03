//! Static routes: for every node and destination, the first link of a shortest path (fewest
//! hops; ties go to the lowest link index so routes are deterministic).

use super::link::LinkSpec;
use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::VecDeque;

/// An explicit route: the links, in order, that packets for the path's last node take from
/// each node along it (overriding the shortest paths there).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub links: Vec<u32>,
}

/// No route: the node cannot reach the destination, or is the destination.
pub const NO_ROUTE: u32 = u32::MAX;

/// Where each node forwards packets for each destination packets can have: the first link
/// of a shortest path (fewest hops; among equals the lowest link index), with the explicit
/// routes laid over it.
///
/// Only destinations some packet goes to have a column (a simulation's flows' hosts, both
/// ends: data one way, ACKs the other), so the table holds nodes x destinations links, not
/// nodes x nodes: a chain of 14,000 routers with one flow needs two columns (112 KB), where
/// a full table took 1.6 GB (issue 23).
#[derive(Clone, Debug)]
pub struct RoutingTable {
    /// Per node: its column, or `NO_ROUTE` if no packet is addressed to it.
    column: Vec<u32>,
    columns: usize,
    /// `hops[node * columns + column]`: the link, or `NO_ROUTE`.
    hops: Vec<u32>,
}

impl RoutingTable {
    /// The link `node` forwards packets for `dst` on (None: unreachable, `node == dst`, or
    /// `dst` is not one of the table's destinations).
    #[inline]
    pub fn get(&self, node: u32, dst: u32) -> Option<u32> {
        let c = *self.column.get(dst as usize)?;
        if c == NO_ROUTE {
            return None;
        }
        let hop = self.hops[node as usize * self.columns + c as usize];
        (hop != NO_ROUTE).then_some(hop)
    }

    /// The column of destination `dst` (`NO_ROUTE`: not a destination).
    #[inline(always)]
    pub fn column(&self, dst: u32) -> u32 {
        self.column[dst as usize]
    }

    /// The number of destinations (columns).
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Per node: its column or `NO_ROUTE` (a hot path keeps its own copy).
    pub fn column_map(&self) -> &[u32] {
        &self.column
    }

    /// Every (node, column, link) entry, row by row: to build tables of the same shape.
    pub fn hops(&self) -> &[u32] {
        &self.hops
    }
}

/// The routing table for packets addressed to `destinations` (node indices; repeats are
/// fine): shortest paths with the explicit `routes` laid over them (for every link of a
/// route, its source node forwards packets for the route's last node on it).
pub fn routing_table(
    nodes: usize,
    links: &[LinkSpec],
    routes: &[RouteSpec],
    destinations: impl IntoIterator<Item = u32>,
) -> RoutingTable {
    let mut column = vec![NO_ROUTE; nodes];
    let mut dests = Vec::new();
    for d in destinations {
        if (d as usize) < nodes && column[d as usize] == NO_ROUTE {
            column[d as usize] = dests.len() as u32;
            dests.push(d);
        }
    }
    let columns = dests.len();
    let mut hops = vec![NO_ROUTE; nodes * columns];
    let mut out_links: Vec<Vec<u32>> = vec![Vec::new(); nodes];
    let mut in_links: Vec<Vec<u32>> = vec![Vec::new(); nodes];
    for (i, l) in links.iter().enumerate() {
        out_links[l.from as usize].push(i as u32);
        in_links[l.to as usize].push(i as u32);
    }
    let mut hops_to = vec![u32::MAX; nodes];
    let mut frontier = VecDeque::new();
    for (c, &dst) in dests.iter().enumerate() {
        // Hops from every node to `dst`: breadth-first search backwards along the links.
        hops_to.fill(u32::MAX);
        hops_to[dst as usize] = 0;
        frontier.push_back(dst as usize);
        while let Some(n) = frontier.pop_front() {
            for &l in &in_links[n] {
                let from = links[l as usize].from as usize;
                if hops_to[from] == u32::MAX {
                    hops_to[from] = hops_to[n] + 1;
                    frontier.push_back(from);
                }
            }
        }
        // Each node's first link one hop closer, the lowest index among equals: the same
        // choice as a breadth-first search forward from the node that takes its links in
        // index order (the first link of the first shortest path it finds).
        for node in 0..nodes {
            let h = hops_to[node];
            if h == 0 || h == u32::MAX {
                continue;
            }
            if let Some(&l) = out_links[node].iter().find(|&&l| hops_to[links[l as usize].to as usize] == h - 1) {
                hops[node * columns + c] = l;
            }
        }
    }
    for r in routes {
        if let Some(&last) = r.links.last() {
            let c = column[links[last as usize].to as usize];
            if c != NO_ROUTE {
                for &l in &r.links {
                    hops[links[l as usize].from as usize * columns + c as usize] = l;
                }
            }
        }
    }
    RoutingTable { column, columns, hops }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::queue::{droptail::DropTailConfig, QueueSpec};

    fn link(from: u32, to: u32) -> LinkSpec {
        LinkSpec {
            name: format!("{from}->{to}"),
            from,
            to,
            rate_bps: 1,
            delay_ps: 0,
            framing_bytes: 0,
            mtu_bytes: 1500,
            queue: QueueSpec::Droptail(DropTailConfig {
                limit_packets: None,
                limit_bytes: None,
                cell_bytes: None,
                limit_cells: None,
                mark_threshold_packets: None,
            }),
            impairments: Vec::new(),
            tx_ring: None,
        }
    }

    /// Every node a destination.
    fn table(nodes: usize, links: &[LinkSpec], routes: &[RouteSpec]) -> RoutingTable {
        routing_table(nodes, links, routes, 0..nodes as u32)
    }

    #[test]
    fn chain_routes_forward_and_back() {
        // 0 -> 1 -> 2 -> 3 and back.
        let links = vec![link(0, 1), link(1, 2), link(2, 3), link(3, 2), link(2, 1), link(1, 0)];
        let t = table(4, &links, &[]);
        assert_eq!(t.get(0, 3), Some(0));
        assert_eq!(t.get(1, 3), Some(1));
        assert_eq!(t.get(3, 0), Some(3));
        assert_eq!(t.get(2, 0), Some(4));
        assert_eq!(t.get(0, 0), None);
    }

    #[test]
    fn shorter_path_wins() {
        // 0 -> 1 -> 2 and a direct 0 -> 2.
        let links = vec![link(0, 1), link(1, 2), link(0, 2)];
        let t = table(3, &links, &[]);
        assert_eq!(t.get(0, 2), Some(2));
    }

    #[test]
    fn parallel_links_route_through_the_lowest_index() {
        // 0 -> 1 twice (a split group), then 1 -> 2; the second parallel link changes nothing.
        let links = vec![link(1, 2), link(0, 1), link(0, 1), link(2, 1), link(1, 0)];
        let t = table(3, &links, &[]);
        assert_eq!(t.get(0, 1), Some(1));
        assert_eq!(t.get(0, 2), Some(1));
        assert_eq!(t.get(1, 2), Some(0));
        assert_eq!(t.get(2, 0), Some(3));
        assert_eq!(t.get(1, 0), Some(4));
    }

    #[test]
    fn an_explicit_route_overrides_the_shortest_path() {
        // 0 -> 1 -> 3 is shortest; the route sends packets for 3 from 0 through 2.
        let links = vec![link(0, 1), link(1, 3), link(0, 2), link(2, 3)];
        let plain = table(4, &links, &[]);
        assert_eq!(plain.get(0, 3), Some(0));
        let t = table(4, &links, &[RouteSpec { links: vec![2, 3] }]);
        assert_eq!(t.get(0, 3), Some(2));
        assert_eq!(t.get(2, 3), Some(3));
        assert_eq!(t.get(1, 3), Some(1)); // nodes off the route keep their shortest path
        assert_eq!(t.get(0, 1), Some(0)); // other destinations too
    }

    /// The rule by its definition, the slow way: a breadth-first search forward from
    /// `src` taking links in index order; each node's route is the first link of the path
    /// that reached it first.
    fn forward_search(nodes: usize, links: &[LinkSpec], src: usize) -> Vec<Option<u32>> {
        let mut first = vec![None; nodes];
        let mut seen = vec![false; nodes];
        seen[src] = true;
        let mut frontier = VecDeque::from([src]);
        while let Some(n) = frontier.pop_front() {
            for (i, l) in links.iter().enumerate().filter(|(_, l)| l.from as usize == n) {
                let to = l.to as usize;
                if !seen[to] {
                    seen[to] = true;
                    first[to] = if n == src { Some(i as u32) } else { first[n] };
                    frontier.push_back(to);
                }
            }
        }
        first
    }

    #[test]
    fn searching_back_from_each_destination_picks_what_a_search_forward_picks() {
        // Random graphs, parallel links and loops included: the table (built backwards,
        // per destination) chooses the very link the forward search does.
        let mut rng = crate::rng::Rng::for_element(7, "routing");
        for case in 0..200 {
            let nodes = 2 + (rng.next_u64() % 12) as usize;
            let count = (rng.next_u64() % (3 * nodes as u64)) as usize;
            let links: Vec<LinkSpec> = (0..count)
                .map(|_| link((rng.next_u64() % nodes as u64) as u32, (rng.next_u64() % nodes as u64) as u32))
                .collect();
            let t = table(nodes, &links, &[]);
            for src in 0..nodes {
                let expected = forward_search(nodes, &links, src);
                for (dst, want) in expected.iter().enumerate() {
                    let want = if dst == src { None } else { *want };
                    assert_eq!(t.get(src as u32, dst as u32), want, "case {case}: {src} -> {dst} over {count} links");
                }
            }
        }
    }

    #[test]
    fn only_the_destinations_asked_for_take_room() {
        // A chain of 14,000 routers with hosts at both ends (issue 23: 4.1 GB at 1 GiB of
        // budget): the table holds two columns, 14,000 x 2 links.
        let nodes = 14_000u32;
        let links: Vec<LinkSpec> = (0..nodes - 1).flat_map(|i| [link(i, i + 1), link(i + 1, i)]).collect();
        let t = routing_table(nodes as usize, &links, &[], [nodes - 1, 0, nodes - 1]);
        assert_eq!((t.columns(), t.hops().len()), (2, 2 * nodes as usize));
        assert_eq!(t.get(0, nodes - 1), Some(0));
        assert_eq!(t.get(nodes - 1, 0), Some(2 * (nodes - 2) + 1));
        assert_eq!(t.get(0, 5), None, "5 is no destination");
    }
}
