"""Validation of the browser's requests to the widget's kernel side, and the one error boundary
of its commands.

A bad request raises `RequestError`; `guarded` turns it (and any other failure) into an
``{"error": str}`` reply, so the front end always gets an answer.  What that answer says is
`failure`'s, for the notebook widget's commands and the server's API alike: the package's own
message (a `RequestError`, a [ProfviewError][jupyter_profview.ProfviewError]) or, for anything
else (a bug), a content-free "internal error" -- never the raw exception text, which may quote the
trace; the traceback goes to the log.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ProfviewError

log = logging.getLogger(__name__)

MAX_WIDTH = 16384
Reply = tuple[dict[str, Any], list[bytes]]


class RequestError(ValueError):
    """A request from the browser does not follow the protocol."""


class CommandFailed(Exception):
    """A command's failure as the server answers it: an HTTP status and `failure`'s message
    (raised in the server's worker, answered by the handlers)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status, self.message = status, message


def failure(exc: BaseException, command: str) -> tuple[int, str]:
    """The one error boundary: (HTTP status, public message) of ``command``'s failure ``exc``;
    a failure that is not the package's own is logged with its traceback."""
    if isinstance(exc, RequestError):
        return 400, str(exc)
    if isinstance(exc, ProfviewError):
        log.info("profview: %s: %r", command, str(exc))
        return 400, f"{command}: {exc}"
    log.error("profview: %s failed", command, exc_info=exc)
    return 400, f"internal error in {command} (the log has the details)"


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
    """Turn any failure into an ``{"error": ...}`` reply (`failure`'s message): the front end
    must always get an answer."""

    def wrapper(*args: Any, **kwargs: Any) -> Reply:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - the log has it, the front end the public message
            return {"error": failure(exc, fn.__name__)[1]}, []

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper

