//! The control seam: packet-ins, entry timeouts, groups, meters, host actions, command
//! latency, and loss-free flow migration.

use isthmus_core::control::{Command, ControlEvent};
use isthmus_core::flowtable::{
    FlowAction, FlowMatch, Forward, Group, Miss, RemovalReason, MAX_GROUP_ID,
};
use isthmus_core::queue::QueueConfig;
use isthmus_core::topology::builders::leaf_spine;
use isthmus_core::units::{MS, SEC, US};
use isthmus_core::{Arrivals, Engine, EngineConfig, LinkSpec, TcpConfig, UdpFlowSpec};

const G: u64 = 1_000_000_000;

/// 2 spines, 2 leaves, 2 hosts per leaf. leaf ports: 0-1 hosts, 2-3 spines; spine ports:
/// 0 leaf0, 1 leaf1. Hosts 0, 1 on leaf0; 2, 3 on leaf1.
fn fabric() -> Engine {
    let link = LinkSpec {
        rate: 10 * G,
        delay: US,
    };
    Engine::new(
        leaf_spine(2, 2, 2, link, link).unwrap(),
        EngineConfig::default(),
        1,
    )
}

fn node(e: &Engine, name: &str) -> u32 {
    e.topology().node_index(name).unwrap()
}

fn udp(rate: u64, size: u64) -> UdpFlowSpec {
    UdpFlowSpec {
        rate,
        packet_size: 1500,
        arrivals: Arrivals::Constant,
        size,
        start: 0,
        stop: SEC,
    }
}

fn out(port: u16) -> FlowAction {
    FlowAction::forward(Forward::Output(port))
}

fn of_flow(flow: u32, src: u32) -> FlowMatch {
    FlowMatch {
        flow: Some(flow),
        src: Some(src),
        ..Default::default()
    }
}

/// Runs the control loop to `limit`, answering events with `react`.
fn control_loop(e: &mut Engine, limit: u64, mut react: impl FnMut(&mut Engine, u64, ControlEvent)) {
    e.attach_control(true);
    while e.run_until_control(limit, false) {
        for (time, event) in e.take_control_events() {
            react(e, time, event);
        }
    }
}

#[test]
fn a_new_flow_raises_one_packet_in_per_switch_and_entries_carry_the_rest() {
    let mut e = fabric();
    for name in ["leaf0", "leaf1", "spine0", "spine1"] {
        let n = node(&e, name);
        e.set_miss(n, Miss::Controller).unwrap();
    }
    e.add_udp_flow(0, 2, udp(G, 100 * 1472)).unwrap();
    let mut packet_ins = Vec::new();
    control_loop(&mut e, 10 * MS, |e, _, event| {
        if let ControlEvent::PacketIn {
            switch,
            buffer,
            flow,
            src,
            ..
        } = event
        {
            packet_ins.push(switch);
            e.add_entry(
                0,
                switch,
                10,
                of_flow(flow, src),
                FlowAction::forward(Forward::Default),
            )
            .unwrap();
            e.issue(0, Command::PacketOut { buffer, port: None })
                .unwrap();
        }
    });
    packet_ins.sort();
    assert_eq!(
        packet_ins.len(),
        3,
        "leaf0, one spine and leaf1 each ask once: {packet_ins:?}"
    );
    let r = e.flows().next().unwrap();
    assert_eq!(r.packets_delivered, 100);
    assert_eq!(e.buffered_packets(), 0);
}

