"""Reading run folders back (`isthmus report`, `compare`, `query`).

A run folder may have been copied, unpacked or edited since `isthmus run` wrote it, so
nothing in it is taken on trust: only regular files are read (a `summary.json` that
links to /dev/zero is refused, not read until memory runs out), each within a size cap,
and a summary or table that lacks what a reader needs, or holds it with another type,
is one ValueError naming the file and what is wrong.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from isthmus.inputs import excerpt, read_text, shortened, shown_path, user_file

SUMMARY = "summary.json"
# A run's summary is a few kilobytes: this is far beyond any, and still small enough to
# parse in one piece.
MAX_SUMMARY_BYTES = 16 * 2**20
# Reports read a run's tables whole into memory.
MAX_TABLE_BYTES = 4 * 2**30


def is_run_folder(folder: Path) -> bool:
    """Whether `folder` holds a summary.json (reading it checks what it is)."""
    return os.path.lexists(Path(folder) / SUMMARY)


def run_folders(root: Path) -> list[Path]:
    """`root` itself if it is a run folder, else the run folders directly inside it."""
    root = Path(root)
    try:
        if not root.is_dir():
            raise ValueError(
                f"runs folder {shown_path(root)} does not exist; pass --runs with a folder of runs"
            )
        if is_run_folder(root):
            return [root]
        folders = sorted(p for p in root.iterdir() if is_run_folder(p))
    except OSError as e:
        raise ValueError(f"runs folder {shown_path(root)} cannot be read: {e.strerror}") from None
    if not folders:
        raise ValueError(f"{shown_path(root)} holds no run folders (folders with a summary.json)")
    return folders


def own_file(folder: Path, name: str, what: str, limit: int) -> Path:
    """The regular file `name` of run folder `folder`, at most `limit` bytes. A link out
    of the folder is refused: a run folder holds its own files, and one handed over by
    someone else must not make `query` or `report` show another file."""
    path = user_file(name, Path(folder), what, limit=limit)
    if not path.resolve().is_relative_to(Path(folder).resolve()):
        raise ValueError(
            f"{what} {shown_path(path)} is a link to a file outside its run folder; a run "
            "folder holds its own files"
        )
    return path


def summary_path(folder: Path) -> Path:
    """The run's summary.json, if it is a regular file of a summary's size."""
    return own_file(folder, SUMMARY, "run summary", MAX_SUMMARY_BYTES)


def read_summary(folder: Path) -> dict:
    """The run's summary.json: a JSON object, or one error saying what it is instead."""
    path = summary_path(folder)
    where = f"run summary {shown_path(path)}"
    try:
        summary = json.loads(read_text(path, "run summary"))
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{where} is not JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
            "`isthmus run` writes it"
        ) from None
    except RecursionError:
        raise ValueError(f"{where} nests too deeply to be a run's summary") from None
    if not isinstance(summary, dict):
        raise ValueError(f"{where} holds {json_kind(summary)}, not an object of figures")
    return summary


def json_kind(value: object) -> str:
    """What a JSON value is, for an error message: 'an array', 'a string' ..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return f"a string ({excerpt(value)})"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if value is None:
        return "null"
    return f"the number {shortened(str(value), 40)}"


def number(value: object, key: str, where: str) -> float | None:
    """A summary figure as a float; None when absent (null). Anything else, or a number
    too large for a float, is an error naming the figure and the file."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where}: {key} is {json_kind(value)}, not a number")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{where}: {key} is a number too large to be a figure") from None


def flatten(summary: dict, prefix: str = "") -> dict:
    """Nested figures as one level, names joined with underscores (`slowdown_all_p99`)."""
    flat = {}
    # A stack of open objects, not recursion: a summary nests as deep as its file says.
    stack = [(prefix, iter(summary.items()))]
    while stack:
        head, items = stack[-1]
        for key, value in items:
            name = f"{head}{key}".replace(".", "_")
            if isinstance(value, dict):
                stack.append((f"{name}_", iter(value.items())))
                break
            flat[name] = value
        else:
            stack.pop()
    return flat


@dataclass(frozen=True)
class ColumnKind:
    """What a reader needs a column to hold: `name` for messages, `accepts` its type."""

    name: str
    accepts: Callable[[pa.DataType], bool]


WHOLE_NUMBERS = ColumnKind("whole numbers", pa.types.is_integer)
NUMBERS = ColumnKind("numbers", lambda t: pa.types.is_integer(t) or pa.types.is_floating(t))
TEXT = ColumnKind("text", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t))
TRUTH_VALUES = ColumnKind("true/false values", pa.types.is_boolean)


def table_path(folder: Path, table: str) -> Path:
    """The run's `table`.parquet, if it is a regular file within the size cap."""
    return own_file(folder, f"{table}.parquet", "run table", MAX_TABLE_BYTES)


def table_schema(path: Path) -> pa.Schema:
    """The columns a Parquet file declares; a file that is not Parquet is one error."""
    try:
        return pq.read_schema(path)
    except (pa.ArrowException, OSError) as e:
        raise ValueError(
            f"run table {shown_path(path)} is not a readable Parquet file ({shortened(str(e))})"
        ) from None


def read_table(folder: Path, table: str, columns: Mapping[str, ColumnKind]) -> pa.Table:
    """`columns` of the run's `table`.parquet, each present once, of its kind, and
    without empty cells."""
    path = table_path(folder, table)
    where = f"run table {shown_path(path)}"
    schema = table_schema(path)
    for name, kind in columns.items():
        found = schema.get_all_field_indices(name)
        if len(found) != 1:
            problem = "has no column" if not found else "has more than one column"
            raise ValueError(f"{where} {problem} {name}; `isthmus run` writes one")
        declared = schema.field(found[0]).type
        if not kind.accepts(declared):
            raise ValueError(
                f"{where}: column {name} holds {shortened(str(declared), 60)} values; "
                f"it should hold {kind.name}"
            )
    try:
        data = pq.read_table(path, columns=list(columns))
    except (pa.ArrowException, OSError) as e:
        raise ValueError(f"{where} cannot be read ({shortened(str(e))})") from None
    for name in columns:
        empty = data.column(name).null_count
        if empty:
            raise ValueError(f"{where}: column {name} has {empty} empty cell(s)")
    return data
