/*
 * nest.c -- native version of jupyter_profview.builder.nest_python (the
 * reference; its module docstring states the rule).
 *
 * Events are sorted by (track, start, -duration).  Each track has a list of
 * lanes (0 = main, k > 0 = overlap sub-lanes); each lane keeps a stack of open
 * events (indices), each inside the one below it, and the latest end drawn on
 * it.  For event i, after popping the events that ended at or before its
 * start (an event ending exactly where the next starts is popped; one with the
 * same end nests):
 *
 *   parent = the innermost (highest index) open event, over all lanes, that
 *            contains i, or -1;
 *   lane   = the parent's lane when the parent is the top of its stack;
 *            else, when i partly overlaps main-lane events above its parent
 *            (or above nothing), the longer of i and the lowest of those (t0)
 *            keeps the main lane: if i is longer, t0 and the main-lane events
 *            since t0 (its subtree) move to the first overlap lane with nothing
 *            drawn after t0's start, their depths rebased on t0; if not, i goes
 *            to the first overlap lane with nothing drawn after its start;
 *            else (parent on an overlap lane, not its top) that same free lane;
 *   depth  = the size of the lane's stack before the push.
 *
 * Semantics identical to the Python reference, ties included.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t *items;
    size_t len, cap;
    int64_t last_end; /* latest end drawn on this lane */
} lane_t;

static int push(lane_t *s, int64_t v) {
    if (s->len == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        int64_t *p = (int64_t *)realloc(s->items, cap * sizeof(int64_t));
        if (!p) return 0;
        s->items = p;
        s->cap = cap;
    }
    s->items[s->len++] = v;
    return 1;
}

typedef struct {
    lane_t *lanes;
    size_t nalloc, nactive;
} lanes_t;

/* First overlap lane (k >= 1) with nothing drawn after t, appended when none;
 * its stack emptied.  Returns the lane or (size_t)-1 when out of memory. */
static size_t free_lane(lanes_t *L, int64_t t) {
    size_t k;
    for (k = 1; k < L->nactive; k++)
        if (L->lanes[k].last_end <= t) break;
    if (k == L->nactive) {
        if (L->nactive == L->nalloc) {
            size_t na = L->nalloc * 2;
            lane_t *p = (lane_t *)realloc(L->lanes, na * sizeof(lane_t));
            if (!p) return (size_t)-1;
            for (size_t j = L->nalloc; j < na; j++) p[j].items = NULL, p[j].len = p[j].cap = 0;
            L->lanes = p;
            L->nalloc = na;
        }
        L->nactive++;
        L->lanes[k].last_end = t;
    }
    L->lanes[k].len = 0;
    return k;
}