#[test]
fn idle_and_hard_timeouts_remove_entries_and_say_why() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    let mut timed = |dst: u16, idle_timeout, hard_timeout| {
        let entry = Command::AddEntry {
            switch: leaf0,
            entry: 0,
            priority: 5,
            matcher: FlowMatch {
                dst: Some(u32::from(dst)),
                ..Default::default()
            },
            action: out(dst),
            idle_timeout,
            hard_timeout,
        };
        e.command(0, entry).unwrap().expect("an entry is numbered")
    };
    let idle = timed(2, Some(MS), None);
    let hard = timed(3, None, Some(2 * MS));
    // Traffic to host 2 for ~1.2 ms, to host 3 for the whole run.
    e.add_udp_flow(0, 2, udp(G, 100 * 1472)).unwrap();
    e.add_udp_flow(
        1,
        3,
        UdpFlowSpec {
            stop: 5 * MS,
            ..udp(G, 0)
        },
    )
    .unwrap();
    let mut removed = Vec::new();
    control_loop(&mut e, 6 * MS, |_, time, event| {
        if let ControlEvent::EntryRemoved {
            entry,
            reason,
            packets,
            ..
        } = event
        {
            removed.push((entry, reason, time, packets));
        }
    });
    assert_eq!(removed.len(), 2, "{removed:?}");
    let (_, reason, at, packets) = removed.iter().find(|r| r.0 == idle).copied().unwrap();
    assert_eq!((reason, packets), (RemovalReason::IdleTimeout, 100));
    // The last of 100 packets at 1 Gb/s passes leaf0 at about 1.19 ms; idle 1 ms later.
    assert!(at > 2 * MS && at < 2 * MS + 300 * US, "idle expiry at {at}");
    let (_, reason, at, _) = removed.iter().find(|r| r.0 == hard).copied().unwrap();
    assert_eq!((reason, at), (RemovalReason::HardTimeout, 2 * MS));
}

#[test]
fn select_groups_spread_flows_by_weight() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    let group = Group::Select {
        ports: vec![2, 3],
        weights: vec![3, 1],
    };
    e.issue(
        0,
        Command::SetGroup {
            switch: leaf0,
            group: 0,
            group_def: group,
        },
    )
    .unwrap();
    let to_leaf1 = FlowMatch {
        dst: Some(2),
        ..Default::default()
    };
    e.add_entry(
        0,
        leaf0,
        5,
        to_leaf1,
        FlowAction::forward(Forward::Group(0)),
    )
    .unwrap();
    for i in 0..4000 {
        e.add_udp_flow(
            0,
            2,
            UdpFlowSpec {
                start: i * 2 * US,
                ..udp(G, 1472)
            },
        )
        .unwrap();
    }
    assert!(e.run_until_flows_finish(SEC));
    let sent: Vec<u64> = e
        .ports
        .iter()
        .filter(|p| p.node == leaf0 && p.local >= 2)
        .map(|p| p.counters.tx_packets)
        .collect();
    let share = sent[0] as f64 / 4000.0;
    // Binomial(4000, 0.75): standard deviation 0.0068.
    assert!((share - 0.75).abs() < 0.03, "{sent:?}");
}

#[test]
fn fast_failover_takes_the_first_live_port() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    let group = Group::FastFailover { ports: vec![2, 3] };
    e.issue(
        0,
        Command::SetGroup {
            switch: leaf0,
            group: 0,
            group_def: group,
        },
    )
    .unwrap();
    e.add_entry(
        0,
        leaf0,
        5,
        FlowMatch {
            dst: Some(2),
            ..Default::default()
        },
        FlowAction::forward(Forward::Group(0)),
    )
    .unwrap();
    // Link order: 4 host links, then leaf0-spine0 (4), leaf0-spine1 (5), ...
    e.set_link_up(4, false).unwrap();
    e.add_udp_flow(0, 2, udp(G, 10 * 1472)).unwrap();
    assert!(e.run_until_flows_finish(SEC));
    assert_eq!(e.flows().next().unwrap().packets_delivered, 10);
    let spine1_port = e
        .ports
        .iter()
        .find(|p| p.node == leaf0 && p.local == 3)
        .unwrap();
    assert_eq!(spine1_port.counters.tx_packets, 10);
}

