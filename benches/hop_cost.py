"""What the cost of a packet-hop depends on: the packets alive, not the fabric's size.

    cargo build --release -p isthmus-core --example leafspine_websearch
    python benches/hop_cost.py --flows ../shared/bench small medium large xl1024
    python benches/hop_cost.py --flows ../shared/bench --spread --rounds 5

The first form runs each size in steps of simulated time (the example's `--phases`) and
prints the cost per packet-hop of the steps grouped by how many packets were alive at
their end, hop-weighted. Were the cost a function of the fabric, sizes would differ at
equal live packets; were it one of the live state, a column would agree down the sizes.

`--spread` runs small's and medium's flows on their own fabric and on xl1024's (the
same flows, between hosts spread one per leaf group so every path crosses the big
fabric's spines), alternating, and prints median cost per packet-hop: the fabric grows
32x and 8x in ports while the live state stays that of the small run.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from versus_htsim import ENGINE, SHAPES  # noqa: E402

# Upper edges of the live-packet groups.
LIVE_EDGES = (1_000, 2_000, 4_000, 8_000, 12_000, 16_000, 20_000, 24_000, 32_000)
# Steps with fewer hops than this are too short to time.
MIN_STEP_HOPS = 20_000


@dataclass(frozen=True)
class Phase:
    until_ms: int
    packet_hops: int
    ns_per_hop: float
    live_packets: int
    open_flows: int


PHASE = re.compile(
    r"phase until_ms (\d+); packet-hops (\d+); ns per packet-hop ([0-9.]+); "
    r"live packets (\d+); open flows (\d+)"
)


def parse_phases(text: str) -> list[Phase]:
    """The example's `--phases` lines, in order."""
    phases = [
        Phase(int(m[1]), int(m[2]), float(m[3]), int(m[4]), int(m[5])) for m in PHASE.finditer(text)
    ]
    if not phases:
        raise ValueError(f"no 'phase ...' lines in the engine's output: {text[-500:]!r}")
    return phases


def by_live_packets(phases: list[Phase], edges: tuple[int, ...] = LIVE_EDGES) -> dict[int, float]:
    """Hop-weighted mean cost per packet-hop of the steps whose live packets fall under
    each edge (and at or above the one before); groups with no timed step are left out."""
    groups: dict[int, float] = {}
    low = 0
    for edge in edges:
        steps = [
            p for p in phases if low <= p.live_packets < edge and p.packet_hops >= MIN_STEP_HOPS
        ]
        hops = sum(p.packet_hops for p in steps)
        if hops:
            groups[edge] = sum(p.ns_per_hop * p.packet_hops for p in steps) / hops
        low = edge
    return groups


def spread(flows_csv: str, shape: tuple[int, int, int], target: tuple[int, int, int]) -> str:
    """`flows_csv` (a flow list of leaf-spine `shape`) with every host moved onto the
    `target` fabric: leaf l to leaf l·(target leaves ÷ leaves), same place under it."""
    _, leaves, hosts = shape
    _, target_leaves, target_hosts = target
    if target_leaves < leaves or target_hosts < hosts:
        raise ValueError(f"the target fabric {target} is smaller than the flows' {shape}")
    stride = target_leaves // leaves

    def move(host: int) -> int:
        leaf, place = divmod(host, hosts)
        return leaf * stride * target_hosts + place

    lines = flows_csv.strip().splitlines()
    header = lines[0].split(",")
    src, dst = header.index("src_host"), header.index("dst_host")
    out = [lines[0]]
    for line in lines[1:]:
        fields = line.split(",")
        fields[src] = str(move(int(fields[src])))
        fields[dst] = str(move(int(fields[dst])))
        out.append(",".join(fields))
    return "\n".join(out) + "\n"


def run_engine(engine: Path, flows: Path, shape: tuple[int, int, int], *extra: str) -> str:
    command = [str(engine), str(flows), *map(str, shape), *extra]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{engine} exited with {done.returncode}: {done.stderr[-500:]}")
    return done.stdout


def ns_per_hop(summary: str) -> float:
    m = re.search(r"([0-9.]+) ns per packet-hop; records", summary)
    if m is None:
        raise ValueError(f"no summary line in the engine's output: {summary[-500:]!r}")
    return float(m[1])


def by_size(args: argparse.Namespace) -> None:
    rows = {}
    for size in args.sizes:
        out = run_engine(args.engine, flow_list(args, size), SHAPES[size], "--phases", "2")
        phases = parse_phases(out)
        rows[size] = (max(p.live_packets for p in phases), by_live_packets(phases))
    print("ns per packet-hop, by packets alive (steps of 2 ms simulated, hop-weighted)\n")
    low = ["0", *(f"{e // 1000}k" for e in LIVE_EDGES[:-1])]
    print(
        "| size | peak live packets | "
        + " | ".join(f"{a}-{e // 1000}k" for a, e in zip(low, LIVE_EDGES, strict=True))
        + " |"
    )
    print("|---|---|" + "---|" * len(LIVE_EDGES))
    for size, (peak, groups) in rows.items():
        cells = [f"{groups[e]:.0f}" if e in groups else "" for e in LIVE_EDGES]
        print(f"| {size} | {peak:,} | " + " | ".join(cells) + " |")


def on_a_bigger_fabric(args: argparse.Namespace) -> None:
    big = SHAPES["xl1024"]
    print(
        "\nsame flows, bigger fabric: median ns per packet-hop over "
        f"{args.rounds} alternating rounds\n"
    )
    print("| flows | on their own fabric | on xl1024's | ports, own / xl1024 |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in ("small", "medium"):
            own = flow_list(args, size)
            moved = Path(tmp) / f"{size}-on-xl1024.csv"
            moved.write_text(spread(own.read_text(), SHAPES[size], big))
            here, there = [], []
            for _ in range(args.rounds):
                here.append(ns_per_hop(run_engine(args.engine, own, SHAPES[size])))
                there.append(ns_per_hop(run_engine(args.engine, moved, big)))
            print(
                f"| {size} | {statistics.median(here):.1f} | "
                f"{statistics.median(there):.1f} | {ports(SHAPES[size]):,} / {ports(big):,} |"
            )


def ports(shape: tuple[int, int, int]) -> int:
    """Egress ports of a leaf-spine fabric: both ends of every host and fabric link."""
    spines, leaves, hosts = shape
    return 2 * leaves * (hosts + spines)


def flow_list(args: argparse.Namespace, size: str) -> Path:
    path = args.flows / f"leafspine-websearch-{size}.flows.csv"
    if not path.is_file():
        raise SystemExit(f"--flows: {path} does not exist")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", metavar="SIZE", help=f"of {', '.join(SHAPES)}")
    parser.add_argument("--flows", required=True, type=Path, help="folder of the flow lists")
    parser.add_argument("--engine", type=Path, default=ENGINE, help="the pure-Rust example")
    parser.add_argument(
        "--spread",
        action="store_true",
        help="also run small's and medium's flows on xl1024's fabric",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --spread")
    args = parser.parse_args()
    for size in args.sizes:
        if size not in SHAPES:
            parser.error(f"unknown size '{size}'; choose from {', '.join(SHAPES)}")
    if not args.engine.is_file():
        parser.error(f"--engine {args.engine} does not exist (see this script's docstring)")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if not args.sizes and not args.spread:
        parser.error("name sizes, or --spread, or both")
    if args.sizes:
        by_size(args)
    if args.spread:
        on_a_bigger_fabric(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
