/*
 * pickle_snap.c -- a restricted pickle opcode interpreter for PyTorch CUDA
 * memory snapshots (formats/torch_snapshot.py is the reference).
 *
 * Only the opcodes of dicts, lists, tuples, str, bytes, int, float, bool,
 * None, the memo and frames run; globals, reduce, build, persistent ids,
 * extensions, sets and buffers are refused by name.  Bounds as the Python
 * reader: `budget` opcodes, one read at most PV_MAX_STRING bytes, integers of
 * at most 17 bytes, a hash-table memo (a LONG_BINPUT 2**26 is one entry).
 *
 * No Python object is built.  Values are 16-byte tagged cells; containers
 * live in one array.  A frame dict ({name, filename, line}) appended to a
 * list becomes one interned FRAME, and a list of FRAMEs set as a dict value
 * one interned STACK, so a stack is stored once however many entries share
 * it.  After STOP the result is walked with the snapshot's schema into
 * columns (entries, segments, blocks, stacks, frames, strings).
 *
 * Three outcomes: OK (columns), ERR (the input is refused: the Python reader
 * refuses it too) and FALLBACK (something this reader does not decide: a
 * rare opcode, a value of an unexpected type or shape, deep nesting; the
 * caller reruns the pure-Python reader, which is the definition).
 *
 * This file runs the opcodes; pickle_internal.h lists the files that hold the rest.
 */

#include "pickle_internal.h"

/* ---- stack machine --------------------------------------------------------- */

static int push(pk_t *p, val_t v) {
    if (p->top == p->scap) {
        size_t cap = p->scap ? p->scap * 2 : 1024;
        val_t *s = (val_t *)realloc(p->stack, cap * sizeof *s);
        if (!s) return 0;
        p->stack = s, p->scap = cap;
    }
    p->stack[p->top++] = v;
    return 1;
}

static size_t base(const pk_t *p) { return p->nmarks ? p->marks[p->nmarks - 1] : 0; }

/* APPEND(S) of items[0:n] onto the top of the stack (items are the stack's, rewritten in place) */
static int appends(pk_t *p, val_t *items, size_t n) {
    if (p->top == base(p)) return set_err(p, PK_ERR, "corrupt: APPENDS with an empty stack");
    val_t t = p->stack[p->top - 1];
    if (t.tag == T_FRAMEV || t.tag == T_STACKV) return set_err(p, PK_FALLBACK, "a frame list changed later");
    if (t.tag != T_CONT) return set_err(p, PK_ERR, "corrupt: APPENDS onto a value that is not a list");
    cont_t *c = &p->conts[t.v];
    if (c->kind == C_FRAME || c->kind == C_STACK) return set_err(p, PK_FALLBACK, "a frame list changed later");
    if (c->kind == C_LIST && (c->flags & F_FROZEN)) return set_err(p, PK_FALLBACK, "an empty frames list changed later");
    /* the first item of an empty list a trace entry (a dict with a known action): rows from now on */
    if (c->kind == C_LIST && c->n == 0 && n && items[0].tag == T_CONT && p->conts[items[0].v].kind == C_DICT) {
        const cont_t *e = &p->conts[items[0].v];
        val_t act = pk_lookup_items(e->items, e->n, K_ACTION);
        if (act.tag == T_STR && act.v >= K_FIRST_ACTION && act.v < NKEYS) {
            free(c->items);
            c->kind = C_ELIST, c->aux = (int64_t)p->ecol[E_ACTION].n, c->height = 1;
        }
    }
    if (c->kind == C_ELIST) {
        for (size_t k = 0; k < n; k++) {
            uint8_t h;
            if (c->aux + (int64_t)c->n != (int64_t)p->ecol[E_ACTION].n || c->n == UINT32_MAX)
                return set_err(p, PK_FALLBACK, "trace entries appended to two lists in turn");
            int r = pk_entry_append(p, items[k], &h);
            if (r) return r;
            c = &p->conts[t.v];
            c->n++;
            if (h + 1 > c->height) c->height = (uint8_t)(h + 1);
        }
        return PK_OK;
    }
    if (c->kind != C_LIST) return set_err(p, PK_ERR, "corrupt: APPENDS onto a value that is not a list");
    for (size_t k = 0; k < n; k++) {
        int r = pk_maybe_frame(p, &items[k]);
        if (r) return set_err(p, r, "out of memory");
    }
    if (!pk_cont_add(&p->conts[t.v], items, n)) return set_err(p, PK_NOMEM, "out of memory");
    return PK_OK;
}