#[test]
fn a_meter_holds_a_flow_to_its_rate() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    e.issue(
        0,
        Command::SetMeter {
            switch: leaf0,
            meter: 0,
            rate: G,
            burst: 15_000,
        },
    )
    .unwrap();
    let action = FlowAction {
        forward: Forward::Default,
        set_priority: None,
        meter: Some(0),
    };
    e.add_entry(
        0,
        leaf0,
        5,
        FlowMatch {
            src: Some(0),
            ..Default::default()
        },
        action,
    )
    .unwrap();
    e.add_udp_flow(
        0,
        2,
        UdpFlowSpec {
            stop: 10 * MS,
            ..udp(5 * G, 0)
        },
    )
    .unwrap();
    e.run_until(12 * MS);
    let r = e.flows().next().unwrap();
    let delivered_gbps = (r.bytes_delivered + 28 * r.packets_delivered) as f64 * 8.0 / 0.01 / 1e9;
    assert!(
        (delivered_gbps - 1.0).abs() < 0.02,
        "{delivered_gbps} Gb/s through a 1 Gb/s meter"
    );
}

#[test]
fn hold_release_and_pace_act_on_the_sender() {
    let mut e = fabric();
    let held = e
        .add_tcp_flow(0, 2, 1_000_000, 0, &TcpConfig::default())
        .unwrap();
    let paced = e
        .add_tcp_flow(1, 3, 1_000_000, 0, &TcpConfig::default())
        .unwrap();
    e.issue(0, Command::Hold { flow: held }).unwrap();
    e.issue(
        0,
        Command::Pace {
            flow: paced,
            rate: Some(G),
        },
    )
    .unwrap();
    e.run_until(5 * MS);
    assert_eq!(
        e.flows().next().unwrap().bytes_delivered,
        0,
        "a held flow sent data"
    );
    e.issue(0, Command::Release { flow: held }).unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let records: Vec<_> = e.flows().cloned().collect();
    assert!(records[0].first_delivery.unwrap() > 5 * MS);
    assert!(
        records[0].finish.unwrap() < 10 * MS,
        "the released flow did not run"
    );
    // 1 MB at 1 Gb/s of 1500 B packets carrying 1460 B: about 8.2 ms.
    let paced_fct = records[1].finish.unwrap() as f64 / MS as f64;
    assert!(
        paced_fct > 8.1 && paced_fct < 8.6,
        "paced flow took {paced_fct} ms"
    );
}

#[test]
fn mptcp_subflows_take_the_rates_they_are_paced_at() {
    // Two connections 0 -> 2 with 4 subflows each: the first paced 1 + 2 Gb/s on two
    // subflows and none on the others, the second left to its windows.
    let mut e = fabric();
    let paced = e
        .add_mptcp_flow(0, 2, 3_000_000, 0, 4, &TcpConfig::default())
        .unwrap();
    for (subflow, rate) in [(0, Some(G)), (1, Some(2 * G)), (2, Some(0)), (3, Some(0))] {
        e.issue(
            0,
            Command::PaceSubflow {
                flow: paced,
                subflow,
                rate,
            },
        )
        .unwrap();
    }
    assert!(e.run_until_flows_finish(SEC));
    let record = e.flows().next().unwrap().clone();
    // 3 MB at 3 Gb/s of 1500 B packets carrying 1460 B, after a handshake: about 8.2 ms.
    let fct = record.finish.unwrap() as f64 / MS as f64;
    assert!(fct > 8.1 && fct < 8.7, "paced connection took {fct} ms");
    let bad = e.issue(
        0,
        Command::PaceSubflow {
            flow: paced,
            subflow: 4,
            rate: None,
        },
    );
    assert!(bad.unwrap_err().contains("subflows 0..3"));
    let later = e.now() + MS;
    let tcp = e
        .add_tcp_flow(1, 3, 1000, later, &TcpConfig::default())
        .unwrap();
    let bad = e.issue(
        0,
        Command::PaceSubflow {
            flow: tcp,
            subflow: 0,
            rate: None,
        },
    );
    assert!(bad.unwrap_err().contains("not an MPTCP connection"));
}