/* Returns 0 on success, -1 when out of memory. */
int pv_nest(int64_t n, const int64_t *track, const int64_t *start, const int64_t *end, int32_t *depth,
            int64_t *parent, int32_t *lane) {
    lanes_t L = {NULL, 0, 0};
    int rc = 0;
    if (n <= 0) return 0;
    L.lanes = (lane_t *)calloc(1, sizeof(lane_t));
    if (!L.lanes) return -1;
    L.nalloc = 1;
    for (int64_t i = 0; i < n; i++) {
        if (i == 0 || track[i] != track[i - 1]) {
            L.nactive = 1; /* a new track: one empty main lane */
            L.lanes[0].len = 0;
            L.lanes[0].last_end = INT64_MIN;
        }
        int64_t s = start[i], e = end[i];
        int64_t p = -1, p_pos = -1;
        size_t p_lane = (size_t)-1;
        for (size_t k = 0; k < L.nactive; k++) {
            lane_t *st = &L.lanes[k];
            while (st->len && end[st->items[st->len - 1]] <= s) st->len--;
            for (int64_t pos = (int64_t)st->len - 1; pos >= 0; pos--) {
                int64_t j = st->items[pos];
                if (j < p) break;
                if (e <= end[j]) {
                    p = j, p_lane = k, p_pos = pos;
                    break;
                }
            }
        }
        lane_t *main_ = &L.lanes[0];
        size_t k;
        if (p >= 0 && (size_t)p_pos == L.lanes[p_lane].len - 1) {
            k = p_lane; /* nests in the top of its lane */
        } else if ((p < 0 || p_lane == 0) && main_->len) {
            size_t base = (size_t)(p_pos + 1);
            int64_t t0 = main_->items[base];
            if (e - s > end[t0] - start[t0]) { /* i is longer: t0 and its subtree move aside */
                k = free_lane(&L, start[t0]);
                if (k == (size_t)-1) { rc = -1; goto out; }
                main_ = &L.lanes[0]; /* free_lane may have moved the lanes */
                int32_t d0 = depth[t0];
                for (int64_t j = t0; j < i; j++)
                    if (lane[j] == 0) lane[j] = (int32_t)k, depth[j] -= d0;
                for (size_t m = base; m < main_->len; m++)
                    if (!push(&L.lanes[k], main_->items[m])) { rc = -1; goto out; }
                L.lanes[k].last_end = end[t0];
                main_->len = base;
                k = 0;
            } else {
                k = free_lane(&L, s);
                if (k == (size_t)-1) { rc = -1; goto out; }
            }
        } else if (p < 0) {
            k = 0; /* main lane empty: top level */
        } else {
            k = free_lane(&L, s); /* partly overlaps an overlap-lane event above its parent */
            if (k == (size_t)-1) { rc = -1; goto out; }
        }
        lane_t *st = &L.lanes[k];
        depth[i] = (int32_t)st->len;
        parent[i] = p;
        lane[i] = (int32_t)k;
        if (!push(st, i)) { rc = -1; goto out; }
        if (e > st->last_end) st->last_end = e;
    }
out:
    for (size_t j = 0; j < L.nalloc; j++) free(L.lanes[j].items);
    free(L.lanes);
    return rc;
}

/*
 * pv_owned -- native version of jupyter_profview.nesting.owned_time_python
 * (the reference; the module docstring states the rule).
 *
 * Events sorted by (track, start, -duration).  Each instant of a track
 * belongs to the event running then: of the open events, the one started
 * last (the latest in this order).  A sweep over the starts with a stack of
 * the events started so far: the top owns the time up to the next start or
 * its end, when it is popped along with the events under it that ended
 * meanwhile.  self[i] is the time event i owns.  Returns 0, or -1 when out
 * of memory.
 */
int pv_owned(int64_t n, const int64_t *track, const int64_t *start, const int64_t *end, int64_t *self) {
    int64_t *stack, len = 0, t = 0;
    if (n <= 0) return 0;
    stack = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    if (!stack) return -1;
    for (int64_t i = 0; i <= n; i++) {
        int new_track = i == n || (i > 0 && track[i] != track[i - 1]);
        int64_t s = new_track ? INT64_MAX : start[i];
        while (len) {
            int64_t j = stack[len - 1];
            if (end[j] <= t) { len--; continue; } /* ended while a later one ran */
            int64_t lim = end[j] < s ? end[j] : s;
            self[j] += lim - t;
            t = lim;
            if (end[j] <= s) len--;
            else break;
        }
        if (i == n) break;
        if (new_track) s = start[i];
        t = s;
        self[i] = 0;
        stack[len++] = i;
    }
    free(stack);
    return 0;
}

/*
 * pv_python_yields -- native version of
 * jupyter_profview.nesting.python_yields_until_python (the reference).
 *
 * Events sorted by (track, start, -duration), parent = their nesting parents
 * (positions), python = 1 for a Python frame.  until[i]: until when Python
 * frame i yields to the ops and ranges it partly overlaps (those open at its
 * start that end before it, above the first one containing it), or its Python
 * parent's; INT64_MIN where never (or not after its start).  Returns 0, or -1
 * when out of memory.
 */
int pv_python_yields(int64_t n, const int64_t *track, const int64_t *start, const int64_t *end,
                     const int64_t *parent, const uint8_t *python, int64_t *until) {
    int64_t *others, len = 0;
    if (n <= 0) return 0;
    others = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    if (!others) return -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = start[i], e = end[i], u = INT64_MIN, p = parent[i];
        if (i > 0 && track[i] != track[i - 1]) len = 0;
        while (len && end[others[len - 1]] <= s) len--;
        until[i] = INT64_MIN;
        if (!python[i]) {
            others[len++] = i;
            continue;
        }
        if (p >= 0 && python[p]) u = until[p];
        for (int64_t k = len - 1; k >= 0; k--) {
            int64_t r = others[k];
            if (end[r] <= s) continue;
            if (end[r] >= e) break;
            if (end[r] > u) u = end[r];
        }
        if (u > s) until[i] = u;
    }
    free(others);
    return 0;
}

