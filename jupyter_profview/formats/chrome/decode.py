"""Pure-Python reference decoder: Chrome Trace Event JSON -> `ChromeColumns`.

The whole content (streamed in, long whitespace runs squeezed, see
`json_document`; a gzip input past its value budget is
refused while it streams, ``limits.json_value_budget``) is parsed with `orjson.loads` --
only once its values fit in the memory the process may still allocate (orjson out of memory
may crash instead of raising) -- then one pass over the event list fills the columns.
The native scanner (``native.decode_chrome``) must agree with this module;
`normalized` puts two ChromeColumns in a canonical form so tests can
compare them whatever dictionary order or args serialisation each decoder
uses.

Accepted inputs
:   * object format ``{"traceEvents": [...], ...}``: the other top-level keys
      go to ``top_level`` (parsed);
    * array format ``[...]``; as the Trace Event spec allows, the closing
      ``]`` may be missing (the file then ends after a complete event, with or
      without one trailing comma, or right after the ``[``).  A cut inside an
      event is an error.
    * a UTF-8 byte-order mark before the JSON is ignored.

Field rules (see `.chrome_columns` for the columns)
:   * ``pid``/``tid``/``id`` tokens: integer -> decimal text, string ->
      ``"s:" + text``, anything else -> ``"j:" + compact JSON``.  ``id2``
      (used when ``id`` is absent): ``{"local": X}`` -> ``"id2l:" + token(X)``,
      ``{"global": X}`` -> ``"id2g:" + token(X)``, any other value ->
      ``"id2:" + token(value)``.
    * ``name``/``cat``: a string as is, anything else as compact JSON text.
    * ``bind_id`` (flow events v2): a token as ``pid``; ``flow_in`` /
      ``flow_out``: bits of ``flow_dir``, set only by the JSON literal ``true``.
    * ``ph``/``bp``: ASCII code of a one-character ASCII string, else 0;
      ``bp`` falls back to the instant scope ``s``.
    * ``ts``/``dur``: a JSON number or a string holding one, in microseconds,
      stored as ``x * 1000`` nanoseconds computed exactly from the decimal
      digits (``"4421857470102.117"`` -> ``4421857470102117``; beyond 3
      decimals rounded to an integer with ties to even), never through a
      double; beyond ±INT64_MAX ns (about ±292 years) or not a number is an
      error naming the record and field.  To keep the digits, non-integer
      ``"ts"``/``"dur"`` values are rewritten into marked strings before
      `orjson.loads` (see `mark_times`) and restored wherever
      they are nested (keys spelled with escapes, ``"t\u0073"``, included).
      Only when the data already holds every candidate marker character is
      there no rewrite: values then go through the shortest repr of their
      double (exact up to 15 significant digits).
    * ``args``: re-serialised with ``orjson.dumps`` into ``args_blob``;
      NUMERIC_ARGS keys holding numbers (not bools) -> sparse float64 columns.

Dictionaries (``names``, ``cats``, ``tokens``) are in order of first
appearance, scanning records in order and, within a record, the fields in the
order name, cat, pid, tid, id, bind_id.

Errors are `ProfviewError` with the source name, a line/column or
record position, and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from ...errors import ProfviewError, line_position
from ...limits import BYTES_PER_JSON_VALUE, available_memory
from ...sources import Source
from .columns import (
    ABSENT_TIME,
    FLOW_IN,
    FLOW_OUT,
    NUMERIC_ARGS,
    VALUE_ARGS,
    ChromeColumns,
    Interner,
    SparseCodes,
    SparseColumn,
)
from .times import mark_times, ns_from_text, restorer

BOM = b"\xef\xbb\xbf"
_INT64_MAX = int(np.iinfo(np.int64).max)
_MISSING = object()
_FAST = 2**53  # integer microseconds below this scale to int64 nanoseconds without a range check
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
def token(value: Any, restore: Callable[[bytes], bytes] | None = None) -> str:
    """The token text of a ``pid``/``tid``/``id`` value (see the module doc)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return "s:" + value
    return "j:" + _text(value, restore)


