//! Splitting a network into partitions that run side by side (see `parallel.rs`): each
//! node belongs to one partition, which runs every event at that node.
//!
//! Hosts stay with the switch they hang off, so a flow's packets cross a partition
//! boundary only in the fabric. Those edge switches go to partitions in contiguous
//! blocks of about equal host counts (a leaf group, a pod), in node order, which is the
//! builders' rack and pod order. Every other switch joins the partition most of its
//! already placed neighbours are in, nearest the hosts first (an aggregation switch
//! joins its pod); where its neighbours are spread evenly (a spine, a core switch) it
//! joins the partition that has the fewest switches of its tier so far, so the fabric's
//! top spreads across partitions as evenly as the traffic through it.
//!
//! The lookahead is the shortest propagation delay of a link between two partitions:
//! nothing one partition does can reach another sooner, so each may run that far ahead
//! of the others without waiting. A link of zero delay between partitions leaves no
//! lookahead and the plan is refused.

use crate::topology::{NodeKind, Topology};
use crate::units::Time;
use std::collections::VecDeque;

/// The most partitions a run may have (the owner of a node is kept in 16 bits).
pub const MAX_PARTITIONS: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partitioning {
    /// Partitions, 1 or more.
    pub parts: usize,
    /// The partition of each node.
    pub owner: Vec<u16>,
    /// The shortest propagation delay of a link between two partitions (`Time::MAX`
    /// when no link crosses).
    pub lookahead: Time,
    /// Links whose ends lie in different partitions.
    pub cross_links: usize,
}

impl Partitioning {
    /// Everything in one partition: the sequential engine.
    pub fn single(topology: &Topology) -> Partitioning {
        Partitioning {
            parts: 1,
            owner: vec![0; topology.nodes.len()],
            lookahead: Time::MAX,
            cross_links: 0,
        }
    }

    /// Splits `topology` into `parts` partitions (see the module's comment), or says why
    /// it cannot be split so.
    pub fn plan(topology: &Topology, parts: usize) -> Result<Partitioning, String> {
        if parts == 0 || parts > MAX_PARTITIONS {
            return Err(format!(
                "partitions must be between 1 and {MAX_PARTITIONS}, got {parts}"
            ));
        }
        if parts == 1 {
            return Ok(Partitioning::single(topology));
        }
        let adjacency = topology.adjacency();
        let is_switch = |n: usize| topology.nodes[n].kind == NodeKind::Switch;
        // Each switch's hosts: a host belongs to the first switch it links to.
        let mut hosts_at = vec![0usize; topology.nodes.len()];
        let mut home = vec![None; topology.nodes.len()];
        for (n, node) in topology.nodes.iter().enumerate() {
            if node.kind == NodeKind::Host {
                if let Some(&(switch, _)) =
                    adjacency[n].iter().find(|(m, _)| is_switch(*m as usize))
                {
                    hosts_at[switch as usize] += 1;
                    home[n] = Some(switch as usize);
                }
            }
        }
        let edges: Vec<usize> = (0..topology.nodes.len())
            .filter(|&n| is_switch(n) && hosts_at[n] > 0)
            .collect();
        if edges.len() < parts {
            return Err(format!(
                "{parts} partitions need at least {parts} switches with hosts to split by, and \
                 this network has {}: choose at most {} partitions",
                edges.len(),
                edges.len().max(1)
            ));
        }
        const UNPLACED: u16 = u16::MAX;
        let mut owner = vec![UNPLACED; topology.nodes.len()];
        // Contiguous blocks of edge switches, about equal in hosts; every partition gets
        // at least one edge switch.
        let total: usize = edges.iter().map(|&e| hosts_at[e]).sum();
        let mut before = 0usize;
        let mut previous = 0usize;
        for (i, &edge) in edges.iter().enumerate() {
            let by_hosts = before * parts / total;
            // No partition skipped, and enough edge switches left for those to come.
            let at_least = (parts + i).saturating_sub(edges.len());
            let part = by_hosts.max(at_least).min(previous + 1).min(parts - 1);
            owner[edge] = part as u16;
            previous = part;
            before += hosts_at[edge];
        }
        // The other switches, tier by tier away from the hosts.
        let mut tier = vec![usize::MAX; topology.nodes.len()];
        let mut queue: VecDeque<usize> = edges.iter().copied().collect();
        for &e in &edges {
            tier[e] = 0;
        }
        let mut order = Vec::new();
        while let Some(n) = queue.pop_front() {
            for &(m, _) in &adjacency[n] {
                let m = m as usize;
                if is_switch(m) && tier[m] == usize::MAX {
                    tier[m] = tier[n] + 1;
                    order.push(m);
                    queue.push_back(m);
                }
            }
        }
        order.sort_by_key(|&n| (tier[n], n));
        let mut placed_in_tier: Vec<Vec<usize>> = Vec::new();
        for n in order {
            let t = tier[n];
            if placed_in_tier.len() <= t {
                placed_in_tier.resize(t + 1, vec![0; parts]);
            }
            let mut votes = vec![0usize; parts];
            for &(m, _) in &adjacency[n] {
                let o = owner[m as usize];
                if o != UNPLACED {
                    votes[o as usize] += 1;
                }
            }
            let most = *votes.iter().max().expect("at least one partition");
            let part = (0..parts)
                .filter(|&p| votes[p] == most)
                .min_by_key(|&p| (placed_in_tier[t][p], p))
                .expect("a partition has the most votes");
            owner[n] = part as u16;
            placed_in_tier[t][part] += 1;
        }
        for (n, node) in topology.nodes.iter().enumerate() {
            if owner[n] == UNPLACED {
                // A host goes with its switch; a switch no host can reach, and a host
                // with no switch, with partition 0.
                owner[n] = match (node.kind, home[n]) {
                    (NodeKind::Host, Some(switch)) => owner[switch],
                    _ => 0,
                };
            }
        }
        let mut lookahead = Time::MAX;
        let mut cross_links = 0;
        for link in &topology.links {
            if owner[link.a as usize] != owner[link.b as usize] {
                cross_links += 1;
                if link.spec.delay == 0 {
                    return Err(format!(
                        "the link {} - {} joins partitions {} and {} with no propagation \
                         delay, which leaves them no lookahead: give it a delay, or run with \
                         fewer partitions",
                        topology.nodes[link.a as usize].name,
                        topology.nodes[link.b as usize].name,
                        owner[link.a as usize],
                        owner[link.b as usize],
                    ));
                }
                lookahead = lookahead.min(link.spec.delay);
            }
        }
        Ok(Partitioning {
            parts,
            owner,
            lookahead,
            cross_links,
        })
    }

