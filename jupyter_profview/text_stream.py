"""Streaming readers that keep memory bounded on hostile input (see the
limits in `jupyter_profview.sources`).

* `squeeze_json`: a JSON document whose long whitespace runs between
  tokens are squeezed to one byte while the input streams in, with JSON
  strings tracked (escapes included) so that whitespace inside a string is
  kept and a string longer than ``MAX_STRING`` is an error at its start.
  Squeezing never changes whether the document is valid: a run becomes
  ``"\\n"`` if it held a newline (invalid inside a string, like the run)
  else ``" "``.
* `LineReader`: numbered lines of a text format; runs of blank lines
  are squeezed (and counted) while streaming, a line longer than
  ``MAX_LINE`` is an error.
* `squeeze_lines`: the whole text with runs of blank lines squeezed,
  for formats parsed whole (protobuf text), with the original line numbers.
* `ChunkReader`: the decompressed bytes as a raw binary file read
  chunk by chunk (for parsers that take a file, such as pickle), with a
  limit on the total.
"""

from __future__ import annotations

import io
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import limits
from .errors import ProfviewError
from .limits import MAX_LINE, MAX_STRING, SQUEEZE_RUN

if TYPE_CHECKING:
    from .sources import Source

_WS = b" \t\r\n"
# decompressed bytes split into lines at a time: the lines of one chunk exist as
# objects together, so this bounds the reader's own memory (~2x the chunk)
LINE_CHUNK = 4 * 1024 * 1024
_WS_TO_SPACE = bytes.maketrans(b"\t\r\n", b"   ")
_STRIDE = SQUEEZE_RUN // 2
_ESCAPE = re.compile(rb"\\.", re.S)


