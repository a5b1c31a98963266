//! Whole-engine checks against physics and queueing theory.

use isthmus_core::flowtable::{FlowAction, FlowMatch, Forward};
use isthmus_core::queue::{AqmConfig, QueueConfig, Rank, SchedulerConfig};
use isthmus_core::rng::{Rng, Stream};
use isthmus_core::topology::builders::leaf_spine;
use isthmus_core::units::{serialization_time, MS, SEC, US};
use isthmus_core::{
    Arrivals, Engine, EngineConfig, Limit, LinkSpec, NodeKind, RoutingPolicy, Topology, UdpFlowSpec,
};

const G: u64 = 1_000_000_000;

fn link(gbps: u64, delay: u64) -> LinkSpec {
    LinkSpec {
        rate: gbps * G,
        delay,
    }
}

fn udp(rate: u64, size: u64, start: u64, stop: u64, arrivals: Arrivals) -> UdpFlowSpec {
    UdpFlowSpec {
        rate,
        packet_size: 1500,
        arrivals,
        size,
        start,
        stop,
    }
}

/// h0 - s - h1, every link `gbps`.
fn dumbbell(gbps: u64) -> Topology {
    let nodes = vec![
        ("h0".to_string(), NodeKind::Host),
        ("h1".to_string(), NodeKind::Host),
        ("s".to_string(), NodeKind::Switch),
    ];
    let links = vec![
        ("h0".into(), "s".into(), link(gbps, US)),
        ("s".into(), "h1".into(), link(gbps, US)),
    ];
    Topology::custom(&nodes, &links).unwrap()
}

#[test]
fn one_packet_crosses_a_leaf_spine_in_serialisation_plus_propagation() {
    let topo = leaf_spine(2, 2, 1, link(10, US), link(40, US)).unwrap();
    let mut e = Engine::new(topo, EngineConfig::default(), 1);
    e.add_udp_flow(0, 1, udp(G, 1472, 0, SEC, Arrivals::Constant))
        .unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let expected =
        2 * serialization_time(1500, 10 * G) + 2 * serialization_time(1500, 40 * G) + 4 * US;
    let record = e.flows().next().unwrap();
    assert_eq!(record.last_delivery, Some(expected));
    assert_eq!(expected, 7_000_000);
}

fn md1_mean_wait(load: f64, packets: u64) -> (f64, f64) {
    let rate = 10 * G;
    let config = EngineConfig {
        host_queue: QueueConfig::drop_tail(Limit::Packets(1 << 30)),
        ..Default::default()
    };
    let mut e = Engine::new(dumbbell(10), config, 42);
    let offered = (load * rate as f64) as u64;
    let stop = packets * serialization_time(1500, offered);
    e.add_udp_flow(0, 1, udp(offered, 0, 0, stop, Arrivals::Poisson))
        .unwrap();
    e.run_until(stop + MS);
    let nic = e.ports.iter().find(|p| p.node == 0).unwrap();
    let measured = nic.counters.wait_ps as f64 / nic.counters.tx_packets as f64;
    let service = serialization_time(1500, rate) as f64;
    let theory = load * service / (2.0 * (1.0 - load));
    (measured, theory)
}

/// P(W <= x service times) in an M/D/1 queue at load `rho` (Erlang's formula; its
/// alternating sum stays exact in f64 for the x below 30 asked here).
fn md1_wait_cdf(x: f64, rho: f64) -> f64 {
    let mut sum = 0.0;
    let mut factorial = 1.0;
    for k in 0..=x.floor() as i32 {
        if k > 0 {
            factorial *= k as f64;
        }
        let u = rho * (k as f64 - x);
        sum += u.powi(k) / factorial * (-u).exp();
    }
    (1.0 - rho) * sum
}

