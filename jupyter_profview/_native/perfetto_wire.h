/*
 * perfetto_wire.h -- protobuf wire reading for the Perfetto walker (perfetto_scan.c):
 * varints, field keys, UTF-8 checks.  Anything the walker is not sure protobuf would read
 * the same way (a malformed or unusual encoding) is PF_UNSUP: the whole file then goes to
 * the pure-Python reader, which is the reference.
 */

#ifndef PV_PERFETTO_WIRE_H
#define PV_PERFETTO_WIRE_H

#include "scan_internal.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

#define PF_DONE 0
#define PF_INFLATE 1
#define PF_PAUSE 2
#define PF_UNSUP 3
#define PF_NOMEM 4

typedef struct {
    const uint8_t *p;
    size_t n;
} span_t;

/* One varint at b[*pos] (< end): 0 and *v on success, -1 where protobuf might read it
 * otherwise (cut, longer than 10 bytes, bits past 64). */
static inline int rd_varint(const uint8_t *b, size_t end, size_t *pos, uint64_t *v) {
    size_t p = *pos;
    if (p < end && b[p] < 0x80) {
        *v = b[p];
        *pos = p + 1;
        return 0;
    }
    uint64_t x = 0;
    for (int i = 0; i < 10; i++, p++) {
        if (p >= end) return -1;
        uint8_t c = b[p];
        if (i == 9 && c > 1) return -1;
        x |= (uint64_t)(c & 0x7F) << (7 * i);
        if (c < 0x80) {
            *v = x;
            *pos = p + 1;
            return 0;
        }
    }
    return -1;
}

/* A field: number, wire type, and its value (varint / fixed) or span (length-delimited). */
typedef struct {
    uint32_t num;
    int wt;
    uint64_t v;
    span_t s;
} field_t;

/* Next field of b[*pos..end): 1 and *f, 0 at the end, -1 unsure (groups, bad keys,
 * lengths past the end). */
static inline int next_field(const uint8_t *b, size_t end, size_t *pos, field_t *f) {
    f->v = 0;
    f->s.p = NULL;
    f->s.n = 0;
    if (*pos >= end) return 0;
    uint64_t key;
    if (rd_varint(b, end, pos, &key) < 0) return -1;
    uint64_t num = key >> 3;
    if (num == 0 || num > 536870911u) return -1;
    f->num = (uint32_t)num;
    f->wt = (int)(key & 7);
    switch (f->wt) {
    case 0:
        return rd_varint(b, end, pos, &f->v) < 0 ? -1 : 1;
    case 1:
        if (end - *pos < 8) return -1;
        memcpy(&f->v, b + *pos, 8);
        *pos += 8;
        return 1;
    case 5:
        if (end - *pos < 4) return -1;
        {
            uint32_t w;
            memcpy(&w, b + *pos, 4);
            f->v = w;
        }
        *pos += 4;
        return 1;
    case 2: {
        uint64_t n;
        if (rd_varint(b, end, pos, &n) < 0) return -1;
        if (n > end - *pos || n > INT32_MAX) return -1;
        f->s.p = b + *pos;
        f->s.n = (size_t)n;
        *pos += (size_t)n;
        return 1;
    }
    default:
        return -1;
    }
}

/* Strict UTF-8 (no surrogates, no overlongs): 1 valid. */
static inline int utf8_ok(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) k = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) k = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) k = 3, cp = c & 0x07;
        else return 0;
        if (n - i <= k) return 0;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if ((k == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += k + 1;
    }
    return 1;
}

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
