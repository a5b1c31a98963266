//! Partitioned runs: the same results on any number of threads, every byte accounted
//! for, the sequential engine untouched with one partition, and what they cannot do yet
//! refused by name.

use isthmus_core::rng::{Rng, Stream};
use isthmus_core::topology::builders::leaf_spine;
use isthmus_core::units::{MS, SEC, US};
use isthmus_core::{Engine, EngineConfig, LinkSpec, TcpConfig, UdpFlowSpec};

const G: u64 = 1_000_000_000;
const FLOWS: usize = 300;

/// 32 hosts under 4 leaves, 2 spines; `FLOWS` flows between hosts on different leaves,
/// sizes 10 KB to 3 MB, starting in the first 2 ms.
fn network(seed: u64) -> Engine {
    let topology = leaf_spine(
        2,
        4,
        8,
        LinkSpec {
            rate: 10 * G,
            delay: US,
        },
        LinkSpec {
            rate: 20 * G,
            delay: US,
        },
    )
    .expect("a leaf-spine");
    let mut e = Engine::new(topology, EngineConfig::default(), seed);
    let mut rng = Rng::stream(seed, Stream::Flow, 1 << 40);
    let sizes = [10_000, 100_000, 1_000_000, 3_000_000];
    for _ in 0..FLOWS {
        let src = (rng.next_u64() % 32) as u32;
        let other_leaf = (src / 8 + 1 + (rng.next_u64() % 3) as u32) % 4;
        let dst = other_leaf * 8 + (rng.next_u64() % 8) as u32;
        let size = sizes[(rng.next_u64() % 4) as usize];
        let start = rng.next_u64() % (2 * MS);
        e.add_tcp_flow(src, dst, size, start, &TcpConfig::default())
            .expect("a flow");
    }
    e
}

fn partitioned(seed: u64, parts: usize, threads: usize) -> Engine {
    let mut e = network(seed);
    e.set_partitions(parts, threads).expect("a split");
    e
}

/// Everything a run's tables show: each flow's record and each port's counters.
fn fingerprint(e: &mut Engine) -> Vec<u64> {
    e.sync_partitions();
    let mut out = vec![e.events_processed(), e.packet_hops()];
    for r in e.flows() {
        out.extend([
            r.finish.unwrap_or(u64::MAX),
            r.first_delivery.unwrap_or(u64::MAX),
            r.bytes_sent,
            r.bytes_delivered,
            r.packets_sent,
            r.packets_delivered,
            r.packets_dropped,
            r.retransmissions,
            r.delay_sum_ps,
        ]);
    }
    // Each sender's window, from the partition that runs it.
    for f in 0..e.num_flows() as u32 {
        out.push(e.tcp_window(f).expect("a TCP flow").0);
    }
    for p in &e.ports {
        let c = &p.counters;
        out.extend([
            c.tx_packets,
            c.tx_bytes,
            c.drop_packets,
            c.wait_ps,
            c.max_queue_packets,
        ]);
    }
    out
}

#[test]
fn a_partitioned_run_is_the_same_on_any_number_of_threads() {
    let runs: Vec<Vec<u64>> = [1, 2, 4]
        .iter()
        .map(|&threads| {
            let mut e = partitioned(7, 4, threads);
            assert!(e.run_until_flows_finish(SEC));
            fingerprint(&mut e)
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[0], runs[2]);
    // And run to run.
    let mut again = partitioned(7, 4, 4);
    assert!(again.run_until_flows_finish(SEC));
    assert_eq!(fingerprint(&mut again), runs[0]);
}

#[test]
fn every_flow_finishes_and_every_packet_is_accounted_for_in_partitions() {
    let mut e = partitioned(3, 4, 2);
    assert!(e.run_until_flows_finish(SEC));
    e.sync_partitions();
    for r in e.flows() {
        assert_eq!(r.bytes_delivered, r.size, "flow {} -> {}", r.src, r.dst);
        assert!(r.finish.expect("finished") >= r.start + 2 * US);
    }
    // Let the last ACKs land: then every packet sent was delivered or dropped, once,
    // whichever partitions it crossed, and no arena holds one.
    e.run_until(e.now() + 10 * MS);
    e.sync_partitions();
    assert_eq!(e.live_packets(), 0);
    for r in e.flows() {
        assert_eq!(r.packets_sent, r.packets_delivered + r.packets_dropped);
    }
    let tx: u64 = e.ports.iter().map(|p| p.counters.tx_packets).sum();
    assert_eq!(
        tx,
        e.packet_hops(),
        "every hop a transmission, whichever side ran it"
    );
}

#[test]
fn partitions_run_the_same_network_as_the_sequential_engine() {
    let mut whole = network(5);
    assert!(whole.run_until_flows_finish(SEC));
    let mut split = partitioned(5, 4, 2);
    assert!(split.run_until_flows_finish(SEC));
    split.sync_partitions();
    // Only equal-time events across partitions may run in another order: the same
    // flows deliver the same bytes, and completion times agree closely.
    let fct = |e: &Engine| -> f64 {
        e.flows()
            .map(|r| (r.finish.expect("finished") - r.start) as f64)
            .sum::<f64>()
            / FLOWS as f64
    };
    let (a, b) = (fct(&whole), fct(&split));
    assert!(
        (a - b).abs() / a < 0.05,
        "mean FCT {a} ps whole, {b} ps split"
    );
    let delivered = |e: &Engine| e.flows().map(|r| r.bytes_delivered).sum::<u64>();
    assert_eq!(delivered(&whole), delivered(&split));
}

#[test]
fn one_partition_is_the_sequential_engine() {
    let mut plain = network(9);
    assert!(plain.run_until_flows_finish(SEC));
    let mut one = partitioned(9, 1, 8);
    assert!(one.split().is_none());
    assert!(one.run_until_flows_finish(SEC));
    assert_eq!(fingerprint(&mut plain), fingerprint(&mut one));
}

#[test]
fn what_partitions_cannot_do_yet_is_refused_by_name() {
    let mut e = partitioned(1, 2, 2);
    let udp = UdpFlowSpec {
        rate: G,
        packet_size: 1500,
        arrivals: isthmus_core::Arrivals::Constant,
        size: 0,
        start: 0,
        stop: MS,
    };
    e.add_udp_flow(0, 20, udp).expect("a UDP flow");
    let why = e
        .start_partitions()
        .expect_err("UDP is not partitioned yet");
    assert!(why.contains("a UDP flow (flow 300)"), "{why}");
    let mut ran = network(1);
    ran.run_until(MS);
    let late = ran.set_partitions(2, 2).expect_err("after a run");
    assert!(late.contains("before the first run"), "{late}");
    let many = network(1).set_partitions(5, 1).expect_err("only 4 leaves");
    assert!(many.contains("choose at most 4 partitions"), "{many}");
}
