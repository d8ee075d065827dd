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
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PK_OK 0
#define PK_MORE 1
#define PK_ERR 2
#define PK_FALLBACK 3
#define PK_NOMEM 4

#define MAX_READ ((uint64_t)64 << 20) /* sources.MAX_STRING */
#define MAX_DEPTH 64                  /* limits.PICKLE_MAX_DEPTH */
#define LIMIT62 ((int64_t)1 << 62)

/* T_FRAMEV / T_STACKV: an interned frame / stack as a plain value (v: its id), once its container
   had no other reference; T_DEAD: the memo cell of a trace entry written as a row (a GET of it
   falls back) */
enum { T_NONE, T_TRUE, T_FALSE, T_INT, T_BIGINT, T_FLOAT, T_STR, T_BYTES, T_CONT, T_FRAMEV, T_STACKV, T_DEAD };
/* C_ELIST: a list of trace entries written as rows aux .. aux + n - 1 as they were appended;
   C_FREE: a slot on the free list (aux: the next free slot, -1 at the end) */
enum { C_LIST, C_TUPLE, C_DICT, C_FRAME, C_STACK, C_ELIST, C_FREE };
/* cont_t flags: PINNED: a GET or DUP copied it, or it was memoized twice, so it may be referenced
   from where the reader cannot see; MEMO: memoized once, at memo_key; FROZEN: an empty list a trace
   entry row read as no frames (an APPEND onto it falls back) */
enum { F_PINNED = 1, F_MEMO = 2, F_FROZEN = 4 };

/* packed: 9 bytes, not 16 (a value cell is in the memo, the stack and every container; packed
   members are read with unaligned-safe code, and no pointer to a member is ever taken) */
typedef struct __attribute__((packed)) { int64_t v; uint8_t tag; } val_t;

typedef struct {
    union {
        val_t *items; /* LIST, TUPLE, DICT (dict: key, value, key, value ...) */
        int64_t aux;  /* FRAME: frame id; STACK: stack id; ELIST: first row; FREE: next (items freed) */
    };
    uint32_t n, cap;
    uint8_t kind, mark, height, flags;
    uint32_t memo_key;
} cont_t;

typedef struct { int64_t *p; size_t n, cap; } vec_t;

/* a column of 1-, 4- or 8-byte integers (the per-entry columns: narrow where the values are) */
typedef struct { uint8_t *p; size_t n, cap; } nvec_t;

static int vpush(vec_t *v, int64_t x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        int64_t *p = (int64_t *)realloc(v->p, cap * sizeof *p);
        if (!p) return 0;
        v->p = p, v->cap = cap;
    }
    v->p[v->n++] = x;
    return 1;
}

/* open-addressing table of int64 ids, keyed by a caller-side hash + equality */
typedef struct { int64_t *slot; size_t cap, n; } table_t;

/* columns handed to Python (int64 but the per-entry ones, see COL_WIDTH, and the string blob) */
enum {
    E_DEV, E_ACTION, E_SIZE, E_ADDR, E_ADDR_NULL, E_STREAM, E_TIME, E_HAS_TIME, E_STACK, E_DFREE,
    E_DFREE_NULL, S_DEV, S_ADDR, S_TOTAL, S_NBLOCKS, B_SIZE, B_ADDR, B_STATE, B_STACK, K_OFF, K_FRAME,
    F_NAME, F_FILE, F_LINE, STR_OFF, NCOLS
};

/* keys the walker and the frame test need, interned first: ids 0.. */
static const char *const KEYS[] = {
    "name", "filename", "line", "segments", "device_traces", "action", "size", "addr", "frames",
    "stream", "time_us", "device_free", "device", "address", "total_size", "blocks", "state", "?",
    /* snapshot actions, as torch_snapshot.ACTIONS */
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
    "segment_unmap", "oom", "snapshot",
};
enum {
    K_NAME, K_FILENAME, K_LINE, K_SEGMENTS, K_TRACES, K_ACTION, K_SIZE, K_ADDR, K_FRAMES, K_STREAM,
    K_TIME, K_DFREE, K_DEVICE, K_ADDRESS, K_TOTAL, K_BLOCKS, K_STATE, K_QMARK, K_FIRST_ACTION
};
#define NKEYS ((int)(sizeof KEYS / sizeof KEYS[0]))

/* bytes per value of each column; the per-entry columns E_DEV .. E_DFREE_NULL are stored narrow */
static const uint8_t COL_WIDTH[NCOLS] = {4, 1, 8, 8, 1, 8, 8, 1, 4, 8, 1, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};
#define NECOLS (E_DFREE_NULL + 1)

typedef struct {
    uint8_t *in; /* unconsumed input */
    size_t in_len, in_cap, in_pos;
    uint64_t consumed; /* absolute offset of in[0] */
    int64_t frame_end; /* absolute end of the current frame, -1 if none */
    int64_t budget, ops;
    val_t *stack;
    size_t top, scap;
    size_t *marks;
    size_t nmarks, mcap;
    cont_t *conts;
    size_t nconts, ccap;
    /* memo: keys 0..dense_n-1 in an array of 4-byte cells (MEMOIZE's len(memo) keys; see
       dense_cell), others in a hash table */
    uint32_t *dense;
    size_t dense_n, dense_cap;
    val_t *esc; /* the values of dense cells that do not fit 29 bits */
    size_t esc_n, esc_cap;
    uint32_t *memo_key;
    val_t *memo_val;
    uint8_t *memo_used;
    size_t memo_cap, memo_n, hash_total; /* memo_n: distinct keys, as len(memo) */
    /* strings */
    vec_t str_off; /* offsets into blob, n + 1 */
    uint8_t *blob;
    size_t blob_len, blob_cap;
    table_t str_tab, frame_tab, stack_tab;
    vec_t col[NCOLS];  /* E_* columns: ecol */
    nvec_t ecol[NECOLS];
    int64_t free_cont; /* head of the free slot list, -1: none */
    int stopped;
    val_t result;
    int status;
    const char *msg;
    char msgbuf[160];
    uint64_t err_pos;
} pk_t;

