//! The reference benchmark in pure Rust, for profiling the engine without Python:
//!
//!     cargo run --release -p isthmus-core --example leafspine_websearch -- \
//!         python/isthmus/data/bench/leafspine-websearch-medium.flows.csv 4 8 16
//!
//! Arguments: the flow list, then spines, leaves and hosts per leaf. Prints finished
//! flows, events, packet-hops, wall-clock time of the run, and a digest of every flow's
//! record (FCT, bytes, packets, retransmissions, delay sums): an optimisation that keeps
//! the results bit-identical keeps the digest.
//!
//! With `--phases MS` after them it runs in steps of MS simulated milliseconds and
//! prints, before the summary, a line per step: the cost per packet-hop in that step
//! beside the packets alive and the flows open at its end (what the cost depends on;
//! only the steps' runs are timed, and the results stay the same).

use isthmus_core::queue::QueueConfig;
use isthmus_core::topology::builders::leaf_spine;
use isthmus_core::units::{Time, MS, SEC, US};
use isthmus_core::{Dctcp, Engine, EngineConfig, Limit, LinkSpec, TcpConfig};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: leafspine_websearch FLOWS.csv SPINES LEAVES HOSTS_PER_LEAF [--phases MS]";
    let (path, spines, leaves, hosts, phase) = match args.as_slice() {
        [_, path, spines, leaves, hosts] => (path, spines, leaves, hosts, None),
        [_, path, spines, leaves, hosts, flag, ms] if flag == "--phases" => {
            let ms: u64 = ms.parse().expect(usage);
            assert!(ms > 0, "--phases needs a step of at least 1 ms");
            (path, spines, leaves, hosts, Some(ms * MS))
        }
        _ => panic!("{usage}"),
    };
    let n = |s: &String| s.parse::<usize>().expect(usage);
    let host = LinkSpec {
        rate: 10_000_000_000,
        delay: US,
    };
    let fabric = LinkSpec {
        rate: 40_000_000_000,
        delay: US,
    };
    let topo = leaf_spine(n(spines), n(leaves), n(hosts), host, fabric).unwrap();
    let config = EngineConfig {
        switch_queue: QueueConfig::step_marking(Limit::Packets(250), Limit::Packets(65)),
        host_queue: QueueConfig::step_marking(Limit::Packets(250), Limit::Packets(65)),
        ..Default::default()
    };
    let mut engine = Engine::new(topo, config, 1);
    let tcp = TcpConfig {
        dctcp: Some(Dctcp::default()),
        ..Default::default()
    };
    let text = std::fs::read_to_string(path).expect("flow list");
    for line in text.lines().skip(1) {
        let v: Vec<u64> = line
            .split(',')
            .map(|f| f.trim().parse().expect("a number"))
            .collect();
        engine
            .add_tcp_flow(v[1] as u32, v[2] as u32, v[3], v[4], &tcp)
            .unwrap();
    }
    let (finished, wall) = match phase {
        None => {
            let started = Instant::now();
            let finished = engine.run_until_flows_finish(SEC);
            (finished, started.elapsed().as_secs_f64())
        }
        Some(step) => run_in_phases(&mut engine, step),
    };
    println!(
        "all finished: {finished}; events {}; packet-hops {}; wall {wall:.3} s; {:.2} M events/s; {:.1} ns per packet-hop; records {:016x}",
        engine.events_processed(),
        engine.packet_hops(),
        engine.events_processed() as f64 / wall / 1e6,
        wall * 1e9 / engine.packet_hops() as f64,
        records_digest(&engine)
    );
}

/// Runs to the same end as `run_until_flows_finish(SEC)` in steps of `step`, printing each
/// step's cost per packet-hop and the live state at its end; returns (all finished,
/// seconds spent running).
fn run_in_phases(engine: &mut Engine, step: Time) -> (bool, f64) {
    let mut wall = 0.0;
    let mut until = 0;
    while engine.unfinished_flows() > 0 && until < SEC {
        until = (until + step).min(SEC);
        let hops_before = engine.packet_hops();
        let started = Instant::now();
        engine.run_until_flows_finish(until);
        let spent = started.elapsed().as_secs_f64();
        wall += spent;
        let hops = engine.packet_hops() - hops_before;
        let open = engine
            .flows()
            .filter(|r| r.start <= until && r.finish.is_none())
            .count();
        println!(
            "phase until_ms {}; packet-hops {hops}; ns per packet-hop {:.1}; live packets {}; open flows {open}",
            until / MS,
            spent * 1e9 / hops.max(1) as f64,
            engine.live_packets(),
        );
    }
    (engine.unfinished_flows() == 0, wall)
}

/// FNV-1a over every flow record's outcome, in flow order.
fn records_digest(engine: &Engine) -> u64 {
    let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
    for r in engine.flows() {
        for v in [
            r.start,
            r.first_delivery.unwrap_or(u64::MAX),
            r.last_delivery.unwrap_or(u64::MAX),
            r.finish.unwrap_or(u64::MAX),
            r.bytes_delivered,
            r.bytes_received,
            r.packets_sent,
            r.packets_dropped,
            r.retransmissions,
            r.timeouts,
            r.out_of_order,
            r.delay_sum_ps,
        ] {
            for byte in v.to_le_bytes() {
                digest = (digest ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    digest
}
