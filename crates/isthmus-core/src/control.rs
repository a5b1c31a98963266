//! The seam between the engine and the control plane: events the engine reports to
//! controllers, and commands controllers send back, applied after the control channel's
//! latency.
//!
//! The engine runs until something needs a controller's attention (a timer of an app, a
//! packet-in, a flow opening or finishing, an entry expiring), finishes every event at
//! that same instant, and stops with a batch of [`ControlEvent`]s. Commands issued in
//! reply take effect `latency` later, in issue order.

use crate::flowtable::{FlowAction, FlowMatch, Group, RemovalReason};
use crate::units::{Limit, Rate, Time, SEC};

/// A flow and the host its packets come from (one direction of the flow).
pub type FlowDirection = (u32, u32);

/// Marks id `id` in a growable list of flags.
fn mark(flags: &mut Vec<bool>, id: u32) {
    if flags.len() <= id as usize {
        flags.resize(id as usize + 1, false);
    }
    flags[id as usize] = true;
}

/// Something a controller is told about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlEvent {
    /// A control timer fired.
    Tick { timer: u32 },
    /// A switch sent a packet to the controller; it waits in `buffer`.
    PacketIn {
        switch: u32,
        in_port: u16,
        buffer: u32,
        flow: u32,
        src: u32,
        dst: u32,
        size: u32,
        table_miss: bool,
    },
    /// A flow opened at its source (flows whose size the application announces).
    FlowArrival { flow: u32 },
    /// A flow's last byte reached its receiver.
    FlowFinished { flow: u32 },
    /// A watched switch forwarded the first packet of a flow (in one direction: from
    /// host `src`).
    FlowCrossing {
        switch: u32,
        flow: u32,
        src: u32,
        in_port: u16,
    },
    /// A flow entry left a switch's table.
    EntryRemoved {
        switch: u32,
        entry: u32,
        reason: RemovalReason,
        packets: u64,
        bytes: u64,
    },
}

/// A change a controller asks for. Crosses into the engine as one serialised value
/// tagged by `kind` ("add_entry", "set_aqm", ...); durations in ps, rates in bit/s.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    AddEntry {
        switch: u32,
        /// The engine numbers entries (`Engine::command`); a sender cannot choose.
        #[serde(skip_deserializing)]
        entry: u32,
        priority: u16,
        matcher: FlowMatch,
        action: FlowAction,
        idle_timeout: Option<Time>,
        hard_timeout: Option<Time>,
    },
    DeleteEntry {
        switch: u32,
        entry: u32,
    },
    /// Replace an installed entry's action, keeping its match, priority and counters.
    ModifyEntry {
        switch: u32,
        entry: u32,
        action: FlowAction,
    },
    SetGroup {
        switch: u32,
        group: u32,
        group_def: Group,
    },
    SetMeter {
        switch: u32,
        meter: u32,
        rate: Rate,
        burst: u64,
    },
    /// Release a packet-in's buffer: out of `port`, or back through the table if None.
    PacketOut {
        buffer: u32,
        port: Option<u16>,
    },
    /// Release a packet-in's buffer by flooding it.
    FloodOut {
        buffer: u32,
    },
    /// The ports `switch` floods out of (a spanning tree's, to keep floods loop-free).
    SetFloodPorts {
        switch: u32,
        ports: Vec<u16>,
    },
    DropBuffer {
        buffer: u32,
    },
    /// Stop a flow's sender from sending new data (already sent data still flows).
    Hold {
        flow: u32,
    },
    Release {
        flow: u32,
    },
    /// Space a flow's packets at most `rate` apart; None removes the pacing.
    Pace {
        flow: u32,
        rate: Option<Rate>,
    },
    /// Pace one subflow of an MPTCP connection: Some(0) gives it no new data, None
    /// lets its window decide.
    PaceSubflow {
        flow: u32,
        subflow: u8,
        rate: Option<Rate>,
    },
    SetLink {
        link: u32,
        up: bool,
    },
    /// Give BCN congestion points (switch, port) predicted queue values (packets) that
    /// decide their feedback instead of the measured queue; None measures again (the
    /// IBCN hook, every point in one command).
    SetBcnPredictions {
        points: Vec<(u32, u16, Option<Vec<f64>>)>,
    },
    /// Replace the queueing of one port of `switch` (None: every port). A change of
    /// AQM alone keeps the queues as they are; any other change re-queues the waiting
    /// packets in service order under the new configuration.
    ConfigureQueue {
        switch: u32,
        port: Option<u16>,
        config: crate::queue::QueueConfig,
    },
    /// Change only the AQM (the marking) of one port of `switch` (None: every port), of
    /// every class's queue (`class` None: per-class settings go) or of class `class`'s
    /// queue alone; each port keeps its own scheduler, limit and device queue, and the
    /// packets waiting stay where they are.
    SetAqm {
        switch: u32,
        port: Option<u16>,
        class: Option<u8>,
        aqm: crate::queue::AqmConfig,
    },
    /// Take a migrated flow off its old path without losing what is on it: the first
    /// entry of `entries` (the path's first hop, which no new packet may take) goes at
    /// once; the others stay until the flow's packets already past the first hop have
    /// left the path, then go too.
    RetirePath {
        flow: u32,
        entries: Vec<(u32, u32)>,
    },
}

