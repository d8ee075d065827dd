"""The synced traits of a view, listed once.

Every front end of a view reads this list: [`TraceWidget`][jupyter_profview.widget.widget.TraceWidget]
makes its traitlets from it, the server's worker refuses a trait the browser may not set, and the
TypeScript side reads `js/src/trait_spec.ts`, which is generated from it
(`python -m jupyter_profview.widget.traits`; `tests/test_widget_traits.py` fails when the
committed file differs from what this module writes).

Each [`Trait`][jupyter_profview.widget.traits.Trait] says:

- `type`: its value (`object`, `bytes` for a binary frame, `str`, `int`, `bool`, `list[str]`, `list[int]`,
  `list[object]`);
- `set_by`: who changes it: `kernel` (kernel -> browser), `browser` (browser -> kernel) or `both`;
- `session`: kept by the [`ViewSession`][jupyter_profview.widget.session.ViewSession] (by one of its
  panels, `widget/panels.py`), so the server's worker holds it too (a lab tab sends it); the
  others stay in the browser over HTTP (the window, collapsed groups, layout);
- `view`: the view redraws when it changes (the TypeScript `VIEW_TRAITS`);
- `saved`: written into `save_html`'s page (a transient request or pick is not).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import traitlets

TraitType = Literal["object", "bytes", "str", "int", "bool", "list[str]", "list[int]", "list[object]"]
SetBy = Literal["kernel", "browser", "both"]


@dataclass(frozen=True)
class Trait:
    """One synced trait of a view (see the module doc for its fields)."""

    name: str
    type: TraitType
    set_by: SetBy
    doc: str
    default: Any = None
    session: bool = False
    view: bool = True
    saved: bool = True

    @property
    def browser_sets(self) -> bool:
        """Whether the browser may set it (`model.set` + `save_changes`)."""
        return self.set_by in ("browser", "both")

    def traitlet(self) -> traitlets.TraitType[Any, Any]:
        """The traitlet of [`TraceWidget`][jupyter_profview.widget.widget.TraceWidget], tagged `sync`."""
        makers: dict[str, Callable[[], traitlets.TraitType[Any, Any]]] = {
            "object": lambda: traitlets.Dict(),
            "bytes": lambda: traitlets.Bytes(b""),
            "str": lambda: traitlets.Unicode(self.default or ""),
            "int": lambda: traitlets.Int(self.default or 0),
            "bool": lambda: traitlets.Bool(bool(self.default)),
            "list[str]": lambda: traitlets.List(traitlets.Unicode()),
            "list[int]": lambda: traitlets.List(traitlets.Int()),
            "list[object]": lambda: traitlets.List(),
        }
        return makers[self.type]().tag(sync=True)


TRAITS: tuple[Trait, ...] = (
    # kernel -> browser
    Trait("_info", "object", "kernel", "format, units, legend, ranks and offsets of the trace", session=True),
    Trait("_tracks", "list[object]", "kernel", "one entry per track: process, thread, group, lane name, "
          "depths (and rank for several ranks)", session=True),
    Trait("_overview", "bytes", "kernel", "the whole trace's timeline at overview resolution", session=True),
    Trait("_memory", "bytes", "kernel", "the memory curves' overview", session=True),
    Trait("_nodes", "bytes", "kernel", "graph nodes (traces without timed events)", session=True),
    Trait("_summary", "bytes", "kernel", "busy / communication lanes of collapsed groups", session=True),
    Trait("_highlight", "bytes", "kernel", "ids of the highlighted events", session=True),
    Trait("_zoom_request", "object", "kernel", "{start, end, token}: show this window", session=True),
    Trait("_critical_path", "bytes", "kernel", "the critical path shown (its segments and edges)",
          session=True),
    Trait("_icicle", "bytes", "kernel", "the icicle's boxes", session=True),
    Trait("_stage_lanes", "object", "kernel", "the pipeline stage lanes and their table "
          "(widget/stage_lanes.py)", session=True),
    Trait("_alloc_timeline", "bytes", "kernel", "the active memory timeline of a memory snapshot: its "
          "largest allocations as bands, the rest as one band (widget/alloc_timeline.py)", session=True),
    Trait("_segments", "bytes", "kernel", "the segments and blocks of a memory snapshot at the selected time",
          session=True),
    Trait("_kernel_selection", "object", "kernel", "{token, count}: the kernel changed the selection",
          session=True, saved=False),
    Trait("_advice", "object", "kernel", "{findings, window, token}: the findings of advise shown above the "
          "table", session=True),
    Trait("_finding", "bytes", "kernel", "the picked finding (meta: finding, rule, token); for gpu_idle its "
          "idle intervals (start, end) and its GPU's tracks, shaded (widget/advice.py)", session=True),
    Trait("_compare", "object", "kernel", "{a, b, align, offset, unit, summary, rows, total, token} or "
          "{ask}: the compare panel (widget/compare_panel.py)", session=True),
    Trait("_perfetto", "object", "kernel", "{path, bytes, token}: where Open in Perfetto saved the trace",
          session=True, saved=False),
    Trait("_panel_status", "object", "kernel", "{panel, shown, error, token}: what the last toolbar request "
          "did", session=True, saved=False),
    # both ways
    Trait("icicle_by", "str", "both", "the icicle's node kind ('' hides it)", session=True,
          view=False),
    Trait("icicle_measure", "str", "both", "what sizes the icicle's boxes: 'gpu' or 'cpu'", default="gpu",
          session=True, view=False),
    Trait("critical_path_instance", "int", "both", "the step whose critical path is shown, -1 for none",
          default=-1, session=True, view=False),
    Trait("color_by", "str", "both", "'category', 'phase' or a kernel / collective number "
          "(widget/metric_colors.py)", default="category", session=True),
    Trait("show_wrappers", "bool", "both", "draw the lanes holding only the profiler's own records "
          "(derived.wrapper_mask: Kineto's PyTorch Profiler span and markers); hidden by default",
          default=False, session=True),
    Trait("collapsed_groups", "list[str]", "both", "keys of the groups drawn collapsed (a process, or a "
          "'rank N' section)"),
    Trait("shown_ranks", "list[int]", "both", "the ranks shown ([] for all)", session=True),
    Trait("split_layout", "object", "both", "heights (px) the user dragged the timeline and table to"),
    # browser -> kernel
    Trait("_view", "object", "browser", "{start, end}: the window the user sees (the widget's `visible`)",
          view=False),
    Trait("_selection", "object", "browser", "{ids} or {range, tracks}: what the user selected",
          session=True, view=False),
    Trait("_icicle_pick", "object", "browser", "{node, token}: a clicked icicle node", session=True,
          view=False, saved=False),
    Trait("_advice_pick", "object", "browser", "{finding, token}: a clicked finding",
          session=True, view=False, saved=False),
    Trait("_compare_pick", "object", "browser", "{row, token}: a clicked compare row (its op "
          "highlighted in A)",
          session=True, view=False, saved=False),
    Trait("_stage_pick", "object", "browser", "{stage} or {action}, token: a clicked stage row or action",
          session=True, view=False, saved=False),
    Trait("_memview_request", "object", "browser", "{start, end} / {time} / {device}: the memory "
          "snapshot panel's window, selected time or device", session=True, view=False, saved=False),
    Trait("_panel_request", "object", "browser", "{panel, show, token, ...}: a toolbar button (show or hide "
          "a panel; js/src/panels.ts)", session=True, view=False, saved=False),
)

"""The synced traits of a view: the one list (see the module doc)."""

BY_NAME = {t.name: t for t in TRAITS}

_TS_TYPES = {"object": "Record<string, unknown>", "bytes": "DataView", "str": "string", "int": "number",
             "bool": "boolean",
             "list[str]": "string[]", "list[int]": "number[]",
             "list[object]": "Array<Record<string, unknown>>"}
TS_PATH = Path("js") / "src" / "trait_spec.ts"


def typescript() -> str:
    """The text of `js/src/trait_spec.ts`: the `Traits` type and the spec as constants."""
    lines = [
        "// Generated from jupyter_profview/widget/traits.py by `python -m jupyter_profview.widget.traits`;",
        "// do not edit (tests/test_widget_traits.py checks that it is up to date).",
        "",
        "/** The synced traits of a view and their values (a binary frame is a DataView). */",
        "export interface Traits {",
        *[f"  /** {t.doc} */\n  {t.name}: {_TS_TYPES[t.type]};" for t in TRAITS],
        "}",
        "export type TraitName = keyof Traits;",
        "",
        'export interface TraitSpec { setBy: "kernel" | "browser" | "both"; session: boolean; '
        "view: boolean; saved: boolean }",
        "",
        "export const TRAIT_SPEC: Readonly<Record<TraitName, TraitSpec>> = {",
        *[f"  {t.name}: {json.dumps(spec)}," for t in TRAITS
          for spec in [{"setBy": t.set_by, "session": t.session, "view": t.view, "saved": t.saved}]],
        "};",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # python -m jupyter_profview.widget.traits [path]
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else TS_PATH
    out.write_text(typescript(), encoding="utf-8")
    print(f"wrote {out}")
