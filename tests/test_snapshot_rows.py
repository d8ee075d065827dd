"""The native snapshot reader's early forms (``_native/pickle_rows.c``, ``pickle_memo.c``): a
trace entry becomes a row when it is appended to its list, and an interned frame or stack a plain
value once nothing else references its dict or list.  A pickle may still reach such a value later
(a memo GET) and change it, share it, or nest it deeper; the pure-Python reader (the reference) must
then give the same tables or the same refusal, and the C reader must hand those pickles back to it
rather than answer from what it built early."""

from __future__ import annotations

import pickle
import struct
from typing import Any

import pytest

from jupyter_profview import _native
from tests.snapshot_helpers import Read, both, read

pytestmark = pytest.mark.skipif(not _native.available(), reason="the native library is not built")


def _summary(r: Read) -> Any:
    """What these tests read of a snapshot: the events' and allocations' columns as text, each
    allocation's frames and the quality."""
    t = r.tables
    ev = t["events"][["name", "start", "size", "addr", "frame"]].astype(str).values.tolist()
    al = t["allocations"][["address", "bytes", "owner"]].astype(str).values.tolist()
    return ev, al, [list(f) for f in t["allocations"]["frames"]], r.quality


# --- hand-written protocol 4 pickles (explicit BINPUT keys, so a later BINGET can name them) ---
def S(s: str) -> bytes:
    raw = s.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def K(x: int) -> bytes:
    return b"K" + bytes([x]) if x < 256 else b"J" + struct.pack("<i", x)


def PUT(k: int) -> bytes:
    return b"q" + bytes([k])


def GET(k: int) -> bytes:
    return b"h" + bytes([k])


FRAME = b"}" + PUT(7) + b"(" + S("name") + S("f") + S("filename") + S("a.py") + S("line") + K(3) + b"u"
FRAME2 = b"}(" + S("name") + S("g") + S("filename") + S("b.py") + S("line") + K(4) + b"u"


def _entry(key: int, addr: int, frames: bytes) -> bytes:
    return (b"}" + PUT(key) + b"(" + S("action") + S("alloc") + S("addr") + K(addr) + S("size") + K(512)
            + S("time_us") + K(addr) + S("frames") + frames + b"u")


def _snapshot(tail: bytes, frames: bytes = b"]" + PUT(6) + FRAME + b"a") -> bytes:
    """{segments: [], device_traces: [[entry 5 (frames 6: [frame 7]), entry 8]]}, then ``tail`` run
    with the root dict on the stack (it must leave it there)."""
    entries = b"(" + _entry(5, 16, frames) + _entry(8, 32, b"]") + b"e"
    return (b"\x80\x04}(" + S("segments") + b"]" + S("device_traces") + b"]" + b"]" + PUT(4) + entries + b"a"
            + b"u" + tail + b".")


