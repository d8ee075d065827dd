"""One palette (issue #36, item 7) and "bad is loud" (item 8), on the kernel side: the TypeScript
palette is the one generated from `palette.py`, a known category has the same colour in every
trace, each meaning has its own hue, a metric's low classes are the loud ones, and the busy lanes
of collapsed groups carry the legend's codes (colour by a metric included).

The browser side (every colour drawn is in the legend; a low-efficiency kernel's drawn colour is
louder than a high one's) is tests/browser/test_findui_browser.py."""

from __future__ import annotations

import colorsys
import re
from pathlib import Path

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import palette
from jupyter_profview.widget.codec import decode_frame
from jupyter_profview.widget.legend import build_legend
from jupyter_profview.widget.widget import TraceWidget

ROOT = Path(__file__).parents[1]
HTA = ROOT / "tests" / "data" / "hta"
NCCL = HTA / "nccl_parser_config_nccl_data.json.gz"
SAMPLED = ROOT / "jupyter_profview" / "examples" / "hta" / "trace_filter_sampled_rank-0.json.gz"
TORCH_CPU = ROOT / "tests" / "data" / "torch_selftime.json.gz"


def hls(color: str) -> tuple[float, float, float]:
    r, g, b = (int(color[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return colorsys.rgb_to_hls(r, g, b)


def chroma(color: str) -> float:
    rgb = [int(color[i:i + 2], 16) for i in (1, 3, 5)]
    return float(max(rgb) - min(rgb))


def test_the_typescript_palette_is_generated_from_palette_py() -> None:
    text = (ROOT / palette.TS_PATH).read_text(encoding="utf-8")
    assert text == palette.typescript(), "run `python -m jupyter_profview.palette` after editing palette.py"
    # and it holds every exported colour (the generator cannot drop one silently)
    for name in palette.EXPORTED:
        assert f"export const {name}:" in text


@pytest.mark.parametrize("module", ["scene", "critical", "counter_tracks", "labels", "summary", "metrics",
                                    "timeline", "search", "details"])
def test_the_drawing_modules_hold_no_colour_of_their_own(module: str) -> None:
    """The modules that colour events, lanes, counters and the critical path take their colours
    from palette_gen.ts (or the legend), never from a literal of their own."""
    path = ROOT / "js" / "src" / f"{module}.ts"
    if not path.exists():
        pytest.skip(f"{path.name} is not in this tree")
    assert re.findall(r"#[0-9a-fA-F]{6}\b", path.read_text(encoding="utf-8")) == []


def test_a_known_category_has_one_colour_in_every_trace() -> None:
    seen: dict[str, set[str]] = {}
    sync = HTA / "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz"
    for path in (NCCL, SAMPLED, TORCH_CPU, sync):
        trace = profview.load(path)
        legend = build_legend(trace.events, "category", trace.launches)
        colours = [e["color"] for e in legend.entries]
        assert len(colours) == len(set(colours)), (path.name, legend.entries)
        for e in legend.entries:
            seen.setdefault(e["key"], set()).add(e["color"])
    assert seen["cpu_op"] == {palette.CATEGORY_COLORS["cpu_op"]}
    assert seen["kernel"] == {palette.CATEGORY_COLORS["kernel"]}
    assert seen["cuda_runtime"] == {palette.LAUNCH_COLOR}
    assert all(len(c) == 1 for c in seen.values()), seen


def test_each_meaning_has_its_own_hue() -> None:
    """communication, launches, kernels, memory copies and the backward phase: five hues (at least
    20 degrees apart), not one orange for three of them."""
    meanings = {"communication": palette.COMMUNICATION_COLOR, "launch": palette.LAUNCH_COLOR,
                "kernel": palette.KERNEL_COLOR, "memcpy": palette.CATEGORY_COLORS["memcpy"],
                "backward": palette.PHASE_COLORS["backward"]}
    hues = {k: hls(c)[0] * 360 for k, c in meanings.items()}
    names = list(hues)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            d = abs(hues[a] - hues[b])
            assert min(d, 360 - d) >= 20, (a, b, hues)
    # the same meaning wherever it is drawn: the phase, the critical path, the summary lanes
    assert palette.PHASE_COLORS["communication"] == palette.COMMUNICATION_COLOR
    assert palette.BOUND_COLORS["communication"] == palette.COMMUNICATION_COLOR
    assert palette.BOUND_COLORS["launch"] == palette.LAUNCH_COLOR
    assert palette.BOUND_COLORS["kernel"] == palette.KERNEL_COLOR
    assert not set(palette.CATEGORY_COLORS.values()) & set(palette.SERIES_COLORS[:8])
    assert len(set(palette.SERIES_COLORS)) == len(palette.SERIES_COLORS)
    assert not set(palette.CATEGORY_COLORS.values()) & set(palette.UNKNOWN_COLORS)
    # the kernels' colour is not a pale one (it looked dimmed): as saturated as the CPU ops' blue
    assert chroma(palette.KERNEL_COLOR) >= chroma(palette.CATEGORY_COLORS["cpu_op"])


def test_metric_scale_bad_is_loud() -> None:
    """The five classes from the lowest value to the highest: each paler (lighter) and less
    colourful than the one below it, so 0–20 % is the loudest."""
    scale = palette.METRIC_SCALE
    light = [hls(c)[1] for c in scale]
    colour = [chroma(c) for c in scale]
    assert light == sorted(light) and len(set(light)) == len(light), light
    assert colour[0] > colour[-1], colour
    assert palette.TENSOR_CORE_COLORS["no tensor core"] != palette.TENSOR_CORE_COLORS["tensor core"]
    tc = palette.TENSOR_CORE_COLORS
    assert hls(tc["no tensor core"])[1] < hls(tc["tensor core"])[1]


def test_sm_efficiency_legend_runs_loud_to_pale() -> None:
    trace = profview.load(NCCL)
    w = TraceWidget(trace, color_by="sm_efficiency")
    legend = w._info["legend"]
    assert [e["key"] for e in legend[:5]] == [f"SM efficiency {20 * i}–{20 * (i + 1)} %" for i in range(5)]
    assert [e["color"] for e in legend[:5]] == list(palette.METRIC_SCALE)


def test_collapsed_lanes_carry_the_legend_codes_of_their_slices() -> None:
    """The `_summary` frame's intervals carry the legend code of the slices they cover: after
    colour by busbw the communication lane holds the busbw classes (it kept one colour before)."""
    w = TraceWidget(profview.load(NCCL))
    data = w.session.data

    def frame() -> tuple[np.ndarray, np.ndarray, list[dict[str, str]]]:
        f = decode_frame(w._summary)
        return f.columns["color"], f.columns["kind"], w._info["legend"]

    codes, kind, legend = frame()
    assert len(codes) and codes.max() < len(legend)
    # each interval's code is one its slices have: the set of codes is that of the work slices
    from jupyter_profview.widget.summary import top_work
    work_codes = set(np.unique(data.legend.codes[top_work(data.events)]).tolist())
    assert set(np.unique(codes[kind == 0]).tolist()) == work_codes
    # the communication lane (collective calls and kernels) is the legend's communication entry
    keys = [e["key"] for e in legend]
    assert set(np.unique(codes[kind == 1]).tolist()) == {keys.index("communication")}
    assert legend[keys.index("communication")]["color"] == palette.COMMUNICATION_COLOR
    assert "busbw" in w._info["color_options"]
    w.color_by = "busbw"
    codes, kind, legend = frame()
    assert legend[0]["key"].startswith("bus bandwidth")
    assert codes.max() < len(legend)
    # the communication lane now shows the collectives' classes, the class each of them is in
    comm_codes = set(np.unique(codes[kind == 1]).tolist())
    classes = {i for i, e in enumerate(legend) if "lo" in e and e["count"] > 0}
    assert comm_codes & classes, (comm_codes, legend)
    assert comm_codes <= set(np.unique(data.legend.codes).tolist())


def test_the_idle_shade_reads_and_means_nothing_else() -> None:
    """A gpu_idle finding's shading (widget/advice.py): grey like idleness, no category's or
    series' colour, and visible through its translucency on a white and a black background."""
    shade = palette.IDLE_SHADE_COLOR
    assert chroma(shade) == 0
    used = {*palette.CATEGORY_COLORS.values(), *palette.UNKNOWN_COLORS, *palette.SERIES_COLORS,
            *palette.PHASE_COLORS.values(), *palette.METRIC_SCALE}
    assert shade.lower() not in {c.lower() for c in used}
    grey = int(shade[1:3], 16)
    a = palette.IDLE_SHADE_ALPHA
    assert 0 < a < 1
    for bg in (255, 0):
        assert abs(a * grey + (1 - a) * bg - bg) >= 30  # at least 30 levels from the background
