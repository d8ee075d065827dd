/*
 * perfetto_scan.c -- the Perfetto protobuf walker: the packets of a Trace in file order
 * with Perfetto's per-sequence state rules, the same as Reader.packets in
 * jupyter_profview/formats/perfetto/reader.py (the reference; see it for the rules):
 * interning per trusted_packet_sequence_id, SEQ_INCREMENTAL_STATE_CLEARED /
 * SEQ_NEEDS_INCREMENTAL_STATE, trace_packet_defaults, clock snapshots and sequence clocks,
 * track and legacy descriptors; events are perfetto_event.c, the shared tables perfetto_state.c.
 *
 * The outer framing is wire.batches' (0x0a, length, packet), its damage recorded (kind,
 * offset, value) for Python to word.  compressed_packets: the walk stops with PF_INFLATE and
 * the bundle's span; Python inflates it, hands the packets to pv_pf_inner, then resumes.
 * Anything protobuf might read otherwise (malformed or unusual encodings, values past int64,
 * strings that are not UTF-8) is PF_UNSUP: the file is then read by the Python reader.
 */

#include "perfetto_state.h"

#define SEQ_CLEARED 1
#define SEQ_NEEDS 2

static seq_t *sequence(pf_walker *w, uint32_t sid, size_t *index) {
    if (w->has_last_seq && w->last_sid == sid) {
        *index = w->last_seq;
        return &w->seqs[w->last_seq];
    }
    int fresh;
    int64_t *v = map_put(&w->seq_of, sid, 0, (int64_t)w->nseq, &fresh);
    if (!v) return NULL;
    if (fresh) {
        if (w->nseq == w->capseq) {
            size_t cap = w->capseq ? w->capseq * 2 : 16;
            seq_t *p = (seq_t *)realloc(w->seqs, cap * sizeof *p);
            if (!p) return NULL;
            w->seqs = p;
            w->capseq = cap;
        }
        seq_t *s = &w->seqs[w->nseq++];
        memset(s, 0, sizeof *s);
        s->sid = sid;
        s->valid = 1;
        s->default_track = -1;
    }
    *index = (size_t)*v;
    w->has_last_seq = 1;
    w->last_sid = sid;
    w->last_seq = (size_t)*v;
    return &w->seqs[*v];
}

static void seq_clear(seq_t *s) {
    s->valid = 1;
    s->epoch++;
    s->has_defaults = 0;
    s->clock = 0;
    s->default_track = -1;
    s->extra_tracks.len = s->extra_dbl.len = 0;
}

/* -- packet parts ------------------------------------------------------------------------- */

#define ONCE(flag) \
    do { \
        if (flag) return pf_unsup(w, "a message field given twice"); \
        flag = 1; \
    } while (0)
#define FIELDS(span) \
    size_t pos = 0; \
    field_t f; \
    int r; \
    while ((r = next_field((span).p, (span).n, &pos, &f)) > 0)
#define END_FIELDS(what) return r < 0 ? pf_unsup(w, what " that may not parse") : 0

typedef struct {
    int has_ts;
    uint64_t ts;
    uint32_t clock_id, sid, flags, ppd;
    int isc;
    span_t te, interned, defaults, snap, td, comp, procd, thd;
    int has_te, has_interned, has_defaults, has_snap, has_td, has_comp, has_procd, has_thd;
} pkt_t;

static int parse_packet(pf_walker *w, span_t s, pkt_t *p) {
    memset(p, 0, sizeof *p);
    FIELDS(s) {
        switch (f.num) {
        case 8: WANT(0); p->has_ts = 1; p->ts = f.v; break;
        case 58: WANT(0); p->clock_id = (uint32_t)f.v; break;
        case 10: WANT(0); p->sid = (uint32_t)f.v; break;
        case 13: WANT(0); p->flags = (uint32_t)f.v; break;
        case 41: WANT(0); p->isc = f.v != 0; break;
        case 42: WANT(0); p->ppd = (uint32_t)f.v; break;
        case 87: case 79: WANT(0); break;
        case 11: WANT(2); ONCE(p->has_te); p->te = f.s; break;
        case 12: WANT(2); ONCE(p->has_interned); p->interned = f.s; break;
        case 59: WANT(2); ONCE(p->has_defaults); p->defaults = f.s; break;
        case 6: WANT(2); ONCE(p->has_snap); p->snap = f.s; break;
        case 60: WANT(2); ONCE(p->has_td); p->td = f.s; break;
        case 50: WANT(2); p->has_comp = 1; p->comp = f.s; break;
        case 43: WANT(2); ONCE(p->has_procd); p->procd = f.s; break;
        case 44: WANT(2); ONCE(p->has_thd); p->thd = f.s; break;
        default: break;
        }
    }
    END_FIELDS("a packet");
}

