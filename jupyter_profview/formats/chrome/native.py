"""Feeding the native Chrome scanner (``_native/chrome_scan.c``): decompressed chunks
read ahead on a thread, with a progress bar for slow loads.  An uncompressed file of
`SPLIT_MIN` bytes or more is scanned in two halves on two threads and the scans joined
(`_feed_split`).  Taking the scanner's results (its C interface) is
[jupyter_profview.formats.chrome.native_columns][]."""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Empty, Full, Queue
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._native import _OK, _UNSUP, CHUNK_SIZE, _lib
from ..file_blob import FileBlob
from .native_columns import _check_status, _columns

if TYPE_CHECKING:
    from ...sources import Source
    from .columns import ChromeColumns

# -- Chrome traces ------------------------------------------------------------

SPLIT_MIN = 64 << 20  # bytes: an uncompressed file this big is scanned on two cores
SPLIT_WINDOW = 1 << 20  # bytes after the middle searched for an event boundary
_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")  # "}" "," "{": between two events?


class _Progress:
    """A notebook-aware progress bar that only exists for slow loads: it is
    created (importing tqdm) once streaming has taken PROGRESS_AFTER seconds,
    and tqdm's own ``delay`` shows it at about one second."""

    PROGRESS_AFTER = 0.3

    def __init__(self, source: Source) -> None:
        self.source = source
        self.start = time.perf_counter()
        self.done = 0
        self.bar: Any = None
        self.quiet = False
        self.lock = threading.Lock()
        self.elsewhere = 0  # bytes scanned by another thread, not yet shown

    def add_elsewhere(self, n: int) -> None:
        """Bytes scanned by another thread: counted, and shown by the next
        `update` (the bar is only touched from the loading thread)."""
        with self.lock:
            self.elsewhere += n

    def update(self, n: int) -> None:
        with self.lock:
            n, self.elsewhere = n + self.elsewhere, 0
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            return
        elapsed = time.perf_counter() - self.start
        if elapsed >= self.PROGRESS_AFTER and not self.quiet:
            if _no_bar():  # tqdm would be disabled: do not import it (~30 ms)
                self.quiet = True
                return
            from tqdm.auto import tqdm

            # For gzip only decompressed bytes are seen here: no known total.
            total = None if self.source.is_gzip else self.source.size
            self.bar = tqdm(total=total, initial=self.done, unit="B", unit_scale=True,
                            delay=max(0.0, 1.0 - elapsed), disable=None, leave=False,
                            desc=f"reading {Path(self.source.name).name}")

    def rewind(self, done: int) -> None:
        """Back to ``done`` bytes (what another thread scanned is scanned again)."""
        with self.lock:
            self.elsewhere = 0
        self.done = done
        if self.bar is not None:
            self.bar.n = done
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _no_bar() -> bool:
    """Whether tqdm.auto with ``disable=None`` would show nothing: outside
    IPython it is the console tqdm, which is disabled when stderr is not a
    terminal."""
    stderr = sys.stderr
    return "IPython" not in sys.modules and hasattr(stderr, "isatty") and not stderr.isatty()


def _prefetch(chunks: Iterator[bytes | memoryview], depth: int = 1) -> Iterator[bytes | memoryview]:
    """Iterate ``chunks`` in a background thread, ``depth`` chunks ahead, so
    reading / gunzipping overlaps with scanning (ctypes releases the GIL)."""
    queue: Queue[tuple[bytes | memoryview | None, BaseException | None]] = Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for chunk in chunks:
                while not stop.is_set():
                    try:
                        queue.put((chunk, None), timeout=0.1)
                        break
                    except Full:
                        continue
                if stop.is_set():
                    return
            queue.put((None, None))
        except BaseException as exc:  # handed to the consumer
            queue.put((None, exc))

    thread = threading.Thread(target=produce, name="profview-read", daemon=True)
    thread.start()
    try:
        while True:
            chunk, exc = queue.get()
            if exc is not None:
                raise exc
            if chunk is None:
                return
            yield chunk
    finally:
        stop.set()
        while thread.is_alive():  # unblock a producer waiting on a full queue
            with contextlib.suppress(Empty):
                queue.get_nowait()
            thread.join(timeout=0.05)


def _file_range(fd: int, chunk_size: int, start: int, end: int) -> Iterator[memoryview]:
    """Bytes ``[start, end)`` of the open file ``fd`` in chunks, read at their
    offset (``pread``: threads reading other ranges of the same descriptor do
    not move each other's position) into a ring of four reused buffers: one
    being scanned, one queued by `_prefetch`, one being read, one spare.
    Unlike fresh ``bytes`` per chunk, this does not churn large malloc blocks,
    which with glibc raises the mmap threshold and leaves the scanner's growing
    columns fragmenting the heap (~20% more peak RSS)."""
    ring = [bytearray(min(chunk_size, max(end - start, 1))) for _ in range(4)]
    offset = start
    for k in itertools.count():
        if offset >= end:
            return
        buffer = memoryview(ring[k % len(ring)])[: min(chunk_size, end - offset)]
        size = _pread_into(fd, buffer, offset)
        if not size:
            return
        offset += size
        yield buffer[:size]


def _pread_into(fd: int, buffer: memoryview, offset: int) -> int:
    if hasattr(os, "preadv"):
        return os.preadv(fd, [buffer], offset)
    data = os.pread(fd, len(buffer), offset)  # Windows, older macOS: one copy more
    buffer[: len(data)] = data
    return len(data)


def decode_chrome(source: Source, chunk_size: int = CHUNK_SIZE) -> ChromeColumns | None:
    """Scan a Chrome trace natively into ChromeColumns.

    Returns None when the input uses something the scanner leaves to the
    pure-Python decoder (see ``chrome_scan.c``); raises ProfviewError on
    invalid JSON or truncated input.
    """
    lib = _lib()
    scanner = lib.pv_scan_new()
    if not scanner:
        raise MemoryError("out of memory in the native scanner")
    try:
        # an uncompressed file: its args stay in it (file_blob), read from the file opened here
        blob = FileBlob(source.path) if source.path is not None and not source.is_gzip else None
        if blob is not None:
            lib.pv_scan_file_args(scanner, 1)
        split = _split_point(blob) if blob is not None else None
        status = (_feed_split(lib, scanner, source, chunk_size, blob, *split) if blob is not None and split
                  else _feed(lib, scanner, source, chunk_size, blob))
        if status == _UNSUP:
            return None
        _check_status(lib, scanner, status, source)
        return _columns(lib, scanner, blob)
    finally:
        lib.pv_scan_free(scanner)


def _feed(lib: ctypes.CDLL, scanner: int, source: Source, chunk_size: int, blob: FileBlob | None) -> int:
    """Stream the decompressed input into the scanner; its final status (a
    file whose args stay in it is read through the blob's own descriptor)."""
    progress = _Progress(source)
    chunks = (_file_range(blob.fileno(), chunk_size, 0, source.size) if blob is not None
              else source.chunks(chunk_size))

    def report(n: int) -> None:
        progress.update(n)
        source.consumed = max(source.consumed, progress.done)  # how far, for errors

    try:
        # small inputs and small chunks (the tests') are not worth a thread
        threaded = source.size > 2 * chunk_size and chunk_size >= 1 << 20
        return _feed_range(lib, scanner, _prefetch(chunks) if threaded else chunks, report, None, True)
    finally:
        progress.close()


def scan_threads() -> int:
    """Threads that may scan one file: ``PROFVIEW_SCAN_THREADS`` if set (1 in
    `load_many`'s workers, which share the cores), else
    the CPUs this process may run on."""
    setting = os.environ.get("PROFVIEW_SCAN_THREADS", "").strip()
    if setting.isdigit():
        return int(setting)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _split_point(blob: FileBlob) -> tuple[int, int] | None:
    """Where a second scanner may start on an uncompressed file, and whether
    the file is a bare array (1) or an object (0); None when the file is too
    small for a second core to pay off (or there is none).

    The point is the ``{`` of the first ``} , {`` (whitespace allowed) after
    the middle of the file: usually the start of an event.  It is a guess --
    the pattern may be inside a string, or outside traceEvents -- which
    `_feed_split` checks before using the second scan."""
    size = len(blob)
    if size < SPLIT_MIN or scan_threads() < 2:
        return None
    array_format = _array_format(blob)
    if array_format is None:
        return None
    middle = size // 2
    found = _BOUNDARY.search(os.pread(blob.fileno(), SPLIT_WINDOW, middle))
    return None if found is None else (middle + found.end() - 1, array_format)


def _array_format(blob: FileBlob) -> int | None:
    """1 if the file is a bare array (its first byte after a byte-order mark
    and whitespace is ``[``), 0 if an object, None if neither (invalid: the
    first scanner reports it)."""
    head = os.pread(blob.fileno(), 4096, 0).removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1]
    return {b"[": 1, b"{": 0}.get(head)


