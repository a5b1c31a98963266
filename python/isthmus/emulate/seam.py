"""The control plane's seam onto emulated switches: checked commands become OpenFlow 1.3
messages to the bridges, packet-ins and removed entries come back as the same events the
simulator gives, the runners' reports give flow arrivals and completions, and time is
the wall clock (ps since the traffic started).

Each switch's tables, in the order a packet meets them:
- table 0 counts the flows of a watched switch as they come in (`crossings`), and
  sends every packet on to table 1;
- table 1 holds the programs' entries (cookie = entry id + 1) and the table-miss entry
  (priority 0): to table 2 ("route"), to the controller, or nothing ("drop");
- table 2 is the network's own routing: per destination host, a select group over the
  ports on its shortest paths (`network.routing = "ecmp"`), or, for "single_path", one
  of those ports per pair of hosts, by an entry per pair; an entry with no action
  goes there too, as "default routing" does in the simulator;
- table 3 sends the packet out: every output above puts its port in register 0 and
  goes to table 3, whose entry for that port sends it there and counts what the switch
  handed the port (`handed_rows`); a watched switch's flows are counted there by the
  port they leave by.

A command this back-end cannot carry out is refused by name, never dropped."""

from __future__ import annotations

import hashlib
import heapq
import itertools
import selectors
import time
from collections import Counter
from collections.abc import Callable
from functools import partial

import numpy as np
from os_ken.lib.packet import ethernet, ipv4, packet, tcp, udp
from os_ken.ofproto import ofproto_v1_3 as ofp
from os_ken.ofproto import ofproto_v1_3_parser as parser

from isthmus import arguments
from isthmus.control import commands
from isthmus.control.events import REMOVAL_REASONS, EntryRemoved, Event, PacketIn, Tick
from isthmus.control.routing import next_hop_ports
from isthmus.control.seam import ControlEvents, RunRequest, Seam
from isthmus.emulate import crossings
from isthmus.emulate.kernel_ports import KernelPorts, Series
from isthmus.emulate.network import EmulatedNetwork, host_mac, host_of_mac, ofport
from isthmus.emulate.openflow import Channel
from isthmus.emulate.system import EmulationError
from isthmus.emulate.traffic import Traffic
from isthmus.portmap import PortMap
from isthmus.topology import Topology

WATCH_TABLE, PROGRAM_TABLE, ROUTING_TABLE, EGRESS_TABLE = 0, 1, 2, 3
ROUTING_GROUP_BASE = 1 << 16
"""Routing groups are numbered above every group id a program may use."""
ALL_BITS = (1 << 64) - 1
SYSTEM_COOKIE = 0
"""The cookie of the back-end's own entries (table-miss, routing): no program entry's,
so deleting a program's entry by its cookie never takes one of them along."""
STATS_TIMEOUT_S = 5.0
PROTOCOLS = {6: tcp.tcp, 17: udp.udp}
TRANSPORT_MATCH = crossings.TRANSPORT_MATCH
PS_PER_S = 10**12
PORT_ROW_COLUMNS = (
    "node", "port", "peer_node", "rate_bps", "tx_bytes", "tx_packets", "rx_bytes",
    "rx_packets", "drop_packets", "queue_packets", "queue_bytes",
)  # fmt: skip
"""The columns of `port_rows`: the simulator's port table's that the emulation counts."""
PORT_ROW_TYPES = {"node": np.uint32, "port": np.uint16, "peer_node": np.uint32}
HAIRPIN_PRIORITY = 2
"""Above the counting entries of watched flows (1) in the egress table."""
LOOP_WAKE_S = 0.02
"""The longest the run loop waits without a message, a report or a timer."""


class Unsupported(EmulationError, ValueError):
    """A command or reading this back-end cannot carry out (yet): a ValueError, as
    the simulator's refusal of a command is."""


