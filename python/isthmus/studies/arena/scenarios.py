"""How the arena makes one cell's run: a workload's traffic and [run] (`workloads/`) on
one of the arena's fabrics, with one scheme's [network], transport and [control]."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import tomli_w

from isthmus.scenario import Scenario, parse_scenario

if TYPE_CHECKING:
    from isthmus.simulation import Simulation
    from isthmus.studies.arena.schemes import Scheme

WORKLOADS = Path(__file__).parent / "workloads"

FABRICS: dict[str, dict] = {
    # 32 hosts at 10 Gb/s under 4 leaves, each leaf 2 x 20 Gb/s up: 2:1 oversubscribed.
    "leafspine": {
        "kind": "leaf_spine",
        "spines": 2,
        "leaves": 4,
        "hosts_per_leaf": 8,
        "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "20Gbps", "delay": "1us"},
    },
    # 16 hosts, every link 10 Gb/s: full bisection, four core paths between pods.
    "fattree4": {
        "kind": "fat_tree",
        "k": 4,
        "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "10Gbps", "delay": "1us"},
    },
    # 128 hosts, 16 core paths between pods.
    "fattree8": {
        "kind": "fat_tree",
        "k": 8,
        "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "10Gbps", "delay": "1us"},
    },
    # 24 hosts under 6 switches, every pair of switches linked at 10 Gb/s: one shortest
    # path between racks and four two-hop detours, which only a scheme that leaves
    # shortest paths (Diolkos's loop-free ports) can use: a full mesh like the one under
    # Diolkos's testbed (docs/diolkos.md), at the arena's rates.
    "mesh": {
        "kind": "mesh",
        "switches": 6,
        "hosts_per_switch": 4,
        "host_link": {"rate": "10Gbps", "delay": "1us"},
        "fabric_link": {"rate": "10Gbps", "delay": "1us"},
    },
}


def workload_file(name: str) -> dict:
    return tomllib.loads((WORKLOADS / f"{name}.toml").read_text())


def arena_scenario(workload: str, fabric: str, scheme: Scheme, load: float | None) -> dict:
    """The scenario one cell runs: the workload's traffic and [run] on the fabric, with
    the scheme's [network], transport and [control]."""
    raw = workload_file(workload)
    raw["name"] = f"arena-{workload}-{fabric}-{scheme.name.replace('+', '-over-')}"
    raw["topology"] = FABRICS[fabric]
    raw["network"] = dict(scheme.network)
    raw["tcp"] = {**raw.get("tcp", {}), **scheme.tcp}
    raw.pop("control", None)
    if scheme.control is not None:
        raw["control"] = scheme.control
    for traffic in raw["traffic"]:
        traffic["transport"] = scheme.transport
        if load is not None and "load" in traffic:
            traffic["load"] = load
    return raw


def build(
    workload: str, fabric: str, scheme: Scheme, load: float | None, seed: int, **traffic
) -> tuple[Scenario, Simulation]:
    """The cell's scenario, checked as a scenario file would be (a refusal names the key
    and the fix: `ScenarioError`, `ValueError`), and its simulation at `seed`, built but
    not run; `traffic` overrides keys of every traffic stream (a shorter `stop`)."""
    raw = arena_scenario(workload, fabric, scheme, load)
    for stream in raw["traffic"]:
        stream.update(traffic)
    spec = parse_scenario(tomli_w.dumps(raw), f"{scheme.name} on {workload} / {fabric}")
    return spec, spec.build(seed=seed, base=WORKLOADS)
