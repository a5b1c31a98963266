"""How long the emulation takes to bring a k=4 fat-tree (20 Open vSwitch bridges, 16
host namespaces, 48 links) up and connected to its controller, and to take it down.

    sudo .venv/bin/python benches/emulate_bringup.py [--runs 5]

Each run emulates one 64 KB flow per host (a permutation) with ECMP entries from the
controller app; "up" runs from the start to the traffic's start (daemons, namespaces,
links, qdiscs, bridges, OpenFlow handshake, routing tables, runners listening), "down"
from the traffic's end until nothing is left. Medians over the runs.
"""

from __future__ import annotations

import argparse
import statistics

from isthmus.emulate import emulate
from isthmus.scenario import parse_scenario

FAT_TREE = """
name = "fattree-k4-bringup"
[topology]
kind = "fat_tree"
k = 4
host_link = { rate = "100Mbps", delay = "0s" }
fabric_link = { rate = "100Mbps", delay = "0s" }
[[traffic]]
kind = "flows"
pattern = "permutation"
arrivals = { kind = "batch" }
sizes = { min = "64KB", max = "64KB" }
stop = "1ms"
transport = "cubic"
[control]
miss = "drop"
apps = [{ name = "ecmp" }]
[run]
duration = "30s"
stop_when = "flows_finished"
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    spec = parse_scenario(FAT_TREE)
    ups, downs = [], []
    for i in range(runs):
        run = emulate(spec)
        assert run.all_finished, run.summary
        ups.append(run.up_s)
        downs.append(run.down_s)
        print(f"run {i + 1}: up {run.up_s:.2f} s, down {run.down_s:.2f} s")
    print(
        f"k=4 fat-tree, median of {runs}: up {statistics.median(ups):.2f} s "
        f"(min {min(ups):.2f}, max {max(ups):.2f}), down {statistics.median(downs):.2f} s "
        f"(min {min(downs):.2f}, max {max(downs):.2f})"
    )


if __name__ == "__main__":
    main()
