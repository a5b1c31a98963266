"""Reproductions of published studies, one module each, found by discovery.

A study module exposes:

- `NAME`: what `isthmus reproduce NAME` calls it;
- `TITLE`: one line saying what it reproduces;
- `DEPARTURES`: every way its setup differs from the paper's (`Departure`), also in its
  docs (`departures_markdown`) and its `--json`;
- `FULL`, `QUICK`: its settings (JSON values), in full and reduced (`--quick`: under
  two minutes on one core);
- `jobs(settings, seeds) -> list[isthmus.experiments.Job]`: its independent units of
  work, each returning JSON-serialisable results; `isthmus.experiments.run_study` runs
  them (in parallel, resumably) and collects them as `isthmus.experiments.Results`;
- `table(results: Results) -> StudyTable`: the table and claims the study argues from;
- optionally `figures(results: Results, folder) -> list[Path]`: its plots, drawn into
  `folder` (`isthmus reproduce NAME --figures DIR`).

Adding a study is adding a module here; nothing else names it.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from types import ModuleType

from isthmus.experiments.tables import (  # noqa: F401 (the studies' vocabulary)
    ASPECTS,
    Claim,
    Departure,
    Progress,
    StudyTable,
    departures_markdown,
)
from isthmus.registry import Registry

REQUIRED = ("NAME", "TITLE", "DEPARTURES", "FULL", "QUICK", "jobs", "table")


def available() -> Registry[ModuleType]:
    """Every study module in this package, by its NAME (each passes `check_study`'s
    first test: it exposes the interface)."""
    found: Registry[ModuleType] = Registry("study")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        missing = [a for a in REQUIRED if not hasattr(module, a)]
        if missing:
            raise RuntimeError(
                f"study module {module.__name__} lacks {', '.join(missing)}; every study "
                f"module exposes {', '.join(REQUIRED)}"
            )
        found.register(module.NAME, module)
    return found


def study(name: str) -> ModuleType:
    return available().lookup(name)


def check_study(module: ModuleType) -> None:
    """Raises naming what a study module gets wrong: the interface above, departures
    that are `Departure`s, settings that are JSON, and quick jobs with unique names.
    A new study passes this before `isthmus reproduce` runs it."""
    missing = [a for a in REQUIRED if not hasattr(module, a)]
    if missing:
        raise ValueError(f"{module.__name__} lacks {', '.join(missing)}")
    if not (isinstance(module.NAME, str) and module.NAME and isinstance(module.TITLE, str)):
        raise ValueError(f"{module.__name__}: NAME and TITLE must be non-empty strings")
    departures = module.DEPARTURES
    if not isinstance(departures, tuple) or not departures:
        raise ValueError(f"{module.NAME}: DEPARTURES must be a non-empty tuple of Departure")
    for i, departure in enumerate(departures):
        if not isinstance(departure, Departure):
            raise ValueError(f"{module.NAME}: DEPARTURES[{i}] is not a Departure")
    for which in ("FULL", "QUICK"):
        try:
            json.dumps(getattr(module, which))
        except (TypeError, ValueError) as e:
            raise ValueError(f"{module.NAME}: {which} must be JSON values ({e})") from None
    jobs = module.jobs(module.QUICK, [1])
    if not jobs:
        raise ValueError(f"{module.NAME}: jobs(QUICK, [1]) made no job")
    names = [job.name for job in jobs]
    if len(set(names)) != len(names):
        raise ValueError(f"{module.NAME}: two jobs share a name; each must be unique")
    for name in ("jobs", "table"):
        if not callable(getattr(module, name)):
            raise ValueError(f"{module.NAME}: {name} must be a function")
