"""One concept, one definition (issue 31, item 4): each test scans the package's source for a
second definition of something one module decides -- a literal list, a table, a walk -- and
fails where one appears outside its module.  String constants are read from the syntax tree,
docstrings left out (prose may name a call)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from jupyter_profview import dtypes, kinds
from jupyter_profview._native import keys

PACKAGE = Path(kinds.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings (module, class, function, attribute)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
                        and isinstance(stmt.value.value, str):
                    out.add(id(stmt.value))
    return out


def strings(path: Path) -> Iterator[tuple[str, int]]:
    """(text, line) of every string constant of a module that is not a docstring; an f-string's
    literal parts too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.value, node.lineno


def where(predicate: Callable[[str], bool], allowed: set[str]) -> list[str]:
    found = []
    for path in SOURCES:
        if rel(path) in allowed:
            continue
        for text, line in strings(path):
            if predicate(text):
                found.append(f"{rel(path)}:{line}: {text[:60]!r}")
    return found


def test_host_sync_calls_are_named_in_kinds_only() -> None:
    names = kinds.HOST_SYNC_CALLS | kinds.HOST_SYNC_COPIES | kinds.HTA_PATH_WAITS | {"cudaStreamQuery"}
    assert where(lambda t: t in names or "Synchronize" in t, {"kinds.py"}) == []


def test_the_step_annotation_is_named_in_kinds_only() -> None:
    assert where(lambda t: t.startswith(kinds.STEP_ANNOTATION), {"kinds.py"}) == []


def test_one_table_of_bytes_per_dtype() -> None:
    """No dict literal elsewhere that maps three or more dtype names to a number of bytes."""
    found = []
    names = set(dtypes.DTYPE_BYTES)
    for path in SOURCES:
        if rel(path) == "dtypes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Dict):
                continue
            sizes = [k.value for k, v in zip(node.keys, node.values, strict=True)
                     if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.lower() in names
                     and isinstance(v, ast.Constant) and isinstance(v.value, int)]
            if len(sizes) >= 3:  # a name -> bytes table
                found.append(f"{rel(path)}:{node.lineno}: {sizes[:4]}")
    assert found == []


def test_the_dtype_table_agrees_with_torch() -> None:
    """Every torch dtype, by its Python name (`float32`), its ScalarType name (`Float`, what
    record_param_comms writes) and the C++ name torch's profiler writes as `Input type`
    (`c10::Half`, `long int`): the table's size is torch's `element_size()`."""
    torch = pytest.importorskip("torch")
    checked = 0
    for name in dir(torch):
        dtype = getattr(torch, name)
        if not isinstance(dtype, torch.dtype) or name != str(dtype).removeprefix("torch."):
            continue
        size = torch.empty(0, dtype=dtype).element_size()
        got = dtypes.dtype_bytes(name)
        if got is None and name.startswith(("uint", "int1", "int2", "int3", "int4", "int5", "int6", "int7",
                                             "float4", "bits", "float8_e8")):
            continue  # sub-byte and bit types, new unsigned: not written by any trace seen
        assert got == size, (name, got, size)
        checked += 1
    assert checked >= 15
    with torch.profiler.profile(record_shapes=True) as prof:
        for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                      torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
                      torch.complex64, torch.complex128):
            torch.zeros(4, dtype=dtype).clone()
    written = {}
    for event in prof.events():
        if event.name == "aten::clone" and event.input_shapes and event.input_shapes[0] == [4]:
            written[event.input_dtypes[0]] = None
    assert len(written) == 12
    for type_name in written:
        assert dtypes.dtype_bytes(type_name) is not None, type_name


def test_self_intervals_are_derived_once() -> None:
    found = [rel(p) for p in SOURCES if rel(p) != "derived/self_time.py"
             and re.search(r"^def (_gaps|self_interval\w*)\(", p.read_text(encoding="utf-8"), re.M)]
    assert found == []


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def ancestor_steps(tree: ast.AST) -> Iterator[int]:
    """Lines of a step up the tree inside a loop: a variable (or its slice) set from a table of
    parents indexed or reindexed by that same variable (`p = parent[p]`,
    `up = events["parent"].reindex(up)`, `out[bad] = self.parent_all[out[bad]]`)."""
    for loop in ast.walk(tree):
        if not isinstance(loop, (ast.For, ast.While)):
            continue
        for node in ast.walk(loop):
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0]
            base = target.value if isinstance(target, ast.Subscript) else target
            if not isinstance(base, ast.Name):
                continue
            for sub in ast.walk(node.value):
                table = sub.value if isinstance(sub, ast.Subscript) else \
                    sub.func.value if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr in ("reindex", "loc", "take") else None
                if table is None:
                    continue
                key = sub.slice if isinstance(sub, ast.Subscript) \
                    else ast.Tuple(elts=list(sub.args), ctx=ast.Load())
                text = ast.unparse(table)
                if "parent" in text and base.id in _names(key) and "parent" not in base.id:
                    yield node.lineno