def id_token(event: dict[str, Any], restore: Callable[[bytes], bytes] | None = None) -> str | None:
    """Token of ``id``, else of ``id2``, else None."""
    if "id" in event:
        return token(event["id"], restore)
    if "id2" in event:
        id2 = event["id2"]
        if isinstance(id2, dict):
            if "local" in id2:
                return "id2l:" + token(id2["local"], restore)
            if "global" in id2:
                return "id2g:" + token(id2["global"], restore)
        return "id2:" + token(id2, restore)
    return None


def _text(value: Any, restore: Callable[[bytes], bytes] | None = None) -> str:
    if isinstance(value, str):
        return value
    text = orjson.dumps(value)
    return (restore(text) if restore else text).decode()


def _time(value: Any, index: int, field: str, source: str, marker: str | None = None) -> int:
    """Microseconds (number, numeric string or marked number text) -> int64
    nanoseconds, exactly (see the module doc)."""
    text: str | None = None
    shown = repr(value)
    if isinstance(value, str):
        if marker is not None and value.startswith(marker):
            shown = text = value[1:]  # a number rewritten by mark_times
        elif _JSON_NUMBER.fullmatch(value.strip()):
            text = value.strip()
    elif isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)  # a key spelled with escapes: the double is all there is
    if text is not None:
        ns = ns_from_text(text)
        if ns is not None:
            return ns
        raise ProfviewError(
            f"{field!r} = {shown} is out of range", source=source,
            position=f"traceEvents[{index}]", expected="a time in microseconds within ±292 years",
        )
    raise ProfviewError(
        f"{field!r} is {_describe(value)}", source=source, position=f"traceEvents[{index}]",
        expected="a number of microseconds (or a string holding one)",
    )


def _describe(value: Any) -> str:
    """``an object {"a":1}``, ``a string "x"``, ``null`` ... for error messages."""
    text = orjson.dumps(value).decode()
    text = text if len(text) <= 60 else text[:57] + "..."
    if value is None:
        return "null"
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}
    return f"{kinds.get(type(value), 'a number')} {text}"


def _json_error(data: bytes, exc: orjson.JSONDecodeError, source: str, skip: int,
                where: Callable[[int], str] | None = None) -> ProfviewError:
    """orjson reports a character index; turn it into a byte line/column
    (``where``: the position of a byte offset, for squeezed data)."""
    chars = data[skip:].decode("utf-8", errors="surrogateescape")[: exc.pos]
    offset = skip + len(chars.encode("utf-8", errors="surrogateescape"))
    message = exc.msg if hasattr(exc, "msg") else str(exc)
    if offset >= len(data.rstrip()):
        expected = "the rest of the JSON document (the file looks truncated)"
    else:
        expected = "valid JSON (an object, array, string, number, true, false or null)"
    return ProfviewError(
        f"invalid JSON: {message}", source=source,
        position=where(offset) if where else line_position(data, offset), expected=expected,
    )


def _check_allocation(data: bytes, source: str) -> None:
    """orjson is fast but, out of memory, may crash the process instead of raising: it parses
    only a document whose values (at most ``,`` + ``[`` + ``{`` + 1, see ``limits``) fit in the
    memory this process may still allocate."""
    values = data.count(b",") + data.count(b"[") + data.count(b"{") + 1
    need = values * BYTES_PER_JSON_VALUE
    left = available_memory()
    if left is not None and need > left:
        raise ProfviewError(
            f"{values:,} JSON values would need ~{need >> 20:,} MiB, more than the {left >> 20:,} MiB "
            "this process may still allocate", source=source, position="the whole document",
            expected="a trace whose objects fit in memory")


