"""The installed package's version (``jupyter_profview.__version__``; caches record it)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def package_version() -> str:
    try:
        return version("jupyter_profview")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
