"""Workload inputs: bundled flow-size distributions and flow lists, and reading them.

A flow-size distribution is named by a bundled file's stem (`fb_hadoop__hpcc`), by a
short name (`websearch`, `datamining`, `hadoop`) or by a path. A flow list is a CSV
with columns flow_id, src_host, dst_host, size_bytes, start_ps (the reference
benchmark's format); bundled lists are found by file name.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from isthmus import _core
from isthmus.inputs import (
    bundled_file,
    excerpt,
    may_quote,
    named_file,
    read_text,
    shortened,
    shown_path,
)

PACKET_PAYLOAD_BYTES = 1460
"""Bytes per packet in the distributions given in packets (the pFabric/Homa convention)."""

SHORT_NAMES = {
    "websearch": "websearch_dctcp__hpcc",
    "datamining": "vl2_datamining__trafficgenerator",
    "hadoop": "fb_hadoop__hpcc",
}

FLOW_LIST_COLUMNS = ("src_host", "dst_host", "size_bytes", "start_ps")


def _data(folder: str) -> Path:
    return Path(str(resources.files("isthmus") / "data" / folder))


def bundled_cdfs() -> list[str]:
    return sorted(p.stem for p in _data("flow_cdfs").glob("*.txt"))


@dataclass(frozen=True)
class SizeDistribution:
    name: str
    text: str
    unit_bytes: float

    @property
    def mean_bytes(self) -> float:
        return _core.cdf_mean(self.text, self.unit_bytes)


def size_distribution(name: str, base: Path = Path(".")) -> SizeDistribution:
    """Resolves and validates a distribution; a bad one is a ValueError naming it."""
    path = bundled_file(_data("flow_cdfs"), SHORT_NAMES.get(name, name), ".txt") or named_file(
        name, base, "flow-size distribution", [*SHORT_NAMES, *bundled_cdfs()]
    )
    unit = PACKET_PAYLOAD_BYTES if "PACKETS" in path.stem else 1.0
    text = read_text(path, "flow-size distribution")
    try:
        mean = _core.cdf_mean(text, unit)
    except ValueError as e:
        raise ValueError(
            f"flow-size distribution {shown_path(path)}: {_cdf_problem(e, path)}"
        ) from None
    if not mean >= 1.0:
        raise ValueError(
            f"flow-size distribution {shown_path(path)}: its mean flow size is {mean:g} B; flows "
            "need at least one byte"
        )
    return SizeDistribution(name=name, text=text, unit_bytes=unit)


# The engine's parser quotes a line it cannot read in full.
_CDF_LINE = re.compile(r"(line \d+): expected 'size probability', got '(.*)'", re.DOTALL)


def _cdf_problem(error: ValueError, path: Path) -> str:
    """The engine's complaint about a distribution, its quotation of the file cut short,
    or left out where the file's content may not be shown (`inputs.may_quote`)."""
    message = str(error)
    line = _CDF_LINE.fullmatch(message)
    if line is None:
        return message
    quoted = f", got {excerpt(line.group(2))}" if may_quote(path) else ""
    return f"{line.group(1)}: expected 'size probability'{quoted}"


def bundled_flow_lists() -> list[str]:
    return sorted(p.name for p in _data("bench").glob("*.csv"))


def resolve_flow_list(name: str, base: Path = Path(".")) -> Path:
    """A flow list beside the scenario, else a bundled one of that (bare) name."""
    beside = os.path.exists(base / name)
    return (None if beside else bundled_file(_data("bench"), name)) or named_file(
        name, base, "flow list", bundled_flow_lists()
    )


