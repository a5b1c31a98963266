"""`Simulation`: one network, its traffic and its clock, driven from Python.

The engine runs in Rust; this class converts units, adds flows, advances the clock in
chunks (so a caller can show progress or step a controller between chunks) and returns
telemetry as dicts of NumPy columns.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import numpy as np
from pydantic import Field, model_validator

from isthmus import _core, arguments, declared
from isthmus.arguments import (
    MAX_GROUP_ID,
    MAX_METER_ID,
    MAX_PARTITIONS,
    U8,
    U16,
    U32,
    checked,
    whole,
)
from isthmus.link_traces import load_trace
from isthmus.portmap import PortMap
from isthmus.queues import DEFAULT_LIMITS, Step, queue_config
from isthmus.topology import Topology
from isthmus.transport import TRANSPORTS, TcpParams
from isthmus.units import format_time
from isthmus.wire import deserialised

if TYPE_CHECKING:
    from isthmus.control import ControlPlane

ROUTING_POLICIES = ("ecmp", "spray", "single_path")
# The largest IPv4 packet.
MAX_PACKET_BYTES = 65_535
# Sampled time series stop here: samples x ports, each 5 columns of 8 bytes (800 MB).
MAX_SAMPLE_CELLS = 20_000_000
ARRIVALS = ("constant", "poisson")
# Transports of one byte stream per flow (timed sources, message streams, incasts).
STREAM_TRANSPORTS = ("tcp", "dctcp", "cubic")
# A time no run reaches (about 106 days): what a source with no stop time stops at;
# anything scheduled must come before it.
FOREVER_PS = 2**63
# Chunks of one run: each is a call into the engine and a progress report.
MAX_CHUNKS = 1_000_000


class _PfcPriorities(declared.DeclaredModel):
    # The engine takes a bit mask; a caller lists the priorities.
    lossless: list[Annotated[int, Field(ge=0, le=7)]] = Field(
        [0], min_length=1, description="the lossless priorities (0-7)"
    )

    def engine(self) -> dict:
        return {**super().engine(), "lossless": sum(1 << p for p in set(self.lossless))}


Pfc = declared.model(
    "Pfc",
    name="Pfc",
    module=__name__,
    base=_PfcPriorities,
    exclude=("lossless",),
    doc="Priority flow control at every switch ingress. With `free_fraction` f an ingress "
    "pauses at the lower of xoff and f times its switch's free shared buffer, resuming at "
    "xon/xoff of that (shared-buffer switches' dynamic threshold; ACC's testbed: 0.125); "
    "it needs `shared_buffer`.",
)

SharedBuffer = declared.model("SharedBuffer", name="SharedBuffer", module=__name__)

# The network-wide settings a Simulation takes as they are (queues, PFC, BCN and routing
# have their own models or forms).
NetworkSettings = declared.model(
    "EngineConfig", name="NetworkSettings", module=__name__, only=("sample_interval", "ttl")
)


def _pfc(pfc: tuple | None) -> dict | None:
    if pfc is None:
        return None
    if not isinstance(pfc, tuple | list) or len(pfc) not in (3, 4):
        raise ValueError(
            "pfc is (xoff, xon, lossless priorities) or (xoff, xon, lossless priorities, "
            f"free fraction), e.g. ('30KB', '15KB', [3], 0.125); got {arguments.shown(pfc)}"
        )
    xoff, xon, lossless = pfc[:3]
    settings = declared.from_arguments(
        Pfc,
        "pfc",
        xoff=xoff,
        xon=xon,
        lossless=list(lossless) if isinstance(lossless, tuple) else lossless,
        free_fraction=pfc[3] if len(pfc) == 4 else None,
    )
    return settings.engine()


def _stream_transport(transport: object, whose: str) -> None:
    if not isinstance(transport, str) or transport not in STREAM_TRANSPORTS:
        raise ValueError(
            f"{whose} transport must be tcp, dctcp or cubic, got {arguments.shown(transport)}"
        )


def _stop(stop: int | str | None) -> int:
    """When a source stops: `stop`, or never."""
    return FOREVER_PS if stop is None else arguments.duration(stop, "stop")


def _packet_bytes(value: int | str, name: str) -> int:
    """A packet's size: at least a byte, at most what IP carries."""
    wire = arguments.size(value, name)
    if wire > MAX_PACKET_BYTES:
        raise ValueError(
            f"{name} {wire} B is larger than an IP packet can be ({MAX_PACKET_BYTES} B)"
        )
    if wire == 0:
        raise ValueError(f"{name} must be at least 1 byte")
    return wire


class BcnPauses(declared.DeclaredModel):
    """A BCN reaction point's pauses after a STOP: the shortest no longer than the
    longest."""

    @model_validator(mode="after")
    def _pauses(self) -> BcnPauses:
        shortest, longest = (declared.UNITS["ps"].to_engine(p) for p in self._pause_range())
        if shortest > longest:
            raise ValueError(
                f"min_pause ({self._pause_range()[0]}) must not exceed max_pause "
                f"({self._pause_range()[1]})"
            )
        return self

    def _pause_range(self) -> tuple[str, str]:
        return self.min_pause, self.max_pause  # type: ignore[attr-defined]


# What a caller may set of a BCN reaction point (IBCN's Ru, Gi, Gd and STOP pauses), as
# the engine's `BcnSourceConfig` declares it; the rates come from the source's host.
BcnRegulator = declared.model(
    "BcnSourceConfig",
    name="BcnRegulator",
    module=__name__,
    base=BcnPauses,
    only=("ru", "gi", "gd", "min_pause", "max_pause"),
)


