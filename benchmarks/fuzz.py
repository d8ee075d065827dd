"""Fuzz campaign of every parser (issue 25): hostile inputs made by hypothesis from small real
seeds, each one loaded; anything but a result or a ProfviewError is a failure.

    nice -n 10 .venv/bin/python benchmarks/fuzz.py --cases 100000 --jobs 9   # every parser
    .venv/bin/python benchmarks/fuzz.py --cases 300 --parsers chrome xspace   # a short run

Per parser: ``cases`` inputs, each a seed (a small real trace of that format, from
``jupyter_profview/examples`` and ``tests/data``) put through 1-6 mutations (byte flips,
JSON / protobuf / pickle tokens, huge numbers, deletions, duplications,
splices with another seed, truncation, a gzip wrapper).  Hypothesis draws one seed per block of
:data:`BLOCK` cases and the block's mutations come from ``random.Random(seed)``: its engine costs
far more than a parser on a small input, so one example per case would fuzz ~10x less.  Counted:

* raw exceptions: anything a loader raises that is not a ``ProfviewError`` (a MemoryError too:
  memory must stay bounded), with the first input of each kind saved under ``--out``;
* divergences (Chrome only): the native decoder and the Python one disagree -- one accepts what
  the other refuses, or both accept with different columns (``decode.normalized``); the native
  decoder returning None (it leaves the input to the Python one) is not a divergence;
* peak RSS of the process (``ru_maxrss``), run under an address-space limit (``--limit-mb``).

Prints one JSON line per parser and a summary; exits 1 on any raw exception or divergence.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import random
import resource
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from jupyter_profview.errors import ProfviewError  # noqa: E402
from jupyter_profview.sources import Source  # noqa: E402

EXAMPLES = ROOT / "jupyter_profview" / "examples"
DATA = ROOT / "tests" / "data"
BATCH = 2000  # hypothesis examples per run of one test function (its memory stays small)

#: tokens that mean something to one of the parsers
TOKENS = [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u0000", b"\\ud800", b"null", b"true",
          b"-", b"1e400", b"-1e400", b"1" * 40, b"9" * 25, b"0.0000001", b'"ts"', b'"dur"', b'"ph"',
          b'"X"', b'"B"', b'"E"', b'"s"', b'"f"', b'"args"', b'"id"', b'"id2"', b'"pid"', b"\x00", b"\xff",
          b"\xc3\x28", b"\n", b" " * 64, b"\x80\x04", b"]", b"}", b"(", b"\x94", b"\x8a\x08", b"\x8b",
          b"q\x00", b"r\xff\xff\xff\x7f", b"\x0a\x81\x80\x80\x80\x10", b"\x12\xff\xff\xff\xff\x0f",
          b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", b"step_stats {", b"dev_stats {", b"node_stats {",
          b"}\n", b"/", b", ", b"(float32 4x1)", b"^", b"-1"]


# -- seeds: small real traces of each format ---------------------------------------------------
def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _lines(path: Path, n: int) -> bytes:
    return b"".join(_read(path).splitlines(keepends=True)[:n])


def _step_stats() -> list[bytes]:
    from google.protobuf import text_format

    from jupyter_profview.formats.step_stats_proto import message_class

    msg = message_class("RunMetadata")()
    msg.ParseFromString(_read(DATA / "002_run_metadata.pb"))
    for dev in msg.step_stats.dev_stats:
        del dev.node_stats[4:]
    del msg.step_stats.dev_stats[2:]
    return [msg.SerializeToString(), msg.step_stats.SerializeToString(),
            text_format.MessageToString(msg).encode()]


def _xspace() -> list[bytes]:
    from jupyter_profview.formats.xspace_proto import message_class

    space = message_class("XSpace")()
    space.ParseFromString(_read(EXAMPLES / "xspace" / "jax_cpu.xplane.pb.gz"))
    del space.planes[3:]
    for plane in space.planes:
        del plane.lines[3:]
        for line in plane.lines:
            del line.events[6:]
    return [space.SerializeToString()]


def _megengine() -> list[bytes]:
    doc = json.loads(_read(EXAMPLES / "004_825e28a4f520ddc2.txt"))
    ops = list(doc["graph_exec"]["operator"])[:6]
    keep = set(ops)
    ge = doc["graph_exec"]
    ge["operator"] = {k: ge["operator"][k] for k in ops}
    ge["comp_seq"] = [k for k in ge.get("comp_seq", []) if str(k) in keep][:6]
    used = {str(v) for k in ops for side in ("input", "output") for v in ge["operator"][k].get(side, [])}
    ge["var"] = {k: v for k, v in ge.get("var", {}).items() if k in used}
    ge["mem_chunk"] = dict(list(ge.get("mem_chunk", {}).items())[:4])
    for part in ("host", "device", "opr_footprint"):
        table = doc["profiler"].get(part, {})
        doc["profiler"][part] = {k: v for k, v in table.items() if k in keep}
    return [json.dumps(doc).encode()]


def _torch_memory() -> list[bytes]:
    series = json.loads(_read(EXAMPLES / "torch_memory" / "mlp_adam.memory.json"))
    raw = json.loads(_read(EXAMPLES / "torch_memory" / "mlp_adam.memory.raw.json.gz"))
    return [json.dumps([series[0][:12], series[1][:12]]).encode(), json.dumps(raw[:24]).encode()]


def _snapshot() -> list[bytes]:
    import pickle

    small = _read(EXAMPLES / "torch_memory" / "cuda_snapshot_synthetic.pickle")
    return [small, pickle.dumps(pickle.loads(small), protocol=2)]  # a protocol-2 variant (memo, no frames)


SEEDS: dict[str, Callable[[], list[bytes]]] = {
    "chrome": lambda: [_read(p) for p in sorted(DATA.glob("chrome_*.json"))]
    + [_read(DATA / "xprof_trace.json"), _read(DATA / "tf_timeline.json")],
    "xspace": _xspace,
    "tf_step_stats": _step_stats,
    "torch_memory_timeline": _torch_memory,
    "torch_cuda_snapshot": _snapshot,
    "megengine_json": _megengine,
    "chainer_graph": lambda: [_lines(EXAMPLES / "003_925085f7148f0ebf.txt", 10**6)],
    "tf_node_order": lambda: [_lines(EXAMPLES / "000_5bf2854c930b1b8f.txt", 40)],
    "tf_node_shapes": lambda: [_lines(EXAMPLES / "001_11cf062b29f34b60.txt", 40)],
}


# -- mutations ------------------------------------------------------------------------------------
def mutate(data: bytes, ops: list[tuple[int, int, int, int]], other: bytes, wrap: int) -> bytes:
    """Apply ``ops`` (kind, position, length / token, value) to ``data``."""
    buf = bytearray(data)
    for kind, a, b, c in ops:
        n = len(buf)
        pos = a % (n + 1)
        if kind == 0 and n:  # flip a byte
            buf[pos % n] ^= 1 << (c % 8)
        elif kind == 1:  # insert a token
            buf[pos:pos] = TOKENS[b % len(TOKENS)]
        elif kind == 2:  # delete a range
            del buf[pos : pos + 1 + b % 64]
        elif kind == 3 and n:  # duplicate a range (repetition: nesting, many records)
            piece = bytes(buf[pos : pos + 1 + b % 256])
            buf[pos:pos] = piece * (1 + c % 16)
        elif kind == 4:  # splice a piece of another seed of the same format
            start = b % (len(other) + 1)
            buf[pos:pos] = other[start : start + c % 512]
        elif kind == 5:  # truncate
            del buf[pos:]
        elif kind == 6:  # a number grown huge / negative / fractional
            digits = (b"1" * (1 + c % 5000), b"-" + b"9" * 30, b"0." + b"7" * (c % 40), b"1e" + b"9" * 12)
            buf[pos:pos] = digits[b % len(digits)]
        elif kind == 7 and n:  # a byte set to a random value
            buf[pos % n] = c % 256
    out = bytes(buf)
    if wrap == 1:
        out = gzip.compress(out, compresslevel=1)
    elif wrap == 2:  # a corrupt / truncated gzip
        packed = gzip.compress(out, compresslevel=1)
        out = packed[: max(2, len(packed) * (1 + wrap) // 4)]
    return out


BLOCK = 100  # cases per hypothesis example: its engine costs ~100x a parser's small input


def draw_case(rnd: random.Random, n_seeds: int) -> tuple[int, int, list[tuple[int, int, int, int]], int]:
    """One case's seed, splice partner, 1-6 mutations and wrapper, from ``rnd``."""
    ops = [(rnd.randrange(8), rnd.getrandbits(31), rnd.getrandbits(31), rnd.getrandbits(31))
           for _ in range(rnd.randint(1, 6))]
    wrap = rnd.choices((0, 1, 2), (18, 1, 1))[0]
    return rnd.randrange(n_seeds), rnd.randrange(n_seeds), ops, wrap


