"""Validation of the browser's requests to the widget's kernel side.

A bad request raises `RequestError`; `guarded` turns it (and any other failure)
into an ``{"error": str}`` reply, so the front end always gets an answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

MAX_WIDTH = 16384
Reply = tuple[dict[str, Any], list[bytes]]


class RequestError(ValueError):
    """A request from the browser does not follow the protocol."""



def number(msg: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = msg.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise RequestError(f"{key!r} must be a finite number, got {value!r}")
    return float(value)


def integer(msg: Mapping[str, Any], key: str, lo: int, hi: int, default: int | None = None) -> int:
    value = msg.get(key, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise RequestError(f"{key!r} must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def window(msg: Any) -> tuple[float, float, int]:
    if not isinstance(msg, Mapping):
        raise RequestError(f"request must be an object, got {type(msg).__name__}")
    t0, t1 = number(msg, "t0"), number(msg, "t1")
    if not t0 < t1:
        raise RequestError(f"need t0 < t1, got t0={t0}, t1={t1}")
    return t0, t1, integer(msg, "width", 1, MAX_WIDTH)


def guarded(fn: Callable[..., Reply]) -> Callable[..., Reply]:
    """Turn any failure into an ``{"error": ...}`` reply: the front end must always get an answer."""

    def wrapper(*args: Any, **kwargs: Any) -> Reply:
        try:
            return fn(*args, **kwargs)
        except RequestError as exc:
            return {"error": str(exc)}, []
        except Exception as exc:  # noqa: BLE001 - reported to the front end, never swallowed silently
            return {"error": f"internal error in {fn.__name__}: {type(exc).__name__}: {exc}"}, []

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper

