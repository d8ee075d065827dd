"""Bytes per element of a tensor's dtype, by the names the traces write: the one table.

- torch's `ScalarType` names (`record_param_comms`' `dtype`: `Float`, `BFloat16`, `Long`);
- the C++ type names of a torch op's `Input type` arg (`float`, `c10::Half`, `long int`,
  `c10::complex<float>`, `c10::Float8_e4m3fn`);
- torch's Python names (`float32`, `bfloat16`, `int64`) and TensorFlow's (`float32`,
  `qint8`, `quint8`, `qint32`) in graph dumps.

Names are matched without regard to case.  `tests/test_one_definition.py` checks the table
against torch's own element sizes (`torch.empty(0, dtype=d).element_size()`, and the names
torch's profiler writes for each dtype) and that no other module keeps a table of its own.
"""

from __future__ import annotations

_SIZES: dict[int, tuple[str, ...]] = {
    1: ("bool", "byte", "char", "int8", "uint8", "signed char", "unsigned char", "qint8", "quint8",
        "quint4x2", "quint2x4", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
        "float8_e8m0fnu", "c10::float8_e4m3fn", "c10::float8_e5m2", "c10::float8_e4m3fnuz",
        "c10::float8_e5m2fnuz", "c10::float8_e8m0fnu", "c10::qint8", "c10::quint8"),
    2: ("half", "float16", "bfloat16", "short", "int16", "uint16", "short int", "unsigned short",
        "c10::half", "c10::bfloat16"),
    4: ("float", "float32", "int", "int32", "uint32", "unsigned int", "qint32", "c10::qint32",
        "complexhalf", "complex32", "c10::complex<c10::half>"),
    8: ("double", "float64", "long", "int64", "uint64", "long int", "long long", "unsigned long",
        "complexfloat", "complex64", "c10::complex<float>"),
    16: ("complexdouble", "complex128", "c10::complex<double>"),
}

DTYPE_BYTES: dict[str, int] = {name: size for size, names in _SIZES.items() for name in names}
"""Bytes per element of each dtype name (lower case)."""


def dtype_bytes(name: object) -> int | None:
    """Bytes per element of the dtype called `name` (any of the module doc's spellings, any
    case), None for a name not in the table (`Scalar`, `TensorList`, `""`)."""
    return DTYPE_BYTES.get(str(name).strip().lower()) if name is not None else None
