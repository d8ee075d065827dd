"""Shared by the per-format test files: load through one format module, and the
fuzz check every parser must pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_profview.errors import ProfviewError
from jupyter_profview.model import Trace
from jupyter_profview.sources import Source


def load_with(fmt: Any, data: bytes | Path, name: str) -> Trace:
    """``fmt.FORMAT.load`` of bytes (shown as ``name``) or a path; every record accounted for,
    every table as the schema declares it (``trace.validate()``)."""
    source = Source(data, name=name) if isinstance(data, bytes) else Source(data)
    trace: Trace = fmt.FORMAT.load(source)
    assert trace.quality.unaccounted == 0
    trace.validate()
    return trace


def fuzz_check(fmt: Any, data: bytes) -> Trace | None:
    """Arbitrary input either loads with every record accounted for and valid tables (the
    Trace is returned for further checks), or raises ProfviewError (None is returned);
    any other exception fails the test."""
    try:
        return load_with(fmt, data, name="fuzz")
    except ProfviewError:
        return None


def mutate(data: Any, blob: bytes, max_insert: int = 8) -> bytes:
    """One to four random flips, cuts or insertions drawn by hypothesis (``st.data()``)."""
    from hypothesis import strategies as st

    out = bytearray(blob)
    for _ in range(data.draw(st.integers(1, 4))):
        if not out:
            break
        at = data.draw(st.integers(0, len(out) - 1))
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if op == "flip":
            out[at] = data.draw(st.integers(0, 255))
        elif op == "cut":
            del out[at:]
        else:
            out[at:at] = data.draw(st.binary(min_size=1, max_size=max_insert))
    return bytes(out)


def read_json(path: Path) -> dict[str, Any]:
    """A trace file (``.gz`` too) parsed with the stdlib, floats kept as exact Decimals."""
    import gzip
    import json
    from decimal import Decimal

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        return json.loads(f.read(), parse_float=Decimal)


def ns(us: Any) -> int:
    """Chrome-trace microseconds (a Decimal, int or text) as exact integer nanoseconds."""
    from decimal import Decimal

    return int(Decimal(us) * 1000)


def union_ns(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals (plain Python, the tests' own count)."""
    total, reach = 0, None
    for a, b in sorted(intervals):
        if reach is None or a > reach[1]:
            total += 0 if reach is None else reach[1] - reach[0]
            reach = [a, b]
        else:
            reach[1] = max(reach[1], b)
    return total + (0 if reach is None else reach[1] - reach[0])