#[test]
fn commands_take_effect_after_the_control_latency() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    e.add_entry(
        50 * US,
        leaf0,
        5,
        FlowMatch {
            dst: Some(2),
            ..Default::default()
        },
        FlowAction::forward(Forward::Drop),
    )
    .unwrap();
    // 1 Gb/s: a packet leaves every 12 us and reaches leaf0 2.2 us later, so four
    // (at 2.2, 14.2, 26.2 and 38.2 us) pass before the drop rule lands at 50 us.
    e.add_udp_flow(0, 2, udp(G, 20 * 1472)).unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let r = e.flows().next().unwrap();
    assert_eq!(r.packets_delivered, 4);
    assert_eq!(r.packets_dropped, 16);
}

#[test]
fn bad_commands_name_what_is_wrong() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    let err = e
        .add_entry(0, 99, 1, FlowMatch::default(), out(0))
        .unwrap_err();
    assert!(err.contains("switch 99 does not exist"), "{err}");
    let h0 = e.topology().hosts[0];
    let err = e
        .add_entry(0, h0, 1, FlowMatch::default(), out(0))
        .unwrap_err();
    assert!(err.contains("is a host"), "{err}");
    let err = e
        .issue(
            0,
            Command::SetGroup {
                switch: leaf0,
                group: 0,
                group_def: Group::Select {
                    ports: vec![2, 7],
                    weights: vec![1, 1],
                },
            },
        )
        .unwrap_err();
    assert!(
        err.contains("port 7 does not exist on switch 'leaf0'"),
        "{err}"
    );
    // Ids index the switch's tables: one past the largest would ask for its whole range.
    let too_large = Command::SetGroup {
        switch: leaf0,
        group: MAX_GROUP_ID + 1,
        group_def: Group::FastFailover { ports: vec![2] },
    };
    let err = e.issue(0, too_large).unwrap_err();
    assert!(
        err.contains("group id 65536 is out of range: use 0..=65535"),
        "{err}"
    );
    let meter = Command::SetMeter {
        switch: leaf0,
        meter: u32::MAX,
        rate: G,
        burst: 15_000,
    };
    let err = e.issue(0, meter).unwrap_err();
    assert!(err.contains("meter id 4294967295 is out of range"), "{err}");
    let err = e.issue(0, Command::Hold { flow: 3 }).unwrap_err();
    assert!(err.contains("flow 3 does not exist"), "{err}");
    let err = e
        .issue(
            0,
            Command::PacketOut {
                buffer: 0,
                port: None,
            },
        )
        .unwrap_err();
    assert!(err.contains("no packet-in buffer 0"), "{err}");
    e.run_until(US);
    let err = e.issue(u64::MAX, Command::Hold { flow: 0 }).unwrap_err();
    assert!(err.contains("past the end of simulated time"), "{err}");
}

/// Installs the data path of `flow` from host 0 to host 2 through `spine`.
fn install_path(
    e: &mut Engine,
    delay: u64,
    flow: u32,
    spine: u16,
    priority: u16,
) -> Vec<(u32, u32)> {
    let (leaf0, leaf1) = (node(e, "leaf0"), node(e, "leaf1"));
    let spine_node = node(e, &format!("spine{spine}"));
    let hops = [(leaf0, 2 + spine), (spine_node, 1), (leaf1, 0)];
    hops.iter()
        .map(|&(sw, port)| {
            (
                sw,
                e.add_entry(delay, sw, priority, of_flow(flow, 0), out(port))
                    .unwrap(),
            )
        })
        .collect()
}

