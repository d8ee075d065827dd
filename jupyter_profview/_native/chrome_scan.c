/*
 * chrome_scan.c -- streaming, validating JSON scanner for Chrome Trace Event
 * files (object format {"traceEvents": [...], ...} or bare array [...]).
 *
 * It produces the columns of jupyter_profview.formats.chrome_columns.ChromeColumns
 * (see that docstring and jupyter_profview/_native/__init__.py, which drives
 * this file through ctypes):
 *
 *   - per event: ph, name/cat/pid/tid/id dictionary codes, ts/dur in ns,
 *     bp, args offset/length in a blob of raw args JSON, numeric args;
 *   - three dictionaries (names, cats, tokens) of *raw* string bytes, codes
 *     assigned in first-occurrence order; Python decodes the unique strings;
 *   - the raw key/value bytes of the other top-level keys.
 *
 * Streaming: the caller feeds successive chunks (pv_scan_feed) and then calls
 * pv_scan_finish.  The input is cut into atomic "units" (one event, one
 * top-level key/value pair, one bracket or comma).  A unit that is not
 * complete at the end of a chunk is kept in a small carry buffer and re-parsed
 * once more bytes arrive, so only the current unit (not the file) is held.
 *
 * Results of a scan:
 *   PV_OK     valid input, columns filled;
 *   PV_ERR    invalid JSON / truncated input, a ts/dur beyond +-INT64_MAX ns
 *             (pv_scan_error_record gives its event), a string longer than
 *             PV_MAX_STRING, an event or value longer than PV_MAX_UNIT:
 *             pv_scan_error gives the byte offset, a message and what was
 *             expected;
 *   PV_UNSUP  input this scanner leaves to the pure-Python reference decoder
 *             (formats/chrome/decode.py), which then decodes it or reports the error:
 *             pid/tid/id that are not integer literals or strings, name/cat
 *             that are not strings, ts/dur that are neither numbers nor
 *             strings holding one, id2 other than
 *             {"local"|"global": X}, lone surrogate escapes, integers beyond
 *             64 bits, numbers overflowing a double, nesting deeper than
 *             MAX_DEPTH, non-object records, a missing or duplicated
 *             traceEvents.  Scanning stops at the first such thing.
 *
 * Files: this one holds the top-level state machine, the streaming and the
 * exported API; chrome_event.c the field rules of one event; json_lex.c the
 * JSON validation; strtab.c the dictionaries; growbuf.c the buffers and
 * columns; scan_internal.h what they share.
 */

#include "scan_internal.h"

/* ------------------------------------------------------------------------ */
/* Top-level state machine                                                   */

enum {
    T_START,     /* before the first '{' or '[' */
    T_OBJ_FIRST, /* after '{': key or '}' */
    T_OBJ_KEY,   /* after ',' in the top-level object: key */
    T_OBJ_NEXT,  /* after a top-level member: ',' or '}' */
    T_ARR_FIRST, /* after '[' of the events: event or ']' */
    T_ARR_ELEM,  /* after ',' in the events: event */
    T_ARR_NEXT,  /* after an event: ',' or ']' */
    T_END        /* after the top-level value: only whitespace */
};

/* A top-level member other than traceEvents: keep raw key and value. */
static int keep_top(pv_scanner *s, const uint8_t *b, size_t ks, size_t ke, size_t vs, size_t ve) {
    int64_t q[4];
    q[0] = (int64_t)s->toparena.len;
    q[1] = (int64_t)(ke - ks);
    if (!buf_append(&s->toparena, b + ks, ke - ks)) return PV_NOMEM;
    q[2] = (int64_t)s->toparena.len;
    q[3] = (int64_t)(ve - vs);
    if (!buf_append(&s->toparena, b + vs, ve - vs)) return PV_NOMEM;
    if (!buf_append(&s->top, (const uint8_t *)q, sizeof q)) return PV_NOMEM;
    return PV_OK;
}

static const char *expected_in(int state, int array_format) {
    switch (state) {
    case T_START: return "'{' or '['";
    case T_OBJ_FIRST: return "a string key or '}'";
    case T_OBJ_KEY: return "a string key";
    case T_OBJ_NEXT: return "',' or '}'";
    case T_ARR_FIRST: return "an event object or ']'";
    case T_ARR_ELEM: return "an event object";
    case T_ARR_NEXT: return array_format ? "',' or ']'" : "',' or ']' (end of traceEvents)";
    default: return "end of input";
    }
}