    /// Nodes in each partition.
    pub fn sizes(&self) -> Vec<usize> {
        let mut sizes = vec![0; self.parts];
        for &o in &self.owner {
            sizes[o as usize] += 1;
        }
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::builders::{fat_tree, leaf_spine};
    use crate::topology::LinkSpec;
    use crate::units::US;

    fn link(delay: Time) -> LinkSpec {
        LinkSpec {
            rate: 10_000_000_000,
            delay,
        }
    }

    fn owner_of(t: &Topology, p: &Partitioning, name: &str) -> u16 {
        p.owner[t.node_index(name).expect("a node of that name") as usize]
    }

    #[test]
    fn a_leaf_spine_splits_by_leaf_groups_and_spreads_its_spines() {
        let t = leaf_spine(2, 4, 8, link(US), link(US)).expect("a leaf-spine");
        let p = Partitioning::plan(&t, 2).expect("two partitions");
        // Leaves 0-1 and their 16 hosts in one partition, leaves 2-3 in the other.
        assert_eq!(owner_of(&t, &p, "leaf0"), 0);
        assert_eq!(owner_of(&t, &p, "leaf1"), 0);
        assert_eq!(owner_of(&t, &p, "leaf2"), 1);
        assert_eq!(owner_of(&t, &p, "leaf3"), 1);
        for (n, node) in t.nodes.iter().enumerate() {
            if node.kind == NodeKind::Host {
                let (switch, _) = t.adjacency()[n][0];
                assert_eq!(p.owner[n], p.owner[switch as usize], "{}", node.name);
            }
        }
        // One spine each: every leaf reaches both equally.
        assert_ne!(owner_of(&t, &p, "spine0"), owner_of(&t, &p, "spine1"));
        assert_eq!(p.sizes(), vec![19, 19]);
        // Every leaf-spine link crosses but those of each spine to its own leaves.
        assert_eq!(p.cross_links, 4);
        assert_eq!(p.lookahead, US);
    }

    #[test]
    fn a_fat_tree_splits_by_pods_and_spreads_its_cores() {
        let t = fat_tree(4, link(US), link(2 * US)).expect("a k = 4 fat-tree");
        let p = Partitioning::plan(&t, 2).expect("two partitions");
        for (n, node) in t.nodes.iter().enumerate() {
            let pod = node
                .name
                .strip_prefix("edge")
                .or_else(|| node.name.strip_prefix("agg"))
                .and_then(|rest| rest.chars().next())
                .and_then(|c| c.to_digit(10));
            if let Some(pod) = pod {
                assert_eq!(p.owner[n] as u32, pod / 2, "{}", node.name);
            }
        }
        let cores: Vec<u16> = t
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.role == "core")
            .map(|(i, _)| p.owner[i])
            .collect();
        assert_eq!(cores.iter().filter(|&&o| o == 0).count(), cores.len() / 2);
        // Only core links cross, and they are 2 us long.
        assert_eq!(p.lookahead, 2 * US);
    }

    #[test]
    fn a_plan_it_cannot_make_is_refused_with_the_reason() {
        let t = leaf_spine(2, 4, 8, link(US), link(US)).expect("a leaf-spine");
        let too_many = Partitioning::plan(&t, 5).expect_err("only 4 leaves");
        assert!(
            too_many.contains("choose at most 4 partitions"),
            "{too_many}"
        );
        assert!(Partitioning::plan(&t, 0).is_err());
        let instant = leaf_spine(2, 4, 8, link(US), link(0)).expect("a leaf-spine");
        let none = Partitioning::plan(&instant, 2).expect_err("no lookahead");
        assert!(none.contains("no propagation delay"), "{none}");
        // Zero-delay links inside a partition are fine: the host links here.
        let local = leaf_spine(2, 4, 8, link(0), link(US)).expect("a leaf-spine");
        assert_eq!(Partitioning::plan(&local, 4).expect("four").lookahead, US);
        assert_eq!(
            Partitioning::plan(&t, 1).expect("one"),
            Partitioning::single(&t)
        );
    }
}
