/*
 * perfetto_event.c -- one TrackEvent of a packet -> rows of the walker's columns, by the
 * rules of Reader._event in jupyter_profview/formats/perfetto/reader.py (the reference):
 * its timestamp's clock, its track (explicit, the defaults', or the legacy thread's),
 * extra counter values, slice begin/end stacks per track, legacy phases, debug annotations
 * (kept as bytes with their interned names resolved, decoded by Python on demand) and flows.
 * The whole event is parsed and checked before anything of the state changes.
 */

#include <stdio.h>

#include "perfetto_state.h"

#define TYPE_UNSPECIFIED 0
#define TYPE_SLICE_BEGIN 1
#define TYPE_SLICE_END 2
#define TYPE_INSTANT 3
#define TYPE_COUNTER 4
#define SLICE 0
#define INSTANT 1

typedef struct {
    int32_t type;
    int has_track;
    uint64_t track_uuid;
    uint64_t name_iid;
    int has_name;
    span_t name;
    int has_cv, has_dcv;
    int64_t cv;
    double dcv;
    int has_legacy;
    span_t legacy;
    uint64_t l_name_iid;
    int32_t phase;
    int64_t dur_us;
    int has_pid_o, has_tid_o;
    int32_t pid_o, tid_o;
} te_t;

static int rep_varint(pf_walker *w, buf_t *b, const field_t *f) {
    if (f->wt == 0) {
        PUT(*b, uint64_t, f->v);
        return 0;
    }
    if (f->wt != 2) return pf_unsup(w, "repeated varint field of another wire type");
    size_t p = 0;
    while (p < f->s.n) {
        uint64_t v;
        if (rd_varint(f->s.p, f->s.n, &p, &v) < 0) return pf_unsup(w, "packed varints cut");
        PUT(*b, uint64_t, v);
    }
    return 0;
}

static int rep_fixed64(pf_walker *w, buf_t *b, const field_t *f) {
    if (f->wt == 1) {
        PUT(*b, uint64_t, f->v);
        return 0;
    }
    if (f->wt != 2 || f->s.n % 8) return pf_unsup(w, "repeated 64-bit field of another wire type");
    return buf_append(b, f->s.p, f->s.n) ? 0 : PF_NOMEM;
}


/* Check one DebugAnnotation (recursively) and note its interned ids (kind 2 names, 3 strings). */
static int check_annotation(pf_walker *w, span_t s, int depth) {
    if (depth > 60) return pf_unsup(w, "debug annotations nested too deep");
    size_t pos = 0;
    field_t f;
    int r;
    while ((r = next_field(s.p, s.n, &pos, &f)) > 0) {
        switch (f.num) {
        case 1: case 17:
            WANT(0);
            PUT(w->v_res, uint64_t, f.num == 1 ? 2 : 3);
            PUT(w->v_res, uint64_t, f.v);
            break;
        case 2: case 3: case 4: case 7: WANT(0); break;
        case 5: WANT(1); break;
        case 6: case 9: case 10: case 16: WANT(2); STR_OK(); break;
        case 11: case 12: WANT(2); TRY(check_annotation(w, f.s, depth + 1)); break;
        default: break;
        }
    }
    return r < 0 ? pf_unsup(w, "a debug annotation that may not parse") : 0;
}

static int parse_legacy(pf_walker *w, te_t *e) {
    size_t pos = 0;
    field_t f;
    int r;
    while ((r = next_field(e->legacy.p, e->legacy.n, &pos, &f)) > 0) {
        switch (f.num) {
        case 1: WANT(0); e->l_name_iid = f.v; break;
        case 2: WANT(0); e->phase = (int32_t)(uint32_t)f.v; break;
        case 3: WANT(0); e->dur_us = (int64_t)f.v; break;
        case 6: case 8: case 13: case 14: WANT(0); break;
        case 18: WANT(0); e->has_pid_o = 1; e->pid_o = (int32_t)(uint32_t)f.v; break;
        case 19: WANT(0); e->has_tid_o = 1; e->tid_o = (int32_t)(uint32_t)f.v; break;
        default: break;
        }
    }
    return r < 0 ? pf_unsup(w, "a legacy event that may not parse") : 0;
}

