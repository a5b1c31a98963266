"""The leafspine-websearch reference benchmark as a plain script.

    python benches/leafspine_websearch.py medium --json medium.json
    python benches/leafspine_websearch.py xl1024 --threads 2

Same figures as `isthmus bench medium`; see docs/benchmark.md for what they mean and
for measured numbers beside ns-3 on the identical scenario. `--threads N` runs it in N
partitions side by side ("Beyond one core" there).
"""

from __future__ import annotations

import argparse
import json
import sys

from isthmus.bench import SIZES, format_rows, run_benchmark


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", choices=SIZES, nargs="?", default="medium")
    parser.add_argument("--json", help="write the figures to this file as JSON")
    parser.add_argument("--threads", type=int, default=1, help="partitions, a thread each")
    args = parser.parse_args()
    result = run_benchmark(args.size, threads=args.threads)
    width = max(len(name) for name, _ in format_rows(result))
    for name, value in format_rows(result):
        print(f"{name:<{width}}  {value}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
