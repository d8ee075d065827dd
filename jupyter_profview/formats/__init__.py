"""The format registry: one module per trace format, sniffed from content.

A format module defines ``FORMAT = TraceFormat(name, description, sniff,
load)``.  ``sniff(head)`` gets the first 64 KiB of decompressed content and
says whether the module can read it; ``load(source)`` returns a Trace or
raises ProfviewError.  Adding a format = one new module + one line in
``_MODULES``.  Order matters: more specific formats are sniffed first.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ProfviewError

if TYPE_CHECKING:  # not at run time: the registry itself stays cheap to import
    from ..model import Trace
    from ..sources import Source

_MODULES = (
    "megengine_json",
    "chrome",
    "perfetto",
    "tf_step_stats",
    "xspace",
    "torch_memory",
    "torch_snapshot",
    "chainer_graph",
    "tf_node_shapes",
    "tf_node_order",
)


@dataclass(frozen=True)
class TraceFormat:
    name: str
    description: str
    sniff: Callable[[bytes], bool]
    load: Callable[[Source], Trace]
    #: ``load(source)`` restricted to a time window (``profview.load(..., window=)``); None: the
    #: format refuses ``window=``
    load_window: Callable[[Source, tuple[int, int]], Trace] | None = None


def registry() -> list[TraceFormat]:
    """All formats, in sniffing order."""
    return [importlib.import_module(f"{__name__}.{m}").FORMAT for m in _MODULES]


def by_name(name: str) -> TraceFormat:
    for fmt in registry():
        if fmt.name == name:
            return fmt
    known = ", ".join(f.name for f in registry())
    raise ProfviewError(f"unknown format {name!r}", expected=f"one of: {known}")


def detect(source: Source) -> TraceFormat:
    head = source.head()
    if not head.strip():
        raise ProfviewError("the input is empty", source=source.name, expected="a trace")
    for fmt in registry():
        if fmt.sniff(head):
            return fmt
    known = "\n".join(f"  {f.name}: {f.description}" for f in registry())
    raise ProfviewError(
        f"unrecognised trace format; the input starts with {head[:80]!r}",
        source=source.name,
        expected=f"one of the supported formats:\n{known}",
    )
