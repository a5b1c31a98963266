"""Series recorded from an Isthmus simulation, for scoring forecasters on the kind of
data the learning-augmented controllers will see: the bundled `forecast-recorder`
scenario (web-search flows with a 2x surge in the middle third, sampled every 250 us).

- `<switch>-throughput`: bit/s out of each egress port of one switch per sample
  (timesteps x ports; Diolkos predicts each port from all ports of its switch);
- `busiest-queue`: the queue (packets) of the port whose queue is longest on average
  (IBCN predicts a switch's queue from its past).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from isthmus.scenario import load_scenario
from isthmus.simulation import Simulation
from isthmus.units import PS_PER_SECOND

RECORDER = "forecast-recorder"


@dataclass(frozen=True)
class Recording:
    throughput_bps: np.ndarray  # (samples - 1) x ports
    queue_packets: np.ndarray  # (samples - 1) x ports
    port_node: list[str]
    port_peer: list[str]
    rate_bps: np.ndarray


def record(seed: int = 1) -> Recording:
    """Runs the recorder scenario with `seed` and returns its per-port series."""
    path = Path(str(resources.files("isthmus") / "scenarios" / f"{RECORDER}.toml"))
    spec = load_scenario(path)
    sim = spec.build(seed=seed)
    spec.execute(sim)
    return recording_of(sim)


def recording_of(sim: Simulation) -> Recording:
    """Per-port series of a simulation that was sampled (sample_interval)."""
    samples = sim.samples()
    if samples is None:
        raise ValueError("recording series needs a sampled simulation (sample_interval)")
    seconds = np.diff(samples["time_ps"]) / PS_PER_SECOND
    sent = np.diff(samples["tx_bytes"].astype(np.float64), axis=0)
    ports = sim.ports()
    names = sim.topology.nodes()["name"]
    return Recording(
        throughput_bps=sent * 8 / seconds[:, None],
        queue_packets=samples["queue_packets"][1:].astype(np.float64),
        port_node=[names[n] for n in ports["node"]],
        port_peer=[names[n] for n in ports["peer_node"]],
        rate_bps=ports["rate_bps"].astype(np.float64),
    )


def switch_throughput(recording: Recording, switch: str) -> np.ndarray:
    """Timesteps x ports: the throughput of every egress port of `switch`."""
    columns = [i for i, node in enumerate(recording.port_node) if node == switch]
    if not columns:
        raise ValueError(f"no switch named {switch!r} in the recording")
    return recording.throughput_bps[:, columns]


def busiest_queue(recording: Recording) -> np.ndarray:
    """The queue series of the port with the longest mean queue."""
    return recording.queue_packets[:, int(np.argmax(recording.queue_packets.mean(axis=0)))]
