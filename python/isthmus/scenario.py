"""Scenario files: a typed, validated description of one experiment.

A scenario is TOML. Every quantity carries its unit ("10Gbps", "1us", "250pkts");
unknown keys, missing units, negative or zero rates, out-of-range hosts and
impossible topologies are refused with one message that names the field and the fix.

    name = "leafspine-udp"
    seed = 1
    [topology]            # kind = leaf_spine | fat_tree | three_tier | vl2 | ring | mesh | custom
    kind = "leaf_spine"
    spines = 2
    leaves = 4
    hosts_per_leaf = 8
    [network]             # routing, queue limits, ECN marking threshold
    routing = "ecmp"
    [[traffic]]           # any number of traffic blocks
    kind = "udp"
    pattern = "permutation"
    rate = "6Gbps"
    stop = "20ms"
    [control]             # optional: control programs in the loop
    latency = "50us"
    [[control.apps]]
    name = "hedera"
    period = "5s"
    [run]
    duration = "20ms"
"""

from __future__ import annotations

import difflib
import functools
import re
import time
import tomllib as toml
import typing
from abc import abstractmethod
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import AfterValidator, ConfigDict, Field, ValidationError, model_validator

from isthmus import _core, declared, units
from isthmus.fields import Index, PositiveInt, QueueLimit, Rate, Seed, Size, Strict, Time
from isthmus.flows import Arrivals as FlowArrivals
from isthmus.flows import Incast, Poisson, SizeRange, generate_flows
from isthmus.flows import Pattern as FlowPattern
from isthmus.inputs import confined_to, excerpt, read_text, shown_path, user_file
from isthmus.queues import DEFAULT_LIMITS, Aqm, DeviceQueue, Scheduler
from isthmus.simulation import BcnPauses, BcnPoints, BcnRegulator, Pfc, Simulation
from isthmus.topology import Link, Topology
from isthmus.transport import FlowTransportName, TcpParams, TransportName
from isthmus.workload import read_flow_list, resolve_flow_list

if TYPE_CHECKING:
    from isthmus.control import ControlPlane


# A pair of host numbers, written [src, dst].
HostPair = Annotated[list[Index], Field(min_length=2, max_length=2)]


_RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")


def _run_name(name: str) -> str:
    # The name becomes part of the run folder's name, so it may not steer the path.
    if not _RUN_NAME.fullmatch(name):
        raise ValueError(
            f"{excerpt(name)} cannot name a run: use 1 to 100 letters, digits, '.', '_' or "
            "'-', not starting with '.' or '-' (it names the run folder)"
        )
    return name


class ScenarioError(ValueError):
    """A scenario that cannot run; the message names the field and the fix."""


class LinkModel(Strict):
    rate: Rate
    delay: Time = "1us"

    def link(self) -> Link:
        return Link(self.rate, self.delay)


HOST_LINK = LinkModel(rate="10Gbps", delay="1us")
FABRIC_LINK = LinkModel(rate="40Gbps", delay="1us")


class TopologySection(Strict):
    """A kind of [topology]: `build` makes its network, and a network the engine
    cannot build (too many nodes, ports or routes) is one ScenarioError naming the
    section, wherever it is built (`isthmus run`, `isthmus show`)."""

    def build(self, base: Path) -> Topology:
        try:
            # Files it names stay in the scenario's folder wherever it is built.
            with confined_to(base):
                return self.topology(base)
        except ScenarioError:
            raise
        except ValueError as e:
            raise ScenarioError(f"topology: {e}") from None

    @abstractmethod
    def topology(self, base: Path) -> Topology:
        """The network this section describes (files it names relative to `base`)."""


class LeafSpine(TopologySection):
    kind: Literal["leaf_spine"]
    spines: PositiveInt
    leaves: PositiveInt
    hosts_per_leaf: PositiveInt
    host_link: LinkModel = HOST_LINK
    fabric_link: LinkModel = FABRIC_LINK

    def topology(self, base: Path) -> Topology:
        return Topology.leaf_spine(
            self.spines,
            self.leaves,
            self.hosts_per_leaf,
            self.host_link.link(),
            self.fabric_link.link(),
        )


class FatTree(TopologySection):
    kind: Literal["fat_tree"]
    k: PositiveInt
    host_link: LinkModel = HOST_LINK
    fabric_link: LinkModel = HOST_LINK

    def topology(self, base: Path) -> Topology:
        return Topology.fat_tree(self.k, self.host_link.link(), self.fabric_link.link())


class ThreeTier(TopologySection):
    kind: Literal["three_tier"]
    cores: PositiveInt = 1
    aggs: PositiveInt = 2
    edges: PositiveInt = 5
    hosts_per_edge: PositiveInt = 10
    host_link: LinkModel = HOST_LINK
    fabric_link: LinkModel = HOST_LINK
    core_link: LinkModel | None = None

    def topology(self, base: Path) -> Topology:
        return Topology.three_tier(
            self.cores,
            self.aggs,
            self.edges,
            self.hosts_per_edge,
            self.host_link.link(),
            self.fabric_link.link(),
            self.core_link.link() if self.core_link else None,
        )


