"""What the cost of a packet-hop depends on: the packets alive, not the fabric's size.

    cargo build --release -p isthmus-core --example leafspine_websearch
    python benches/hop_cost.py --flows ../shared/bench small medium large xl1024
    python benches/hop_cost.py --flows ../shared/bench --spread --rounds 5 \\
        [--htsim PATH/bench_dctcp_ws]

The first form runs each size in steps of simulated time (the example's `--phases`) and
prints the cost per packet-hop of the steps grouped by how many packets were alive at
their end, hop-weighted. Were the cost a function of the fabric, sizes would differ at
equal live packets; were it one of the live state, a column would agree down the sizes.

`--spread` holds the traffic fixed and grows the fabric: small's and medium's flows run
on their own fabric and on every bigger one up to xl1024's (the same flows, between
hosts spread one per leaf group so every path crosses the bigger fabric's spines),
alternating, and it prints the median cost per packet-hop on each: the ports grow up to
38x while the live state stays that of the small run. With `--htsim` it runs htsim's
driver on the same lists beside it.
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
from versus_htsim import ENGINE, SHAPES, htsim_command, parse_htsim  # noqa: E402

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


def run_output(command: list[str]) -> str:
    """What `command` printed, stdout then stderr; raises if it failed."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} exited with {done.returncode}: {done.stderr[-500:]}")
    return done.stdout + done.stderr


def run_engine(engine: Path, flows: Path, shape: tuple[int, int, int], *extra: str) -> str:
    return run_output([str(engine), str(flows), *map(str, shape), *extra])


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


def fabrics_holding(size: str) -> list[str]:
    """The benchmark's fabrics, from `size`'s own up, onto which its flows can spread."""
    _, leaves, hosts = SHAPES[size]
    return [f for f, (_, lv, hs) in SHAPES.items() if lv >= leaves and hs >= hosts]


def htsim_ns_per_hop(htsim: Path, flows: Path, shape: tuple[int, int, int]) -> float:
    run_s, hops = parse_htsim(run_output(htsim_command(htsim, flows, shape)))
    return run_s * 1e9 / hops


def fixed_traffic(args: argparse.Namespace) -> None:
    """Median ns per packet-hop of small's and medium's flows on each fabric that holds
    them, the rounds alternating over the fabrics."""
    who = "htsim / Isthmus" if args.htsim else "Isthmus"
    print(
        f"\nsame flows, growing fabric: median ns per packet-hop ({who}) over "
        f"{args.rounds} alternating rounds\n"
    )
    print("| flows | " + " | ".join(f"on {f}'s" for f in SHAPES) + " | biggest ÷ own |")
    print("|---|" + "---|" * (len(SHAPES) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        for size in ("small", "medium"):
            own = flow_list(args, size)
            lists = {}
            for fabric in fabrics_holding(size):
                lists[fabric] = Path(tmp) / f"{size}-on-{fabric}.csv"
                lists[fabric].write_text(spread(own.read_text(), SHAPES[size], SHAPES[fabric]))
            ours: dict[str, list[float]] = {f: [] for f in lists}
            theirs: dict[str, list[float]] = {f: [] for f in lists}
            for _ in range(args.rounds):
                for fabric, flows in lists.items():
                    ours[fabric].append(ns_per_hop(run_engine(args.engine, flows, SHAPES[fabric])))
                    if args.htsim:
                        theirs[fabric].append(htsim_ns_per_hop(args.htsim, flows, SHAPES[fabric]))
            ours_m = {f: statistics.median(v) for f, v in ours.items()}
            theirs_m = {f: statistics.median(v) for f, v in theirs.items() if v}
            cells = []
            for fabric in SHAPES:
                if fabric not in ours_m:
                    cells.append("")
                elif args.htsim:
                    cells.append(f"{theirs_m[fabric]:.0f} / {ours_m[fabric]:.0f}")
                else:
                    cells.append(f"{ours_m[fabric]:.1f}")
            growth = ours_m["xl1024"] / ours_m[size]
            if args.htsim:
                ratio = f"{theirs_m['xl1024'] / theirs_m[size]:.2f} / {growth:.2f}"
            else:
                ratio = f"{growth:.2f}"
            print(f"| {size} | " + " | ".join(cells) + f" | {ratio} |")


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
        help="also run small's and medium's flows on every fabric up to xl1024's",
    )
    parser.add_argument("--htsim", type=Path, help="htsim's bench_dctcp_ws, for --spread")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --spread")
    args = parser.parse_args()
    for size in args.sizes:
        if size not in SHAPES:
            parser.error(f"unknown size '{size}'; choose from {', '.join(SHAPES)}")
    if not args.engine.is_file():
        parser.error(f"--engine {args.engine} does not exist (see this script's docstring)")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.htsim and not args.htsim.is_file():
        parser.error(f"--htsim {args.htsim} does not exist (see ../shared/bench/htsim)")
    if args.htsim and not args.spread:
        parser.error("--htsim runs with --spread")
    if not args.sizes and not args.spread:
        parser.error("name sizes, or --spread, or both")
    if args.sizes:
        by_size(args)
    if args.spread:
        fixed_traffic(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
