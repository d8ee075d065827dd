"""The JupyterLab document extension under Debian Chromium (marked ``browser``): traces opened
from the file browser in a "Profile viewer" tab, drawn by the widget's view over HTTP.

The lab server loads the prebuilt extension (``jupyter_profview/labextension``, built by
``cd labextension && npm run build``) from a temp data dir and enables the server extension with
the config file the wheel ships, as ``pip install`` would.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from jupyter_profview.numbers import format_bytes
from tests.browser import lab as lab_module
from tests.browser.lab import REPO, TIMEOUT_MS, LabServer, canvas_ink, wait_until
from tests.server_helpers import copy_run, profview_serve, timeline_events, without_ranks_extra

TOKEN = secrets.token_hex(16)
PREBUILT = REPO / "jupyter_profview" / "labextension"
FIXTURE = REPO / "tests" / "data" / "torch_mlp_train.json"
TRACE = "train.pt.trace.json"
TIMELINE = ".jp-ProfviewPanel .pv-timeline canvas"
PAGE_TIMELINE = "#profview-root .pv-timeline canvas"  # the viewer page (server/page.py)

#: Skips where the extension the wheel ships is not built (every Lab-tab test, here and in the
#: other browser files, through this mark or lab_tab_server).
NOT_BUILT = "labextension not built: cd labextension && npm install && npm run build"
NEEDS_LABEXTENSION = pytest.mark.skipif(not (PREBUILT / "package.json").is_file(), reason=NOT_BUILT)

pytestmark = NEEDS_LABEXTENSION


def _get_json_with_token(url: str, attempts: int = 1) -> Any:
    return lab_module._get_json(url, attempts, token=TOKEN)


def start_lab(top: Path, env: dict[str, str] | None = None) -> LabServer:
    """JupyterLab on ``top/root`` with the prebuilt extension (from a temp data dir) and the
    server extension enabled by the wheel's config file, as ``pip install`` leaves them."""
    data = top / "data" / "labextensions"
    data.mkdir(parents=True)
    (data / "jupyter-profview").symlink_to(PREBUILT, target_is_directory=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(top / "data"))
        mp.setenv("PROFVIEW_CACHE_DIR", str(top / "profview-cache"))  # load_many's, not ~/.cache
        mp.setenv("JUPYTER_CONFIG_PATH", str(REPO / "jupyter-config"))
        for name, value in (env or {}).items():
            mp.setenv(name, value)
        # with a real token (LabServer's default is none): the extension's requests must carry
        # JupyterLab's auth (token + XSRF) to be answered
        server = LabServer(top / "root", token=TOKEN)
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:  # the token is in force
            urllib.request.urlopen(f"{server.base}/profview/api/sessions/0123456789abcdef", timeout=10)
        assert refused.value.code == 403
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def lab_tab_server(tmp_path_factory: pytest.TempPathFactory, name: str, files: dict[str, Path],
                   fill: Callable[[Path], None] | None = None) -> Iterator[LabServer]:
    """JupyterLab with the extension (``start_lab``) on a fresh ``top/root`` holding ``files``
    (name there -> the file copied), after ``fill(top)`` wrote anything else; stopped on exit.
    Skips the test where the extension is not built."""
    if not (PREBUILT / "package.json").is_file():
        pytest.skip(NOT_BUILT)
    top = tmp_path_factory.mktemp(name)
    (top / "root").mkdir()
    for target, source in files.items():
        shutil.copy(source, top / "root" / target)
    if fill is not None:
        fill(top)
    server = start_lab(top)
    try:
        yield server
    finally:
        server.stop()


