"""jupyter_profview: look at deep-learning profiler traces inside a notebook.

>>> import jupyter_profview as profview
>>> t = profview.load("trace.json.gz")     # format sniffed from content
>>> t.events.head()                          # one row per timed slice
>>> profview.summary(t)                      # per op type: count, total, self, share
>>> profview.show(t)                         # the interactive widget
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import formats as _formats_registry  # noqa: F401  (bound first: `formats` below is the function)
from ._version import package_version
from .errors import NativeUnavailableWarning, ProfviewError
from .kinds import STEP_ANNOTATION

if TYPE_CHECKING:
    from .analysis.compare import Comparison, compare
    from .analysis.summary import phases, summary, top
    from .loader import load
    from .model import Quality, Trace
    from .numbers import readable
    from .ranks import TraceSet, load_many
    from .widget import TraceWidget
    from .widget.compare import CompareView

# Imported on first use, so that ``import jupyter_profview`` (done by the Jupyter server for its
# extension) does not pay for pandas, the formats and the analyses until they are needed.
_LAZY = {
    "load": "loader", "Quality": "model", "Trace": "model", "TraceSet": "ranks",
    "load_many": "ranks", "Comparison": "analysis", "compare": "analysis", "phases": "analysis",
    "summary": "analysis", "top": "analysis", "readable": "numbers",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__version__ = package_version()

EXAMPLES = Path(__file__).parent / "examples"

__all__ = ["EXAMPLES", "Comparison", "NativeUnavailableWarning", "ProfviewError", "Quality", "Trace",
           "compare", "example", "formats", "load", "phases", "show", "summary", "top", "TraceSet",
           "load_many", "sql", "advise", "readable"]


def formats() -> dict[str, str]:
    """Supported formats: name -> one-line description."""
    from .formats import registry

    return {f.name: f.description for f in registry()}


def example(name: str = "tf_step_stats") -> Path:
    """Path of a bundled example trace (``list(EXAMPLES.iterdir())`` lists them)."""
    from .loader import EXAMPLE_FILES

    if name not in EXAMPLE_FILES:
        raise ProfviewError(f"no bundled example {name!r}", expected=f"one of {sorted(EXAMPLE_FILES)}")
    return EXAMPLES / EXAMPLE_FILES[name]


def show(source: Any, *, ranks: Any = None, align: Any = None, critical_path: Any = None,
         icicle: str = "", advice: Any = False, **options: Any) -> TraceWidget | CompareView:
    """Show a trace (path, bytes, file object, loaded Trace, or a TraceSet -- also what
    ``profview.load`` gives for a multi-host XSpace run directory: its
    ranks, or those in ``ranks`` (``ts.combined()``), as ``rank N`` sections of
    their process groups, each collapsed to one busy lane until clicked; ``align="step"``
    lines the ranks up on their first common ProfilerStep) in the widget.
    ``critical_path``: a `CriticalPath` of this trace (or of
    one rank of this TraceSet) to draw on it (``TraceWidget.show_critical_path``); ``icicle``: a
    node kind (``"annotation"``, ``"module"``, ``"stack"``, ``"op"``) whose GPU-time icicle to show
    (``TraceWidget.show_icicle``); ``advice``: ``True`` (or an ``Advice`` of this trace) shows the
    findings of ``profview.advise`` in a panel above the table (``TraceWidget.show_advice``)."""
    from .analysis.compare import Comparison
    from .loader import host_files, load
    from .model import Trace
    from .ranks import TraceSet, load_many
    from .widget import TraceWidget

    if isinstance(source, Comparison):  # two runs side by side
        from .widget.compare import CompareView

        return CompareView(source, **options)
    if not isinstance(source, (Trace, TraceSet)):
        hosts = host_files(source)  # a multi-host XSpace run directory: its hosts as ranks
        source = load_many(hosts) if hosts is not None and len(hosts) > 1 else load(source)
    if isinstance(source, TraceSet):
        from .widget.ranks import show_ranks

        widget = show_ranks(source, ranks, align=align, **options)
    else:
        if align is not None:
            raise ValueError("align= needs a TraceSet (profview.load_many)")
        widget = TraceWidget(source, **options)
    if critical_path is not None:
        widget.show_critical_path(critical_path, source=source)
    if icicle:
        widget.show_icicle(icicle)
    if advice is not False and advice is not None:
        widget.show_advice(None if advice is True else advice)
    return widget  # type: ignore[no-any-return]


def advise(source: Any, *, annotation: str | None = STEP_ANNOTATION, rank: int | None = None) -> Any:
    """What is wrong with a trace (a path, a loaded Trace or a TraceSet), biggest first: the
    findings of `jupyter_profview.analysis.advise`, with the time at stake and the evidence.
    `profview.show(trace, advice=True)` shows them beside the timeline."""
    from .analysis import advise as run
    from .loader import load
    from .model import Trace
    from .ranks import TraceSet

    if not isinstance(source, (Trace, TraceSet)):
        source = load(source)
    return run(source, annotation=annotation, rank=rank)


def sql(trace: Trace | TraceSet, query: str) -> Any:
    """A DuckDB query over a Trace's tables (``events``, ``memory``, ``flows`` ...) or a
    TraceSet's (``trace.sql(query)``); returns a DataFrame."""
    from .ranks import TraceSet

    if isinstance(trace, TraceSet):
        return trace.sql(query)
    from .query import trace_sql

    return trace_sql(trace, query)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_profview``: registers ``%profview`` and ``%%profview``."""
    from .magics import register

    register(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jupyter_profview``: removes ``%profview`` and ``%%profview``."""
    from .magics import unregister

    unregister(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension is (``jupyter labextension develop .`` uses it)."""
    return [{"src": "labextension", "dest": "jupyter-profview"}]
