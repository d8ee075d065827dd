"""``profview.load_many`` and the `TraceSet` of a distributed run."""

from __future__ import annotations

import shutil
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ProfviewError
from ..model import Quality, Trace
from .cache import cache_root, concat, read_table, read_trace, table_path, temporary_root, time_columns
from .derived import profiler_steps
from .discover import RankFile, discover, ranges
from .parallel import error_of, plan_workers, run, tasks_for

LRU_SIZE = 3


class UnknownRank(ProfviewError, KeyError):
    """``ts[r]`` for a rank the TraceSet does not hold: a [ProfviewError][jupyter_profview.ProfviewError]
    (what every analysis given ``rank=`` raises), and a ``KeyError`` as any mapping's missing key."""

    __str__ = ProfviewError.__str__  # the message as written, not KeyError's quoted repr


class TraceSet:
    """The ranks of one run, each cached as Parquet; nothing is held in RAM
    until asked for.

    * ``ts.ranks`` (loaded ranks), ``len(ts)``, ``ts[r]`` -> the rank's
      `Trace` read from its cache (the last few are kept; times are
      the rank's own, relative to its own origin; ``trace.args(id)`` is
      empty: ``profview.load(ts.files[r])`` for args);
    * ``ts.events`` / ``.memory`` / ``.flows`` / ``.allocations`` /
      ``.collectives`` / ``.launches``: all ranks' rows with a ``rank``
      column, times on the common clock.  These **materialise every rank in
      RAM**; for big runs use ``ts.sql``;
    * ``ts.sql("select rank, count(*) from events group by rank")``: DuckDB
      over the Parquet files (views ``events``, ``memory``, ``flows``,
      ``allocations``, ``collectives``, ``counters``/``launches`` where every
      rank has them; each with ``rank``, times on the common clock), out of
      core;
    * ``ts.per_rank(fn, ...)``: any analysis of one Trace on every rank, with ``rank``
      (every analysis of `jupyter_profview.analysis` does this itself when given a
      TraceSet, with its times on the common clock);
    * ``ts.quality`` (rank -> Quality), ``ts.errors`` (rank -> ProfviewError
      of the ranks skipped with ``on_error="skip"``), ``ts.missing`` (ranks
      below the world size without a file), ``ts.problems`` (the files
      disagree on the world size, or a rank is not below it: sentences naming
      the files), ``ts.info`` (one row per rank);
    * the common clock: ``ts.offsets[r]`` is added to rank ``r``'s times;
      ``ts.origin_ns`` is its zero as epoch ns.  ``ts.aligned(step=N)``
      is the same set with offsets that make ``ProfilerStep#N`` start at
      the same time on every rank.
    """

    def __init__(self, files: dict[int, RankFile], manifests: dict[int, dict[str, Any]], world_size: int,
                 missing: list[int], errors: dict[int, ProfviewError], cached: dict[int, bool],
                 offsets: dict[int, int] | None = None, problems: list[str] | None = None) -> None:
        self.files = {r: f.path for r, f in files.items()}
        self._rank_files = files
        self._manifests = manifests
        self.world_size = world_size
        self.missing = missing
        self.problems = list(problems or [])
        self.errors = errors
        self.cached = cached
        self.ranks = sorted(manifests)
        base = {r: int(m.get("base_time_ns", 0)) for r, m in manifests.items()}
        self.origin_ns = min(base.values()) if base else 0
        self.offsets = offsets if offsets is not None else {r: base[r] - self.origin_ns for r in self.ranks}
        self._lru: OrderedDict[int, Trace] = OrderedDict()
        self._con: Any = None
        self._keep: Any = None  # a temporary cache directory's finaliser

    # -- ranks ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.ranks)

    def __iter__(self) -> Iterator[int]:
        return iter(self.ranks)

    def __contains__(self, rank: object) -> bool:
        return rank in self._manifests

    def __getitem__(self, rank: int) -> Trace:
        if rank not in self._manifests:
            raise UnknownRank(f"no rank {rank!r} in this TraceSet",
                              expected=f"one of its ranks: {ranks_text(self.ranks)}")
        if rank in self._lru:
            self._lru.move_to_end(rank)
            return self._lru[rank]
        trace = read_trace(self.entry(rank), self._manifests[rank])
        self._lru[rank] = trace
        while len(self._lru) > LRU_SIZE:
            self._lru.popitem(last=False)
        return trace

    def entry(self, rank: int) -> Path:
        """The cache directory of a rank."""
        return Path(self._manifests[rank]["entry"])

    def table_files(self, table: str) -> dict[int, Path]:
        """Parquet file of ``table`` per rank (ranks that have it)."""
        return {r: table_path(self.entry(r), table) for r in self.ranks
                if table in self._manifests[r].get("tables", ())}

    def rank_table(self, rank: int, name: str, columns: list[str] | None = None) -> pd.DataFrame | None:
        """Table `name` of rank `rank`'s cache entry (`launches`, `kernel_args`,
        `collective_args`, ...), or None where the entry has no such file (written by another
        version): then ask the rank's Trace (`ts[rank]`)."""
        path = table_path(self.entry(rank), name)
        return read_table(path, columns) if path.is_file() else None

    def rank_arrays(self, rank: int, name: str, columns: list[str],
                    text: tuple[str, ...] = ()) -> dict[str, Any]:
        """Columns of table `name` of rank `rank`'s cache entry as arrays, the `text` ones as
        `(codes, values)` (`ranks.arrays.read_arrays`): for an analysis that reads a few columns of
        1M rows without building a DataFrame."""
        from .arrays import read_arrays

        return dict(read_arrays(table_path(self.entry(rank), name), columns, text=text))

    @property
    def quality(self) -> dict[int, Quality]:
        return {r: Quality.from_dict(self._manifests[r].get("quality") or {}) for r in self.ranks}

    @property
    def info(self) -> pd.DataFrame:
        """One row per loaded rank: file, how its rank was found, rows, clock offset, cache use,
        the CPU seconds its worker spent parsing and writing the cache entry."""
        rows = []
        for r in self.ranks:
            f, m = self._rank_files[r], self._manifests[r]
            rows.append({"rank": r, "file": str(f.path), "rank_from": f.rank_from, "bytes": f.size,
                         "events": m["rows"].get("events", 0), "base_time_ns": int(m.get("base_time_ns", 0)),
                         "offset": self.offsets[r], "from_cache": self.cached.get(r, False),
                         "load_cpu_s": (m.get("load_time") or {}).get("cpu_s")})
        return pd.DataFrame(rows).set_index("rank")

    def __repr__(self) -> str:
        text = f"<TraceSet ranks={len(self)} world_size={self.world_size}"
        if self.missing:
            text += f" missing={ranks_text(self.missing)}"
        if self.errors:
            text += f" errors={ranks_text(sorted(self.errors))}"
        if self.problems:
            text += f" problems={len(self.problems)}"
        return text + ">"

    # -- tables on the common clock ---------------------------------------------
    def table(self, name: str, columns: list[str] | None = None) -> pd.DataFrame:
        """All ranks' rows of one table with ``rank``, times on the common clock (in RAM)."""
        frames = []
        for rank, path in self.table_files(name).items():
            frame = read_table(path, columns)
            for col in time_columns([str(c) for c in frame.columns]):
                if pd.api.types.is_integer_dtype(frame[col]):
                    frame[col] = frame[col] + self.offsets[rank]
            frame.insert(0, "rank", np.int64(rank))
            frames.append(frame)
        if not frames:
            raise AttributeError(f"no rank has a {name!r} table")
        return concat(frames)

    @property
    def events(self) -> pd.DataFrame:
        return self.table("events")

    @property
    def memory(self) -> pd.DataFrame:
        return self.table("memory")

    @property
    def flows(self) -> pd.DataFrame:
        return self.table("flows")

    @property
    def allocations(self) -> pd.DataFrame:
        return self.table("allocations")

    @property
    def launches(self) -> pd.DataFrame:
        """Device activities (kernels, copies, sets) with their launches, per rank."""
        return self.table("launches")

    @property
    def counters(self) -> pd.DataFrame:
        return self.table("counters")

    @property
    def collectives(self) -> pd.DataFrame:
        """Collective instances per rank (see `collective_calls`)."""
        return self.table("collectives")

    def per_rank(self, analysis: Callable[..., pd.DataFrame], *args: Any, **kwargs: Any) -> pd.DataFrame:
        """``analysis(ts[r], *args, **kwargs)`` on each rank (one rank in RAM at a time), stacked
        with a ``rank`` column first, e.g. ``ts.per_rank(analysis.kernel_breakdown)``.

        Each result's named index levels become columns (``summary``'s key, ``top``'s ``id``);
        an unnamed index (a row number) is dropped.  Times stay on each rank's own clock, as in
        ``ts[r]`` (the analyses, given a TraceSet, move them to the common clock)."""
        frames = []
        for rank in self.ranks:
            out = analysis(self[rank], *args, **kwargs)
            if not isinstance(out, pd.DataFrame):
                raise TypeError(f"per_rank needs an analysis returning a DataFrame, "
                                f"{getattr(analysis, '__name__', analysis)} returned {type(out).__name__}")
            named = [n for n in out.index.names if n is not None]
            out = (out.reset_index(level=named) if named else out).reset_index(drop=True)
            out.insert(0, "rank", np.int64(rank))
            frames.append(out)
        return concat(frames) if frames else pd.DataFrame(columns=["rank"])

    def sql(self, query: str) -> pd.DataFrame:
        """Run a DuckDB query over all ranks' Parquet files (see the class doc)."""
        from .sql import connect

        if self._con is None:
            self._con = connect(self)
        return self._con.execute(query).df()

    def combined(self, ranks: Iterable[int] | None = None, *, align: str | int | None = None) -> Trace:
        """The chosen ranks (default: all) as one Trace on the set's clock, each table with a
        ``rank`` column (see [`ranks.combined`][jupyter_profview.ranks.combined]); holds every chosen
        rank's events in RAM, so pass ``ranks=`` to look at a few ranks of a big run.
        ``align="step"`` (or a step number) lines the ranks up on a ``ProfilerStep`` and makes its
        start 0."""
        from .combined import combine_aligned

        return combine_aligned(self, ranks, align)

    def aligned(self, step: int | None = None, *,
                collective: str | tuple[str, int] | None = None) -> TraceSet:
        """The same ranks with offsets that line them up on one event (for hosts whose clocks
        disagree): ``step=N`` makes ``ProfilerStep#N`` start together; ``collective="name"``
        (or ``(name, k)``, the k-th occurrence, default 0) makes that collective instance
        *end* together (its ranks leave it at about the same time).  The aligned point is
        at its earliest time on the current clock."""
        if (step is None) == (collective is None):
            raise ProfviewError("aligned() takes one of step= or collective=",
                                expected="ts.aligned(step=N) or ts.aligned(collective=name)")
        local: dict[int, int] = {}
        if step is not None:
            steps = profiler_steps(self)  # the CPU-side steps (derived.steps), on this set's clock
            steps = steps[steps["step"] == step]
            for r in self.ranks:
                hit = steps[steps["rank"] == r]
                if len(hit) == 0:
                    raise ProfviewError(f"rank {r} has no ProfilerStep#{step}", source=str(self.files[r]),
                                        expected="a step every rank recorded (see step_times)")
                local[r] = int(hit["start"].min()) - self.offsets[r]
        else:
            name, seq = (collective, 0) if isinstance(collective, str) else collective  # type: ignore[misc]
            calls = self.collectives
            calls = calls[(calls["name"] == name) & (calls["seq"] == seq)]
            ends = dict(zip(calls["rank"].tolist(), calls["end"].tolist(), strict=True))
            for r in self.ranks:
                if r not in ends:
                    raise ProfviewError(f"rank {r} has no collective {name!r} #{seq}",
                                        source=str(self.files[r]),
                                        expected="an instance every rank has (see collective_skew)")
                local[r] = int(ends[r]) - self.offsets[r]
        target = min(local[r] + self.offsets[r] for r in self.ranks)
        other = TraceSet(self._rank_files, self._manifests, self.world_size, self.missing, self.errors,
                         self.cached, offsets={r: target - local[r] for r in self.ranks},
                         problems=self.problems)
        other._keep = self  # keeps a temporary cache alive as long as either set
        return other


