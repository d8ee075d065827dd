/*
 * pickle_memo.c -- the native snapshot reader's memo and containers (see pickle_internal.h):
 * memo cells (dense 4-byte cells for MEMOIZE's keys, a hash table for the others), the container
 * slots and their free list, and a frame dict or a frames list taken as an interned frame or
 * stack, released to a plain value when nothing else can reference it.
 */

#include "pickle_internal.h"

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

int pk_memo_put(pk_t *p, uint32_t key, val_t v) {
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

int pk_memo_get(pk_t *p, uint32_t key, val_t *out) {
    size_t j;
    if (key < p->dense_n) { *out = dense_get(p, key); return 1; }
    if (!hash_find(p, key, &j)) return 0;
    *out = p->memo_val[j];
    return 1;
}

/* ---- containers ------------------------------------------------------------ */

int64_t pk_new_cont(pk_t *p, uint8_t kind, const val_t *items, size_t n) {
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

int pk_cont_add(cont_t *c, const val_t *items, size_t n) {
    if (n == 0) return 1; /* APPENDS or SETITEMS of nothing: c->items may be NULL, and so memcpy's */
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

void pk_free_items(cont_t *c) {
    if (c->kind == C_LIST || c->kind == C_TUPLE || c->kind == C_DICT) free(c->items);
    c->items = NULL;
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

/* an unpinned container referenced only by its memo cell and by the value being stored: the memo
   cell becomes nv (the caller stores nv too) and the slot is reused; 0: out of memory */
int pk_release(pk_t *p, int64_t idx, val_t nv) {
    if (!memo_swap(p, idx, nv)) return 0;
    cont_t *c = &p->conts[idx];
    pk_free_items(c);
    c->kind = C_FREE, c->n = c->cap = 0, c->flags = 0;
    c->aux = p->free_cont;
    p->free_cont = idx;
    return 1;
}

/* container *v interned as `id`: released to the plain value {id, tag} when nothing else can
   reference it, else (pinned) kept in its slot as a `kind` container (FRAME, STACK) */
static int interned(pk_t *p, val_t *v, int64_t id, uint8_t tag, uint8_t kind) {
    cont_t *c = &p->conts[v->v];
    if (!(c->flags & F_PINNED)) {
        val_t nv = {id, tag};
        if (!pk_release(p, v->v, nv)) return PK_NOMEM;
        *v = nv;
        return PK_OK;
    }
    free(c->items);
    c->items = NULL, c->n = c->cap = 0;
    c->kind = kind, c->aux = id;
    return PK_OK;
}

/* a dict appended to a list: a FRAME if it is {name: str, filename: str, line: int} (any subset);
   *v becomes the plain value T_FRAMEV when nothing else can reference the dict */
int pk_maybe_frame(pk_t *p, val_t *v) {
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
    int64_t id = pk_frame_id(p, name.v, file.v, line.v);
    if (id < 0) return PK_NOMEM;
    return interned(p, v, id, T_FRAMEV, C_FRAME);
}

/* a list set as a dict value: a STACK if it holds frames only (and at least one); *v becomes the
   plain value T_STACKV when nothing else can reference the list */
int pk_maybe_stack(pk_t *p, val_t *v) {
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
    int64_t id = pk_stack_id(p, f, c->n);
    if (f != small) free(f);
    if (id < 0) return PK_NOMEM;
    return interned(p, v, id, T_STACKV, C_STACK);
}

/* the containers are no longer needed once walked */
void pk_drop_tree(pk_t *p) {
    for (size_t k = 0; k < p->nconts; k++) pk_free_items(&p->conts[k]);
    free(p->conts), free(p->stack), free(p->memo_key), free(p->memo_val), free(p->memo_used), free(p->in);
    free(p->dense), free(p->esc);
    p->esc = NULL, p->esc_n = p->esc_cap = 0;
    p->conts = NULL, p->stack = NULL, p->memo_key = NULL, p->memo_val = NULL, p->memo_used = NULL, p->in = NULL;
    p->dense = NULL, p->dense_n = p->dense_cap = 0;
    p->nconts = p->ccap = p->memo_cap = p->memo_n = p->scap = p->top = 0;
    p->free_cont = -1;
    p->in_len = p->in_cap = p->in_pos = 0;
}
