"""Scanning one uncompressed file on two cores (``native._feed_split``).

A second scanner starts at a guessed event boundary near the middle; its scan
is used only when the first scanner ends exactly there, and then the two are
joined by ``pv_scan_append``.  Whatever the guess, the result must be the
one-scanner result: the same columns, dictionaries and codes, numeric args,
top-level members, and the same error (message, byte, record).  The
expected values are the single scanner's (itself held equal to the
pure-Python reference decoder by ``test_native.py``).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_profview import _native
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats.chrome import native as chrome_native
from jupyter_profview.formats.chrome.columns import ChromeColumns
from jupyter_profview.sources import Source
from tests.test_native import _generated_trace, assert_same, chrome_fixtures, trace_document
from tests.trace_files import SHARED_DIR

pytestmark = pytest.mark.skipif(_native._load() is None, reason="native library not built")

Outcome = ChromeColumns | None | ProfviewError
BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


class Spy:
    """Counts the joins (``pv_scan_append`` calls) of the native library."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        lib = _native._lib()
        real = lib.pv_scan_append
        self.joins = 0

        def append(dst: int, src: int) -> int:
            self.joins += 1
            return int(real(dst, src))

        monkeypatch.setattr(lib, "pv_scan_append", append)


def decode(path: Path, chunk_size: int = 1 << 20) -> Outcome:
    try:
        return chrome_native.decode_chrome(Source(path), chunk_size=chunk_size)
    except ProfviewError as exc:
        return exc


def one_scanner(monkeypatch: pytest.MonkeyPatch, path: Path, chunk_size: int = 1 << 20) -> Outcome:
    with monkeypatch.context() as m:
        m.setattr(chrome_native, "SPLIT_MIN", 1 << 62)
        return decode(path, chunk_size)


def split_at(monkeypatch: pytest.MonkeyPatch, offset: int) -> None:
    """Make the next decodes guess ``offset`` as the boundary, whatever is there."""
    monkeypatch.setattr(chrome_native, "_split_point",
                        lambda blob: (offset, fmt) if (fmt := chrome_native._array_format(blob))
                        is not None else None)


def assert_same_outcome(ref: Outcome, got: Outcome) -> None:
    if isinstance(ref, ProfviewError):
        assert isinstance(got, ProfviewError), f"one scanner raises {ref}, two give {got!r}"
        assert (got.args, got.position, got.expected) == (ref.args, ref.position, ref.expected)
    elif ref is None:
        assert got is None, "one scanner leaves the input to Python, two decode it"
    else:
        assert isinstance(got, ChromeColumns), f"one scanner decodes, two give {got!r}"
        assert_same(ref, got)