int pv_pk_status_check(void) { return PK_FALLBACK; }

static int set_err(pk_t *p, int status, const char *msg) {
    p->status = status;
    p->msg = msg;
    p->err_pos = p->consumed + p->in_pos;
    return status;
}

/* ---- hashing ------------------------------------------------------------- */

static uint64_t hash_bytes(const uint8_t *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
}

static uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static int table_grow(table_t *t) {
    size_t cap = t->cap ? t->cap * 2 : 1024;
    int64_t *slot = (int64_t *)malloc(cap * sizeof *slot);
    if (!slot) return 0;
    for (size_t i = 0; i < cap; i++) slot[i] = -1;
    free(t->slot);
    t->slot = slot, t->cap = cap;
    return 1;
}

/* ---- strings ------------------------------------------------------------- */

static const uint8_t *str_at(const pk_t *p, int64_t id, size_t *n) {
    int64_t a = p->str_off.p[id], b = p->str_off.p[id + 1];
    *n = (size_t)(b - a);
    return p->blob + a;
}

static int str_rehash(pk_t *p) {
    if (!table_grow(&p->str_tab)) return 0;
    size_t nstr = p->str_off.n - 1, mask = p->str_tab.cap - 1;
    for (size_t id = 0; id < nstr; id++) {
        size_t n;
        const uint8_t *s = str_at(p, (int64_t)id, &n);
        size_t i = hash_bytes(s, n) & mask;
        while (p->str_tab.slot[i] >= 0) i = (i + 1) & mask;
        p->str_tab.slot[i] = (int64_t)id;
    }
    return 1;
}

/* the id of the string s[0:n], added if new; -1: out of memory */
static int64_t intern(pk_t *p, const uint8_t *s, size_t n) {
    if ((p->str_off.n) * 2 >= p->str_tab.cap && !str_rehash(p)) return -1;
    size_t mask = p->str_tab.cap - 1, i = hash_bytes(s, n) & mask;
    for (; p->str_tab.slot[i] >= 0; i = (i + 1) & mask) {
        size_t m;
        const uint8_t *t = str_at(p, p->str_tab.slot[i], &m);
        if (m == n && memcmp(s, t, n) == 0) return p->str_tab.slot[i];
    }
    if (n > p->blob_cap - p->blob_len) {
        size_t cap = p->blob_cap ? p->blob_cap : 65536;
        while (cap - p->blob_len < n) cap *= 2;
        uint8_t *b = (uint8_t *)realloc(p->blob, cap);
        if (!b) return -1;
        p->blob = b, p->blob_cap = cap;
    }
    if (n) memcpy(p->blob + p->blob_len, s, n);
    p->blob_len += n;
    int64_t id = (int64_t)p->str_off.n - 1;
    if (!vpush(&p->str_off, (int64_t)p->blob_len)) return -1;
    p->str_tab.slot[i] = id;
    return id;
}

/* UTF-8 as Python's 'surrogatepass' decoder accepts it */
static int utf8_ok(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) { i++; continue; }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
        i += len;
    }
    return 1;
}

/* ---- frames and stacks ---------------------------------------------------- */

static int64_t frame_id(pk_t *p, int64_t name, int64_t file, int64_t line) {
    table_t *t = &p->frame_tab;
    vec_t *fn = &p->col[F_NAME], *ff = &p->col[F_FILE], *fl = &p->col[F_LINE];
    if (fn->n * 2 >= t->cap) {
        if (!table_grow(t)) return -1;
        for (size_t id = 0; id < fn->n; id++) {
            size_t i = mix(mix(mix(0, (uint64_t)fn->p[id]), (uint64_t)ff->p[id]), (uint64_t)fl->p[id]) & (t->cap - 1);
            while (t->slot[i] >= 0) i = (i + 1) & (t->cap - 1);
            t->slot[i] = (int64_t)id;
        }
    }
    size_t mask = t->cap - 1, i = mix(mix(mix(0, (uint64_t)name), (uint64_t)file), (uint64_t)line) & mask;
    for (; t->slot[i] >= 0; i = (i + 1) & mask) {
        int64_t id = t->slot[i];
        if (fn->p[id] == name && ff->p[id] == file && fl->p[id] == line) return id;
    }
    int64_t id = (int64_t)fn->n;
    if (!vpush(fn, name) || !vpush(ff, file) || !vpush(fl, line)) return -1;
    t->slot[i] = id;
    return id;
}

static uint64_t stack_hash(const int64_t *f, size_t n) {
    uint64_t h = n;
    for (size_t k = 0; k < n; k++) h = mix(h, (uint64_t)f[k]);
    return h;
}

