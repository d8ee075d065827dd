"""Damaged Perfetto input (the recorded Chromium trace cut anywhere or with bytes overwritten):
a Trace with the loss counted, or a ProfviewError; never another exception."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

import jupyter_profview as profview
from jupyter_profview.errors import ProfviewError

DATA = (Path(__file__).parent / "data" / "chromium_perfetto.pftrace.gz").read_bytes()
HEAD = gzip.decompress(DATA)[:60_000]  # the first ~1.4k packets: descriptors, interning, clocks


def _load(data: bytes) -> None:
    try:
        trace = profview.load(data, format="perfetto")
    except ProfviewError:
        return
    assert trace.quality.unaccounted == 0
    trace.validate()


@pytest.mark.parametrize("seed", range(12))
def test_cut_anywhere(seed: int) -> None:
    rng = random.Random(seed)
    _load(HEAD[:rng.randrange(1, len(HEAD))])


@pytest.mark.parametrize("seed", range(12))
def test_bytes_overwritten(seed: int) -> None:
    rng = random.Random(seed)
    data = bytearray(HEAD)
    for _ in range(rng.choice((1, 5, 50))):
        data[rng.randrange(len(data))] = rng.randrange(256)
    _load(bytes(data))


def test_huge_lengths_and_timestamps() -> None:
    _load(b"\x0a\xff\xff\xff\xff\x0f" + b"\x00" * 10)  # a packet claiming 4 GiB
    # a timestamp past int64 on a track event: refused by name, not an OverflowError
    _load(b"\x0a\x0f\x40\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x5a\x02\x48\x03")
