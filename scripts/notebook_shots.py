"""Screenshots of the widgets of example notebooks, as a user sees them in JupyterLab.

    .venv/bin/python scripts/notebook_shots.py OUT_DIR 07_gpu_trace 13_what_is_wrong ...
    [--source DIR]   # import the package from DIR instead of this tree (a before/after pair)

Runs each notebook of ``notebooks/`` in a fresh JupyterLab (Debian Chromium, the browser
tests' helpers), waits until every widget is drawn, scrolls each into view and saves
``OUT_DIR/<notebook>_<n>.png`` (the widget's own element), n = 0, 1, ... in page order.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser import lab as labmod  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("notebooks", nargs="+")
    ap.add_argument("--source", type=Path, default=None)
    ap.add_argument("--settle", type=float, default=4.0, help="seconds to wait after the last widget drew")
    args = ap.parse_args()
    if args.source:
        labmod.REPO = args.source.resolve()
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="pv-shots-"))
    root = tmp / "root"
    root.mkdir()
    server = labmod.LabServer(root)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(labmod.CHROMIUM), headless=True,
                                        args=labmod.LAUNCH_ARGS)
            for name in args.notebooks:
                src = REPO / "notebooks" / f"{name}.ipynb"
                shutil.copy(src, root / src.name)
                server.trust(root / src.name)
                page = browser.new_context(viewport={"width": 1300, "height": 1500}).new_page()
                page.set_default_timeout(labmod.TIMEOUT_MS)
                known = {k["id"] for k in server.kernels()}
                page.goto(f"{server.base}/lab/workspaces/{name}/tree/{src.name}?reset")
                page.wait_for_selector(".jp-Notebook .jp-Cell:visible")
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not [
                        k for k in server.kernels()
                        if k["id"] not in known and k.get("execution_state") == "idle"]:
                    time.sleep(0.3)
                time.sleep(0.5)
                page.click("li.lm-MenuBar-item:has-text('Run')")
                page.click("li.lm-Menu-item[data-command='runmenu:run-all']")
                # all cells done: no cell shows [*] and the kernel is idle
                time.sleep(3)
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline:
                    busy = page.locator(".jp-InputPrompt:has-text('[*]')").count()
                    if not busy:
                        break
                    time.sleep(0.5)
                roots = page.locator(".pv-root")
                for i in range(roots.count()):
                    r = roots.nth(i)
                    r.scroll_into_view_if_needed()
                    page.wait_for_selector(f".pv-root >> nth={i}")
                    time.sleep(args.settle)
                    r.screenshot(path=str(args.out / f"{name}_{i}.png"))
                    print("saved", args.out / f"{name}_{i}.png", flush=True)
                page.context.close()
                server.shutdown_kernels()
            browser.close()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
