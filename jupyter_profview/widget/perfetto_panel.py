"""The "Open in Perfetto" action: the view's trace written with
[to_perfetto][jupyter_profview.export.to_perfetto] next to its file (``trace.json`` ->
``trace.pftrace``; on a server inside the root, named relative to it), and where it went, with
the way to open it at https://ui.perfetto.dev (the browser opens that page; profview makes no
network call).  A directory that cannot be written is the package's error, shown as a message.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ProfviewError
from ..export import perfetto_path, pftrace_next_to, to_perfetto
from .panel import TOKENS, Panel


class PerfettoPanel(Panel):
    """Writes the trace as a Perfetto protobuf trace (see the module doc)."""

    name = "perfetto"
    traits = ("_perfetto",)
    toolbar = "Open in Perfetto"

    def state(self) -> dict[str, Any]:
        return {"_perfetto": {}}

    def target(self) -> Path:
        """Where the trace is written: next to its file (a run directory: inside it)."""
        f = self.session.files.trace_file
        if f is None:
            return perfetto_path(self.session.trace)
        if f.is_dir():
            return f / f"{f.name or 'trace'}.pftrace"
        return pftrace_next_to(f)

    def open(self, args: Mapping[str, Any]) -> dict[str, Any]:
        files = self.session.files
        path = files.writable(self.target())
        try:
            written = to_perfetto(self.session.trace, path)
        except OSError as exc:
            raise ProfviewError(f"cannot be written: {exc.strerror or exc}",
                                source=files.shown(path)) from None
        return {"_perfetto": {"path": files.shown(written), "bytes": written.stat().st_size,
                              "token": next(TOKENS)}}

    def close(self) -> dict[str, Any]:
        return {"_perfetto": {}}