#[test]
fn poisson_source_into_a_link_waits_p99_as_md1_predicts() {
    let rate = 10 * G;
    let service = serialization_time(1500, rate) as f64;
    for load in [0.5, 0.8] {
        let config = EngineConfig {
            host_queue: QueueConfig::drop_tail(Limit::Packets(1 << 30)),
            ..Default::default()
        };
        let mut e = Engine::new(dumbbell(10), config, 7);
        let offered = (load * rate as f64) as u64;
        let stop = 1_000_000 * serialization_time(1500, offered);
        e.add_udp_flow(0, 1, udp(offered, 0, 0, stop, Arrivals::Poisson))
            .unwrap();
        e.run_until(stop + MS);
        let nics = e.waits(true);
        let nic_packets: u64 = e
            .ports
            .iter()
            .filter(|p| e.topology().nodes[p.node as usize].kind == NodeKind::Host)
            .map(|p| p.counters.tx_packets)
            .sum();
        assert_eq!(
            nics.total(),
            nic_packets,
            "one count per packet leaving a NIC"
        );
        // Downstream links run at the same rate, so nothing waits at a switch.
        assert_eq!(e.waits(false).quantile(1.0), Some(0.0));
        let (mut lo, mut hi) = (0.0, 30.0);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if md1_wait_cdf(mid, load) < 0.99 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let theory = lo * service;
        let measured = nics.quantile(0.99).unwrap();
        let error = (measured - theory).abs() / theory;
        assert!(
            error < 0.05,
            "load {load}: p99 wait {measured:.0} ps vs M/D/1 {theory:.0} ps ({:.2}%)",
            error * 100.0
        );
    }
}

#[test]
fn poisson_source_into_a_link_waits_as_md1_predicts() {
    for load in [0.5, 0.8] {
        let (measured, theory) = md1_mean_wait(load, 2_000_000);
        let error = (measured - theory).abs() / theory;
        assert!(
            error < 0.02,
            "load {load}: mean wait {measured:.0} ps vs M/D/1 {theory:.0} ps ({:.2}%)",
            error * 100.0
        );
    }
}

/// A random connected graph: a random spanning tree of switches plus extra links, 1-3
/// hosts per switch, random rates and delays.
fn random_topology(rng: &mut Rng) -> Topology {
    let switches = 3 + rng.below(6) as usize;
    let rates = [1, 10, 25, 40];
    let mut nodes = Vec::new();
    let mut links = Vec::new();
    let random_link = |rng: &mut Rng| link(rates[rng.below(4) as usize], rng.below(5 * US));
    for s in 0..switches {
        nodes.push((format!("s{s}"), NodeKind::Switch));
        if s > 0 {
            let parent = rng.below(s as u64);
            links.push((format!("s{s}"), format!("s{parent}"), random_link(rng)));
        }
    }
    for _ in 0..rng.below(switches as u64) {
        let (a, b) = (rng.below(switches as u64), rng.below(switches as u64));
        if a != b {
            links.push((format!("s{a}"), format!("s{b}"), random_link(rng)));
        }
    }
    let mut hosts = 0;
    for s in 0..switches {
        for _ in 0..1 + rng.below(3) {
            nodes.push((format!("h{hosts}"), NodeKind::Host));
            links.push((format!("h{hosts}"), format!("s{s}"), random_link(rng)));
            hosts += 1;
        }
    }
    Topology::custom(&nodes, &links).unwrap()
}

/// Any scheduler with any AQM, so that audits cover every way a queue can drop, mark,
/// push out or reorder packets.
fn random_queueing(rng: &mut Rng) -> QueueConfig {
    let limit = Limit::Bytes(15_000 + rng.below(60_000));
    let scheduler = match rng.below(6) {
        0 => SchedulerConfig::Fifo,
        1 => SchedulerConfig::StrictPriority { classes: 3 },
        2 => SchedulerConfig::Drr {
            quanta: vec![1500, 3000],
        },
        3 => SchedulerConfig::Wfq {
            weights: vec![1, 3],
        },
        4 => SchedulerConfig::Fq { quantum: 1514 },
        _ => SchedulerConfig::Pifo {
            rank: [Rank::Arrival, Rank::RemainingSize, Rank::StartTime][rng.below(3) as usize]
                .clone(),
        },
    };
    let aqm = match rng.below(5) {
        0 => AqmConfig::DropTail,
        1 => AqmConfig::Red {
            min: Limit::Packets(5),
            max: Limit::Packets(15),
            max_p: 0.2,
            weight: 0.2,
            gentle: true,
            ecn: false,
            hard_drop: true,
            wait: false,
        },
        2 => AqmConfig::step(Limit::Packets(5)),
        3 => AqmConfig::CoDel {
            target: 20 * US,
            interval: 200 * US,
            ecn: false,
        },
        _ => AqmConfig::Pie {
            target: 20 * US,
            t_update: 50 * US,
            alpha: 0.125,
            beta: 1.25,
            max_burst: 100 * US,
            ecn: false,
        },
    };
    QueueConfig {
        limit,
        scheduler,
        aqm,
        class_aqm: Vec::new(),
        // Sometimes a device FIFO below the discipline, as ns-3's point-to-point has.
        device_queue: [0, 0, 3, 100][rng.below(4) as usize],
    }
}

