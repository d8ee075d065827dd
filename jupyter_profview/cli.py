"""Command line: ``profview summary|convert|formats|doctor|serve`` (also ``python -m jupyter_profview``).

Exit codes: 0 success, 2 bad input (unreadable trace, unknown format or
column, bad arguments), 1 any other failure (e.g. the output cannot be
written).  Errors print one line to stderr, without a traceback
(``PROFVIEW_TRACEBACK=1`` shows it).

Conversions are written by `jupyter_profview.export`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from .analysis import summary
from .errors import ProfviewError
from .export import to_perfetto, write_chrome, write_parquet
from .model import Trace
from .numbers import format_duration

# ---------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------

def _load(path: str, fmt: str | None) -> Trace:
    from .loader import load

    return load(path, format=fmt)


def _printable_summary(trace: Trace, table: pd.DataFrame) -> pd.DataFrame:
    shown = table.copy()
    if trace.time_unit == "ns":
        for col in ("total", "self", "mean"):
            shown[col] = shown[col] / 1e6
        shown = shown.rename(columns={"total": "total_ms", "self": "self_ms", "mean": "mean_ms"})
    shown["share"] = shown["share"].round(2)  # already percent
    shown = shown.rename(columns={"share": "share_%"})
    for col, scale, label in (("flops", 1e9, "GFLOP"), ("flop_rate", 1e12, "TFLOP/s"),
                              ("bytes", 2**20, "MiB"), ("bandwidth", 1e9, "GB/s")):
        if col in shown:
            shown[label] = shown.pop(col) / scale
    return shown


def cmd_summary(args: argparse.Namespace) -> None:
    trace = _load(args.trace, args.format)
    events = None
    if args.process is not None:
        known = sorted(map(str, trace.events["process"].unique()))
        if args.process not in known:
            raise ProfviewError(f"no process {args.process!r} in the trace", expected=f"one of {known}")
        events = trace.events[trace.events["process"] == args.process]
    table = summary(trace, by=args.by, events=events)
    span = format_duration(trace.duration, trace.time_unit)  # the widget's rule (numbers.py)
    print(f"{args.trace}: {trace.format}, {len(trace.events)} events, span {span}")
    if args.top is not None:
        table = table.head(args.top)
    with pd.option_context("display.max_rows", None, "display.max_columns", None,
                           "display.width", 200, "display.float_format", "{:,.3f}".format):
        print(_printable_summary(trace, table).to_string())


PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace")  # output names written as Perfetto protobuf


def cmd_convert(args: argparse.Namespace) -> None:
    out = Path(args.output)
    name = out.name.lower()
    if not (name.endswith((".json", ".json.gz", ".parquet") + PERFETTO_SUFFIXES)):
        raise ProfviewError(f"cannot tell the output format of {args.output!r}",
                            expected="a name ending in .json, .json.gz, .parquet, .pftrace or "
                                     ".perfetto-trace")
    trace = _load(args.trace, args.format)
    if name.endswith(PERFETTO_SUFFIXES):
        print(to_perfetto(trace, out, args=not args.no_args))
    elif name.endswith(".parquet"):
        for written in write_parquet(trace, out):
            print(written)
    else:
        write_chrome(trace, out)
        print(out)


def cmd_formats(args: argparse.Namespace) -> None:
    from . import formats

    for name, description in formats().items():
        print(f"{name:16} {description}")


def cmd_doctor(args: argparse.Namespace) -> None:
    from .doctor import text

    print(text())


def cmd_serve(args: argparse.Namespace) -> None:
    from .server.serve import serve

    serve(args.path, port=args.port, host=args.host, parent=args.parent)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="profview", description="Read deep-learning profiler traces: summarise or convert them.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("summary", help="print time per op type (or name, phase ...)",
                       description="Print count, total/self time, share of busy time (and FLOPs, "
                                   "bandwidth where the trace has them) per key, largest total first.")
    p.add_argument("trace", help="trace file (format detected from the content)")
    p.add_argument("--by", default="category", help="events column to group by (default: category)")
    p.add_argument("--top", type=int, default=None, metavar="N", help="show only the N largest rows")
    p.add_argument("--process", default=None, metavar="NAME",
                   help="only the events of this process/device (e.g. gpu0:0)")
    p.add_argument("--format", default=None, help="format name, to skip detection")
    p.set_defaults(func=cmd_summary)
    p = sub.add_parser("convert", help="write Chrome Trace JSON (.json, .json.gz), a Perfetto trace "
                                       "(.pftrace) or Parquet tables",
                       description="Convert a trace: OUTPUT ending in .json or .json.gz writes Chrome "
                                   "Trace Event JSON (Perfetto, chrome://tracing); .pftrace or "
                                   ".perfetto-trace writes a Perfetto protobuf trace (ui.perfetto.dev); "
                                   ".parquet writes one file per table: OUT.events.parquet, "
                                   "OUT.memory.parquet, ...")
    p.add_argument("trace", help="trace file (format detected from the content)")
    p.add_argument("output", help="out.json, out.json.gz, out.pftrace or out.parquet")
    p.add_argument("--no-args", action="store_true",
                   help="Perfetto output: leave the events' args out (smaller, faster)")
    p.add_argument("--format", default=None, help="input format name, to skip detection")
    p.set_defaults(func=cmd_convert)
    p = sub.add_parser("formats", help="list the supported input formats")
    p.set_defaults(func=cmd_formats)
    p = sub.add_parser("doctor", help="versions, active decoder and why, front-end bundle, examples")
    p.set_defaults(func=cmd_doctor)
    p = sub.add_parser("serve", help="open the profile viewer in a browser, without Jupyter",
                       description="Serve the viewer of PATH (a trace file or a run directory) over HTTP "
                                   "with a random token in the printed URL; Ctrl-C stops it.")
    p.add_argument("path", help="trace file or run directory")
    p.add_argument("--port", type=int, default=8765, help="port (default: 8765)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default: 127.0.0.1, this machine only)")
    p.add_argument("--parent", action="store_true",
                   help="serve every trace in PATH's parent directory, not only PATH")
    p.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on bad arguments
    try:
        args.func(args)
    except ProfviewError as exc:
        print(f"profview: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if os.environ.get("PROFVIEW_TRACEBACK"):
            raise
        print(f"profview: failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0