/// Moves a running DCTCP flow from spine 0 to spine 1 with 100 us of control latency,
/// make-before-break or break-before-make; returns (drops, retransmissions). DCTCP
/// keeps queues short, so any drop is the migration's.
fn migrate(make_before_break: bool) -> (u64, u64) {
    let latency = 100 * US;
    let link = LinkSpec {
        rate: 10 * G,
        delay: US,
    };
    let config = EngineConfig {
        switch_queue: QueueConfig::step_marking(
            isthmus_core::Limit::Packets(250),
            isthmus_core::Limit::Packets(65),
        ),
        host_queue: QueueConfig::step_marking(
            isthmus_core::Limit::Packets(250),
            isthmus_core::Limit::Packets(65),
        ),
        ..Default::default()
    };
    let mut e = Engine::new(leaf_spine(2, 2, 2, link, link).unwrap(), config, 1);
    for name in ["leaf0", "leaf1", "spine0", "spine1"] {
        let n = node(&e, name);
        e.set_miss(n, Miss::Drop).unwrap();
    }
    let dctcp = TcpConfig {
        dctcp: Some(isthmus_core::Dctcp::default()),
        ..Default::default()
    };
    let flow = e.add_tcp_flow(0, 2, 20_000_000, 0, &dctcp).unwrap();
    // ACKs return over spine 0 throughout.
    let (leaf0, leaf1, spine0) = (node(&e, "leaf0"), node(&e, "leaf1"), node(&e, "spine0"));
    for (sw, port) in [(leaf1, 2), (spine0, 0), (leaf0, 0)] {
        e.add_entry(0, sw, 10, of_flow(flow, 2), out(port)).unwrap();
    }
    let old = install_path(&mut e, 0, flow, 0, 10);
    e.run_until(5 * MS);
    // Make-before-break: the new path everywhere first; then the old entry at the first
    // hop, so no new packet takes the old path; then, once the old path has drained, the
    // rest. Break-before-make removes everything first and installs afterwards.
    let (install_at, first_removal, rest_removal) = if make_before_break {
        (latency, 2 * latency, 3 * latency)
    } else {
        (2 * latency, latency, latency)
    };
    install_path(&mut e, install_at, flow, 1, 5);
    for (hop, (sw, entry)) in old.into_iter().enumerate() {
        let at = if hop == 0 {
            first_removal
        } else {
            rest_removal
        };
        e.issue(at, Command::DeleteEntry { switch: sw, entry })
            .unwrap();
    }
    assert!(e.run_until_flows_finish(SEC));
    let r = e.flows().next().unwrap().clone();
    assert_eq!(r.bytes_delivered, 20_000_000);
    let spine1 = node(&e, "spine1");
    assert!(
        e.ports
            .iter()
            .filter(|p| p.node == spine1)
            .map(|p| p.counters.tx_packets)
            .sum::<u64>()
            > 1000
    );
    let drops: u64 = e.nodes.iter().map(|n| n.rule_drops).sum::<u64>()
        + e.ports.iter().map(|p| p.counters.drop_packets).sum::<u64>();
    (drops, r.retransmissions)
}

#[test]
fn make_before_break_migration_loses_nothing_and_break_before_make_does() {
    let (drops, _) = migrate(true);
    assert_eq!(drops, 0, "make-before-break lost packets");
    let (drops, retransmissions) = migrate(false);
    assert!(
        drops > 0 && retransmissions > 0,
        "break-before-make lost nothing: {drops} drops"
    );
}