def _runs(chunk: bytes) -> Iterator[tuple[int, int]]:
    """(start, end) of every whitespace run of at least SQUEEZE_RUN bytes.

    Such a run holds two whitespace bytes _STRIDE apart at multiples of
    _STRIDE, so only the samples ``chunk[::_STRIDE]`` are searched first:
    ordinary text costs one strided copy, not a pass over every byte."""
    samples = chunk[::_STRIDE].translate(_WS_TO_SPACE)
    pos = 0
    k = samples.find(b"  ")
    while k >= 0:
        a = k * _STRIDE
        if chunk[a : a + _STRIDE + 1].strip(_WS):  # not whitespace all along
            k = samples.find(b"  ", k + 1)
            continue
        before = chunk[max(pos, a - _STRIDE) : a]
        start = a - (len(before) - len(before.rstrip(_WS)))
        end = len(chunk) - len(chunk[a:].lstrip(_WS))
        if end - start >= SQUEEZE_RUN:
            yield start, end
            pos = end
        k = samples.find(b"  ", max(k + 1, -(-end // _STRIDE)))


@dataclass
class Squeezed:
    """Text with runs squeezed, and how to name positions in the original."""

    data: bytes
    source: str
    # per squeeze, in order: offset of the byte kept in ``data``, original offset
    # after the run, newlines removed so far, original offset where the line
    # after the run starts (-1: the run held no newline)
    kept: list[int] = field(default_factory=list)
    after: list[int] = field(default_factory=list)
    newlines: list[int] = field(default_factory=list)
    line_start: list[int] = field(default_factory=list)
    # squeeze_lines: (first line of data after a squeeze, lines removed so far)
    line_marks: list[int] = field(default_factory=list)
    lines_removed: list[int] = field(default_factory=list)

    def _add(self, kept: int, after: int, removed_newlines: int, line_start: int) -> None:
        self.kept.append(kept)
        self.after.append(after)
        self.newlines.append((self.newlines[-1] if self.newlines else 0) + removed_newlines)
        self.line_start.append(line_start)

    def original(self, offset: int) -> int:
        """Original byte offset of ``data[offset]``."""
        k = bisect_right(self.kept, offset) - 1
        if k < 0:
            return offset
        if offset == self.kept[k]:  # the byte standing for the run: its last byte
            return self.after[k] - 1 if self.after[k] else 0
        return self.after[k] + offset - self.kept[k] - 1

    def position(self, offset: int) -> str:
        """``line L, column C (byte B)`` of ``data[offset]`` in the original."""
        offset = max(0, min(offset, len(self.data)))
        k = bisect_left(self.kept, offset)  # squeezes before offset
        line = self.data.count(b"\n", 0, offset) + (self.newlines[k - 1] if k else 0) + 1
        start = self.data.rfind(b"\n", 0, offset) + 1
        j = bisect_left(self.kept, start) - 1  # a squeeze kept as the "\n" ending the previous line?
        if j >= 0 and self.kept[j] == start - 1 and self.line_start[j] >= 0:
            line_start = self.line_start[j]
        else:
            line_start = self.original(start)
        byte = self.original(offset)
        return f"line {line}, column {byte - line_start + 1} (byte {byte})"

    def line(self, number: int) -> int:
        """Original line number of line ``number`` (1-based) of squeezed lines."""
        k = bisect_right(self.line_marks, number) - 1
        return number + (self.lines_removed[k] if k >= 0 else 0)


def _unescaped(chunk: bytes, lo: int, hi: int, pending: bool) -> tuple[bytes, bool]:
    """``chunk[lo:hi]`` with every escape pair (and a first byte escaped by a
    backslash ending the previous piece) replaced by ``_``, same length, and
    whether it ends in a backslash escaping the next byte."""
    piece = chunk[lo:hi]
    if pending and piece:
        piece = b"_" + piece[1:]
    if b"\\" in piece:
        piece = _ESCAPE.sub(b"__", piece)
    return piece, piece.endswith(b"\\")


def squeeze_json(source: Source) -> Squeezed:
    """The JSON text of ``source`` with whitespace runs between tokens squeezed."""
    out = bytearray()
    result = Squeezed(b"", source.name)
    in_string, pending = False, False
    string_start = base = 0

    def too_long(start: int) -> ProfviewError:
        return ProfviewError(
            f"a string longer than {MAX_STRING >> 20} MiB", source=source.name,
            position=f"byte {start}", expected=f"JSON strings of at most {MAX_STRING >> 20} MiB",
        )

    for raw in source.chunks():
        chunk = bytes(raw)
        pos = 0
        for run_start, run_end in [*_runs(chunk), (len(chunk), len(chunk))]:
            piece, pending = _unescaped(chunk, pos, run_start, pending)
            quotes = piece.count(b'"')
            if quotes:
                if in_string and base + pos + piece.find(b'"') - string_start - 1 > MAX_STRING:
                    raise too_long(string_start)
                if in_string ^ (quotes % 2 == 1):  # ends inside a string opened by the last quote
                    string_start = base + pos + piece.rfind(b'"')
                in_string ^= quotes % 2 == 1
            out += chunk[pos:run_start]
            if run_start == run_end:
                break
            if in_string:  # whitespace inside a string is its content
                out += chunk[run_start:run_end]
            else:
                last = chunk.rfind(b"\n", run_start, run_end)
                result._add(len(out), base + run_end, max(0, chunk.count(b"\n", run_start, run_end) - 1),
                            base + last + 1 if last >= 0 else -1)
                out += b"\n" if last >= 0 else b" "
            pos = run_end
        base += len(chunk)
        if in_string and base - string_start - 1 > MAX_STRING:  # the body so far
            raise too_long(string_start)
    result.data = bytes(out)
    return result


class LineReader:
    """``for number, line in source.lines()``: each line (``str``, newline
    removed) with its 1-based number in the original.  Runs of blank lines
    of at least SQUEEZE_RUN bytes are skipped while streaming and counted in
    `squeezed` (so ``records = number of the last line``); a line
    longer than MAX_LINE or not valid UTF-8 is a ProfviewError, and so is the
    line after ``limits.MAX_TEXT_RECORDS`` lines were yielded (whatever is in
    them: a gzip bomb of repeated lines is refused there, memory bounded by the
    records read so far)."""

    def __init__(self, source: Source, *, raw: bool = False) -> None:
        self.source = source
        self.raw = raw
        self.squeezed = 0  # blank lines skipped without being yielded
        self.count = 0  # number of the last line seen
        self.yielded = 0

    def __iter__(self) -> Iterator[tuple[int, str]]:
        return self._lines()  # type: ignore[return-value]

    def _line(self, line: bytes) -> str | bytes:
        self.count += 1
        self.yielded += 1
        if len(line) > MAX_LINE:
            raise self._too_long()
        if self.yielded > limits.MAX_TEXT_RECORDS:
            raise ProfviewError(
                f"more than {limits.MAX_TEXT_RECORDS:,} lines", source=self.source.name,
                position=f"line {self.count}",
                expected=f"a text trace of at most {limits.MAX_TEXT_RECORDS:,} lines "
                         "(jupyter_profview.limits.MAX_TEXT_RECORDS)")
        if self.raw:
            return line
        try:
            return line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProfviewError("not valid utf-8 text", source=self.source.name,
                                position=f"line {self.count}, column {exc.start + 1}",
                                expected="a text trace") from None

    def _too_long(self) -> ProfviewError:
        return ProfviewError(
            f"a line longer than {MAX_LINE >> 20} MiB", source=self.source.name,
            position=f"line {self.count + 1}", expected=f"lines of at most {MAX_LINE >> 20} MiB",
        )

    def _lines(self) -> Iterator[tuple[int, str | bytes]]:
        carry = b""
        for raw in self.source.chunks(LINE_CHUNK):
            chunk = carry + bytes(raw)
            pos = 0
            for run_start, run_end in _runs(chunk):
                first = chunk.find(b"\n", run_start, run_end)
                last = chunk.rfind(b"\n", run_start, run_end)
                if first < 0 or last == first:
                    continue
                for line in chunk[pos : first + 1].split(b"\n")[:-1]:
                    yield self.count + 1, self._line(line)
                skipped = chunk.count(b"\n", first + 1, last + 1)
                self.count += skipped
                self.squeezed += skipped
                pos = last + 1
            parts = chunk[pos:].split(b"\n")
            carry = parts.pop()
            for line in parts:
                yield self.count + 1, self._line(line)
            if len(carry) > MAX_LINE:
                raise self._too_long()
        if carry:
            yield self.count + 1, self._line(carry)


def squeeze_lines(source: Source) -> Squeezed:
    """The text of ``source`` with runs of blank lines squeezed (bytes, lines
    joined with ``\\n``); `Squeezed.line` maps line numbers back."""
    result = Squeezed(b"", source.name)
    kept: list[bytes] = []
    reader = LineReader(source, raw=True)
    for number, line in reader:
        if number != len(kept) + 1 + (result.lines_removed[-1] if result.lines_removed else 0):
            result.line_marks.append(len(kept) + 1)
            result.lines_removed.append(number - len(kept) - 1)
        kept.append(line)  # type: ignore[arg-type]
    result.data = b"\n".join(kept)
    return result


class ChunkReader(io.RawIOBase):
    """A readable raw file over ``source.chunks()``: nothing is read ahead
    beyond one chunk, and more than ``limit`` decompressed bytes (if given)
    is a ProfviewError.  Wrap it in `io.BufferedReader` for
    ``readline``/``peek`` (see `reader`)."""

    def __init__(self, source: Source, limit: int | None = None) -> None:
        super().__init__()
        self.source = source
        self.limit = limit
        self._chunks = source.chunks()
        self._chunk = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        while not len(self._chunk):
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            if self.limit is not None and self.source.consumed > self.limit:
                raise ProfviewError(
                    f"the input expands to more than {self.limit:,} bytes", source=self.source.name,
                    position=f"after {self.source.consumed:,} decompressed bytes",
                    expected=f"at most {self.limit:,} bytes",
                )
            self._chunk = memoryview(chunk).cast("B")
        n = min(len(buffer), len(self._chunk))
        memoryview(buffer).cast("B")[:n] = self._chunk[:n]
        self._chunk = self._chunk[n:]
        return n


def utf8_clean(doc: object) -> bool:
    """Every string of a parsed JSON ``doc`` encodes to UTF-8: no lone surrogate from a
    ``\\udXXX`` escape (the standard library's ``json`` accepts them; Arrow strings and the
    browser's wire do not)."""
    import json

    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
