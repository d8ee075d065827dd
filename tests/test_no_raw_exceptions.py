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

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_profview import analysis
from jupyter_profview.errors import ProfviewError
from tests.robust_cases import HUGE, Case, cases, run_case, trace_ids, trace_of

#: (analysis, case label regex, trace id regex, owner and reason): raw exceptions known today,
#: each a strict xfail (it fails once the case passes): remove it when its fix is merged.
KNOWN: list[tuple[str, str, str, str]] = []

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
    helpers = {
        "union_length",
        "bytes_column",
        "self_intervals",
        "CriticalPath",
        "Comparison",
        "Advice",
        "CollectiveSummary",
        "PipelineBubbles",
    }
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


def windows(examples: int) -> Any:
    """Hypothesis settings of the window tests: reproducible, no deadline (a trace is loaded once
    per test from a shared cache: the fixture is function-scoped on purpose)."""
    return settings(max_examples=examples, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _raises_only_profview_error(call: Any) -> None:
    raised = raw_exception(call)
    assert raised is None, raised


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@windows(25)
@given(t0=times, t1=times, columns=st.integers(-2, 50))
def test_utilisation_any_window(trace_id: str, cache_dir: str, t0: int, t1: int, columns: int) -> None:
    trace = trace_of(trace_id, cache_dir)
    _raises_only_profview_error(lambda: analysis.utilisation(trace, t0, t1, columns))


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@windows(25)
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


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@windows(25)
@given(start=times, end=times, by=st.sampled_from(["annotation", "op"]))
def test_attribute_any_window(trace_id: str, cache_dir: str, start: int, end: int, by: str) -> None:
    trace = trace_of(trace_id, cache_dir)
    _raises_only_profview_error(lambda: analysis.attribute(trace, by, window=(start, end)))


@pytest.mark.parametrize("trace_id", RANGE_TRACES)
@windows(15)
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
