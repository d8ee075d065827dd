// The panels of a view, listed once (the Python list: jupyter_profview/widget/panels.py PANELS;
// tests/test_panels.py checks that both name the same panels). The order is the toolbar's.
// Adding a panel: docs/site_src/panels.md.

import { ADVICE_PANEL } from "./advice";
import { COMPARE_PANEL } from "./compare_panel";
import { MEMVIEW_PANEL } from "./alloc_timeline";
import { CRITICAL_PANEL } from "./critical";
import { ICICLE_PANEL } from "./icicle";
import { COLOUR_PANEL } from "./metrics";
import type { PanelModule } from "./panel";
import { PERFETTO_PANEL } from "./perfetto_panel";
import { STAGE_LANES_PANEL } from "./stage_lanes";

// The view draws these itself (view.ts with timeline.ts, memory.ts, table.ts, groups.ts): their
// traits are listed here so that every trait a panel owns on the Python side has its drawer.
const TIMELINE_PANEL: PanelModule = {
  name: "timeline",
  traits: ["_info", "_tracks", "_overview", "_nodes", "_summary", "_highlight", "_zoom_request", "split_layout",
    "_panel_status", "show_wrappers"],
};
const MEMORY_PANEL: PanelModule = { name: "memory", traits: ["_memory"] };
const TABLE_PANEL: PanelModule = { name: "table", traits: ["_kernel_selection"] };
const RANKS_PANEL: PanelModule = { name: "ranks", traits: ["shown_ranks", "collapsed_groups"] };
/** The `/` search box (search.ts, drawn by the view; its `_search` command: widget/search.py). */
const SEARCH_PANEL: PanelModule = { name: "search", traits: [] };

export const PANELS: readonly PanelModule[] = [
  TIMELINE_PANEL,
  MEMORY_PANEL,
  TABLE_PANEL,
  RANKS_PANEL,
  COLOUR_PANEL,
  ADVICE_PANEL,
  CRITICAL_PANEL,
  ICICLE_PANEL,
  COMPARE_PANEL,
  PERFETTO_PANEL,
  STAGE_LANES_PANEL,
  MEMVIEW_PANEL,
  SEARCH_PANEL,
];
