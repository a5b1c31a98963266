//! One simulation on many cores: a conservative parallel run over partitions.
//!
//! `Engine::set_partitions` splits the network (`partition.rs`); at the first run the
//! engine becomes the snapshot of P partition engines, each a copy of it that runs the
//! events of its own nodes only: its hosts' flow starts and timers, its ports'
//! transmissions, its switches' forwarding. A packet put on a link to another
//! partition's node leaves its packet arena and goes, with its arrival time, into a
//! mailbox for that partition (so does a PFC frame to another partition's port).
//!
//! The partitions run in windows as long as the lookahead, the shortest delay of a link
//! between partitions: what one partition does in a window reaches another no sooner
//! than the window's end, so within a window they need nothing from each other. At the
//! end of a window each partition takes its mail, ordered by (arrival time, sending
//! partition, order sent), into its own event list; then all look at every partition's
//! next event and unfinished flows, and the next window starts at the earliest event
//! (an idle stretch is skipped). No event is ever undone.
//!
//! What a partition does depends on its own events and its mail only, and its mail on
//! the other partitions' windows only: a run gives the same results on any number of
//! threads. Between runs the snapshot is brought up to date: each port and node from
//! the partition that owns it, each flow's record summed over the partitions its
//! sender, receiver and the switches on its path ran in.
//!
//! Equal-time events in different partitions run in an order of their own, so a
//! partitioned run is not the sequential run event for event; it is the same network
//! (results agree in distribution; docs/benchmark.md, "Beyond one core").

use crate::engine::Engine;
use crate::event::{EventKind, PortId};
use crate::packet::Packet;
use crate::partition::Partitioning;
use crate::telemetry::Sampler;
use crate::transport::{Flow, FlowRecord};
use crate::units::Time;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Something one partition's node sends another's, in time.
#[derive(Clone)]
pub(crate) enum Mail {
    /// `packet` reaches ingress port `port` at `time`.
    Arrive {
        time: Time,
        port: PortId,
        packet: Packet,
    },
    /// A PFC frame reaches egress port `port` at `time`.
    Pfc {
        time: Time,
        port: PortId,
        frame: u32,
    },
}

impl Mail {
    fn time(&self) -> Time {
        match self {
            Mail::Arrive { time, .. } | Mail::Pfc { time, .. } => *time,
        }
    }
}

/// An engine's place in a partitioned run: its partition, which partition owns each
/// port, and what it has sent the others this window.
#[derive(Clone)]
pub(crate) struct Member {
    pub me: u16,
    pub port_owner: Arc<Vec<u16>>,
    /// Mail for each partition, in the order sent.
    pub outgoing: Vec<Vec<Mail>>,
}

impl Member {
    /// The partition owning `port`'s node, if not this one.
    #[inline]
    pub fn elsewhere(&self, port: PortId) -> Option<usize> {
        let owner = self.port_owner[port as usize];
        (owner != self.me).then_some(owner as usize)
    }
}

/// How a run is split: partitions and the threads that run them.
#[derive(Clone, Debug)]
pub struct Split {
    pub plan: Partitioning,
    pub threads: usize,
}

/// The partitions of a run that has started.
#[derive(Clone)]
pub(crate) struct Partitioned {
    parts: Vec<Engine>,
    port_owner: Arc<Vec<u16>>,
    node_owner: Vec<u16>,
    lookahead: Time,
    threads: usize,
    /// Flows unfinished when the run split (each partition started from this count).
    unfinished_at_split: usize,
    /// The snapshot's ports, nodes and flows lag the partitions (a run since the last
    /// `sync_partitions`).
    stale: bool,
}

/// What each partition tells the others after a window.
#[derive(Clone, Copy, Default)]
struct Status {
    next_event: Option<Time>,
    finished: usize,
}