def _fill_lab_ext(top: Path) -> None:
    root = top / "root"
    text = FIXTURE.read_text()
    (root / "bad.pt.trace.json").write_text(text[: len(text) // 2])
    copy_run(root / "run")  # 4 ranks of a real DDP run


@pytest.fixture(scope="module")
def lab_ext(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    files = {TRACE: FIXTURE, "plain.json": FIXTURE}  # plain.json: no profiler name, Open With only
    with lab_tab_server(tmp_path_factory, "labext", files, _fill_lab_ext) as server:
        yield server


def record_api_calls(page: Any) -> None:
    """``page.profview_calls``: the URLs of the extension's API requests, ``page.profview_requests``
    the same as (method, URL)."""
    calls: list[str] = []
    requests: list[tuple[str, str]] = []

    def seen(r: Any) -> None:
        if "/profview/api/" in r.url:
            calls.append(r.url)
            requests.append((r.method, r.url))

    page.on("request", seen)
    page.profview_calls = calls
    page.profview_requests = requests


@contextlib.contextmanager
def screenshot_on_failure(request: pytest.FixtureRequest, tmp_path: Path, pages: Any) -> Iterator[None]:
    """After the test: a screenshot of each of ``pages()`` into the test's temporary directory
    (pytest keeps the last few runs) if it failed; never into the source tree."""
    yield
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        for i, pg in enumerate(pages()):
            shot = tmp_path / f"failure-{i}.png"
            with contextlib.suppress(Exception):
                pg.screenshot(path=str(shot), full_page=True)
                print(f"screenshot of the failure: {shot}")


@pytest.fixture
def lab_page(browser: Any, lab_ext: LabServer, request: pytest.FixtureRequest,
             tmp_path: Path) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    record_api_calls(pg)
    pg.goto(f"{lab_ext.base}/lab/workspaces/{request.node.name}?reset&token={TOKEN}")
    pg.wait_for_selector(".jp-DirListing-item", timeout=TIMEOUT_MS)
    with screenshot_on_failure(request, tmp_path, lambda: context.pages):
        yield pg
    context.close()


@pytest.fixture
def context(browser: Any, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A browser context for tests that open pages of their own (Notebook 7, the viewer page)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.set_default_timeout(TIMEOUT_MS)
    with screenshot_on_failure(request, tmp_path, lambda: ctx.pages):
        yield ctx
    ctx.close()


def api_requests(page: Any, method: str, path: str) -> int:
    """How many ``method`` requests for ``{base}/profview/api/{path}`` the page made (JupyterLab
    adds a cache-busting query to each URL: the path is compared).  Lets Playwright deliver the
    page's pending request events first (it does while a call of the test waits)."""
    page.wait_for_timeout(50)
    return sum(m == method and urllib.parse.urlsplit(u).path.endswith(f"/profview/api/{path}")
               for m, u in page.profview_requests)


def session_id(page: Any, nth: int = -1) -> str:
    """The id of a session the page opened (the ``nth`` state request it made)."""
    ids = [m.group(1) for u in page.profview_calls if (m := re.search(r"/sessions/([0-9a-f]{16})/state", u))]
    assert ids, page.profview_calls
    return ids[nth]


def session_status(page: Any, lab: LabServer, sid: str) -> dict[str, Any]:
    """The session's status as the page's user sees it (a session is its opener's: another
    client gets a 404); ``{"message": ...}`` once it is closed."""
    return status_from_page(page, lab.base, sid)


def status_from_page(page: Any, base: str, sid: str) -> dict[str, Any]:
    """`session_status` for any server at `base` (the Lab server, `profview serve`)."""
    return dict(page.evaluate("async (u) => (await fetch(u, {credentials: 'same-origin'})).json()",
                              f"{base}/profview/api/sessions/{sid}"))


def origin(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def one_file_note(files: list[Path]) -> str:
    """What the tab and the viewer page say when a run opened as its first file only."""
    return (f"Showing only {files[0].name} (1 of {len(files)} trace files), not all ranks of the run: "
            "load_many needs pyarrow: pip install 'jupyter_profview[ranks]'")


def item(page: Any, name: str) -> Any:
    return page.locator(f".jp-DirListing-item[title^='Name: {name}']").first


@contextlib.contextmanager
def viewer_page(browser: Any, request: pytest.FixtureRequest, tmp_path: Path,
                height: int = 1400) -> Iterator[Any]:
    """A fresh page (1400 px wide) whose uncaught page errors fail the test at the end; a
    screenshot of it if the test failed."""
    context = browser.new_context(viewport={"width": 1400, "height": height})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    with screenshot_on_failure(request, tmp_path, lambda: context.pages):
        yield page
        assert errors == []
    context.close()


def open_lab_tab(page: Any, lab: LabServer, workspace: str, name: str) -> str:
    """Open ``name`` from the JupyterLab file browser (a double-click) in a "Profile viewer" tab,
    once its timeline is drawn; the tab's selector."""
    page.goto(f"{lab.base}/lab/workspaces/{workspace}?reset&token={TOKEN}")
    page.wait_for_selector(".jp-DirListing-item", timeout=TIMEOUT_MS)
    item(page, name).dblclick()
    page.wait_for_selector(".jp-ProfviewPanel .pv-timeline canvas")
    return ".jp-ProfviewPanel"


def new_notebook(root: Path, before: set[Path]) -> Path:
    """The one notebook made since ``before``, once its cells are saved (it is created empty)."""
    def saved() -> Path | None:
        made = set(root.glob("*.ipynb")) - before
        if len(made) != 1:
            return None
        path = next(iter(made))
        return path if "profview" in path.read_text() else None

    path = wait_until(saved, timeout=20)
    assert path is not None, "no notebook with profview code was made"
    return path


def test_double_click_draws_and_zoom_fetches_detail(lab_page: Any, lab_ext: LabServer) -> None:
    page = lab_page
    item(page, TRACE).dblclick()
    page.wait_for_selector(TIMELINE)
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000), "nothing drawn on the timeline"
    tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").first
    assert tab.inner_text() == TRACE
    # the tab holds no file content: File > Save must not write it (that would empty the trace)
    original = (lab_ext.root / TRACE).read_bytes()
    page.click("li.lm-MenuBar-item:has-text('File')")
    page.click("li.lm-Menu-item[data-command='docmanager:save']")
    page.wait_for_timeout(1500)  # nothing to wait for: the file must stay as it is
    page.keyboard.press("Escape")
    assert (lab_ext.root / TRACE).read_bytes() == original
    # wheel zoom on the timeline: a window-detail request goes to the server
    before = sum("/call/_detail" in u for u in page.profview_calls)
    box = page.locator(TIMELINE).first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + 30)
    page.keyboard.down("Control")  # Ctrl+wheel zooms; a plain wheel over an unfocused view scrolls the page
    for _ in range(4):
        page.mouse.wheel(0, -400)
        page.wait_for_timeout(150)  # paced like a hand on a wheel
    page.keyboard.up("Control")
    assert wait_until(lambda: sum("/call/_detail" in u for u in page.profview_calls) > before, timeout=20)
    root = page.locator(".jp-ProfviewPanel .pv-root").first
    assert wait_until(lambda: root.get_attribute("data-source") == "detail", timeout=20)
    info = profview.load(FIXTURE)
    assert float(root.get_attribute("data-view-end")) < info.duration * 0.9
    # the table lists events of the file
    names = {str(n) for n in info.events["name"].unique()}
    rows = page.locator(".jp-ProfviewPanel .pv-table-row")
    assert wait_until(lambda: rows.count() > 0, timeout=20)
    assert rows.first.locator(".pv-col-name").inner_text() in names


def test_open_with_lists_profile_viewer(lab_page: Any) -> None:
    page = lab_page
    item(page, "plain.json").click(button="right")
    page.locator(".lm-Menu-item:has-text('Open With')").first.hover()
    entry = page.locator(".lm-Menu-item:has-text('Profile viewer')").first
    entry.wait_for()
    entry.click()
    page.wait_for_selector(TIMELINE)
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)


def test_corrupt_file_shows_the_profview_error(lab_page: Any, lab_ext: LabServer) -> None:
    with pytest.raises(profview.ProfviewError) as expected:
        profview.load(lab_ext.root / "bad.pt.trace.json")
    page = lab_page
    item(page, "bad.pt.trace.json").dblclick()
    error = page.locator(".jp-ProfviewPanel-error").first
    error.wait_for()
    # the file named relative to the root, where and what was expected: never the server's path
    # nor the parser's reason, which may quote the file (issue 25, item 7)
    exc = expected.value
    assert error.inner_text().strip() == (f"bad.pt.trace.json: {exc.position}: cannot be read as a trace "
                                          f"(expected {exc.expected})")
    assert page.locator(TIMELINE).count() == 0


def test_loading_progress_shows_in_the_tab(lab_page: Any, lab_ext: LabServer) -> None:
    """While the state request is held back (the trace still loading, as for a large file) the
    tab shows the file's name, size and the time so far; then the timeline replaces it."""
    page = lab_page
    held: list[Any] = []
    # JupyterLab's GETs carry a cache-busting query: match the URL's path
    state = re.compile(r"/profview/api/sessions/[0-9a-f]{16}/state(\?\d*)?$")
    page.route(state, lambda route: held.append(route))
    item(page, TRACE).dblclick()
    status = page.locator(".jp-ProfviewPanel-status").first
    size = format_bytes((lab_ext.root / TRACE).stat().st_size)
    loading = re.compile(rf"Loading {re.escape(TRACE)} \({re.escape(size)}\)… \d+\.\d s")
    # (the locator call first: Playwright runs the route handler while a call of the test waits)
    assert wait_until(lambda: loading.fullmatch(status.inner_text().strip()) and held), status.inner_text()
    assert page.locator(TIMELINE).count() == 0
    for route in held:
        route.continue_()
    page.unroute(state)
    page.wait_for_selector(TIMELINE)
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    assert page.locator(".jp-ProfviewPanel-status").count() == 0


def test_closing_the_tab_closes_the_session(lab_page: Any, lab_ext: LabServer) -> None:
    page = lab_page
    item(page, TRACE).dblclick()
    page.wait_for_selector(TIMELINE)
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    sid = session_id(page)
    assert session_status(page, lab_ext, sid)["state"] == "ready"
    assert api_requests(page, "DELETE", f"sessions/{sid}") == 0
    page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabCloseIcon").click()
    assert wait_until(lambda: api_requests(page, "DELETE", f"sessions/{sid}") == 1), page.profview_requests
    # the server let go of it (the worker's cache is freed)
    assert wait_until(lambda: "no open session" in session_status(page, lab_ext, sid).get("message", ""))


def test_open_run_directory_loads_every_rank_and_its_notebook_runs(lab_page: Any, lab_ext: LabServer) -> None:
    import nbformat
    from nbclient import NotebookClient

    page = lab_page
    files = sorted((lab_ext.root / "run").glob("rank-*"))

    def open_run() -> None:
        item(page, "run").click(button="right")
        page.locator(".lm-Menu-item:has-text('Open run in profile viewer')").first.click()

    open_run()
    page.wait_for_selector(TIMELINE)
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    # every rank: the event count is the sum over the rank files, each counted from its JSON
    status = session_status(page, lab_ext, session_id(page))
    assert status["run"] == {"mode": "ranks", "ranks": list(range(len(files)))}
    assert status["events"] == sum(timeline_events(f) for f in files)
    assert page.locator(".jp-ProfviewPanel-note").count() == 0
    # opening the run again shows its tab: no second tab, no second session
    posts = api_requests(page, "POST", "sessions")
    assert posts == 1
    labels = page.locator("#jp-main-dock-panel .lm-TabBar-tab .lm-TabBar-tabLabel")
    page.locator("#jp-main-dock-panel .lm-TabBar-tab .lm-TabBar-tabLabel:text-is('Launcher')").first.click()
    open_run()
    current = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").first
    assert wait_until(lambda: current.inner_text() == "run")
    page.wait_for_timeout(1000)  # nothing to wait for: no second session may start
    assert [t for t in labels.all_inner_texts() if t == "run"] == ["run"]
    assert api_requests(page, "POST", "sessions") == posts
    # "Open in notebook": load_many of the run, and the notebook runs
    before = set(lab_ext.root.glob("*.ipynb"))
    page.locator(".jp-ProfviewPanel-notebook:visible").first.click()
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    path = new_notebook(lab_ext.root, before)
    nb = nbformat.read(str(path), as_version=4)
    source = nb.cells[0].source
    assert 'profview.load_many("run")' in source and "profview.show(t)" in source
    NotebookClient(nb, timeout=300, resources={"metadata": {"path": str(lab_ext.root)}}).execute()
    outputs = nb.cells[0].outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), outputs


def test_notebook_from_a_file_runs(lab_page: Any, lab_ext: LabServer) -> None:
    import nbformat
    from nbclient import NotebookClient

    page = lab_page
    item(page, TRACE).dblclick()
    page.wait_for_selector(TIMELINE)
    before = set(lab_ext.root.glob("*.ipynb"))
    page.locator(".jp-ProfviewPanel-notebook:visible").first.click()
    path = new_notebook(lab_ext.root, before)
    nb = nbformat.read(str(path), as_version=4)
    assert f'profview.load("{TRACE}")' in nb.cells[0].source
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(lab_ext.root)}}).execute()
    outputs = nb.cells[0].outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), outputs