#[test]
fn ecn_thresholds_change_at_runtime() {
    let link = LinkSpec {
        rate: 10 * G,
        delay: US,
    };
    let mut e = Engine::new(
        leaf_spine(1, 2, 4, link, link).unwrap(),
        EngineConfig::default(),
        1,
    );
    // All four flows cross leaf0's single uplink (port 4): the queue builds there.
    let leaf0 = node(&e, "leaf0");
    let dctcp = TcpConfig {
        dctcp: Some(isthmus_core::Dctcp::default()),
        ..Default::default()
    };
    for src in 0..4 {
        e.add_tcp_flow(src, 4, 5_000_000, 0, &dctcp).unwrap();
    }
    e.run_until(2 * MS);
    let marks = |e: &Engine| e.ports.iter().map(|p| p.counters.ecn_marks).sum::<u64>();
    assert_eq!(marks(&e), 0, "no threshold, no marks");
    let limit = isthmus_core::Limit::Packets(250);
    let config = QueueConfig::step_marking(limit, isthmus_core::Limit::Packets(20));
    e.issue(
        0,
        Command::ConfigureQueue {
            switch: leaf0,
            port: Some(4),
            config: config.clone(),
        },
    )
    .unwrap();
    e.run_until(4 * MS);
    assert!(marks(&e) > 0);
    let marked_port = e
        .ports
        .iter()
        .find(|p| p.node == leaf0 && p.local == 4)
        .unwrap();
    assert_eq!(
        marks(&e),
        marked_port.counters.ecn_marks,
        "only the chosen port marks"
    );
    let err = e
        .issue(
            0,
            Command::ConfigureQueue {
                switch: leaf0,
                port: Some(12),
                config,
            },
        )
        .unwrap_err();
    assert!(err.contains("port 12"), "{err}");
}

#[test]
fn a_modified_entry_keeps_its_counters_and_changes_its_action() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    let to2 = FlowMatch {
        dst: Some(2),
        ..Default::default()
    };
    let entry = e.add_entry(0, leaf0, 5, to2, out(2)).unwrap();
    e.add_udp_flow(0, 2, udp(G, 20 * 1472)).unwrap();
    e.run_until(100 * US);
    e.issue(
        0,
        Command::ModifyEntry {
            switch: leaf0,
            entry,
            action: out(3),
        },
    )
    .unwrap();
    assert!(e.run_until_flows_finish(SEC));
    let uplinks: Vec<u64> = e
        .ports
        .iter()
        .filter(|p| p.node == leaf0 && p.local >= 2)
        .map(|p| p.counters.tx_packets)
        .collect();
    assert_eq!(uplinks.iter().sum::<u64>(), 20);
    assert!(uplinks[0] > 0 && uplinks[1] > 0, "{uplinks:?}");
    let (_, installed) = e.entries().find(|(_, x)| x.id == entry).unwrap();
    assert_eq!(installed.packets, 20);
}

/// Moves flow 0 -> 2 from spine 0 to spine 1 while leaf 0's uplink to spine 0 is
/// congested by a second flow (1 -> 3, UDP at 7 Gb/s), so the old path holds a long
/// queue with the moved flow's packets in it. Every switch drops on a table miss, so a packet that finds
/// its entry gone is lost (counted as a rule drop). `retire`: the engine's RetirePath;
/// otherwise every old entry is deleted at once. Returns (rule drops, entries left).
fn migrate_under_load(latency: u64, tcp: bool, retire: bool) -> (u64, usize) {
    let mut e = fabric();
    let names = ["leaf0", "leaf1", "spine0", "spine1"];
    for name in names {
        let n = node(&e, name);
        e.set_miss(n, Miss::Drop).unwrap();
    }
    let (leaf0, leaf1, spine0) = (node(&e, "leaf0"), node(&e, "leaf1"), node(&e, "spine0"));
    let flow = if tcp {
        e.add_tcp_flow(0, 2, 10_000_000, 0, &TcpConfig::default())
            .unwrap()
    } else {
        e.add_udp_flow(0, 2, udp(4 * G, 0)).unwrap()
    };
    let background = e
        .add_udp_flow(
            1,
            3,
            UdpFlowSpec {
                stop: 20 * MS,
                ..udp(7 * G, 0)
            },
        )
        .unwrap();
    // Reverse path (ACKs) over spine 0; the background flow over spine 0 too.
    for (sw, port) in [(leaf1, 2), (spine0, 0), (leaf0, 0)] {
        e.add_entry(0, sw, 10, of_flow(flow, 2), out(port)).unwrap();
    }
    for (sw, port) in [(leaf0, 2), (spine0, 1), (leaf1, 1)] {
        e.add_entry(0, sw, 10, of_flow(background, 1), out(port))
            .unwrap();
    }
    let old = install_path(&mut e, 0, flow, 0, 10);
    // Both flows share leaf 0's uplink to spine 0 (more than 10 Gb/s offered into 10):
    // move the flow once 20 of its packets wait there.
    let uplink = e.nodes[leaf0 as usize].first_port + 2;
    let queued_of_flow = |e: &Engine| {
        let queue = e.ports[uplink as usize].queue.packets();
        queue.iter().filter(|&&p| e.packet(p).flow == flow).count()
    };
    let mut t = MS;
    while queued_of_flow(&e) < 20 {
        t += 10 * US;
        assert!(t < 10 * MS, "the old path never held a queue of the flow");
        e.run_until(t);
    }
    install_path(&mut e, latency, flow, 1, 5);
    if retire {
        e.issue(3 * latency, Command::RetirePath { flow, entries: old })
            .unwrap();
    } else {
        for (sw, entry) in old {
            e.issue(3 * latency, Command::DeleteEntry { switch: sw, entry })
                .unwrap();
        }
    }
    e.run_until(40 * MS);
    if tcp {
        assert_eq!(e.flows().next().unwrap().bytes_delivered, 10_000_000);
    }
    let left: usize = names
        .iter()
        .map(|n| e.entry_count(node(&e, n)).unwrap())
        .sum();
    (e.nodes.iter().map(|n| n.rule_drops).sum(), left)
}