/*
 * pv_owned_segments -- native version of
 * jupyter_profview.nesting.owned_segments_python (the reference; the module
 * docstring states the rule).
 *
 * Events sorted by (track, start, -duration).  Each instant of a track goes
 * to the latest-started open event that does not yield then (a Python frame,
 * python[j] != 0, yields before until[j]; python may be NULL: nothing
 * yields).  Writes the segments (owner, lo, hi), consecutive ones of one owner
 * merged, into arrays of at least 3n + 1 entries (every segment ends at a
 * distinct start, end or until of its track); returns their number, or -1
 * when out of memory.
 */
int64_t pv_owned_segments(int64_t n, const int64_t *track, const int64_t *start, const int64_t *end,
                          const uint8_t *python, const int64_t *until, int64_t *owner, int64_t *lo,
                          int64_t *hi) {
    int64_t *stack, len = 0, t = 0, m = 0;
    if (n <= 0) return 0;
    stack = (int64_t *)malloc((size_t)n * sizeof(int64_t));
    if (!stack) return -1;
    for (int64_t i = 0; i <= n; i++) {
        int last = i == n, new_track = !last && i > 0 && track[i] != track[i - 1];
        for (int pass = 0; pass < 2; pass++) {
            /* pass 0: settle the previous track to its end (new track or last); pass 1: up to start[i] */
            int64_t limit;
            if (pass == 0) {
                if (!(last || new_track)) continue;
                limit = INT64_MAX;
            } else {
                if (last) break;
                limit = start[i];
            }
            while (len && t < limit) {
                int64_t k, j, lim = limit;
                while (len && end[stack[len - 1]] <= t) len--;
                if (!len) break;
                for (k = len - 1; k >= 0; k--) { /* the owner: the top-most open event that does not yield */
                    j = stack[k];
                    if (end[j] <= t) continue;
                    if (!(python && python[j] && until[j] > t)) break;
                    if (until[j] < lim) lim = until[j]; /* it runs again from there */
                }
                if (k < 0) {
                    t = lim;
                    continue;
                }
                j = stack[k];
                if (end[j] < lim) lim = end[j];
                if (m && owner[m - 1] == j && hi[m - 1] == t) {
                    hi[m - 1] = lim;
                } else {
                    owner[m] = j;
                    lo[m] = t;
                    hi[m] = lim;
                    m++;
                }
                t = lim;
            }
            if (pass == 0) len = 0;
        }
        if (last) break;
        t = start[i];
        stack[len++] = i;
    }
    free(stack);
    return m;
}

/*
 * pv_nested_self -- native version of jupyter_profview.nesting.nested_self_python: each
 * event's duration minus its children's (parent[i] >= 0: i is a child of parent[i]), the
 * children's durations summed as doubles in index order (numpy's bincount with weights) and
 * truncated to int64 (astype).  The sums are kept in `out` itself until they are read: no
 * temporary the size of the input.  Returns 0, or -1 for a parent out of range.
 */
int pv_nested_self(int64_t n, const int64_t *start, const int64_t *end, const int64_t *parent, int64_t *out) {
    const double zero = 0.0;
    for (int64_t i = 0; i < n; i++) memcpy(&out[i], &zero, sizeof zero);
    for (int64_t i = 0; i < n; i++) {
        int64_t p = parent[i];
        if (p < 0) continue;
        if (p >= n) return -1;
        double sum;
        memcpy(&sum, &out[p], sizeof sum);
        sum += (double)(end[i] - start[i]);
        memcpy(&out[p], &sum, sizeof sum);
    }
    for (int64_t i = 0; i < n; i++) {
        double sum;
        memcpy(&sum, &out[i], sizeof sum);
        /* numpy's cast of a double past int64 (x86): INT64_MIN */
        int64_t children = sum > -9223372036854775808.0 && sum < 9223372036854775808.0 ? (int64_t)sum : INT64_MIN;
        out[i] = (end[i] - start[i]) - children;
    }
    return 0;
}