static int parse_event(pf_walker *w, const uint8_t *b, size_t n, te_t *e) {
    memset(e, 0, sizeof *e);
    w->v_cat.len = w->v_cats.len = w->v_xu.len = w->v_xv.len = w->v_xdu.len = w->v_xdv.len = 0;
    w->v_flow.len = w->v_tflow.len = w->v_ann.len = w->v_res.len = 0;
    size_t pos = 0;
    field_t f;
    int r;
    while ((r = next_field(b, n, &pos, &f)) > 0) {
        switch (f.num) {
        case 3: TRY(rep_varint(w, &w->v_cat, &f)); break;
        case 22: WANT(2); STR_OK(); PUT(w->v_cats, span_t, f.s); break;
        case 10: WANT(0); e->name_iid = f.v; break;
        case 23: WANT(2); STR_OK(); e->has_name = 1; e->name = f.s; break;
        case 9: WANT(0); e->type = (int32_t)(uint32_t)f.v; break;
        case 11: WANT(0); e->has_track = 1; e->track_uuid = f.v; break;
        case 30: WANT(0); e->has_cv = 1; e->cv = (int64_t)f.v; break;
        case 44: WANT(1); e->has_dcv = 1; memcpy(&e->dcv, &f.v, 8); break;
        case 31: TRY(rep_varint(w, &w->v_xu, &f)); break;
        case 12: TRY(rep_varint(w, &w->v_xv, &f)); break;
        case 45: TRY(rep_varint(w, &w->v_xdu, &f)); break;
        case 46: TRY(rep_fixed64(w, &w->v_xdv, &f)); break;
        case 47: TRY(rep_fixed64(w, &w->v_flow, &f)); break;
        case 48: TRY(rep_fixed64(w, &w->v_tflow, &f)); break;
        case 36: TRY(rep_varint(w, &w->scratch, &f)); w->scratch.len = 0; break;
        case 4:
            WANT(2);
            TRY(check_annotation(w, f.s, 0));
            PUT(w->v_ann, span_t, f.s);
            break;
        case 6:
            WANT(2);
            if (e->has_legacy) return pf_unsup(w, "a legacy event given twice");
            e->has_legacy = 1;
            e->legacy = f.s;
            TRY(parse_legacy(w, e));
            break;
        default: break;
        }
    }
    return r < 0 ? pf_unsup(w, "a track event that may not parse") : 0;
}

/* -- apply ------------------------------------------------------------------------------- */

static int32_t interned_raw(pf_walker *w, size_t seq_index, const seq_t *seq, int kind, uint64_t iid) {
    int64_t *v = map_get(&w->interned, ((uint64_t)seq_index << 34) | ((uint64_t)seq->epoch << 2) | (uint64_t)kind, iid);
    return v ? (int32_t)*v : -1;
}

/* Code in `out` of raw string code `raw` (the event strings' table), -1 out of memory. */
static int32_t out_of_raw(pf_walker *w, int32_t raw) {
    int32_t *map = ITEMS(w->raw_out, int32_t);
    if (map[raw] >= 0) return map[raw];
    const int64_t *offs = (const int64_t *)w->raw.offsets.data;
    const int32_t *lens = (const int32_t *)w->raw.lengths.data;
    int32_t cache = -1;
    int32_t code = cached_lookup(&w->out, &cache, w->raw.arena.data + offs[raw], (size_t)lens[raw], 0);
    ITEMS(w->raw_out, int32_t)[raw] = code;
    return code;
}

static int32_t out_bytes(pf_walker *w, const uint8_t *p, size_t n) {
    int32_t cache = -1;
    return cached_lookup(&w->out, &cache, n ? p : (const uint8_t *)"", n, 0);
}

