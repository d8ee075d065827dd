/*
 * perfetto_state.h -- what the Perfetto walker (perfetto_scan.c, perfetto_event.c) keeps:
 * the per-sequence state, the tracks, the clock domains and the output columns, the same as
 * jupyter_profview/formats/perfetto/state.py (`Sequence`, `Track`, `Columns`).
 */

#ifndef PV_PERFETTO_STATE_H
#define PV_PERFETTO_STATE_H

#include "perfetto_wire.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* (a, b) -> int64 hash map */
typedef struct {
    uint64_t a, b;
    int64_t v;
    int used;
} mslot_t;

typedef struct {
    mslot_t *s;
    size_t mask, count;
} map_t;

int map_init(map_t *m);
void map_free(map_t *m);
/* The value slot of (a, b), NULL where absent. */
int64_t *map_get(const map_t *m, uint64_t a, uint64_t b);
/* The value slot of (a, b), inserted with init where absent (*fresh = 1); NULL out of memory. */
int64_t *map_put(map_t *m, uint64_t a, uint64_t b, int64_t init, int *fresh);

/* output columns (ids shared with formats/perfetto/native.py) */
enum {
    K_EV_TRACK, K_EV_NAME, K_EV_CAT, K_EV_KIND, K_EV_START, K_EV_START_DOM, K_EV_END, K_EV_END_DOM,
    K_EV_STACKED, K_EV_ORDER, K_END_TRACK, K_END_TIME, K_END_DOM, K_END_ORDER, K_END_ROW, K_CT_TRACK,
    K_CT_TIME, K_CT_DOM, K_CT_VALUE, K_FLOW_ROW, K_FLOW_ID, K_FLOW_END, K_FLOW_AT_END,
    K_ARG_ROW,   /* int32 per annotation group: the row */
    K_ARG_SPAN,  /* int64 pairs: offset, length in K_BLOB; an offset < 0: the group's whole
                  * TrackEvent at file byte -offset - 1 (file args, pv_pf_file_args) */
    K_ARG_RES,   /* int64 pairs per group: first triple in K_RES, count (groups share equal lists) */
    K_RES,       /* int64 triples: kind (0 arg name, 1 arg string), iid, raw code (-1 unknown) */
    K_BLOB,      /* the groups' debug annotations as TrackEvent field 4 entries */
    K_SNAP,      /* int64 per snapshot: first pair in K_SNAP_PAIRS, count, primary clock */
    K_SNAP_PAIRS,/* int64 pairs: domain code, ns */
    K_DOMAINS,   /* int64 pairs per domain code from 1: sequence id (-1 builtin), clock id */
    K_PHASES,    /* int64 pairs: skipped legacy phase, count */
    K_NCOLS
};

enum { Q_RECORDS, Q_DROPPED, Q_EVENTS, Q_COUNTERS, Q_METADATA, Q_UNSPEC, Q_UNMATCHED, Q_NEEDS, Q_NOTRACK,
       Q_INTERN_IGNORED, Q_EXTRA_NO_TRACK, Q_DAMAGE_KIND, Q_DAMAGE_AT, Q_DAMAGE_VALUE, Q_DAMAGE_LEFT,
       Q_DAMAGE_BODY_LEFT, Q_COUNT };

typedef struct {
    int kind; /* 0 uuid, 1 thread (pid, tid), 2 process (pid), 3 global */
    uint64_t uuid;
    int64_t kpid, ktid;
    int32_t name, pname, tname; /* raw codes, -1 "" */
    uint64_t parent;
    int has_pid, has_tid;
    int64_t pid, tid;
    int counter, incremental;
    int64_t mult;
    int32_t ctype;
} track_t;