def _bcn_regulator(line_rate: int, fair_share: int | str, **settings: object) -> dict[str, object]:
    """A BCN rate regulator at a host of `line_rate` bit/s, checked: the engine's
    `BcnSourceConfig`, its declared defaults with these settings (sending up to the
    line rate)."""
    regulator = declared.from_arguments(BcnRegulator, "BCN regulator", **settings)
    return {
        "line_rate": line_rate,
        "max_rate": line_rate,
        "restart_rate": arguments.rate(fair_share, "fair_share"),
        **regulator.engine(),
    }


class _QueuesInOrder(declared.DeclaredModel):
    @model_validator(mode="after")
    def _ordered(self) -> _QueuesInOrder:
        q_eq, q_sc = self.q_eq, self.q_sc  # type: ignore[attr-defined]
        if q_sc <= q_eq:
            raise ValueError(f"q_sc ({q_sc}) must exceed q_eq ({q_eq})")
        return self


# What a caller may set of a DCQCN sender; the line rate comes from its host.
DcqcnSettings = declared.model(
    "DcqcnConfig", name="DcqcnSettings", module=__name__, only=("g", "mtu_payload")
)

BcnPoints = declared.model(
    "BcnPointConfig",
    name="BcnPoints",
    module=__name__,
    base=_QueuesInOrder,
    doc="BCN congestion points at every switch egress (IBCN's defaults): sampling "
    "probability, equilibrium and severe-congestion queues (packets), derivative weight.",
)


def _bcn(bcn: dict | None) -> dict | None:
    if bcn is None:
        return None
    if not isinstance(bcn, dict):
        raise ValueError(
            f"bcn must be a dict of any of {', '.join(BcnPoints.model_fields)}, got "
            f"{arguments.shown(bcn)}"
        )
    unknown = sorted(set(bcn) - set(BcnPoints.model_fields))
    if unknown:
        raise ValueError(
            f"bcn: unknown BCN field(s) {', '.join(map(str, unknown))}; use "
            f"{', '.join(BcnPoints.model_fields)}"
        )
    return checked(BcnPoints.model_validate, "bcn", bcn).engine()


def _whole(values: object, name: str, dtype: type, below: int | None = None) -> np.ndarray:
    """An array of whole numbers for the engine, refused (not wrapped or truncated) if
    any is negative, fractional or out of range."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be a list or array of whole numbers") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be a flat list or 1-d array, got {array.ndim} dimensions")
    if array.dtype == bool or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise ValueError(f"{name} must hold whole numbers, got {array.dtype} values")
    if array.size and np.issubdtype(array.dtype, np.floating):
        bad = np.flatnonzero(~np.isfinite(array) | (array != np.floor(array)))
        if bad.size:
            value = float(array.flat[bad[0]])
            raise ValueError(f"{name}[{bad[0]}] = {value:g} is not a whole number")
    top = np.iinfo(dtype).max if below is None else below - 1
    if array.size:
        low, high = array.min(), array.max()
        if low < 0 or high > top:
            i = int(np.flatnonzero((array < 0) | (array > top))[0])
            what = f"must be a host number 0..{top}" if below is not None else "is out of range"
            raise ValueError(f"{name}[{i}] = {array.flat[i]} {what}")
    return np.ascontiguousarray(array, dtype=dtype)


def instant(time: int, name: str) -> int:
    """A time at which something is to happen, refused past the end of simulated time."""
    if time >= FOREVER_PS:
        raise ValueError(
            f"{name}: {time} ps reaches past the end of simulated time "
            f"({FOREVER_PS} ps, about 106 days)"
        )
    return time


def _within(high: int, what: str) -> Callable[[object, str], int]:
    """A check of a whole number 0..high that stands for `what`."""
    return lambda value, name: whole(value, name, 0, high, what)


def _timeout(value: object, name: str) -> int:
    timeout = instant(arguments.duration(value, name), name)
    if timeout == 0:
        raise ValueError(f"{name} must be longer than 0 ps (leave it out for none)")
    return timeout


# What an entry's action may say, each field with its check (the engine's widths).
ENTRY_ACTION: dict[str, Callable[[object, str], object]] = {
    "output": _within(U16, "a local port"),
    "group": _within(MAX_GROUP_ID, "a group id"),
    "drop": arguments.flag,
    "controller": arguments.flag,
    "flood": arguments.flag,
    "set_priority": _within(U8, "a traffic class"),
    "meter": _within(MAX_METER_ID, "a meter id"),
}

# Every field of an entry: its match, its action and its timeouts.
ENTRY_FIELDS: dict[str, Callable[[object, str], object]] = {
    "in_port": _within(U16, "a local port"),
    "src": _within(U32, "a host address"),
    "dst": _within(U32, "a host address"),
    "proto": _within(U8, "an IP protocol number"),
    "src_port": _within(U16, "a transport port"),
    "dst_port": _within(U16, "a transport port"),
    "flow": _within(U32, "a flow id"),
    **ENTRY_ACTION,
    "idle_timeout": _timeout,
    "hard_timeout": _timeout,
}


# Entry fields that name a port of the entry's own switch.
LOCAL_PORT_FIELDS = ("in_port", "output")

ENTRY_MATCH = ("in_port", "src", "dst", "proto", "src_port", "dst_port", "flow")
"""The fields of an entry's match (the rest of `ENTRY_FIELDS` are its action and timeouts)."""
_FORWARD_TO = ("output", "group")
_FORWARD_FLAGS = ("drop", "controller", "flood")