class VL2(TopologySection):
    kind: Literal["vl2"]
    d_a: PositiveInt
    d_i: PositiveInt
    hosts_per_tor: PositiveInt = 20
    host_link: LinkModel = HOST_LINK
    fabric_link: LinkModel = FABRIC_LINK

    def topology(self, base: Path) -> Topology:
        return Topology.vl2(
            self.d_a, self.d_i, self.hosts_per_tor, self.host_link.link(), self.fabric_link.link()
        )


class Ring(TopologySection):
    kind: Literal["ring", "mesh"]
    switches: PositiveInt
    hosts_per_switch: PositiveInt = 1
    host_link: LinkModel = HOST_LINK
    fabric_link: LinkModel = HOST_LINK

    def topology(self, base: Path) -> Topology:
        builder = Topology.ring if self.kind == "ring" else Topology.mesh
        return builder(
            self.switches, self.hosts_per_switch, self.host_link.link(), self.fabric_link.link()
        )


class CustomLink(Strict):
    a: str
    b: str
    rate: Rate
    delay: Time = "1us"


class EdgeList(Strict):
    hosts: list[str]
    switches: list[str]
    links: list[CustomLink]


class Custom(TopologySection):
    """Nodes and links listed inline, or in a separate TOML edge list (`file`, relative
    to the scenario) with the same three keys."""

    kind: Literal["custom"]
    file: str | None = None
    hosts: list[str] = []
    switches: list[str] = []
    links: list[CustomLink] = []

    @model_validator(mode="after")
    def _one_source(self) -> Custom:
        inline = bool(self.hosts or self.switches or self.links)
        if self.file and inline:
            raise ValueError("give either file or hosts/switches/links inline, not both")
        if not self.file and not inline:
            raise ValueError("list hosts, switches and links, or name an edge-list file")
        return self

    def topology(self, base: Path) -> Topology:
        edges = EdgeList(hosts=self.hosts, switches=self.switches, links=self.links)
        if self.file:
            try:
                path = user_file(self.file, base, "edge list")
                data = _parse_toml(read_text(path, "edge list"))
            except ValueError as e:
                raise ScenarioError(f"topology.file: {e}") from None
            try:
                edges = EdgeList.model_validate(data)
            except ValidationError as e:
                raise ScenarioError(_describe(e, prefix=f"{path}: ")) from None
        links = [(link.a, link.b, Link(link.rate, link.delay)) for link in edges.links]
        return Topology.custom(edges.hosts, edges.switches, links)


TopologyModel = Annotated[
    LeafSpine | FatTree | ThreeTier | VL2 | Ring | Custom, Field(discriminator="kind")
]


class LinkTraceModel(Strict):
    """The direction `from` -> `to` of a link follows a recorded capacity trace."""

    model_config = Strict.model_config | {"populate_by_name": True}
    source: str = Field(alias="from")
    to: str
    trace: str


# [network.bcn]: the congestion points as the simulation declares them.
BcnModel = BcnPoints


class PortQueueModel(Strict):
    """The queueing of one switch port, the one from `from` towards `to`, instead of
    the network's: its limit (default: switch_queue), scheduler and AQM."""

    model_config = Strict.model_config | {"populate_by_name": True}
    source: str = Field(alias="from")
    to: str
    limit: QueueLimit | None = None
    scheduler: Scheduler | None = None
    aqm: Aqm | None = None
    device_queue: DeviceQueue | None = None


class BcnRegulated(BcnRegulator):
    """Every TCP, DCTCP and CUBIC flow behind a BCN rate regulator at its host (IBCN's
    reaction points): Ru, Gi, Gd and the STOP pauses as the engine declares them."""

    fair_share: Rate = Field(description="the rate a flow restarts at after a STOP's pause")


# [network.pfc]: priority flow control as the simulation declares it.
PfcModel = Pfc

BufferAlpha = declared.typed("SharedBuffer", "alpha")
Routing = declared.typed("EngineConfig", "routing")
_ENGINE = declared.parameters("EngineConfig")
_QUEUE = declared.parameters("QueueConfig")