# -- one parser -----------------------------------------------------------------------------------
class Tally:
    def __init__(self, name: str, out: Path) -> None:
        self.name, self.out = name, out
        self.cases = self.accepted = self.refused = self.divergences = 0
        self.raw: Counter[str] = Counter()

    def failure(self, kind: str, data: bytes, detail: str) -> None:
        first = kind not in self.raw
        self.raw[kind] += 1
        if first:
            self.out.mkdir(parents=True, exist_ok=True)
            stem = self.out / f"{self.name}-{len(self.raw)}"
            stem.with_suffix(".bin").write_bytes(data)
            stem.with_suffix(".txt").write_text(detail)


def _load_format(name: str) -> Callable[[bytes], Any]:
    from jupyter_profview.formats import by_name

    fmt = by_name(name)
    return lambda data: fmt.load(Source(data, name="fuzz"))


def _chrome_case(tally: Tally, data: bytes) -> None:
    from jupyter_profview.formats.chrome.decode import decode_python, normalized
    from jupyter_profview.formats.chrome.native import decode_chrome

    results: list[Any] = []
    for decode in (decode_python, decode_chrome):
        try:
            results.append(decode(Source(data, name="fuzz")))
        except ProfviewError:
            results.append("refused")
        except BaseException as exc:  # noqa: BLE001 - counting them is the point
            if isinstance(exc, KeyboardInterrupt):
                raise
            tally.failure(f"{decode.__name__}: {type(exc).__name__}", data, traceback.format_exc())
            return
    py, native = results
    if native is None:  # left to the Python decoder
        native = py
    if (py == "refused") != (native == "refused"):
        tally.divergences += 1
        tally.failure(f"divergence: python {'refused' if py == 'refused' else 'accepted'}", data,
                      f"python: {py if py == 'refused' else 'columns'}; native: "
                      f"{native if native == 'refused' else 'columns'}")
    elif py != "refused" and normalized(py) != normalized(native):
        tally.divergences += 1
        tally.failure("divergence: different columns", data, "normalized columns differ")
    if py == "refused":
        tally.refused += 1
    else:
        tally.accepted += 1


