//! Priority flow control: a lossless class loses nothing, and pauses and resumes at
//! its thresholds.

use isthmus_core::engine::{Pfc, SharedBuffer};
use isthmus_core::queue::QueueConfig;
use isthmus_core::units::{MS, SEC, US};
use isthmus_core::{
    Arrivals, Engine, EngineConfig, Limit, LinkSpec, NodeKind, Topology, UdpFlowSpec,
};

const G: u64 = 1_000_000_000;

/// Eight senders at 10 Gb/s into one switch, all sending to one receiver: an incast.
fn incast(pfc: Option<Pfc>) -> Engine {
    incast_sharing(pfc, None)
}

fn incast_sharing(pfc: Option<Pfc>, shared_buffer: Option<SharedBuffer>) -> Engine {
    let poisson = UdpFlowSpec {
        rate: 5 * G,
        packet_size: 1500,
        arrivals: Arrivals::Poisson,
        size: 0,
        start: 0,
        stop: 5 * MS,
    };
    incast_into(300, pfc, shared_buffer, poisson)
}

/// Eight senders each sending `flow` into one receiver behind a switch whose egress
/// ports hold `egress_packets`.
fn incast_into(
    egress_packets: u64,
    pfc: Option<Pfc>,
    shared_buffer: Option<SharedBuffer>,
    flow: UdpFlowSpec,
) -> Engine {
    let mut nodes: Vec<(String, NodeKind)> =
        (0..8).map(|i| (format!("h{i}"), NodeKind::Host)).collect();
    nodes.push(("rx".into(), NodeKind::Host));
    nodes.push(("s".into(), NodeKind::Switch));
    let link = LinkSpec {
        rate: 10 * G,
        delay: US,
    };
    let mut links: Vec<(String, String, LinkSpec)> = (0..8)
        .map(|i| (format!("h{i}"), "s".to_string(), link))
        .collect();
    links.push(("s".into(), "rx".into(), link));
    let config = EngineConfig {
        host_queue: QueueConfig::drop_tail(Limit::Packets(1 << 20)),
        switch_queue: QueueConfig::drop_tail(Limit::Packets(egress_packets)),
        pfc,
        shared_buffer,
        ..Default::default()
    };
    let mut e = Engine::new(Topology::custom(&nodes, &links).unwrap(), config, 1);
    for src in 0..8 {
        e.add_udp_flow(src, 8, flow).unwrap();
    }
    e
}

#[test]
fn a_lossless_class_never_drops_and_pauses_at_its_thresholds() {
    let mut lossy = incast(None);
    lossy.run_until(SEC);
    let drops = |e: &Engine| e.ports.iter().map(|p| p.counters.drop_packets).sum::<u64>();
    assert!(
        drops(&lossy) > 1000,
        "the incast must overflow a 300-packet port without PFC"
    );

    let pfc = Pfc {
        xoff: 30_000,
        xon: 15_000,
        lossless: 1,
        free_fraction: None,
    };
    let mut e = incast(Some(pfc));
    assert!(e.run_until_flows_finish(SEC));
    assert_eq!(drops(&e), 0, "a lossless class dropped packets");
    let switch = e.topology().node_index("s").unwrap();
    let ingress: Vec<_> = e
        .ports
        .iter()
        .filter(|p| p.node == switch && p.rate == 10 * G && p.local < 8)
        .collect();
    for p in &ingress {
        assert!(
            p.counters.pfc_pauses > 0,
            "every sender was paused at least once"
        );
        assert_eq!(
            p.counters.pfc_pauses, p.counters.pfc_resumes,
            "every pause was lifted"
        );
        // Past xoff, at most a round trip of data (2 x 1 us at 10 Gb/s) plus the packet
        // in flight on each side arrives before the pause lands.
        assert!(
            p.counters.pfc_max_ingress_bytes <= pfc.xoff + 2_500 + 3 * 1500,
            "{}",
            p.counters.pfc_max_ingress_bytes
        );
    }
    // The receiver's link stayed busy: PFC throttles senders without idling the bottleneck.
    let delivered: u64 = e.flows().map(|f| f.bytes_delivered).sum();
    let sent: u64 = e.flows().map(|f| f.bytes_sent).sum();
    assert_eq!(delivered, sent);
    assert!(
        e.ports.iter().all(|p| p.paused == 0),
        "a transmitter stayed paused"
    );
}

