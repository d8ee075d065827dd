/*
 * xplane.c -- the lines of one XPlane (tsl/profiler/protobuf/xplane.proto),
 * decoded from the protobuf wire format into columns: the native version of
 * the per-event loop of jupyter_profview.formats.xspace_build.Builder (the
 * reference, on the upb-parsed plane; the module docstring of .xspace says
 * what the fields mean).
 *
 *   XPlane: lines = 3 (XLine, repeated); every other field is copied, in
 *           order, to the "rest" (parsed by the caller with protobuf).
 *   XLine:  id 1, display_id 10, name 2, display_name 11, timestamp_ns 3,
 *           duration_ps 9, events 4 (XEvent, repeated).
 *   XEvent: metadata_id 1, offset_ps 2 | num_occurrences 5 (oneof: the last
 *           one wins), duration_ps 3, stats 4 (XStat, repeated).
 *   XStat:  metadata_id 1, value oneof: double 2, uint64 3, int64 4, str 5,
 *           bytes 6, ref 7 (the last one wins).
 *
 * Two passes over the same bytes: pv_xplane_count sizes the columns, then
 * pv_xplane_decode fills them.  Both return 0, or 1 for anything they do not
 * decode exactly as protobuf would (malformed input, a wire type that does
 * not match the schema): the caller then uses the protobuf reference, which
 * reports the error.  Strings are not checked for UTF-8 here; the caller
 * decodes them.
 */

#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    int64_t n, pos;
} rd_t;

static int varint(rd_t *r, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->pos >= r->n) return 0;
        uint8_t b = r->p[r->pos++];
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Skip a field of wire type w; 0 on malformed input. */
static int skip(rd_t *r, int w) {
    uint64_t v;
    switch (w) {
    case 0: return varint(r, &v);
    case 1: if (r->n - r->pos < 8) return 0; r->pos += 8; return 1;
    case 5: if (r->n - r->pos < 4) return 0; r->pos += 4; return 1;
    case 2:
        if (!varint(r, &v) || v > (uint64_t)(r->n - r->pos)) return 0;
        r->pos += (int64_t)v;
        return 1;
    default: return 0; /* groups: not in this schema */
    }
}

/* A length-delimited value: its start and length; 0 on malformed input. */
static int lenval(rd_t *r, int64_t *start, int64_t *len) {
    uint64_t v;
    if (!varint(r, &v) || v > (uint64_t)(r->n - r->pos)) return 0;
    *start = r->pos;
    *len = (int64_t)v;
    r->pos += (int64_t)v;
    return 1;
}

typedef struct {
    /* per line */
    int64_t *line_id, *line_display_id, *line_ts, *line_name_off, *line_dname_off, *line_first;
    int32_t *line_name_len, *line_dname_len;
    /* per event (all, aggregated too) */
    int64_t *ev_meta, *ev_off, *ev_dur, *ev_first_stat;
    uint8_t *ev_agg;
    /* per stat */
    int64_t *st_meta, *st_val;
    int32_t *st_len;
    uint8_t *st_kind;
    /* the plane without its lines */
    uint8_t *rest;
    int64_t rest_len;
} out_t;

enum { K_NONE = 0, K_DOUBLE = 1, K_UINT64 = 2, K_INT64 = 3, K_STR = 4, K_BYTES = 5, K_REF = 6 };

static int stat_msg(rd_t *r, out_t *o, int64_t *nst) {
    int64_t k = *nst;
    uint64_t mid = 0, val = 0;
    int kind = K_NONE;
    int64_t len = 0;
    while (r->pos < r->n) {
        uint64_t key;
        if (!varint(r, &key)) return 0;
        if ((key >> 3) == 0 || (key >> 3) > 536870911) return 0; /* protobuf refuses these */
        int f = (int)(key >> 3), w = (int)(key & 7);
        if (f == 1) {
            if (w != 0 || !varint(r, &mid)) return 0;
        } else if (f == 2) {
            if (w != 1 || r->n - r->pos < 8) return 0;
            memcpy(&val, r->p + r->pos, 8); /* little-endian hosts (x86-64, arm64) */
            r->pos += 8;
            kind = K_DOUBLE;
        } else if (f == 3 || f == 4 || f == 7) {
            if (w != 0 || !varint(r, &val)) return 0;
            kind = f == 3 ? K_UINT64 : f == 4 ? K_INT64 : K_REF;
        } else if (f == 5 || f == 6) {
            int64_t s;
            if (w != 2 || !lenval(r, &s, &len)) return 0;
            if (len > INT32_MAX) return 0;
            val = (uint64_t)s;
            kind = f == 5 ? K_STR : K_BYTES;
        } else if (!skip(r, w)) {
            return 0;
        }
    }
    if (o) {
        o->st_meta[k] = (int64_t)mid;
        o->st_val[k] = (int64_t)val;
        o->st_kind[k] = (uint8_t)kind;
        o->st_len[k] = (int32_t)(kind == K_STR || kind == K_BYTES ? len : 0);
    }
    *nst = k + 1;
    return 1;
}