static int scratch_raw_or_unknown(pf_walker *w, int32_t raw, const char *what, uint64_t iid) {
    if (raw >= 0) {
        const int64_t *offs = (const int64_t *)w->raw.offsets.data;
        const int32_t *lens = (const int32_t *)w->raw.lengths.data;
        return buf_append(&w->scratch, w->raw.arena.data + offs[raw], (size_t)lens[raw]) ? 0 : PF_NOMEM;
    }
    char text[80];
    int k = snprintf(text, sizeof text, "<unknown %s iid %llu>", what, (unsigned long long)iid);
    return buf_append(&w->scratch, (const uint8_t *)text, (size_t)k) ? 0 : PF_NOMEM;
}

static int32_t name_code(pf_walker *w, const te_t *e, const seq_t *seq, size_t si) {
    uint64_t iid = e->name_iid ? e->name_iid : (!e->has_name && e->has_legacy ? e->l_name_iid : 0);
    if (iid) {
        int32_t raw = interned_raw(w, si, seq, 0, iid);
        if (raw >= 0) return out_of_raw(w, raw);
        w->scratch.len = 0;
        if (scratch_raw_or_unknown(w, -1, "name", iid)) return -1;
        return out_bytes(w, w->scratch.data, w->scratch.len);
    }
    if (e->has_name) return out_bytes(w, e->name.p, e->name.n);
    return out_bytes(w, NULL, 0);
}

static int32_t cat_code(pf_walker *w, const seq_t *seq, size_t si) {
    size_t n = NITEMS(w->v_cat, uint64_t);
    const uint64_t *iids = ITEMS(w->v_cat, uint64_t);
    if (n == 1) {
        int32_t raw = interned_raw(w, si, seq, 1, iids[0]);
        if (raw >= 0) return out_of_raw(w, raw);
    }
    w->scratch.len = 0;
    if (n) {
        for (size_t i = 0; i < n; i++) {
            if (i && !buf_append(&w->scratch, (const uint8_t *)",", 1)) return -1;
            if (scratch_raw_or_unknown(w, interned_raw(w, si, seq, 1, iids[i]), "category", iids[i])) return -1;
        }
    } else {
        const span_t *cats = ITEMS(w->v_cats, span_t);
        for (size_t i = 0; i < NITEMS(w->v_cats, span_t); i++) {
            if (i && !buf_append(&w->scratch, (const uint8_t *)",", 1)) return -1;
            if (!buf_append(&w->scratch, cats[i].p, cats[i].n)) return -1;
        }
    }
    return out_bytes(w, w->scratch.data, w->scratch.len);
}

static int32_t thread_key(pf_walker *w, int64_t pid, int64_t tid) {
    int32_t t = pf_track(w, 1, 0, pid, tid);
    if (t >= 0) {
        w->tracks[t].has_pid = w->tracks[t].has_tid = 1;
        w->tracks[t].pid = pid;
        w->tracks[t].tid = tid;
    }
    return t;
}

static int32_t legacy_track(pf_walker *w, const te_t *e, const seq_t *seq) {
    if (e->has_legacy && e->has_tid_o) {
        int64_t pid = e->has_pid_o ? e->pid_o : (seq->has_thread ? seq->th_pid : 0);
        return thread_key(w, pid, e->tid_o);
    }
    if (seq->has_thread) return thread_key(w, seq->th_pid, seq->th_tid);
    int32_t t = pf_track(w, 3, 0, 0, 0);
    if (t >= 0) {
        int32_t g = pf_raw(w, (const uint8_t *)"Global", 6);
        if (g < 0) return -1;
        w->tracks[t].name = g;
    }
    return t;
}

