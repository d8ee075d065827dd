"""mkdocs hook: the schema page's tables, made from the column spec (`jupyter_profview/schema.py`).

A page that holds the line `<!-- schema: tables -->` gets, in its place, the Markdown of every
table of [`jupyter_profview.schema.TABLES`][jupyter_profview.schema.TABLES]."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

MARKER = "<!-- schema: tables -->"
ROOT = Path(__file__).resolve().parents[2]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from jupyter_profview.schema import markdown_all

    return markdown.replace(MARKER, markdown_all(level=2))