class Network(Strict):
    """Routing and queueing. `ecn_threshold` puts DCTCP's step marker on every port;
    `scheduler` and `aqm` (see `isthmus.queues`) shape switch ports instead."""

    routing: Routing = Field(
        declared.default("EngineConfig", "routing"), description=_ENGINE["routing"].meaning
    )
    host_queue: QueueLimit = Field(
        DEFAULT_LIMITS["host_queue"], description="most a host NIC's queue holds"
    )
    host_scheduler: Scheduler | None = Field(
        None,
        description='how a host NIC serves its flows: FIFO, or e.g. { kind = "fq" } for '
        "round robin between them (an RDMA NIC's queue-pair arbitration)",
    )
    switch_queue: QueueLimit = Field(
        DEFAULT_LIMITS["switch_queue"], description="most a switch port's queue holds"
    )
    ecn_threshold: QueueLimit | None = Field(
        None, description="DCTCP's step marker on every switch port: mark above this queue"
    )
    scheduler: Scheduler | None = Field(None, description=_QUEUE["scheduler"].meaning)
    aqm: Aqm | None = Field(None, description=_QUEUE["aqm"].meaning)
    link_traces: list[LinkTraceModel] = Field(
        [], description="link directions whose capacity follows a recorded trace"
    )
    port_queues: list[PortQueueModel] = Field(
        [], description="switch ports queueing otherwise than the network's"
    )
    device_queue: DeviceQueue = Field(0, description=_QUEUE["device_queue"].meaning)
    shared_buffer: Size | None = Field(
        None, description=declared.parameters("SharedBuffer")["bytes"].meaning
    )
    buffer_alpha: BufferAlpha = Field(
        1.0, description=declared.parameters("SharedBuffer")["alpha"].meaning
    )
    pfc: PfcModel | None = Field(None, description=_ENGINE["pfc"].meaning)
    bcn: BcnModel | None = Field(None, description=_ENGINE["bcn"].meaning)
    bcn_regulator: BcnRegulated | None = Field(
        None,
        description="every TCP-family flow behind a BCN rate regulator at its host, "
        "driven by the `bcn` congestion points",
    )

    @model_validator(mode="after")
    def _one_marker(self) -> Network:
        if self.aqm is not None and self.ecn_threshold is not None:
            raise ValueError("give ecn_threshold (a step marker) or aqm, not both")
        if self.bcn_regulator is not None and self.bcn is None:
            raise ValueError(
                "bcn_regulator needs congestion points to drive it: add a [network.bcn] "
                "table (its defaults are IBCN's)"
            )
        return self


# Each UDP flow is a Python call to add; beyond this a block would take minutes to set up.
MAX_UDP_FLOWS = 1_000_000


class PairedSources(Strict):
    """Sources between host pairs, ending by `size`, `stop` or both. `pattern`:
    permutation (every host sends to one other host and receives from one, a random
    derangement drawn from the seed), all_to_all (every ordered pair), or pairs (the
    explicit `pairs` list)."""

    pattern: Literal["permutation", "all_to_all", "pairs"]
    pairs: list[HostPair] = []
    size: Size | None = None
    start: Time = "0s"
    stop: Time | None = None

    @model_validator(mode="after")
    def _consistent(self) -> PairedSources:
        if self.pattern == "pairs" and not self.pairs:
            raise ValueError("pattern 'pairs' needs a non-empty pairs list, e.g. [[0, 1]]")
        if self.pattern != "pairs" and self.pairs:
            raise ValueError(f"pairs is only used with pattern 'pairs', not {self.pattern!r}")
        if self.size is None and self.stop is None:
            raise ValueError("give size, stop, or both, so the flows end")
        if self.stop is not None and units.time_ps(self.stop) <= units.time_ps(self.start):
            raise ValueError(f"stop ({self.stop}) must come after start ({self.start})")
        return self

    def pairs_for(self, sim: Simulation, index: int) -> list[tuple[int, int]]:
        try:
            return self.host_pairs(sim.topology.num_hosts, sim.seed, stream=index)
        except ScenarioError as e:
            raise ScenarioError(f"traffic[{index}].{e}") from None

    def host_pairs(self, num_hosts: int, seed: int, stream: int) -> list[tuple[int, int]]:
        if self.pattern == "pairs":
            for i, (src, dst) in enumerate(self.pairs):
                for host in (src, dst):
                    if not 0 <= host < num_hosts:
                        raise ScenarioError(
                            f"pairs[{i}]: host {host} does not exist; the topology has "
                            f"{num_hosts} hosts (0..{num_hosts - 1})"
                        )
            return [(src, dst) for src, dst in self.pairs]
        if self.pattern == "all_to_all":
            flows = num_hosts * (num_hosts - 1)
            if flows > MAX_UDP_FLOWS:
                raise ScenarioError(
                    f"pattern: all_to_all over {num_hosts} hosts makes {flows} flows; at most "
                    f"{MAX_UDP_FLOWS} per traffic block: use fewer hosts or another pattern"
                )
            return [(s, d) for s in range(num_hosts) for d in range(num_hosts) if s != d]
        return list(enumerate(_core.derangement(num_hosts, seed, stream)))


