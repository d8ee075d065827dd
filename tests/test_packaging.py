"""Packaging that fails loudly: the native library's ABI check, the warning
when the native scanner is missing, the wheel tag, extras and groups."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import pytest

import jupyter_profview as profview
from jupyter_profview import _native

ROOT = Path(__file__).parents[1]
CC = shutil.which("cc") or shutil.which("gcc")
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")


def fake_library(tmp_path: Path, body: str) -> Path:
    source = tmp_path / "fake.c"
    source.write_text(body)
    out = tmp_path / "_profview_native.so"
    assert CC is not None
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(out), str(source)], check=True)
    return out


@needs_cc
def test_library_of_another_abi_version_is_refused(tmp_path: Path) -> None:
    path = fake_library(tmp_path, "int pv_abi_version(void) { return 1; }\n"
                                  "int pv_scan_new(void) { return *(volatile int *)0; }\n")
    lib, why = _native._open(path)
    assert lib is None
    assert why is not None and "ABI version 1" in why and f"needs {_native.ABI_VERSION}" in why


@needs_cc
def test_library_without_an_abi_version_is_refused(tmp_path: Path) -> None:
    path = fake_library(tmp_path, "int pv_num_keys(void) { return 0; }\n")
    lib, why = _native._open(path)
    assert lib is None and why is not None and "no pv_abi_version" in why


def test_built_library_passes_and_a_changed_version_refuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    if not _native.LIBRARY.exists():
        pytest.skip("native library not built")
    lib, why = _native._open(_native.LIBRARY)
    assert lib is not None and why is None
    assert lib.pv_abi_version() == _native.ABI_VERSION
    header = (ROOT / "jupyter_profview/_native/scan_internal.h").read_text()
    assert f"#define PV_ABI_VERSION {_native.ABI_VERSION}\n" in header
    monkeypatch.setattr(_native, "ABI_VERSION", _native.ABI_VERSION + 1)
    lib, why = _native._open(_native.LIBRARY)
    assert lib is None and why is not None and "stale" in why


def test_missing_library_warns_once_and_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "1")
    monkeypatch.setattr(_native, "_load", lambda: None)
    monkeypatch.setattr(_native, "_refusal", "_profview_native.so is not built (test)")
    monkeypatch.setattr(_native, "_warned", False)
    path = profview.example("torch_mlp_train")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = profview.load(path)
        profview.load(path)
    mine = [w for w in caught if issubclass(w.category, profview.NativeUnavailableWarning)]
    assert len(mine) == 1
    text = str(mine[0].message)
    assert "not built (test)" in text and "hatch_build.py" in text and "C compiler" in text
    assert mine[0].filename == __file__  # points at the caller of load()
    assert first.metadata["decoder"] == "python"


def test_no_warning_when_python_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFVIEW_NATIVE", "0")
    monkeypatch.setattr(_native, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", _native.NativeUnavailableWarning)
        profview.load(profview.example("torch_mlp_train"))


def test_native_build_links_libm_and_wheel_is_tagged_for_ctypes(monkeypatch: pytest.MonkeyPatch) -> None:
    import sysconfig

    sys.path.insert(0, str(ROOT))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(ROOT))
    commands: list[list[str]] = []
    monkeypatch.setattr(hatch_build.subprocess, "run", lambda cmd, check: commands.append(cmd))
    monkeypatch.setenv("CC", "cc")
    hatch_build.compile_native(ROOT)
    assert commands and commands[0][-1] == "-lm"
    tag = hatch_build.wheel_tag()
    assert tag == "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def test_pyproject_extras_groups_and_bounds() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = project["project"]["dependencies"]
    extras = project["project"]["optional-dependencies"]
    assert not any(d.startswith("vl-convert-python") for d in deps)
    assert any(d.startswith("vl-convert-python") for d in extras["charts"])
    assert any(d.startswith("vl-convert-python") for d in extras["test"])  # notebooks render offline
    assert any(d.startswith("vl-convert-python") for d in
               (ROOT / "binder/requirements.txt").read_text().splitlines())
    anywidget = next(d for d in deps if d.startswith("anywidget"))
    assert "<" in anywidget
    dev = project["dependency-groups"]["dev"]
    assert {"ruff", "mypy"} <= {d.split(">")[0].split("=")[0] for d in dev}
    assert not any(d.startswith(("ruff", "mypy")) for d in extras["test"])
    assert "--group dev" in (ROOT / "scripts/setup.sh").read_text()


def test_no_private_anywidget_module_is_imported() -> None:
    for path in (ROOT / "jupyter_profview").rglob("*.py"):
        text = path.read_text()
        assert "anywidget._" not in text, path


def test_typed_package_and_load_signature() -> None:
    assert (ROOT / "jupyter_profview/py.typed").is_file()
    # load -> Trace, always (a multi-host XSpace run directory is load_many's): typed users write
    # t = profview.load(p); t.launches without a cast
    from jupyter_profview import loader

    assert profview.load is loader.load
    assert typing.get_type_hints(profview.load)["return"] is profview.Trace


def test_charts_without_vl_convert_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from jupyter_profview import charts

    monkeypatch.setitem(sys.modules, "vl_convert", None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"pip install 'jupyter_profview\[charts\]'"):
        charts.enable_offline()


def test_ctypes_library_has_no_python_symbols() -> None:
    """The library is plain C (no CPython ABI), which is what the py3-none tag says."""
    if not _native.LIBRARY.exists():
        pytest.skip("native library not built")
    lib = ctypes.CDLL(str(_native.LIBRARY))
    assert not hasattr(lib, "PyInit__profview_native")
