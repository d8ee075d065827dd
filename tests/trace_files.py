"""Where the tests find their traces: the shared traces and seeds beside the checkout, and which
files of a folder are traces (one rule for every test that walks folders for them)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: ``../shared`` as CI lays it out beside the checkout (a worktree's grandparent also counts);
#: None where it is not there
SHARED_DIR: Path | None = next((d for d in (ROOT / "shared", ROOT.parent / "shared",
                                            ROOT.parent.parent / "shared") if (d / "seeds").is_dir()), None)
NOT_TRACE_SUFFIXES = {".md", ".py", ""}
# a licence and torch's key_averages numbers, not traces
NOT_TRACE_NAMES = {"LICENSE", "torch_overlap_key_averages.json", "torch_selftime_key_averages.json"}
NOT_TRACE_DIRS = {"hta_reference"}  # HTA's answers, not traces


def traces_under(*bases: Path) -> list[Path]:
    """The trace files under each of ``bases`` (those that exist), sorted per base: not notes,
    scripts, licences or reference numbers, nothing hidden (caches, leftovers of earlier runs)."""
    found: list[Path] = []
    for base in bases:
        if base.is_dir():
            found += [p for p in sorted(base.rglob("*")) if p.is_file() and p.suffix not in NOT_TRACE_SUFFIXES
                      and p.name not in NOT_TRACE_NAMES
                      and not any(part.startswith(".") or part in NOT_TRACE_DIRS
                                  for part in p.relative_to(base).parts)]
    return found