/* Run the top-level state machine over b[0..len).  Returns PV_OK when all
 * complete units were consumed (*consumed = start of the incomplete rest),
 * or PV_ERR / PV_UNSUP / PV_NOMEM.  With final != 0, an incomplete rest is an
 * error (except where a bare array may end without ']'). */
static int run(pv_scanner *s, const uint8_t *b, size_t len, int final, size_t *consumed) {
    size_t pos = 0;
    int r;
    for (;;) {
        pos = skip_ws(b, len, pos);
        *consumed = pos;
        if (pos >= len) {
            if (!final) return PV_OK;
            if (s->state == T_END) return PV_OK;
            if (s->array_format && (s->state == T_ARR_NEXT || s->state == T_ARR_ELEM)) return PV_OK;
            if (s->array_format && s->state == T_ARR_FIRST) return PV_OK; /* "[" alone: no events */
            return fail(s, pos, "unexpected end of input", expected_in(s->state, s->array_format));
        }
        uint8_t c = b[pos];
        size_t unit = pos;
        switch (s->state) {
        case T_START:
            if (c == '{') s->state = T_OBJ_FIRST;
            else if (c == '[') { s->state = T_ARR_FIRST; s->array_format = 1; }
            else if (c == 0xEF && s->base + (int64_t)pos == 0) {
                /* a UTF-8 byte-order mark at the very start is ignored */
                if (pos + 3 > len) goto more;
                if (b[pos + 1] != 0xBB || b[pos + 2] != 0xBF)
                    return fail(s, pos, "unexpected character at the start", "'{' or '['");
                pos += 3;
                break;
            }
            else return fail(s, pos, "unexpected character at the start", "'{' or '['");
            pos++;
            break;
        case T_OBJ_FIRST:
        case T_OBJ_KEY: {
            if (c == '}' && s->state == T_OBJ_FIRST) {
                s->state = T_END;
                pos++;
                break;
            }
            if (c != '"') return fail(s, pos, "unexpected character in the top-level object", expected_in(s->state, 0));
            size_t ks = pos;
            int bs;
            r = scan_string(s, b, len, &pos, &bs);
            if (r == PV_MORE) goto more;
            if (r != PV_OK) return r;
            size_t ke = pos;
            uint8_t kb[64];
            size_t kn;
            const uint8_t *key = key_bytes(b, ks, ke, bs, kb, sizeof kb, &kn);
            int is_events = kn == 11 && !memcmp(key, "traceEvents", 11);
            pos = skip_ws(b, len, pos);
            if (pos >= len) goto more;
            if (b[pos] != ':') return fail(s, pos, "unexpected character after key", "':'");
            pos = skip_ws(b, len, pos + 1);
            if (pos >= len) goto more;
            if (is_events) {
                if (s->seen_events) return unsup(s, "duplicate traceEvents");
                if (b[pos] != '[') {
                    r = scan_value(s, b, len, &pos, 1);
                    if (r == PV_MORE) goto more;
                    return r != PV_OK ? r : unsup(s, "traceEvents that is not an array");
                }
                s->seen_events = 1;
                s->state = T_ARR_FIRST;
                pos++;
            } else {
                size_t vs = pos;
                r = scan_value(s, b, len, &pos, 1);
                if (r == PV_MORE) goto more;
                if (r != PV_OK) return r;
                r = keep_top(s, b, ks, ke, vs, pos);
                if (r != PV_OK) return r;
                s->state = T_OBJ_NEXT;
            }
            break;
        }
        case T_OBJ_NEXT:
            if (c == ',') s->state = T_OBJ_KEY;
            else if (c == '}') s->state = T_END;
            else return fail(s, pos, "unexpected character in the top-level object", "',' or '}'");
            pos++;
            break;
        case T_ARR_FIRST:
        case T_ARR_ELEM:
            if (c == ']' && s->state == T_ARR_FIRST) {
                s->state = s->array_format ? T_END : T_OBJ_NEXT;
                pos++;
                break;
            }
            if (c != '{') {
                if (c == ']') return fail(s, pos, "trailing comma in traceEvents", "an event object");
                r = scan_value(s, b, len, &pos, 1);
                if (r == PV_MORE) goto more;
                return r != PV_OK ? r : unsup(s, "a record that is not an object");
            }
            r = scan_event(s, b, len, &pos);
            if (r == PV_MORE) goto more;
            if (r != PV_OK) return r;
            s->state = T_ARR_NEXT;
            break;
        case T_ARR_NEXT:
            if (c == ',') s->state = T_ARR_ELEM;
            else if (c == ']') s->state = s->array_format ? T_END : T_OBJ_NEXT;
            else return fail(s, pos, "unexpected character after an event", expected_in(T_ARR_NEXT, s->array_format));
            pos++;
            break;
        default: /* T_END */
            return fail(s, pos, "unexpected data after the end of the trace", "end of input");
        }
        continue;
    more:
        *consumed = unit;
        if (!final) return PV_OK;
        return fail(s, len, "unexpected end of input",
                    s->state == T_ARR_FIRST || s->state == T_ARR_ELEM ? "the rest of the event"
                                                                      : "the rest of the JSON value");
    }
}

