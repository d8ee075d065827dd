"""IPython magics: ``%profview PATH`` and ``%%profview`` (``%load_ext jupyter_profview``).

``%profview PATH`` loads a trace file, shows it and keeps the Trace as
``_profview``.

``%%profview`` runs the cell under a profiler, shows the trace and keeps it
as ``_profview``; the cell's last expression is still the cell's result.

* With torch importable it uses ``torch.profiler.profile`` (CPU, plus CUDA
  when available; ``record_shapes`` and ``profile_memory`` on), exports a
  Chrome trace (to ``--output`` or a temporary file, kept for the session)
  and loads it, so ``_profview`` is an ordinary ``chrome`` Trace.
* Otherwise (or with ``--python``) it records the cell's Python and C
  function calls with `PythonProfiler`
  (format ``python_calls``).

Where the widget cannot be shown (module missing), the magics display the
Trace and its summary table instead.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import tempfile
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .analysis.summary import summary
from .errors import ProfviewError
from .loader import load
from .model import Trace
from .python_profile import PythonProfiler

_counter = itertools.count(1)


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def show_trace(trace: Trace) -> None:
    """Display the widget for ``trace``, or its repr and summary without one."""
    try:
        from .widget import TraceWidget
    except ImportError:
        display(trace, summary(trace).head(20))
        return
    display(TraceWidget(trace))


class _CellRunner:
    """Compile an IPython cell like the shell does; run it in the user namespace.

    The last expression statement is evaluated separately so that its value
    can be returned as the cell's result (as ``%%time`` does).
    """

    def __init__(self, shell: Any, cell: str) -> None:
        self.shell = shell
        self.filename = f"<profview-cell-{next(_counter)}>"
        tree = shell.compile.ast_parse(shell.transform_cell(cell))
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        self.body = compile(tree, self.filename, "exec")
        self.last = compile(ast.Expression(last.value), self.filename, "eval") if last else None

    def __call__(self) -> Any:
        ns = self.shell.user_ns
        exec(self.body, ns)
        return eval(self.last, ns) if self.last is not None else None


def _profile_python(runner: _CellRunner) -> tuple[Any, Trace, BaseException | None]:
    prof = PythonProfiler(cell_filename=runner.filename)
    ns = runner.shell.user_ns
    result, error = None, None
    # exec/eval called right here, not through runner(): the profiler drops the
    # outermost exec/eval, so the trace starts at the cell's own code.
    prof.start()
    try:
        exec(runner.body, ns)
        if runner.last is not None:
            result = eval(runner.last, ns)
    except BaseException as exc:  # re-raised by the caller once the trace is kept
        error = exc
    finally:
        prof.stop()
    return result, prof.trace(), error


def _profile_torch(runner: _CellRunner, output: str | None) -> tuple[Any, Trace, BaseException | None]:
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    result, error = None, None
    with profile(activities=activities, record_shapes=True, profile_memory=True) as prof:
        try:
            result = runner()
        except BaseException as exc:
            error = exc
    if output is None:
        output = str(Path(tempfile.mkdtemp(prefix="profview-")) / "torch_trace.json")
    prof.export_chrome_trace(output)
    trace = load(output)
    trace.metadata["profiler"] = "torch.profiler"
    return result, trace, error


@magics_class
class ProfviewMagics(Magics):
    @magic_arguments()
    @argument("path", help="trace file (any supported format, optionally gzipped)")
    @argument("--format", "-f", default=None, help="format name, if sniffing picks the wrong one")
    @argument("--var", default="_profview", help="user variable that receives the Trace")
    @line_magic
    def profview(self, line: str) -> None:
        """Load a trace file, show it, and keep the Trace as ``_profview``."""
        args = parse_argstring(self.profview, line)
        assert self.shell is not None
        path = args.path.strip("\"'")
        try:
            trace = load(path, format=args.format)
        except ProfviewError as exc:
            raise UsageError(f"profview: {exc}") from None  # shown without a traceback
        self.shell.user_ns[args.var] = trace
        show_trace(trace)

    @magic_arguments()
    @argument("--python", action="store_true",
              help="record Python function calls even if torch is importable")
    @argument("--output", "-o", default=None,
              help="where to write torch's Chrome trace (default: a temporary file)")
    @argument("--no-show", action="store_true", help="keep the Trace, show nothing")
    @argument("--var", default="_profview", help="user variable that receives the Trace")
    @cell_magic("profview")  # type: ignore[arg-type]  # IPython 9 stubs
    def profview_cell(self, line: str, cell: str) -> Any:
        """Profile the cell (torch.profiler if importable, else Python calls),
        show the trace and keep it as ``_profview``."""
        args = parse_argstring(self.profview_cell, line)
        assert self.shell is not None
        runner = _CellRunner(self.shell, cell)
        if torch_available() and not args.python:
            result, trace, error = _profile_torch(runner, args.output)
        else:
            result, trace, error = _profile_python(runner)
        self.shell.user_ns[args.var] = trace
        if error is not None:
            print(f"profview: the cell raised {type(error).__name__}; the trace so far is in {args.var}")
            raise error
        if not args.no_show:
            show_trace(trace)
        return result


def register(ipython: Any) -> None:
    """Register ``%profview`` and ``%%profview`` with an IPython shell."""
    ipython.register_magics(ProfviewMagics)


def unregister(ipython: Any) -> None:
    """Remove ``%profview`` / ``%%profview`` (``%unload_ext jupyter_profview``);
    the last trace, ``_profview``, stays in the namespace."""
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        bound = manager.magics[kind].get("profview")
        if isinstance(getattr(bound, "__self__", None), ProfviewMagics):
            del manager.magics[kind]["profview"]
    manager.registry.pop(ProfviewMagics.__name__, None)
