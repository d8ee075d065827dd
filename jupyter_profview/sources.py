"""Where trace bytes come from: a path, a bytes object or a binary file object.

Gzip is recognised by its magic number (never by the file name) and
decompressed transparently, always as a stream: no format holds the whole
decompressed input before looking at it.  Everything that goes wrong while
reading becomes a `ProfviewError` naming the
source and a position.

Limits on hostile input (a small ``.gz`` can expand to many GiB), so that
memory stays bounded by the real content of a trace:

* whitespace costs nothing: a run of at least `SQUEEZE_RUN` bytes of
  whitespace between JSON tokens (`Source.json_document`) or of blank
  lines (`Source.lines`) is squeezed while streaming (error positions
  still count the original bytes and lines);
* a JSON string longer than `MAX_STRING` bytes (as written) and a text
  line longer than `MAX_LINE` bytes are errors at their start (the
  native Chrome scanner has the same string limit, and refuses a single
  event longer than 256 MiB);
* a binary protobuf larger than `MAX_PROTOBUF` (protobuf's own limit)
  is an error;
* if memory still runs out (a trace whose tables do not fit),
  `jupyter_profview.load` raises ProfviewError naming the file and how
  far it got (`Source.consumed`), never a bare MemoryError.
"""

from __future__ import annotations

import io
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Union

from . import limits
from .errors import PathRefused, ProfviewError
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
            try:
                mode = self._path.stat().st_mode
            except (OSError, ValueError) as exc:  # missing, a symlink loop, a NUL byte, too long
                raise ProfviewError(_os_reason(exc), source=self.name) from None
            if stat.S_ISDIR(mode):
                raise ProfviewError("is a directory, not a trace file", source=self.name)
            if not stat.S_ISREG(mode):  # refused before opening: a FIFO would block the reader
                raise ProfviewError("is not a regular file (a FIFO, socket or device)", source=self.name)
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
        guard = _JsonGuard(self) if self.is_gzip and _looks_like_json(self.head(64)) else None
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
                if guard is not None:
                    guard.check(block)
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
        """Decompressed bytes per stored byte read so far by `chunks`
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
        `ChunkReader`); more than
        ``limit`` bytes is a ProfviewError."""
        from .text_stream import ChunkReader

        return io.BufferedReader(ChunkReader(self, limit), buffer_size=1 << 20)

    def json_document(self) -> Squeezed:
        """The whole decompressed JSON text with long whitespace runs between
        tokens squeezed (see the module doc); a string longer than
        `MAX_STRING` is a ProfviewError at its start."""
        from .text_stream import squeeze_json

        return squeeze_json(self)

    def lines(self) -> LineReader:
        """The decompressed text as numbered lines (see `LineReader`)."""
        from .text_stream import LineReader

        return LineReader(self)

    def squeezed_text(self) -> Squeezed:
        """The whole text with runs of blank lines squeezed (see
        `lines`; for formats parsed whole, such as protobuf text)."""
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


def _looks_like_json(head: bytes) -> bool:
    return head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1] in (b"{", b"[")