static int event_msg(rd_t *r, out_t *o, int64_t *nev, int64_t *nst) {
    int64_t e = *nev;
    uint64_t mid = 0, off = 0, occ = 0, dur = 0;
    int last = 0; /* 2: offset_ps, 5: num_occurrences */
    if (o) o->ev_first_stat[e] = *nst;
    while (r->pos < r->n) {
        uint64_t key;
        if (!varint(r, &key)) return 0;
        if ((key >> 3) == 0 || (key >> 3) > 536870911) return 0; /* protobuf refuses these */
        int f = (int)(key >> 3), w = (int)(key & 7);
        if (f == 1 || f == 2 || f == 3 || f == 5) {
            uint64_t v;
            if (w != 0 || !varint(r, &v)) return 0;
            if (f == 1) mid = v;
            else if (f == 2) off = v, last = 2;
            else if (f == 3) dur = v;
            else occ = v, last = 5;
        } else if (f == 4) {
            int64_t s, len;
            if (w != 2 || !lenval(r, &s, &len)) return 0;
            rd_t sub = {r->p, s + len, s};
            if (!stat_msg(&sub, o, nst)) return 0;
        } else if (!skip(r, w)) {
            return 0;
        }
    }
    if (o) {
        o->ev_meta[e] = (int64_t)mid;
        o->ev_off[e] = last == 2 ? (int64_t)off : 0;
        o->ev_dur[e] = (int64_t)dur;
        o->ev_agg[e] = (uint8_t)(last == 5 && occ != 0);
    }
    *nev = e + 1;
    return 1;
}

static int line_msg(rd_t *r, out_t *o, int64_t ln, int64_t *nev, int64_t *nst) {
    uint64_t id = 0, did = 0, ts = 0;
    int64_t name_off = 0, name_len = 0, dname_off = 0, dname_len = 0;
    if (o) o->line_first[ln] = *nev;
    while (r->pos < r->n) {
        uint64_t key;
        if (!varint(r, &key)) return 0;
        if ((key >> 3) == 0 || (key >> 3) > 536870911) return 0; /* protobuf refuses these */
        int f = (int)(key >> 3), w = (int)(key & 7);
        if (f == 1 || f == 10 || f == 3 || f == 9) {
            uint64_t v;
            if (w != 0 || !varint(r, &v)) return 0;
            if (f == 1) id = v;
            else if (f == 10) did = v;
            else if (f == 3) ts = v;
        } else if (f == 2 || f == 11) {
            int64_t s, len;
            if (w != 2 || !lenval(r, &s, &len) || len > INT32_MAX) return 0;
            if (f == 2) name_off = s, name_len = len;
            else dname_off = s, dname_len = len;
        } else if (f == 4) {
            int64_t s, len;
            if (w != 2 || !lenval(r, &s, &len)) return 0;
            rd_t sub = {r->p, s + len, s};
            if (!event_msg(&sub, o, nev, nst)) return 0;
        } else if (!skip(r, w)) {
            return 0;
        }
    }
    if (o) {
        o->line_id[ln] = (int64_t)id;
        o->line_display_id[ln] = (int64_t)did;
        o->line_ts[ln] = (int64_t)ts;
        o->line_name_off[ln] = name_off;
        o->line_name_len[ln] = (int32_t)name_len;
        o->line_dname_off[ln] = dname_off;
        o->line_dname_len[ln] = (int32_t)dname_len;
    }
    return 1;
}

static int plane(const uint8_t *p, int64_t n, out_t *o, int64_t *lines, int64_t *events, int64_t *stats) {
    rd_t r = {p, n, 0};
    int64_t ln = 0, nev = 0, nst = 0, rest = 0;
    while (r.pos < r.n) {
        int64_t at = r.pos;
        uint64_t key;
        if (!varint(&r, &key)) return 1;
        if ((key >> 3) == 0 || (key >> 3) > 536870911) return 1; /* protobuf refuses these */
        int f = (int)(key >> 3), w = (int)(key & 7);
        if (f == 3) {
            int64_t s, len;
            if (w != 2 || !lenval(&r, &s, &len)) return 1;
            rd_t sub = {p, s + len, s};
            if (!line_msg(&sub, o, ln, &nev, &nst)) return 1;
            ln++;
        } else {
            if (!skip(&r, w)) return 1;
            if (o) memcpy(o->rest + rest, p + at, (size_t)(r.pos - at));
            rest += r.pos - at;
        }
    }
    *lines = ln, *events = nev, *stats = nst;
    if (o) o->rest_len = rest;
    return 0;
}

/* Pass 1: how many lines, events (aggregated too) and stats; the bytes of the rest. */
int pv_xplane_count(const uint8_t *p, int64_t n, int64_t *counts) {
    int64_t lines, events, stats;
    if (plane(p, n, NULL, &lines, &events, &stats)) return 1;
    counts[0] = lines, counts[1] = events, counts[2] = stats;
    return 0;
}

/* Pass 2: fill the columns (sized by pass 1; rest: n bytes). */
int pv_xplane_decode(const uint8_t *p, int64_t n, int64_t *line_id, int64_t *line_display_id, int64_t *line_ts,
                     int64_t *line_name_off, int32_t *line_name_len, int64_t *line_dname_off,
                     int32_t *line_dname_len, int64_t *line_first, int64_t *ev_meta, int64_t *ev_off,
                     int64_t *ev_dur, uint8_t *ev_agg, int64_t *ev_first_stat, int64_t *st_meta, int64_t *st_val,
                     int32_t *st_len, uint8_t *st_kind, uint8_t *rest, int64_t *rest_len) {
    out_t o = {line_id, line_display_id, line_ts, line_name_off, line_dname_off, line_first, line_name_len,
               line_dname_len, ev_meta, ev_off, ev_dur, ev_first_stat, ev_agg, st_meta, st_val, st_len, st_kind,
               rest, 0};
    int64_t lines, events, stats;
    if (plane(p, n, &o, &lines, &events, &stats)) return 1;
    *rest_len = o.rest_len;
    return 0;
}