impl Partitioned {
    /// Copies of `engine`, one per partition of `split`, each keeping the pending
    /// events of its own nodes only, and the state of the flows whose sender or
    /// receiver it runs (the others' records only, `Transport::Elsewhere`); `engine`
    /// keeps every flow's record only, its state being the partitions'. Refuses what a
    /// partitioned run cannot do yet.
    pub(crate) fn new(engine: &mut Engine, split: &Split) -> Result<Partitioned, String> {
        engine.check_partitionable()?;
        let plan = &split.plan;
        let hosts = &engine.topology().hosts;
        let ends: Vec<[u16; 2]> = engine
            .flows
            .iter()
            .map(|f| [f.record.src, f.record.dst].map(|h| plan.owner[hosts[h as usize] as usize]))
            .collect();
        // Each flow's state moves to its sender's partition and is copied to its
        // receiver's, if another; every other copy (the snapshot's too) is its record.
        let mut own_flows: Vec<Vec<Flow>> = (0..plan.parts)
            .map(|_| Vec::with_capacity(ends.len()))
            .collect();
        let mut records = Vec::with_capacity(ends.len());
        for (flow, [sender, receiver]) in std::mem::take(&mut engine.flows).into_iter().zip(ends) {
            records.push(flow.elsewhere());
            for (p, list) in own_flows.iter_mut().enumerate() {
                if p as u16 == receiver && receiver != sender {
                    list.push(flow.clone());
                } else if p as u16 != sender {
                    list.push(flow.elsewhere());
                }
            }
            own_flows[sender as usize].push(flow);
        }
        let port_owner: Arc<Vec<u16>> = Arc::new(
            engine
                .ports
                .iter()
                .map(|p| plan.owner[p.node as usize])
                .collect(),
        );
        let mut parts = Vec::with_capacity(plan.parts);
        for (me, flows) in (0..plan.parts as u16).zip(own_flows) {
            // Cloned without flows or split (both set aside), then given its own flows.
            let mut part = engine.clone();
            part.flows = flows;
            part.partitioned = None;
            part.member = Some(Box::new(Member {
                me,
                port_owner: Arc::clone(&port_owner),
                outgoing: vec![Vec::new(); plan.parts],
            }));
            part.keep_own_events(&plan.owner, me);
            parts.push(part);
        }
        engine.flows = records;
        Ok(Partitioned {
            parts,
            port_owner,
            node_owner: plan.owner.clone(),
            lookahead: plan.lookahead,
            threads: split.threads.clamp(1, plan.parts),
            unfinished_at_split: engine.unfinished_flows(),
            stale: false,
        })
    }

    /// Runs every partition's events up to `until` (inclusive), or until every flow has
    /// finished when `flows_finish`; returns whether every flow has.
    pub(crate) fn run(&mut self, until: Time, flows_finish: bool) -> bool {
        let p = self.parts.len();
        let mailboxes: Vec<Mutex<Vec<Mail>>> = (0..p * p).map(|_| Mutex::new(Vec::new())).collect();
        let statuses: Vec<Mutex<Status>> = self
            .parts
            .iter()
            .map(|part| Mutex::new(part.partition_status(self.unfinished_at_split)))
            .collect();
        let barrier = SpinBarrier::new(self.threads);
        let shared = Shared {
            mailboxes: &mailboxes,
            statuses: &statuses,
            barrier: &barrier,
            parts: p,
            lookahead: self.lookahead,
            until,
            flows_finish,
            flows: self.unfinished_at_split,
        };
        let per_thread = p.div_ceil(self.threads);
        let mut groups: Vec<(usize, &mut [Engine])> = self
            .parts
            .chunks_mut(per_thread)
            .enumerate()
            .map(|(i, g)| (i * per_thread, g))
            .collect();
        let first = groups.remove(0);
        let shared = &shared;
        std::thread::scope(|scope| {
            for (offset, group) in groups {
                scope.spawn(move || shared.work(offset, group));
            }
            shared.work(first.0, first.1);
        });
        let finished: usize = statuses
            .iter()
            .map(|s| s.lock().expect("status").finished)
            .sum();
        if !flows_finish {
            for part in &mut self.parts {
                part.advance_clock(until);
            }
        }
        finished == self.unfinished_at_split
    }

    /// The snapshot's clock and counters from the partitions (cheap: after every run).
    fn update_totals(&self, snapshot: &mut Engine) {
        let finished: usize = self
            .parts
            .iter()
            .map(|part| self.unfinished_at_split - part.unfinished_flows())
            .sum();
        let now = self.parts.iter().map(|part| part.now()).max().unwrap_or(0);
        let events = self.parts.iter().map(|part| part.events_processed()).sum();
        let hops = self.parts.iter().map(|part| part.packet_hops()).sum();
        snapshot.set_partitioned_totals(now, events, hops, self.unfinished_at_split - finished);
    }

    /// Brings `snapshot` (the engine that split) up to date from the partitions: each
    /// port and node from its owner, every flow's record summed over the partitions (a
    /// flow's transport state stays with its sender's partition: `Engine::tcp_window`).
    fn update_tables(&self, snapshot: &mut Engine) {
        for (i, port) in snapshot.ports.iter_mut().enumerate() {
            *port = self.parts[self.port_owner[i] as usize].ports[i].clone();
        }
        for (n, node) in snapshot.nodes.iter_mut().enumerate() {
            *node = self.parts[self.node_owner[n] as usize].nodes[n].clone();
        }
        for (f, flow) in snapshot.flows.iter_mut().enumerate() {
            flow.record = merged(self.parts.iter().map(|part| &part.flows[f].record));
        }
        // Each packet's wait is counted by the partition owning the port it left by.
        for (i, whole) in snapshot.waits.iter_mut().enumerate() {
            *whole = Default::default();
            for part in &self.parts {
                whole.add(&part.waits[i]);
            }
        }
        if let Some(whole) = snapshot.sampler.as_mut() {
            let samplers: Vec<&Sampler> = self
                .parts
                .iter()
                .map(|part| part.sampler.as_ref().expect("partitions clone the sampler"))
                .collect();
            *whole = merged_samples(&samplers, &self.port_owner);
        }
    }

    /// The partition that runs `flow`'s sender, which holds its transport's state.
    pub(crate) fn sender_of(&self, flow: u32) -> Option<&Engine> {
        let src = self.parts.first()?.flows.get(flow as usize)?.record.src;
        let node = self.parts[0].topology().hosts[src as usize];
        Some(&self.parts[self.node_owner[node as usize] as usize])
    }

    pub(crate) fn live_packets(&self) -> usize {
        self.parts.iter().map(|part| part.arena.live()).sum()
    }

    pub(crate) fn next_event_time(&self) -> Option<Time> {
        self.parts
            .iter()
            .filter_map(|part| part.events.peek_time())
            .min()
    }
}

/// The time series from every partition's: each partition samples every port at the
/// same times, and a port's values are those of the partition that owns it (the others'
/// copies of it stand still). Partitions run the same sample events up to the same end,
/// so they hold the same rows.
fn merged_samples(samplers: &[&Sampler], owner: &[u16]) -> Sampler {
    let first = samplers[0];
    let ports = first.num_ports;
    debug_assert!(samplers.iter().all(|s| s.times == first.times));
    let rows = samplers.iter().map(|s| s.times.len()).min().unwrap_or(0);
    let mut whole = Sampler::new(first.interval, ports);
    whole.times = first.times[..rows].to_vec();
    let columns = |column: fn(&Sampler) -> &Vec<u64>| -> Vec<u64> {
        (0..rows * ports)
            .map(|i| column(samplers[owner[i % ports] as usize])[i])
            .collect()
    };
    whole.queue_packets = columns(|s| &s.queue_packets);
    whole.queue_bytes = columns(|s| &s.queue_bytes);
    whole.tx_bytes = columns(|s| &s.tx_bytes);
    whole.drop_packets = columns(|s| &s.drop_packets);
    whole.ecn_marks = columns(|s| &s.ecn_marks);
    whole
}

/// One flow's record from its copies in every partition: each counter was counted in
/// one partition only (sent at the sender, delivered at the receiver, dropped where it
/// fell), so the sum is the whole; times are the earliest first and latest last.
fn merged<'a>(copies: impl Iterator<Item = &'a FlowRecord>) -> FlowRecord {
    let mut whole: Option<FlowRecord> = None;
    for r in copies {
        let Some(w) = whole.as_mut() else {
            whole = Some(r.clone());
            continue;
        };
        w.first_delivery = match (w.first_delivery, r.first_delivery) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        w.last_delivery = w.last_delivery.max(r.last_delivery);
        w.finish = w.finish.max(r.finish);
        w.bytes_sent += r.bytes_sent;
        w.bytes_delivered += r.bytes_delivered;
        w.bytes_received += r.bytes_received;
        w.packets_sent += r.packets_sent;
        w.packets_delivered += r.packets_delivered;
        w.packets_dropped += r.packets_dropped;
        w.retransmissions += r.retransmissions;
        w.timeouts += r.timeouts;
        w.out_of_order += r.out_of_order;
        w.delay_sum_ps += r.delay_sum_ps;
        w.delay_packets += r.delay_packets;
        w.nic_queued_bytes += r.nic_queued_bytes;
        w.nic_blocked |= r.nic_blocked;
    }
    whole.unwrap_or_default()
}

