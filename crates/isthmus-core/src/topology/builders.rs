//! Builders for the datacenter topologies the literature uses. Every builder numbers
//! hosts in rack order (host h sits on the h / hosts_per_rack-th rack) and adds each
//! switch's host-facing links before its uplinks, so port numbers are predictable.

use super::{check_size, LinkSpec, Topology, TopologyError};

fn wide(values: &[usize]) -> Vec<u128> {
    values.iter().map(|&v| v as u128).collect()
}

fn positive(name: &str, value: usize) -> Result<(), TopologyError> {
    if value == 0 {
        return Err(TopologyError(format!("{name} must be at least 1, got 0")));
    }
    Ok(())
}

fn add_racks(topo: &mut Topology, tors: &[u32], hosts_per_tor: usize, host_link: LinkSpec) {
    for &tor in tors {
        for _ in 0..hosts_per_tor {
            let h = topo.add_host(format!("h{}", topo.hosts.len()));
            topo.connect(h, tor, host_link);
        }
    }
}

/// Two-tier Clos: every leaf connects to every spine.
pub fn leaf_spine(
    spines: usize,
    leaves: usize,
    hosts_per_leaf: usize,
    host_link: LinkSpec,
    fabric_link: LinkSpec,
) -> Result<Topology, TopologyError> {
    positive("spines", spines)?;
    positive("leaves", leaves)?;
    positive("hosts_per_leaf", hosts_per_leaf)?;
    let [s, l, h] = wide(&[spines, leaves, hosts_per_leaf])[..] else {
        unreachable!()
    };
    check_size("this leaf-spine", s + l + l * h, l * h + l * s)?;
    let mut topo = Topology::default();
    let spine_ids: Vec<u32> = (0..spines)
        .map(|i| topo.add_switch(format!("spine{i}"), "spine"))
        .collect();
    let leaf_ids: Vec<u32> = (0..leaves)
        .map(|i| topo.add_switch(format!("leaf{i}"), "leaf"))
        .collect();
    add_racks(&mut topo, &leaf_ids, hosts_per_leaf, host_link);
    for &leaf in &leaf_ids {
        for &spine in &spine_ids {
            topo.connect(leaf, spine, fabric_link);
        }
    }
    topo.validate()?;
    Ok(topo)
}

/// The k-ary fat-tree of Al-Fares et al. (SIGCOMM 2008): k pods of k/2 edge and k/2
/// aggregation switches, (k/2)^2 cores, k^3/4 hosts.
pub fn fat_tree(
    k: usize,
    host_link: LinkSpec,
    fabric_link: LinkSpec,
) -> Result<Topology, TopologyError> {
    if k < 2 || !k.is_multiple_of(2) {
        return Err(TopologyError(format!(
            "fat_tree k must be an even number >= 2, got {k}"
        )));
    }
    let kk = k as u128;
    let cube = kk.saturating_mul(kk).saturating_mul(kk);
    check_size(
        "this fat-tree",
        (cube / 4).saturating_add(kk.saturating_mul(kk).saturating_mul(5) / 4),
        (cube / 4).saturating_mul(3),
    )?;
    let half = k / 2;
    let mut topo = Topology::default();
    let cores: Vec<u32> = (0..half * half)
        .map(|i| topo.add_switch(format!("core{i}"), "core"))
        .collect();
    let mut edges = Vec::new();
    let mut aggs = Vec::new();
    for pod in 0..k {
        for i in 0..half {
            aggs.push(topo.add_switch(format!("agg{pod}_{i}"), "agg"));
        }
        for i in 0..half {
            edges.push(topo.add_switch(format!("edge{pod}_{i}"), "edge"));
        }
    }
    add_racks(&mut topo, &edges, half, host_link);
    for pod in 0..k {
        for e in 0..half {
            for a in 0..half {
                topo.connect(edges[pod * half + e], aggs[pod * half + a], fabric_link);
            }
        }
    }
    for pod in 0..k {
        for a in 0..half {
            for j in 0..half {
                topo.connect(aggs[pod * half + a], cores[a * half + j], fabric_link);
            }
        }
    }
    topo.validate()?;
    Ok(topo)
}

