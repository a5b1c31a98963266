//! Message streams and TCP under a BCN regulator: a persistent connection sends its
//! messages in a closed loop and keeps its window between them; BCN feedback paces and
//! stops a regulated TCP sender.

use isthmus_core::queue::QueueConfig;
use isthmus_core::transport::bcn::{BcnPointConfig, BcnSourceConfig};
use isthmus_core::units::{MS, SEC, US};
use isthmus_core::{
    Engine, EngineConfig, Limit, LinkSpec, MessageFlowSpec, NodeKind, TcpConfig, Topology,
};

const G: u64 = 1_000_000_000;

fn messages(sizes: Vec<u64>, thinks: Vec<u64>, start: u64, stop: u64) -> MessageFlowSpec {
    MessageFlowSpec {
        sizes,
        thinks,
        start,
        stop,
    }
}

/// `senders` hosts on a switch, each at `access`, sending to `rx` behind a 1 Gb/s link.
fn star(senders: usize, access: u64, delay: u64) -> Topology {
    let mut nodes: Vec<(String, NodeKind)> = (0..senders)
        .map(|i| (format!("h{i}"), NodeKind::Host))
        .collect();
    nodes.push(("rx".into(), NodeKind::Host));
    nodes.push(("s".into(), NodeKind::Switch));
    let link = |a: String, b: &str, rate| (a, b.to_string(), LinkSpec { rate, delay });
    let mut links: Vec<_> = (0..senders)
        .map(|i| link(format!("h{i}"), "s", access))
        .collect();
    links.push(link("s".into(), "rx", G));
    Topology::custom(&nodes, &links).unwrap()
}

#[test]
fn messages_follow_each_completion_by_their_think_time_and_keep_the_window() {
    let mut e = Engine::new(star(1, G, 100 * US), EngineConfig::default(), 1);
    let tcp = TcpConfig::default();
    // Four 200 KB messages, 50 ms apart: longer than any retransmission timeout, so a
    // sender that armed its timer while idle would time out in every gap.
    let sizes = vec![200_000u64; 4];
    let thinks = vec![50 * MS; 4];
    let id = e
        .add_message_flow(0, 1, messages(sizes.clone(), thinks, 0, SEC), &tcp)
        .unwrap();
    assert!(e.run_until_flows_finish(2 * SEC), "the connection closed");
    let messages: Vec<_> = e.message_records().map(|(f, i, m)| (f, i, *m)).collect();
    assert_eq!(messages.len(), 4);
    for (k, (flow, index, m)) in messages.iter().enumerate() {
        assert_eq!((*flow, *index as usize, m.size), (id, k, 200_000));
        assert!(m.finish.is_some(), "message {k} completed");
        if k > 0 {
            let previous = messages[k - 1].2.finish.unwrap();
            assert_eq!(
                m.start,
                previous + 50 * MS,
                "written one think time after the last"
            );
        }
    }
    let fct = |k: usize| messages[k].2.finish.unwrap() - messages[k].2.start;
    // A later message leaves at the link rate from its first byte: 137 full packets at
    // 1 Gb/s plus one way of propagation. The first pays the handshake and slow start.
    let at_line_rate = 137 * 1500 * 8 * 1000 + 200 * US;
    assert!(
        (fct(2) as f64) < 1.02 * at_line_rate as f64,
        "later messages reuse the window: {} ps, line rate {at_line_rate} ps",
        fct(2)
    );
    assert!(fct(0) > fct(2) + 2 * 400 * US, "the first pays slow start");
    let r = e.flow_record(id).unwrap();
    assert_eq!(r.size, 800_000, "the size is what was written");
    assert_eq!(r.bytes_delivered, 800_000);
    assert_eq!(
        r.timeouts, 0,
        "no retransmission timeout while idle between messages"
    );
    assert_eq!(r.retransmissions, 0);
    assert!(r.finish.unwrap() >= messages[3].2.finish.unwrap());
}

