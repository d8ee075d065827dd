"""The package's layers, checked on every import (lazy ones inside functions too).

formats → model → analysis → front ends: a module may import its own layer and the layers
below it, never one above.  ``ranks/`` (many files as one TraceSet) is a loading layer like
``loader.py``; the widget, charts, server, magics and CLI are front ends.  The one exception is
written here with its reason, so that a new one has to be argued for.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jupyter_profview

PKG = Path(jupyter_profview.__file__).parent

# lowest first; a module's layer is the first prefix (longest match) that names it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("errors", "numbers", "palette", "phase_rules", "sources", "text_stream", "_native")),
    ("model", ("model", "builder", "nesting", "query")),
    ("formats", ("formats",)),
    ("loading", ("loader", "ranks", "export")),
    ("analysis", ("analysis",)),
    ("front", ("widget", "charts", "charts_gpu", "server", "magics", "cli", "doctor",
               "python_profile", "__init__", "__main__")),
]
# (importer, imported): why it may reach up
ALLOWED = {
    ("analysis.compare", "widget.compare"): "Comparison.show() builds the side-by-side widget (lazy)",
    ("_native", "formats.chrome.columns"): "a library whose numeric-arg keys differ from the Chrome "
                                           "decoder's list is refused (lazy, at load)",
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    best, level = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    assert level >= 0, f"{module} is in no layer: add it to LAYERS"
    return level


def imports_of(path: Path) -> set[str]:
    """Package-relative names of the package modules ``path`` imports, at any depth."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif (node.module or "").startswith("jupyter_profview"):
                name = node.module.removeprefix("jupyter_profview").lstrip(".")  # type: ignore[union-attr]
            else:
                continue
            for alias in node.names:  # `from . import x` names a module x
                sub = f"{name}.{alias.name}" if name else alias.name
                found.add(sub if (PKG / sub.replace(".", "/")).with_suffix(".py").exists()
                          or (PKG / sub.replace(".", "/")).is_dir() else name)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("jupyter_profview.") for a in node.names
                         if a.name.startswith("jupyter_profview."))
    return {m for m in found if m}


def test_every_module_has_a_layer() -> None:
    for path in PKG.rglob("*.py"):
        layer_of(module_name(path))


def test_imports_run_one_way() -> None:
    upward = []
    for path in sorted(PKG.rglob("*.py")):
        me = module_name(path)
        for other in sorted(imports_of(path)):
            if layer_of(other) > layer_of(me) and (me, other) not in ALLOWED:
                upward.append(f"{me} ({LAYERS[layer_of(me)][0]}) imports {other} "
                              f"({LAYERS[layer_of(other)][0]})")
    assert not upward, "\n".join(upward)


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path) -> None:
    """The check above would pass on a package it cannot read; make sure it reads this one."""
    seen = imports_of(PKG / "analysis" / "compare.py")
    assert "widget.compare" in seen  # a lazy, relative, two-level import
    assert "model" in seen
    assert layer_of("widget.compare") > layer_of("analysis.compare") > layer_of("formats.chrome.trace")