/* SETITEM(S) of pairs items[0:n] onto the top of the stack (rewritten in place) */
static int setitems(pk_t *p, val_t *items, size_t n) {
    if (p->top == base(p)) return set_err(p, PK_ERR, "corrupt: SETITEMS with an empty stack");
    if (n == 0) return PK_OK; /* Python's loop does nothing, whatever the target */
    if (n % 2) return set_err(p, PK_ERR, "corrupt: SETITEMS with an odd number of items");
    val_t t = p->stack[p->top - 1];
    if (t.tag == T_FRAMEV || t.tag == T_STACKV) return set_err(p, PK_FALLBACK, "SETITEMS onto a list or a frame");
    if (t.tag != T_CONT) return set_err(p, PK_ERR, "corrupt: SETITEMS onto a value that is not a dict");
    uint8_t kind = p->conts[t.v].kind;
    if (kind != C_DICT) {
        if (kind == C_TUPLE) return set_err(p, PK_ERR, "corrupt: SETITEMS onto a tuple");
        return set_err(p, PK_FALLBACK, "SETITEMS onto a list or a frame");
    }
    for (size_t k = 0; k < n; k += 2) {
        val_t key = items[k];
        if (key.tag == T_FRAMEV || key.tag == T_STACKV) return set_err(p, PK_FALLBACK, "a frame as a dict key");
        if (key.tag == T_CONT) {
            if (p->conts[key.v].kind == C_TUPLE) return set_err(p, PK_FALLBACK, "a tuple as a dict key");
            return set_err(p, PK_ERR, "corrupt: an unhashable dict key (a list or a dict)");
        }
        int r = pk_maybe_stack(p, &items[k + 1]);
        if (r) return set_err(p, r, "out of memory");
    }
    if (!pk_cont_add(&p->conts[t.v], items, n)) return set_err(p, PK_NOMEM, "out of memory");
    return PK_OK;
}
/* ---- opcodes ----------------------------------------------------------------- */

static uint64_t le(const uint8_t *b, int n) {
    uint64_t x = 0;
    for (int i = n - 1; i >= 0; i--) x = (x << 8) | b[i];
    return x;
}

/* a little-endian two's complement integer of n <= 17 bytes */
static val_t long_value(const uint8_t *b, size_t n) {
    val_t v = {0, T_INT};
    if (n == 0) return v;
    int neg = b[n - 1] & 0x80;
    for (size_t i = 8; i < n; i++)
        if (b[i] != (neg ? 0xFF : 0x00)) { v.tag = T_BIGINT; return v; }
    size_t m = n < 8 ? n : 8;
    uint64_t x = le(b, (int)m);
    if (m < 8 && neg) x |= ~(uint64_t)0 << (8 * m);
    if (n > 8 && ((x >> 63) != 0) != (neg != 0)) { v.tag = T_BIGINT; return v; }
    v.v = (int64_t)x;
    return v;
}

