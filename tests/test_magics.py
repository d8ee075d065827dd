"""%profview / %%profview driven through a real IPython shell."""

from __future__ import annotations

import importlib.util

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import jupyter_profview as profview
from jupyter_profview.python_profile import CELL_NAME, PythonProfiler

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_WIDGET = importlib.util.find_spec("jupyter_profview.widget") is not None
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_profview")
    return ip


def run(shell, code):
    with capture_output() as captured:
        result = shell.run_cell(code)
    return result, captured


def fib_calls(n: int) -> int:
    """Calls made by naive recursive fib(n): c(n) = 1 + c(n-1) + c(n-2), c(0) = c(1) = 1."""
    a, b = 1, 1
    for _ in range(n - 1):
        a, b = b, 1 + a + b
    return b if n >= 1 else 1


def test_line_magic_loads_shows_and_keeps_the_trace(shell):
    path = profview.example("megengine_json")
    result, captured = run(shell, f"%profview {path}")
    assert result.success
    trace = shell.user_ns["_profview"]
    assert trace.format == "megengine_json"
    assert len(trace.events) == len(profview.load(path).events)
    assert len(captured.outputs) == 1
    if HAS_WIDGET:
        assert WIDGET_MIME in captured.outputs[0].data


def test_line_magic_bad_file_is_a_usage_error_not_a_traceback(shell, tmp_path):
    bad = tmp_path / "garbage.bin"
    bad.write_bytes(b"\x00\x01 not a trace")
    result, captured = run(shell, f"%profview {bad}")
    assert not result.success
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "garbage.bin" in str(result.error_in_exec)
    result, _ = run(shell, f"%profview {tmp_path / 'missing.json'}")
    assert "no such file" in str(result.error_in_exec)


def test_cell_magic_python_profiler_records_nested_calls(shell):
    code = (
        "%%profview --python\n"
        "def fib(n):\n"
        "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "value = fib(12)\n"
        "value * 2\n"
    )
    result, captured = run(shell, code)
    assert result.success
    assert result.result == 2 * 144  # the cell's last expression is still its result
    trace = shell.user_ns["_profview"]
    assert trace.format == "python_calls" and trace.time_unit == "ns"
    ev = trace.events
    fib = ev[ev["name"] == "fib"]
    assert len(fib) == fib_calls(12)
    roots = ev[ev["depth"] == 0]
    assert list(roots["name"]) == [CELL_NAME, CELL_NAME]  # the body, then the last expression
    # fib's depth-0 call sits under the cell; recursion nests fib inside fib
    assert fib["depth"].min() == 1 and fib["depth"].max() == 12
    assert (fib["parent"].isin(fib.index) | fib["parent"].isin(roots.index)).all()
    assert trace.quality.unaccounted == 0
    if HAS_WIDGET:
        assert any(WIDGET_MIME in out.data for out in captured.outputs)
    else:
        assert captured.outputs


def test_cell_magic_keeps_the_trace_when_the_cell_raises(shell):
    code = "%%profview --python --no-show\ndef boom():\n    raise KeyError('x')\nboom()\n"
    result, captured = run(shell, code)
    assert isinstance(result.error_in_exec, KeyError)
    trace = shell.user_ns["_profview"]
    assert "boom" in set(trace.events["name"].astype(str))
    assert "the trace so far is in _profview" in captured.stdout


def test_cell_magic_custom_variable_and_no_show(shell):
    result, captured = run(shell, "%%profview --python --no-show --var prof2\nsorted([3, 1, 2])\n")
    assert result.result == [1, 2, 3]
    assert not captured.outputs
    names = set(shell.user_ns["prof2"].events["name"].astype(str))
    assert "sorted" in names


def test_python_profiler_threads_and_event_cap():
    import threading

    def work():
        t = threading.Thread(target=sorted, args=([2, 1],), name="helper")
        t.start()
        t.join()

    prof = PythonProfiler()
    with prof:
        work()
    trace = prof.trace()
    assert "helper" in set(trace.events["thread"].astype(str))
    assert "sorted" in set(trace.events.loc[trace.events["thread"] == "helper", "name"].astype(str))

    capped = PythonProfiler(max_events=5)
    with capped:
        for _ in range(20):
            abs(-1)
    trace = capped.trace()
    assert len(trace.events) == 5
    assert trace.quality.records_read == 20 and trace.quality.unaccounted == 0
    assert sum(trace.quality.skipped.values()) == 15


@pytest.mark.skipif(not HAS_TORCH, reason="torch not installed: the torch.profiler path of %%profview")
def test_cell_magic_uses_torch_profiler(shell, tmp_path):
    out = tmp_path / "torch.json"
    code = (
        f"%%profview --no-show -o {out}\n"
        "import torch\n"
        "x = torch.randn(64, 64)\n"
        "y = (x @ x).relu().sum()\n"
    )
    result, _ = run(shell, code)
    assert result.success, result.error_in_exec
    trace = shell.user_ns["_profview"]
    assert trace.format == "chrome" and out.exists()
    names = set(trace.events["name"].astype(str))
    assert {"aten::randn", "aten::matmul", "aten::relu", "aten::sum"} <= names
    assert len(trace.memory) > 0  # profile_memory=True
    shapes = trace.events.loc[trace.events["name"] == "aten::matmul"]
    assert len(shapes) == 1


def test_unload_ext_removes_the_magics_and_load_ext_brings_them_back():
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jupyter_profview")
    assert "profview" in ip.magics_manager.magics["line"]
    ip.run_line_magic("unload_ext", "jupyter_profview")
    assert "profview" not in ip.magics_manager.magics["line"]
    assert "profview" not in ip.magics_manager.magics["cell"]
    result, captured = run(ip, "%profview x")
    assert not result.success  # UsageError: Line magic function `%profview` not found
    ip.run_line_magic("load_ext", "jupyter_profview")
    assert "profview" in ip.magics_manager.magics["line"]
    assert "profview" in ip.magics_manager.magics["cell"]
