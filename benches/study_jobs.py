"""What running a study's jobs in parallel buys, and what each job costs the runner.

    python benches/study_jobs.py [--pairs 3] [--studies diolkos,ofpt] [--jobs 2]

1. Each study's `isthmus reproduce NAME --quick` with `--jobs 1` and with `--jobs N`
   (default 2), as whole commands, in alternating pairs (so drift in the machine's
   speed falls on both sides alike): the median wall time of each and the median ratio
   N / 1 over the pairs.
2. The runner's own cost per job: `OVERHEAD_JOBS` jobs that do nothing, through
   `run_study` on 2 worker processes (process start, sending, storing each result as a
   file), wall time over the count.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from isthmus.experiments import Job, run_study

CONSOLE = Path(sys.executable).parent / "isthmus"
OVERHEAD_JOBS = 200

# This file doubles as the do-nothing study of part 2.
NAME = "nothing"
FULL = QUICK = {"count": OVERHEAD_JOBS}


def nothing(seed: int) -> dict:
    return {"seed": seed}


def jobs(settings: dict, seeds: list[int]) -> list[Job]:
    return [Job("nothing", "none", i, nothing, {"seed": i}) for i in range(settings["count"])]


def timed_reproduce(study: str, workers: int, folder: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [str(CONSOLE), "reproduce", study, "--quick", "--jobs", str(workers), "--out", str(folder)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def parallel_speedup(study: str, workers: int, pairs: int, scratch: Path) -> dict:
    one, many = [], []
    for _ in range(pairs):
        one.append(timed_reproduce(study, 1, scratch / f"{study}-1"))
        many.append(timed_reproduce(study, workers, scratch / f"{study}-{workers}"))
    return {
        "jobs 1 s": statistics.median(one),
        f"jobs {workers} s": statistics.median(many),
        "ratio": statistics.median(m / o for m, o in zip(many, one, strict=True)),
    }


def per_job_overhead(scratch: Path) -> float:
    started = time.perf_counter()
    run_study(sys.modules[__name__], quick=True, seeds=[1], folder=scratch / "nothing", workers=2)
    return (time.perf_counter() - started) / OVERHEAD_JOBS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--studies", default="diolkos,ofpt")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        print(f"runner overhead: {per_job_overhead(Path(scratch)) * 1e3:.1f} ms a job")
        for study in args.studies.split(","):
            figures = parallel_speedup(study, args.jobs, args.pairs, Path(scratch))
            shown = ", ".join(f"{k} {v:.2f}" for k, v in figures.items())
            print(f"{study} --quick: {shown} (median of {args.pairs} alternating pairs)")


if __name__ == "__main__":
    main()
