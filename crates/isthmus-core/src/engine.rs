//! The engine: owns the network, the packets and the event list, and runs the events in
//! time order.
//!
//! The model, stated once: links are full duplex; every egress port serialises a packet
//! at size·8/rate, then the packet propagates for the link's delay and arrives whole at
//! the next node (store-and-forward); switching takes zero time; a port's queue holds
//! the packets waiting for its transmitter. A hop costs one event (the arrival) plus one
//! more (the transmitter freeing up) only when packets are waiting behind it.
//!
//! Follow one packet: a transport's timer fires ([`Engine::handle`]) → the packet is
//! injected at its source host's NIC ([`Engine::inject`]) → each switch picks an egress
//! port ([`Engine::forward`]) and queues it ([`Engine::enqueue`]) → the destination
//! host hands it to the flow's transport ([`Engine::on_arrive`]).

use crate::control::ControlEvent;
use crate::event::{Event, EventKind, EventQueue, PortId};
use crate::flowtable::{FlowAction, FlowTable, Forward, Group, Meter, Miss};
use crate::packet::{
    Packet, PacketArena, PacketHeader, PacketId, PacketOptions, ECN_CE, ECN_NOT_ECT,
};
use crate::queue::{Admitted, Arrival, PortQueue, QueueConfig, Queued, RankInputs};
use crate::rng::mix64;
use crate::rng::{Rng, Stream};
use crate::rounds::{DueRound, IncastRounds, RoundRecord, RoundTransport};
use crate::routing::{choose, reduce, RouteTable, RoutingPolicy};
use crate::telemetry::{PortCounters, Sampler, WaitHistogram};
use crate::topology::{NodeKind, Topology};
use crate::transport::bcn::{
    BcnPoint, BcnPointConfig, BcnSource, BcnSourceConfig, RateRegulator, FEEDBACK_BYTES, PROTO_BCN,
};
use crate::transport::messages::{MessageRecord, MessageStream};
use crate::transport::tcp::{TcpConfig, TcpFlow};
use crate::transport::udp::{Arrivals, UdpSource, UDP_HEADER_BYTES};
use crate::transport::{Flow, FlowRecord, Outbox, Regulation, Transport};
use crate::units::{serialization_time, Limit, Rate, Time, SEC};

/// Time to send `bytes` at `rate` (ps), for delay estimates.
#[inline]
fn serialization_time_bytes(bytes: u64, rate: Rate) -> Time {
    (bytes as u128 * 8 * SEC as u128 / rate as u128) as Time
}

/// Network-wide settings of a simulation.
// Crosses into the engine as one serialised value; a field left out takes its `Default`
// (this is where the defaults are declared).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EngineConfig {
    /// Queueing of host NICs.
    pub host_queue: QueueConfig,
    /// Queueing of switch ports.
    pub switch_queue: QueueConfig,
    /// How a switch picks among equal-cost next hops.
    pub routing: RoutingPolicy,
    /// Sample per-port queues and counters at this interval (None: no time series).
    #[schemars(extend("unit" = "ps", "exclusiveMinimum" = 0))]
    pub sample_interval: Option<Time>,
    /// Each switch's egress queues share one buffer with dynamic thresholds.
    pub shared_buffer: Option<SharedBuffer>,
    /// Priority flow control on every switch ingress.
    pub pfc: Option<Pfc>,
    /// BCN congestion points at every switch egress.
    pub bcn: Option<BcnPointConfig>,
    /// The time-to-live packets leave their host with (switches they may cross).
    #[schemars(range(min = 1))]
    pub ttl: u8,
}

/// IP's customary initial time-to-live.
pub const DEFAULT_TTL: u8 = 64;

impl EngineConfig {
    /// Refuses settings the engine cannot run, naming the field and the fix.
    pub fn validate(&self) -> Result<(), String> {
        if self.ttl == 0 {
            return Err("ttl must be at least 1 (switches a packet may cross)".into());
        }
        if self.sample_interval == Some(0) {
            return Err("sample_interval must be greater than zero".into());
        }
        for (name, queue) in [
            ("host_queue", &self.host_queue),
            ("switch_queue", &self.switch_queue),
        ] {
            queue.validate().map_err(|e| format!("{name}: {e}"))?;
        }
        if let Some(b) = self.bcn {
            if !(b.sample_probability > 0.0 && b.sample_probability <= 1.0)
                || b.q_eq < 0.0
                || b.q_sc <= b.q_eq
                || b.w < 0.0
            {
                return Err("BCN needs 0 < Pm <= 1, 0 <= Qeq < Qsc and w >= 0".into());
            }
        }
        if let Some(b) = self.shared_buffer {
            if b.bytes == 0 || !(b.alpha > 0.0 && b.alpha.is_finite()) {
                return Err("a shared buffer needs a positive size and a positive alpha".into());
            }
        }
        if let Some(pfc) = self.pfc {
            if pfc.xon > pfc.xoff || pfc.xoff == 0 {
                return Err("PFC needs 0 < xon <= xoff".into());
            }
            if let Some(f) = pfc.free_fraction {
                if !(f > 0.0 && f <= 1.0) {
                    return Err("PFC's free fraction must be in (0, 1] (e.g. 0.125: pause above 1/8 of the free buffer)".into());
                }
                if self.shared_buffer.is_none() {
                    return Err("PFC's free fraction is a share of the free shared buffer: give the switches a shared_buffer too".into());
                }
            }
        }
        Ok(())
    }
}

/// IEEE 802.1Qbb priority flow control on every switch ingress.
///
/// When the bytes a switch holds that arrived
/// through one port in a lossless priority exceed `xoff`, the switch pauses that
/// priority on the upstream transmitter (the frame takes the link's propagation delay);
/// below `xon` it resumes it. `lossless` has bit p set for each lossless priority
/// (priorities above 7 count as 7). Lossless needs egress limits deep enough to hold
/// `xoff` plus a round trip of data per ingress. With PFC on, host NICs never drop: a
/// paused NIC holds what its senders produce, as an RDMA NIC stalls its queue pairs
/// (modelled as an unbounded NIC queue).
///
/// With `free_fraction` f (and a shared buffer), the pause threshold is the lower of
/// `xoff` and f times the switch's free shared buffer at that moment, the dynamic
/// threshold of shared-buffer switches (ACC's testbed: f = 1/8): the fuller the buffer,
/// the sooner an ingress pauses. A paused priority resumes below the threshold of the
/// moment scaled by `xon / xoff`.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct Pfc {
    /// Bytes held from one ingress in a lossless priority above which the switch
    /// pauses that priority upstream.
    #[schemars(extend("unit" = "bytes", "exclusiveMinimum" = 0))]
    pub xoff: u64,
    /// Bytes below which a paused priority resumes (at most xoff).
    #[schemars(extend("unit" = "bytes"))]
    pub xon: u64,
    /// Bit p set for each lossless priority (priorities above 7 count as 7).
    pub lossless: u8,
    /// With a shared buffer: pause at the lower of xoff and this share of the switch's
    /// free shared buffer.
    #[serde(default)]
    #[schemars(range(max = 1.0), extend("exclusiveMinimum" = 0.0))]
    pub free_fraction: Option<f64>,
}

/// A switch buffer of `bytes` shared by its egress queues under the dynamic-threshold
/// rule of Choudhury & Hahne (1998): a queue may grow while it holds less than
/// `alpha` times the buffer still free. Per-port limits still apply on top.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct SharedBuffer {
    /// Size of each switch's shared buffer.
    #[schemars(extend("unit" = "bytes", "exclusiveMinimum" = 0))]
    pub bytes: u64,
    /// A queue may grow while it holds less than alpha times the buffer still free.
    #[schemars(extend("exclusiveMinimum" = 0.0))]
    pub alpha: f64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            host_queue: QueueConfig::drop_tail(Limit::Packets(250)),
            switch_queue: QueueConfig::drop_tail(Limit::Packets(250)),
            routing: RoutingPolicy::Ecmp,
            sample_interval: None,
            shared_buffer: None,
            pfc: None,
            bcn: None,
            ttl: DEFAULT_TTL,
        }
    }
}

/// One direction of one link end: an egress queue and transmitter, and the counters of
/// what leaves and arrives through it.
///
/// Laid out by hand (`repr(C)`, cache-line aligned): what every hop reads or writes
/// comes first (the first line holds the transmitter, the link end's identity and the
/// arrival counters; then the queue's hot fields, then the egress counters), so a hop
/// touches a port's first few adjacent lines rather than lines spread over its 900
/// bytes; at xl1024's peak every one of the 3,072 ports is busy (docs/benchmark.md,
/// "Layout by the cache simulator").
#[derive(Clone)]
#[repr(C, align(64))]
pub struct Port {
    pub busy_until: Time,
    /// Serialisation picoseconds per byte when exact (saves a division per packet), else 0.
    ps_per_byte: u64,
    pub delay: Time,
    /// A recorded capacity trace that replaces the fixed rate, if set.
    pub trace: Option<Box<crate::trace::LinkTrace>>,
    /// The port at the other end of the link, where transmitted packets arrive.
    pub peer: PortId,
    pub node: u32,
    pub local: u16,
    /// A down link loses what is sent onto it.
    pub up: bool,
    /// A host's NIC (its packets count toward small-queue backpressure).
    host_nic: bool,
    /// PFC as an egress: classes the downstream paused (bit per class), and whether the
    /// transmitter stopped with only paused classes waiting.
    pub paused: u8,
    stalled: bool,
    /// PFC as a switch ingress: the priorities this port has paused upstream (and, below
    /// with the cold fields, `ingress_bytes`: bytes held per priority that arrived here).
    pause_sent: u8,
    /// What arrived through this link end, beside the fields an arrival reads (the rest of
    /// the counters are the egress side's).
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub queue: PortQueue,
    pub counters: PortCounters,
    pub rate: Rate,
    ingress_bytes: [u64; 8],
    /// The port's own random stream (probabilistic AQMs).
    rng: Rng,
    /// The BCN congestion point's state (used when BCN is on).
    pub bcn: BcnPoint,
}

