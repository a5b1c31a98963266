//! BCN end to end: sources into one bottleneck settle its queue near Qeq, STOP fires
//! above Qsc, and a supplied queue value drives the feedback.

use isthmus_core::queue::QueueConfig;
use isthmus_core::transport::bcn::{BcnPointConfig, BcnSourceConfig};
use isthmus_core::units::{MS, US};
use isthmus_core::{Engine, EngineConfig, Limit, LinkSpec, NodeKind, Topology};

const G: u64 = 1_000_000_000;

fn star(sources: usize, access: u64) -> Engine {
    let mut nodes: Vec<(String, NodeKind)> = (0..sources)
        .map(|i| (format!("h{i}"), NodeKind::Host))
        .collect();
    nodes.push(("rx".into(), NodeKind::Host));
    nodes.push(("s".into(), NodeKind::Switch));
    let mut links: Vec<(String, String, LinkSpec)> = (0..sources)
        .map(|i| {
            (
                format!("h{i}"),
                "s".to_string(),
                LinkSpec {
                    rate: access,
                    delay: US,
                },
            )
        })
        .collect();
    links.push(("s".into(), "rx".into(), LinkSpec { rate: G, delay: US }));
    let config = EngineConfig {
        switch_queue: QueueConfig::drop_tail(Limit::Packets(1000)),
        bcn: Some(BcnPointConfig::default()),
        sample_interval: Some(100 * US),
        ..Default::default()
    };
    Engine::new(Topology::custom(&nodes, &links).unwrap(), config, 3)
}

fn bottleneck_queue(e: &Engine, from: u64) -> Vec<u64> {
    let switch = e.topology().node_index("s").unwrap();
    let rx = e.topology().node_index("rx").unwrap();
    let port = e
        .ports
        .iter()
        .position(|p| p.node == switch && e.ports[p.peer as usize].node == rx)
        .unwrap();
    let s = e.sampler().unwrap();
    (0..s.times.len())
        .filter(|&r| s.times[r] >= from)
        .map(|r| s.queue_packets[r * s.num_ports + port])
        .collect()
}

#[test]
fn ten_sources_settle_the_queue_near_qeq() {
    // Ten 1 Gb/s sources into one 1 Gb/s link. Sampling 1 % of arrivals, feedback reaches
    // each source every ~12 ms, so the backlog of the start takes ~350 ms to clear;
    // measure the second second.
    let sources = 10;
    let mut e = star(sources, G);
    // STOP pauses scaled to this one-second run (the paper's are 200-800 ms).
    let cfg = BcnSourceConfig {
        min_pause: 0,
        max_pause: MS,
        ..BcnSourceConfig::ibcn(G, G / sources as u64)
    };
    for i in 0..sources as u32 {
        e.add_bcn_flow(i, sources as u32, &cfg, 0, 0, 2000 * MS)
            .unwrap();
    }
    e.run_until(1000 * MS);
    let before: u64 = e.flows().map(|f| f.bytes_delivered).sum();
    e.run_until(2000 * MS);
    let queue = bottleneck_queue(&e, 1000 * MS);
    let mean = queue.iter().sum::<u64>() as f64 / queue.len() as f64;
    let mut sorted = queue.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    // Without BCN ten line-rate sources would hold the 1000-packet buffer full; BCN
    // regulates the queue around Qeq, below Qsc, oscillating as its sparse feedback lags.
    assert!(
        (10..=40).contains(&median),
        "median queue {median} packets, Qeq = 20"
    );
    assert!(mean < 90.0, "mean queue {mean:.1} packets reaches Qsc = 90");
    let delivered: u64 = e.flows().map(|f| f.bytes_delivered).sum::<u64>() - before;
    let gbps = delivered as f64 * 8.0 / 1.0 / 1e9;
    assert!(gbps > 0.85, "the bottleneck ran at {gbps:.2} Gb/s");
    let (positive, normal, stop) = e.ports.iter().fold((0, 0, 0), |a, p| {
        (
            a.0 + p.bcn.sent[0],
            a.1 + p.bcn.sent[1],
            a.2 + p.bcn.sent[2],
        )
    });
    assert!(
        positive > 0 && normal > 0 && stop > 0,
        "all three kinds of feedback: {positive} {normal} {stop}"
    );
}

#[test]
fn stop_fires_above_qsc_and_a_supplied_queue_drives_feedback() {
    // Ten 10 Gb/s sources slam a 1 Gb/s port: the queue passes Qsc before feedback bites.
    let mut e = star(10, 10 * G);
    let cfg = BcnSourceConfig::ibcn(10 * G, G / 10);
    for i in 0..10 {
        e.add_bcn_flow(i, 10, &cfg, 0, 0, 20 * MS).unwrap();
    }
    e.run_until(20 * MS);
    let stops: u64 = e.ports.iter().map(|p| p.bcn.sent[2]).sum();
    assert!(stops > 0, "no STOP above Qsc");

    // A constant supplied queue of 50 packets: every sampled arrival gets NORMAL feedback
    // e = -(50 - 20) = -30 after the first, so the source backs off although the queue is
    // empty (and, slowing down, is sampled less and less often).
    let mut e = star(2, G);
    let switch = e.topology().node_index("s").unwrap();
    let rx = e.topology().node_index("rx").unwrap();
    let port = e
        .ports
        .iter()
        .position(|p| p.node == switch && e.ports[p.peer as usize].node == rx)
        .unwrap();
    e.set_bcn_predictions(port as u32, Some(vec![50.0]))
        .unwrap();
    let cfg = BcnSourceConfig::ibcn(G, G / 100);
    e.add_bcn_flow(0, 2, &cfg, 0, 0, 20 * MS).unwrap();
    e.run_until(20 * MS);
    let point = &e.ports[port].bcn;
    assert!(
        point.samples >= 3 && point.sent[1] == point.samples,
        "{:?} of {}",
        point.sent,
        point.samples
    );
    let delivered = e.flows().next().unwrap().bytes_delivered as f64 * 8.0 / 0.02 / 1e9;
    assert!(
        delivered < 0.3,
        "the source ignored the supplied queue ({delivered:.2} Gb/s)"
    );
}
