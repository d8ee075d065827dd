/*
 * growbuf.c -- memory of the Chrome trace scanner: growable byte buffers
 * (buf_t; the hot appends are inline in scan_internal.h) and the per-event
 * result columns.
 */

#define _DEFAULT_SOURCE /* madvise under -std=c99 */
#include "scan_internal.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Ask for transparent huge pages on a large buffer that will be filled
 * (where THP is "madvise"): one page fault per 2 MiB instead of per 4 KiB.
 * Only for whole 2 MiB pages inside the buffer; a no-op elsewhere. */
static void want_huge_pages(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
    if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

void buf_free(buf_t *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* Room for n more bytes in the args blob: doubling from BLOB_START. */
int blob_grow(buf_t *b, size_t n) {
    if (n > SIZE_MAX / 4 - b->len) return 0;
    size_t cap = b->cap ? b->cap : BLOB_START;
    while (cap - b->len < n) cap *= 2;
    uint8_t *p = (uint8_t *)realloc(b->data, cap);
    if (!p) return 0;
    b->data = p;
    b->cap = cap;
    want_huge_pages(p, cap);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Event columns, addressed by column id (C_*)                               */

void *col_ptr(pv_scanner *s, int c) {
    switch (c) {
    case C_PH: return s->ph;
    case C_NAME: return s->name;
    case C_CAT: return s->cat;
    case C_PID: return s->pid;
    case C_TID: return s->tid;
    case C_ID: return s->id;
    case C_TS: return s->ts;
    case C_DUR: return s->dur;
    case C_BP: return s->bp;
    case C_AOFF: return s->aoff;
    case C_ALEN: return s->alen;
    case C_BIND: return s->bind;
    case C_FLOW: return s->flow;
    default: return NULL; /* numeric args are sparse, not columns */
    }
}

size_t col_width(int c) {
    switch (c) {
    case C_PH: case C_BP: case C_FLOW: return 1;
    case C_NAME: case C_CAT: case C_PID: case C_TID: case C_ID: case C_ALEN: case C_BIND: return 4;
    default: return 8;
    }
}

void set_col(pv_scanner *s, int c, void *p) {
    switch (c) {
    case C_PH: s->ph = (uint8_t *)p; break;
    case C_NAME: s->name = (int32_t *)p; break;
    case C_CAT: s->cat = (int32_t *)p; break;
    case C_PID: s->pid = (int32_t *)p; break;
    case C_TID: s->tid = (int32_t *)p; break;
    case C_ID: s->id = (int32_t *)p; break;
    case C_TS: s->ts = (int64_t *)p; break;
    case C_DUR: s->dur = (int64_t *)p; break;
    case C_BP: s->bp = (uint8_t *)p; break;
    case C_AOFF: s->aoff = (int64_t *)p; break;
    case C_ALEN: s->alen = (int32_t *)p; break;
    case C_BIND: s->bind = (int32_t *)p; break;
    case C_FLOW: s->flow = (uint8_t *)p; break;
    default: break;
    }
}

int grow_columns(pv_scanner *s) {
    size_t cap = s->cap ? s->cap * 2 : 65536;
    for (int c = C_PH; c < C_NUM0; c++) {
        void *p = realloc(col_ptr(s, c), cap * col_width(c));
        if (!p) return 0;
        set_col(s, c, p);
        want_huge_pages(p, cap * col_width(c));
    }
    s->cap = cap;
    return 1;
}

/* Room for at least need events in every column. */
int reserve_columns(pv_scanner *s, size_t need) {
    if (need <= s->cap) return 1;
    for (int c = C_PH; c < C_NUM0; c++) {
        void *p = realloc(col_ptr(s, c), need * col_width(c));
        if (!p) return 0;
        set_col(s, c, p);
        want_huge_pages(p, need * col_width(c));
    }
    s->cap = need;
    return 1;
}