use crate::engine::{Crossing, Engine};
use crate::event::{EventKind, PortId};
use crate::flowtable::{FlowEntry, Forward, Meter, Miss};
use crate::packet::PacketId;
use crate::slab::Slab;
use crate::topology::NodeKind;

/// What the control plane keeps in the engine, apart from the switches' tables: the
/// events waiting for it, the packets switches sent up, commands on their way, its
/// timers, migrated paths draining, and the numbering of entries.
#[derive(Clone, Default)]
pub(crate) struct ControlState {
    /// Events waiting for the control plane; recorded only while `attached`.
    pub(crate) events: Vec<(Time, ControlEvent)>,
    pub(crate) attached: bool,
    pub(crate) buffers: Slab<Buffered>,
    pub(crate) pending: Slab<Command>,
    /// Live timers by id; ids are never reused, and a timer leaves the map once it can
    /// fire no more, so long runs with many one-shot timers stay flat.
    pub(crate) timers: crate::flowtable::KeyMap<u32, ControlTimer>,
    pub(crate) next_timer_id: u32,
    pub(crate) draining: Slab<Draining>,
    pub(crate) next_entry_id: u32,
}

/// A packet held at a switch while the controller decides about it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buffered {
    pub pkt: PacketId,
    pub node: u32,
    pub in_port: u16,
    /// A packet-out or drop for it has been issued (and may be in flight).
    pub claimed: bool,
}

/// A control-plane timer: fires once, or every `period`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ControlTimer {
    pub period: Option<Time>,
    pub active: bool,
}

/// Old entries of a migrated flow waiting for the packets already on the old path to
/// leave it before they are removed.
#[derive(Clone, Debug)]
pub(crate) struct Draining {
    pub flow: u32,
    pub entries: Vec<(u32, u32)>,
    /// How long one wait lasts: the old path's worst-case transit (see control.rs).
    pub wait: Time,
}

impl Engine {
    /// Starts (or stops) recording control events. Without a control plane attached the
    /// engine records none, so plain runs pay nothing for the seam.
    pub fn attach_control(&mut self, attached: bool) {
        self.control.attached = attached;
    }

    /// Runs until control events are waiting (after finishing every event at that
    /// instant), or the clock reaches `limit`, or, with `until_flows_finish`, the last
    /// flow finishes. Returns true if it stopped for control events.
    pub fn run_until_control(&mut self, limit: Time, until_flows_finish: bool) -> bool {
        let mut horizon = limit;
        while let Some(ev) = self.events.pop_until(horizon) {
            self.handle_event(ev);
            if !self.control.events.is_empty() {
                horizon = horizon.min(self.now());
            } else if until_flows_finish && self.unfinished_flows() == 0 {
                return false;
            }
        }
        if self.control.events.is_empty() {
            if !(until_flows_finish && self.unfinished_flows() == 0) {
                self.advance_clock(limit);
            }
            false
        } else {
            true
        }
    }

    /// The waiting control events, oldest first, with the times they happened.
    pub fn take_control_events(&mut self) -> Vec<(Time, ControlEvent)> {
        std::mem::take(&mut self.control.events)
    }

    /// A control timer firing first at `first`, then every `period` if given. Ids are
    /// never reused: a one-shot timer's id names that timer alone, even after it fired.
    pub fn add_control_timer(&mut self, first: Time, period: Option<Time>) -> Result<u32, String> {
        if first < self.now() {
            return Err(format!(
                "a timer cannot fire in the past ({first} ps < now {} ps)",
                self.now()
            ));
        }
        if period == Some(0) {
            return Err("a timer's period must be greater than zero".into());
        }
        let id = self.control.next_timer_id;
        self.control.next_timer_id = id
            .checked_add(1)
            .ok_or("the run has used up the 2^32 control timer ids")?;
        self.control.timers.insert(
            id,
            ControlTimer {
                period,
                active: true,
            },
        );
        self.events
            .push(first, EventKind::ControlTick { timer: id });
        Ok(id)
    }