def test_real_traces_split_in_the_middle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every uncompressed Chrome fixture, split where the loader would split a big file."""
    files = [f for f in chrome_fixtures() if f.suffix == ".json"]
    assert len(files) >= 5
    spy = Spy(monkeypatch)
    joined = []
    for path in files:
        ref = one_scanner(monkeypatch, path)
        before = spy.joins
        with monkeypatch.context() as m:
            m.setattr(chrome_native, "SPLIT_MIN", 0)
            got = decode(path)
        assert_same_outcome(ref, got)
        if spy.joins > before:
            joined.append(path.name)
    assert len(joined) >= len(files) // 2, f"the split was used only for {joined}"


def test_generated_trace_at_every_boundary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PyTorch trace split at many event boundaries and at points inside
    events and strings: joined at the boundaries, one scan elsewhere."""
    data = _generated_trace(400)
    path = tmp_path / "trace.json"
    path.write_bytes(data)
    ref = one_scanner(monkeypatch, path, 4096)
    assert isinstance(ref, ChromeColumns)
    boundaries = [m.end() - 1 for m in BOUNDARY.finditer(data)]
    some = boundaries[:: max(1, len(boundaries) // 25)]
    offsets = some + [1, len(data) // 3, len(data) // 2 + 7, len(data) - 2]
    spy = Spy(monkeypatch)
    for offset in offsets:
        split_at(monkeypatch, offset)
        assert_same_outcome(ref, decode(path, 4096))
    assert spy.joins == len(some)


def test_a_boundary_pattern_inside_a_string_is_not_trusted(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    text = b'{"traceEvents": [{"name": "a}, {b", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]}'
    path = tmp_path / "t.json"
    path.write_bytes(text)
    inside = text.index(b"{b")
    spy = Spy(monkeypatch)
    split_at(monkeypatch, inside)
    got = decode(path)
    assert isinstance(got, ChromeColumns) and got.names == ["a}, {b"] and got.n == 1
    assert spy.joins == 0


@pytest.mark.parametrize("tail, message", [
    (b'{"ph": "X", "ts": 1e30, "dur": 1, "pid": 1, "tid": 1}', "'ts' is out of range"),
    (b'{"ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1,}', "unexpected character"),
])
def test_an_error_after_the_split_is_reported_as_one_scanner_would(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tail: bytes, message: str) -> None:
    """The byte offset and the record index are counted from the file's start."""
    head = b'{"traceEvents": [' + b",\n".join(
        b'{"name": "e%d", "ph": "X", "ts": %d, "dur": 1, "pid": 1, "tid": 1}' % (i, i) for i in range(50))
    text = head + b",\n" + tail + b"]}"
    path = tmp_path / "t.json"
    path.write_bytes(text)
    ref = one_scanner(monkeypatch, path)
    assert isinstance(ref, ProfviewError) and message in str(ref)
    spy = Spy(monkeypatch)
    split_at(monkeypatch, text.index(b'{"name": "e30"'))
    got = decode(path)
    assert_same_outcome(ref, got)
    assert spy.joins == 1
    if "range" in message:
        assert isinstance(got, ProfviewError) and "traceEvents[50]" in (got.position or "")


def test_dictionaries_keep_first_occurrence_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Names, categories and tokens first seen after the split get the next
    codes; ones seen on both sides keep the first side's; escapes that decode
    to a name of the first side are merged into it."""
    first = [b'{"name": "a", "cat": "c1", "ph": "X", "ts": 1, "dur": 1, "pid": 7, "tid": "x"}',
             b'{"name": "b", "cat": "c1", "ph": "X", "ts": 2, "dur": 1, "pid": 7, "tid": 8}']
    second = [b'{"name": "c", "cat": "c2", "ph": "X", "ts": 3, "dur": 1, "pid": 9, "tid": "x"}',
              b'{"name": "\\u0061", "cat": "c1", "ph": "X", "ts": 4, "dur": 1, "pid": 7, "tid": 8, '
              b'"args": {"Sequence number": 5}}']
    text = b'[' + b",\n".join(first + second) + b"]"
    path = tmp_path / "t.json"
    path.write_bytes(text)
    ref = one_scanner(monkeypatch, path)
    assert isinstance(ref, ChromeColumns)
    spy = Spy(monkeypatch)
    split_at(monkeypatch, text.index(second[0]))
    got = decode(path)
    assert isinstance(got, ChromeColumns) and spy.joins == 1
    assert_same(ref, got)
    assert got.names == ["a", "b", "c"] and list(got.name_code) == [0, 1, 2, 0]
    assert got.cats == ["c1", "c2"] and list(got.cat_code) == [0, 0, 1, 0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(trace_document(supported=False), st.data())
def test_hypothesis_any_split_of_any_trace(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path_factory: pytest.TempPathFactory,
                                           data: bytes, draw: st.DataObject) -> None:
    """Any document (valid, invalid, or left to Python), split anywhere --
    mostly at ``} , {`` patterns, which are also found inside strings."""
    path = tmp_path_factory.mktemp("split") / "t.json"
    path.write_bytes(data)
    ref = one_scanner(monkeypatch, path, 7)
    boundaries = [m.end() - 1 for m in BOUNDARY.finditer(data)]
    where: st.SearchStrategy[int] = st.integers(0, len(data))
    if boundaries and draw.draw(st.integers(0, 3)):
        where = st.sampled_from(boundaries)
    offset = draw.draw(where)
    with monkeypatch.context() as m:
        split_at(m, offset)
        got = decode(path, draw.draw(st.sampled_from([1, 5, 1 << 20])))
    assert_same_outcome(ref, got)


def test_one_scan_thread_when_asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``PROFVIEW_SCAN_THREADS=1`` (set in load_many's workers, which share the
    cores) keeps a big file on one scanner."""
    path = tmp_path / "trace.json"
    path.write_bytes(_generated_trace(300))
    monkeypatch.setattr(chrome_native, "SPLIT_MIN", 0)
    spy = Spy(monkeypatch)
    monkeypatch.setenv("PROFVIEW_SCAN_THREADS", "1")
    assert isinstance(decode(path), ChromeColumns) and spy.joins == 0
    monkeypatch.setenv("PROFVIEW_SCAN_THREADS", "2")
    assert isinstance(decode(path), ChromeColumns) and spy.joins == 1


class FakeBar:
    """Stands in for tqdm: records the count and the threads that touch it."""

    made: list[FakeBar] = []

    def __init__(self, total: int | None, initial: int, **_: object) -> None:
        self.total, self.n = total, initial
        self.threads = {threading.get_ident()}
        FakeBar.made.append(self)

    def update(self, n: int) -> None:
        self.n += n
        self.threads.add(threading.get_ident())

    def refresh(self) -> None:
        self.threads.add(threading.get_ident())

    def close(self) -> None:
        self.threads.add(threading.get_ident())


@pytest.mark.parametrize("boundary", [True, False])
def test_progress_counts_each_byte_once_from_the_loading_thread(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, boundary: bool) -> None:
    """Joined or not (then the rest is scanned again by the first scanner),
    the bar ends at the file's size and only the loading thread draws it."""
    import tqdm.auto

    data = _generated_trace(300)
    path = tmp_path / "trace.json"
    path.write_bytes(data)
    inside_a_name = data.index(b'"name": "') + 10
    between_events = BOUNDARY.search(data, len(data) // 2)
    assert between_events
    split_at(monkeypatch, between_events.end() - 1 if boundary else inside_a_name)
    monkeypatch.setattr(chrome_native._Progress, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(chrome_native, "_no_bar", lambda: False)
    monkeypatch.setattr(tqdm.auto, "tqdm", FakeBar)
    FakeBar.made.clear()
    spy = Spy(monkeypatch)
    assert isinstance(decode(path, 4096), ChromeColumns)
    assert spy.joins == int(boundary)
    (bar,) = FakeBar.made
    assert bar.total == len(data) and bar.n == len(data)
    assert bar.threads == {threading.get_ident()}


SHARED_HTA = (SHARED_DIR or Path("../shared")) / "traces" / "hta"
# the middle of this one is in "distributedInfo" (a list of 300 ranks before traceEvents): the
# "}, {" found there is between two process groups, not two events -- the guess is dropped
MIDDLE_BEFORE_EVENTS = {"cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"}


@pytest.mark.skipif(not SHARED_HTA.is_dir(), reason="../shared/traces/hta not beside the checkout")
@pytest.mark.parametrize("name", sorted(p.name for p in SHARED_HTA.glob("*.json.gz")))
def test_real_gpu_traces_load_the_same_split(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             name: str) -> None:
    """HTA's real A100 / MI250 traces, uncompressed and loaded whole through
    ``profview.load``, give the same tables and args scanned in two halves."""
    import gzip

    import pandas as pd

    import jupyter_profview as profview

    path = tmp_path / name.removesuffix(".gz")
    path.write_bytes(gzip.decompress((SHARED_HTA / name).read_bytes()))
    spy = Spy(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(chrome_native, "SPLIT_MIN", 1 << 62)
        one = profview.load(path)
    with monkeypatch.context() as m:
        m.setattr(chrome_native, "SPLIT_MIN", 0)
        two = profview.load(path)
    assert spy.joins == (0 if name in MIDDLE_BEFORE_EVENTS else 1)
    for table in ("events", "memory", "allocations", "flows", "launches", "counters"):
        a, b = getattr(one, table), getattr(two, table)
        if a is None:
            assert b is None, table
        else:
            pd.testing.assert_frame_equal(b, a, obj=table)
    assert two.quality == one.quality and two.metadata == one.metadata
    for event in range(0, len(one.events), max(1, len(one.events) // 50)):
        assert two.args(event) == one.args(event)
