"""The panels of a view, listed once: [`PANELS`][jupyter_profview.widget.panels.PANELS] (the
interface: [`Panel`][jupyter_profview.widget.panel.Panel]; the TypeScript list: `js/src/panels.ts`)."""

from __future__ import annotations

from .advice import AdvicePanel
from .colour import ColourPanel
from .compare_panel import ComparePanel
from .critical_path import CriticalPathPanel
from .icicle import IciclePanel
from .memview import MemviewPanel
from .panel import Panel
from .perfetto_panel import PerfettoPanel
from .search import SearchPanel
from .stage_lanes import StageLanesPanel
from .view_panels import MemoryPanel, RanksPanel, TablePanel, TimelinePanel

#: every panel of a view, in toolbar order (the TypeScript list: js/src/panels.ts)
PANELS: tuple[type[Panel], ...] = (TimelinePanel, MemoryPanel, TablePanel, RanksPanel, ColourPanel,
                                   AdvicePanel, CriticalPathPanel, IciclePanel, ComparePanel,
                                   PerfettoPanel, StageLanesPanel, MemviewPanel, SearchPanel)
"""Every panel of a view, in toolbar order: the one Python list (the TypeScript one is `PANELS` of
`js/src/panels.ts`; tests/test_panels.py checks that both name the same panels)."""

#: trait name -> the panel that owns it
TRAIT_OWNER: dict[str, type[Panel]] = {t: p for p in PANELS for t in p.traits}
#: command name -> the panel that answers it
COMMAND_OWNER: dict[str, type[Panel]] = {c: p for p in PANELS for c in p.commands}
