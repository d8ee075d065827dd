"""Durations and byte counts as people read them: the same text as the front end.

Shared by the widget (re-exported by `.widget.numbers`), the analyses
(the verdict of `.analysis.compare`) and the command line.  One rule, two
implementations: `format_duration` and `format_bytes`
here, ``formatTime`` and ``formatBytes`` in ``js/src/axis.ts``.  Both test
suites check them against ``tests/shared_fixtures/format_numbers.json``.

* durations: the unit of ``|v|`` (ns; µs from 1e3; ms from 1e6; s from 1e9),
  4 significant digits but never fewer than the integer digits (400.4 µs,
  1.5 ms, 1235 s), trailing zeros after the point dropped; a value that rounds
  to 1000 moves to the next unit (999 999 ns -> "1 ms");
* bytes: binary prefixes (B, KiB, MiB, ...), whole bytes below 1 KiB, otherwise
  the same 4 digits; a value that rounds to 1024 moves to the next prefix;
* rounding is half away from zero on the shortest decimal text of the number
  (``repr`` here, ``String`` in JS), so both languages agree on ties;
* NaN and infinities print as ``"–"``.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

_TIME_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))
_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_CONTEXT = Context(prec=400)
NO_VALUE = "–"


def fixed_half_up(x: float, decimals: int) -> str:
    """``x`` with ``decimals`` digits after the point, rounded half away from zero
    from its shortest decimal text (``1.005`` -> ``"1.01"``, ``-0.0004`` -> ``"0.000"``)."""
    exact = Decimal(repr(abs(float(x))))
    q = exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP, context=_CONTEXT)
    text = f"{q:f}"
    return f"-{text}" if x < 0 and q != 0 else text


def tflops_text(value: float) -> str:
    """Achieved TFLOP/s with three decimals, half up; NaN -> "–" (``js/src/table.ts`` tflopsText)."""
    return fixed_half_up(value, 3) if math.isfinite(value) else "–"


def share_text(share: float) -> str:
    """A share (0-100) as ``"93.6 %"``: one decimal, half up (``js/src/axis.ts`` shareText)."""
    return f"{fixed_half_up(share, 1)} %"


def _strip_zeros(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def _decimals4(a: float) -> int:
    return 1 if a >= 100 else 2 if a >= 10 else 3


def format_duration(value: float, time_unit: str = "ns") -> str:
    """A duration or time in ``time_unit`` (``"ns"`` or ``"step"``): ``400_400`` -> ``"400.4 µs"``."""
    v = float(value)
    if not math.isfinite(v):
        return NO_VALUE
    if time_unit == "step":
        text = _strip_zeros(fixed_half_up(v, 3))
        return f"{text} step{'' if text in ('1', '-1') else 's'}"
    a = abs(v)
    u = len(_TIME_UNITS) - 1
    while u > 0 and a >= _TIME_UNITS[u - 1][0]:
        u -= 1
    while True:
        scale, name = _TIME_UNITS[u]
        x = v / scale
        text = fixed_half_up(x, _decimals4(abs(x)))
        if u > 0 and abs(float(text)) >= 1000:
            u -= 1
            continue
        return f"{_strip_zeros(text)} {name}"


def format_bytes(value: float) -> str:
    """Bytes with binary prefixes: ``1536`` -> ``"1.5 KiB"``."""
    b = float(value)
    if not math.isfinite(b):
        return NO_VALUE
    v = abs(b)
    i = 0
    while v >= 1024 and i < len(_BYTE_UNITS) - 1:
        v /= 1024
        i += 1
    while True:
        text = fixed_half_up(v, 0 if i == 0 else _decimals4(v))
        if i < len(_BYTE_UNITS) - 1 and float(text) >= 1024:
            v /= 1024
            i += 1
            continue
        out = _strip_zeros(text)
        return f"{'-' if b < 0 and out != '0' else ''}{out} {_BYTE_UNITS[i]}"


#: words that make a column a duration or time in the trace's unit (its name split on ``_`` and
#: spaces, any case: ``dur``, ``gpu_total``, ``launch_start``, ``start_spread``, ``excess``), as
#: the package's tables name them; a statistic's name (``mean``, ``max``: `summary`,
#: `launch_stats`, ``agg(...)`` of a duration) is one too -- pass ``bytes=`` for a byte statistic
TIME_WORDS = frozenset({"start", "end", "dur", "self", "time", "total", "wait", "delay", "latency", "skew",
                        "idle", "busy", "spread", "excess", "length", "compute", "weight", "duration",
                        "sum", "mean", "median", "min", "max", "std", "p50", "p90", "p95", "p99"})
#: words that make a column a byte count (``bytes``, ``output_bytes``, ``Total Allocated``)
BYTE_WORDS = frozenset({"bytes", "allocated", "reserved", "size"})
#: words that make a column a percent (``share``: 0-100 in every table; ``pct_of_peak``)
PERCENT_WORDS = frozenset({"share", "pct", "percent"})
#: words that make a column a plain number even when it has a time word (``count``, rates, ids)
OTHER_WORDS = frozenset({"count", "tflops", "gbps", "algbw", "busbw", "rate", "index", "number", "seq",
                         "id", "kernels", "ratio", "intensity", "flops", "occupancy", "efficiency"})


def _words(name: object) -> set[str]:
    return {w for w in str(name).lower().replace(" ", "_").split("_") if w}


def column_unit(name: object) -> str | None:
    """``"time"``, ``"bytes"``, ``"percent"`` or None for a column named ``name`` (`TIME_WORDS`,
    `BYTE_WORDS`, `PERCENT_WORDS`, `OTHER_WORDS`, in reverse order of precedence; a tuple name
    of an aggregated frame, ``("dur", "sum")``, by all its words)."""
    words = set().union(*(_words(n) for n in name)) if isinstance(name, tuple) else _words(name)
    if words & PERCENT_WORDS:
        return "percent"
    if words & OTHER_WORDS:
        return None
    if words & BYTE_WORDS:
        return "bytes"
    if words & TIME_WORDS:
        return "time"
    return None


def _plain(value: object) -> str:
    """A number without a unit: integers with thousands separators, other numbers to 4
    significant digits, never in scientific notation (``1.235e+12`` -> ``1,234,567,890,123``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "dtype"):
        return str(value)
    v = float(value)  # type: ignore[arg-type]
    if not math.isfinite(v):
        return NO_VALUE
    if v == int(v) and abs(v) < 2**63:
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return _strip_zeros(fixed_half_up(v, max(0, 3 - int(math.floor(math.log10(abs(v))))) if v else 0))


