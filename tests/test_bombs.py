"""Hostile input: a few-MB ``.gz`` that expands to GiBs (whitespace, one giant
string, one giant line, many lines) loads or fails with a ProfviewError
naming the file and a position, with bounded memory, never a MemoryError.

The bombs are made on the fly: one gzip member of 1 MiB of filler, repeated
(concatenated gzip members are one stream), between a small head and tail.
Each load runs in a fresh interpreter that reports its peak RSS growth
(``ru_maxrss`` after a warm-up load of a tiny input of the same format), so
earlier tests cannot hide or inflate it.  ``PROFVIEW_BOMB_GIB`` sets the
expanded size (default 0.5 GiB to keep the suite fast; 4 GiB works the same:
``PROFVIEW_BOMB_GIB=4 pytest tests/test_bombs.py``).
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GIB = float(os.environ.get("PROFVIEW_BOMB_GIB", "0.5"))
MIB = 1 << 20
BOUND_MB = 400  # peak RSS growth allowed: far below the expanded size

CHILD = textwrap.dedent("""
    import json, os, resource, sys, warnings
    warnings.simplefilter("ignore")
    import jupyter_profview as profview
    path, fmt, warm, limit_mb = sys.argv[1], sys.argv[2] or None, sys.argv[3].encode(), int(sys.argv[4])
    try:
        profview.load(warm, format=fmt)
    except profview.ProfviewError:
        pass
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    if limit_mb:  # make memory run out early (address space, not RSS)
        vm = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (vm + limit_mb * 2**20, resource.RLIM_INFINITY))
    out = {}
    try:
        trace = profview.load(path, format=fmt)
        out["events"] = len(trace.events)
        out["memory"] = 0 if trace.memory is None else len(trace.memory)
    except profview.ProfviewError as exc:
        out["error"] = str(exc)
        out["source"], out["position"] = exc.source, exc.position
    except MemoryError as exc:
        out["memory_error"] = repr(exc)
    if limit_mb:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    out["growth_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 - base
    print(json.dumps(out))
""")


def bomb(path: Path, head: bytes, filler: bytes, tail: bytes, gib: float = GIB) -> Path:
    block = (filler * (MIB // len(filler) + 1))[:MIB]
    member = gzip.compress(block, compresslevel=9)
    with open(path, "wb") as f:
        f.write(gzip.compress(head))
        for _ in range(int(gib * 1024)):
            f.write(member)
        f.write(gzip.compress(tail))
    assert path.stat().st_size < 8 * MIB * max(1.0, gib)  # a small file ...
    return path


def run(path: Path, fmt: str = "", warm: bytes = b"", *, native: bool = True, limit_mb: int = 0) -> dict:
    env = {**os.environ, "PROFVIEW_NATIVE": "1" if native else "0"}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), fmt, warm.decode(), str(limit_mb)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "memory_error" not in result, result
    assert result["growth_mb"] < BOUND_MB, result
    return result


def assert_error(result: dict, path: Path, *words: str) -> None:
    assert "error" in result, result
    assert result["source"] == str(path) and result["position"], result
    assert result["error"].startswith(f"{path}: {result['position']}: "), result
    for word in words:
        assert word in result["error"], result


CHROME_WARM = '[{"ph": "X", "name": "a", "ts": 1, "dur": 1}]'


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_chrome_whitespace_costs_nothing(tmp_path: Path, native: bool) -> None:
    path = bomb(tmp_path / "ws.json.gz", b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2},',
                b" \n\t\r\n", b'{"ph": "X", "name": "b", "ts": 5, "dur": 1}]}')
    assert run(path, warm=CHROME_WARM.encode(), native=native)["events"] == 2


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_chrome_giant_string(tmp_path: Path, native: bool) -> None:
    path = bomb(tmp_path / "str.json.gz", b'{"traceEvents": [{"ph": "X", "ts": 1, "name": "', b"abcdefgh",
                b'"}]}')
    result = run(path, warm=CHROME_WARM.encode(), native=native)
    assert_error(result, path, "string longer than 64 MiB")
    start = len(b'{"traceEvents": [{"ph": "X", "ts": 1, "name": ')
    assert f"byte {start}" in result["position"], result


def test_chrome_whitespace_inside_one_event_native(tmp_path: Path) -> None:
    """The native scanner carries an incomplete event: beyond 256 MiB it stops."""
    path = bomb(tmp_path / "event.json.gz", b'{"traceEvents": [{"ph": "X", "ts": 1,', b" ", b'"dur": 1}]}')
    assert_error(run(path, warm=CHROME_WARM.encode()), path, "longer than 256 MiB")


def test_megengine_giant_string(tmp_path: Path) -> None:
    path = bomb(tmp_path / "mge.json.gz", b'{"profiler": {"x": "', b"abcdefgh", b'"}}')
    assert_error(run(path, "megengine_json"), path, "string longer than 64 MiB")


LINE_FORMATS = [
    ("tf_node_order", b"a/b\nc/d\n", b"a/b\n"),
    ("tf_node_shapes", b"", b""),
    ("chainer_graph", b"1 1\n", b""),
    ("tf_step_stats", b"dev_stats {\n", b"}\n"),
]


@pytest.mark.parametrize(("fmt", "head", "tail"), LINE_FORMATS, ids=[f[0] for f in LINE_FORMATS])
def test_line_formats_giant_line(tmp_path: Path, fmt: str, head: bytes, tail: bytes) -> None:
    path = bomb(tmp_path / "line.txt.gz", head, b"x" * 64, b"\n" + tail)
    assert_error(run(path, fmt), path, "line longer than 64 MiB")


def test_blank_lines_cost_nothing(tmp_path: Path) -> None:
    path = bomb(tmp_path / "blank.txt.gz", b"a/b\nc/d\n", b"\n \n", b"e/f\n")
    result = run(path, "tf_node_order")
    assert result.get("events") == 3, result


def test_step_stats_text_blank_lines_keep_line_numbers(tmp_path: Path) -> None:
    """Squeezed blank lines still count in error positions."""
    tail = b'  node_stats { all_start_micros: "soon" }\n}\n'
    path = bomb(tmp_path / "ss.txt.gz", b"dev_stats {\n", b"\n", tail, gib=0.25)
    result = run(path, "tf_step_stats")
    assert_error(result, path)
    expected_line = 1 + int(0.25 * 1024) * MIB + 1
    assert result["position"].startswith(f"line {expected_line},"), result


def test_many_lines_run_out_of_memory_as_a_profview_error(tmp_path: Path) -> None:
    """Real content that does not fit (here: memory capped at +100 MB) ends in
    a ProfviewError naming the file and how far the reading got; with +300 MB
    the columns (~8 bytes a line) reach limits.MAX_TEXT_RECORDS first, and the
    line past it is refused."""
    lines = b"".join(b"scope%d/op_%d\n" % (i % 7, i) for i in range(256))
    path = bomb(tmp_path / "many.txt.gz", b"", lines, b"", gib=0.5)
    result = run(path, "tf_node_order", b"a/b\n", limit_mb=100)
    assert_error(result, path, "ran out of memory", "decompressed bytes read")
    result = run(path, "tf_node_order", b"a/b\n", limit_mb=300)
    assert_error(result, path, "more than 20,000,000 lines")
    assert result["position"] == "line 20000001", result


# -- PyTorch memory timeline (JSON), CUDA snapshot (pickle), XSpace (binary protobuf) --------

TIMELINE_WARM = "[[1], [[0, 1, 0, 0, 0, 0, 0, 0, 0]]]"


def test_torch_memory_timeline_whitespace_costs_nothing(tmp_path: Path) -> None:
    tail = b"2000], [[0, 1, 0, 0, 0, 0, 0, 0, 0], [0, 3, 0, 0, 0, 0, 0, 0, 0]]]"
    path = bomb(tmp_path / "timeline.json.gz", b"[[1000, ", b" \n\t\r\n", tail)
    result = run(path, warm=TIMELINE_WARM.encode())
    assert "error" not in result and result["memory"] > 0, result


def test_torch_memory_timeline_giant_string(tmp_path: Path) -> None:
    path = bomb(tmp_path / "timeline.json.gz", b'[[1000, "', b"abcdefgh", b'"], [[0]]]')
    result = run(path, "torch_memory_timeline", TIMELINE_WARM.encode())
    assert_error(result, path, "string longer than 64 MiB")
    assert result["position"] == f"byte {len(b'[[1000, ')}", result


def _snapshot_head(opcode_and_length: bytes) -> bytes:
    """A protocol-2 pickle ``{"segments": <value>`` up to the value's header."""
    return b"\x80\x02}q\x00X\x08\x00\x00\x00segmentsq\x01" + opcode_and_length


@pytest.mark.parametrize(("opcode", "length"), [(b"X", b"\xf0\xff\xff\xff"),  # BINUNICODE: 4 GiB
                                                (b"\x8d", (1 << 40).to_bytes(8, "little"))])  # BINUNICODE8
def test_torch_snapshot_giant_string(tmp_path: Path, opcode: bytes, length: bytes) -> None:
    """A declared multi-GiB string is refused before anything is read or allocated."""
    head = _snapshot_head(opcode + length)
    path = bomb(tmp_path / "snap.pickle.gz", head, b"abcdefgh", b"")
    result = run(path, "torch_cuda_snapshot")
    assert_error(result, path, "more than 64 MiB")
    assert result["position"] == f"byte {len(head)}", result


def test_torch_snapshot_filler_is_not_read_whole(tmp_path: Path) -> None:
    """Bytes that are no pickle opcodes stop the (streamed) unpickler at once."""
    path = bomb(tmp_path / "snap.pickle.gz", _snapshot_head(b""), b" \n", b"")
    result = run(path, "torch_cuda_snapshot")
    assert_error(result, path, "corrupt pickle")
    assert result["position"].startswith("byte "), result


def test_torch_snapshot_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    from jupyter_profview import load
    from jupyter_profview.errors import ProfviewError
    from jupyter_profview.formats import torch_snapshot

    data = pickle.dumps({"segments": [], "device_traces": [["x" * 1000] * 3000]}, protocol=4)
    monkeypatch.setattr(torch_snapshot, "MAX_SNAPSHOT", len(data) // 2)
    with pytest.raises(ProfviewError, match="expands to more than") as info:
        load(gzip.compress(data), format="torch_cuda_snapshot")
    assert info.value.position.startswith("after ")


def _xplane_head(plane_size: int) -> bytes:
    """XSpace field 1 (a plane) of ``plane_size`` bytes starting with its name."""
    size, varint = plane_size, b""
    while size >= 0x80:
        varint += bytes([size & 0x7F | 0x80])
        size >>= 7
    return b"\x0a" + varint + bytes([size]) + b"\x12\x09/host:CPU"


def test_xspace_plane_of_filler_is_refused(tmp_path: Path) -> None:
    """A plane declared 2 GiB long and made of gzip filler: stopped early."""
    path = bomb(tmp_path / "bomb.xplane.pb.gz", _xplane_head(2**31 - 2), b"abcdefgh", b"")
    result = run(path, "xspace")
    assert_error(result, path, "gzip bomb")
    assert result["position"] == "byte 0", result


@pytest.mark.parametrize(("filler", "words"), [(b" ", "not length-delimited"),
                                               (b"x", "top-level fields XSpace does not define")])
def test_xspace_filler_after_a_plane(tmp_path: Path, filler: bytes, words: str) -> None:
    plane = _xplane_head(11)[:-11] + b"\x12\x09/host:CPU"
    path = bomb(tmp_path / "bomb.xplane.pb.gz", plane, filler, b"")
    assert_error(run(path, "xspace"), path, words)


def test_corrupt_gzip_header_has_a_position(tmp_path: Path) -> None:
    from jupyter_profview import load
    from jupyter_profview.errors import ProfviewError

    path = tmp_path / "bad.json.gz"
    path.write_bytes(b"\x1f\x8b\x09\x00" + b"\x00" * 40)
    with pytest.raises(ProfviewError) as info:
        load(path)
    assert info.value.position == "gzip header"


def test_too_deep_protobuf_text_nesting_has_a_position() -> None:
    from jupyter_profview import load
    from jupyter_profview.errors import ProfviewError

    text = b"step_stats {\n" + b"dev_stats {\n" * 3000  # unknown fields nest without limit
    with pytest.raises(ProfviewError, match="nesting too deep") as info:
        load(text, format="tf_step_stats")
    assert info.value.position == "line 3001 (nesting depth 3001)"