#[test]
fn retiring_a_path_loses_nothing_at_any_control_latency() {
    for latency in [0, US, 50 * US] {
        for tcp in [false, true] {
            let (drops, left) = migrate_under_load(latency, tcp, true);
            assert_eq!(drops, 0, "latency {latency} ps, tcp {tcp}");
            // 3 reverse + 3 background + 3 new entries; the old path's are all gone.
            assert_eq!(left, 9, "latency {latency} ps, tcp {tcp}");
        }
    }
    // Deleting the old path at once drops what was still queued on it.
    let (drops, _) = migrate_under_load(0, false, false);
    assert!(drops >= 20, "{drops}");
}

#[test]
fn a_forwarding_loop_ends_by_time_to_live() {
    let mut e = fabric();
    let (leaf0, spine0) = (node(&e, "leaf0"), node(&e, "spine0"));
    // leaf0 sends everything for host 2 up to spine 0, which sends it straight back.
    let to_host2 = FlowMatch {
        dst: Some(2),
        ..Default::default()
    };
    e.add_entry(0, leaf0, 10, to_host2.clone(), out(2)).unwrap();
    e.add_entry(0, spine0, 10, to_host2, out(0)).unwrap();
    e.add_udp_flow(0, 2, udp(G, 10 * 1472)).unwrap();
    e.run_until(10 * MS);
    let ttl_drops: u64 = e.nodes.iter().map(|n| n.ttl_drops).sum();
    assert_eq!(ttl_drops, 10, "every packet of the flow dies in the loop");
    // Each reached 64 switches: 63 forwarded it, the 64th dropped it.
    assert_eq!(e.packet_hops(), 10 * 64);
}

#[test]
fn entries_may_only_use_groups_and_meters_that_exist() {
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    let group = FlowAction::forward(Forward::Group(3));
    let err = e
        .add_entry(0, leaf0, 1, FlowMatch::default(), group)
        .unwrap_err();
    assert!(
        err.contains("group 3 is not defined on switch 'leaf0'"),
        "{err}"
    );
    let metered = FlowAction {
        meter: Some(1),
        ..out(2)
    };
    let err = e
        .add_entry(0, leaf0, 1, FlowMatch::default(), metered)
        .unwrap_err();
    assert!(err.contains("meter 1 is not defined"), "{err}");
    // Defined in the same batch, with a latency: the definition is on its way, fine.
    e.issue(
        5 * US,
        Command::SetGroup {
            switch: leaf0,
            group: 3,
            group_def: Group::Select {
                ports: vec![2, 3],
                weights: vec![1, 1],
            },
        },
    )
    .unwrap();
    e.add_entry(5 * US, leaf0, 1, FlowMatch::default(), group)
        .unwrap();
}

