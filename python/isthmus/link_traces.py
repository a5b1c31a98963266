"""Recorded link-capacity traces (mahimahi format): bundled cellular traces or your own.

A trace is one integer per line, a millisecond timestamp: each is an opportunity for
one packet of up to 1500 bytes to leave the link; the trace repeats with its last
timestamp as the period. The one-line trace "1" is a constant 12 Mbit/s link.
"""

from __future__ import annotations

import gzip
import re
from importlib import resources
from pathlib import Path

import numpy as np

from isthmus.inputs import MAX_INPUT_BYTES, excerpt, read_text, user_file

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
    bundled = _folder() / f"{name}.gz"
    if bundled.exists():
        path = bundled
    elif (base / name).exists():
        path = user_file(name, base, "link trace")
    else:
        raise ValueError(
            f"no link trace {excerpt(name)}: not a bundled one ({', '.join(bundled_traces())}) "
            "nor a file"
        )
    if path.suffix == ".gz":
        with gzip.open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise ValueError(f"link trace '{path}' unpacks to more than {MAX_INPUT_BYTES} bytes")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"link trace '{path}' is not UTF-8 text (byte {e.start})") from None
    else:
        text = read_text(path, "link trace")
    lines = text.split()
    if not lines:
        raise ValueError(f"link trace '{path}' has no delivery opportunities")
    for i, token in enumerate(lines):
        if not _MILLIS.fullmatch(token):
            raise ValueError(
                f"link trace '{path}' line {i + 1}: {excerpt(token)} is not a whole number of "
                f"milliseconds (0 to {MAX_MILLIS})"
            )
    millis = np.array([int(x) for x in lines], dtype=np.uint64)
    if np.any(millis > MAX_MILLIS):
        bad = int(np.flatnonzero(millis > MAX_MILLIS)[0])
        raise ValueError(
            f"link trace '{path}' line {bad + 1}: {int(millis[bad])} ms is beyond {MAX_MILLIS} ms"
        )
    backwards = np.flatnonzero(np.diff(millis.astype(np.int64)) < 0)
    if backwards.size:
        line = int(backwards[0]) + 2
        raise ValueError(
            f"link trace '{path}' line {line}: times must not decrease ({int(millis[line - 2])} "
            f"then {int(millis[line - 1])})"
        )
    return millis
