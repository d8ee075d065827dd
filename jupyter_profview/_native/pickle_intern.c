/*
 * pickle_intern.c -- the native snapshot reader's interned values (see pickle_internal.h): strings
 * (an id per distinct string, its bytes in one blob), frames (name, filename, line) and stacks (a
 * list of frame ids), each stored once however many entries share it.
 */

#include "pickle_internal.h"

/* keys the walker and the frame test need, interned first: ids 0.. (pickle_internal.h's K_*) */
static const char *const KEYS[] = {
    "name", "filename", "line", "segments", "device_traces", "action", "size", "addr", "frames",
    "stream", "time_us", "device_free", "device", "address", "total_size", "blocks", "state", "?",
    /* snapshot actions, as torch_snapshot.ACTIONS */
    "alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
    "segment_unmap", "oom", "snapshot",
};
/* the K_* list and KEYS agree in length (a negative array size fails the build otherwise) */
typedef char keys_match_their_ids[sizeof KEYS / sizeof KEYS[0] == NKEYS ? 1 : -1];

/* ---- hashing ------------------------------------------------------------- */

static uint64_t hash_bytes(const uint8_t *s, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ULL;
    return h;
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

const uint8_t *pk_str_at(const pk_t *p, int64_t id, size_t *n) {
    int64_t a = p->str_off.p[id], b = p->str_off.p[id + 1];
    *n = (size_t)(b - a);
    return p->blob + a;
}

static int str_rehash(pk_t *p) {
    if (!table_grow(&p->str_tab)) return 0;
    size_t nstr = p->str_off.n - 1, mask = p->str_tab.cap - 1;
    for (size_t id = 0; id < nstr; id++) {
        size_t n;
        const uint8_t *s = pk_str_at(p, (int64_t)id, &n);
        size_t i = hash_bytes(s, n) & mask;
        while (p->str_tab.slot[i] >= 0) i = (i + 1) & mask;
        p->str_tab.slot[i] = (int64_t)id;
    }
    return 1;
}

/* the id of the string s[0:n], added if new; -1: out of memory */
int64_t pk_intern(pk_t *p, const uint8_t *s, size_t n) {
    if ((p->str_off.n) * 2 >= p->str_tab.cap && !str_rehash(p)) return -1;
    size_t mask = p->str_tab.cap - 1, i = hash_bytes(s, n) & mask;
    for (; p->str_tab.slot[i] >= 0; i = (i + 1) & mask) {
        size_t m;
        const uint8_t *t = pk_str_at(p, p->str_tab.slot[i], &m);
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
    if (!pk_vpush(&p->str_off, (int64_t)p->blob_len)) return -1;
    p->str_tab.slot[i] = id;
    return id;
}

int pk_intern_keys(pk_t *p) {
    int ok = 1;
    for (int k = 0; ok && k < NKEYS; k++) ok = pk_intern(p, (const uint8_t *)KEYS[k], strlen(KEYS[k])) == k;
    return ok;
}

/* UTF-8 as Python's 'surrogatepass' decoder accepts it */
int pk_utf8_ok(const uint8_t *s, size_t n) {
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

int64_t pk_frame_id(pk_t *p, int64_t name, int64_t file, int64_t line) {
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
    if (!pk_vpush(fn, name) || !pk_vpush(ff, file) || !pk_vpush(fl, line)) return -1;
    t->slot[i] = id;
    return id;
}

static uint64_t stack_hash(const int64_t *f, size_t n) {
    uint64_t h = n;
    for (size_t k = 0; k < n; k++) h = mix(h, (uint64_t)f[k]);
    return h;
}

/* the id of a stack of frame ids; stack 0 is the empty one (K_OFF starts 0, 0) */
int64_t pk_stack_id(pk_t *p, const int64_t *f, size_t n) {
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
        if (!pk_vpush(fr, f[k])) return -1;
    if (!pk_vpush(off, (int64_t)fr->n)) return -1;
    t->slot[i] = (int64_t)nstacks;
    return (int64_t)nstacks;
}
