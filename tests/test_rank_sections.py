"""What a rank is (issue 31, item 3): the view draws one "rank N" section per rank of
``trace.info.ranks`` and none otherwise, on every seed format; a graph format's rank in its graph
(Chainer's ``graph_rank``) is not a process rank."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import jupyter_profview as profview
from jupyter_profview.errors import ProfviewError
from jupyter_profview.widget.lod import section_key
from jupyter_profview.widget.state import WidgetData
from tests.trace_files import SHARED_DIR, traces_under

EXAMPLES = Path(profview.__file__).parent / "examples"
SEEDS = traces_under(EXAMPLES, *([SHARED_DIR / "seeds"] if SHARED_DIR else []))
CHAINER_SEED = EXAMPLES / "003_925085f7148f0ebf.txt"


def sections(trace: profview.Trace) -> set[str]:
    data = WidgetData(trace)
    return {t["section"] for t in data.tracks() if "section" in t}


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_sections_are_the_ranks_of_info(path: Path) -> None:
    try:
        trace = profview.load(path)
    except ProfviewError:  # not every file of the folders is a whole trace by itself
        pytest.skip(f"{path.name} does not load on its own")
    trace.validate()
    assert sections(trace) == {section_key(r) for r in trace.info.ranks}
    if not trace.info.ranks:
        assert "rank" not in trace.events.columns


def test_the_chainer_seed_is_one_process_not_46_ranks() -> None:
    text = CHAINER_SEED.read_text()
    graph_ranks = {int(r) for r in re.findall(r'"rank": (\d+)', text)}
    assert len(graph_ranks) == 46  # counted in the file: its functions' ranks in the graph
    trace = profview.load(CHAINER_SEED)
    assert trace.format == "chainer_graph" and trace.info.ranks == ()
    assert sections(trace) == set()
    tracks = WidgetData(trace).tracks()
    assert {t["process"] for t in tracks} == {str(trace.events["process"].iat[0])}
    assert set(trace.events["graph_rank"]) == graph_ranks
    assert set(trace.nodes["graph_rank"]) == graph_ranks


def test_a_traceset_draws_one_section_per_rank(tmp_path: Path) -> None:
    ts = profview.load_many(EXAMPLES / "ddp", cache=tmp_path / "cache", progress=False)
    trace = ts.combined()
    assert trace.info.ranks == (0, 1, 2, 3)
    trace.validate()
    assert sections(trace) == {"rank 0", "rank 1", "rank 2", "rank 3"}


def test_a_rank_column_without_info_ranks_is_refused() -> None:
    """A format that puts something into `events.rank` again fails validation (the column
    means the process rank of a TraceSet's combined trace, nothing else)."""
    trace = profview.load(CHAINER_SEED)
    trace.events["rank"] = trace.events["graph_rank"]
    with pytest.raises(ProfviewError, match=r"column `rank`: is present but `info.ranks` is empty"):
        trace.validate()