def test_notebook_of_a_trace_in_a_folder_is_written_at_the_root(lab_page: Any, lab_ext: LabServer) -> None:
    """Issue 35 (9): "Open in notebook" of a trace in a folder writes the notebook at the root
    (where the kernel starts), loading the trace by its path: a ``jupyter_profview.py`` planted
    beside the trace is never imported."""
    import nbformat
    from nbclient import NotebookClient

    page = lab_page
    folder = lab_ext.root / "shared_traces"
    folder.mkdir(exist_ok=True)
    shutil.copy(FIXTURE, folder / TRACE)
    (folder / "jupyter_profview.py").write_text("raise ImportError('the planted module was imported')\n")
    item(page, "shared_traces").dblclick()
    item(page, TRACE).dblclick()
    page.wait_for_selector(TIMELINE)
    before = set(lab_ext.root.glob("*.ipynb"))
    page.locator(".jp-ProfviewPanel-notebook:visible").first.click()
    try:
        path = new_notebook(lab_ext.root, before)
    finally:
        page.locator(".jp-BreadCrumbs-home").first.click()  # the file browser back at the root
    assert not list(folder.glob("*.ipynb"))
    nb = nbformat.read(str(path), as_version=4)
    assert f'profview.load("shared_traces/{TRACE}")' in nb.cells[0].source
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = nb.cells[0].outputs
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs), outputs


