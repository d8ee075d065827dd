"""The native Perfetto walker (``_native/perfetto_scan.c``) against the pure-Python reader
(the reference): every column of the walk (values and widths), the strings, tracks, clocks,
quality counts, the damage found and every event's args, on the recorded Chromium trace (as
bytes, and as a file read in windows of a few bytes to 8 MB), on every case of
``tests/test_perfetto_edges.py`` (each run with the comparison wrapped around its loads), and
on a corpus of cut and bit-flipped copies.  Where the walker leaves a file to
Python (``walk`` returns None) the load is the reference's by construction; the tests count
how many files the walker read itself and require it for the fixture and the edge cases."""

from __future__ import annotations

import gzip
import inspect
import os
import random
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import _native
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import perfetto
from jupyter_profview.formats.file_blob import FileBlob
from jupyter_profview.formats.perfetto import native
from jupyter_profview.formats.perfetto.native import COLUMNS
from jupyter_profview.sources import Source

pytestmark = pytest.mark.skipif(_native._load() is None, reason="native library not built")
FIXTURE = Path(__file__).parent / "data" / "chromium_perfetto.pftrace.gz"
RAW = gzip.decompress(FIXTURE.read_bytes())
REAL_WALK = native.walk
ARRAYS = [name for name, _ in COLUMNS[:23]]


def _array(values: Any, dtype: Any) -> np.ndarray:
    return np.frombuffer(values, dtype) if isinstance(values, array) else np.asarray(values, dtype)


def _clock_state(c: Any) -> tuple[Any, ...]:
    return c.clocks.domains, c.clocks.snapshots, c.clocks.trace_clock


def _args(c: Any) -> dict[int, Any]:
    return {row: c.args.get(row) for row in c.args}


def compare(data: bytes, path: Path | None = None, window: int | None = None) -> bool:
    """Native and Python walks of ``data`` (read from ``path`` when given, in ``window``-byte
    reads where given) agree; True where the native walker read it, False where it left it to
    Python."""
    if window is not None:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(native, "WINDOW", window)
            return compare(data, path)
    try:
        ref: Any = perfetto._python_walk(Source(data), data)
    except ProfviewError as exc:
        ref = exc
    source = Source(path) if path is not None else Source(data)
    try:
        got = REAL_WALK(source, None if path is not None else data)
    except ProfviewError as exc:
        assert isinstance(ref, ProfviewError) and str(exc) == str(ref)
        return True
    if got is None:
        return False
    assert not isinstance(ref, ProfviewError), f"native read what Python refuses: {ref}"
    (c, damage), (r, ref_damage) = got, ref
    assert damage == ref_damage
    for (name, dtype) in COLUMNS[:23]:
        mine, ref_column = getattr(c, name), getattr(r, name)
        assert mine.dtype == dtype and ref_column.itemsize == np.dtype(dtype).itemsize, name  # same widths
        assert np.array_equal(_array(mine, dtype), _array(ref_column, dtype)), name
    assert c.strings == r.strings
    assert c.tracks == r.tracks
    assert _clock_state(c) == _clock_state(r)
    assert (c.placed, c.skipped, c.notes) == (r.placed, r.skipped, r.notes)
    assert (+c.placed, +c.skipped, +c.notes) == (+r.placed, +r.skipped, +r.notes)
    assert (c.records, c.dropped) == (r.records, r.dropped)
    assert _args(c) == _args(r)
    assert bool(c.args) == bool(r.args)
    return True


def test_fixture_columns_are_the_readers(tmp_path: Path) -> None:
    assert compare(RAW)
    path = tmp_path / "chromium.pftrace"
    path.write_bytes(RAW)
    assert compare(RAW, path)  # the file, read in windows
    assert compare(RAW, path, 4096)  # many windows: packets cut at their ends
    c, _ = REAL_WALK(Source(path), None)  # type: ignore[misc]
    assert len(c.ev_kind) > 20_000 and len(c.ct_value) > 40_000 and len(c.flow_row) > 1_000
    assert len(list(c.args)) > 1_000  # the walker read annotations: the comparison above saw them


