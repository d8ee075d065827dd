"""The stage lanes of a recorded pipeline run (interleaved 1F1B, 2 ranks x 2 stages) on the
`profview serve` page of its run directory (the all-ranks view, the server worker's session), under
Debian Chromium: one lane per stage, each action labelled with its microbatch, the per-stage table's
numbers equal to `pipeline_bubbles`' DataFrame and to an independent walk of the JSON
(`tests/pipeline_walk.py`), a row click selects exactly that stage's `PP:` actions in the timeline,
an action click selects its stage's row, and the legend lists every colour drawn."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import jupyter_profview as profview
from jupyter_profview.analysis import pipeline_bubbles
from jupyter_profview.numbers import format_duration, share_text
from tests.browser.lab import TIMEOUT_MS, canvas_ink, wait_until
from tests.browser.test_lab_extension import screenshot_on_failure
from tests.pipeline_walk import COMPUTE, DATA, walk
from tests.server_helpers import profview_serve

RUN = DATA / "interleaved"
SCOPE = "#profview-root"


READ = """(scope) => {
  const q = (s) => [...document.querySelectorAll(scope + ' ' + s)];
  const acts = q('.pv-sl-action').map((a) => ({stage: +a.dataset.stage, index: +a.dataset.index,
    group: a.dataset.group, fill: a.getAttribute('fill'), width: a.getBBox().width}));
  const labels = q('.pv-sl-mb').map((t) => ({index: +t.dataset.index, text: t.textContent}));
  const shaded = q('.pv-sl-bubble').filter((p) => p.getAttribute('d')).map((p) => p.getAttribute('fill'));
  const fills = new Set([...acts.map((a) => a.fill), ...shaded]);
  const legend = q('.pv-sl-key').map((k) => k.dataset.color);
  return {acts, labels, fills: [...fills], legend};
}"""


def expected(tmp_path: Path) -> tuple[list[list[str]], dict[int, int], dict[str, Counter[tuple[int, int]]],
                                     dict[str, Counter[int]]]:
    """The table's rows (the DataFrame's), the PP: actions per stage and the (stage, microbatch)
    labels, both counted in the JSON by the walk."""
    pp = pipeline_bubbles(profview.load_many(RUN, cache=tmp_path / "cache", progress=False, workers=1))
    walked = [walk(p) for p in sorted(RUN.glob("rank-*.json.gz"))]
    actions = Counter(a[0] for w in walked for a in w["actions"])
    steps = list(walked[0]["steps"])
    by_step = {step: Counter(a[0] for w in walked for a in w["actions"] if a[5] == step) for step in steps}
    # the compute actions' (stage, microbatch): each one is drawn wide enough to carry its label
    labels = {step: Counter((a[0], a[2]) for w in walked for a in w["actions"]
                            if a[1] in COMPUTE and a[5] == step) for step in steps}
    rows = []
    for stage, group in pp.stages.groupby("stage", sort=True):
        rank = int(group["rank"].iloc[0])
        dur = int(pp.ranks.loc[pp.ranks["rank"] == rank, "dur"].sum())
        compute = int(group["compute"].sum())
        # the walk, counted apart: the same compute and the same steps
        w = next(x for x in walked if x["rank"] == rank)
        assert compute == sum(st["stages"][int(str(stage))] for st in w["steps"].values())
        assert dur == sum(st["dur"] for st in w["steps"].values())
        rows.append([str(stage), str(rank), f"{actions[int(str(stage))]:,}", format_duration(compute),
                     format_duration(dur - compute), share_text(100 * (dur - compute) / dur)])
    return rows, dict(actions), labels, by_step


def test_stage_lanes_on_the_serve_page(browser: Any, request: Any, tmp_path: Path) -> None:
    rows_want, actions, labels, actions_by_step = expected(tmp_path)
    run = tmp_path / "interleaved"
    shutil.copytree(RUN, run)
    context = browser.new_context(viewport={"width": 1400, "height": 1300})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    with screenshot_on_failure(request, tmp_path, lambda: context.pages), \
            profview_serve(run, tmp_path / "serve.log") as (_http, url):
        page.goto(url)
        page.wait_for_selector(f"{SCOPE} .pv-timeline canvas")
        assert wait_until(lambda: canvas_ink(page, f"{SCOPE} .pv-timeline canvas") > 2000), "nothing drawn"
        root = page.locator(f"{SCOPE} .pv-root").first
        button = page.locator(f"{SCOPE} .pv-panel-btn[data-panel='stage_lanes']")
        assert wait_until(lambda: button.is_visible()), "no Stage lanes button on a pipeline run"
        button.click()
        lanes = page.locator(f"{SCOPE} .pv-stage-lanes")
        assert wait_until(lambda: lanes.get_attribute("data-stages") == str(len(rows_want)))

        # one lane per stage, named with its rank
        assert page.locator(f"{SCOPE} .pv-sl-lane-label").all_text_contents() == [
            f"stage {r[0]} · rank {r[1]}" for r in rows_want]
        # each step's actions on their stage's lanes, every compute action labelled with its microbatch
        picker = page.locator(f"{SCOPE} .pv-sl-picker")
        assert picker.locator("option").all_inner_texts() == [*labels, "all steps"]
        for step, want in labels.items():
            picker.select_option(step)
            drawn = page.evaluate(READ, SCOPE)
            assert Counter(a["stage"] for a in drawn["acts"]) == Counter(
                actions_by_step[step])
            act = {a["index"]: a for a in drawn["acts"]}
            shown = Counter((act[t["index"]]["stage"], int(t["text"])) for t in drawn["labels"]
                            if act[t["index"]]["group"] in ("forward", "backward", "weight-grad"))
            assert shown == want, (step, shown, want)
            assert set(drawn["fills"]) <= set(drawn["legend"])
        # every step: the legend lists every colour drawn, and nothing else
        picker.select_option("")
        drawn = page.evaluate(READ, SCOPE)
        assert Counter(a["stage"] for a in drawn["acts"]) == Counter(actions)
        assert sorted(drawn["legend"]) == sorted(drawn["fills"]), (drawn["legend"], drawn["fills"])

        # the table: the DataFrame's numbers (and the walk's, checked in `expected`)
        table = page.locator(f"{SCOPE} .pv-sl-rows .pv-sl-row")
        assert [table.nth(i).locator("span").all_inner_texts() for i in range(table.count())] == rows_want

        # a row selects its stage's actions: in the timeline, the table and the lanes
        table.nth(1).click()  # stage 1, the slow one
        n = actions[1]
        assert wait_until(lambda: root.get_attribute("data-highlight") == str(n)), \
            root.get_attribute("data-highlight")
        assert lanes.get_attribute("data-selected-stage") == "1"
        assert lanes.get_attribute("data-selected-actions") == str(n)
        totals = page.locator(f"{SCOPE} .pv-table-totals")
        assert wait_until(lambda: totals.inner_text().startswith(f"{n} ")), totals.inner_text()
        shot = tmp_path / "stage-lanes.png"
        lanes.screenshot(path=str(shot))
        page.screenshot(path=str(tmp_path / "stage-lanes-page.png"), full_page=True)
        print("screenshot", shot)

        # an action selects its stage's row (and itself in the timeline)
        widest = max((a for a in drawn["acts"] if a["stage"] == 2), key=lambda a: a["width"])
        page.locator(f"{SCOPE} .pv-sl-action[data-index='{widest['index']}']").click()
        assert wait_until(lambda: root.get_attribute("data-highlight") == "1")
        assert wait_until(lambda: page.locator(f"{SCOPE} .pv-sl-row.pv-row-selected").get_attribute(
            "data-stage") == "2")
        assert errors == []
    context.close()