/* One interned entry (iid, name): kind 3 is bytes, the others strings. */
static int intern_entry(pf_walker *w, span_t s, int kind, int apply, size_t si, const seq_t *seq) {
    uint64_t iid = 0;
    span_t name = {(const uint8_t *)"", 0};
    FIELDS(s) {
        if (f.num == 1) {
            WANT(0);
            iid = f.v;
        } else if (f.num == 2) {
            WANT(2);
            if (kind != 3) STR_OK();
            name = f.s;
        }
    }
    if (r < 0) return pf_unsup(w, "an interned entry that may not parse");
    if (!apply) return 0;
    int32_t code = pf_raw(w, name.p, name.n);
    if (code < 0) return PF_NOMEM;
    int fresh;
    int64_t *v = map_put(&w->interned, ((uint64_t)si << 34) | ((uint64_t)seq->epoch << 2) | (uint64_t)kind, iid,
                         code, &fresh);
    if (!v) return PF_NOMEM;
    *v = code;
    return 0;
}

static int intern(pf_walker *w, span_t s, int apply, size_t si, const seq_t *seq) {
    FIELDS(s) {
        int kind = f.num == 2 ? 0 : f.num == 1 ? 1 : f.num == 3 ? 2 : f.num == 29 ? 3 : -1;
        if (kind < 0) continue;
        WANT(2);
        TRY(intern_entry(w, f.s, kind, apply, si, seq));
    }
    END_FIELDS("interned data");
}

static int defaults(pf_walker *w, span_t s, seq_t *seq) {
    uint32_t clock = 0;
    uint64_t uuid = 0;
    int has_ted = 0;
    buf_t *ex = &w->v_xu, *dbl = &w->v_xdu;
    ex->len = dbl->len = 0;
    FIELDS(s) {
        if (f.num == 58) {
            WANT(0);
            clock = (uint32_t)f.v;
        } else if (f.num == 11) {
            WANT(2);
            ONCE(has_ted);
            size_t p2 = 0;
            field_t g;
            int r2;
            while ((r2 = next_field(f.s.p, f.s.n, &p2, &g)) > 0) {
                if (g.num == 11) {
                    if (g.wt != 0) return pf_unsup(w, "a known field with another wire type");
                    uuid = g.v;
                } else if (g.num == 31 || g.num == 45) {
                    buf_t *to = g.num == 31 ? ex : dbl;
                    if (g.wt == 0) {
                        PUT(*to, uint64_t, g.v);
                    } else if (g.wt == 2) {
                        size_t q = 0;
                        while (q < g.s.n) {
                            uint64_t v;
                            if (rd_varint(g.s.p, g.s.n, &q, &v) < 0) return pf_unsup(w, "packed varints cut");
                            PUT(*to, uint64_t, v);
                        }
                    } else {
                        return pf_unsup(w, "a known field with another wire type");
                    }
                }
            }
            if (r2 < 0) return pf_unsup(w, "track event defaults that may not parse");
        }
    }
    if (r < 0) return pf_unsup(w, "packet defaults that may not parse");
    seq->has_defaults = 1;
    seq->clock = clock;
    seq->default_track = uuid ? pf_track(w, 0, uuid, 0, 0) : -1;
    if (uuid && seq->default_track < 0) return PF_NOMEM;
    seq->extra_tracks.len = 0;
    for (size_t i = 0; i < NITEMS(*ex, uint64_t); i++) {
        int32_t t = pf_track(w, 0, ITEMS(*ex, uint64_t)[i], 0, 0);
        if (t < 0) return PF_NOMEM;
        PUT(seq->extra_tracks, int32_t, t);
    }
    seq->extra_dbl.len = 0;
    if (!buf_append(&seq->extra_dbl, dbl->data, dbl->len)) return PF_NOMEM;
    return 0;
}

