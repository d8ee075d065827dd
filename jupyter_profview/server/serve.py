"""``profview serve PATH``: the profile viewer without JupyterLab (e.g. on a cluster login node
behind an SSH tunnel).  A jupyter-server with only this extension and no kernels, terminals or
contents API: the same viewer API, the same auth (a random token in the printed URL), bound to
localhost unless ``--host`` says otherwise."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import quote

from ..errors import ProfviewError


def viewer_url(connection_url: str, name: str, token: str) -> str:
    url = f"{connection_url.rstrip('/')}/profview/view?path={quote(name)}"
    return url + (f"&token={token}" if token else "")


def serve(path: str, port: int = 8765, host: str = "127.0.0.1", extra_argv: list[str] | None = None) -> None:
    """Serve ``path`` (a trace file or a run directory) until interrupted."""
    from jupyter_server.serverapp import ServerApp

    target = Path(path).expanduser().resolve()
    if not target.exists():
        raise ProfviewError("no such file or directory", source=str(path))
    root = target.parent
    argv = [f"--ServerApp.root_dir={root}", f"--ServerApp.ip={host}", f"--ServerApp.port={port}",
            "--ServerApp.open_browser=False", "--ServerApp.terminals_enabled=False",
            # a viewer that reads files and runs no code: root (e.g. in a container) is fine
            "--ServerApp.allow_root=True",
            "--ServerApp.default_url=/profview/view", *(extra_argv or [])]
    class ViewerServerApp(ServerApp):  # type: ignore[misc]
        """Only the viewer: no kernels, terminals, contents or files API behind the token."""

        name = "profview-serve"
        default_services = ("api", "auth", "security", "shutdown")  # type: ignore[assignment]

    app = ViewerServerApp(jpserver_extensions={"jupyter_profview.server": True})
    app.initialize(argv=argv, find_extensions=False)
    app.web_app.settings["profview_default_path"] = target.name
    token = app.identity_provider.token
    url = viewer_url(app.connection_url, target.name, token)
    print(f"profview: serving {target}\nprofview: open {url}", file=sys.stderr, flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"profview: listening on {host}: anyone who can reach it and has the token can read "
              f"files under {root}", file=sys.stderr, flush=True)
    app.start()
