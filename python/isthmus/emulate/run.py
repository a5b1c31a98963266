"""One emulated run of a scenario, start to finish: check what the machine and the
emulation can do, bring the network up, run the traffic with the scenario's control
apps over OpenFlow, read the counters, write the run folder, and take everything down
again, whatever ends the run (an error, Ctrl-C, SIGTERM)."""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from isthmus import units
from isthmus.control import ControlPlane
from isthmus.emulate.footprint import Footprint
from isthmus.emulate.kernel_ports import KernelPorts, Series
from isthmus.emulate.network import EmulatedNetwork, LinkShape
from isthmus.emulate.openflow import Channel
from isthmus.emulate.ovs import OpenVSwitch
from isthmus.emulate.rounds import plan_rounds
from isthmus.emulate.scope import scope
from isthmus.emulate.seam import OpenFlowSeam
from isthmus.emulate.system import EmulationError, capabilities, check_machine
from isthmus.emulate.traffic import Traffic
from isthmus.metrics import completion_times, slowdown_summary
from isthmus.scenario import Scenario, ScenarioError
from isthmus.simulation import Simulation
from isthmus.units import PS_PER_SECOND

CONNECT_TIMEOUT_S = 30.0


class Stopped(EmulationError):
    """The run was told to stop (SIGTERM)."""


@dataclass
class EmulatedRun:
    """What an emulated run measured: the flow table (the simulator's columns where
    the emulation measures them), every switch port's OpenFlow counters, the control
    plane that ran, and timings of bringing the network up and down (s)."""

    flows: dict[str, np.ndarray]
    ports: dict[str, np.ndarray]
    plane: ControlPlane
    all_finished: bool
    up_s: float
    down_s: float
    summary: dict
    timeseries: dict[str, np.ndarray] | None = None
    """Every port's queue and counters at each sample (`telemetry.sample_interval`;
    None without one), as the simulator's timeseries.parquet lays them out."""


@contextlib.contextmanager
def _terminated_as_stopped() -> Iterator[None]:
    """SIGTERM unwinds the run like Ctrl-C, so that everything comes down."""

    def stop(signum, frame) -> None:
        raise Stopped("stopped by SIGTERM")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def emulate(
    spec: Scenario,
    *,
    seed: int | None = None,
    base: Path = Path("."),
    rate_scale: float = 1.0,
    ignore_delay_below: str | int = 0,
    run_root: Path | None = None,
    on_progress: Callable[[int], None] | None = None,
    before_run: Callable[[OpenFlowSeam], None] | None = None,
) -> EmulatedRun:
    """Runs `spec` on an emulated network (see the module's docstring). `rate_scale`
    divides every link rate; link delays below `ignore_delay_below` are left out (the
    switches' own latency is larger); `before_run(seam)` is called once the network is
    up, before the traffic starts."""
    check_machine()
    if rate_scale < 1:
        raise ValueError(
            f"rate_scale must be at least 1 (rates are only scaled down), got {rate_scale}"
        )
    if rate_scale != 1 and spec.control is not None and spec.control.apps:
        # The programs would plan with the scenario's rates, not the emulated ones.
        raise ScenarioError(
            "--scale: control apps see the scenario's link rates; write the scenario at "
            "the rates to emulate instead of scaling them"
        )
    threshold = units.time_ps(ignore_delay_below)
    sim = spec.model_copy(update={"control": None}).build(seed=seed, base=base)
    with _terminated_as_stopped():
        footprint = Footprint.start(run_root or Path(tempfile.gettempdir()))
        try:
            probe = f"{footprint.namespace(0)}-probe"
            footprint.add_namespace(probe)
            machine = capabilities(probe)
            plan = scope(
                spec, sim, machine,
                rate_scale=rate_scale, ignore_delay_below_ps=threshold, base=base,
            )  # fmt: skip
            return _run(spec, sim, plan, footprint, on_progress, before_run)
        finally:
            footprint.remove()