int64_t pf_domain(pf_walker *w, int64_t sid_plus1, uint32_t cid);

static int snapshot(pf_walker *w, span_t s, seq_t *seq) {
    int32_t primary = 0;
    int64_t first = (int64_t)NITEMS(w->col[K_SNAP_PAIRS], int64_t) / 2, count = 0;
    FIELDS(s) {
        if (f.num == 2) {
            WANT(0);
            primary = (int32_t)(uint32_t)f.v;
        } else if (f.num == 1) {
            WANT(2);
            uint32_t cid = 0;
            uint64_t ts = 0, unit = 0;
            int incr = 0;
            size_t p2 = 0;
            field_t g;
            int r2;
            while ((r2 = next_field(f.s.p, f.s.n, &p2, &g)) > 0) {
                if (g.num >= 1 && g.num <= 4 && g.wt != 0) return pf_unsup(w, "a known field with another wire type");
                if (g.num == 1) cid = (uint32_t)g.v;
                else if (g.num == 2) ts = g.v;
                else if (g.num == 3) incr = g.v != 0;
                else if (g.num == 4) unit = g.v;
            }
            if (r2 < 0) return pf_unsup(w, "a clock that may not parse");
            if (!unit) unit = 1;
            uint64_t ns;
            if (__builtin_mul_overflow(ts, unit, &ns) || ns > (uint64_t)INT64_MAX)
                return pf_unsup(w, "clock snapshot value past int64");
            int64_t code;
            if (cid >= 64 && cid <= 127) {
                int k = (int)cid - 64;
                seq->cl_set[k] = 1;
                seq->cl_incr[k] = (uint8_t)incr;
                seq->cl_unit[k] = unit;
                seq->cl_last[k] = (int64_t)ns;
                code = pf_domain(w, (int64_t)seq->sid + 1, cid);
            } else {
                code = pf_domain(w, 0, cid);
            }
            if (code < 0) return code == -2 ? PF_UNSUP : PF_NOMEM;
            PUT(w->col[K_SNAP_PAIRS], int64_t, code);
            PUT(w->col[K_SNAP_PAIRS], int64_t, (int64_t)ns);
            count++;
        }
    }
    if (r < 0) return pf_unsup(w, "a clock snapshot that may not parse");
    PUT(w->col[K_SNAP], int64_t, first);
    PUT(w->col[K_SNAP], int64_t, count);
    PUT(w->col[K_SNAP], int64_t, primary);
    return 0;
}

typedef struct {
    int32_t pid;
    int64_t tid;
    span_t name; /* thread_name / process_name */
} desc_t;

/* A ThreadDescriptor (thread = 1) or ProcessDescriptor. */
static int parse_desc(pf_walker *w, span_t s, int thread, desc_t *d) {
    memset(d, 0, sizeof *d);
    d->name.p = (const uint8_t *)"";
    FIELDS(s) {
        if (f.num == 1) {
            WANT(0);
            d->pid = (int32_t)(uint32_t)f.v;
        } else if (thread && f.num == 2) {
            WANT(0);
            d->tid = (int64_t)f.v;
        } else if ((thread && f.num == 5) || (!thread && (f.num == 6 || f.num == 2))) {
            WANT(2);
            STR_OK();
            if (f.num != 2) d->name = f.s;
        }
    }
    END_FIELDS("a descriptor");
}