impl Port {
    /// This port's queue rebuilt for `config` (see [`PortQueue::reconfigured`]).
    pub(crate) fn reconfigured_queue(
        &mut self,
        config: QueueConfig,
        now: Time,
        dropped: &mut Vec<PacketId>,
    ) -> PortQueue {
        self.queue.reconfigured(config, now, &mut self.rng, dropped)
    }

    #[inline]
    fn serialization(&self, size: u32) -> Time {
        if self.ps_per_byte != 0 {
            size as Time * self.ps_per_byte
        } else {
            serialization_time(size, self.rate)
        }
    }
}

/// Laid out by hand (`repr(C)`, cache-line aligned): what forwarding reads for every
/// packet (kind, ports, miss policy, ECMP salt, whether flows are watched, whether the
/// flow table holds entries) sits in the first line.
#[derive(Clone)]
#[repr(C, align(64))]
pub struct NodeState {
    pub kind: NodeKind,
    /// What a switch does with packets no entry matches.
    pub miss: Miss,
    pub num_ports: u16,
    pub first_port: PortId,
    /// Host address, or u32::MAX for a switch.
    pub address: u32,
    pub ecmp_salt: u64,
    /// Per-flow counters of the flows this switch forwards, kept only once something
    /// asked to watch it (a switch agent): (flow, source host) -> what crossed.
    pub(crate) crossings: Option<Box<crate::flowtable::KeyMap<(u32, u32), Crossing>>>,
    pub table: FlowTable,
    spray_rng: Rng,
    pub groups: Vec<Option<Group>>,
    pub meters: Vec<Option<Meter>>,
    /// Ports a flood goes out of (None: all).
    pub flood_ports: Option<Vec<u16>>,
    /// Packets dropped here for want of a route, or at a host they were not addressed to
    /// (as flooded copies are).
    pub unroutable: u64,
    /// Packets dropped here by a rule: a drop action, a drop-on-miss, or a meter.
    pub rule_drops: u64,
    /// Packets dropped here because their time-to-live ran out (a forwarding loop).
    pub ttl_drops: u64,
    /// Groups and meters defined here or on their way (commands issued): entries may
    /// only use these.
    pub(crate) declared_groups: Vec<bool>,
    pub(crate) declared_meters: Vec<bool>,
}

/// What one direction of one flow sent through a watched switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Crossing {
    pub dst: u32,
    pub in_port: u16,
    pub out_port: u16,
    pub packets: u64,
    pub bytes: u64,
    pub first_seen: Time,
    pub last_seen: Time,
}

/// Parameters of a UDP flow (crosses into the engine as one value).
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpFlowSpec {
    pub rate: Rate,
    /// Wire bytes per full packet, headers included.
    pub packet_size: u32,
    pub arrivals: Arrivals,
    /// Payload bytes to send; 0 sends until `stop`.
    pub size: u64,
    pub start: Time,
    pub stop: Time,
}

/// An iperf-like TCP source's sending (crosses into the engine as one value): from
/// `start`, for `duration`, in `write_size`-byte application writes.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedFlowSpec {
    pub start: Time,
    pub duration: Time,
    pub write_size: u64,
}

/// A persistent TCP connection's messages (crosses into the engine as one value):
/// message i of `sizes[i]` bytes, the next one `thinks[i]` after it reached the
/// receiver, the first at `start`, none at or after `stop`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageFlowSpec {
    pub sizes: Vec<u64>,
    pub thinks: Vec<Time>,
    pub start: Time,
    pub stop: Time,
}

/// A packet's whereabouts at an instant, for audits: in a queue or on a wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InFlight {
    pub packets: u64,
    pub bytes: u64,
}

#[derive(Clone)]
pub struct Engine {
    pub(crate) now: Time,
    seed: u64,
    topology: Topology,
    config: EngineConfig,
    pub nodes: Vec<NodeState>,
    pub ports: Vec<Port>,
    routes: RouteTable,
    /// The two ports (one per direction) of each topology link.
    pub(crate) link_ports: Vec<[PortId; 2]>,
    pub(crate) arena: PacketArena,
    pub(crate) events: EventQueue,
    /// The settings of the last TCP flow added, shared with the next ones that match.
    last_tcp_config: Option<std::sync::Arc<TcpConfig>>,
    pub(crate) flows: Vec<Flow>,
    outbox: Outbox,
    /// A reusable list of packets a queue dropped or pushed out.
    scratch: Vec<PacketId>,
    /// Packets a host holds because its NIC queue was full, by NIC port, in the order
    /// they were sent (see `hold_at_nic`).
    nic_backlog: std::collections::BTreeMap<PortId, std::collections::VecDeque<PacketId>>,
    /// The control plane's state (see control.rs).
    pub(crate) control: crate::control::ControlState,
    pub(crate) unfinished_flows: usize,
    /// Flows a workload will add later (incast rounds), counted as unfinished already.
    pub(crate) reserved_flows: usize,
    pub(crate) rounds: crate::rounds::RoundJobs,
    pub(crate) events_processed: u64,
    pub(crate) packet_hops: u64,
    pub(crate) sampler: Option<Sampler>,
    /// Every transmitted packet's wait for its transmitter: `[switch ports, host NICs]`
    /// (indexed by `Port::host_nic`).
    pub(crate) waits: [WaitHistogram; 2],
    /// How the next run splits into partitions (None: one, this engine).
    pub(crate) split: Option<crate::parallel::Split>,
    /// Once a split run has started: its partitions (this engine is their snapshot).
    pub(crate) partitioned: Option<Box<crate::parallel::Partitioned>>,
    /// In a partition engine: its partition, and the mail it sends the others.
    pub(crate) member: Option<Box<crate::parallel::Member>>,
}

impl Engine {
    pub fn new(topology: Topology, config: EngineConfig, seed: u64) -> Engine {
        let routes = RouteTable::shortest_paths(&topology);
        let adjacency = topology.adjacency();
        let mut nodes = Vec::with_capacity(topology.nodes.len());
        let mut first_port = Vec::with_capacity(topology.nodes.len());
        let mut next_port = 0u32;
        let mut address = 0u32;
        for (i, node) in topology.nodes.iter().enumerate() {
            first_port.push(next_port);
            let host = node.kind == NodeKind::Host;
            nodes.push(NodeState {
                kind: node.kind,
                first_port: next_port,
                num_ports: adjacency[i].len() as u16,
                address: if host { address } else { u32::MAX },
                ecmp_salt: Rng::stream(seed, Stream::EcmpSalt, i as u64).next_u64(),
                spray_rng: Rng::stream(seed, Stream::Spray, i as u64),
                table: FlowTable::default(),
                groups: Vec::new(),
                meters: Vec::new(),
                miss: Miss::Route,
                flood_ports: None,
                unroutable: 0,
                rule_drops: 0,
                ttl_drops: 0,
                declared_groups: Vec::new(),
                declared_meters: Vec::new(),
                crossings: None,
            });
            address += host as u32;
            next_port += adjacency[i].len() as u32;
        }
        // Port k of node n faces the k-th link touching n; find each link's two ends.
        let mut ends = vec![[0u32; 2]; topology.links.len()];
        for (n, adj) in adjacency.iter().enumerate() {
            for (k, &(_, link)) in adj.iter().enumerate() {
                let link_ref = &topology.links[link as usize];
                let side = if link_ref.a == n as u32 { 0 } else { 1 };
                ends[link as usize][side] = first_port[n] + k as u32;
            }
        }
        let mut ports: Vec<Port> = Vec::with_capacity(next_port as usize);
        for (n, adj) in adjacency.iter().enumerate() {
            let host = topology.nodes[n].kind == NodeKind::Host;
            for (k, &(_, link)) in adj.iter().enumerate() {
                let l = &topology.links[link as usize];
                let side = if l.a == n as u32 { 0 } else { 1 };
                let nic = QueueConfig {
                    limit: Limit::Packets(u64::MAX / 2),
                    ..config.host_queue.clone()
                };
                let queue = match (host, config.pfc.is_some()) {
                    (true, true) => &nic,
                    (true, false) => &config.host_queue,
                    (false, _) => &config.switch_queue,
                };
                let per_byte = 8 * crate::units::SEC;
                ports.push(Port {
                    node: n as u32,
                    local: k as u16,
                    peer: ends[link as usize][1 - side],
                    rate: l.spec.rate,
                    delay: l.spec.delay,
                    ps_per_byte: if per_byte.is_multiple_of(l.spec.rate) {
                        per_byte / l.spec.rate
                    } else {
                        0
                    },
                    busy_until: 0,
                    up: true,
                    host_nic: host,
                    queue: PortQueue::new(queue.clone()),
                    rng: Rng::stream(seed, Stream::Aqm, ports.len() as u64),
                    trace: None,
                    paused: 0,
                    stalled: false,
                    ingress_bytes: [0; 8],
                    pause_sent: 0,
                    rx_bytes: 0,
                    rx_packets: 0,
                    bcn: BcnPoint::default(),
                    counters: PortCounters::default(),
                });
            }
        }
        // The farthest ahead a hop schedules: a jumbo frame's serialisation plus
        // propagation (a transmitter frees up within one serialisation).
        let reach = ports
            .iter()
            .map(|p| p.delay + serialization_time(9000, p.rate))
            .max()
            .unwrap_or(0);
        let mut events = EventQueue::with_reach(reach);
        let sampler = config.sample_interval.map(|interval| {
            events.push(interval, EventKind::Sample);
            Sampler::new(interval, ports.len())
        });
        Engine {
            now: 0,
            seed,
            topology,
            config,
            nodes,
            ports,
            routes,
            link_ports: ends,
            arena: PacketArena::default(),
            events,
            last_tcp_config: None,
            flows: Vec::new(),
            outbox: Outbox::default(),
            scratch: Vec::new(),
            nic_backlog: Default::default(),
            control: Default::default(),
            unfinished_flows: 0,
            reserved_flows: 0,
            rounds: Default::default(),
            events_processed: 0,
            packet_hops: 0,
            sampler,
            waits: Default::default(),
            split: None,
            partitioned: None,
            member: None,
        }
    }

