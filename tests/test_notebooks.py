"""Every notebook in notebooks/ runs top to bottom without an error output.

The notebooks are kept in git without outputs; this executes them with
nbclient (widget state stored, as a saved notebook would have it) and checks
that the executed notebook stays small.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
MAX_EXECUTED_BYTES = 3 * 2**20  # SVG charts + widget overview state, all cells together


def error_outputs(book: nbformat.NotebookNode) -> list[str]:
    found = []
    for index, cell in enumerate(book.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(f"cell {index}: {out.get('ename')}: {out.get('evalue')}")
    return found


def execute(path: Path, kernel_name: str = "python3", timeout: int = 300) -> nbformat.NotebookNode:
    book = nbformat.read(path, as_version=4)
    env_path = os.environ.get("PYTHONPATH", "")
    # The kernel imports jupyter_profview from this checkout even where it is not installed.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env_path) if p)
    try:
        client = NotebookClient(book, timeout=timeout, kernel_name=kernel_name, allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    return book


def test_there_are_notebooks():
    names = [p.name for p in NOTEBOOKS]
    assert names == [
        "01_quickstart.ipynb", "02_tensorflow_stepstats.ipynb", "03_tensorflow_graph.ipynb",
        "04_chainer_memory.ipynb", "05_megengine_operators.ipynb", "06_pytorch_profiler.ipynb",
        "07_gpu_trace.ipynb", "08_many_ranks.ipynb",
        "09_compare_runs.ipynb",
        "10_xspace_and_memory.ipynb", "11_critical_path.ipynb", "12_gpu_time_by_model.ipynb",
        "13_what_is_wrong.ipynb", "14_kernel_efficiency.ipynb", "15_perfetto.ipynb",
        "16_pipeline.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_stored_without_outputs(path):
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    for cell in book.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "clear outputs before committing"
    assert "widgets" not in book.metadata


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path):
    book = execute(path)
    assert error_outputs(book) == []
    size = len(json.dumps(book, ensure_ascii=False).encode())
    assert size < MAX_EXECUTED_BYTES, f"executed {path.name} is {size:,} bytes"
    # the widget cells really showed the widget (a view, not a text fallback)
    views = [out for cell in book.cells for out in cell.get("outputs", [])
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    assert views, "no widget was displayed"
    # charts were rendered offline as SVG, never as a vega-embed script
    for cell in book.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            assert not any(k.startswith("application/vnd.vegalite") for k in data)
            assert "cdn.jsdelivr.net" not in data.get("text/html", "")


if __name__ == "__main__":  # python tests/test_notebooks.py: execute and report sizes
    for nb_path in NOTEBOOKS:
        executed = execute(nb_path)
        print(nb_path.name, len(json.dumps(executed).encode()), error_outputs(executed), file=sys.stderr)
