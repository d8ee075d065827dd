"""Fixtures for the real-browser tests: one JupyterLab per session, one Chromium page per test.

Every test here is marked ``browser``; where /usr/bin/chromium is absent they are
skipped with the reason (CI installs it, so there they run).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import CHROMIUM, LAUNCH_ARGS, TIMEOUT_MS, LabServer


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.browser)
            if not CHROMIUM.exists():
                item.add_marker(pytest.mark.skip(reason=f"{CHROMIUM} is absent: install it with "
                                                        "`apt-get install chromium fonts-liberation`"))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    root = tmp_path_factory.mktemp("lab") / "root"
    root.mkdir()
    server = LabServer(root)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, lab: LabServer, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.page_errors = errors  # type: ignore[attr-defined]
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        # into the test's temporary directory (pytest keeps the last few runs), never the tree
        shot = tmp_path / "failure.png"
        pg.screenshot(path=str(shot), full_page=True)
        print(f"screenshot of the failure: {shot}")
    context.close()
    lab.shutdown_kernels()


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[Any]:
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