    // ---- building --------------------------------------------------------------------

    /// Adds a UDP flow from host `src` to host `dst`; returns its flow id.
    pub fn add_udp_flow(&mut self, src: u32, dst: u32, spec: UdpFlowSpec) -> Result<u32, String> {
        self.check_new_flow(src, dst)?;
        if spec.packet_size <= UDP_HEADER_BYTES {
            return Err(format!(
                "packet_size {} B is too small: it must exceed the {UDP_HEADER_BYTES} B of IPv4+UDP headers",
                spec.packet_size
            ));
        }
        if spec.stop <= spec.start {
            return Err(format!(
                "stop ({} ps) must come after start ({} ps)",
                spec.stop, spec.start
            ));
        }
        self.check_start(spec.start)?;
        let seed = self.seed;
        Ok(
            self.push_flow(src, dst, spec.size, spec.start, (64_000, 5001), |id| {
                let rng = Rng::stream(seed, Stream::Flow, id as u64);
                Transport::Udp(Box::new(UdpSource::new(
                    spec.rate,
                    spec.packet_size,
                    spec.arrivals,
                    spec.size,
                    spec.stop,
                    rng,
                )))
            }),
        )
    }

    /// Adds a TCP (or, with `config.dctcp`, DCTCP) flow of `size` bytes from host `src`
    /// to host `dst`, opening at `start`; returns its flow id.
    pub fn add_tcp_flow(
        &mut self,
        src: u32,
        dst: u32,
        size: u64,
        start: Time,
        config: &TcpConfig,
    ) -> Result<u32, String> {
        config.validate()?;
        let seed = self.seed;
        let header = crate::transport::tcp::TCP_HEADER_BYTES
            + config.timestamps as u32 * crate::transport::tcp::TIMESTAMP_OPTION_BYTES;
        let nic = self.nic_capacity(src, config.mss + header);
        let shared = match &self.last_tcp_config {
            Some(last) if **last == *config => last.clone(),
            _ => std::sync::Arc::new(*config),
        };
        self.last_tcp_config = Some(shared.clone());
        self.add_transfer(src, dst, size, start, (64_000, 80), |id| {
            let iss = config
                .isn
                .unwrap_or_else(|| Rng::stream(seed, Stream::Flow, id as u64).next_u64() as u32);
            let mut flow = TcpFlow::new(shared, size, start, iss);
            flow.set_nic_capacity(nic);
            Transport::Tcp(Box::new(flow))
        })
    }

    /// Bytes host `src`'s NIC queue holds, counting full packets of `packet` bytes (0 for
    /// a host that does not exist: the flow is refused anyway).
    fn nic_capacity(&self, src: u32, packet: u32) -> u64 {
        let Some(&node) = self.topology.hosts.get(src as usize) else {
            return 0;
        };
        let port = &self.ports[self.nodes[node as usize].first_port as usize];
        match port.queue.config.limit {
            Limit::Packets(n) => n.saturating_mul(packet as u64),
            Limit::Bytes(b) => b,
        }
    }

    /// Adds an iperf-like TCP (or DCTCP) source: from `spec.start` it sends as fast as
    /// TCP allows for `spec.duration`, in `spec.write_size`-byte application writes, and
    /// finishes when the last write has arrived. Its size is set when its time is up.
    pub fn add_timed_tcp_flow(
        &mut self,
        src: u32,
        dst: u32,
        spec: TimedFlowSpec,
        config: &TcpConfig,
    ) -> Result<u32, String> {
        let TimedFlowSpec {
            start,
            duration,
            write_size,
        } = spec;
        if duration == 0 {
            return Err("duration must be positive".into());
        }
        if write_size == 0 {
            return Err("write_size must be at least 1 byte".into());
        }
        let id = self.add_tcp_flow(src, dst, u64::MAX / 4, start, config)?;
        if let Transport::Tcp(tcp) = &mut self.flows[id as usize].transport {
            tcp.write_until(start + duration, write_size);
        }
        Ok(id)
    }

    /// Adds a persistent TCP (or DCTCP, CUBIC) connection whose application writes the
    /// messages of `spec` in turn; the connection closes after the last. Returns its
    /// flow id; `message_records` has every message.
    pub fn add_message_flow(
        &mut self,
        src: u32,
        dst: u32,
        spec: MessageFlowSpec,
        config: &TcpConfig,
    ) -> Result<u32, String> {
        let MessageFlowSpec {
            sizes,
            thinks,
            start,
            stop,
        } = spec;
        if stop <= start {
            return Err(format!(
                "stop ({stop} ps) must come after start ({start} ps)"
            ));
        }
        let mut stream = MessageStream::new(sizes, thinks, stop)?;
        let id = self.add_tcp_flow(src, dst, u64::MAX / 4, start, config)?;
        let first = stream
            .write_next(start)
            .expect("a stream has a first message");
        let flow = &mut self.flows[id as usize];
        if let Transport::Tcp(tcp) = &mut flow.transport {
            tcp.open_stream();
            let mut out = Outbox::default();
            let ports = (flow.src_port, flow.dst_port);
            tcp.write(
                &mut crate::transport::tcp::Io::new(id, start, ports, &mut flow.record, &mut out),
                first,
            );
        }
        flow.messages = Some(Box::new(stream));
        Ok(id)
    }

    /// Every message of every message stream: (flow, index in its stream, record).
    pub fn message_records(&self) -> impl Iterator<Item = (u32, u32, &MessageRecord)> {
        self.flows.iter().enumerate().flat_map(|(id, f)| {
            f.messages.iter().flat_map(move |s| {
                s.messages
                    .iter()
                    .enumerate()
                    .map(move |(i, m)| (id as u32, i as u32, m))
            })
        })
    }

    /// Puts TCP flow `flow` under a BCN rate regulator (the reaction point of
    /// `transport::bcn`): BCN feedback for it paces its sender at the regulator's rate
    /// and a STOP holds it for the pause. Needs BCN congestion points.
    pub fn regulate_with_bcn(&mut self, flow: u32, cfg: &BcnSourceConfig) -> Result<(), String> {
        if self.config.bcn.is_none() {
            return Err("BCN congestion points are off: configure the engine with bcn to regulate a flow by BCN".into());
        }
        cfg.validate()?;
        let seed = self.seed;
        let f = self
            .flows
            .get_mut(flow as usize)
            .ok_or_else(|| format!("flow {flow} does not exist"))?;
        if !matches!(f.transport, Transport::Tcp(_)) {
            return Err(format!(
                "flow {flow} is not a TCP connection; BCN regulates TCP, DCTCP and CUBIC flows here (datagram sources are BCN sources of their own)"
            ));
        }
        let rng = Rng::stream(seed, Stream::Flow, (1 << 32) | flow as u64);
        f.regulation = Some(Box::new(Regulation::new(RateRegulator::new(*cfg, rng))));
        Ok(())
    }

    /// Adds an MPTCP connection of `size` bytes over `subflows` subflows (1..=16), each a
    /// NewReno subflow under RFC 6356 coupling; returns its flow id.
    pub fn add_mptcp_flow(
        &mut self,
        src: u32,
        dst: u32,
        size: u64,
        start: Time,
        subflows: u8,
        config: &TcpConfig,
    ) -> Result<u32, String> {
        config.validate()?;
        if config.dctcp.is_some() {
            return Err(
                "MPTCP couples its subflows with LIA (RFC 6356), not DCTCP; set dctcp to None"
                    .into(),
            );
        }
        if !(1..=16).contains(&subflows) {
            return Err(format!(
                "an MPTCP connection needs 1 to 16 subflows, got {subflows}"
            ));
        }
        // Subflow i uses source port base + 1000·i, so bases stay below 2024.
        self.add_transfer(src, dst, size, start, (1000, 80), |_| {
            Transport::Mptcp(Box::new(crate::transport::mptcp::MptcpFlow::new(
                *config, subflows, size, start,
            )))
        })
    }

