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

REQUIRED = ("NAME", "TITLE", "DEPARTURES", "FULL", "QUICK", "jobs", "table")


def available() -> dict[str, ModuleType]:
    """Every study module in this package, by its NAME."""
    found: dict[str, ModuleType] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        missing = [a for a in REQUIRED if not hasattr(module, a)]
        if missing:
            raise RuntimeError(
                f"study module {module.__name__} lacks {', '.join(missing)}; every study "
                f"module exposes {', '.join(REQUIRED)}"
            )
        found[module.NAME] = module
    return found


def study(name: str) -> ModuleType:
    studies = available()
    if name not in studies:
        raise ValueError(f"unknown study '{name}'; available: {', '.join(sorted(studies))}")
    return studies[name]
