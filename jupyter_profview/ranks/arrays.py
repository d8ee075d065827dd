"""A cached table's columns as numpy arrays, without a pandas DataFrame.

`read_table` (`.cache`) gives pandas with the written dtypes: per rank of 1M events that costs
about as much as the analysis itself (the categorical columns are rebuilt, the index is hashed).
An analysis that needs a few columns as arrays reads them here: a text column (dictionary-encoded
in the cache) as a pair `(codes, values)` (int codes, of the width the cache wrote, into its
distinct values; -1 for missing), any other column as a plain numpy array.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["Coded", "read_arrays"]

#: a text column: `values[codes[i]]` is row i's text (`codes[i] == -1`: missing)
Coded = tuple[np.ndarray, list[str]]


def _coded(column: object) -> Coded:
    import pyarrow as pa

    chunked: pa.ChunkedArray = column  # type: ignore[assignment]
    if not pa.types.is_dictionary(chunked.type):
        import pyarrow.compute as pc  # imported only here: its import costs ~0.1 s

        chunked = pc.dictionary_encode(chunked)  # type: ignore[attr-defined]
    chunks = chunked.chunks
    if not chunks:
        return np.zeros(0, np.int64), []
    if any(not c.dictionary.equals(chunks[0].dictionary) for c in chunks[1:]):  # else one dictionary
        chunks = chunked.unify_dictionaries().chunks
    indices = [c.indices for c in chunks]
    if any(i.null_count for i in indices):
        indices = [i.fill_null(-1) for i in indices]
    codes = np.concatenate([i.to_numpy(zero_copy_only=False) for i in indices])
    return codes, [str(v) for v in chunks[0].dictionary.to_pylist()]


def read_arrays(path: Path, columns: list[str], *,
                text: tuple[str, ...] = ()) -> dict[str, np.ndarray | Coded]:
    """`columns` of the Parquet table at `path`: those in `text` as `Coded` pairs, the others as numpy
    arrays (a column with missing values: float with NaN, as pyarrow converts it)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=columns)
    out: dict[str, np.ndarray | Coded] = {}
    for name in columns:
        column = table.column(name)
        out[name] = _coded(column) if name in text else column.to_numpy()
    return out
