"""Which files make a run, and which rank each one is.

Rules, in order, for each file:

1. ``distributedInfo.rank`` (and ``world_size``) from the file's head (the
   first `HEAD_BYTES` decompressed bytes; PyTorch writes
   ``distributedInfo`` before ``traceEvents``), read without parsing the file;
2. else a rank in the file name: ``rank-3``, ``rank_3``, ``rank3``
   (case-insensitive, the last match);
3. else the position in sorted path order, taking the smallest ranks not
   used by rules 1-2.

Two files claiming one rank raise `ProfviewError`.  The world size is
the largest of the ``world_size`` values the heads declare and ``max(rank) +
1``; ranks below it without a file are ``missing``.  ``problems`` lists, as
sentences, heads that disagree on the world size and ranks not below the
declared world size (a file of another run, or a rank taken from a
misleading file name).
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import warnings
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import ProfviewError
from ..sources import walk

HEAD_BYTES = 256 * 1024
#: The most a trace file is assumed to shrink under gzip (decompressed / compressed size).
#: Measured 7-23x on the Kineto / HTA / DDP fixtures; generated, repetitive traces shrink more.
#: Below ``2**32 / MAX_GZIP_RATIO`` bytes (64 MiB) compressed, the gzip trailer is exact.
MAX_GZIP_RATIO = 64
#: Bytes a gzip header and trailer may add (RFC 1952; more only with long names or comments).
GZIP_SLACK = 4096
TRACE_SUFFIXES = (".json", ".json.gz", ".pb", ".pb.gz", ".pbtxt")
NAME_RANK = re.compile(r"rank[-_]?(\d+)", re.IGNORECASE)
DIST_KEY = b'"distributedInfo"'


@dataclass(frozen=True)
class RankFile:
    """One trace file of a run."""

    path: Path
    rank: int
    rank_from: str             # "distributedInfo", "file name" or "sorted order"
    world_size: int | None     # as the file's distributedInfo says
    size: int                  # bytes on disk
    mtime_ns: int
    data_bytes: int            # decompressed size (gzip: an upper estimate, see gzip_data_size)
    distributed_info: dict[str, Any] | None = None


class Run(NamedTuple):
    """The files of a run and what they say about it (see the module doc)."""

    files: list[RankFile]      # sorted by rank
    world_size: int
    missing: list[int]
    problems: list[str]


def find_files(source: Any) -> list[Path]:
    """A directory (its files named ``*`` + `TRACE_SUFFIXES`, or for a TensorBoard log
    directory the latest profile run's ``*.xplane.pb``), a glob, one path or a list of paths."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        path = Path(text)
        if path.is_dir():
            # the server's rule (sources.confine): regular files inside the directory, not hidden
            admitted, skipped = walk(path, path)
            files = [p for p in admitted if p.name.endswith(TRACE_SUFFIXES)]
            skipped = [note for note in skipped if note.split(":")[0].endswith(TRACE_SUFFIXES)]
            if skipped:
                warnings.warn(f"skipped in {text}: " + "; ".join(skipped), stacklevel=3)
            if not files and any(path.rglob("*.xplane.pb*")):
                # a TensorBoard log directory: the latest run's hosts (one rank each, by file name)
                from ..formats.xspace import find_in_directory

                files = find_in_directory(path)
            if not files:
                raise ProfviewError("no trace files in this directory", source=text,
                                    expected="files named *" + ", *".join(TRACE_SUFFIXES)
                                    + ", or a TensorBoard log directory of *.xplane.pb")
        elif glob.has_magic(text):
            files = [Path(p) for p in glob.glob(text) if Path(p).is_file()]
            if not files:
                raise ProfviewError("the pattern matches no file", source=text)
        elif path.is_file():
            files = [path]
        else:
            raise ProfviewError("no such file or directory", source=text)
    elif isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray)):
        files = [Path(p) for p in source]
        for p in files:
            if not p.is_file():
                raise ProfviewError("no such file", source=str(p))
        if not files:
            raise ProfviewError("an empty list of files", expected="one trace file per rank")
    else:
        raise ProfviewError(f"cannot find rank files in a {type(source).__name__}",
                            expected="a directory, a glob pattern or a list of paths")
    unique = sorted({p.resolve() for p in files})
    return unique