static const char *refused_name(uint8_t op) {
    switch (op) {
    case 'R': return "opcode REDUCE: snapshots hold only builtin containers and scalars, so nothing is called";
    case 'b': return "opcode BUILD: snapshots hold only builtin containers and scalars, so nothing is built";
    case 'o': return "opcode OBJ: snapshots hold only builtin containers and scalars, so nothing is built";
    case 0x81: return "opcode NEWOBJ: snapshots hold only builtin containers and scalars, so nothing is built";
    case 0x92: return "opcode NEWOBJ_EX: snapshots hold only builtin containers and scalars, so nothing is built";
    case 'P': return "opcode PERSID: snapshots hold no persistent ids";
    case 'Q': return "opcode BINPERSID: snapshots hold no persistent ids";
    case 0x82: case 0x83: case 0x84: return "opcode EXT1/EXT2/EXT4: snapshots use no extension registry";
    case 0x8f: case 0x90: case 0x91: return "opcode EMPTY_SET/ADDITEMS/FROZENSET: snapshots hold no sets";
    case 0x96: return "opcode BYTEARRAY8: snapshots hold no bytearrays";
    case 0x97: return "opcode NEXT_BUFFER: snapshots hold no out-of-band buffers";
    case 0x98: return "opcode READONLY_BUFFER: snapshots hold no out-of-band buffers";
    default: return NULL;
    }
}

/* bytes of argument after the opcode byte (-1: variable, read by the opcode itself) */
static int arg_len(uint8_t op) {
    switch (op) {
    case 0x80: case 'K': case 'h': case 'q': case 0x8a: case 'U': case 'C': case 0x8c: return 1;
    case 'M': return 2;
    case 'J': case 'j': case 'r': case 0x8b: case 'X': case 'B': case 'T': return 4;
    case 'G': case 0x95: case 0x8d: case 0x8e: return 8;
    default: return 0;
    }
}

/* need n bytes at in_pos: PK_OK, PK_MORE, or an error for a read crossing a frame's end */
static int need(pk_t *p, uint64_t n) {
    uint64_t at = p->consumed + p->in_pos;
    if (p->frame_end >= 0) {
        if (at == (uint64_t)p->frame_end) p->frame_end = -1;
        else if (at + n > (uint64_t)p->frame_end) return set_err(p, PK_ERR, "corrupt: pickle exhausted before end of frame");
    }
    return p->in_len - p->in_pos >= n ? PK_OK : PK_MORE;
}

#define POP1(var)                                                                    \
    do {                                                                             \
        if (p->top == base(p)) return set_err(p, PK_ERR, "corrupt: pop from an empty stack"); \
        var = p->stack[--p->top];                                                    \
    } while (0)

/* STACK_GLOBAL: refused, naming the global (module and name are the two strings on the stack) */
static int stack_global(pk_t *p) {
    if (p->top - base(p) < 2 || p->stack[p->top - 1].tag != T_STR || p->stack[p->top - 2].tag != T_STR)
        return set_err(p, PK_FALLBACK, "STACK_GLOBAL without two strings");
    size_t nm, nn;
    const uint8_t *m = pk_str_at(p, p->stack[p->top - 2].v, &nm), *n = pk_str_at(p, p->stack[p->top - 1].v, &nn);
    snprintf(p->msgbuf, sizeof p->msgbuf, "the pickle asks for %.*s.%.*s; snapshots hold only builtin "
             "containers and scalars, so nothing is imported or called", (int)(nm > 40 ? 40 : nm),
             (const char *)m, (int)(nn > 40 ? 40 : nn), (const char *)n);
    return set_err(p, PK_ERR, p->msgbuf);
}

