"""Workload inputs: bundled flow-size distributions and flow lists, and reading them.

A flow-size distribution is named by a bundled file's stem (`fb_hadoop__hpcc`), by a
short name (`websearch`, `datamining`, `hadoop`) or by a path. A flow list is a CSV
with columns flow_id, src_host, dst_host, size_bytes, start_ps (the reference
benchmark's format); bundled lists are found by file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from isthmus import _core

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
    stem = SHORT_NAMES.get(name, name)
    bundled = _data("flow_cdfs") / f"{stem}.txt"
    path = bundled if bundled.exists() else base / name
    if not path.exists():
        raise ValueError(
            f"no flow-size distribution {name!r}: not a bundled one "
            f"({', '.join([*SHORT_NAMES, *bundled_cdfs()])}) nor a file"
        )
    unit = PACKET_PAYLOAD_BYTES if "PACKETS" in path.stem else 1.0
    text = path.read_text()
    try:
        _core.cdf_mean(text, unit)
    except ValueError as e:
        raise ValueError(f"flow-size distribution '{path}': {e}") from None
    return SizeDistribution(name=name, text=text, unit_bytes=unit)


def resolve_flow_list(name: str, base: Path = Path(".")) -> Path:
    for candidate in (base / name, _data("bench") / name):
        if candidate.exists():
            return candidate
    raise ValueError(f"flow list '{name}' is neither a file nor a bundled list")


def read_flow_list(path: Path, num_hosts: int) -> dict[str, np.ndarray]:
    """The columns src, dst, size, start of a flow-list CSV, checked against the hosts."""
    try:
        table = pacsv.read_csv(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise ValueError(f"flow list '{path}': {e}") from None
    missing = [c for c in FLOW_LIST_COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(
            f"flow list '{path}': missing column(s) {', '.join(missing)}; "
            f"expected {', '.join(FLOW_LIST_COLUMNS)}"
        )
    cols = {c: table.column(c).to_numpy().astype(np.int64) for c in FLOW_LIST_COLUMNS}
    for c, values in cols.items():
        bad = np.flatnonzero(values < 0)
        if bad.size:
            raise ValueError(f"flow list '{path}': row {bad[0] + 1}: {c} is negative")
    for c in ("src_host", "dst_host"):
        bad = np.flatnonzero(cols[c] >= num_hosts)
        if bad.size:
            raise ValueError(
                f"flow list '{path}': row {bad[0] + 1}: {c} {cols[c][bad[0]]} does not exist; "
                f"the topology has {num_hosts} hosts"
            )
    same = np.flatnonzero(cols["src_host"] == cols["dst_host"])
    if same.size:
        raise ValueError(f"flow list '{path}': row {same[0] + 1}: src_host equals dst_host")
    return {
        "src": cols["src_host"].astype(np.uint32),
        "dst": cols["dst_host"].astype(np.uint32),
        "size": cols["size_bytes"].astype(np.uint64),
        "start": cols["start_ps"].astype(np.uint64),
    }
