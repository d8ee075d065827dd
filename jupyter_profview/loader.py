"""``profview.load``: from any source to one Trace (a multi-host XSpace run is ``load_many``'s)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import _native
from .errors import ProfviewError
from .formats import by_name, detect
from .model import Trace
from .sources import Source

EXAMPLE_FILES = {
    "tf_node_order": "000_5bf2854c930b1b8f.txt",
    "tf_node_shapes": "001_11cf062b29f34b60.txt",
    "tf_step_stats": "002_6b18107121892edf.txt",
    "chainer_graph": "003_925085f7148f0ebf.txt",
    "megengine_json": "004_825e28a4f520ddc2.txt",
    "torch_mlp_train": "torch_mlp_train.json",
    "gpu_trace": "hta/trace_filter_sampled_rank-0.json.gz",
    "compare_base": "compare/base.pt.trace.json.gz",  # profview.compare pair: ReLU ...
    "compare_test": "compare/test.pt.trace.json.gz",  # ... and the same MLP with GELU
    "xspace_jax": "xspace/jax_cpu.xplane.pb.gz",  # jax.profiler.trace on CPU
    "xspace_tf_logs": "xspace/tf_keras_logs",  # a TensorBoard logdir: Keras fit + profiler callback
    "torch_memory_trace": "torch_memory/mlp_adam.trace.json.gz",  # the run behind the next one
    "torch_memory_timeline": "torch_memory/mlp_adam.memory.raw.json.gz",  # export_memory_timeline
    "torch_memory_series": "torch_memory/mlp_adam.memory.json",  # the same run, .json: per category
    "torch_cuda_snapshot": "torch_memory/cuda_snapshot_synthetic.pickle",  # hand-built: no GPU here
    "perfetto_chromium": "perfetto/chromium_cdp.pftrace.gz",  # Chromium via CDP, streamFormat proto
}
RANKS_EXTRA = "pip install 'jupyter_profview[ranks]'"


def host_files(source: Any) -> list[Path] | None:
    """The latest run's XSpace files when ``source`` is a directory, else None."""
    if not (isinstance(source, (str, os.PathLike)) and Path(source).is_dir()):
        return None
    from .formats.xspace import find_in_directory

    return find_in_directory(Path(source))


def _names(files: list[Path]) -> str:
    return ", ".join(f.name for f in files)


def load(source: Any, format: str | None = None, *, name: str | None = None, memory: Any = None,
         window: tuple[int, int] | None = None) -> Trace:
    """Load one trace: ``profview.load``.

    ``source`` is a path (str or Path), bytes, or a binary file object; gzip
    is decompressed transparently.  The format is detected from the content
    unless ``format=`` names one (see `jupyter_profview.formats`).
    ``memory=`` adds a PyTorch memory timeline / snapshot on the trace's time
    axis (see `with_memory`).
    ``window=(start_ns, end_ns)`` (CUDA memory snapshots only; other formats
    raise a `ProfviewError`) keeps what lives in that window, on the tables' time
    axis (ns from the trace's start, both ends included): the trace entries in it,
    the segments and allocations alive in it, and the memory / reserved curves
    inside it, starting from the level just before it (the memory in use before
    the window is the baseline), so the curves equal the full load's there.
    Entries outside it are counted in ``quality.skipped``.

    A directory is searched for an XSpace profile (``*.xplane.pb``, e.g. a
    TensorBoard ``logs/`` or ``plugins/profile/<run>/``; the latest run is
    taken, see `jupyter_profview.formats.xspace.find_in_directory`).  A
    run with one host's file gives that host's Trace; a run with several hosts'
    files is several traces: this raises a `ProfviewError` that names
    them and `jupyter_profview.load_many`, which loads such a run as a
    TraceSet (one rank per host).

    Raises `ProfviewError` for anything wrong with the input, also
    when memory runs out (naming how far the reading got; see
    ``sources.py`` for the limits that keep hostile input bounded).  Warns
    once per process (``NativeUnavailableWarning``) when the native scanner
    is missing or refused.
    """
    hosts = host_files(source)
    if hosts is not None:
        if len(hosts) > 1:
            raise ProfviewError(
                f"{source} holds {len(hosts)} hosts' XSpace profiles ({_names(hosts)}), not one trace",
                source=str(source), expected="one host's file, or profview.load_many(run_dir) for a "
                                             f"TraceSet of all hosts (needs the ranks extra: {RANKS_EXTRA})")
        source = hosts[0]
    src = Source(source, name=name)
    fmt = by_name(format) if format else detect(src)
    _native.warn_if_unavailable()
    if window is not None:
        window = _check_window(window, fmt.name, fmt.load_window is not None, src.name)
    try:
        trace = fmt.load(src) if window is None else fmt.load_window(src, window)  # type: ignore[misc]
    except MemoryError:
        raise ProfviewError(
            f"ran out of memory while loading it as {fmt.name} "
            f"({src.consumed:,} decompressed bytes read of {src.size:,} stored bytes)",
            source=src.name, position=f"after {src.consumed:,} decompressed bytes",
            expected="a trace whose tables fit in this machine's memory",
        ) from None
    if trace.quality.unaccounted != 0:  # a loader bug, never the user's input
        raise RuntimeError(
            f"{fmt.name} loader left {trace.quality.unaccounted} records unaccounted: {trace.quality!r}"
        )
    if not trace.info.source:
        trace.info = trace.info.replace(source=src.name)
    if trace.format != fmt.name:
        raise ProfviewError(f"loader returned format {trace.format!r}", source=src.name)
    if memory is not None:
        trace = with_memory(trace, memory)
    return trace


