"""Where trace bytes come from: a path, a bytes object or a binary file object.

Gzip is recognised by its magic number (never by the file name) and
decompressed transparently, always as a stream: no format holds the whole
decompressed input before looking at it.  Everything that goes wrong while
reading becomes a :class:`~jupyter_profview.errors.ProfviewError` naming the
source and a position.

Limits on hostile input (a small ``.gz`` can expand to many GiB), so that
memory stays bounded by the real content of a trace:

* whitespace costs nothing: a run of at least :data:`SQUEEZE_RUN` bytes of
  whitespace between JSON tokens (:meth:`Source.json_document`) or of blank
  lines (:meth:`Source.lines`) is squeezed while streaming (error positions
  still count the original bytes and lines);
* a JSON string longer than :data:`MAX_STRING` bytes (as written) and a text
  line longer than :data:`MAX_LINE` bytes are errors at their start (the
  native Chrome scanner has the same string limit, and refuses a single
  event longer than 256 MiB);
* a binary protobuf larger than :data:`MAX_PROTOBUF` (protobuf's own limit)
  is an error;
* if memory still runs out (a trace whose tables do not fit),
  :func:`jupyter_profview.load` raises ProfviewError naming the file and how
  far it got (:attr:`Source.consumed`), never a bare MemoryError.
"""

from __future__ import annotations

import io
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Union

from .errors import ProfviewError
from .limits import MAX_LINE, MAX_STRING, SQUEEZE_RUN  # noqa: F401  (part of this module's API)

if TYPE_CHECKING:
    from .text_stream import LineReader, Squeezed

SourceLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]

GZIP_MAGIC = b"\x1f\x8b"
CHUNK_SIZE = 32 * 1024 * 1024
MAX_PROTOBUF = 2 * 1024 * 1024 * 1024 - 1  # protobuf messages are limited to 2 GiB
RAW_BLOCK = 256 * 1024  # compressed bytes read at a time (keeps raw_consumed fine-grained)