static int track_descriptor(pf_walker *w, span_t s) {
    uint64_t uuid = 0, parent = 0;
    span_t name = {NULL, 0}, sname = {NULL, 0};
    int has_p = 0, has_t = 0, has_c = 0;
    desc_t pd, td;
    int32_t ctype = 0;
    int64_t mult = 0;
    int incr = 0;
    FIELDS(s) {
        switch (f.num) {
        case 1: WANT(0); uuid = f.v; break;
        case 5: WANT(0); parent = f.v; break;
        case 2: WANT(2); STR_OK(); name = f.s; break;
        case 10: WANT(2); STR_OK(); sname = f.s; break;
        case 3: WANT(2); ONCE(has_p); TRY(parse_desc(w, f.s, 0, &pd)); break;
        case 4: WANT(2); ONCE(has_t); TRY(parse_desc(w, f.s, 1, &td)); break;
        case 8: {
            WANT(2);
            ONCE(has_c);
            size_t p2 = 0;
            field_t g;
            int r2;
            while ((r2 = next_field(f.s.p, f.s.n, &p2, &g)) > 0) {
                if (g.num == 6) {
                    if (g.wt != 2 || !utf8_ok(g.s.p, g.s.n)) return pf_unsup(w, "an odd counter unit name");
                } else if (g.num >= 1 && g.num <= 5) {
                    if (g.wt != 0) return pf_unsup(w, "a known field with another wire type");
                    if (g.num == 1) ctype = (int32_t)(uint32_t)g.v;
                    else if (g.num == 4) mult = (int64_t)g.v;
                    else if (g.num == 5) incr = g.v != 0;
                }
            }
            if (r2 < 0) return pf_unsup(w, "a counter descriptor that may not parse");
            break;
        }
        default: break;
        }
    }
    if (r < 0) return pf_unsup(w, "a track descriptor that may not parse");
    int32_t t = pf_track(w, 0, uuid, 0, 0);
    if (t < 0) return PF_NOMEM;
    track_t *info = &w->tracks[t];
    if (name.n) {
        if ((info->name = pf_raw(w, name.p, name.n)) < 0) return PF_NOMEM;
    } else if (sname.n) {
        if ((info->name = pf_raw(w, sname.p, sname.n)) < 0) return PF_NOMEM;
    }
    if (parent) info->parent = parent;
    if (has_p) {
        info->has_pid = 1;
        info->pid = pd.pid;
        if (info->pname < 0 && pd.name.n && (info->pname = pf_raw(w, pd.name.p, pd.name.n)) < 0) return PF_NOMEM;
    }
    if (has_t) {
        info->has_pid = info->has_tid = 1;
        info->pid = td.pid;
        info->tid = td.tid;
        if (td.name.n && (info->tname = pf_raw(w, td.name.p, td.name.n)) < 0) return PF_NOMEM;
    }
    if (has_c) {
        info->counter = 1;
        info->incremental = incr;
        info->mult = mult ? mult : 1;
        info->ctype = ctype;
    }
    return 0;
}

static int legacy_descriptors(pf_walker *w, const pkt_t *p, seq_t *seq) {
    desc_t d;
    if (p->has_thd) {
        TRY(parse_desc(w, p->thd, 1, &d));
        seq->has_thread = 1;
        seq->th_pid = d.pid;
        seq->th_tid = d.tid;
        int32_t t = pf_track(w, 1, 0, d.pid, d.tid);
        if (t < 0) return PF_NOMEM;
        w->tracks[t].has_pid = w->tracks[t].has_tid = 1;
        w->tracks[t].pid = d.pid;
        w->tracks[t].tid = d.tid;
        if (d.name.n && (w->tracks[t].tname = pf_raw(w, d.name.p, d.name.n)) < 0) return PF_NOMEM;
    }
    if (p->has_procd) {
        TRY(parse_desc(w, p->procd, 0, &d));
        int32_t t = pf_track(w, 2, 0, d.pid, 0);
        if (t < 0) return PF_NOMEM;
        w->tracks[t].has_pid = 1;
        w->tracks[t].pid = d.pid;
        if (d.name.n && (w->tracks[t].pname = pf_raw(w, d.name.p, d.name.n)) < 0) return PF_NOMEM;
    }
    return 0;
}