/* the id of a stack of frame ids; stack 0 is the empty one (K_OFF starts 0, 0) */
static int64_t stack_id(pk_t *p, const int64_t *f, size_t n) {
    table_t *t = &p->stack_tab;
    vec_t *off = &p->col[K_OFF], *fr = &p->col[K_FRAME];
    size_t nstacks = off->n - 1;
    if (nstacks * 2 >= t->cap) {
        if (!table_grow(t)) return -1;
        for (size_t id = 0; id < nstacks; id++) {
            size_t i = stack_hash(fr->p + off->p[id], (size_t)(off->p[id + 1] - off->p[id])) & (t->cap - 1);
            while (t->slot[i] >= 0) i = (i + 1) & (t->cap - 1);
            t->slot[i] = (int64_t)id;
        }
    }
    size_t mask = t->cap - 1, i = stack_hash(f, n) & mask;
    for (; t->slot[i] >= 0; i = (i + 1) & mask) {
        int64_t id = t->slot[i];
        if ((size_t)(off->p[id + 1] - off->p[id]) == n && memcmp(fr->p + off->p[id], f, n * sizeof *f) == 0)
            return id;
    }
    for (size_t k = 0; k < n; k++)
        if (!vpush(fr, f[k])) return -1;
    if (!vpush(off, (int64_t)fr->n)) return -1;
    t->slot[i] = (int64_t)nstacks;
    return (int64_t)nstacks;
}

static int in_range(val_t v) { return v.tag == T_INT && v.v > -LIMIT62 && v.v < LIMIT62; }

static int hash_find(const pk_t *p, uint32_t key, size_t *slot);

/* a dense memo cell: payload << 3 | tag for strings (0), containers (1), frames (2), stacks (3)
   and dead entries (4) with a payload below 2**29; anything else (7) indexes esc */
#define DC_ESC 7u
static const uint8_t DC_TAG[] = {T_STR, T_CONT, T_FRAMEV, T_STACKV, T_DEAD};

static val_t dense_get(const pk_t *p, size_t key) {
    uint32_t c = p->dense[key], tag = c & 7u;
    if (tag == DC_ESC) return p->esc[c >> 3];
    val_t v = {(int64_t)(c >> 3), DC_TAG[tag]};
    return v;
}

static int dense_set(pk_t *p, size_t key, val_t v) {
    for (uint32_t tag = 0; tag < sizeof DC_TAG; tag++)
        if (v.tag == DC_TAG[tag] && v.v >= 0 && v.v < ((int64_t)1 << 29)) {
            p->dense[key] = (uint32_t)v.v << 3 | tag;
            return 1;
        }
    if (p->esc_n == p->esc_cap) {
        size_t cap = p->esc_cap ? p->esc_cap * 2 : 256;
        if (cap >= ((size_t)1 << 29)) return 0;
        val_t *e = (val_t *)realloc(p->esc, cap * sizeof *e);
        if (!e) return 0;
        p->esc = e, p->esc_cap = cap;
    }
    p->esc[p->esc_n] = v;
    p->dense[key] = (uint32_t)p->esc_n++ << 3 | DC_ESC;
    return 1;
}

/* the memo cell a container was memoized at, if it still holds it, now holds nv instead; 0: out
   of memory */
static int memo_swap(pk_t *p, int64_t idx, val_t nv) {
    cont_t *c = &p->conts[idx];
    if (!(c->flags & F_MEMO)) return 1;
    uint32_t key = c->memo_key;
    size_t j;
    if (key < p->dense_n) {
        val_t old = dense_get(p, key);
        if (old.tag == T_CONT && old.v == idx) return dense_set(p, key, nv);
    } else if (hash_find(p, key, &j) && p->memo_val[j].tag == T_CONT && p->memo_val[j].v == idx) {
        p->memo_val[j] = nv;
    }
    return 1;
}

static void free_items(cont_t *c) {
    if (c->kind == C_LIST || c->kind == C_TUPLE || c->kind == C_DICT) free(c->items);
    c->items = NULL;
}

/* an unpinned container referenced only by its memo cell and by the value being stored: the memo
   cell becomes nv (the caller stores nv too) and the slot is reused; 0: out of memory */
static int release(pk_t *p, int64_t idx, val_t nv) {
    if (!memo_swap(p, idx, nv)) return 0;
    cont_t *c = &p->conts[idx];
    free_items(c);
    c->kind = C_FREE, c->n = c->cap = 0, c->flags = 0;
    c->aux = p->free_cont;
    p->free_cont = idx;
    return 1;
}

/* a dict appended to a list: a FRAME if it is {name: str, filename: str, line: int} (any subset);
   *v becomes the plain value T_FRAMEV when nothing else can reference the dict */
static int maybe_frame(pk_t *p, val_t *v) {
    if (v->tag != T_CONT) return PK_OK;
    cont_t *c = &p->conts[v->v];
    if (c->kind != C_DICT || c->n > 6) return PK_OK;
    val_t name = {K_QMARK, T_STR}, file = {K_QMARK, T_STR}, line = {0, T_INT};
    for (uint32_t k = 0; k < c->n; k += 2) {
        val_t key = c->items[k], value = c->items[k + 1];
        if (key.tag != T_STR) return PK_OK;
        if (key.v == K_NAME) name = value;
        else if (key.v == K_FILENAME) file = value;
        else if (key.v == K_LINE) line = value;
        else return PK_OK;
    }
    if (name.tag != T_STR || file.tag != T_STR || !in_range(line)) return PK_OK;
    int64_t id = frame_id(p, name.v, file.v, line.v);
    if (id < 0) return PK_NOMEM;
    if (!(c->flags & F_PINNED)) {
        val_t nv = {id, T_FRAMEV};
        if (!release(p, v->v, nv)) return PK_NOMEM;
        *v = nv;
        return PK_OK;
    }
    free(c->items);
    c->items = NULL, c->n = c->cap = 0;
    c->kind = C_FRAME, c->aux = id;
    return PK_OK;
}

