"""What of a scenario the emulation carries out, and the refusal, by field, of what it
cannot: on this machine (a qdisc or congestion control the kernel lacks) or at all yet
(docs/emulation.md). Everything is checked before anything is started."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from isthmus import units
from isthmus.emulate.network import MTU, LinkShape, Queue
from isthmus.emulate.system import Capabilities
from isthmus.emulate.traffic import KERNEL_CONGESTION_CONTROL, Datagrams, TimedSource
from isthmus.scenario import (
    FlowList,
    Flows,
    IncastTraffic,
    Network,
    PoissonFlows,
    Scenario,
    ScenarioError,
    UdpTraffic,
)
from isthmus.simulation import Simulation

MAX_LINK_RATE_BPS = 1_000_000_000
"""The fastest link emulated as it is: userspace Open vSwitch forwards about 2 Gb/s on
this kind of machine, shared by every bridge (docs/emulation.md); faster links are
scaled down by a stated factor (`rate_scale`)."""

MPTCP = "mptcp"
MAX_MPTCP_SUBFLOWS = 9
"""The first subflow and the 8 more the kernel's path manager opens at most
(MPTCP_PM_MAX_SUBFLOWS)."""
MIN_SAMPLE_INTERVAL_PS = 5 * 10**9
"""5 ms: one sample of every port of a k=4 fat-tree (96 ports, 17 namespaces) takes
about 2.3 ms here over netlink (`kernel_ports`), in the same loop that serves the
controller."""
UNKNOWN_SIZE = (1 << 64) // 4 - 1
"""The size the engine gives a timed source until its time is up (u64::MAX / 4,
`Engine::add_timed_tcp_flow`)."""
MAX_FLOWS = 20_000
"""Each flow is a thread of its host's runner and a port of its own."""

NOT_YET = {
    "host_scheduler": "a host NIC scheduler",
    "scheduler": "a switch scheduler",
    "link_traces": "link traces",
    "port_queues": "per-port queueing",
    "shared_buffer": "a shared buffer",
    "pfc": "priority flow control",
    "bcn": "BCN congestion points",
}
"""[network] keys the emulation does not carry out yet, with what each asks for."""

APPS_NOT_YET = {
    "ofpt": "OFPT splits each flow over MPTCP subflows and paces and retires them one by "
    "one (PaceSubflow, RetirePath): the kernel's MPTCP keeps its subflows' sockets to "
    "itself, so a subflow's rate cannot be set from the controller without a shaping "
    "class per subflow at the sending host, which is not built yet",
    "acc": "ACC sets each port's ECN marking (SetAqm) from its queue counters: the "
    "emulation reads each port's queue but sets no AQM yet (and this kind of kernel may "
    "lack the 'red' qdisc to mark with)",
    "ibcn": "IBCN drives Backward Congestion Notification (SetBcnPredictions), which "
    "neither the kernel nor Open vSwitch has",
}
"""Control apps the emulation refuses before anything starts, with the reason."""


@dataclass(frozen=True)
class Scope:
    """What the emulation will run: every port's egress shaping and the hosts' kernel
    congestion control."""

    shapes: dict[tuple[int, int], LinkShape]
    congestion_control: str | None
    """The TCP flows' (None: there are none)."""
    mptcp_subflows: int | None
    """Subflows of each connection when the TCP flows are MPTCP (None: plain TCP)."""
    datagrams: dict[int, Datagrams]
    """The UDP flows' sending, by flow id."""
    timed: dict[int, TimedSource]
    """The timed (iperf-like) TCP sources, by flow id."""
    rate_scale: float
    delays_left_out_below_ps: int
    sample_interval_ps: int | None
    """How often every port is sampled for the time series (None: no series)."""
    routing: str = "ecmp"
    """The network's own routing: "ecmp" or "single_path"."""