def test_one_ancestor_walk() -> None:
    """A walk up `parent` is `nesting.climb` (`nearest_marked`, `ancestor_mask` on it): no
    function elsewhere walks ancestors itself (a fixed number of levels, or its own loop)."""
    found = []
    for path in SOURCES:
        if rel(path) == "nesting.py":
            continue
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^\s*def (\w*ancestor\w*)\(", text, re.M):
            found.append(f"{rel(path)}: def {match[1]}")
        found += [f"{rel(path)}:{line}: a step up `parent` in a loop"
                  for line in ancestor_steps(ast.parse(text))]
    assert found == []


def test_the_ancestor_guard_sees_each_form() -> None:
    """The three walks that were (a depth-limited reindex, a climb by slice, a plain step) are
    each seen; a pass over the parents top down (`codes[i] = codes[parent[i]]`) is not a walk."""
    walks = ["for _ in range(5):\n    up = parent.reindex(up).to_numpy()",
             "while True:\n    out[bad] = self.parent_all[out[bad]]",
             "while p >= 0:\n    p = int(parent[p])"]
    assert [len(list(ancestor_steps(ast.parse(w)))) for w in walks] == [1, 1, 1]
    assert list(ancestor_steps(ast.parse("for i in order:\n    depth[i] = depth[parent[i]] + 1"))) == []


def category_masks(tree: ast.AST) -> Iterator[int]:
    """Lines that make a mask over a code column themselves: the missing-code slot
    (`... + [False]`, `np.append(hits, False)`), a filtered comprehension over a column's
    categories (`[n for n in cat.categories if ...]`), or `isin` of the values (or codes) a
    filtered comprehension picked (`np.isin(codes, [i for i, n in enumerate(names) if ...])`)."""
    def filtered(node: ast.AST) -> bool:  # picks among a column's values or codes
        return isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and any(
            g.ifs and re.search(r"enumerate|categories|\b(names|cats|labels)\b", ast.unparse(g.iter))
            for g in node.generators)

    picked_names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign) and filtered(node.value)
                    for t in node.targets if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("isin") and any(
                filtered(a) or isinstance(a, ast.Name) and a.id in picked_names for a in node.args):
            yield node.lineno  # rows whose value is among the values a predicate picked
        missing_slot = isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) \
            and isinstance(node.right, ast.List) and len(node.right.elts) == 1 \
            and getattr(node.right.elts[0], "value", None) is False
        appended = isinstance(node, ast.Call) and ast.unparse(node.func).endswith("append") \
            and len(node.args) == 2 and getattr(node.args[1], "value", None) is False
        picked = isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)) and any(
            g.ifs and re.search(r"categories|\bcats\b", ast.unparse(g.iter)) for g in node.generators)
        if missing_slot or appended or picked:
            yield getattr(node, "lineno", 0)


#: masks still made outside `kinds` (each should call `kinds.code_mask`; none left since
#: widget/lod.py went over): the test fails once one is gone, so the list only shrinks
NOT_YET_ONE: set[str] = set()


def test_per_category_masks_in_one_place() -> None:
    """A mask over a code column is `kinds.by_code` / `kinds.code_mask` (`derived.masks.match`
    over a categorical column calls it)."""
    found = {rel(p): list(category_masks(ast.parse(p.read_text(encoding="utf-8"))))
             for p in SOURCES if rel(p) != "kinds.py"}
    found = {k: v for k, v in found.items() if v}
    assert sorted(found) == sorted(NOT_YET_ONE), found


def test_the_mask_guard_sees_each_form() -> None:
    """The four masks that were: masks.match, chrome.gpu.category_table, pipeline's Coded.mask,
    the step / collective names picked from the categories (torch_phases, ranks.derived)."""
    forms = ["np.append(hits, False)[cat.cat.codes.to_numpy()]",
             "np.asarray([c in wanted for c in cats] + [False], bool)",
             "np.isin(codes, [i for i, n in enumerate(names) if is_step(n)])",
             "wanted = [n for n in names if COLLECTIVE_ANNOTATION.match(str(n))]\n"
             "hit = ev['name'].isin(wanted)"]
    assert [len(list(category_masks(ast.parse(f)))) for f in forms] == [1, 1, 1, 1]


def test_devices_are_decided_in_masks_only() -> None:
    """The devices of a trace are `derived.masks.gpu_labels` / `active_gpus` / `on_device`:
    nobody else makes a set of `launches["gpu"]`."""
    pattern = re.compile(r"set\([^)\n]*\[\"gpu\"\]|\[\"gpu\"\]\.cat\.remove_unused_categories")
    found = [rel(p) for p in SOURCES
             if rel(p) != "derived/masks.py" and pattern.search(p.read_text(encoding="utf-8"))]
    assert found == []


