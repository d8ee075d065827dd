"""``profview serve PATH``: the profile viewer without JupyterLab (e.g. on a cluster login node
behind an SSH tunnel).  A jupyter-server with only this extension and no kernels, terminals,
contents or files API: the same viewer API, the same auth (a random token in the printed URL),
bound to localhost unless ``--host`` says otherwise.

It serves exactly ``PATH`` (a trace file, or a run directory and the files in it): the server's
root is ``PATH``'s parent (so the page names it as the user does) but every session is confined
to ``PATH`` itself (``profview_scope``, see [confine][jupyter_profview.sources.confine]) unless
``--parent`` widens it to the whole parent.  Request bodies are limited to
``handlers.MAX_BODY`` for the whole server: nothing is uploaded.  ``SECURITY.md`` lists these
promises."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import ProfviewError


def viewer_url(connection_url: str, name: str, token: str) -> str:
    url = f"{connection_url.rstrip('/')}/profview/view?path={quote(name)}"
    return url + (f"&token={token}" if token else "")


def serve(path: str, port: int = 8765, host: str = "127.0.0.1", extra_argv: list[str] | None = None,
          parent: bool = False) -> None:
    """Serve ``path`` (a trace file or a run directory) until interrupted; ``parent``: every
    file under its parent directory too."""
    from jupyter_server.serverapp import ServerApp
    from jupyter_server.services.contents.filemanager import FileContentsManager

    from .handlers import MAX_BODY

    target = Path(path).expanduser().resolve()
    if not target.exists():
        raise ProfviewError("no such file or directory", source=str(path))
    root = target.parent
    argv = [f"--ServerApp.root_dir={root}", f"--ServerApp.ip={host}", f"--ServerApp.port={port}",
            "--ServerApp.open_browser=False", "--ServerApp.terminals_enabled=False",
            # a viewer that reads files and runs no code: root (e.g. in a container) is fine
            "--ServerApp.allow_root=True", f"--ServerApp.max_body_size={MAX_BODY}",
            "--ServerApp.default_url=/profview/view", *(extra_argv or [])]

    class NoFilesContentsManager(FileContentsManager):  # type: ignore[misc]
        """The root and ``allow_hidden`` the viewer reads, without the ``/files/`` route a
        contents manager adds to the server (it would serve every file under the root)."""

        def get_extra_handlers(self) -> list[Any]:
            return []

    class ViewerServerApp(ServerApp):  # type: ignore[misc]
        """Only the viewer: no kernels, terminals, contents or files API behind the token."""

        name = "profview-serve"
        default_services = ("api", "auth", "security", "shutdown")  # type: ignore[assignment]

    app = ViewerServerApp(jpserver_extensions={"jupyter_profview.server": True},
                          contents_manager_class=NoFilesContentsManager)
    app.initialize(argv=argv, find_extensions=False)
    app.web_app.settings["profview_default_path"] = target.name
    if not parent:
        app.web_app.settings["profview_scope"] = target
    token = app.identity_provider.token
    url = viewer_url(app.connection_url, target.name, token)
    served = root if parent else target
    print(f"profview: serving {served}\nprofview: open {url}", file=sys.stderr, flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"profview: listening on {host}: anyone who can reach it and has the token can read "
              f"{'files under ' if served.is_dir() else ''}{served}", file=sys.stderr, flush=True)
    app.start()
