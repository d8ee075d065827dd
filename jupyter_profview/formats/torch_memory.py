"""PyTorch memory timelines: what ``prof.export_memory_timeline(path, device)``
writes (``torch.profiler``, ``profile_memory=True``, ``record_shapes=True``,
``with_stack=True``), loaded as one memory curve per category.

Two files carry data (both JSON, ``.gz`` optional; told apart by content):

* ``*.json``: ``[times, sizes]``, ``times`` in µs since the epoch (torch's
  ``int(t_ns / 1000)``), ``sizes[k]`` = ``[0, parameter, optimizer_state,
  input, temporary, activation, gradient, autograd_detail, unknown]`` bytes in
  use after ``times[k]`` (column 0 is the plot's zero baseline).  One record =
  one time point; time resolution 1 µs.
* ``*.raw.json.gz``: ``[[time_ns, action, bytes, category], ...]``, ``action``
  1..4 = preexisting, create, increment_version, destroy; ``bytes`` is
  negative where memory is released (destroy, and the old version of an
  increment); ``category`` 0..7 in the order above (7 = unknown).  One record
  = one event; exact ns.  Preexisting tensors (``time_ns = -1``) are placed at
  the first real time, as torch's own ``.json`` export does.

``memory`` rows: ``device`` = the category (``parameter``, ``optimizer state``,
``input``, ``temporary``, ``activation``, ``gradient``, ``autograd detail``,
``unknown``), ``kind`` ``measured``; the categories add up to the total (so
``analysis.peak_time`` finds the total's peak).  There are no events: combine
with the profiler's trace of the same run to see the curves on its time axis:
``profview.load(trace_path, memory=timeline_path)`` or
`jupyter_profview.loader.with_memory`.  Both files use the profiler's epoch clock (the Chrome
trace's ``baseTimeNanoseconds`` + ``ts``), so the curves line up exactly.

The ``.html`` variant embeds only a PNG picture of the plot, not the numbers:
it is recognised and refused with a ProfviewError that says which file to
export instead.

Hostile input: the JSON is streamed in with long whitespace runs squeezed and
strings limited to 64 MiB (`Source.json_document`); a gzip input holding more JSON values
than its stored size allows (``limits.json_value_budget``) is refused while it streams in, before
the standard library's parser (which raises MemoryError, never crashes, under a memory limit)
sees it; an integer too long for Python's digit limit is a ProfviewError.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from ..builder import build_events, make_trace
from ..errors import ProfviewError
from ..limits import MAX_INT_DIGITS
from ..model import Quality, Trace, memory_frame
from ..sources import Source
from . import TraceFormat

# torch.profiler._memory_profiler._CATEGORY_TO_INDEX order
CATEGORIES = ("parameter", "optimizer state", "input", "temporary", "activation", "gradient",
              "autograd detail", "unknown")
ACTIONS = ("preexisting", "create", "increment_version", "destroy")
EXPECTED = ("a PyTorch memory timeline: [times_us, sizes] (.json) or "
            "[[time_ns, action, bytes, category], ...] (.raw.json.gz) from prof.export_memory_timeline")
_HEAD = re.compile(rb"\A\s*\[\s*\[\s*(-?\d|\]\s*,\s*\[\s*\])")
_INTEGER_ARRAYS = re.compile(rb"[\s\[\],\-0-9]*")
_HTML = re.compile(rb"(?is)\A\s*<html>\s*<head>.{0,200}<title>GPU Memory Timeline HTML</title>")
_LIMIT = 2**62


def sniff(head: bytes) -> bool:
    """Nested JSON arrays of integers only (the head may be cut anywhere), or torch's HTML page."""
    return bool(_HEAD.match(head) and _INTEGER_ARRAYS.fullmatch(head)) or bool(_HTML.match(head))


def _int(value: Any, where: str, name: str, what: str = "an integer") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= _LIMIT:
        raise ProfviewError(f"{value!r} is not {what}", source=name, position=where, expected=EXPECTED)
    return value


def _from_series(doc: list[Any], name: str, quality: Quality) -> tuple[list[int], list[str], list[int]]:
    times, sizes = doc
    if not isinstance(times, list) or not isinstance(sizes, list) or len(times) != len(sizes):
        raise ProfviewError("times and sizes are not two lists of the same length", source=name,
                            position="top level", expected=EXPECTED)
    t_out: list[int] = []
    d_out: list[str] = []
    b_out: list[int] = []
    for k, (t, row) in enumerate(zip(times, sizes, strict=True)):
        quality.records_read += 1
        t = _int(t, f"times[{k}]", name, "a time in µs")
        if abs(t) >= _LIMIT // 1000:  # in ns it must still fit int64
            raise ProfviewError(f"times[{k}] is beyond ±2**62 ns", source=name, position=f"times[{k}]",
                                expected="a time in µs since the epoch")
        if not isinstance(row, list) or len(row) != len(CATEGORIES) + 1:
            raise ProfviewError(f"sizes[{k}] is {str(row)[:60]}", source=name, position=f"sizes[{k}]",
                                expected=f"{len(CATEGORIES) + 1} byte counts: 0 then one per category")
        for c, category in enumerate(CATEGORIES):
            t_out.append(t * 1000)
            d_out.append(category)
            b_out.append(_int(row[c + 1], f"sizes[{k}][{c + 1}]", name, "a byte count"))
        quality.placed["memory"] += 1
    return t_out, d_out, b_out


