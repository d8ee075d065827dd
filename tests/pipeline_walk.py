"""An independent walk of a recorded pipeline run's JSON for `test_pipeline*.py`: the `json`
module (times as decimals, to the ns), the thread of the pipeline's ranges, the `ProfilerStep#N`
slices on it, its `cpu_op` slices, and unions measured with interval code of its own (not the
package's)."""

from __future__ import annotations

import gzip
import json
import re
from decimal import Decimal
from pathlib import Path

DATA = Path(__file__).parent / "data" / "pipeline"
SCHEDULES = ("interleaved", "gpipe", "1f1b")
LABEL = re.compile(r"^PP:(\d+)([A-Z_]+?)(\d*)$|^(Forward|Backward) (\d+)$")
COMPUTE = {"F", "I", "B", "W"}


# --- an interval walk of its own: lists of (start, end) ------------------------------------------
def merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def minus(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    for s, e in merged(a):
        cur = s
        for bs, be in merged(b):
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append((cur, bs))
            cur = max(cur, be)
        if cur < e:
            out.append((cur, e))
    return out


def inside(spans: list[tuple[int, int]], lo: int, hi: int) -> int:
    return sum(max(0, min(e, hi) - max(s, lo)) for s, e in merged(spans))


def both(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [(max(s, bs), min(e, be)) for s, e in merged(a) for bs, be in merged(b) if min(e, be) > max(s, bs)]


def walk(path: Path) -> dict:
    """Per step of one rank file: dur, compute, and per stage the compute; plus m and stages."""
    with gzip.open(path) as f:
        doc = json.loads(f.read(), parse_float=Decimal)
    rank = int(doc["distributedInfo"]["rank"])
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    for e in xs:
        e["s"] = int(Decimal(e["ts"]) * 1000)
        e["e"] = e["s"] + int(Decimal(e["dur"]) * 1000)
    labels = [e for e in xs if LABEL.match(e["name"])]
    tids = [e["tid"] for e in labels] or [e["tid"] for e in xs if e["name"].startswith("ProfilerStep#")]
    tid = max(set(tids), key=tids.count)
    mine = [e for e in xs if e["tid"] == tid]
    ops = [(e["s"], e["e"]) for e in mine if e.get("cat") == "cpu_op"]
    comm = [(e["s"], e["e"]) for e in mine if e.get("cat") == "cpu_op"
            and (e["name"].startswith(("c10d::", "gloo:", "nccl:")) or e["name"] == "record_param_comms")]
    busy = minus(ops, comm)
    steps = {}
    actions = []  # every action of a step: (stage, kind, microbatch or None, start, end, step)
    for st in (e for e in mine if re.match(r"^ProfilerStep#\d+$", e["name"])):
        stages: dict[int, list[tuple[int, int]]] = {}
        for e in labels:
            if e["tid"] != tid or not st["s"] <= e["s"] < st["e"]:
                continue
            m = LABEL.match(e["name"])
            assert m is not None
            kind = m.group(2) or ("F" if m.group(4) == "Forward" else "B")
            stage = int(m.group(1)) if m.group(1) else rank
            mb = m.group(3) or m.group(5)
            actions.append((stage, kind, int(mb) if mb else None, e["s"], e["e"], st["name"]))
            if kind in COMPUTE:
                stages.setdefault(stage, []).append((e["s"], min(e["e"], st["e"])))
        per_stage = {s: inside(both(busy, spans), st["s"], st["e"]) for s, spans in stages.items()}
        # a stage's bubble in the step: the step's time not in that stage's compute
        bubbles = {s: minus([(st["s"], st["e"])], both(busy, spans)) for s, spans in stages.items()}
        steps[st["name"]] = {"dur": st["e"] - st["s"], "compute": inside(busy, st["s"], st["e"]),
                             "stages": per_stage or {rank: inside(busy, st["s"], st["e"])},
                             "bubbles": bubbles, "start": st["s"]}
    forwards = [int(m.group(3) or m.group(5)) for e in labels if (m := LABEL.match(e["name"]))
                and (m.group(2) == "F" or m.group(4) == "Forward")]
    return {"rank": rank, "steps": steps, "actions": actions, "m": max(forwards) + 1 if forwards else None,
            "v": max(1, len({LABEL.match(e["name"]).group(1) for e in labels  # type: ignore[union-attr]
                             if LABEL.match(e["name"]).group(1)}))}  # type: ignore[union-attr]