#[test]
fn no_message_is_written_after_the_stop_time() {
    let mut e = Engine::new(star(1, G, US), EngineConfig::default(), 1);
    let id = e
        .add_message_flow(
            0,
            1,
            messages(vec![10_000; 100], vec![MS; 100], 0, 10 * MS),
            &TcpConfig::default(),
        )
        .unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let starts: Vec<u64> = e.message_records().map(|(_, _, m)| m.start).collect();
    assert!(
        starts.len() > 5 && starts.len() < 11,
        "{} messages",
        starts.len()
    );
    assert!(starts.iter().all(|&s| s < 10 * MS));
    let r = e.flow_record(id).unwrap();
    assert_eq!(r.bytes_delivered, 10_000 * starts.len() as u64);
    assert!(e
        .add_message_flow(
            0,
            1,
            messages(vec![1], vec![], 0, MS),
            &TcpConfig::default()
        )
        .is_err());
}

/// 24 sources of 10 KB transactions into one 1 Gb/s port with a 100-packet buffer,
/// for 200 ms; returns (transactions completed, drops at the port, timeouts, BCN
/// feedback (positive, NORMAL, STOP)).
fn transactions(regulated: bool) -> (usize, u64, u64, [u64; 3]) {
    let sources = 24;
    let config = EngineConfig {
        switch_queue: QueueConfig::drop_tail(Limit::Packets(100)),
        bcn: Some(BcnPointConfig::default()),
        ..Default::default()
    };
    let mut e = Engine::new(star(sources, G, 5 * US), config, 7);
    let tcp = TcpConfig {
        min_rto: 10 * MS,
        initial_rto: 10 * MS,
        ..Default::default()
    };
    let bcn = BcnSourceConfig {
        min_pause: 20 * US,
        max_pause: 80 * US,
        ..BcnSourceConfig::ibcn(G, G / sources as u64)
    };
    for i in 0..sources as u32 {
        let id = e
            .add_message_flow(
                i,
                sources as u32,
                messages(vec![10_000; 10_000], vec![100 * US; 10_000], 0, 200 * MS),
                &tcp,
            )
            .unwrap();
        if regulated {
            e.regulate_with_bcn(id, &bcn).unwrap();
        }
    }
    e.run_until(200 * MS);
    let done = e
        .message_records()
        .filter(|(_, _, m)| m.finish.is_some())
        .count();
    let drops = e.ports.iter().map(|p| p.counters.drop_packets).sum();
    let timeouts = e.flows().map(|f| f.timeouts).sum();
    let feedback = e.ports.iter().fold([0; 3], |a, p| {
        [
            a[0] + p.bcn.sent[0],
            a[1] + p.bcn.sent[1],
            a[2] + p.bcn.sent[2],
        ]
    });
    (done, drops, timeouts, feedback)
}

#[test]
fn bcn_regulated_tcp_transactions_lose_less_at_the_same_throughput() {
    let (free_done, free_drops, free_timeouts, _) = transactions(false);
    let (done, drops, timeouts, feedback) = transactions(true);
    assert!(
        free_drops > 0 && free_timeouts > 0,
        "the unregulated incast overflows"
    );
    assert!(
        drops * 2 < free_drops,
        "BCN drops {drops}, without {free_drops}"
    );
    assert!(
        timeouts * 2 < free_timeouts,
        "BCN times out {timeouts} times, without {free_timeouts}"
    );
    // The port stays busy either way (24 senders, a 10 ms minimum RTO): regulating the
    // senders costs no transactions.
    assert!(
        done * 100 >= free_done * 98,
        "BCN completes {done}, without {free_done}"
    );
    assert!(
        feedback[1] > 0 && feedback[2] > 0,
        "NORMAL and STOP feedback reached TCP senders: {feedback:?}"
    );
}

#[test]
fn a_regulated_flow_is_refused_where_bcn_cannot_reach_it() {
    let mut e = Engine::new(star(1, G, US), EngineConfig::default(), 1);
    let id = e
        .add_tcp_flow(0, 1, 1000, 0, &TcpConfig::default())
        .unwrap();
    let cfg = BcnSourceConfig::ibcn(G, G);
    assert!(e
        .regulate_with_bcn(id, &cfg)
        .unwrap_err()
        .contains("BCN congestion points are off"));
}