def _run(spec, sim, plan, footprint, on_progress, before_run) -> EmulatedRun:
    started = time.monotonic()
    ovs = OpenVSwitch(footprint)
    channel = Channel()
    flows, rounds = plan_rounds(spec, sim)
    traffic = Traffic(
        flows, plan.congestion_control, plan.datagrams, plan.mptcp_subflows,
        rounds=rounds, timed=plan.timed,
    )  # fmt: skip
    kernel: KernelPorts | None = None
    try:
        ovs.start()
        network = EmulatedNetwork(sim.topology, footprint, ovs, plan.shapes, channel.address)
        network.up()
        kernel = KernelPorts(network)
        series = (
            None if plan.sample_interval_ps is None else Series(kernel, plan.sample_interval_ps)
        )
        seam = OpenFlowSeam(
            sim.topology, network, channel, traffic, plan.rate_scale, sim.seed,
            kernel=kernel, series=series,
        )  # fmt: skip
        if spec.control is not None:
            plane = spec.control.attach(seam)
        else:
            plane = ControlPlane(seam)
            for node, kind in enumerate(seam.ports.kinds):
                if kind == "switch":
                    plane.set_miss(node, "route")
        seam.install_pipeline(plan.routing)
        seam.connect(CONNECT_TIMEOUT_S)
        seam.prime_datapath()
        ovs.enlarge_send_buffer(_send_buffer(plan.shapes, seam.ports.kinds))
        duration_ps = units.time_ps(spec.run.duration)
        traffic.launch(network, footprint)
        if before_run is not None:
            before_run(seam)
        up_s = time.monotonic() - started
        all_finished = plane.run(
            duration_ps,
            stop_when_flows_finish=spec.ends_with_flows(sim),
            chunks=100,
            on_progress=on_progress,
        )
        elapsed_ps = seam.now
        traffic.await_senders()
        flows = traffic.table(seam.to_ps)
        ports, switch_losses = _port_table(seam, ovs)
        send_errors = ovs.send_errors()
        down_started = time.monotonic()
    finally:
        if kernel is not None:
            kernel.close()
        traffic.stop()
        ovs.stop()
        channel.close()
    footprint.remove()
    down_s = time.monotonic() - down_started
    _run_tables(sim, flows, ports, elapsed_ps, plan.rate_scale)
    summary = _summary(spec, plan, flows, ports, all_finished, up_s, down_s)
    summary["packets_lost"] = _packets_lost(ports, switch_losses, seam.discarding_switches)
    names = sim.topology.nodes()["name"]
    summary["frames_lost_in_switches"] = {
        names[node]: None if math.isnan(lost) else int(lost) for node, lost in switch_losses.items()
    }
    summary["seed"] = sim.seed
    summary["foreign_packet_ins"] = seam.foreign_frames
    summary["datapath_send_errors_logged"] = send_errors
    summary["datagrams_refused_at_senders"] = traffic.refused
    summary["flow_errors"] = traffic.errors
    summary["sample_interval_ps"] = plan.sample_interval_ps
    timeseries = None if series is None else series.table()
    return EmulatedRun(flows, ports, plane, all_finished, up_s, down_s, summary, timeseries)


MAX_SEND_BUFFER = (2**31 - 1) // 2
FRAME_TRUESIZE = 2304
"""What the kernel charges a socket for one full-size frame waiting in a queue."""


def _send_buffer(shapes: dict[tuple[int, int], LinkShape], kinds: list[str]) -> int:
    """Room in ovs-vswitchd's send buffer for every switch queue full at once, twice
    over (frames on their way to the next hop are charged too), and at least 4 MB."""
    room = 0
    for (node, _), shape in shapes.items():
        if kinds[node] == "switch":
            queue = shape.queue
            frames = queue.limit if not queue.in_bytes else queue.limit // 64 + 1
            room += frames * FRAME_TRUESIZE
    # SO_SNDBUFFORCE takes an int, and the kernel doubles it.
    return min(max(2 * room, 4 << 20), MAX_SEND_BUFFER)


def _port_table(
    seam: OpenFlowSeam, ovs: OpenVSwitch
) -> tuple[dict[str, np.ndarray], dict[int, float]]:
    """One row per port of every node, in the simulator's port order: a switch port's
    bytes and packets from OpenFlow's port counters, a host's from its kernel's; every
    port's `drop_packets`, its queue's count of packets it refused; and `lost_packets`,
    the packets the port lost.

    At a host the two are the same. At a switch they are not: Open vSwitch sends a
    batch of packets with one sendmmsg, and when the queue refuses one it offers it
    once more and gives up the rest of the batch, so the queue counts a lost packet
    up to twice and never sees those behind it. A switch port's loss is what the
    switch handed it to send (its egress table's counters) less what it sent and
    what its qdiscs still hold. That holds while the switch's forwarding holds still:
    once it changed during the traffic (`OpenFlowSeam.changed_switches`), Open
    vSwitch's counters no longer add up per port (docs/emulation.md), and the loss
    of each of that switch's ports is NaN, not measured; the switch's own loss still is
    (`_switch_losses`), and the run's `packets_lost` takes it in their place."""
    ovs.settle_flow_counts()
    handed = seam.handed_rows()
    rows = seam.port_rows()
    assert seam.kernel is not None  # port_rows read it
    kernel = seam.kernel.read()
    lost = []
    for row, node in enumerate(rows["node"].tolist()):
        if seam.ports.kinds[node] != "switch":
            lost.append(float(rows["drop_packets"][row]))
        elif node in seam.changed_switches:
            lost.append(math.nan)
        else:
            sent = int(kernel["tx_packets"][row]) + int(kernel["held_packets"][row])
            lost.append(float(handed.get((node, int(rows["port"][row])), 0) - sent))
    counted = ("node", "port", "peer_node", "tx_bytes", "tx_packets", "rx_bytes", "rx_packets")
    table = {key: rows[key] for key in (*counted, "drop_packets")}
    table["lost_packets"] = np.array(lost, dtype=np.float64)
    return table, _switch_losses(seam, kernel)


