"""Which files make a run, and which rank each one is.

Rules, in order, for each file:

1. ``distributedInfo.rank`` (and ``world_size``) from the file's head (the
   first :data:`HEAD_BYTES` decompressed bytes; PyTorch writes
   ``distributedInfo`` before ``traceEvents``), read without parsing the file;
2. else a rank in the file name: ``rank-3``, ``rank_3``, ``rank3``
   (case-insensitive, the last match);
3. else the position in sorted path order, taking the smallest ranks not
   used by rules 1-2.

Two files claiming one rank raise :class:`ProfviewError`.  The world size is
the largest ``world_size`` the heads declare, else ``max(rank) + 1``; ranks
below it without a file are ``missing``.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ProfviewError

HEAD_BYTES = 256 * 1024
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
    data_bytes: int            # decompressed size (gzip trailer; a lower bound past 4 GiB)
    distributed_info: dict[str, Any] | None = None


def find_files(source: Any) -> list[Path]:
    """A directory (its files named ``*`` + :data:`TRACE_SUFFIXES`), a glob, one path or a list of paths."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        path = Path(text)
        if path.is_dir():
            files = [p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES)]
            if not files:
                raise ProfviewError("no trace files in this directory", source=text,
                                    expected="files named *" + ", *".join(TRACE_SUFFIXES))
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
    """Decompressed size: the gzip ISIZE trailer (mod 2**32), else the size on disk."""
    try:
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b" or size < 20:
                return size
            f.seek(-4, os.SEEK_END)
            isize = int.from_bytes(f.read(4), "little")
    except OSError:
        return size
    return max(isize, size)


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


def discover(source: Any) -> tuple[list[RankFile], int, list[int]]:
    """The run's files with their ranks (sorted by rank), the world size and the missing ranks."""
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
    return files, world, missing


def ranges(ranks: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2, 5, 7-8"``."""
    out: list[str] = []
    for r in sorted(ranks):
        if out and out[-1].split("-")[-1] == str(r - 1):
            out[-1] = f"{out[-1].split('-')[0]}-{r}"
        else:
            out.append(str(r))
    return ", ".join(out)
