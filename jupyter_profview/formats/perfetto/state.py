"""What the packet walk keeps: per-track facts from the descriptors (`Track`), per-sequence
state (`Sequence`: interned data, defaults, incremental counters and clocks) and its flat
output (`Columns`)."""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .clocks import Clocks


@dataclass
class Track:
    """What the descriptors say about a track (``key``: its uuid, or a tuple for the implied
    per-thread tracks of legacy events)."""

    key: Any
    name: str = ""
    parent: int = 0
    pid: int | None = None
    tid: int | None = None
    process_name: str = ""
    thread_name: str = ""
    counter: bool = False
    incremental: bool = False
    multiplier: int = 1
    counter_type: int = 0


@dataclass
class Sequence:
    valid: bool = True
    names: dict[int, str] = field(default_factory=dict)
    categories: dict[int, str] = field(default_factory=dict)
    arg_names: dict[int, str] = field(default_factory=dict)
    arg_strings: dict[int, str] = field(default_factory=dict)
    defaults: Any = None              # TracePacketDefaults
    counters: dict[int, float] = field(default_factory=dict)  # incremental counter values
    clock_last: dict[int, int] = field(default_factory=dict)  # sequence clock -> last ns
    # sequence clock -> (incremental, ns per unit)
    clock_unit: dict[int, tuple[bool, int]] = field(default_factory=dict)
    thread: tuple[int, int] | None = None  # legacy ThreadDescriptor (pid, tid)
    # caches of the defaults and the interned names, as the reader's codes
    clock: int = 0                    # the defaults' timestamp clock
    default_track: int = -1           # the defaults' track (a track code), -1 none
    extra_tracks: list[int] = field(default_factory=list)  # the defaults' extra counter tracks
    name_codes: dict[int, int] = field(default_factory=dict)  # name iid -> string code
    cat_codes: dict[Any, int] = field(default_factory=dict)  # category iids -> string code

    def clear(self) -> None:
        self.valid = True
        self.names.clear()
        self.categories.clear()
        self.arg_names.clear()
        self.arg_strings.clear()
        self.counters.clear()
        self.name_codes.clear()
        self.cat_codes.clear()
        self.defaults = None
        self.clock, self.default_track, self.extra_tracks = 0, -1, []


@dataclass
class Columns:
    """The walk's output.  Events: one row per slice or instant, ``start``/``end`` as (ns value,
    clock domain code) pairs (codes int16: `.clocks.MAX_DOMAINS`; rows and places int32),
    ``end_dom`` -1 for a begin never ended.  Counters: one row per
    sample.  Flows: (event row, flow id, terminating) in file order."""

    ev_track: array = field(default_factory=lambda: array("i"))
    ev_name: array = field(default_factory=lambda: array("i"))
    ev_cat: array = field(default_factory=lambda: array("i"))
    ev_kind: array = field(default_factory=lambda: array("b"))
    ev_start: array = field(default_factory=lambda: array("q"))
    ev_start_dom: array = field(default_factory=lambda: array("h"))
    ev_end: array = field(default_factory=lambda: array("q"))
    ev_end_dom: array = field(default_factory=lambda: array("h"))
    ev_stacked: array = field(default_factory=lambda: array("b"))  # 1: a begin, ended by an end record
    ev_order: array = field(default_factory=lambda: array("i"))  # begins: place among begins+ends
    end_track: array = field(default_factory=lambda: array("i"))  # every slice end read
    end_time: array = field(default_factory=lambda: array("q"))
    end_dom: array = field(default_factory=lambda: array("h"))
    end_order: array = field(default_factory=lambda: array("i"))
    end_row: array = field(default_factory=lambda: array("i"))  # the slice it closed, -1 none
    ct_track: array = field(default_factory=lambda: array("i"))
    ct_time: array = field(default_factory=lambda: array("q"))
    ct_dom: array = field(default_factory=lambda: array("h"))
    ct_value: array = field(default_factory=lambda: array("d"))
    flow_row: array = field(default_factory=lambda: array("i"))
    flow_id: array = field(default_factory=lambda: array("Q"))
    flow_end: array = field(default_factory=lambda: array("b"))
    flow_at_end: array = field(default_factory=lambda: array("b"))  # bound at the slice's end
    args: dict[int, dict[str, Any]] = field(default_factory=dict)
    strings: list[str] = field(default_factory=list)
    tracks: list[Track] = field(default_factory=list)
    clocks: Clocks = field(default_factory=Clocks)
    placed: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)  # what is not a packet: values, entries
    records: int = 0
    dropped: int = 0  # packets with previous_packet_dropped

    def release(self, *names: str) -> None:
        """Empty the columns ``names`` (read already): their memory goes before the next step."""
        for name in names:
            column = getattr(self, name)
            setattr(self, name, array(column.typecode) if isinstance(column, array) else column[:0].copy())
