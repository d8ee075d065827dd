"""`profview.readable` (issue 36, item 10): DataFrame displays show durations with their unit,
bytes with binary prefixes, shares as percents, never raw ns in scientific notation.  Expected
texts come from the shared number fixtures (the widget's own rule) and from the trace's JSON."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import jupyter_profview as profview
from jupyter_profview.numbers import column_unit

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = json.loads((ROOT / "tests/shared_fixtures/format_numbers.json").read_text())
SCIENTIFIC = re.compile(r"\d[eE][+-]\d")


def test_durations_bytes_and_shares_read_as_the_widget_writes_them() -> None:
    pairs = FIXTURES["duration_ns"]
    frame = pd.DataFrame({"dur": [float(v) for v, _ in pairs], "name": ["x"] * len(pairs)})
    shown = profview.readable(frame)
    assert shown["dur"].tolist() == [text for _, text in pairs]
    assert shown["name"].tolist() == ["x"] * len(pairs)
    pairs = FIXTURES["bytes"]
    assert profview.readable(pd.DataFrame({"bytes": [float(v) for v, _ in pairs]}))["bytes"].tolist() == \
        [text for _, text in pairs]
    pairs = FIXTURES["share"]
    assert profview.readable(pd.DataFrame({"share": [float(v) for v, _ in pairs]}))["share"].tolist() == \
        [text for _, text in pairs]
    frame = pd.DataFrame({"output_bytes": [0, 1536, 3 * 2**30], "share": [54.11, 0.04, 100.0],
                          "count": [1, 1234567, 3], "flops": [1.2e12, 3.5, np.nan]})
    shown = profview.readable(frame)
    assert shown["output_bytes"].tolist() == ["0 B", "1.5 KiB", "3 GiB"]
    assert shown["share"].tolist() == ["54.1 %", "0.0 %", "100.0 %"]
    assert shown["count"].tolist() == ["1", "1,234,567", "3"]
    assert shown["flops"].tolist() == ["1,200,000,000,000", "3.5", "–"]


def test_columns_by_name_and_by_choice() -> None:
    assert [column_unit(n) for n in ("dur", "gpu_total", "launch_start", "start_spread", "Total Allocated",
                                     "share", "pct_of_peak", "count", "tflops", "name", ("dur", "sum"))] == \
        ["time", "time", "time", "time", "bytes", "percent", "percent", None, None, None, "time"]
    agg = pd.DataFrame({"count": [2], "min": [1024], "max": [2048]})
    assert profview.readable(agg)["max"].tolist() == ["2.048 µs"]  # a statistic of a duration ...
    assert profview.readable(agg, bytes=["min", "max"])["max"].tolist() == ["2 KiB"]  # ... unless told
    assert profview.readable(pd.Series([1500.0], name="dur")).tolist() == ["1.5 µs"]
    with pytest.raises(TypeError):
        profview.readable([1, 2])


def test_a_real_trace_summary_reads_in_units_that_match_the_file() -> None:
    """`summary(t)`'s total per category, counted from the JSON, is what the readable frame
    shows (through the shared duration rule), and no cell is in scientific notation."""
    from jupyter_profview.numbers import format_duration

    path = ROOT / "tests/data/torch_mlp_train.json"
    data = json.loads(path.read_text())
    totals: dict[str, float] = {}
    for e in data["traceEvents"]:
        if e.get("ph") == "X":
            totals[e.get("cat", "")] = totals.get(e.get("cat", ""), 0.0) + float(e["dur"]) * 1000
    shown = profview.readable(profview.summary(profview.load(path)))
    for category, row in shown.iterrows():
        if str(category) in totals:
            assert row["total"] == format_duration(round(totals[str(category)]))
    assert not any(SCIENTIFIC.search(str(v)) for v in shown.to_numpy().ravel())
    assert shown["total"].str.contains(r" (ns|µs|ms|s)$").all()


NOTEBOOKS = [p for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
             if not p.name.startswith(("10_", "15_", "16_"))]  # 10, 15, 16: other owners
#: a duration with its unit, or (a statistic column the notebook marked `bytes=`) a byte count
UNIT_CELL = re.compile(r"^(-?[\d.]+ (ns|µs|ms|s|B|KiB|MiB|GiB|TiB|PiB)|–|)$")


def html_tables(html: str) -> list[tuple[list[str], list[list[str]]]]:
    """(header texts, body rows' cell texts) of each pandas HTML table."""
    tables = []
    for table in re.findall(r"<table.*?</table>", html, re.S):
        head = re.search(r"<thead>\s*<tr[^>]*>(.*?)</tr>", table, re.S)  # the columns' row
        header = [re.sub(r"<.*?>", "", h).strip()
                  for h in re.findall(r"<th[^>]*>(.*?)</th>", head[1] if head else "", re.S)]
        body = re.search(r"<tbody>(.*?)</tbody>", table, re.S)
        rows = [[re.sub(r"<.*?>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
                for r in re.findall(r"<tr>(.*?)</tr>", body[1] if body else "", re.S)]
        tables.append((header, rows))
    return tables


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_tables_show_units(path: Path) -> None:
    """Run the notebook; in every table it displays, no number is in scientific notation, and
    every column named as a duration (`column_unit`) holds values with their unit."""
    from test_notebooks import execute

    book = execute(path)
    checked = 0
    for k, cell in enumerate(book.cells):
        for out in cell.get("outputs", []):
            html = out.get("data", {}).get("text/html", "")
            for header, rows in html_tables("".join(html) if isinstance(html, list) else html):
                names = header[-len(rows[0]):] if rows and rows[0] else []
                for row in rows:
                    assert not any(SCIENTIFIC.search(c) for c in row), (path.name, k, row)
                    for name, value in zip(names, row, strict=True):
                        if column_unit(name) == "time":
                            assert UNIT_CELL.match(value), (path.name, k, name, value)
                            checked += 1
    assert checked > 0  # the notebook shows durations somewhere
