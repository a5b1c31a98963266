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
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from types import ModuleType

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Claim:
    """A statement the study makes and whether this run supports it (None: no verdict,
    as with fewer than two seeds), with the numbers."""

    statement: str
    holds: bool | None
    evidence: str

    def __post_init__(self) -> None:
        # Comparisons of NumPy figures give NumPy booleans, which JSON does not take.
        if self.holds is not None:
            object.__setattr__(self, "holds", bool(self.holds))

    @property
    def verdict(self) -> str:
        return {True: "holds", False: "does not hold", None: "no verdict"}[self.holds]


ASPECTS = (
    "topology",
    "control scope",
    "packet size",
    "traffic",
    "transport",
    "baseline",
    "decision rule",
    "metric",
    "training data",
    "time scale",
    "run length",
)
"""What a departure from a paper's setup may concern."""


@dataclass(frozen=True)
class Departure:
    """One way a study's setup differs from its paper's: what the paper did, what the
    study does, why, and where the difference could change a verdict, the rows that
    run the paper's setting beside ours (`sensitivity`: their label, or why none is
    run)."""

    aspect: str
    paper: str
    ours: str
    why: str
    sensitivity: str = ""

    def __post_init__(self) -> None:
        if self.aspect not in ASPECTS:
            raise ValueError(
                f"a departure's aspect is one of {', '.join(ASPECTS)}, not {self.aspect!r}"
            )
        empty = [name for name in ("paper", "ours", "why") if not getattr(self, name).strip()]
        if empty:
            raise ValueError(f"a departure says {', '.join(empty)}")


def departures_markdown(departures: tuple[Departure, ...]) -> str:
    """The departures as the Markdown table a study's docs carry (`tests/test_studies.py`
    holds the docs to it)."""
    lines = [
        "| Aspect | Paper | Here | Why | Sensitivity |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d in departures:
        cells = (d.aspect, d.paper, d.ours, d.why, d.sensitivity or "-")
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class StudyTable:
    title: str
    columns: list[str]
    rows: list[list[str]]
    claims: list[Claim] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    departures: list[Departure] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)

    def _repr_html_(self) -> str:
        """The table, claims and notes as HTML, for notebooks."""
        from html import escape

        head = "".join(f"<th>{escape(c)}</th>" for c in self.columns)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(v)}</td>" for v in row) + "</tr>" for row in self.rows
        )
        claims = "".join(
            f"<li><b>{c.verdict}</b>: {escape(c.statement)} ({escape(c.evidence)})</li>"
            for c in self.claims
        )
        notes = "".join(f"<p>{escape(n)}</p>" for n in self.notes)
        return (
            f"<h4>{escape(self.title)}</h4><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table><ul>{claims}</ul>{notes}"
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