class UdpTraffic(PairedSources):
    """UDP flows between host pairs (see PairedSources for the patterns)."""

    kind: Literal["udp"]
    rate: Rate
    arrivals: Literal["constant", "poisson"] = "poisson"
    packet_size: Size = "1500B"

    def add_to(self, sim: Simulation, index: int, base: Path) -> None:
        for src, dst in self.pairs_for(sim, index):
            sim.add_udp_flow(
                src,
                dst,
                self.rate,
                size=self.size,
                start=self.start,
                stop=self.stop,
                arrivals=self.arrivals,
                packet_size=self.packet_size,
            )


class PoissonFlows(Strict):
    """TCP flows arriving at every host as a Poisson process, sizes drawn from a
    distribution, at `load` of each host's access link, during [start, stop)."""

    kind: Literal["poisson_flows"]
    sizes: str = "websearch"
    load: Annotated[float, Field(gt=0)]
    destinations: Literal["other_racks", "all_others"] = "other_racks"
    start: Time = "0s"
    stop: Time
    transport: FlowTransportName = "dctcp"

    @model_validator(mode="after")
    def _window(self) -> PoissonFlows:
        if units.time_ps(self.stop) <= units.time_ps(self.start):
            raise ValueError(f"stop ({self.stop}) must come after start ({self.start})")
        return self

    def add_to(self, sim: Simulation, index: int, base: Path) -> None:
        pattern = "other_racks" if self.destinations == "other_racks" else "random"
        flows = generate_flows(
            sim.topology,
            pattern=pattern,
            arrivals=Poisson(load=self.load),
            sizes=self.sizes,
            start=self.start,
            stop=self.stop,
            seed=sim.seed,
            stream=index,
            base=base,
        )
        add_flows(sim, flows, self.transport)


class Flows(Strict):
    """Flows following a communication `pattern` and an `arrivals` process, sizes from a
    distribution (`sizes`) or uniform in a range, during [start, stop). See
    isthmus.flows for every pattern and arrival process."""

    kind: Literal["flows"]
    pattern: FlowPattern
    arrivals: FlowArrivals
    sizes: str | SizeRange | None = None
    duration: Time | None = None
    write_size: Size = "128KiB"
    start: Time = "0s"
    stop: Time
    transport: FlowTransportName = "dctcp"

    @model_validator(mode="after")
    def _window(self) -> Flows:
        if units.time_ps(self.stop) <= units.time_ps(self.start):
            raise ValueError(f"stop ({self.stop}) must come after start ({self.start})")
        if self.duration is not None:
            if self.sizes is not None:
                raise ValueError("give sizes or duration (timed iperf-like sources), not both")
            if isinstance(self.arrivals, Poisson):
                raise ValueError(
                    "poisson arrivals at a load need flow sizes; timed sources (duration) "
                    "take batch, profile or on_off arrivals"
                )
            if self.transport not in ("tcp", "dctcp", "cubic"):
                raise ValueError(f"timed sources run tcp or dctcp, not {self.transport}")
        return self

    def generated(self, sim: Simulation, index: int, base: Path) -> dict[str, np.ndarray]:
        """The block's flows as drawn for `sim` (its seed; `index`, the block's stream):
        src, dst, size_bytes and start_ps (a timed source's size is not drawn)."""
        return generate_flows(
            sim.topology,
            pattern=self.pattern,
            arrivals=self.arrivals,
            sizes=self.sizes or "websearch",
            start=self.start,
            stop=self.stop,
            seed=sim.seed,
            stream=index,
            base=base,
        )

    def add_to(self, sim: Simulation, index: int, base: Path) -> None:
        flows = self.generated(sim, index, base)
        if self.duration is None:
            add_flows(sim, flows, self.transport)
            return
        for src, dst, start in zip(flows["src"], flows["dst"], flows["start_ps"], strict=True):
            sim.add_bulk_flow(
                int(src),
                int(dst),
                self.duration,
                start=int(start),
                write_size=self.write_size,
                transport=self.transport,
            )


class IncastTraffic(Strict):
    """Barrier-synchronized incast: `senders` random hosts each send `size` to
    `receiver` in each of `rounds` rounds; a round starts `gap` after the previous
    round's last byte arrived (partition/aggregate query traffic)."""

    kind: Literal["incast"]
    receiver: Index
    senders: PositiveInt
    size: Size
    rounds: PositiveInt = 1
    gap: Time = "0s"
    start: Time = "0s"
    transport: Literal["tcp", "dctcp", "cubic", "dcqcn"] = "dctcp"

    def senders_for(self, sim: Simulation, index: int) -> list[int]:
        """The hosts that answer in every round: drawn from the run's seed and the
        block's index, as for every pattern."""
        pattern = Incast(receiver=self.receiver, senders=self.senders)
        return _core.pattern_senders(sim.topology._core, pattern.model_dump(), sim.seed, index)

    def add_to(self, sim: Simulation, index: int, base: Path) -> None:
        sim.add_incast(
            self.receiver,
            self.senders_for(sim, index),
            self.size,
            rounds=self.rounds,
            gap=self.gap,
            start=self.start,
            transport=self.transport,
        )


