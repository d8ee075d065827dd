"""find_events against counts made independently from the trace's JSON file."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

import jupyter_profview as profview
from jupyter_profview.errors import ProfviewError
from jupyter_profview.widget.search import find_events

TRACE = Path(__file__).resolve().parents[2] / "shared" / "traces" / "hta" / (
    "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz")


def _json_events() -> list[dict]:
    with gzip.open(TRACE, "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") in ("X", "i")]  # complete + instant


@pytest.mark.skipif(not TRACE.exists(), reason="shared traces absent")
@pytest.mark.parametrize(("query", "regex"), [("aten::", False), ("cuda", False),
                                               (r"^aten::\w+$", True), (r"(?i)memset", True)])
def test_match_count_equals_json(query: str, regex: bool) -> None:
    trace = profview.load(TRACE)
    assert len(trace.events) == len(_json_events())  # every complete event is loaded
    complete = trace.events
    hits = find_events(complete, query, regex)
    want = sum(1 for e in _json_events()
               if (re.search(query, e["name"]) if regex else query in e["name"]))
    assert want > 0
    assert len(hits) == want
    starts = complete["start"].to_numpy()[hits]
    assert (starts[1:] >= starts[:-1]).all()


def test_invalid_regex_is_clear() -> None:
    trace = profview.load(TRACE)
    with pytest.raises(ProfviewError, match="invalid regular expression"):
        find_events(trace.events, "aten::(", regex=True)
    assert len(find_events(trace.events, "")) == 0


# -- the search box's command (`_search`, SearchPanel), through the one ViewSession -------------

GPU = profview.example("gpu_trace")


def _gpu_names() -> list[str]:
    with gzip.open(GPU, "rt") as f:
        return [str(e["name"]) for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def test_search_command_counts_steps_and_wraps() -> None:
    from jupyter_profview.widget.codec import decode_frame
    from jupyter_profview.widget.session import ViewSession

    s = ViewSession(profview.load(GPU))
    want = sum("ncclKernel" in n for n in _gpu_names())  # counted from the file
    events = s.trace.events
    ids = events[events["name"].astype(str).str.contains("ncclKernel", regex=False)] \
        .sort_values("start", kind="stable").index.tolist()
    seen = []
    for index in (0, 1, want - 1, want, -1):
        reply, buffers = s.call("_search", {"query": "ncclKernel", "regex": False, "index": index})
        assert reply["count"] == want == len(ids)
        assert reply["index"] == index % want
        cur = reply["current"]
        assert cur["id"] == ids[index % want]
        row = events.loc[cur["id"]]
        assert (cur["start"], cur["dur"], cur["depth"]) == (row["start"], row["dur"], row["depth"])
        assert sorted(decode_frame(buffers[0]).columns["id"].tolist()) == sorted(ids)
        seen.append(cur["id"])
    assert seen == [ids[0], ids[1], ids[-1], ids[0], ids[-1]]
    # a regex, counted with Python's re on the file
    regex = r"^aten::(mm|addmm)$"
    reply, _ = s.call("_search", {"query": regex, "regex": True, "index": 0})
    assert reply["count"] == sum(re.search(regex, n) is not None for n in _gpu_names()) > 0
    # an invalid one: a message, not an error reply; an empty query: nothing
    reply, _ = s.call("_search", {"query": "aten::(", "regex": True, "index": 0})
    assert reply["count"] == 0 and "invalid regular expression" in reply["message"] and "error" not in reply
    reply, _ = s.call("_search", {"query": "", "index": 0})
    assert reply["count"] == 0 and reply["message"] == ""
    # bad requests are refused
    bad_requests = ({"query": 3}, {"query": "x", "index": "1"}, {"query": "x" * 2000}, [],
                    {"query": "x", "regex": 1})
    for bad in bad_requests:
        assert "error" in s.call("_search", bad)[0]


def test_the_search_box_and_details_strip_set_trace_text_as_text() -> None:
    """Names, args and messages go in with textContent: no HTML is ever built from them."""
    src = Path(__file__).parents[1] / "js" / "src"
    for name in ("search.ts", "details.ts"):
        text = (src / name).read_text(encoding="utf-8")
        assert "textContent" in text
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write", text), name
