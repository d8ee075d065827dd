"""The schema as code (``jupyter_profview/schema.py``): every fixture trace validates against it,
and a trace broken in each way the checks know fails ``validate()`` naming the table, the column
and what is wrong."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview import model, schema
from jupyter_profview.errors import ProfviewError
from jupyter_profview.model import Trace
from tests.trace_files import ROOT, SHARED_DIR, traces_under


def fixture_traces() -> list[Path]:
    """Every trace in tests/data, the shared HTA traces and the shared seeds."""
    shared = [] if SHARED_DIR is None else [SHARED_DIR / "traces" / "hta", SHARED_DIR / "seeds"]
    return traces_under(ROOT / "tests" / "data", *shared)


FILES = fixture_traces()


def test_the_fixture_list_is_not_empty() -> None:
    assert len([p for p in FILES if "hta" in p.parts]) >= 10
    if SHARED_DIR is not None:
        seeds = SHARED_DIR / "seeds"
        assert len([p for p in FILES if p.parent == seeds]) == len(list(seeds.iterdir()))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_fixture_validates(path: Path) -> None:
    profview.load(path).validate()


def test_every_rank_of_a_traceset_validates() -> None:
    traces = profview.load_many(ROOT / "tests" / "data" / "ddp", progress=False, cache=False)
    for rank in traces:
        traces[rank].validate()


# ---------------------------------------------------------------------------
# A small Kineto trace with one of everything the checks look at
# ---------------------------------------------------------------------------

KINETO = {
    "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 50,
         "args": {"External id": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10,
         "dur": 5, "args": {"correlation": 7, "External id": 1}},
        {"ph": "X", "cat": "kernel", "name": "add_kernel", "pid": 0, "tid": 7, "ts": 30, "dur": 8,
         "args": {"correlation": 7, "device": 0, "stream": 7}},
        {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 10, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 30, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": 60, "dur": 20},
    ],
}


@pytest.fixture(scope="module")
def kineto(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    path = tmp_path_factory.mktemp("schema") / "small.pt.trace.json"
    path.write_text(json.dumps(KINETO))
    trace = profview.load(path)
    # what the cases below break must be there to break (counted from KINETO itself)
    assert len(trace.events) == 4 and len(trace.launches) == 1 and len(trace.flows) == 1
    assert (trace.events["parent"] >= 0).sum() == 1
    trace.validate()
    return trace


def copy(trace: Trace) -> Trace:
    return Trace(format=trace.format, time_unit=trace.time_unit, events=trace.events.copy(),
                 memory=trace.memory.copy(), allocations=trace.allocations.copy(),
                 nodes=trace.nodes.copy(), flows=trace.flows.copy(), quality=trace.quality,
                 metadata=dict(trace.metadata), counters=trace.counters, launches=trace.launches.copy(),
                 info=trace.info)


def child(ev: pd.DataFrame) -> int:
    """Position of the one event with a parent."""
    return int(np.flatnonzero(ev["parent"].to_numpy() >= 0)[0])


def _set(frame: pd.DataFrame, column: str, pos: int, value: object) -> None:
    frame.iloc[pos, frame.columns.get_loc(column)] = value


def drop_column(t: Trace) -> None:
    t.events = t.events.drop(columns="self")


def wrong_dtype(t: Trace) -> None:
    t.events["start"] = t.events["start"].astype("float64")


def unsorted(t: Trace) -> None:
    t.events = t.events.iloc[::-1]


def negative_dur(t: Trace) -> None:
    t.events["self"] = 0  # so that dur is what is wrong, not self > dur
    _set(t.events, "dur", len(t.events) - 1, -5)


def parent_not_an_event(t: Trace) -> None:
    _set(t.events, "parent", child(t.events), 999)


def depth_without_parent(t: Trace) -> None:
    pos = int(np.flatnonzero(t.events["parent"].to_numpy() < 0)[0])
    _set(t.events, "depth", pos, 2)


def depth_not_parent_plus_one(t: Trace) -> None:
    _set(t.events, "depth", child(t.events), 5)


def phase_not_a_phase(t: Trace) -> None:
    t.events["phase"] = t.events["phase"].cat.add_categories(["sideways"])
    _set(t.events, "phase", 0, "sideways")


def flow_to_nowhere(t: Trace) -> None:
    _set(t.flows, "target", 0, 12345)


def kernel_not_an_event(t: Trace) -> None:
    _set(t.launches, "kernel", 0, 777)


def launch_not_an_event(t: Trace) -> None:
    _set(t.launches, "launch", 0, 778)


def kernel_start_elsewhere(t: Trace) -> None:
    t.launches["kernel_start"] = t.launches["kernel_start"] + 1


def memory_unsorted(t: Trace) -> None:
    t.memory = pd.DataFrame({"time": np.array([5, 2], np.int64), "device": pd.Categorical(["GPU 0"] * 2),
                             "bytes": np.array([8, 16], np.int64),
                             "kind": pd.Categorical(["measured"] * 2, categories=list(schema.MEMORY_KINDS))})


def launches_missing(t: Trace) -> None:
    t.launches = t.launches.drop(columns="kernel_start")


def counters_not_a_frame(t: Trace) -> None:
    t.counters = [1, 2]  # type: ignore[assignment]


def free_before_alloc(t: Trace) -> None:
    t.allocations = pd.DataFrame({
        "device": pd.Categorical(["GPU 0"]), "address": pd.array([1], "Int64"), "bytes": [8],
        "alloc_time": pd.array([10], "Int64"), "free_time": pd.array([3], "Int64"),
        "owner": pd.array(["x"], "string")})


BROKEN: list[tuple[Callable[[Trace], None], str, str, str]] = [
    (drop_column, "events", "self", "is missing"),
    (wrong_dtype, "events", "start", "has dtype float64"),
    (unsorted, "events", "start", "come before a smaller value"),
    (negative_dur, "events", "dur", "are negative"),
    (parent_not_an_event, "events", "parent", "name no event"),
    (depth_without_parent, "events", "depth", "depth 0 iff parent is -1"),
    (depth_not_parent_plus_one, "events", "depth", "not their parent's depth + 1"),
    (phase_not_a_phase, "events", "phase", "'sideways'"),
    (flow_to_nowhere, "flows", "target", "name no event"),
    (kernel_not_an_event, "launches", "kernel", "name no event"),
    (launch_not_an_event, "launches", "launch", "name no event"),
    (launches_missing, "launches", "kernel_start", "is missing"),
    (kernel_start_elsewhere, "launches", "kernel_start", "differ from their kernel event's `start`"),
    (memory_unsorted, "memory", "time", "come before a smaller value"),
    (free_before_alloc, "allocations", "free_time", "come before their alloc_time"),
]


@pytest.mark.parametrize(("breaks", "table", "column", "what"), BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_a_broken_trace_fails_with_the_table_column_and_what(kineto: Trace, breaks: Callable[[Trace], None],
                                                              table: str, column: str, what: str) -> None:
    trace = copy(kineto)
    breaks(trace)
    with pytest.raises(ProfviewError) as info:
        trace.validate()
    text = str(info.value)
    assert f"table `{table}`, column `{column}`" in text
    assert what in text
    assert "small.pt.trace.json: table" in text  # the source first


def test_counters_that_are_not_a_frame_fail(kineto: Trace) -> None:
    trace = copy(kineto)
    counters_not_a_frame(trace)
    with pytest.raises(ProfviewError, match=r"table `counters`: is a list"):
        trace.validate()


# ---------------------------------------------------------------------------
# The declarations themselves
# ---------------------------------------------------------------------------

def test_the_empty_tables_are_the_declared_columns() -> None:
    makers = {"memory": model.empty_memory, "allocations": model.empty_allocations,
              "nodes": model.empty_nodes, "flows": model.empty_flows, "launches": model.empty_launches}
    for name, make in makers.items():
        frame = make()
        assert len(frame) == 0
        assert list(frame.columns) == [c.name for c in schema.TABLES[name].columns]


def test_every_column_a_format_writes_is_declared() -> None:
    """A column some loader adds that the schema does not declare fails here: one per real
    trace of each format."""
    undeclared = []
    for path in FILES:
        trace = profview.load(path)
        for name, spec in schema.TABLES.items():
            frame = getattr(trace, name)
            if frame is None:
                continue
            for column in frame.columns:
                declared = spec.column(str(column))
                if declared is None:
                    undeclared.append(f"{trace.format}: {name}.{column}")
                elif declared.formats and trace.format not in declared.formats:
                    undeclared.append(f"{trace.format}: {name}.{column} (declared for {declared.formats})")
    assert sorted(set(undeclared)) == []


def test_the_reference_page_lists_every_column() -> None:
    page = schema.markdown_all()
    for spec in schema.TABLES.values():
        assert f"## `{spec.name}`" in page
        for column in (*spec.columns, *spec.optional):
            assert f"| `{column.name}` | `{column.dtype}`" in page


def test_the_site_makes_its_schema_page_from_the_spec() -> None:
    """The site's hook puts `markdown_all()` where the schema page says (built by `mkdocs build
    --strict` in scripts/test.sh); no table is written by hand there."""
    import importlib.util

    hook_path = ROOT / "docs" / "hooks" / "schema_page.py"
    assert "docs/hooks/schema_page.py" in (ROOT / "mkdocs.yml").read_text()
    spec = importlib.util.spec_from_file_location("schema_page", hook_path)
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (ROOT / "docs" / "site_src" / "reference" / "schema.md").read_text()
    assert hook.MARKER in page and "| column |" not in page
    assert hook.on_page_markdown(page, None, None, None) == page.replace(hook.MARKER, schema.markdown_all())


# ---------------------------------------------------------------------------
# TraceInfo: the typed facts the upper layers read
# ---------------------------------------------------------------------------

def test_trace_info_holds_the_files_facts_and_metadata_the_rest(kineto: Trace) -> None:
    from jupyter_profview.model import TraceInfo

    assert kineto.info.source.endswith("small.pt.trace.json")
    assert kineto.info.base_time_ns is not None  # a trace with a clock
    assert not set(TraceInfo.KEYS) & set(kineto.metadata)  # each fact in one place
    info, rest = TraceInfo.split({"base_time_ns": 7, "distributed_info": [1, 2], "decoder": "native",
                                  "offsets": {"3": 5}})
    assert info.base_time_ns == 7 and info.offsets == {3: 5}  # JSON's text keys back to ranks
    assert rest == {"distributed_info": [1, 2], "decoder": "native"}  # not an object: kept as it was
    assert TraceInfo.from_dict(info.as_dict()) == info


def test_trace_info_survives_the_rank_cache(tmp_path: Path) -> None:
    """A rank read back from the cache has the info the file gave (distributedInfo's rank,
    counted here from the file itself)."""
    import gzip

    ddp = ROOT / "tests" / "data" / "ddp"
    first = profview.load_many(ddp, progress=False, cache=tmp_path)
    again = profview.load_many(ddp, progress=False, cache=tmp_path)  # from the cache
    for rank in again:
        top = json.loads(gzip.decompress((ddp / f"rank-{rank}.pt.trace.json.gz").read_bytes()))
        info = again[rank].info
        assert info.distributed_info["rank"] == top["distributedInfo"]["rank"] == rank
        assert info == first[rank].info
        assert "cache_entry" in again[rank].metadata


def test_a_python_profile_validates_and_its_columns_are_declared() -> None:
    from jupyter_profview.python_profile import PythonProfiler

    prof = PythonProfiler()
    with prof:
        sorted([3, 1, 2])
    trace = prof.trace()
    trace.validate()
    assert trace.info.base_time_ns is not None and "profiler" in trace.metadata
    for column in trace.events.columns:
        assert schema.EVENTS.column(str(column)) is not None, column


def test_a_trace_with_a_memory_file_added_validates() -> None:
    data = ROOT / "tests" / "data" / "torch_memory"
    trace = profview.load(data / "mlp_adam.trace.json.gz", memory=data / "mlp_adam.memory.json")
    assert len(trace.memory) and trace.info.source.endswith("mlp_adam.trace.json.gz")
    trace.validate()
