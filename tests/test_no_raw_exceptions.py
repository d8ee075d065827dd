"""Every public analysis, on every fixture trace, with every documented parameter value, returns
its result or raises ProfviewError -- never another exception.

The traces (`tests/robust_cases.py`): every loadable file of tests/data and of the bundled
examples (Chrome / Kineto CPU, CUDA, ROCm, TF, XSpace, torch memory, MegEngine, Chainer ...), the
shared HTA traces and seeds where this machine has them, hand-written edge traces (empty, one
event, instants only, device only, a kernel without launch, an empty step, MTIA, overlapping
kernels with syncs, collectives with memory, modules with a backward) and three TraceSets
(`load_many`).  The calls: everything in `jupyter_profview.analysis.__all__`, the top-level
`summary` / `phases` / `top` / `compare`, `CriticalPath.explain`, the `Comparison`'s members and
the notebook charts, each parameter at its documented choices, 0, -1 and huge values, names
that are not in the trace.  Open ranges get hypothesis (below).

Known raw exceptions in files other helpers are rewriting are strict xfails naming the owner
(`KNOWN`): remove a mark when its fix lands (strict: the test fails once it passes).
"""

from __future__ import annotations

import re
import traceback
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jupyter_profview import analysis
from jupyter_profview.analysis.attribution import node_mask
from jupyter_profview.errors import ProfviewError
from tests.robust_cases import HUGE, Case, cases, run_case, trace_ids, trace_of

_ATTRIBUTE_EMPTY = (
    "selftime (analysis/attribution.py, being rewritten): attribute() raises IndexError "
    "(attribution.py:295, `kernel_row[...]` of an empty row table) when the trace has device "
    "activity but no node of kind `by` in the window"
)
#: traces with launches and no python_function frame (recorded without with_stack / with_modules)
_NO_FRAMES = (
    "edge_(collectives|device_only|empty_step|kernel_without_launch|mtia|overlap_sync)|set_edge"
    "|set_hta_sampled|tests:data:chrome_flows_v1.json|tests:data:hta:(amd_trace_mi250_minitoy_train"
    "_ROCm6_2_kineto|critical_path_cuda_event_sync_multi_stream_event_sync_trace|nccl_parser_config"
    "_nccl_data|trace_compare_base_base|trace_compare_test_test|trace_filter_sampled_rank-[01])"
    r"\.json\.gz"
)
#: traces with launches and no user_annotation / cpu_op
_NO_ANNOTATIONS = (
    r"edge_device_only|tests:data:chrome_flows_v1\.json"
    r"|tests:data:hta:critical_path_cuda_event_sync_multi_stream_event_sync_trace\.json\.gz"
)
_NO_OPS = r"edge_device_only|tests:data:chrome_flows_v1\.json"
#: ... of which those whose launches are in the trace (a window keeps only launches inside it)
_LAUNCHES_NO_ANNOTATIONS = (
    r"tests:data:chrome_flows_v1\.json"
    r"|tests:data:hta:critical_path_cuda_event_sync_multi_stream_event_sync_trace\.json\.gz"
)
#: (analysis, case label regex, trace id regex, owner and reason): the raw exceptions of today in
#: files other helpers are rewriting (critpath: critical_path.py; selftime: attribution.py,
#: nesting.py; derived: derived/ and the step / communication definitions).  Each entry matches
#: exactly the cases that fail (strict xfails): remove it when its fix is merged.
KNOWN: list[tuple[str, str, str, str]] = [
    ("attribute", "by=(module|stack),backward=(launch|forward)", _NO_FRAMES, _ATTRIBUTE_EMPTY),
    ("attribute", "by=annotation,backward=(launch|forward)", _NO_ANNOTATIONS, _ATTRIBUTE_EMPTY),
    ("attribute", "window=(trace|huge)", _LAUNCHES_NO_ANNOTATIONS, _ATTRIBUTE_EMPTY),
    ("attribute", "by=op,backward=(launch|forward)", _NO_OPS, _ATTRIBUTE_EMPTY),
]

CASES = cases()
TRACES = trace_ids()


def known_failure(trace_id: str, case: Case) -> str | None:
    for name, label, trace, reason in KNOWN:
        if name == case.analysis and re.fullmatch(label, case.label) and re.fullmatch(trace, trace_id):
            return reason
    return None


def _params() -> list[Any]:
    out = []
    for trace_id in TRACES:
        is_set = trace_id.startswith("set_")
        for case in CASES:
            if case.target == ("trace" if is_set else "set"):
                continue
            reason = known_failure(trace_id, case)
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(trace_id, case, id=f"{trace_id}-{case.id}", marks=marks))
    return out


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("robust"))


