/*
 * chrome_event.c -- one Chrome trace event object -> one row of the columns
 * (ph, name/cat/pid/tid/id codes, ts/dur, bp, args offset/length in the blob,
 * numeric args).
 *
 * Field rules (same as the reference): integer literal -> its text, string
 * -> "s:" + string, id2 -> "id2l:"/"id2g:" + token; ts/dur: the decimal
 * number x (microseconds) -> x * 1000 ns exactly, rounded to an integer with
 * ties to even (never through a double), an error beyond +-INT64_MAX; ph/bp/s:
 * ASCII code of a one-character ASCII string else 0, bp falling back to s;
 * bind_id: a token like id; flow_in/flow_out: set only by the literal true;
 * the last of duplicated keys wins; strings are interned once the event is
 * complete, in the order name, cat, pid, tid, id, bind_id.
 */

#include "scan_internal.h"

/* ------------------------------------------------------------------------ */
/* Numeric and value args: NUMERIC_LIST / VALUE_LIST of keys_gen.h, which    */
/* hatch_build.py writes from _native/keys.py (the one list) before compiling. */

#define KEY_TEXT(k) k,
#define KEY_LEN(k) sizeof(k) - 1,
const char *const NUMERIC_KEYS[NUM_KEYS] = {NUMERIC_LIST(KEY_TEXT)};
static const size_t NUMERIC_LENS[NUM_KEYS] = {NUMERIC_LIST(KEY_LEN)};
const char *const VALUE_KEYS[VAL_KEYS] = {VALUE_LIST(KEY_TEXT)};
static const size_t VALUE_LENS[VAL_KEYS] = {VALUE_LIST(KEY_LEN)};
_Static_assert(sizeof((const char *[]){NUMERIC_LIST(KEY_TEXT)}) == NUM_KEYS * sizeof(char *), "NUM_KEYS");
_Static_assert(sizeof((const char *[]){VALUE_LIST(KEY_TEXT)}) == VAL_KEYS * sizeof(char *), "VAL_KEYS");

/* ------------------------------------------------------------------------ */
/* Event keys and values with special meaning                                */

/* ASCII code of a one-character ASCII string, else 0 (raw is a validated
 * string body). */
static int one_char(const uint8_t *raw, size_t n) {
    if (n == 1) return raw[0] < 0x80 ? raw[0] : 0;
    if (n == 0) return 0;
    unsigned cp;
    size_t k;
    if (raw[0] == '\\') {
        k = escape_cp(raw, 0, &cp);
    } else if (raw[0] >= 0x80) {
        k = raw[0] >= 0xF0 ? 4 : raw[0] >= 0xE0 ? 3 : 2;
        cp = 0x80; /* some non-ASCII code point */
    } else {
        return 0; /* ASCII followed by more */
    }
    if (k != n) return 0; /* more than one character */
    return cp < 0x80 ? (int)cp : 0;
}

/* Key of the event member: one of the recognised event keys or -1. */
enum { K_OTHER = -1, K_PH, K_NAME, K_CAT, K_PID, K_TID, K_ID, K_ID2, K_TS, K_DUR, K_BP, K_S, K_ARGS,
       K_BIND, K_FIN, K_FOUT };

static int event_key(const uint8_t *k, size_t n) {
    switch (n) {
    case 1: return k[0] == 's' ? K_S : K_OTHER;
    case 2:
        if (k[0] == 'p' && k[1] == 'h') return K_PH;
        if (k[0] == 't' && k[1] == 's') return K_TS;
        if (k[0] == 'i' && k[1] == 'd') return K_ID;
        if (k[0] == 'b' && k[1] == 'p') return K_BP;
        return K_OTHER;
    case 3:
        if (!memcmp(k, "pid", 3)) return K_PID;
        if (!memcmp(k, "tid", 3)) return K_TID;
        if (!memcmp(k, "cat", 3)) return K_CAT;
        if (!memcmp(k, "dur", 3)) return K_DUR;
        if (!memcmp(k, "id2", 3)) return K_ID2;
        return K_OTHER;
    case 4:
        if (!memcmp(k, "name", 4)) return K_NAME;
        if (!memcmp(k, "args", 4)) return K_ARGS;
        return K_OTHER;
    case 7:
        if (!memcmp(k, "bind_id", 7)) return K_BIND;
        if (!memcmp(k, "flow_in", 7)) return K_FIN;
        return K_OTHER;
    case 8: return memcmp(k, "flow_out", 8) ? K_OTHER : K_FOUT;
    default: return K_OTHER;
    }
}