/* One packet, as Reader.packets.  PF_INFLATE: it is a compressed bundle (*comp its bytes). */
static int packet(pf_walker *w, span_t s, span_t *comp) {
    pkt_t p;
    TRY(parse_packet(w, s, &p));
    w->q[Q_RECORDS]++;
    size_t si;
    seq_t *seq = sequence(w, p.sid, &si);
    if (!seq) return PF_NOMEM;
    if (p.has_comp) {
        if (w->inner) return pf_unsup(w, "a compressed bundle inside a compressed bundle");
        *comp = p.comp;
        return PF_INFLATE; /* the bundle counts as one record where it cannot be opened */
    }
    if (p.ppd) w->q[Q_DROPPED]++;
    if ((p.flags & SEQ_CLEARED) || p.isc)
        seq_clear(seq);
    else if (p.ppd)
        seq->valid = 0;
    if (p.has_defaults) TRY(defaults(w, p.defaults, seq));
    if (p.has_interned) {
        TRY(intern(w, p.interned, seq->valid, si, seq));
        if (!seq->valid) w->q[Q_INTERN_IGNORED]++;
    }
    if (p.has_snap) {
        TRY(snapshot(w, p.snap, seq));
        w->q[Q_METADATA]++;
        return 0;
    }
    if ((p.flags & SEQ_NEEDS) && !seq->valid) {
        w->q[Q_NEEDS]++;
        return 0;
    }
    if (p.has_te) {
        TRY(pf_event(w, p.te.p, p.te.n, p.has_ts, p.ts, p.clock_id, seq, si));
    } else if (p.has_td) {
        TRY(track_descriptor(w, p.td));
        w->q[Q_METADATA]++;
    } else if (p.has_thd || p.has_procd) {
        TRY(legacy_descriptors(w, &p, seq));
        w->q[Q_METADATA]++;
    } else if (p.has_interned || p.has_defaults) {
        w->q[Q_METADATA]++;
    } else {
        w->q[Q_NOTRACK]++;
    }
    return 0;
}

/* -- exported ------------------------------------------------------------------------------ */

void pv_pf_free(pf_walker *w);

pf_walker *pv_pf_new(void) {
    pf_walker *w = (pf_walker *)calloc(1, sizeof *w);
    if (!w) return NULL;
    if (!dict_init(&w->raw) || !dict_init(&w->out) || !map_init(&w->interned) || !map_init(&w->seq_of) ||
        !map_init(&w->track_of) || !map_init(&w->stacks) || !map_init(&w->domain_of) || !map_init(&w->counters) ||
        !map_init(&w->res_of)) {
        pv_pf_free(w);
        return NULL;
    }
    return w;
}

void pv_pf_free(pf_walker *w) {
    if (!w) return;
    for (int c = 0; c < K_NCOLS; c++) buf_free(&w->col[c]);
    if (w->raw.slots) dict_free(&w->raw);
    if (w->out.slots) dict_free(&w->out);
    buf_free(&w->raw_out);
    map_free(&w->interned);
    map_free(&w->seq_of);
    map_free(&w->track_of);
    map_free(&w->stacks);
    map_free(&w->domain_of);
    map_free(&w->counters);
    map_free(&w->res_of);
    for (size_t i = 0; i < w->nseq; i++) {
        buf_free(&w->seqs[i].extra_tracks);
        buf_free(&w->seqs[i].extra_dbl);
    }
    free(w->seqs);
    free(w->tracks);
    for (size_t i = 0; i < w->nstack; i++) buf_free(&w->stack_bufs[i]);
    free(w->stack_bufs);
    buf_t *v[] = {&w->counter_vals, &w->scratch, &w->v_cat, &w->v_cats, &w->v_xu, &w->v_xv, &w->v_xdu,
                  &w->v_xdv, &w->v_flow, &w->v_tflow, &w->v_ann, &w->v_res, &w->v_clk, &w->v_trip};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) buf_free(v[i]);
    free(w);
}

static int damage(pf_walker *w, int kind, size_t at, int64_t value, int64_t left) {
    w->q[Q_DAMAGE_KIND] = kind;
    w->q[Q_DAMAGE_AT] = (int64_t)at;
    w->q[Q_DAMAGE_VALUE] = value;
    w->q[Q_DAMAGE_LEFT] = left;
    return PF_DONE;
}

