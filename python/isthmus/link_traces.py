"""Recorded link-capacity traces (mahimahi format): bundled cellular traces or your own.

A trace is one integer per line, a millisecond timestamp: each is an opportunity for
one packet of up to 1500 bytes to leave the link; the trace repeats with its last
timestamp as the period. The one-line trace "1" is a constant 12 Mbit/s link.
"""

from __future__ import annotations

import gzip
import re
import zlib
from importlib import resources
from pathlib import Path

import numpy as np

from isthmus.inputs import (
    MAX_INPUT_BYTES,
    bundled_file,
    excerpt,
    may_quote,
    named_file,
    read_text,
    shown_path,
)

# Trace timestamps are milliseconds; a year of trace is plenty.
MAX_MILLIS = 365 * 24 * 3600 * 1000
_MILLIS = re.compile(r"[0-9]{1,12}")


def _folder() -> Path:
    return Path(str(resources.files("isthmus") / "data" / "link_traces"))


def bundled_traces() -> list[str]:
    return sorted(p.name.removesuffix(".gz") for p in _folder().glob("*.gz"))


def load_trace(name: str, base: Path = Path(".")) -> np.ndarray:
    """The opportunity timestamps (ms) of a bundled trace ("Verizon-LTE-short.down") or
    of a file (plain or .gz); a bad file is a ValueError naming the line."""
    path = bundled_file(_folder(), name, ".gz") or named_file(
        name, base, "link trace", bundled_traces()
    )
    where = f"link trace {shown_path(path)}"
    if path.suffix == ".gz":
        try:
            with gzip.open(path, "rb") as f:
                data = f.read(MAX_INPUT_BYTES + 1)
        except (OSError, EOFError, zlib.error):
            # gzip's own messages may quote the file's first bytes: say only what is wrong.
            raise ValueError(
                f"{where} is not a complete gzip file (truncated, damaged, or not gzip at all); "
                "give the trace as plain text or as a whole .gz"
            ) from None
        if len(data) > MAX_INPUT_BYTES:
            raise ValueError(f"{where} unpacks to more than {MAX_INPUT_BYTES} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{where} is not UTF-8 text (byte {e.start})") from None
    else:
        text = read_text(path, "link trace")
    lines = text.split()
    if not lines:
        raise ValueError(f"{where} has no delivery opportunities")
    for i, token in enumerate(lines):
        if not _MILLIS.fullmatch(token):
            entry = excerpt(token) if may_quote(path) else "the entry"
            raise ValueError(
                f"{where} line {i + 1}: {entry} is not a whole number of milliseconds "
                f"(0 to {MAX_MILLIS})"
            )
    millis = np.array([int(x) for x in lines], dtype=np.uint64)
    if np.any(millis > MAX_MILLIS):
        bad = int(np.flatnonzero(millis > MAX_MILLIS)[0])
        raise ValueError(f"{where} line {bad + 1}: {int(millis[bad])} ms is beyond {MAX_MILLIS} ms")
    backwards = np.flatnonzero(np.diff(millis.astype(np.int64)) < 0)
    if backwards.size:
        line = int(backwards[0]) + 2
        raise ValueError(
            f"{where} line {line}: times must not decrease ({int(millis[line - 2])} "
            f"then {int(millis[line - 1])})"
        )
    return millis
