"""TensorFlow node execution order (seed 000).

Expected values come from the raw lines (line i = step i) and from TF's naming
conventions (scopes, ``_N`` uniquifiers, Grappler rewrites), not from the loader.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jupyter_profview
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import tf_node_order, tf_node_shapes, tf_step_stats
from jupyter_profview.loader import load as profview_load
from jupyter_profview.sources import Source
from tests.format_helpers import fuzz_check, load_with

EXAMPLES = Path(jupyter_profview.__file__).parent / "examples"
SEED = EXAMPLES / "000_5bf2854c930b1b8f.txt"
RAW = SEED.read_bytes()
LINES = RAW.decode().split("\n")


def load(data: bytes | Path, name: str = "seed000.txt"):
    return load_with(tf_node_order, data, name)


@pytest.fixture(scope="module")
def trace():
    return load(SEED)


def by_name(trace, column):
    return dict(zip(trace.events["name"].astype(str), trace.events[column], strict=True))


def test_one_event_per_line_in_order(trace):
    assert len(LINES) == 2467 and not RAW.endswith(b"\n")  # FORMATS.md: 2,467 lines
    events = trace.events
    assert trace.time_unit == "step" and len(events) == len(LINES)
    assert list(events["name"]) == LINES
    assert list(events["start"]) == list(range(len(LINES)))
    assert set(events["dur"]) == {1} and trace.duration == len(LINES)
    assert set(events["process"]) == {"graph"}
    assert (events["thread"].astype(str) == events["phase"].astype(str)).all()
    assert set(events["depth"]) == {0} and trace.quality.overlaps == 0
    q = trace.quality
    assert q.records_read == len(LINES) and q.placed["events"] == len(LINES)


def test_nodes_table(trace):
    nodes = trace.nodes
    assert len(nodes) == len(set(LINES))
    first = {}
    for i, name in enumerate(LINES):
        first.setdefault(name, i)
    assert dict(zip(nodes["id"], nodes["order"], strict=True)) == first
    assert (nodes["id"] == nodes["name"]).all()
    assert (nodes["op_type"].astype(str).values == trace.events["category"].astype(str).values).all()


def test_phases_from_name_scopes(trace):
    phase = by_name(trace, "phase")
    rules = [
        (r"^resnet50/", "forward"),
        (r"^(ConstantFolding/)?gradient_tape/", "backward"),
        (r"^AddN(_\d+)?$", "backward"),  # gradient aggregation: one per residual block
        (r"^SGD/", "optimizer"),
        (r"^HorovodBroadcast\.", "communication"),
        (r"^(Func/)?DistributedGradientTape_Allreduce/", "communication"),
        (r"^AssignVariableOp(_\d+)?$", "other"),
    ]
    for pattern, expected in rules:
        names = [n for n in LINES if re.search(pattern, n)]
        assert names, pattern
        assert Counter(phase[n] for n in names) == {expected: len(names)}, pattern
    assert sum(bool(re.match(r"AddN(_\d+)?$", n)) for n in LINES) == 16  # ResNet-50: 16 blocks
    # The loss sits between the model and its gradients: gradient_tape/<scope>/ exists for it.
    assert phase["SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits"] == "forward"


def test_categories_are_op_kinds(trace):
    category = by_name(trace, "category")
    plain = [n for n in LINES if not re.search(r"LayoutOptimizer|^ConstantFolding/|^Func/|/_\d+$|^Arith", n)]
    for name in plain:
        last = re.sub(r"_\d+$", "", name.rsplit("/", 1)[-1])
        if last[0].isupper() and last != "AssignNewValue":
            assert category[name] == last, name
    counts = Counter(category[n] for n in LINES)
    assert counts["ReadVariableOp"] == sum(bool(re.search(r"/ReadVariableOp(_\d+)?$", n)) for n in LINES)
    assert counts["Conv2D"] == sum(n.endswith("/Conv2D") for n in LINES)
    folded = [n for n in LINES if n.startswith("ConstantFolding/")]
    assert folded and {category[n] for n in folded} == {"Const"}
    transposes = [n for n in LINES if re.search(r"-Transpose\w+-LayoutOptimizer$", n)]
    assert transposes and {category[n] for n in transposes} == {"Transpose"}
    perm = [n for n in LINES if re.search(r"-PermConst\w+-LayoutOptimizer(/clone_\d+)?$", n)]
    assert perm and {category[n] for n in perm} == {"Const"}
    vec = [n for n in LINES if "-DataFormatVecPermute" in n]
    assert vec and {category[n] for n in vec} == {"DataFormatVecPermute"}
    inlined = [n for n in LINES if n.startswith("Func/")]
    assert inlined and {category[n] for n in inlined} == {"Identity"}
    assert category["resnet50/conv5_block1_add/add"] == "AddV2"


def test_grappler_names_classified_by_underlying_name():
    assert tf_node_order.underlying("resnet50/conv1_conv/Conv2D-0-PermConstNHWCToNCHW-LayoutOptimizer") \
        == "resnet50/conv1_conv/Conv2D"
    assert tf_node_order.underlying(
        "gradient_tape/resnet50/x/Conv2DBackpropFilter-0-PermConstNHWCToNCHW-LayoutOptimizer/clone_3"
    ) == "gradient_tape/resnet50/x/Conv2DBackpropFilter"
    assert tf_node_order.underlying("ConstantFolding/gradient_tape/a/b") == "gradient_tape/a/b"
    rewritten = "ArithmeticOptimizer/ReorderCastLikeAndValuePreserving_int64_Cast_1"
    assert tf_node_order.op_kind(rewritten) == "Cast"



def test_detected_and_loaded_through_the_public_loader():
    trace = profview_load(SEED)
    assert trace.format == "tf_node_order" and trace.quality.unaccounted == 0


def test_sniff():
    heads = {p.name[:3]: Source(p).head() for p in sorted(EXAMPLES.glob("00*.txt"))}
    assert tf_node_order.sniff(heads["000"])
    assert not any(tf_node_order.sniff(h) for k, h in heads.items() if k != "000")
    assert not tf_node_shapes.sniff(heads["000"]) and not tf_step_stats.sniff(heads["000"])
    assert not tf_node_order.sniff(b"hello world\n") and not tf_node_order.sniff(b"\xff\xfe")


def test_blank_lines_are_skipped_and_counted():
    data = b"\n".join([b"a/Conv2D", b"", b"  ", b"b/Relu"]) + b"\n"
    trace = load(data)
    assert list(trace.events["name"]) == ["a/Conv2D", "b/Relu"]
    assert list(trace.events["start"]) == [0, 3]  # start = line index
    assert trace.quality.skipped["blank line"] == 2 and trace.quality.records_read == 4


def test_corrupted_line_names_line_and_column():
    lines = list(LINES)
    lines[99] = "resnet50/conv2 block1/Conv2D"
    with pytest.raises(ProfviewError, match=r"seed000\.txt: line 100, column 15: .* not a TensorFlow node"):
        load("\n".join(lines).encode())
    with pytest.raises(ProfviewError, match=r"line 3, column 1"):
        load(b"a/b\nc/d\n{\"traceEvents\": []}\n")
    with pytest.raises(ProfviewError, match="not valid utf-8"):
        load(RAW[:500] + b"\xff\xfe" + RAW[500:])


def test_truncated_inputs():
    with pytest.raises(ProfviewError, match="no node names"):
        load(b"\n\n")
    with pytest.raises(ProfviewError, match="truncated or corrupt"):
        load(gzip.compress(RAW)[:3000], name="seed000.txt.gz")
    # A plain cut inside a line still leaves valid names: the format has no
    # framing to detect it, so the trace just ends early.
    cut = RAW[: RAW.index(b"\n", 5000) - 3]
    assert len(load(cut).events) == cut.count(b"\n") + 1


def _check(data: bytes) -> None:
    trace = fuzz_check(tf_node_order, data)
    if trace is not None:
        assert len(trace.events) >= len(trace.nodes) >= 1


SMALL = "\n".join(LINES[:150]).encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutations(data):
    blob = bytearray(SMALL)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(blob)))
        blob[at:at + data.draw(st.integers(0, 5))] = data.draw(st.binary(max_size=6))
    _check(bytes(blob))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_random_bytes(blob):
    _check(blob)


def test_a_gzip_bomb_of_lines_is_refused_at_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated lines (what a small .gz can inflate to without end) are read into
    columns, each distinct name kept once, and refused at the line past
    ``limits.MAX_TEXT_RECORDS`` with a ProfviewError naming it (the real bomb's
    memory and time: benchmarks/bench_hostile.py)."""
    from jupyter_profview import limits

    monkeypatch.setattr(limits, "MAX_TEXT_RECORDS", 10_000)
    lines = b"model/dense/MatMul\nmodel/dense/BiasAdd\n\n"  # a blank line every third line
    bomb = gzip.compress(lines * 20_000, mtime=0)
    with pytest.raises(ProfviewError) as info:
        profview_load(bomb)
    err = info.value
    # every line counts, blank ones too (they are records): the 10,001st line is refused
    assert err.position == "line 10001" and "more than 10,000 lines" in str(err)
    assert "MAX_TEXT_RECORDS" in (err.expected or "")
    # within the limit it loads, every node line an event
    trace = profview_load(gzip.compress(lines * 3_333, mtime=0))
    assert len(trace.events) == 6_666 and trace.quality.skipped["blank line"] == 3_333
    assert trace.events["name"].value_counts().to_dict() == {"model/dense/MatMul": 3_333,
                                                             "model/dense/BiasAdd": 3_333}
