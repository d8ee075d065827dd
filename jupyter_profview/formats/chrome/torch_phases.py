"""Chrome traces from PyTorch: forward-phase inference inside profiler steps."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...kinds import code_mask, step_pattern
from ...model import PHASES, Quality
from .flows import inherit_down
from .slices import from_codes


def forward_in_profiler_steps(events: pd.DataFrame, quality: Quality) -> None:
    """PyTorch forward inference.  Within a step (the direct children of a
    ``ProfilerStep#N`` (`jupyter_profview.kinds.step_pattern`), or, on a thread without
    steps that has top-level
    backward ops, its top-level events) ops still ``other`` that start before
    the step's first backward op are ``forward``, and so are their subtrees.
    A ``ProfilerStep#`` without any backward op (inference) is all forward."""
    if len(events) == 0:
        return
    names = events["name"].cat.categories
    is_step_name = step_pattern().match
    is_step = code_mask(names, events["name"].cat.codes.to_numpy(), is_step_name)
    parent = events["parent"].to_numpy()
    track = events["track"].cat.codes.to_numpy().astype(np.int64)
    codes = events["phase"].cat.codes.to_numpy().copy()
    other, backward = PHASES.index("other"), PHASES.index("backward")
    group = np.where((parent >= 0) & is_step[np.maximum(parent, 0)], parent, -1)
    top_backward = (parent < 0) & (codes == backward)
    tracks = np.setdiff1d(np.unique(track[top_backward]), np.unique(track[is_step]))
    top = (parent < 0) & np.isin(track, tracks) & ~is_step
    group[top] = -2 - track[top]
    members = np.flatnonzero(group != -1)
    if len(members) == 0:
        return
    start = events["start"].to_numpy()
    first_backward = pd.Series(start[members].astype(np.float64)).where(codes[members] == backward) \
        .groupby(group[members]).transform("min").to_numpy()
    pick = (codes[members] == other) & ~(start[members] >= first_backward)
    before = int((codes == other).sum())
    codes[members[pick]] = PHASES.index("forward")
    inherit_down(events, codes)
    quality.unknown_phases -= before - int((codes == other).sum())
    events["phase"] = from_codes(codes, PHASES)
