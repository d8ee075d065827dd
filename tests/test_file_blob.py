"""Args read back from an uncompressed trace file (``formats/file_blob.py``).

The native scanner leaves the args of an uncompressed file in the file; the
expected values are the args of the same bytes loaded from memory (where the
args blob is held), and of the raw JSON read here with ``json``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

import jupyter_profview as profview
from jupyter_profview import _native
from jupyter_profview.errors import ProfviewError
from jupyter_profview.formats.file_blob import FileBlob

HTA = Path(__file__).parent / "data" / "hta"
native_only = pytest.mark.skipif(not _native.available(), reason="native library not built")


@pytest.fixture
def kineto(tmp_path: Path) -> Path:
    """A real A100 + NCCL Kineto trace, uncompressed, with every kind of args (nested too)."""
    path = tmp_path / "trace.json"
    path.write_bytes(gzip.decompress((HTA / "nccl_parser_config_nccl_data.json.gz").read_bytes()))
    return path


def args_of(trace: profview.Trace) -> list[dict[str, object]]:
    return [trace.args(int(i)) for i in trace.events.index]


@native_only
def test_args_stay_in_the_file_and_equal_the_in_memory_ones(kineto: Path) -> None:
    from_file = profview.load(kineto)
    from_memory = profview.load(kineto.read_bytes())
    assert from_file.metadata["decoder"] == from_memory.metadata["decoder"] == "native"
    assert isinstance(from_file._args.blob, FileBlob)  # type: ignore[attr-defined]
    assert not isinstance(from_memory._args.blob, FileBlob)  # type: ignore[attr-defined]
    assert args_of(from_file) == args_of(from_memory)
    # the raw file, read here: every X event's args, in file order of (name, ts)
    raw = json.loads(kineto.read_text(), parse_float=Decimal)
    x = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    ev = from_file.events
    got: dict[tuple[str, int], list[dict[str, object]]] = defaultdict(list)
    for i, n, d in zip(ev.index, ev["name"], ev["dur"], strict=True):
        got[(str(n), int(d))].append(from_file.args(int(i)))
    checked = 0
    for e in x[::37]:
        end = int((Decimal(e["ts"]) + Decimal(e["dur"])) * 1000)
        key = (e["name"], end - int(Decimal(e["ts"]) * 1000))
        want = json.loads(json.dumps(e.get("args", {}), default=float))  # numbers as the parse gives them
        assert want in got[key], key
        checked += 1
    assert checked > 100
    # the searches of the blob read the file in pieces and answer as the parse does
    ids = ev.index.to_numpy()
    for key in ("External id", "correlation", "stream", "Sequence number"):
        assert np.array_equal(from_file.arg_numbers(ids, key), from_memory.arg_numbers(ids, key),
                              equal_nan=True)


@native_only
def test_a_file_replaced_keeps_the_loaded_args(kineto: Path, tmp_path: Path) -> None:
    trace = profview.load(kineto)
    before = args_of(trace)
    other = tmp_path / "other.json"
    shutil.copy(HTA.parent / "torch_mlp_train.json", other)
    os.replace(other, kineto)  # how profilers write: a new file under the old name
    assert args_of(trace) == before  # the loaded file is still open


@native_only
def test_a_file_rewritten_in_place_is_an_error_not_wrong_args(kineto: Path) -> None:
    trace = profview.load(kineto)
    some = next(int(i) for i in trace.events.index if trace.args(int(i)))
    with open(kineto, "r+b") as f:
        f.truncate(kineto.stat().st_size // 2)
    with pytest.raises(ProfviewError) as info:
        trace.args(some)
    assert "changed since it was loaded" in str(info.value) and str(kineto) in str(info.value)


@native_only
def test_gzip_and_bytes_keep_the_blob_in_memory(tmp_path: Path) -> None:
    path = HTA / "trace_compare_base_base.json.gz"
    for source in (path, path.read_bytes()):
        trace = profview.load(source)
        assert not isinstance(trace._args.blob, FileBlob)  # type: ignore[attr-defined]
