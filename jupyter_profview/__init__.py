"""jupyter_profview: look at deep-learning profiler traces inside a notebook.

>>> import jupyter_profview as profview
>>> t = profview.load("trace.json.gz")     # format sniffed from content
>>> t.events.head()                          # one row per timed slice
>>> profview.summary(t)                      # per op type: count, total, self, share
>>> profview.show(t)                         # the interactive widget
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .analysis import phases, summary, top
from .errors import ProfviewError
from .loader import load
from .model import Quality, Trace

if TYPE_CHECKING:
    from .widget import TraceWidget

try:
    __version__ = version("jupyter_profview")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

EXAMPLES = Path(__file__).parent / "examples"

__all__ = ["EXAMPLES", "ProfviewError", "Quality", "Trace", "example", "formats", "load", "phases", "show",
           "summary", "top"]


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


def show(source: Any, **options: Any) -> TraceWidget:
    """Show a trace (path, bytes, file object or loaded Trace) in the widget."""
    from .widget import TraceWidget

    trace = source if isinstance(source, Trace) else load(source)
    return TraceWidget(trace, **options)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_profview``: registers ``%profview`` and ``%%profview``."""
    from .magics import register

    register(ipython)