def add_flows(sim: Simulation, flows: dict[str, np.ndarray], transport: str) -> None:
    """Adds generated flows with `transport` (any TCP variant, or DCQCN)."""
    if transport == "dcqcn":
        for src, dst, size, start in zip(
            flows["src"], flows["dst"], flows["size_bytes"], flows["start_ps"], strict=True
        ):
            sim.add_dcqcn_flow(int(src), int(dst), int(size), start=int(start))
        return
    sim.add_tcp_flows(
        flows["src"], flows["dst"], flows["size_bytes"], flows["start_ps"], transport=transport
    )


class FlowList(Strict):
    """TCP flows replayed from a CSV (flow_id, src_host, dst_host, size_bytes, start_ps):
    a path relative to the scenario, or the name of a bundled list."""

    kind: Literal["flow_list"]
    file: str
    transport: TransportName = "dctcp"

    def add_to(self, sim: Simulation, index: int, base: Path) -> None:
        flows = read_flow_list(resolve_flow_list(self.file, base), sim.topology.num_hosts)
        sim.add_tcp_flows(
            flows["src"], flows["dst"], flows["size"], flows["start"], transport=self.transport
        )


class _BcnSources(PairedSources, BcnPauses):
    kind: Literal["bcn"]
    fair_share: Rate
    offered_load: Rate | None = None

    def add_to(self, sim: Simulation, index: int, base: Path) -> None:
        if sim.bcn_points is None:
            raise ScenarioError(
                f"traffic[{index}]: BCN sources need congestion points; add a [network.bcn] "
                "table (its defaults are IBCN's)"
            )
        for src, dst in self.pairs_for(sim, index):
            sim.add_bcn_flow(
                src,
                dst,
                fair_share=self.fair_share,
                size=self.size,
                start=self.start,
                stop=self.stop,
                ru=self.ru,
                gi=self.gi,
                gd=self.gd,
                packet_size=self.packet_size,
                offered_load=self.offered_load,
                min_pause=self.min_pause,
                max_pause=self.max_pause,
            )


# The reaction point's settings are the engine's `BcnSourceConfig`, as it declares them.
BcnTraffic = declared.model(
    "BcnSourceConfig",
    name="BcnTraffic",
    module=__name__,
    base=_BcnSources,
    only=("packet_size", "ru", "gi", "gd", "min_pause", "max_pause"),
    doc="BCN-regulated datagram sources (the reaction points IBCN drives) between host "
    "pairs (see PairedSources); needs `[network.bcn]` congestion points.",
)


class ControlApp(Strict):
    """One control program by name (see `isthmus.control.apps`), its parameters as
    further keys, held to the types and ranges its constructor declares; an agent app
    runs on every switch, or on those in `switches`."""

    model_config = ConfigDict(extra="allow", frozen=True)
    name: str
    switches: list[str] | None = None

    @model_validator(mode="after")
    def _known(self) -> ControlApp:
        from isthmus.control.apps import check_parameters, is_agent

        # Before anything is built or run: a value of the wrong type or out of range
        # would otherwise surface inside the app, mid-run.
        check_parameters(self.name, self.parameters())
        if self.switches is not None and not is_agent(self.name):
            raise ValueError(f"switches applies to agent apps; {self.name!r} is a controller")
        return self

    def parameters(self) -> dict:
        return dict(self.model_extra or {})


class Control(Strict):
    """Control programs in the loop: the control channel's latency to switches and
    hosts, the agents' channel latency, and what switches do on a table miss."""

    latency: Time = "0s"
    agent_latency: Time = "10us"
    miss: Literal["route", "controller", "drop"] = "route"
    apps: list[ControlApp] = []

    @model_validator(mode="after")
    def _each_app_once(self) -> Control:
        names = [app.name for app in self.apps]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            # Two copies would both answer every packet-in and fight over the entries.
            raise ValueError(f"apps: {', '.join(twice)} listed more than once; list each once")
        return self

    def attach(self, sim: Simulation) -> ControlPlane:
        from isthmus.control import ControlPlane
        from isthmus.control.apps import app_class, is_agent

        plane = ControlPlane(sim, control_latency=self.latency, agent_latency=self.agent_latency)
        switches = [
            n
            for n, kind in zip(plane.ports.names, plane.ports.kinds, strict=True)
            if kind == "switch"
        ]
        for switch in switches:
            plane.set_miss(switch, self.miss)
        for i, app in enumerate(self.apps):
            where = f"control.apps[{i}] ({app.name})"
            try:
                if is_agent(app.name):
                    plane.add_agents(app_class(app.name), app.switches, **app.parameters())
                else:
                    plane.add(app_class(app.name)(**app.parameters()))
            except (ValueError, TypeError) as e:
                raise ScenarioError(f"{where}: {e}") from None
        return plane


