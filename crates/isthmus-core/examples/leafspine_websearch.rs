//! The reference benchmark in pure Rust, for profiling the engine without Python:
//!
//!     cargo run --release -p isthmus-core --example leafspine_websearch -- \
//!         python/isthmus/data/bench/leafspine-websearch-medium.flows.csv 4 8 16
//!
//! Arguments: the flow list, then spines, leaves and hosts per leaf. Prints finished
//! flows, events, packet-hops and wall-clock time of the run.

use isthmus_core::queue::QueueConfig;
use isthmus_core::topology::builders::leaf_spine;
use isthmus_core::units::{SEC, US};
use isthmus_core::{Dctcp, Engine, EngineConfig, Limit, LinkSpec, TcpConfig};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: leafspine_websearch FLOWS.csv SPINES LEAVES HOSTS_PER_LEAF";
    let [_, path, spines, leaves, hosts] = args.as_slice() else {
        panic!("{usage}")
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
    let started = Instant::now();
    let finished = engine.run_until_flows_finish(SEC);
    let wall = started.elapsed().as_secs_f64();
    println!(
        "all finished: {finished}; events {}; packet-hops {}; wall {wall:.3} s; {:.2} M events/s",
        engine.events_processed(),
        engine.packet_hops(),
        engine.events_processed() as f64 / wall / 1e6
    );
}
