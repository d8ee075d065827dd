"""Many ranks: a distributed run's trace files as one :class:`TraceSet`.

* :mod:`.discover` -- which files, which rank each one is;
* :mod:`.parallel` -- the per-rank task on a process pool or a Dask client;
* :mod:`.cache` -- each rank's tables as Parquet, keyed by file identity;
* :mod:`.traceset` -- :func:`load_many` and :class:`TraceSet`;
* :mod:`.sql` -- DuckDB views over the Parquet files (and over one Trace);
* :mod:`.combined` -- all ranks as one Trace with a `rank` column (`TraceSet.combined`).

Needs the ``ranks`` extra (``pip install 'jupyter_profview[ranks]'``:
pyarrow, duckdb, dask[distributed]); a missing one raises an ImportError
with that command when it is first needed.
"""

from __future__ import annotations

from ..query import trace_sql
from .traceset import TraceSet, load_many

__all__ = ["TraceSet", "load_many", "trace_sql"]
