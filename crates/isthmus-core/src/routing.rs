//! Default routing: for every node and destination host, the set of local ports that lie
//! on a shortest (fewest-hop) path, and the policy that picks one of them per packet.

use crate::packet::PacketHeader;
use crate::rng::{mix64, Rng};
use crate::topology::{NodeKind, Topology};

/// How a switch chooses among equal-cost next hops.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RoutingPolicy {
    /// Per-flow: hash of the 5-tuple, salted per switch (so tiers do not polarise).
    Ecmp,
    /// Per-packet: a uniformly random next hop (packet spraying).
    Spray,
    /// One fixed shortest path per (source, destination) host pair.
    SinglePath,
}

impl RoutingPolicy {
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "ecmp" => Ok(RoutingPolicy::Ecmp),
            "spray" => Ok(RoutingPolicy::Spray),
            "single_path" => Ok(RoutingPolicy::SinglePath),
            other => Err(format!(
                "unknown routing policy '{other}' (expected one of ecmp, spray, single_path)"
            )),
        }
    }
}

/// Next-hop port sets, each distinct set stored once, by destination class: hosts with
/// one link to the same node (a rack under its leaf) are reached by the same ports from
/// every other node, so they share a class, and only their own edge node tells them
/// apart (by the port facing each). Row r = row_base[node] · classes + the destination's
/// class names set `row_set[r]`, whose ports are
/// `ports[set_start[id] as usize..][..set_len[id] as usize]`. Nodes with one port (hosts)
/// have no rows. A fabric has few distinct sets (a leaf's uplinks serve every remote
/// rack) and a row per rack, not per host, so a 10,000-host fabric's table stays a few
/// megabytes; a node's rows are adjacent.
#[derive(Clone)]
pub struct RouteTable {
    row_base: Vec<u32>,
    /// Per destination host: its class, and the set its own edge node uses.
    destinations: Vec<Destination>,
    row_set: Vec<u32>,
    set_start: Vec<u32>,
    set_len: Vec<u16>,
    ports: Vec<u16>,
    num_classes: u32,
}

#[derive(Clone, Copy)]
struct Destination {
    class: u32,
    /// The node a one-link host hangs off (NO_EDGE for a host with several links, which
    /// has a class of its own), and the set of that node's ports facing it.
    edge: u32,
    edge_set: u32,
}

const SINGLE_PORT: u32 = u32::MAX;
const NO_EDGE: u32 = u32::MAX;