#define N_SEQ_CLOCKS 64
typedef struct {
    uint32_t sid;
    int valid;
    uint32_t epoch;
    int has_defaults;
    uint32_t clock;
    int32_t default_track;
    buf_t extra_tracks; /* int32 */
    buf_t extra_dbl;    /* uint64 uuids of the defaults */
    int has_thread;
    int64_t th_pid, th_tid;
    uint8_t cl_set[N_SEQ_CLOCKS], cl_incr[N_SEQ_CLOCKS];
    uint64_t cl_unit[N_SEQ_CLOCKS];
    int64_t cl_last[N_SEQ_CLOCKS];
} seq_t;

typedef struct {
    int is_dbl;
    int64_t i;
    double d;
} num_v;

typedef struct pf_walker {
    buf_t col[K_NCOLS];
    int64_t q[Q_COUNT];
    dict_t raw; /* every string read: interned names, descriptor names */
    dict_t out; /* the strings of events (names, categories) in first-use order */
    buf_t raw_out;   /* int32 per raw code: its code in out, -1 none yet */
    map_t interned;  /* (seq << 34 | epoch << 2 | kind, iid) -> raw code */
    map_t seq_of;    /* (sid, 0) -> index in seqs */
    seq_t *seqs;
    size_t nseq, capseq;
    map_t track_of;  /* key -> track code */
    track_t *tracks;
    size_t ntrack, captrack;
    map_t stacks;    /* (track, 0) -> index of its stack in stack_bufs */
    buf_t *stack_bufs;
    size_t nstack, capstack;
    map_t domain_of; /* (sid + 1 or 0, clock id) -> domain code */
    int64_t ndomain;
    map_t counters;  /* (seq << 32 | epoch, track) -> index in counter_vals */
    buf_t counter_vals; /* num_v */
    int64_t latest_ts, latest_dom;
    int inner;       /* walking the packets of a compressed bundle */
    int file_args;   /* annotations as file offsets of their TrackEvent, not copied (pv_pf_file_args) */
    const uint8_t *win; /* the window pv_pf_walk reads: file bytes [win_off, win_off + its length) */
    int64_t win_off;
    int64_t n_events, n_counters;
    buf_t scratch;
    /* per event vectors */
    buf_t v_cat, v_cats, v_xu, v_xv, v_xdu, v_xdv, v_flow, v_tflow, v_ann, v_res, v_clk, v_trip;
    map_t res_of;    /* (hash, count) of a group's K_RES triples -> the first of an equal list */
    const char *unsup;
    /* the last lookups (most packets repeat them): sequence id, track uuid, clock domain */
    int has_last_seq, has_last_uuid, has_last_dom;
    uint32_t last_sid;
    size_t last_seq;
    uint64_t last_uuid, last_dom_a, last_dom_b;
    int32_t last_track;
    int64_t last_dom;
} pf_walker;

int pf_unsup(pf_walker *w, const char *why);

/* In a field handler (a field `f`, the walker `w`): a known field of another wire type, or a
 * string that is not UTF-8, sends the file to the Python reader (pf_unsup). */
#define WANT(wtype) \
    do { \
        if (f.wt != (wtype)) return pf_unsup(w, "a known field with another wire type"); \
    } while (0)
#define STR_OK() \
    do { \
        if (!utf8_ok(f.s.p, f.s.n)) return pf_unsup(w, "a string that is not UTF-8"); \
    } while (0)
int32_t pf_raw(pf_walker *w, const uint8_t *p, size_t n);
int32_t pf_track(pf_walker *w, int kind, uint64_t uuid, int64_t pid, int64_t tid);
int pf_event(pf_walker *w, const uint8_t *pk_te, size_t te_n, int has_ts, uint64_t ts, uint32_t clock_id,
             seq_t *seq, size_t seq_index);

#define PUT(buf, type, val) \
    do { \
        type _v = (val); \
        if (!buf_append(&(buf), (const uint8_t *)&_v, sizeof _v)) return PF_NOMEM; \
    } while (0)
#define TRY(x) \
    do { \
        int _r = (x); \
        if (_r) return _r; \
    } while (0)
#define NITEMS(buf, type) ((buf).len / sizeof(type))
#define ITEMS(buf, type) ((type *)(buf).data)

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
