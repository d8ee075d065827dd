"""Issue 25, items 3-5: crafted files for every JSON and pickle loader are refused with a
ProfviewError naming the file, in bounded memory, never a raw exception or a crash.

Each load runs in a fresh interpreter (``tests/test_bombs.py``'s ``run``: peak RSS growth after
a warm-up, optionally under an address-space limit), so a SIGSEGV or a MemoryError fails the
test.  The bombs are generated here, from the filler the issue names."""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_profview import load
from jupyter_profview.errors import ProfviewError
from tests.test_bombs import CHROME_WARM, assert_error, bomb, run

MIB = 1 << 20


def _snapshot(body: bytes) -> bytes:
    """A protocol-4 pickle ``{"segments": <body>`` (the head ``sniff`` knows), not closed."""
    return b"\x80\x04}\x94\x8c\x08segments\x94" + body


# -- 4: gzip bombs of JSON values ---------------------------------------------------------------
@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_chrome_bomb_of_empty_objects(tmp_path: Path, native: bool) -> None:
    path = bomb(tmp_path / "objs.json.gz", b'{"traceEvents": [{}', b",{} ", b"]}", gib=0.5)
    result = run(path, warm=CHROME_WARM.encode(), native=native)
    assert_error(result, path, "JSON values from", "gzip bomb")
    # refused within the first chunks (it grew to 4 GB before); the native scanner's read-ahead
    # and column arrays cost more than the Python decoder's squeezed text
    assert result["growth_mb"] < (300 if native else 200), result
    assert int(result["position"].split()[1].replace(",", "")) < 64 * MIB, result


def test_torch_memory_bomb_of_empty_arrays(tmp_path: Path) -> None:
    path = bomb(tmp_path / "mem.raw.json.gz", b"[[1, 2, 3, 4],", b"[], ", b"[]]", gib=0.25)
    result = run(path, "torch_memory_timeline", b"[[1, 2, 3, 4]]")
    assert_error(result, path, "JSON values from")
    assert result["growth_mb"] < 200, result


def test_megengine_bomb_under_a_memory_limit_is_an_error_not_a_crash(tmp_path: Path) -> None:
    """orjson crashed (SIGSEGV) here under RLIMIT_AS; ``run`` fails on any non-zero exit."""
    path = bomb(tmp_path / "mge.json.gz", b'{"profiler": [{}', b",{} ", b"]}", gib=0.25)
    result = run(path, "megengine_json", b"{}", limit_mb=1500)
    assert_error(result, path, "JSON values from")


def test_megengine_uncompressed_many_objects_under_a_memory_limit(tmp_path: Path) -> None:
    """No budget applies to an uncompressed file (its size bounds it): the parser must fail as
    a ProfviewError (MemoryError turned into one by ``load``), not kill the process."""
    path = tmp_path / "mge.json"
    path.write_bytes(b'{"profiler": [{}' + b",{}" * (40 * MIB) + b"]}")
    result = _limited(path, "megengine_json")
    assert result["error"].startswith(f"{path}: "), result


def test_chrome_python_decoder_checks_orjsons_allocation(tmp_path: Path) -> None:
    """The Python decoder (``PROFVIEW_NATIVE=0``, and every input the native one leaves to it)
    parses with orjson only when the values fit in what the process may still allocate."""
    path = tmp_path / "objs.json"
    path.write_bytes(b'{"traceEvents": [{}' + b",{}" * (20 * MIB) + b"]}")
    result = _limited(path, "chrome", native="0")
    assert result["error"].startswith(f"{path}: the whole document: "), result
    assert "JSON values would need" in result["error"], result


def _limited(path: Path, fmt: str, native: str = "1") -> dict:
    """``profview.load(path, format=fmt)`` in a subprocess with 1000 MB of address space left."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD_RAW, str(path), fmt], capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "PROFVIEW_NATIVE": native})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


_CHILD_RAW = """
import json, os, resource, sys
import jupyter_profview as profview
vm = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
resource.setrlimit(resource.RLIMIT_AS, (vm + 1000 * 2**20, resource.RLIM_INFINITY))
try:
    profview.load(sys.argv[1], format=sys.argv[2])
    print(json.dumps({"error": ""}))
except profview.ProfviewError as exc:
    print(json.dumps({"error": str(exc)}))
