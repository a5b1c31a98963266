"""A study folder: one file per finished job, and what produced them.

    DIR/study.json        the study, its settings and seeds, and the provenance: Isthmus
                          version and commit, Python, machine, each job's wall time
    DIR/jobs/NAME.json    one finished job: its fields, result, wall time, commit
    DIR/failures.json     the jobs that failed in the last run, with their errors

A job's file is written whole or not at all (a temporary file renamed into place), so a
run ended any way (Ctrl-C, SIGKILL, a crash) leaves only finished jobs. A resumed run
takes every job whose file is there and was made from the same arguments, and runs the
rest. One run at a time owns a folder (`owning`).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import functools
import hashlib
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from isthmus.experiments.jobs import Finished, Job
from isthmus.inputs import shown_path
from isthmus.results import isthmus_version

MANIFEST = "study.json"
JOBS = "jobs"
FAILURES = "failures.json"
LOCK = ".lock"
FORMAT = 1
"""The study folder's layout version, in its manifest."""


@contextlib.contextmanager
def owning(folder: Path, lock_name: str = LOCK, what: str = "study") -> Iterator[None]:
    """Holds the folder's lock for as long as the block runs, or refuses with the pid of
    the run that holds it. The lock is the kernel's (flock): it ends with its holder
    however that ends (SIGKILL included), so a dead run's lock is taken over, never
    stale. The file is kept: removing it would let a run lock a file another has just
    replaced."""
    lock = folder / lock_name
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise ValueError(
                f"{what} folder {shown_path(folder)} is in use by a {what} still running "
                f"(pid {owner}); wait for it to end or stop it, or give another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


@functools.cache
def source_commit() -> str | None:
    """The git commit Isthmus runs from ('+dirty' with uncommitted changes), or None
    where it is not a git checkout (an installed wheel)."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def provenance() -> dict[str, Any]:
    return {
        "isthmus": isthmus_version(),
        "commit": source_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": socket.gethostname(),
    }


def _plain(value: Any) -> Any:
    """NumPy values as the JSON they stand for."""
    if isinstance(value, np.generic | np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def arguments_digest(job: Job) -> str:
    """What a job was run from: a result is reused only for the same arguments."""
    try:
        text = json.dumps(dict(job.params), sort_keys=True, default=_plain)
    except TypeError as e:
        raise ValueError(f"job {job.name!r} has arguments that are not JSON: {e}") from None
    needs = json.dumps(dict(job.needs), sort_keys=True)
    return hashlib.sha256(
        f"{job.run.__module__}.{job.run.__qualname__}\0{text}\0{needs}".encode()
    ).hexdigest()[:16]


def job_file(folder: Path, job: Job) -> Path:
    """The job's file: its name made safe, and a digest of the name so two names that
    read the same once made safe stay apart."""
    safe = re.sub(r"[^A-Za-z0-9.=+-]+", "_", job.name).strip("_")[:150]
    digest = hashlib.sha256(job.name.encode()).hexdigest()[:8]
    return folder / JOBS / f"{safe}-{digest}.json"


def write_json(path: Path, document: Any, indent: int | None = 1) -> str:
    """Writes `path` whole or not at all; returns the text written."""
    text = json.dumps(document, indent=indent, default=_plain) + "\n"
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return text


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{shown_path(path)} cannot be read: {e}") from None


def read_manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.is_file():
        raise ValueError(
            f"{shown_path(folder)} is not a study folder (no {MANIFEST}); give the folder "
            "a study run wrote (--out)"
        )
    manifest = _read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{shown_path(path)} is not a study manifest this Isthmus writes")
    return manifest


def open_folder(folder: Path, manifest: dict, *, resume: bool) -> None:
    """Makes `folder` ready for a run of `manifest`'s study: resuming it (the same study
    and settings) or starting over (its job files removed). A folder that is not a
    study folder and not empty is refused, never emptied."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = folder / JOBS
    if (folder / MANIFEST).exists():
        before = read_manifest(folder)
        if resume:
            for key in ("study", "quick", "settings"):
                if before.get(key) != manifest[key]:
                    raise ValueError(
                        f"{shown_path(folder)} holds a run of {before.get('study')} with "
                        f"other {key} ({json.dumps(before.get(key))[:80]}); resume it with "
                        "the same study and options, or give another --out"
                    )
        elif jobs.is_dir():
            for stale in jobs.glob("*.json"):
                stale.unlink()
    elif any(p.name != LOCK for p in folder.iterdir()):
        raise ValueError(
            f"{shown_path(folder)} is not empty and is not a study folder; give an empty or "
            "new folder (--out)"
        )
    jobs.mkdir(exist_ok=True)
    for temporary in jobs.glob(".*.tmp"):  # left by a run killed while writing
        temporary.unlink()
    write_json(folder / MANIFEST, manifest)


def finished_jobs(folder: Path, jobs: list[Job]) -> dict[str, dict]:
    """The stored record of every job in `jobs` already finished, from the same
    arguments, by name."""
    found = {}
    for job in jobs:
        path = job_file(folder, job)
        if not path.is_file():
            continue
        record = _read_json(path)
        if isinstance(record, dict) and record.get("arguments") == arguments_digest(job):
            found[job.name] = record
    return found


def store(folder: Path, end: Finished) -> dict:
    """Writes a finished job's file; returns its record as read back (JSON: the same
    whether the job ran now or before)."""
    record = {
        **end.job.fields(),
        "name": end.job.name,
        "arguments": arguments_digest(end.job),
        "wall_s": end.wall_s,
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": source_commit(),
        "result": end.result,
    }
    text = write_json(job_file(folder, end.job), record, indent=None)  # one line
    return json.loads(text)


def write_failures(folder: Path, failed: list[Finished]) -> None:
    path = folder / FAILURES
    if not failed:
        path.unlink(missing_ok=True)
        return
    write_json(
        path, {end.job.name: {"error": end.error, "traceback": end.detail} for end in failed}
    )


def new_manifest(study: str, quick: bool, seeds: list[int], settings: dict) -> dict:
    return {
        "format": FORMAT,
        "study": study,
        "quick": quick,
        "seeds": seeds,
        "settings": json.loads(json.dumps(settings, default=_plain)),
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        **provenance(),
    }


def complete_manifest(folder: Path, manifest: dict, records: list[dict]) -> None:
    """The manifest with each job's file, wall time and commit: what made the table."""
    manifest = {
        **manifest,
        "ended": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "jobs": [
            {
                "name": r["name"],
                "wall_s": r["wall_s"],
                "commit": r["commit"],
                "finished": r["finished"],
            }
            for r in records
        ],
        "job_wall_s": sum(r["wall_s"] for r in records),
    }
    write_json(folder / MANIFEST, manifest)