/* ------------------------------------------------------------------------ */
/* Public API (used through ctypes)                                          */

pv_scanner *pv_scan_new(void) {
    pv_scanner *s = (pv_scanner *)calloc(1, sizeof *s);
    if (!s) return NULL;
    s->state = T_START;
    s->err_record = -1;
    for (int k = 0; k < 6 + VAL_KEYS; k++) s->cache[k] = -1;
    for (int d = 0; d < N_DICTS; d++) {
        if (!dict_init(&s->dicts[d])) {
            for (int e = 0; e < d; e++) dict_free(&s->dicts[e]);
            free(s);
            return NULL;
        }
    }
    return s;
}

void pv_scan_free(pv_scanner *s) {
    if (!s) return;
    for (int c = C_PH; c < C_NUM0; c++) free(col_ptr(s, c));
    for (int k = 0; k < NUM_KEYS; k++) {
        buf_free(&s->num[k].rows);
        buf_free(&s->num[k].values);
    }
    for (int k = 0; k < VAL_KEYS; k++) {
        buf_free(&s->val[k].rows);
        buf_free(&s->val[k].values);
    }
    buf_free(&s->blob);
    buf_free(&s->top);
    buf_free(&s->toparena);
    buf_free(&s->carry);
    buf_free(&s->scratch);
    for (int d = 0; d < N_DICTS; d++) dict_free(&s->dicts[d]);
    free(s);
}

static int sticky(pv_scanner *s, int r) {
    if (r != PV_OK) s->status = r;
    if (r == PV_NOMEM) s->unsup_reason = "out of memory";
    return r;
}

/* Record args as offsets into the input (the uncompressed file, read back
 * when asked) instead of copying them into the blob. */
void pv_scan_file_args(pv_scanner *s, int on) { s->file_args = on != 0; }

/* Feed the next chunk of input.  Returns PV_OK (continue), PV_ERR,
 * PV_UNSUP or PV_NOMEM; after anything but PV_OK further calls are no-ops. */
int pv_scan_feed(pv_scanner *s, const uint8_t *data, size_t len) {
    if (s->status != PV_OK) return s->status;
    size_t off = 0, consumed;
    int r;
    if (s->carry.len) {
        /* Complete the carried unit with as few new bytes as possible:
         * try with the next max(4096, carry) bytes, doubling until it fits. */
        size_t take = s->carry.len > 4096 ? s->carry.len : 4096;
        for (;;) {
            if (take > len - off) take = len - off;
            if (!buf_append(&s->carry, data + off, take)) return sticky(s, PV_NOMEM);
            off += take;
            size_t clen = s->carry.len;
            r = run(s, s->carry.data, clen, 0, &consumed);
            if (r != PV_OK) return sticky(s, r);
            if (consumed + take >= clen) {
                /* the carried part is done; go on in data at the same point */
                size_t back = clen - consumed; /* unconsumed bytes, all from data */
                s->base += (int64_t)consumed;
                off -= back;
                s->carry.len = 0;
                break;
            }
            /* still incomplete: keep the rest and take more */
            memmove(s->carry.data, s->carry.data + consumed, clen - consumed);
            s->carry.len = clen - consumed;
            s->base += (int64_t)consumed;
            if (s->carry.len > PV_MAX_UNIT)
                return sticky(s, fail(s, 0, "a single event or value longer than 256 MiB",
                                      "events and top-level values of at most 256 MiB"));
            if (off == len) return PV_OK;
            take *= 2;
        }
    }
    r = run(s, data + off, len - off, 0, &consumed);
    if (r != PV_OK) return sticky(s, r);
    s->base += (int64_t)consumed;
    if (!buf_append(&s->carry, data + off + consumed, len - off - consumed)) return sticky(s, PV_NOMEM);
    return PV_OK;
}