"""


# -- 3: pickle bombs --------------------------------------------------------------------------
def test_snapshot_long_binput_does_not_allocate_a_memo_array(tmp_path: Path) -> None:
    """35 bytes: ``LONG_BINPUT 2**26`` made the C unpickler allocate a 2**26-slot memo (1.1 GB)."""
    data = _snapshot(b"]r" + (2**26).to_bytes(4, "little") + b"s.")
    data += b"\x00" * (35 - len(data))
    path = tmp_path / "memo.pickle"
    path.write_bytes(data)
    result = run(path, "torch_cuda_snapshot")
    assert result["growth_mb"] < 50, result


@pytest.mark.parametrize("gz", [False, True], ids=["4MB", "gzip-256MiB"])
def test_snapshot_set_opcodes_are_refused(tmp_path: Path, gz: bool) -> None:
    """``EMPTY_SET`` repeated: each one byte was a 216-byte set (4 MB -> ~1 GB)."""
    head = _snapshot(b"")
    if gz:
        path = bomb(tmp_path / "sets.pickle.gz", head, pickle.EMPTY_SET, b"", gib=0.25)
    else:
        path = tmp_path / "sets.pickle"
        path.write_bytes(head + pickle.EMPTY_SET * (4 * MIB))
    result = run(path, "torch_cuda_snapshot")
    assert_error(result, path, "refused: opcode EMPTY_SET")
    assert result["position"] == f"byte {len(head) + 1}", result


def test_snapshot_object_budget(tmp_path: Path) -> None:
    """``EMPTY_LIST`` (allowed) repeated: refused past the opcode budget of its stored size."""
    path = bomb(tmp_path / "lists.pickle.gz", _snapshot(b""), pickle.EMPTY_LIST, b"", gib=0.25)
    result = run(path, "torch_cuda_snapshot")
    assert_error(result, path, "pickle opcodes for its size")
    # 16 opcodes per stored byte (~4.2M empty lists here) are built before the refusal
    assert result["growth_mb"] < 400, result
    assert int(result["position"].split()[1]) < 5 * MIB, result  # of 256 MiB


# -- 5: raw exceptions -> ProfviewError ---------------------------------------------------------
def _nested(depth: int) -> bytes:
    """``{"segments": [], "device_traces": [[{"action": [[[...]]]}]]}`` nested ``depth`` deep."""
    body = b"]\x94" + b"\x8c\x0ddevice_traces\x94]\x94]\x94}\x94\x8c\x06action\x94"
    body += (b"]\x94" * depth) + (b"a" * (depth - 1)) + b"s" + b"a" + b"a" + b"u."
    return b"\x80\x04}\x94(\x8c\x08segments\x94" + body


def test_snapshot_deep_nesting_is_a_profview_error() -> None:
    shallow = pickle.loads(_nested(3))  # the crafted bytes are the structure meant
    assert shallow["device_traces"][0][0]["action"] == [[[]]]
    with pytest.raises(ProfviewError, match="nested more than 64 deep"):
        load(_nested(10**6), format="torch_cuda_snapshot")


def test_snapshot_cycle_is_a_profview_error() -> None:
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(ProfviewError, match="nested more than"):
        load(pickle.dumps({"segments": [], "device_traces": [cyclic]}, protocol=4),
             format="torch_cuda_snapshot")


@pytest.mark.parametrize("protocol", [0, 4])
def test_snapshot_5000_digit_int_is_a_profview_error(protocol: int) -> None:
    big = 12345678901234567890123
    data = pickle.dumps({"segments": [], "device_traces": [[{"action": "alloc", "size": big}]]},
                        protocol=protocol)
    if protocol == 0:  # LONG as decimal text
        data = data.replace(str(big).encode(), b"1" + b"0" * 5000)
    else:  # LONG1 of 10 bytes -> LONG4 of 2,077 bytes (10**5000)
        small = big.to_bytes(10, "little")
        huge = (10**5000).to_bytes(2077, "little")
        data = data.replace(pickle.LONG1 + b"\x0a" + small,
                            pickle.LONG4 + len(huge).to_bytes(4, "little") + huge)
    assert huge_int_in(data)
    with pytest.raises(ProfviewError, match="integer of"):
        load(data, format="torch_cuda_snapshot")


def huge_int_in(data: bytes) -> bool:
    """The crafted pickle holds the 5,000-digit integer (read with Python's own unpickler, digit
    limit lifted)."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return bool(pickle.loads(data)["device_traces"][0][0]["size"] == 10**5000)
    finally:
        sys.set_int_max_str_digits(limit)


def test_torch_memory_5001_digit_int_is_a_profview_error() -> None:
    with pytest.raises(ProfviewError, match="more than 40 digits"):
        load(b"[[1" + b"0" * 5000 + b", 2, 3, 4]]", format="torch_memory_timeline")


@pytest.mark.parametrize("native", ["1", "0"])
def test_chrome_5001_digit_ts_is_a_profview_error(native: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", native)
    doc = b'[{"ph": "X", "name": "a", "ts": 1' + b"0" * 5000 + b', "dur": 1}]'
    with pytest.raises(ProfviewError, match="'ts'.*out of range"):
        load(doc, format="chrome")
    with pytest.raises(ProfviewError, match="'ts'.*out of range"):
        load(gzip.compress(doc), format="chrome")


# -- what the fuzz campaign found (benchmarks/fuzz.py): each was a raw exception -----------------
EXAMPLES = Path(__file__).resolve().parents[1] / "jupyter_profview" / "examples"


def test_fuzz_found_node_shapes_huge_numbers() -> None:
    line = (EXAMPLES / "001_11cf062b29f34b60.txt").read_bytes().splitlines()[0]
    assert line.endswith(b", GPU, 0") and b"(int32 4x1)" in line
    load(line + b"\n", format="tf_node_shapes")  # the line as it is loads
    with pytest.raises(ProfviewError, match="device index"):
        load(line[:-1] + b"1" * 4400 + b"\n", format="tf_node_shapes")
    with pytest.raises(ProfviewError, match="dimension of more than 40 digits"):
        load(line.replace(b"(int32 4x1)", b"(int32 4x" + b"1" * 4800 + b")") + b"\n", format="tf_node_shapes")


def test_fuzz_found_chrome_exponent_past_decimals_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "0")
    with pytest.raises(ProfviewError, match="'ts'.*out of range"):
        load(b'[{"ph": "X", "name": "a", "ts": 17001e999999999999000000000050, "dur": 1}]', format="chrome")


