"""One panel list on each side: `PANELS` of `jupyter_profview/widget/panels.py` and `PANELS` of
`js/src/panels.ts` (read from the TypeScript source) name the same panels in the same order with
the same toolbar labels; every synced trait and every command belongs to exactly one panel, and
every trait the view redraws on has a TypeScript drawer in the panel that owns it in Python."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from jupyter_profview.widget import traits
from jupyter_profview.widget.panels import COMMAND_OWNER, PANELS, TRAIT_OWNER
from jupyter_profview.widget.requests import CommandFailed
from jupyter_profview.widget.session import ViewSession
from tests.widget_helpers import flat_trace

SRC = Path(__file__).parent.parent / "js" / "src"
_MODULE = re.compile(r"const (\w+): PanelModule = \{(.*?)\n?\};", re.S)


def ts_panels() -> list[dict[str, object]]:
    """The TypeScript registry: the entries of `PANELS` in panels.ts, each found where it is
    defined (any module of js/src), with its name, traits and toolbar label."""
    defined: dict[str, dict[str, object]] = {}
    for path in sorted(SRC.glob("*.ts")):
        for const, body in _MODULE.findall(path.read_text(encoding="utf-8")):
            name = re.search(r'name: "(\w+)"', body)
            trait_list = re.search(r"traits: \[(.*?)\]", body, re.S)
            toolbar = re.search(r'toolbar: "([^"]*)"', body)
            assert name and trait_list, f"{path.name}: {const} has no name or traits"
            assert const not in defined, f"{const} is defined twice"
            defined[const] = {"name": name.group(1), "traits": re.findall(r'"(\w+)"', trait_list.group(1)),
                              "toolbar": toolbar.group(1) if toolbar else None, "file": path.name}
    listed = re.search(r"export const PANELS: readonly PanelModule\[\] = \[(.*?)\];",
                       (SRC / "panels.ts").read_text(encoding="utf-8"), re.S)
    assert listed, "js/src/panels.ts has no PANELS list"
    names = re.findall(r"\w+", listed.group(1))
    unlisted = set(defined) - set(names)
    assert not unlisted, f"panel modules not in js/src/panels.ts PANELS: {sorted(unlisted)}"
    return [defined[n] for n in names]


def test_both_registries_name_the_same_panels() -> None:
    ts = ts_panels()
    assert [p["name"] for p in ts] == [p.name for p in PANELS]
    assert [p["toolbar"] for p in ts] == [p.toolbar for p in PANELS]
    assert [p.toolbar for p in PANELS if p.toolbar] == ["What's wrong", "Critical path", "Breakdown",
                                                     "Compare with…", "Open in Perfetto",
                                                     "Stage lanes"]


def test_every_trait_and_command_has_one_panel() -> None:
    owned = [t for p in PANELS for t in p.traits]
    assert sorted(owned) == sorted(traits.BY_NAME), "a trait belongs to no panel, or to two"
    commands = [c for p in PANELS for c in p.commands]
    assert len(commands) == len(set(commands)) == len(COMMAND_OWNER)
    # every command answers (its method exists), as the session routes it
    s = ViewSession(flat_trace(20))
    for name in commands:
        reply, _ = s.call(name, {"bad": True})
        assert "error" in reply, name


def test_every_redrawn_trait_is_drawn_by_its_panel() -> None:
    drawn = {t: p["name"] for p in ts_panels() for t in p["traits"]}  # type: ignore[attr-defined]
    assert len(drawn) == sum(len(p["traits"]) for p in ts_panels()), "a trait drawn by two TS panels"  # type: ignore[arg-type]
    for name, panel in drawn.items():
        assert TRAIT_OWNER[name].name == panel, f"{name}: drawn by {panel}, owned by {TRAIT_OWNER[name].name}"
    view = {t.name for t in traits.TRAITS if t.view}
    assert set(drawn) == view


NCCL = Path(__file__).parent / "data" / "hta" / "nccl_parser_config_nccl_data.json.gz"


def test_a_tab_opens_the_panels_through_the_servers_worker() -> None:
    """What a Lab tab's toolbar sends (`POST .../traits` -> `worker.set_traits`): the findings, the
    critical path and the icicle come back framed, their numbers the analyses' own."""
    import jupyter_profview as profview
    from jupyter_profview.analysis import attribute, critical_path
    from jupyter_profview.server import wire, worker
    from jupyter_profview.widget.codec import decode_frame

    sid = "0123456789abcdef"
    worker.open_session(sid, str(NCCL))
    try:
        t = profview.load(NCCL)
        msg, _ = wire.decode(worker.set_traits(sid, {"_panel_request": {"panel": "advice", "token": 1}}))
        assert msg["_panel_status"]["error"] == "" and msg["_panel_status"]["shown"] is True
        f = profview.advise(t).findings
        assert [(r["rule"], r["time"], r["share"]) for r in msg["_advice"]["findings"]] == \
            list(zip(f["rule"], f["time"], f["share"], strict=True))

        msg, _ = wire.decode(worker.set_traits(sid, {"_panel_request": {"panel": "critical_path"}}))
        cp = critical_path(t)
        meta = decode_frame(msg["_critical_path"]).meta
        assert (meta["length"], meta["instance"], meta["events"]) == (cp.length, 0, len(cp.events))
        msg, _ = wire.decode(worker.set_traits(sid, {"critical_path_instance": 1}))
        assert decode_frame(msg["_critical_path"]).meta["length"] == critical_path(t, instance=1).length

        msg, _ = wire.decode(worker.set_traits(sid, {"_panel_request": {"panel": "icicle"}}))
        frame = decode_frame(msg["_icicle"])
        tree = attribute(t, "annotation", merge_steps=True)
        assert len(frame.columns["node"]) == len(tree)
        assert frame.meta["total"] == float(tree.loc[tree["parent"] == -1, "gpu_total"].sum())

        # a bad request: the package's message in _panel_status, nothing shown
        msg, _ = wire.decode(worker.set_traits(sid, {"_panel_request": {"panel": "icicle", "by": "x"}}))
        assert msg["_panel_status"]["shown"] is False and "by must be one of" in msg["_panel_status"]["error"]
        with pytest.raises(CommandFailed) as failed:  # a refused request: an error status, its message
            worker.set_traits(sid, {"_panel_request": {"panel": "table"}})
        assert failed.value.status == 400
        assert "no panel 'table' opens from the toolbar" in failed.value.message
        # hiding: the panel's trait emptied
        msg, _ = wire.decode(worker.set_traits(sid, {"_panel_request": {"panel": "advice", "show": False}}))
        assert msg["_advice"] == {} and msg["_panel_status"]["shown"] is False
    finally:
        worker.close(sid)
