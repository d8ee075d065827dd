"""Issue 25, items 1, 2, 6, 7, 8: the server tried as an attacker would, over real HTTP (a
jupyter server and ``profview serve`` started as a user starts them), with real symlinks, a real
FIFO and a real symlink loop on disk.  The secret files hold a marker that must never come back."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server_helpers import RANK_FILES, Http, in_thread, jupyter_server, profview_serve, wait_until

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
FIXTURE = "torch_mlp_train.json"
MARKER = "TOPSECRET-3f9a"  # in every file the server must not show


@pytest.fixture(scope="module")
def top(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("hostile")
    (top / "secret.txt").write_text(f"{MARKER} outside the root\n")
    shutil.copy(DATA / FIXTURE, top / "outside.pt.trace.json")
    root = top / "root"
    root.mkdir()
    shutil.copy(DATA / FIXTURE, root / FIXTURE)
    (root / "notes.txt").write_text(f"{MARKER} a sibling of the served run\n")
    (root / "junk.json").write_text(f"{MARKER} not a trace at all " + "x" * 200)
    os.mkfifo(root / "x.json")
    (root / "loop-a.json").symlink_to(root / "loop-b.json")
    (root / "loop-b.json").symlink_to(root / "loop-a.json")
    run = root / "runB"
    run.mkdir()
    for f in RANK_FILES[:2]:
        shutil.copy(f, run / f.name)
    (run / "rank-7.pt.trace.json").symlink_to(top / "outside.pt.trace.json")  # a trace outside
    (run / "rank-8.pt.trace.json").symlink_to(top / "secret.txt")  # a non-trace file outside
    os.mkfifo(run / "rank-9.pt.trace.json")
    (run / ".hidden.pt.trace.json").write_text("{}")
    return top


@pytest.fixture(scope="module")
def server(top: Path) -> Iterator[Http]:
    with jupyter_server(top / "root", top / "server.log") as http:
        yield http


def _post(server: Http, path: object) -> tuple[int, dict]:
    status, body = server.request("POST", "/profview/api/sessions", {"path": path})
    return status, json.loads(body)


def _wait(server: Http, sid: str) -> dict:
    def done() -> bool:
        status, body = server.request("GET", f"/profview/api/sessions/{sid}")
        return status == 200 and json.loads(body)["state"] != "loading"
    wait_until(done, timeout=120)
    return json.loads(server.request("GET", f"/profview/api/sessions/{sid}")[1])


def test_directory_session_skips_what_the_rule_refuses(server: Http, top: Path) -> None:
    """1: symlinks out of the root, a FIFO and hidden files in a directory are skipped with a
    note naming the entry -- never loaded, never their content."""
    status, reply = _post(server, "runB")
    assert status == 202, reply
    done = _wait(server, reply["id"])
    assert done["state"] == "ready", done
    assert done["run"]["mode"] == "ranks" and len(done["run"]["ranks"]) == 2, done  # the two real ranks
    notes = done["skipped"]
    assert any(n.startswith("rank-7.pt.trace.json: is outside the server root") for n in notes), notes
    assert any(n.startswith("rank-8.pt.trace.json: is outside the server root") for n in notes), notes
    assert any(n.startswith("rank-9.pt.trace.json: is not a regular file") for n in notes), notes
    assert any(n.startswith(".hidden.pt.trace.json: is hidden") for n in notes), notes
    text = json.dumps(done)
    assert MARKER not in text and str(top) not in text


def test_the_symlink_itself_and_through_its_directory_are_refused_alike(server: Http) -> None:
    status, reply = _post(server, "runB/rank-8.pt.trace.json")
    assert status == 403 and MARKER not in json.dumps(reply), reply


def test_errors_never_show_content_nor_server_paths(server: Http, top: Path) -> None:
    """7: a non-trace file's error names it relative to the root, with no byte of it."""
    status, reply = _post(server, "junk.json")
    assert status == 202, reply
    done = _wait(server, reply["id"])
    assert done["state"] == "error" and done["error"].startswith("junk.json: "), done
    assert MARKER not in done["error"] and str(top) not in done["error"], done
    status, body = server.request("GET", f"/profview/api/sessions/{reply['id']}/state")
    assert status == 400 and MARKER.encode() not in body and str(top).encode() not in body, body


@pytest.mark.parametrize(("path", "status", "words"), [
    ("x.json", 403, "not a regular file"),
    ("loop-a.json", 400, "cannot be resolved"),
    ("a\0b.json", 400, "NUL byte"),
    ("n" * 5000 + ".json", 400, "longer than"),
    ("d/" * 3000 + "x.json", 400, "longer than"),
])
def test_fifo_nul_long_names_and_loops_are_4xx(server: Http, path: str, status: int, words: str) -> None:
    """8: answered at once with a 4xx (a FIFO is refused before it is opened: it never blocks the
    worker, and the next trace loads)."""
    began = time.monotonic()
    got, reply = _post(server, path)
    assert got == status and words in reply["message"], reply
    assert time.monotonic() - began < 10
    ok, reply = _post(server, FIXTURE)
    assert ok == 202 and _wait(server, reply["id"])["state"] == "ready"


def _peak_rss_mb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(ln for ln in status.splitlines() if ln.startswith("VmHWM:")).split()[1]) // 1024


