//! Engine throughput on the reference benchmark's medium leaf-spine (4 spines, 8 leaves,
//! 16 hosts per leaf; 10 Gb/s hosts, 40 Gb/s fabric, 1 us links) under a permutation of
//! Poisson UDP flows at 60% of the access rate, for 50 ms of simulated time (or
//! STOP_MS milliseconds).
//!
//!     cargo run --release -p isthmus-core --example udp_leafspine
//!
//! It prints packets sent and delivered (about 2.5% are lost where ECMP hashes too many
//! 6 Gb/s flows onto one 40 Gb/s uplink), events and packet-hops, and their rates per
//! wall-clock second: about 8.6 M events/s on one core of the 2-core development machine.

use isthmus_core::topology::builders::leaf_spine;
use isthmus_core::units::{MS, US};
use isthmus_core::{Arrivals, Engine, EngineConfig, LinkSpec, UdpFlowSpec};
use std::time::Instant;

fn main() {
    let host = LinkSpec {
        rate: 10_000_000_000,
        delay: US,
    };
    let fabric = LinkSpec {
        rate: 40_000_000_000,
        delay: US,
    };
    let topo = leaf_spine(4, 8, 16, host, fabric).unwrap();
    let hosts = topo.num_hosts() as u32;
    let mut engine = Engine::new(topo, EngineConfig::default(), 1);
    let stop: u64 = std::env::var("STOP_MS").map_or(50, |v| v.parse().unwrap()) * MS;
    for src in 0..hosts {
        // A fixed derangement: each host sends to the host 37 places on (other leaves).
        let dst = (src + 37) % hosts;
        let spec = UdpFlowSpec {
            rate: 6_000_000_000,
            packet_size: 1500,
            arrivals: Arrivals::Poisson,
            size: 0,
            start: 0,
            stop,
        };
        engine.add_udp_flow(src, dst, spec).unwrap();
    }
    let started = Instant::now();
    let finished = engine.run_until_flows_finish(stop + MS);
    let wall = started.elapsed().as_secs_f64();
    let (sent, delivered) = engine.flows().fold((0, 0), |(s, d), f| {
        (s + f.packets_sent, d + f.packets_delivered)
    });
    println!("finished: {finished}, packets sent {sent}, delivered {delivered}");
    println!(
        "events {} in {wall:.3} s: {:.2} M events/s, {:.2} M packet-hops/s",
        engine.events_processed(),
        engine.events_processed() as f64 / wall / 1e6,
        engine.packet_hops() as f64 / wall / 1e6
    );
}