def test_fixture_loads_the_same_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    got = profview.load(FIXTURE)
    monkeypatch.setenv("PROFVIEW_NATIVE", "0")
    ref = profview.load(FIXTURE)
    for frame in ("events", "flows", "counters"):
        a, b = getattr(got, frame), getattr(ref, frame)
        assert a.equals(b), frame
    assert got.quality == ref.quality
    rows = np.flatnonzero(ref.events["has_args"].to_numpy())
    assert len(rows) > 1_000
    for i in rows[:: max(1, len(rows) // 300)].tolist():
        assert got.args(i) == ref.args(i)
    bare = np.flatnonzero(~ref.events["has_args"].to_numpy())  # args keyed by event id: none here
    for i in bare[:: max(1, len(bare) // 100)].tolist():
        assert got.args(i) == ref.args(i) == {}


def test_disabled_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "0")
    assert REAL_WALK(Source(RAW), RAW) is None


EDGES = [fn for name, fn in inspect.getmembers(pytest.importorskip("tests.test_perfetto_edges"),
                                               inspect.isfunction) if name.startswith("test_")]


#: a packet that does not parse: which bytes protobuf refuses is protobuf's to say, so the
#: walker leaves such a file to the reader (its error text and offset are the reference's);
#: more clock domains than the int16 codes hold: the reader's clear error
LEFT_TO_PYTHON = {"test_corrupt_packet_stops_with_the_offset",
                  "test_more_clock_domains_than_the_columns_hold"}
NO_LOAD = {"test_sniffing_tells_perfetto_from_other_protobuf_formats"}


@pytest.mark.parametrize("case", EDGES, ids=lambda fn: fn.__name__)
def test_edge_cases_agree(case: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    read: list[bool] = []

    def checked(source: Source, data: bytes | bytearray | None) -> Any:
        raw = bytes(data) if data is not None else Path(source.path).read_bytes()  # type: ignore[arg-type]
        read.append(compare(raw))
        path = tmp_path / f"case{len(read)}.pftrace"
        path.write_bytes(raw)
        for window in (1, 9, 300):  # the file in reads of a few bytes: every packet across two
            assert compare(raw, path, window) == read[-1]
        return REAL_WALK(source, data)

    monkeypatch.setattr(native, "walk", checked)
    case()
    assert bool(read) != (case.__name__ in NO_LOAD)
    if case.__name__ in LEFT_TO_PYTHON:
        assert not any(read)
    else:
        assert all(read), f"{case.__name__}: {read.count(False)} of {len(read)} loads left to Python"


def test_damaged_copies_agree(tmp_path: Path) -> None:
    """Cut anywhere and bytes overwritten (the head of the fixture): the same damage text and
    offset, error or quality counts, from bytes and from the file read in small windows; the
    walker must read most of them itself."""
    head = RAW[:60_000]
    rng = random.Random(32)
    own = total = 0
    path = tmp_path / "damaged.pftrace"

    def both(data: bytes) -> bool:
        path.write_bytes(data)
        read = compare(data)
        assert compare(data, path, rng.choice((1, 2, 11, 1000, 1 << 20))) == read
        return read

    for _ in range(60):
        total += 1
        own += both(head[:rng.randrange(1, len(head))])
    for _ in range(60):
        data = bytearray(head)
        for _ in range(rng.choice((1, 5, 50))):
            data[rng.randrange(len(data))] = rng.randrange(256)
        total += 1
        own += both(bytes(data))
    assert own >= total // 2, f"the walker read only {own} of {total} damaged copies"


def test_cut_file_reports_the_offset() -> None:
    cut = RAW[:50_001]
    ref = perfetto._python_walk(Source(cut), cut)[1]
    got = REAL_WALK(Source(cut), cut)
    assert got is not None and got[1] == ref and ref and "runs past the end" in ref[0].reason


def _random_walk(rng: np.random.Generator) -> tuple[Any, np.ndarray, np.ndarray]:
    """Columns of begins (some instants) and ends on a few tracks in a random file order, with
    random times, matched in file order as the walk does."""
    from jupyter_profview.formats.perfetto.state import Columns, Track

    c = Columns()
    c.tracks = [Track(t) for t in range(4)]
    stacks: dict[int, list[int]] = {}
    start: list[int] = []
    end_time: list[int] = []
    for place in range(int(rng.integers(1, 120))):
        track, when = int(rng.integers(0, 4)), int(rng.integers(0, 50))
        if rng.random() < 0.55:
            c.ev_track.append(track)
            c.ev_kind.append(0)
            c.ev_order.append(place)
            stacked = int(rng.random() < 0.9)
            c.ev_stacked.append(stacked)
            if stacked:
                stacks.setdefault(track, []).append(len(start))
            start.append(when)
        else:
            c.end_track.append(track)
            c.end_order.append(place)
            stack = stacks.get(track)
            c.end_row.append(stack.pop() if stack else -1)
            end_time.append(when)
    return c, np.array(start, np.int64), np.array(end_time, np.int64)


def test_rematch_in_c_is_the_python_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_profview.formats.perfetto import tables
    from jupyter_profview.model import Quality

    rng = np.random.default_rng(32)
    differs = 0
    for _ in range(400):
        c, start, end_time = _random_walk(rng)
        got_q, ref_q = Quality(), Quality()
        got = tables.rematch_out_of_order(c, start, end_time, got_q)
        with monkeypatch.context() as m:
            m.setattr(_native, "available", lambda: False)
            ref = tables.rematch_out_of_order(c, start, end_time, ref_q)
        np.testing.assert_array_equal(got, ref)
        assert (got_q.skipped, got_q.placed) == (ref_q.skipped, ref_q.placed)
        walk = np.full(len(start), -1, np.int32)
        ends = np.frombuffer(c.end_row, np.int32)
        walk[ends[ends >= 0]] = np.flatnonzero(ends >= 0)
        differs += not np.array_equal(ref, walk)
    assert differs > 50  # the rematch changed the walk's matching in many of them


def _walked_file(tmp_path: Path) -> Path:
    path = tmp_path / "chromium.pftrace"
    path.write_bytes(RAW)
    return path


def test_file_cut_while_it_is_read_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process truncates the file during the walk: a ProfviewError naming the file,
    never a crash (a mapped file would fault: SIGBUS) or a half-read trace."""
    path = _walked_file(tmp_path)
    real_read = FileBlob.read_into
    reads: list[int] = []

    def cutting(self: FileBlob, offset: int, buffer: np.ndarray) -> int:
        reads.append(offset)
        if len(reads) == 3:
            os.truncate(path, len(RAW) // 2)
        return real_read(self, offset, buffer)

    monkeypatch.setattr(native, "WINDOW", 64 << 10)
    monkeypatch.setattr(FileBlob, "read_into", cutting)
    with pytest.raises(ProfviewError, match="changed since it was loaded") as err:
        profview.load(path)
    assert str(path) in str(err.value) and len(reads) == 3


def test_args_of_a_file_rewritten_after_loading(tmp_path: Path) -> None:
    """The annotations are read back from the file: a file rewritten in place since is a
    ProfviewError asking to load it again; one replaced under its name (renamed over) still
    gives the loaded file's args (the file stays open)."""
    path = _walked_file(tmp_path)
    ref = profview.load(FIXTURE)
    ids = np.flatnonzero(ref.events["has_args"].to_numpy())[:50].tolist()
    trace = profview.load(path)
    assert trace.args(ids[0]) == ref.args(ids[0]) != {}
    other = tmp_path / "other.pftrace"
    other.write_bytes(RAW[: len(RAW) // 3])
    os.replace(other, path)  # replaced: the open file is still the one loaded
    assert [trace.args(i) for i in ids] == [ref.args(i) for i in ids]
    (tmp_path / "again").mkdir()
    again = _walked_file(tmp_path / "again")
    trace = profview.load(again)
    with open(again, "r+b") as f:  # rewritten in place: cut
        f.truncate(len(RAW) // 2)
    with pytest.raises(ProfviewError, match="changed since it was loaded"):
        for i in ids:
            trace.args(i)


def _flow_tracker(ids: list[int], terminating: list[int], order: list[int]) -> tuple[list[int], list[int]]:
    """Perfetto's FlowTracker as a loop over the entries in time order: a flow_ids entry begins a
    flow, or steps an open one (an arrow from its last entry); a terminating entry ends an open
    one with an arrow (none open: nothing)."""
    active: dict[int, int] = {}
    src: list[int] = []
    dst: list[int] = []
    for k in order:
        last = active.get(ids[k])
        if terminating[k]:
            if last is None:
                continue
            del active[ids[k]]
        else:
            active[ids[k]] = k
            if last is None:
                continue
        src.append(last)
        dst.append(k)
    return src, dst


def test_flow_links_are_the_flow_trackers() -> None:
    from jupyter_profview.formats.perfetto.tables import link_flows

    rng = np.random.default_rng(32)
    linked = 0
    for _ in range(300):
        n = int(rng.integers(0, 60))
        ids = rng.integers(0, 6, n).astype(np.uint64)
        terminating = (rng.random(n) < 0.3).astype(np.int8)
        order = np.argsort(rng.integers(0, 20, n), kind="stable")
        src, dst = link_flows(ids, terminating, order)
        want = _flow_tracker(ids.tolist(), terminating.tolist(), order.tolist())
        assert (src.tolist(), dst.tolist()) == want
        linked += len(want[0])
    assert linked > 1_000