def _feed_range(lib: ctypes.CDLL, scanner: int, chunks: Iterator[bytes | memoryview],
                progress: Callable[[int], None], stop: threading.Event | None, finish: bool) -> int:
    """Feed ``chunks`` to ``scanner`` (then finish it, if ``finish``) unless
    ``stop`` is set, reporting the bytes fed to ``progress``; the scanner's
    status (``_OK`` when stopped)."""
    for chunk in chunks:
        if stop is not None and stop.is_set():
            return _OK
        view = np.frombuffer(chunk, np.uint8)
        size = len(view)
        status = lib.pv_scan_feed(scanner, view.ctypes.data, size)
        del view, chunk  # let the chunk go before the next one is read
        progress(size)
        if status != _OK:
            return int(status)
    return int(lib.pv_scan_finish(scanner)) if finish else _OK


def _feed_split(lib: ctypes.CDLL, scanner: int, source: Source, chunk_size: int, blob: FileBlob,
                split: int, array_format: int) -> int:
    """Scan an uncompressed file on two cores: ``scanner`` the bytes before
    ``split`` (in this thread), a second scanner the rest (in another; the
    native scan releases the GIL).  The second scan counts only if the first
    ends exactly at ``split``, between two events of traceEvents: then the
    two are the one scan cut in two and ``pv_scan_append`` joins them (the
    same rows, dictionary codes and errors as one scanner's).  Otherwise
    (the guessed boundary was inside a string, say) it is dropped and
    ``scanner`` goes on alone.  The final status, as `_feed`."""
    second = lib.pv_scan_new()
    if not second:
        raise MemoryError("out of memory in the native scanner")
    progress = _Progress(source)
    stop = threading.Event()
    fd = blob.fileno()
    try:
        lib.pv_scan_file_args(second, 1)
        lib.pv_scan_resume(second, split, array_format)
        with ThreadPoolExecutor(1, thread_name_prefix="profview-scan") as pool:
            rest = pool.submit(_feed_range, lib, second, _file_range(fd, chunk_size, split, source.size),
                               progress.add_elsewhere, stop, True)
            joined = False
            try:
                head = _file_range(fd, chunk_size, 0, split)
                status = _feed_range(lib, scanner, head, progress.update, None, False)
                joined = status == _OK and bool(lib.pv_scan_at_element(scanner, split))
            finally:
                if not joined:
                    stop.set()  # the second scan will not be used: stop it early
            rest.result()
        progress.update(0)  # show the other thread's bytes
        if status != _OK:
            return status
        if not joined:
            progress.rewind(split)
            return _feed_range(lib, scanner, _file_range(fd, chunk_size, split, source.size), progress.update,
                               None, True)
        return int(lib.pv_scan_append(scanner, second))
    finally:
        progress.close()
        lib.pv_scan_free(second)


