//! MPTCP with LIA against the three goals of RFC 6356 and the fat-tree result of
//! Raiciu et al. (SIGCOMM 2011): use every path, take no more than one TCP on a shared
//! bottleneck, and fill a fat-tree that single-path TCP with ECMP leaves half empty.

use isthmus_core::flowtable::{FlowAction, FlowMatch, Forward};
use isthmus_core::queue::{AqmConfig, QueueConfig, SchedulerConfig};
use isthmus_core::topology::builders::fat_tree;
use isthmus_core::units::{MS, US};
use isthmus_core::{Engine, EngineConfig, Limit, LinkSpec, NodeKind, TcpConfig, Topology};

const G: u64 = 1_000_000_000;
const BIG: u64 = 10_000_000_000;

fn link(rate: u64) -> LinkSpec {
    LinkSpec { rate, delay: US }
}

fn config() -> EngineConfig {
    EngineConfig {
        host_queue: QueueConfig::drop_tail(Limit::Packets(10_000)),
        switch_queue: QueueConfig::drop_tail(Limit::Packets(100)),
        ..Default::default()
    }
}

/// Sender and receiver on 40 Gb/s access links, joined by `paths` disjoint 10 Gb/s
/// paths through one middle switch each.
fn parallel_paths(paths: usize) -> Topology {
    let mut nodes: Vec<(String, NodeKind)> = vec![
        ("a".into(), NodeKind::Host),
        ("b".into(), NodeKind::Host),
        ("sa".into(), NodeKind::Switch),
        ("sb".into(), NodeKind::Switch),
    ];
    let mut links = vec![
        ("a".to_string(), "sa".to_string(), link(40 * G)),
        ("b".to_string(), "sb".to_string(), link(40 * G)),
    ];
    for p in 0..paths {
        nodes.push((format!("m{p}"), NodeKind::Switch));
        links.push(("sa".into(), format!("m{p}"), link(10 * G)));
        links.push((format!("m{p}"), "sb".into(), link(10 * G)));
    }
    Topology::custom(&nodes, &links).unwrap()
}

fn gbps(bytes: u64, window: u64) -> f64 {
    bytes as f64 * 8.0 / (window as f64 / 1e12) / 1e9
}

fn delivered_between(e: &mut Engine, from: u64, to: u64) -> Vec<u64> {
    e.run_until(from);
    let before: Vec<u64> = e.flows().map(|f| f.bytes_delivered).collect();
    e.run_until(to);
    e.flows()
        .zip(before)
        .map(|(f, b)| f.bytes_delivered - b)
        .collect()
}

#[test]
fn mptcp_aggregates_two_disjoint_paths_that_single_tcp_cannot() {
    let tcp = TcpConfig::default();
    let mut single = Engine::new(parallel_paths(2), config(), 3);
    single.add_tcp_flow(0, 1, BIG, 0, &tcp).unwrap();
    let single_rate = gbps(delivered_between(&mut single, 25 * MS, 45 * MS)[0], 20 * MS);

    let mut multi = Engine::new(parallel_paths(2), config(), 3);
    multi.add_mptcp_flow(0, 1, BIG, 0, 8, &tcp).unwrap();
    let multi_rate = gbps(delivered_between(&mut multi, 25 * MS, 45 * MS)[0], 20 * MS);

    assert!(
        single_rate <= 10.0,
        "one TCP path is 10 Gb/s: {single_rate:.2}"
    );
    assert!(
        multi_rate > 0.95 * 20.0 * 1460.0 / 1500.0 && multi_rate <= 20.0,
        "8 subflows over two 10 Gb/s paths: {multi_rate:.2} Gb/s"
    );
}

#[test]
fn two_subflows_pinned_to_two_disjoint_paths_use_both() {
    // What a path-aware controller does: match each subflow's source port (subflow i
    // uses the connection's port + 1000·i) at the first switch and send it down its own
    // path. sa's ports: 0 to a, 1 to m0, 2 to m1.
    let mut e = Engine::new(parallel_paths(2), config(), 3);
    let id = e
        .add_mptcp_flow(0, 1, BIG, 0, 2, &TcpConfig::default())
        .unwrap();
    let base = 1024 + id as u16;
    let sa = e.topology().node_index("sa").unwrap();
    for (subflow, port) in [(0u16, 1u16), (1, 2)] {
        let matcher = FlowMatch {
            src_port: Some(base + 1000 * subflow),
            ..Default::default()
        };
        let action = FlowAction::forward(Forward::Output(port));
        e.add_entry(0, sa, 10, matcher, action).unwrap();
    }
    let rate = gbps(delivered_between(&mut e, 25 * MS, 45 * MS)[0], 20 * MS);
    assert!(
        rate > 0.95 * 20.0 * 1460.0 / 1500.0 && rate <= 20.0,
        "2 subflows on two 10 Gb/s paths: {rate:.2} Gb/s"
    );
}