class Hosts(Strict):
    """How the hosts' TCP behaves: a profile (see isthmus.transport.HOST_PROFILES and
    docs/hosts.md); any [tcp] key overrides the profile's value."""

    profile: Literal["datacenter", "linux"] = "datacenter"


class Telemetry(Strict):
    sample_interval: Time | None = None


class Run(Strict):
    duration: Time
    stop_when: Literal["duration", "flows_finished"] = "duration"
    threads: PositiveInt = Field(
        1,
        description="run in this many partitions side by side, a thread each (1: the "
        "sequential engine; see Simulation.set_partitions)",
    )
    partitions: PositiveInt | None = Field(
        None,
        description="partitions, if not one per thread: for a given number the results "
        "are the same on any number of threads",
    )


class Scenario(Strict):
    name: Annotated[str, AfterValidator(_run_name)]
    description: str = ""
    seed: Seed = 1
    topology: TopologyModel
    network: Network = Network()
    hosts: Hosts = Hosts()
    tcp: TcpParams = TcpParams()
    traffic: list[
        Annotated[
            UdpTraffic | PoissonFlows | Flows | IncastTraffic | FlowList | BcnTraffic,
            Field(discriminator="kind"),
        ]
    ] = []
    telemetry: Telemetry = Telemetry()
    control: Control | None = None
    run: Run
    expect: dict[str, Annotated[list[float], Field(min_length=2, max_length=2)]] = Field(
        {},
        description="what a correct run shows at any seed: summary figure = [low, high]; "
        "`isthmus run` prints each beside this run's value",
    )
    expect_at_seed: dict[str, Annotated[list[float], Field(min_length=2, max_length=2)]] = Field(
        {},
        description="what a correct run shows at this scenario's own `seed` only (what the "
        "seed draws, a permutation or a hash, decides it): checked when a run keeps that "
        "seed, shown as not applying when it does not",
    )

    @model_validator(mode="after")
    def _ranges(self) -> Scenario:
        for table, ranges in (("expect", self.expect), ("expect_at_seed", self.expect_at_seed)):
            for figure, (low, high) in ranges.items():
                if low > high:
                    raise ValueError(f"{table}.{figure}: [low, high] needs low <= high")
        return self

    def tcp_params(self) -> TcpParams:
        """The hosts' profile with the [tcp] keys this scenario sets on top."""
        overrides = self.tcp.model_dump(include=self.tcp.model_fields_set)
        return TcpParams.for_profile(self.hosts.profile, **overrides)

    def ends_with_flows(self, sim: Simulation) -> bool:
        """Whether the run stops when its last flow finishes (else at the duration)."""
        return self.run.stop_when == "flows_finished" and sim.num_flows > 0

    def execute(self, sim: Simulation, on_progress: Callable[[int], None] | None = None) -> float:
        """Runs `sim`, built from this scenario, as the scenario's [run] says; returns
        the wall-clock seconds it took."""
        started = time.perf_counter()
        until = units.time_ps(self.run.duration)
        if sim.control_plane is not None:
            sim.control_plane.run(
                until,
                stop_when_flows_finish=self.ends_with_flows(sim),
                chunks=1000,
                on_progress=on_progress,
            )
        else:
            sim.run(
                until,
                stop_when_flows_finish=self.ends_with_flows(sim),
                on_progress=on_progress,
            )
        return time.perf_counter() - started

    def build(self, *, seed: int | None = None, base: Path = Path(".")) -> Simulation:
        """The simulation this scenario describes; `seed` overrides the file's seed.
        Files it names must lie in `base` (see `isthmus.inputs`)."""
        with confined_to(base):
            return self._build(self.seed if seed is None else seed, base)

    def _build(self, seed: int, base: Path) -> Simulation:
        topology = self.topology.build(base)
        try:
            sim = Simulation(
                topology,
                seed=seed,
                routing=self.network.routing,
                host_queue=self.network.host_queue,
                host_scheduler=self.network.host_scheduler,
                switch_queue=self.network.switch_queue,
                ecn_threshold=self.network.ecn_threshold,
                scheduler=self.network.scheduler,
                aqm=self.network.aqm,
                sample_interval=self.telemetry.sample_interval,
                shared_buffer=self.network.shared_buffer,
                buffer_alpha=self.network.buffer_alpha,
                pfc=(
                    self.network.pfc.xoff,
                    self.network.pfc.xon,
                    self.network.pfc.lossless,
                    self.network.pfc.free_fraction,
                )
                if self.network.pfc
                else None,
                bcn=self.network.bcn.model_dump() if self.network.bcn else None,
                tcp=self.tcp_params(),
                device_queue=self.network.device_queue,
            )
        except ValueError as e:
            raise ScenarioError(f"network: {e}") from None
        for i, q in enumerate(self.network.port_queues):
            try:
                port = sim.port_towards(q.source, q.to)
                sim.configure_queue(
                    q.source,
                    limit=q.limit or self.network.switch_queue,
                    scheduler=q.scheduler,
                    aqm=q.aqm,
                    port=port,
                    device_queue=q.device_queue
                    if q.device_queue is not None
                    else self.network.device_queue,
                )
            except ValueError as e:
                raise ScenarioError(f"network.port_queues[{i}]: {e}") from None
        for i, t in enumerate(self.network.link_traces):
            try:
                sim.set_link_trace(t.source, t.to, t.trace, base=base)
            except ValueError as e:
                raise ScenarioError(f"network.link_traces[{i}]: {e}") from None
        for i, block in enumerate(self.traffic):
            # Each block draws from its own random streams: editing one leaves the others alone.
            try:
                block.add_to(sim, i, base)
            except ScenarioError:
                raise
            except ValueError as e:
                raise ScenarioError(f"traffic[{i}]: {e}") from None
        self._regulate(sim)
        if self.run.threads > 1 or (self.run.partitions or 1) > 1:
            try:
                sim.set_partitions(self.run.partitions or self.run.threads, self.run.threads)
            except ValueError as e:
                raise ScenarioError(f"run.threads: {e}") from None
        if self.control is not None:
            sim.control_plane = self.control.attach(sim)
        try:
            sim.check_run(units.time_ps(self.run.duration))
        except ValueError as e:
            raise ScenarioError(f"telemetry: {e}") from None
        return sim

    def _regulate(self, sim: Simulation) -> None:
        """Puts every flow behind its BCN regulator (`network.bcn_regulator`)."""
        regulator = self.network.bcn_regulator
        if regulator is None:
            return
        if any(isinstance(block, IncastTraffic) for block in self.traffic):
            raise ScenarioError(
                "network.bcn_regulator: incast rounds add their flows as the run goes, and "
                "a regulator is put on a flow as the scenario adds it; give the incast as "
                "one round, or run it without BCN regulators"
            )
        settings = regulator.model_dump()
        for flow in range(sim.num_flows):
            try:
                sim.regulate_with_bcn(flow, **settings)
            except ValueError as e:
                raise ScenarioError(f"network.bcn_regulator: {e}") from None


