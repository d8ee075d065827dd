"""The args keys both Chrome decoders (the native scanner and the pure-Python one) take out of
each event's args while they read it; everything else stays in the raw args JSON.  This module is
the one list: the build (``hatch_build.py``) writes the scanner's C lists (``NUMERIC_LIST`` and
``VALUE_LIST`` in the generated ``keys_gen.h``) from these tuples before compiling, and the loaded
library's keys are compared with them (a library built from other sources is not used).

- `NUMERIC_ARGS`: top-level numbers (not bools) -> sparse float64 columns;
- `VALUE_ARGS`: top-level values of any JSON type -> sparse codes into one table of distinct values
  (a launch configuration, a list of shapes, a process group: repeated over many events, kept once).
  What the efficiency analyses read (kernel launch configurations, op input shapes and types,
  collective names and groups) is answered from these, never searched for in the args texts.
"""

NUMERIC_ARGS = (
    "Total Allocated", "Total Reserved", "Bytes", "Addr", "Device Id", "Device Type",
    "External id", "correlation", "Sequence number", "Fwd thread id", "stream", "device",
    # Kineto's kernel args, and a collective's size (record_param_comms)
    "blocks per SM", "warps per SM", "est. achieved occupancy %", "registers per thread",
    "shared memory", "In msg nelems", "Out msg nelems", "Group size",
)

#: the numeric args `trace.arg_numbers` answers from the decoded columns (the others are parsed):
#: what the analyses ask for (attribution's forward/backward links, kernel_efficiency,
#: collective_bandwidth) -- every one after `device` plus the forward links; `stream` and `device`
#: are columns of `trace.launches` already, the first ones columns of `trace.events`/`memory`
LOOKUP_NUMERIC = ("Sequence number", "Fwd thread id", *NUMERIC_ARGS[NUMERIC_ARGS.index("device") + 1:])

VALUE_ARGS = (
    "grid", "block", "Input Dims", "Input type",
    "Collective name", "Process Group Name", "pg_name", "Process Group Ranks", "dtype",
)
