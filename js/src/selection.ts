// A view's selection (ViewSelection): a slice, a time range or nothing, kept in step with the
// `_selection` trait (its values: selection_value.ts) and the table.

import type { AnyModel } from "@anywidget/types";
import { debounce } from "./rpc";
import type { Flow, SelectedBox } from "./scene";
import { selectionValue } from "./selection_value";
import type { TablePanel, TableRow } from "./table";
import type { EventCache } from "./tooltip";
import { zoomToRange, type Bounds, type View } from "./viewport";

/** What a view's selection needs of the view. */
export interface SelectionHost {
  readonly model: AnyModel;
  readonly root: HTMLElement;
  readonly table: TablePanel;
  readonly events: EventCache;
  readonly view: View;
  readonly bounds: Bounds;
  setView(v: View): void;
  requestDraw(): void;
}

/**
 * The selection of one view (a slice, a time range optionally on some tracks, or nothing), its
 * flow arrows, the `_selection` trait and the table, which lists the selection's events or, with
 * nothing selected, the window's.
 */
export class ViewSelection {
  selected: SelectedBox | null = null;
  range: [number, number] | null = null;
  /** Tracks of a shift-drag rectangle (null: all tracks). */
  rangeTracks: number[] | null = null;
  flows: Flow[] = [];
  /** The table lists the kernel's selection (w.select, an icicle node, a finding) until the view selects. */
  kernel = false;
  private keepTable = false;

  constructor(private host: SelectionHost) {}

  private sync = debounce(() => {
    this.host.model.set("_selection", selectionValue(this.selected?.id ?? null, this.range, this.rangeTracks));
    this.host.model.save_changes();
    // After the selection reached the kernel (same channel, in order).
    if (!this.keepTable) this.updateTable(true);
  }, 150);

  /** The window's events in the table (debounced): after a view change with nothing selected. */
  readonly refreshWindowTable = debounce(() => this.updateTable(false), 300);

  dispose(): void {
    this.sync.cancel();
    this.refreshWindowTable.cancel();
  }

  has(): boolean {
    return this.selected !== null || this.range !== null;
  }

  private updateTable(force: boolean): void {
    const { view, table } = this.host;
    const q = this.has()
      ? { mode: "selection" as const, t0: view.start, t1: view.end,
          selection: selectionValue(this.selected?.id ?? null, this.range, this.rangeTracks) }
      : { mode: "window" as const, t0: view.start, t1: view.end };
    table.selectedId = this.selected?.id ?? -1;
    table.setQuery(q, force);
  }

  /**
   * Select one slice, a time range (optionally on some tracks) or nothing. The table follows
   * the selection, except when the click came from the table itself (`keepTable`).
   */
  select(box: SelectedBox | null, range: [number, number] | null = null, tracks: number[] | null = null,
    keepTable = false): void {
    const host = this.host;
    this.kernel = false;
    this.selected = box;
    this.range = range;
    this.rangeTracks = range ? tracks : null;
    this.keepTable = keepTable;
    this.flows = [];
    host.root.dataset.selected = box ? String(box.id) : range ? "range" : "";
    this.sync();
    host.requestDraw();
    if (box) {
      void host.events.get(box.id).then((info) => {
        if (!info || this.selected?.id !== box.id) return;
        this.flows = Array.isArray(info.flows) ? info.flows : [];
        if (typeof info.depth === "number" && typeof info.track === "number") {
          this.selected = { id: box.id, track: info.track, depth: info.depth,
            start: Number(info.start ?? box.start), dur: Number(info.dur ?? box.dur) };
        }
        host.requestDraw();
      });
    }
  }

  /**
   * The kernel selected events itself (`w.select`, an icicle node): drop the view's own
   * selection and list the kernel's (a `_table` query without `selection`: the kernel's current
   * one).
   */
  showKernelSelection(): void {
    this.sync.cancel();
    this.refreshWindowTable.cancel();
    this.selected = null;
    this.range = null;
    this.rangeTracks = null;
    this.flows = [];
    this.kernel = true;
    this.host.root.dataset.selected = "kernel";
    const { view, table } = this.host;
    table.selectedId = -1;
    table.setQuery({ mode: "selection", t0: view.start, t1: view.end }, true);
    this.host.requestDraw();
  }

  zoomTo(): void {
    const { bounds } = this.host;
    if (this.selected) this.host.setView(zoomToRange(this.selected.start, this.selected.start + this.selected.dur, bounds));
    else if (this.range) this.host.setView(zoomToRange(this.range[0], this.range[1], bounds, 0.02));
  }

  /** A table row: select and zoom to its event, keeping the list as it is (no new table query). */
  onTableRow(row: TableRow): void {
    this.refreshWindowTable.cancel(); // a pending window refresh would replace the list
    this.select({ id: row.id, track: row.track, depth: 0, start: row.start, dur: row.dur }, null, null, true);
    this.host.setView(zoomToRange(row.start, row.start + row.dur, this.host.bounds));
    this.host.table.selectedId = row.id;
    this.host.table.renderRows();
  }
}