class _JsonGuard:
    """The budget of a compressed JSON input (see `limits`), checked on
    each decompressed chunk before any parser sees it: at most ``json_value_budget(stored size)``
    values, and no more than ``JSON_BIG`` bytes other than whitespace at an expansion beyond
    ``MAX_EXPANSION``.  An
    uncompressed input needs no guard: its size bounds both."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.budget = limits.json_value_budget(source.size)
        self.values = 0
        self.held = 0  # decompressed bytes that are not whitespace

    def check(self, block: bytes | memoryview) -> None:
        data = bytes(block) if isinstance(block, memoryview) else block
        self.values += data.count(b",") + data.count(b"[") + data.count(b"{")
        # whitespace is squeezed while streaming (it costs nothing): only the rest is held
        self.held += len(data) - sum(data.count(c) for c in (b" ", b"\n", b"\t", b"\r"))
        src = self.source
        expansion = self.held / max(src.raw_consumed, 1)
        if self.values > self.budget:
            raise ProfviewError(
                f"more than {self.budget:,} JSON values from {src.size:,} compressed bytes (a gzip bomb?)",
                source=src.name, position=f"after {src.consumed:,} decompressed bytes",
                expected=f"at most {limits.JSON_VALUES_PER_STORED_BYTE} values per stored byte")
        if self.held > limits.JSON_BIG and expansion > limits.MAX_EXPANSION:
            raise ProfviewError(
                f"the input expands {expansion:.0f}x (real traces compress far less: a gzip bomb?)",
                source=src.name, position=f"after {src.consumed:,} decompressed bytes",
                expected=f"at most {limits.MAX_EXPANSION}x beyond {limits.JSON_BIG >> 20} MiB")


def _os_reason(exc: BaseException) -> str:
    """What went wrong with a path, without the path itself (the caller names it)."""
    if isinstance(exc, ValueError):
        return "the path holds a NUL byte"
    if isinstance(exc, RuntimeError):
        return "a symlink loop"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return type(exc).__name__


#: one path component / a whole path longer than this is refused before the OS sees it
MAX_NAME = 255
MAX_PATH = 4096


def confine(root: str | os.PathLike[str], asked: str, *, scope: Path | None = None,
            allow_hidden: bool = False, directory: bool = True) -> Path:
    """The one rule for every path the server opens (and every file a directory session walks):
    ``asked`` (relative to ``root``) resolved -- symlinks followed -- must stay inside ``root``
    (and inside ``scope`` when given), name nothing hidden below it (unless ``allow_hidden``)
    and be a regular file (or, with ``directory``, a directory).  Returns the resolved path;
    anything else raises [PathRefused][jupyter_profview.errors.PathRefused] naming ``asked``
    only, checked before anything is opened."""
    shown = asked if isinstance(asked, str) and len(asked) <= 200 else f"{str(asked)[:200]}..."
    if not isinstance(asked, str) or not asked.strip("/"):
        raise PathRefused("'path' must name a file under the server root", status=400)
    if "\0" in asked:
        raise PathRefused("the path holds a NUL byte", source=repr(shown), status=400)
    if len(asked) > MAX_PATH or any(len(part) > MAX_NAME for part in asked.split("/")):
        raise PathRefused(f"the path is longer than {MAX_PATH} characters or a name than {MAX_NAME}",
                          source=shown, status=400)
    base = Path(root).expanduser().resolve()
    try:
        target = (base / asked.lstrip("/")).resolve()
    except (OSError, RuntimeError, ValueError) as exc:
        raise PathRefused(f"cannot be resolved: {_os_reason(exc)}", source=shown, status=400) from None
    if not target.is_relative_to(base):
        raise PathRefused("is outside the server root", source=shown, status=403)
    if scope is not None and not target.is_relative_to(scope):
        raise PathRefused("is outside the served path (profview serve --parent serves its parent)",
                          source=shown, status=403)
    if not allow_hidden and any(part.startswith(".") for part in target.relative_to(base).parts):
        raise PathRefused("is hidden (ContentsManager.allow_hidden is off)", source=shown, status=403)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        raise PathRefused("no such file", source=shown, status=404) from None
    except (OSError, ValueError) as exc:
        raise PathRefused(f"cannot be read: {_os_reason(exc)}", source=shown, status=400) from None
    if not (stat.S_ISREG(mode) or (directory and stat.S_ISDIR(mode))):
        raise PathRefused("is not a regular file (a FIFO, socket or device)", source=shown, status=403)
    return target


def walk(root: str | os.PathLike[str], directory: Path, *, scope: Path | None = None,
         allow_hidden: bool = False) -> tuple[list[Path], list[str]]:
    """The files directly in ``directory`` that [confine][jupyter_profview.sources.confine]
    admits (sorted, resolved), and a note per entry it skipped (the entry's name and why:
    never its content nor where a symlink points)."""
    base = Path(root).expanduser().resolve()
    admitted: list[Path] = []
    skipped: list[str] = []
    for entry in sorted(directory.iterdir()):
        asked = entry.relative_to(base).as_posix() if entry.is_relative_to(base) else entry.name
        try:
            admitted.append(confine(base, asked, scope=scope, allow_hidden=allow_hidden, directory=False))
        except PathRefused as exc:
            if not entry.is_dir():  # sub-directories are not part of a run
                skipped.append(f"{entry.name}: {exc.reason}")
    return admitted, skipped