def entry_fields(
    given: dict[str, object],
    allowed: dict[str, Callable[[object, str], object]],
    switch: str,
    ports: int,
) -> dict[str, object]:
    """`given` checked field by field (None: not given) for an entry on `switch`, which
    has `ports` ports."""
    unknown = set(given) - set(allowed)
    if unknown:
        raise ValueError(
            f"unknown entry field(s) {', '.join(sorted(unknown))}; use {', '.join(allowed)}"
        )
    fields = {key: allowed[key](value, key) for key, value in given.items() if value is not None}
    for key in LOCAL_PORT_FIELDS:
        if key in fields and fields[key] >= ports:
            raise ValueError(
                f"{key}: port {fields[key]} does not exist on switch '{switch}' (it has ports "
                f"0..{ports - 1})"
            )
    chosen = [key for key in _FORWARD_TO if key in fields]
    chosen += [key for key in _FORWARD_FLAGS if fields.get(key) is True]
    if len(chosen) > 1:
        raise ValueError(
            f"give at most one action: output, group, drop, controller or flood (got "
            f"{', '.join(chosen)})"
        )
    return fields


def entry_action(fields: dict[str, object]) -> dict[str, object]:
    """The action of checked entry `fields` in the engine's form (its `FlowAction`)."""
    forward: object = "default"
    for key in _FORWARD_TO:
        if key in fields:
            forward = {key: fields[key]}
    for key in _FORWARD_FLAGS:
        if fields.get(key) is True:
            forward = key
    return {
        "forward": forward,
        "set_priority": fields.get("set_priority"),
        "meter": fields.get("meter"),
    }


def entry_command(switch: int, priority: int, fields: dict[str, object]) -> dict[str, object]:
    """A checked entry for node `switch` as the engine's "add_entry" command."""
    return {
        "kind": "add_entry",
        "switch": switch,
        "priority": priority,
        "matcher": {key: fields[key] for key in ENTRY_MATCH if key in fields},
        "action": entry_action(fields),
        "idle_timeout": fields.get("idle_timeout"),
        "hard_timeout": fields.get("hard_timeout"),
    }