def test_run_without_the_ranks_extra_says_so_and_its_notebook_loads_that_file(
        browser: Any, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """JupyterLab whose server (and its worker) cannot import pyarrow/duckdb: the run opens as its
    first file, the tab says so, and "Open in notebook" writes code that loads that file."""
    import nbformat
    from nbclient import NotebookClient

    (tmp_path / "root").mkdir()
    files = sorted(copy_run(tmp_path / "root" / "run").iterdir())
    (tmp_path / "site").mkdir()
    lab = start_lab(tmp_path, env=without_ranks_extra(tmp_path / "site"))
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        with screenshot_on_failure(request, tmp_path, lambda: context.pages):
            page = context.new_page()
            record_api_calls(page)
            page.goto(f"{lab.base}/lab/workspaces/no-ranks?reset&token={TOKEN}")
            item(page, "run").click(button="right")
            page.locator(".lm-Menu-item:has-text('Open run in profile viewer')").first.click()
            page.wait_for_selector(TIMELINE)
            assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
            note = page.locator(".jp-ProfviewPanel-note").first
            assert note.inner_text().strip() == one_file_note(files)
            status = session_status(page, lab, session_id(page))
            assert status["run"]["mode"] == "one-file"
            assert status["events"] == timeline_events(files[0])
            before = set(lab.root.glob("*.ipynb"))
            page.locator(".jp-ProfviewPanel-notebook:visible").first.click()
            path = new_notebook(lab.root, before)
            nb = nbformat.read(str(path), as_version=4)
            source = nb.cells[0].source
            assert f'profview.load("run/{files[0].name}")' in source and "profview.load_many(" not in source
            NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(lab.root)}}).execute()
            outputs = nb.cells[0].outputs
            assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    finally:
        context.close()
        lab.stop()


