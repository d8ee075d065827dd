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
