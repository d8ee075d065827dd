"""Many ranks: a distributed run's trace files as one `TraceSet`.

* `.discover` -- which files, which rank each one is;
* `.parallel` -- the per-rank task on a process pool or a Dask client;
* `.cache` -- each rank's tables as Parquet, keyed by file identity;
* `.traceset` -- `load_many` and `TraceSet`;
* `.sql` -- DuckDB views over the Parquet files (and over one Trace);
* `.combined` -- all ranks as one Trace with a `rank` column (`TraceSet.combined`).

Needs the ``ranks`` extra (``pip install 'jupyter_profview[ranks]'``:
pyarrow, duckdb, dask[distributed]); a missing one raises an ImportError
with that command when it is first needed.
"""

from __future__ import annotations

from ..query import trace_sql
from .traceset import TraceSet, load_many

__all__ = ["TraceSet", "load_many", "trace_sql"]