/* End of input: returns PV_OK, PV_ERR, PV_UNSUP or PV_NOMEM. */
int pv_scan_finish(pv_scanner *s) {
    if (s->status != PV_OK) return s->status;
    size_t consumed;
    int r = run(s, s->carry.data ? s->carry.data : (const uint8_t *)"", s->carry.len, 1, &consumed);
    if (r == PV_OK && !s->array_format && !s->seen_events)
        r = unsup(s, "no traceEvents key"); /* the reference reports this */
    return sticky(s, r);
}

/* ------------------------------------------------------------------------ */
/* Scanning one file on several threads                                      */
/*
 * A second scanner can start at a guessed event boundary: the '{' of an
 * event at byte offset base of the file (pv_scan_resume), while the first
 * scanner reads the bytes before it.  The guess is checked, not trusted:
 * the first scanner must end exactly there, between two events of
 * traceEvents with nothing left over (pv_scan_at_element).  Then the two
 * scans are the scan of the whole file cut in two, and pv_scan_append joins
 * them into what one scanner would have produced (same rows, same
 * dictionary codes).  Otherwise the second scan is thrown away and the
 * first goes on over the rest.
 */

/* Start inside traceEvents, before the event at byte offset base of the
 * input; array_format: the input is a bare array (its first byte '['). */
void pv_scan_resume(pv_scanner *s, int64_t base, int array_format) {
    s->state = T_ARR_ELEM;
    s->seen_events = 1;
    s->array_format = array_format != 0;
    s->base = base;
}

/* Whether s has consumed exactly the input before offset and stands there
 * between two events of traceEvents (after their ','), nothing carried. */
int pv_scan_at_element(const pv_scanner *s, int64_t offset) {
    return s->status == PV_OK && s->state == T_ARR_ELEM && s->carry.len == 0 && s->base == offset;
}

void pv_scan_release(pv_scanner *s, int c);

static int32_t remapped(const int32_t *map, int32_t code) { return code < 0 ? code : map[code]; }

/* Append the scan src (started with pv_scan_resume where dst stands, see
 * pv_scan_at_element, and finished) to dst: its rows, remapped to dst's
 * dictionaries, its numeric args, args and top-level members; dst takes
 * its final state.  If src failed, dst takes its outcome instead (status,
 * error offset and message, the record counted from dst's first).  Returns
 * dst's status: PV_OK, or what failed (PV_NOMEM: dst is unusable). */
