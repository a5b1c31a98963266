"""Parameter sweeps: one scenario, a grid of field values × seeds, run in parallel.

`--set PATH=VALUES` names a scenario field by its dotted path (`traffic.0.load`,
`network.switch_queue`) or, when only one field has that name, by the name alone
(`load`). VALUES is a range `start:stop:step` (inclusive, decimal-exact), a comma list
(`tcp,dctcp`), or one value. Every point runs once per seed: the scenario's seed and
the ones after it (`--seeds N`), or exactly the seeds `--set seed=1,5,9` lists.

Each point writes an ordinary run folder under the sweep folder, complete or absent,
so a rerun skips the points already done and an interrupted sweep resumes where it
stopped. A point that fails is reported with its error; the others still run.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import tomllib as toml
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

import tomli_w

from isthmus.results import summarize, write_run
from isthmus.scenario import ScenarioError, parse_scenario

FieldPath = tuple[str | int, ...]


@dataclass(frozen=True)
class Axis:
    path: FieldPath
    values: tuple

    @property
    def name(self) -> str:
        return ".".join(str(p) for p in self.path)


def _leaves(data: object, prefix: FieldPath = ()) -> Iterator[FieldPath]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*prefix, key))
    elif isinstance(data, list) and any(isinstance(v, dict) for v in data):
        for i, value in enumerate(data):
            yield from _leaves(value, (*prefix, i))
    else:
        yield prefix


def _resolve_path(text: str, data: dict) -> FieldPath:
    if "." in text:
        return tuple(int(p) if p.isdigit() else p for p in text.split("."))
    matches = [p for p in _leaves(data) if p and p[-1] == text]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ValueError(
            f"--set {text}: the scenario has no field '{text}'; name it by its dotted path "
            "(e.g. traffic.0.load)"
        )
    paths = ", ".join(".".join(map(str, m)) for m in matches)
    raise ValueError(f"--set {text}: several fields are named '{text}' ({paths}); pick one")


def _number(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _values(text: str, name: str) -> tuple:
    if ":" in text and text.count(":") != 2:
        raise ValueError(
            f"--set {name}: '{text}' is not a range; a range is start:stop:step "
            "(e.g. 0.1:0.9:0.2, both ends included)"
        )
    if text.count(":") == 2:
        try:
            start, stop, step = (Decimal(p) for p in text.split(":"))
        except InvalidOperation:
            raise ValueError(
                f"--set {name}: range '{text}' must be start:stop:step numbers"
            ) from None
        if step <= 0 or stop < start:
            raise ValueError(f"--set {name}: range '{text}' needs step > 0 and stop >= start")
        count = int((stop - start) / step) + 1
        values = [start + i * step for i in range(count)]
        integral = all(v == v.to_integral_value() for v in (start, step))
        return tuple(int(v) if integral else float(v) for v in values)
    values = tuple(_number(v.strip()) for v in text.split(",") if v.strip())
    if not values:
        raise ValueError(f"--set {name}: no values given")
    return values


def parse_axis(expr: str, data: dict) -> Axis:
    """`PATH=VALUES` against the scenario's data (see the module's doc)."""
    if "=" not in expr:
        raise ValueError(f"--set '{expr}' must look like PATH=VALUES, e.g. load=0.1:0.9:0.1")
    path_text, values_text = expr.split("=", 1)
    path = _resolve_path(path_text.strip(), data)
    return Axis(path, _values(values_text.strip(), path_text.strip()))


def _assign(data: dict, path: FieldPath, value: object) -> None:
    node: object = data
    for part in path[:-1]:
        try:
            node = node[part]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            name = ".".join(map(str, path))
            raise ValueError(f"--set {name}: the scenario has no '{part}' on that path") from None
    node[path[-1]] = value  # type: ignore[index]


@dataclass(frozen=True)
class Point:
    settings: tuple[tuple[str, object], ...]
    seed: int
    text: str
    labels: tuple[str, ...] = ()
    """What the folder name calls each setting (short_names of the axes)."""

    @property
    def name(self) -> str:
        labels = self.labels or tuple(k for k, _ in self.settings)
        parts = [f"{k}={v}" for k, (_, v) in zip(labels, self.settings, strict=True)]
        return ",".join([*parts, f"seed{self.seed}"]).replace("/", "_")


def short_names(paths: list[str]) -> list[str]:
    """Each dotted field path cut to its fewest trailing parts that no other path ends
    with (traffic.0.load -> load), so run folders stay short and readable."""
    short = []
    for path in paths:
        parts = path.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if not any(o != path and (o == tail or o.endswith("." + tail)) for o in paths):
                break
        short.append(tail)
    return short


def plan(scenario_text: str, sets: list[str], seeds: int) -> list[Point]:
    """Every (grid point, seed), each validated as a scenario before anything runs."""
    if seeds < 1:
        raise ValueError(f"--seeds must be at least 1, got {seeds}")
    data = toml.loads(scenario_text)
    data.setdefault("seed", 1)
    axes = [parse_axis(expr, data) for expr in sets]
    seed_axes = [a for a in axes if a.path == ("seed",)]
    axes = [a for a in axes if a.path != ("seed",)]
    if seed_axes:
        if seeds != 1:
            raise ValueError(
                "give the seeds once: --set seed=... lists them, --seeds N counts them from "
                "the scenario's seed; drop one of the two"
            )
        run_seeds = [int(v) for a in seed_axes for v in a.values]
    else:
        first_seed = int(data["seed"])
        run_seeds = list(range(first_seed, first_seed + seeds))
    points = []
    labels = tuple(short_names([a.name for a in axes]))
    for combo in itertools.product(*(a.values for a in axes)):
        point_data = copy.deepcopy(data)
        for axis, value in zip(axes, combo, strict=True):
            _assign(point_data, axis.path, value)
        settings = tuple((a.name, v) for a, v in zip(axes, combo, strict=True))
        for seed in run_seeds:
            point_data["seed"] = seed
            text = tomli_w.dumps(point_data)
            try:
                parse_scenario(text)
            except ScenarioError as e:
                described = ", ".join(f"{k}={v}" for k, v in settings)
                raise ValueError(f"sweep point {described}: {e}") from None
            points.append(Point(settings, seed, text, labels))
    return points


def run_point(point: Point, base: Path, folder: Path) -> dict:
    """Runs one point into `folder`; returns its summary."""
    spec = parse_scenario(point.text)
    sim = spec.build(base=base)
    wall = spec.execute(sim)
    summary = summarize(sim, scenario=spec.name, wall_s=wall)
    summary["sweep"] = dict(point.settings)
    write_run(sim, folder, scenario_text=point.text, summary=summary)
    return summary


@dataclass
class SweepOutcome:
    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def sweep(
    points: list[Point],
    base: Path,
    out: Path,
    *,
    workers: int,
    ray_address: str | None = None,
    on_point: Callable[[str, str], None] = lambda name, status: None,
) -> SweepOutcome:
    """Runs every point not already in `out`: on `workers` local processes, or on the
    Ray cluster at `ray_address` ("local" starts one on this machine; a real cluster
    needs `base` and `out` on a filesystem every node sees)."""
    out.mkdir(parents=True, exist_ok=True)
    outcome = SweepOutcome()
    todo = []
    for p in points:
        if (out / p.name / "summary.json").exists():
            outcome.skipped.append(p.name)
            on_point(p.name, "skipped")
        else:
            todo.append(p)

    def finished(name: str, error: BaseException | None) -> None:
        if error is None:
            outcome.ran.append(name)
            on_point(name, "done")
        else:
            outcome.failed[name] = f"{type(error).__name__}: {error}"
            on_point(name, "failed")

    if ray_address is None:
        _run_local(todo, base, out, workers, finished)
    else:
        _run_on_ray(todo, base, out, ray_address, finished)
    if outcome.failed:
        (out / "failures.json").write_text(json.dumps(outcome.failed, indent=2) + "\n")
    else:
        (out / "failures.json").unlink(missing_ok=True)
    return outcome


Finished = Callable[[str, BaseException | None], None]


def _run_local(todo: list[Point], base: Path, out: Path, workers: int, finished: Finished) -> None:
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {pool.submit(run_point, p, base, out / p.name): p for p in todo}
        for future in as_completed(futures):
            # One failed point must not lose the others.
            finished(futures[future].name, future.exception())


def _run_on_ray(todo: list[Point], base: Path, out: Path, address: str, finished: Finished) -> None:
    try:
        import ray
    except ImportError:
        raise ValueError("--ray needs Ray: pip install 'isthmus[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        # Ray's start-up notices (a local instance started, token authentication) are
        # Ray's, not the sweep's: only its errors reach the user.
        logging.getLogger("ray").setLevel(logging.ERROR)
        ray.init(
            address=None if address == "local" else address,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
    try:
        remote = ray.remote(run_point)
        pending = {remote.remote(p, base, out / p.name): p for p in todo}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            point = pending.pop(done[0])
            try:
                ray.get(done[0])
            except Exception as e:
                finished(point.name, getattr(e, "cause", None) or e)
            else:
                finished(point.name, None)
    finally:
        if started_here:
            ray.shutdown()
