"""Generate a large XSpace profile from a real small one: every line's events repeated K times.

    python benchmarks/make_xspace.py [--repeat 400] [--hostile] [--source PATH] [--out PATH]

The source (default: the package's TensorFlow/Keras CPU profile,
``examples/xspace/tf_keras_logs/.../vm.xplane.pb``, 688 events, recorded with
``tf.keras.callbacks.TensorBoard(profile_batch=...)``) keeps its planes,
metadata and stats; each line's events are written K times, the k-th copy
shifted by k times the line's span (so copies follow one another, as more
steps of the same run would).  The TraceMe context ids of the copies (the
``_p`` / ``_c`` stats that link a producer to its consumers) are made unique
per copy (``+ k * 2**40``), as a longer real run would have them.  With
``--hostile`` they are kept: every copy of a producer has the same id as every
copy of its consumers (a merged or hostile file), the case a loader that
links all pairs pays for quadratically.

Written to ``benchmarks/data/xspace_<K>x[_hostile].xplane.pb``; deterministic.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = ROOT / "jupyter_profview" / "examples" / "xspace" / "tf_keras_logs" / "plugins" / "profile" / \
    "2026_11_23_17_20_45" / "vm.xplane.pb"
CONTEXT_IDS = ("_p", "_c")


def repeat(data: bytes, k: int, hostile: bool) -> tuple[bytes, int]:
    """The XSpace ``data`` with every line's events repeated ``k`` times; (bytes, events)."""
    from jupyter_profview.formats.xspace_proto import message_class

    space = message_class("XSpace")()
    space.ParseFromString(data)
    events = 0
    for plane in space.planes:
        ids = {entry.key for entry in plane.stat_metadata if entry.value.name in CONTEXT_IDS}
        for line in plane.lines:
            originals = list(line.events)
            if not originals:
                continue
            span = max(e.offset_ps + e.duration_ps for e in originals) - min(e.offset_ps for e in originals)
            step = span + 1_000_000  # 1 µs between copies
            del line.events[:]
            for copy in range(k):
                for event in originals:
                    new = line.events.add()
                    new.CopyFrom(event)
                    new.offset_ps = event.offset_ps + copy * step
                    if not hostile:
                        for stat in new.stats:
                            if stat.metadata_id in ids and stat.WhichOneof("value") in ("uint64_value",
                                                                                          "int64_value"):
                                field = stat.WhichOneof("value")
                                setattr(stat, field, getattr(stat, field) + copy * 2**40)
            line.duration_ps = k * step
            events += len(line.events)
    return space.SerializeToString(), events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=400)
    parser.add_argument("--hostile", action="store_true")
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or HERE / "data" / f"xspace_{args.repeat}x{'_hostile' if args.hostile else ''}.xplane.pb"
    raw = args.source.read_bytes()
    data, events = repeat(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, args.repeat, args.hostile)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    print(f"{out}: {events:,} events, {len(data) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