    /// Stops a timer; cancelling one that already fired its last time does nothing.
    pub fn cancel_control_timer(&mut self, timer: u32) -> Result<(), String> {
        if timer >= self.control.next_timer_id {
            return Err(format!("no control timer {timer}"));
        }
        if let Some(t) = self.control.timers.get_mut(&timer) {
            // Its pending tick removes it when it comes due.
            t.active = false;
        }
        Ok(())
    }

    /// Timers that can still fire (or whose last tick is still pending).
    pub fn live_control_timers(&self) -> usize {
        self.control.timers.len()
    }

    pub(crate) fn on_control_tick(&mut self, timer: u32) {
        let Some(&t) = self.control.timers.get(&timer) else {
            return;
        };
        if !t.active {
            self.control.timers.remove(&timer);
            return;
        }
        if self.control.attached {
            self.control
                .events
                .push((self.now(), ControlEvent::Tick { timer }));
        }
        match t.period {
            // A tick past the end of time never comes: the timer just stops.
            Some(period) => self.events.push(
                self.now().saturating_add(period),
                EventKind::ControlTick { timer },
            ),
            None => {
                self.control.timers.remove(&timer);
            }
        }
    }

    /// What switch `switch` does with packets no entry matches.
    pub fn set_miss(&mut self, switch: u32, miss: Miss) -> Result<(), String> {
        self.check_switch(switch)?;
        self.nodes[switch as usize].miss = miss;
        Ok(())
    }

    fn check_switch(&self, switch: u32) -> Result<(), String> {
        match self.nodes.get(switch as usize) {
            None => Err(format!(
                "switch {switch} does not exist; nodes are numbered 0..{}",
                self.nodes.len() - 1
            )),
            Some(n) if n.kind != NodeKind::Switch => Err(format!(
                "node {switch} ('{}') is a host, not a switch",
                self.topology().nodes[switch as usize].name
            )),
            Some(_) => Ok(()),
        }
    }

    fn check_port(&self, switch: u32, port: u16) -> Result<(), String> {
        let n = self.nodes[switch as usize].num_ports;
        if port >= n {
            return Err(format!(
                "port {port} does not exist on switch '{}' (it has ports 0..{})",
                self.topology().nodes[switch as usize].name,
                n - 1
            ));
        }
        Ok(())
    }

    fn check_flow(&self, flow: u32) -> Result<(), String> {
        if flow as usize >= self.flows.len() {
            return Err(format!(
                "flow {flow} does not exist; there are {} flows",
                self.flows.len()
            ));
        }
        Ok(())
    }

    /// Hold, release and pace act on senders that have a rate or window to govern.
    fn check_governable(&self, flow: u32) -> Result<(), String> {
        self.check_flow(flow)?;
        use crate::transport::Transport;
        if let Transport::Bcn(_) | Transport::Mptcp(_) = self.flows[flow as usize].transport {
            return Err(crate::transport::ungovernable(flow));
        }
        Ok(())
    }

    /// Issues `cmd` to take effect after `delay`. An `AddEntry` is given the next entry
    /// id (whatever it carried), which is returned: valid at once, for deleting it later.
    pub fn command(&mut self, delay: Time, mut cmd: Command) -> Result<Option<u32>, String> {
        let id = match &mut cmd {
            Command::AddEntry { entry, .. } => {
                *entry = self.control.next_entry_id;
                Some(*entry)
            }
            _ => None,
        };
        self.issue(delay, cmd)?;
        if id.is_some() {
            self.control.next_entry_id += 1;
        }
        Ok(id)
    }

    /// Installs a permanent entry on `switch` after `delay`; returns its id. (One that
    /// expires is a `Command::AddEntry` with its timeouts.)
    pub fn add_entry(
        &mut self,
        delay: Time,
        switch: u32,
        priority: u16,
        matcher: FlowMatch,
        action: FlowAction,
    ) -> Result<u32, String> {
        let cmd = Command::AddEntry {
            switch,
            entry: 0,
            priority,
            matcher,
            action,
            idle_timeout: None,
            hard_timeout: None,
        };
        Ok(self.command(delay, cmd)?.expect("an entry is numbered"))
    }