static int sample(pf_walker *w, int32_t track, num_v value, int64_t ts, int64_t dom, const seq_t *seq, size_t si) {
    const track_t *info = &w->tracks[track];
    if (info->incremental) {
        int fresh;
        int64_t *slot = map_put(&w->counters, ((uint64_t)si << 32) | seq->epoch, (uint64_t)track,
                                (int64_t)NITEMS(w->counter_vals, num_v), &fresh);
        if (!slot) return PF_NOMEM;
        if (fresh) {
            num_v zero = {0, 0, 0.0};
            PUT(w->counter_vals, num_v, zero);
        }
        num_v *acc = &ITEMS(w->counter_vals, num_v)[*slot];
        if (!acc->is_dbl && !value.is_dbl) {
            if (__builtin_add_overflow(acc->i, value.i, &acc->i)) return pf_unsup(w, "counter sum past int64");
        } else {
            acc->d = (acc->is_dbl ? acc->d : (double)acc->i) + (value.is_dbl ? value.d : (double)value.i);
            acc->is_dbl = 1;
        }
        value = *acc;
    }
    double out;
    if (value.is_dbl) {
        out = value.d * (double)info->mult;
    } else {
        int64_t prod;
        if (__builtin_mul_overflow(value.i, info->mult, &prod)) return pf_unsup(w, "counter value past int64");
        out = (double)prod;
    }
    PUT(w->col[K_CT_TRACK], int32_t, track);
    PUT(w->col[K_CT_TIME], int64_t, ts);
    PUT(w->col[K_CT_DOM], int16_t, (int16_t)dom);
    PUT(w->col[K_CT_VALUE], double, out);
    return 0;
}

static int64_t domain(pf_walker *w, int64_t sid_plus1, uint32_t cid) {
    if (w->has_last_dom && w->last_dom_a == (uint64_t)sid_plus1 && w->last_dom_b == cid) return w->last_dom;
    int fresh;
    int64_t *v = map_put(&w->domain_of, (uint64_t)sid_plus1, cid, w->ndomain + 1, &fresh);
    if (!v) return -1;
    if (fresh) {
        if (w->ndomain >= INT16_MAX) { /* codes are int16: the file goes to the reader, which refuses it */
            pf_unsup(w, "more than 32,767 clock domains");
            return -2;
        }
        w->ndomain++;
        int64_t pair[2] = {sid_plus1 - 1, cid};
        if (!buf_append(&w->col[K_DOMAINS], (const uint8_t *)pair, sizeof pair)) return -1;
    }
    w->has_last_dom = 1;
    w->last_dom_a = (uint64_t)sid_plus1;
    w->last_dom_b = cid;
    w->last_dom = *v;
    return *v;
}

int64_t pf_domain(pf_walker *w, int64_t sid_plus1, uint32_t cid) { return domain(w, sid_plus1, cid); }

static int event_time(pf_walker *w, int has_ts, uint64_t ts, uint32_t clock_id, seq_t *seq, int64_t *out,
                      int64_t *dom) {
    if (!has_ts) {
        *out = w->latest_ts;
        *dom = w->latest_dom;
        return 0;
    }
    uint32_t cid = clock_id ? clock_id : seq->clock;
    int64_t value;
    if (ts > (uint64_t)INT64_MAX) return pf_unsup(w, "timestamp past int64");
    value = (int64_t)ts;
    if (!cid) {
        *dom = 0;
    } else if (cid >= 64 && cid <= 127) {
        int k = (int)cid - 64;
        uint64_t unit = seq->cl_set[k] ? seq->cl_unit[k] : 1;
        if (unit > (uint64_t)INT64_MAX || __builtin_mul_overflow(value, (int64_t)unit, &value))
            return pf_unsup(w, "timestamp times unit past int64");
        if (seq->cl_set[k] && seq->cl_incr[k]) {
            if (__builtin_add_overflow(seq->cl_last[k], value, &value)) return pf_unsup(w, "clock past int64");
            seq->cl_last[k] = value;
        }
        *dom = domain(w, (int64_t)seq->sid + 1, cid);
    } else {
        *dom = domain(w, 0, cid);
    }
    if (*dom < 0) return *dom == -2 ? PF_UNSUP : PF_NOMEM;
    *out = value;
    w->latest_ts = value;
    w->latest_dom = *dom;
    return 0;
}

