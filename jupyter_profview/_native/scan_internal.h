/*
 * scan_internal.h -- what the files of the Chrome trace scanner share:
 *
 *   chrome_scan.c   top-level state machine, streaming, the exported pv_scan_* API
 *   chrome_event.c  one event object -> one row of the columns (field rules)
 *   json_lex.c      JSON validation: strings (escapes, UTF-8), numbers, any value
 *   strtab.c        dictionaries: raw string bytes -> codes in first-occurrence order
 *   growbuf.c       growable buffers, the event columns
 *
 * Everything declared here is internal (hidden visibility): the shared
 * library exports only the pv_* functions.  Small helpers used on every byte
 * or key are static inline here so that -O3 still inlines them across files.
 *
 * All reads are bounds-checked against the buffer length; running out of
 * bytes inside a unit is reported as "need more" (PV_MORE) internally.
 */

#ifndef PV_SCAN_INTERNAL_H
#define PV_SCAN_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

#define PV_OK 0
#define PV_MORE 1
#define PV_ERR 2
#define PV_UNSUP 3
#define PV_NOMEM 4

#define MAX_DEPTH 200 /* deeper nesting -> PV_UNSUP (Python decides) */

/* Version of the exported pv_* interface (pv_abi_version); the Python side
 * refuses a library with another one.  Bump it with any change of the
 * exported functions, their arguments, the column ids or the status codes. */
#define PV_ABI_VERSION 12

/* Limits on hostile input (the same as jupyter_profview.sources): a JSON
 * string longer than PV_MAX_STRING bytes (as written, escapes included), or
 * a single event / top-level value longer than PV_MAX_UNIT bytes, is an
 * error at its start, so memory stays bounded whatever the input. */
#define PV_MAX_STRING ((size_t)64 << 20)
#define PV_MAX_UNIT ((size_t)256 << 20)
#define ABSENT_TIME INT64_MIN

/* ------------------------------------------------------------------------ */
/* Numeric args: NUMERIC_ARGS of _native/keys.py, in that order (keys_gen.h,  */
/* generated from it by hatch_build.py: NUM_KEYS, NUMERIC_LIST, VAL_KEYS,     */
/* VALUE_LIST).                                                               */

#include "keys_gen.h"
extern const char *const NUMERIC_KEYS[NUM_KEYS]; /* chrome_event.c */

/* Value args: VALUE_ARGS of _native/keys.py, in that order.  The raw
 * JSON text of each (any JSON value) is interned into DICT_VALUES, so a
 * value repeated over many events (a launch configuration, a shape list) is
 * kept once and read back by code, never searched for in the args texts.   */

extern const char *const VALUE_KEYS[VAL_KEYS]; /* chrome_event.c */

/* ------------------------------------------------------------------------ */
/* Growable byte buffer                                                      */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} buf_t;

static inline int buf_reserve(buf_t *b, size_t extra) {
    if (extra > SIZE_MAX / 2 - b->len) return 0;
    size_t need = b->len + extra;
    if (need <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need) cap *= 2;
    uint8_t *p = (uint8_t *)realloc(b->data, cap);
    if (!p) return 0;
    b->data = p;
    b->cap = cap;
    return 1;
}

static inline int buf_append(buf_t *b, const uint8_t *src, size_t n) {
    if (!buf_reserve(b, n)) return 0;
    if (n) memcpy(b->data + b->len, src, n);
    b->len += n;
    return 1;
}

void buf_free(buf_t *b);

/* ------------------------------------------------------------------------ */
/* The args blob: one contiguous buffer handed to Python as is (no copy).
 * It starts at BLOB_START, above glibc's largest dynamic mmap threshold
 * (32 MiB), so it is its own mapping from the first byte: growing it is an
 * mremap (no copy, no second copy in memory) and the capacity not yet
 * written is never resident.                                                */

#define BLOB_START ((size_t)64 << 20)

int blob_grow(buf_t *b, size_t n); /* room for n more bytes (growbuf.c) */