def scope(
    spec: Scenario,
    sim: Simulation,
    capabilities: Capabilities,
    *,
    rate_scale: float,
    ignore_delay_below_ps: int,
    base: Path = Path("."),
) -> Scope:
    """What the emulation runs of `spec` (built as `sim`), or a ScenarioError naming the
    first field it cannot carry out and what to do."""
    network = spec.network
    _marking(network, capabilities)
    for key, what in NOT_YET.items():
        if getattr(network, key) not in (None, [], False):
            raise ScenarioError(f"network.{key}: the emulation does not carry out {what} yet")
    if network.device_queue:
        raise ScenarioError("network.device_queue: the emulation's queue is one qdisc per port")
    if network.routing == "spray":
        raise ScenarioError(
            "network.routing: the emulation cannot spray: Open vSwitch chooses among a "
            "group's ports by a hash of each packet's flow, never per packet; use ecmp "
            "or single_path"
        )
    sample_interval_ps = None
    if spec.telemetry.sample_interval is not None:
        sample_interval_ps = units.time_ps(spec.telemetry.sample_interval)
        if sample_interval_ps < MIN_SAMPLE_INTERVAL_PS:
            raise ScenarioError(
                f"telemetry.sample_interval: {spec.telemetry.sample_interval} is shorter "
                f"than the emulation samples ({MIN_SAMPLE_INTERVAL_PS // 10**9} ms at the "
                "least: each sample reads every port's counters from the kernel while the "
                "controller runs); write 5ms or more"
            )
    for i, app in enumerate(spec.control.apps if spec.control is not None else []):
        if app.name in APPS_NOT_YET:
            raise ScenarioError(
                f"control.apps[{i}]: the emulation cannot run {app.name} yet: "
                f"{APPS_NOT_YET[app.name]} (docs/emulation.md)"
            )
    congestion_control = _congestion_control(spec, capabilities)
    mptcp = _mptcp_subflows(spec, capabilities) if congestion_control == MPTCP else None
    changed = spec.tcp.model_fields_set - ({"mptcp_subflows"} if mptcp else set())
    if changed:
        keys = ", ".join(sorted(changed))
        raise ScenarioError(
            f"tcp.{keys}: emulated hosts run their kernel's TCP, whose settings the "
            "emulation does not change"
        )
    # The simulation holds an incast's first round; the emulation adds the rest.
    later_rounds = sum(
        block.senders * (block.rounds - 1)
        for block in spec.traffic
        if isinstance(block, IncastTraffic)
    )
    flows = len(sim.flows()["src"]) + later_rounds
    if flows > MAX_FLOWS:
        raise ScenarioError(f"traffic: {flows} flows; the emulation runs at most {MAX_FLOWS}")
    return Scope(
        _shapes(spec, sim, capabilities, rate_scale, ignore_delay_below_ps),
        KERNEL_CONGESTION_CONTROL["tcp"] if mptcp else congestion_control,
        mptcp,
        _datagrams(spec, sim, rate_scale),
        _timed(spec, sim, base),
        rate_scale,
        ignore_delay_below_ps,
        sample_interval_ps,
        network.routing,
    )


AQM_QDISC = {"red": "red", "ramp": "red", "step": "red", "codel": "codel", "pie": "pie"}
"""The kernel qdisc that would carry out each AQM kind (a marker on the queue's length,
ramp or step, as RED's)."""


def _marking(network: Network, capabilities: Capabilities) -> None:
    """Refuses an AQM or ECN marking by field: naming the qdisc this kernel lacks for
    it, or, where the kernel has it, as not translated yet."""
    asked = []
    if network.ecn_threshold is not None:
        asked.append(("network.ecn_threshold", "step"))
    if network.aqm is not None and network.aqm.kind != "drop_tail":
        asked.append(("network.aqm", network.aqm.kind))
    for i, queue in enumerate(network.port_queues):
        if queue.aqm is not None and queue.aqm.kind != "drop_tail":
            asked.append((f"network.port_queues[{i}].aqm", queue.aqm.kind))
    for field, kind in asked:
        qdisc = AQM_QDISC[kind]
        if qdisc not in capabilities.qdiscs:
            raise ScenarioError(
                f"{field}: this kernel has no '{qdisc}' qdisc to carry out {kind} (a "
                "kernel with it would still need the translation, not built yet)"
            )
        raise ScenarioError(
            f"{field}: the emulation does not translate {kind} to the kernel's '{qdisc}' qdisc yet"
        )