class Source:
    """A readable trace input with a display name.

    ``head()`` and ``read()`` and ``chunks()`` all yield *decompressed* bytes.
    """

    def __init__(self, source: SourceLike, name: str | None = None) -> None:
        self._path: Path | None = None
        self._data: bytes | memoryview | None = None
        if isinstance(source, (str, os.PathLike)):
            self._path = Path(source)
            self.name = name or str(source)
            if not self._path.exists():
                raise ProfviewError("no such file", source=self.name)
            if self._path.is_dir():
                raise ProfviewError("is a directory, not a trace file", source=self.name)
        elif isinstance(source, (bytes, bytearray, memoryview)):
            self._data = source if isinstance(source, bytes) else memoryview(source).cast("B")
            self.name = name or "<bytes>"
        elif hasattr(source, "read"):
            self.name = name or str(getattr(source, "name", "<file object>"))
            raw = source.read()
            if not isinstance(raw, (bytes, bytearray)):
                raise ProfviewError(
                    "file object returned text, not bytes",
                    source=self.name,
                    expected="a binary file object (open(path, 'rb'))",
                )
            self._data = bytes(raw)
        else:
            raise ProfviewError(
                f"cannot read a trace from {type(source).__name__}",
                expected="a path, bytes, or a binary file object",
            )
        self.is_gzip = self._raw_head(2) == GZIP_MAGIC
        self._head_cache: bytes | None = None
        self.consumed = 0  # decompressed bytes read so far (for "how far it got")
        self.raw_consumed = 0  # stored (compressed) bytes read so far by chunks()

    # -- raw (possibly compressed) access ---------------------------------
    def _raw_head(self, n: int) -> bytes:
        if self._path is not None:
            with open(self._path, "rb") as f:
                return f.read(n)
        assert self._data is not None
        return bytes(self._data[:n])

    @property
    def path(self) -> Path | None:
        """The file behind this source, or None for in-memory input."""
        return self._path

    @property
    def size(self) -> int:
        """Size of the input as stored (compressed size for gzip)."""
        if self._path is not None:
            return self._path.stat().st_size
        assert self._data is not None
        return len(self._data)

    def _open_raw(self) -> IO[bytes]:
        if self._path is not None:
            return open(self._path, "rb")
        assert self._data is not None
        return io.BytesIO(self._data)

    # -- decompressed access ----------------------------------------------
    def head(self, n: int = 65536) -> bytes:
        """The first ``n`` decompressed bytes (fewer if the input is shorter)."""
        if self._head_cache is not None and len(self._head_cache) >= n:
            return self._head_cache[:n]
        if not self.is_gzip:
            data = self._raw_head(n)
        else:
            with self._open_raw() as raw:
                out = bytearray()
                try:
                    self._gunzip_head(raw, n, out)
                except zlib.error as exc:
                    where = "gzip header" if not out else f"after {len(out)} decompressed bytes"
                    raise ProfviewError(f"corrupt gzip data ({exc})", source=self.name, position=where,
                                        expected="a gzip stream") from None
                data = bytes(out[:n])
        self._head_cache = data
        return data

    @staticmethod
    def _gunzip_head(raw: IO[bytes], n: int, out: bytearray) -> None:
        """Up to ``n`` decompressed bytes into ``out``, across concatenated gzip
        members; zero padding or anything else after a member ends the head
        (``chunks`` reports what gzip makes of it)."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = b""  # compressed bytes not fed yet
        while len(out) < n:
            if d.unconsumed_tail:
                out += d.decompress(d.unconsumed_tail, n - len(out))
                continue
            if d.eof:  # a member ended: the next one, if any, starts with the magic number
                pending = (d.unused_data + pending).lstrip(b"\0")
                while len(pending) < 2 and (block := raw.read(65536)):
                    pending = (pending + block).lstrip(b"\0")
                if not pending.startswith(GZIP_MAGIC):
                    return
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            block, pending = pending or raw.read(65536), b""
            if not block:
                return
            out += d.decompress(block, n - len(out))

    def chunks(self, chunk_size: int = CHUNK_SIZE) -> Iterator[bytes | memoryview]:
        """Decompressed content in chunks; raises ProfviewError on bad gzip."""
        self.consumed = self.raw_consumed = 0
        if not self.is_gzip and self._data is not None:
            view = memoryview(self._data)
            for i in range(0, len(view), chunk_size):
                self.consumed = min(len(view), i + chunk_size)
                yield view[i : i + chunk_size]
            return
        raw = self._open_raw()
        try:
            inflated = [0]  # decompressed so far, for error positions
            counted = _Counted(raw, self)
            blocks = (self._gunzip(counted, chunk_size, inflated) if self.is_gzip
                      else iter(lambda: counted.read(chunk_size), b""))
            while True:
                try:
                    block = next(blocks, b"")
                except (EOFError, zlib.error, OSError) as exc:
                    raise ProfviewError(
                        f"gzip stream is truncated or corrupt ({exc})",
                        source=self.name,
                        position="gzip header" if not inflated[0]
                        else f"after {inflated[0]} decompressed bytes",
                        expected="a complete gzip stream",
                    ) from None
                if not block:
                    return
                self.consumed += len(block)
                yield block
        finally:
            raw.close()

    @staticmethod
    def _gunzip(raw: _Counted, chunk_size: int, inflated: list[int]) -> Iterator[bytes]:
        """Decompressed blocks of about ``chunk_size`` bytes, with zlib directly
        (twice as fast as GzipFile): concatenated members are one stream, zero
        padding after a member is ignored, anything else is an error (as gzip)."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        parts: list[bytes] = []
        size = 0
        data = b""
        while True:
            if not data:
                data = raw.read(RAW_BLOCK)
                if not data:
                    if not d.eof:
                        raise EOFError("compressed file ended before the end-of-stream marker was reached")
                    break
            piece = d.decompress(data, chunk_size - size)
            if piece:
                parts.append(piece)
                size += len(piece)
                inflated[0] += len(piece)
            if d.eof:  # a member ended: zero padding, the end, or the next member
                data = d.unused_data.lstrip(b"\0")
                while not data and (more := raw.read(RAW_BLOCK)):
                    data = more.lstrip(b"\0")
                if not data:
                    break
                if len(data) < 2:
                    data += raw.read(1)
                if not data.startswith(GZIP_MAGIC):
                    raise OSError("data after the gzip stream is not gzip")
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            else:
                data = d.unconsumed_tail
            if size >= chunk_size:
                yield b"".join(parts)
                parts, size = [], 0
        if parts:
            yield b"".join(parts)

    def expansion(self) -> float:
        """Decompressed bytes per stored byte read so far by :meth:`chunks`
        (1 for uncompressed input); gzip of real trace data stays far below
        the ~1000x of a bomb's filler."""
        return self.consumed / max(self.raw_consumed, 1) if self.is_gzip else 1.0

    def read(self, limit: int | None = None) -> bytes:
        """The whole decompressed content; more than ``limit`` bytes is a ProfviewError."""
        if not self.is_gzip and (limit is None or self.size <= limit):  # no expansion: read at once
            data = self._path.read_bytes() if self._path is not None else bytes(self._data)  # type: ignore[arg-type]
            self.consumed = len(data)
            return data
        parts = []
        for chunk in self.chunks():
            if limit is not None and self.consumed > limit:
                raise ProfviewError(
                    f"the input expands to more than {limit:,} bytes", source=self.name,
                    position=f"after {self.consumed:,} decompressed bytes",
                    expected=f"at most {limit:,} bytes",
                )
            parts.append(bytes(chunk))
        return b"".join(parts)

    def reader(self, limit: int | None = None) -> io.BufferedReader:
        """The decompressed content as a buffered binary file, streamed (see
        :class:`~jupyter_profview.text_stream.ChunkReader`); more than
        ``limit`` bytes is a ProfviewError."""
        from .text_stream import ChunkReader

        return io.BufferedReader(ChunkReader(self, limit), buffer_size=1 << 20)

    def json_document(self) -> Squeezed:
        """The whole decompressed JSON text with long whitespace runs between
        tokens squeezed (see the module doc); a string longer than
        :data:`MAX_STRING` is a ProfviewError at its start."""
        from .text_stream import squeeze_json

        return squeeze_json(self)

    def lines(self) -> LineReader:
        """The decompressed text as numbered lines (see :class:`LineReader`)."""
        from .text_stream import LineReader

        return LineReader(self)

    def squeezed_text(self) -> Squeezed:
        """The whole text with runs of blank lines squeezed (see
        :meth:`lines`; for formats parsed whole, such as protobuf text)."""
        from .text_stream import squeeze_lines

        return squeeze_lines(self)

    def text(self, encoding: str = "utf-8") -> str:
        """The whole content decoded as text, with a clear error for binary data."""
        data = self.read()
        try:
            return data.decode(encoding)
        except UnicodeDecodeError as exc:
            raise ProfviewError(
                f"not valid {encoding} text",
                source=self.name,
                position=f"byte {exc.start}",
                expected="a text trace",
            ) from None


class _Counted:
    """A stored file whose reads count into ``source.raw_consumed``."""

    def __init__(self, raw: IO[bytes], source: Source) -> None:
        self.raw = raw
        self.source = source

    def read(self, n: int) -> bytes:
        data = self.raw.read(n)
        self.source.raw_consumed += len(data)
        return data
