"""One trait spec and one view session for both front ends.

The spec (`jupyter_profview/widget/traits.py`) is the only list of the synced traits: the
TypeScript side reads the file generated from it, the widget's traitlets are made from it, and the
session applies exactly the traits it marks as the session's.  Driven as the front ends drive
them: traits assigned on the widget, `apply` / `call` on the session the server's worker holds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import traitlets

import jupyter_profview as profview
from jupyter_profview.widget import traits
from jupyter_profview.widget.requests import RequestError
from jupyter_profview.widget.session import COMMANDS, SETTERS, ViewSession
from tests.widget_helpers import flat_trace

pytest.importorskip("anywidget")

ROOT = Path(__file__).parent.parent
DDP = ROOT / "tests" / "data" / "ddp"

_PYTHON = {traitlets.Dict: "object", traitlets.Bytes: "bytes", traitlets.Unicode: "str", traitlets.Int: "int",
           traitlets.Bool: "bool"}


def test_the_typescript_spec_is_generated_from_the_python_one() -> None:
    committed = (ROOT / traits.TS_PATH).read_text(encoding="utf-8")
    assert committed == traits.typescript(), "run: python -m jupyter_profview.widget.traits"
    # every trait is in the TypeScript interface, with its TS type
    for t in traits.TRAITS:
        assert f"  {t.name}: " in committed, t.name


def test_the_widget_syncs_the_traits_of_the_spec_with_their_types() -> None:
    from jupyter_profview.widget.widget import TraceWidget

    w = TraceWidget(flat_trace(50))
    own = {"_model_name", "_model_module", "_model_module_version", "_view_name", "_view_module",
           "_view_module_version", "_view_count", "_dom_classes", "layout", "tabbable", "tooltip",
           "_esm", "_css", "_anywidget_id", "comm", "keys", "log"}
    synced = {name: trait for name, trait in w.traits(sync=True).items() if name not in own}
    assert set(synced) == set(traits.BY_NAME)
    for name, trait in synced.items():
        kind = traits.BY_NAME[name].type
        if isinstance(trait, traitlets.List):
            inner = trait._trait
            assert kind == {None: "list[object]", traitlets.Unicode: "list[str]",
                            traitlets.Int: "list[int]"}[None if inner is None else type(inner)], name
        else:
            assert kind == _PYTHON[type(trait)], name
    # ... and answers every command of the session
    for name in COMMANDS:
        reply, _ = getattr(w, name)({"bad": True}, [])
        assert "error" in reply, name


def test_the_session_applies_exactly_the_traits_the_spec_gives_it() -> None:
    kept = {t.name for t in traits.TRAITS if t.session and t.browser_sets}
    assert set(SETTERS) == kept
    s = ViewSession(flat_trace(50))
    # a view starts with every trait the session keeps (what the server's `state` endpoint sends)
    assert {t.name for t in traits.TRAITS if t.session} <= set(s.state()) <= set(traits.BY_NAME)
    for t in traits.TRAITS:
        if t.name not in kept:
            with pytest.raises(RequestError, match="cannot be set"):
                s.apply({t.name: None})
    with pytest.raises(RequestError, match="color_by"):
        s.apply({"color_by": "rainbow"})
    changed = s.apply({"color_by": "phase"})
    # a new colouring: the legend, the boxes and the collapsed groups' busy lanes (their colour codes)
    assert set(changed) == {"_info", "_overview", "_summary", "color_by"}
    assert changed["_info"]["color_by"] == "phase"


def test_a_tab_keeps_its_ranks_as_the_widget_does(tmp_path: Path) -> None:
    """The server's session (a lab tab) filters a range selection by `shown_ranks`, as the
    notebook widget does: the same session class behind both."""
    pytest.importorskip("pyarrow")
    from tests.format_helpers import read_json

    docs = {d["distributedInfo"]["rank"]: d for d in map(read_json, sorted(DDP.glob("*.json.gz")))}
    ts = profview.load_many(DDP, cache=tmp_path, progress=False)
    session = ViewSession(ts.combined())
    duration = float(session.trace.duration)
    session.apply({"shown_ranks": [1, 3]})
    session.apply({"_selection": {"range": [0.0, duration], "tracks": None}})
    # slices and instants of ranks 1 and 3, counted in the files
    want = sum(1 for r in (1, 3) for e in docs[r]["traceEvents"]
               if e.get("ph") == "X" or (e.get("ph") in ("i", "I") and e.get("name") != "[memory]"))
    assert len(session.selected) == want
    reply, _ = session.call("_table", {"mode": "selection"})
    assert reply["count"] == want
    with pytest.raises(RequestError, match="shown_ranks"):
        session.apply({"shown_ranks": "1"})
    session.apply({"shown_ranks": []})
    session.apply({"_selection": {"range": [0.0, duration + 1], "tracks": None}})
    assert len(session.selected) == len(session.trace.events)
    assert np.array_equal(session.selected, np.arange(len(session.trace.events)))