/* one opcode; PK_MORE leaves in_pos where it was */
static int step(pk_t *p) {
    size_t start = p->in_pos;
    int r = need(p, 1);
    if (r) return r;
    uint8_t op = p->in[p->in_pos];
    if (op == 'c' || op == 'i') /* GLOBAL, INST: the Python reader names the global it refuses */
        return set_err(p, PK_FALLBACK, "GLOBAL or INST");
    if (op == 0x93) return stack_global(p);
    const char *why = refused_name(op);
    if (why) {
        p->in_pos++; /* the position after the opcode, as the Python reader reports it */
        return set_err(p, PK_ERR, why);
    }
    int al = arg_len(op);
    /* the opcode byte and its argument are two reads in Python: the frame check applies to each */
    p->in_pos++;
    if (al > 0 && (r = need(p, (uint64_t)al))) { p->in_pos = start; return r; }
    const uint8_t *a = p->in + p->in_pos;
    uint64_t len = 0;
    int is_str = 0;
    switch (op) {
    case 'X': case 'T': case 'B': len = le(a, 4); is_str = 1; break;
    case 0x8c: case 'U': case 'C': len = a[0]; is_str = 1; break;
    case 0x8d: case 0x8e: len = le(a, 8); is_str = 1; break;
    case 0x8a: len = a[0]; is_str = 2; break;
    case 0x8b: { int64_t s = (int32_t)le(a, 4); if (s < 0 || s > 17) return set_err(p, PK_ERR, "a LONG4 integer of more than 17 bytes"); len = (uint64_t)s; is_str = 2; break; }
    case 0x95: len = le(a, 8); break;
    default: break;
    }
    if (op == 0x8a && a[0] > 17) return set_err(p, PK_ERR, "a LONG1 integer of more than 17 bytes");
    if (is_str) {
        p->in_pos += (size_t)al;
        if (len > MAX_READ) return set_err(p, PK_ERR, "a pickled value of more than 64 MiB");
        if ((r = need(p, len))) { p->in_pos = start; return r; }
    }
    if (++p->ops > p->budget) {
        snprintf(p->msgbuf, sizeof p->msgbuf, "more than %lld pickle opcodes for its size (a pickle bomb?)",
                 (long long)p->budget);
        return set_err(p, PK_ERR, p->msgbuf);
    }
    const uint8_t *s = p->in + p->in_pos; /* the string payload, when is_str */
    val_t v = {0, T_NONE}, x, y;
    switch (op) {
    case 0x80: /* PROTO */
        if (a[0] > 5) return set_err(p, PK_ERR, "corrupt: unsupported pickle protocol");
        break;
    case 0x95: /* FRAME */
        if (len > MAX_READ) return set_err(p, PK_ERR, "a pickle frame of more than 64 MiB");
        p->in_pos += 8;
        if (p->frame_end >= 0 && p->consumed + p->in_pos != (uint64_t)p->frame_end)
            return set_err(p, PK_ERR, "corrupt: beginning of a new frame before end of current frame");
        p->frame_end = -1;
        if (len) p->frame_end = (int64_t)(p->consumed + p->in_pos + len);
        return PK_OK;
    case '.': /* STOP */
        POP1(p->result);
        p->stopped = 1;
        return PK_OK;
    case '(': /* MARK */
        if (p->nmarks == p->mcap) {
            size_t cap = p->mcap ? p->mcap * 2 : 256;
            size_t *m = (size_t *)realloc(p->marks, cap * sizeof *m);
            if (!m) return set_err(p, PK_NOMEM, "out of memory");
            p->marks = m, p->mcap = cap;
        }
        p->marks[p->nmarks++] = p->top;
        break;
    case '0': /* POP */
        if (p->top > base(p)) p->top--;
        else if (p->nmarks) p->nmarks--;
        else return set_err(p, PK_ERR, "corrupt: POP with an empty stack");
        break;
    case '1': /* POP_MARK */
        if (!p->nmarks) return set_err(p, PK_ERR, "corrupt: POP_MARK without a MARK");
        p->top = p->marks[--p->nmarks];
        break;
    case '2': /* DUP */
        if (p->top == base(p)) return set_err(p, PK_ERR, "corrupt: DUP with an empty stack");
        if (p->stack[p->top - 1].tag == T_CONT) p->conts[p->stack[p->top - 1].v].flags |= F_PINNED;
        if (!push(p, p->stack[p->top - 1])) return set_err(p, PK_NOMEM, "out of memory");
        break;
    case 'N': v.tag = T_NONE; goto push_v;
    case 0x88: v.tag = T_TRUE; goto push_v;
    case 0x89: v.tag = T_FALSE; goto push_v;
    case 'J': v.v = (int32_t)le(a, 4); v.tag = T_INT; goto push_v;
    case 'K': v.v = a[0]; v.tag = T_INT; goto push_v;
    case 'M': v.v = (int64_t)le(a, 2); v.tag = T_INT; goto push_v;
    case 0x8a: case 0x8b: v = long_value(s, (size_t)len); p->in_pos += (size_t)len; goto push_v;
    case 'G': v.tag = T_FLOAT; goto push_v;
    case 'X': case 0x8c: case 0x8d: /* BINUNICODE, SHORT_BINUNICODE, BINUNICODE8 */
        if (!pk_utf8_ok(s, (size_t)len)) return set_err(p, PK_FALLBACK, "a string that is not plain UTF-8");
        if ((v.v = pk_intern(p, s, (size_t)len)) < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_STR;
        p->in_pos += (size_t)len;
        goto push_v;
    case 'T': case 'U': /* BINSTRING, SHORT_BINSTRING: ASCII only */
        for (uint64_t k = 0; k < len; k++)
            if (s[k] >= 0x80) return set_err(p, PK_FALLBACK, "a non-ASCII BINSTRING");
        if ((v.v = pk_intern(p, s, (size_t)len)) < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_STR;
        p->in_pos += (size_t)len;
        goto push_v;
    case 'B': case 'C': case 0x8e: /* BINBYTES, SHORT_BINBYTES, BINBYTES8 */
        v.tag = T_BYTES;
        p->in_pos += (size_t)len;
        goto push_v;
    case ')': case ']': case '}': /* EMPTY_TUPLE, EMPTY_LIST, EMPTY_DICT */
        v.v = pk_new_cont(p, op == ')' ? C_TUPLE : op == ']' ? C_LIST : C_DICT, NULL, 0);
        if (v.v < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_CONT;
        goto push_v;
    case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
        size_t n = (size_t)(op - 0x84);
        if (p->top - base(p) < n) return set_err(p, PK_ERR, "corrupt: TUPLE with too few items on the stack");
        p->top -= n;
        v.v = pk_new_cont(p, C_TUPLE, p->stack + p->top, n);
        if (v.v < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_CONT;
        goto push_v;
    }
    case 't': case 'l': case 'd': { /* TUPLE, LIST, DICT from the items since MARK */
        if (!p->nmarks) return set_err(p, PK_ERR, "corrupt: no MARK");
        size_t m = p->marks[--p->nmarks], n = p->top - m;
        if (op == 'd') {
            if (n % 2) return set_err(p, PK_ERR, "corrupt: DICT with an odd number of items");
            for (size_t k = m; k < p->top; k += 2)
                if (p->stack[k].tag == T_FRAMEV || p->stack[k].tag == T_STACKV)
                    return set_err(p, PK_FALLBACK, "a frame as a dict key");
                else if (p->stack[k].tag == T_CONT)
                    return set_err(p, p->conts[p->stack[k].v].kind == C_TUPLE ? PK_FALLBACK : PK_ERR,
                                   "an unhashable or tuple dict key");
        }
        v.v = pk_new_cont(p, op == 't' ? C_TUPLE : op == 'l' ? C_LIST : C_DICT, p->stack + m, n);
        if (v.v < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_CONT;
        p->top = m;
        goto push_v;
    }
    case 'a': /* APPEND */
        POP1(x);
        return appends(p, &x, 1);
    case 'e': { /* APPENDS */
        if (!p->nmarks) return set_err(p, PK_ERR, "corrupt: no MARK");
        size_t m = p->marks[--p->nmarks], n = p->top - m;
        p->top = m;
        return appends(p, p->stack + m, n);
    }
    case 's': { /* SETITEM */
        val_t pair[2];
        POP1(y);
        POP1(x);
        pair[0] = x, pair[1] = y;
        return setitems(p, pair, 2);
    }
    case 'u': { /* SETITEMS */
        if (!p->nmarks) return set_err(p, PK_ERR, "corrupt: no MARK");
        size_t m = p->marks[--p->nmarks], n = p->top - m;
        p->top = m;
        return setitems(p, p->stack + m, n);
    }
    case 'h': case 'j': /* BINGET, LONG_BINGET */
        if (!pk_memo_get(p, op == 'h' ? a[0] : (uint32_t)le(a, 4), &v)) return set_err(p, PK_ERR, "corrupt: a memo key that was never set");
        if (v.tag == T_DEAD) return set_err(p, PK_FALLBACK, "a trace entry referenced twice");
        if (v.tag == T_CONT) p->conts[v.v].flags |= F_PINNED;
        goto push_v;
    case 'q': case 'r': case 0x94: /* BINPUT, LONG_BINPUT, MEMOIZE */
        if (p->top == base(p)) return set_err(p, PK_ERR, "corrupt: memoizing with an empty stack");
        if (p->memo_n >= UINT32_MAX) return set_err(p, PK_ERR, "corrupt: too many memo entries");
        if (!pk_memo_put(p, op == 'q' ? a[0] : op == 'r' ? (uint32_t)le(a, 4) : (uint32_t)p->memo_n, p->stack[p->top - 1]))
            return set_err(p, PK_NOMEM, "out of memory");
        break;
    case 'I': case 'L': case 'F': case 'S': case 'V': case 'p': case 'g':
        /* text opcodes of protocol 0: the Python reader decides */
        return set_err(p, PK_FALLBACK, "a protocol-0 text opcode");
    default:
        return set_err(p, PK_ERR, "corrupt: invalid load key (not a pickle opcode)");
    }
    p->in_pos += (size_t)(al > 0 ? al : 0);
    return PK_OK;
push_v:
    if (!is_str) p->in_pos += (size_t)(al > 0 ? al : 0);
    if (!push(p, v)) return set_err(p, PK_NOMEM, "out of memory");
    return PK_OK;
}

/* ---- API: feeding ----------------------------------------------------------- */

void *pv_pk_new(int64_t budget) {
    pk_t *p = (pk_t *)calloc(1, sizeof *p);
    if (!p) return NULL;
    p->budget = budget;
    p->frame_end = -1;
    p->free_cont = -1;
    int ok = pk_vpush(&p->str_off, 0) && pk_vpush(&p->col[K_OFF], 0) && pk_vpush(&p->col[K_OFF], 0)
             && pk_intern_keys(p);
    if (!ok) {
        free(p);
        return NULL;
    }
    return p;
}

void pv_pk_free(void *h) {
    pk_t *p = (pk_t *)h;
    if (!p) return;
    for (size_t k = 0; k < p->nconts; k++) pk_free_items(&p->conts[k]);
    free(p->conts), free(p->stack), free(p->marks), free(p->in);
    free(p->memo_key), free(p->memo_val), free(p->memo_used), free(p->dense), free(p->esc);
    free(p->str_off.p), free(p->blob);
    free(p->str_tab.slot), free(p->frame_tab.slot), free(p->stack_tab.slot);
    for (int c = 0; c < NCOLS; c++) free(p->col[c].p);
    for (int c = 0; c < NECOLS; c++) free(p->ecol[c].p);
    free(p);
}

/* feed n more decompressed bytes: PK_MORE (want more), PK_OK (STOP seen), or an error status */
int pv_pk_feed(void *h, const uint8_t *data, size_t n) {
    pk_t *p = (pk_t *)h;
    if (p->status) return p->status;
    if (p->stopped) return PK_OK;
    if (p->in_pos) { /* drop what was consumed */
        memmove(p->in, p->in + p->in_pos, p->in_len - p->in_pos);
        p->consumed += p->in_pos;
        p->in_len -= p->in_pos;
        p->in_pos = 0;
    }
    if (n > p->in_cap - p->in_len) {
        size_t cap = p->in_cap ? p->in_cap : 1 << 20;
        while (cap - p->in_len < n) cap *= 2;
        uint8_t *b = (uint8_t *)realloc(p->in, cap);
        if (!b) return set_err(p, PK_NOMEM, "out of memory");
        p->in = b, p->in_cap = cap;
    }
    if (n) memcpy(p->in + p->in_len, data, n);
    p->in_len += n;
    while (!p->stopped) {
        int r = step(p);
        if (r == PK_MORE) return PK_MORE;
        if (r) return r;
    }
    return PK_OK;
}
