/*
 * pickle_rows.c -- the native snapshot reader's trace entries as rows (see pickle_internal.h): a
 * trace entry dict appended to a list of them becomes one row of the E_* columns while feeding,
 * and after STOP the result is checked (depth, cycles) and walked with the snapshot's schema into
 * the columns (the entries not taken while feeding, segments, blocks).
 */

#include "pickle_internal.h"

/* ---- trace entries ------------------------------------------------------------ */

/* the last value of a string key among dict items; tag T_NONE with v = -1 when absent */
val_t pk_lookup_items(const val_t *items, uint32_t n, int64_t key) {
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

/* one trace entry dict's row (as walk_entry reads it), or the reason it is not one */
static const char *entry_row(const pk_t *p, const val_t *it, uint32_t n, int64_t row[NECOLS]) {
    val_t act = pk_lookup_items(it, n, K_ACTION);
    if (act.tag != T_STR || act.v < K_FIRST_ACTION || act.v >= NKEYS) return "an unknown action";
    int64_t size, addr, addr_null, stream, t = 0, dfree, dfree_null, stack;
    val_t tv = pk_lookup_items(it, n, K_TIME);
    if (!int_field(pk_lookup_items(it, n, K_SIZE), 0, &size, NULL)
        || !int_field(pk_lookup_items(it, n, K_ADDR), 0, &addr, &addr_null)
        || !int_field(pk_lookup_items(it, n, K_STREAM), 0, &stream, NULL)
        || !int_field(pk_lookup_items(it, n, K_DFREE), 0, &dfree, &dfree_null))
        return "a trace entry field of another type";
    if (!ABSENT(tv) && !in_range(tv)) return "time_us of another type";
    if ((stack = stack_of(p, pk_lookup_items(it, n, K_FRAMES))) < 0) return "frames that are not a list of frames";
    if (stack > INT32_MAX) return "more stacks than an int32 column holds";
    if (!ABSENT(tv)) t = tv.v;
    row[E_DEV] = 0, row[E_ACTION] = act.v - K_FIRST_ACTION, row[E_SIZE] = size, row[E_ADDR] = addr;
    row[E_ADDR_NULL] = addr_null, row[E_STREAM] = stream, row[E_TIME] = t, row[E_HAS_TIME] = !ABSENT(tv);
    row[E_STACK] = stack, row[E_DFREE] = dfree, row[E_DFREE_NULL] = dfree_null;
    return NULL;
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
int pk_entry_append(pk_t *p, val_t v, uint8_t *height) {
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
    if (!pk_push_row(p, row)) return set_err(p, PK_NOMEM, "out of memory");
    for (uint32_t k = 1; k < c->n; k += 2) { /* an empty list it holds: now read as no frames */
        val_t e = c->items[k];
        if (e.tag != T_CONT || p->conts[e.v].kind != C_LIST) continue;
        if (p->conts[e.v].flags & F_PINNED) p->conts[e.v].flags |= F_FROZEN;
        else if (!pk_release(p, e.v, (val_t){0, T_STACKV})) return set_err(p, PK_NOMEM, "out of memory");
    }
    if (!pk_release(p, v.v, (val_t){0, T_DEAD})) return set_err(p, PK_NOMEM, "out of memory");
    *height = (uint8_t)(h + 1);
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

static val_t lookup(const cont_t *c, int64_t key) { return pk_lookup_items(c->items, c->n, key); }

static const cont_t *as(const pk_t *p, val_t v, uint8_t kind) {
    if (v.tag != T_CONT || p->conts[v.v].kind != kind) return NULL;
    return &p->conts[v.v];
}

#define FB(msg) return set_err(p, PK_FALLBACK, msg)
#define PUSH(c, x) \
    if (!pk_vpush(&p->col[c], x)) return set_err(p, PK_NOMEM, "out of memory")

/* a trace entry of a device trace the reader did not take as rows while feeding */
static int walk_entry(pk_t *p, int64_t d, val_t e) {
    const cont_t *c = as(p, e, C_DICT);
    if (!c) FB("a trace entry that is not a dict");
    int64_t row[NECOLS];
    const char *why = entry_row(p, c->items, c->n, row);
    if (why) FB(why);
    row[E_DEV] = d;
    if (!pk_push_row(p, row)) return set_err(p, PK_NOMEM, "out of memory");
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
    pk_drop_tree(p);
    return PK_OK;
}
