"""The Parquet cache of a loaded rank.

One directory per trace file, ``<cache>/<file name>-<key>/``, where ``key``
hashes the file's absolute path, size, modification time, the package
version and `CACHE_FORMAT`: a changed file, a new version of the
package or a new entry layout is a new entry (old ones are never misread).  It
holds one Parquet file per table (written by `write_frame`,
LZ4, dictionary pages for categorical columns, statistics for time columns:
``events``, ``memory``, ``allocations``, ``nodes``, ``flows``, ``counters``
where the trace has them, ``launches`` where the model has it, and
``collectives``, see `collective_calls`; ``kernel_args``
and ``collective_args``, see `jupyter_profview.ranks.device_args`)
and ``rank.json`` (format, metadata, quality, row counts), written last: an
entry is complete when ``rank.json`` exists.  An entry is built in a
temporary directory and renamed into place, so concurrent loaders never see
half an entry.

Where: ``<traces dir>/.profview-cache`` if that directory is writable, else
``$PROFVIEW_CACHE_DIR`` or ``$XDG_CACHE_HOME/jupyter_profview`` (default
``~/.cache/jupyter_profview``).  ``cache=False``: ``$TMPDIR/profview-ranks-<pid>-*``,
removed with the TraceSet, or by a later ``cache=False`` load once that process is gone.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..model import Quality, Trace, TraceInfo, empty_launches

CACHE_NAME = ".profview-cache"
MANIFEST = "rank.json"
TABLES = ("events", "memory", "allocations", "nodes", "flows", "counters", "launches", "collectives")
TIME_COLUMNS = ("start", "end", "time", "alloc_time", "free_time")
#: The layout of an entry (its tables, their columns, the manifest's keys).  Part of the cache
#: key: increase it with any change to what an entry holds or how it is read, so that a source
#: tree between two releases (same package version) does not read entries of the old layout.
#: 1: the layout before this constant; 2: rank metadata with ``thread_names``; 3: tree
#: ``depth`` and owned ``self`` (no negative self time); 4: ``kernel_args`` and ``collective_args``;
#: 5: a collective's ``process_group`` from the first event that names one (`process_groups`);
#: 6: ``collective_args.share_bytes``, ``kernel_args``' absent ``grid`` / ``block`` missing, not "".
CACHE_FORMAT = 6
#: Parquet codec of the cache: the entry is written on every first load, so
#: write time counts more than size.  Per rank of 1M events (431 MB of JSON):
#: "lz4" ~0.3 CPU-s, 0.10x the JSON; "none" ~0.2 CPU-s, 0.22x (zstd with
#: dictionaries and statistics on every column, as before: ~1 CPU-s).
#: Set it before ``load_many``: the tasks carry it to the workers.
CODEC = "lz4"


def time_columns(columns: list[str]) -> list[str]:
    """Columns holding times (rebased to the common clock): ``start``, ``end``,
    ``time``, ``alloc_time``, ``free_time`` and any ``*_start``/``*_end``/``*_time``."""
    return [c for c in columns if c in TIME_COLUMNS or c.endswith(("_start", "_end", "_time"))]


def package_version() -> str:
    from .._version import package_version as version

    return version()


def user_cache_dir() -> Path:
    explicit = os.environ.get("PROFVIEW_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jupyter_profview"


def cache_root(trace_dir: Path) -> Path:
    """``<trace_dir>/.profview-cache`` where it can be written, else the user cache dir."""
    here = trace_dir / CACHE_NAME
    try:
        here.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=here, prefix=".probe-"):
            return here
    except OSError:
        root = user_cache_dir()
        root.mkdir(parents=True, exist_ok=True)
        return root


TEMPORARY_PREFIX = "profview-ranks-"
STALE_AFTER_S = 60


def temporary_root() -> Path:
    """A new temporary cache directory (``cache=False``), named with this process's id,
    after removing those whose process has ended without cleaning up (a killed
    kernel runs no finalisers)."""
    tmp = Path(tempfile.gettempdir())
    now = time.time()
    for old in tmp.glob(f"{TEMPORARY_PREFIX}*-*"):
        pid = old.name[len(TEMPORARY_PREFIX):].split("-", 1)[0]
        with contextlib.suppress(OSError):
            if pid.isdigit() and not _alive(int(pid)) and now - old.stat().st_mtime > STALE_AFTER_S:
                shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{TEMPORARY_PREFIX}{os.getpid()}-", dir=tmp))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def entry_key(path: Path, size: int, mtime_ns: int) -> str:
    ident = f"{path.resolve()}\0{size}\0{mtime_ns}\0{package_version()}\0{CACHE_FORMAT}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def entry_dir(root: Path, path: Path, size: int, mtime_ns: int) -> Path:
    return root / f"{path.name}-{entry_key(path, size, mtime_ns)}"


def read_manifest(entry: Path) -> dict[str, Any] | None:
    """The manifest of a complete entry, or None."""
    try:
        data = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_entry(trace: Trace, entry: Path, tables: dict[str, pd.DataFrame], extra: dict[str, Any], *,
                codec: str | None = None, timing: Callable[[], dict[str, float]] | None = None
                ) -> dict[str, Any]:
    """Write the tables of one rank (atomically) and return its manifest
    (with ``timing()``, called once the tables are written, as ``load_time``)."""
    from ..export import json_safe, trace_meta, write_frame

    meta = trace_meta(trace)
    tmp = Path(tempfile.mkdtemp(prefix=f".{entry.name}-", dir=entry.parent))
    try:
        rows = {}
        for name, frame in tables.items():
            stats = [*time_columns([str(c) for c in frame.columns]), "id", "rank"]
            write_frame(frame, tmp / f"{name}.parquet", {"table": name}, compression=codec or CODEC,
                        statistics=stats, lean=True)
            rows[name] = len(frame)
        manifest = {**meta, **json_safe(extra), "rows": rows, "tables": sorted(tables),
                    "cache_format": CACHE_FORMAT}
        if timing is not None:
            manifest["load_time"] = timing()
        (tmp / MANIFEST).write_text(json.dumps(manifest))
        try:
            os.replace(tmp, entry)
        except OSError:  # another loader finished the same entry first
            if read_manifest(entry) is None:
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


def trace_tables(trace: Trace) -> dict[str, pd.DataFrame]:
    """The trace's tables by name (``events`` with its ``id`` index as a column)."""
    tables: dict[str, pd.DataFrame] = {}
    for name in TABLES:
        frame = getattr(trace, name, None)
        if isinstance(frame, pd.DataFrame):
            tables[name] = frame.reset_index() if name == "events" else frame
    return tables