    /// Checks a command against the network now, so a bad one fails when issued, with
    /// a message naming the switch, port or flow.
    pub fn validate(&self, cmd: &Command) -> Result<(), String> {
        match cmd {
            Command::AddEntry {
                switch,
                action,
                idle_timeout,
                hard_timeout,
                ..
            } => {
                self.check_switch(*switch)?;
                self.check_action(*switch, action)?;
                if *idle_timeout == Some(0) || *hard_timeout == Some(0) {
                    return Err(
                        "a timeout must be greater than zero (leave it out for none)".into(),
                    );
                }
                Ok(())
            }
            Command::DeleteEntry { switch, .. } => self.check_switch(*switch),
            Command::ModifyEntry { switch, action, .. } => {
                self.check_switch(*switch)?;
                self.check_action(*switch, action)
            }
            Command::RetirePath { flow, entries } => {
                self.check_flow(*flow)?;
                if entries.is_empty() {
                    return Err("a path to retire needs at least one (switch, entry)".into());
                }
                entries.iter().try_for_each(|&(s, _)| self.check_switch(s))
            }
            Command::SetGroup {
                switch,
                group,
                group_def,
            } => {
                self.check_switch(*switch)?;
                if *group > crate::flowtable::MAX_GROUP_ID {
                    return Err(format!(
                        "group id {group} is out of range: use 0..={}",
                        crate::flowtable::MAX_GROUP_ID
                    ));
                }
                let (ports, weights) = match group_def {
                    Group::Select { ports, weights } => (ports, Some(weights)),
                    Group::FastFailover { ports } => (ports, None),
                };
                if ports.is_empty() {
                    return Err("a group needs at least one port".into());
                }
                for &p in ports {
                    self.check_port(*switch, p)?;
                }
                if let Some(w) = weights {
                    if w.len() != ports.len() || w.iter().all(|&x| x == 0) {
                        return Err("a select group needs one weight per port, not all zero".into());
                    }
                }
                Ok(())
            }
            Command::SetMeter {
                switch,
                meter,
                rate,
                ..
            } => {
                self.check_switch(*switch)?;
                if *meter > crate::flowtable::MAX_METER_ID {
                    return Err(format!(
                        "meter id {meter} is out of range: use 0..={}",
                        crate::flowtable::MAX_METER_ID
                    ));
                }
                if *rate == 0 {
                    return Err("a meter's rate must be greater than zero".into());
                }
                Ok(())
            }
            Command::PacketOut { buffer, port } => {
                let b = self.buffer(*buffer)?;
                if let Some(p) = port {
                    self.check_port(b.node, *p)?;
                }
                Ok(())
            }
            Command::DropBuffer { buffer } | Command::FloodOut { buffer } => {
                self.buffer(*buffer).map(|_| ())
            }
            Command::SetFloodPorts { switch, ports } => {
                self.check_switch(*switch)?;
                ports.iter().try_for_each(|&p| self.check_port(*switch, p))
            }
            Command::Hold { flow } | Command::Release { flow } => self.check_governable(*flow),
            Command::Pace { flow, rate } => {
                self.check_governable(*flow)?;
                if *rate == Some(0) {
                    return Err("a pacing rate must be greater than zero".into());
                }
                Ok(())
            }
            Command::PaceSubflow { flow, subflow, .. } => {
                self.check_flow(*flow)?;
                use crate::transport::Transport;
                match &self.flows[*flow as usize].transport {
                    Transport::Mptcp(m) if (*subflow as usize) < m.subflow_count() => Ok(()),
                    Transport::Mptcp(m) => Err(format!(
                        "flow {flow} has subflows 0..{}, not {subflow}",
                        m.subflow_count() - 1
                    )),
                    _ => Err(format!(
                        "flow {flow} is not an MPTCP connection; pace_subflow paces an MPTCP subflow (use pace for single-path flows)"
                    )),
                }
            }
            Command::SetBcnPredictions { points } => {
                if self.config().bcn.is_none() {
                    return Err(
                        "this network has no BCN congestion points (configure bcn first)".into(),
                    );
                }
                for (switch, port, values) in points {
                    self.check_switch(*switch)?;
                    self.check_port(*switch, *port)?;
                    if let Some(values) = values {
                        if values.is_empty() {
                            return Err("BCN predictions need at least one value (or None to measure again)".into());
                        }
                        if values.iter().any(|q| !(*q >= 0.0 && q.is_finite())) {
                            return Err(
                                "predicted BCN queues must be finite, non-negative numbers of packets"
                                    .into(),
                            );
                        }
                    }
                }
                Ok(())
            }
            Command::ConfigureQueue {
                switch,
                port,
                config,
            } => {
                self.check_switch(*switch)?;
                config.validate()?;
                if self.config().pfc.is_some() && config.device_queue > 0 {
                    return Err(
                        "a device queue and PFC do not combine: its FIFO would send paused classes"
                            .into(),
                    );
                }
                match port {
                    Some(p) => self.check_port(*switch, *p),
                    None => Ok(()),
                }
            }
            Command::SetAqm {
                switch,
                port,
                class,
                aqm,
            } => {
                self.check_switch(*switch)?;
                if let Some(p) = port {
                    self.check_port(*switch, *p)?;
                }
                aqm.validate()?;
                if let Some(class) = class {
                    for global in self.switch_ports(*switch, *port) {
                        let classes = self.ports[global as usize].queue.config.classes();
                        if *class as usize >= classes {
                            let node = self.nodes[*switch as usize].first_port;
                            return Err(format!(
                                "traffic_class {class} does not exist on port {} of '{}' \
                                 (its scheduler has classes 0..{})",
                                global - node,
                                self.topology().nodes[*switch as usize].name,
                                classes - 1
                            ));
                        }
                    }
                }
                Ok(())
            }
            Command::SetLink { link, .. } => {
                if *link as usize >= self.link_ports.len() {
                    return Err(format!(
                        "link {link} does not exist; the topology has {} links",
                        self.link_ports.len()
                    ));
                }
                Ok(())
            }
        }
    }