    /// Adds a DCQCN (RDMA-like, rate-based) flow of `size` bytes; returns its flow id.
    pub fn add_dcqcn_flow(
        &mut self,
        src: u32,
        dst: u32,
        size: u64,
        start: Time,
        config: &crate::transport::dcqcn::DcqcnConfig,
    ) -> Result<u32, String> {
        config.validate()?;
        self.check_new_flow(src, dst)?;
        // InfiniBand's local ACK timeout: at least twice the path's packet lifetime.
        // Its packets and ACKs travel in class 0 (until a controller moves the flow),
        // through queues full of data packets either way.
        let data = config.mtu_payload + crate::transport::dcqcn::ROCE_HEADER_BYTES;
        let ack = crate::transport::dcqcn::ROCE_HEADER_BYTES;
        let lifetime = self
            .packet_lifetime(src, dst, (data, data), 0)?
            .saturating_add(self.packet_lifetime(dst, src, (ack, data), 0)?);
        let timeout = config.retransmit_timeout.max(lifetime);
        self.add_transfer(src, dst, size, start, (64_000, 4791), |_| {
            Transport::Dcqcn(Box::new(crate::transport::dcqcn::DcqcnFlow::new(
                *config, size, start, timeout,
            )))
        })
    }

    /// Adds a flow that moves `size` bytes from `src` to `dst`, opening at `start`, with
    /// source port 1024 + id mod `port_span` and destination port `dst_port`;
    /// `transport` builds its sender from its id.
    fn add_transfer(
        &mut self,
        src: u32,
        dst: u32,
        size: u64,
        start: Time,
        (port_span, dst_port): (u32, u16),
        transport: impl FnOnce(u32) -> Transport,
    ) -> Result<u32, String> {
        self.check_new_flow(src, dst)?;
        if size == 0 {
            return Err("size must be at least 1 byte".into());
        }
        self.check_start(start)?;
        Ok(self.push_flow(src, dst, size, start, (port_span, dst_port), transport))
    }

    /// Refuses a start time before the clock.
    pub(crate) fn check_start(&self, start: Time) -> Result<(), String> {
        if start < self.now {
            return Err(format!(
                "start ({start} ps) is in the past; the clock is at {} ps",
                self.now
            ));
        }
        Ok(())
    }

    /// Records a flow its caller has checked and schedules its start; returns its id.
    /// Its source port is 1024 + id mod `port_span`; `transport` builds its sender from
    /// its id.
    fn push_flow(
        &mut self,
        src: u32,
        dst: u32,
        size: u64,
        start: Time,
        (port_span, dst_port): (u32, u16),
        transport: impl FnOnce(u32) -> Transport,
    ) -> u32 {
        let id = self.flows.len() as u32;
        self.flows.push(Flow {
            record: FlowRecord {
                src,
                dst,
                size,
                start,
                ..Default::default()
            },
            src_port: (1024 + id % port_span) as u16,
            dst_port,
            priority: 0,
            settled: false,
            transport: transport(id),
            messages: None,
            regulation: None,
        });
        self.unfinished_flows += 1;
        self.events.push(start, EventKind::FlowStart { flow: id });
        id
    }

    /// The checks every new flow passes: its hosts exist and differ, and the run can
    /// still number it (events carry a flow in 28 bits).
    pub(crate) fn check_new_flow(&self, src: u32, dst: u32) -> Result<(), String> {
        if self.flows.len() > crate::event::MAX_EVENT_INDEX as usize {
            return Err(format!(
                "a run holds at most {} flows; split the workload over several runs",
                crate::event::MAX_EVENT_INDEX as u64 + 1
            ));
        }
        let n = self.topology.num_hosts() as u32;
        for (name, h) in [("src", src), ("dst", dst)] {
            if h >= n {
                return Err(format!(
                    "{name} host {h} does not exist; hosts are numbered 0..{}",
                    n - 1
                ));
            }
        }
        if src == dst {
            return Err(format!(
                "src and dst are the same host ({src}); a flow needs two different hosts"
            ));
        }
        Ok(())
    }

    /// Makes the direction of link `link` that leaves node `from` follow `trace`
    /// instead of its fixed rate (None: back to the fixed rate).
    pub fn set_link_trace(
        &mut self,
        link: usize,
        from: u32,
        trace: Option<crate::trace::LinkTrace>,
    ) -> Result<(), String> {
        let ends = *self.link_ports.get(link).ok_or_else(|| {
            format!(
                "link {link} does not exist; the topology has {} links",
                self.link_ports.len()
            )
        })?;
        let port = ends
            .into_iter()
            .find(|&p| self.ports[p as usize].node == from)
            .ok_or_else(|| format!("node {from} is not an end of link {link}"))?;
        self.ports[port as usize].trace = trace.map(Box::new);
        Ok(())
    }

    /// Takes topology link `link` down (both directions lose what is sent onto them from
    /// now on; packets already on the wire arrive) or brings it back up.
    pub fn set_link_up(&mut self, link: usize, up: bool) -> Result<(), String> {
        let ports = *self.link_ports.get(link).ok_or_else(|| {
            format!(
                "link {link} does not exist; the topology has {} links",
                self.link_ports.len()
            )
        })?;
        for p in ports {
            self.ports[p as usize].up = up;
        }
        Ok(())
    }

    // ---- running ---------------------------------------------------------------------

    /// Runs every event up to and including time `until`, then sets the clock to `until`.
    /// Returns how many events ran.
    pub fn run_until(&mut self, until: Time) -> u64 {
        let before = self.events_processed;
        if self.split.is_some() {
            self.run_partitioned(until, false);
        } else {
            while let Some(ev) = self.events.pop_until(until) {
                self.handle_event(ev);
            }
            self.advance_clock(until);
        }
        self.events_processed - before
    }

    /// Moves the clock forward to `time` (never back) with no event in between.
    pub(crate) fn advance_clock(&mut self, time: Time) {
        self.now = self.now.max(time);
    }

    /// Runs until every flow has finished or the clock passes `limit`; returns whether all
    /// flows finished.
    pub fn run_until_flows_finish(&mut self, limit: Time) -> bool {
        if self.split.is_some() {
            return self.run_partitioned(limit, true);
        }
        while self.unfinished_flows > 0 {
            let Some(ev) = self.events.pop_until(limit) else {
                break;
            };
            self.handle_event(ev);
        }
        self.unfinished_flows == 0
    }

    pub(crate) fn handle_event(&mut self, ev: Event) {
        self.now = ev.time;
        self.events_processed += 1;
        match ev.kind() {
            EventKind::Arrive { pkt, port } => self.on_arrive(pkt, port),
            EventKind::PortFree { port } => self.on_port_free(port),
            EventKind::FlowStart { flow } => {
                if self.control.attached {
                    self.control
                        .events
                        .push((self.now, ControlEvent::FlowArrival { flow }));
                }
                self.on_flow_timer(flow, 0);
            }
            EventKind::FlowTimer { flow, token } => self.on_flow_timer(flow, token),
            EventKind::Sample => self.sample(),
            EventKind::ControlTick { timer } => self.on_control_tick(timer),
            EventKind::Command { slot } => self.on_command_due(slot),
            EventKind::EntryTimeout { node, entry } => self.on_entry_timeout(node, entry),
            EventKind::Pfc { port, frame } => self.on_pfc_frame(port, frame),
            EventKind::DrainCheck { slot } => self.on_drain_check(slot),
        }
    }

    fn on_flow_timer(&mut self, flow: u32, token: u32) {
        let mut out = std::mem::take(&mut self.outbox);
        let finished = self.flows[flow as usize].on_timer(flow, self.now, token, &mut out);
        self.count_finished(flow, finished);
        self.apply_outbox(flow, &mut out);
        self.outbox = out;
    }

    /// Lets a flow's transport act outside its own events (a controller's hold, release
    /// or pace), then sends what it asks for.
    pub(crate) fn with_flow<R>(
        &mut self,
        flow: u32,
        act: impl FnOnce(&mut Flow, u32, Time, &mut Outbox) -> R,
    ) -> R {
        let mut out = std::mem::take(&mut self.outbox);
        let result = act(&mut self.flows[flow as usize], flow, self.now, &mut out);
        self.apply_outbox(flow, &mut out);
        self.outbox = out;
        result
    }

    pub(crate) fn apply_outbox(&mut self, flow: u32, out: &mut Outbox) {
        for (time, token) in out.timers.drain(..) {
            self.events.push(time, EventKind::FlowTimer { flow, token });
        }
        let priority = self.flows[flow as usize].priority;
        for mut pkt in out.packets.drain(..) {
            pkt.priority = priority;
            let id = self.arena.alloc(pkt);
            self.inject(id);
        }
    }

    /// Puts every later packet of `flow` in traffic class `priority`.
    pub fn set_flow_priority(&mut self, flow: u32, priority: u8) -> Result<(), String> {
        let f = self
            .flows
            .get_mut(flow as usize)
            .ok_or_else(|| format!("flow {flow} does not exist"))?;
        f.priority = priority;
        Ok(())
    }

    #[inline]
    fn count_finished(&mut self, flow: u32, finished: bool) {
        if finished {
            self.unfinished_flows -= 1;
            if self.control.attached {
                self.control
                    .events
                    .push((self.now, ControlEvent::FlowFinished { flow }));
            }
            if let Some(next) = self.rounds.finished(flow, self.now) {
                self.release_unfinished(next.job.senders.len());
                self.start_round(next)
                    .expect("a round that started once starts again");
            }
        }
    }

