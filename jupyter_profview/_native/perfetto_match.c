/*
 * perfetto_match.c -- slice begins and ends matched again in time order on the tracks where
 * the walk's file order was not it: the loop of rematch_out_of_order in
 * jupyter_profview/formats/perfetto/tables.py (the reference), one stack per track.
 */

#include "scan_internal.h"

/* Items in time order: track (0 <= track < ntracks), is_begin, ident (a begin's walk row, an
 * end's index).  closed_by[row] of each begin: the end that closes it, -1 none.  Returns the
 * ends with no open begin, -1 out of memory. */
int64_t pv_pf_rematch(int64_t n, const int32_t *track, const uint8_t *is_begin, const int64_t *ident,
                      int64_t ntracks, int64_t *closed_by) {
    int64_t *top = (int64_t *)malloc((size_t)(ntracks > 0 ? ntracks : 1) * sizeof *top);
    int64_t *below = (int64_t *)malloc((size_t)(n > 0 ? n : 1) * sizeof *below);
    if (!top || !below) {
        free(top);
        free(below);
        return -1;
    }
    for (int64_t t = 0; t < ntracks; t++) top[t] = -1;
    int64_t unmatched = 0;
    for (int64_t k = 0; k < n; k++) {
        int32_t t = track[k];
        if (is_begin[k]) {
            closed_by[ident[k]] = -1;
            below[k] = top[t];
            top[t] = k;
        } else if (top[t] >= 0) {
            closed_by[ident[top[t]]] = ident[k];
            top[t] = below[top[t]];
        } else {
            unmatched++;
        }
    }
    free(top);
    free(below);
    return unmatched;
}