def _post_big(server: Http, path: str, total: int, token: bool) -> int:
    """POST ``total`` bytes (declared up front) and return the status, or 0 if the server closed
    the connection before answering; stops sending as soon as the server stops reading."""
    host, port = server.base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.putrequest("POST", path)
    conn.putheader("Content-Length", str(total))
    conn.putheader("Content-Type", "application/json")
    if token:
        conn.putheader("Authorization", f"token {server.token}")
    conn.endheaders()
    block = b" " * (1 << 20)
    sent = 0
    try:
        while sent < total:
            conn.sock.sendall(block)
            sent += len(block)
    except OSError:
        pass
    try:
        return conn.getresponse().status
    except (OSError, http.client.HTTPException):
        return 0
    finally:
        conn.close()


def test_a_big_unauthenticated_post_is_not_read(server: Http) -> None:
    """6: 400 MB without a token: refused after the headers, the server's peak RSS stays put."""
    before = _peak_rss_mb(server.pid)  # type: ignore[arg-type]
    status = _post_big(server, "/profview/api/sessions", 400 * 10**6, token=False)
    assert status in (403, 0), status
    assert _peak_rss_mb(server.pid) - before < 50, (before, _peak_rss_mb(server.pid))  # type: ignore[arg-type]


def test_an_authenticated_body_is_limited(server: Http) -> None:
    status = _post_big(server, "/profview/api/sessions", 2 * 10**6, token=True)
    assert status in (413, 0), status
    status, reply = _post(server, FIXTURE)  # the server still answers
    assert status == 202, reply


def test_profview_serve_serves_exactly_its_path(top: Path) -> None:
    """2: ``profview serve runB`` opens runB; neither a sibling (notes.txt, the fixture) nor
    ``/files/`` nor ``/api/contents`` is reachable, even with the token."""
    root = top / "root"
    with profview_serve(root / "runB", top / "serve.log") as (http_, _url):
        for route in ("/files/notes.txt", "/files/runB/" + RANK_FILES[0].name, "/api/contents/notes.txt"):
            status, body = http_.request("GET", route)
            assert status == 404 and MARKER.encode() not in body, (route, status, body[:200])
        status, body = http_.request("POST", "/profview/api/sessions", {"path": FIXTURE})
        assert status == 403 and b"outside the served path" in body, body
        status, body = http_.request("POST", "/profview/api/sessions", {"path": "runB"})
        assert status == 202, body
        # the body limit of profview serve holds for every route, not only the viewer's
        assert _post_big(http_, "/api/shutdown", 8 * 10**6, token=False) in (400, 403, 413, 0)
        assert _peak_rss_mb(http_.pid) < 400  # type: ignore[arg-type]


def test_profview_serve_parent_is_opt_in(top: Path) -> None:
    root = top / "root"
    with profview_serve(root / "runB", top / "serve-parent.log", args=("--parent",)) as (http_, _url):
        status, body = http_.request("POST", "/profview/api/sessions", {"path": FIXTURE})
        assert status == 202, body
        status, body = http_.request("GET", "/files/notes.txt")
        assert status == 404 and MARKER.encode() not in body


def test_no_listening_socket_without_the_token(top: Path) -> None:
    """The bind promise of SECURITY.md: ``profview serve`` listens on 127.0.0.1 only."""
    with profview_serve(top / "root" / FIXTURE, top / "serve-bind.log") as (http_, _url):
        port = int(http_.base.rsplit(":", 1)[1])
        addresses = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)} - {"127.0.0.1"}
        for address in addresses:
            if ":" in address:
                continue
            with socket.socket() as s:
                s.settimeout(2)
                assert s.connect_ex((address, port)) != 0, address


def test_a_load_past_the_timeout_restarts_the_worker(tmp_path: Path) -> None:
    """8: a session that loads for longer than the store's timeout (here 4 GiB of whitespace to
    inflate, 1 s allowed) is ended and the stuck worker replaced: the next trace loads."""

    from jupyter_profview.server.store import SessionGone, TraceStore
    from tests.test_bombs import bomb

    slow = bomb(tmp_path / "slow.json.gz", b'{"traceEvents": [', b" \n\t\r\n", b"]}", gib=4)
    shutil.copy(DATA / FIXTURE, tmp_path / FIXTURE)

    async def scenario() -> None:
        store = TraceStore(load_timeout=120)
        try:
            warm = await store.open(tmp_path / FIXTURE, FIXTURE, root=tmp_path)  # the worker is up
            assert (await store.ready(warm.id)).state == "ready"
            store.load_timeout = 1.0
            stuck = await store.open(slow, slow.name, root=tmp_path)
            with pytest.raises(SessionGone, match="longer than 1 s"):
                await store.ready(stuck.id)
            assert stuck.state == "error" and stuck.error.startswith("slow.json.gz: ")
            store.load_timeout = 120
            again = await store.open(tmp_path / FIXTURE, FIXTURE, root=tmp_path)
            assert (await store.ready(again.id)).state == "ready"
        finally:
            store.shutdown()

    # in a thread of its own: a session-wide event loop (Playwright's, for the browser tests) may
    # be running in this one, and asyncio.run refuses to start inside it
    in_thread(scenario)


@pytest.mark.parametrize("name", ["_detail", "_memory_detail", "_event", "_live", "_table"])
@pytest.mark.parametrize("msg", ["x", [1, 2], {"t0": "a", "t1": None, "id": {"x": 1}}, 10**30])
def test_every_command_answers_garbage_with_a_reply_or_a_4xx(server: Http, name: str, msg: object) -> None:
    """The one error boundary: whatever a command raises in the worker is a 4xx (or the
    command's own error reply), never a 500."""
    status, reply = _post(server, FIXTURE)
    sid = reply["id"]
    assert _wait(server, sid)["state"] == "ready"
    status, body = server.request("POST", f"/profview/api/sessions/{sid}/call/{name}", msg)
    assert status in (200, 400, 404), (status, body[:300])
    server.request("DELETE", f"/profview/api/sessions/{sid}")
