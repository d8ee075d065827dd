"""The limits that keep hostile input bounded while it is read (``sources.py`` explains them);
one place, so that the source readers and the text streams agree."""

MAX_STRING = 64 * 1024 * 1024  # bytes of one JSON string, as written (>= sources.CHUNK_SIZE)
MAX_LINE = 64 * 1024 * 1024  # bytes of one line of a text format
SQUEEZE_RUN = 4096  # whitespace runs at least this long are squeezed
#: Lines a line-per-record text format may hold (``Source.lines``): one more is a ProfviewError
#: naming that line.  A record costs a line format's columns ~8 bytes while it streams, so a
#: file at the limit holds ~160 MB of columns; a gzip bomb of repeated lines is refused there,
#: in bounded memory.
MAX_TEXT_RECORDS = 20_000_000
