"""Jobs and the runner that runs them: in this process, on local worker processes, or on
a Ray cluster, every way giving the same results.

A job is one independent unit of an experiment (one scheme, one seed, one setting): a
module-level function and its keyword arguments. A job may take the results of others
(`Job.needs`): it starts once they have finished, so a study's stages (a pre-training
whose models its evaluations load) are jobs like any other. A job seeds itself from its
arguments, so which worker runs it, and in what order, does not change its result.

A job that raises, or whose worker process dies, is reported with its error; the
others go on. A job that needs a failed one fails too, without running.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Protocol

from isthmus.results import abandon_partials


@dataclass(frozen=True, eq=False)
class Job:
    """One unit of work: `run(**params, **{keyword: result of job named ...})`.

    `experiment`, `variant` (what else tells it from its siblings: a load, a pattern),
    `scheme` and `seed` name it and are what results are selected by."""

    experiment: str
    scheme: str
    seed: int
    run: Callable[..., Any]
    params: Mapping[str, Any] = field(default_factory=dict)
    variant: str = ""
    needs: Mapping[str, str] = field(default_factory=dict)
    """Keyword of `run` -> name of the job whose result it takes."""

    @property
    def name(self) -> str:
        parts = (self.experiment, self.variant, self.scheme, f"seed {self.seed}")
        return " | ".join(p for p in parts if p)

    def fields(self) -> dict[str, str | int]:
        return {
            "experiment": self.experiment,
            "variant": self.variant,
            "scheme": self.scheme,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Finished:
    """A job's end: its result, or the error that ended it (`error`, one line; `detail`,
    the traceback where there is one)."""

    job: Job
    result: Any = None
    error: str | None = None
    detail: str = ""
    wall_s: float = 0.0


def check_jobs(jobs: list[Job], done: Mapping[str, Any] = {}) -> None:
    """Refuses two jobs of one name, and a job needing one that is neither planned nor
    done: a study's own mistake, named."""
    names: set[str] = set()
    for job in jobs:
        if job.name in names:
            raise ValueError(f"two jobs are named {job.name!r}; a job's fields must tell it apart")
        names.add(job.name)
    for job in jobs:
        for keyword, needed in job.needs.items():
            if needed not in names and needed not in done:
                raise ValueError(
                    f"job {job.name!r} needs {needed!r} (for {keyword}), which is not a job"
                )


def execute(
    jobs: list[Job],
    *,
    workers: int = 0,
    ray_address: str | None = None,
    done: Mapping[str, Any] = {},
    on_start: Callable[[Job], None] = lambda job: None,
    keep: Callable[[Finished], Any] = lambda end: end.result,
) -> Iterator[Finished]:
    """Runs `jobs` and yields each as it ends. `workers` 0 runs them here, one at a time
    (a library caller's choice: a crash takes the caller down); 1 or more on that many
    worker processes; `ray_address` on a Ray cluster instead
    ("auto": a Ray instance on this machine). `done`: results of jobs finished before,
    by name, for the jobs that need them. Jobs start in the order given, each once what
    it needs has finished. `keep` is called on each job that succeeds, before it is
    yielded; what it returns is what the jobs that need it receive (a study passes the
    result as stored, so a job's inputs are the same whether they ran now or before)."""
    check_jobs(jobs, done)
    wanted = {n for job in jobs for n in job.needs.values()}
    results = {name: result for name, result in done.items() if name in wanted}
    failed: set[str] = set()
    waiting = list(jobs)
    if not waiting:
        return
    backend: _Backend
    if ray_address is not None:
        backend = _Ray(ray_address)
    elif workers >= 1:
        backend = _Workers(min(workers, len(waiting)))
    else:
        backend = _HereInTurn()
    running = 0
    try:
        while waiting or running:
            ready = []
            for job in waiting:
                if running + len(ready) >= backend.slots:
                    break
                lost = next((n for n in job.needs.values() if n in failed), None)
                if lost is not None or all(n in results for n in job.needs.values()):
                    ready.append((job, lost))
            for job, lost in ready:
                waiting.remove(job)
                if lost is not None:
                    failed.add(job.name)
                    yield Finished(job, error=f"not run: it needs {lost!r}, which failed")
                    continue
                arguments = {**job.params, **{k: results[n] for k, n in job.needs.items()}}
                on_start(job)
                backend.submit(job, arguments)
                running += 1
            if not running:
                continue  # every job left was refused above
            end = backend.next_finished()
            running -= 1
            if end.error is None:
                kept = keep(end)
                if end.job.name in wanted:
                    results[end.job.name] = kept
            else:
                failed.add(end.job.name)
            yield end
    finally:
        backend.close()