    fn buffer(&self, buffer: u32) -> Result<Buffered, String> {
        match self.control.buffers.get(buffer).copied() {
            Some(b) if !b.claimed => Ok(b),
            Some(_) => Err(format!(
                "packet-in buffer {buffer} was already released or dropped"
            )),
            None => Err(format!("no packet-in buffer {buffer}")),
        }
    }

    /// An action may only use ports the switch has and groups and meters already
    /// defined on it (or whose definition is on its way): an undefined one would drop
    /// every packet that takes the entry, silently.
    fn check_action(&self, switch: u32, action: &FlowAction) -> Result<(), String> {
        let node = &self.nodes[switch as usize];
        let name = &self.topology().nodes[switch as usize].name;
        match action.forward {
            Forward::Output(p) => self.check_port(switch, p)?,
            Forward::Group(g)
                if !node
                    .declared_groups
                    .get(g as usize)
                    .copied()
                    .unwrap_or(false) =>
            {
                return Err(format!(
                    "group {g} is not defined on switch '{name}': define it (select_group or \
                     failover_group) before an entry uses it"
                ))
            }
            _ => {}
        }
        if let Some(m) = action.meter {
            if !node
                .declared_meters
                .get(m as usize)
                .copied()
                .unwrap_or(false)
            {
                return Err(format!(
                    "meter {m} is not defined on switch '{name}': define it (meter) before an \
                     entry uses it"
                ));
            }
        }
        Ok(())
    }

    /// Issues a command that takes effect after `delay` (0: at once).
    pub fn issue(&mut self, delay: Time, cmd: Command) -> Result<(), String> {
        let due = self.now().checked_add(delay).ok_or_else(|| {
            format!(
                "a command delayed {delay} ps from now ({} ps) would take effect past the end of simulated time",
                self.now()
            )
        })?;
        self.validate(&cmd)?;
        match &cmd {
            Command::SetGroup { switch, group, .. } => {
                mark(&mut self.nodes[*switch as usize].declared_groups, *group)
            }
            Command::SetMeter { switch, meter, .. } => {
                mark(&mut self.nodes[*switch as usize].declared_meters, *meter)
            }
            _ => {}
        }
        if let Command::PacketOut { buffer, .. }
        | Command::DropBuffer { buffer }
        | Command::FloodOut { buffer } = cmd
        {
            if let Some(b) = self.control.buffers.get_mut(buffer) {
                b.claimed = true;
            }
        }
        if delay == 0 {
            self.apply(cmd);
            return Ok(());
        }
        let slot = self.control.pending.insert(cmd);
        self.events.push(due, EventKind::Command { slot });
        Ok(())
    }

    pub(crate) fn on_command_due(&mut self, slot: u32) {
        let cmd = self.control.pending.take(slot).expect("a pending command");
        self.apply(cmd);
    }