def _datagrams(spec: Scenario, sim: Simulation, rate_scale: float) -> dict[int, Datagrams]:
    """Each UDP flow's sending. The blocks add their flows in order, one per host pair,
    so the datagram flows in id order are the UDP blocks' pairs in order."""
    flows = sim.flows()
    ids = iter(np.flatnonzero(flows["datagram"]).tolist())
    datagrams = {}
    for i, block in enumerate(spec.traffic):
        if not isinstance(block, UdpTraffic):
            continue
        start = units.time_ps(block.start)
        stop = None if block.stop is None else units.time_ps(block.stop)
        for src, dst in block.pairs_for(sim, i):
            flow = next(ids)
            assert (int(flows["src"][flow]), int(flows["dst"][flow])) == (src, dst)
            datagrams[flow] = Datagrams(
                round(units.rate_bps(block.rate) / rate_scale),
                units.size_bytes(block.packet_size),
                block.arrivals == "poisson",
                0 if block.size is None else units.size_bytes(block.size),
                start,
                stop,
            )
    return datagrams


def _timed(spec: Scenario, sim: Simulation, base: Path) -> dict[int, TimedSource]:
    """Each timed source's sending. The blocks add their flows in order, so the timed
    flows in id order (those whose size the engine does not know yet) are the timed
    blocks' flows, block by block, each block's as it draws them."""
    flows = sim.flows()
    unknown = iter(np.flatnonzero(flows["size_bytes"] == UNKNOWN_SIZE).tolist())
    timed = {}
    for i, block in enumerate(spec.traffic):
        if not isinstance(block, Flows) or block.duration is None:
            continue
        source = TimedSource(units.time_ps(block.duration), units.size_bytes(block.write_size))
        drawn = block.generated(sim, i, base)
        for src, dst in zip(drawn["src"].tolist(), drawn["dst"].tolist(), strict=True):
            flow = next(unknown)
            assert (int(flows["src"][flow]), int(flows["dst"][flow])) == (src, dst)
            timed[flow] = source
    return timed


def _mptcp_subflows(spec: Scenario, capabilities: Capabilities) -> int:
    """The subflows of each MPTCP connection, once the machine and the scenario allow
    MPTCP: the kernel's own MPTCP, its path manager opening the extra subflows to ports
    the receiving host announces (`isthmus.emulate.traffic`)."""
    if not capabilities.mptcp:
        raise ScenarioError(
            "traffic.transport: mptcp needs the kernel's MPTCP, which is off here "
            "(sysctl net.mptcp.enabled = 1 turns it on)"
        )
    subflows = spec.tcp.mptcp_subflows
    if subflows > MAX_MPTCP_SUBFLOWS:
        raise ScenarioError(
            f"tcp.mptcp_subflows: the kernel's path manager opens at most "
            f"{MAX_MPTCP_SUBFLOWS - 1} subflows beside the first, so at most "
            f"{MAX_MPTCP_SUBFLOWS} in all, not {subflows}"
        )
    control = spec.control
    if control is not None and (control.apps or control.miss != "route"):
        raise ScenarioError(
            "control: MPTCP's extra subflows take source ports the kernel picks, which "
            "programs cannot match or name by flow; emulate MPTCP over the network's own "
            'routing (no [control], or miss = "route" and no apps)'
        )
    return subflows


