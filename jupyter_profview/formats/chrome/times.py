"""Exact times for the pure-Python Chrome decoder: ``ts``/``dur`` microseconds
as int64 nanoseconds computed from the decimal digits, never through a double.

orjson turns every number into a double, which loses digits (409 of 1,779
starts of a PyTorch trace came out 1 ns off).  So, before parsing,
`mark_times` rewrites every non-integer ``"ts"``/``"dur"`` number
into a marked string holding its digits; the decoder converts those with
`ns_from_text`, and `restorer` turns marked strings nested
elsewhere (args, top-level keys) back into the numbers they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Context, Decimal, InvalidOperation

from ...errors import ProfviewError
from .columns import ABSENT_TIME

_INT64_MAX = 2**63 - 1

# A "ts"/"dur" key (not preceded by a backslash: a key's quote follows '{', ',' or
# whitespace) with a non-integer number value, or an integer of 17+ digits (beyond
# int64 nanoseconds, and beyond a double past 308), which the rewrite turns into a
# marked string so that its digits survive orjson (see mark_times) and its overflow
# is reported as such, as the native scanner does.
_TIME_FLOAT = re.compile(  # starts with a literal quote: searched fast
    rb'"(?<=[{,\s]")((?:(?:t|\\u0074)(?:s|\\u0073)|(?:d|\\u0064)(?:u|\\u0075)(?:r|\\u0072))"'
    rb'[ \t\r\n]*:[ \t\r\n]*)'
    rb'(-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)|[1-9][0-9]{16,}))'
    rb'(?=[ \t\r\n]*[,}\]])'
)
# Control characters str.strip() removes, tried in turn as the marker
_MARKERS = ("\x1f", "\x1e", "\x1d", "\x1c")


def ns_from_text(text: str) -> int | None:
    """Microseconds as a JSON number text -> exact int nanoseconds (``x *
    1000`` rounded to an integer, ties to even), or None beyond ±INT64_MAX."""
    whole, _, frac = text.partition(".")
    if len(whole.lstrip("-0")) > 20 and "e" not in text and "E" not in text:
        return None  # beyond int64 ns, and before int() meets Python's 4300-digit limit
    if len(frac) <= 3 and "e" not in text and "E" not in text:
        ns = int(whole + frac.ljust(3, "0"))  # the common case: digits only
    else:
        try:
            value = Decimal(text)
        except (InvalidOperation, ValueError):  # an exponent past Decimal's own limits
            return None
        if value.is_zero() or value.adjusted() < -5:  # below 1e-4 us: 0 ns
            return 0
        if value.adjusted() > 20:
            return None
        context = Context(prec=len(text) + 8, rounding=ROUND_HALF_EVEN)
        ns = int(value.scaleb(3, context).to_integral_value(context=context))
    return ns if ABSENT_TIME < ns <= _INT64_MAX else None


def mark_times(data: bytes) -> tuple[bytes, str | None]:
    """(data with non-integer ``"ts"``/``"dur"`` numbers turned into strings
    ``"<marker><number text>"``, marker) -- or (data, None) when there are
    none or every marker character already occurs (escaped) in the data.

    In valid JSON a ``"ts"`` whose opening quote follows ``{``, ``,`` or
    whitespace is always an object key, never text inside a string (there
    every quote is escaped), so only real keys are rewritten; turning a
    number into a string token never changes whether the document is valid."""
    for marker in _MARKERS:
        escape = f"\\u{ord(marker):04x}".encode()
        if escape not in data and escape.upper().replace(b"\\U", b"\\u") not in data:
            template = b'"\\1"' + escape.replace(b"\\", b"\\\\") + b'\\2"'
            marked, count = _TIME_FLOAT.subn(template, data)
            return (marked, marker) if count else (data, None)
    return data, None


def restorer(marker: str | None, source: str) -> Callable[[bytes], bytes] | None:
    """For serialised JSON holding marked time strings: the numbers back."""
    if marker is None:
        return None
    pattern = re.compile(b'"' + f"\\u{ord(marker):04x}".encode().replace(b"\\", b"\\\\") + rb'([-0-9.eE+]+)"')

    def number(match: re.Match[bytes]) -> bytes:
        if abs(float(match[1])) == float("inf"):  # orjson refuses such numbers
            raise ProfviewError(f"number {match[1].decode()} overflows a double", source=source,
                                position='a nested "ts"/"dur" value',
                                expected="numbers within the range of a double")
        return match[1]

    def restore(text: bytes) -> bytes:
        return pattern.sub(number, text) if b"\\u00" in text else text

    return restore
