/*
 * pickle_cols.c -- the native snapshot reader's output columns (see pickle_internal.h): how they
 * grow while the input is read and walked, and the results API that hands them to Python
 * (_native/snapshot.py).
 */

#include "pickle_internal.h"

/* bytes per value of each column; the per-entry columns E_DEV .. E_DFREE_NULL are stored narrow */
static const uint8_t COL_WIDTH[NCOLS] = {4, 1, 8, 8, 1, 8, 8, 1, 4, 8, 1, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8};

int pk_vpush(vec_t *v, int64_t x) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 1024;
        int64_t *p = (int64_t *)realloc(v->p, cap * sizeof *p);
        if (!p) return 0;
        v->p = p, v->cap = cap;
    }
    v->p[v->n++] = x;
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

int pk_push_row(pk_t *p, const int64_t row[NECOLS]) {
    for (int c = 0; c < NECOLS; c++)
        if (!epush(&p->ecol[c], COL_WIDTH[c], row[c])) return 0;
    return 1;
}

/* ---- API: results ------------------------------------------------------------- */

int pv_pk_status_check(void) { return PK_FALLBACK; }

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
