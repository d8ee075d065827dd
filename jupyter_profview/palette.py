"""The one colour palette: every colour the widget (Python and TypeScript), the Altair charts and
the legends use, defined here once.

`js/src/palette_gen.ts` is generated from this module (`python -m jupyter_profview.palette`;
tests/test_palette.py fails when it is out of date), so the browser draws the same colours.

- `CATEGORY_COLORS`: a fixed colour per known category (a legend key: the trace's category, or a
  device activity's type, see `widget/legend.py`): `cpu_op` is the same blue in every trace and
  view.  Each meaning has its own hue: communication purple, launches (`cuda_runtime`) yellow,
  kernels green, memory copies red; orange is the backward phase's.
- `UNKNOWN_COLORS`: the colours an unknown category takes (a hash of its name; none of them is a
  known category's colour).
- `METRIC_SCALE`: colour by a "higher is better" number (SM efficiency, occupancy, bus
  bandwidth): the low classes are the saturated, dark ones ("bad is loud"), the good ones pale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: a fixed colour per known category (and device activity type), whatever else the trace holds
CATEGORY_COLORS: dict[str, str] = {
    # CPU side
    "cpu_op": "#4e79a7",              # blue
    "Operator": "#4e79a7",            # older Kineto files: the same thing
    "user_annotation": "#a0cbe8",     # light blue: record_function ranges
    "python_function": "#9c755f",     # brown
    "cuda_runtime": "#edc948",        # yellow: launches (cudaLaunchKernel, ...)
    "Runtime": "#edc948",
    "cuda_driver": "#b6992d",         # dark yellow: driver calls
    "cpu_instant_event": "#79706e",
    "Trace": "#d7d7d7",               # the profiler's whole-recording span
    "fwdbwd": "#d4a6c8",
    # GPU side (device activities take their type, `model.KERNEL_TYPES`)
    "kernel": "#2e9e44",              # green, saturated: compute kernels
    "Kernel": "#2e9e44",
    "gpu_user_annotation": "#8cd17d",  # light green
    "memcpy": "#e15759",              # red
    "gpu_memcpy": "#e15759",
    "Memcpy": "#e15759",
    "memset": "#ff9d9a",              # light red
    "gpu_memset": "#ff9d9a",
    "Memset": "#ff9d9a",
    "communication": "#8e44ad",       # purple: collectives (NCCL / RCCL / gloo)
    "cuda_sync": "#6b5b95",
}
#: communication (collective calls and kernels), wherever it is drawn: category, phase, the busy
#: lanes of collapsed ranks, the critical path, the charts
COMMUNICATION_COLOR = CATEGORY_COLORS["communication"]
#: a kernel launch (the CPU side of a kernel), wherever it is drawn
LAUNCH_COLOR = CATEGORY_COLORS["cuda_runtime"]
#: a compute kernel, wherever it is drawn
KERNEL_COLOR = CATEGORY_COLORS["kernel"]
#: the colours of categories the table does not know (by a hash of the name); none is a known one
UNKNOWN_COLORS = ("#76b7b2", "#3e8fb0", "#bcbd22", "#17becf", "#8c564b", "#d37295", "#499894",
                  "#86bcb6", "#c7a76c", "#1f3f8f", "#a3a500")
PALETTE = UNKNOWN_COLORS  # the name the charts used
OTHER_COLOR = "#b3b3b3"
IDLE_COLOR = "#e6e6e6"
#: a gpu_idle finding's idle intervals, shaded over its GPU's lanes (widget/advice.py): the grey of
#: idleness, darker than IDLE_COLOR so that it reads through its translucency (IDLE_SHADE_ALPHA) on
#: the lanes' background, light or dark; no category is grey like it
IDLE_SHADE_COLOR = "#8c8c8c"
IDLE_SHADE_ALPHA = 0.35
PHASE_COLORS = {
    "forward": "#4e79a7", "backward": "#e8711a", "optimizer": "#59a14f",
    "communication": COMMUNICATION_COLOR, "other": OTHER_COLOR, "idle": IDLE_COLOR,
}
#: colour by a "higher is better" number (SM efficiency, occupancy, bus bandwidth), five classes
#: from the lowest to the highest: ColorBrewer's YlOrRd (6 classes, the palest left out), reversed:
#: the worst class is the darkest, most saturated red, the best a pale yellow
METRIC_SCALE = ("#bd0026", "#f03b20", "#fd8d3c", "#feb24c", "#fed976")
#: colour by tensor-core use: the kernels without (worth a look) loud, the others pale
TENSOR_CORE_COLORS = {"tensor core": METRIC_SCALE[-1], "no tensor core": METRIC_SCALE[1]}
#: counter series (one colour per series of a track, listed in its legend): the first eight are
#: no category's colour (a GPU's queue is not mistaken for its kernels), then the rest
SERIES_COLORS = ("#1f3f8f", "#17becf", "#bcbd22", "#d37295", "#76b7b2", PHASE_COLORS["backward"],
                 "#7f7f7f", "#8c564b", "#4e79a7", "#59a14f", "#e15759", "#ff9da7")
#: the critical path's breakdown (the bar, its legend, the path's arrows)
BOUND_COLORS = {"cpu": CATEGORY_COLORS["cpu_op"], "kernel": KERNEL_COLOR,
                "communication": COMMUNICATION_COLOR, "launch": LAUNCH_COLOR,
                "kernel_gap": "#e15759", "sync": CATEGORY_COLORS["cuda_sync"]}

# ---- pipeline stage lanes (branch stagelanes, issue #34; widget/stage_lanes.py) -----------------
#: what each pipeline action kind (`kinds.PIPELINE_ACTION_KINDS`) is drawn as in the stage lanes
PIPELINE_KIND_GROUP = {
    "F": "forward", "I": "backward", "B": "backward", "W": "weight-grad",
    "SEND_F": "send/recv", "RECV_F": "send/recv", "SEND_B": "send/recv", "RECV_B": "send/recv",
    "UNSHARD": "other", "RESHARD": "other", "REDUCE_GRAD": "other", "OVERLAP_F_B": "other",
}
#: the colour of each group (legend order), and of the bubbles shaded behind the actions
PIPELINE_COLORS = {
    "forward": PHASE_COLORS["forward"], "backward": PHASE_COLORS["backward"], "weight-grad": "#59a14f",
    "send/recv": PHASE_COLORS["communication"], "other": OTHER_COLOR,
}
PIPELINE_BUBBLE_COLOR = "#f3c1c1"
# ---- end of the pipeline block ------------------------------------------------------------------


TS_PATH = Path("js") / "src" / "palette_gen.ts"
#: the constants written to `js/src/palette_gen.ts`
EXPORTED = ("CATEGORY_COLORS", "COMMUNICATION_COLOR", "LAUNCH_COLOR", "KERNEL_COLOR",
            "UNKNOWN_COLORS", "OTHER_COLOR", "IDLE_COLOR", "IDLE_SHADE_COLOR", "IDLE_SHADE_ALPHA",
            "PHASE_COLORS", "METRIC_SCALE",
            "TENSOR_CORE_COLORS", "SERIES_COLORS", "BOUND_COLORS")


def typescript() -> str:
    """The text of `js/src/palette_gen.ts`: this module's colours as TypeScript constants."""
    here = globals()
    lines = ["// Generated from jupyter_profview/palette.py by `python -m jupyter_profview.palette`;",
             "// do not edit (tests/test_palette.py checks that it is up to date).", ""]
    for name in EXPORTED:
        value = here[name]
        if isinstance(value, dict):
            kind = "Readonly<Record<string, string>>"
        elif isinstance(value, tuple):
            kind, value = "readonly string[]", list(value)
        elif isinstance(value, float):
            kind = "number"
        else:
            kind = "string"
        text = json.dumps(value, indent=2) if isinstance(value, dict) else json.dumps(value)
        lines.append(f"export const {name}: {kind} = {text};")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m jupyter_profview.palette [path]
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else TS_PATH
    out.write_text(typescript(), encoding="utf-8")
    print(f"wrote {out}")