    fn apply(&mut self, cmd: Command) {
        let now = self.now();
        match cmd {
            Command::AddEntry {
                switch,
                entry,
                priority,
                matcher,
                action,
                idle_timeout,
                hard_timeout,
            } => {
                let e = FlowEntry {
                    id: entry,
                    priority,
                    matcher,
                    action,
                    idle_timeout,
                    hard_timeout,
                    installed: now,
                    last_used: now,
                    packets: 0,
                    bytes: 0,
                };
                if let Some(at) = e.expiry() {
                    self.events.push(
                        at,
                        EventKind::EntryTimeout {
                            node: switch,
                            entry,
                        },
                    );
                }
                self.nodes[switch as usize].table.add(e);
            }
            Command::ModifyEntry {
                switch,
                entry,
                action,
            } => {
                self.nodes[switch as usize].table.set_action(entry, action);
            }
            Command::DeleteEntry { switch, entry } => self.delete_entry(switch, entry),
            Command::SetGroup {
                switch,
                group,
                group_def,
            } => {
                let groups = &mut self.nodes[switch as usize].groups;
                if groups.len() <= group as usize {
                    groups.resize(group as usize + 1, None);
                }
                groups[group as usize] = Some(group_def);
            }
            Command::SetMeter {
                switch,
                meter,
                rate,
                burst,
            } => {
                let meters = &mut self.nodes[switch as usize].meters;
                if meters.len() <= meter as usize {
                    meters.resize(meter as usize + 1, None);
                }
                meters[meter as usize] = Some(Meter::new(rate, burst));
            }
            Command::PacketOut { buffer, port } => {
                let Some(b) = self.control.buffers.take(buffer) else {
                    return;
                };
                match port {
                    Some(p) => {
                        let port = self.nodes[b.node as usize].first_port + p as u32;
                        self.enqueue(port, b.pkt);
                    }
                    None => self.forward(b.node, b.in_port, b.pkt),
                }
            }
            Command::FloodOut { buffer } => {
                let Some(b) = self.control.buffers.take(buffer) else {
                    return;
                };
                self.flood(b.node, b.in_port, b.pkt);
            }
            Command::SetFloodPorts { switch, ports } => {
                self.nodes[switch as usize].flood_ports = Some(ports);
            }
            Command::DropBuffer { buffer } => {
                let Some(b) = self.control.buffers.take(buffer) else {
                    return;
                };
                self.nodes[b.node as usize].rule_drops += 1;
                self.drop_packet(b.pkt);
            }
            Command::Hold { flow } => self
                .with_flow(flow, |f, id, now, out| f.set_held(true, id, now, out))
                .expect("validated when issued"),
            Command::Release { flow } => self
                .with_flow(flow, |f, id, now, out| f.set_held(false, id, now, out))
                .expect("validated when issued"),
            Command::Pace { flow, rate } => self
                .with_flow(flow, |f, id, now, out| f.set_pace(rate, id, now, out))
                .expect("validated when issued"),
            Command::PaceSubflow {
                flow,
                subflow,
                rate,
            } => self.with_flow(flow, |f, id, now, out| {
                f.set_subflow_pace(subflow as usize, rate, id, now, out)
            }),
            Command::SetLink { link, up } => {
                self.set_link_up(link as usize, up).expect("validated");
            }
            Command::SetBcnPredictions { points } => {
                for (switch, port, values) in points {
                    let global = self.nodes[switch as usize].first_port + port as u32;
                    self.set_bcn_predictions(global, values)
                        .expect("validated when issued");
                }
            }
            Command::RetirePath { flow, entries } => self.retire_path(flow, entries),
            Command::ConfigureQueue {
                switch,
                port,
                config,
            } => {
                for p in self.switch_ports(switch, port) {
                    self.configure_port(p, config.clone());
                }
            }
            Command::SetAqm {
                switch,
                port,
                class,
                aqm,
            } => {
                for p in self.switch_ports(switch, port) {
                    let queue = &mut self.ports[p as usize].queue;
                    match class {
                        None => queue.set_aqm(aqm.clone(), Vec::new()),
                        Some(class) => {
                            let mut per_class = queue.config.class_aqm.clone();
                            let class = class as usize;
                            if per_class.len() <= class {
                                per_class.resize(class + 1, None);
                            }
                            per_class[class] = Some(aqm.clone());
                            queue.set_aqm(queue.config.aqm.clone(), per_class);
                        }
                    }
                }
            }
        }
    }

    /// The global indices of port `port` of `switch`, or of all its ports with None.
    fn switch_ports(&self, switch: u32, port: Option<u16>) -> std::ops::Range<PortId> {
        let node = &self.nodes[switch as usize];
        match port {
            Some(p) => node.first_port + p as u32..node.first_port + p as u32 + 1,
            None => node.first_port..node.first_port + node.num_ports as u32,
        }
    }

