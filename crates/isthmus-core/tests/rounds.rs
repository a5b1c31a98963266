//! Barrier-synchronized incast rounds: every round starts together, only after the
//! previous one has fully arrived, and takes at least the receiver link's time.

use isthmus_core::queue::QueueConfig;
use isthmus_core::rounds::{IncastRounds, RoundTransport};
use isthmus_core::topology::builders::leaf_spine;
use isthmus_core::units::{serialization_time, MS, SEC, US};
use isthmus_core::{Dctcp, Engine, EngineConfig, Limit, LinkSpec, TcpConfig};

const G: u64 = 1_000_000_000;

#[test]
fn rounds_start_together_after_the_previous_round_arrived() {
    let link = LinkSpec {
        rate: 10 * G,
        delay: US,
    };
    let config = EngineConfig {
        switch_queue: QueueConfig::step_marking(Limit::Packets(250), Limit::Packets(65)),
        host_queue: QueueConfig::step_marking(Limit::Packets(250), Limit::Packets(65)),
        ..Default::default()
    };
    let mut e = Engine::new(leaf_spine(2, 2, 8, link, link).unwrap(), config, 1);
    let tcp = TcpConfig {
        dctcp: Some(Dctcp::default()),
        ..Default::default()
    };
    let senders: Vec<u32> = (1..16).collect();
    let job = IncastRounds {
        receiver: 0,
        senders: senders.clone(),
        size: 64_000,
        rounds: 6,
        gap: 10 * US,
        transport: RoundTransport::Tcp(tcp),
    };
    e.add_incast_rounds(job, MS).unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let rounds = e.incast_rounds().to_vec();
    assert_eq!(rounds.len(), 6);
    assert_eq!(e.flows().count(), 6 * 15);
    // 15 × 64 KB through the receiver's 10 Gb/s link: at least this long per round.
    let floor = 15 * 64_000 / 1460 * serialization_time(1500, 10 * G);
    for (r, round) in rounds.iter().enumerate() {
        assert_eq!(round.round as usize, r);
        let finish = round.finish.expect("every round finished");
        assert!(finish - round.start >= floor, "round {r} beat the link");
        let flows: Vec<_> = e.flows().skip(15 * r).take(15).collect();
        assert!(flows.iter().all(|f| f.start == round.start), "synchronized");
        assert_eq!(flows.iter().filter_map(|f| f.finish).max(), Some(finish));
        if r > 0 {
            assert_eq!(round.start, rounds[r - 1].finish.unwrap() + 10 * US);
        }
    }
    assert_eq!(rounds[0].start, MS);
}

#[test]
fn bad_incast_jobs_are_named() {
    let link = LinkSpec {
        rate: 10 * G,
        delay: US,
    };
    let mut e = Engine::new(
        leaf_spine(1, 1, 4, link, link).unwrap(),
        EngineConfig::default(),
        1,
    );
    let job = |senders: Vec<u32>, rounds| IncastRounds {
        receiver: 0,
        senders,
        size: 1000,
        rounds,
        gap: 0,
        transport: RoundTransport::Tcp(TcpConfig::default()),
    };
    assert!(e
        .add_incast_rounds(job(vec![1], 0), 0)
        .unwrap_err()
        .contains("rounds"));
    assert!(e
        .add_incast_rounds(job(vec![0, 1], 1), 0)
        .unwrap_err()
        .contains("receiver"));
    assert!(e
        .add_incast_rounds(job(vec![9], 1), 0)
        .unwrap_err()
        .contains("host 9"));
}