def read_head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` decompressed bytes (b"" where the file cannot be read)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
            f.seek(0)
            if magic == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=f) as g:
                    return g.read(n)
            return f.read(n)
    except (OSError, EOFError, zlib.error):
        return b""


def data_size(path: Path, size: int) -> int:
    """Decompressed size of a file of ``size`` bytes: for gzip, `gzip_data_size` of its
    ISIZE trailer, else ``size``."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b" or size < 20:
                return size
            f.seek(-4, os.SEEK_END)
            isize = int.from_bytes(f.read(4), "little")
    except OSError:
        return size
    return gzip_data_size(isize, size)


def gzip_data_size(isize: int, compressed: int, max_ratio: float = MAX_GZIP_RATIO) -> int:
    """A conservative decompressed size of a gzip file (never low for a trace file).

    The trailer's ISIZE is the size modulo ``2**32``, so the size is ``isize +
    k * 2**32`` for some ``k >= 0``.  Deflate grows data by at most 5 bytes per
    65,535 (stored blocks) plus the header and trailer (`GZIP_SLACK`), so
    the size is at least ``(compressed - GZIP_SLACK) * 65535 / 65540`` (a
    trailer below that has wrapped); a trace shrinks at most ``max_ratio``
    times, so it is at most ``compressed * max_ratio``.  The answer is the
    largest candidate up to the upper bound, or the smallest one above the
    lower bound where that is larger: exact for files under ``2**32 /
    max_ratio`` compressed bytes, an upper estimate above.
    """
    wrap = 2**32
    lower = max(compressed - GZIP_SLACK, 0) * 65535 // 65540
    k_min = -(-(lower - isize) // wrap) if lower > isize else 0  # ceil division
    k_max = int((compressed * max_ratio - isize) // wrap) if compressed * max_ratio > isize else 0
    return isize + max(k_min, k_max) * wrap


def distributed_info(head: bytes) -> dict[str, Any] | None:
    """The ``distributedInfo`` object in a file head, or None."""
    at = head.find(DIST_KEY)
    if at < 0:
        return None
    start = head.find(b"{", at + len(DIST_KEY))
    if start < 0:
        return None
    depth, in_string, escape = 0, False, False
    for i in range(start, len(head)):
        ch = head[i]
        if in_string:
            if escape:
                escape = False
            elif ch == 0x5C:  # backslash
                escape = True
            elif ch == 0x22:
                in_string = False
        elif ch == 0x22:
            in_string = True
        elif ch == 0x7B:
            depth += 1
        elif ch == 0x7D:
            depth -= 1
            if depth == 0:
                try:
                    value = json.loads(head[start:i + 1])
                except ValueError:
                    return None
                return value if isinstance(value, dict) else None
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def discover(source: Any) -> Run:
    """The run's files with their ranks, the world size, the missing ranks and the problems."""
    paths = find_files(source)
    found: list[dict[str, Any]] = []
    for path in paths:
        stat = path.stat()
        info = distributed_info(read_head(path))
        rank = _int(info.get("rank")) if info else None
        how = "distributedInfo"
        if rank is None:
            hits = NAME_RANK.findall(path.name)
            rank, how = (int(hits[-1]), "file name") if hits else (None, "sorted order")
        found.append({"path": path, "rank": rank, "rank_from": how, "info": info,
                      "world_size": _int(info.get("world_size")) if info else None,
                      "size": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    owner: dict[int, Path] = {}
    for f in found:
        if f["rank"] is None:
            continue
        if f["rank"] in owner:
            raise ProfviewError(
                f"rank {f['rank']} claimed by two files ({f['rank_from']}): "
                f"{owner[f['rank']]} and {f['path']}",
                expected="one file per rank (pass the files of one run)")
        owner[f["rank"]] = f["path"]
    free = (r for r in range(len(found) + len(owner)) if r not in owner)
    for f in found:  # paths are sorted
        if f["rank"] is None:
            f["rank"] = next(free)
    files = sorted((RankFile(f["path"], f["rank"], f["rank_from"], f["world_size"], f["size"], f["mtime_ns"],
                             data_size(f["path"], f["size"]), f["info"]) for f in found),
                   key=lambda rf: rf.rank)
    declared = [f.world_size for f in files if f.world_size is not None]
    world = max([*declared, files[-1].rank + 1])
    have = {f.rank for f in files}
    missing = [r for r in range(world) if r not in have]
    return Run(files, world, missing, world_problems(files))


def world_problems(files: list[RankFile]) -> list[str]:
    """Heads that disagree on the world size; ranks not below the (largest) declared one."""
    by_size: dict[int, list[RankFile]] = {}
    for f in files:
        if f.world_size is not None:
            by_size.setdefault(f.world_size, []).append(f)
    problems = []
    if len(by_size) > 1:
        problems.append("the files disagree on the world size: " + "; ".join(
            f"{size} in {_names(group)}" for size, group in sorted(by_size.items())))
    if by_size:
        declared = max(by_size)
        beyond = [f for f in files if f.rank >= declared]
        if beyond:
            problems.append(f"rank(s) not below the declared world size {declared}: " + "; ".join(
                f"rank {f.rank} ({f.rank_from}) in {f.path.name}" for f in beyond))
    return problems


def _names(group: list[RankFile], most: int = 4) -> str:
    names = [f.path.name for f in group[:most]]
    more = f" and {len(group) - most} more" if len(group) > most else ""
    return ", ".join(names) + more


def ranges(ranks: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2, 5, 7-8"``."""
    out: list[str] = []
    for r in sorted(ranks):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out)