def test_analyses_do_not_build_rank_cache_paths() -> None:
    """A rank's cached table is `TraceSet.rank_table` (file names: `ranks.cache.table_path`)."""
    found = [f"{rel(p)}:{line}" for p in SOURCES if rel(p).startswith(("analysis/", "widget/"))
             for text, line in strings(p) if ".parquet" in text]
    found += [rel(p) for p in SOURCES if rel(p).startswith(("analysis/", "widget/"))
              and re.search(r"\.entry\(", p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_args_taken_out_are_listed_once() -> None:
    """`_native.keys` lists them; the lookup list is made from it; no other module assigns a
    literal list of them to a list of taken-out args (`NUMERIC_ARGS`, `VALUE_ARGS`, `LOOKUP_*`).
    The C scanner's lists are generated from it (next test)."""
    all_keys = set(keys.NUMERIC_ARGS) | set(keys.VALUE_ARGS)
    assert set(keys.LOOKUP_NUMERIC) <= set(keys.NUMERIC_ARGS)
    found = []
    for path in SOURCES:
        if rel(path) == "_native/keys.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Assign) or not isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            hits = [e.value for e in node.value.elts if isinstance(e, ast.Constant) and e.value in all_keys]
            if any(re.search(r"^(NUMERIC_ARGS|VALUE_ARGS|LOOKUP_\w+)$", n) for n in names) and len(hits) >= 2:
                found.append(f"{rel(path)}:{node.lineno}: {names} = {hits[:4]}")
    assert found == []


def test_collective_calls_are_numbered_once() -> None:
    """The k-th call of a rank is `ranks.derived.call_numbers`: nobody else numbers calls by
    their process group."""
    pattern = re.compile(r"groupby\([^)]*(\"pg\"|\"process_group\")[^)]*\)[^\n]*cumcount")
    found = [rel(p) for p in SOURCES
             if rel(p) != "ranks/derived.py" and pattern.search(p.read_text(encoding="utf-8"))]
    assert found == []


def test_the_scanner_key_lists_are_generated_from_keys_py(tmp_path: Path) -> None:
    """No C source spells an arg key (they come from the header the build writes from
    `_native/keys.py`), and a library built from a changed `keys.py` takes out the changed keys."""
    import ctypes
    import shutil
    import sys

    root = PACKAGE.parent
    listing = re.compile(r"#define (NUMERIC_LIST|VALUE_LIST|NUM_KEYS|VAL_KEYS)\b.*")
    sources = [p for p in sorted((PACKAGE / "_native").glob("*.[ch]")) if p.name != "keys_gen.h"]
    spelled = [f"{p.name}: {m[0]}" for p in sources
               for m in listing.finditer(p.read_text(encoding="utf-8"))]
    assert spelled == []
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    sys.path.insert(0, str(root))
    try:
        import hatch_build
    finally:
        sys.path.remove(str(root))
    native = tmp_path / "jupyter_profview" / "_native"
    native.mkdir(parents=True)
    for p in (PACKAGE / "_native").glob("*.[ch]"):
        if p.name != "keys_gen.h":
            shutil.copy(p, native / p.name)
    text = (PACKAGE / "_native" / "keys.py").read_text(encoding="utf-8")
    planted = text.replace('"Group size",', '"Group size", "planted numeric",') \
        .replace('"dtype",', '"dtype", "planted value",')
    assert planted != text
    (native / "keys.py").write_text(planted, encoding="utf-8")
    built = hatch_build.compile_native(tmp_path)
    assert built is not None
    lib = ctypes.CDLL(str(built))
    lib.pv_num_key.restype = lib.pv_val_key.restype = ctypes.c_char_p
    lib.pv_num_key.argtypes = lib.pv_val_key.argtypes = [ctypes.c_int]
    num = tuple(lib.pv_num_key(i).decode() for i in range(lib.pv_num_keys()))
    val = tuple(lib.pv_val_key(i).decode() for i in range(lib.pv_val_keys()))
    assert num == (*keys.NUMERIC_ARGS, "planted numeric")
    assert val == (*keys.VALUE_ARGS, "planted value")


def test_an_op_far_above_a_selected_kernel_is_picked() -> None:
    """The efficiency table's selection walks to the root (it stopped four levels above the
    kernel's op): a chain of 8 nested ops, the modelled op at the top, a kernel under the bottom."""
    import numpy as np
    import pandas as pd

    from jupyter_profview.widget.efficiency_table import efficiency_rows_of

    events = pd.DataFrame({"parent": [-1, 0, 1, 2, 3, 4, 5, 6, -1]})  # 8: the kernel
    launches = pd.DataFrame({"kernel": [8], "cpu_op": pd.array([7], dtype="Int64")})
    eff = pd.DataFrame({"event": [0, 5]})
    assert efficiency_rows_of(eff, events, launches, np.array([8])).tolist() == [0, 1]
    assert efficiency_rows_of(eff, events, launches, np.array([3])).tolist() == []