static int flows(pf_walker *w, int64_t row, int at_end) {
    const buf_t *lists[2] = {&w->v_flow, &w->v_tflow};
    for (int t = 0; t < 2; t++) {
        const uint64_t *ids = ITEMS(*lists[t], uint64_t);
        for (size_t i = 0; i < NITEMS(*lists[t], uint64_t); i++) {
            PUT(w->col[K_FLOW_ROW], int32_t, (int32_t)row);
            PUT(w->col[K_FLOW_ID], uint64_t, ids[i]);
            PUT(w->col[K_FLOW_END], int8_t, (int8_t)t);
            PUT(w->col[K_FLOW_AT_END], int8_t, (int8_t)at_end);
        }
    }
    return 0;
}

static int annotations(pf_walker *w, int64_t row, const seq_t *seq, size_t si, const uint8_t *te, size_t te_n) {
    PUT(w->col[K_ARG_ROW], int32_t, (int32_t)row);
    if (w->file_args && !w->inner) { /* the TrackEvent is in the file: read back from there when asked */
        PUT(w->col[K_ARG_SPAN], int64_t, -(w->win_off + (int64_t)(te - w->win)) - 1);
        PUT(w->col[K_ARG_SPAN], int64_t, (int64_t)te_n);
    } else {
        PUT(w->col[K_ARG_SPAN], int64_t, (int64_t)w->col[K_BLOB].len);
        const span_t *ann = ITEMS(w->v_ann, span_t);
        size_t start = w->col[K_BLOB].len;
        for (size_t i = 0; i < NITEMS(w->v_ann, span_t); i++) {
            uint8_t head[11];
            size_t k = 0;
            head[k++] = 0x22;
            size_t n = ann[i].n;
            do {
                head[k++] = (uint8_t)((n & 0x7F) | (n > 0x7F ? 0x80 : 0));
                n >>= 7;
            } while (n);
            if (!buf_append(&w->col[K_BLOB], head, k) || !buf_append(&w->col[K_BLOB], ann[i].p, ann[i].n))
                return PF_NOMEM;
        }
        PUT(w->col[K_ARG_SPAN], int64_t, (int64_t)(w->col[K_BLOB].len - start));
    }
    /* the group's (kind, iid, raw code) triples; a list seen before is shared, not repeated */
    w->v_trip.len = 0;
    const uint64_t *res = ITEMS(w->v_res, uint64_t);
    for (size_t i = 0; i + 1 < NITEMS(w->v_res, uint64_t); i += 2) {
        PUT(w->v_trip, int64_t, (int64_t)res[i] - 2);
        PUT(w->v_trip, int64_t, (int64_t)res[i + 1]);
        PUT(w->v_trip, int64_t, interned_raw(w, si, seq, (int)res[i], res[i + 1]));
    }
    uint64_t hash = 14695981039346656037ull; /* FNV-1a */
    for (size_t i = 0; i < w->v_trip.len; i++) hash = (hash ^ w->v_trip.data[i]) * 1099511628211ull;
    int64_t count = (int64_t)NITEMS(w->v_trip, int64_t) / 3, first = (int64_t)NITEMS(w->col[K_RES], int64_t) / 3;
    int fresh;
    int64_t *seen = map_put(&w->res_of, hash, (uint64_t)count, first, &fresh);
    if (!seen) return PF_NOMEM;
    if (!fresh && !memcmp(ITEMS(w->col[K_RES], int64_t) + 3 * *seen, w->v_trip.data, w->v_trip.len)) {
        first = *seen;
    } else {
        *seen = first;
        if (!buf_append(&w->col[K_RES], w->v_trip.data, w->v_trip.len)) return PF_NOMEM;
    }
    PUT(w->col[K_ARG_RES], int64_t, first);
    PUT(w->col[K_ARG_RES], int64_t, count);
    return 0;
}