static int numeric_key(const uint8_t *k, size_t n) {
    if (n < 4 || n > 25) return -1;
    for (int i = 0; i < NUM_KEYS; i++)
        if (NUMERIC_LENS[i] == n && memcmp(NUMERIC_KEYS[i], k, n) == 0) return i;
    return -1;
}

static int value_key(const uint8_t *k, size_t n) {
    if (n < 4 || n > 19) return -1;
    for (int i = 0; i < VAL_KEYS; i++)
        if (VALUE_LENS[i] == n && memcmp(VALUE_KEYS[i], k, n) == 0) return i;
    return -1;
}

/* A pid/tid/id/id2 value or a name/cat string seen in the current event;
 * interned into its dictionary only once the event is complete, in the
 * reference decoder's order (name, cat, pid, tid, id) and for the last
 * occurrence of a duplicated key only (so a bad value that a later
 * duplicate overrides does not matter, as in the reference). */
typedef struct {
    const uint8_t *raw; /* integer literal text, or string body (no quotes) */
    size_t n;
    int kind;           /* 0 absent, 1 integer literal, 2 string, 3 other (left to Python) */
    int bs;             /* string has escapes */
    const char *prefix; /* "" or "id2l:" / "id2g:" */
} ref_t;

/* Validate a pid/tid/id value (integer literal or string) into *ref;
 * PV_UNSUP for other JSON types (the reference turns those into "j:" tokens). */
static int scan_tokval(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, ref_t *ref) {
    size_t pos = *ppos;
    if (pos >= len) return PV_MORE;
    uint8_t c = b[pos];
    int r;
    if (c == '"') {
        int bs;
        r = scan_string(s, b, len, &pos, &bs);
        if (r != PV_OK) return r;
        ref->raw = b + *ppos + 1;
        ref->n = pos - *ppos - 2;
        ref->kind = 2;
        ref->bs = bs;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        num_t nm;
        r = scan_number(s, b, len, &pos, &nm);
        if (r != PV_OK) return r;
        ref->raw = b + *ppos;
        ref->n = pos - *ppos;
        /* non-integer numbers and -0 ("0" in Python) are left to Python */
        ref->kind = (!nm.is_int || (nm.neg && nm.mant == 0)) ? 3 : 1;
        ref->bs = 0;
    } else {
        r = scan_value(s, b, len, &pos, 1);
        if (r != PV_OK) return r;
        ref->kind = 3; /* neither an integer nor a string: "j:" token, left to Python */
    }
    ref->prefix = "";
    *ppos = pos;
    return PV_OK;
}

/* Token code of ref: prefix + (decimal text | "s:" + string). */
static int intern_token(pv_scanner *s, const ref_t *ref, int32_t *code, int32_t *cache) {
    size_t plen = strlen(ref->prefix);
    s->scratch.len = 0;
    if (!buf_append(&s->scratch, (const uint8_t *)ref->prefix, plen) ||
        (ref->kind == 2 && !buf_append(&s->scratch, (const uint8_t *)"s:", 2)) ||
        !buf_append(&s->scratch, ref->raw, ref->n))
        return PV_NOMEM;
    /* flags: escapes, and where the JSON string body starts (ints: never decoded) */
    uint32_t flags = ref->kind == 2 ? ((uint32_t)ref->bs | (uint32_t)((plen + 2) << 8))
                                    : (uint32_t)(s->scratch.len << 8);
    int32_t k = cached_lookup(&s->dicts[DICT_TOKENS], cache, s->scratch.data, s->scratch.len, flags);
    if (k < 0) return PV_NOMEM;
    *code = k;
    return PV_OK;
}

