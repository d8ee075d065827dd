"""Hatch build hook: compile the optional native scanner (plain C, loaded with
ctypes).  Without a C compiler the package still works on its pure-Python
paths, only slower, so a failed compile is reported and not fatal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # `python hatch_build.py` in an environment without hatchling
    BuildHookInterface = object

NATIVE = Path("jupyter_profview") / "_native"


def compile_native(root: Path) -> Path | None:
    sources = sorted((root / NATIVE).glob("*.c"))
    if not sources:
        return None
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        print("jupyter_profview: no C compiler; using the pure-Python loader", file=sys.stderr)
        return None
    out = root / NATIVE / "_profview_native.so"
    cmd = [cc, "-O3", "-shared", "-fPIC", "-std=c99", "-o", str(out), *map(str, sources), "-lm"]
    try:
        subprocess.run(cmd, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"jupyter_profview: native build failed ({exc}); using pure Python", file=sys.stderr)
        return None
    return out


def wheel_tag() -> str:
    """``py3-none-<platform>``: the library is loaded with ctypes, not as a
    CPython extension, so one wheel serves every Python 3 on the platform."""
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


#: the prebuilt JupyterLab extension (ensured targets of the second npm build)
LABEXTENSION_TARGETS = ["jupyter_profview/labextension/package.json",
                        "jupyter_profview/labextension/static/style.js"]


def build_labextension(root: Path) -> None:
    """The second npm build, after the widget's (hatch-jupyter-builder's hook): ``labextension/``
    -> ``jupyter_profview/labextension/`` with ``@jupyterlab/builder``.  Skipped when its output
    exists (``PROFVIEW_BUILD_LABEXTENSION=1`` forces it); a missing output fails the build."""
    targets = [root / t for t in LABEXTENSION_TARGETS]
    if all(t.exists() for t in targets) and os.environ.get("PROFVIEW_BUILD_LABEXTENSION") != "1":
        return
    from hatch_jupyter_builder import npm_builder

    # `jupyter labextension build` comes with jupyterlab, a build requirement: find it in this env
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    npm_builder("wheel", "standard", path=str(root / "labextension"), build_cmd="build", npm=["npm"],
                force=True)
    missing = [str(t) for t in targets if not t.exists()]
    if missing:
        raise RuntimeError(f"the JupyterLab extension build did not produce {missing}")


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg,misc]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel":
            build_labextension(Path(self.root))
        built = compile_native(Path(self.root))
        if built is not None and self.target_name == "wheel":
            build_data["pure_python"] = False
            build_data["tag"] = wheel_tag()


if __name__ == "__main__":  # `python hatch_build.py` rebuilds in place for development
    print(compile_native(Path(__file__).parent))
