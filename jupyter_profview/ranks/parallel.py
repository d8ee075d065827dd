"""The per-rank task and where it runs.

`load_rank` parses one trace file and writes its tables into its cache
entry (see `.cache`); it returns only the small manifest, so the
process that asks never holds a rank's tables.  It runs

* in this process when there is one file to load or one worker;
* in a `concurrent.futures.ProcessPoolExecutor` otherwise (started
  by a fork server that imports the loader, pandas and pyarrow once:
  `PRELOAD`; forking a notebook kernel, which has threads, is not
  safe), with ``min(cores, files, memory budget)`` workers: each worker needs about
  `BYTES_PER_TRACE_BYTE` times the decompressed size of the largest
  file (the loader's peak RSS is ~1.4x the JSON), and together they may use
  `MEMORY_SHARE` of the available memory;
* on a ``dask.distributed.Client`` (``client=``): one task per rank; the
  workers must see the trace files and the cache directory at the same paths
  (a shared file system).

A `ProfviewError` in a task comes back as a value (re-raised or
reported by the caller), so it survives pickling with its fields.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ProfviewError
from .cache import entry_dir, read_manifest, trace_tables, write_entry
from .discover import RankFile

log = logging.getLogger(__name__)

BYTES_PER_TRACE_BYTE = 2.0
MEMORY_SHARE = 0.7
#: imported once by the fork server, so every worker starts with them
PRELOAD = ["jupyter_profview.loader", "jupyter_profview.formats.chrome.trace",
           "jupyter_profview.ranks.derived", "jupyter_profview.export", "pyarrow.parquet"]


@dataclass(frozen=True)
class Task:
    """What a worker needs to load one rank (picklable)."""

    path: str
    rank: int
    entry: str
    codec: str = "lz4"  # Parquet compression of the cache entry (`.cache.CODEC` when planned)


def load_rank(task: Task) -> dict[str, Any]:
    """Parse one file, write its cache entry; ``{"rank", "manifest"}`` or ``{"rank", "error"}``."""
    from ..loader import load
    from .derived import collective_calls
    from .device_args import collective_args, kernel_args

    entry = Path(task.entry)
    manifest = read_manifest(entry)
    if manifest is not None:
        return {"rank": task.rank, "manifest": manifest, "cached": True}
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        trace = load(task.path)
        tables = trace_tables(trace)
        tables["collectives"] = collective_calls(trace)
        tables["kernel_args"] = kernel_args(trace)  # read from args: a cached rank has none
        tables["collective_args"] = collective_args(trace)
        parsed = time.process_time() - cpu
        extra = {"source": task.path, "rank": task.rank,
                 "base_time_ns": trace.info.base_time_ns or 0}
        manifest = write_entry(trace, entry, tables, extra, codec=task.codec, timing=lambda: {
            "wall_s": round(time.perf_counter() - wall, 3), "cpu_s": round(time.process_time() - cpu, 3),
            "parse_cpu_s": round(parsed, 3)})
    except ProfviewError as exc:
        return {"rank": task.rank, "error": {"message": exc.reason, "source": exc.source or task.path,
                                             "position": exc.position, "expected": exc.expected}}
    return {"rank": task.rank, "manifest": manifest, "cached": False}


def error_of(result: dict[str, Any]) -> ProfviewError:
    e = result["error"]
    return ProfviewError(e["message"], source=e["source"], position=e["position"], expected=e["expected"])


def plan_workers(files: list[RankFile], requested: int | None = None) -> int:
    """Workers for a local pool: bounded by cores, files and the memory budget."""
    if requested is not None:
        return max(1, min(requested, len(files)))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    need = BYTES_PER_TRACE_BYTE * max(f.data_bytes for f in files)
    try:
        import psutil

        budget = MEMORY_SHARE * psutil.virtual_memory().available
    except ImportError:  # pragma: no cover - psutil comes with the ranks extra
        log.warning("psutil is not installed: the number of workers is not bounded by memory "
                    "(pip install 'jupyter_profview[ranks]')")
        budget = float("inf")
    by_memory = int(budget // need) if need > 0 else len(files)
    return max(1, min(cores, len(files), by_memory))


def tasks_for(files: list[RankFile], root: Path) -> list[Task]:
    from . import cache  # the codec as set now in this process (workers import their own copy)

    return [Task(str(f.path), f.rank, str(entry_dir(root, f.path, f.size, f.mtime_ns)), cache.CODEC)
            for f in files]


def run(tasks: list[Task], *, workers: int, client: Any = None,
        progress: bool = True) -> Iterator[dict[str, Any]]:
    """Run `load_rank` for every task; yields results as they finish."""
    todo = []
    for task in tasks:  # cached entries need no worker
        manifest = read_manifest(Path(task.entry))
        if manifest is not None:
            yield {"rank": task.rank, "manifest": manifest, "cached": True}
        else:
            todo.append(task)
    if not todo:
        return
    where = "dask" if client is not None else f"{min(workers, len(todo))} local worker(s)"
    log.info("loading %d rank(s) (%d cached) on %s", len(todo), len(tasks) - len(todo), where)
    bar = _progress(len(todo), progress)
    try:
        if client is not None:
            yield from _dask(client, todo, bar)
        elif workers <= 1 or len(todo) == 1 or not _workers_can_start():
            for task in todo:
                yield load_rank(task)
                bar(1)
        else:
            with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=_context(),
                                     initializer=_one_core_per_worker) as pool:
                futures: list[Future[dict[str, Any]]] = [pool.submit(load_rank, t) for t in todo]
                try:
                    for fut in as_completed(futures):
                        yield fut.result()
                        bar(1)
                except BrokenProcessPool as exc:  # a worker was killed (out of memory?) or crashed
                    raise ProfviewError(
                        f"a worker process ended abruptly while loading {len(todo)} rank(s)",
                        source=str(Path(todo[0].path).parent),
                        expected="workers that finish: load with fewer workers (workers=1) or free memory",
                    ) from exc
                finally:  # the caller stopped (an error with on_error="raise"): drop what has not started
                    for fut in futures:
                        fut.cancel()
    finally:
        bar(0, close=True)


def _workers_can_start() -> bool:
    """Whether worker processes can start: forkserver and spawn re-import the main module from
    its file, which a script read from standard input (``__file__`` ``<stdin>``) does not have;
    such a script loads its ranks in this process instead."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    named = getattr(getattr(main, "__spec__", None), "name", None)
    if named is None and path is not None and not Path(path).is_file():
        log.info("the main module %s cannot be re-imported by worker processes: loading the ranks "
                 "in this process", path)
        return False
    return True


def _one_core_per_worker() -> None:
    """The workers share the cores: none scans its file on two of them."""
    os.environ["PROFVIEW_SCAN_THREADS"] = "1"


def _context() -> Any:
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # no effect once the fork server runs
    return context


def _dask(client: Any, todo: list[Task], bar: Callable[..., None]) -> Iterator[dict[str, Any]]:
    try:
        from distributed import as_completed as dask_completed
    except ImportError as exc:
        raise ImportError("client= needs dask.distributed: pip install 'jupyter_profview[ranks]'") from exc
    futures = [client.submit(load_rank, t, key=f"profview-rank-{t.rank}-{Path(t.entry).name}", pure=False)
               for t in todo]
    try:
        for fut in dask_completed(futures):
            yield fut.result()
            bar(1)
    finally:
        client.cancel(futures)


def _progress(total: int, enabled: bool) -> Callable[..., None]:
    if not enabled:
        return lambda n, close=False: None
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc="ranks", unit="rank")

    def update(n: int, close: bool = False) -> None:
        if n:
            bar.update(n)
        if close:
            bar.close()

    return update