    /// Adds an incast job whose first round starts at `start`; returns its id. The
    /// flows of later rounds count as unfinished from now, so running until flows finish
    /// runs every round.
    pub fn add_incast_rounds(&mut self, job: IncastRounds, start: Time) -> Result<u32, String> {
        job.validate()?;
        // Everything a round could refuse is checked first, so a refused job leaves
        // nothing behind.
        for &s in &job.senders {
            self.check_new_flow(s, job.receiver)?;
        }
        self.check_start(start)?;
        let later = job.senders.len() * (job.rounds as usize - 1);
        let first = self.rounds.add(job, start);
        let id = first.id;
        self.start_round(first)
            .expect("the job was checked before it was added");
        self.reserve_unfinished(later);
        Ok(id)
    }

    fn start_round(&mut self, due: DueRound) -> Result<(), String> {
        let job = &due.job;
        let mut flows = Vec::with_capacity(job.senders.len());
        for &src in &job.senders {
            flows.push(match job.transport {
                RoundTransport::Tcp(cfg) => {
                    self.add_tcp_flow(src, job.receiver, job.size, due.at, &cfg)
                }
                RoundTransport::Dcqcn(cfg) => {
                    self.add_dcqcn_flow(src, job.receiver, job.size, due.at, &cfg)
                }
            }?);
        }
        self.rounds.started(&due, &flows);
        Ok(())
    }

    /// Every round of every incast job so far.
    pub fn incast_rounds(&self) -> &[RoundRecord] {
        self.rounds.records()
    }

    /// Counts `n` flows that will be added later as unfinished already (a workload that
    /// adds them as others finish), so running until flows finish waits for them.
    pub(crate) fn reserve_unfinished(&mut self, n: usize) {
        self.unfinished_flows += n;
        self.reserved_flows += n;
    }

    /// Takes back `n` reserved flows just before they are added.
    pub(crate) fn release_unfinished(&mut self, n: usize) {
        self.unfinished_flows -= n;
        self.reserved_flows -= n;
    }

    /// A transport's packet enters the network at its source host.
    fn inject(&mut self, pkt: PacketId) {
        let packet = self.arena.get_mut(pkt);
        packet.ingress = u32::MAX;
        packet.ttl = self.config.ttl;
        let src = packet.src;
        let host = self.topology.hosts[src as usize];
        self.forward(host, u16::MAX, pkt);
    }

    fn on_arrive(&mut self, pkt: PacketId, port: PortId) {
        self.packet_hops += 1;
        let (node, local) = {
            let p = &mut self.ports[port as usize];
            let size = self.arena.get(pkt).size as u64;
            p.rx_packets += 1;
            p.rx_bytes += size;
            (p.node, p.local)
        };
        let state = &self.nodes[node as usize];
        if state.kind == NodeKind::Host {
            if self.arena.get(pkt).dst == state.address {
                self.deliver(pkt);
            } else {
                self.nodes[node as usize].unroutable += 1;
                self.drop_packet(pkt);
            }
        } else {
            let packet = self.arena.get_mut(pkt);
            if packet.ttl <= 1 {
                self.nodes[node as usize].ttl_drops += 1;
                self.drop_packet(pkt);
                return;
            }
            packet.ttl -= 1;
            packet.ingress = port;
            packet.pfc_held = false;
            self.forward(node, local, pkt);
        }
    }

    /// Picks the egress port at `node` (flow table first; on a miss, the switch's miss
    /// policy) and queues the packet there. `in_port` is u16::MAX for packets a host
    /// originates.
    pub(crate) fn forward(&mut self, node: u32, in_port: u16, pkt: PacketId) {
        let now = self.now;
        let state = &mut self.nodes[node as usize];
        let packet = self.arena.get_mut(pkt);
        let matched = if state.table.is_empty() {
            None
        } else {
            state.table.lookup(in_port, packet, now)
        };
        let action = matched.unwrap_or(FlowAction::forward(match state.miss {
            Miss::Route => Forward::Default,
            Miss::Controller => Forward::Controller,
            Miss::Drop => Forward::Drop,
        }));
        if let Some(priority) = action.set_priority {
            packet.priority = priority;
        }
        if let Some(meter) = action.meter {
            let conforms = match state.meters.get_mut(meter as usize) {
                Some(Some(m)) => m.admit(packet.size, now),
                _ => false,
            };
            if !conforms {
                state.rule_drops += 1;
                self.drop_packet(pkt);
                return;
            }
        }
        let egress = match action.forward {
            Forward::Output(p) => Some(p),
            Forward::Group(g) => self.group_port(node, g, pkt),
            Forward::Drop => {
                self.nodes[node as usize].rule_drops += 1;
                self.drop_packet(pkt);
                return;
            }
            Forward::Controller => {
                self.packet_in(node, in_port, pkt, matched.is_none());
                return;
            }
            Forward::Flood => {
                self.flood(node, in_port, pkt);
                return;
            }
            Forward::Default => {
                let hops = self.routes.next_hops(node, packet.dst);
                if hops.is_empty() {
                    None
                } else {
                    Some(choose(
                        self.config.routing,
                        hops,
                        packet,
                        state.ecmp_salt,
                        &mut state.spray_rng,
                    ))
                }
            }
        };
        match egress {
            Some(local) if local < self.nodes[node as usize].num_ports => {
                if self.nodes[node as usize].crossings.is_some() {
                    self.note_crossing(node, in_port, local, pkt);
                }
                let port = self.nodes[node as usize].first_port + local as u32;
                self.enqueue(port, pkt);
            }
            _ => {
                self.nodes[node as usize].unroutable += 1;
                self.drop_packet(pkt);
            }
        }
    }

    /// Sends a copy of `pkt` out of every flood port of `node` except `in_port`. Each
    /// extra copy counts as a packet its flow sent, so conservation audits still hold.
    pub(crate) fn flood(&mut self, node: u32, in_port: u16, pkt: PacketId) {
        let state = &self.nodes[node as usize];
        let ports: Vec<u16> = match &state.flood_ports {
            Some(ports) => ports.iter().copied().filter(|&p| p != in_port).collect(),
            None => (0..state.num_ports).filter(|&p| p != in_port).collect(),
        };
        let first_port = state.first_port;
        let Some((&last, rest)) = ports.split_last() else {
            self.nodes[node as usize].rule_drops += 1;
            self.drop_packet(pkt);
            return;
        };
        for &p in rest {
            let copy = self.arena.packet(pkt);
            self.flows[copy.flow as usize].record.packets_sent += 1;
            let id = self.arena.alloc(copy);
            self.enqueue(first_port + p as u32, id);
        }
        self.enqueue(first_port + last as u32, pkt);
    }

    /// The local port group `group` of `node` picks for `pkt`, if the group exists and
    /// has a usable port.
    fn group_port(&self, node: u32, group: u32, pkt: PacketId) -> Option<u16> {
        let state = &self.nodes[node as usize];
        match state.groups.get(group as usize)?.as_ref()? {
            Group::Select { ports, weights } => {
                let total: u64 = weights.iter().map(|&w| w as u64).sum();
                let hash = mix64(self.arena.get(pkt).five_tuple_key() ^ state.ecmp_salt);
                let mut pick = reduce(hash, total);
                for (&port, &w) in ports.iter().zip(weights) {
                    if pick < w as u64 {
                        return Some(port);
                    }
                    pick -= w as u64;
                }
                None
            }
            Group::FastFailover { ports } => ports.iter().copied().find(|&p| {
                p < state.num_ports && self.ports[(state.first_port + p as u32) as usize].up
            }),
        }
    }

    pub(crate) fn enqueue(&mut self, port_id: PortId, pkt: PacketId) {
        if self.config.bcn.is_some() {
            self.bcn_congestion_point(port_id, pkt);
        }
        let now = self.now;
        let packet = self.arena.get(pkt);
        let (size, ect, flow, priority, held_when_nic_full) = (
            packet.size,
            packet.ecn != ECN_NOT_ECT,
            packet.flow,
            packet.priority,
            packet.held_when_nic_full,
        );
        let rank = RankInputs {
            remaining: packet.remaining,
            created: packet.created,
        };
        let port = &mut self.ports[port_id as usize];
        let class = port.queue.class_of(priority);
        let class_paused = class < 8 && port.paused & (1 << class) != 0;
        if port.up && port.queue.is_empty() && port.busy_until <= now && !class_paused {
            let held = packet.nic_queued;
            port.queue.note_passthrough(class, size);
            if held {
                // A packet its host held, reaching a port that went idle at once (a
                // trace-driven link may serve a packet in no time).
                self.nic_leave(pkt);
            }
            self.transmit(port_id, pkt, size, now);
            return;
        }
        let up = port.up;
        if port.host_nic && held_when_nic_full && self.nic_is_full(port_id, class, size) {
            self.hold_at_nic(port_id, pkt);
            return;
        }
        let lossless = self.lossless_at_switch(port_id, priority);
        if !up || !self.shared_buffer_admits(port_id, size, lossless) {
            self.drop_at_port(port_id, pkt);
            return;
        }
        let port = &mut self.ports[port_id as usize];
        let item = Queued::new(pkt, size, now, ect, flow, class);
        // The wait ahead (the packet in service, then everything queued at line rate),
        // which only PIE looks at.
        let delay = if port.queue.needs_delay_estimate() {
            port.busy_until.saturating_sub(now)
                + serialization_time_bytes(port.queue.bytes(), port.rate)
        } else {
            0
        };
        let was_empty = port.queue.is_empty();
        let mut evicted = std::mem::take(&mut self.scratch);
        match port.queue.enqueue(
            Arrival {
                item,
                rank,
                delay,
                lossless,
            },
            now,
            &mut port.rng,
            &mut evicted,
        ) {
            Admitted::Dropped => self.drop_at_port(port_id, pkt),
            Admitted::Queued { marked } => {
                if marked {
                    self.arena.get_mut(pkt).ecn = ECN_CE;
                    port.counters.ecn_marks += 1;
                }
                let c = &mut port.counters;
                c.max_queue_packets = c.max_queue_packets.max(port.queue.len() as u64);
                c.max_queue_bytes = c.max_queue_bytes.max(port.queue.bytes());
                if port.host_nic {
                    self.count_at_nic(pkt);
                }
                let port = &mut self.ports[port_id as usize];
                if was_empty || port.stalled {
                    port.stalled = false;
                    self.events.push(
                        port.busy_until.max(now),
                        EventKind::PortFree { port: port_id },
                    );
                }
                self.pfc_enter(pkt);
            }
        }
        self.drop_all_from(port_id, &mut evicted);
        self.scratch = evicted;
    }

