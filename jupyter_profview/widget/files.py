"""Which files a view's panels may open or write ([`ViewFiles`][jupyter_profview.widget.files.ViewFiles]).

The compare panel opens a second trace and the Perfetto panel writes one next to the trace.  In
the notebook the kernel reads what the user could read anyway (paths relative to the working
directory); in a JupyterLab tab or on the `profview serve` page the server's worker sets `root`
(and `scope`, `allow_hidden`) and every path goes through the server's one rule,
`sources.confine`; messages name paths relative to the root only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import ProfviewError
from ..sources import confine


@dataclass
class ViewFiles:
    """`root`: the server root (None in the notebook); `trace_file`: the file (or run directory)
    the view shows, where the trace has one."""

    root: Path | None = None
    scope: Path | None = None
    allow_hidden: bool = False
    trace_file: Path | None = None

    def open(self, asked: str) -> Path:
        """The file ``asked`` names (relative to the root on a server), or a `ProfviewError`."""
        if not isinstance(asked, str) or not asked.strip():
            raise ProfviewError("no file given", expected="a path to a second trace")
        if self.root is None:
            return Path(asked).expanduser()
        return confine(self.root, asked, scope=self.scope, allow_hidden=self.allow_hidden)

    def writable(self, path: Path) -> Path:
        """``path`` when its directory may be written (inside the root on a server), or a
        `ProfviewError` naming it."""
        parent = path.parent
        if self.root is not None and not parent.resolve().is_relative_to(self.root.resolve()):
            raise ProfviewError("is outside the server root", source=self.shown(path))
        if not os.access(parent, os.W_OK | os.X_OK):
            where = self.shown(parent)
            raise ProfviewError("cannot be written: its directory is not writable", source=self.shown(path),
                                expected=f"write access to {'the server root' if where == '.' else where}")
        return path

    def shown(self, path: Path) -> str:
        """``path`` as the user may be told it: relative to the root on a server."""
        if self.root is not None:
            try:
                return str(path.resolve().relative_to(self.root.resolve()))
            except ValueError:
                return path.name
        return str(path)
