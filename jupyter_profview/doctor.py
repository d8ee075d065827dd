"""``profview doctor``: what is installed and which paths a load will take.

Prints the versions (package, Python, dependencies, optional extras), which
Chrome decoder is active and why (the native scanner, or the pure-Python one
because the library is missing, refused or disabled), whether the widget's
front-end bundle is built, and where the bundled examples are.
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

REQUIRED = ("numpy", "pandas", "orjson", "protobuf", "anywidget", "ipywidgets", "traitlets", "altair", "tqdm")
OPTIONAL = {  # distribution -> what needs it
    "vl-convert-python": "static chart export: pip install 'jupyter_profview[charts]'",
    "pyarrow": "Parquet export: pip install 'jupyter_profview[parquet]'",
    "duckdb": "SQL over traces: pip install 'jupyter_profview[ranks]'",
    "torch": "%%profview with torch.profiler",
}


def _version(dist: str) -> str | None:
    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def report() -> list[tuple[str, str]]:
    """(label, value) rows of the report."""
    from . import EXAMPLES, _native
    from .loader import EXAMPLE_FILES
    from .widget.widget import _ESM_PATH

    rows = [
        ("jupyter_profview", f"{_version('jupyter_profview') or 'not installed (source tree)'} at "
                             f"{Path(__file__).parent}"),
        ("python", f"{platform.python_version()} ({sys.executable}) on {platform.platform()}"),
    ]
    rows += [(dist, _version(dist) or "MISSING (required)") for dist in REQUIRED]
    rows += [(dist, _version(dist) or f"not installed ({why})") for dist, why in OPTIONAL.items()]
    decoder, why = _native.status()
    if decoder == "native":
        rows.append(("decoder", f"native C scanner: {why}"))
    else:
        hint = "" if why.startswith("disabled") else f"; to get the native scanner: {_native.HOW_TO_BUILD}"
        rows.append(("decoder", f"pure Python (about 15x slower): {why}{hint}"))
    if decoder == "native":
        from .formats.chrome.native import SPLIT_MIN, scan_threads

        threads = min(scan_threads(), 2)
        rows.append(("scan threads", f"{threads} for an uncompressed Chrome/PyTorch file of "
                                     f"{SPLIT_MIN >> 20} MB or more (PROFVIEW_SCAN_THREADS limits it)"))
    if _ESM_PATH.is_file():
        rows.append(("front end", f"bundle present: {_ESM_PATH} ({_ESM_PATH.stat().st_size:,} bytes)"))
    else:
        rows.append(("front end", f"bundle MISSING: {_ESM_PATH} (build it with `cd js && npm run build`)"))
    present = sum((EXAMPLES / f).exists() for f in EXAMPLE_FILES.values())
    rows.append(("examples", f"{EXAMPLES} ({present} of {len(EXAMPLE_FILES)} present; "
                             f"profview.example(name), names: {', '.join(sorted(EXAMPLE_FILES))})"))
    return rows


def text() -> str:
    rows = report()
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)
