"""Recorded link-capacity traces (mahimahi format): bundled cellular traces or your own.

A trace is one integer per line, a millisecond timestamp: each is an opportunity for
one packet of up to 1500 bytes to leave the link; the trace repeats with its last
timestamp as the period. The one-line trace "1" is a constant 12 Mbit/s link.
"""

from __future__ import annotations

import gzip
from importlib import resources
from pathlib import Path

import numpy as np


def _folder() -> Path:
    return Path(str(resources.files("isthmus") / "data" / "link_traces"))


def bundled_traces() -> list[str]:
    return sorted(p.name.removesuffix(".gz") for p in _folder().glob("*.gz"))


def load_trace(name: str, base: Path = Path(".")) -> np.ndarray:
    """The opportunity timestamps (ms) of a bundled trace ("Verizon-LTE-short.down") or
    of a file (plain or .gz); a bad file is a ValueError naming the line."""
    bundled = _folder() / f"{name}.gz"
    path = bundled if bundled.exists() else base / name
    if not path.exists():
        raise ValueError(
            f"no link trace {name!r}: not a bundled one ({', '.join(bundled_traces())}) nor a file"
        )
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        lines = f.read().split()
    try:
        millis = np.array([int(x) for x in lines], dtype=np.uint64)
    except ValueError:
        bad = next(i for i, x in enumerate(lines) if not x.isdigit())
        raise ValueError(
            f"link trace '{path}' line {bad + 1}: {lines[bad]!r} is not a whole number of ms"
        ) from None
    return millis
