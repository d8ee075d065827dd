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

#: Bounded decoding of JSON (Chrome, torch memory, MegEngine): a JSON text holds at most
#: ``commas + '[' + '{' + 1`` values (every value but the first of its container follows a
#: comma), whatever its strings hold, so counting those bytes while the text streams in bounds
#: the objects a parser will allocate.  The budget grows with the *stored* size: an
#: uncompressed file can never exceed it, real gzip traces use ~1-2 per stored byte, a bomb of
#: ``,{}`` hundreds.
JSON_VALUES_PER_STORED_BYTE = 16
JSON_VALUES_FLOOR = 2_000_000
#: Decompressed JSON bytes held at once beyond this must not come from an input expanding more
#: than `MAX_EXPANSION` times (real traces compress ~10-30x, filler ~1000x).
JSON_BIG = 128 * 1024 * 1024  # > MAX_STRING: a giant string is named as such first
MAX_EXPANSION = 100

#: Pickled snapshots (``formats/torch_snapshot.py``): objects per stored byte (with the same
#: floor as JSON), memo entries (at most one per object) and the nesting depth of the result.
PICKLE_OBJECTS_PER_STORED_BYTE = 16
PICKLE_OBJECTS_FLOOR = 1_000_000  # built as the pickle streams in: ~64 MB of empty lists at most
PICKLE_MAX_DEPTH = 64
#: Digits of one integer in any text format (int64 needs 19): more is refused before Python's
#: own 4300-digit limit raises a ValueError.
MAX_INT_DIGITS = 40


def json_value_budget(stored_size: int) -> int:
    """JSON values an input of ``stored_size`` bytes (as stored: compressed for gzip) may hold."""
    return max(JSON_VALUES_FLOOR, stored_size * JSON_VALUES_PER_STORED_BYTE)


def pickle_object_budget(stored_size: int) -> int:
    """Objects a pickle of ``stored_size`` stored bytes may build."""
    return max(PICKLE_OBJECTS_FLOOR, stored_size * PICKLE_OBJECTS_PER_STORED_BYTE)


#: what one parsed JSON value may cost a parser that builds Python objects (an empty dict with its
#: slot in a list: ~72 bytes; orjson's strings and floats less) -- with margin
BYTES_PER_JSON_VALUE = 128


def available_memory() -> int | None:
    """Bytes this process may still allocate: the smaller of the system's available memory and
    what its address-space limit leaves (None when neither is known, e.g. not on Linux)."""
    import resource

    left: list[int] = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    left.append(int(line.split()[1]) * 1024)
        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * resource.getpagesize()
            left.append(max(0, soft - used))
    except (OSError, ValueError):
        pass
    return min(left) if left else None