def parse_document(data: bytes, source: str, where: Callable[[int], str] | None = None,
                   ) -> tuple[list[Any], dict[str, Any], bool, str | None]:
    """``(events, top_level, array_format, marker)`` from the raw bytes
    (``marker``: see `mark_times`; ``top_level`` is already restored;
    ``where``: positions of byte offsets, see `Squeezed`)."""
    skip = len(BOM) if data.startswith(BOM) else 0
    _check_allocation(data, source)
    marked, marker = mark_times(data[skip:] if skip else data)
    try:
        doc = orjson.loads(marked)
    except orjson.JSONDecodeError as first:
        error = first
        doc = _unclosed_array(marked, 0)
        if doc is None:
            if marker is not None:  # report the error in the bytes as given
                try:
                    orjson.loads(memoryview(data)[skip:])
                except orjson.JSONDecodeError as original:
                    error = original
            raise _json_error(data, error, source, skip, where) from None
    if isinstance(doc, list):
        return doc, {}, True, marker
    if not isinstance(doc, dict):
        raise ProfviewError(
            f"the JSON document is {_describe(doc)}", source=source, position="top level",
            expected='an object with "traceEvents" or an array of events',
        )
    if "traceEvents" not in doc:
        keys = ", ".join(list(doc)[:8])
        raise ProfviewError(
            f"no \"traceEvents\" key (keys: {keys})", source=source, position="top level",
            expected='an object with a "traceEvents" array',
        )
    events = doc["traceEvents"]
    if not isinstance(events, list):
        raise ProfviewError(
            f'"traceEvents" is {_describe(events)}', source=source, position="traceEvents",
            expected="an array of event objects",
        )
    top_level = {k: v for k, v in doc.items() if k != "traceEvents"}
    restore = restorer(marker, source)
    if restore is not None and top_level:
        top_level = orjson.loads(restore(orjson.dumps(top_level)))
    return events, top_level, False, marker


def _unclosed_array(data: bytes, skip: int) -> list[Any] | None:
    """The array format with its closing ``]`` missing, or None."""
    body = data[skip:].strip(b" \t\r\n")
    if not body.startswith(b"[") or body.endswith(b"]"):
        return None
    if body.endswith(b","):  # at most one trailing comma, and only after an event
        body = body[:-1].rstrip(b" \t\r\n")
        if body.endswith((b"[", b",")):
            return None
    try:
        doc = orjson.loads(body + b"]")
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, list) else None


def decode_python(source: Source) -> ChromeColumns:
    """Decode a Chrome Trace Event file into columns (see the module doc)."""
    document = source.json_document()  # streamed: whitespace squeezed, strings limited
    data = document.data
    if not data.strip():
        raise ProfviewError("the input is empty", source=source.name, expected="Chrome trace JSON")
    events, top_level, array_format, marker = parse_document(data, source.name, document.position)
    return columns_from_events(events, top_level, array_format, source.name, marker)


def columns_from_events(
    events: list[Any], top_level: dict[str, Any], array_format: bool, source: str,
    marker: str | None = None,
) -> ChromeColumns:
    """The columns of already-parsed event objects (one tight loop, plain lists);
    ``marker`` as returned by `parse_document`."""
    rows = _Rows(len(events))
    _fill_rows(rows, events, source, marker)
    return rows.columns(top_level, array_format)


