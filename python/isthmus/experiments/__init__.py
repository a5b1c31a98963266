"""The experiment framework every study and sweep runs on.

A study declares its jobs (`Job`: experiment, scheme, seed, the function that runs one
and its arguments, and the jobs whose results it takes); `run_study` runs them (here,
on local worker processes, or on a Ray cluster: `jobs.execute`), stores each in the
study folder as it finishes (`folder`), and hands the study the collected `Results`,
read back from the stored files: the same table whichever way, in whatever order, and
in however many sittings the jobs ran. `load_study` collects them again without running
anything. `verdicts` holds what every study says from its seeds: cells with intervals
and claims judged on the interval of a difference.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from isthmus.experiments.folder import (
    complete_manifest,
    finished_jobs,
    new_manifest,
    open_folder,
    owning,
    read_manifest,
    store,
    write_failures,
)
from isthmus.experiments.jobs import Finished, Job, check_jobs, execute
from isthmus.inputs import shown_path

__all__ = ["Job", "Results", "StudyFailed", "load_study", "run_study", "study_settings"]

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Results:
    """A study's finished jobs, in the order the study declared them."""

    study: str
    quick: bool
    seeds: list[int]
    settings: dict
    records: list[dict]
    reused: int = 0
    """How many of the records a resumed run took from its folder rather than ran."""

    def select(self, **where: Any) -> list[Any]:
        """The results of the jobs whose fields (experiment, variant, scheme, seed) are
        as given, in declared order."""
        return [r["result"] for r in self.matching(**where)]

    def matching(self, **where: Any) -> list[dict]:
        """The records (fields, result, wall time) of the jobs as given."""
        return [r for r in self.records if all(r[k] == v for k, v in where.items())]

    def values(self, key: str, **where: Any) -> list[Any]:
        """One figure of each matching job's result."""
        return [result[key] for result in self.select(**where)]

    def distinct(self, field: str, **where: Any) -> list[Any]:
        """The values `field` takes among the matching jobs, in declared order."""
        return list(dict.fromkeys(r[field] for r in self.matching(**where)))


class StudyFailed(Exception):
    """Jobs failed: the others are stored, and a resumed run retries only these."""

    def __init__(self, folder: Path, failed: list[Finished]) -> None:
        self.folder, self.failed = folder, failed
        super().__init__(
            f"{len(failed)} job(s) failed (details in {shown_path(folder / 'failures.json')}); "
            f"the rest are stored: fix the cause and add --resume to run only these"
        )


def study_settings(module: ModuleType, quick: bool) -> dict:
    """The study's settings as its folder records them (JSON: tuples become lists), so
    a run and a re-rendering plan their jobs from the same values."""
    return json.loads(json.dumps(module.QUICK if quick else module.FULL))


def _in_flight(running: list[str]) -> str:
    """The jobs running now, for a progress line: the oldest named, the rest counted."""
    if not running:
        return ""
    more = f" (+{len(running) - 1} more)" if len(running) > 1 else ""
    return f"{running[0]}{more}"


def run_study(
    module: ModuleType,
    *,
    quick: bool,
    seeds: list[int],
    folder: Path,
    workers: int = 0,
    ray_address: str | None = None,
    resume: bool = False,
    on_progress: Progress = lambda done, total, label: None,
) -> Results:
    """Runs the study's jobs not already stored in `folder` (with `resume`; otherwise
    all of them, the folder's old job files removed), storing each as it finishes:
    here (`workers` 0), on `workers` processes, or on Ray (see `jobs.execute`).
    Raises `StudyFailed` when any job failed, the others kept."""
    settings = study_settings(module, quick)
    manifest = new_manifest(module.NAME, quick, seeds, settings)
    jobs = module.jobs(settings, seeds)
    check_jobs(jobs)
    folder.mkdir(parents=True, exist_ok=True)
    with owning(folder):
        open_folder(folder, manifest, resume=resume)
        records = finished_jobs(folder, jobs) if resume else {}
        todo = [job for job in jobs if job.name not in records]
        running: list[str] = []
        failed: list[Finished] = []

        def started(job: Job) -> None:
            running.append(job.name)
            on_progress(len(records) + len(failed), len(jobs), _in_flight(running))

        def kept(end: Finished) -> Any:
            records[end.job.name] = store(folder, end)
            return records[end.job.name]["result"]

        on_progress(len(records), len(jobs), "")
        ends = execute(
            todo,
            workers=workers,
            ray_address=ray_address,
            done={name: record["result"] for name, record in records.items()},
            on_start=started,
            keep=kept,
        )
        for end in ends:
            if end.job.name in running:  # a job refused for a failed need never started
                running.remove(end.job.name)
            if end.error is not None:
                failed.append(end)
            on_progress(len(records) + len(failed), len(jobs), _in_flight(running))
        write_failures(folder, failed)
        if failed:
            raise StudyFailed(folder, failed)
        ordered = [records[job.name] for job in jobs]
        complete_manifest(folder, manifest, ordered)
    return Results(module.NAME, quick, seeds, settings, ordered, len(jobs) - len(todo))


def load_study(folder: Path, module: ModuleType) -> Results:
    """The results a finished study run stored in `folder`, without running anything."""
    manifest = read_manifest(folder)
    if manifest["study"] != module.NAME:
        raise ValueError(
            f"{shown_path(folder)} holds a run of {manifest['study']}, not {module.NAME}"
        )
    jobs = module.jobs(manifest["settings"], manifest["seeds"])
    records = finished_jobs(folder, jobs)
    missing = [job.name for job in jobs if job.name not in records]
    if missing:
        raise ValueError(
            f"{shown_path(folder)} lacks {len(missing)} of {len(jobs)} jobs (first: "
            f"{missing[0]}); finish it: isthmus reproduce {module.NAME} --resume --out "
            f"{shown_path(folder)} with the options it was started with"
        )
    return Results(
        module.NAME,
        manifest["quick"],
        manifest["seeds"],
        manifest["settings"],
        [records[job.name] for job in jobs],
    )
