/*
 * perfetto_match.c -- slice begins and ends matched again in time order on the tracks where
 * the walk's file order was not it: rematch_out_of_order in
 * jupyter_profview/formats/perfetto/tables.py (the reference), with one stack per track and
 * memory for the items of those tracks only.
 */

#include "scan_internal.h"

/* The whole of rematch_out_of_order (tables.py) with little memory: the nb walk rows (track,
 * place in the file, start; the begins are those with stacked[row] = 1) and ne ends (track,
 * place, time), each in file order.  bad[t]
 * = 1 for each track whose items are not in time order in the file; on those tracks the
 * begins and ends are matched again in (time, place) order, one stack per track, closed_by
 * updated (a begin's end index, -1 none).  Returns the unmatched ends on those tracks, -1
 * out of memory. */
typedef struct {
    const int64_t *bw, *ew;
    const int32_t *bo, *eo;
    int64_t nb;
} keys_t; /* items: walk rows 0..nb-1, then ends nb.. */

static inline int item_before(const keys_t *k, int64_t a, int64_t b) {
    int64_t wa = a < k->nb ? k->bw[a] : k->ew[a - k->nb], wb = b < k->nb ? k->bw[b] : k->ew[b - k->nb];
    if (wa != wb) return wa < wb;
    int64_t oa = a < k->nb ? k->bo[a] : k->eo[a - k->nb], ob = b < k->nb ? k->bo[b] : k->eo[b - k->nb];
    return oa < ob;
}

static void sort_items(const keys_t *k, int64_t *x, int64_t *tmp, int64_t n) {
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = item_before(k, x[j], x[i]) ? x[j++] : x[i++];
            while (i < mid) tmp[o++] = x[i++];
            while (j < hi) tmp[o++] = x[j++];
        }
        memcpy(x, tmp, (size_t)n * sizeof *x);
    }
}

int64_t pv_pf_rematch_tracks(int64_t nb, const int32_t *btrack, const int32_t *border, const int64_t *bwhen,
                             const int8_t *stacked, int64_t ne, const int32_t *etrack, const int32_t *eorder,
                             const int64_t *ewhen, int64_t ntracks, uint8_t *bad, int32_t *closed_by) {
    size_t nt = (size_t)(ntracks > 0 ? ntracks : 1);
    int64_t *last = (int64_t *)malloc(nt * sizeof *last);
    int64_t *start = (int64_t *)calloc(nt + 1, sizeof *start);
    if (!last || !start) {
        free(last);
        free(start);
        return -1;
    }
    memset(bad, 0, (size_t)ntracks);
    uint8_t *seen = bad; /* bit 1: seen, bit 0: bad */
    int64_t i = 0, j = 0, m = 0;
    while (i < nb || j < ne) {
        if (i < nb && stacked[i] != 1) {
            i++;
            continue;
        }
        int begin = j >= ne || (i < nb && border[i] < eorder[j]);
        int32_t t = begin ? btrack[i] : etrack[j];
        int64_t w = begin ? bwhen[i++] : ewhen[j++];
        if ((seen[t] & 2) && w < last[t]) seen[t] |= 1;
        seen[t] |= 2;
        last[t] = w;
    }
    for (int64_t t = 0; t < ntracks; t++) bad[t] &= 1;
    for (i = 0; i < nb; i++) if (stacked[i] == 1 && bad[btrack[i]]) start[btrack[i] + 1]++, m++;
    for (j = 0; j < ne; j++) if (bad[etrack[j]]) start[etrack[j] + 1]++, m++;
    free(last);
    if (!m) {
        free(start);
        return 0;
    }
    for (size_t t = 0; t < nt; t++) start[t + 1] += start[t];
    int64_t *x = (int64_t *)malloc((size_t)m * sizeof *x), *tmp = (int64_t *)malloc((size_t)m * sizeof *tmp);
    int64_t *fill = (int64_t *)malloc(nt * sizeof *fill);
    if (!x || !tmp || !fill) {
        free(x), free(tmp), free(fill), free(start);
        return -1;
    }
    memcpy(fill, start, nt * sizeof *fill);
    for (i = 0; i < nb; i++) if (stacked[i] == 1 && bad[btrack[i]]) x[fill[btrack[i]]++] = i;
    for (j = 0; j < ne; j++) if (bad[etrack[j]]) x[fill[etrack[j]]++] = nb + j;
    keys_t k = {.bw = bwhen, .ew = ewhen, .bo = border, .eo = eorder, .nb = nb};
    int64_t unmatched = 0;
    for (size_t t = 0; t < nt; t++) {
        int64_t lo = start[t], n = start[t + 1] - lo, depth = 0;
        if (!n) continue;
        sort_items(&k, x + lo, tmp, n);
        int64_t *stack = tmp; /* the sort is done with it */
        for (int64_t q = lo; q < lo + n; q++) {
            int64_t it = x[q];
            if (it < nb) {
                closed_by[it] = -1;
                stack[depth++] = it;
            } else if (depth) {
                closed_by[stack[--depth]] = (int32_t)(it - nb);
            } else {
                unmatched++;
            }
        }
    }
    free(x), free(tmp), free(fill), free(start);
    return unmatched;
}