class _Rows:
    """The columns being filled, as plain lists (appending to numpy arrays one
    value at a time is far slower), with the dictionaries and the args blob."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.ph = [0] * n
        self.bp = [0] * n
        self.flow_dir = [0] * n
        self.name_code = [-1] * n
        self.cat_code = [-1] * n
        self.pid_code = [-1] * n
        self.tid_code = [-1] * n
        self.id_code = [-1] * n
        self.bind_code = [-1] * n
        self.ts_ns = [ABSENT_TIME] * n
        self.dur_ns = [ABSENT_TIME] * n
        self.args_offset = [-1] * n
        self.args_length = [0] * n
        self.numeric: dict[str, tuple[list[int], list[float]]] = {key: ([], []) for key in NUMERIC_ARGS}
        self.value: dict[str, tuple[list[int], list[int]]] = {key: ([], []) for key in VALUE_ARGS}
        self.values = _Values()
        self.names, self.cats, self.tokens = Interner(), Interner(), Interner()
        self.blob: list[bytes] = []

    def columns(self, top_level: dict[str, Any], array_format: bool) -> ChromeColumns:
        n = self.n
        return ChromeColumns(
            n=n, ph=np.array(self.ph, np.uint8), name_code=np.array(self.name_code, np.int32),
            cat_code=np.array(self.cat_code, np.int32), pid_code=np.array(self.pid_code, np.int32),
            tid_code=np.array(self.tid_code, np.int32), id_code=np.array(self.id_code, np.int32),
            ts_ns=np.array(self.ts_ns, np.int64), dur_ns=np.array(self.dur_ns, np.int64),
            bp=np.array(self.bp, np.uint8), args_offset=np.array(self.args_offset, np.int64),
            args_length=np.array(self.args_length, np.int32), bind_code=np.array(self.bind_code, np.int32),
            flow_dir=np.array(self.flow_dir, np.uint8), names=self.names.values, cats=self.cats.values,
            tokens=self.tokens.values, args_blob=b"".join(self.blob),
            numeric_args={k: SparseColumn.from_lists(n, *v) for k, v in self.numeric.items()},
            value_args={k: SparseCodes.from_lists(n, *v) for k, v in self.value.items()},
            arg_values=self.values.values, top_level=top_level, array_format=array_format,
        )


def _fill_rows(rows: _Rows, events: list[Any], source: str, marker: str | None) -> None:
    """One pass over ``events`` filling ``rows`` (see the module doc for the
    field rules).  Deliberately one loop with the fields inline: this runs
    once per event, where a function call per field would double the time."""
    restore = restorer(marker, source)
    ph, bp, flow_dir = rows.ph, rows.bp, rows.flow_dir
    name_code, cat_code, pid_code, tid_code = rows.name_code, rows.cat_code, rows.pid_code, rows.tid_code
    id_code, bind_code, ts_ns, dur_ns = rows.id_code, rows.bind_code, rows.ts_ns, rows.dur_ns
    args_offset, args_length, numeric, blob = rows.args_offset, rows.args_length, rows.numeric, rows.blob
    names, cats, tokens = rows.names, rows.cats, rows.tokens
    name_codes, cat_codes, token_codes = names.codes, cats.codes, tokens.codes
    blob_size = 0
    missing = _MISSING
    for i, ev in enumerate(events):
        if type(ev) is not dict:
            raise ProfviewError(
                f"event is {_describe(ev)}", source=source, position=f"traceEvents[{i}]",
                expected="a JSON object",
            )
        if not ev:
            continue
        get = ev.get
        value = get("ph")
        if type(value) is str and len(value) == 1 and value < "\x80":
            ph[i] = ord(value)
        value = get("name", missing)
        if value is not missing:
            if type(value) is not str:
                value = _text(value, restore)
            code = name_codes.get(value)
            name_code[i] = names(value) if code is None else code
        value = get("cat", missing)
        if value is not missing:
            if type(value) is not str:
                value = _text(value, restore)
            code = cat_codes.get(value)
            cat_code[i] = cats(value) if code is None else code
        value = get("pid", missing)
        if value is not missing:
            value = token(value, restore)
            code = token_codes.get(value)
            pid_code[i] = tokens(value) if code is None else code
        value = get("tid", missing)
        if value is not missing:
            value = token(value, restore)
            code = token_codes.get(value)
            tid_code[i] = tokens(value) if code is None else code
        if "id" in ev or "id2" in ev:
            id_code[i] = tokens(id_token(ev, restore))  # type: ignore[arg-type]
        value = get("bind_id", missing)
        if value is not missing:  # flow events v2 (after "id": the dictionary order of both decoders)
            bind_code[i] = tokens(token(value, restore))
        if get("flow_in") is True:
            flow_dir[i] = FLOW_IN
        if get("flow_out") is True:
            flow_dir[i] |= FLOW_OUT
        value = get("ts", missing)
        if value is not missing:
            ts_ns[i] = value * 1000 if type(value) is int and -_FAST < value < _FAST \
                else _time(value, i, "ts", source, marker)
        value = get("dur", missing)
        if value is not missing:
            dur_ns[i] = value * 1000 if type(value) is int and -_FAST < value < _FAST \
                else _time(value, i, "dur", source, marker)
        scope = get("bp")
        if not (type(scope) is str and len(scope) == 1 and scope < "\x80"):
            scope = get("s")
        if type(scope) is str and len(scope) == 1 and scope < "\x80":
            bp[i] = ord(scope)
        args = get("args", missing)
        if args is not missing:
            text = orjson.dumps(args)
            if restore is not None:
                text = restore(text)
            args_offset[i] = blob_size
            args_length[i] = len(text)
            blob.append(text)
            blob_size += len(text)
            if type(args) is dict:
                _pick_numeric(args, i, numeric)
                _pick_values(args, i, rows.value, rows.values, restore)


def _pick_numeric(args: dict[str, Any], i: int, numeric: dict[str, tuple[list[int], list[float]]]) -> None:
    """Append record ``i``'s numeric args (NUMERIC_ARGS keys holding numbers, not bools)."""
    if len(args) <= len(NUMERIC_ARGS):
        for key, value in args.items():
            column = numeric.get(key)
            if column is not None and type(value) in (int, float):
                column[0].append(i)
                column[1].append(value)
    else:
        for key, column in numeric.items():
            item: Any = args.get(key)
            if type(item) in (int, float):
                column[0].append(i)
                column[1].append(item)


