//! DCQCN: fair convergence with the queue held between the marking thresholds, and a
//! lossless run under PFC.

use isthmus_core::engine::Pfc;
use isthmus_core::queue::{AqmConfig, QueueConfig, SchedulerConfig};
use isthmus_core::transport::dcqcn::DcqcnConfig;
use isthmus_core::units::{MS, SEC, US};
use isthmus_core::{Engine, EngineConfig, Limit, LinkSpec, NodeKind, Topology};

const G: u64 = 1_000_000_000;
const KMIN: u64 = 5_000;
const KMAX: u64 = 200_000;

fn star(senders: usize, pfc: Option<Pfc>, sample: bool) -> Engine {
    let mut nodes: Vec<(String, NodeKind)> = (0..senders)
        .map(|i| (format!("h{i}"), NodeKind::Host))
        .collect();
    nodes.push(("rx".into(), NodeKind::Host));
    nodes.push(("s".into(), NodeKind::Switch));
    let link = LinkSpec {
        rate: 40 * G,
        delay: US,
    };
    let mut links: Vec<(String, String, LinkSpec)> = (0..senders)
        .map(|i| (format!("h{i}"), "s".to_string(), link))
        .collect();
    links.push(("s".into(), "rx".into(), link));
    let marker = AqmConfig::Ramp {
        kmin: Limit::Bytes(KMIN),
        kmax: Limit::Bytes(KMAX),
        pmax: 0.01,
    };
    let config = EngineConfig {
        host_queue: QueueConfig::drop_tail(Limit::Packets(10_000)),
        switch_queue: QueueConfig {
            limit: Limit::Bytes(2_000_000),
            scheduler: SchedulerConfig::Fifo,
            aqm: marker,
            class_aqm: Vec::new(),
            device_queue: 0,
        },
        sample_interval: sample.then_some(20 * US),
        pfc,
        ..Default::default()
    };
    Engine::new(Topology::custom(&nodes, &links).unwrap(), config, 1)
}

fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    s * s / (x.len() as f64 * x.iter().map(|v| v * v).sum::<f64>())
}

#[test]
fn dcqcn_flows_converge_to_fair_shares_with_the_queue_between_kmin_and_kmax() {
    let n = 4;
    let mut e = star(n, None, true);
    let cfg = DcqcnConfig::paper(40 * G);
    for i in 0..n as u32 {
        e.add_dcqcn_flow(i, n as u32, 2_000_000_000, 0, &cfg)
            .unwrap();
    }
    e.run_until(20 * MS);
    let before: Vec<u64> = e.flows().map(|f| f.bytes_delivered).collect();
    e.run_until(60 * MS);
    let shares: Vec<f64> = e
        .flows()
        .zip(&before)
        .map(|(f, b)| (f.bytes_delivered - b) as f64)
        .collect();
    let total_gbps = shares.iter().sum::<f64>() * 8.0 / 0.04 / 1e9;
    assert!(
        jain(&shares) >= 0.95,
        "Jain {:.3}: {shares:?}",
        jain(&shares)
    );
    assert!(
        total_gbps > 0.85 * 40.0 * 1000.0 / 1040.0,
        "{total_gbps:.1} Gb/s on a 40 Gb/s link"
    );
    let switch = e.topology().node_index("s").unwrap();
    let port = e
        .ports
        .iter()
        .position(|p| p.node == switch && e.ports[p.peer as usize].node == n as u32)
        .unwrap();
    let s = e.sampler().unwrap();
    let queue: Vec<u64> = (0..s.times.len())
        .filter(|&r| s.times[r] > 20 * MS)
        .map(|r| s.queue_bytes[r * s.num_ports + port])
        .collect();
    let mean = queue.iter().sum::<u64>() as f64 / queue.len() as f64;
    assert!(
        mean > KMIN as f64 && mean < KMAX as f64,
        "mean queue {mean:.0} B outside [Kmin, Kmax]"
    );
    let drops: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
    assert_eq!(drops, 0);
}

#[test]
fn dcqcn_with_pfc_loses_nothing_in_an_incast() {
    let n = 16;
    // Shallow switch buffers: without PFC the first burst would overflow them.
    let pfc = Pfc {
        xoff: 40_000,
        xon: 20_000,
        lossless: 1,
        free_fraction: None,
    };
    let mut e = star(n, Some(pfc), false);
    let cfg = DcqcnConfig::paper(40 * G);
    for i in 0..n as u32 {
        e.add_dcqcn_flow(i, n as u32, 2_000_000, 0, &cfg).unwrap();
    }
    assert!(e.run_until_flows_finish(SEC));
    let drops: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
    assert_eq!(drops, 0, "PFC-lossless DCQCN dropped packets");
    assert!(e
        .flows()
        .all(|f| f.bytes_delivered == 2_000_000 && f.retransmissions == 0));
    assert!(
        e.ports.iter().map(|p| p.counters.pfc_pauses).sum::<u64>() > 0,
        "the incast never needed PFC"
    );
}

