"""The args of an uncompressed trace file, read back from the file when asked.

The native Chrome scanner records where each event's ``args`` text is in the input
(``pv_scan_file_args``) instead of copying it: on a PyTorch trace the args
are ~80 % of the file, so holding them would cost most of the file's size
in memory.  The Perfetto walker does the same with debug annotations
(``pv_pf_file_args``) and reads the file itself in windows (`FileBlob.read_into`).
`FileBlob` stands in for the in-memory blob
(``ChromeColumns.args_blob``): ``blob[a:b]`` is a ``pread`` of those bytes,
and `segments` reads the ranges a search needs in large pieces.

The file is opened once, when loading starts, and kept open: a file
*replaced* afterwards (written to a temporary name and renamed, or deleted
and written again) does not change what the trace reads -- the open file is
still the one loaded.  A file *rewritten in place* (truncated, or its size
or modification time changed) is detected on the next read and is a
ProfviewError asking to load it again, never wrong args.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import numpy as np

from ..errors import ProfviewError

SEGMENT = 64 * 1024 * 1024  # bytes read at a time by `FileBlob.segments`


class FileBlob:
    """Bytes of ``path`` read on demand (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        st = os.fstat(self._fd)
        self._identity = (st.st_size, st.st_mtime_ns)
        self.size = st.st_size

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def fileno(self) -> int:
        return self._fd

    def __len__(self) -> int:
        return self.size

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (a ProfviewError if the file changed)."""
        st = os.fstat(self._fd)
        data = os.pread(self._fd, length, offset) if length > 0 else b""
        if (st.st_size, st.st_mtime_ns) != self._identity or len(data) != max(length, 0):
            raise ProfviewError(
                "the file changed since it was loaded (its args are read from it when asked)",
                source=self.path, position=f"byte {offset}", expected="the file as loaded: load it again")
        return data

    def read_into(self, offset: int, buffer: np.ndarray) -> int:
        """Fill ``buffer`` (uint8, writable) from ``offset``: the bytes read, all of it or to the
        end of the file (a ProfviewError if the file changed).  No new buffer per read."""
        st = os.fstat(self._fd)
        want = max(0, min(len(buffer), self.size - offset))
        if not want:
            got = 0
        elif hasattr(os, "preadv"):
            got = os.preadv(self._fd, [buffer[:want].data], offset)
        else:  # no preadv: one copy
            data = os.pread(self._fd, want, offset)
            got = len(data)
            buffer[:got] = np.frombuffer(data, np.uint8)
        if (st.st_size, st.st_mtime_ns) != self._identity or got != want:
            raise ProfviewError(
                "the file changed since it was loaded (it is read from the file as it goes)",
                source=self.path, position=f"byte {offset}", expected="the file as loaded: load it again")
        return got

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("FileBlob supports contiguous slices only")
        start = 0 if key.start is None else key.start
        stop = self.size if key.stop is None else min(key.stop, self.size)
        return self.read(start, stop - start)

    def segments(self, offsets: np.ndarray, ends: np.ndarray) -> Iterator[tuple[int, bytes]]:
        """(base, bytes) pieces of the file holding the ranges ``[offsets[i],
        ends[i])`` (sorted by offset, not overlapping), each range whole in one
        piece; pieces of about `SEGMENT` bytes, gaps between ranges read
        along (args texts are close to each other in a trace)."""
        n = len(offsets)
        i = 0
        while i < n:
            base = int(offsets[i])
            j = int(np.searchsorted(offsets, base + SEGMENT, side="left"))  # ranges starting in the piece
            j = max(j, i + 1)
            stop = int(ends[i:j].max())
            yield base, self.read(base, stop - base)
            i = j


def segments(blob: bytes | memoryview | FileBlob, offsets: np.ndarray,
             ends: np.ndarray) -> Iterator[tuple[int, bytes | memoryview]]:
    """`FileBlob.segments`, or the whole in-memory blob as one piece."""
    if isinstance(blob, FileBlob):
        yield from blob.segments(offsets, ends)
    elif len(offsets):
        yield 0, blob