class _Values:
    """Parsed JSON value -> dense code, in order of first appearance (keyed by its JSON text)."""

    def __init__(self) -> None:
        self.codes: dict[bytes, int] = {}
        self.values: list[Any] = []

    def __call__(self, value: Any) -> int:
        key = orjson.dumps(value)
        code = self.codes.get(key)
        if code is None:
            code = self.codes[key] = len(self.values)
            self.values.append(value)
        return code


def _pick_values(args: dict[str, Any], i: int, columns: dict[str, tuple[list[int], list[int]]],
                 values: _Values, restore: Callable[[bytes], bytes] | None) -> None:
    """Append record ``i``'s value args (VALUE_ARGS keys, any JSON value) as codes into ``values``."""
    pairs = args.items() if len(args) <= len(columns) else ((k, args.get(k, _MISSING)) for k in columns)
    for key, value in pairs:
        column = columns.get(key)
        if column is None or value is _MISSING:
            continue
        if restore is not None:  # a marked time inside the value: the number back, as args() reads it
            value = orjson.loads(restore(orjson.dumps(value)))
        column[0].append(i)
        column[1].append(values(value))


def normalized(columns: ChromeColumns) -> dict[str, Any]:
    """A decoder-independent view of ``columns`` for equality tests: strings
    instead of codes, parsed args instead of blob offsets."""
    def strings(codes: np.ndarray, values: list[str]) -> list[str | None]:
        return [values[c] if c >= 0 else None for c in codes.tolist()]

    return {
        "n": columns.n,
        "ph": columns.ph.tolist(),
        "bp": columns.bp.tolist(),
        "name": strings(columns.name_code, columns.names),
        "cat": strings(columns.cat_code, columns.cats),
        "pid": strings(columns.pid_code, columns.tokens),
        "tid": strings(columns.tid_code, columns.tokens),
        "id": strings(columns.id_code, columns.tokens),
        "bind_id": strings(columns.bind_code, columns.tokens),
        "flow_dir": columns.flow_dir.tolist(),
        "ts_ns": columns.ts_ns.tolist(),
        "dur_ns": columns.dur_ns.tolist(),
        "args": [columns.args(i) if columns.args_offset[i] >= 0 else None for i in range(columns.n)],
        "numeric_args": {k: np.nan_to_num(v.dense(), nan=-0.5).tolist()
                         for k, v in columns.numeric_args.items()},
        "value_args": {k: [columns.arg_values[c] if c >= 0 else "<absent>" for c in v.dense().tolist()]
                       for k, v in columns.value_args.items()},
        "top_level": columns.top_level,
        "array_format": columns.array_format,
    }
