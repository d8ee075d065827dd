"""Write a big Perfetto trace by repeating a recorded one (default: the Chromium fixture) until
it reaches a size, each copy shifted in time after the previous one, so that the copies follow
each other on the same tracks as one long recording would:

    python benchmarks/make_perfetto.py benchmarks/data/big.pftrace --mb 100

Clock snapshots move every builtin clock by the copy's offset, and packets stamped in a builtin
clock move with them; packets in a sequence-scoped incremental clock (Chrome's us deltas) are
anchored by their sequence's snapshot and are copied byte for byte.  Output: uncompressed
(``benchmarks/data/`` is gitignored).
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path
from typing import Any

from jupyter_profview.formats.perfetto.schema import message_class

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "chromium_perfetto.pftrace.gz"


def _frame(packet: bytes) -> bytes:
    size = len(packet)
    head = bytearray([0x0A])
    while True:
        byte = size & 0x7F
        size >>= 7
        head.append(byte | (0x80 if size else 0))
        if not size:
            return bytes(head) + packet


def _plan(raw: list[bytes]) -> tuple[list[Any], int]:
    """Per packet: None (copy as is) or its parsed message (to shift); the recording's span (ns)."""
    packet_class = message_class("TracePacket")
    defaults: dict[int, int] = {}
    plan: list[Any] = []
    lo, hi = None, None
    for body in raw:
        p = packet_class.FromString(body)
        seq = p.trusted_packet_sequence_id
        if p.sequence_flags & 1 or p.incremental_state_cleared:
            defaults.pop(seq, None)
        if p.HasField("trace_packet_defaults"):
            defaults[seq] = p.trace_packet_defaults.timestamp_clock_id
        clock = p.timestamp_clock_id or defaults.get(seq, 0)
        if p.HasField("clock_snapshot"):
            plan.append(p)
        elif p.HasField("timestamp") and not 64 <= clock <= 127:
            plan.append(p)
            lo = p.timestamp if lo is None else min(lo, p.timestamp)
            hi = p.timestamp if hi is None else max(hi, p.timestamp)
        else:
            plan.append(None)
    return plan, (hi or 0) - (lo or 0)


def _shifted(p: Any, offset: int) -> bytes:
    q = type(p)()
    q.CopyFrom(p)
    if q.HasField("clock_snapshot"):
        for clock in q.clock_snapshot.clocks:
            if not 64 <= clock.clock_id <= 127:
                clock.timestamp += offset // (clock.unit_multiplier_ns or 1)
    else:
        q.timestamp += offset
    return bytes(q.SerializeToString())


def make(out: Path, megabytes: float, source: Path = FIXTURE) -> int:
    data = source.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    raw = list(message_class("TraceRaw").FromString(data).packet)
    plan, span = _plan(raw)
    step = span + 1_000_000_000
    target = int(megabytes * 1e6)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = copies = 0
    with out.open("wb") as f:
        while written < target:
            offset = copies * step
            parts = [_frame(body if p is None or not offset else _shifted(p, offset))
                     for body, p in zip(raw, plan, strict=True)]
            block = b"".join(parts)
            f.write(block)
            written += len(block)
            copies += 1
    return copies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--source", type=Path, default=FIXTURE)
    args = parser.parse_args()
    copies = make(args.out, args.mb, args.source)
    print(f"{args.out}: {copies} copies, {args.out.stat().st_size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
