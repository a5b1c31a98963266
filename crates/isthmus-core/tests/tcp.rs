//! TCP NewReno and DCTCP against what their specifications and theory promise.

use isthmus_core::queue::QueueConfig;
use isthmus_core::units::{serialization_time, MS, SEC, US};
use isthmus_core::{
    Dctcp, Engine, EngineConfig, Limit, LinkSpec, NodeKind, TcpConfig, TimedFlowSpec, Topology,
};

const G: u64 = 1_000_000_000;

/// `senders` hosts on a switch, sending to one receiver behind a `bottleneck` link.
fn star(senders: usize, access: u64, bottleneck: u64) -> Topology {
    let mut nodes: Vec<(String, NodeKind)> = (0..senders)
        .map(|i| (format!("h{i}"), NodeKind::Host))
        .collect();
    nodes.push(("rx".into(), NodeKind::Host));
    nodes.push(("s".into(), NodeKind::Switch));
    let mut links: Vec<(String, String, LinkSpec)> = (0..senders)
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
    links.push((
        "s".into(),
        "rx".into(),
        LinkSpec {
            rate: bottleneck,
            delay: US,
        },
    ));
    Topology::custom(&nodes, &links).unwrap()
}

fn goodput_fraction(e: &Engine, flow: usize, rate: u64, mss: u64) -> f64 {
    let r = e.flows().nth(flow).unwrap();
    let fct = (r.finish.unwrap() - r.start) as f64 / SEC as f64;
    let link_goodput = rate as f64 * mss as f64 / (mss + 40) as f64;
    r.size as f64 * 8.0 / fct / link_goodput
}

#[test]
fn one_flow_fills_its_bottleneck() {
    for (access, bottleneck) in [(10 * G, 10 * G), (10 * G, G)] {
        let mut e = Engine::new(star(1, access, bottleneck), EngineConfig::default(), 1);
        let size = bottleneck / 8 / 20; // 50 ms at the bottleneck rate
        e.add_tcp_flow(0, 1, size, 0, &TcpConfig::default())
            .unwrap();
        assert!(e.run_until_flows_finish(SEC));
        let fraction = goodput_fraction(&e, 0, bottleneck, 1460);
        assert!(
            fraction >= 0.95,
            "{access}->{bottleneck}: goodput {fraction:.3} of the link's"
        );
        assert_eq!(e.flows().next().unwrap().bytes_delivered, size);
    }
}

#[test]
fn slow_start_losses_are_repaired_by_fast_retransmit() {
    let config = EngineConfig {
        switch_queue: QueueConfig::drop_tail(Limit::Packets(30)),
        ..Default::default()
    };
    let mut e = Engine::new(star(1, 10 * G, G), config, 2);
    e.add_tcp_flow(0, 1, 3_000_000, 0, &TcpConfig::default())
        .unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let r = e.flows().next().unwrap();
    let drops: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
    assert!(drops > 0, "slow start never overflowed the queue");
    assert!(
        r.retransmissions >= drops,
        "{} retransmissions for {drops} drops",
        r.retransmissions
    );
    assert_eq!(r.timeouts, 0, "a loss waited for the retransmission timer");
    assert_eq!(r.bytes_delivered, 3_000_000);
}

#[test]
fn sequence_numbers_wrap() {
    for isn in [u32::MAX - 5000, u32::MAX, 0] {
        let mut e = Engine::new(star(1, 10 * G, 10 * G), EngineConfig::default(), 3);
        let cfg = TcpConfig {
            isn: Some(isn),
            ..Default::default()
        };
        e.add_tcp_flow(0, 1, 2_000_000, 0, &cfg).unwrap();
        assert!(e.run_until_flows_finish(SEC), "isn {isn}");
        assert_eq!(e.flows().next().unwrap().bytes_delivered, 2_000_000);
    }
}

fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    sum * sum / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