class _Backend(Protocol):
    slots: int

    def submit(self, job: Job, arguments: dict) -> None: ...

    def next_finished(self) -> Finished: ...

    def close(self) -> None: ...


def _call(run: Callable[..., Any], arguments: dict) -> tuple[Any, str | None, str, float]:
    """(result, error, traceback, wall seconds) of one job; a job's exception is its
    error, never the runner's."""
    started = time.perf_counter()
    try:
        result = run(**arguments)
    except Exception as e:
        return None, _one_line(e), traceback.format_exc(), time.perf_counter() - started
    return result, None, "", time.perf_counter() - started


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class _HereInTurn:
    """Runs each job in this process when its end is asked for."""

    slots = 1

    def __init__(self) -> None:
        self.pending: list[tuple[Job, dict]] = []

    def submit(self, job: Job, arguments: dict) -> None:
        self.pending.append((job, arguments))

    def next_finished(self) -> Finished:
        job, arguments = self.pending.pop(0)
        result, error, detail, wall = _call(job.run, arguments)
        return Finished(job, result, error, detail, wall)

    def close(self) -> None:
        self.pending.clear()


class _Workers:
    """Worker processes, each running one job at a time sent over its own pipe: a worker
    that dies is known by the job it held, reported as that job's error and replaced.
    Workers are spawned, not forked: a fork copies locks that the parent's other
    threads (a progress bar's) may hold at that instant, and the copy waits forever."""

    def __init__(self, count: int) -> None:
        self.slots = count
        self.context = multiprocessing.get_context("spawn")
        self.idle: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []
        self.busy: dict[Connection, tuple[multiprocessing.process.BaseProcess, Job]] = {}
        for _ in range(count):
            self._start()

    def _start(self) -> None:
        mine, theirs = self.context.Pipe()
        process = self.context.Process(
            target=_serve, args=(theirs, os.getpid()), daemon=True, name="isthmus-worker"
        )
        process.start()
        theirs.close()
        self.idle.append((process, mine))

    def submit(self, job: Job, arguments: dict) -> None:
        process, pipe = self.idle.pop()
        pipe.send((job.run, arguments))
        self.busy[pipe] = (process, job)

    def next_finished(self) -> Finished:
        sentinels = {process.sentinel: pipe for pipe, (process, _) in self.busy.items()}
        ready = wait([*self.busy, *sentinels])
        pipe = next((r for r in ready if isinstance(r, Connection)), None)
        if pipe is not None:
            with contextlib.suppress(EOFError, OSError):
                result, error, detail, wall = pipe.recv()
                process, job = self.busy.pop(pipe)
                self.idle.append((process, pipe))
                return Finished(job, result, error, detail, wall)
        else:
            pipe = sentinels[ready[0]]
        # The worker ended without answering: killed, or out of memory.
        process, job = self.busy.pop(pipe)
        process.join()
        pipe.close()
        self._start()
        return Finished(job, error=f"its worker process died ({_exit_reason(process.exitcode)})")

    def close(self) -> None:
        for _, pipe in self.idle:
            with contextlib.suppress(OSError):
                pipe.send(None)  # an idle worker's cue to end
        for process, _ in self.busy.values():
            process.kill()  # its job is abandoned: the runner is ending
        for process, pipe in self.idle + [(p, pipe) for pipe, (p, _) in self.busy.items()]:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
            pipe.close()
        self.idle, self.busy = [], {}


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"


