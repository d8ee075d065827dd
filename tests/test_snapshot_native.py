"""The native snapshot reader (``_native/pickle_*.c``) against the pure-Python restricted
unpickler (the reference): identical tables on generated snapshots of every protocol, on the
project's snapshots, on hypothesis-built and on fuzzed (mutated) pickles; the same refusals."""

from __future__ import annotations

import pickle
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_profview import _native
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats import torch_snapshot
from jupyter_profview.loader import load
from tests.snapshot_helpers import both

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import make_snapshot  # noqa: E402

sys.path.pop(0)

DATA = Path(__file__).parent / "data" / "torch_memory"
pytestmark = pytest.mark.skipif(not _native.available(), reason="the native library is not built")


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("oom", ["fragmentation", "capacity", None])
def test_generated_snapshots_native_equals_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: int, oom: str | None
) -> None:
    path = tmp_path / "s.pickle"
    make_snapshot.write(path, entries=1500, protocol=protocol, oom=oom, devices=2 if protocol == 5 else 1)
    a, _ = both(path.read_bytes(), monkeypatch)
    assert a.used == "native", a.fallback  # decoded in C, not handed back
    names = set(a.tables["events"]["name"].astype(str))
    assert ("oom" in names) == (oom == "capacity" or oom == "fragmentation")


@pytest.mark.parametrize("name", ["cuda_snapshot_synthetic.pickle", "mlp_adam.profile_snapshot.pickle"])
def test_project_snapshots_native_equals_python(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    a, _ = both((DATA / name).read_bytes(), monkeypatch)
    assert a.used == "native", a.fallback


@pytest.mark.parametrize("protocol", [4, 5])
def test_generator_writes_what_pickle_writes(tmp_path: Path, protocol: int) -> None:
    """The streaming writer of the big benchmark files: the bytes of ``pickle.dumps`` of the same
    object (frames aside: the writer frames per 64 KiB batch)."""

    def unframed(b: bytes) -> bytes:
        out, pos = bytearray(b[:2]), 2
        while pos < len(b) and b[pos] == 0x95:
            n = int.from_bytes(b[pos + 1 : pos + 9], "little")
            out += b[pos + 9 : pos + 9 + n]
            pos += 9 + n
        return bytes(out + b[pos:])

    path = tmp_path / "s.pickle"
    make_snapshot.write(path, entries=1200, protocol=protocol, devices=2)
    data = path.read_bytes()
    assert unframed(data) == unframed(pickle.dumps(pickle.loads(data), protocol=protocol))


_SMALL = pickle.dumps(
    {
        "segments": [
            {
                "device": 0,
                "address": 4096,
                "total_size": 2048,
                "stream": 0,
                "blocks": [
                    {
                        "size": 1024,
                        "state": "active_allocated",
                        "frames": [{"name": "f", "filename": "a.py", "line": 3}],
                    },
                    {"size": 1024, "state": "inactive"},
                ],
            }
        ],
        "device_traces": [
            [
                {
                    "action": "alloc",
                    "addr": 4096,
                    "size": 1024,
                    "stream": 0,
                    "time_us": 5,
                    "frames": [
                        {"name": "f", "filename": "a.py", "line": 3},
                        {"name": "g", "filename": "torch/x.py", "line": 1},
                    ],
                },
                {
                    "action": "free_requested",
                    "addr": 4096,
                    "size": 1024,
                    "stream": 0,
                    "time_us": 6,
                    "frames": [],
                },
                {"action": "oom", "device_free": 7, "size": 1 << 30, "stream": 0, "time_us": 9},
            ]
        ],
    },
    protocol=4,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cuts=st.lists(st.tuples(st.integers(0, len(_SMALL) - 1), st.integers(0, 255)), min_size=1, max_size=3),
    truncate=st.one_of(st.none(), st.integers(1, len(_SMALL))),
)
def test_fuzzed_pickles_same_tables_or_both_refused(
    monkeypatch: pytest.MonkeyPatch, cuts: list[tuple[int, int]], truncate: int | None
) -> None:
    data = bytearray(_SMALL)
    for at, byte in cuts:
        data[at] = byte
    both(bytes(data[:truncate]), monkeypatch)


_frame = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["f", "g", "h"]),
        "filename": st.sampled_from(["a.py", "torch/b.py", "??", ""]),
        "line": st.integers(0, 5),
    }
)
_int = st.one_of(st.integers(0, 1 << 20), st.just(1 << 62), st.just(-1), st.booleans())
_entry = st.fixed_dictionaries(
    {
        "action": st.sampled_from(
            [
                "alloc",
                "free_requested",
                "free_completed",
                "segment_alloc",
                "segment_free",
                "oom",
                "snapshot",
                "bogus",
            ]
        ),
        "size": _int,
        "time_us": st.integers(0, 50),
    },
    optional={
        "addr": st.sampled_from([0, 512, 1024, 4096]),
        "stream": st.integers(0, 2),
        "frames": st.lists(_frame, max_size=3),
        "device_free": st.integers(0, 99),
        "extra": st.text(max_size=3),
    },
)
_block = st.fixed_dictionaries(
    {
        "size": st.sampled_from([512, 1024]),
        "state": st.sampled_from(["active_allocated", "inactive", "active_pending_free"]),
    },
    optional={"address": st.sampled_from([0, 512, 4096]), "frames": st.lists(_frame, max_size=2)},
)
_segment = st.fixed_dictionaries(
    {
        "address": st.sampled_from([0, 4096]),
        "total_size": st.just(2048),
        "blocks": st.lists(_block, max_size=3),
    },
    optional={"device": st.integers(0, 1)},
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    segments=st.lists(_segment, max_size=3),
    traces=st.lists(st.lists(_entry, max_size=8), max_size=2),
    protocol=st.integers(2, 5),
    drop_time=st.booleans(),
)
def test_built_snapshots_same_tables(
    monkeypatch: pytest.MonkeyPatch, segments: list[Any], traces: list[Any], protocol: int, drop_time: bool
) -> None:
    if drop_time and traces and traces[0]:
        del traces[0][0]["time_us"]
    both(pickle.dumps({"segments": segments, "device_traces": traces}, protocol=protocol), monkeypatch)