class Simulation:
    """A network and its traffic. Times are picoseconds; every argument that is a
    quantity also accepts a unit string ("5ms", "10Gbps", "1500B", "250pkts").

    Queueing: every port is a FIFO of `host_queue` / `switch_queue` packets or bytes
    (`host_scheduler`, e.g. `Fq`, serves a NIC's flows round robin, as an RDMA NIC
    arbitrates between its queue pairs);
    `ecn_threshold` adds DCTCP's step marker on every port (host NICs too). Switch ports
    may instead take a `scheduler` and an `aqm` from `isthmus.queues`. With
    `shared_buffer`, each switch's queues share that many bytes under the dynamic-
    threshold rule: a queue may grow while below `buffer_alpha` times the free buffer.
    `pfc = (xoff, xon, lossless priorities)` turns on priority flow control at every
    switch ingress (e.g. ("30KB", "15KB", [0])); a fourth element f pauses at the lower
    of xoff and f times the switch's free shared buffer, resuming at xon/xoff of that
    (the dynamic threshold; ACC's testbed uses 1/8; needs `shared_buffer`). `bcn` puts
    BCN congestion points on switch ports: a dict with any of pm (0.01), q_eq (20), q_sc
    (90), w (2), queue thresholds in packets (the IBCN paper's values by default). `tcp`
    overrides TCP, DCTCP and MPTCP parameters (a `TcpParams` or a dict of its fields). Packets leave
    their host with `ttl` hops to live (IP's 64): every switch takes one, and a packet
    with none left is dropped and counted (`node_drops()["ttl_drops"]`), so a
    forwarding loop shows up instead of circulating forever. `device_queue` puts a FIFO
    of that many packets below every port's queue discipline, as ns-3's point-to-point
    devices have (100 there): the discipline's AQM and limit then see only what waits
    above it."""

    def __init__(
        self,
        topology: Topology,
        *,
        seed: int = 1,
        routing: str = "ecmp",
        host_queue: str = DEFAULT_LIMITS["host_queue"],
        host_scheduler=None,
        switch_queue: str = DEFAULT_LIMITS["switch_queue"],
        ecn_threshold: str | None = None,
        scheduler=None,
        aqm=None,
        sample_interval: int | str | None = None,
        shared_buffer: str | None = None,
        buffer_alpha: float = 1.0,
        pfc: tuple | None = None,
        bcn: dict | None = None,
        tcp: TcpParams | dict | None = None,
        ttl: int = declared.default("EngineConfig", "ttl"),
        device_queue: int = 0,
    ):
        if not isinstance(topology, Topology):
            raise ValueError(
                "topology must be a Topology (e.g. Topology.leaf_spine(2, 4, 8)), got "
                f"{arguments.shown(topology)}"
            )
        if not isinstance(routing, str) or routing not in ROUTING_POLICIES:
            raise ValueError(
                f"unknown routing {arguments.shown(routing)}; choose one of "
                f"{', '.join(ROUTING_POLICIES)}"
            )
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"seed must be an integer in 0..2^64-1, got {seed!r}")
        network = declared.from_arguments(
            NetworkSettings, "Simulation", ttl=ttl, sample_interval=sample_interval
        ).engine()
        self.topology = topology
        self.seed = seed
        self.sample_interval = network["sample_interval"]
        # Every link has a port at each end; fixed for the simulation's life.
        self._num_ports = 2 * len(topology.links()["a"])
        # The congestion points' settings, if BCN is on (None: off).
        self.bcn_points = _bcn(bcn)
        # The control plane a scenario attached (`[control]`), run by Scenario.execute.
        self.control_plane: ControlPlane | None = None
        if tcp is not None and not isinstance(tcp, TcpParams | dict):
            raise ValueError(
                f"tcp must be a TcpParams or a dict of its fields, got {arguments.shown(tcp)}"
            )
        self.tcp = checked(TcpParams.model_validate, "tcp", tcp or {})
        self._tcp_core = self.tcp.as_core()
        if device_queue and pfc is not None:
            raise ValueError(
                "device_queue and pfc do not combine: a device FIFO would send paused classes"
            )
        if aqm is not None and ecn_threshold is not None:
            raise ValueError("give ecn_threshold (a step marker) or aqm, not both")
        marker = None
        if ecn_threshold is not None:
            marker = checked(Step, "ecn_threshold", kind="step", k=ecn_threshold)
        buffer = None
        if shared_buffer is not None:
            buffer = declared.from_arguments(
                SharedBuffer,
                "shared_buffer (bytes) and buffer_alpha (alpha)",
                bytes=shared_buffer,
                alpha=buffer_alpha,
            ).engine()
        device = "device_queue"
        # The engine's EngineConfig, crossing as one value (`isthmus.wire`).
        config = {
            "host_queue": queue_config(
                host_queue,
                host_scheduler,
                marker,
                device_queue,
                names=("host_queue", "host_scheduler", "ecn_threshold", device),
            ),
            "switch_queue": queue_config(
                switch_queue,
                scheduler,
                aqm or marker,
                device_queue,
                names=("switch_queue", "scheduler", "aqm" if aqm else "ecn_threshold", device),
            ),
            "routing": routing,
            "sample_interval": self.sample_interval,
            "shared_buffer": buffer,
            "pfc": _pfc(pfc),
            "bcn": self.bcn_points,
            "ttl": network["ttl"],
        }
        self._engine = _core.Engine(topology._core, seed, config)

    # ---- partitions ---------------------------------------------------------------

    def set_partitions(self, partitions: int, threads: int | None = None) -> None:
        """Runs this simulation in `partitions` partitions side by side, by `threads`
        threads (default: one each); before the first run. Hosts stay with their
        switch, leaf groups and pods go to partitions in blocks, and partitions run in
        windows of the shortest delay of a link between them (docs/benchmark.md,
        "Beyond one core"). For a given number of partitions the results are the same
        on any number of threads; 1 is the sequential engine. What a partitioned run
        cannot do yet (control programs, incast rounds, flows other than TCP, DCTCP and
        CUBIC) it refuses by name when the run starts."""
        whole(partitions, "partitions", 1, MAX_PARTITIONS, "partitions")
        threads = partitions if threads is None else threads
        whole(threads, "threads", 1, MAX_PARTITIONS, "threads")
        self._engine.set_partitions(partitions, threads)

    @property
    def partitions(self) -> dict:
        """How the run is split: partitions, lookahead (ps), links between partitions,
        and nodes per partition."""
        parts, lookahead, cross, sizes = self._engine.partitions()
        return {
            "partitions": parts,
            "lookahead_ps": None if parts == 1 else lookahead,
            "cross_links": cross,
            "nodes": sizes,
        }

    # ---- traffic -----------------------------------------------------------------

    def add_udp_flow(
        self,
        src: int,
        dst: int,
        rate: int | str,
        *,
        size: int | str | None = None,
        start: int | str = 0,
        stop: int | str | None = None,
        arrivals: str = "poisson",
        packet_size: int | str = "1500B",
    ) -> int:
        """A UDP flow of `rate` from host `src` to host `dst`, sending from `start` until
        `size` payload bytes are sent or `stop` comes, whichever is first. Returns its id."""
        src, dst = self._host(src, "src"), self._host(dst, "dst")
        arguments.text(arrivals, "arrivals", ARRIVALS)
        if size is None and stop is None:
            raise ValueError("a UDP flow needs a size, a stop time, or both")
        payload = arguments.size(size, "size") if size is not None else 0
        if size is not None and payload == 0:
            raise ValueError("size must be at least 1 byte; leave it out to send until stop")
        spec = {
            "rate": arguments.rate(rate, "rate"),
            "packet_size": _packet_bytes(packet_size, "packet_size"),
            "arrivals": arrivals,
            "size": payload,
            "start": arguments.duration(start, "start"),
            "stop": _stop(stop),
        }
        return self._engine.add_udp_flow(src, dst, spec)

    def add_tcp_flow(
        self,
        src: int,
        dst: int,
        size: int | str,
        *,
        start: int | str = 0,
        transport: str = "dctcp",
    ) -> int:
        """A TCP, DCTCP or MPTCP (`tcp.mptcp_subflows` subflows) flow of `size` bytes
        opening at `start`, with the simulation's TCP parameters. Returns its id."""
        ids = self.add_tcp_flows(
            np.array([self._host(src, "src")]),
            np.array([self._host(dst, "dst")]),
            np.array([arguments.size(size, "size")], dtype=np.uint64),
            np.array([arguments.duration(start, "start")], dtype=np.uint64),
            transport=transport,
        )
        return int(ids[0])

    def add_tcp_flows(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        size: np.ndarray,
        start: np.ndarray,
        *,
        transport: str = "dctcp",
    ) -> np.ndarray:
        """Many TCP flows at once from equal-length arrays (sizes in bytes, starts in
        ps). Returns their ids."""
        arguments.text(transport, "transport", TRANSPORTS)
        hosts = self.topology.num_hosts
        arrays = (
            _whole(src, "src", np.uint32, below=hosts),
            _whole(dst, "dst", np.uint32, below=hosts),
            _whole(size, "size", np.uint64),
            _whole(start, "start", np.uint64),
        )
        if len({len(a) for a in arrays}) != 1:
            raise ValueError("src, dst, size and start must have the same length")
        kind = {"kind": transport}
        if transport == "mptcp":
            kind["subflows"] = self.tcp.mptcp_subflows
        first = self._engine.add_tcp_flows(*arrays, self._tcp_core, kind)
        return np.arange(first, first + len(src), dtype=np.uint32)

    def add_bulk_flow(
        self,
        src: int,
        dst: int,
        duration: int | str,
        *,
        start: int | str = 0,
        write_size: int | str = "128KiB",
        transport: str = "dctcp",
    ) -> int:
        """An iperf-like source: TCP or DCTCP sending as fast as it can for `duration`
        in `write_size` writes (iperf's default: 10 s of 128 KiB), finishing when its last
        write arrives; its size is known once its time is up. Returns its id."""
        _stream_transport(transport, "a bulk flow's")
        src, dst = self._host(src, "src"), self._host(dst, "dst")
        spec = {
            "start": arguments.duration(start, "start"),
            "duration": arguments.duration(duration, "duration"),
            "write_size": arguments.size(write_size, "write_size"),
        }
        return self._engine.add_timed_tcp_flow(src, dst, spec, self._tcp_core, transport)

    def add_dcqcn_flow(
        self,
        src: int,
        dst: int,
        size: int | str,
        *,
        start: int | str = 0,
        g: float = declared.default("DcqcnConfig", "g"),
        mtu: int | str = declared.default("DcqcnConfig", "mtu_payload"),
    ) -> int:
        """An RDMA-like DCQCN flow of `size` bytes, starting at its host's line rate (the
        DCQCN paper's reaction-point parameters). Returns its id. Switch ports mark
        with the ramp from `isthmus.transport.dcqcn_marker`."""
        src, dst = self._host(src, "src"), self._host(dst, "dst")
        line_rate = int(self.topology.access_rates()[src])
        first = self._engine.add_dcqcn_flows(
            np.array([src], dtype=np.uint32),
            np.array([dst], dtype=np.uint32),
            np.array([arguments.size(size, "size")], dtype=np.uint64),
            np.array([arguments.duration(start, "start")], dtype=np.uint64),
            {
                "line_rate": line_rate,
                **declared.from_arguments(
                    DcqcnSettings, "DCQCN", g=g, mtu_payload=_packet_bytes(mtu, "mtu")
                ).engine(),
            },
        )
        return int(first)

    def add_incast(
        self,
        receiver: int,
        senders: list[int],
        size: int | str,
        *,
        rounds: int = 1,
        gap: int | str = 0,
        start: int | str = 0,
        transport: str = "dctcp",
    ) -> int:
        """Barrier-synchronized incast: in each of `rounds` rounds every sender sends
        `size` bytes to `receiver`; a round starts `gap` after the previous round's last
        byte arrived. `transport`: tcp, dctcp or dcqcn (at the senders' line rate, which
        must be one rate). Returns the job's id; `incast_rounds()` has every round."""
        receiver = self._host(receiver, "receiver")
        last = self.topology.num_hosts - 1
        senders = arguments.whole_list(senders, "senders", 0, last, "a host", min_length=1)
        arguments.text(transport, "transport", (*STREAM_TRANSPORTS, "dcqcn"))
        rates = {int(self.topology.access_rates()[s]) for s in senders}
        if transport == "dcqcn" and len(rates) > 1:
            raise ValueError("dcqcn incast senders must share one access-link rate")
        spec = {
            "receiver": receiver,
            "senders": senders,
            "size": arguments.size(size, "size"),
            "rounds": whole(rounds, "rounds", 1, U32),
            "gap": arguments.duration(gap, "gap"),
            "start": arguments.duration(start, "start"),
            "transport": transport,
            "line_rate": max(rates, default=1),
        }
        return self._engine.add_incast_rounds(spec, self._tcp_core)

    def incast_rounds(self) -> dict[str, np.ndarray]:
        """Every incast round: job, round, start_ps, finish_ps (-1 while running)."""
        return self._engine.incast_rounds()

    def add_bcn_flow(
        self,
        src: int,
        dst: int,
        *,
        fair_share: int | str,
        size: int | str | None = None,
        start: int | str = 0,
        stop: int | str | None = None,
        ru: int | str = declared.default("BcnSourceConfig", "ru"),
        gi: float = declared.default("BcnSourceConfig", "gi"),
        gd: float = declared.default("BcnSourceConfig", "gd"),
        packet_size: int | str = declared.default("BcnSourceConfig", "packet_size"),
        offered_load: int | str | None = None,
        min_pause: int | str = declared.default("BcnSourceConfig", "min_pause"),
        max_pause: int | str = declared.default("BcnSourceConfig", "max_pause"),
    ) -> int:
        """A BCN-regulated datagram source from `src` to `dst` (IBCN's reaction point:
        Ru, Gi, Gd) of `packet_size` datagrams, sending at most `offered_load` (default:
        its host's line rate); after a STOP it pauses for a time uniform in [`min_pause`,
        `max_pause`] (the IBCN paper's 200-800 ms by default) and restarts at
        `fair_share`. Runs until `size` bytes or `stop`. Returns its id."""
        if size is None and stop is None:
            raise ValueError("a BCN flow needs a size, a stop time, or both")
        src, dst = self._host(src, "src"), self._host(dst, "dst")
        line_rate = int(self.topology.access_rates()[src])
        cap = (
            arguments.rate(offered_load, "offered_load") if offered_load is not None else line_rate
        )
        if cap > line_rate:
            raise ValueError(
                f"offered_load ({offered_load}) exceeds the source's line rate ({line_rate} bps)"
            )
        source = _bcn_regulator(
            line_rate, fair_share, ru=ru, gi=gi, gd=gd, min_pause=min_pause, max_pause=max_pause
        )
        source |= {"packet_size": _packet_bytes(packet_size, "packet_size"), "max_rate": cap}
        return self._engine.add_bcn_flow(
            src,
            dst,
            source,
            arguments.size(size, "size") if size is not None else 0,
            arguments.duration(start, "start"),
            _stop(stop),
        )

    def add_message_flow(
        self,
        src: int,
        dst: int,
        sizes: np.ndarray | list[int],
        thinks: np.ndarray | list[int],
        *,
        start: int | str = 0,
        stop: int | str | None = None,
        transport: str = "tcp",
    ) -> int:
        """A persistent TCP, DCTCP or CUBIC connection whose application writes
        messages of `sizes` bytes in turn: the first at `start`, message i + 1 `thinks[i]`
        ps after message i's last byte reached the receiver (a closed loop), none at or
        after `stop`; the connection closes after the last one and keeps its congestion
        window from message to message. `messages()` has each one's completion.
        Returns the flow's id."""
        _stream_transport(transport, "a message flow's")
        src, dst = self._host(src, "src"), self._host(dst, "dst")
        sizes_arr = _whole(sizes, "sizes", np.uint64)
        thinks_arr = _whole(thinks, "thinks", np.uint64)
        if len(sizes_arr) != len(thinks_arr):
            raise ValueError(
                f"sizes and thinks need one entry per message: {len(sizes_arr)} sizes, "
                f"{len(thinks_arr)} think times"
            )
        spec = {
            "sizes": sizes_arr.tolist(),
            "thinks": thinks_arr.tolist(),
            "start": arguments.duration(start, "start"),
            "stop": _stop(stop),
        }
        return self._engine.add_message_flow(src, dst, spec, self._tcp_core, transport)

    def messages(self) -> dict[str, np.ndarray]:
        """Every message of every message flow: flow, index, size, start_ps, finish_ps
        (-1 while incomplete)."""
        return self._engine.message_table()

    def regulate_with_bcn(
        self,
        flow: int,
        *,
        fair_share: int | str,
        ru: int | str = declared.default("BcnSourceConfig", "ru"),
        gi: float = declared.default("BcnSourceConfig", "gi"),
        gd: float = declared.default("BcnSourceConfig", "gd"),
        min_pause: int | str = declared.default("BcnSourceConfig", "min_pause"),
        max_pause: int | str = declared.default("BcnSourceConfig", "max_pause"),
    ) -> None:
        """Puts TCP flow `flow` under a BCN rate regulator at its host (IBCN's reaction
        point, as `add_bcn_flow`'s): feedback from the congestion points paces its
        sender at the regulator's rate, a STOP holds it for a pause uniform in
        [`min_pause`, `max_pause`], after which it restarts at `fair_share`. Needs the
        simulation's BCN congestion points (`bcn=`)."""
        flow = self._flow(flow)
        src = int(self.flows()["src"][flow])
        line_rate = int(self.topology.access_rates()[src])
        self._engine.regulate_with_bcn(
            flow,
            _bcn_regulator(
                line_rate, fair_share, ru=ru, gi=gi, gd=gd, min_pause=min_pause, max_pause=max_pause
            ),
        )

    def bcn(self) -> dict[str, np.ndarray]:
        """BCN feedback sent per port: samples, positive, normal, stop."""
        return self._engine.bcn_table()

    def set_priority(self, flow: int, priority: int) -> None:
        """Puts every later packet of `flow` in traffic class `priority` (0 is served
        first by strict priority; classes index DRR quanta and WFQ weights)."""
        priority = whole(priority, "priority", 0, U8, "a traffic class")
        self._engine.set_flow_priority(self._flow(flow), priority)

    def set_link_trace(
        self, a: int | str, b: int | str, trace: str | None, base: Path = Path(".")
    ) -> None:
        """Makes the direction a -> b of the link between nodes `a` and `b` follow a
        recorded capacity trace (see `isthmus.link_traces`); None restores its rate."""
        link = self.link_index(a, b)
        if trace is not None:
            arguments.text(trace, "trace")
        if not isinstance(base, str | Path):
            raise ValueError(f"base must be a folder's path, got {arguments.shown(base)}")
        millis = None if trace is None else load_trace(trace, Path(base))
        self._engine.set_link_trace(link, self.node_index(a), millis)

    def link_index(self, a: int | str, b: int | str) -> int:
        """The index (in `topology.links()`) of the first link between two nodes."""
        ia, ib = self.node_index(a, "a"), self.node_index(b, "b")
        links = self.topology.links()
        for i, (x, y) in enumerate(zip(links["a"].tolist(), links["b"].tolist(), strict=True)):
            if {x, y} == {ia, ib}:
                return i
        raise ValueError(
            f"no link between {arguments.shown(a)} and {arguments.shown(b)} (arguments a and b)"
        )

    def port_towards(self, node: int | str, neighbour: int | str) -> int:
        """The local port of `node` that faces `neighbour`."""
        ports = PortMap(self)
        index, other = ports.node(node), ports.node(neighbour, "neighbour")
        if other not in ports.neighbours[index]:
            raise ValueError(
                f"node '{ports.names[index]}' has no link to neighbour '{ports.names[other]}'"
            )
        return ports.port_towards(index, other)

    def set_link_up(self, link: int, up: bool) -> None:
        """Takes topology link `link` (an index into `topology.links()`) down or up;
        a down link loses what is sent onto it."""
        last = len(self.topology.links()["a"]) - 1
        link = whole(link, "link", 0, last, "an index into topology.links()")
        self._engine.set_link_up(link, arguments.flag(up, "up"))

    def base_rtt(self, src: int, dst: int, data_bytes: int = 1500, ack_bytes: int = 40) -> int:
        """Unloaded round trip (ps) between two hosts: a data packet out, an ACK back."""
        return self._engine.base_rtt(
            self._host(src, "src"),
            self._host(dst, "dst"),
            whole(data_bytes, "data_bytes", 1, MAX_PACKET_BYTES, "bytes of a packet"),
            whole(ack_bytes, "ack_bytes", 1, MAX_PACKET_BYTES, "bytes of a packet"),
        )

    def check_run(self, end: int) -> None:
        """Refuses a run to `end` that goes back in time or would record more sampled
        time series than `MAX_SAMPLE_CELLS` (saying how many it would)."""
        end = whole(end, "until", 0, FOREVER_PS - 1, "a time in ps")
        if end < self.now:
            raise ValueError(f"until ({end} ps) is before the current time ({self.now} ps)")
        if self.sample_interval is None:
            return
        ports = self._num_ports
        samples = end // self.sample_interval
        if samples * ports > MAX_SAMPLE_CELLS:
            raise ValueError(
                f"sample_interval {format_time(self.sample_interval)} over {format_time(end)} "
                f"records {samples} samples of {ports} ports ({samples * ports} values); at most "
                f"{MAX_SAMPLE_CELLS}: choose a longer sample_interval or a shorter run"
            )

    def add_flow_entry(self, switch: int | str, priority: int, **match_and_action) -> int:
        """Installs a flow-table entry on `switch` (node index or name) at once; returns
        its id. Match fields: in_port, src, dst, proto, src_port, dst_port, flow; one
        action: output=<port>, group=<id>, drop=True, controller=True, or none to fall
        through to default routing. Control programs use `isthmus.control` instead."""
        node = self.node_index(switch, "switch")
        priority = whole(priority, "priority", 0, U16, "an entry's priority")
        links = self.topology.links()
        ports = int(np.sum(links["a"] == node) + np.sum(links["b"] == node))
        name = self.topology.nodes()["name"][node]
        fields = entry_fields(match_and_action, ENTRY_FIELDS, name, ports)
        return self._engine.command(0, entry_command(node, priority, fields))

    def _flow(self, flow: object) -> int:
        """A flow id argument, checked: an int naming an existing flow."""
        flow = whole(flow, "flow", 0, U32, "a flow id")
        if flow >= self.num_flows:
            raise ValueError(f"flow {flow} does not exist; there are {self.num_flows} flows")
        return flow

    def _host(self, host: object, name: str) -> int:
        """A host number argument, checked: an int naming an existing host."""
        hosts = self.topology.num_hosts
        if isinstance(host, bool) or not isinstance(host, int | np.integer):
            raise ValueError(
                f"{name} must be a host number (an integer), got {arguments.shown(host)}"
            )
        if not 0 <= host < hosts:
            raise ValueError(
                f"{name} host {host} does not exist; hosts are numbered 0..{hosts - 1}"
            )
        return int(host)

    def node_index(self, node: int | str, name: str = "node") -> int:
        """The index of `node` (a name or a node number); `name` is the argument it came
        as, for messages."""
        if isinstance(node, bool) or not isinstance(node, int | str | np.integer):
            raise ValueError(
                f"{name}: a node is a name or a node number, got {arguments.shown(node)}"
            )
        if isinstance(node, int | np.integer):
            node = int(node)
            if not 0 <= node < self.topology.num_nodes:
                last = self.topology.num_nodes - 1
                raise ValueError(
                    f"{name}: node {node} does not exist; nodes are numbered 0..{last}"
                )
            return node
        names = self.topology.nodes()["name"]
        try:
            return names.index(node)
        except ValueError:
            raise ValueError(
                f"{name}: no node named {arguments.shown(node)} in the topology"
            ) from None

    # ---- running -----------------------------------------------------------------

    @property
    def now(self) -> int:
        return self._engine.now

    def run(
        self,
        until: int | str,
        *,
        stop_when_flows_finish: bool = False,
        chunks: int = 1000,
        on_progress: Callable[[int], None] | None = None,
    ) -> bool:
        """Advances the clock to `until`, in `chunks` equal steps of simulated time,
        calling `on_progress(now)` after each. With `stop_when_flows_finish`, stops early
        once every flow has finished. Returns whether every flow has finished."""
        end = self._checked_run(until, stop_when_flows_finish, chunks, on_progress)
        begin = self.now
        for i in range(1, chunks + 1):
            target = begin + (end - begin) * i // chunks
            all_finished = stop_when_flows_finish and self._engine.run_until_flows_finish(target)
            if not all_finished:
                self._engine.run_until(target)
            if on_progress is not None:
                on_progress(self.now)
            if all_finished:
                break
        return self._engine.unfinished_flows == 0

    def _checked_run(
        self,
        until: int | str,
        stop_when_flows_finish: bool,
        chunks: int,
        on_progress: Callable[[int], None] | None,
    ) -> int:
        """The end of a run `run` (or a control plane's) was asked for, every argument
        checked before anything runs."""
        end = arguments.duration(until, "until")
        arguments.flag(stop_when_flows_finish, "stop_when_flows_finish")
        whole(chunks, "chunks", 1, MAX_CHUNKS, "steps of the run")
        if on_progress is not None:
            arguments.callable_argument(on_progress, "on_progress")
        self.check_run(end)
        return end

    # ---- results -----------------------------------------------------------------

    @property
    def events_processed(self) -> int:
        return self._engine.events_processed

    @property
    def packet_hops(self) -> int:
        return self._engine.packet_hops

    @property
    def num_flows(self) -> int:
        return self._engine.num_flows

    @property
    def expected_flows(self) -> int:
        """Flows added so far plus those a workload will still add (later incast
        rounds): what `unfinished_flows` counts down from."""
        return self._engine.expected_flows

    @property
    def unfinished_flows(self) -> int:
        return self._engine.unfinished_flows

    @property
    def live_packets(self) -> int:
        return self._engine.live_packets

    def _repr_html_(self) -> str:
        """The network and, once it has run, the run's main figures, for notebooks."""
        from html import escape

        kinds = self.topology.nodes()["kind"]
        rows = [
            ("hosts", kinds.count("host")),
            ("switches", kinds.count("switch")),
            ("links", len(self.topology.links()["a"])),
            ("simulated time", format_time(self.now)),
            ("seed", self.seed),
        ]
        if self.num_flows and self.now > 0:
            figures = self.headline()
            rows += [
                ("flows finished", f"{figures['flows_finished']} / {figures['flows']}"),
                ("bytes delivered", f"{figures['bytes_delivered']:,}"),
                ("packets dropped", f"{figures['packets_dropped']:,}"),
                ("loops (TTL drops)", figures["loops"]),
                ("busiest link utilisation", f"{figures['max_link_utilization']:.1%}"),
            ]
            if figures["mean_fct_us"] is not None:
                rows.append(("mean flow completion", f"{figures['mean_fct_us']:.1f} us"))
        body = "".join(
            f"<tr><th style='text-align:left'>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
            for k, v in rows
        )
        return f"<table><caption>isthmus Simulation</caption>{body}</table>"

    def headline(self) -> dict[str, float | int | None]:
        """The run's main figures so far, from the engine's tables (what a notebook shows
        and a run's summary starts from): flows and flows finished, payload bytes
        delivered, packets dropped at ports, loops (packets whose TTL ran out), the
        busiest link's utilisation and the mean completion time of the finished flows
        that end with a last byte (not datagram streams), in microseconds."""
        flows = self.flows()
        ports = self.ports()
        finished = flows["finish_ps"] >= 0
        done = finished & ~flows["datagram"].astype(bool)
        fct = (flows["finish_ps"] - flows["start_ps"])[done]
        return {
            "flows": self.num_flows,
            "flows_finished": int(finished.sum()),
            "bytes_delivered": int(flows["bytes_delivered"].sum()),
            "packets_dropped": int(ports["drop_packets"].sum()),
            "loops": int(self.node_drops()["ttl_drops"].sum()),
            "max_link_utilization": float((ports["busy_ps"] / max(self.now, 1)).max(initial=0.0)),
            "mean_fct_us": float(fct.mean() / 1e6) if done.any() else None,
        }

    def flows(self) -> dict[str, np.ndarray]:
        """Per-flow columns; times in ps and -1 where the event has not happened."""
        return self._engine.flow_table()

    def tcp_window(self, flow: int) -> dict:
        """A TCP flow's congestion window now: `cwnd_bytes`, and for a CUBIC flow
        `w_max` (segments), `k_s` and `epoch_ps` (None before its first epoch)."""
        window = self._engine.tcp_window(whole(flow, "flow", 0, U32, "a flow id"))
        if window is None:
            raise ValueError(f"flow {flow} is not a TCP flow (or does not exist)")
        cwnd, cubic = window
        out: dict = {"cwnd_bytes": cwnd}
        if cubic is not None:
            out.update(w_max=cubic[0], k_s=cubic[1], epoch_ps=cubic[2])
        return out

    def queues(self, node: int | str | None = None) -> dict[str, np.ndarray]:
        """One row per (port, class): waiting packets and bytes, packets in and out,
        drops by cause (buffer, AQM), AQM marks, total sojourn, flows waiting (FQ);
        with `node`, only that node's ports."""
        return self._engine.queue_table(None if node is None else self.node_index(node))

    def configure_queue(
        self,
        switch: int | str,
        *,
        limit: str,
        scheduler=None,
        aqm=None,
        port: int | None = None,
        device_queue: int = 0,
    ) -> None:
        """Replaces a switch port's (or every port's) queueing now; waiting packets are
        kept (re-queued in service order if the scheduler, limit or device changes)."""
        node = self.node_index(switch, "switch")
        port = arguments.optional_whole(port, "port", 0, U16, "a local port")
        config = queue_config(limit, scheduler, aqm, device_queue)
        command = {"kind": "configure_queue", "switch": node, "port": port, "config": config}
        self._engine.command(0, command)

    def ports(self, node: int | str | None = None) -> dict[str, np.ndarray]:
        """Per-port columns: one row per egress port, with its node, peer and counters;
        with `node`, only that node's ports, in port order (read without the rest)."""
        return self._engine.port_table(None if node is None else self.node_index(node))

    def port_queue_config(self, node: int | str, port: int) -> dict:
        """The queueing (limit, scheduler, AQM) of local port `port` of `node`."""
        index = self.node_index(node)
        port = whole(port, "port", 0, U16, "a local port")
        return deserialised(self._engine.queue_config(self._engine.global_port(index, port)))

    def entries(self) -> dict[str, np.ndarray]:
        """Every installed flow entry: switch, entry, priority, packets, bytes,
        installed_ps, last_used_ps."""
        return self._engine.entry_table()

    def samples(self) -> dict[str, np.ndarray] | None:
        """The sampled time series (None unless `sample_interval` was given): `time_ps`
        and per-port columns shaped (samples, ports)."""
        return self._engine.samples()

    def queue_wait_quantile(self, q: float, at: str = "all") -> float | None:
        """The `q`-quantile (0 to 1) of the time packets waited for a transmitter, in
        ps, one value per packet and hop (the distribution whose mean the ports' `wait_ps`
        gives), at `at`: "switches", "hosts" (their NICs) or "all"; None before any
        packet left there. Read from log-linear buckets, within 3.2 %."""
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"q = {q!r}: a quantile is between 0 and 1 (0.99 for p99)")
        where = {"all": (True, True), "switches": (True, False), "hosts": (False, True)}
        if at not in where:
            raise ValueError(f"at = {at!r}: choose 'all', 'switches' or 'hosts'")
        return self._engine.wait_quantile(float(q), *where[at])

    def node_drops(self) -> dict[str, np.ndarray]:
        """Packets each node dropped: `unroutable` (no route), `rule_drops` (a drop
        rule, a drop-on-miss, a meter, or a packet-in nobody took) and `ttl_drops`
        (time-to-live ran out: a forwarding loop)."""
        return self._engine.node_drops()