def raw_exception(call: Any) -> str | None:
    """What `call()` raised other than a ProfviewError (type, innermost package line, message)."""
    try:
        call()
    except ProfviewError:
        return None
    except Exception as e:  # noqa: BLE001 -- what this test exists to catch
        where = [f for f in traceback.extract_tb(e.__traceback__) if "jupyter_profview" in f.filename]
        at = f"{where[-1].filename.split('jupyter_profview/')[-1]}:{where[-1].lineno}" if where else "?"
        return f"{type(e).__name__} at {at}: {e}"
    return None


def check(case: Case, trace: Any, trace_id: str) -> None:
    raised = raw_exception(lambda: run_case(case, trace))
    if raised:
        pytest.fail(f"{case.id} on {trace_id} raised {raised}", pytrace=False)


@pytest.mark.parametrize(("trace_id", "case"), _params())
def test_analysis_returns_or_raises_profview_error(trace_id: str, case: Case, cache_dir: str) -> None:
    check(case, trace_of(trace_id, cache_dir), trace_id)


def test_every_public_analysis_is_called() -> None:
    """The cases cover `analysis.__all__` (a new analysis must be added to robust_cases)."""
    called = {c.analysis.split(".")[0] for c in CASES}
    helpers = {"union_length", "bytes_column", "self_intervals", "CriticalPath", "Comparison"}
    missing = set(analysis.__all__) - called - helpers
    assert not missing, f"add cases for {sorted(missing)} to tests/robust_cases.py"
    assert {
        "CriticalPath.explain",
        "Comparison.chart",
        "Comparison",
        "union_length",
        "bytes_column",
        "self_intervals",
    } <= {c.analysis for c in CASES}


# -- open ranges ---------------------------------------------------------------------------------
#: traces with device activity, memory, steps: the ranges matter there
RANGE_TRACES = [
    "tests:data:hta:critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
    "tests:data:torch_memory:mlp_adam.trace.json.gz",
    "edge_overlap_sync",
    "edge_collectives",
    "edge_empty",
]
times = st.one_of(st.integers(-HUGE, HUGE), st.integers(-10, 10**9))


def _raises_only_profview_error(call: Any) -> None:
    raised = raw_exception(call)
    assert raised is None, raised


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(t0=times, t1=times, columns=st.integers(-2, 50))
def test_utilisation_any_window(trace_id: str, cache_dir: str, t0: int, t1: int, columns: int) -> None:
    trace = trace_of(trace_id, cache_dir)
    _raises_only_profview_error(lambda: analysis.utilisation(trace, t0, t1, columns))


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(time=times, n=st.integers(-5, 10**6), wait=times, short=st.one_of(st.none(), times))
def test_numeric_parameters(
    trace_id: str, cache_dir: str, time: int, n: int, wait: int, short: int | None
) -> None:
    trace = trace_of(trace_id, cache_dir)
    _raises_only_profview_error(lambda: analysis.live_at(trace, time))
    _raises_only_profview_error(lambda: analysis.top(trace, n))
    _raises_only_profview_error(lambda: analysis.idle_time(trace, kernel_wait=wait))
    _raises_only_profview_error(
        lambda: analysis.launch_stats(trace, long_launch=wait, long_delay=time, short_kernel=short, rows=True)
    )


def _known_window_crash(trace: Any, by: str, start: int, end: int) -> bool:
    """`_ATTRIBUTE_EMPTY` (selftime): a window holding launches and no node of kind `by` (the bound
    inclusive, as attribution.py reads it).  The parametrized cases above hold that bug as strict
    xfails; drop this filter with them once it is fixed."""
    launches = trace.launches["launch_start"].to_numpy(np.float64, na_value=np.nan)
    nodes = trace.events["start"].to_numpy(np.int64)[node_mask(trace, by)]
    return (
        bool(((launches >= start) & (launches <= end)).any())
        and not ((nodes >= start) & (nodes <= end)).any()
    )


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(start=times, end=times, by=st.sampled_from(["annotation", "op"]))
def test_attribute_any_window(trace_id: str, cache_dir: str, start: int, end: int, by: str) -> None:
    trace = trace_of(trace_id, cache_dir)
    assume(not _known_window_crash(trace, by, start, end))
    _raises_only_profview_error(lambda: analysis.attribute(trace, by, window=(start, end)))


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    instance=st.integers(-3, 5),
    top=st.integers(-3, 20),
    annotation=st.sampled_from(["ProfilerStep", "ProfilerStep#1", "nccl", "forward", "[", "", None]),
)
def test_critical_path_any_instance(
    trace_id: str, cache_dir: str, instance: int, top: int, annotation: str | None
) -> None:
    trace = trace_of(trace_id, cache_dir)
    _raises_only_profview_error(
        lambda: analysis.critical_path(trace, annotation=annotation, instance=instance).explain(top)
    )
