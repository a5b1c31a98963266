"""Round-trip cost of the control seam: an empty controller timer tick, and reading the
port telemetry of a large fabric from Python.

    python benches/control_tick.py

The engine runs until the tick, hands Python the event batch, Python dispatches to the
(empty) handler, and the engine resumes: the figure is wall time per tick.
"""

from __future__ import annotations

import time

from isthmus import Link, Simulation, Topology
from isthmus.control import Controller, ControlPlane


class Ticker(Controller):
    def __init__(self, ticks: int):
        self.ticks = ticks
        self.seen = 0

    def on_start(self) -> None:
        self.every("1us", self.tick)

    def tick(self) -> None:
        self.seen += 1


def tick_round_trip(ticks: int = 100_000) -> float:
    sim = Simulation(Topology.leaf_spine(2, 2, 2))
    plane = ControlPlane(sim)
    app = plane.add(Ticker(ticks))
    started = time.perf_counter()
    plane.run(f"{ticks}us")
    elapsed = time.perf_counter() - started
    assert app.seen == ticks, app.seen
    return elapsed / ticks


def telemetry_read(reads: int = 20) -> tuple[int, float]:
    """Ports of a fabric of 1024 switches with 64 ports each (32 leaves of 32 hosts
    and 32 spines per pod-like block), read as NumPy columns."""
    topo = Topology.leaf_spine(32, 992, 32, Link("10Gbps", "1us"), Link("40Gbps", "1us"))
    sim = Simulation(topo)
    started = time.perf_counter()
    for _ in range(reads):
        ports = sim.ports()
    return len(ports["node"]), (time.perf_counter() - started) / reads


if __name__ == "__main__":
    print(f"empty tick round trip: {tick_round_trip() * 1e6:.2f} us")
    n, seconds = telemetry_read()
    print(f"port telemetry of 1024 switches ({n} ports): {seconds * 1e3:.2f} ms per read")
