"""The jupyter-server extension over real HTTP: a jupyter server subprocess with the extension
enabled (as the wheel's config file does), and ``profview serve``.

Expected values come from the trace files (plain ``json``) or from the notebook widget's own
kernel side run in this process (the server must send what ``TraceWidget`` sends)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
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
from jupyter_profview.widget.widget import initial_state

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
FIXTURE = "torch_mlp_train.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Http:
    def __init__(self, base: str, token: str) -> None:
        self.base, self.token = base, token

    def request(self, method: str, path: str, body: Any = None, token: bool = True) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"token {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def open(self, path: str) -> str:
        status, body = self.request("POST", "/profview/api/sessions", {"path": path})
        assert status == 202, body
        return str(json.loads(body)["id"])

    def state(self, sid: str) -> dict[str, Any]:
        status, body = self.request("GET", f"/profview/api/sessions/{sid}/state")
        assert status == 200, body
        return wire.decode(body)[0]

    def call(self, sid: str, name: str, msg: Any) -> tuple[dict[str, Any], list[bytes]]:
        status, body = self.request("POST", f"/profview/api/sessions/{sid}/call/{name}", msg)
        assert status == 200, body
        return wire.decode(body)


def _wait_up(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except urllib.error.HTTPError:
            return  # any HTTP answer: the server is up
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server did not start:\n{log.read_text()[-3000:]}") from None
            time.sleep(0.3)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


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
    run = root / "run"
    run.mkdir()
    shutil.copy(DATA / FIXTURE, run / "rank0.pt.trace.json")
    return root


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Http]:
    port, token = _free_port(), secrets.token_hex(16)
    log = root.parent / "server.log"
    # the extension is enabled by the config file the wheel installs, nothing else
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_RUNTIME_DIR": str(root.parent / "runtime"),
           "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter-config")}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}"],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    try:
        _wait_up(proc, f"http://127.0.0.1:{port}/api/status", log)
        yield Http(f"http://127.0.0.1:{port}", token)
    finally:
        _stop(proc)


def test_open_sends_the_widgets_initial_state(server: Http, root: Path) -> None:
    sid = server.open(FIXTURE)
    state = server.state(sid)
    status, body = server.request("GET", f"/profview/api/sessions/{sid}")
    assert status == 200 and json.loads(body)["state"] == "ready"
    # what TraceWidget would send for the same file, computed here in the test process
    expected = initial_state(rpc.WidgetData(profview.load(root / FIXTURE)))
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
    # an invalid request is answered like the widget's RPC: {"error": ...}, status 200
    reply, buffers = server.call(sid, "_detail", {"t0": 5, "t1": 1, "width": 10})
    assert "t0 < t1" in reply["error"] and buffers == []
    reply, _ = server.call(sid, "_nope", {})
    assert "unknown command" in reply["error"]


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
    assert "cannot be set" in wire.decode(body)[0]["error"]


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
    assert json.loads(body)["message"] == str(local.value)
    status, body = server.request("GET", f"/profview/api/sessions/{sid}")
    assert json.loads(body)["state"] == "error" and json.loads(body)["error"] == str(local.value)


def test_no_token_is_refused(server: Http) -> None:
    sid = server.open(FIXTURE)
    for method, path, body in (("GET", "/profview/api/sessions", None),
                               ("GET", f"/profview/api/sessions/{sid}/state", None),
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
    listed = json.loads(server.request("GET", "/profview/api/sessions")[1])
    assert len(listed) == MAX_SESSIONS
    for sid in ids[1:]:
        assert server.request("DELETE", f"/profview/api/sessions/{sid}")[0] == 204


def test_run_directory_opens(server: Http, root: Path) -> None:
    sid = server.open("run")
    state = server.state(sid)
    expected = initial_state(rpc.WidgetData(profview.load(root / "run" / "rank0.pt.trace.json")))
    assert state["_info"]["event_count"] == expected["_info"]["event_count"]


def test_profview_serve(tmp_path: Path) -> None:
    shutil.copy(DATA / FIXTURE, tmp_path / FIXTURE)
    port = _free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "jupyter_profview", "serve", str(tmp_path / FIXTURE),
                                 "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_up(proc, f"{base}/api/status", log)
        deadline = time.monotonic() + 30
        while "profview: open " not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        line = next(ln for ln in log.read_text().splitlines() if ln.startswith("profview: open "))
        url = line.split(" ", 2)[2]
        assert url.startswith(f"{base}/profview/view?path={FIXTURE}&token=")
        token = url.rsplit("token=", 1)[1]
        assert len(token) >= 32
        http = Http(base, token)
        # the page, with the token; nothing without it
        status, page = http.request("GET", f"/profview/view?path={FIXTURE}", token=False)
        assert status in (302, 403) or b"standalone.js" not in page
        with urllib.request.urlopen(url, timeout=30) as r:
            assert b"standalone.js" in r.read()
        # the API answers; kernels and contents are not served
        sid = http.open(FIXTURE)
        state = http.state(sid)
        raw = json.loads((tmp_path / FIXTURE).read_text())["traceEvents"]
        assert state["_info"]["event_count"] == sum(
            e.get("ph") == "X" or (e.get("ph") == "i" and e.get("s") in ("g", "p")) for e in raw)
        assert http.request("GET", "/api/kernels")[0] == 404
        assert http.request("GET", "/api/contents")[0] == 404
        reply, buffers = http.call(sid, "_detail", {"t0": 0.0, "t1": 1e6, "width": 100})
        assert "error" not in reply and np.frombuffer(buffers[0][:4], np.uint8).tobytes() == b"PVF1"
    finally:
        _stop(proc)
    assert proc.returncode is not None


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