def _congestion_control(spec: Scenario, capabilities: Capabilities) -> str | None:
    transports = set()
    for i, block in enumerate(spec.traffic):
        if isinstance(block, UdpTraffic):
            if block.packet_size is not None and units.size_bytes(block.packet_size) > MTU:
                raise ScenarioError(
                    f"traffic[{i}].packet_size: an emulated link carries packets of at most {MTU} B"
                )
            continue
        if not isinstance(block, Flows | PoissonFlows | FlowList | IncastTraffic):
            raise ScenarioError(
                f"traffic[{i}]: the emulation runs flows, poisson_flows, flow_list, incast "
                f"and udp traffic, not {block.kind} yet"
            )
        if block.transport not in (*KERNEL_CONGESTION_CONTROL, MPTCP):
            raise ScenarioError(
                f"traffic[{i}].transport: the emulation runs "
                f"{', '.join((*KERNEL_CONGESTION_CONTROL, MPTCP))}, not {block.transport} yet"
            )
        transports.add(block.transport)
    if len(transports) > 1:
        raise ScenarioError(
            "traffic: the emulation runs one transport per scenario, this one has "
            f"{', '.join(sorted(transports))}"
        )
    if not transports:
        if not spec.traffic:
            raise ScenarioError("traffic: the scenario has no flows to emulate")
        return None
    transport = transports.pop()
    if transport == MPTCP:
        return MPTCP
    algorithm = KERNEL_CONGESTION_CONTROL[transport]
    if algorithm not in capabilities.congestion_controls:
        raise ScenarioError(
            f"traffic.transport: {transport} runs as the kernel's {algorithm}, which this "
            "kernel lacks "
            f"(it has {', '.join(sorted(capabilities.congestion_controls))})"
        )
    return algorithm


def _shapes(
    spec: Scenario,
    sim: Simulation,
    capabilities: Capabilities,
    rate_scale: float,
    ignore_delay_below_ps: int,
) -> dict[tuple[int, int], LinkShape]:
    network = spec.network
    ports = sim.ports()
    kinds = list(sim.topology.nodes()["kind"])
    for qdisc in ("htb", "pfifo", "bfifo"):
        if qdisc not in capabilities.qdiscs:
            raise ScenarioError(
                f"network: this kernel has no '{qdisc}' qdisc, which every emulated port needs"
            )
    for node, kind in enumerate(kinds):
        if kind == "host" and int(np.count_nonzero(ports["node"] == node)) > 1:
            raise ScenarioError(
                f"topology: host node {node} has several links; an emulated host has one interface"
            )
    fastest = int(ports["rate_bps"].max()) / rate_scale
    if fastest > MAX_LINK_RATE_BPS:
        raise ScenarioError(
            f"topology: links of {_gbps(int(ports['rate_bps'].max()))} are faster than the "
            "emulation "
            f"forwards ({_gbps(MAX_LINK_RATE_BPS)}); scale rates down by a factor of at least "
            f"{int(np.ceil(fastest * rate_scale / MAX_LINK_RATE_BPS))} (--scale)"
        )
    delays = np.where(ports["delay_ps"] >= max(ignore_delay_below_ps, 1), ports["delay_ps"], 0)
    if delays.any() and "netem" not in capabilities.qdiscs:
        raise ScenarioError(
            f"topology: links have delays up to {int(delays.max()) / 1e6:g} us, and this "
            "kernel has no 'netem' qdisc to add them; leave out delays below a bound "
            "(--ignore-delay-below; the switches' own latency is larger, docs/emulation.md) "
            "or write the links without delay"
        )
    queues = {
        "host": _queue(network.host_queue, "network.host_queue"),
        "switch": _queue(network.switch_queue, "network.switch_queue"),
    }
    return {
        (node, port): LinkShape(round(rate / rate_scale), queues[kinds[node]], delay)
        for node, port, rate, delay in zip(
            ports["node"].tolist(),
            ports["port"].tolist(),
            ports["rate_bps"].tolist(),
            delays.tolist(),
            strict=True,
        )
    }


def _queue(limit: str, field: str) -> Queue:
    try:
        unit, value = units.limit(limit)
    except ValueError as e:
        raise ScenarioError(f"{field}: {e}") from None
    return Queue(value, in_bytes=unit == "bytes")


def _gbps(rate_bps: int) -> str:
    return f"{rate_bps / 1e9:g} Gb/s"