    /// Whether a packet of `size` bytes in `class` must wait for host NIC `port_id`:
    /// the queue has no room for it, or packets the host holds already wait ahead of it.
    /// A packet the queue could not hold even empty does not wait: it is dropped.
    #[cold]
    fn nic_is_full(&self, port_id: PortId, class: u8, size: u32) -> bool {
        let port = &self.ports[port_id as usize];
        port.up
            && port.queue.holds_when_empty(size)
            && (self.nic_backlog.contains_key(&port_id) || !port.queue.has_room(class, size))
    }

    /// The host keeps `pkt` until its NIC queue has room, as Linux does: the queue disc
    /// refuses the segment, which stays unsent in its socket and goes when a packet
    /// leaves the NIC. A refused data segment puts its sender into congestion window
    /// reduction, as Linux's TCP does on a local drop (`tcp_enter_cwr`).
    #[cold]
    #[inline(never)]
    fn hold_at_nic(&mut self, port_id: PortId, pkt: PacketId) {
        self.count_at_nic(pkt);
        let packet = self.arena.get(pkt);
        let flow = packet.flow;
        if packet.payload > 0 && packet.src == self.flows[flow as usize].record.src {
            let token = crate::transport::NIC_REFUSED_TOKEN;
            self.events
                .push(self.now, EventKind::FlowTimer { flow, token });
        }
        self.nic_backlog.entry(port_id).or_default().push_back(pkt);
    }

    /// Counts `pkt`, now waiting at its host's NIC, against its flow's small-queue limit,
    /// once, if its flow's sender sent it: the ACKs a receiver sends wait at the other
    /// host's NIC, and belong to another socket there.
    #[inline]
    fn count_at_nic(&mut self, pkt: PacketId) {
        let packet = self.arena.get_mut(pkt);
        let record = &mut self.flows[packet.flow as usize].record;
        if packet.src == record.src && !packet.nic_queued {
            packet.nic_queued = true;
            record.nic_queued_bytes += packet.size as u64;
        }
    }

    /// Hands the packets its host holds to NIC `port_id` while its queue has room (or
    /// drops them, if its link went down).
    #[cold]
    #[inline(never)]
    fn admit_held_at_nic(&mut self, port_id: PortId) {
        let Some(mut held) = self.nic_backlog.remove(&port_id) else {
            return;
        };
        while let Some(&pkt) = held.front() {
            let packet = self.arena.get(pkt);
            let port = &self.ports[port_id as usize];
            let class = port.queue.class_of(packet.priority);
            if port.up && !port.queue.has_room(class, packet.size) {
                break;
            }
            held.pop_front();
            self.enqueue(port_id, pkt);
        }
        if !held.is_empty() {
            self.nic_backlog.insert(port_id, held);
        }
    }

    /// Counts a lossless packet that just joined a switch queue against the port it came
    /// in through, pausing the upstream transmitter past `xoff`.
    fn pfc_enter(&mut self, pkt: PacketId) {
        let Some(pfc) = self.config.pfc else { return };
        let packet = self.arena.get_mut(pkt);
        let priority = packet.priority.min(7);
        if packet.ingress == u32::MAX || pfc.lossless & (1 << priority) == 0 {
            return;
        }
        packet.pfc_held = true;
        let (ingress, size) = (packet.ingress, packet.size as u64);
        let xoff = self.pfc_threshold(&pfc, ingress);
        let port = &mut self.ports[ingress as usize];
        let held = &mut port.ingress_bytes[priority as usize];
        *held += size;
        port.counters.pfc_max_ingress_bytes = port.counters.pfc_max_ingress_bytes.max(*held);
        if *held > xoff && port.pause_sent & (1 << priority) == 0 {
            port.pause_sent |= 1 << priority;
            port.counters.pfc_pauses += 1;
            let (upstream, delay) = (port.peer, port.delay);
            self.send_pfc_frame(self.now + delay, upstream, 1 << 8 | priority as u32);
        }
    }

    /// Releases a lossless packet's hold on its ingress port as it leaves the switch's
    /// queue (sent or dropped), resuming the upstream below `xon`.
    fn pfc_leave(&mut self, pkt: PacketId) {
        // Without PFC nothing is held; the packet itself may be out of cache.
        if self.config.pfc.is_none() {
            return;
        }
        let packet = self.arena.get_mut(pkt);
        if !packet.pfc_held {
            return;
        }
        packet.pfc_held = false;
        let pfc = self.config.pfc.expect("held only with PFC on");
        let priority = packet.priority.min(7);
        let (ingress, size) = (packet.ingress, packet.size as u64);
        // Resume at xon, or with a moving threshold at the same share of it as xon is
        // of xoff (a fixed gap below a small threshold could never be reached).
        let xon = if pfc.free_fraction.is_some() {
            let threshold = self.pfc_threshold(&pfc, ingress) as u128;
            (threshold * pfc.xon as u128 / pfc.xoff as u128) as u64
        } else {
            pfc.xon
        };
        let port = &mut self.ports[ingress as usize];
        let held = &mut port.ingress_bytes[priority as usize];
        *held -= size;
        if *held < xon && port.pause_sent & (1 << priority) != 0 {
            port.pause_sent &= !(1 << priority);
            port.counters.pfc_resumes += 1;
            let (upstream, delay) = (port.peer, port.delay);
            self.send_pfc_frame(self.now + delay, upstream, priority as u32);
        }
    }

    /// The bytes an ingress may hold in a lossless priority before it pauses: `xoff`, or
    /// with a free fraction the lower of it and that fraction of the free shared buffer.
    fn pfc_threshold(&self, pfc: &Pfc, ingress: PortId) -> u64 {
        match (pfc.free_fraction, self.config.shared_buffer) {
            (Some(fraction), Some(shared)) => {
                let node = self.ports[ingress as usize].node;
                let free = shared.bytes.saturating_sub(self.switch_buffer_used(node));
                pfc.xoff.min((fraction * free as f64) as u64)
            }
            _ => pfc.xoff,
        }
    }

    /// Bytes queued at every port of node `node`: what its shared buffer holds.
    fn switch_buffer_used(&self, node: u32) -> u64 {
        let n = &self.nodes[node as usize];
        let first = n.first_port as usize;
        self.ports[first..first + n.num_ports as usize]
            .iter()
            .map(|p| p.queue.bytes())
            .sum()
    }

    /// A PFC frame reached transmitter `port_id`.
    fn on_pfc_frame(&mut self, port_id: PortId, frame: u32) {
        let now = self.now;
        let port = &mut self.ports[port_id as usize];
        let class = port.queue.class_of((frame & 0xff) as u8);
        if class >= 8 {
            return;
        }
        if frame >> 8 == 1 {
            port.paused |= 1 << class;
        } else {
            port.paused &= !(1 << class);
            if port.stalled && !port.queue.is_empty() {
                port.stalled = false;
                self.events.push(
                    port.busy_until.max(now),
                    EventKind::PortFree { port: port_id },
                );
            }
        }
    }

    /// BCN: a switch port samples an arriving data packet and may send its source a
    /// feedback frame, routed back from this switch.
    fn bcn_congestion_point(&mut self, port_id: PortId, pkt: PacketId) {
        let cfg = self.config.bcn.expect("called with BCN on");
        let port = &mut self.ports[port_id as usize];
        let node = port.node;
        let packet = self.arena.get(pkt);
        if self.nodes[node as usize].kind != NodeKind::Switch
            || packet.proto == PROTO_BCN
            || packet.payload == 0
        {
            return;
        }
        let tagged = packet.rate_regulated;
        let queue = port.queue.len() as f64;
        let Some(feedback) = port.bcn.on_arrival(&cfg, queue, tagged, &mut port.rng) else {
            return;
        };
        let frame = Packet {
            header: PacketHeader {
                src: packet.dst,
                dst: packet.src,
                proto: PROTO_BCN,
                size: FEEDBACK_BYTES,
                flow: packet.flow,
                created: self.now,
                ..Default::default()
            },
            options: PacketOptions {
                tag: feedback.encode(),
                ..Default::default()
            },
        };
        self.flows[frame.flow as usize].record.packets_sent += 1;
        let id = self.arena.alloc(frame);
        let frame = self.arena.get_mut(id);
        frame.ingress = u32::MAX;
        frame.ttl = self.config.ttl;
        self.forward(node, u16::MAX, id);
    }

