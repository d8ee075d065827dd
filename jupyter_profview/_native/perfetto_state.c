/*
 * perfetto_state.c -- the Perfetto walker's shared state helpers, used by the packet walk
 * (perfetto_scan.c) and the event decoder (perfetto_event.c): the (a, b) -> int64 map, the
 * raw-string and track tables, pf_unsup (the file goes to the Python reader), and the exported
 * read-back of the walk's output (quality, tracks, dictionaries, columns).
 */

#include "perfetto_state.h"

int pf_unsup(pf_walker *w, const char *why) {
    w->unsup = why;
    return PF_UNSUP;
}

/* -- (a, b) -> int64 map ------------------------------------------------------------------ */

static size_t mix(uint64_t a, uint64_t b) {
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (size_t)h;
}

int map_init(map_t *m) {
    m->mask = 255;
    m->count = 0;
    m->s = (mslot_t *)calloc(m->mask + 1, sizeof(mslot_t));
    return m->s != NULL;
}

void map_free(map_t *m) {
    free(m->s);
    m->s = NULL;
}

int64_t *map_get(const map_t *m, uint64_t a, uint64_t b) {
    size_t j = mix(a, b) & m->mask;
    for (;;) {
        mslot_t *s = &m->s[j];
        if (!s->used) return NULL;
        if (s->a == a && s->b == b) return &s->v;
        j = (j + 1) & m->mask;
    }
}

static int map_grow(map_t *m) {
    size_t nmask = m->mask * 2 + 1;
    mslot_t *ns = (mslot_t *)calloc(nmask + 1, sizeof(mslot_t));
    if (!ns) return 0;
    for (size_t i = 0; i <= m->mask; i++) {
        if (!m->s[i].used) continue;
        size_t j = mix(m->s[i].a, m->s[i].b) & nmask;
        while (ns[j].used) j = (j + 1) & nmask;
        ns[j] = m->s[i];
    }
    free(m->s);
    m->s = ns;
    m->mask = nmask;
    return 1;
}

int64_t *map_put(map_t *m, uint64_t a, uint64_t b, int64_t init, int *fresh) {
    *fresh = 0;
    int64_t *v = map_get(m, a, b);
    if (v) return v;
    if ((m->count + 1) * 2 > m->mask + 1 && !map_grow(m)) return NULL;
    size_t j = mix(a, b) & m->mask;
    while (m->s[j].used) j = (j + 1) & m->mask;
    m->s[j].used = 1;
    m->s[j].a = a;
    m->s[j].b = b;
    m->s[j].v = init;
    m->count++;
    *fresh = 1;
    return &m->s[j].v;
}

/* -- strings, tracks, sequences ----------------------------------------------------------- */

int32_t pf_raw(pf_walker *w, const uint8_t *p, size_t n) {
    int32_t cache = -1;
    int32_t code = cached_lookup(&w->raw, &cache, n ? p : (const uint8_t *)"", n, 0);
    if (code < 0) return -1;
    while (NITEMS(w->raw_out, int32_t) < w->raw.count) {
        int32_t none = -1;
        if (!buf_append(&w->raw_out, (const uint8_t *)&none, 4)) return -1;
    }
    return code;
}

int32_t pf_track(pf_walker *w, int kind, uint64_t uuid, int64_t pid, int64_t tid) {
    if (kind == 0 && w->has_last_uuid && w->last_uuid == uuid) return w->last_track;
    uint64_t a = kind == 0 ? 0 : ((uint64_t)kind << 32) | (uint32_t)pid;
    uint64_t b = kind == 0 ? uuid : kind == 1 ? (uint64_t)tid : 0;
    int fresh;
    int64_t *v = map_put(&w->track_of, a, b, (int64_t)w->ntrack, &fresh);
    if (!v) return -1;
    if (fresh) {
        if (w->ntrack == w->captrack) {
            size_t cap = w->captrack ? w->captrack * 2 : 256;
            track_t *p = (track_t *)realloc(w->tracks, cap * sizeof *p);
            if (!p) return -1;
            w->tracks = p;
            w->captrack = cap;
        }
        track_t *t = &w->tracks[w->ntrack++];
        memset(t, 0, sizeof *t);
        t->kind = kind;
        t->uuid = uuid;
        t->kpid = pid;
        t->ktid = tid;
        t->name = t->pname = t->tname = -1;
        t->mult = 1;
    }
    if (kind == 0) {
        w->has_last_uuid = 1;
        w->last_uuid = uuid;
        w->last_track = (int32_t)*v;
    }
    return (int32_t)*v;
}

/* -- what Python reads back after the walk (exported) ------------------------------------- */

const char *pv_pf_unsupported(pf_walker *w) { return w->unsup ? w->unsup : ""; }

void pv_pf_quality(pf_walker *w, int64_t *out) {
    w->q[Q_EVENTS] = w->n_events;
    w->q[Q_COUNTERS] = w->n_counters;
    memcpy(out, w->q, sizeof w->q);
}

int pv_pf_ntracks(pf_walker *w) { return (int)w->ntrack; }

#define TRACK_FIELDS 16
/* TRACK_FIELDS int64 per track: kind, uuid, key pid, key tid, name, parent, has_pid, pid,
 * has_tid, tid, process name, thread name, counter, incremental, multiplier, counter type. */
void pv_pf_tracks(pf_walker *w, int64_t *out) {
    for (size_t i = 0; i < w->ntrack; i++) {
        const track_t *t = &w->tracks[i];
        int64_t *o = out + i * TRACK_FIELDS;
        o[0] = t->kind, o[1] = (int64_t)t->uuid, o[2] = t->kpid, o[3] = t->ktid, o[4] = t->name;
        o[5] = (int64_t)t->parent, o[6] = t->has_pid, o[7] = t->pid, o[8] = t->has_tid, o[9] = t->tid;
        o[10] = t->pname, o[11] = t->tname, o[12] = t->counter, o[13] = t->incremental, o[14] = t->mult;
        o[15] = t->ctype;
    }
}

/* Dictionary which (0: raw strings, 1: event strings): its count, arena and entries. */
int64_t pv_pf_dict(pf_walker *w, int which, const uint8_t **arena, size_t *arena_len, const int64_t **offsets,
                   const int32_t **lengths) {
    const dict_t *d = which ? &w->out : &w->raw;
    *arena = d->arena.data;
    *arena_len = d->arena.len;
    *offsets = (const int64_t *)d->offsets.data;
    *lengths = (const int32_t *)d->lengths.data;
    return (int64_t)d->count;
}

/* Hand column c over (the caller frees it with pv_free); NULL if empty. */
void *pv_pf_detach(pf_walker *w, int c, size_t *nbytes) {
    *nbytes = 0;
    if (c < 0 || c >= K_NCOLS) return NULL;
    buf_t b = w->col[c];
    memset(&w->col[c], 0, sizeof b);
    if (!b.data || !b.len) {
        free(b.data);
        return NULL;
    }
    void *q = realloc(b.data, b.len);
    *nbytes = b.len;
    return q ? q : b.data;
}