/// Classic core / aggregation / edge tree: each edge switch connects to every
/// aggregation switch and each aggregation switch to every core. IBCN's layout is
/// `three_tier(1, 2, 5, 10, ..)`.
pub fn three_tier(
    cores: usize,
    aggs: usize,
    edges: usize,
    hosts_per_edge: usize,
    host_link: LinkSpec,
    fabric_link: LinkSpec,
    core_link: LinkSpec,
) -> Result<Topology, TopologyError> {
    positive("cores", cores)?;
    positive("aggs", aggs)?;
    positive("edges", edges)?;
    positive("hosts_per_edge", hosts_per_edge)?;
    let [c, a, e, h] = wide(&[cores, aggs, edges, hosts_per_edge])[..] else {
        unreachable!()
    };
    check_size(
        "this three-tier tree",
        c + a + e + e * h,
        e * h + e * a + a * c,
    )?;
    let mut topo = Topology::default();
    let core_ids: Vec<u32> = (0..cores)
        .map(|i| topo.add_switch(format!("core{i}"), "core"))
        .collect();
    let agg_ids: Vec<u32> = (0..aggs)
        .map(|i| topo.add_switch(format!("agg{i}"), "agg"))
        .collect();
    let edge_ids: Vec<u32> = (0..edges)
        .map(|i| topo.add_switch(format!("edge{i}"), "edge"))
        .collect();
    add_racks(&mut topo, &edge_ids, hosts_per_edge, host_link);
    for &e in &edge_ids {
        for &a in &agg_ids {
            topo.connect(e, a, fabric_link);
        }
    }
    for &a in &agg_ids {
        for &c in &core_ids {
            topo.connect(a, c, core_link);
        }
    }
    topo.validate()?;
    Ok(topo)
}

/// VL2 (Greenberg et al., SIGCOMM 2009): D_A/2 intermediate switches, D_I aggregation
/// switches, D_A·D_I/4 ToRs each dual-homed to two aggregation switches.
pub fn vl2(
    d_a: usize,
    d_i: usize,
    hosts_per_tor: usize,
    host_link: LinkSpec,
    fabric_link: LinkSpec,
) -> Result<Topology, TopologyError> {
    if d_a < 2 || !d_a.is_multiple_of(2) {
        return Err(TopologyError(format!(
            "vl2 d_a (aggregation switch degree) must be even and >= 2, got {d_a}"
        )));
    }
    if d_i < 2 || !d_i.is_multiple_of(2) {
        return Err(TopologyError(format!(
            "vl2 d_i (intermediate switch degree) must be even and >= 2, got {d_i}"
        )));
    }
    positive("hosts_per_tor", hosts_per_tor)?;
    let [da, di, h] = wide(&[d_a, d_i, hosts_per_tor])[..] else {
        unreachable!()
    };
    let tors = da * di / 4;
    let hosts = tors.saturating_mul(h);
    check_size(
        "this VL2",
        hosts.saturating_add(da / 2 + di + tors),
        hosts.saturating_add(2 * tors + di * da / 2),
    )?;
    let mut topo = Topology::default();
    let ints: Vec<u32> = (0..d_a / 2)
        .map(|i| topo.add_switch(format!("int{i}"), "intermediate"))
        .collect();
    let aggs: Vec<u32> = (0..d_i)
        .map(|i| topo.add_switch(format!("agg{i}"), "agg"))
        .collect();
    let tors: Vec<u32> = (0..d_a * d_i / 4)
        .map(|i| topo.add_switch(format!("tor{i}"), "tor"))
        .collect();
    add_racks(&mut topo, &tors, hosts_per_tor, host_link);
    for (t, &tor) in tors.iter().enumerate() {
        topo.connect(tor, aggs[(2 * t) % d_i], fabric_link);
        topo.connect(tor, aggs[(2 * t + 1) % d_i], fabric_link);
    }
    for &a in &aggs {
        for &i in &ints {
            topo.connect(a, i, fabric_link);
        }
    }
    topo.validate()?;
    Ok(topo)
}

