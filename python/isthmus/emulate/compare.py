"""A scenario in the simulator and in emulation, side by side: aggregate goodput, FCT by
size class (the benchmark's buckets), drops, the TCP flows' retransmissions and timeouts,
Jain's fairness of the flows' throughputs, the UDP streams' delivered rate and loss, and,
with a time series (`telemetry.sample_interval`), the bottleneck queue.
The simulated run uses the Linux host profile (docs/hosts.md), the closest the simulator
comes to the emulation's kernel TCP; both run the scenario as written."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from isthmus.compare import mean_interval, welch_interval
from isthmus.emulate.run import EmulatedRun
from isthmus.metrics import BUCKETS, bucket_of, nearest_rank
from isthmus.network_metrics import jain_index, switch_ports
from isthmus.scenario import Hosts, Scenario, ScenarioError
from isthmus.simulation import Simulation
from isthmus.units import PS_PER_SECOND


def simulated_twin(spec: Scenario, seed: int | None, base: Path) -> Simulation:
    """The scenario's simulation with Linux hosts, run as its [run] says (files it
    names relative to `base`)."""
    twin = spec.model_copy(update={"hosts": Hosts(profile="linux")})
    sim = twin.build(seed=seed, base=base)
    twin.execute(sim)
    return sim


def figures(
    flows: dict[str, np.ndarray], drop_packets: int, lost_packets: int | None
) -> dict[str, float | None]:
    """The compared figures of one run's flow table: of its TCP flows, goodput from the
    first start to the last finish, Jain's fairness of their throughputs and FCT by
    size bucket; of its UDP streams (they end at a time, not with a last byte), what
    they delivered per second of sending and the fraction lost; at every port, the
    packets its queue refused and those it lost (the same in the simulator; see
    `run._port_table` for the emulation's, None where it was not measured)."""
    stream = flows["datagram"].astype(bool)
    done = (flows["finish_ps"] >= 0) & ~stream
    fct_ms = (flows["finish_ps"] - flows["start_ps"])[done] / 1e9
    sizes = flows["size_bytes"][done]
    out: dict[str, float | None] = {"flows_finished": float(done.sum())}
    if done.any():
        span_s = (flows["finish_ps"][done].max() - flows["start_ps"][done].min()) / PS_PER_SECOND
        out["goodput_mbps"] = float(sizes.sum() * 8 / span_s / 1e6)
        out["fairness"] = jain_index(sizes * 8 / (fct_ms / 1e3))
    buckets = bucket_of(sizes)
    for index, name in enumerate(BUCKETS):
        chosen = np.sort(fct_ms if index == 0 else fct_ms[buckets == index])
        if len(chosen):
            out[f"fct_mean_ms.{name}"] = float(chosen.mean())
            out[f"fct_p99_ms.{name}"] = nearest_rank(chosen, 0.99)
    if stream.any():
        sent = flows["bytes_sent"][stream].astype(np.float64)
        received = flows["bytes_received"][stream].astype(np.float64)
        ends = np.maximum(flows["last_delivery_ps"][stream], flows["start_ps"][stream])
        span_s = (ends.max() - flows["start_ps"][stream].min()) / PS_PER_SECOND
        out["stream_goodput_mbps"] = float(received.sum() * 8 / span_s / 1e6) if span_s else None
        out["stream_loss"] = float(1 - received.sum() / sent.sum()) if sent.sum() else None
    out["drop_packets"] = float(drop_packets)
    if lost_packets is not None:
        out["lost_packets"] = float(lost_packets)
    for column in ("retransmissions", "timeouts"):
        if column in flows:  # an emulated run without the kernel's count leaves it out
            out[column] = float(flows[column][~stream].sum())
    return out


def queue_figures(queue_packets: np.ndarray, at_switch: np.ndarray) -> dict[str, float]:
    """Of a time series of every port's queue (samples x ports), the switch port whose
    queue was longest on average (the bottleneck's): its mean and its p99 over the
    samples, in packets. Both sides sample at the scenario's `sample_interval`."""
    if not len(queue_packets) or not at_switch.any():
        return {}
    at_switches = queue_packets[:, at_switch].astype(np.float64)
    busiest = at_switches[:, int(np.argmax(at_switches.mean(axis=0)))]
    return {
        "bottleneck_queue_mean_packets": float(busiest.mean()),
        "bottleneck_queue_p99_packets": nearest_rank(np.sort(busiest), 0.99),
    }


def side_by_side(
    spec: Scenario, emulated: list[EmulatedRun], seeds: list[int], base: Path
) -> dict[str, dict]:
    """figure -> {"simulated", "emulated": means over the seeds, "ratio": emulated /
    simulated, "simulated_half", "emulated_half": half-widths of their 95 % t intervals
    (0 with one seed), "difference": Welch's 95 % interval of emulated - simulated
    (None with fewer than two seeds), and each seed's values}. `emulated[i]` ran at
    `seeds[i]`; the simulator runs each seed too."""
    for run in emulated:
        if run.summary["rate_scale"] != 1 or run.summary["delays_left_out_below_ps"]:
            raise ScenarioError(
                "--compare runs the scenario as written in both: write its links at the "
                "emulated rates and delays rather than --scale or --ignore-delay-below"
            )
    simulated = []
    for seed in seeds:
        sim = simulated_twin(spec, seed, base)
        drops = int(sim.ports()["drop_packets"].sum())
        simulated.append(figures(sim.flows(), drops, drops))
        samples = sim.samples()
        if samples is not None:
            simulated[-1].update(queue_figures(samples["queue_packets"], switch_ports(sim)))
    real = []
    for run in emulated:
        real.append(
            figures(run.flows, int(run.ports["drop_packets"].sum()), run.summary["packets_lost"])
        )
        if run.timeseries is not None:
            ports = len(run.ports["node"])
            queue = run.timeseries["queue_packets"].reshape(-1, ports)
            switch = np.array([role != "host" for role in run.ports["role"]])
            real[-1].update(queue_figures(queue, switch))
    table = {}
    for key in dict.fromkeys([k for row in simulated + real for k in row]):
        a = np.array([row[key] for row in simulated if row.get(key) is not None], dtype=float)
        b = np.array([row[key] for row in real if row.get(key) is not None], dtype=float)
        if not len(a) or not len(b):
            continue
        (mean_a, half_a), (mean_b, half_b) = mean_interval(a), mean_interval(b)
        table[key] = {
            "simulated": mean_a,
            "emulated": mean_b,
            "ratio": mean_b / mean_a if mean_a else None,
            "simulated_half": half_a,
            "emulated_half": half_b,
            "difference": welch_interval(a, b),
            "simulated_values": a.tolist(),
            "emulated_values": b.tolist(),
        }
    return table
