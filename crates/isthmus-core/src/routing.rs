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

/// Next-hop port sets, each distinct set stored once: row r = row_base[node] · hosts +
/// destination host names set `row_set[r]`, whose ports are
/// `ports[set_start[id] as usize..][..set_len[id] as usize]`. Nodes with one port (hosts)
/// have no rows. A fabric has few distinct sets (a leaf's uplinks serve every remote
/// host), so the set table stays in cache and a lookup misses at most once, on its row;
/// a node's rows are adjacent.
#[derive(Clone)]
pub struct RouteTable {
    row_base: Vec<u32>,
    row_set: Vec<u32>,
    set_start: Vec<u32>,
    set_len: Vec<u16>,
    ports: Vec<u16>,
    num_hosts: u32,
}

const SINGLE_PORT: u32 = u32::MAX;

impl RouteTable {
    /// Local port k of a node is the k-th link touching it, in link order (as the
    /// engine numbers ports).
    pub fn shortest_paths(topo: &Topology) -> RouteTable {
        let adjacency = topo.adjacency();
        let n = topo.nodes.len();
        let num_hosts = topo.num_hosts() as u32;
        let mut row_base = vec![SINGLE_PORT; n];
        let mut routed = Vec::new();
        for (node, adj) in adjacency.iter().enumerate() {
            if adj.len() > 1 {
                row_base[node] = routed.len() as u32;
                routed.push(node);
            }
        }
        let mut table = RouteTable {
            row_base,
            row_set: vec![0; routed.len() * num_hosts as usize],
            set_start: vec![0],
            set_len: vec![0],
            ports: Vec::new(),
            num_hosts,
        };
        // Set 0 is the empty set (unreachable).
        let mut ids: std::collections::HashMap<Vec<u16>, u32> =
            std::collections::HashMap::from([(Vec::new(), 0)]);
        let mut set = Vec::new();
        for (h, &target) in topo.hosts.iter().enumerate() {
            let dist = topo.hop_distances(&adjacency, target);
            for (row, &node) in routed.iter().enumerate() {
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
                let id = *ids.entry(set.clone()).or_insert_with(|| {
                    table.set_start.push(table.ports.len() as u32);
                    table.set_len.push(set.len() as u16);
                    table.ports.extend_from_slice(&set);
                    (table.set_len.len() - 1) as u32
                });
                table.row_set[row * num_hosts as usize + h] = id;
            }
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
        if dst >= self.num_hosts {
            return &[];
        }
        let id = self.row_set[base as usize * self.num_hosts as usize + dst as usize] as usize;
        &self.ports[self.set_start[id] as usize..][..self.set_len[id] as usize]
    }

    /// How many distinct next-hop sets the table holds (the empty set included).
    pub fn distinct_sets(&self) -> usize {
        self.set_len.len()
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

    #[test]
    fn even_ring_has_two_equal_paths_to_the_opposite_switch() {
        let t = ring(4, 1, L, L).unwrap();
        let routes = RouteTable::shortest_paths(&t);
        // s0's ports: host (0), s1 (1), s3 (2). Host 2 sits on s2, two hops either way.
        assert_eq!(routes.next_hops(0, 2), &[1, 2]);
        assert_eq!(routes.next_hops(0, 1), &[1]);
    }
}
