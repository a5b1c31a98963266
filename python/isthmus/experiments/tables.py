"""What a study argues from, as data: its claims (`Claim`), its departures from the
paper (`Departure`, `departures_markdown`) and its table (`StudyTable`). The study
modules (`isthmus.studies`) build them; the verdict helpers judge claims."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

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