    /// Makes switch port `port_id`'s BCN congestion point decide from `predictions`
    /// (queue values in packets, see `transport::bcn`) instead of its measured queue;
    /// None measures again. IBCN feeds its forecasts through this.
    pub fn set_bcn_predictions(
        &mut self,
        port_id: PortId,
        predictions: Option<Vec<f64>>,
    ) -> Result<(), String> {
        let port = self
            .ports
            .get_mut(port_id as usize)
            .ok_or_else(|| format!("port {port_id} does not exist"))?;
        port.bcn.predictions = predictions;
        Ok(())
    }

    /// Adds a BCN-regulated source sending datagrams from host `src` to `dst` until
    /// `size` bytes (0: unbounded) or `stop`; returns its flow id.
    pub fn add_bcn_flow(
        &mut self,
        src: u32,
        dst: u32,
        cfg: &BcnSourceConfig,
        size: u64,
        start: Time,
        stop: Time,
    ) -> Result<u32, String> {
        self.check_new_flow(src, dst)?;
        cfg.validate()?;
        if stop <= start || start < self.now {
            return Err(format!(
                "need now <= start < stop (start {start} ps, stop {stop} ps, now {} ps)",
                self.now
            ));
        }
        let seed = self.seed;
        Ok(self.push_flow(src, dst, size, start, (64_000, 5002), |id| {
            let rng = Rng::stream(seed, Stream::Flow, id as u64);
            Transport::Bcn(Box::new(BcnSource::new(*cfg, size, stop, rng)))
        }))
    }

    /// Drops `pkt` at port `port_id`, counting it there.
    fn drop_at_port(&mut self, port_id: PortId, pkt: PacketId) {
        let size = self.arena.get(pkt).size as u64;
        let c = &mut self.ports[port_id as usize].counters;
        c.drop_packets += 1;
        c.drop_bytes += size;
        self.drop_packet(pkt);
    }

    /// Whether a packet of `priority` entering switch port `port_id`'s queue is in a
    /// PFC lossless class: PFC, not the egress limit, bounds it.
    #[inline]
    fn lossless_at_switch(&self, port_id: PortId, priority: u8) -> bool {
        self.lossless_class(priority).is_some() && {
            let node = self.ports[port_id as usize].node;
            self.nodes[node as usize].kind == NodeKind::Switch
        }
    }

    /// The PFC settings, if traffic class `priority` is lossless under them.
    #[inline]
    fn lossless_class(&self, priority: u8) -> Option<Pfc> {
        self.config
            .pfc
            .filter(|pfc| priority < 8 && pfc.lossless & (1 << priority) != 0)
    }

    /// Whether a switch port may queue `size` more bytes under the shared buffer's
    /// dynamic threshold (host NICs have their own buffers); a lossless packet needs
    /// only room in the buffer itself.
    fn shared_buffer_admits(&self, port_id: PortId, size: u32, lossless: bool) -> bool {
        let Some(shared) = self.config.shared_buffer else {
            return true;
        };
        let node = &self.nodes[self.ports[port_id as usize].node as usize];
        if node.kind != NodeKind::Switch {
            return true;
        }
        let used = self.switch_buffer_used(self.ports[port_id as usize].node);
        let queued = self.ports[port_id as usize].queue.bytes();
        let size = size as u64;
        let threshold = shared.alpha * shared.bytes.saturating_sub(used) as f64;
        used + size <= shared.bytes && (lossless || (queued + size) as f64 <= threshold)
    }

    /// Drops packets a port's queue pushed out, counting them against the port.
    fn drop_all_from(&mut self, port_id: PortId, dropped: &mut Vec<PacketId>) {
        for pkt in dropped.drain(..) {
            self.drop_at_port(port_id, pkt);
        }
    }

    /// Starts serialising `pkt` (`size` bytes, queued since `enqueued`) on an idle
    /// transmitter; it arrives at the peer after serialisation plus propagation. The
    /// caller passes what the queue already knows, so a packet that waited is not read.
    #[inline]
    fn transmit(&mut self, port_id: PortId, pkt: PacketId, size: u32, enqueued: Time) {
        let now = self.now;
        let port = &mut self.ports[port_id as usize];
        // On a trace-driven link the packet leaves whole at its delivery opportunity.
        let ser = match &mut port.trace {
            Some(trace) => trace.take(now) - now,
            None => port.serialization(size),
        };
        port.busy_until = now + ser;
        let c = &mut port.counters;
        c.tx_packets += 1;
        c.tx_bytes += size as u64;
        c.busy_ps += ser;
        c.wait_ps += now - enqueued;
        let (arrival, peer, host_nic) = (now + ser + port.delay, port.peer, port.host_nic);
        self.waits[host_nic as usize].record(now - enqueued);
        if self.member.is_some() && self.mail_packet(arrival, peer, pkt) {
            return;
        }
        self.events
            .push(arrival, EventKind::Arrive { pkt, port: peer });
    }

    /// In a partition engine: if ingress port `peer` is another partition's, sends
    /// `pkt` there by mail (arriving at `arrival`) and returns true. Out of line, so the
    /// sequential engine's transmit stays as small as it was.
    #[cold]
    #[inline(never)]
    fn mail_packet(&mut self, arrival: Time, peer: PortId, pkt: PacketId) -> bool {
        let member = self.member.as_deref_mut().expect("a partition engine");
        let Some(to) = member.elsewhere(peer) else {
            return false;
        };
        let packet = self.arena.packet(pkt);
        self.arena.free(pkt);
        member.outgoing[to].push(crate::parallel::Mail::Arrive {
            time: arrival,
            port: peer,
            packet,
        });
        true
    }

    /// Sends a PFC frame to egress port `port` (upstream), arriving at `time`.
    fn send_pfc_frame(&mut self, time: Time, port: PortId, frame: u32) {
        if let Some(member) = self.member.as_deref_mut() {
            if let Some(to) = member.elsewhere(port) {
                member.outgoing[to].push(crate::parallel::Mail::Pfc { time, port, frame });
                return;
            }
        }
        self.events.push(time, EventKind::Pfc { port, frame });
    }

    fn on_port_free(&mut self, port_id: PortId) {
        let now = self.now;
        let mut dropped = std::mem::take(&mut self.scratch);
        let port = &mut self.ports[port_id as usize];
        if !port.up {
            // The link went down with packets waiting: they are lost.
            dropped.extend(port.queue.drain().iter().map(|q| q.pkt));
            self.drop_all_from(port_id, &mut dropped);
            self.scratch = dropped;
            self.admit_held_at_nic(port_id);
            return;
        }
        let next = port.queue.dequeue_unpaused(now, port.paused, &mut dropped);
        if next.is_none() && !port.queue.is_empty() {
            // Only paused classes wait: a resume or a new arrival restarts the port.
            port.stalled = true;
        }
        self.drop_all_from(port_id, &mut dropped);
        self.scratch = dropped;
        let Some((item, marked)) = next else {
            // Emptied by its AQM, or only paused classes wait: what the host holds may
            // fit now.
            if self.ports[port_id as usize].host_nic && !self.nic_backlog.is_empty() {
                self.admit_held_at_nic(port_id);
            }
            return;
        };
        self.pfc_leave(item.pkt);
        if self.ports[port_id as usize].host_nic {
            self.nic_leave(item.pkt);
        }
        if marked {
            self.arena.get_mut(item.pkt).ecn = ECN_CE;
            self.ports[port_id as usize].counters.ecn_marks += 1;
        }
        self.transmit(port_id, item.pkt, item.size, item.enqueued);
        let port = &mut self.ports[port_id as usize];
        if !port.queue.is_empty() {
            self.events
                .push(port.busy_until, EventKind::PortFree { port: port_id });
        } else {
            port.queue.release_room();
        }
        // After the port's next wake-up is settled: a held packet joining an empty
        // queue schedules its own.
        if port.host_nic && !self.nic_backlog.is_empty() {
            self.admit_held_at_nic(port_id);
        }
    }

    fn deliver(&mut self, pkt: PacketId) {
        let packet = self.arena.packet(pkt);
        let flow = packet.flow;
        let mut out = std::mem::take(&mut self.outbox);
        let finished = self.flows[flow as usize].on_delivery(flow, &packet, self.now, &mut out);
        self.count_finished(flow, finished);
        self.arena.free(pkt);
        self.apply_outbox(flow, &mut out);
        self.outbox = out;
    }

    /// A packet left its source host's NIC queue (sent or dropped): its flow's sender,
    /// if it stopped for the NIC to drain, may send again.
    fn nic_leave(&mut self, pkt: PacketId) {
        let packet = self.arena.get_mut(pkt);
        if !packet.nic_queued {
            return;
        }
        packet.nic_queued = false;
        let (flow, size) = (packet.flow, packet.size as u64);
        let record = &mut self.flows[flow as usize].record;
        record.nic_queued_bytes -= size;
        if record.nic_blocked {
            record.nic_blocked = false;
            let token = crate::transport::NIC_DRAINED_TOKEN;
            self.events
                .push(self.now, EventKind::FlowTimer { flow, token });
        }
    }

