"""The package's one error type for bad input, and its one warning."""

from __future__ import annotations


class ProfviewError(ValueError):
    """A trace could not be read.

    The message names the source (file name or ``<bytes>``), the position in it
    (line, byte offset or record) and what was expected there.  No partially
    loaded `Trace` is ever returned alongside it.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        position: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.source = source
        self.position = position
        self.expected = expected
        self.reason = message
        where = ": ".join(part for part in (source, position) if part)
        text = f"{where}: {message}" if where else message
        if expected:
            text += f" (expected {expected})"
        super().__init__(text)

    def __reduce__(self) -> tuple[object, ...]:
        # every field survives pickling (the server's worker process sends it to the server)
        return (_rebuild, (type(self), self.reason, dict(vars(self))))


def _rebuild(cls: type[ProfviewError], reason: str, fields: dict[str, object]) -> ProfviewError:
    exc = cls.__new__(cls)
    ProfviewError.__init__(exc, reason, source=fields.get("source"), position=fields.get("position"),  # type: ignore[arg-type]
                           expected=fields.get("expected"))  # type: ignore[arg-type]
    exc.__dict__.update(fields)
    return exc


class NativeUnavailableWarning(RuntimeWarning):
    """The native Chrome scanner is missing or refused: traces load on the
    pure-Python path (same results, much slower).  Issued once per process by
    `jupyter_profview.load`, with how to get the scanner."""


def line_position(data: bytes, offset: int) -> str:
    """Human position of a byte offset: ``line L, column C (byte B)``."""
    offset = max(0, min(offset, len(data)))
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return f"line {line}, column {column} (byte {offset})"


class PathRefused(ProfviewError):
    """A path the server (or a directory walk) will not open: outside the served root, hidden,
    not a regular file, missing or unresolvable.  ``status`` is the HTTP status that says so
    (400 malformed, 403 refused, 404 missing); the message names the path as it was asked for,
    relative to the root, never a server path or file content."""

    def __init__(self, message: str, *, source: str | None = None, status: int = 403) -> None:
        super().__init__(message, source=source)
        self.status = status