/// A partition's mail of a window, and its (arrival time, position) order.
type Inbox = (Vec<Mail>, Vec<(Time, u32)>);

/// What the threads of a run share: the mailboxes (partition d's mail from s at
/// d * parts + s), each partition's status, the barrier, and the run's bounds.
struct Shared<'a> {
    mailboxes: &'a [Mutex<Vec<Mail>>],
    statuses: &'a [Mutex<Status>],
    barrier: &'a SpinBarrier,
    parts: usize,
    lookahead: Time,
    until: Time,
    flows_finish: bool,
    flows: usize,
}

impl Shared<'_> {
    /// One thread's share of the run: partitions `offset..offset + group.len()`, window
    /// after window, in step with the other threads.
    fn work(&self, offset: usize, group: &mut [Engine]) {
        let mut start = match self.decide() {
            Some(start) => start,
            None => return,
        };
        let mut inboxes: Vec<Inbox> = group.iter().map(|_| Default::default()).collect();
        loop {
            // Events before `end` cannot be reached by anything another partition does
            // at or after `start`.
            let end = start
                .saturating_add(self.lookahead)
                .min(self.until.saturating_add(1));
            for (i, part) in group.iter_mut().enumerate() {
                part.run_before(end);
                let me = offset + i;
                let member = part.member.as_mut().expect("a partition engine");
                for (to, mail) in member.outgoing.iter_mut().enumerate() {
                    if !mail.is_empty() {
                        let mut slot = self.mailboxes[to * self.parts + me]
                            .lock()
                            .expect("mailbox");
                        slot.append(mail);
                    }
                }
            }
            self.barrier.wait();
            for (i, part) in group.iter_mut().enumerate() {
                let me = offset + i;
                // Buffers a partition keeps from window to window: fresh ones each
                // window (thousands of packets on a big fabric, and a stable sort's
                // scratch) churn the allocator, which then holds on to freed memory.
                let (incoming, order) = &mut inboxes[i];
                for from in 0..self.parts {
                    incoming.append(
                        &mut self.mailboxes[me * self.parts + from]
                            .lock()
                            .expect("mailbox"),
                    );
                }
                // By (time, position): equal times stay in (sending partition, order
                // sent) order, and sorting the keys in place needs no scratch.
                order.extend(
                    incoming
                        .iter()
                        .enumerate()
                        .map(|(k, m)| (m.time(), k as u32)),
                );
                order.sort_unstable();
                part.take_mail(order.drain(..).map(|(_, k)| &incoming[k as usize]));
                incoming.clear();
                *self.statuses[me].lock().expect("status") = part.partition_status(self.flows);
            }
            self.barrier.wait();
            // Every thread reads the statuses before the next barrier, and nobody writes
            // them again until after it.
            match self.decide() {
                Some(next) if end <= self.until => start = next.max(end),
                _ => break,
            }
        }
    }

    /// Where the next window starts (the earliest pending event anywhere), or None when
    /// the run is over: nothing left by `until`, or every flow finished when the run
    /// stops at that. Every thread decides alike from the same statuses.
    fn decide(&self) -> Option<Time> {
        let mut next: Option<Time> = None;
        let mut finished = 0;
        for status in self.statuses {
            let s = *status.lock().expect("status");
            finished += s.finished;
            next = match (next, s.next_event) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        if self.flows_finish && finished == self.flows {
            return None;
        }
        next.filter(|&t| t <= self.until)
    }
}

