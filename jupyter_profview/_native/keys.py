"""The args keys whose top-level numeric values both Chrome decoders (the native scanner and the
pure-Python one) extract into float64 columns; everything else stays in the raw args JSON.  The
scanner's C sources carry the same list (``pv_num_key``), checked when the library is loaded."""

NUMERIC_ARGS = (
    "Total Allocated", "Total Reserved", "Bytes", "Addr", "Device Id", "Device Type",
    "External id", "correlation", "Sequence number", "Fwd thread id", "stream", "device",
)