int pv_scan_append(pv_scanner *dst, pv_scanner *src) {
    if (dst->status != PV_OK) return dst->status;
    if (src->status != PV_OK) {
        dst->status = src->status;
        dst->err_offset = src->err_offset;
        dst->err_record = src->err_record >= 0 ? src->err_record + (int64_t)dst->n : -1;
        dst->err_msg = src->err_msg;
        dst->err_expected = src->err_expected;
        dst->unsup_reason = src->unsup_reason;
        return dst->status;
    }
    int32_t *map[N_DICTS] = {NULL, NULL, NULL, NULL};
    int r = PV_NOMEM;
    size_t n0 = dst->n, m = src->n;
    for (int d = 0; d < N_DICTS; d++)
        if (!(map[d] = dict_merge(&dst->dicts[d], &src->dicts[d]))) goto out;
    if (m > SIZE_MAX / 16 - n0 || !reserve_columns(dst, n0 + m)) goto out;
    /* Column by column, each freed once copied: the pages it gives back are
     * at hand for the next one (fresh memory is the slow part of a copy). */
    for (int c = C_PH; c < C_NUM0; c++) {
        const int32_t *code_map = c == C_NAME ? map[DICT_NAMES] : c == C_CAT ? map[DICT_CATS]
                                : c == C_PID || c == C_TID || c == C_ID || c == C_BIND ? map[DICT_TOKENS] : NULL;
        if (code_map) {
            int32_t *to = (int32_t *)col_ptr(dst, c) + n0;
            const int32_t *from = (const int32_t *)col_ptr(src, c);
            for (size_t i = 0; i < m; i++) to[i] = remapped(code_map, from[i]);
        } else if (m) {
            memcpy((uint8_t *)col_ptr(dst, c) + n0 * col_width(c), col_ptr(src, c), m * col_width(c));
        }
        pv_scan_release(src, c);
    }
    if (!src->file_args && src->blob.len) { /* args offsets into the joined blob */
        int64_t shift = (int64_t)dst->blob.len;
        if (!blob_append(&dst->blob, src->blob.data, src->blob.len)) goto out;
        for (size_t i = 0; i < m; i++)
            if (dst->aoff[n0 + i] >= 0) dst->aoff[n0 + i] += shift;
    }
    for (int k = 0; k < NUM_KEYS; k++) {
        const int64_t *rows = (const int64_t *)src->num[k].rows.data;
        size_t nr = src->num[k].rows.len / 8;
        if (!buf_reserve(&dst->num[k].rows, nr * 8) ||
            !buf_append(&dst->num[k].values, src->num[k].values.data, src->num[k].values.len))
            goto out;
        int64_t *to = (int64_t *)(dst->num[k].rows.data + dst->num[k].rows.len);
        for (size_t j = 0; j < nr; j++) to[j] = rows[j] + (int64_t)n0;
        dst->num[k].rows.len += nr * 8;
        buf_free(&src->num[k].rows); /* copied: give the memory back before the next one */
        buf_free(&src->num[k].values);
    }
    for (int k = 0; k < VAL_KEYS; k++) { /* rows shifted, codes remapped to dst's dictionary */
        const int64_t *rows = (const int64_t *)src->val[k].rows.data;
        const int32_t *codes = (const int32_t *)src->val[k].values.data;
        size_t nr = src->val[k].rows.len / 8;
        if (!buf_reserve(&dst->val[k].rows, nr * 8) || !buf_reserve(&dst->val[k].values, nr * 4)) goto out;
        int64_t *to = (int64_t *)(dst->val[k].rows.data + dst->val[k].rows.len);
        int32_t *to_code = (int32_t *)(dst->val[k].values.data + dst->val[k].values.len);
        for (size_t j = 0; j < nr; j++) {
            to[j] = rows[j] + (int64_t)n0;
            to_code[j] = remapped(map[DICT_VALUES], codes[j]);
        }
        dst->val[k].rows.len += nr * 8;
        dst->val[k].values.len += nr * 4;
        buf_free(&src->val[k].rows);
        buf_free(&src->val[k].values);
    }
    {
        const int64_t *q = (const int64_t *)src->top.data;
        int64_t shift = (int64_t)dst->toparena.len;
        if (!buf_append(&dst->toparena, src->toparena.data, src->toparena.len)) goto out;
        for (size_t j = 0; j < src->top.len / 32; j++) {
            int64_t e[4] = {q[4 * j] + shift, q[4 * j + 1], q[4 * j + 2] + shift, q[4 * j + 3]};
            if (!buf_append(&dst->top, (const uint8_t *)e, sizeof e)) goto out;
        }
    }
    dst->n = n0 + m;
    dst->state = src->state;
    dst->seen_events = src->seen_events;
    dst->base = src->base;
    dst->carry.len = 0;
    for (int k = 0; k < 6 + VAL_KEYS; k++) dst->cache[k] = -1;
    r = PV_OK;
out:
    for (int d = 0; d < N_DICTS; d++) free(map[d]);
    if (r != PV_OK) dst->status = r;
    return r;
}

int64_t pv_scan_count(const pv_scanner *s) { return (int64_t)s->n; }
int pv_scan_array_format(const pv_scanner *s) { return s->array_format; }

/* Error details (valid after PV_ERR); reason for PV_UNSUP. */
int64_t pv_scan_error(const pv_scanner *s, const char **msg, const char **expected) {
    *msg = s->err_msg ? s->err_msg : "";
    *expected = s->err_expected ? s->err_expected : "";
    return s->err_offset;
}
/* Event index (traceEvents[i]) of the error, or -1 if not inside a ts/dur. */
int64_t pv_scan_error_record(const pv_scanner *s) { return s->err_record; }
const char *pv_scan_unsupported(const pv_scanner *s) { return s->unsup_reason ? s->unsup_reason : ""; }