/* Walk the packets of the file's bytes [*pos, len) (wire.batches' framing), positions in file
 * bytes; the window b holds the bytes [b_off, b_off + b_len) (all of them where b_off + b_len
 * == len).  PF_PAUSE (*pos the next packet): a packet starts at or after limit, or is not whole
 * in the window (inflate[1]: the bytes from *pos the next window must hold, 0 any).  PF_DONE at
 * the end or at damage (recorded), PF_INFLATE with inflate[0..1] = the bundle's offset (in file
 * bytes) and length and *pos past its packet, PF_UNSUP (pv_pf_unsupported says why), PF_NOMEM. */
int pv_pf_walk(pf_walker *w, const uint8_t *b, int64_t b_off, size_t b_len, size_t limit, int64_t *ppos,
               int64_t *inflate, size_t len) {
    size_t pos = (size_t)*ppos, off = (size_t)b_off, have = off + b_len; /* window: [off, have) */
    w->inner = 0;
    w->win = b;
    w->win_off = b_off;
    inflate[1] = 0;
    if (pos < off || have > len) return pf_unsup(w, "a window outside the file");
#define AT(i) b[(i) - off]
#define MORE(need) \
    do { \
        *ppos = (int64_t)pos; \
        inflate[1] = (int64_t)(need); \
        return PF_PAUSE; \
    } while (0)
    while (pos < len) {
        if (pos >= limit) MORE(0);
        if (pos >= have) MORE(16);
        if (AT(pos) != 0x0A) return damage(w, 1, pos, AT(pos), (int64_t)(len - pos));
        uint64_t size;
        size_t body;
        if (pos + 1 < have && AT(pos + 1) < 0x80) {
            size = AT(pos + 1);
            body = pos + 2;
        } else {
            size_t q = pos + 1;
            uint64_t v = 0;
            int ok = 0;
            for (int i = 0; i < 10 && q < len; i++, q++) {
                if (q >= have) MORE(16);
                if (i == 9 && AT(q) > 1) return pf_unsup(w, "packet length past 64 bits");
                v |= (uint64_t)(AT(q) & 0x7F) << (7 * i);
                if (AT(q) < 0x80) {
                    ok = 1;
                    q++;
                    break;
                }
            }
            if (!ok) return damage(w, 2, pos, 0, (int64_t)(len - pos));
            size = v;
            body = q;
        }
        if (size > len - body) {
            if (size > (uint64_t)INT64_MAX) return pf_unsup(w, "packet length past int64");
            w->q[Q_DAMAGE_BODY_LEFT] = (int64_t)(len - body);
            return damage(w, 3, pos, (int64_t)size, (int64_t)(len - pos));
        }
        if (size > have - body) MORE(body - pos + size);
        span_t s = {&AT(body), (size_t)size}, comp;
        pos = body + (size_t)size;
        int rc = packet(w, s, &comp);
        if (rc == PF_INFLATE) {
            *ppos = (int64_t)pos;
            inflate[0] = (int64_t)(comp.p - b) + b_off;
            inflate[1] = (int64_t)comp.n;
            return PF_INFLATE;
        }
        if (rc) return rc;
    }
#undef AT
#undef MORE
    *ppos = (int64_t)pos;
    return PF_DONE;
}

/* Annotations as the file offsets of their TrackEvents (read back from the file when asked)
 * instead of copies: for a walk of the file itself (not of bytes inflated from it). */
void pv_pf_file_args(pf_walker *w, int on) { w->file_args = on != 0; }

/* The packets of an inflated compressed bundle (a Trace message). */
int pv_pf_inner(pf_walker *w, const uint8_t *b, size_t len) {
    w->inner = 1;
    w->q[Q_RECORDS]--; /* the bundle opened: its packets are the records */
    size_t pos = 0;
    field_t f;
    int r;
    while ((r = next_field(b, len, &pos, &f)) > 0) {
        if (f.num != 1 || f.wt != 2) return pf_unsup(w, "a compressed bundle with other fields");
        span_t comp;
        int rc = packet(w, f.s, &comp);
        if (rc) return rc == PF_INFLATE ? pf_unsup(w, "nested bundle") : rc;
    }
    w->inner = 0;
    return r < 0 ? pf_unsup(w, "a compressed bundle that may not parse") : PF_DONE;
}