/// A link that stops longer than the loss timeout, then resumes: under PFC nothing is
/// lost, so the timeout is spurious, and the packets sent before it are answered after
/// it. The sender must take those answers: never send again what the receiver has
/// acknowledged (debug builds assert it), and keep its loss timer running for the
/// requests still open (a request left behind without a timer later set a deadline in
/// the past, which the event list refuses).
#[test]
fn dcqcn_survives_a_stall_longer_than_its_loss_timeout() {
    let nodes = [
        ("a".to_string(), NodeKind::Host),
        ("b".to_string(), NodeKind::Host),
        ("s".to_string(), NodeKind::Switch),
    ];
    let link = LinkSpec { rate: G, delay: US };
    let links = [
        ("a".to_string(), "s".to_string(), link),
        ("s".to_string(), "b".to_string(), link),
    ];
    let config = EngineConfig {
        host_queue: QueueConfig::drop_tail(Limit::Bytes(64_000_000)),
        switch_queue: QueueConfig::drop_tail(Limit::Bytes(12_000_000)),
        pfc: Some(Pfc {
            xoff: 1_000_000,
            xon: 800_000,
            lossless: 1,
            free_fraction: None,
        }),
        ..Default::default()
    };
    let mut e = Engine::new(Topology::custom(&nodes, &links).unwrap(), config, 1);
    // 100 packets a millisecond while open; shut from 3 to 600 ms and 700 to 1300 ms.
    let open = [(1u64, 3u64), (600, 700), (1300, 3000)];
    let millis: Vec<u64> = open
        .iter()
        .flat_map(|&(a, b)| (a..b).flat_map(|m| std::iter::repeat_n(m, 100)))
        .collect();
    let trace = isthmus_core::trace::LinkTrace::from_millis(&millis).unwrap();
    e.set_link_trace(1, 2, Some(trace)).unwrap();
    let flow = e
        .add_dcqcn_flow(0, 1, 30_000_000, 0, &DcqcnConfig::paper(G))
        .unwrap();
    assert!(e.run_until_flows_finish(3 * SEC));
    let record = e.flows().nth(flow as usize).unwrap();
    assert_eq!(record.bytes_delivered, 30_000_000);
    assert!(record.timeouts >= 2, "the stalls outlast the loss timeout");
    let drops: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
    assert_eq!(drops, 0, "PFC-lossless: every timeout was spurious");
}

/// Zhu et al. (after QCN): a rate cut restarts the rate-increase timer, as it restarts the
/// byte counter, so the first increase after a cut comes a whole timer period (55 us)
/// later. A flow cut at every CNP interval (50 us, shorter than the timer) therefore
/// never raises its rate by the timer; once the CNPs stop, it does. (The timer used to
/// run on from before the cut, raising the rate within 0-55 us of every cut.)
#[test]
fn a_rate_cut_restarts_the_rate_increase_timer() {
    use isthmus_core::packet::{Packet, PacketHeader};
    use isthmus_core::transport::dcqcn::{DcqcnFlow, CNP};
    use isthmus_core::transport::tcp::Io;
    use isthmus_core::transport::{FlowRecord, Outbox};

    let cfg = DcqcnConfig::paper(25 * G);
    let mut flow = DcqcnFlow::new(cfg, 1_000_000_000_000, 0, SEC);
    let mut record = FlowRecord {
        src: 0,
        dst: 1,
        ..Default::default()
    };
    let mut out = Outbox::default();
    // The flow's start (its send timer, generation 0), as the engine schedules it.
    let mut timers = vec![(0, 0)];
    let cnp: Packet = PacketHeader {
        src: 1,
        dst: 0,
        tcp_flags: CNP,
        ..Default::default()
    }
    .into();
    let cnps: Vec<u64> = (0..5).map(|i| 30 * US + i * cfg.cnp_interval).collect();
    let last_cnp = *cnps.last().unwrap();
    let mut cnps = cnps.into_iter().peekable();
    let mut rates = Vec::new();
    loop {
        timers.sort();
        let (at, token) = timers[0];
        let cnp_due = cnps.peek().is_some_and(|&t| t <= at);
        let now = if cnp_due { cnps.next().unwrap() } else { at };
        if now > last_cnp + cfg.timer + 5 * US {
            break;
        }
        let mut io = Io::new(0, now, (1, 2), &mut record, &mut out);
        if cnp_due {
            flow.on_packet(&mut io, &cnp);
        } else {
            timers.remove(0);
            flow.on_timer(&mut io, token);
        }
        timers.append(&mut out.timers);
        out.packets.clear();
        rates.push((now, flow.rate()));
    }
    assert_eq!(flow.cnps, 5);
    let cut_at = |t: u64| rates.iter().rfind(|&&(at, _)| at <= t).unwrap().1;
    let cut = cut_at(last_cnp);
    for pair in rates.windows(2) {
        let ((_, before), (at, after)) = (pair[0], pair[1]);
        if at > 30 * US && at <= last_cnp {
            assert!(
                after <= before,
                "the rate rose from {before:.0} to {after:.0} b/s at {} us, \
                 less than a timer period after a cut",
                at / US
            );
        }
    }
    assert!(
        flow.rate() > cut,
        "no increase a timer period after the last cut: {:.0} b/s",
        flow.rate()
    );
}