def _restore(frame: pd.DataFrame, dtypes: dict[str, str]) -> pd.DataFrame:
    for col, dtype in dtypes.items():
        if col not in frame.columns or str(frame[col].dtype) == dtype:
            continue
        if dtype == "object":
            continue
        with contextlib.suppress(TypeError, ValueError):
            frame[col] = frame[col].astype(pd.api.types.pandas_dtype(dtype))
    return frame


def table_path(entry: Path | str, name: str) -> Path:
    """Where a cache entry keeps its table `name`: the one rule for the file names of an entry
    (the analyses ask `TraceSet.rank_table`, never build the path)."""
    return Path(entry) / f"{name}.parquet"


def read_table(path: Path, columns: list[str] | None = None) -> pd.DataFrame:
    """One cached table as pandas with the dtypes it was written with."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=columns)
    raw = (table.schema.metadata or {}).get(b"jupyter_profview", b"{}")
    dtypes = json.loads(raw).get("dtypes", {})
    return _restore(table.to_pandas(), dtypes)


def read_trace(entry: Path, manifest: dict[str, Any]) -> Trace:
    """A rank's Trace from its cache entry (no args: ``trace.args(id)`` is ``{}``;
    load the file itself for them)."""
    tables = {name: read_table(entry / f"{name}.parquet") for name in manifest["tables"]}
    events = tables["events"].set_index("id")
    events.index = events.index.astype("int64")
    info, metadata = TraceInfo.split(manifest.get("metadata"))  # an entry written before TraceInfo
    info = info.replace(**vars(TraceInfo.from_dict(manifest["info"]))) if "info" in manifest else info
    metadata["cache_entry"] = str(entry)
    return Trace(
        format=manifest["format"], time_unit=manifest["time_unit"], events=events,
        memory=tables["memory"], allocations=tables["allocations"], nodes=tables["nodes"],
        flows=tables["flows"], quality=Quality.from_dict(manifest.get("quality") or {}), metadata=metadata,
        counters=tables.get("counters"), launches=tables.get("launches", empty_launches()), info=info,
    )


def concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate tables, keeping columns categorical where they are in every frame."""
    from pandas.api.types import union_categoricals

    frames = [f for f in frames if len(f)] or frames[:1]  # empty tables may have other dtypes
    cats = [c for c in frames[0].columns
            if all(c in f.columns and isinstance(f[c].dtype, pd.CategoricalDtype) for f in frames)]
    out = pd.concat([f.drop(columns=cats) for f in frames], ignore_index=True)
    for c in cats:
        try:
            out[c] = union_categoricals([f[c] for f in frames])
        except TypeError:  # categories of different dtypes (an all-missing column read back
            # from Parquet has object categories): as text
            out[c] = union_categoricals([f[c].cat.set_categories(
                pd.Index([str(k) for k in f[c].cat.categories], dtype=str), rename=True) for f in frames])
    return out[[c for c in frames[0].columns if c in out.columns]
               + [c for c in out.columns if c not in frames[0].columns]]
