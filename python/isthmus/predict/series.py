"""Series from files: one numeric column of a CSV, and the real traffic traces that
ship with Isthmus (python/isthmus/data/traces/, sources in its README).

A column is named by its header or, when no header matches, by its 0-based number
(the Cortez traces' value column is headed by a whole sentence). The delimiter (comma,
semicolon or tab) is detected from the header line. `order_by` names a column to sort
the rows by, for files written newest first.
"""

from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import numpy as np

# name: (file, value column, column to order rows by or None)
TRACES: dict[str, tuple[str, str | int, str | None]] = {
    "cortez-eu-5min": ("cortez_eu_transatlantic_isp_5min_2005.csv", 1, None),
    "cortez-eu-hourly": ("cortez_eu_transatlantic_isp_hourly_2005.csv", 1, None),
    "jiang-hourly": ("jiang_zabbix_link_traffic_hourly_2019.csv", "value_avg", "clock"),
}


def _traces_folder() -> Path:
    return Path(str(resources.files("isthmus") / "data" / "traces"))


def bundled_traces() -> list[str]:
    return list(TRACES)


def load_trace(name: str) -> np.ndarray:
    """A shipped trace's values, oldest first: "cortez-eu-5min" (bits per 5 min),
    "cortez-eu-hourly" (bits per hour) or "jiang-hourly" (mean bit/s per hour)."""
    if name not in TRACES:
        raise ValueError(f"no bundled trace {name!r}; choose one of {', '.join(TRACES)}")
    file, column, order_by = TRACES[name]
    return load_column(_traces_folder() / file, column, order_by=order_by)


def _column_index(path: Path, header: list[str], column: str | int, field: str) -> int:
    if isinstance(column, str) and column in header:
        return header.index(column)
    number = column if isinstance(column, int) else int(column) if column.isdigit() else None
    if number is not None and 0 <= number < len(header):
        return number
    listed = ", ".join(repr(h) for h in header)
    raise ValueError(
        f"'{path}' has no {field} {column!r}; name one of its columns ({listed}) "
        f"or give its 0-based number (0..{len(header) - 1})"
    )


def load_column(
    path: str | Path, column: str | int, *, order_by: str | int | None = None
) -> np.ndarray:
    """The values of one numeric column of a CSV file with a header line."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"series file '{path}' does not exist; give the path of a CSV file")
    with open(path, newline="", encoding="utf-8-sig") as f:
        first = f.readline()
        f.seek(0)
        delimiter = max(",;\t", key=first.count)
        reader = csv.reader(f, delimiter=delimiter)
        # Blank lines are skipped, not read as missing values; each row keeps its line
        # number for messages.
        lines = [(reader.line_num, row) for row in reader if any(c.strip() for c in row)]
    if len(lines) < 2:
        raise ValueError(f"'{path}' has no data rows; give a CSV with a header and values")
    header = [h.strip() for h in lines[0][1]]
    index = _column_index(path, header, column, "column")
    values = _numbers(path, lines[1:], index, header[index])
    if order_by is not None:
        key_index = _column_index(path, header, order_by, "order_by column")
        keys = [_cell(row, key_index) for _, row in lines[1:]]
        try:
            order = np.argsort(np.array(keys, dtype=np.float64), kind="stable")
        except ValueError:
            order = np.argsort(np.array(keys), kind="stable")  # text such as ISO times
        ordered = [keys[i] for i in order]
        repeated = next((k for a, k in zip(ordered, ordered[1:], strict=False) if a == k), None)
        if repeated is not None:
            raise ValueError(
                f"'{path}' column {header[key_index]!r} repeats {repeated!r}; each row "
                "needs its own time to be ordered by it"
            )
        values = values[order]
    return values


def _cell(row: list[str], index: int) -> str:
    return row[index].strip() if index < len(row) else ""


def _numbers(path: Path, lines: list[tuple[int, list[str]]], index: int, name: str) -> np.ndarray:
    values = np.empty(len(lines))
    for i, (line, row) in enumerate(lines):
        cell = _cell(row, index)
        try:
            values[i] = float(cell)
        except ValueError:
            raise ValueError(
                f"'{path}' line {line}, column {name!r}: {cell!r} is not a number; "
                "choose a numeric column or clean the file"
            ) from None
        if not np.isfinite(values[i]):
            raise ValueError(
                f"'{path}' line {line}, column {name!r}: {cell!r} is not a finite number; "
                "fill or drop missing values"
            )
    return values