def _serve(pipe: Connection, parent: int) -> None:
    """A worker process: runs the jobs its pipe sends until it sends None or closes."""
    die_with_parent(parent)
    while True:
        try:
            message = pipe.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        run, arguments = message
        answer = _call(run, arguments)
        try:
            pipe.send(answer)
        except Exception as e:  # a result that cannot be sent back
            pipe.send((None, f"its result cannot be sent back: {_one_line(e)}", "", answer[3]))


PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """For a worker process: end when the process that started it ends, however it
    ends. A runner killed outright (SIGKILL) cannot stop its workers, and an orphaned
    worker would go on running jobs, racing a rerun. Ctrl-C or SIGTERM ends a worker
    quietly, without the half-written run folder it may hold."""
    signal.signal(signal.SIGINT, _stop_quietly)
    signal.signal(signal.SIGTERM, _stop_quietly)
    # Linux signals the death of the thread that started the worker: workers are started
    # from the runner's own thread, which outlives them.
    if not _parent_death_signal(signal.SIGKILL):
        threading.Thread(target=_end_with, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # the parent ended before the signal above was armed
        os._exit(1)


def _stop_quietly(signum: int, frame: object) -> None:
    abandon_partials()
    os._exit(128 + signum)


def _parent_death_signal(signum: int) -> bool:
    """Asks Linux to send `signum` to this process when its parent ends; False where
    there is no such request (other systems)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _end_with(parent: int) -> None:
    """Where no parent-death signal exists: watch the parent, end when it has gone."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


RAY_HERE = ("auto", "local")
"""`--ray` values that mean a Ray instance on this machine (started if none runs)."""


RAY_CONNECT_S = 5.0
"""How long a Ray head may take to accept a connection before `--ray` is refused: Ray's
own client retries for minutes, printing warnings, where nothing listens."""


def _check_answers(address: str) -> None:
    """Refuses a Ray address (HOST:PORT, optionally ray://) nothing listens at."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(
            f"--ray {address!r} is not HOST:PORT; give the cluster's head (ray start "
            "--head prints it) or 'auto' for one on this machine"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_S).close()
    except OSError as e:
        raise ValueError(
            f"--ray {address}: nothing answers there ({e.strerror or e}); start the cluster "
            "(ray start --head) or give 'auto' for one on this machine"
        ) from None


class _Ray:
    """Jobs as Ray tasks, one CPU each. A real cluster needs every node to have Isthmus
    installed, and the files a job reads or writes on a filesystem every node sees."""

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("--ray needs Ray: pip install 'isthmus[ray]'") from None
        self.ray = ray
        self.started_here = not ray.is_initialized()
        if self.started_here and address not in RAY_HERE:
            _check_answers(address)
        if self.started_here:
            # Ray's start-up notices (a local instance started, token authentication) are
            # Ray's, not the runner's: only its errors reach the user.
            logging.getLogger("ray").setLevel(logging.ERROR)
            ray.init(
                address=None if address in RAY_HERE else address,
                log_to_driver=False,
                logging_level=logging.ERROR,
            )
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.remote = ray.remote(num_cpus=1)(_call)
        self.pending: dict[Any, Job] = {}

    def submit(self, job: Job, arguments: dict) -> None:
        self.pending[self.remote.remote(job.run, arguments)] = job

    def next_finished(self) -> Finished:
        (ref,), _ = self.ray.wait(list(self.pending), num_returns=1)
        job = self.pending.pop(ref)
        try:
            result, error, detail, wall = self.ray.get(ref)
        except Exception as e:  # the task's worker died, or the cluster lost it
            return Finished(job, error=f"its Ray task failed: {_one_line(e)}")
        return Finished(job, result, error, detail, wall)

    def close(self) -> None:
        for ref in self.pending:
            with contextlib.suppress(Exception):
                self.ray.cancel(ref, force=True)
        self.pending.clear()
        if self.started_here:
            self.ray.shutdown()