fn random_engine(seed: u64, sample_interval: Option<u64>) -> Engine {
    random_engine_seeded(seed, seed, sample_interval)
}

/// Topology and flows drawn from `layout`; the engine itself seeded with `seed`.
fn random_engine_seeded(layout: u64, seed: u64, sample_interval: Option<u64>) -> Engine {
    let mut rng = Rng::stream(layout, Stream::Workload, 999);
    let topo = random_topology(&mut rng);
    let hosts = topo.num_hosts() as u64;
    let config = EngineConfig {
        host_queue: QueueConfig::drop_tail(Limit::Packets(8 + rng.below(30))),
        switch_queue: random_queueing(&mut rng),
        routing: [
            RoutingPolicy::Ecmp,
            RoutingPolicy::Spray,
            RoutingPolicy::SinglePath,
        ][rng.below(3) as usize],
        sample_interval,
        shared_buffer: None,
        pfc: None,
        bcn: None,
        ttl: isthmus_core::engine::DEFAULT_TTL,
    };
    let mut e = Engine::new(topo, config, seed);
    for _ in 0..3 * hosts {
        let src = rng.below(hosts) as u32;
        let dst = ((src as u64 + 1 + rng.below(hosts - 1)) % hosts) as u32;
        let arrivals = if rng.below(2) == 0 {
            Arrivals::Constant
        } else {
            Arrivals::Poisson
        };
        let start = rng.below(MS);
        let spec = UdpFlowSpec {
            rate: (1 + rng.below(20)) * G,
            packet_size: 64 + rng.below(1437) as u32,
            arrivals,
            size: rng.below(2) * (1 + rng.below(3_000_000)),
            start,
            stop: start + 1 + rng.below(3 * MS),
        };
        e.add_udp_flow(src, dst, spec).unwrap();
    }
    e
}

#[test]
fn bytes_and_packets_are_conserved_on_random_topologies() {
    for seed in 0..25 {
        let mut e = random_engine(seed, None);
        let mut drops_seen = 0;
        for step in 1..=12 {
            e.run_until(step * 400 * US);
            let (mut sent, mut delivered, mut flow_drops) = (0u64, 0u64, 0u64);
            let (mut sent_bytes, mut delivered_bytes) = (0u64, 0u64);
            for f in e.flows() {
                sent += f.packets_sent;
                delivered += f.packets_delivered;
                flow_drops += f.packets_dropped;
                sent_bytes += f.bytes_sent + 28 * f.packets_sent;
                delivered_bytes += f.bytes_delivered + 28 * f.packets_delivered;
            }
            let port_drops: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
            let drop_bytes: u64 = e.ports.iter().map(|p| p.counters.drop_bytes).sum();
            let unroutable: u64 = e.nodes.iter().map(|n| n.unroutable).sum();
            let in_flight = e.audit_in_flight();
            assert_eq!(
                unroutable, 0,
                "seed {seed}: packets lost for want of a route"
            );
            assert_eq!(flow_drops, port_drops, "seed {seed}");
            assert_eq!(
                sent,
                delivered + port_drops + in_flight.packets,
                "seed {seed} step {step}"
            );
            assert_eq!(
                sent_bytes,
                delivered_bytes + drop_bytes + in_flight.bytes,
                "seed {seed} step {step}"
            );
            assert_eq!(in_flight.packets as usize, e.live_packets(), "seed {seed}");
            drops_seen += port_drops;
        }
        assert!(
            drops_seen > 0,
            "seed {seed}: the queues were meant to overflow"
        );
        assert!(
            e.run_until_flows_finish(SEC),
            "seed {seed}: flows never finished"
        );
        assert_eq!(e.live_packets(), 0);
    }
}

