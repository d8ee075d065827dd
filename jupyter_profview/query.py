"""SQL over one trace's tables with DuckDB (imported only when a query runs).

``trace.sql(query)`` / ``profview.sql(trace, query)``: the Trace's DataFrames
as the views ``events`` (with its ``id`` index as a column), ``memory``,
``allocations``, ``flows``, ``nodes``, ``counters``/``launches`` where present.
A TraceSet's views over its ranks' Parquet files are in `.ranks.sql`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from .model import Trace

TRACE_TABLES = ("events", "memory", "allocations", "flows", "nodes", "counters", "launches", "collectives")


def duckdb() -> Any:
    try:
        import duckdb as module
    except ImportError as exc:
        raise ImportError("SQL queries need duckdb: pip install 'jupyter_profview[ranks]'") from exc
    return module


def trace_sql(trace: Trace, query: str) -> pd.DataFrame:
    """Run a DuckDB query over one Trace's tables (see the module doc)."""
    con = duckdb().connect()
    try:
        for name in TRACE_TABLES:
            frame = getattr(trace, name, None)
            if isinstance(frame, pd.DataFrame):
                con.register(name, frame.reset_index() if name == "events" else frame)
        return con.execute(query).df()
    finally:
        con.close()