def notebook7_tree(context: Any, lab: LabServer) -> Any:
    page = context.new_page()
    record_api_calls(page)
    page.goto(f"{lab.base}/tree?token={TOKEN}")
    page.wait_for_selector(".jp-DirListing-item")
    return page


def opened_tab(context: Any, action: Any) -> Any:
    """The browser tab ``action()`` opens (Notebook 7 opens documents in tabs of their own), its
    API requests recorded from its first one (as `record_api_calls`): the listener is on the
    browser context before the tab exists, since a listener on the tab once it is known can miss
    the requests it makes at once (its session's ``/state``)."""
    by_page: dict[Any, tuple[list[str], list[tuple[str, str]]]] = {}

    def seen(r: Any) -> None:
        if "/profview/api/" in r.url:
            calls, requests = by_page.setdefault(r.frame.page, ([], []))
            calls.append(r.url)
            requests.append((r.method, r.url))

    context.on("request", seen)
    with context.expect_page() as opened:
        action()
    tab = opened.value
    tab.set_default_timeout(TIMEOUT_MS)
    tab.profview_calls, tab.profview_requests = by_page.setdefault(tab, ([], []))
    return tab


def test_notebook7_file_browser_opens_the_viewer(context: Any, lab_ext: LabServer) -> None:
    page = notebook7_tree(context, lab_ext)
    tab = opened_tab(context, lambda: item(page, TRACE).dblclick())
    tab.wait_for_selector(TIMELINE)
    assert f"/edit/{TRACE}" in tab.url
    assert wait_until(lambda: canvas_ink(tab, TIMELINE) > 2000), "nothing drawn in Notebook 7"


