"""The interface of a panel of a view ([`Panel`][jupyter_profview.widget.panel.Panel]); the list of them is
[`PANELS`][jupyter_profview.widget.panels.PANELS].

A panel (the timeline, the memory curves, the table, the findings, a step's critical path, the
icicle, the colouring, the rank sections) is one class, in its own module, that lives inside the
one [`ViewSession`][jupyter_profview.widget.session.ViewSession]: it holds its state, says which
synced traits ([`TRAITS`][jupyter_profview.widget.traits.TRAITS]) and which commands of the RPC
are its own, and answers them.  Every front end reaches it the same way: the notebook widget
through traitlets and anywidget commands, a JupyterLab tab and `profview serve` through the
server worker's session over HTTP, `save_html` through the traits it writes.

The TypeScript side has the same list (`js/src/panels.ts`, one module per panel that draws it);
`tests/test_panels.py` fails when the two lists name different panels, or when a trait or a
command belongs to no panel or to two.

Adding a panel: `docs/site_src/panels.md`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

import numpy as np

from .files import ViewFiles
from .requests import Reply, RequestError
from .state import WidgetData

#: tokens of what a view is sent (a zoom, a highlight, a panel's frame): each one new, so that the
#: front end tells a request from the last one
TOKENS = itertools.count(1)

#: what a panel's command handler takes and returns: the panel, the request; `(reply, buffers)`
Command = Callable[[Any, Any], Reply]


class ViewSession(Protocol):
    """What a panel sees of the session that holds it
    ([`ViewSession`][jupyter_profview.widget.session.ViewSession])."""

    data: WidgetData
    source: Any
    selected: np.ndarray
    selection_error: str | None
    extent: tuple[float, float]
    first_view: tuple[float, float]
    panels: dict[str, Panel]
    files: ViewFiles

    @property
    def trace(self) -> Any: ...

    @property
    def traceset(self) -> Any: ...

    def zoom(self, start: float, end: float) -> dict[str, Any]: ...

    def highlight(self, pos: np.ndarray, *, zoom: bool = True, first_track: int | None = None
                  ) -> dict[str, Any]: ...

    def select(self, pos: np.ndarray, *, highlight: bool = False, first_track: int | None = None
               ) -> dict[str, Any]: ...

    def open_panel(self, request: Any) -> dict[str, Any]: ...


class Panel:
    """One panel of a view (see the module doc).  A subclass sets:

    - `name`: the name both registries use (`PANELS` here, `js/src/panels.ts`);
    - `traits`: the synced traits it owns (those it sends and those the browser sets for it);
    - `commands`: the RPC commands it answers, name -> method (called with the request);
    - `toolbar`: the label of its button in the view's toolbar, or None (always shown).

    and overrides `state` (its traits' first values), `apply` (a trait the browser set: returns the
    traits changed in answer), `open` / `close` (the toolbar's button: `_panel_request`) and
    `selection_changed` (the user selected something: traits to send again, e.g. the icicle of a
    range).
    """

    name: ClassVar[str] = ""
    traits: ClassVar[tuple[str, ...]] = ()
    commands: ClassVar[Mapping[str, str]] = {}
    toolbar: ClassVar[str | None] = None

    def __init__(self, session: ViewSession) -> None:
        self.session = session

    def state(self) -> dict[str, Any]:
        """The panel's synced traits when the view opens."""
        return {}

    def apply(self, name: str, value: Any) -> dict[str, Any]:
        """Apply trait `name` set by the browser; the traits changed in answer."""
        raise RequestError(f"trait {name!r} cannot be set from the browser")

    def open(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Show the panel (its toolbar button); the traits that show it."""
        raise RequestError(f"panel {self.name!r} has no toolbar button")

    def close(self) -> dict[str, Any]:
        """Hide the panel (its toolbar button pressed again); the traits that hide it."""
        return {}

    def selection_changed(self, sel: Any) -> dict[str, Any]:
        """The browser's `_selection` changed to `sel` (already applied to the session)."""
        return {}

    def command(self, name: str, msg: Any) -> Reply:
        """Answer command `name` (one of `commands`)."""
        handler: Callable[[Any], Reply] = getattr(self, self.commands[name])
        return handler(msg)