/* a list set as a dict value: a STACK if it holds frames only (and at least one); *v becomes the
   plain value T_STACKV when nothing else can reference the list */
static int maybe_stack(pk_t *p, val_t *v) {
    if (v->tag != T_CONT) return PK_OK;
    cont_t *c = &p->conts[v->v];
    if (c->kind != C_LIST || c->n == 0) return PK_OK;
    int64_t small[64], *f = c->n <= 64 ? small : (int64_t *)malloc(c->n * sizeof *f);
    if (!f) return PK_NOMEM;
    for (uint32_t k = 0; k < c->n; k++) {
        val_t e = c->items[k];
        if (e.tag == T_FRAMEV) f[k] = e.v;
        else if (e.tag == T_CONT && p->conts[e.v].kind == C_FRAME) f[k] = p->conts[e.v].aux;
        else {
            if (f != small) free(f);
            return PK_OK;
        }
    }
    int64_t id = stack_id(p, f, c->n);
    if (f != small) free(f);
    if (id < 0) return PK_NOMEM;
    if (!(c->flags & F_PINNED)) {
        val_t nv = {id, T_STACKV};
        if (!release(p, v->v, nv)) return PK_NOMEM;
        *v = nv;
        return PK_OK;
    }
    free(c->items);
    c->items = NULL, c->n = c->cap = 0;
    c->kind = C_STACK, c->aux = id;
    return PK_OK;
}

/* ---- trace entries ------------------------------------------------------------ */

/* the last value of a string key among dict items; tag T_NONE with v = -1 when absent */
static val_t lookup_items(const val_t *items, uint32_t n, int64_t key) {
    val_t out = {-1, T_NONE};
    for (uint32_t k = 0; k + 1 < n; k += 2)
        if (items[k].tag == T_STR && items[k].v == key) out = items[k + 1];
    return out;
}

#define ABSENT(x) ((x).tag == T_NONE && (x).v == -1)

/* a frames value: absent or [] = stack 0, a stack = its id, else -1 */
static int64_t stack_of(const pk_t *p, val_t v) {
    if (ABSENT(v)) return 0;
    if (v.tag == T_STACKV) return v.v;
    if (v.tag != T_CONT) return -1;
    const cont_t *c = &p->conts[v.v];
    if (c->kind == C_LIST && c->n == 0) return 0;
    return c->kind == C_STACK ? c->aux : -1;
}

/* an int field: absent -> dflt (and *null = 1 when given); 0 if not an int in range */
static int int_field(val_t v, int64_t dflt, int64_t *out, int64_t *null) {
    if (ABSENT(v)) {
        *out = dflt;
        if (null) *null = 1;
        return 1;
    }
    if (!in_range(v)) return 0;
    *out = v.v;
    if (null) *null = 0;
    return 1;
}

static int epush(nvec_t *v, int width, int64_t x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4096;
        uint8_t *q = (uint8_t *)realloc(v->p, cap * (size_t)width);
        if (!q) return 0;
        v->p = q, v->cap = cap;
    }
    if (width == 1) v->p[v->n] = (uint8_t)(int8_t)x;
    else if (width == 4) { int32_t y = (int32_t)x; memcpy(v->p + v->n * 4, &y, 4); }
    else memcpy(v->p + v->n * 8, &x, 8);
    v->n++;
    return 1;
}

/* one trace entry dict's row (as walk_entry reads it), or the reason it is not one */
static const char *entry_row(const pk_t *p, const val_t *it, uint32_t n, int64_t row[NECOLS]) {
    val_t act = lookup_items(it, n, K_ACTION);
    if (act.tag != T_STR || act.v < K_FIRST_ACTION || act.v >= NKEYS) return "an unknown action";
    int64_t size, addr, addr_null, stream, t = 0, dfree, dfree_null, stack;
    val_t tv = lookup_items(it, n, K_TIME);
    if (!int_field(lookup_items(it, n, K_SIZE), 0, &size, NULL)
        || !int_field(lookup_items(it, n, K_ADDR), 0, &addr, &addr_null)
        || !int_field(lookup_items(it, n, K_STREAM), 0, &stream, NULL)
        || !int_field(lookup_items(it, n, K_DFREE), 0, &dfree, &dfree_null))
        return "a trace entry field of another type";
    if (!ABSENT(tv) && !in_range(tv)) return "time_us of another type";
    if ((stack = stack_of(p, lookup_items(it, n, K_FRAMES))) < 0) return "frames that are not a list of frames";
    if (stack > INT32_MAX) return "more stacks than an int32 column holds";
    if (!ABSENT(tv)) t = tv.v;
    row[E_DEV] = 0, row[E_ACTION] = act.v - K_FIRST_ACTION, row[E_SIZE] = size, row[E_ADDR] = addr;
    row[E_ADDR_NULL] = addr_null, row[E_STREAM] = stream, row[E_TIME] = t, row[E_HAS_TIME] = !ABSENT(tv);
    row[E_STACK] = stack, row[E_DFREE] = dfree, row[E_DFREE_NULL] = dfree_null;
    return NULL;
}

static int push_row(pk_t *p, const int64_t row[NECOLS]) {
    for (int c = 0; c < NECOLS; c++)
        if (!epush(&p->ecol[c], COL_WIDTH[c], row[c])) return 0;
    return 1;
}

