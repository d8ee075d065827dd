"""Event colours for the widget: a legend of categories (or phases) and a colour code per event.

Colouring by category, GPU device activities (the kernels, memcpy and memset of
``trace.launches``) take their type as colour key instead of the raw ``cat`` of
the file: ``kernel``, ``memcpy``, ``memset``, and ``communication`` for NCCL /
RCCL kernels (which Kineto files the same ``kernel`` category as compute
kernels).  The CPU side of a collective (a ``nccl:all_reduce`` op, a ``gloo`` range, a
``c10d::`` op: `communication_mask`, by `kinds.is_communication`) is ``communication`` too:
communication has one colour and one legend entry on the CPU lanes, the GPU lanes and the
collapsed groups' busy lanes.  Only the colour changes: ``trace.events["category"]`` keeps the raw
category (``kernel``, ``gpu_memcpy``, older ``Kernel`` / ``Memcpy`` ...), and
``trace.launches["type"]`` holds the type.  The device types present always
have a legend entry of their own (they are never folded into "other").
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..kinds import by_code, is_communication
from ..model import KERNEL_TYPES, PHASES
from ..palette import CATEGORY_COLORS, OTHER_COLOR, PHASE_COLORS, UNKNOWN_COLORS
from .blocks import blocks

LEGEND_TOP = 11


@dataclass
class Legend:
    """Colour per event: ``codes[event id]`` indexes ``entries``."""

    color_by: str
    entries: list[dict[str, Any]]
    codes: np.ndarray  # uint16, one per event id


def build_legend(events: pd.DataFrame, color_by: str = "auto",
                 launches: pd.DataFrame | None = None) -> Legend:
    """Colour by ``category`` (top 11 by total duration, the rest "other") or ``phase``.

    Category colours are stable across traces: a known category has its fixed colour
    (`palette.CATEGORY_COLORS`), another one a colour of `palette.UNKNOWN_COLORS` from a hash of
    its name (probing on collision), never from its rank.  With
    ``launches`` (``trace.launches``), device activities are coloured by their
    type (see the module doc).
    """
    n = len(events)
    if color_by == "auto":
        used = events["category"].nunique() if n else 0
        color_by = "category" if used >= 2 else "phase"
    if color_by not in ("category", "phase"):
        raise ValueError(f"color_by must be 'category', 'phase' or 'auto', not {color_by!r}")
    if n == 0:
        return Legend(color_by, [], np.zeros(0, np.uint16))
    column = pd.Categorical(events[color_by])
    pinned: set[int] = set()
    if color_by == "category" and launches is not None and len(launches):
        column, pinned = device_type_keys(events, column, launches)
    if color_by == "category":
        column, pinned = communication_keys(events, column, pinned)
    codes = np.asarray(column.codes)
    ncat = len(column.categories)
    dur = events["dur"].to_numpy()
    if dur.dtype.kind not in "iuf":
        dur = events["dur"].to_numpy(np.float64)
    # per category: total duration (float64 sums of integers: exact, so in any order) and count,
    # block by block (no full-size int64 / float64 copies of the codes and durations)
    total = np.zeros(ncat, np.float64)
    count = np.zeros(ncat, np.int64)
    for a, b in blocks(n):
        part, part_dur = codes[a:b], dur[a:b]
        valid = part >= 0
        if not valid.all():
            part, part_dur = part[valid], part_dur[valid]
        total += np.bincount(part, weights=part_dur, minlength=ncat)
        count += np.bincount(part, minlength=ncat)
    if color_by == "phase":
        keep = [c for c in range(ncat) if count[c] > 0]
        keep.sort(key=lambda c: PHASES.index(str(column.categories[c]))
                  if str(column.categories[c]) in PHASES else len(PHASES))
        colors = [PHASE_COLORS.get(str(column.categories[c]), OTHER_COLOR) for c in keep]
    else:
        ranked = sorted((c for c in range(ncat) if count[c] > 0), key=lambda c: (-total[c], -count[c]))
        room = max(LEGEND_TOP - sum(c in pinned for c in ranked), 0)
        others = set([c for c in ranked if c not in pinned][:room])
        keep = [c for c in ranked if c in pinned or c in others]
        colors = category_colors([str(column.categories[c]) for c in keep])
        keep.sort(key=lambda c: (-total[c], -count[c]))
    entries = [{"key": str(column.categories[c]) or "(none)", "color": col, "count": int(count[c])}
               for c, col in zip(keep, colors, strict=True)]
    lookup = np.full(ncat + 1, len(entries), np.uint16)  # last slot (and code -1) -> "other"
    for i, c in enumerate(keep):
        lookup[c] = i
    event_codes = lookup[codes]  # uint16 (code -1: the last slot)
    rest = int((event_codes == len(entries)).sum())
    if rest:
        entries.append({"key": "other", "color": OTHER_COLOR, "count": rest})
    return Legend(color_by, entries, event_codes)


def category_colors(keys: list[str]) -> list[str]:
    """The colour of each category of `keys`: its fixed one (`CATEGORY_COLORS`), else a slot of
    `UNKNOWN_COLORS` from a hash of its name, the next free one on a collision (while any is free)."""
    taken: set[int] = set()
    out = []
    for key in keys:
        if key in CATEGORY_COLORS:
            out.append(CATEGORY_COLORS[key])
            continue
        slot = zlib.crc32(key.encode("utf-8")) % len(UNKNOWN_COLORS)
        for _ in range(len(UNKNOWN_COLORS)):
            if slot not in taken:
                break
            slot = (slot + 1) % len(UNKNOWN_COLORS)
        taken.add(slot)
        out.append(UNKNOWN_COLORS[slot])
    return out


def _per_value(column: pd.Series, test: Any) -> np.ndarray:
    """``test`` over a column's strings, once per distinct value, as a boolean per row."""
    cat = pd.Categorical(column)
    values = pd.Series(np.asarray(cat.categories.astype(str), dtype=object))
    return by_code(np.asarray(test(values), bool), cat.codes)