/* id2: {"local": X} or {"global": X}, exactly one member (anything else is
 * left to Python). */
static int scan_id2(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, ref_t *ref) {
    size_t pos = *ppos, start = pos;
    int r;
    if (b[pos] != '{') goto other;
    pos = skip_ws(b, len, pos + 1);
    if (pos >= len) return PV_MORE;
    if (b[pos] != '"') goto other;
    size_t ks = pos;
    int bs;
    r = scan_string(s, b, len, &pos, &bs);
    if (r != PV_OK) return r;
    uint8_t kb[64];
    size_t kn;
    const uint8_t *k = key_bytes(b, ks, pos, bs, kb, sizeof kb, &kn);
    const char *prefix = (kn == 5 && !memcmp(k, "local", 5)) ? "id2l:" : (kn == 6 && !memcmp(k, "global", 6)) ? "id2g:" : NULL;
    if (!prefix) goto other;
    pos = skip_ws(b, len, pos);
    if (pos >= len) return PV_MORE;
    if (b[pos] != ':') return fail(s, pos, "unexpected character after key", "':'");
    pos = skip_ws(b, len, pos + 1);
    if (pos >= len) return PV_MORE;
    r = scan_tokval(s, b, len, &pos, ref);
    if (r != PV_OK) return r;
    pos = skip_ws(b, len, pos);
    if (pos >= len) return PV_MORE;
    if (b[pos] != '}') goto other;
    ref->prefix = prefix;
    *ppos = pos + 1;
    return PV_OK;
other: /* any other id2: validate, leave to Python if it is the one used */
    pos = start;
    r = scan_value(s, b, len, &pos, 1);
    if (r != PV_OK) return r;
    ref->kind = 3;
    *ppos = pos;
    return PV_OK;
}

/* ts / dur: a JSON number of microseconds (or a string holding one) ->
 * int64 ns, exactly from the decimal digits (num_times_1000: x * 1000
 * rounded with ties to even).  A number beyond +-INT64_MAX ns (about +-292
 * years) sets *bad = 2 and *where (an error once the event is complete, as
 * a later duplicate key wins); any other value (not a number) sets *bad = 1:
 * left to the reference, which reports it. */
static int scan_time(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, int64_t *out, int *bad,
                     size_t *where) {
    size_t pos = *ppos, start = pos;
    uint8_t c = b[pos];
    num_t nm;
    int r;
    char tmp[80];
    if (c == '"') {
        /* a string holding a JSON number (surrounding spaces allowed), as XProf writes */
        int bs;
        r = scan_string(s, b, len, &pos, &bs);
        if (r != PV_OK) return r;
        size_t a = *ppos + 1, e = pos - 1;
        while (a < e && b[a] == ' ') a++;
        while (e > a && b[e - 1] == ' ') e--;
        *ppos = pos;
        *bad = 1; /* unless it is a plain number: */
        if (bs || e - a + 1 >= sizeof tmp || a == e) return PV_OK;
        memcpy(tmp, b + a, e - a);
        tmp[e - a] = ' '; /* delimiter, so the number scan ends inside tmp */
        size_t q = 0;
        int64_t saved = s->err_offset; /* a scan error here is not a JSON error */
        const char *m = s->err_msg, *x = s->err_expected, *u = s->unsup_reason;
        r = (tmp[0] == '-' || (tmp[0] >= '0' && tmp[0] <= '9'))
                ? scan_number_raw(s, (const uint8_t *)tmp, e - a + 1, &q, &nm)
                : PV_ERR;
        s->err_offset = saved, s->err_msg = m, s->err_expected = x, s->unsup_reason = u;
        if (r != PV_OK || q != e - a) return PV_OK;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        r = scan_number_raw(s, b, len, &pos, &nm);
        if (r != PV_OK) return r;
        *ppos = pos;
    } else {
        r = scan_value(s, b, len, &pos, 1);
        if (r != PV_OK) return r;
        *ppos = pos;
        *bad = 1; /* not a number: the reference reports it */
        return PV_OK;
    }
    *bad = 0;
    if (!num_times_1000(&nm, out)) {
        *bad = 2;
        *where = start;
    }
    return PV_OK;
}