impl RouteTable {
    /// Local port k of a node is the k-th link touching it, in link order (as the
    /// engine numbers ports). A port is on a shortest path to host `h` when its peer is
    /// one hop closer and relays (a switch) or is `h`: away from `h`'s own edge node
    /// only the first can hold, which is why a rack's hosts share every other row.
    pub fn shortest_paths(topo: &Topology) -> RouteTable {
        let adjacency = topo.adjacency();
        let n = topo.nodes.len();
        let mut row_base = vec![SINGLE_PORT; n];
        let mut routed = Vec::new();
        for (node, adj) in adjacency.iter().enumerate() {
            if adj.len() > 1 {
                row_base[node] = routed.len() as u32;
                routed.push(node);
            }
        }
        // Each class's representative (a host index; its distances give the class's rows).
        let mut representatives: Vec<usize> = Vec::new();
        let mut class_of_edge = std::collections::HashMap::new();
        let mut destinations = Vec::with_capacity(topo.hosts.len());
        for (h, &host) in topo.hosts.iter().enumerate() {
            let edge = match adjacency[host as usize].as_slice() {
                [(edge, _)] => *edge,
                _ => NO_EDGE,
            };
            let fresh = representatives.len() as u32;
            let class = if edge == NO_EDGE {
                fresh
            } else {
                *class_of_edge.entry(edge).or_insert(fresh)
            };
            if class == fresh {
                representatives.push(h);
            }
            destinations.push(Destination {
                class,
                edge,
                edge_set: 0,
            });
        }
        let num_classes = representatives.len() as u32;
        let mut table = RouteTable {
            row_base,
            destinations,
            row_set: vec![0; routed.len() * num_classes as usize],
            set_start: vec![0],
            set_len: vec![0],
            ports: Vec::new(),
            num_classes,
        };
        // Set 0 is the empty set (unreachable).
        let mut ids: std::collections::HashMap<Vec<u16>, u32> =
            std::collections::HashMap::from([(Vec::new(), 0)]);
        let mut id_of = |table: &mut RouteTable, set: &Vec<u16>| -> u32 {
            *ids.entry(set.clone()).or_insert_with(|| {
                table.set_start.push(table.ports.len() as u32);
                table.set_len.push(set.len() as u16);
                table.ports.extend_from_slice(set);
                (table.set_len.len() - 1) as u32
            })
        };
        let mut set = Vec::new();
        // The ports of `node` one hop closer to `target` that relay to it.
        let next_hops = |set: &mut Vec<u16>, node: usize, target: u32, dist: &[u32]| {
            set.clear();
            if dist[node] != u32::MAX && node as u32 != target {
                for (local, &(peer, _)) in adjacency[node].iter().enumerate() {
                    let relays =
                        peer == target || topo.nodes[peer as usize].kind == NodeKind::Switch;
                    if relays && dist[peer as usize].wrapping_add(1) == dist[node] {
                        set.push(local as u16);
                    }
                }
            }
        };
        for (class, &h) in representatives.iter().enumerate() {
            let target = topo.hosts[h];
            let dist = topo.hop_distances(&adjacency, target);
            let edge = table.destinations[h].edge;
            for (row, &node) in routed.iter().enumerate() {
                // The class's edge node answers per host, below.
                if node as u32 != edge {
                    next_hops(&mut set, node, target, &dist);
                    let id = id_of(&mut table, &set);
                    table.row_set[row * num_classes as usize + class] = id;
                }
            }
        }
        for h in 0..topo.hosts.len() {
            let Destination { edge, .. } = table.destinations[h];
            if edge == NO_EDGE || table.row_base[edge as usize] == SINGLE_PORT {
                continue;
            }
            // One hop from its host: the ports whose peer is the host itself.
            let host = topo.hosts[h];
            set.clear();
            for (local, &(peer, _)) in adjacency[edge as usize].iter().enumerate() {
                if peer == host {
                    set.push(local as u16);
                }
            }
            table.destinations[h].edge_set = id_of(&mut table, &set);
        }
        table
    }

    /// Local ports of `node` on shortest paths to host `dst`; empty if unreachable.
    #[inline]
    pub fn next_hops(&self, node: u32, dst: u32) -> &[u16] {
        let base = self.row_base[node as usize];
        if base == SINGLE_PORT {
            return &[0];
        }
        let Some(d) = self.destinations.get(dst as usize) else {
            return &[];
        };
        let id = if node == d.edge {
            d.edge_set
        } else {
            self.row_set[base as usize * self.num_classes as usize + d.class as usize]
        } as usize;
        &self.ports[self.set_start[id] as usize..][..self.set_len[id] as usize]
    }

    /// How many distinct next-hop sets the table holds (the empty set included).
    pub fn distinct_sets(&self) -> usize {
        self.set_len.len()
    }

    /// How many destination classes its rows are kept for (racks, and hosts with
    /// several links).
    pub fn destination_classes(&self) -> usize {
        self.num_classes as usize
    }
}

/// Picks one of `choices` for `pkt` under `policy`; `salt` is the switch's ECMP salt and
/// `rng` its spraying stream.
#[inline]
pub fn choose(
    policy: RoutingPolicy,
    choices: &[u16],
    pkt: &PacketHeader,
    salt: u64,
    rng: &mut Rng,
) -> u16 {
    if choices.len() == 1 {
        return choices[0];
    }
    let n = choices.len() as u64;
    let index = match policy {
        RoutingPolicy::Ecmp => reduce(mix64(pkt.five_tuple_key() ^ salt), n),
        // Salted per switch like ECMP, so host pairs spread over every path rather than
        // all switches making the same choice for the same pair.
        RoutingPolicy::SinglePath => {
            reduce(mix64(((pkt.src as u64) << 32 | pkt.dst as u64) ^ salt), n)
        }
        RoutingPolicy::Spray => rng.below(n),
    };
    choices[index as usize]
}