HEAD = b"\x80\x04}\x94(\x8c\x08segments\x94]\x94"
FORBIDDEN = {
    "REDUCE": b"R",
    "BUILD": b"b",
    "OBJ": b"o",
    "NEWOBJ": b"\x81",
    "NEWOBJ_EX": b"\x92",
    "PERSID": b"P",
    "BINPERSID": b"Q",
    "EXT1": b"\x82",
    "EXT2": b"\x83",
    "EXT4": b"\x84",
    "EMPTY_SET": b"\x8f",
    "FROZENSET": b"\x91",
    "BYTEARRAY8": b"\x96",
    "NEXT_BUFFER": b"\x97",
    "READONLY_BUFFER": b"\x98",
}


@pytest.mark.parametrize("name", sorted(FORBIDDEN))
def test_forbidden_opcodes_refused_by_both(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    data = HEAD + FORBIDDEN[name] + b"u."
    for native in (True, False):
        monkeypatch.setenv("PROFVIEW_NATIVE", "1" if native else "0")
        with pytest.raises(ProfviewError, match="refused"):
            load(data, format="torch_cuda_snapshot")


@pytest.mark.parametrize("native", [True, False])
def test_globals_named_and_refused(monkeypatch: pytest.MonkeyPatch, native: bool) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "1" if native else "0")
    data = HEAD + b"\x8c\x02os\x94\x8c\x06system\x94\x93\x94u."
    with pytest.raises(ProfviewError, match=r"refused: the pickle asks for os\.system"):
        load(data, format="torch_cuda_snapshot")


@pytest.mark.parametrize("native", [True, False])
def test_truncated(monkeypatch: pytest.MonkeyPatch, native: bool, tmp_path: Path) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "1" if native else "0")
    path = tmp_path / "s.pickle"
    make_snapshot.write(path, entries=500)
    data = path.read_bytes()
    for cut in (3, len(data) // 3, len(data) - 1):
        with pytest.raises(ProfviewError, match="corrupt pickle"):
            load(data[:cut], format="torch_cuda_snapshot")
    # the opcode budget of a small .gz expanding to many opcodes: tests/test_hostile_formats.py


def test_deep_and_cyclic_go_to_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nesting past PICKLE_MAX_DEPTH and cycles: the C reader hands them to the Python reader,
    which refuses them (its words)."""
    monkeypatch.setenv("PROFVIEW_NATIVE", "1")
    deep: Any = []
    for _ in range(80):
        deep = [deep]
    with pytest.raises(ProfviewError, match="nested"):
        load(
            pickle.dumps({"segments": [], "device_traces": [], "x": deep}, protocol=4),
            format="torch_cuda_snapshot",
        )
    assert torch_snapshot.last_fallback == "nested too deep"
    cyc: list[Any] = []
    cyc.append(cyc)
    with pytest.raises(ProfviewError):
        load(
            pickle.dumps({"segments": [], "device_traces": [], "x": cyc}, protocol=4),
            format="torch_cuda_snapshot",
        )
    assert torch_snapshot.last_fallback == "a cycle"


def test_random_generated_sizes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    for k in range(3):
        path = tmp_path / f"s{k}.pickle"
        make_snapshot.write(
            path,
            entries=rng.randint(200, 2500),
            seed=k,
            layers=rng.randint(4, 30),
            oom=rng.choice(["fragmentation", "capacity", None]),
            devices=rng.randint(1, 2),
        )
        a, _ = both(path.read_bytes(), monkeypatch)
        assert a.used == "native", a.fallback


def test_frames_differing_only_in_line_are_distinct(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames are interned by (name, filename, line): 500 frames of one function whose lines agree
    in their low 16 bits (so the interning table's probes pass over each other) are 500 frames, as
    in the reference's tables, not merged."""
    entries = [{"action": "alloc", "addr": 512 * k, "size": 512, "stream": 0, "time_us": k,
                "frames": [{"name": "f", "filename": "a.py", "line": k << 16}]} for k in range(500)]
    a, _ = both(pickle.dumps({"segments": [], "device_traces": [entries]}, protocol=4), monkeypatch)
    assert a.used == "native", a.fallback
    assert a.tables["events"]["frame"].nunique() == 500


@pytest.mark.parametrize("empty", [b"(e", b"}(u0"], ids=["APPENDS", "SETITEMS"])
def test_appends_and_setitems_of_nothing(monkeypatch: pytest.MonkeyPatch, empty: bytes) -> None:
    """An APPENDS (onto an empty list) or a SETITEMS (onto an empty dict) of no items: read natively,
    as the reference reads it.  In the C reader the container has no items array yet; a build with
    ``-fsanitize=undefined`` fails here where the empty copy is not skipped (found by the fuzzer)."""
    base = pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "addr": 0, "size": 512,
                                                             "time_us": 1}]], "x": []}, protocol=4)
    at = base.rindex(b"]") + 1  # after x's EMPTY_LIST
    data = base[:at] + empty + base[at:]
    assert pickle.loads(data) == pickle.loads(base)
    a, _ = both(data, monkeypatch)
    assert a.used == "native", a.fallback
