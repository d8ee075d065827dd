"""``profview.load``: from any source to a Trace."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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
    "torch_cuda_snapshot": "torch_memory/cuda_snapshot_synthetic.pickle",  # hand-built: no GPU here
}


def load(source: Any, format: str | None = None, *, name: str | None = None, memory: Any = None) -> Trace:
    """Load a trace.

    ``source`` is a path (str or Path), bytes, or a binary file object; gzip
    is decompressed transparently.  The format is detected from the content
    unless ``format=`` names one (see :func:`jupyter_profview.formats`).
    A directory is searched for an XSpace profile (``*.xplane.pb``, e.g. a
    TensorBoard ``logs/`` or ``plugins/profile/<run>/``).  ``memory=`` adds a
    PyTorch memory timeline / snapshot on the trace's time axis (see
    :func:`jupyter_profview.formats.torch_memory.with_memory`).
    Raises :class:`ProfviewError` for anything wrong with the input, also
    when memory runs out (naming how far the reading got; see
    ``sources.py`` for the limits that keep hostile input bounded).  Warns
    once per process (``NativeUnavailableWarning``) when the native scanner
    is missing or refused.
    """
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir():
        from .formats.xspace import find_in_directory

        source = find_in_directory(Path(source))
    src = Source(source, name=name)
    fmt = by_name(format) if format else detect(src)
    _native.warn_if_unavailable()
    try:
        trace = fmt.load(src)
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
    trace.metadata.setdefault("source", src.name)
    if trace.format != fmt.name:
        raise ProfviewError(f"loader returned format {trace.format!r}", source=src.name)
    if memory is not None:
        from .formats.torch_memory import with_memory

        trace = with_memory(trace, memory)
    return trace