/* height of a plain value as a container (0: not one): a frame is a dict, a stack a list of them */
static int imm_height(val_t v) {
    if (v.tag == T_FRAMEV) return 1;
    if (v.tag == T_STACKV) return v.v ? 2 : 1;
    return 0;
}

/* a dict appended to a list of trace entries: its row is written and the dict is released (its
   memo cell becomes T_DEAD).  Taken only when nothing else can reference it or change what it
   holds: unpinned, values scalars, frames or stacks (an empty list is frozen); *height is its
   nesting height.  PK_FALLBACK (with the reason) otherwise. */
static int entry_append(pk_t *p, val_t v, uint8_t *height) {
    if (v.tag != T_CONT) return set_err(p, PK_FALLBACK, "a trace entry that is not a dict");
    cont_t *c = &p->conts[v.v];
    if (c->kind != C_DICT || (c->flags & F_PINNED))
        return set_err(p, PK_FALLBACK, "a trace entry that is not a dict of its own");
    int h = 0;
    for (uint32_t k = 1; k < c->n; k += 2) {
        val_t e = c->items[k];
        int eh = imm_height(e);
        if (e.tag == T_CONT) {
            cont_t *d = &p->conts[e.v];
            if (d->kind == C_FRAME) eh = 1;
            else if (d->kind == C_STACK) eh = 2;
            else if (d->kind == C_LIST && d->n == 0) eh = 1;
            else return set_err(p, PK_FALLBACK, "a trace entry holding a container");
        }
        if (eh > h) h = eh;
    }
    int64_t row[NECOLS];
    const char *why = entry_row(p, c->items, c->n, row);
    if (why) return set_err(p, PK_FALLBACK, why);
    if (!push_row(p, row)) return set_err(p, PK_NOMEM, "out of memory");
    for (uint32_t k = 1; k < c->n; k += 2) { /* an empty list it holds: now read as no frames */
        val_t e = c->items[k];
        if (e.tag != T_CONT || p->conts[e.v].kind != C_LIST) continue;
        if (p->conts[e.v].flags & F_PINNED) p->conts[e.v].flags |= F_FROZEN;
        else if (!release(p, e.v, (val_t){0, T_STACKV})) return set_err(p, PK_NOMEM, "out of memory");
    }
    if (!release(p, v.v, (val_t){0, T_DEAD})) return set_err(p, PK_NOMEM, "out of memory");
    *height = (uint8_t)(h + 1);
    return PK_OK;
}

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

static int64_t new_cont(pk_t *p, uint8_t kind, const val_t *items, size_t n) {
    if (n > UINT32_MAX / 2) return -1;
    int64_t idx = p->free_cont; /* a released slot first, else the next one (grown as needed) */
    int reuse = idx >= 0;
    if (!reuse) {
        if (p->nconts == p->ccap) {
            size_t cap = p->ccap ? p->ccap * 2 : 4096;
            cont_t *c = (cont_t *)realloc(p->conts, cap * sizeof *c);
            if (!c) return -1;
            p->conts = c, p->ccap = cap;
        }
        idx = (int64_t)p->nconts;
    }
    cont_t *c = &p->conts[idx];
    if (reuse) p->free_cont = c->aux;
    memset(c, 0, sizeof *c);
    c->kind = kind;
    if (n) {
        c->items = (val_t *)malloc(n * sizeof(val_t));
        if (!c->items) return -1;
        memcpy(c->items, items, n * sizeof(val_t));
        c->n = c->cap = (uint32_t)n;
    }
    if (!reuse) p->nconts++;
    return idx;
}

static int cont_add(cont_t *c, const val_t *items, size_t n) {
    if (n > (size_t)(UINT32_MAX / 2) - c->n) return 0;
    if (c->n + n > c->cap) {
        size_t cap = c->cap ? c->cap : 4;
        while (cap < c->n + n) cap *= 2;
        val_t *it = (val_t *)realloc(c->items, cap * sizeof *it);
        if (!it) return 0;
        c->items = it, c->cap = (uint32_t)cap;
    }
    memcpy(c->items + c->n, items, n * sizeof *items);
    c->n += (uint32_t)n;
    return 1;
}

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
        val_t act = lookup_items(e->items, e->n, K_ACTION);
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
            int r = entry_append(p, items[k], &h);
            if (r) return r;
            c = &p->conts[t.v];
            c->n++;
            if (h + 1 > c->height) c->height = (uint8_t)(h + 1);
        }
        return PK_OK;
    }
    if (c->kind != C_LIST) return set_err(p, PK_ERR, "corrupt: APPENDS onto a value that is not a list");
    for (size_t k = 0; k < n; k++) {
        int r = maybe_frame(p, &items[k]);
        if (r) return set_err(p, r, "out of memory");
    }
    if (!cont_add(&p->conts[t.v], items, n)) return set_err(p, PK_NOMEM, "out of memory");
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
        int r = maybe_stack(p, &items[k + 1]);
        if (r) return set_err(p, r, "out of memory");
    }
    if (!cont_add(&p->conts[t.v], items, n)) return set_err(p, PK_NOMEM, "out of memory");
    return PK_OK;
}

/* ---- memo ------------------------------------------------------------------ */

static int hash_find(const pk_t *p, uint32_t key, size_t *slot) {
    if (!p->memo_cap) return 0;
    size_t mask = p->memo_cap - 1, j = mix(0, key) & mask;
    for (; p->memo_used[j]; j = (j + 1) & mask)
        if (p->memo_key[j] == key) { *slot = j; return 1; }
    return 0;
}

