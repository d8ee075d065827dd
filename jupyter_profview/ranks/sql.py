"""SQL over all ranks with DuckDB (imported only when a query runs; one trace: `..query`).

``TraceSet.sql(query)``: views of the same names over every rank's Parquet
files (``read_parquet`` of the list, ``union_by_name``), each with a
``rank`` column and the time columns rebased to the set's common clock; a
view exists where every loaded rank has the table.  DuckDB streams the
files, so a query over all ranks never holds all ranks in RAM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ..query import TRACE_TABLES, duckdb

if TYPE_CHECKING:
    from .traceset import TraceSet


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(ts: TraceSet) -> Any:
    """A DuckDB connection with one view per table over all ranks' Parquet files."""
    import pyarrow.parquet as pq

    from .cache import time_columns

    con = duckdb().connect()
    tables = {t: ts.table_files(t) for t in TRACE_TABLES}
    tables = {t: paths for t, paths in tables.items() if paths and len(paths) == len(ts)}
    rows = [{"tbl": t, "file": str(p), "rank": r, "off": ts.offsets[r]}
            for t, paths in tables.items() for r, p in paths.items()]
    con.register("_files_df", pd.DataFrame(rows, columns=["tbl", "file", "rank", "off"]))
    con.execute("CREATE TABLE _files AS SELECT tbl, file, CAST(rank AS BIGINT) AS rank, "
                "CAST(off AS BIGINT) AS off FROM _files_df")
    con.unregister("_files_df")
    for table, paths in tables.items():
        names: set[str] = set()
        for path in paths.values():
            names.update(pq.read_schema(path).names)
        times = time_columns(sorted(names))
        listing = "[" + ", ".join(_quote(str(p)) for p in paths.values()) + "]"
        replace = ", ".join(f"t.{_ident(c)} + f.off AS {_ident(c)}" for c in times)
        star = "t.* EXCLUDE (filename)" + (f" REPLACE ({replace})" if replace else "")
        con.execute(
            f"CREATE VIEW {table} AS SELECT {star}, f.rank AS rank "
            f"FROM read_parquet({listing}, filename = true, union_by_name = true) t "
            f"JOIN _files f ON f.tbl = {_quote(table)} AND f.file = t.filename")
    return con


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
