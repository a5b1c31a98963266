"""Parameter sweeps: one scenario, a grid of field values × seeds, run in parallel.

`--set PATH=VALUES` names a scenario field by its dotted path (`traffic.0.load`,
`network.switch_queue`) or, when only one field has that name, by the name alone
(`load`). VALUES is a range `start:stop:step` (inclusive, decimal-exact), a comma list
(`tcp,dctcp`), or one value. Every point runs once per seed: the scenario's seed and
the ones after it (`--seeds N`), or exactly the seeds `--set seed=1,5,9` lists.

Each point writes an ordinary run folder under the sweep folder, complete or absent,
so a rerun skips the points already done and an interrupted sweep resumes where it
stopped. A point that fails is reported with its error; the others still run.

A sweep plans at most `MAX_POINTS` runs. Its workers end with it, even when it is
killed, and one sweep at a time owns its folder (`SWEEP_LOCK`, released when its owner
ends, however it ends): a rerun never races the points of a sweep still running.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import math
import os
import tomllib as toml
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, DecimalException
from pathlib import Path

import tomli_w

from isthmus.experiments.folder import owning as owning_folder
from isthmus.experiments.jobs import Job, execute
from isthmus.inputs import excerpt, shortened
from isthmus.results import MAX_RUN_NAME_BYTES, summarize, write_run
from isthmus.scenario import ScenarioError, parse_scenario

FieldPath = tuple[str | int, ...]

MAX_POINTS = 10_000
"""The most runs (grid points x seeds) one sweep plans: each is validated before any
runs, and a grid larger than this is a typo far more often than a plan."""

RANGE_LIMIT = Decimal("1e20")
"""Range ends lie within +-RANGE_LIMIT (10^20): beyond every field's values (a seed is below
2^64 < 2e19), and far from the exponents at which Decimal arithmetic overflows."""

SEED_LIMIT = 2**64
SWEEP_LOCK = ".sweep.lock"


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


def _path_part(part: str) -> str | int:
    # A list index is a short run of ASCII digits; anything else (a digit string of
    # thousands of characters, "²") is a key the scenario will not have.
    return int(part) if part.isascii() and part.isdigit() and len(part) <= 18 else part


def _resolve_path(text: str, data: dict) -> FieldPath:
    if "." in text:
        return tuple(_path_part(p) for p in text.split("."))
    matches = [p for p in _leaves(data) if p and p[-1] == text]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ValueError(
            f"--set {excerpt(text)}: the scenario has no field {excerpt(text)}; name it by "
            "its dotted path (e.g. traffic.0.load)"
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
            f"--set {name}: {excerpt(text)} is not a range; a range is start:stop:step "
            "(e.g. 0.1:0.9:0.2, both ends included)"
        )
    if text.count(":") == 2:
        return _range(text, name)
    values = tuple(_number(v.strip()) for v in text.split(",") if v.strip())
    if not values:
        raise ValueError(f"--set {name}: no values given")
    if len(values) > MAX_POINTS:
        raise ValueError(f"--set {name}: {len(values)} values; a sweep runs at most {MAX_POINTS}")
    return values


def _range(text: str, name: str) -> tuple:
    """start:stop:step, both ends included, each value exact in decimal."""
    try:
        start, stop, step = (Decimal(p) for p in text.split(":"))
    except DecimalException:
        raise ValueError(
            f"--set {name}: range {excerpt(text)} must be start:stop:step numbers"
        ) from None
    if not all(v.is_finite() and abs(v) <= RANGE_LIMIT for v in (start, stop, step)):
        raise ValueError(f"--set {name}: range {excerpt(text)} needs numbers from -10^20 to 10^20")
    if step <= 0 or stop < start:
        raise ValueError(f"--set {name}: range {excerpt(text)} needs step > 0 and stop >= start")
    try:
        steps = (stop - start) / step
    except DecimalException:  # a step so small that the count overflows
        steps = Decimal("Infinity")
    if steps >= MAX_POINTS:
        raise ValueError(
            f"--set {name}: range {excerpt(text)} has more than {MAX_POINTS} values; "
            "a sweep runs at most that many: use a larger step"
        )
    values = [start + i * step for i in range(int(steps) + 1)]
    integral = all(v == v.to_integral_value() for v in (start, step))
    return tuple(int(v) if integral else float(v) for v in values)


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
            name = excerpt(".".join(map(str, path)))
            raise ValueError(
                f"--set {name}: the scenario has no {excerpt(str(part))} on that path"
            ) from None
    # The last part names a field of a table, or an item of a list that exists.
    if not (
        isinstance(node, dict)
        or (isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node))
    ):
        name = excerpt(".".join(map(str, path)))
        raise ValueError(f"--set {name}: that path names no field of the scenario")
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
    if not 1 <= seeds <= MAX_POINTS:
        raise ValueError(f"--seeds must be 1 to {MAX_POINTS}, got {excerpt(str(seeds))}")
    data = toml.loads(scenario_text)
    data.setdefault("seed", 1)
    axes = [parse_axis(expr, data) for expr in sets]
    repeated = [name for name, n in Counter(a.name for a in axes).items() if n > 1]
    if repeated:
        raise ValueError(f"--set {excerpt(repeated[0])} is given twice; list its values once")
    seed_axes = [a for a in axes if a.path == ("seed",)]
    axes = [a for a in axes if a.path != ("seed",)]
    if seed_axes:
        if seeds != 1:
            raise ValueError(
                "give the seeds once: --set seed=... lists them, --seeds N counts them from "
                "the scenario's seed; drop one of the two"
            )
        run_seeds = [_seed(v) for a in seed_axes for v in a.values]
    else:
        first_seed = int(data["seed"])
        run_seeds = list(range(first_seed, first_seed + seeds))
    total = math.prod(len(a.values) for a in axes) * len(run_seeds)
    if total > MAX_POINTS:
        raise ValueError(
            f"the sweep would run {total:,} points (grid x seeds); it runs at most "
            f"{MAX_POINTS:,}: narrow a --set or lower --seeds"
        )
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
                described = shortened(", ".join(f"{k}={v}" for k, v in settings), 200)
                raise ValueError(f"sweep point {described}: {e}") from None
            points.append(Point(settings, seed, text, labels))
    _check_folder_names(points)
    return points


def _seed(value: object) -> int:
    if isinstance(value, int) and 0 <= value < SEED_LIMIT:
        return value
    raise ValueError(
        f"--set seed: {excerpt(str(value))} is not a seed; seeds are whole numbers "
        "0 to 2^64-1 (e.g. seed=1,5,9 or seed=1:10:1)"
    )


def _check_folder_names(points: list[Point]) -> None:
    """Each point writes the run folder named after it: two points with one name would
    write one folder, and a name too long for the filesystem none."""
    twice = next((name for name, n in Counter(p.name for p in points).items() if n > 1), None)
    if twice is not None:
        raise ValueError(
            f"--set gives the point {excerpt(twice, 200)} twice (a value listed twice, or two "
            "values that read alike); list each value once"
        )
    long = next((p.name for p in points if len(os.fsencode(p.name)) > MAX_RUN_NAME_BYTES), None)
    if long is not None:
        raise ValueError(
            f"sweep point {excerpt(long, 80)} names a run folder longer than "
            f"{MAX_RUN_NAME_BYTES} bytes; sweep fewer fields at once or use shorter values"
        )


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


@contextlib.contextmanager
def owning(folder: Path) -> Iterator[None]:
    """One sweep at a time owns its folder (see `isthmus.experiments.folder.owning`)."""
    with owning_folder(folder, SWEEP_LOCK, "sweep"):
        yield


def sweep(
    points: list[Point],
    base: Path,
    out: Path,
    *,
    workers: int,
    ray_address: str | None = None,
    on_point: Callable[[str, str], None] = lambda name, status: None,
) -> SweepOutcome:
    """Runs every point not already in `out` on the experiment framework's job runner:
    on `workers` local processes, or on the Ray cluster at `ray_address` ("auto" or
    "local": one on this machine; a real cluster needs `base` and `out` on a filesystem
    every node sees)."""
    out.mkdir(parents=True, exist_ok=True)
    with owning(out):
        outcome = SweepOutcome()
        todo = []
        for p in points:
            if (out / p.name / "summary.json").exists():
                outcome.skipped.append(p.name)
                on_point(p.name, "skipped")
            else:
                todo.append(
                    Job(
                        "sweep",
                        p.name,
                        p.seed,
                        run_point,
                        {"point": p, "base": base, "folder": out / p.name},
                    )
                )
        # Never in this process (workers >= 1): a point that takes its process down
        # takes only its worker.
        for end in execute(todo, workers=max(1, workers), ray_address=ray_address):
            name = end.job.scheme
            if end.error is None:
                outcome.ran.append(name)
                on_point(name, "done")
            else:
                outcome.failed[name] = end.error
                on_point(name, "failed")
        if outcome.failed:
            (out / "failures.json").write_text(json.dumps(outcome.failed, indent=2) + "\n")
        else:
            (out / "failures.json").unlink(missing_ok=True)
    return outcome