MUTATIONS = {
    # the entry dict, a row already: its size changed afterwards
    "entry changed": GET(5) + S("size") + K(999) + b"s0",
    # the same entry appended again to its list: two rows in the reference
    "entry appended twice": GET(4) + GET(5) + b"a0",
    # the frame dict, interned already: its line changed afterwards
    "frame changed": GET(7) + S("line") + K(77) + b"s0",
    # the frames list, a stack already: one more frame afterwards
    "stack grown": GET(6) + FRAME2 + b"a0",
    # an entry appended to the list after its first rows came from elsewhere
    "rows from two lists": b"]" + _entry(9, 48, b"]") + b"a0",
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
def test_later_changes_go_to_the_reference(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    a, b = both(_snapshot(MUTATIONS[case]), monkeypatch)
    assert a.used == "python" and a.fallback, "the C reader answered from what it built early"
    unchanged = read(_snapshot(b""), False, monkeypatch)
    if case != "rows from two lists":  # the reference sees the change: the check can tell
        assert _summary(b) != _summary(unchanged)


def test_unchanged_is_native(monkeypatch: pytest.MonkeyPatch) -> None:
    a, _ = both(_snapshot(GET(7) + b"0" + GET(6) + b"0"), monkeypatch)  # read, not changed
    assert a.used == "native", a.fallback
    ev = _summary(a)[0]
    assert [r[0] for r in ev] == ["alloc", "alloc"] and [r[4] for r in ev] == ["f (a.py:3)", ""]


def test_empty_frames_list_changed_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty frames list: a row reads it as no frames; an APPEND onto it afterwards (released
    list or, when shared before, frozen list) goes to the reference."""
    for frames in (b"]" + PUT(6), b"]" + PUT(6) + b"2" + b"0"):  # second: DUP pins it
        a, b = both(_snapshot(GET(6) + FRAME2 + b"a0", frames=frames), monkeypatch)
        assert a.used == "python" and a.fallback
        assert _summary(b)[0][0][4] == "g (b.py:4)"


def test_shared_frames_and_stacks_stay_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyTorch's snapshots share frame dicts between stacks and stack lists between entries (the
    pickle then has memo GETs of them): read natively, same tables."""
    f = [{"name": n, "filename": "m.py", "line": k} for k, n in enumerate("abcd")]
    stacks = [[f[0], f[1]], [f[1], f[2], f[3]], [f[3]]]
    entries = [{"action": "alloc", "addr": 512 * k, "size": 512, "stream": 0, "time_us": k,
                "frames": stacks[k % 3]} for k in range(30)]
    entries += [{"action": "free_completed", "addr": 512 * k, "size": 512, "stream": 0, "time_us": 40 + k,
                 "frames": stacks[k % 2]} for k in range(0, 30, 2)]
    blocks = [{"size": 512, "state": "active_allocated", "frames": stacks[0]}]
    snap = {"segments": [{"device": 0, "address": 0, "total_size": 1 << 20, "blocks": blocks}],
            "device_traces": [entries, []]}
    for protocol in (2, 4, 5):
        a, _ = both(pickle.dumps(snap, protocol=protocol), monkeypatch)
        assert a.used == "native", a.fallback
        ev = _summary(a)[0]
        assert len(ev) == 45 + 1 and ev[0][4] == "a (m.py:0)"


@pytest.mark.parametrize("what", ["entries", "stack", "frame"])
def test_depth_of_early_forms(monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    """A list of rows, a stack or a frame shared into a nesting that ends around PICKLE_MAX_DEPTH:
    the C reader counts their depth as the dicts and lists they stand for (both accept or both
    refuse, and both outcomes occur)."""
    frames = [{"name": "f", "filename": "a.py", "line": 1}]
    entries = [{"action": "alloc", "addr": 0, "size": 512, "time_us": 1, "frames": frames}]
    inner = {"entries": entries, "stack": frames, "frame": frames[0]}[what]
    outcomes = set()
    for k in range(56, 66):
        deep: Any = inner
        for _ in range(k):
            deep = [deep]
        data = pickle.dumps({"segments": [], "device_traces": [entries], "x": deep}, protocol=4)
        a, _ = both(data, monkeypatch)
        outcomes.add(a.used)
    assert outcomes == {"native", "error"}


def test_frame_memoized_twice_stays_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """A frame dict memoized under two keys may be reached by either later, so it is never
    released to a plain value: here another entry's frames reach it by the first key, and the C
    reader still answers, as the reference reads it."""
    twice = FRAME.replace(PUT(7), PUT(7) + PUT(9), 1)
    entries = b"(" + _entry(5, 16, b"]" + PUT(6) + twice + b"a") + _entry(8, 32, b"]" + GET(7) + b"a") + b"e"
    data = (b"\x80\x04}(" + S("segments") + b"]" + S("device_traces") + b"]" + b"]" + PUT(4) + entries + b"a"
            + b"u.")
    a, _ = both(data, monkeypatch)
    assert a.used == "native", a.fallback
    assert [r[4] for r in _summary(a)[0]] == ["f (a.py:3)", "f (a.py:3)"]