/* Pointer and size in bytes of a result column (see C_* ids). */
const void *pv_scan_column(pv_scanner *s, int c, size_t *nbytes) {
    if (c == C_TOP) { *nbytes = s->top.len; return s->top.data; }
    if (c == C_TOPARENA) { *nbytes = s->toparena.len; return s->toparena.data; }
    if (c < 0 || c >= C_NUM0) { *nbytes = 0; return NULL; }
    *nbytes = s->n * col_width(c);
    return col_ptr(s, c);
}

/* The bytes of p (n used) to the caller, shrunk to n; NULL if empty. */
static void *hand_over(void *p, size_t n, size_t *nbytes) {
    *nbytes = 0;
    if (!p || n == 0) {
        free(p);
        return NULL;
    }
    void *q = realloc(p, n); /* give back the unused capacity */
    if (q) p = q;
    *nbytes = n;
    return p;
}

/* Hand a result column (C_PH .. C_FLOW, or C_BLOB: the args blob) over to
 * the caller, shrunk to its size: the scanner forgets it and the caller
 * frees it with pv_free.  NULL if empty. */
void *pv_scan_detach(pv_scanner *s, int c, size_t *nbytes) {
    *nbytes = 0;
    if (c == C_BLOB) {
        buf_t b = s->blob;
        memset(&s->blob, 0, sizeof s->blob);
        return hand_over(b.data, b.len, nbytes);
    }
    if (c < 0 || c >= C_NUM0) return NULL;
    void *p = col_ptr(s, c);
    set_col(s, c, NULL);
    return hand_over(p, s->n * col_width(c), nbytes);
}

/* Hand over a sparse column's rows (int64, ascending) if rows, else its
 * values, as pv_scan_detach. */
static void *detach_sparse(sparse_t *col, int rows, size_t *nbytes) {
    buf_t *from = rows ? &col->rows : &col->values;
    buf_t b = *from;
    memset(from, 0, sizeof *from);
    return hand_over(b.data, b.len, nbytes);
}

/* Numeric arg k: rows, or values (double). */
void *pv_scan_detach_num(pv_scanner *s, int k, int rows, size_t *nbytes) {
    *nbytes = 0;
    return k < 0 || k >= NUM_KEYS ? NULL : detach_sparse(&s->num[k], rows, nbytes);
}

/* Value arg k: rows, or codes in dictionary 3 (int32). */
void *pv_scan_detach_val(pv_scanner *s, int k, int rows, size_t *nbytes) {
    *nbytes = 0;
    return k < 0 || k >= VAL_KEYS ? NULL : detach_sparse(&s->val[k], rows, nbytes);
}

void pv_free(void *p) { free(p); }

/* Free a result column once the caller has copied it. */
void pv_scan_release(pv_scanner *s, int c) {
    if (c == C_BLOB) buf_free(&s->blob);
    else if (c == C_TOP) buf_free(&s->top);
    else if (c == C_TOPARENA) buf_free(&s->toparena);
    else if (c >= 0 && c < C_NUM0) {
        free(col_ptr(s, c));
        set_col(s, c, NULL);
    }
}

/* Dictionary d (0 names, 1 cats, 2 tokens, 3 raw texts of value args): count, arena, per-entry
 * int64 offsets, int32 lengths, uint32 flags (bit 0: has escapes; bits 8..:
 * bytes of literal prefix before the raw JSON string body). */
int64_t pv_scan_dict(pv_scanner *s, int d, const uint8_t **arena, size_t *arena_len, const int64_t **offsets,
                     const int32_t **lengths, const uint32_t **flags) {
    if (d < 0 || d >= N_DICTS) return -1;
    dict_t *t = &s->dicts[d];
    *arena = t->arena.data;
    *arena_len = t->arena.len;
    *offsets = (const int64_t *)t->offsets.data;
    *lengths = (const int32_t *)t->lengths.data;
    *flags = (const uint32_t *)t->flags.data;
    return (int64_t)t->count;
}

int pv_abi_version(void) { return PV_ABI_VERSION; }
int pv_num_keys(void) { return NUM_KEYS; }
const char *pv_num_key(int i) { return (i >= 0 && i < NUM_KEYS) ? NUMERIC_KEYS[i] : NULL; }
int pv_val_keys(void) { return VAL_KEYS; }
const char *pv_val_key(int i) { return (i >= 0 && i < VAL_KEYS) ? VALUE_KEYS[i] : NULL; }
int pv_col_blob(void) { return C_BLOB; }