#[test]
fn dctcp_flows_share_fairly_and_hold_the_queue_near_k() {
    let k = 65;
    let n = 4;
    let config = EngineConfig {
        switch_queue: QueueConfig::step_marking(Limit::Packets(250), Limit::Packets(k)),
        sample_interval: Some(10 * US),
        ..Default::default()
    };
    let mut e = Engine::new(star(n, 10 * G, 10 * G), config, 4);
    let cfg = TcpConfig {
        dctcp: Some(Dctcp::default()),
        ..Default::default()
    };
    for i in 0..n as u32 {
        e.add_tcp_flow(i, n as u32, 10_000_000_000, 0, &cfg)
            .unwrap();
    }
    // Let the flows converge, then measure over 200 ms.
    e.run_until(50 * MS);
    let before: Vec<u64> = e.flows().map(|f| f.bytes_delivered).collect();
    e.run_until(250 * MS);
    let shares: Vec<f64> = e
        .flows()
        .zip(&before)
        .map(|(f, b)| (f.bytes_delivered - b) as f64)
        .collect();
    let total_gbps = shares.iter().sum::<f64>() * 8.0 / 0.2 / 1e9;
    assert!(
        jain(&shares) >= 0.99,
        "Jain {:.4} for {shares:?}",
        jain(&shares)
    );
    assert!(total_gbps > 9.5, "aggregate goodput {total_gbps:.2} Gb/s");
    let drops: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
    assert_eq!(drops, 0, "DCTCP overflowed a 250-packet queue");
    let switch = e.topology().node_index("s").unwrap();
    let port = e
        .ports
        .iter()
        .position(|p| {
            p.node == switch && p.rate == 10 * G && e.ports[p.peer as usize].node == n as u32
        })
        .unwrap();
    let s = e.sampler().unwrap();
    let queue: Vec<u64> = (0..s.times.len())
        .filter(|&row| s.times[row] > 50 * MS)
        .map(|row| s.queue_packets[row * s.num_ports + port])
        .collect();
    let mean = queue.iter().sum::<u64>() as f64 / queue.len() as f64;
    let max = *queue.iter().max().unwrap();
    assert!(
        (mean - k as f64).abs() <= 8.0,
        "mean queue {mean:.1} packets vs K = {k}"
    );
    assert!(max <= k + 15, "queue peaked at {max} packets, K = {k}");
}

#[test]
fn a_cut_path_is_recovered_by_timeouts_that_back_off() {
    let mut e = Engine::new(star(1, 10 * G, 10 * G), EngineConfig::default(), 5);
    e.add_tcp_flow(0, 1, 20_000_000, 0, &TcpConfig::default())
        .unwrap();
    e.run_until(2 * MS);
    let delivered_at_cut = e.flows().next().unwrap().bytes_delivered;
    let link = 1; // s - rx
    e.set_link_up(link, false).unwrap();
    e.run_until(52 * MS);
    let during_outage = e.flows().next().unwrap().bytes_delivered - delivered_at_cut;
    assert!(
        during_outage < 100_000,
        "{during_outage} B crossed a cut link"
    );
    e.set_link_up(link, true).unwrap();
    // RTO 5 ms doubling: retries ~7, 17, 37, 77 ms; only the one after 52 ms gets through.
    e.run_until(70 * MS);
    let r = e.flows().next().unwrap();
    assert!(
        r.bytes_delivered - delivered_at_cut < 2_000_000,
        "recovered before the backed-off timer fired"
    );
    assert!(e.run_until_flows_finish(SEC));
    let r = e.flows().next().unwrap();
    assert_eq!(
        r.timeouts, 4,
        "timeouts during a 50 ms outage with a 5 ms RTO that doubles"
    );
    let ideal = serialization_time(1500, 10 * G) * (20_000_000 / 1460);
    assert!(r.finish.unwrap() > 77 * MS && r.finish.unwrap() < 77 * MS + 2 * ideal);
}

#[test]
fn base_rtt_of_the_reference_leaf_spine_is_11_08_us() {
    let host = LinkSpec {
        rate: 10 * G,
        delay: US,
    };
    let fabric = LinkSpec {
        rate: 40 * G,
        delay: US,
    };
    let topo = isthmus_core::topology::builders::leaf_spine(2, 4, 8, host, fabric).unwrap();
    let e = Engine::new(topo, EngineConfig::default(), 1);
    assert_eq!(e.base_rtt(0, 31, 1500, 40).unwrap(), 11_080_000);
    assert_eq!(
        e.base_rtt(0, 1, 1500, 40).unwrap(),
        2 * 1_200_000 + 2 * 32_000 + 4 * US
    );
}