def run_parser(name: str, cases: int, out: Path, seed: int, progress: bool = False) -> dict[str, Any]:
    """Fuzz parser ``name`` with ``cases`` inputs (in a process of its own: ``peak_rss_mb`` is
    that process's)."""
    seeds = SEEDS[name]()
    tally = Tally(name, out)
    load = None if name == "chrome" else _load_format(name)
    for s in seeds:  # every seed loads as it is: the mutations start from real, valid input
        if name == "chrome":
            from jupyter_profview.formats.chrome.decode import decode_python

            decode_python(Source(s, name="seed"))
        else:
            assert load is not None
            load(s)

    def one(data: bytes) -> None:
        tally.cases += 1
        if load is None:
            _chrome_case(tally, data)
            return
        try:
            load(data)
            tally.accepted += 1
        except ProfviewError:
            tally.refused += 1
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            tally.failure(type(exc).__name__, data, traceback.format_exc())

    began = time.perf_counter()
    batch = 0

    def report() -> dict[str, Any]:
        return {"parser": name, "cases": tally.cases, "accepted": tally.accepted, "refused": tally.refused,
                "raw_exceptions": sum(tally.raw.values()), "raw_kinds": dict(tally.raw),
                "divergences": tally.divergences, "seconds": round(time.perf_counter() - began, 1),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}

    while tally.cases < cases:
        n = -(-min(BATCH, cases - tally.cases) // BLOCK)

        @settings(max_examples=n, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(st.integers(0, 2**63))
        def case(block_seed: int) -> None:
            rnd = random.Random(block_seed)
            for _ in range(min(BLOCK, cases - tally.cases)):
                i, j, ops, wrap = draw_case(rnd, len(seeds))
                one(mutate(seeds[i], ops, seeds[j], wrap))

        before = tally.cases
        # each batch a different hypothesis seed: derandomised runs would repeat themselves
        case._hypothesis_internal_use_seed = seed * 1_000_003 + batch  # type: ignore[attr-defined]
        case()
        batch += 1
        if progress:
            print(json.dumps({"progress": report()}), file=sys.stderr, flush=True)
        if tally.cases == before:  # hypothesis found nothing new to try
            break
    return report()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000, help="inputs per parser")
    parser.add_argument("--parsers", nargs="*", default=list(SEEDS), choices=list(SEEDS))
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--limit-mb", type=int, default=3000, help="address-space limit (0: none)")
    parser.add_argument("--progress", action="store_true", help="a JSON line on stderr per batch")
    parser.add_argument("--jobs", type=int, default=1, help="parsers fuzzed at once (one process each)")
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"), help="first input of each failure")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.limit_mb:
        resource.setrlimit(resource.RLIMIT_AS, (args.limit_mb << 20, resource.RLIM_INFINITY))
    sys.setrecursionlimit(10_000)
    failed = False
    rows = []
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = [pool.submit(run_parser, name, args.cases, args.out, args.seed, args.progress)
                   for name in args.parsers]
        for future in as_completed(futures):
            row = future.result()
            rows.append(row)
            print(json.dumps(row), flush=True)
            failed |= row["raw_exceptions"] > 0 or row["divergences"] > 0
    total = {"cases": sum(r["cases"] for r in rows), "raw_exceptions": sum(r["raw_exceptions"] for r in rows),
             "divergences": sum(r["divergences"] for r in rows),
             "peak_rss_mb": max(r["peak_rss_mb"] for r in rows),  # of one process (each parser has its own)
             "command": " ".join([Path(sys.executable).name, *sys.argv])}
    print(json.dumps({"total": total}), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    os.environ.setdefault("PROFVIEW_NATIVE", "1")
    raise SystemExit(main())