/* Numeric args of the event being scanned: nv[k] is valid where bit k of
 * *have is set (appended to the sparse columns once the event is complete). */
typedef struct {
    double nv[NUM_KEYS];
    unsigned have;
    const uint8_t *vt[VAL_KEYS]; /* value args: raw JSON text where bit k of vhave is set */
    size_t vn[VAL_KEYS];
    unsigned vhave;
} numargs_t;

/* args: validate, copy the raw text into the blob, pick numeric and value args. */
static int scan_args(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, size_t i, numargs_t *na) {
    size_t pos = *ppos, start = pos;
    int r;
    na->have = na->vhave = 0; /* last "args" wins */
    if (b[pos] != '{') {
        r = scan_value(s, b, len, &pos, 1);
        if (r != PV_OK) return r;
    } else {
        pos = skip_ws(b, len, pos + 1);
        if (pos >= len) return PV_MORE;
        if (b[pos] == '}') {
            pos++;
        } else {
            for (;;) {
                if (b[pos] != '"') return fail(s, pos, "unexpected character in object", "a string key");
                size_t ks = pos;
                int bs;
                r = scan_string(s, b, len, &pos, &bs);
                if (r != PV_OK) return r;
                uint8_t kb[64];
                size_t kn;
                const uint8_t *key = key_bytes(b, ks, pos, bs, kb, sizeof kb, &kn);
                int nk = numeric_key(key, kn);
                int vk = nk < 0 ? value_key(key, kn) : -1;
                pos = skip_ws(b, len, pos);
                if (pos >= len) return PV_MORE;
                if (b[pos] != ':') return fail(s, pos, "unexpected character after key", "':'");
                pos = skip_ws(b, len, pos + 1);
                if (pos >= len) return PV_MORE;
                uint8_t c = b[pos];
                if (nk >= 0 && (c == '-' || (c >= '0' && c <= '9'))) {
                    num_t nm;
                    r = scan_number(s, b, len, &pos, &nm);
                    if (r != PV_OK) return r;
                    na->nv[nk] = num_value(b, &nm);
                    na->have |= 1u << nk;
                } else {
                    size_t vs = pos;
                    r = scan_value(s, b, len, &pos, 2);
                    if (r != PV_OK) return r;
                    if (nk >= 0) na->have &= ~(1u << nk); /* duplicate key: the last one counts */
                    if (vk >= 0) {
                        na->vt[vk] = b + vs;
                        na->vn[vk] = pos - vs;
                        na->vhave |= 1u << vk;
                    }
                }
                pos = skip_ws(b, len, pos);
                if (pos >= len) return PV_MORE;
                if (b[pos] == '}') {
                    pos++;
                    break;
                }
                if (b[pos] != ',') return fail(s, pos, "unexpected character in object", "',' or '}'");
                pos = skip_ws(b, len, pos + 1);
                if (pos >= len) return PV_MORE;
            }
        }
    }
    size_t n = pos - start;
    if (n > INT32_MAX) return unsup(s, "args larger than 2 GiB");
    s->alen[i] = (int32_t)n;
    if (s->file_args) {
        s->aoff[i] = s->base + (int64_t)start; /* read back from the file when asked */
    } else {
        s->aoff[i] = (int64_t)s->blob.len;
        if (!blob_append(&s->blob, b + start, n)) return PV_NOMEM;
    }
    *ppos = pos;
    return PV_OK;
}