    /// Gives port `port` the queueing `config`, now.
    pub fn configure_port(&mut self, port: PortId, config: crate::queue::QueueConfig) {
        let now = self.now();
        let p = &mut self.ports[port as usize];
        let same_shape = p.queue.config.scheduler == config.scheduler
            && p.queue.config.limit == config.limit
            && p.queue.config.device_queue == config.device_queue;
        if same_shape {
            p.queue.set_aqm(config.aqm, config.class_aqm);
            return;
        }
        let mut dropped = Vec::new();
        let queue = p.reconfigured_queue(config, now, &mut dropped);
        p.queue = queue;
        for pkt in dropped {
            let size = self.arena.get(pkt).size as u64;
            let c = &mut self.ports[port as usize].counters;
            c.drop_packets += 1;
            c.drop_bytes += size;
            self.drop_packet(pkt);
        }
    }

    /// Removes the first entry of a migrated flow's old path now and the rest once the
    /// path has drained. The wait is the path's worst-case transit: per hop, a full
    /// egress buffer plus one packet at line rate, and the link's propagation. Then the
    /// queues the entries send to are searched for the flow's packets (a scheduler that
    /// starves the flow's class can hold one longer); while one is found, it waits again.
    fn retire_path(&mut self, flow: u32, entries: Vec<(u32, u32)>) {
        let (first_switch, first_entry) = entries[0];
        self.delete_entry(first_switch, first_entry);
        let rest: Vec<(u32, u32)> = entries[1..].to_vec();
        if rest.is_empty() {
            return;
        }
        let wait = entries
            .iter()
            .map(|&(s, e)| {
                self.entry_ports(s, e)
                    .into_iter()
                    .map(|p| self.worst_transit(p))
                    .max()
                    .unwrap_or(0)
            })
            .sum::<Time>()
            .max(1);
        let slot = self.control.draining.insert(Draining {
            flow,
            entries: rest,
            wait,
        });
        self.events
            .push(self.now() + wait, EventKind::DrainCheck { slot });
    }

    pub(crate) fn on_drain_check(&mut self, slot: u32) {
        let draining = self
            .control
            .draining
            .get(slot)
            .expect("a pending drain")
            .clone();
        let held = draining.entries.iter().any(|&(s, e)| {
            self.entry_ports(s, e).into_iter().any(|p| {
                self.ports[p as usize]
                    .queue
                    .packets()
                    .iter()
                    .any(|&pkt| self.arena.get(pkt).flow == draining.flow)
            })
        });
        if held {
            self.events
                .push(self.now() + draining.wait, EventKind::DrainCheck { slot });
            return;
        }
        self.control.draining.take(slot);
        for (s, e) in draining.entries {
            self.delete_entry(s, e);
        }
    }

    /// The egress ports (global ids) an entry can send to: its output port, or every
    /// port of the switch for any other action.
    fn entry_ports(&self, switch: u32, entry: u32) -> Vec<PortId> {
        let node = &self.nodes[switch as usize];
        match node.table.get(entry).map(|e| e.action.forward) {
            None => Vec::new(),
            Some(Forward::Output(p)) => vec![node.first_port + p as u32],
            Some(_) => (node.first_port..node.first_port + node.num_ports as u32).collect(),
        }
    }

    /// The longest a packet can take from entering `port`'s queue to reaching the next
    /// node, if the queue serves in arrival order.
    fn worst_transit(&self, port: PortId) -> Time {
        const MTU: u64 = 1500;
        let p = &self.ports[port as usize];
        let buffer = match p.queue.config.limit {
            Limit::Packets(n) => n.saturating_mul(MTU),
            Limit::Bytes(b) => b,
        };
        let bits = (buffer.saturating_add(MTU) as u128) * 8 * SEC as u128;
        let serialise = (bits / p.rate.max(1) as u128).min(Time::MAX as u128 / 4) as Time;
        serialise + p.delay
    }

    fn delete_entry(&mut self, switch: u32, entry: u32) {
        if let Some(e) = self.nodes[switch as usize].table.remove(entry) {
            self.report_removal(switch, &e, RemovalReason::Deleted);
        }
    }

    fn report_removal(&mut self, switch: u32, e: &FlowEntry, reason: RemovalReason) {
        if self.control.attached {
            let event = ControlEvent::EntryRemoved {
                switch,
                entry: e.id,
                reason,
                packets: e.packets,
                bytes: e.bytes,
            };
            self.control.events.push((self.now(), event));
        }
    }