def communication_mask(events: pd.DataFrame) -> np.ndarray:
    """Per event: a collective's call, wait or kernel (category ``communication``, or by name
    (`kinds.is_communication`): a collective call, a ``c10d::`` op or a communication kernel)."""
    if len(events) == 0:
        return np.zeros(0, bool)
    name = _per_value(events["name"], lambda v: v.map(is_communication))
    return name | _per_value(events["category"], lambda v: v == "communication")


def communication_keys(events: pd.DataFrame, column: pd.Categorical[Any],
                       pinned: set[int]) -> tuple[pd.Categorical[Any], set[int]]:
    """``column`` with every event of `communication_mask` recoded to ``communication`` (pinned:
    always in the legend when present)."""
    comm = communication_mask(events)
    if not comm.any():
        return column, pinned
    categories = [str(c) for c in column.categories]
    if "communication" not in categories:
        categories.append("communication")  # appended: old codes stay valid
    code = categories.index("communication")
    codes = np.asarray(column.codes, np.int64).copy()
    codes[comm] = code
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories)), pinned | {code}


def device_type_keys(events: pd.DataFrame, column: pd.Categorical[Any],
                     launches: pd.DataFrame) -> tuple[pd.Categorical[Any], set[int]]:
    """``column`` (the events' categories) with each device activity of ``launches`` recoded
    to its type (``kernel``, ``memcpy``, ``memset``, ``communication``), and the codes of the
    types present."""
    categories = [str(c) for c in column.categories]
    categories += [t for t in KERNEL_TYPES if t not in categories]  # appended: old codes stay valid
    index = pd.Index(categories)
    codes = np.asarray(column.codes, np.int64).copy()
    pos = events.index.get_indexer(pd.Index(launches["kernel"].to_numpy(np.int64)))
    known = pos >= 0
    types = index.get_indexer(pd.Index(launches["type"].astype(str)))
    codes[pos[known]] = types[known]
    recoded = pd.Categorical.from_codes(codes, categories=index)
    return recoded, set(np.unique(types[known]).tolist())
