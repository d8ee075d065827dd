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