static int hash_put(pk_t *p, uint32_t key, val_t v) {
    size_t j;
    if (hash_find(p, key, &j)) { p->memo_val[j] = v; return 1; }
    if ((p->hash_total + 1) * 2 > p->memo_cap) {
        size_t cap = p->memo_cap ? p->memo_cap * 2 : 1024;
        uint32_t *k2 = (uint32_t *)malloc(cap * sizeof *k2);
        val_t *v2 = (val_t *)malloc(cap * sizeof *v2);
        uint8_t *u2 = (uint8_t *)calloc(cap, 1);
        if (!k2 || !v2 || !u2) { free(k2), free(v2), free(u2); return 0; }
        for (size_t i = 0; i < p->memo_cap; i++) {
            if (!p->memo_used[i]) continue;
            size_t q = mix(0, p->memo_key[i]) & (cap - 1);
            while (u2[q]) q = (q + 1) & (cap - 1);
            u2[q] = 1, k2[q] = p->memo_key[i], v2[q] = p->memo_val[i];
        }
        free(p->memo_key), free(p->memo_val), free(p->memo_used);
        p->memo_key = k2, p->memo_val = v2, p->memo_used = u2, p->memo_cap = cap;
    }
    size_t mask = p->memo_cap - 1;
    j = mix(0, key) & mask;
    while (p->memo_used[j]) j = (j + 1) & mask;
    p->memo_used[j] = 1, p->memo_key[j] = key, p->memo_val[j] = v;
    p->hash_total++;
    return 1;
}

static int memo_put(pk_t *p, uint32_t key, val_t v) {
    size_t j;
    if (v.tag == T_CONT) { /* memoized once: the reader knows where; twice: pinned */
        cont_t *c = &p->conts[v.v];
        if (c->flags & F_MEMO) c->flags |= F_PINNED;
        c->flags |= F_MEMO, c->memo_key = key;
    }
    if (key < p->dense_n) return dense_set(p, key, v);
    if (key == p->dense_n) {
        if (p->dense_n == p->dense_cap) {
            size_t cap = p->dense_cap ? p->dense_cap * 2 : 4096;
            uint32_t *d = (uint32_t *)realloc(p->dense, cap * sizeof *d);
            if (!d) return 0;
            p->dense = d, p->dense_cap = cap;
        }
        if (!dense_set(p, p->dense_n, v)) return 0;
        p->dense_n++;
        if (!hash_find(p, key, &j)) p->memo_n++; /* else the same key, shadowed now */
        return 1;
    }
    if (!hash_find(p, key, &j)) p->memo_n++;
    return hash_put(p, key, v);
}