#[test]
fn delayed_acks_halve_the_ack_count_and_the_timer_flushes_the_tail() {
    let segments = 1000u64;
    let mut acks = Vec::new();
    // A NIC queue longer than the receive window: no losses, so every packet is counted once.
    let lossless = EngineConfig {
        host_queue: QueueConfig::drop_tail(Limit::Packets(10_000)),
        ..Default::default()
    };
    for ack_every in [1, 2] {
        let mut e = Engine::new(star(1, 10 * G, 10 * G), lossless.clone(), 6);
        let cfg = TcpConfig {
            ack_every,
            ..Default::default()
        };
        e.add_tcp_flow(0, 1, segments * 1460, 0, &cfg).unwrap();
        assert!(e.run_until_flows_finish(SEC));
        let r = e.flows().next().unwrap();
        assert_eq!(r.retransmissions, 0);
        // Everything sent: SYN, SYN-ACK, the data segments, and the ACKs.
        acks.push(r.packets_sent - 2 - segments);
    }
    assert_eq!(acks[0], segments);
    assert!(
        acks[1] >= segments / 2 && acks[1] <= segments / 2 + 20,
        "{acks:?}"
    );

    // An odd segment at the end of a window waits for the delayed-ACK timer, not forever.
    let mut e = Engine::new(star(1, 10 * G, 10 * G), EngineConfig::default(), 7);
    let cfg = TcpConfig {
        ack_every: 2,
        initial_cwnd: 1,
        delayed_ack_timeout: 50 * US,
        ..Default::default()
    };
    e.add_tcp_flow(0, 1, 3 * 1460, 0, &cfg).unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let r = e.flows().next().unwrap();
    assert_eq!(r.timeouts, 0);
    assert!(
        r.finish.unwrap() > 50 * US,
        "the first lone segment was ACKed before the timer"
    );
}

#[test]
fn a_timed_source_sends_at_line_rate_until_its_deadline_then_ends_on_a_write_boundary() {
    // iperf's default: 10 s of 128 KB writes, here 20 ms through a 10 Gb/s bottleneck.
    let mut e = Engine::new(
        star(1, 10 * G, 10 * G),
        EngineConfig {
            switch_queue: QueueConfig::drop_tail(Limit::Packets(250)),
            ..Default::default()
        },
        1,
    );
    let write = 128 * 1024;
    let spec = TimedFlowSpec {
        start: MS,
        duration: 20 * MS,
        write_size: write,
    };
    e.add_timed_tcp_flow(0, 1, spec, &TcpConfig::default())
        .unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let f = e.flows().next().unwrap();
    assert_eq!(f.size % write, 0, "ends on a write boundary");
    assert_eq!(f.bytes_delivered, f.size);
    let finish = f.finish.unwrap();
    // It stops writing at 21 ms and drains what is in flight within a few RTTs.
    assert!(
        finish > 21 * MS && finish < 22 * MS,
        "finished at {finish} ps"
    );
    // Goodput over its life: close to the 10 Gb/s link's 1460/1500 of payload.
    let gbps = f.size as f64 * 8.0 / ((finish - MS) as f64 / 1e12) / 1e9;
    assert!(
        gbps > 0.9 * 10.0 * 1460.0 / 1500.0 && gbps < 10.0,
        "{gbps:.2} Gb/s"
    );
}

/// The benchmark's `--phases` mode times a run in steps; stepping must not change it.
#[test]
fn running_in_steps_until_flows_finish_changes_nothing() {
    let link = LinkSpec {
        rate: 10_000_000_000,
        delay: US,
    };
    let run = |step: Option<u64>| {
        let topo = isthmus_core::topology::builders::leaf_spine(2, 2, 4, link, link).unwrap();
        let config = EngineConfig {
            switch_queue: QueueConfig::step_marking(Limit::Packets(40), Limit::Packets(10)),
            ..Default::default()
        };
        let mut e = Engine::new(topo, config, 7);
        let tcp = TcpConfig {
            dctcp: Some(Dctcp::default()),
            ..Default::default()
        };
        for i in 0..12u32 {
            let (src, dst) = (i % 8, (i * 3 + 5) % 8);
            let dst = if dst == src { (dst + 1) % 8 } else { dst };
            e.add_tcp_flow(
                src,
                dst,
                30_000 + 7_000 * i as u64,
                i as u64 * 20 * US,
                &tcp,
            )
            .unwrap();
        }
        match step {
            None => assert!(e.run_until_flows_finish(SEC)),
            Some(step) => {
                let mut until = 0;
                while e.unfinished_flows() > 0 && until < SEC {
                    until += step;
                    e.run_until_flows_finish(until);
                }
                assert_eq!(e.unfinished_flows(), 0);
            }
        }
        let records: Vec<_> = e
            .flows()
            .map(|r| (r.finish, r.bytes_delivered, r.packets_sent, r.delay_sum_ps))
            .collect();
        (e.events_processed(), e.packet_hops(), records)
    };
    let whole = run(None);
    assert!(
        whole.0 > 1_000,
        "too small a run to tell: {} events",
        whole.0
    );
    assert_eq!(run(Some(50 * US)), whole);
    assert_eq!(run(Some(MS)), whole);
}