def read_flow_list(path: Path, num_hosts: int) -> dict[str, np.ndarray]:
    """The columns src, dst, size, start of a flow-list CSV, checked against the hosts."""
    where = f"flow list {shown_path(path)}"
    try:
        table = pacsv.read_csv(path)
    except UnicodeDecodeError as e:
        raise ValueError(f"{where} is not UTF-8 text (byte {e.start}); save it as UTF-8") from None
    except (pa.ArrowInvalid, OSError) as e:
        raise ValueError(f"{where}: {_csv_problem(e, path)}") from None
    twice = sorted({c for c in table.column_names if table.column_names.count(c) > 1})
    if twice:
        named = ", ".join(excerpt(c) for c in twice[:3]) + (" ..." if len(twice) > 3 else "")
        raise ValueError(f"{where}: column(s) {named} appear more than once; keep one of each")
    missing = [c for c in FLOW_LIST_COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(
            f"{where}': missing column(s) {', '.join(missing)}; "
            f"expected {', '.join(FLOW_LIST_COLUMNS)}"
        )
    cols = {c: _whole_numbers(table.column(c), c, where) for c in FLOW_LIST_COLUMNS}
    for c, values in cols.items():
        bad = np.flatnonzero(values < 0)
        if bad.size:
            raise ValueError(f"{where}': row {bad[0] + 1}: {c} is negative")
    for c in ("src_host", "dst_host"):
        bad = np.flatnonzero(cols[c] >= num_hosts)
        if bad.size:
            raise ValueError(
                f"{where}': row {bad[0] + 1}: {c} {cols[c][bad[0]]} does not exist; "
                f"the topology has {num_hosts} hosts"
            )
    same = np.flatnonzero(cols["src_host"] == cols["dst_host"])
    if same.size:
        raise ValueError(f"{where}': row {same[0] + 1}: src_host equals dst_host")
    return {
        "src": cols["src_host"].astype(np.uint32),
        "dst": cols["dst_host"].astype(np.uint32),
        "size": cols["size_bytes"].astype(np.uint64),
        "start": cols["start_ps"].astype(np.uint64),
    }


# pyarrow's parse error ends with the row it could not read, in full.
_CSV_ROW = re.compile(r"(CSV parse error: Expected \d+ columns, got \d+): (.*)", re.DOTALL)


def _csv_problem(error: Exception, path: Path) -> str:
    """pyarrow's complaint about a CSV, the row it quotes cut short, or left out where
    the file's content may not be shown (`inputs.may_quote`)."""
    message = str(error)
    row = _CSV_ROW.fullmatch(message)
    if row is not None:
        return row.group(1) + (f": {excerpt(row.group(2))}" if may_quote(path) else "")
    if may_quote(path):
        return shortened(message)
    # Any other message may quote a cell; its first clause says what kind of problem.
    return shortened(message.split(":")[0], 100) + "; is it a CSV file?"


_NUMPY_TYPES = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float16(): np.float16,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def _as_numpy(column: pa.ChunkedArray) -> np.ndarray:
    """A numeric column without nulls as one NumPy array, read from its Arrow buffers:
    pyarrow's own conversion imports pandas, which took 50 MB of a benchmark process."""
    dtype = np.dtype(_NUMPY_TYPES[column.type])
    parts = [
        np.frombuffer(chunk.buffers()[1], dtype=dtype)[chunk.offset : chunk.offset + len(chunk)]
        for chunk in column.chunks
    ]
    return np.concatenate(parts) if parts else np.empty(0, dtype)


def _whole_numbers(column: pa.ChunkedArray, name: str, where: str) -> np.ndarray:
    """A flow-list column as int64: every cell present and a whole number in range."""
    if column.null_count:
        row = next(i for i, v in enumerate(column.to_pylist()) if v is None)
        raise ValueError(f"{where}': row {row + 1}: {name} is empty")
    if pa.types.is_integer(column.type):
        values = _as_numpy(column)
        if pa.types.is_unsigned_integer(column.type) and np.any(values > 2**63 - 1):
            row = int(np.flatnonzero(values > 2**63 - 1)[0])
            raise ValueError(f"{where}': row {row + 1}: {name} is too large")
        return values.astype(np.int64)
    if pa.types.is_floating(column.type):
        values = _as_numpy(column)
        bad = np.flatnonzero(~np.isfinite(values) | (values != np.floor(values)))
        if bad.size:
            raise ValueError(
                f"{where}': row {bad[0] + 1}: {name} {float(values[bad[0]]):g} is not a "
                "whole number"
            )
        if np.any(np.abs(values) >= 2**63):
            row = int(np.flatnonzero(np.abs(values) >= 2**63)[0])
            raise ValueError(f"{where}': row {row + 1}: {name} is too large")
        return values.astype(np.int64)
    raise ValueError(f"{where}': column {name} holds {column.type} values; it needs whole numbers")
