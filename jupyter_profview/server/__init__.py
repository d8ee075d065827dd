"""The jupyter-server extension: profiler traces opened from JupyterLab's file browser.

Enabled by ``jupyter-config/jupyter_server_config.d/jupyter_profview.json`` (installed with the
wheel).  Traces load in a worker process (`.store`, `.worker`); the HTTP API
(`.handlers`) serves the same state and commands as the notebook widget's RPC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .store import TraceStore

MAX_SESSIONS = 8


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_profview.server"}]


def setup_handlers(web_app: Any, max_sessions: int = MAX_SESSIONS) -> TraceStore:
    """Register the API and the viewer page on a jupyter-server ``web_app``; returns its store."""
    # imported here, not at module level: `jupyter server extension list` and server start stay fast
    from .handlers import api_handlers
    from .page import page_handlers
    from .store import TraceStore

    store = TraceStore(max_sessions)
    web_app.settings["profview_store"] = store
    base_url = web_app.settings["base_url"]
    web_app.add_handlers(".*$", [*api_handlers(base_url), *page_handlers(base_url)])
    return store


def _load_jupyter_server_extension(serverapp: Any) -> None:
    store = setup_handlers(serverapp.web_app)
    serverapp.log.info("jupyter_profview: profile viewer API at %sprofview/api", serverapp.base_url)
    _STORES.append(store)  # its worker process is shut down with the server


def _unload_jupyter_server_extension(serverapp: Any) -> None:
    while _STORES:
        _STORES.pop().shutdown()


_STORES: list[TraceStore] = []