#[test]
fn fired_and_cancelled_timers_are_freed_and_ids_never_reused() {
    let mut e = fabric();
    e.attach_control(true);
    let mut ids = std::collections::HashSet::new();
    for round in 0..1000u64 {
        let a = e.add_control_timer(round * US, None).unwrap();
        let b = e.add_control_timer(round * US, Some(US)).unwrap();
        assert!(ids.insert(a) && ids.insert(b));
        e.cancel_control_timer(b).unwrap();
        while e.run_until_control((round + 1) * US, false) {
            e.take_control_events();
        }
        assert!(e.live_control_timers() <= 2, "{}", e.live_control_timers());
    }
    assert_eq!(e.live_control_timers(), 0);
    assert!(
        e.cancel_control_timer(5).is_ok(),
        "cancelling a fired timer is harmless"
    );
    assert!(e.cancel_control_timer(99_999).is_err());
}

/// SetAqm changes a port's marking and nothing else: a DRR port keeps its scheduler,
/// limit and the other class's marking, and a class it lacks is refused by name.
#[test]
fn set_aqm_changes_only_the_marking() {
    use isthmus_core::queue::{AqmConfig, SchedulerConfig};
    let mut e = fabric();
    let leaf0 = node(&e, "leaf0");
    let drr = QueueConfig {
        limit: isthmus_core::Limit::Packets(100),
        scheduler: SchedulerConfig::Drr {
            quanta: vec![1500, 3000],
        },
        aqm: AqmConfig::DropTail,
        class_aqm: Vec::new(),
        device_queue: 3,
    };
    e.issue(
        0,
        Command::ConfigureQueue {
            switch: leaf0,
            port: Some(1),
            config: drr.clone(),
        },
    )
    .unwrap();
    let step = |k| AqmConfig::step(isthmus_core::Limit::Packets(k));
    for (class, k) in [(0, 20), (1, 30)] {
        e.issue(
            0,
            Command::SetAqm {
                switch: leaf0,
                port: Some(1),
                class: Some(class),
                aqm: step(k),
            },
        )
        .unwrap();
    }
    e.run_until(US);
    let port = |e: &Engine, local: u16| {
        e.ports
            .iter()
            .find(|p| p.node == leaf0 && p.local == local)
            .unwrap()
            .queue
            .config
            .clone()
    };
    let config = port(&e, 1);
    assert_eq!(config.scheduler, drr.scheduler);
    assert_eq!(config.limit, drr.limit);
    assert_eq!(config.device_queue, 3);
    assert_eq!(config.class_aqm, vec![Some(step(20)), Some(step(30))]);
    // Every port: each keeps its own queue; per-class settings go.
    let fifo_before = port(&e, 0);
    e.issue(
        0,
        Command::SetAqm {
            switch: leaf0,
            port: None,
            class: None,
            aqm: step(40),
        },
    )
    .unwrap();
    e.run_until(2 * US);
    let (drr_after, fifo_after) = (port(&e, 1), port(&e, 0));
    assert_eq!(drr_after.scheduler, drr.scheduler);
    assert!(drr_after.class_aqm.is_empty());
    assert_eq!(drr_after.aqm, step(40));
    assert_eq!(fifo_after.scheduler, fifo_before.scheduler);
    assert_eq!(fifo_after.limit, fifo_before.limit);
    let err = e
        .issue(
            0,
            Command::SetAqm {
                switch: leaf0,
                port: None,
                class: Some(1),
                aqm: step(5),
            },
        )
        .unwrap_err();
    assert!(
        err.contains("traffic_class 1 does not exist on port 0"),
        "{err}"
    );
}
