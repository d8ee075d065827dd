// Generated from jupyter_profview/widget/traits.py by `python -m jupyter_profview.widget.traits`;
// do not edit (tests/test_widget_traits.py checks that it is up to date).

/** The synced traits of a view and their values (a binary frame is a DataView). */
export interface Traits {
  /** format, units, legend, ranks and offsets of the trace */
  _info: Record<string, unknown>;
  /** one entry per track: process, thread, group, lane name, depths (and rank for several ranks) */
  _tracks: Array<Record<string, unknown>>;
  /** the whole trace's timeline at overview resolution */
  _overview: DataView;
  /** the memory curves' overview */
  _memory: DataView;
  /** graph nodes (traces without timed events) */
  _nodes: DataView;
  /** busy / communication lanes of collapsed groups */
  _summary: DataView;
  /** ids of the highlighted events */
  _highlight: DataView;
  /** {start, end, token}: show this window */
  _zoom_request: Record<string, unknown>;
  /** the critical path shown (its segments and edges) */
  _critical_path: DataView;
  /** the icicle's boxes */
  _icicle: DataView;
  /** the pipeline stage lanes and their table (widget/stage_lanes.py) */
  _stage_lanes: Record<string, unknown>;
  /** the active memory timeline of a memory snapshot: its largest allocations as bands, the rest as one band (widget/alloc_timeline.py) */
  _alloc_timeline: DataView;
  /** the segments and blocks of a memory snapshot at the selected time */
  _segments: DataView;
  /** {token, count}: the kernel changed the selection */
  _kernel_selection: Record<string, unknown>;
  /** {findings, window, token}: the findings of advise shown above the table */
  _advice: Record<string, unknown>;
  /** the picked finding (meta: finding, rule, token); for gpu_idle its idle intervals (start, end) and its GPU's tracks, shaded (widget/advice.py) */
  _finding: DataView;
  /** {a, b, align, offset, unit, summary, rows, total, token} or {ask}: the compare panel (widget/compare_panel.py) */
  _compare: Record<string, unknown>;
  /** {path, bytes, token}: where Open in Perfetto saved the trace */
  _perfetto: Record<string, unknown>;
  /** {panel, shown, error, token}: what the last toolbar request did */
  _panel_status: Record<string, unknown>;
  /** the icicle's node kind ('' hides it) */
  icicle_by: string;
  /** what sizes the icicle's boxes: 'gpu' or 'cpu' */
  icicle_measure: string;
  /** the step whose critical path is shown, -1 for none */
  critical_path_instance: number;
  /** 'category', 'phase' or a kernel / collective number (widget/metric_colors.py) */
  color_by: string;
  /** draw the lanes holding only the profiler's own records (derived.wrapper_mask: Kineto's PyTorch Profiler span and markers); hidden by default */
  show_wrappers: boolean;
  /** keys of the groups drawn collapsed (a process, or a 'rank N' section) */
  collapsed_groups: string[];
  /** the ranks shown ([] for all) */
  shown_ranks: number[];
  /** heights (px) the user dragged the timeline and table to */
  split_layout: Record<string, unknown>;
  /** {start, end}: the window the user sees (the widget's `visible`) */
  _view: Record<string, unknown>;
  /** {ids} or {range, tracks}: what the user selected */
  _selection: Record<string, unknown>;
  /** {node, token}: a clicked icicle node */
  _icicle_pick: Record<string, unknown>;
  /** {finding, token}: a clicked finding */
  _advice_pick: Record<string, unknown>;
  /** {row, token}: a clicked compare row (its op highlighted in A) */
  _compare_pick: Record<string, unknown>;
  /** {stage} or {action}, token: a clicked stage row or action */
  _stage_pick: Record<string, unknown>;
  /** {start, end} / {time} / {device}: the memory snapshot panel's window, selected time or device */
  _memview_request: Record<string, unknown>;
  /** {panel, show, token, ...}: a toolbar button (show or hide a panel; js/src/panels.ts) */
  _panel_request: Record<string, unknown>;
}
export type TraitName = keyof Traits;

export interface TraitSpec { setBy: "kernel" | "browser" | "both"; session: boolean; view: boolean; saved: boolean }

export const TRAIT_SPEC: Readonly<Record<TraitName, TraitSpec>> = {
  _info: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _tracks: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _overview: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _memory: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _nodes: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _summary: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _highlight: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _zoom_request: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _critical_path: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _icicle: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _stage_lanes: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _alloc_timeline: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _segments: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _kernel_selection: {"setBy": "kernel", "session": true, "view": true, "saved": false},
  _advice: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _finding: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _compare: {"setBy": "kernel", "session": true, "view": true, "saved": true},
  _perfetto: {"setBy": "kernel", "session": true, "view": true, "saved": false},
  _panel_status: {"setBy": "kernel", "session": true, "view": true, "saved": false},
  icicle_by: {"setBy": "both", "session": true, "view": false, "saved": true},
  icicle_measure: {"setBy": "both", "session": true, "view": false, "saved": true},
  critical_path_instance: {"setBy": "both", "session": true, "view": false, "saved": true},
  color_by: {"setBy": "both", "session": true, "view": true, "saved": true},
  show_wrappers: {"setBy": "both", "session": true, "view": true, "saved": true},
  collapsed_groups: {"setBy": "both", "session": false, "view": true, "saved": true},
  shown_ranks: {"setBy": "both", "session": true, "view": true, "saved": true},
  split_layout: {"setBy": "both", "session": false, "view": true, "saved": true},
  _view: {"setBy": "browser", "session": false, "view": false, "saved": true},
  _selection: {"setBy": "browser", "session": true, "view": false, "saved": true},
  _icicle_pick: {"setBy": "browser", "session": true, "view": false, "saved": false},
  _advice_pick: {"setBy": "browser", "session": true, "view": false, "saved": false},
  _compare_pick: {"setBy": "browser", "session": true, "view": false, "saved": false},
  _stage_pick: {"setBy": "browser", "session": true, "view": false, "saved": false},
  _memview_request: {"setBy": "browser", "session": true, "view": false, "saved": false},
  _panel_request: {"setBy": "browser", "session": true, "view": false, "saved": false},
};