def test_notebook7_open_with_lists_profile_viewer(context: Any, lab_ext: LabServer) -> None:
    page = notebook7_tree(context, lab_ext)
    item(page, "plain.json").click(button="right")
    page.locator(".lm-Menu-item:has-text('Open With')").first.hover()
    entry = page.locator(".lm-Menu-item:has-text('Profile viewer')").first
    entry.wait_for()
    tab = opened_tab(context, entry.click)
    tab.wait_for_selector(TIMELINE)
    assert "/edit/plain.json" in tab.url
    assert wait_until(lambda: canvas_ink(tab, TIMELINE) > 2000), "nothing drawn in Notebook 7"


def test_notebook7_corrupt_file_shows_the_profview_error(context: Any, lab_ext: LabServer) -> None:
    with pytest.raises(profview.ProfviewError) as expected:
        profview.load(lab_ext.root / "bad.pt.trace.json")
    page = notebook7_tree(context, lab_ext)
    tab = opened_tab(context, lambda: item(page, "bad.pt.trace.json").dblclick())
    error = tab.locator(".jp-ProfviewPanel-error").first
    error.wait_for()
    # the file named relative to the root, where and what was expected: never the server's path
    # nor the parser's reason, which may quote the file (issue 25, item 7)
    exc = expected.value
    assert error.inner_text().strip() == (f"bad.pt.trace.json: {exc.position}: cannot be read as a trace "
                                          f"(expected {exc.expected})")
    assert tab.locator(TIMELINE).count() == 0