def _from_raw(doc: list[Any], name: str, quality: Quality) -> tuple[list[int], list[str], list[int]]:
    rows = []
    for k, rec in enumerate(doc):
        quality.records_read += 1
        if not isinstance(rec, list) or len(rec) != 4:
            raise ProfviewError(f"element {k} is {str(rec)[:60]}", source=name, position=f"element {k}",
                                expected="[time_ns, action, bytes, category]")
        t, action, nbytes, cat = (_int(v, f"element {k}", name) for v in rec)
        if not 1 <= action <= len(ACTIONS) or not 0 <= cat < len(CATEGORIES):
            raise ProfviewError(f"action {action} / category {cat} out of range", source=name,
                                position=f"element {k}", expected="action 1..4 and category 0..7")
        rows.append((t, cat, nbytes))
        quality.placed["memory"] += 1
    if sum(abs(b) for _, _, b in rows) >= _LIMIT:
        raise ProfviewError("byte counts add up beyond 2**62", source=name, expected="sizes of real tensors")
    known = [t for t, _, _ in rows if t >= 0]
    first = min(known) if known else 0
    times = np.array([t if t >= 0 else first for t, _, _ in rows], np.int64)
    cats = np.array([c for _, c, _ in rows], np.int64)
    deltas = np.array([b for _, _, b in rows], np.int64)
    t_out: list[int] = []
    d_out: list[str] = []
    b_out: list[int] = []
    order = np.argsort(times, kind="stable")
    times, cats, deltas = times[order], cats[order], deltas[order]
    for c, category in enumerate(CATEGORIES):
        mine = cats == c
        if not mine.any():
            continue
        level = np.cumsum(deltas[mine])
        t = times[mine]
        last = np.append(t[1:] != t[:-1], True)  # the level after the last event of each instant
        t_out += t[last].tolist()
        b_out += level[last].tolist()
        d_out += [category] * int(last.sum())
    return t_out, d_out, b_out


def _byte_offset(data: bytes, chars: int) -> int:
    """Byte offset of character ``chars`` of UTF-8 ``data`` (json reports characters)."""
    if data.isascii():
        return chars
    text = data.decode("utf-8", errors="surrogateescape")
    return len(text[:chars].encode("utf-8", errors="surrogateescape"))


def load(source: Source) -> Trace:
    head = source.head()
    if _HTML.match(head):
        raise ProfviewError("this memory timeline HTML only embeds a PNG picture of the plot, not its data",
                            source=source.name, expected="the same export with a .json or .raw.json.gz path")
    document = source.json_document()  # streamed: whitespace squeezed, strings limited
    try:
        doc = json.loads(document.data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = document.position(_byte_offset(document.data, exc.pos)) \
            if isinstance(exc, json.JSONDecodeError) else document.position(exc.start)
        raise ProfviewError(f"invalid JSON: {getattr(exc, 'msg', exc)}", source=source.name, position=where,
                            expected=EXPECTED) from None
    except RecursionError:
        raise ProfviewError("nesting too deep", source=source.name, expected=EXPECTED) from None
    except ValueError:  # an integer beyond Python's digit limit (json.JSONDecodeError is caught above)
        raise ProfviewError(f"an integer of more than {MAX_INT_DIGITS} digits", source=source.name,
                            expected=EXPECTED) from None
    quality = Quality()
    if not isinstance(doc, list):
        raise ProfviewError(f"top level is {type(doc).__name__}", source=source.name, expected=EXPECTED)
    is_series = len(doc) == 2 and isinstance(doc[1], list) and (not doc[1] or isinstance(doc[1][0], list))
    if is_series:
        layout = "series"
        times, devices, values = _from_series(doc, source.name, quality)
    else:
        layout = "raw"
        times, devices, values = _from_raw(doc, source.name, quality)
    if not times:
        raise ProfviewError("the memory timeline is empty", source=source.name, expected=EXPECTED)
    memory = memory_frame(times, devices, values, "measured")
    base = int(memory["time"].min())
    empty: dict[str, Any] = {k: [] for k in ("name", "category", "process", "thread")}
    empty.update(start=np.empty(0, np.int64), dur=np.empty(0, np.int64))
    events, _, base = build_events(empty, quality, base=base)
    peak = memory.groupby("time")["bytes"].sum()  # every category has a row at every series time
    return make_trace(FORMAT.name, "ns", events, quality, base=base, memory=memory,
                      metadata={"layout": layout, "categories": sorted(set(devices)),
                                "time_resolution_ns": 1000 if layout == "series" else 1,
                                "peak_bytes": int(peak.max()) if layout == "series" else None})


FORMAT = TraceFormat(
    name="torch_memory_timeline",
    description="PyTorch profiler memory timeline (export_memory_timeline .json / .raw.json.gz): "
                "memory per category (parameter, gradient, activation, optimizer state, ...)",
    sniff=sniff,
    load=load,
)