/* Append n bytes (once per event with args, so inline here). */
static inline int blob_append(buf_t *b, const uint8_t *src, size_t n) {
    if (b->cap - b->len < n && !blob_grow(b, n)) return 0;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 1;
}

/* Sparse numeric args: per NUMERIC_KEYS key, the rows (int64) that have a
 * number and the numbers (double), appended when an event is complete.     */
typedef struct {
    buf_t rows, values;
} sparse_t;

/* ------------------------------------------------------------------------ */
/* Dictionary: raw key bytes -> code (first-occurrence order)                */

#define DICT_NAMES 0
#define DICT_CATS 1
#define DICT_TOKENS 2
#define DICT_VALUES 3 /* raw JSON texts of the value args */
#define N_DICTS 4

typedef struct {
    uint64_t hash;
    int32_t code; /* -1: empty slot */
} slot_t;

typedef struct {
    slot_t *slots;
    size_t mask; /* slot count - 1 (power of two) */
    size_t count;
    buf_t arena;     /* concatenated key bytes */
    buf_t offsets;   /* int64 per entry: offset in arena */
    buf_t lengths;   /* int32 per entry */
    buf_t flags;     /* uint32 per entry: bit 0 = has backslash, bits 8.. = prefix length */
} dict_t;

int dict_init(dict_t *d);
void dict_free(dict_t *d);
/* Code of key (bytes), inserting it if new; -1 on out of memory.  cache is
 * the field's last code, compared first (see strtab.c). */
int32_t cached_lookup(dict_t *d, int32_t *cache, const uint8_t *key, size_t n, uint32_t flags);
/* Codes in dst of src's entries, inserting the new ones (see strtab.c). */
int32_t *dict_merge(dict_t *dst, const dict_t *src);

/* ------------------------------------------------------------------------ */
/* Scanner state                                                             */

/* column ids for pv_scan_column / pv_scan_release */
enum {
    C_PH, C_NAME, C_CAT, C_PID, C_TID, C_ID, C_TS, C_DUR, C_BP, C_AOFF, C_ALEN,
    C_BIND, /* int32 token code of "bind_id" (flow events v2), -1 if absent */
    C_FLOW, /* uint8: bit 0 "flow_in": true, bit 1 "flow_out": true */
    C_NUM0, /* ... C_NUM0 + NUM_KEYS - 1: numeric args, see pv_scan_detach_num */
    C_BLOB = C_NUM0 + NUM_KEYS, /* raw args bytes */
    C_TOP,                      /* int64 [key_off, key_len, val_off, val_len] per top-level member */
    C_TOPARENA,                 /* raw bytes of those keys and values */
    C_COUNT
};

typedef struct pv_scanner {
    int state;
    int array_format; /* bare array */
    int seen_events;  /* "traceEvents" key seen */
    int status;       /* sticky PV_OK / PV_ERR / PV_UNSUP / PV_NOMEM */
    int file_args;    /* aoff = offset in the input (read back from the file), no blob */

    int64_t base; /* global offset of the buffer being scanned */
    buf_t carry;  /* bytes of an incomplete unit */

    size_t n, cap; /* events, capacity of the event columns */
    uint8_t *ph, *bp, *flow;
    int32_t *name, *cat, *pid, *tid, *id, *alen, *bind;
    int64_t *ts, *dur, *aoff;
    sparse_t num[NUM_KEYS]; /* numeric args */
    sparse_t val[VAL_KEYS]; /* value args: rows (int64) and codes (int32) in DICT_VALUES */
    buf_t blob;     /* raw args texts */
    buf_t top;      /* int64 quadruples */
    buf_t toparena; /* raw bytes */
    dict_t dicts[N_DICTS];
    buf_t scratch; /* token key assembly */
    int32_t cache[6 + VAL_KEYS]; /* last code per field: name, cat, pid, tid, id, bind_id, value args */

    int64_t err_offset;
    int64_t err_record; /* event index of an error in a ts/dur value, else -1 */
    const char *err_msg;
    const char *err_expected;
    const char *unsup_reason;
} pv_scanner;