#[test]
fn coupled_mptcp_takes_about_one_tcp_share_of_a_shared_bottleneck() {
    // Two senders behind one 10 Gb/s bottleneck: a 4-subflow MPTCP connection and a
    // TCP flow. Four uncoupled TCPs would take 80%; LIA should take about half. RFC
    // 6356's design assumes every packet sees the same loss probability, which RED
    // gives; drop-tail instead drops mostly the fastest-probing flow's packets, the
    // single TCP here, and hands MPTCP more (docs/transports.md).
    let nodes: Vec<(String, NodeKind)> = vec![
        ("m".into(), NodeKind::Host),
        ("t".into(), NodeKind::Host),
        ("rx".into(), NodeKind::Host),
        ("s".into(), NodeKind::Switch),
    ];
    let links = vec![
        ("m".to_string(), "s".to_string(), link(40 * G)),
        ("t".to_string(), "s".to_string(), link(40 * G)),
        ("s".to_string(), "rx".to_string(), link(10 * G)),
    ];
    let red = EngineConfig {
        switch_queue: QueueConfig {
            limit: Limit::Packets(300),
            scheduler: SchedulerConfig::Fifo,
            aqm: AqmConfig::Red {
                min: Limit::Packets(20),
                max: Limit::Packets(200),
                max_p: 0.1,
                weight: 0.002,
                gentle: true,
                ecn: false,
                hard_drop: true,
                wait: false,
            },
            class_aqm: Vec::new(),
            device_queue: 0,
        },
        ..config()
    };
    let mut e = Engine::new(Topology::custom(&nodes, &links).unwrap(), red, 5);
    let tcp = TcpConfig::default();
    e.add_mptcp_flow(0, 2, BIG, 0, 4, &tcp).unwrap();
    e.add_tcp_flow(1, 2, BIG, 0, &tcp).unwrap();
    let got = delivered_between(&mut e, 20 * MS, 120 * MS);
    let share = got[0] as f64 / (got[0] + got[1]) as f64;
    let total = gbps(got[0] + got[1], 100 * MS);
    assert!(
        (0.35..=0.65).contains(&share),
        "MPTCP share {share:.2} of a bottleneck shared with one TCP"
    );
    assert!(
        total > 9.0 && total <= 10.0,
        "bottleneck carries {total:.2} Gb/s"
    );
}

#[test]
fn mptcp_fills_a_fat_tree_permutation_better_than_tcp_with_ecmp() {
    // k = 4 fat-tree, every host sends to the host 8 places on (another pod): a
    // permutation the fabric has full bisection for. Hash collisions cost single-path
    // TCP much of it; 8 subflows per host spread over the paths.
    let run = |subflows: Option<u8>| -> f64 {
        let topo = fat_tree(4, link(10 * G), link(10 * G)).unwrap();
        let mut e = Engine::new(topo, config(), 11);
        let tcp = TcpConfig::default();
        for h in 0..16u32 {
            let dst = (h + 8) % 16;
            match subflows {
                Some(n) => e.add_mptcp_flow(h, dst, BIG, 0, n, &tcp).unwrap(),
                None => e.add_tcp_flow(h, dst, BIG, 0, &tcp).unwrap(),
            };
        }
        let got = delivered_between(&mut e, 25 * MS, 45 * MS);
        gbps(got.iter().sum(), 20 * MS)
    };
    let tcp = run(None);
    let mptcp = run(Some(8));
    assert!(tcp <= 160.0 && mptcp <= 160.0, "16 hosts × 10 Gb/s");
    assert!(
        mptcp > 0.8 * 160.0 && mptcp > 1.2 * tcp,
        "MPTCP {mptcp:.1} Gb/s vs TCP {tcp:.1} Gb/s of 160"
    );
}

#[test]
fn mptcp_completes_a_finite_transfer_through_losses_with_every_byte_once() {
    let mut e = Engine::new(parallel_paths(2), config(), 9);
    let size = 20_000_000;
    e.add_mptcp_flow(0, 1, size, 0, 4, &TcpConfig::default())
        .unwrap();
    e.add_tcp_flow(0, 1, BIG, 0, &TcpConfig::default()).unwrap();
    assert!(!e.run_until_flows_finish(200 * MS));
    let r = e.flows().next().unwrap();
    assert!(r.finish.is_some(), "the MPTCP transfer finished");
    // The competing TCP flow filled the queues: the MPTCP flow lost packets and sent
    // them again (else this test would not be about losses) ...
    assert!(r.packets_dropped > 0, "no loss happened");
    assert!(r.retransmissions > 0);
    // ... the network carried those bytes to the receiver more than once in places,
    // yet the application got every byte exactly once, in order.
    assert!(r.bytes_received > size, "{} received", r.bytes_received);
    assert_eq!(r.bytes_delivered, size);
    assert!(r.bytes_sent > size);
}

#[test]
fn mptcp_rejects_bad_subflow_counts_and_dctcp() {
    let mut e = Engine::new(parallel_paths(2), config(), 1);
    let tcp = TcpConfig::default();
    let err = e.add_mptcp_flow(0, 1, 1000, 0, 0, &tcp).unwrap_err();
    assert!(err.contains("subflows"), "{err}");
    let err = e.add_mptcp_flow(0, 1, 1000, 0, 17, &tcp).unwrap_err();
    assert!(err.contains("subflows"), "{err}");
    let dctcp = TcpConfig {
        dctcp: Some(Default::default()),
        ..tcp
    };
    let err = e.add_mptcp_flow(0, 1, 1000, 0, 2, &dctcp).unwrap_err();
    assert!(err.contains("dctcp"), "{err}");
}
