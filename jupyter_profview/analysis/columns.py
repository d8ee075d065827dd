"""Masks and keys over a trace's categorical columns, shared by the analyses (one
implementation, in [`derived.masks`][jupyter_profview.derived.masks])."""

from __future__ import annotations

from ..derived.masks import (
    active_gpus,
    among,
    devices_of,
    gpu_labels,
    host_syncs,
    match,
    on_device,
    thread_keys,
)

__all__ = ["active_gpus", "among", "devices_of", "gpu_labels", "host_syncs", "match", "on_device",
           "thread_keys"]
