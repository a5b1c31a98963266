"""Cost of per-flow flow entries on the packet path: the same traffic routed by the
default ECMP routing and by one exact-match entry per flow on every leaf, with 10, 10^3
and 10^4 flows.

    python benches/flow_table.py

Prints, per flow count, the wall time of each run and the slowdown the entries cost.
With a tuple-space table the slowdown stays flat as the entry count grows; a linear
scan grows with it.
"""

from __future__ import annotations

import time

from isthmus import Link, Simulation, Topology

HOSTS_PER_LEAF = 16


def run(flows: int, with_entries: bool) -> float:
    topo = Topology.leaf_spine(4, 4, HOSTS_PER_LEAF, fabric_link=Link("40Gbps", "1us"))
    sim = Simulation(topo, seed=1)
    hosts = 4 * HOSTS_PER_LEAF
    for i in range(flows):
        src = i % hosts
        dst = (src + HOSTS_PER_LEAF) % hosts  # always another leaf
        flow = sim.add_udp_flow(
            src, dst, "100Mbps", size="15KB", start=f"{(i * 7) % 1000}us", arrivals="constant"
        )
        if with_entries:
            uplink = HOSTS_PER_LEAF + flow % 4
            leaf = f"leaf{src // HOSTS_PER_LEAF}"
            sim.add_flow_entry(leaf, 10, flow=flow, src=src, output=uplink)
    started = time.perf_counter()
    sim.run("50ms", stop_when_flows_finish=True)
    return time.perf_counter() - started


def main() -> None:
    print(f"{'flows':>7} {'ECMP s':>8} {'entries s':>10} {'ratio':>6}")
    for flows in (10, 1_000, 10_000):
        plain = min(run(flows, False) for _ in range(3))
        entries = min(run(flows, True) for _ in range(3))
        print(f"{flows:>7} {plain:>8.3f} {entries:>10.3f} {entries / plain:>6.2f}")


if __name__ == "__main__":
    main()