def _check_window(window: Any, fmt: str, supported: bool, name: str) -> tuple[int, int]:
    """``window`` as (start, end) ints, or ProfviewError."""
    if not supported:
        raise ProfviewError(f"window= is not supported for {fmt} traces", source=name,
                            expected="a CUDA memory snapshot (torch_cuda_snapshot), or no window=")
    ok = (isinstance(window, (tuple, list)) and len(window) == 2
          and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in window))
    if not ok:
        raise ProfviewError(f"window={window!r}", source=name, expected="(start_ns, end_ns), two integers")
    start, end = int(window[0]), int(window[1])
    if start > end:
        raise ProfviewError(f"window=({start}, {end}) starts after it ends", source=name,
                            expected="(start_ns, end_ns) with start <= end")
    return start, end


def with_memory(trace: Trace, memory: Any) -> Trace:
    """``trace`` with the memory curves (and allocations) of ``memory`` added on
    its time axis: a path / bytes of a PyTorch memory timeline or CUDA memory
    snapshot, or an already loaded Trace.  Both must have an absolute clock
    (``info.base_time_ns``, epoch ns): rows are shifted by the
    difference of the two origins.  The trace's own memory rows are kept."""
    extra = memory if isinstance(memory, Trace) else load(memory)
    if trace.time_unit != "ns" or extra.time_unit != "ns":
        raise ProfviewError("cannot put a memory file on a trace without a clock",
                            source=extra.info.source,
                            expected="both with time_unit 'ns'")
    shift = (extra.info.base_time_ns or 0) - (trace.info.base_time_ns or 0)
    mem = extra.memory.copy()
    mem["time"] = mem["time"] + shift
    alloc = extra.allocations.copy()
    for col in ("alloc_time", "free_time"):
        alloc[col] = alloc[col] + shift
    memory_table = pd.concat([trace.memory, mem], ignore_index=True)
    memory_table["device"] = memory_table["device"].astype(str).astype("category")
    memory_table = memory_table.sort_values(["device", "time"], kind="stable").reset_index(drop=True)
    allocations = trace.allocations
    if len(alloc):
        allocations = pd.concat([trace.allocations, alloc], ignore_index=True)
        allocations["device"] = allocations["device"].astype(str).astype("category")
    metadata = {**trace.metadata, "memory_sources": [*trace.metadata.get("memory_sources", []),
                                                     extra.info.source or extra.format]}
    return dataclasses.replace(trace, memory=memory_table, allocations=allocations, metadata=metadata)
