"""``{base_url}/profview/view?path=P``: the viewer as a plain page (``profview serve``'s page;
any Jupyter server with the extension has it too).  The page loads ``static/standalone.js``
(built from ``js/src/standalone.ts``), which talks to the API of `.handlers`."""

from __future__ import annotations

import html
import json
from pathlib import Path

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join

STATIC = Path(__file__).parent.parent / "static"

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{static}/widget.css">
<style>body {{ margin: 0; padding: 8px; font-family: system-ui, sans-serif; }}
.pv-standalone-head {{ display: flex; gap: 12px; align-items: baseline; margin: 0 0 6px; font-size: 13px; }}
.pv-standalone-error {{ color: #b00020; white-space: pre-wrap; }}
.pv-standalone-note {{ margin: 0 0 6px; padding: 4px 8px; font-size: 13px; background: #fff4ce; }}</style>
</head><body>
<div class="pv-standalone-head"><strong>profview</strong><span>{name}</span></div>
<div id="profview-root"></div>
<script id="profview-config" type="application/json">{config}</script>
<script type="module" src="{static}/standalone.js"></script>
</body></html>
"""


class ViewerPage(JupyterHandler):
    auth_resource = "contents"  # as the API (handlers.py): the page shows a file under the root

    @tornado.web.authenticated
    @authorized("read")
    def get(self) -> None:
        path = self.get_argument("path", self.settings.get("profview_default_path", ""))
        if not (STATIC / "standalone.js").is_file():
            raise tornado.web.HTTPError(
                500, "the viewer's JavaScript (static/standalone.js) is not built: cd js && npm run build")
        self.xsrf_token  # noqa: B018 - sets the _xsrf cookie the page's POSTs echo back
        # no "<" at all inside the <script> (a "<!--<script>" would swallow the module script that
        # follows): escaped as \u003c, which JSON.parse reads back (save_html does the same)
        config = json.dumps({"baseUrl": self.base_url, "path": path}).replace("<", "\\u003c")
        static = url_path_join(self.base_url, "profview", "static")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(PAGE.format(title=html.escape(f"profview: {path}"), name=html.escape(path),
                                config=config, static=static))


def page_handlers(base_url: str) -> list[tuple[str, type[tornado.web.RequestHandler], dict[str, str]]]:
    return [
        (url_path_join(base_url, "profview", "view"), ViewerPage, {}),
        (url_path_join(base_url, "profview", "static", r"(standalone\.js|widget\.css)"),
         tornado.web.StaticFileHandler, {"path": str(STATIC)}),
    ]
