"""Shared by the native snapshot reader's test files (test_snapshot_native.py,
test_snapshot_rows.py): one snapshot read by the C reader or by the pure-Python restricted
unpickler (the reference), and the check that both readers give the same tables or both refuse."""

from __future__ import annotations

from typing import Any, NamedTuple

import pandas as pd
import pytest

from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import torch_snapshot
from jupyter_profview.loader import load

TABLES = ("events", "memory", "allocations", "counters")


class Read(NamedTuple):
    """``used``: "native" (the C reader answered), "python" (the reference did: asked for, or the
    C reader handed the pickle back, see ``fallback``) or "error" (refused, ``error`` the type)."""

    used: str
    tables: dict[str, pd.DataFrame | None]
    quality: Any
    fallback: str | None
    error: type[ProfviewError] | None


def read(data: bytes, native: bool, monkeypatch: pytest.MonkeyPatch) -> Read:
    with monkeypatch.context() as m:
        m.setenv("PROFVIEW_NATIVE", "1" if native else "0")
        try:
            t = load(data, format="torch_cuda_snapshot")
        except ProfviewError as exc:
            return Read("error", {}, None, None, type(exc))
        fallback = torch_snapshot.last_fallback if native else None
    used = "native" if native and fallback is None else "python"
    return Read(used, {k: getattr(t, k) for k in TABLES}, t.quality, fallback, None)


def same(a: Read, b: Read) -> None:
    """Both refused, or the same tables (every column, dtypes included) and the same quality."""
    assert (a.used == "error") == (b.used == "error"), (a.used, b.used)
    if a.used == "error":
        return
    for k, x in a.tables.items():
        y = b.tables[k]
        if x is None or y is None:
            assert x is None and y is None, k
            continue
        pd.testing.assert_frame_equal(x, y, obj=k)
    assert a.quality == b.quality


def both(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Read, Read]:
    """The C reader's read and the reference's, checked to be the same."""
    a, b = read(data, True, monkeypatch), read(data, False, monkeypatch)
    same(a, b)
    return a, b
