"""Fixtures shared by the test modules."""

from __future__ import annotations

import pytest

from jupyter_profview import _native


@pytest.fixture(params=["python", "native"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once with the pure-Python decoder and once with the native scanner."""
    if request.param == "python":
        monkeypatch.setenv("PROFVIEW_NATIVE", "0")
    elif not _native.available():
        pytest.skip("native library not built")
    return str(request.param)