def test_fuzz_found_torch_memory_time_overflowing_ns() -> None:
    sizes = "[0, 1, 2, 3, 4, 5, 6, 7, 8]"
    load(f"[[1000, 2000], [{sizes}, {sizes}]]".encode(), format="torch_memory_timeline")
    with pytest.raises(ProfviewError, match=r"times\[1\] is beyond"):
        load(f"[[1000, {2**61}], [{sizes}, {sizes}]]".encode(), format="torch_memory_timeline")


def test_fuzz_found_megengine_lone_surrogate() -> None:
    doc = json.loads((EXAMPLES / "004_825e28a4f520ddc2.txt").read_text())
    first = next(iter(doc["graph_exec"]["operator"].values()))
    first["name"] = "conv\ud800"
    data = json.dumps(doc).encode()  # ensure_ascii: the surrogate as the escape \ud800
    assert b"\\ud800" in data
    with pytest.raises(ProfviewError, match="lone UTF-16 surrogate"):
        load(data, format="megengine_json")


NUMBERS = [b"1" * 20, b"1" * 40, b"1" * 400, b"-" + b"1" * 40, b"1e400", b"-1e400", b"1e-400", b"-0",
           b"1.5e308", b"0.1", b"1" * 5001, b"17001e999999999999000000000050"]


@pytest.mark.parametrize("number", NUMBERS, ids=[n[:12].decode() + f"({len(n)})" for n in NUMBERS])
@pytest.mark.parametrize("where", ["arg", "ts", "dur", "top", "pid"])
def test_both_chrome_decoders_agree_on_numbers(number: bytes, where: str) -> None:
    """5: the native decoder and the Python one accept the same numbers with the same columns, or
    both refuse (the native one returning None hands the input to the Python one, as load does)."""
    from jupyter_profview.formats.chrome.decode import decode_python, normalized
    from jupyter_profview.formats.chrome.native import decode_chrome
    from jupyter_profview.sources import Source

    fields = {"arg": b'"ts": 1, "dur": 1, "args": {"a": %s}', "ts": b'"ts": %s, "dur": 1',
              "dur": b'"ts": 1, "dur": %s', "pid": b'"ts": 1, "dur": 1, "pid": %s',
              "top": b'"ts": 1, "dur": 1'}
    body = fields[where] % number if where != "top" else fields[where]
    event = b'{"ph": "X", "name": "a", ' + body + b"}"
    doc = b'{"traceEvents": [' + event + b"]" + (b', "x": ' + number if where == "top" else b"") + b"}"
    outcomes = []
    for decode in (decode_python, decode_chrome):
        try:
            outcomes.append(decode(Source(doc)))
        except ProfviewError:
            outcomes.append("refused")
    py, native = outcomes
    native = py if native is None else native
    assert (py == "refused") == (native == "refused"), (py, native)
    if py != "refused":
        assert normalized(py) == normalized(native)


def test_fuzz_found_megengine_param_integer_past_64_bits() -> None:
    doc = json.loads((EXAMPLES / "004_825e28a4f520ddc2.txt").read_text())
    footprint = next(iter(doc["profiler"]["opr_footprint"].values()))
    footprint["param"] = {"pad": 10**30}
    trace = load(json.dumps(doc).encode(), format="megengine_json")
    assert len(trace.events) > 0


def test_load_many_walks_a_directory_by_the_servers_rule(tmp_path: Path) -> None:
    """The files ``load_many(directory)`` takes: regular, inside the directory, not hidden (the
    rule of ``sources.confine``); the others are named in a warning, never opened."""
    import os
    import shutil

    from jupyter_profview.ranks.discover import find_files
    from tests.server_helpers import RANK_FILES

    run = tmp_path / "run"
    run.mkdir()
    for f in RANK_FILES[:2]:
        shutil.copy(f, run / f.name)
    (tmp_path / "outside.json").write_text("{}")
    (run / "rank-5.json").symlink_to(tmp_path / "outside.json")
    os.mkfifo(run / "rank-6.json")
    (run / ".rank-7.json").write_text("{}")
    with pytest.warns(UserWarning, match="skipped") as record:
        files = find_files(run)
    assert [f.name for f in files] == sorted(f.name for f in RANK_FILES[:2])
    text = str(record[0].message)
    for note in ("rank-5.json: is outside the server root", "rank-6.json: is not a regular file",
                 ".rank-7.json: is hidden"):
        assert note in text, text
