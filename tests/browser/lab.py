"""JupyterLab + Debian Chromium driving helpers (recipe: ../shared/BROWSER_TESTING.md).

Used by the browser tests (``conftest.py``) and ``benchmarks/bench_widget.py``.
``LabServer`` runs JupyterLab in a temp dir on a free port, without token and
without the news toast; kernels import the package from this source tree.
``LabNotebook`` writes a notebook, opens it, runs all cells and re-runs a "step"
cell in place to run code in the kernel and read its output.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 60_000
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get_json(url: str, attempts: int = 1, token: str = "") -> Any:
    """GET ``url`` as JSON; a 5xx answer is asked again up to ``attempts`` times (jupyter-server
    answers 500 while a kernel it is listing is still being shut down)."""
    headers = {"Authorization": f"token {token}"} if token else {}
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code < 500 or attempt == attempts - 1:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


class LabServer:
    def __init__(self, root: Path, token: str = "") -> None:
        """``token``: the server's token ("" for none); every request of this helper carries it."""
        self.root, self.token = root, token
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        settings = root.parent / "lab-settings"
        news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        news.parent.mkdir(parents=True, exist_ok=True)
        news.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
                   PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                   JUPYTER_RUNTIME_DIR=str(root.parent / "runtime"))
        # the server's own notary (secret + signatures), so that `trust` does not touch ~/.local
        self.notary_dir = root.parent / "notary"
        self.notary_dir.mkdir(exist_ok=True)
        self.log = (root.parent / "lab.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={self.port}", f"--IdentityProvider.token={token}", "--ServerApp.password=",
             "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
             "--LabApp.extension_manager=readonly", f"--NotebookNotary.data_dir={self.notary_dir}"],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                _get_json(f"{self.base}/api/status", token=self.token)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"JupyterLab did not start; see {self.log.name}") from None
                time.sleep(0.3)

    def trust(self, path: Path) -> None:
        """Sign a notebook with this server's notary, like `jupyter trust` (JupyterLab renders
        widget outputs, an unsafe mime type, only in trusted notebooks)."""
        import nbformat
        from nbformat.sign import NotebookNotary

        nb = nbformat.read(str(path), as_version=4)
        NotebookNotary(data_dir=str(self.notary_dir)).sign(nb)

    def kernels(self) -> list[dict[str, Any]]:
        return list(_get_json(f"{self.base}/api/kernels", attempts=20, token=self.token))

    def shutdown_kernels(self) -> None:
        """Stop this server's kernels (the machine has 2 cores; idle widgets still cost) and wait
        until the server lists none, so that the next test starts from a quiet server."""
        kernels = self.kernels()
        if not kernels:
            return
        # jupyter-server checks XSRF on a DELETE without a token: send its cookie back
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        auth = {"Authorization": f"token {self.token}"} if self.token else {}
        opener.open(urllib.request.Request(f"{self.base}/lab", headers=auth), timeout=30).close()
        xsrf = next((c.value for c in jar if c.name == "_xsrf"), "")
        for k in kernels:
            req = urllib.request.Request(f"{self.base}/api/kernels/{k['id']}", method="DELETE",
                                         headers={"X-XSRFToken": xsrf, **auth})
            with contextlib.suppress(OSError):
                opener.open(req, timeout=30).close()
        if not wait_until(lambda: not self.kernels(), timeout=60):
            raise RuntimeError(f"kernels still running after shutdown: {self.kernels()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()


STEP_CELL = 'exec(open("{step}", encoding="utf-8").read())'


class LabNotebook:
    """A notebook of ``cells`` plus a last "step" cell that runs a file the test rewrites."""

    def __init__(self, lab: LabServer, page: Any, name: str, cells: list[str], ui: str = "lab") -> None:
        self.lab, self.page, self.name = lab, page, name
        self.step_file = lab.root / f"{name}_step.py"
        self.step_file.write_text("print('STEP ready')\n", encoding="utf-8")
        sources = [*cells, STEP_CELL.format(step=self.step_file.name)]
        nb = {
            "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                       "outputs": [], "source": src} for i, src in enumerate(sources)],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5,
        }
        (lab.root / f"{name}.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        self.ncells = len(sources)
        # a fresh workspace per notebook: JupyterLab would otherwise reopen earlier notebooks
        path = f"lab/workspaces/{name}/tree" if ui == "lab" else "notebooks"
        known = {k["id"] for k in lab.kernels()}
        page.goto(f"{lab.base}/{path}/{name}.ipynb" + ("?reset" if ui == "lab" else ""))
        page.wait_for_selector(".jp-Notebook .jp-Cell:visible", timeout=TIMEOUT_MS)
        self._wait_kernel(known)

    def _wait_kernel(self, known: set[str]) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ready = [k for k in self.lab.kernels() if k["id"] not in known
                     and k.get("execution_state") == "idle" and k.get("connections", 0) >= 1]
            if ready:
                time.sleep(0.5)
                return
            time.sleep(0.3)
        raise TimeoutError("kernel did not become idle")

    def run_all(self) -> None:
        self.page.click("li.lm-MenuBar-item:has-text('Run')")
        self.page.click("li.lm-Menu-item[data-command='runmenu:run-all']")

    def cell(self, i: int) -> Any:
        return self.page.locator(".jp-Notebook:visible .jp-Cell").nth(i)

    def wait_widget(self, timeout: float = TIMEOUT_MS) -> Any:
        root = self.page.locator(".pv-root[data-pv-state='ready']").first
        root.wait_for(timeout=timeout)
        return root

    def step(self, code: str, timeout: float = TIMEOUT_MS) -> str:
        """Run ``code`` in the kernel by re-running the step cell in place; its output text."""
        marker = f"__done_{time.monotonic_ns()}__"
        self.step_file.write_text(f"{code}\nprint({marker!r})\n", encoding="utf-8")
        cell = self.cell(self.ncells - 1)
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press("Control+Enter")
        out = cell.locator(".jp-OutputArea")
        deadline = time.monotonic() + timeout / 1000
        while time.monotonic() < deadline:
            text = out.inner_text() if out.count() else ""
            if marker in text:
                return text.replace(marker, "").strip()
            if "Traceback (most recent call last)" in text:
                raise AssertionError(f"step cell failed:\n{text}")
            time.sleep(0.2)
        raise TimeoutError(f"step cell did not finish: {code!r}")

    def value(self, expr: str) -> Any:
        """A JSON-able kernel value, read by re-running the step cell."""
        text = self.step(f"import json as _j\nprint('VALUE', _j.dumps({expr}))")
        match = re.search(r"VALUE (.*)", text)
        assert match, text
        return json.loads(match.group(1))


@contextlib.contextmanager
def headless_lab(timeout_ms: int, init_script: str | None = None) -> Iterator[tuple[LabServer, Any]]:
    """A JupyterLab server over a fresh temporary root and a page (1400 x 1000) of a headless
    Chromium, for the benchmarks that time the widget in JupyterLab; ``init_script`` runs in the
    page before its own scripts. Kernels, browser and server are closed after."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        root.mkdir()
        lab = LabServer(root)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                if init_script is not None:
                    context.add_init_script(init_script)
                page = context.new_page()
                page.set_default_timeout(timeout_ms)
                yield lab, page
                browser.close()
        finally:
            lab.shutdown_kernels()
            lab.stop()


def wait_until(fn: Any, timeout: float = 30.0, every: float = 0.25) -> Any:
    """Poll ``fn`` until it returns something truthy or ``timeout`` seconds pass; its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(every)


def canvas_ink(page: Any, selector: str) -> int:
    """Pixels of the largest canvas under ``selector`` that differ from its most common colour."""
    return int(page.evaluate("""(sel) => {
      let best = 0;
      for (const c of document.querySelectorAll(sel)) {
        if (!c.width || !c.height) continue;
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const counts = new Map();
        for (let i = 0; i < d.length; i += 4) {
          const k = (d[i] << 24) ^ (d[i+1] << 16) ^ (d[i+2] << 8) ^ d[i+3];
          counts.set(k, (counts.get(k) || 0) + 1);
        }
        let mode = 0;
        for (const v of counts.values()) mode = Math.max(mode, v);
        best = Math.max(best, d.length / 4 - mode);
      }
      return best;
    }""", selector))


def canvas_digest(page: Any, selector: str) -> str:
    """A cheap fingerprint of a canvas's pixels."""
    return str(page.evaluate("""(sel) => {
      const c = document.querySelector(sel);
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let h = 0;
      for (let i = 0; i < d.length; i++) h = (Math.imul(h, 31) + d[i]) | 0;
      return h + ':' + d.length;
    }""", selector))


def copy_into(lab: LabServer, path: Path) -> str:
    shutil.copy(path, lab.root / path.name)
    return path.name


def pixel(page: Any, x: float, y: float) -> list[int]:
    """RGBA of the timeline canvas at page coordinates (x, y)."""
    return list(page.evaluate("""([x, y]) => {
      const c = document.querySelector('.pv-timeline canvas');
      const r = c.getBoundingClientRect();
      const sx = c.width / r.width, sy = c.height / r.height;
      return Array.from(c.getContext('2d').getImageData(Math.round((x - r.left) * sx),
        Math.round((y - r.top) * sy), 1, 1).data);
    }""", [x, y]))