static int memo_get(pk_t *p, uint32_t key, val_t *out) {
    size_t j;
    if (key < p->dense_n) { *out = dense_get(p, key); return 1; }
    if (!hash_find(p, key, &j)) return 0;
    *out = p->memo_val[j];
    return 1;
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
    const uint8_t *m = str_at(p, p->stack[p->top - 2].v, &nm), *n = str_at(p, p->stack[p->top - 1].v, &nn);
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
        if (!utf8_ok(s, (size_t)len)) return set_err(p, PK_FALLBACK, "a string that is not plain UTF-8");
        if ((v.v = intern(p, s, (size_t)len)) < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_STR;
        p->in_pos += (size_t)len;
        goto push_v;
    case 'T': case 'U': /* BINSTRING, SHORT_BINSTRING: ASCII only */
        for (uint64_t k = 0; k < len; k++)
            if (s[k] >= 0x80) return set_err(p, PK_FALLBACK, "a non-ASCII BINSTRING");
        if ((v.v = intern(p, s, (size_t)len)) < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_STR;
        p->in_pos += (size_t)len;
        goto push_v;
    case 'B': case 'C': case 0x8e: /* BINBYTES, SHORT_BINBYTES, BINBYTES8 */
        v.tag = T_BYTES;
        p->in_pos += (size_t)len;
        goto push_v;
    case ')': case ']': case '}': /* EMPTY_TUPLE, EMPTY_LIST, EMPTY_DICT */
        v.v = new_cont(p, op == ')' ? C_TUPLE : op == ']' ? C_LIST : C_DICT, NULL, 0);
        if (v.v < 0) return set_err(p, PK_NOMEM, "out of memory");
        v.tag = T_CONT;
        goto push_v;
    case 0x85: case 0x86: case 0x87: { /* TUPLE1..3 */
        size_t n = (size_t)(op - 0x84);
        if (p->top - base(p) < n) return set_err(p, PK_ERR, "corrupt: TUPLE with too few items on the stack");
        p->top -= n;
        v.v = new_cont(p, C_TUPLE, p->stack + p->top, n);
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
        v.v = new_cont(p, op == 't' ? C_TUPLE : op == 'l' ? C_LIST : C_DICT, p->stack + m, n);
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
        if (!memo_get(p, op == 'h' ? a[0] : (uint32_t)le(a, 4), &v)) return set_err(p, PK_ERR, "corrupt: a memo key that was never set");
        if (v.tag == T_DEAD) return set_err(p, PK_FALLBACK, "a trace entry referenced twice");
        if (v.tag == T_CONT) p->conts[v.v].flags |= F_PINNED;
        goto push_v;
    case 'q': case 'r': case 0x94: /* BINPUT, LONG_BINPUT, MEMOIZE */
        if (p->top == base(p)) return set_err(p, PK_ERR, "corrupt: memoizing with an empty stack");
        if (p->memo_n >= UINT32_MAX) return set_err(p, PK_ERR, "corrupt: too many memo entries");
        if (!memo_put(p, op == 'q' ? a[0] : op == 'r' ? (uint32_t)le(a, 4) : (uint32_t)p->memo_n, p->stack[p->top - 1]))
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
    int ok = vpush(&p->str_off, 0) && vpush(&p->col[K_OFF], 0) && vpush(&p->col[K_OFF], 0);
    for (int k = 0; ok && k < NKEYS; k++) ok = intern(p, (const uint8_t *)KEYS[k], strlen(KEYS[k])) == k;
    if (!ok) {
        free(p);
        return NULL;
    }
    return p;
}

void pv_pk_free(void *h) {
    pk_t *p = (pk_t *)h;
    if (!p) return;
    for (size_t k = 0; k < p->nconts; k++) free_items(&p->conts[k]);
    free(p->conts), free(p->stack), free(p->marks), free(p->in);
    free(p->memo_key), free(p->memo_val), free(p->memo_used), free(p->dense), free(p->esc);
    free(p->str_off.p), free(p->blob);
    free(p->str_tab.slot), free(p->frame_tab.slot), free(p->stack_tab.slot);
    for (int c = 0; c < NCOLS; c++) free(p->col[c].p);
    for (int c = 0; c < NECOLS; c++) free(p->ecol[c].p);
    free(p);
}

/* the containers are no longer needed once walked */
static void drop_tree(pk_t *p) {
    for (size_t k = 0; k < p->nconts; k++) free_items(&p->conts[k]);
    free(p->conts), free(p->stack), free(p->memo_key), free(p->memo_val), free(p->memo_used), free(p->in);
    free(p->dense), free(p->esc);
    p->esc = NULL, p->esc_n = p->esc_cap = 0;
    p->conts = NULL, p->stack = NULL, p->memo_key = NULL, p->memo_val = NULL, p->memo_used = NULL, p->in = NULL;
    p->dense = NULL, p->dense_n = p->dense_cap = 0;
    p->nconts = p->ccap = p->memo_cap = p->memo_n = p->scap = p->top = 0;
    p->free_cont = -1;
    p->in_len = p->in_cap = p->in_pos = 0;
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

/* ---- after STOP: depth check and the walk ------------------------------------- */

/* containers nested at most MAX_DEPTH deep from the result, no cycle (iterative, each container
 * once: a memo DAG costs its size); PK_FALLBACK otherwise: the Python reader words the error */
static int check_depth(pk_t *p, val_t root) {
    if (root.tag != T_CONT) return PK_OK;
    int64_t st[MAX_DEPTH + 2];
    uint32_t next[MAX_DEPTH + 2];
    size_t n = 0;
    st[n] = root.v, next[n++] = 0;
    p->conts[root.v].mark = 1;
    while (n) {
        cont_t *c = &p->conts[st[n - 1]];
        uint32_t step2 = c->kind == C_DICT ? 2 : 1, k = next[n - 1];
        uint32_t cn = c->kind == C_LIST || c->kind == C_TUPLE || c->kind == C_DICT ? c->n : 0; /* items held */
        if (c->kind == C_DICT && k == 0) k = 1;
        for (; k < cn; k += step2) {
            val_t e = c->items[k];
            if (e.tag == T_CONT && p->conts[e.v].mark != 2) break;
        }
        if (k < cn) {
            cont_t *d = &p->conts[c->items[k].v];
            next[n - 1] = k + step2;
            if (d->mark == 1) return set_err(p, PK_FALLBACK, "a cycle");
            if (n > MAX_DEPTH) return set_err(p, PK_FALLBACK, "nested too deep");
            d->mark = 1;
            st[n] = c->items[k].v, next[n++] = 0;
            continue;
        }
        uint8_t h = c->kind == C_STACK ? 2 : c->kind == C_ELIST ? c->height : 1;
        for (k = c->kind == C_DICT ? 1 : 0; k < cn; k += step2) {
            val_t e = c->items[k];
            int eh = e.tag == T_CONT ? p->conts[e.v].height : imm_height(e);
            if (eh + 1 > h) h = (uint8_t)(eh + 1);
        }
        if (h > MAX_DEPTH) return set_err(p, PK_FALLBACK, "nested too deep");
        c->height = h;
        c->mark = 2;
        n--;
    }
    return PK_OK;
}

static val_t lookup(const cont_t *c, int64_t key) { return lookup_items(c->items, c->n, key); }

static const cont_t *as(const pk_t *p, val_t v, uint8_t kind) {
    if (v.tag != T_CONT || p->conts[v.v].kind != kind) return NULL;
    return &p->conts[v.v];
}

#define FB(msg) return set_err(p, PK_FALLBACK, msg)
#define PUSH(c, x) \
    if (!vpush(&p->col[c], x)) return set_err(p, PK_NOMEM, "out of memory")

/* a trace entry of a device trace the reader did not take as rows while feeding */
static int walk_entry(pk_t *p, int64_t d, val_t e) {
    const cont_t *c = as(p, e, C_DICT);
    if (!c) FB("a trace entry that is not a dict");
    int64_t row[NECOLS];
    const char *why = entry_row(p, c->items, c->n, row);
    if (why) FB(why);
    row[E_DEV] = d;
    if (!push_row(p, row)) return set_err(p, PK_NOMEM, "out of memory");
    return PK_OK;
}

static int walk_segment(pk_t *p, val_t s) {
    const cont_t *c = as(p, s, C_DICT);
    if (!c) FB("a segment that is not a dict");
    int64_t dev, address, total;
    val_t va = lookup(c, K_ADDRESS), vt = lookup(c, K_TOTAL);
    if (ABSENT(va) || ABSENT(vt) || !int_field(lookup(c, K_DEVICE), 0, &dev, NULL)
        || !int_field(va, 0, &address, NULL) || !int_field(vt, 0, &total, NULL))
        FB("a segment field missing or of another type");
    const cont_t *blocks = as(p, lookup(c, K_BLOCKS), C_LIST);
    if (!blocks) FB("segment blocks that are not a list");
    int64_t addr = address;
    for (uint32_t k = 0; k < blocks->n; k++) {
        const cont_t *b = as(p, blocks->items[k], C_DICT);
        if (!b) FB("a block that is not a dict");
        val_t vs = lookup(b, K_SIZE), st = lookup(b, K_STATE);
        int64_t size, stack;
        if (ABSENT(vs) || !int_field(vs, 0, &size, NULL) || !int_field(lookup(b, K_ADDRESS), addr, &addr, NULL)
            || st.tag != T_STR)
            FB("a block field missing or of another type");
        if ((stack = stack_of(p, lookup(b, K_FRAMES))) < 0) FB("block frames that are not a list of frames");
        PUSH(B_SIZE, size); PUSH(B_ADDR, addr); PUSH(B_STATE, st.v); PUSH(B_STACK, stack);
        addr += size;
        if (addr <= -LIMIT62 || addr >= LIMIT62) FB("block addresses beyond 2**62");
    }
    PUSH(S_DEV, dev); PUSH(S_ADDR, address); PUSH(S_TOTAL, total); PUSH(S_NBLOCKS, blocks->n);
    return PK_OK;
}

/* end of input: PK_OK with the columns, PK_ERR, PK_FALLBACK or PK_NOMEM */
int pv_pk_finish(void *h) {
    pk_t *p = (pk_t *)h;
    if (p->status) return p->status;
    if (!p->stopped) {
        p->in_pos = p->in_len;
        return set_err(p, PK_ERR, "corrupt: the pickle ends before its STOP opcode (truncated?)");
    }
    int r = check_depth(p, p->result);
    if (r) return r;
    const cont_t *root = as(p, p->result, C_DICT);
    if (!root) FB("the top level is not a dict");
    const cont_t *segs = as(p, lookup(root, K_SEGMENTS), C_LIST);
    if (!segs) FB("segments missing or not a list");
    val_t tr = lookup(root, K_TRACES);
    const cont_t *traces = as(p, tr, C_LIST);
    if (!traces && !ABSENT(tr)) FB("device_traces not a list");
    /* rows written while feeding: exactly those of the device traces' entry lists, in order */
    size_t fed = p->ecol[E_ACTION].n, next = 0;
    for (uint32_t d = 0; traces && d < traces->n; d++) {
        const cont_t *dt = as(p, traces->items[d], C_ELIST);
        if (dt) {
            if (dt->aux != (int64_t)next) FB("trace entry lists out of order or repeated");
            for (size_t k = next; k < next + dt->n; k++) memcpy(p->ecol[E_DEV].p + k * 4, &(int32_t){(int32_t)d}, 4);
            next += dt->n;
            continue;
        }
        if (!(dt = as(p, traces->items[d], C_LIST))) FB("a device trace that is not a list");
        if (dt->n && fed) FB("device traces of entries taken as rows and of others");
        for (uint32_t k = 0; k < dt->n; k++)
            if ((r = walk_entry(p, d, dt->items[k]))) return r;
    }
    if (next != fed) FB("trace entries outside device_traces");
    for (uint32_t s = 0; s < segs->n; s++)
        if ((r = walk_segment(p, segs->items[s]))) return r;
    drop_tree(p);
    return PK_OK;
}

/* ---- API: results ------------------------------------------------------------- */

int pv_pk_ncols(void) { return NCOLS; }

/* bytes per value of column c (1, 4 or 8; signed integers) */
int pv_pk_col_width(int c) { return c >= 0 && c < NCOLS ? COL_WIDTH[c] : 0; }

const void *pv_pk_column(void *h, int c, size_t *n) {
    pk_t *p = (pk_t *)h;
    if (c == STR_OFF) {
        *n = p->str_off.n;
        return p->str_off.p;
    }
    if (c < 0 || c >= NCOLS) { *n = 0; return NULL; }
    if (c < NECOLS) {
        *n = p->ecol[c].n;
        return p->ecol[c].p;
    }
    *n = p->col[c].n;
    return p->col[c].p;
}

/* column c is no longer needed (the caller copied it): its memory goes back at once */
void pv_pk_drop(void *h, int c) {
    pk_t *p = (pk_t *)h;
    if (c < 0 || c >= NCOLS || c == STR_OFF) return;
    if (c < NECOLS) {
        free(p->ecol[c].p);
        p->ecol[c].p = NULL, p->ecol[c].n = p->ecol[c].cap = 0;
    } else {
        free(p->col[c].p);
        p->col[c].p = NULL, p->col[c].n = p->col[c].cap = 0;
    }
}

const uint8_t *pv_pk_blob(void *h, size_t *n) {
    pk_t *p = (pk_t *)h;
    *n = p->blob_len;
    return p->blob;
}

const char *pv_pk_error(void *h, uint64_t *pos) {
    pk_t *p = (pk_t *)h;
    *pos = p->err_pos;
    return p->msg ? p->msg : "";
}