/// Maps a uniform 64-bit hash onto [0, n) without a division.
#[inline]
pub fn reduce(hash: u64, n: u64) -> u64 {
    ((hash as u128 * n as u128) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builders::{leaf_spine, ring};
    use crate::topology::LinkSpec;

    const L: LinkSpec = LinkSpec {
        rate: 10_000_000_000,
        delay: 1_000_000,
    };

    #[test]
    fn leaf_spine_has_one_downlink_and_all_uplinks() {
        let t = leaf_spine(4, 2, 3, L, L).unwrap();
        let routes = RouteTable::shortest_paths(&t);
        let leaf0 = t.node_index("leaf0").unwrap();
        // Hosts 0..3 hang off leaf0 on ports 0..3, spines on ports 3..7.
        assert_eq!(routes.next_hops(leaf0, 1), &[1]);
        assert_eq!(routes.next_hops(leaf0, 4), &[3, 4, 5, 6]);
        let spine0 = 0;
        assert_eq!(routes.next_hops(spine0, 4), &[1]);
        // Sets are of local port numbers, so both leaves and both spines share them: the
        // empty set, the downlinks {0}, {1}, {2}, and the uplinks {3, 4, 5, 6}.
        assert_eq!(routes.distinct_sets(), 5);
    }

    /// The sets the definition gives, host by host (what the table held per host before
    /// hosts of a rack shared rows).
    fn per_host_sets(topo: &Topology) -> Vec<Vec<Vec<u16>>> {
        let adjacency = topo.adjacency();
        topo.hosts
            .iter()
            .map(|&target| {
                let dist = topo.hop_distances(&adjacency, target);
                (0..topo.nodes.len())
                    .map(|node| {
                        if adjacency[node].len() == 1 {
                            return vec![0];
                        }
                        if dist[node] == u32::MAX || node as u32 == target {
                            return vec![];
                        }
                        (0..adjacency[node].len() as u16)
                            .filter(|&local| {
                                let peer = adjacency[node][local as usize].0;
                                let relays = peer == target
                                    || topo.nodes[peer as usize].kind == NodeKind::Switch;
                                relays && dist[peer as usize].wrapping_add(1) == dist[node]
                            })
                            .collect()
                    })
                    .collect()
            })
            .collect()
    }

    fn assert_matches_per_host(topo: &Topology) -> RouteTable {
        let routes = RouteTable::shortest_paths(topo);
        for (h, rows) in per_host_sets(topo).iter().enumerate() {
            for (node, set) in rows.iter().enumerate() {
                assert_eq!(routes.next_hops(node as u32, h as u32), set.as_slice());
            }
        }
        routes
    }

    #[test]
    fn a_racks_hosts_share_rows_and_get_the_sets_each_host_would() {
        use crate::topology::builders::{fat_tree, mesh};
        // 4 spines, 2 leaves of 3 hosts: a class per leaf.
        let t = leaf_spine(4, 2, 3, L, L).unwrap();
        assert_eq!(assert_matches_per_host(&t).destination_classes(), 2);
        let t = fat_tree(4, L, L).unwrap();
        assert_eq!(assert_matches_per_host(&t).destination_classes(), 8);
        assert_matches_per_host(&ring(5, 2, L, L).unwrap());
        assert_matches_per_host(&mesh(4, 3, L, L).unwrap());
        // A host with two links (to two leaves) is a class of its own; a host cabled
        // straight to another host is reached only from it; a lone switch stub has one port.
        let mut t = leaf_spine(3, 2, 2, L, L).unwrap();
        let (leaf0, leaf1) = (
            t.node_index("leaf0").unwrap(),
            t.node_index("leaf1").unwrap(),
        );
        let dual = t.add_host("dual");
        t.connect(dual, leaf0, L);
        t.connect(dual, leaf1, L);
        let behind = t.add_host("behind");
        t.connect(behind, dual, L);
        let stub = t.add_switch("stub", "edge");
        t.connect(stub, leaf1, L);
        assert_eq!(assert_matches_per_host(&t).destination_classes(), 2 + 2);
    }

    #[test]
    fn even_ring_has_two_equal_paths_to_the_opposite_switch() {
        let t = ring(4, 1, L, L).unwrap();
        let routes = RouteTable::shortest_paths(&t);
        // s0's ports: host (0), s1 (1), s3 (2). Host 2 sits on s2, two hops either way.
        assert_eq!(routes.next_hops(0, 2), &[1, 2]);
        assert_eq!(routes.next_hops(0, 1), &[1]);
    }
}
