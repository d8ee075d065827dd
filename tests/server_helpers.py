"""Helpers of the server-extension tests (tests/test_server.py and the browser tests): a jupyter
server or ``profview serve`` in a subprocess, its HTTP API, and the multi-rank run fixture."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import http.cookiejar
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

from jupyter_profview.server import wire
from tests.browser.lab import _free_port, wait_until
from tests.format_helpers import read_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
#: a real multi-rank run (4 ranks of CPU DDP over gloo, make_ddp_traces.py): one file is not all
RANK_FILES = sorted((DATA / "ddp").glob("rank-*.pt.trace.json.gz"))


def timeline_events(path: Path) -> int:
    """Events of a Chrome/PyTorch trace file on the timeline, counted from its JSON: complete
    events plus global/process instants."""
    raw = read_json(path)["traceEvents"]
    return sum(e.get("ph") == "X" or (e.get("ph") == "i" and e.get("s") in ("g", "p")) for e in raw)


def copy_run(run: Path) -> Path:
    """A run directory of the DDP ranks (at least two, with different event counts)."""
    run.mkdir()
    for f in RANK_FILES:
        shutil.copy(f, run / f.name)
    assert len(RANK_FILES) >= 2 and len({timeline_events(f) for f in RANK_FILES}) > 1
    return run


#: a ``sitecustomize`` that hides the ``ranks`` extra (pyarrow, duckdb) from a Python process and
#: its spawned workers, as in an install without ``jupyter_profview[ranks]``
NO_RANKS_EXTRA = "import sys\nsys.modules['pyarrow'] = None\nsys.modules['duckdb'] = None\n"


class Http:
    """One client of the server, as a browser is: its token and the login cookie the server sets
    (jupyter-server's user identity: with a shared token each client is its own anonymous user,
    and a viewer session is its opener's).  ``as_another()``: a second client, another user."""

    def __init__(self, base: str, token: str, pid: int | None = None) -> None:
        self.base, self.token, self.pid = base, token, pid  # pid: the server process
        cookies = urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        self.opener = urllib.request.build_opener(cookies)

    def as_another(self, token: str | None = None) -> Http:
        return Http(self.base, self.token if token is None else token, self.pid)

    def request(self, method: str, path: str, body: Any = None, token: bool = True,
                raw: bytes | None = None) -> tuple[int, bytes]:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            req.add_header("Authorization", f"token {self.token}")
        try:  # without the token, no cookie either: an unauthenticated client
            with (self.opener.open if token else urllib.request.urlopen)(req, timeout=60) as r:
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


@contextlib.contextmanager
def jupyter_server(root: Path, log: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Http]:
    """A jupyter server on ``root`` with a token, the extension enabled by the config file the
    wheel installs (nothing else); the load_many cache in a temp dir, never ~/.cache."""
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_RUNTIME_DIR": str(log.parent / "runtime"),
           "JUPYTER_CONFIG_PATH": str(ROOT / "jupyter-config"),
           "PROFVIEW_CACHE_DIR": str(log.parent / "profview-cache"), **(env or {})}
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}", *args],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=root)
    try:
        _wait_up(proc, f"http://127.0.0.1:{port}/api/status", log)
        yield Http(f"http://127.0.0.1:{port}", token, proc.pid)
    finally:
        _stop(proc)


def without_ranks_extra(tmp: Path) -> dict[str, str]:
    """Environment of a Python (and its spawned workers) that cannot import the ``ranks`` extra."""
    (tmp / "sitecustomize.py").write_text(NO_RANKS_EXTRA)
    return {"PYTHONPATH": os.pathsep.join([str(tmp), str(ROOT)])}


@contextlib.contextmanager
def profview_serve(path: Path, log: Path, env: dict[str, str] | None = None,
                   args: tuple[str, ...] = ()) -> Iterator[tuple[Http, str]]:
    """``profview serve path`` in a subprocess: its API (with the printed token) and the printed URL."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JUPYTER_RUNTIME_DIR": str(log.parent / "runtime"),
           "PROFVIEW_CACHE_DIR": str(log.parent / "profview-cache"), **(env or {})}
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "jupyter_profview", "serve", str(path),
                                 "--port", str(port), *args], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_up(proc, f"{base}/api/status", log)
        wait_until(lambda: "profview: open " in log.read_text(), timeout=30)
        line = next(ln for ln in log.read_text().splitlines() if ln.startswith("profview: open "))
        url = line.split(" ", 2)[2]
        assert url.startswith(f"{base}/profview/view?path={path.name}&token=")
        token = url.rsplit("token=", 1)[1]
        yield Http(base, token, proc.pid), url
    finally:
        _stop(proc)
    assert proc.returncode is not None


def threads_trace(path: Path, pairs: int, processes: int = 1) -> Path:
    """A gzipped Chrome trace with ``pairs`` distinct (pid, tid) pairs over ``processes`` pids,
    one complete event each (tests/test_server_shared.py, benchmarks/bench_threads.py)."""
    events = [{"ph": "X", "name": "op", "cat": "cpu_op", "pid": i % processes, "tid": i, "ts": i, "dur": 1}
              for i in range(pairs)]
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return path


def in_thread(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """``asyncio.run(scenario())`` in a thread of its own (a session-wide event loop, the browser
    tests', may run in this one)."""
    failed: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(scenario())
        except BaseException as exc:  # handed back to the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