    pub(crate) fn drop_packet(&mut self, pkt: PacketId) {
        self.pfc_leave(pkt);
        self.nic_leave(pkt);
        let flow = self.arena.get(pkt).flow;
        let finished = self.flows[flow as usize].on_drop(self.now);
        self.count_finished(flow, finished);
        self.arena.free(pkt);
    }

    fn sample(&mut self) {
        let now = self.now;
        if let Some(s) = &mut self.sampler {
            s.record(
                now,
                self.ports
                    .iter()
                    .map(|p| (p.queue.len() as u64, p.queue.bytes())),
                self.ports.iter().map(|p| &p.counters),
            );
            self.events.push(now + s.interval, EventKind::Sample);
        }
    }

    // ---- reading ---------------------------------------------------------------------

    pub fn now(&self) -> Time {
        self.now
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub fn flows(&self) -> impl Iterator<Item = &FlowRecord> {
        self.flows.iter().map(|f| &f.record)
    }

    /// Flow `id`'s record (None for an id no flow has).
    pub fn flow_record(&self, id: u32) -> Option<&FlowRecord> {
        self.flows.get(id as usize).map(|f| &f.record)
    }

    /// Each flow's (source port, destination port, subflows, datagram): an MPTCP
    /// connection's subflow i sends from source port + 1000 i, every other flow has one
    /// subflow; datagram flows (UDP, BCN) are streams without retransmission.
    pub fn flow_ports(&self) -> impl Iterator<Item = (u16, u16, u8, bool)> + '_ {
        self.flows.iter().map(|f| {
            // (A partitioned run's snapshot holds `Elsewhere`: single-path TCP flows.)
            let subflows = match &f.transport {
                Transport::Mptcp(m) => m.subflow_count() as u8,
                _ => 1,
            };
            let datagram = matches!(f.transport, Transport::Udp(_) | Transport::Bcn(_));
            (f.src_port, f.dst_port, subflows, datagram)
        })
    }

    /// Flows added so far plus those a workload will still add (incast rounds).
    pub fn expected_flows(&self) -> usize {
        self.flows.len() + self.reserved_flows
    }

    pub fn num_flows(&self) -> usize {
        self.flows.len()
    }

    pub fn unfinished_flows(&self) -> usize {
        self.unfinished_flows
    }

    pub fn events_processed(&self) -> u64 {
        self.events_processed
    }

    /// Packet arrivals at nodes (one per link traversal).
    /// A TCP flow's congestion window (bytes) and, if it runs CUBIC, its W_max
    /// (segments), K (s) and epoch start; None for other transports.
    pub fn tcp_window(
        &self,
        flow: u32,
    ) -> Option<(u64, Option<crate::transport::cubic::CubicView>)> {
        if let Some(partitioned) = &self.partitioned {
            return partitioned.sender_of(flow)?.tcp_window(flow);
        }
        match &self.flows.get(flow as usize)?.transport {
            Transport::Tcp(t) => Some((t.cwnd(), t.cubic_state())),
            _ => None,
        }
    }

    /// A live packet's header, for audits and tests.
    pub fn packet(&self, pkt: PacketId) -> &PacketHeader {
        self.arena.get(pkt)
    }

    pub fn packet_hops(&self) -> u64 {
        self.packet_hops
    }

    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    pub fn next_event_time(&self) -> Option<Time> {
        match &self.partitioned {
            Some(partitioned) => partitioned.next_event_time(),
            None => self.events.peek_time(),
        }
    }

    /// Live packets according to the arena (every partition's, in a partitioned run).
    pub fn live_packets(&self) -> usize {
        match &self.partitioned {
            Some(partitioned) => partitioned.live_packets(),
            None => self.arena.live(),
        }
    }

    /// The arena's high-water mark of packet slots.
    pub fn packet_slots(&self) -> usize {
        self.arena.capacity_used()
    }

    pub fn sampler(&self) -> Option<&Sampler> {
        self.sampler.as_ref()
    }

    /// The distribution of packets' waits for a transmitter at switch ports
    /// (`host_nic` false) or at hosts' NICs (true), one count per packet and hop.
    pub fn waits(&self, host_nic: bool) -> &WaitHistogram {
        &self.waits[host_nic as usize]
    }

    /// Unloaded round trip from host `src` to host `dst` and back along the default
    /// route's first choice at each hop: a `data_bytes` packet forward and an `ack_bytes`
    /// packet back, each paying serialisation and propagation at every hop.
    pub fn base_rtt(
        &self,
        src: u32,
        dst: u32,
        data_bytes: u32,
        ack_bytes: u32,
    ) -> Result<Time, String> {
        self.check_new_flow(src, dst)?;
        Ok(self.one_way(src, dst, data_bytes)? + self.one_way(dst, src, ack_bytes)?)
    }

    fn one_way(&self, src: u32, dst: u32, bytes: u32) -> Result<Time, String> {
        self.along_route(src, dst, |_, port| port.serialization(bytes) + port.delay)
    }

    /// The longest a `bytes` packet of traffic class `priority` from host `src` can take
    /// to reach host `dst` on the default route: every switch queue on the way full, of
    /// packets of `queued_bytes`, then serialisation and propagation at each hop. A queue
    /// is full at its limit (or the switch's shared buffer, if smaller); a lossless class
    /// under PFC passes the limit, so its queue is full at the shared buffer, or without
    /// one at what every ingress of the switch may send before its pause takes hold. The
    /// source's own NIC queue is left out: a sender that waits for its NIC (DCQCN) has at
    /// most one packet there. InfiniBand calls it the path's packet lifetime.
    pub fn packet_lifetime(
        &self,
        src: u32,
        dst: u32,
        (bytes, queued_bytes): (u32, u32),
        priority: u8,
    ) -> Result<Time, String> {
        let shared = self.config.shared_buffer.map(|s| s.bytes);
        let lossless = self.lossless_class(priority);
        self.along_route(src, dst, |node, port| {
            let full = match (self.nodes[node as usize].kind, lossless, shared) {
                (NodeKind::Host, _, _) => 0,
                (NodeKind::Switch, Some(_), Some(shared)) => shared,
                (NodeKind::Switch, Some(pfc), None) => {
                    self.pfc_intake(node, pfc.xoff, queued_bytes)
                }
                (NodeKind::Switch, None, _) => {
                    let limit = match port.queue.config.limit {
                        Limit::Packets(n) => n.saturating_mul(queued_bytes as u64),
                        Limit::Bytes(b) => b,
                    };
                    limit.min(shared.unwrap_or(u64::MAX))
                }
            };
            let drain = full as u128 * 8 * SEC as u128 / port.rate.max(1) as u128;
            (drain.min(Time::MAX as u128) as Time)
                .saturating_add(port.serialization(bytes))
                .saturating_add(port.delay)
        })
    }

    /// The most switch `node`'s ingresses may send it under PFC at threshold `xoff`:
    /// `xoff` each, plus what arrives while a pause crosses the link and the packet on
    /// the wire at each end (`packet` bytes).
    fn pfc_intake(&self, node: u32, xoff: u64, packet: u32) -> u64 {
        let n = &self.nodes[node as usize];
        let first = n.first_port as usize;
        self.ports[first..first + n.num_ports as usize]
            .iter()
            .map(|p| {
                let in_flight = p.rate as u128 * 2 * p.delay as u128 / (8 * SEC as u128);
                xoff.saturating_add(in_flight.min(u64::MAX as u128) as u64)
                    .saturating_add(2 * packet as u64)
            })
            .fold(0u64, u64::saturating_add)
    }

    /// The sum of `cost(node, egress port)` over the hops of the default route's first
    /// choice at each node from host `src` to host `dst`.
    fn along_route(
        &self,
        src: u32,
        dst: u32,
        cost: impl Fn(u32, &Port) -> Time,
    ) -> Result<Time, String> {
        let target = self.topology.hosts[dst as usize];
        let mut node = self.topology.hosts[src as usize];
        let mut total: Time = 0;
        while node != target {
            let &local = self
                .routes
                .next_hops(node, dst)
                .first()
                .ok_or_else(|| format!("no route from host {src} to host {dst}"))?;
            let port = &self.ports[(self.nodes[node as usize].first_port + local as u32) as usize];
            total = total.saturating_add(cost(node, port));
            node = self.ports[port.peer as usize].node;
        }
        Ok(total)
    }

    /// Counts the packets in the network by looking where they are (queues and pending
    /// arrivals), independently of the arena's bookkeeping.
    pub fn audit_in_flight(&self) -> InFlight {
        let mut total = InFlight::default();
        for port in &self.ports {
            for pkt in port.queue.packets() {
                total.packets += 1;
                total.bytes += self.arena.get(pkt).size as u64;
            }
        }
        for ev in self.events.iter() {
            if let EventKind::Arrive { pkt, .. } = ev.kind() {
                total.packets += 1;
                total.bytes += self.arena.get(pkt).size as u64;
            }
        }
        for b in self.control.buffers.iter() {
            total.packets += 1;
            total.bytes += self.arena.get(b.pkt).size as u64;
        }
        total
    }

    /// Builds a packet with this flow's addresses, for tests and tools.
    pub fn packet_of_flow(&self, flow: u32) -> PacketHeader {
        let f = &self.flows[flow as usize];
        PacketHeader {
            src: f.record.src,
            dst: f.record.dst,
            src_port: f.src_port,
            dst_port: f.dst_port,
            flow,
            ..Default::default()
        }
    }
}