def ranks_text(ranks: list[int]) -> str:
    return ranges(ranks) if ranks else "none"




def load_many(source: Any, *, client: Any = None, cache: bool | str | Path = True, progress: bool = True,
              on_error: str = "raise", workers: int | None = None) -> TraceSet:
    """Load the ranks of a distributed run (one trace file per rank) in parallel.

    ``source``: a directory, a glob or a list of files (``.gz`` too).  Ranks
    come from ``distributedInfo.rank``, else the file name (``rank-3``,
    ``rank_3``, ``rank3``), else sorted order; ranks below the world size
    without a file are reported (``ts.missing`` and a warning), and so are
    files that disagree on the world size or ranks not below it
    (``ts.problems`` and a warning listing them).

    Each rank is parsed by a worker process (``workers`` defaults to what the
    cores and memory allow), or by ``client`` (a ``dask.distributed.Client``),
    and written as Parquet into the cache (``cache=True``: next to the traces
    if writable, else the user cache dir; a path: there; ``False``: a
    temporary directory removed with the TraceSet).  Opening a cached run again
    reads only the cache manifests.

    ``on_error="raise"`` raises the first rank's `ProfviewError`;
    ``"skip"`` loads the others and lists the bad ones in ``ts.errors``.
    """
    _require("pyarrow")
    if on_error not in ("raise", "skip"):
        raise ValueError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    files, world, missing, problems = discover(source)
    if missing:
        warnings.warn(f"{len(missing)} of {world} ranks have no file: {ranges(missing)}", stacklevel=2)
    if problems:
        warnings.warn("world size: " + " | ".join(problems), stacklevel=2)
    tmp: str | None = None
    if cache is True:
        roots = {d: cache_root(d) for d in {f.path.parent for f in files}}
        tasks = [t for d, root in roots.items()
                 for t in tasks_for([f for f in files if f.path.parent == d], root)]
    else:
        root = temporary_root() if cache is False else Path(cache)
        root.mkdir(parents=True, exist_ok=True)
        tmp = str(root) if cache is False else None
        tasks = tasks_for(files, root)
    by_rank = {f.rank: f for f in files}
    entries = {t.rank: t.entry for t in tasks}
    manifests: dict[int, dict[str, Any]] = {}
    errors: dict[int, ProfviewError] = {}
    cached: dict[int, bool] = {}
    for result in run(tasks, workers=plan_workers(files, workers), client=client, progress=progress):
        rank = result["rank"]
        if "error" in result:
            errors[rank] = error_of(result)
            if on_error == "raise":
                raise errors[rank]
            continue
        manifests[rank] = {**result["manifest"], "entry": entries[rank]}
        cached[rank] = result["cached"]
    if errors:
        warnings.warn(f"skipped {len(errors)} rank(s) that failed to load: "
                      + "; ".join(f"rank {r}: {e}" for r, e in sorted(errors.items())), stacklevel=2)
    if not manifests:
        raise ProfviewError("no rank could be loaded", source=str(source),
                            expected="at least one readable trace file")
    ts = TraceSet({r: by_rank[r] for r in manifests}, manifests, world, missing, dict(sorted(errors.items())),
                  cached, problems=problems)
    if tmp is not None:
        ts._keep = weakref.finalize(ts, shutil.rmtree, tmp, True)
    return ts


def _require(module: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ImportError(f"load_many needs {module}: pip install 'jupyter_profview[ranks]'")