#[test]
fn no_link_carries_more_than_its_rate() {
    for seed in 0..10 {
        let interval = 5 * US;
        let mut e = random_engine(100 + seed, Some(interval));
        e.run_until(4 * MS);
        let s = e.sampler().unwrap();
        let n = s.num_ports;
        let mut busiest = 0.0f64;
        for (i, port) in e.ports.iter().enumerate() {
            assert!(
                port.counters.busy_ps <= e.now(),
                "port {i} busy longer than the run"
            );
            // Bytes are counted when serialisation starts, so one packet may stick out.
            let capacity = (port.rate as u128 * interval as u128 / (8 * SEC) as u128) as u64 + 1500;
            let mut previous = 0;
            for row in 0..s.times.len() {
                let sent = s.tx_bytes[row * n + i] - previous;
                previous = s.tx_bytes[row * n + i];
                assert!(
                    sent <= capacity,
                    "seed {seed} port {i}: {sent} B in {interval} ps, capacity {capacity} B"
                );
                busiest = busiest.max(sent as f64 / (capacity - 1500) as f64);
            }
        }
        assert!(
            busiest > 0.9,
            "seed {seed}: no link was ever near saturation ({busiest:.2}), the check is vacuous"
        );
    }
}

/// Chi-square statistic of `counts` against a uniform spread.
fn chi_square(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    let expected = total as f64 / counts.len() as f64;
    counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

/// Packets leaving leaf0 on each spine uplink, with `flows` one-packet flows from leaf0's
/// hosts to leaf1's.
fn uplink_counts(policy: RoutingPolicy, seed: u64, flows: u64, packets_per_flow: u64) -> Vec<u64> {
    let spines = 8;
    let topo = leaf_spine(spines, 2, 16, link(10, US), link(40, US)).unwrap();
    let config = EngineConfig {
        routing: policy,
        host_queue: QueueConfig::drop_tail(Limit::Packets(1 << 20)),
        ..Default::default()
    };
    let mut e = Engine::new(topo, config, seed);
    let mut rng = Rng::stream(seed, Stream::Workload, 0);
    for _ in 0..flows {
        let (src, dst) = (rng.below(16) as u32, 16 + rng.below(16) as u32);
        let size = 1472 * packets_per_flow;
        e.add_udp_flow(
            src,
            dst,
            udp(G, size, rng.below(MS), SEC, Arrivals::Constant),
        )
        .unwrap();
    }
    assert!(e.run_until_flows_finish(SEC));
    let leaf0 = e.topology().node_index("leaf0").unwrap();
    e.ports
        .iter()
        .filter(|p| p.node == leaf0 && p.local >= 16)
        .map(|p| p.counters.tx_packets)
        .collect()
}

#[test]
fn ecmp_spreads_flows_evenly_across_equal_paths() {
    // Chi-square with 7 degrees of freedom: P(X > 24.32) = 0.001 under uniformity.
    for seed in 0..5 {
        let counts = uplink_counts(RoutingPolicy::Ecmp, seed, 4000, 1);
        assert_eq!(counts.iter().sum::<u64>(), 4000);
        let stat = chi_square(&counts);
        assert!(stat < 24.32, "seed {seed}: {counts:?} chi2 = {stat:.1}");
    }
    // A single flow is never split by ECMP but is by spraying.
    let one_flow = uplink_counts(RoutingPolicy::Ecmp, 1, 1, 400);
    assert_eq!(
        one_flow.iter().filter(|&&c| c > 0).count(),
        1,
        "{one_flow:?}"
    );
    let sprayed = uplink_counts(RoutingPolicy::Spray, 1, 1, 4000);
    assert!(chi_square(&sprayed) < 24.32, "{sprayed:?}");
}

#[test]
fn same_seed_is_bit_identical_and_seeds_differ() {
    let fingerprint = |seed: u64| {
        let mut e = random_engine_seeded(7, seed, Some(50 * US));
        e.run_until(3 * MS);
        let flows: Vec<_> = e.flows().map(|f| format!("{f:?}")).collect();
        let ports: Vec<_> = e
            .ports
            .iter()
            .map(|p| format!("{:?}", p.counters))
            .collect();
        let series = e.sampler().unwrap().queue_bytes.clone();
        (flows, ports, series, e.events_processed())
    };
    assert_eq!(fingerprint(7), fingerprint(7));
    assert_ne!(fingerprint(7).0, fingerprint(8).0);
}

#[test]
fn flow_entries_override_default_routing() {
    let topo = leaf_spine(4, 2, 2, link(10, US), link(40, US)).unwrap();
    let mut e = Engine::new(topo, EngineConfig::default(), 3);
    let leaf0 = e.topology().node_index("leaf0").unwrap();
    // leaf0: ports 0-1 hosts, 2-5 spines. Pin traffic to host 2 on spine 3 (port 5).
    let to = |dst| FlowMatch {
        dst: Some(dst),
        ..Default::default()
    };
    e.add_entry(0, leaf0, 10, to(2), FlowAction::forward(Forward::Output(5)))
        .unwrap();
    e.add_entry(0, leaf0, 10, to(3), FlowAction::forward(Forward::Drop))
        .unwrap();
    for src in 0..2 {
        for _ in 0..50 {
            e.add_udp_flow(src, 2, udp(G, 1472, 0, SEC, Arrivals::Constant))
                .unwrap();
            e.add_udp_flow(src, 3, udp(G, 1472, 0, SEC, Arrivals::Constant))
                .unwrap();
        }
    }
    assert!(e.run_until_flows_finish(SEC));
    let uplinks: Vec<u64> = e
        .ports
        .iter()
        .filter(|p| p.node == leaf0 && p.local >= 2)
        .map(|p| p.counters.tx_packets)
        .collect();
    assert_eq!(uplinks, vec![0, 0, 0, 100]);
    assert_eq!(e.nodes[leaf0 as usize].rule_drops, 100);
    let err = e
        .add_entry(
            0,
            leaf0,
            1,
            FlowMatch::default(),
            FlowAction::forward(Forward::Output(9)),
        )
        .unwrap_err();
    assert!(err.contains("port 9") && err.contains("leaf0"), "{err}");
}

/// A device FIFO of 100 packets below a 50-packet drop-tail discipline: the port holds
/// 150 packets before it drops, and the discipline's limit counts only its own 50.
#[test]
fn a_device_queue_holds_packets_below_the_discipline() {
    use isthmus_core::topology::builders::leaf_spine;
    use isthmus_core::{Arrivals, UdpFlowSpec};
    for (device, most) in [(0u32, 50u64), (100, 150)] {
        let link = LinkSpec {
            rate: 10_000_000_000,
            delay: US,
        };
        let config = EngineConfig {
            switch_queue: QueueConfig {
                device_queue: device,
                ..QueueConfig::drop_tail(Limit::Packets(50))
            },
            ..Default::default()
        };
        let mut e = Engine::new(leaf_spine(1, 2, 2, link, link).unwrap(), config, 1);
        // Two 10 Gb/s senders into one 10 Gb/s host for 2 ms.
        for src in [1, 2] {
            let spec = UdpFlowSpec {
                rate: 10_000_000_000,
                packet_size: 1500,
                arrivals: Arrivals::Constant,
                size: 0,
                start: 0,
                stop: 2_000_000_000,
            };
            e.add_udp_flow(src, 0, spec).unwrap();
        }
        e.run_until(3_000_000_000);
        let most_queued = e
            .ports
            .iter()
            .map(|p| p.counters.max_queue_packets)
            .max()
            .unwrap();
        assert_eq!(most_queued, most, "device queue {device}");
        let dropped: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
        assert!(dropped > 0, "the port still drops beyond both");
    }
}
