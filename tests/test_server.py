"""The jupyter-server extension over real HTTP: a jupyter server subprocess with the extension
enabled (as the wheel's config file does), and ``profview serve``.

Expected values come from the trace files (plain ``json``) or from the notebook widget's own
kernel side run in this process (the server must send what ``TraceWidget`` sends)."""

from __future__ import annotations

import http.cookiejar
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview.server import MAX_SESSIONS, wire
from jupyter_profview.widget import rpc
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.session import ViewSession
from tests.server_helpers import (
    Http,
    copy_run,
    jupyter_server,
    profview_serve,
    timeline_events,
    without_ranks_extra,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FIXTURE = "torch_mlp_train.json"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("server")
    (top / "secret.txt").write_text("outside the root\n")
    root = top / "root"
    root.mkdir()
    shutil.copy(DATA / FIXTURE, root / FIXTURE)
    # a truncated trace: a ProfviewError naming the file and position
    text = (DATA / FIXTURE).read_text()
    (root / "bad.pt.trace.json").write_text(text[: len(text) // 2])
    (root / "escape.json").symlink_to(top / "secret.txt")
    (root / ".hidden").mkdir()
    shutil.copy(DATA / FIXTURE, root / ".hidden" / FIXTURE)
    copy_run(root / "run")
    return root


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Http]:
    with jupyter_server(root, root.parent / "server.log") as http:
        yield http


def test_open_sends_the_widgets_initial_state(server: Http, root: Path) -> None:
    sid = server.open(FIXTURE)
    state = server.state(sid)
    status, body = server.request("GET", f"/profview/api/sessions/{sid}")
    assert status == 200 and json.loads(body)["state"] == "ready"
    # what TraceWidget would send for the same file, computed here in the test process, named as
    # the browser asked for it (issue 25, 7: never the server's absolute path)
    expected = ViewSession(profview.load(root / FIXTURE, name=FIXTURE)).state()
    assert state["_info"]["source"] == FIXTURE
    assert set(expected) <= set(state)
    for name, value in expected.items():
        if isinstance(value, bytes):
            assert state[name] == value, name
        else:
            assert json.loads(json.dumps(value)) == state[name], name
    # and from the file itself: complete events plus global/process instants are timeline events
    raw = json.loads((root / FIXTURE).read_text())["traceEvents"]
    timed = [e for e in raw if e.get("ph") == "X" or (e.get("ph") == "i" and e.get("s") in ("g", "p"))]
    assert state["_info"]["event_count"] == len(timed)
    assert state["_info"]["format"] == "chrome"


def test_detail_returns_a_frame_of_slices(server: Http, root: Path) -> None:
    sid = server.open(FIXTURE)
    info = server.state(sid)["_info"]
    msg = {"t0": 0.0, "t1": float(info["duration"]), "width": 800, "memory": True}
    reply, buffers = server.call(sid, "_detail", msg)
    assert reply["t0"] == 0.0 and reply["width"] == 800 and len(buffers) == 2
    frame = decode_frame(buffers[0])
    assert len(frame.columns["track"]) > 0
    # the same bytes as the widget's command handler on the same request
    data = rpc.WidgetData(profview.load(root / FIXTURE))
    _, local = rpc.detail(data, msg)
    assert buffers == local
    # an invalid request is an error status with the widget RPC's message (requests.failure),
    # never a 200
    status, body = server.request("POST", f"/profview/api/sessions/{sid}/call/_detail",
                                  {"t0": 5, "t1": 1, "width": 10})
    assert status == 400 and "t0 < t1" in json.loads(body)["message"]
    status, body = server.request("POST", f"/profview/api/sessions/{sid}/call/_nope", {})
    assert status == 400 and "unknown command" in json.loads(body)["message"]


def test_event_and_table_follow_the_selection(server: Http, root: Path) -> None:
    sid = server.open(FIXTURE)
    raw = json.loads((root / FIXTURE).read_text())["traceEvents"]
    longest = max((e for e in raw if e.get("ph") == "X"), key=lambda e: e["dur"])
    trace = profview.load(root / FIXTURE)
    event_id = int(trace.events.index[trace.events["name"] == longest["name"]][0])
    reply, _ = server.call(sid, "_event", {"id": event_id})
    assert reply["name"] == longest["name"]
    status, body = server.request("POST", f"/profview/api/sessions/{sid}/traits",
                                  {"_selection": {"ids": [event_id]}})
    assert status == 200 and wire.decode(body)[0] == {}
    reply, buffers = server.call(sid, "_table", {"mode": "selection"})
    assert reply["count"] == 1
    assert decode_frame(buffers[0]).columns["id"].tolist() == [event_id]
    # a new colour key re-sends the legend and the overview, as the widget's observer does
    status, body = server.request("POST", f"/profview/api/sessions/{sid}/traits", {"color_by": "phase"})
    changed = wire.decode(body)[0]
    assert changed["color_by"] == "phase" and changed["_info"]["color_by"] == "phase"
    assert isinstance(changed["_overview"], bytes) and len(changed["_overview"]) > 8
    status, body = server.request("POST", f"/profview/api/sessions/{sid}/traits", {"_info": {}})
    assert status == 400 and "cannot be set" in json.loads(body)["message"]


def test_paths_outside_the_root_are_refused(server: Http) -> None:
    for path in ("../../etc/passwd", "../secret.txt", "escape.json", "run/../../secret.txt"):
        status, body = server.request("POST", "/profview/api/sessions", {"path": path})
        assert status == 403, (path, body)
        assert "outside the server root" in json.loads(body)["message"]
    status, _ = server.request("POST", "/profview/api/sessions", {"path": "missing.json"})
    assert status == 404
    # hidden files are refused as the contents API refuses them (allow_hidden is off by default)
    status, body = server.request("POST", "/profview/api/sessions", {"path": f".hidden/{FIXTURE}"})
    assert status == 403 and "hidden" in json.loads(body)["message"]


def test_bad_file_is_a_400_with_the_profview_error(server: Http, root: Path) -> None:
    with pytest.raises(profview.ProfviewError) as local:
        profview.load(root / "bad.pt.trace.json")
    sid = server.open("bad.pt.trace.json")
    status, body = server.request("GET", f"/profview/api/sessions/{sid}/state")
    assert status == 400
    # where and what was expected, named as asked (no server path, no reason: it may quote the file)
    exc = local.value
    told = f"bad.pt.trace.json: {exc.position}: cannot be read as a trace (expected {exc.expected})"
    assert json.loads(body)["message"] == told
    status, body = server.request("GET", f"/profview/api/sessions/{sid}")
    assert json.loads(body)["state"] == "error" and json.loads(body)["error"] == told


def test_no_token_is_refused(server: Http) -> None:
    sid = server.open(FIXTURE)
    for method, path, body in (("GET", f"/profview/api/sessions/{sid}/state", None),
                               ("POST", "/profview/api/sessions", {"path": FIXTURE}),
                               ("POST", f"/profview/api/sessions/{sid}/call/_detail",
                                {"t0": 0, "t1": 1, "width": 1}),
                               ("DELETE", f"/profview/api/sessions/{sid}", None)):
        status, _ = server.request(method, path, body, token=False)
        assert status == 403, (method, path)
    assert server.request("GET", f"/profview/api/sessions/{sid}")[0] == 200


def test_close_and_eviction(server: Http) -> None:
    sid = server.open(FIXTURE)
    server.state(sid)
    assert server.request("DELETE", f"/profview/api/sessions/{sid}")[0] == 204
    status, body = server.request("GET", f"/profview/api/sessions/{sid}/state")
    assert status == 404 and "no open session" in json.loads(body)["message"]
    ids = [server.open(FIXTURE) for _ in range(MAX_SESSIONS + 1)]
    for sid in ids[1:]:
        server.state(sid)
    assert server.request("GET", f"/profview/api/sessions/{ids[0]}/state")[0] == 404
    assert all(server.request("GET", f"/profview/api/sessions/{sid}")[0] == 200 for sid in ids[1:])
    for sid in ids[1:]:
        assert server.request("DELETE", f"/profview/api/sessions/{sid}")[0] == 204


def test_run_directory_opens_every_rank(server: Http, root: Path) -> None:
    files = sorted((root / "run").glob("rank-*"))
    sid = server.open("run")
    state = server.state(sid)
    # all ranks, counted from each file's JSON on its own (a fallback to one file cannot pass)
    assert state["_info"]["event_count"] == sum(timeline_events(f) for f in files)
    status = json.loads(server.request("GET", f"/profview/api/sessions/{sid}")[1])
    assert status["run"] == {"mode": "ranks", "ranks": list(range(len(files)))}
    assert status["events"] == state["_info"]["event_count"]
    # a run opens as the notebook widget does: every rank collapsed to one busy lane
    assert state["collapsed_groups"] == [f"rank {r}" for r in range(len(files))]
    # the Parquet cache went to PROFVIEW_CACHE_DIR, nothing was written next to the traces
    assert sorted(p.name for p in (root / "run").iterdir()) == [f.name for f in files]
    assert server.request("DELETE", f"/profview/api/sessions/{sid}")[0] == 204


def test_run_directory_without_the_ranks_extra_opens_one_file_and_says_so(root: Path, tmp_path: Path) -> None:
    """A server whose worker cannot import pyarrow/duckdb: the run opens as its first file, and
    the session's status says which one and why (the tab shows it, "Open in notebook" loads it)."""
    files = sorted((root / "run").glob("rank-*"))
    with jupyter_server(root, tmp_path / "server.log", env=without_ranks_extra(tmp_path)) as http:
        sid = http.open("run")
        state = http.state(sid)
        status = json.loads(http.request("GET", f"/profview/api/sessions/{sid}")[1])
    assert status["run"] == {"mode": "one-file", "file": files[0].name, "files": len(files),
                             "reason": "load_many needs pyarrow: pip install 'jupyter_profview[ranks]'"}
    assert state["_info"]["event_count"] == status["events"] == timeline_events(files[0])
    assert status["events"] < sum(timeline_events(f) for f in files)


def test_cookie_auth_needs_the_xsrf_header(server: Http) -> None:
    """A browser with the login cookie (no token) must echo the _xsrf cookie in X-XSRFToken on
    POST and DELETE, as for every jupyter-server APIHandler; token requests need no XSRF."""
    jar = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with browser.open(f"{server.base}/profview/view?path={FIXTURE}&token={server.token}", timeout=30) as r:
        assert b"standalone.js" in r.read()
    cookies = {c.name: c.value for c in jar}
    assert "_xsrf" in cookies and any(name.startswith("username-") for name in cookies), cookies

    def send(method: str, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        body = json.dumps({"path": FIXTURE}).encode() if method == "POST" else None
        req = urllib.request.Request(server.base + path, method=method, data=body, headers=headers)
        try:
            with browser.open(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    opened = len(json.loads(server.request("GET", "/profview/api/sessions")[1]))
    status, body = send("POST", "/profview/api/sessions", {})
    assert status == 403 and json.loads(body)["message"] == "'_xsrf' argument missing from POST"
    status, body = send("POST", "/profview/api/sessions", {"X-XSRFToken": "00" * 16})
    assert status == 403 and json.loads(body)["message"] == "XSRF cookie does not match POST argument"
    assert len(json.loads(server.request("GET", "/profview/api/sessions")[1])) == opened  # none opened
    status, body = send("POST", "/profview/api/sessions", {"X-XSRFToken": cookies["_xsrf"]})
    assert status == 202, body
    sid = json.loads(body)["id"]
    # a GET with the cookie alone is answered (it changes nothing); a DELETE is not
    assert json.loads(send("GET", f"/profview/api/sessions/{sid}", {})[1])["id"] == sid
    status, body = send("DELETE", f"/profview/api/sessions/{sid}", {})
    assert status == 403 and json.loads(body)["message"] == "'_xsrf' argument missing from POST"  # sic
    assert send("DELETE", f"/profview/api/sessions/{sid}", {"X-XSRFToken": cookies["_xsrf"]})[0] == 204


AUTHORIZER = '''
from jupyter_server.auth import Authorizer


class NoContents(Authorizer):
    """Authenticated users may not read files (e.g. a JupyterHub role without file access)."""

    def is_authorized(self, handler, user, action, resource):
        return resource != "contents"
'''


def test_authorizer_refusing_contents_refuses_the_viewer(root: Path, tmp_path: Path) -> None:
    """The handlers ask jupyter-server's Authorizer for ``read`` on ``contents``: a user who may
    not read files gets 403 from the viewer's API and page, though authenticated."""
    (tmp_path / "profview_test_authorizer.py").write_text(AUTHORIZER)
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    with jupyter_server(root, tmp_path / "server.log",
                        "--ServerApp.authorizer_class=profview_test_authorizer.NoContents", env=env) as http:
        assert http.request("GET", "/api/status")[0] == 200  # authenticated with the token
        assert http.request("GET", "/api/contents")[0] == 403  # the authorizer is in force
        status, body = http.request("POST", "/profview/api/sessions", {"path": FIXTURE})
        assert status == 403, body
        assert http.request("GET", "/profview/api/sessions/0123456789abcdef")[0] == 403
        assert http.request("GET", f"/profview/view?path={FIXTURE}")[0] == 403


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_profview_serve(tmp_path: Path) -> None:
    shutil.copy(DATA / FIXTURE, tmp_path / FIXTURE)
    with profview_serve(tmp_path / FIXTURE, tmp_path / "serve.log") as (http, url):
        assert len(http.token) >= 32
        # without the token: a redirect to the login page, not the viewer
        try:
            urllib.request.build_opener(NoRedirect).open(f"{http.base}/profview/view?path={FIXTURE}",
                                                         timeout=30)
        except urllib.error.HTTPError as exc:
            assert exc.code == 302
            assert exc.headers["Location"] == f"/login?next=%2Fprofview%2Fview%3Fpath%3D{FIXTURE}"
        else:
            raise AssertionError("the viewer page was served without the token")
        with urllib.request.urlopen(url, timeout=30) as r:
            assert b"standalone.js" in r.read()
        # the API answers; kernels and contents are not served
        sid = http.open(FIXTURE)
        state = http.state(sid)
        assert state["_info"]["event_count"] == timeline_events(tmp_path / FIXTURE)
        assert http.request("GET", "/api/kernels")[0] == 404
        assert http.request("GET", "/api/contents")[0] == 404
        reply, buffers = http.call(sid, "_detail", {"t0": 0.0, "t1": 1e6, "width": 100})
        assert "error" not in reply and np.frombuffer(buffers[0][:4], np.uint8).tobytes() == b"PVF1"


def test_reply_frame_matches_the_shared_fixture() -> None:
    """The framed reply, written by hand from the format in server/wire.py; js/test reads the same."""
    fx = json.loads((ROOT / "tests" / "shared_fixtures" / "server_reply.json").read_text(encoding="utf-8"))
    header = b'{"msg":{"t0":0.5,"name":"\\u00e9","_overview":{"$buffer":1}},"buffers":[[96,10],[112,3]]}'
    assert 8 + len(header) == 96  # already 8-aligned: no padding before the first buffer
    hand = b"PVR1" + struct.pack("<I", len(header)) + header + b"abcdefghij" + bytes(6) + b"\1\2\3" + bytes(5)
    assert bytes.fromhex(fx["hex"]) == hand
    assert wire.encode({"t0": 0.5, "name": "é", "_overview": b"\1\2\3"}, [b"abcdefghij"]) == hand
    msg, buffers = wire.decode(hand)
    assert msg == {**fx["msg"], **{k: bytes.fromhex(v) for k, v in fx["bytes_values"].items()}}
    assert buffers == [bytes.fromhex(b) for b in fx["buffers"]]
    with pytest.raises(ValueError, match="PVR1"):
        wire.decode(b"PVF1" + hand[4:])


@pytest.mark.slow
def test_built_wheel_enables_both_extensions_in_a_fresh_venv(tmp_path: Path) -> None:
    """`pip install` of the wheel alone: JupyterLab lists the prebuilt labextension and
    jupyter-server the server extension, both enabled (no `jupyter labextension install`).
    The wheel is built from what a fresh clone has (both npm builds run); needs PyPI and npm."""
    import venv

    from tests.test_binder import fresh_clone_files

    if shutil.which("git") is None or shutil.which("npm") is None:
        pytest.skip("git and npm are needed to build the wheel from a clean copy")
    repo = tmp_path / "repo"
    for name in fresh_clone_files():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, repo / name)
    assert not (repo / "jupyter_profview" / "labextension").exists()
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                            "-w", str(tmp_path / "dist"), str(repo)],
                           capture_output=True, text=True, timeout=1800)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("jupyter_profview-*.whl")

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel), "jupyterlab>=4.2"],
                             capture_output=True, text=True, timeout=1800)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    env = {"PATH": f"{env_dir / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path), "NO_COLOR": "1"}

    def listed(*args: str) -> str:
        res = subprocess.run([str(python), "-m", "jupyter", *args], capture_output=True, text=True,
                             env=env, cwd=tmp_path, timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        return re.sub(r"\x1b\[[0-9;]*m", "", res.stdout + res.stderr)

    labext = listed("labextension", "list")
    assert re.search(r"jupyter-profview v0\.1\.0 enabled\s+OK \(python, jupyter_profview\)", labext), labext
    server = listed("server", "extension", "list")
    assert re.search(r"jupyter_profview\.server enabled", server), server
    assert re.search(r"jupyter_profview\.server\s+OK", server), server