#[test]
fn a_pause_threshold_that_follows_the_free_buffer_keeps_a_full_switch_lossless() {
    // 200 KB shared by the switch, of which the one egress queue may take 8/9 (the
    // dynamic threshold at alpha 8): eight ingresses each holding a static 30 KB would
    // need 240 KB, so it overflows; at 1/8 of the free buffer each pauses sooner the
    // fuller it gets, settling near fB / (1 + 8f) = 12.5 KB apiece.
    let shared = SharedBuffer {
        bytes: 200_000,
        alpha: 8.0,
    };
    let drops = |e: &Engine| e.ports.iter().map(|p| p.counters.drop_packets).sum::<u64>();
    let fixed = Pfc {
        xoff: 30_000,
        xon: 15_000,
        lossless: 1,
        free_fraction: None,
    };
    let mut e = incast_sharing(Some(fixed), Some(shared));
    e.run_until(SEC);
    assert!(
        drops(&e) > 0,
        "a static xoff past the buffer's share must overflow it"
    );

    let dynamic = Pfc {
        free_fraction: Some(0.125),
        ..fixed
    };
    let mut e = incast_sharing(Some(dynamic), Some(shared));
    assert!(e.run_until_flows_finish(SEC));
    assert_eq!(
        drops(&e),
        0,
        "the dynamic threshold must keep the class lossless"
    );
    let most = e
        .ports
        .iter()
        .map(|p| p.counters.pfc_max_ingress_bytes)
        .max()
        .unwrap();
    // Never above 1/8 of the whole buffer, plus what is in flight when a pause is sent.
    assert!(most <= 25_000 + 2_500 + 3 * 1500, "{most}");
    assert!(
        e.ports.iter().all(|p| p.paused == 0),
        "a transmitter stayed paused"
    );
}

#[test]
fn a_lossless_class_holds_what_its_paused_ingresses_sent_past_the_egress_limit() {
    // Eight ingresses may each hold 30 KB before pausing, 240 KB together (plus what is
    // in flight when the pause lands), behind an egress limited to 100 packets (150 KB).
    let line_rate = UdpFlowSpec {
        rate: 10 * G,
        packet_size: 1500,
        arrivals: Arrivals::Constant,
        size: 0,
        start: 0,
        stop: 2 * MS,
    };
    let small_egress = |pfc: Option<Pfc>| incast_into(100, pfc, None, line_rate);
    let pfc = Pfc {
        xoff: 30_000,
        xon: 15_000,
        lossless: 1,
        free_fraction: None,
    };
    let mut e = small_egress(Some(pfc));
    assert!(e.run_until_flows_finish(SEC));
    let drops: u64 = e.ports.iter().map(|p| p.counters.drop_packets).sum();
    assert_eq!(drops, 0, "a lossless class dropped at a full egress");
    let switch = e.topology().node_index("s").unwrap();
    let egress = e
        .ports
        .iter()
        .find(|p| p.node == switch && p.local == 8)
        .unwrap();
    let peak = egress.counters.max_queue_bytes;
    assert!(
        peak > 150_000,
        "the egress held more than its limit ({peak} B)"
    );
    // What the ingresses may hold, plus a pause's round trip of line rate each.
    assert!(
        peak <= 8 * (30_000 + 2 * 3_000),
        "bounded by the ingresses' thresholds: {peak} B"
    );
    // The lossy class still drops at the egress limit.
    let mut lossy = small_egress(Some(Pfc { lossless: 2, ..pfc }));
    lossy.run_until(SEC);
    assert!(
        lossy
            .ports
            .iter()
            .map(|p| p.counters.drop_packets)
            .sum::<u64>()
            > 1000
    );
}
