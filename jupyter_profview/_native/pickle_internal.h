/*
 * pickle_internal.h -- what the native snapshot reader's files share: the value cells, the
 * containers, the reader's state (pk_t), its output columns and the functions one file calls in
 * another.
 *
 *   pickle_snap.c    the restricted opcode interpreter and the feeding API (pv_pk_new/feed/free)
 *   pickle_rows.c    trace entries as rows, and the walk after STOP (pv_pk_finish)
 *   pickle_memo.c    the memo, the containers, and frames and stacks as interned values
 *   pickle_intern.c  the interned strings, frames and stacks
 *   pickle_cols.c    the output columns and the results API (pv_pk_column, pv_pk_drop, ...)
 *
 * Each file calls only the ones below it in this list.  formats/torch_snapshot.py is the reference.
 */

#ifndef PV_PICKLE_INTERNAL_H
#define PV_PICKLE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

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

/* open-addressing table of int64 ids, keyed by a caller-side hash + equality */
typedef struct { int64_t *slot; size_t cap, n; } table_t;

/* columns handed to Python (int64 but the per-entry ones, see COL_WIDTH, and the string blob) */
enum {
    E_DEV, E_ACTION, E_SIZE, E_ADDR, E_ADDR_NULL, E_STREAM, E_TIME, E_HAS_TIME, E_STACK, E_DFREE,
    E_DFREE_NULL, S_DEV, S_ADDR, S_TOTAL, S_NBLOCKS, B_SIZE, B_ADDR, B_STATE, B_STACK, K_OFF, K_FRAME,
    F_NAME, F_FILE, F_LINE, STR_OFF, NCOLS
};
/* the per-entry columns E_DEV .. E_DFREE_NULL, stored narrow */
#define NECOLS (E_DFREE_NULL + 1)

/* the ids of the keys the walker and the frame test need, interned first (pickle_intern.c's KEYS);
   the snapshot actions, as torch_snapshot.ACTIONS, are K_FIRST_ACTION .. NKEYS - 1 */
enum {
    K_NAME, K_FILENAME, K_LINE, K_SEGMENTS, K_TRACES, K_ACTION, K_SIZE, K_ADDR, K_FRAMES, K_STREAM,
    K_TIME, K_DFREE, K_DEVICE, K_ADDRESS, K_TOTAL, K_BLOCKS, K_STATE, K_QMARK, K_FIRST_ACTION,
    NKEYS = K_FIRST_ACTION + 9
};

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

static inline int set_err(pk_t *p, int status, const char *msg) {
    p->status = status;
    p->msg = msg;
    p->err_pos = p->consumed + p->in_pos;
    return status;
}

static inline uint64_t mix(uint64_t h, uint64_t x) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static inline int in_range(val_t v) { return v.tag == T_INT && v.v > -LIMIT62 && v.v < LIMIT62; }

/* ---- pickle_rows.c ---- */

/* the last value of a string key among dict items; tag T_NONE with v = -1 when absent */
val_t pk_lookup_items(const val_t *items, uint32_t n, int64_t key);
/* a dict appended to a list of trace entries, written as a row (see there) */
int pk_entry_append(pk_t *p, val_t v, uint8_t *height);

/* ---- pickle_memo.c ---- */

int pk_memo_put(pk_t *p, uint32_t key, val_t v);
int pk_memo_get(pk_t *p, uint32_t key, val_t *out);
void pk_free_items(cont_t *c);
int pk_release(pk_t *p, int64_t idx, val_t nv);
int pk_maybe_frame(pk_t *p, val_t *v);
int pk_maybe_stack(pk_t *p, val_t *v);
int64_t pk_new_cont(pk_t *p, uint8_t kind, const val_t *items, size_t n);
int pk_cont_add(cont_t *c, const val_t *items, size_t n);
void pk_drop_tree(pk_t *p);

/* ---- pickle_intern.c ---- */

/* KEYS interned as ids 0 .. NKEYS - 1; 0: out of memory */
int pk_intern_keys(pk_t *p);
const uint8_t *pk_str_at(const pk_t *p, int64_t id, size_t *n);
int64_t pk_intern(pk_t *p, const uint8_t *s, size_t n);
int pk_utf8_ok(const uint8_t *s, size_t n);
int64_t pk_frame_id(pk_t *p, int64_t name, int64_t file, int64_t line);
int64_t pk_stack_id(pk_t *p, const int64_t *f, size_t n);

/* ---- pickle_cols.c ---- */

int pk_vpush(vec_t *v, int64_t x);
int pk_push_row(pk_t *p, const int64_t row[NECOLS]);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
