"""SQL over run folders, through DuckDB.

Every table a run folder holds becomes one view over all runs, with a `run` column
(the folder's name) in front: `flows`, `ports`, `timeseries`, `rounds`. The view `runs`
has one row per run from its summary.json, nested figures flattened with underscores
(`slowdown_all_p99`, a sweep's `sweep_traffic_0_load`).

    isthmus query "SELECT run, avg(fct_ps) / 1e6 AS mean_fct_us FROM flows GROUP BY run"
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds

from isthmus.inputs import shortened
from isthmus.run_files import flatten, read_summary, run_folders, table_path, table_schema

RUN_TABLES = ("flows", "ports", "timeseries", "rounds")
# Lines of DuckDB's message shown: it quotes the query, which may be very long.
MOST_ERROR_LINES = 6
FILES_REFUSED = (
    "; a query reads the run folders' views and nothing else (no files, no databases, no "
    "extensions); `isthmus query --csv FILE` writes a result"
)


def _table_dataset(table: str, folders: list[Path]) -> ds.Dataset | None:
    """`table` of every run that has one, as one Arrow dataset with the run's folder name
    in front (as column `run`); read when a query scans it, not before."""
    paths = [table_path(f, table) for f in folders if os.path.lexists(f / f"{table}.parquet")]
    if not paths:
        return None
    schemas = [table_schema(p) for p in paths]
    try:
        columns = pa.unify_schemas(schemas)
    except (pa.ArrowException, ValueError) as e:
        raise ValueError(
            f"the runs' {table}.parquet files disagree on their columns ({shortened(str(e))})"
        ) from None
    run = pa.field("run", pa.string())
    return ds.dataset(
        [str(p) for p in paths],
        schema=pa.schema([run, *(c for c in columns if c.name != "run")]),
        format="parquet",
        # Each file lies in its run's folder: the folder's name is the run column.
        partitioning=ds.DirectoryPartitioning(pa.schema([run]), segment_encoding="none"),
        partition_base_dir=str(folders[0].parent),
    )


def _summary_rows(folders: list[Path]) -> pa.Table:
    rows = []
    for folder in folders:
        figures = flatten(read_summary(folder))
        figures.pop("run", None)  # the folder's name is the run
        rows.append({"run": folder.name, **figures})
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowException, OverflowError) as e:
        raise ValueError(
            f"the runs' summary.json files cannot form one table ({shortened(str(e))})"
        ) from None


def connect(root: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the views over every run under `root`, and
    no other file within reach: a query cannot read, write or attach anything else."""
    # Absolute, so that `--runs .` or `..` still names each run by its folder.
    folders = [Path(os.path.abspath(f)) for f in run_folders(root)]
    datasets = {table: _table_dataset(table, folders) for table in RUN_TABLES}
    summaries = _summary_rows(folders)
    con = duckdb.connect(config={"enable_external_access": False})
    for table, dataset in datasets.items():
        if dataset is not None:
            # Arrow reads the files for DuckDB: DuckDB itself may open none.
            con.register(table, dataset)
    con.register("summaries", summaries)
    # A table of its own, so no helper name shows in errors or DuckDB's suggestions.
    con.execute("CREATE TABLE runs AS SELECT * FROM summaries")
    con.unregister("summaries")
    # Nothing a query runs may turn the file access back on.
    con.execute("SET lock_configuration = true")
    return con


def query(sql: str, root: Path) -> pa.Table:
    """The result of `sql` over the runs under `root`; a bad query is a ValueError with
    DuckDB's message and the views that exist."""
    if not sql.strip():
        raise ValueError(
            "the query is empty; give SQL over the views " + ", ".join([*RUN_TABLES, "runs"])
        )
    con = connect(root)
    try:
        relation = con.sql(sql)
        # A statement without a result (SET, CREATE ...) gives no relation: no rows.
        return pa.table({}) if relation is None else relation.to_arrow_table()
    except (duckdb.Error, pa.ArrowException) as e:
        hint = FILES_REFUSED if isinstance(e, duckdb.PermissionException) else ""
        raise ValueError(f"{_message(e)}{hint} (views here: {', '.join(_views(con))})") from None


def _views(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE NOT internal "
        "UNION SELECT table_name FROM duckdb_tables() WHERE NOT internal"
    ).fetchall()
    return sorted(r[0] for r in rows)


def _message(error: Exception) -> str:
    """DuckDB's message as one line: its lines joined, each cut short, without the caret
    under the query (it points nowhere on one line) or the "Did you mean" (it may name
    DuckDB's catalog tables, pg_indexes ...)."""
    lines = [
        shortened(line.strip())
        for line in str(error).splitlines()
        if line.strip() and not line.startswith("Did you mean") and set(line.strip()) != {"^"}
    ]
    return "; ".join(lines[:MOST_ERROR_LINES])