/* Event columns (growbuf.c) */
void *col_ptr(pv_scanner *s, int c);
size_t col_width(int c);
void set_col(pv_scanner *s, int c, void *p);
int grow_columns(pv_scanner *s);
int reserve_columns(pv_scanner *s, size_t need);

/* ------------------------------------------------------------------------ */
/* Error helpers                                                             */

static inline int fail(pv_scanner *s, size_t pos, const char *msg, const char *expected) {
    s->err_offset = s->base + (int64_t)pos;
    s->err_msg = msg;
    s->err_expected = expected;
    return PV_ERR;
}

static inline int unsup(pv_scanner *s, const char *why) {
    s->unsup_reason = why;
    return PV_UNSUP;
}

/* ------------------------------------------------------------------------ */
/* Lexing (json_lex.c; the two hottest helpers inline here)                  */

static inline size_t skip_ws(const uint8_t *b, size_t len, size_t pos) {
    while (pos < len) {
        uint8_t c = b[pos];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            pos++;
        else
            break;
    }
    return pos;
}

static inline int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Number info filled by scan_number. */
typedef struct num_s {
    uint64_t mant; /* first 19 significant digits */
    int ndig;      /* significant digits in mant */
    int dropped;   /* more significant digits than fit */
    int rdig;      /* the first dropped digit (0 if none) */
    int sticky;    /* a later dropped digit was not 0 (for exact rounding) */
    int exp10;     /* value = mant * 10^exp10 (when !dropped) */
    int is_int;    /* no fraction, no exponent */
    int neg;
    const char *unsup; /* non-NULL: valid JSON left to Python (integer
                          beyond 64 bits, number overflowing a double) */
    size_t start, end;
} num_t;

/* Validate the JSON string whose opening quote is at b[*ppos].  On PV_OK,
 * *ppos is just past the closing quote and *bs tells whether it contained a
 * backslash escape. */
int scan_string(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, int *bs);
/* Validate the JSON number at b[*ppos] (grammar -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?).
 * Numbers the Python reference treats differently (see num_t.unsup) are
 * PV_UNSUP; scan_number_raw accepts them (for ts/dur, converted exactly). */
int scan_number(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, num_t *nm);
int scan_number_raw(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, num_t *nm);
/* Exact value * 1000 rounded to an integer (ties to even) of a scanned
 * number: microseconds -> nanoseconds.  0 if beyond +-INT64_MAX. */
int num_times_1000(const struct num_s *nm, int64_t *out);
/* The correctly rounded double of a scanned number (same as strtod). */
double num_value(const uint8_t *b, const struct num_s *nm);
/* Validate any JSON value at b[*ppos] (whitespace already skipped). */
int scan_value(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, int depth);
/* Code point of the escape at raw[k] (raw[k] == '\\'); returns its length. */
size_t escape_cp(const uint8_t *raw, size_t k, unsigned *cp);
/* Decode a validated string body as UTF-8 into out; (size_t)-1 if it does not fit. */
size_t decode_small(const uint8_t *raw, size_t n, uint8_t *out, size_t cap);

/* The key whose quoted form spans b[ks..ke) (quotes included), decoded into
 * buf if it has escapes.  Returns a pointer to the bytes and their length. */
static inline const uint8_t *key_bytes(const uint8_t *b, size_t ks, size_t ke, int bs, uint8_t *buf,
                                       size_t cap, size_t *n) {
    const uint8_t *raw = b + ks + 1;
    size_t rn = ke - ks - 2;
    if (!bs) {
        *n = rn;
        return raw;
    }
    size_t d = decode_small(raw, rn, buf, cap);
    if (d == (size_t)-1) { /* too long to be a key we care about */
        *n = 0;
        return buf;
    }
    *n = d;
    return buf;
}

/* One event object at b[*ppos] == '{' -> row s->n (chrome_event.c). */
int scan_event(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* PV_SCAN_INTERNAL_H */
