"""The streaming readers behind bounded memory (``jupyter_profview/text_stream.py``):
squeezing whitespace never changes a JSON document's value or validity, keeps
whitespace inside strings, and error positions still name the original bytes
and lines."""

from __future__ import annotations

import random
from collections.abc import Iterator

import orjson
import pytest

from jupyter_profview.errors import ProfviewError, line_position
from jupyter_profview.sources import SQUEEZE_RUN, Source
from jupyter_profview.text_stream import LineReader, squeeze_json, squeeze_lines

RUN = SQUEEZE_RUN + 50


class Chunked(Source):
    """A source that hands out small chunks, so runs and strings cross them."""

    def __init__(self, data: bytes, size: int) -> None:
        super().__init__(data)
        self.size_ = size

    def chunks(self, chunk_size: int = 0) -> Iterator[bytes]:  # type: ignore[override]
        for i in range(0, len(self._data), self.size_):  # type: ignore[arg-type]
            yield bytes(self._data[i : i + self.size_])  # type: ignore[index]


def ws(rng: random.Random) -> bytes:
    return bytes(rng.choice(b" \t\r\n") for _ in range(rng.choice([0, 1, 3, RUN, 2 * RUN])))


def document(rng: random.Random) -> bytes:
    parts = [b"{", ws(rng), b'"traceEvents"', ws(rng), b":", ws(rng), b"["]
    for i in range(rng.randint(1, 6)):
        name = rng.choice([b"a", b" " * RUN, b'q\\"' + b" " * RUN + b'\\\\', b"x\\\\"])
        parts += [b"," if i else b"", ws(rng), b'{"name":', ws(rng), b'"', name, b'"', ws(rng), b',"ts":',
                  ws(rng), b"1.5", ws(rng), b"}"]
    parts += [ws(rng), b"]", ws(rng), b"}", ws(rng)]
    return b"".join(parts)


@pytest.mark.parametrize("seed", range(40))
def test_squeezed_json_has_the_same_value(seed: int) -> None:
    rng = random.Random(seed)
    data = document(rng)
    for size in (len(data), 977, 5000):
        squeezed = squeeze_json(Chunked(data, size))
        assert orjson.loads(squeezed.data) == orjson.loads(data)
    assert len(squeeze_json(Source(data)).data) <= len(data)


def test_whitespace_inside_strings_is_kept() -> None:
    data = b'{"a": "' + b" " * (3 * RUN) + b'", "b": "\\"' + b" " * RUN + b'"}'
    assert squeeze_json(Source(data)).data == data


@pytest.mark.parametrize("seed", range(20))
def test_error_positions_name_the_original_bytes(seed: int) -> None:
    rng = random.Random(seed)
    data = document(rng)
    cut = data.rindex(b"1.5")
    bad = data[:cut] + b"@" + data[cut + 1 :]
    squeezed = squeeze_json(Source(bad))
    offset = squeezed.data.index(b"@")
    assert squeezed.position(offset) == line_position(bad, cut)


def test_string_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import jupyter_profview.text_stream as ts

    monkeypatch.setattr(ts, "MAX_STRING", 10_000)
    ok = b'["' + b"x" * 10_000 + b'"]'
    assert squeeze_json(Chunked(ok, 3000)).data == ok
    bad = b'[1, "' + b"x" * 10_001 + b'"]'
    for size in (3000, 7000, 10_000):  # chunks never exceed the limit (CHUNK_SIZE <= MAX_STRING)
        with pytest.raises(ProfviewError, match="string longer than") as info:
            squeeze_json(Chunked(bad, size))
        assert info.value.position == "byte 4"


def test_line_reader_numbers_lines_as_the_original() -> None:
    text = b"a\r\nb\n" + b"\n \t\n" * RUN + b"  c\n\nd"
    reader = LineReader(Chunked(text, 1000))
    got = list(reader)
    expected = [(i + 1, line.decode()) for i, line in enumerate(text.split(b"\n")) if line.strip()]
    assert [g for g in got if g[1].strip()] == expected
    assert reader.count == len(text.split(b"\n"))
    assert reader.squeezed + len(got) == reader.count
    squeezed = squeeze_lines(Chunked(text, 1000))
    lines = squeezed.data.split(b"\n")
    assert [squeezed.line(i + 1) for i, line in enumerate(lines) if line.strip()] == [n for n, _ in expected]


def test_line_limit_and_utf8_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import jupyter_profview.text_stream as ts

    monkeypatch.setattr(ts, "MAX_LINE", 5000)
    with pytest.raises(ProfviewError, match="line longer than") as info:
        list(LineReader(Chunked(b"ok\n" + b"x" * 6000 + b"\n", 1000)))
    assert info.value.position == "line 2"
    with pytest.raises(ProfviewError, match="not valid utf-8") as info:
        list(LineReader(Source(b"ok\nab\xffc\n")))
    assert info.value.position == "line 2, column 3"
