"""Isthmus beside htsim on the reference benchmark, alternating runs on one machine.

    cargo build --release -p isthmus-core --example leafspine_websearch
    python benches/versus_htsim.py --htsim /tmp/htsim-bench/bench_dctcp_ws \\
        --flows ../shared/bench --rounds 3 small medium xl1024

htsim's driver and how to build it are in the benchmark's shared `htsim/` folder. For
every round and size this runs the pure-Rust engine (its run loop timed) and then htsim's
driver (its `run_s`) on the same flow list, and prints per size the median run time of
each, their ratio, nanoseconds per packet-hop and each process's peak resident memory.
Both count packet-hops the same way (link traversals), so cost per packet-hop compares
across simulators where events do not (htsim counts two events per hop).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

# spines, leaves and hosts per leaf of each size
SHAPES = {
    "small": (2, 4, 8),
    "medium": (4, 8, 16),
    "large": (8, 16, 16),
    "xl512": (8, 32, 16),
    "xl1024": (8, 64, 16),
}
ENGINE = Path(__file__).resolve().parent.parent / "target/release/examples/leafspine_websearch"


@dataclass
class Run:
    run_s: float
    packet_hops: int
    peak_mb: float


def parse_isthmus(text: str) -> tuple[float, int]:
    """(run seconds, packet-hops) from the pure-Rust example's summary line."""
    m = re.search(r"packet-hops (\d+); wall ([0-9.]+) s", text)
    if m is None:
        raise ValueError(f"no 'packet-hops N; wall S s' in the engine's output: {text!r}")
    return float(m.group(2)), int(m.group(1))


def parse_htsim(text: str) -> tuple[float, int]:
    """(run seconds, packet-hops) from htsim's driver's RESULT line."""
    line = next((x for x in text.splitlines() if x.startswith("RESULT")), None)
    if line is None:
        raise ValueError(f"no RESULT line in htsim's output: {text[-500:]!r}")
    fields = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
    return float(fields["run_s"]), int(fields["packet_hops"])


def htsim_command(htsim: Path, flows: Path, shape: tuple[int, int, int]) -> list[str]:
    """htsim's driver on `flows` over a leaf-spine fabric of `shape`, its flow records
    discarded."""
    spines, leaves, hosts = map(str, shape)
    fabric = ["-S", spines, "-L", leaves, "-H", hosts]
    return [str(htsim), "-flows", str(flows), *fabric, "-o", os.devnull]


def run_measured(command: list[str], parse: Callable[[str], tuple[float, int]]) -> Run:
    """Runs `command` to completion, reading its peak resident memory (VmHWM) as it
    runs: the kernel's rusage of a child counts the peak of the process that forked it
    too, which for a launcher as large as Python hides the small sizes' figures."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    status = Path(f"/proc/{proc.pid}/status")
    peak_kb = 0
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.append(proc.stdout.read()), daemon=True)
    reader.start()
    while proc.poll() is None:
        try:
            hwm = re.search(r"VmHWM:\s+(\d+) kB", status.read_text())
            peak_kb = max(peak_kb, int(hwm.group(1))) if hwm else peak_kb
        except OSError:
            pass  # it exited between the poll and the read
        time.sleep(0.02)
    reader.join()
    out = "".join(output)
    if proc.returncode != 0:
        raise RuntimeError(f"{command[0]} exited with {proc.returncode}: {out[-500:]}")
    run_s, hops = parse(out)
    return Run(run_s, hops, peak_kb / 1024)


def summarise(isthmus: list[Run], htsim: list[Run]) -> dict:
    """Medians over rounds, the ratio htsim ÷ Isthmus and cost per packet-hop."""
    ours = statistics.median(r.run_s for r in isthmus)
    theirs = statistics.median(r.run_s for r in htsim)
    return {
        "rounds": len(isthmus),
        "packet_hops": {"isthmus": isthmus[0].packet_hops, "htsim": htsim[0].packet_hops},
        "run_s": {"isthmus": ours, "htsim": theirs},
        "htsim_over_isthmus": theirs / ours,
        "ns_per_packet_hop": {
            "isthmus": ours * 1e9 / isthmus[0].packet_hops,
            "htsim": theirs * 1e9 / htsim[0].packet_hops,
        },
        "peak_mb": {
            "isthmus": max(r.peak_mb for r in isthmus),
            "htsim": max(r.peak_mb for r in htsim),
        },
        "runs": {"isthmus": [asdict(r) for r in isthmus], "htsim": [asdict(r) for r in htsim]},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", metavar="SIZE", help=f"of {', '.join(SHAPES)}")
    parser.add_argument("--htsim", required=True, type=Path, help="htsim's bench_dctcp_ws")
    parser.add_argument("--flows", required=True, type=Path, help="folder of the flow lists")
    parser.add_argument("--engine", type=Path, default=ENGINE, help="the pure-Rust example")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    args.sizes = args.sizes or ["medium"]
    for size in args.sizes:
        if size not in SHAPES:
            parser.error(f"unknown size '{size}'; choose from {', '.join(SHAPES)}")
    for path, what in ((args.htsim, "--htsim"), (args.engine, "--engine")):
        if not path.is_file():
            parser.error(f"{what} {path} does not exist (see this script's docstring)")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    runs: dict[str, tuple[list[Run], list[Run]]] = {s: ([], []) for s in args.sizes}
    for round_ in range(args.rounds):
        for size in args.sizes:
            flows = args.flows / f"leafspine-websearch-{size}.flows.csv"
            if not flows.is_file():
                parser.error(f"--flows: {flows} does not exist")
            shape = [str(n) for n in SHAPES[size]]
            ours = run_measured([str(args.engine), str(flows), *shape], parse_isthmus)
            theirs = run_measured(htsim_command(args.htsim, flows, SHAPES[size]), parse_htsim)
            runs[size][0].append(ours)
            runs[size][1].append(theirs)
            print(
                f"round {round_ + 1} {size}: Isthmus {ours.run_s:.3f} s, "
                f"htsim {theirs.run_s:.3f} s",
                file=sys.stderr,
            )
    figures = {size: summarise(*runs[size]) for size in args.sizes}
    print(
        "| size | htsim run | Isthmus run | htsim ÷ Isthmus | ns/hop htsim / Isthmus "
        "| peak MB htsim / Isthmus |"
    )
    print("|---|---|---|---|---|---|")
    for size, f in figures.items():
        ns, mb = f["ns_per_packet_hop"], f["peak_mb"]
        print(
            f"| {size} | {f['run_s']['htsim']:.3f} s | {f['run_s']['isthmus']:.3f} s | "
            f"{f['htsim_over_isthmus']:.2f}x | {ns['htsim']:.0f} / {ns['isthmus']:.0f} | "
            f"{mb['htsim']:.1f} / {mb['isthmus']:.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