def readable(frame: Any, *, time: Any = None, bytes: Any = None, time_unit: str = "ns") -> Any:
    """A DataFrame (or Series) for reading, not computing: durations and times as
    `format_duration` writes them (``400.4 µs``, the widget's text), byte counts as `format_bytes`
    (``1.5 GiB``), shares and percents as `share_text` (``93.6 %``), other numbers without
    scientific notation (`_plain`), missing values as ``–``.

    Which columns are durations or bytes: ``time`` / ``bytes`` (names; ``time=True``: every
    numeric column, as in a pivot of durations) when given, else by `column_unit` (a word of the
    name in `TIME_WORDS` / `BYTE_WORDS`).  A Series is read by its
    name (an unnamed Series as ``time``-valued only when ``time=True``).  ``time_unit``: the
    trace's (``"ns"``, or ``"step"`` for an execution order).  Text columns pass through.

    ```python
    profview.readable(profview.summary(t).head(8))   # total / self as "12.3 ms"
    profview.readable(t.memory.groupby("device")["bytes"].agg(["min", "max"]), bytes=["min", "max"])
    ```
    """
    import pandas as pd

    if isinstance(frame, pd.Series):
        name = frame.name if frame.name is not None else "value"
        unit_of = "time" if time is True else "bytes" if bytes is True else column_unit(name)
        return _column(frame, unit_of, time_unit)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"readable needs a DataFrame or Series, got {type(frame).__name__}")
    chosen_time = set(time) if time is not None and time is not True else None
    chosen_bytes = set(bytes) if bytes is not None and bytes is not True else set()
    out = frame.copy()
    for k, name in enumerate(frame.columns):
        if name in chosen_bytes:
            unit: str | None = "bytes"
        elif time is True:
            unit = "time"
        elif chosen_time is not None:
            unit = "time" if name in chosen_time else None
        else:
            unit = column_unit(name)
        out.isetitem(k, _column(frame.iloc[:, k], unit, time_unit))
    return out


def _column(column: Any, unit: str | None, time_unit: str) -> Any:
    import pandas as pd

    if not (pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype)):
        return column
    def text(v: object) -> str:
        if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
            return NO_VALUE
        if unit == "time":
            return format_duration(float(v), time_unit)  # type: ignore[arg-type]
        if unit == "bytes":
            return format_bytes(float(v))  # type: ignore[arg-type]
        if unit == "percent":
            return share_text(float(v)) if math.isfinite(float(v)) else NO_VALUE  # type: ignore[arg-type]
        return _plain(v)
    return column.astype(object).map(text)
