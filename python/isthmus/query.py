"""SQL over run folders, through DuckDB.

Every table a run folder holds becomes one view over all runs, with a `run` column
(the folder's name) in front: `flows`, `ports`, `timeseries`, `rounds`. The view `runs`
has one row per run from its summary.json, nested figures flattened with underscores
(`slowdown_all_p99`, a sweep's `sweep_traffic_0_load`).

    isthmus query "SELECT run, avg(fct_ps) / 1e6 AS mean_fct_us FROM flows GROUP BY run"
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa

RUN_TABLES = ("flows", "ports", "timeseries", "rounds")


def run_folders(root: Path) -> list[Path]:
    """`root` itself if it is a run folder, else the run folders directly inside it."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"runs folder '{root}' does not exist; pass --runs with a folder of runs")
    if (root / "summary.json").exists():
        return [root]
    folders = sorted(p for p in root.iterdir() if (p / "summary.json").exists())
    if not folders:
        raise ValueError(f"'{root}' holds no run folders (folders with a summary.json)")
    return folders


def flatten(summary: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in summary.items():
        name = f"{prefix}{key}".replace(".", "_")
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}_"))
        else:
            flat[name] = value
    return flat


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(root: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the views over every run under `root`."""
    folders = run_folders(root)
    con = duckdb.connect()
    for table in RUN_TABLES:
        parts = [
            f"SELECT {_sql_string(f.name)} AS run, * FROM read_parquet({_sql_string(str(p))})"
            for f in folders
            if (p := f / f"{table}.parquet").exists()
        ]
        if parts:
            con.execute(f"CREATE VIEW {table} AS " + " UNION ALL BY NAME ".join(parts))
    rows = [
        {"run": f.name, **flatten(json.loads((f / "summary.json").read_text()))} for f in folders
    ]
    con.register("summaries", pa.Table.from_pylist(rows))
    # A table of its own, so no helper name shows in errors or DuckDB's suggestions.
    con.execute("CREATE TABLE runs AS SELECT * FROM summaries")
    con.unregister("summaries")
    return con


def query(sql: str, root: Path) -> pa.Table:
    """The result of `sql` over the runs under `root`; a bad query is a ValueError with
    DuckDB's message and the views that exist."""
    con = connect(root)
    try:
        relation = con.sql(sql)
    except duckdb.Error as e:
        names = [
            r[0]
            for r in con.execute(
                "SELECT view_name FROM duckdb_views() WHERE NOT internal "
                "UNION SELECT table_name FROM duckdb_tables() WHERE NOT internal"
            ).fetchall()
        ]
        # DuckDB's own "Did you mean" may name its catalog tables (pg_indexes ...).
        message = "\n".join(
            line for line in str(e).splitlines() if not line.startswith("Did you mean")
        )
        raise ValueError(f"{message}\n(views here: {', '.join(sorted(names))})") from None
    return relation.to_arrow_table()
