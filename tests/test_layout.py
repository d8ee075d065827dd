"""The package's architecture is the import-linter contracts in ``pyproject.toml``
(``[tool.importlinter]``), which ``scripts/test.sh`` checks with ``lint-imports``: one-way
layers, no cycle between siblings at any depth, formats and the newer analyses independent.

import-linter only constrains the modules its layers name: this makes sure every module of the
package is in one, so that a new module cannot slip past the contracts, and that the analyses
never reach the front ends (the house rule of the critical path, attribution and efficiency)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import jupyter_profview

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PKG = Path(jupyter_profview.__file__).parent
CONFIG = tomllib.loads((PKG.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


def contract(cid: str) -> dict:
    return next(c for c in CONFIG["contracts"] if c["id"] == cid)


def layer_names() -> list[list[str]]:
    return [[m.strip() for m in layer.replace("|", ":").split(":")] for layer in contract("layers")["layers"]]


def test_every_module_is_in_a_layer() -> None:
    named = {m for layer in layer_names() for m in layer}
    top = {p.stem if p.is_file() else p.name for p in PKG.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert top - named == set(), f"modules in no layer of [tool.importlinter]: {sorted(top - named)}"
    assert named - top == set(), f"layers naming no module: {sorted(named - top)}"


def test_analyses_do_not_import_front_ends() -> None:
    """``analysis/`` imports nothing from ``widget/``, ``server/`` or ``magics`` (lazily neither)."""
    front = layer_names()[0]
    reached = []
    for path in (PKG / "analysis").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.ImportFrom) and node.level >= 2 and node.module
                    and node.module.split(".")[0] in front):
                reached.append(f"{path.name}: from {'.' * node.level}{node.module}")
    assert reached == []


def test_contracts_are_the_ones_the_readme_names() -> None:
    kinds = {c["id"]: c["type"] for c in CONFIG["contracts"]}
    assert kinds == {"layers": "layers", "acyclic": "acyclic_siblings", "formats": "independence",
                     "analyses": "independence"}
    assert CONFIG["exclude_type_checking_imports"] is True
