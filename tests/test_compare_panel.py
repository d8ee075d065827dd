"""The compare and "Open in Perfetto" panels through the server worker's session (what a Lab tab or
the serve page sends) and the notebook's: the compare rows are `changes(profview.compare(a, b))`,
paths are confined to the root by `sources.confine`, and the .pftrace lands next to the trace."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from jupyter_profview.analysis.compare_view import changes
from jupyter_profview.server import wire, worker
from jupyter_profview.widget.session import ViewSession

HTA = Path(__file__).parent / "data" / "hta"
BASE, TEST = HTA / "trace_compare_base_base.json.gz", HTA / "trace_compare_test_test.json.gz"


def ask(sid: str, **request: Any) -> dict[str, Any]:
    msg, _ = wire.decode(worker.set_traits(sid, {"_panel_request": request}))
    return msg


def test_compare_through_the_worker_is_the_comparison(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(BASE, root / "a.json.gz")
    shutil.copy(TEST, root / "b.json.gz")
    (tmp_path / "outside.json.gz").write_bytes(TEST.read_bytes())
    sid = "c0mpare000000001"
    worker.open_session(sid, str(root / "a.json.gz"), "a.json.gz", {"root": str(root)})
    try:
        msg = ask(sid, panel="compare")
        assert msg["_compare"]["ask"] is True and msg["_panel_status"]["shown"] is True
        msg = ask(sid, panel="compare", path="b.json.gz")
        assert msg["_panel_status"]["error"] == ""
        table = changes(profview.compare(BASE, TEST))
        got = msg["_compare"]["rows"]
        assert [r["name"] for r in got] == [str(n) for n in table.index]
        cols = ("delta", "self_a", "self_b", "count_a", "count_b", "status")
        assert [tuple(r[k] for k in cols) for r in got] == \
            list(zip(table["delta"], table["self_a"], table["self_b"], table["count_a"], table["count_b"],
                     table["status"], strict=True))
        for path, text in (("../outside.json.gz", "../outside.json.gz: is outside the server root"),
                           ("nope.json", "nope.json: no such file")):
            msg = ask(sid, panel="compare", path=path)
            assert msg["_panel_status"]["error"] == text and msg["_panel_status"]["shown"] is False
    finally:
        worker.close(sid)


def test_open_in_perfetto_writes_next_to_the_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(BASE, root / "a.json.gz")
    sid = "perfett000000001"
    worker.open_session(sid, str(root / "a.json.gz"), "a.json.gz", {"root": str(root)})
    try:
        msg = ask(sid, panel="perfetto")
        assert msg["_perfetto"]["path"] == "a.pftrace"
        assert len(profview.load(root / "a.pftrace").events) == len(profview.load(BASE).events)
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda p, mode: False if Path(p) == root else real_access(p, mode))
        msg = ask(sid, panel="perfetto")
        assert msg["_panel_status"]["error"] == \
            "a.pftrace: cannot be written: its directory is not writable " \
            "(expected write access to the server root)"
    finally:
        worker.close(sid)


def test_the_notebook_session_compares_paths_of_the_kernel(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(TEST, tmp_path / "b.json.gz")
    s = ViewSession(profview.load(BASE))
    out = s.open_panel({"panel": "compare", "path": "b.json.gz"})
    want = changes(profview.compare(BASE, TEST))["delta"]
    assert [r["delta"] for r in out["_compare"]["rows"]] == list(want)