MAX_PROBLEM_LINES = 20
"""The most lines an error about a scenario takes; the rest are counted."""


def _describe(error: ValidationError, prefix: str = "") -> str:
    """One line per problem: the dotted field path, then what is wrong with it. The
    same problem at many entries of one list is one line naming them (`weights.0-59`),
    and beyond `MAX_PROBLEM_LINES` problems are counted, not listed."""
    problems = _problems(error)
    grouped: list[tuple[tuple[str, str], list[int]]] = []
    for loc, message in problems:
        parent, _, last = loc.rpartition(".")
        if last.isdigit() and grouped and grouped[-1][0] == (parent, message):
            grouped[-1][1].append(int(last))
        elif last.isdigit():
            grouped.append(((parent, message), [int(last)]))
        else:
            grouped.append(((loc, message), []))
    lines = []
    for (loc, message), entries in grouped:
        if entries:
            count = f" ({len(entries)} entries)" if len(entries) > 1 else ""
            loc = f"{loc}.{_index_ranges(entries)}{count}" if loc else _index_ranges(entries)
        lines.append(f"{prefix}{loc}: {message}" if loc else f"{prefix}{message}")
    if len(lines) > MAX_PROBLEM_LINES:
        more = len(lines) - MAX_PROBLEM_LINES
        lines = [*lines[:MAX_PROBLEM_LINES], f"{prefix}... and {more} more problems"]
    return "\n".join(lines)


def _index_ranges(indices: list[int]) -> str:
    """List indices as runs (`0-3,7`), at most five runs named."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    named = [f"{a}-{b}" if b > a else str(a) for a, b in runs[:5]]
    return ",".join(named) + (",..." if len(runs) > 5 else "")


def _problems(error: ValidationError) -> list[tuple[str, str]]:
    """Each problem's dotted field path and what is wrong with it."""
    from isthmus.control.apps.parameters import ParameterError

    lines = []
    for problem in error.errors():
        if _through_a_literal(problem):
            continue
        loc = _shown_loc(problem["loc"])
        message = problem["msg"].removeprefix("Value error, ")
        cause = problem.get("ctx", {}).get("error")
        if isinstance(cause, ParameterError) and problem["loc"][:2] == ("control", "apps"):
            # Named as a build of the app names it: control.apps[0] (hedera): ...
            loc = f"control.apps[{problem['loc'][2]}] ({cause.app})"
        if len(message) > 300:
            message = message[:300] + "..."
        if problem["type"] == "extra_forbidden":
            message = "unknown key; remove it or check its spelling"
            key = str(problem["loc"][-1])
            guess = _closest_key(key)
            if guess == key:
                message = (
                    "not a key of this kind of section (other kinds take it); remove it "
                    "or check the section's kind"
                )
            elif guess:
                message = f"unknown key; did you mean '{guess}'?"
        elif problem["type"] == "missing":
            message = "required but missing"
        lines.append((loc, message))
    # A string where a union also takes a table: the string choices say what is wrong,
    # not the table branch's "should be a dictionary".
    choices = {loc for loc, message in lines if message.startswith("Input should be '")}
    return [
        (loc, message)
        for loc, message in lines
        if not (loc in choices and message.startswith("Input should be a valid dictionary"))
    ]