class OpenFlowSeam(Seam):
    def __init__(
        self,
        topology: Topology,
        network: EmulatedNetwork,
        channel: Channel,
        traffic: Traffic,
        rate_scale: float,
        seed: int,
        *,
        kernel: KernelPorts | None = None,
        series: Series | None = None,
    ):
        """`kernel`: the ports' own counters (hosts' rows and queues in `port_rows`);
        `series`: the time series the run loop samples."""
        self.topology = topology
        self.kernel = kernel
        self.series = series
        self.seed = seed
        self.network = network
        self.channel = channel
        self.traffic = traffic
        self.rate_scale = rate_scale
        self.ports = PortMap(self)
        self._start_ns: int | None = None
        self._timers: list[tuple[int, int, int, int | None]] = []
        self._cancelled: set[int] = set()
        self._timer_ids = itertools.count()
        self._entry_ids = itertools.count()
        self._buffer_ids = itertools.count()
        self._buffers: dict[int, tuple[int, int, bytes]] = {}
        self._flood_ports: dict[int, list[int]] = {}
        self._groups: set[tuple[int, int]] = set()
        self._meters: set[tuple[int, int]] = set()
        self._pending: list[tuple[int, object]] = []
        self._delayed: list[tuple[int, int, commands.Command]] = []
        self._held: list[Event] = []
        self._parts: dict[tuple[int, int], list[int]] = {}
        """(switch, entry) -> [OpenFlow entries still in, packets and bytes of those gone]."""
        self.changed_switches: set[int] = set()
        """Switches whose forwarding changed while the traffic ran: a program's entry or
        group came, went or changed, or one of their links went down or up."""
        self._watches: dict[int, crossings.FlowWatch] = {}
        self._next_read = 0
        self._ended = False
        self.foreign_frames = 0
        """Packet-ins of frames not between two hosts (dropped, not handed up)."""
        self.frames_to_controller: Counter[int] = Counter()
        """Frames each switch sent up as packet-ins from its ports (and so did not send)."""
        self.frames_from_controller: Counter[int] = Counter()
        """Frames each switch was given by packet-outs: each output a frame it sends, a
        packet-out through its tables one frame it receives."""
        self.replicating_switches: set[int] = set()
        """Switches given an entry that floods: a frame they receive leaves by many
        ports, so their frames in and out no longer tell their loss."""
        self.discarding_switches: set[int] = set()
        """Switches that may drop frames by their own rules (a drop entry, table-miss
        drop, a meter), which their frames in and out count with their queues' losses."""
        self._ways = crossings.directions(traffic.flows)
        """Both ways of every flow: flow f's are ways 2f (its data) and 2f + 1 (back)."""
        # Flow id by its packets' (src host, src port, dst host, dst port).
        self._flow_of = {(w.src, w.src_port, w.dst, w.dst_port): w.flow for w in self._ways}

    # ---- time ------------------------------------------------------------------------

    @property
    def now(self) -> int:
        if self._start_ns is None:
            return 0
        return self.to_ps(time.monotonic_ns())

    def to_ps(self, monotonic_ns: int) -> int:
        return max(0, (monotonic_ns - (self._start_ns or 0)) * 1000)

    def add_timer(self, first: int, period: int | None) -> int:
        timer = next(self._timer_ids)
        heapq.heappush(self._timers, (first, timer, timer, period))
        return timer

    def cancel_timer(self, timer: int) -> None:
        self._cancelled.add(timer)

    # ---- commands --------------------------------------------------------------------

    def set_miss(self, switch: int, miss: str) -> None:
        instructions = {
            "route": [parser.OFPInstructionGotoTable(ROUTING_TABLE)],
            "controller": _apply(
                [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
            ),
            "drop": [],
        }[miss]
        if miss == "drop":
            self.discarding_switches.add(switch)
        self._to(switch, lambda dp: parser.OFPFlowMod(
            dp, table_id=PROGRAM_TABLE, command=ofp.OFPFC_ADD, priority=0,
            match=parser.OFPMatch(), instructions=instructions,
        ))  # fmt: skip

    def send(self, delay: int, command: commands.Command) -> int | None:
        entry = next(self._entry_ids) if isinstance(command, commands.InstallEntry) else None
        if delay > 0:
            heapq.heappush(
                self._delayed, (self.now + delay, next(self._timer_ids), (command, entry))
            )
        else:
            self._carry_out(command, entry)
        return entry

    def _carry_out(self, command: commands.Command, entry: int | None) -> None:
        if self._start_ns is not None:
            self._note_change(command)
        match command:
            case commands.InstallEntry(switch, priority, fields):
                self._install(switch, priority, dict(fields), entry)
            case commands.ModifyEntry(switch, entry_id, action):
                instructions = self._instructions(switch, dict(action))
                self._to(switch, lambda dp: parser.OFPFlowMod(
                    dp, table_id=PROGRAM_TABLE, command=ofp.OFPFC_MODIFY, cookie=cookie(entry_id),
                    cookie_mask=ALL_BITS, match=parser.OFPMatch(), instructions=instructions,
                ))  # fmt: skip
            case commands.DeleteEntry(switch, entry_id):
                self._to(switch, lambda dp: parser.OFPFlowMod(
                    dp, table_id=PROGRAM_TABLE, command=ofp.OFPFC_DELETE, cookie=cookie(entry_id),
                    cookie_mask=ALL_BITS, out_port=ofp.OFPP_ANY, out_group=ofp.OFPG_ANY,
                    match=parser.OFPMatch(),
                ))  # fmt: skip
            case commands.SetSelectGroup(switch, group, ports, weights):
                buckets = [
                    parser.OFPBucket(weight=w, actions=_output(p))
                    for p, w in zip(ports, weights, strict=True)
                ]
                self._group(switch, group, ofp.OFPGT_SELECT, buckets)
            case commands.SetFailoverGroup(switch, group, ports):
                buckets = [
                    parser.OFPBucket(watch_port=ofport(p), actions=_output(p)) for p in ports
                ]
                self._group(switch, group, ofp.OFPGT_FF, buckets)
            case commands.SetMeter(switch, meter, rate, burst):
                self._meter(switch, meter, rate, burst)
            case commands.SetFloodPorts(switch, ports):
                self._flood_ports[switch] = list(ports)
            case commands.PacketOut(buffer, port):
                to_table = [parser.OFPActionOutput(ofp.OFPP_TABLE)]
                self._packet_out(buffer, to_table if port is None else _output(port))
            case commands.FloodOut(buffer):
                switch, in_port, _ = self._buffers[buffer]
                ports = self._flood_ports.get(switch, range(len(self.ports.neighbours[switch])))
                outputs = [action for p in ports if p != in_port for action in _output(p)]
                self._packet_out(buffer, outputs)
            case commands.DropBuffer(buffer):
                self._buffers.pop(buffer, None)
            case commands.Pace(flow, rate):
                # The kernel paces in bytes per second, at the emulated rate.
                scaled = None if rate is None else round(rate / self.rate_scale / 8)
                self.traffic.order(flow, kind="pace", rate=scaled)
            case commands.Hold(flow):
                self.traffic.order(flow, kind="hold")
            case commands.Release(flow):
                self.traffic.order(flow, kind="release")
            case commands.SetLink(link, up):
                if link >= len(self.network.link_ends):
                    raise ValueError(
                        f"link {link} does not exist; the topology has "
                        f"{len(self.network.link_ends)} links"
                    )
                self.network.set_link(link, up)
            case _:
                raise Unsupported(
                    f"the emulation cannot yet carry out {type(command).__name__} commands "
                    "(docs/emulation.md lists what it translates)"
                )

    def _note_change(self, command: commands.Command) -> None:
        """Notes the switches whose forwarding `command` changes (`changed_switches`)."""
        match command:
            case (
                commands.InstallEntry(switch)
                | commands.ModifyEntry(switch)
                | commands.DeleteEntry(switch)
                | commands.SetSelectGroup(switch)
                | commands.SetFailoverGroup(switch)
                | commands.SetMeter(switch)
            ):
                self.changed_switches.add(switch)
            case commands.SetLink(link) if link < len(self.network.link_ends):
                ends = self.network.link_ends[link]
                self.changed_switches |= {n for n, _ in ends if self.ports.kinds[n] == "switch"}

    def _to(self, switch: int, build: Callable) -> None:
        """Sends the message `build(datapath)` makes to `switch`, or keeps it until the
        switch has connected."""
        if switch in self.channel.switches:
            self.channel.send(switch, build(self.channel.connection(switch)))
        else:
            self._pending.append((switch, build))

    def _install(self, switch: int, priority: int, fields: dict, entry: int) -> None:
        instructions = self._instructions(switch, fields)
        flags = ofp.OFPFF_SEND_FLOW_REM
        timeouts = {key: _seconds(fields.get(key), key) for key in ("idle_timeout", "hard_timeout")}
        matches = self._matches(fields)
        self._parts[(switch, entry)] = [len(matches), 0, 0]
        for match in matches:
            self._to(switch, lambda dp, match=match: parser.OFPFlowMod(
                dp, table_id=PROGRAM_TABLE, command=ofp.OFPFC_ADD, priority=priority,
                cookie=cookie(entry), flags=flags, match=parser.OFPMatch(**match),
                instructions=instructions, **timeouts,
            ))  # fmt: skip

    def _matches(self, fields: dict) -> list[dict]:
        """The OpenFlow matches of an entry's match fields: one, or one per direction
        for a flow's packets with no source given."""
        match: dict = {}
        if "in_port" in fields:
            match["in_port"] = ofport(fields["in_port"])
        if "src" in fields:
            match["eth_src"] = host_mac(fields["src"])
        if "dst" in fields:
            match["eth_dst"] = host_mac(fields["dst"])
        proto = fields.get("proto")
        if proto is not None:
            if proto not in TRANSPORT_MATCH:
                raise Unsupported(f"proto: the emulation matches TCP (6) and UDP (17), not {proto}")
            match |= {"eth_type": 0x0800, "ip_proto": proto}
        for key, side in (("src_port", 0), ("dst_port", 1)):
            if key in fields:
                if proto is None:
                    raise Unsupported(
                        f"{key}: OpenFlow matches a transport port only with proto given"
                    )
                match[TRANSPORT_MATCH[proto][side]] = fields[key]
        if "flow" not in fields:
            return [match]
        flow = fields["flow"]
        if flow >= len(self.traffic.flows["src"]):
            raise Unsupported(f"flow: flow {flow} is not one of the scenario's flows")
        return [
            match | way.match()
            for way in self._ways[2 * flow : 2 * flow + 2]
            if fields.get("src", way.src) == way.src and fields.get("dst", way.dst) == way.dst
        ]

    def _instructions(self, switch: int, fields: dict) -> list:
        if fields.get("set_priority") is not None:
            raise Unsupported(
                "set_priority: the emulation does not yet map traffic classes to queues"
            )
        if fields.get("drop"):
            self.discarding_switches.add(switch)
            instructions = []
        elif "output" in fields:
            instructions = _apply(_output(fields["output"]))
        elif "group" in fields:
            instructions = _apply([parser.OFPActionGroup(fields["group"])])
        elif fields.get("controller"):
            instructions = _apply(
                [parser.OFPActionOutput(ofp.OFPP_CONTROLLER, ofp.OFPCML_NO_BUFFER)]
            )
        elif fields.get("flood"):
            self.replicating_switches.add(switch)
            ports = self._flood_ports.get(switch, range(len(self.ports.neighbours[switch])))
            instructions = _apply([action for p in ports for action in _output(p)])
        else:
            instructions = [parser.OFPInstructionGotoTable(ROUTING_TABLE)]
        if fields.get("meter") is not None:
            self.discarding_switches.add(switch)
            instructions = [parser.OFPInstructionMeter(fields["meter"] + 1), *instructions]
        return instructions

    def _group(self, switch: int, group: int, kind: int, buckets: list) -> None:
        verb = ofp.OFPGC_MODIFY if (switch, group) in self._groups else ofp.OFPGC_ADD
        self._groups.add((switch, group))
        self._to(switch, lambda dp: parser.OFPGroupMod(dp, verb, kind, group, buckets))

    def _meter(self, switch: int, meter: int, rate_bps: int, burst_bytes: int) -> None:
        verb = ofp.OFPMC_MODIFY if (switch, meter) in self._meters else ofp.OFPMC_ADD
        self._meters.add((switch, meter))
        band = parser.OFPMeterBandDrop(
            rate=max(1, round(rate_bps / self.rate_scale / 1000)),
            burst_size=max(1, burst_bytes * 8 // 1000),
        )
        flags = ofp.OFPMF_KBPS | ofp.OFPMF_BURST
        self._to(switch, lambda dp: parser.OFPMeterMod(dp, verb, flags, meter + 1, [band]))

    def _packet_out(self, buffer: int, actions: list) -> None:
        switch, in_port, data = self._buffers.pop(buffer)
        self._count_frames_from_controller(switch, actions)
        self._to(switch, lambda dp: parser.OFPPacketOut(
            dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofport(in_port), actions=actions, data=data,
        ))  # fmt: skip

    # ---- routing -----------------------------------------------------------------------

    def install_pipeline(self, routing: str = "ecmp") -> None:
        """Every switch's tables but the programs': table 0 passing packets on, table 2
        routing per destination by a select group over its shortest paths' next hops
        (the simulator's ECMP; with `routing` "single_path", one of those next hops
        per pair of hosts, as the simulator's single path: `single_path_port`), and
        table 3 sending each packet out of the port its register names: one entry per
        port, counting what the switch handed that port (`handed_rows`), and one for a
        packet going back out of the port it came in by, which takes OpenFlow's
        IN_PORT (an output to a packet's own port is dropped)."""
        back = _apply([parser.OFPActionOutput(ofp.OFPP_IN_PORT)])
        for switch in self._switches():
            self._add(switch, WATCH_TABLE, 0, parser.OFPMatch(), _ONWARD)
            for port in range(len(self.ports.neighbours[switch])):
                number = ofport(port)
                out = _apply([parser.OFPActionOutput(number)])
                self._add(switch, EGRESS_TABLE, 0, parser.OFPMatch(reg0=number), out)
                hairpin = parser.OFPMatch(in_port=number, reg0=number)
                self._add(switch, EGRESS_TABLE, HAIRPIN_PRIORITY, hairpin, back)
        for (switch, host), hops in sorted(next_hop_ports(self.ports).items()):
            if not hops:
                continue
            group = ROUTING_GROUP_BASE + host
            buckets = [parser.OFPBucket(weight=1, actions=_output(p)) for p in hops]
            self._to(switch, lambda dp, group=group, buckets=buckets: parser.OFPGroupMod(
                dp, ofp.OFPGC_ADD, ofp.OFPGT_SELECT, group, buckets
            ))  # fmt: skip
            to_group = _apply([parser.OFPActionGroup(group)])
            self._add(switch, ROUTING_TABLE, 1, parser.OFPMatch(eth_dst=host_mac(host)), to_group)
            if routing == "single_path" and len(hops) > 1:
                for src in range(len(self.ports.host_node)):
                    if src == host:
                        continue
                    port = single_path_port(hops, src, host, switch, self.seed)
                    match = parser.OFPMatch(eth_src=host_mac(src), eth_dst=host_mac(host))
                    self._add(switch, ROUTING_TABLE, 2, match, _apply(_output(port)))

    def connect(self, timeout: float) -> None:
        """Waits for every switch, then sends what waited for them, in order."""
        switches = self._switches()
        self.channel.wait_for(switches, timeout)
        pending, self._pending = self._pending, []
        for switch, build in pending:
            self._to(switch, build)
        self._barrier(switches)

    def prime_datapath(self) -> None:
        """Has the datapath send one frame, so that its send socket exists: a frame from
        no host to the first host (an experimental EtherType its stack ignores), out of
        the port facing it."""
        host_node = self.ports.host_node[0]
        switch, port = self.ports.peer(host_node, 0)
        frame = bytes.fromhex(host_mac(0).replace(":", "")) + bytes.fromhex("02ffffffffff")
        frame += (0x88B5).to_bytes(2, "big") + bytes(46)
        self._count_frames_from_controller(switch, _output(port))
        self._to(switch, lambda dp: parser.OFPPacketOut(
            dp, buffer_id=ofp.OFP_NO_BUFFER, in_port=ofp.OFPP_CONTROLLER,
            actions=_output(port), data=frame,
        ))  # fmt: skip
        self._barrier([switch])

    def _count_frames_from_controller(self, switch: int, actions: list) -> None:
        # A frame for each port it goes out of (a resubmit to the egress table), or one
        # into the tables; a packet-out takes no other action.
        frames = 0
        for action in actions:
            if isinstance(action, parser.NXActionResubmitTable):
                frames += 1
            elif isinstance(action, parser.OFPActionOutput):
                assert action.port == ofp.OFPP_TABLE, action
                frames += 1
            else:
                assert isinstance(action, parser.OFPActionSetField), action
        self.frames_from_controller[switch] += frames

    def _switches(self) -> list[int]:
        return [n for n, kind in enumerate(self.ports.kinds) if kind == "switch"]

    def _barrier(self, switches: list[int]) -> None:
        """Returns once every switch has carried out what it was sent."""
        waiting = {
            s: self.channel.send(s, parser.OFPBarrierRequest(self.channel.connection(s)))
            for s in switches
        }

        def take(node: int, msg) -> bool:
            if isinstance(msg, parser.OFPBarrierReply) and waiting.get(node) == msg.xid:
                del waiting[node]
                return True
            return False

        self._await(take, lambda: not waiting)

    def _statistics(self, switches: list[int], request: Callable) -> list[tuple[int, object]]:
        """Each switch's answer to the multipart request `request(datapath)` makes, as
        (switch, item) pairs: every part of the reply to that very request (by its
        transaction id), however many parts the switch splits it into."""
        waiting = {s: self.channel.send(s, request(self.channel.connection(s))) for s in switches}
        items: list[tuple[int, object]] = []

        def take(node: int, msg) -> bool:
            if not isinstance(msg, parser.OFPMultipartReply) or waiting.get(node) != msg.xid:
                return False
            items.extend((node, item) for item in msg.body)
            if not msg.flags & ofp.OFPMPF_REPLY_MORE:
                del waiting[node]
            return True

        self._await(take, lambda: not waiting)
        return items

    def _await(self, take: Callable[[int, object], bool], done: Callable[[], bool]) -> None:
        """Polls until `done()`, handing each message to `take`; what it does not take
        becomes an event for the next dispatch."""
        deadline = time.monotonic() + STATS_TIMEOUT_S
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise EmulationError(f"switches did not answer within {STATS_TIMEOUT_S} s")
            for node, msg in self.channel.poll(left):
                if node is None or not take(node, msg):
                    self._held += self._events(node, msg)

    # ---- running -----------------------------------------------------------------------

    def run(self, request: RunRequest, start: Callable[[], None], events: ControlEvents) -> bool:
        until = arguments.duration(request.until, "until")
        stop_when_flows_finish, chunks = request.stop_when_flows_finish, request.chunks
        on_progress = request.on_progress
        if self._start_ns is not None:
            raise Unsupported("an emulated network runs once: build a new one to run again")
        # The programs start at time 0, as in the simulator: what they install at the
        # start is in place before the first packet.
        start()
        self._barrier(self._switches())
        self._start_ns = time.monotonic_ns()
        self.traffic.start(self._start_ns)
        pipes = self.traffic.pipes()
        for fd, host in pipes.items():
            # A runner's reports come through the same poll as the switches' messages
            # (as events, under no switch), wherever the seam waits: in this loop or for
            # a statistics reply a program asked for.
            self.channel.selector.register(fd, selectors.EVENT_READ, partial(self._reports, host))
        marks = [until * i // chunks for i in range(1, chunks + 1)]
        try:
            while True:
                now = self.now
                while marks and marks[0] <= now:
                    mark = marks.pop(0)
                    if on_progress is not None:
                        on_progress(mark)
                if now >= until or (stop_when_flows_finish and self.traffic.unfinished == 0):
                    break
                batch, self._held = self._held, []
                batch += self._due(now)
                if self._watches and now >= self._next_read:
                    batch += self._read_watches(list(self._watches))
                    self._next_read = now + crossings.POLL_PS
                if self.series is not None and now >= self.series.next_ps:
                    self.series.take(now)
                next_due = min(
                    [
                        until,
                        *(t[0] for t in self._timers[:1]),
                        *(d[0] for d in self._delayed[:1]),
                        *([self.series.next_ps] if self.series is not None else []),
                    ]
                )
                # Flows also end by time passing (a UDP stream's grace): look again soon.
                wait = min(max(0.0, (next_due - now) / PS_PER_S), LOOP_WAKE_S)
                for node, msg in self.channel.poll(0 if batch else wait):
                    batch += self._events(node, msg)
                if batch:
                    events(sorted(batch, key=lambda e: e.time))
            if self._watches:
                # The crossing tables as the run ended, for reading after it.
                self.network.ovs.settle_flow_counts()
                self._read_watches(list(self._watches))
        finally:
            self._ended = True
            # What the senders report from here on ends no round: no round starts after
            # the run.
            self.traffic.rounds_over = True
            for fd in pipes:
                self.channel.selector.unregister(fd)
        return self.traffic.unfinished == 0

    def _reports(self, host: int, _mask: int) -> list[tuple[None, Event]]:
        """What host `host`'s runner reported, as (no switch, event) pairs."""
        return [(None, event) for event in self.traffic.read(host, self.to_ps)]

    def _due(self, now: int) -> list[Event]:
        """Timers that fell due (as Tick events) and delayed commands, carried out."""
        while self._delayed and self._delayed[0][0] <= now:
            _, _, (command, entry) = heapq.heappop(self._delayed)
            self._carry_out(command, entry)
        due = []
        while self._timers and self._timers[0][0] <= now:
            when, _, timer, period = heapq.heappop(self._timers)
            if timer in self._cancelled:
                self._cancelled.discard(timer)
                continue
            due.append(Tick(when, timer))
            if period is not None:
                heapq.heappush(self._timers, (when + period, next(self._timer_ids), timer, period))
        return due

    def _events(self, node: int | None, msg) -> list[Event]:
        if node is None:  # a runner's report, already an event
            return [msg]
        if isinstance(msg, parser.OFPPacketIn):
            if 1 <= msg.match["in_port"] <= len(self.ports.neighbours[node]):
                self.frames_to_controller[node] += 1
            event = self._packet_in(node, msg)
            if event is None:
                return []
            return [event]
        if isinstance(msg, parser.OFPFlowRemoved):
            if msg.cookie == SYSTEM_COOKIE:
                return []
            if self._start_ns is not None:
                self.changed_switches.add(node)
            entry = msg.cookie - 1
            # An entry matching a flow each way is two OpenFlow entries: it has left
            # when both have, with both's counters.
            parts = self._parts.get((node, entry), [1, 0, 0])
            parts[0] -= 1
            parts[1] += msg.packet_count
            parts[2] += msg.byte_count
            if parts[0] > 0:
                return []
            self._parts.pop((node, entry), None)
            reason = {ofp.OFPRR_IDLE_TIMEOUT: 0, ofp.OFPRR_HARD_TIMEOUT: 1}.get(msg.reason, 2)
            return [EntryRemoved(self.now, node, entry, REMOVAL_REASONS[reason], *parts[1:])]
        return []

    def _packet_in(self, node: int, msg) -> PacketIn | None:
        """The packet-in as the simulator gives it; None for a frame of none of the
        scenario's flows (a program knows hosts and flows only: it is counted, and
        dropped)."""
        in_port = msg.match["in_port"] - 1
        frame = packet.Packet(msg.data)
        eth = frame.get_protocol(ethernet.ethernet)
        src, dst = host_of_mac(eth.src), host_of_mac(eth.dst)
        hosts = len(self.ports.host_node)
        if src is None or dst is None or src >= hosts or dst >= hosts:
            self.foreign_frames += 1
            return None
        flow = None
        ip = frame.get_protocol(ipv4.ipv4)
        if ip is not None and ip.proto in PROTOCOLS:
            segment = frame.get_protocol(PROTOCOLS[ip.proto])
            if segment is not None:
                flow = self._flow_of.get((src, segment.src_port, dst, segment.dst_port))
        if flow is None:
            self.foreign_frames += 1
            return None
        buffer = next(self._buffer_ids)
        self._buffers[buffer] = (node, in_port, msg.data)
        return PacketIn(
            self.now, node, in_port, buffer, flow, src, dst, len(msg.data),
            msg.reason == ofp.OFPR_NO_MATCH,
        )  # fmt: skip

    # ---- counters ----------------------------------------------------------------------

    def unsupported(self, what: str) -> ValueError:
        return Unsupported(f"an emulated network cannot show its {what} yet")

    def port_rows(self, switch: int | None = None) -> dict[str, np.ndarray]:
        """Every port of one node, or of every node, in the simulator's order: a switch
        port's bytes and packets from OpenFlow's port counters, a host's from its
        kernel; every port's emulated rate, and its queue (`queue_packets`,
        `queue_bytes`) and the packets the queue refused (`drop_packets`) from its
        qdisc, as the run's port table counts them."""
        if self.kernel is None:
            raise self.unsupported("port counters before its network is up")
        kernel = self.kernel.read(switch)
        chosen = [
            row for row, node in enumerate(self.kernel.nodes) if switch is None or node == switch
        ]
        wanted = {self.kernel.nodes[row] for row in chosen}
        asked = [n for n in self._switches() if n in wanted]
        openflow: dict[tuple[int, int], object] = {}
        if asked:
            stats = self._statistics(
                asked, lambda dp: parser.OFPPortStatsRequest(dp, 0, ofp.OFPP_ANY)
            )
            for node, stat in stats:
                # The bridge's own (LOCAL) port is no port of the scenario's.
                if 1 <= stat.port_no <= len(self.ports.neighbours[node]):
                    openflow[(node, stat.port_no - 1)] = stat
        columns: dict[str, list[int]] = {key: [] for key in PORT_ROW_COLUMNS}
        for row in chosen:
            node, port = self.kernel.nodes[row], self.kernel.ports[row]
            stat = openflow.get((node, port))
            columns["node"].append(node)
            columns["port"].append(port)
            columns["peer_node"].append(self.ports.neighbours[node][port])
            columns["rate_bps"].append(self.network.shapes[(node, port)].rate_bps)
            for key in ("tx_bytes", "tx_packets", "rx_bytes", "rx_packets"):
                columns[key].append(int(kernel[key][row] if stat is None else getattr(stat, key)))
            for key in ("drop_packets", "queue_packets", "queue_bytes"):
                columns[key].append(int(kernel[key][row]))
        return {
            key: np.array(values, dtype=PORT_ROW_TYPES.get(key, np.uint64))
            for key, values in columns.items()
        }

    def handed_rows(self) -> dict[tuple[int, int], int]:
        """Packets each switch's pipeline handed each of its ports to send, by (node,
        local port): every entry of the egress table counts the packets it sent out
        (each matches one port's number in register 0). Called after the traffic, once
        Open vSwitch's counters have caught up (`OpenVSwitch.settle_flow_counts`)."""
        stats = self._statistics(
            self._switches(),
            lambda dp: parser.OFPFlowStatsRequest(dp, table_id=EGRESS_TABLE),
        )
        handed: dict[tuple[int, int], int] = {}
        for node, stat in stats:
            key = (node, stat.match["reg0"] - 1)
            handed[key] = handed.get(key, 0) + stat.packet_count
        return handed

    def entry_rows(self, switch: int | None = None) -> dict[str, np.ndarray]:
        """The programs' entries (table 1, the table-miss entry left out)."""
        switches = self._switches() if switch is None else [switch]
        stats = self._statistics(
            switches, lambda dp: parser.OFPFlowStatsRequest(dp, table_id=PROGRAM_TABLE)
        )
        # An entry matching a flow each way is two OpenFlow entries: one row, summed.
        summed: dict[tuple[int, int, int], list[int]] = {}
        for node, stat in stats:
            if stat.cookie != SYSTEM_COOKIE:
                row = summed.setdefault((node, stat.cookie - 1, stat.priority), [0, 0])
                row[0] += stat.packet_count
                row[1] += stat.byte_count
        rows = sorted((*key, packets, octets) for key, (packets, octets) in summed.items())
        names = ("switch", "entry", "priority", "packets", "bytes")
        types = (np.uint32, np.uint32, np.uint16, np.uint64, np.uint64)
        return {
            name: np.array([r[i] for r in rows], dtype=t)
            for i, (name, t) in enumerate(zip(names, types, strict=True))
        }

    def flow_rows(self) -> dict[str, np.ndarray]:
        return self.traffic.table(self.to_ps)

    def watch_flows(self, switch: int) -> None:
        """Puts the counting entries of every flow direction at each of the switch's
        ports in its first and last tables (`crossings`)."""
        if switch in self._watches:
            return
        watch = crossings.FlowWatch(
            switch, self.ports.names[switch], len(self.ports.neighbours[switch]), self._ways
        )
        if not self._watches:
            self.network.ovs.count_flows_every(crossings.COUNT_MS)
        self._watches[switch] = watch
        for value, egress, fields in watch.entries():
            port = ofport(fields.pop("port"))
            if egress:
                match = parser.OFPMatch(**fields, reg0=port)
                self._add(
                    switch, EGRESS_TABLE, 1, match, _apply([parser.OFPActionOutput(port)]), value
                )
            else:
                match = parser.OFPMatch(**fields, in_port=port)
                self._add(switch, WATCH_TABLE, 1, match, _ONWARD, value)

    def _add(
        self,
        switch: int,
        table: int,
        priority: int,
        match: object,
        instructions: list,
        value: int = SYSTEM_COOKIE,
    ) -> None:
        """Adds one entry of the back-end's own (cookie `value`) to `switch`."""
        self._to(switch, lambda dp: parser.OFPFlowMod(
            dp, table_id=table, command=ofp.OFPFC_ADD, priority=priority, cookie=value,
            match=match, instructions=instructions,
        ))  # fmt: skip

    def crossing_rows(self, switch: int) -> dict[str, np.ndarray]:
        if switch not in self._watches:
            raise ValueError(
                f"switch '{self.ports.names[switch]}' is not watching its flows; "
                "call watch_flows first"
            )
        if not self._ended:
            self._held += self._read_watches([switch])
        # After the run, what its last read saw.
        return self._watches[switch].rows()

    def _read_watches(self, switches: list[int]) -> list[Event]:
        """Reads the counting entries of watched switches; the crossings new in them."""
        stats = self._statistics(switches, lambda dp: parser.OFPFlowStatsRequest(
            dp, table_id=ofp.OFPTT_ALL, cookie=crossings.WATCH_BIT, cookie_mask=crossings.WATCH_BIT,
        ))  # fmt: skip
        counters: dict[int, list[tuple[int, int, int]]] = {s: [] for s in switches}
        for node, stat in stats:
            counters[node].append((stat.cookie, stat.packet_count, stat.byte_count))
        now = self.now
        return [event for s in switches for event in self._watches[s].update(counters[s], now)]


def single_path_port(hops: list[int], src: int, dst: int, switch: int, seed: int) -> int:
    """The one next hop a switch gives every packet from host `src` to host `dst` under
    single-path routing: a hash of the pair salted per switch and run, so that pairs
    spread over the paths and switches choose apart, as the simulator's
    (`routing::choose`; the hash is not the engine's, so the paths chosen differ)."""
    key = f"{seed}:{switch}:{src}:{dst}".encode()
    draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
    return hops[draw * len(hops) >> 64]


def cookie(entry: int) -> int:
    """The OpenFlow cookie of program entry `entry` (never SYSTEM_COOKIE)."""
    return entry + 1


def _output(port: int) -> list:
    """The actions sending a packet out of local port `port`: by way of the egress table,
    with the port in register 0."""
    return [
        parser.OFPActionSetField(reg0=ofport(port)),
        parser.NXActionResubmitTable(table_id=EGRESS_TABLE),
    ]


def _apply(actions: list) -> list:
    return [parser.OFPInstructionActions(ofp.OFPIT_APPLY_ACTIONS, actions)]


_ONWARD = [parser.OFPInstructionGotoTable(PROGRAM_TABLE)]


def _seconds(ps: int | None, name: str) -> int:
    """An entry timeout in OpenFlow's whole seconds (0: none)."""
    if ps is None:
        return 0
    if ps % PS_PER_S:
        raise Unsupported(
            f"{name}: OpenFlow counts timeouts in whole seconds, got {ps / PS_PER_S:g} s"
        )
    return ps // PS_PER_S
