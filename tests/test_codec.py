"""The frame codec against docs/widget-protocol.md."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from jupyter_profview.widget.codec import (
    DTYPES,
    FrameError,
    absolute_times,
    decode_frame,
    empty_frame,
    encode_frame,
)


def test_golden_bytes_written_by_hand() -> None:
    # header: compact JSON, then 4 spaces so that 8 + 136 = 144 is a multiple of 8
    header = (b'{"columns":[{"name":"a","dtype":"u8","offset":144,"length":3},'
              b'{"name":"b","dtype":"f64","offset":152,"length":1}],"meta":{"k":"\xc3\xa9"}}    ')
    assert len(header) == 136
    expected = (
        b"PVF1" + b"\x88\x00\x00\x00" + header
        + b"\x01\x02\x03" + b"\x00" * 5           # column a at 144, padded to 152
        + b"\x00\x00\x00\x00\x00\x00\xf8\x3f"      # 1.5 as little-endian float64 at 152
    )
    got = encode_frame({"a": np.array([1, 2, 3], np.uint8), "b": np.array([1.5])}, {"k": "é"})
    assert got == expected
    frame = decode_frame(expected)
    assert frame.meta == {"k": "é"}
    assert frame["a"].tolist() == [1, 2, 3] and frame["b"].tolist() == [1.5]


def test_roundtrip_every_dtype_and_alignment() -> None:
    rng = np.random.default_rng(1)
    columns = {}
    for name, dt in DTYPES.items():
        n = int(rng.integers(0, 13))  # odd lengths exercise the padding
        if dt.kind == "f":
            columns[name] = rng.normal(size=n).astype(dt)
        else:
            info = np.iinfo(dt)
            columns[name] = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=dt)
    data = encode_frame(columns, {"labels": ["x", "<b>"], "n": 3})
    assert data[:4] == b"PVF1"
    (hlen,) = struct.unpack("<I", data[4:8])
    assert (8 + hlen) % 8 == 0
    header = json.loads(data[8:8 + hlen])
    offsets = [c["offset"] for c in header["columns"]]
    assert all(o % 8 == 0 for o in offsets)
    assert offsets == sorted(offsets) and offsets[0] == 8 + hlen
    frame = decode_frame(data)
    assert frame.meta == {"labels": ["x", "<b>"], "n": 3}
    for name, values in columns.items():
        assert frame[name].dtype == DTYPES[name]
        np.testing.assert_array_equal(frame[name], values)


def test_padding_between_columns_is_zero() -> None:
    data = encode_frame({"a": np.array([255], np.uint8), "b": np.array([-1], np.int32)})
    frame_header = json.loads(data[8:8 + struct.unpack("<I", data[4:8])[0]])
    a, b = frame_header["columns"]
    assert data[a["offset"] + 1:b["offset"]] == b"\x00" * 7
    assert len(data) == b["offset"] + 8  # last column padded to 8 bytes too


def test_decode_from_unaligned_memoryview() -> None:
    data = encode_frame({"t": np.arange(5, dtype=np.float64)}, {})
    shifted = memoryview(b"xyz" + data)[3:]
    np.testing.assert_array_equal(decode_frame(shifted)["t"], np.arange(5.0))


def test_int64_and_object_columns_are_rejected() -> None:
    with pytest.raises(FrameError, match="int64"):
        encode_frame({"start": np.arange(3, dtype=np.int64)})
    with pytest.raises(FrameError):
        encode_frame({"s": np.array(["a"], dtype=object)})
    with pytest.raises(FrameError):
        encode_frame({"m": np.zeros((2, 2), np.float64)})


def test_meta_is_strict_json() -> None:
    frame = decode_frame(encode_frame({}, {"x": float("nan"), "y": np.int64(3), "z": (1, 2)}))
    assert frame.meta == {"x": None, "y": 3, "z": [1, 2]}
    assert len(frame) == 0 and decode_frame(empty_frame()).columns == {}


@pytest.mark.parametrize("bad", [b"", b"XXXX\x00\x00\x00\x00", b"PVF1\xff\x00\x00\x00{}",
                                 b"PVF1\x02\x00\x00\x00{x"])
def test_garbage_is_rejected(bad: bytes) -> None:
    with pytest.raises(FrameError):
        decode_frame(bad)


def test_column_past_the_end_is_rejected() -> None:
    data = bytearray(encode_frame({"a": np.arange(4, dtype=np.int32)}))
    with pytest.raises(FrameError, match="past"):
        decode_frame(bytes(data[:-8]))


def test_compact_times_relative_to_origin_round_trip() -> None:
    """CHANGED (perf): `_detail` frames carry times as f32 relative to `meta.origin`."""
    origin = 43_233_769_564.0  # a late window of a long ns trace: f32 could not hold it absolute
    times = origin + np.array([0.0, 1.5, 12_345.25, 9_999_999.0])
    data = encode_frame({"t": (times - origin).astype(np.float32)}, {"origin": origin})
    frame = decode_frame(data)
    assert frame["t"].dtype == np.float32 and frame.meta["origin"] == origin
    got = absolute_times(frame, "t")
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, times, rtol=0, atol=1.0)  # f32 of a 1e7 span: ulp 1
    # no origin (the overview): the f64 column unchanged
    plain = decode_frame(encode_frame({"t": times}))
    np.testing.assert_array_equal(absolute_times(plain, "t"), times)
    assert absolute_times(decode_frame(encode_frame({"t": times}, {"origin": None})), "t")[0] == times[0]


# -- the fixture shared with js/test/codec.test.ts ------------------------------------------------

SHARED = json.loads((Path(__file__).parent / "shared_fixtures" / "codec_frame.json").read_text("utf-8"))


def _expected_values(values: list) -> list[float]:
    return [float(v) if isinstance(v, str) else v for v in values]  # "Infinity"


def test_shared_frame_decodes_to_the_fixture_columns() -> None:
    frame = decode_frame(bytes.fromhex(SHARED["hex"]))
    assert frame.meta == SHARED["meta"]
    assert list(frame.columns) == list(SHARED["columns"])
    for name, values in SHARED["columns"].items():
        assert frame[name].dtype == DTYPES[SHARED["dtypes"][name]]
        assert frame[name].tolist() == _expected_values(values)
    assert absolute_times(frame, "start").tolist() == SHARED["absolute_start"]


def test_shared_frame_is_what_the_encoder_writes() -> None:
    columns = {name: np.array(_expected_values(values), DTYPES[SHARED["dtypes"][name]])
               for name, values in SHARED["columns"].items()}
    assert encode_frame(columns, SHARED["meta"]).hex() == SHARED["hex"]