def _closest_key(key: str) -> str | None:
    """The scenario key most like `key`, if one is close (a misspelling)."""
    names: set[str] = set()
    pending = list(Strict.__subclasses__())
    while pending:
        model = pending.pop()
        names.update(model.model_fields)
        pending.extend(model.__subclasses__())
    found = difflib.get_close_matches(key, sorted(names), n=1, cutoff=0.8)
    return found[0] if found else None


def _through_a_literal(problem: dict) -> bool:
    """An error from a union's string or number alternative where the scenario gave a
    table: the table's own errors say what is wrong, the other choices do not apply."""
    return isinstance(problem.get("input"), dict) and any(
        isinstance(part, str) and (part.startswith("literal[") or part in _SCALAR_BRANCHES)
        for part in problem["loc"]
    )


_SCALAR_BRANCHES = frozenset({"str", "int", "float", "bool"})
"""A union's scalar alternatives, as pydantic names their branches in an error's path."""


_UNION_BRANCH = re.compile(r"[a-z-]+\[.*\]")
"""The labels pydantic puts in an error's path for a union's branches
("tagged-union[Stride,Incast,OneToMany]", "literal[...]")."""


def _shown_loc(loc: tuple) -> str:
    """An error's path as the scenario file spells it: without pydantic's branch labels
    and the variant tags a tagged union adds ("leaf_spine", "udp", "flows"), which are
    the section's `kind`, not a key."""
    parts: list[str] = []
    after_tagged = False
    for i, part in enumerate(loc):
        if after_tagged:  # the tag the tagged union picked
            after_tagged = False
            continue
        if isinstance(part, str) and _UNION_BRANCH.fullmatch(part):
            after_tagged = part.startswith("tagged-union[")
            continue
        if i < len(loc) - 1 and isinstance(part, str) and part in _variant_tags():
            continue
        parts.append(str(part))
    return ".".join(parts)


@functools.cache
def _variant_tags() -> frozenset[str]:
    """Every section kind a scenario model declares (its `kind` Literal), derived from
    the models so that a new kind needs no list kept beside them."""
    tags: set[str] = set()
    pending = list(Strict.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        kind = model.model_fields.get("kind")
        if kind is not None and typing.get_origin(kind.annotation) is Literal:
            tags.update(typing.get_args(kind.annotation))
    return frozenset(tags)


def _parse_toml(text: str) -> dict:
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as e:
        raise ValueError(f"not valid TOML: {e}") from None
    except RecursionError:
        raise ValueError("not valid TOML here: its tables or arrays nest too deeply") from None


def parse_scenario(text: str, source: str = "<scenario>") -> Scenario:
    try:
        data = _parse_toml(text)
    except ValueError as e:
        raise ScenarioError(f"{source}: {e}") from None
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise ScenarioError(_describe(e, prefix=f"{source}: ")) from None
    except RecursionError:
        raise ScenarioError(f"{source}: its tables or arrays nest too deeply") from None


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = read_text(user_file(str(path), Path("."), "scenario file"), "scenario file")
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    return parse_scenario(text, source=str(path))


def bundled_scenarios() -> dict[str, Path]:
    """The scenario files shipped with Isthmus, by name."""
    folder = resources.files("isthmus") / "scenarios"
    return {
        p.stem: Path(str(p))
        for p in sorted(folder.iterdir(), key=lambda p: p.name)
        if p.name.endswith(".toml")
    }


def resolve_scenario(name_or_path: str) -> Path:
    """A scenario file's path, or a bundled scenario's by name (a near miss suggests
    the name meant)."""
    path = Path(name_or_path)
    try:
        if path.exists():
            return path
    except (OSError, ValueError):
        pass  # a name too long for a path, or with a NUL in it: no such file
    bundled = bundled_scenarios()
    if name_or_path in bundled:
        return bundled[name_or_path]
    close = difflib.get_close_matches(name_or_path, list(bundled), n=1, cutoff=0.75)
    hint = f"did you mean '{close[0]}'? " if close else ""
    raise ScenarioError(
        f"no scenario file {shown_path(name_or_path)} and no bundled scenario of that name; "
        f"{hint}bundled: {', '.join(bundled)} (see `isthmus list`)"
    )
