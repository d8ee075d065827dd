"""A cached table's columns as numpy arrays, without a pandas DataFrame.

`read_table` (`.cache`) gives pandas with the written dtypes: per rank of 1M events that costs
about as much as the analysis itself (the categorical columns are rebuilt, the index is hashed).
An analysis that needs a few columns as arrays reads them here: a text column (dictionary-encoded
in the cache) as a pair `(codes, values)` (int64 codes into its distinct values, -1 for missing),
any other column as a plain numpy array.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["Coded", "read_arrays"]

#: a text column: `values[codes[i]]` is row i's text (`codes[i] == -1`: missing)
Coded = tuple[np.ndarray, list[str]]


def _coded(column: object) -> Coded:
    import pyarrow as pa
    import pyarrow.compute as pc

    chunked: pa.ChunkedArray = column  # type: ignore[assignment]
    if not pa.types.is_dictionary(chunked.type):
        chunked = pc.dictionary_encode(chunked)  # type: ignore[attr-defined]
    chunked = chunked.unify_dictionaries()
    chunks = chunked.chunks
    if not chunks:
        return np.zeros(0, np.int64), []
    codes = np.concatenate([c.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
                            for c in chunks])
    return codes, [str(v) for v in chunks[0].dictionary.to_pylist()]


def read_arrays(path: Path, columns: list[str], *, text: tuple[str, ...] = ()) -> dict[str, np.ndarray | Coded]:
    """`columns` of the Parquet table at `path`: those in `text` as `Coded` pairs, the others as numpy
    arrays (a column with missing values: float with NaN, as pyarrow converts it)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=columns)
    out: dict[str, np.ndarray | Coded] = {}
    for name in columns:
        column = table.column(name)
        out[name] = _coded(column) if name in text else column.to_numpy()
    return out
