"""The reference site (``mkdocs.yml``, ``docs/site_src``; built with ``mkdocs build --strict`` by
``scripts/test.sh``) documents every public name of ``jupyter_profview`` and
``jupyter_profview.analysis``: each is rendered by a ``::: target`` line of a page, either itself
or as a member of a module page."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import jupyter_profview
import jupyter_profview.analysis as analysis

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "docs" / "site_src"


def targets() -> set[str]:
    found: set[str] = set()
    for page in PAGES.rglob("*.md"):
        found.update(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.MULTILINE))
    return found


def documented(obj: object, name: str, pages: set[str]) -> bool:
    module = getattr(obj, "__module__", "")
    full = f"{module}.{getattr(obj, '__name__', name)}"
    return full in pages or module in pages or f"jupyter_profview.{name}" in pages


def test_every_public_name_has_a_reference_entry() -> None:
    pages = targets()
    missing = []
    for package in (jupyter_profview, analysis):
        for name in package.__all__:
            if name == "EXAMPLES":  # a path constant
                continue
            obj = getattr(package, name)
            if not documented(obj, name, pages):
                missing.append(f"{package.__name__}.{name} ({getattr(obj, '__module__', '?')})")
    assert missing == [], "no ::: entry in docs/site_src for: " + ", ".join(missing)


def test_every_target_exists() -> None:
    for target in targets():
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
        else:  # pragma: no cover
            raise AssertionError(f"{target}: no such module")


def test_the_docs_check_can_fail() -> None:
    """scripts/test.sh builds the site with `--strict` and without `-q` / `--quiet`: with them
    mkdocs hides the warnings `--strict` counts (a broken cross-reference) and exits 0."""
    script = (ROOT / "scripts" / "test.sh").read_text()
    builds = [line for line in script.splitlines()
              if re.search(r"\bmkdocs build\b", line) and not line.lstrip().startswith("#")]
    assert builds, "scripts/test.sh does not build the site"
    for line in builds:
        flags = line.split()
        assert "--strict" in flags, line
        assert not {"-q", "--quiet"} & set(flags), line