/// `n` switches in a cycle, each with `hosts_per_switch` hosts.
pub fn ring(
    n: usize,
    hosts_per_switch: usize,
    host_link: LinkSpec,
    fabric_link: LinkSpec,
) -> Result<Topology, TopologyError> {
    if n < 3 {
        return Err(TopologyError(format!(
            "ring needs at least 3 switches, got {n}"
        )));
    }
    positive("hosts_per_switch", hosts_per_switch)?;
    let [nn, h] = wide(&[n, hosts_per_switch])[..] else {
        unreachable!()
    };
    check_size("this ring", nn + nn * h, nn * h + nn)?;
    let mut topo = Topology::default();
    let sw: Vec<u32> = (0..n)
        .map(|i| topo.add_switch(format!("s{i}"), "switch"))
        .collect();
    add_racks(&mut topo, &sw, hosts_per_switch, host_link);
    for i in 0..n {
        topo.connect(sw[i], sw[(i + 1) % n], fabric_link);
    }
    topo.validate()?;
    Ok(topo)
}

/// `n` switches, every pair directly connected, each with `hosts_per_switch` hosts.
pub fn mesh(
    n: usize,
    hosts_per_switch: usize,
    host_link: LinkSpec,
    fabric_link: LinkSpec,
) -> Result<Topology, TopologyError> {
    if n < 2 {
        return Err(TopologyError(format!(
            "mesh needs at least 2 switches, got {n}"
        )));
    }
    positive("hosts_per_switch", hosts_per_switch)?;
    let [nn, h] = wide(&[n, hosts_per_switch])[..] else {
        unreachable!()
    };
    check_size("this mesh", nn + nn * h, nn * h + nn * (nn - 1) / 2)?;
    let mut topo = Topology::default();
    let sw: Vec<u32> = (0..n)
        .map(|i| topo.add_switch(format!("s{i}"), "switch"))
        .collect();
    add_racks(&mut topo, &sw, hosts_per_switch, host_link);
    for i in 0..n {
        for j in i + 1..n {
            topo.connect(sw[i], sw[j], fabric_link);
        }
    }
    topo.validate()?;
    Ok(topo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::NodeKind;

    const L: LinkSpec = LinkSpec {
        rate: 10_000_000_000,
        delay: 1_000_000,
    };

    fn count(t: &Topology, kind: NodeKind) -> usize {
        t.nodes.iter().filter(|n| n.kind == kind).count()
    }

    #[test]
    fn sizes_match_their_definitions() {
        let t = leaf_spine(4, 8, 16, L, L).unwrap();
        assert_eq!(
            (t.num_hosts(), count(&t, NodeKind::Switch), t.links.len()),
            (128, 12, 128 + 32)
        );
        let t = fat_tree(4, L, L).unwrap();
        assert_eq!(
            (t.num_hosts(), count(&t, NodeKind::Switch), t.links.len()),
            (16, 20, 48)
        );
        let t = three_tier(1, 2, 5, 10, L, L, L).unwrap();
        assert_eq!(
            (t.num_hosts(), count(&t, NodeKind::Switch), t.links.len()),
            (50, 8, 50 + 10 + 2)
        );
        let t = vl2(4, 4, 20, L, L).unwrap();
        assert_eq!(
            (t.num_hosts(), count(&t, NodeKind::Switch)),
            (80, 2 + 4 + 4)
        );
        let t = ring(5, 2, L, L).unwrap();
        assert_eq!((t.num_hosts(), t.links.len()), (10, 15));
        let t = mesh(4, 1, L, L).unwrap();
        assert_eq!((t.num_hosts(), t.links.len()), (4, 4 + 6));
    }

    #[test]
    fn leaf_spine_places_host_h_on_leaf_h_div_h() {
        let t = leaf_spine(2, 4, 8, L, L).unwrap();
        for (addr, &node) in t.hosts.iter().enumerate() {
            let link = t.links.iter().find(|l| l.a == node).unwrap();
            assert_eq!(t.nodes[link.b as usize].name, format!("leaf{}", addr / 8));
        }
    }

    #[test]
    fn every_vl2_aggregation_switch_gets_the_same_number_of_tors() {
        let t = vl2(8, 6, 1, L, L).unwrap();
        let adj = t.adjacency();
        for (i, n) in t.nodes.iter().enumerate() {
            if n.role == "agg" {
                let tors = adj[i]
                    .iter()
                    .filter(|(m, _)| t.nodes[*m as usize].role == "tor")
                    .count();
                assert_eq!(tors, 4, "{}", n.name);
            }
        }
    }

    #[test]
    fn bad_shapes_are_refused_with_the_parameter_named() {
        assert!(fat_tree(3, L, L)
            .unwrap_err()
            .0
            .contains("k must be an even"));
        assert!(leaf_spine(0, 2, 2, L, L).unwrap_err().0.contains("spines"));
        assert!(ring(2, 1, L, L).unwrap_err().0.contains("at least 3"));
    }

    #[test]
    fn disconnected_custom_topology_is_refused() {
        let nodes = vec![
            ("a".to_string(), NodeKind::Host),
            ("b".to_string(), NodeKind::Host),
            ("s1".to_string(), NodeKind::Switch),
            ("s2".to_string(), NodeKind::Switch),
        ];
        let links = vec![("a".into(), "s1".into(), L), ("b".into(), "s2".into(), L)];
        let e = Topology::custom(&nodes, &links).unwrap_err().0;
        assert!(e.contains("not connected"), "{e}");
        let links = vec![("a".into(), "s9".into(), L)];
        let e = Topology::custom(&nodes, &links).unwrap_err().0;
        assert!(e.contains("links[0]") && e.contains("'s9'"), "{e}");
    }

    #[test]
    fn hosts_do_not_relay() {
        // a - s1 - b - s2 - c: b is a host, so c cannot be reached from a.
        let nodes: Vec<(String, NodeKind)> = [
            ("a", NodeKind::Host),
            ("s1", NodeKind::Switch),
            ("b", NodeKind::Host),
            ("s2", NodeKind::Switch),
            ("c", NodeKind::Host),
        ]
        .iter()
        .map(|(n, k)| (n.to_string(), *k))
        .collect();
        let links = vec![
            ("a".into(), "s1".into(), L),
            ("s1".into(), "b".into(), L),
            ("b".into(), "s2".into(), L),
            ("s2".into(), "c".into(), L),
        ];
        assert!(Topology::custom(&nodes, &links).is_err());
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    const L: LinkSpec = LinkSpec {
        rate: 1_000_000_000,
        delay: 1_000_000,
    };

    #[test]
    fn networks_beyond_the_limits_are_refused_before_anything_is_built() {
        let cases = [
            leaf_spine(2, usize::MAX / 2, 2, L, L),
            fat_tree(1000, L, L),
            fat_tree(usize::MAX - 1, L, L),
            three_tier(1, 2, 1 << 40, 10, L, L, L),
            vl2(1 << 40, 1 << 40, 1 << 40, L, L),
            ring(1 << 50, 1, L, L),
            mesh(100_000, 1, L, L),
        ];
        for case in cases {
            let err = case.unwrap_err().0;
            assert!(err.contains("the engine builds at most"), "{err}");
        }
        // A switch with more ports than 16-bit port numbers allow.
        let err = leaf_spine(1, 1, 70_000, L, L).unwrap_err().0;
        assert!(err.contains("ports; a node has at most"), "{err}");
    }
}
