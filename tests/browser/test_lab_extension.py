"""The JupyterLab document extension under Debian Chromium (marked ``browser``): traces opened
from the file browser in a "Profile viewer" tab, drawn by the widget's view over HTTP.

The lab server loads the prebuilt extension (``jupyter_profview/labextension``, built by
``cd labextension && npm run build``) from a temp data dir and enables the server extension with
the config file the wheel ships, as ``pip install`` would.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import jupyter_profview as profview
from tests.browser import lab as lab_module
from tests.browser.lab import REPO, TIMEOUT_MS, LabServer, canvas_ink, wait_until

TOKEN = secrets.token_hex(16)
PREBUILT = REPO / "jupyter_profview" / "labextension"
FIXTURE = REPO / "tests" / "data" / "torch_mlp_train.json"
TRACE = "train.pt.trace.json"
TIMELINE = ".jp-ProfviewPanel .pv-timeline canvas"

pytestmark = pytest.mark.skipif(
    not (PREBUILT / "package.json").is_file(),
    reason="labextension not built: cd labextension && npm install && npm run build")


def _get_json_with_token(url: str) -> Any:
    req = urllib.request.Request(url, headers={"Authorization": f"token {TOKEN}"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def lab_ext(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    top = tmp_path_factory.mktemp("labext")
    data = top / "data" / "labextensions"
    data.mkdir(parents=True)
    (data / "jupyter-profview").symlink_to(PREBUILT, target_is_directory=True)
    root = top / "root"
    root.mkdir()
    shutil.copy(FIXTURE, root / TRACE)
    shutil.copy(FIXTURE, root / "plain.json")  # no profiler name: Open With only
    text = FIXTURE.read_text()
    (root / "bad.pt.trace.json").write_text(text[: len(text) // 2])
    (root / "run").mkdir()
    shutil.copy(FIXTURE, root / "run" / "rank0.pt.trace.json")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_PATH", str(top / "data"))
        mp.setenv("JUPYTER_CONFIG_PATH", str(REPO / "jupyter-config"))
        # with a real token (LabServer's default is none): the extension's requests must carry
        # JupyterLab's auth (token + XSRF) to be answered
        orig = subprocess.Popen

        def popen(args: list[str], **kwargs: Any) -> Any:
            args = [f"--IdentityProvider.token={TOKEN}" if a == "--ServerApp.token=" else a for a in args]
            return orig(args, **kwargs)

        mp.setattr(subprocess, "Popen", popen)
        mp.setattr(lab_module, "_get_json", _get_json_with_token)
        server = LabServer(root)
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:  # the token is in force
            urllib.request.urlopen(f"{server.base}/profview/api/sessions", timeout=10)
        assert refused.value.code == 403
        yield server
    finally:
        server.stop()


@pytest.fixture
def lab_page(browser: Any, lab_ext: LabServer, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    calls: list[str] = []
    pg.on("request", lambda r: calls.append(r.url) if "/profview/api/" in r.url else None)
    pg.profview_calls = calls  # type: ignore[attr-defined]
    pg.goto(f"{lab_ext.base}/lab/workspaces/{request.node.name}?reset&token={TOKEN}")
    pg.wait_for_selector(".jp-DirListing-item", timeout=TIMEOUT_MS)
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        out = REPO / "test-artifacts" / "browser"
        out.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(out / f"{request.node.name}.png"), full_page=True)
    context.close()


def item(page: Any, name: str) -> Any:
    return page.locator(f".jp-DirListing-item[title^='Name: {name}']").first


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
    for _ in range(4):
        page.mouse.wheel(0, -400)
        page.wait_for_timeout(150)  # paced like a hand on a wheel
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
    assert error.inner_text().strip() == str(expected.value)
    assert page.locator(TIMELINE).count() == 0


def test_open_run_directory_and_open_in_notebook(lab_page: Any, lab_ext: LabServer) -> None:
    page = lab_page
    item(page, "run").click(button="right")
    page.locator(".lm-Menu-item:has-text('Open run in profile viewer')").first.click()
    page.wait_for_selector(TIMELINE)
    assert wait_until(lambda: canvas_ink(page, TIMELINE) > 2000)
    before = set(lab_ext.root.glob("*.ipynb"))
    page.locator(".jp-ProfviewPanel-notebook").first.click()
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    path = new_notebook(lab_ext.root, before)
    nb = json.loads(path.read_text())
    source = "".join(nb["cells"][0]["source"])
    assert 'profview.load_many("run")' in source and "profview.show(t)" in source


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


def test_notebook7_file_browser_opens_the_viewer(browser: Any, lab_ext: LabServer) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(f"{lab_ext.base}/tree?token={TOKEN}")
        page.wait_for_selector(".jp-DirListing-item")
        with context.expect_page() as opened:
            item(page, TRACE).dblclick()
        tab = opened.value
        tab.set_default_timeout(TIMEOUT_MS)
        tab.wait_for_selector(TIMELINE)
        assert f"/edit/{TRACE}" in tab.url
        assert wait_until(lambda: canvas_ink(tab, TIMELINE) > 2000), "nothing drawn in Notebook 7"
    finally:
        context.close()


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