int pf_event(pf_walker *w, const uint8_t *b, size_t n, int has_ts, uint64_t ts, uint32_t clock_id, seq_t *seq,
             size_t si) {
    te_t e;
    TRY(parse_event(w, b, n, &e));
    if (e.has_legacy && (e.phase < 0 || e.phase > 0x10FFFF)) return pf_unsup(w, "legacy phase out of range");
    int64_t t = 0, dom = 0;
    TRY(event_time(w, has_ts, ts, clock_id, seq, &t, &dom));
    int32_t kind = e.type, phase = 0;
    if (kind == TYPE_UNSPECIFIED) {
        if (!e.has_legacy) {
            w->q[Q_UNSPEC]++;
            return 0;
        }
        phase = e.phase;
    }
    int32_t track;
    if (e.has_track)
        track = e.track_uuid ? pf_track(w, 0, e.track_uuid, 0, 0) : legacy_track(w, &e, seq);
    else if (seq->default_track >= 0)
        track = seq->default_track;
    else
        track = legacy_track(w, &e, seq);
    if (track < 0) return PF_NOMEM;
    size_t nxv = NITEMS(w->v_xv, int64_t);
    if (nxv) {
        size_t nxu = NITEMS(w->v_xu, uint64_t);
        buf_t *codes_buf = &w->scratch;
        codes_buf->len = 0;
        if (nxu) {
            for (size_t i = 0; i < nxu; i++) {
                int32_t c = pf_track(w, 0, ITEMS(w->v_xu, uint64_t)[i], 0, 0);
                if (c < 0) return PF_NOMEM;
                PUT(*codes_buf, int32_t, c);
            }
        } else if (!buf_append(codes_buf, w->seqs[si].extra_tracks.data, w->seqs[si].extra_tracks.len)) {
            return PF_NOMEM;
        }
        size_t ncodes = NITEMS(*codes_buf, int32_t);
        if (ncodes < nxv) w->q[Q_EXTRA_NO_TRACK] += (int64_t)(nxv - ncodes);
        for (size_t i = 0; i < nxv && i < ncodes; i++) {
            num_v v = {0, ITEMS(w->v_xv, int64_t)[i], 0.0};
            TRY(sample(w, ITEMS(w->scratch, int32_t)[i], v, t, dom, seq, si));
        }
    }
    size_t nxd = NITEMS(w->v_xdv, double);
    if (nxd) {
        const uint64_t *uuids = ITEMS(w->v_xdu, uint64_t);
        size_t nu = NITEMS(w->v_xdu, uint64_t);
        if (!nu && seq->has_defaults) {
            uuids = ITEMS(seq->extra_dbl, uint64_t);
            nu = NITEMS(seq->extra_dbl, uint64_t);
        }
        if (nu < nxd) w->q[Q_EXTRA_NO_TRACK] += (int64_t)(nxd - nu);
        for (size_t i = 0; i < nxd && i < nu; i++) {
            int32_t c = pf_track(w, 0, uuids[i], 0, 0);
            if (c < 0) return PF_NOMEM;
            num_v v = {1, 0, ITEMS(w->v_xdv, double)[i]};
            TRY(sample(w, c, v, t, dom, seq, si));
        }
    }
    int64_t row;
    int at_end = 0;
    if (kind == TYPE_SLICE_END || phase == 'E') {
        at_end = 1;
        int64_t *sidx = map_get(&w->stacks, (uint64_t)track, 0);
        buf_t *stack = sidx ? &w->stack_bufs[*sidx] : NULL;
        int64_t n_order = (int64_t)(NITEMS(w->col[K_END_ORDER], int32_t) + NITEMS(w->col[K_EV_ORDER], int32_t));
        if (n_order >= INT32_MAX) return pf_unsup(w, "more than 2**31 slice begins and ends");
        PUT(w->col[K_END_TRACK], int32_t, track);
        PUT(w->col[K_END_TIME], int64_t, t);
        PUT(w->col[K_END_DOM], int16_t, (int16_t)dom);
        PUT(w->col[K_END_ORDER], int32_t, (int32_t)n_order);
        if (!stack || stack->len == 0) {
            PUT(w->col[K_END_ROW], int32_t, -1);
            w->q[Q_UNMATCHED]++;
            return 0;
        }
        stack->len -= sizeof(int64_t);
        memcpy(&row, stack->data + stack->len, sizeof row);
        PUT(w->col[K_END_ROW], int32_t, (int32_t)row);
        ITEMS(w->col[K_EV_END], int64_t)[row] = t;
        ITEMS(w->col[K_EV_END_DOM], int16_t)[row] = (int16_t)dom;
        w->n_events++;
    } else if (kind == TYPE_COUNTER) {
        num_v v = {e.has_dcv, e.cv, e.dcv};
        TRY(sample(w, track, v, t, dom, seq, si));
        w->n_counters++;
        return 0;
    } else if (kind == TYPE_SLICE_BEGIN || kind == TYPE_INSTANT || phase == 'I' || phase == 'i' || phase == 'R' ||
               phase == 'n' || phase == 'B' || phase == 'X') {
        row = (int64_t)NITEMS(w->col[K_EV_KIND], int8_t);
        int64_t n_order = (int64_t)(NITEMS(w->col[K_END_ORDER], int32_t) + NITEMS(w->col[K_EV_ORDER], int32_t));
        if (n_order >= INT32_MAX) return pf_unsup(w, "more than 2**31 slice begins and ends");
        int32_t nc = name_code(w, &e, seq, si);
        int32_t cc = nc < 0 ? -1 : cat_code(w, seq, si);
        if (cc < 0) return PF_NOMEM;
        PUT(w->col[K_EV_TRACK], int32_t, track);
        PUT(w->col[K_EV_NAME], int32_t, nc);
        PUT(w->col[K_EV_CAT], int32_t, cc);
        PUT(w->col[K_EV_START], int64_t, t);
        PUT(w->col[K_EV_START_DOM], int16_t, (int16_t)dom);
        PUT(w->col[K_EV_ORDER], int32_t, (int32_t)n_order);
        if (kind == TYPE_SLICE_BEGIN || phase == 'B') {
            PUT(w->col[K_EV_KIND], int8_t, SLICE);
            PUT(w->col[K_EV_STACKED], int8_t, 1);
            PUT(w->col[K_EV_END], int64_t, t);
            PUT(w->col[K_EV_END_DOM], int16_t, -1);
            int fresh;
            int64_t *sidx = map_put(&w->stacks, (uint64_t)track, 0, (int64_t)w->nstack, &fresh);
            if (!sidx) return PF_NOMEM;
            if (fresh) {
                if (w->nstack == w->capstack) {
                    size_t cap = w->capstack ? w->capstack * 2 : 64;
                    buf_t *p = (buf_t *)realloc(w->stack_bufs, cap * sizeof *p);
                    if (!p) return PF_NOMEM;
                    w->stack_bufs = p;
                    w->capstack = cap;
                }
                memset(&w->stack_bufs[w->nstack++], 0, sizeof(buf_t));
            }
            PUT(w->stack_bufs[*sidx], int64_t, row);
        } else {
            int complete = phase == 'X';
            int64_t end = t;
            if (complete) {
                int64_t ns;
                if (__builtin_mul_overflow(e.dur_us, (int64_t)1000, &ns) || __builtin_add_overflow(t, ns, &end))
                    return pf_unsup(w, "legacy duration past int64");
            }
            PUT(w->col[K_EV_KIND], int8_t, complete ? SLICE : INSTANT);
            PUT(w->col[K_EV_STACKED], int8_t, 0);
            PUT(w->col[K_EV_END], int64_t, end);
            PUT(w->col[K_EV_END_DOM], int16_t, (int16_t)dom);
        }
        w->n_events++;
    } else {
        int fresh;
        int64_t *count = map_put(&w->stacks, 1ull << 63, (uint64_t)phase, 0, &fresh); /* phase counts */
        if (!count) return PF_NOMEM;
        if (fresh) {
            int64_t pair[2] = {phase, 0};
            if (!buf_append(&w->col[K_PHASES], (const uint8_t *)pair, sizeof pair)) return PF_NOMEM;
            *count = (int64_t)NITEMS(w->col[K_PHASES], int64_t) / 2 - 1;
        }
        ITEMS(w->col[K_PHASES], int64_t)[2 * *count + 1]++;
        return 0;
    }
    if (NITEMS(w->v_ann, span_t)) TRY(annotations(w, row, seq, si, b, n));
    if (w->v_flow.len || w->v_tflow.len) TRY(flows(w, row, at_end));
    return 0;
}
