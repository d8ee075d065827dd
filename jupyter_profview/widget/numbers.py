"""The number formatting rule of the front end, for the widget modules.

The implementation lives in `jupyter_profview.numbers` (no widget
dependency, so that the analyses and the command line use the same rule);
this module re-exports it under its historical name."""

from __future__ import annotations

from ..numbers import NO_VALUE, fixed_half_up, format_bytes, format_duration

__all__ = ["NO_VALUE", "fixed_half_up", "format_bytes", "format_duration"]
