"""The limits that keep hostile input bounded while it is read (``sources.py`` explains them);
one place, so that the source readers and the text streams agree."""

MAX_STRING = 64 * 1024 * 1024  # bytes of one JSON string, as written (>= sources.CHUNK_SIZE)
MAX_LINE = 64 * 1024 * 1024  # bytes of one line of a text format
SQUEEZE_RUN = 4096  # whitespace runs at least this long are squeezed
