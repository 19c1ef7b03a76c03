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

/// The shortest-path table with the explicit routes laid over it: for every link of a
/// route, its source node forwards packets for the route's destination on it.
pub fn routing_table(nodes: usize, links: &[LinkSpec], routes: &[RouteSpec]) -> Vec<Vec<Option<u32>>> {
    let mut table = shortest_path_table(nodes, links);
    for r in routes {
        if let Some(&last) = r.links.last() {
            let dst = links[last as usize].to as usize;
            for &l in &r.links {
                table[links[l as usize].from as usize][dst] = Some(l);
            }
        }
    }
    table
}

/// `table[node][dst]` is the link `node` forwards packets for `dst` on (None: unreachable or
/// `node == dst`).
pub fn shortest_path_table(nodes: usize, links: &[LinkSpec]) -> Vec<Vec<Option<u32>>> {
    let mut out_links: Vec<Vec<u32>> = vec![Vec::new(); nodes];
    for (i, l) in links.iter().enumerate() {
        out_links[l.from as usize].push(i as u32);
    }
    let mut table = vec![vec![None; nodes]; nodes];
    for (src, row) in table.iter_mut().enumerate() {
        // Breadth-first search from `src`, remembering the first link taken.
        let mut seen = vec![false; nodes];
        seen[src] = true;
        let mut frontier = VecDeque::new();
        for &l in &out_links[src] {
            let to = links[l as usize].to as usize;
            if !seen[to] {
                seen[to] = true;
                row[to] = Some(l);
                frontier.push_back(to);
            }
        }
        while let Some(n) = frontier.pop_front() {
            for &l in &out_links[n] {
                let to = links[l as usize].to as usize;
                if !seen[to] {
                    seen[to] = true;
                    row[to] = row[n];
                    frontier.push_back(to);
                }
            }
        }
    }
    table
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
            }),
            impairments: Vec::new(),
            tx_ring: None,
        }
    }

    #[test]
    fn chain_routes_forward_and_back() {
        // 0 -> 1 -> 2 -> 3 and back.
        let links = vec![link(0, 1), link(1, 2), link(2, 3), link(3, 2), link(2, 1), link(1, 0)];
        let t = shortest_path_table(4, &links);
        assert_eq!(t[0][3], Some(0));
        assert_eq!(t[1][3], Some(1));
        assert_eq!(t[3][0], Some(3));
        assert_eq!(t[2][0], Some(4));
        assert_eq!(t[0][0], None);
    }

    #[test]
    fn shorter_path_wins() {
        // 0 -> 1 -> 2 and a direct 0 -> 2.
        let links = vec![link(0, 1), link(1, 2), link(0, 2)];
        let t = shortest_path_table(3, &links);
        assert_eq!(t[0][2], Some(2));
    }

    #[test]
    fn parallel_links_route_through_the_lowest_index() {
        // 0 -> 1 twice (a split group), then 1 -> 2; the second parallel link changes nothing.
        let links = vec![link(1, 2), link(0, 1), link(0, 1), link(2, 1), link(1, 0)];
        let t = shortest_path_table(3, &links);
        assert_eq!(t[0][1], Some(1));
        assert_eq!(t[0][2], Some(1));
        assert_eq!(t[1][2], Some(0));
        assert_eq!(t[2][0], Some(3));
        assert_eq!(t[1][0], Some(4));
    }

    #[test]
    fn an_explicit_route_overrides_the_shortest_path() {
        // 0 -> 1 -> 3 is shortest; the route sends packets for 3 from 0 through 2.
        let links = vec![link(0, 1), link(1, 3), link(0, 2), link(2, 3)];
        let plain = routing_table(4, &links, &[]);
        assert_eq!(plain[0][3], Some(0));
        let t = routing_table(4, &links, &[RouteSpec { links: vec![2, 3] }]);
        assert_eq!(t[0][3], Some(2));
        assert_eq!(t[2][3], Some(3));
        assert_eq!(t[1][3], Some(1)); // nodes off the route keep their shortest path
        assert_eq!(t[0][1], Some(0)); // other destinations too
    }
}