def _switch_losses(seam: OpenFlowSeam, kernel: dict[str, np.ndarray]) -> dict[int, float]:
    """Each switch's frames lost, from its kernel's counters, which a change of its
    forwarding leaves exact: the frames its ports received and the controller gave it,
    less those its ports sent, its queues still hold and it sent up to the controller.
    That is its queues' losses, and what its own rules dropped where it has any
    (`OpenFlowSeam.discarding_switches`). NaN for a switch given a flooding entry (one
    frame in, many out)."""
    assert seam.kernel is not None
    losses: dict[int, float] = {}
    for node in range(len(seam.ports.kinds)):
        if seam.ports.kinds[node] != "switch":
            continue
        if node in seam.replicating_switches:
            losses[node] = math.nan
            continue
        rows = np.asarray(seam.kernel.nodes) == node
        taken = int(kernel["rx_packets"][rows].sum()) + seam.frames_from_controller[node]
        given = int(kernel["tx_packets"][rows].sum()) + int(kernel["held_packets"][rows].sum())
        losses[node] = float(taken - given - seam.frames_to_controller[node])
    return losses


def _packets_lost(ports: dict, switch_losses: dict[int, float], discarding: set[int]) -> int | None:
    """The run's queue losses: every port's where each is measured, a switch's own
    frames lost where its ports' are not and it drops nothing by its own rules (None
    where neither tells)."""
    lost = ports["lost_packets"]
    unmeasured = {int(n) for n in np.unique(ports["node"][np.isnan(lost)])}
    total = float(lost[~np.isin(ports["node"], list(unmeasured))].sum())
    for node in unmeasured:
        total += math.nan if node in discarding else switch_losses.get(node, math.nan)
    return None if math.isnan(total) else int(total)


def _run_tables(
    sim: Simulation, flows: dict, ports: dict, elapsed_ps: int, rate_scale: float
) -> None:
    """Adds what `isthmus report` and `compare` read to the flow and port tables, as
    `isthmus run` writes them: flow ids, completion times and slowdowns (against the
    simulator's ideal for the flow: size at the access rate plus the unloaded round
    trip), port names, roles, rates as emulated and utilisation (bytes sent over the
    run, which the emulation measures, where the simulator counts busy time)."""
    times = completion_times(sim, flows, rate_scale)
    flows["flow_id"] = np.arange(len(flows["src"]), dtype=np.uint32)
    flows.update(times)
    nodes = sim.topology.nodes()
    names, roles = nodes["name"], nodes["role"]
    rates = sim.ports()["rate_bps"] / rate_scale
    ports["port_index"] = np.arange(len(ports["node"]), dtype=np.uint32)
    ports["node_name"] = [names[n] for n in ports["node"]]
    ports["peer_name"] = [names[n] for n in ports["peer_node"]]
    ports["role"] = [roles[n] for n in ports["node"]]
    ports["rate_bps"] = rates.astype(np.uint64)
    ports["utilization"] = ports["tx_bytes"] * 8 / rates / (max(elapsed_ps, 1) / PS_PER_SECOND)


def _summary(spec, plan, flows, ports, all_finished, up_s, down_s) -> dict:
    finished = flows["finish_ps"] >= 0
    fct = (flows["finish_ps"] - flows["start_ps"])[finished]
    return {
        "scenario": spec.name,
        "backend": "emulation (Open vSwitch, userspace datapath; Linux TCP)",
        "congestion_control": plan.congestion_control,
        "mptcp_subflows": plan.mptcp_subflows,
        "udp_flows": len(plan.datagrams),
        "rate_scale": plan.rate_scale,
        "delays_left_out_below_ps": plan.delays_left_out_below_ps,
        "flows": int(len(finished)),
        "flows_finished": int(finished.sum()),
        "all_finished": bool(all_finished),
        "bytes_delivered": int(flows["bytes_received"].sum()),
        "drop_packets": int(ports["drop_packets"].sum()),
        "mean_fct_ms": float(fct.mean() / 1e9) if len(fct) else None,
        "mean_fct_us": float(fct.mean() / 1e6) if len(fct) else None,
        "packets_dropped": int(ports["drop_packets"].sum()),
        # The kernel's counts, under the simulator's summary names (None: not counted).
        **{
            summary: int(flows[column].sum()) if column in flows else None
            for column, summary in (
                ("retransmissions", "retransmissions"),
                ("timeouts", "timeouts"),
                ("out_of_order", "out_of_order_packets"),
            )
        },
        "max_link_utilization": float(ports["utilization"].max(initial=0.0)),
        "slowdown": slowdown_summary(flows["size_bytes"], flows["slowdown"]),
        "up_s": round(up_s, 3),
        "down_s": round(down_s, 3),
    }


def write_run(run: EmulatedRun, out: Path) -> Path:
    """The run folder: summary.json, flows.parquet, ports.parquet and, with a time
    series, timeseries.parquet, assembled beside
    it and renamed into place, so it is complete or absent."""
    if out.exists():
        raise FileExistsError(f"run folder {out} already exists")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        pq.write_table(pa.table(run.flows), partial / "flows.parquet")
        pq.write_table(pa.table(run.ports), partial / "ports.parquet")
        if run.timeseries is not None:
            pq.write_table(pa.table(run.timeseries), partial / "timeseries.parquet")
        (partial / "summary.json").write_text(json.dumps(run.summary, indent=2) + "\n")
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return out