def test_notebook7_open_run_directory_draws(context: Any, lab_ext: LabServer) -> None:
    """Notebook 7's shell shows one widget per page: the run opens as the viewer page in a browser
    tab of its own (cookie login + XSRF header, no token in its URL), all ranks."""
    page = notebook7_tree(context, lab_ext)
    item(page, "run").click(button="right")
    entry = page.locator(".lm-Menu-item:has-text('Open run in profile viewer')").first
    tab = opened_tab(context, entry.click)
    tab.wait_for_selector(PAGE_TIMELINE)
    assert tab.url == f"{lab_ext.base}/profview/view?path=run"
    assert wait_until(lambda: canvas_ink(tab, PAGE_TIMELINE) > 2000), "nothing drawn in the viewer page"
    files = sorted((lab_ext.root / "run").glob("rank-*"))
    assert api_requests(tab, "POST", "sessions") == 1  # recorded from the tab's first request
    status = session_status(tab, lab_ext, session_id(tab))
    assert status["events"] == sum(timeline_events(f) for f in files)


def test_profview_serve_page_draws_every_rank(context: Any, tmp_path: Path) -> None:
    """`profview serve RUN`: the printed URL opens the viewer page, which draws all ranks."""
    files = sorted(copy_run(tmp_path / "run").iterdir())
    with profview_serve(tmp_path / "run", tmp_path / "serve.log") as (http, url):
        page = context.new_page()
        record_api_calls(page)
        page.goto(url)
        page.wait_for_selector(PAGE_TIMELINE)
        assert wait_until(lambda: canvas_ink(page, PAGE_TIMELINE) > 2000), "nothing drawn by profview serve"
        status = status_from_page(page, origin(url), session_id(page))
        assert status["events"] == sum(timeline_events(f) for f in files)
        assert page.locator(".pv-standalone-note").count() == 0
        assert page.locator(".pv-standalone-error").count() == 0


def test_profview_serve_without_the_ranks_extra_says_so(context: Any, tmp_path: Path) -> None:
    """Without pyarrow/duckdb the run opens as its first file, and the page says so."""
    files = sorted(copy_run(tmp_path / "run").iterdir())
    (tmp_path / "site").mkdir()
    env = without_ranks_extra(tmp_path / "site")
    with profview_serve(tmp_path / "run", tmp_path / "serve.log", env=env) as (http, url):
        page = context.new_page()
        record_api_calls(page)
        page.goto(url)
        page.wait_for_selector(PAGE_TIMELINE)
        assert wait_until(lambda: canvas_ink(page, PAGE_TIMELINE) > 2000)
        note = page.locator(".pv-standalone-note").first
        assert note.inner_text().strip() == one_file_note(files)
        assert status_from_page(page, origin(url), session_id(page))["events"] == timeline_events(files[0])


def test_voila_renders_the_quickstart_widget(browser: Any, tmp_path: Path) -> None:
    """People publish dashboards with Voila: the quickstart's widget renders there too."""
    pytest.importorskip("voila", reason="voila is in the test extra: pip install -e '.[test]'")
    notebook = REPO / "notebooks" / "01_quickstart.ipynb"
    port = lab_module._free_port()
    log = (tmp_path / "voila.log").open("wb")
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    proc = subprocess.Popen([sys.executable, "-m", "voila", str(notebook), "--no-browser",
                             "--Voila.ip=127.0.0.1", f"--port={port}", "--Voila.port_retries=0"],
                            cwd=notebook.parent, env=env, stdout=log, stderr=subprocess.STDOUT)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        base = f"http://127.0.0.1:{port}/"

        def up() -> bool:
            try:
                urllib.request.urlopen(f"{base}api/status", timeout=5).close()
            except urllib.error.HTTPError:
                return True  # Voila answers 403 there: it is up
            except OSError:
                return False
            return True

        assert wait_until(up, timeout=60), (tmp_path / "voila.log").read_text()[-2000:]
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(base, timeout=120_000)  # Voila executes the notebook before answering
        page.locator(".pv-root[data-pv-state='ready']").first.wait_for()
        assert wait_until(lambda: canvas_ink(page, ".pv-timeline canvas") > 2000), "nothing drawn in Voila"
        # the kernel answers the view's commands (Voila keeps the kernel): the slices drawn come
        # from a `_detail` reply, not only from the overview trait
        root = page.locator(".pv-root").first
        assert wait_until(lambda: root.get_attribute("data-source") == "detail", timeout=30)
    finally:
        context.close()
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