/// Threads wait here until all have come: spinning briefly (a window is short), then
/// yielding the core.
struct SpinBarrier {
    threads: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    fn new(threads: usize) -> SpinBarrier {
        SpinBarrier {
            threads,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    fn wait(&self) {
        if self.threads == 1 {
            return;
        }
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return;
        }
        let mut spins = 0u32;
        while self.generation.load(Ordering::Acquire) == generation {
            if spins < 4096 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

impl Engine {
    /// Splits the next runs into `parts` partitions (1: the sequential engine) run by
    /// `threads` threads; before the first run only. Refuses a split the network cannot
    /// take (see `Partitioning::plan`).
    pub fn set_partitions(&mut self, parts: usize, threads: usize) -> Result<(), String> {
        if self.now() > 0 || self.events_processed() > 0 || self.partitioned.is_some() {
            return Err("partitions are set before the first run".into());
        }
        if threads == 0 {
            return Err("threads must be at least 1".into());
        }
        let plan = Partitioning::plan(self.topology(), parts)?;
        self.split = (plan.parts > 1).then_some(Split { plan, threads });
        Ok(())
    }

    /// The split the next runs use, if any.
    pub fn split(&self) -> Option<&Split> {
        self.split.as_ref()
    }

    /// Whether a partitioned run has started: from then on this engine is a snapshot
    /// of its partitions, brought up to date after each run, and nothing may change it.
    pub fn partitions_started(&self) -> bool {
        self.partitioned.is_some()
    }

    /// Makes the partitions if this engine is split and they are not made yet, or says
    /// what of this run a partitioned run cannot do yet.
    pub fn start_partitions(&mut self) -> Result<(), String> {
        if self.partitioned.is_none() {
            // Set aside while the partitions take this engine's flows (copies are made
            // without it), then put back.
            if let Some(split) = self.split.take() {
                let made = Partitioned::new(self, &split);
                self.split = Some(split);
                self.partitioned = Some(Box::new(made?));
            }
        }
        Ok(())
    }

    /// A run of the partitions up to `until` (or until every flow has finished), the
    /// snapshot brought up to date after it; returns whether every flow has finished.
    pub(crate) fn run_partitioned(&mut self, until: Time, flows_finish: bool) -> bool {
        if let Err(why) = self.start_partitions() {
            panic!("this run cannot be partitioned: {why}");
        }
        let mut partitioned = self.partitioned.take().expect("started");
        let all = partitioned.run(until, flows_finish);
        partitioned.update_totals(self);
        partitioned.stale = true;
        self.partitioned = Some(partitioned);
        all
    }

    /// Brings this engine's ports, nodes and flows up to date from its partitions after
    /// a partitioned run (its clock and counters always are). Readers of a partitioned
    /// engine's tables call it first; it does nothing otherwise.
    pub fn sync_partitions(&mut self) {
        if let Some(mut partitioned) = self.partitioned.take() {
            if partitioned.stale {
                partitioned.update_tables(self);
                partitioned.stale = false;
            }
            self.partitioned = Some(partitioned);
        }
    }

    /// Refuses, by name, what a partitioned run cannot do yet.
    pub(crate) fn check_partitionable(&self) -> Result<(), String> {
        let refuse = |what: &str| {
            Err(format!(
                "{what} cannot run in partitions yet: run it with one partition (threads = 1)"
            ))
        };
        if self.control.attached {
            return refuse("a control plane");
        }
        if !self.rounds.records().is_empty() || self.reserved_flows > 0 {
            return refuse("incast rounds");
        }
        for (id, flow) in self.flows.iter().enumerate() {
            let what = match (&flow.transport, &flow.messages, &flow.regulation) {
                (crate::transport::Transport::Tcp(_), None, None) => continue,
                // Only a split makes these, of flows it already took.
                (crate::transport::Transport::Elsewhere, ..) => continue,
                (crate::transport::Transport::Tcp(_), Some(_), _) => "a message stream",
                (crate::transport::Transport::Tcp(_), None, Some(_)) => "a BCN-regulated flow",
                (crate::transport::Transport::Udp(_), ..) => "a UDP flow",
                (crate::transport::Transport::Bcn(_), ..) => "a BCN source",
                (crate::transport::Transport::Dcqcn(_), ..) => "a DCQCN flow",
                (crate::transport::Transport::Mptcp(_), ..) => "an MPTCP connection",
            };
            return refuse(&format!("{what} (flow {id})"));
        }
        Ok(())
    }

    /// Keeps the pending events of partition `me`'s nodes only (`owner`: each node's
    /// partition): its hosts' flow starts and timers, its ports' and switches' events.
    pub(crate) fn keep_own_events(&mut self, owner: &[u16], me: u16) {
        let port_node: Vec<u32> = self.ports.iter().map(|p| p.node).collect();
        let hosts = &self.topology().hosts;
        let flow_host: Vec<u32> = self
            .flows
            .iter()
            .map(|f| hosts[f.record.src as usize])
            .collect();
        let mine = |node: u32| owner[node as usize] == me;
        self.events = self.events.filtered(|e| match e.kind() {
            EventKind::FlowStart { flow } | EventKind::FlowTimer { flow, .. } => {
                mine(flow_host[flow as usize])
            }
            EventKind::Arrive { port, .. }
            | EventKind::PortFree { port }
            | EventKind::Pfc { port, .. } => mine(port_node[port as usize]),
            EventKind::EntryTimeout { node, .. } => mine(node),
            // Every partition samples at the same times; each port's values are taken
            // from the partition that owns it (`Partitioned::update_tables`).
            EventKind::Sample => true,
            // Refused above (control); kept once, by partition 0.
            EventKind::ControlTick { .. }
            | EventKind::Command { .. }
            | EventKind::DrainCheck { .. } => me == 0,
        });
    }

    /// The snapshot's clock and counters, from its partitions.
    pub(crate) fn set_partitioned_totals(
        &mut self,
        now: Time,
        events: u64,
        hops: u64,
        unfinished: usize,
    ) {
        self.now = now;
        self.events_processed = events;
        self.packet_hops = hops;
        self.unfinished_flows = unfinished;
    }

    /// Runs this partition's events before `end`.
    fn run_before(&mut self, end: Time) {
        if end == 0 {
            return;
        }
        while let Some(ev) = self.events.pop_until(end - 1) {
            self.handle_event(ev);
        }
    }

    /// Takes mail from other partitions into this one's packet arena and event list.
    fn take_mail<'a>(&mut self, mail: impl Iterator<Item = &'a Mail>) {
        for m in mail {
            match *m {
                Mail::Arrive {
                    time,
                    port,
                    ref packet,
                } => {
                    let pkt = self.arena.alloc(packet.clone());
                    self.events.push(time, EventKind::Arrive { pkt, port });
                }
                Mail::Pfc { time, port, frame } => {
                    self.events.push(time, EventKind::Pfc { port, frame });
                }
            }
        }
    }

    /// This partition's earliest pending event, and the flows that finished in it.
    fn partition_status(&self, flows_at_split: usize) -> Status {
        Status {
            next_event: self.events.peek_time(),
            finished: flows_at_split - self.unfinished_flows(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::topology::builders::leaf_spine;
    use crate::transport::Transport;
    use crate::units::{MS, US};
    use crate::{Engine, EngineConfig, LinkSpec, TcpConfig};

    #[test]
    fn a_partition_holds_the_state_of_the_flows_it_runs_an_end_of_and_the_snapshot_none() {
        let link = LinkSpec {
            rate: 10_000_000_000,
            delay: US,
        };
        let mut e = Engine::new(
            leaf_spine(2, 4, 4, link, link).unwrap(),
            EngineConfig::default(),
            1,
        );
        // Hosts 0-3 under leaf 0, ..., 12-15 under leaf 3; two partitions of two leaves.
        for (src, dst) in [(0, 4), (0, 12), (8, 12), (12, 1)] {
            e.add_tcp_flow(src, dst, 100_000, 0, &TcpConfig::default())
                .unwrap();
        }
        e.set_partitions(2, 1).unwrap();
        e.start_partitions().unwrap();
        let runs = |engine: &Engine| -> Vec<bool> {
            engine
                .flows
                .iter()
                .map(|f| !matches!(f.transport, Transport::Elsewhere))
                .collect()
        };
        let parts = &e.partitioned.as_ref().unwrap().parts;
        assert_eq!(runs(&parts[0]), [true, true, false, true]);
        assert_eq!(runs(&parts[1]), [false, true, true, true]);
        assert_eq!(runs(&e), [false; 4]);
        assert!(e.run_until_flows_finish(10 * MS));
        // The snapshot answers for a sender's state from the partition running it.
        assert!((0..4).all(|f| e.tcp_window(f).is_some()));
    }
}