/* One event object at b[*ppos] == '{' -> row s->n. */
int scan_event(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos) {
    if (s->n == s->cap && !grow_columns(s)) return PV_NOMEM;
    size_t i = s->n, pos = *ppos;
    size_t blob_mark = s->blob.len;
    s->ph[i] = 0;
    s->ts[i] = s->dur[i] = ABSENT_TIME;
    s->aoff[i] = -1;
    s->alen[i] = 0;
    numargs_t na;
    na.have = na.vhave = 0;
    ref_t name = {0}, cat = {0}, pid = {0}, tid = {0}, id = {0}, id2 = {0}, bind = {0};
    int bpv = 0, sv = 0, ts_bad = 0, dur_bad = 0, flow = 0;
    size_t ts_at = 0, dur_at = 0;
    int r = PV_OK;

    pos = skip_ws(b, len, pos + 1);
    if (pos >= len) { r = PV_MORE; goto out; }
    if (b[pos] == '}') {
        pos++;
        goto done;
    }
    for (;;) {
        if (b[pos] != '"') { r = fail(s, pos, "unexpected character in event", "a string key"); goto out; }
        size_t ks = pos;
        int bs;
        r = scan_string(s, b, len, &pos, &bs);
        if (r != PV_OK) goto out;
        uint8_t kb[64];
        size_t kn;
        const uint8_t *key = key_bytes(b, ks, pos, bs, kb, sizeof kb, &kn);
        int kid = event_key(key, kn);
        pos = skip_ws(b, len, pos);
        if (pos >= len) { r = PV_MORE; goto out; }
        if (b[pos] != ':') { r = fail(s, pos, "unexpected character after key", "':'"); goto out; }
        pos = skip_ws(b, len, pos + 1);
        if (pos >= len) { r = PV_MORE; goto out; }
        uint8_t c = b[pos];
        switch (kid) {
        case K_PH:
        case K_BP:
        case K_S: {
            int v = 0;
            if (c == '"') {
                size_t vs = pos;
                r = scan_string(s, b, len, &pos, &bs);
                if (r != PV_OK) goto out;
                v = one_char(b + vs + 1, pos - vs - 2);
            } else {
                r = scan_value(s, b, len, &pos, 1);
                if (r != PV_OK) goto out;
            }
            if (kid == K_PH) s->ph[i] = (uint8_t)v;
            else if (kid == K_BP) bpv = v;
            else sv = v;
            break;
        }
        case K_NAME:
        case K_CAT: {
            ref_t *ref = kid == K_NAME ? &name : &cat;
            if (c != '"') { /* the reference uses its JSON text: left to Python */
                r = scan_value(s, b, len, &pos, 1);
                if (r != PV_OK) goto out;
                ref->kind = 3;
                break;
            }
            size_t vs = pos;
            r = scan_string(s, b, len, &pos, &bs);
            if (r != PV_OK) goto out;
            ref->raw = b + vs + 1;
            ref->n = pos - vs - 2;
            ref->kind = 2;
            ref->bs = bs;
            break;
        }
        case K_PID:
            r = scan_tokval(s, b, len, &pos, &pid);
            if (r != PV_OK) goto out;
            break;
        case K_TID:
            r = scan_tokval(s, b, len, &pos, &tid);
            if (r != PV_OK) goto out;
            break;
        case K_ID:
            r = scan_tokval(s, b, len, &pos, &id);
            if (r != PV_OK) goto out;
            break;
        case K_ID2:
            r = scan_id2(s, b, len, &pos, &id2);
            if (r != PV_OK) goto out;
            break;
        case K_TS:
            r = scan_time(s, b, len, &pos, &s->ts[i], &ts_bad, &ts_at);
            if (r != PV_OK) goto out;
            break;
        case K_DUR:
            r = scan_time(s, b, len, &pos, &s->dur[i], &dur_bad, &dur_at);
            if (r != PV_OK) goto out;
            break;
        case K_ARGS:
            r = scan_args(s, b, len, &pos, i, &na);
            if (r != PV_OK) goto out;
            break;
        case K_BIND:
            r = scan_tokval(s, b, len, &pos, &bind);
            if (r != PV_OK) goto out;
            break;
        case K_FIN:
        case K_FOUT: {
            unsigned bit = kid == K_FIN ? 1u : 2u;
            r = scan_value(s, b, len, &pos, 1);
            if (r != PV_OK) goto out;
            flow = c == 't' ? (flow | (int)bit) : (flow & ~(int)bit); /* only the literal true */
            break;
        }
        default:
            r = scan_value(s, b, len, &pos, 1);
            if (r != PV_OK) goto out;
        }
        pos = skip_ws(b, len, pos);
        if (pos >= len) { r = PV_MORE; goto out; }
        if (b[pos] == '}') {
            pos++;
            break;
        }
        if (b[pos] != ',') { r = fail(s, pos, "unexpected character in event", "',' or '}'"); goto out; }
        pos = skip_ws(b, len, pos + 1);
        if (pos >= len) { r = PV_MORE; goto out; }
    }
done:
    if (ts_bad == 2 || dur_bad == 2) {
        s->err_record = (int64_t)i;
        return ts_bad == 2 ? fail(s, ts_at, "'ts' is out of range", "a time in microseconds within \xc2\xb1" "292 years")
                           : fail(s, dur_at, "'dur' is out of range", "a time in microseconds within \xc2\xb1" "292 years");
    }
    if (ts_bad || dur_bad) return unsup(s, "ts/dur that is not a number");
    if (name.kind == 3 || cat.kind == 3 || pid.kind == 3 || tid.kind == 3 || (id.kind ? id.kind : id2.kind) == 3 ||
        bind.kind == 3)
        return unsup(s, "name/cat/pid/tid/id/bind_id of a type the reference turns into JSON text");
    /* the event is complete: intern its strings in the reference order */
    s->name[i] = s->cat[i] = s->pid[i] = s->tid[i] = s->id[i] = s->bind[i] = -1;
    if (name.kind) {
        s->name[i] = cached_lookup(&s->dicts[DICT_NAMES], &s->cache[0], name.raw, name.n, (uint32_t)name.bs);
        if (s->name[i] < 0) return PV_NOMEM;
    }
    if (cat.kind) {
        s->cat[i] = cached_lookup(&s->dicts[DICT_CATS], &s->cache[1], cat.raw, cat.n, (uint32_t)cat.bs);
        if (s->cat[i] < 0) return PV_NOMEM;
    }
    if ((pid.kind && (r = intern_token(s, &pid, &s->pid[i], &s->cache[2])) != PV_OK) ||
        (tid.kind && (r = intern_token(s, &tid, &s->tid[i], &s->cache[3])) != PV_OK) ||
        (id.kind && (r = intern_token(s, &id, &s->id[i], &s->cache[4])) != PV_OK) || /* "id" wins over "id2" */
        (!id.kind && id2.kind && (r = intern_token(s, &id2, &s->id[i], &s->cache[4])) != PV_OK) ||
        (bind.kind && (r = intern_token(s, &bind, &s->bind[i], &s->cache[5])) != PV_OK))
        return r;
    s->bp[i] = (uint8_t)(bpv ? bpv : sv);
    s->flow[i] = (uint8_t)flow;
    for (int k = 0; na.have >> k; k++) {
        if (!(na.have >> k & 1)) continue;
        int64_t row = (int64_t)i;
        if (!buf_append(&s->num[k].rows, (const uint8_t *)&row, 8) ||
            !buf_append(&s->num[k].values, (const uint8_t *)&na.nv[k], 8))
            return PV_NOMEM;
    }
    for (int k = 0; na.vhave >> k; k++) {
        if (!(na.vhave >> k & 1)) continue;
        int64_t row = (int64_t)i;
        int32_t code = cached_lookup(&s->dicts[DICT_VALUES], &s->cache[6 + k], na.vt[k], na.vn[k], 0);
        if (code < 0 || !buf_append(&s->val[k].rows, (const uint8_t *)&row, 8) ||
            !buf_append(&s->val[k].values, (const uint8_t *)&code, 4))
            return PV_NOMEM;
    }
    s->n++;
    *ppos = pos;
    return PV_OK;
out:
    s->blob.len = blob_mark; /* drop this event's args */
    return r;
}