    pub(crate) fn on_entry_timeout(&mut self, switch: u32, entry: u32) {
        let now = self.now();
        let Some(e) = self.nodes[switch as usize].table.get(entry) else {
            return;
        };
        let Some(expiry) = e.expiry() else { return };
        if expiry > now {
            // Used since this check was scheduled: look again when it would next expire.
            self.events.push(
                expiry,
                EventKind::EntryTimeout {
                    node: switch,
                    entry,
                },
            );
            return;
        }
        let hard = e.hard_timeout.is_some_and(|t| e.installed + t <= now);
        let e = self.nodes[switch as usize]
            .table
            .remove(entry)
            .expect("just found");
        let reason = if hard {
            RemovalReason::HardTimeout
        } else {
            RemovalReason::IdleTimeout
        };
        self.report_removal(switch, &e, reason);
    }

    /// Holds `pkt` at `switch` and tells the controller; without a controller attached
    /// there is nobody to ask, and the packet is dropped.
    pub(crate) fn packet_in(&mut self, switch: u32, in_port: u16, pkt: PacketId, table_miss: bool) {
        if !self.control.attached {
            self.nodes[switch as usize].rule_drops += 1;
            self.drop_packet(pkt);
            return;
        }
        let held = Buffered {
            pkt,
            node: switch,
            in_port,
            claimed: false,
        };
        let buffer = self.control.buffers.insert(held);
        let p = self.arena.get(pkt);
        let event = ControlEvent::PacketIn {
            switch,
            in_port,
            buffer,
            flow: p.flow,
            src: p.src,
            dst: p.dst,
            size: p.size,
            table_miss,
        };
        self.control.events.push((self.now(), event));
    }

    /// Every entry of every switch: (switch, entry) pairs, for statistics.
    pub fn entries(&self) -> impl Iterator<Item = (u32, &FlowEntry)> {
        self.nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.table.entries().into_iter().map(move |e| (i as u32, e)))
    }

    /// Switch `switch`'s entries in match order.
    pub fn switch_entries(&self, switch: u32) -> Result<Vec<&FlowEntry>, String> {
        self.check_switch(switch)?;
        Ok(self.nodes[switch as usize].table.entries())
    }

    /// Starts keeping per-flow counters at `switch` (and, with a control plane attached,
    /// reporting each flow's first packet through it).
    pub fn watch_flows(&mut self, switch: u32) -> Result<(), String> {
        self.check_switch(switch)?;
        let node = &mut self.nodes[switch as usize];
        node.crossings.get_or_insert_with(Default::default);
        Ok(())
    }

    /// The flows switch `switch` forwarded since it was watched, by first packet seen
    /// (then flow, then source): ((flow, source), counters).
    pub fn crossings(&self, switch: u32) -> Result<Vec<(FlowDirection, Crossing)>, String> {
        self.check_switch(switch)?;
        let Some(map) = &self.nodes[switch as usize].crossings else {
            return Err(format!(
                "switch '{}' is not watching its flows; call watch_flows first",
                self.topology().nodes[switch as usize].name
            ));
        };
        let mut rows: Vec<_> = map.iter().map(|(&k, &c)| (k, c)).collect();
        rows.sort_by_key(|&((flow, src), c)| (c.first_seen, flow, src));
        Ok(rows)
    }

    pub(crate) fn note_crossing(
        &mut self,
        switch: u32,
        in_port: u16,
        out_port: u16,
        pkt: PacketId,
    ) {
        let now = self.now();
        let p = self.arena.get(pkt);
        let (flow, src, dst, size) = (p.flow, p.src, p.dst, p.size as u64);
        let map = self.nodes[switch as usize]
            .crossings
            .as_mut()
            .expect("watched");
        let mut first = false;
        let c = map.entry((flow, src)).or_insert_with(|| {
            first = true;
            Crossing {
                dst,
                in_port,
                out_port,
                packets: 0,
                bytes: 0,
                first_seen: now,
                last_seen: now,
            }
        });
        c.packets += 1;
        c.bytes += size;
        c.last_seen = now;
        c.out_port = out_port;
        if first && self.control.attached {
            let event = ControlEvent::FlowCrossing {
                switch,
                flow,
                src,
                in_port,
            };
            self.control.events.push((now, event));
        }
    }

    /// How many entries switch `switch` holds.
    pub fn entry_count(&self, switch: u32) -> Result<usize, String> {
        self.check_switch(switch)?;
        Ok(self.nodes[switch as usize].table.len())
    }

    /// Packets waiting in packet-in buffers.
    pub fn buffered_packets(&self) -> usize {
        self.control.buffers.iter().count()
    }
}

impl Miss {
    pub fn parse(name: &str) -> Result<Miss, String> {
        match name {
            "route" => Ok(Miss::Route),
            "controller" => Ok(Miss::Controller),
            "drop" => Ok(Miss::Drop),
            other => Err(format!(
                "table-miss policy must be route, controller or drop, got '{other}'"
            )),
        }
    }
}
