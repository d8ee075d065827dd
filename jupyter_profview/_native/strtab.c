/*
 * strtab.c -- the scanner's three dictionaries (names, cats, tokens): raw
 * string bytes -> int32 code, codes assigned in first-occurrence order.  An
 * open-addressing hash table over an arena of the key bytes; Python decodes
 * each unique string once.
 */

#include "scan_internal.h"

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, n);
        h = (h ^ w) * 0x94d049bb133111ebull;
        h ^= h >> 29;
    }
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
}

int dict_init(dict_t *d) {
    memset(d, 0, sizeof *d);
    d->mask = 1023;
    d->slots = (slot_t *)malloc((d->mask + 1) * sizeof(slot_t));
    if (!d->slots) return 0;
    for (size_t i = 0; i <= d->mask; i++) d->slots[i].code = -1;
    /* the arena is never NULL, even while all keys are empty strings: the
     * memcmp of key bytes in the lookups must not get a NULL pointer */
    if (!buf_reserve(&d->arena, 1)) {
        free(d->slots);
        d->slots = NULL;
        return 0;
    }
    return 1;
}

void dict_free(dict_t *d) {
    free(d->slots);
    d->slots = NULL;
    buf_free(&d->arena);
    buf_free(&d->offsets);
    buf_free(&d->lengths);
    buf_free(&d->flags);
}

static int dict_grow(dict_t *d) {
    size_t nmask = d->mask * 2 + 1;
    slot_t *ns = (slot_t *)malloc((nmask + 1) * sizeof(slot_t));
    if (!ns) return 0;
    for (size_t i = 0; i <= nmask; i++) ns[i].code = -1;
    for (size_t i = 0; i <= d->mask; i++) {
        if (d->slots[i].code < 0) continue;
        size_t j = (size_t)d->slots[i].hash & nmask;
        while (ns[j].code >= 0) j = (j + 1) & nmask;
        ns[j] = d->slots[i];
    }
    free(d->slots);
    d->slots = ns;
    d->mask = nmask;
    return 1;
}

/* Code of key (bytes), inserting it if new; -1 on out of memory. */
static int32_t dict_lookup(dict_t *d, const uint8_t *key, size_t n, uint32_t flags);

/* dict_lookup with a one-entry cache per field: cat, pid and tid usually
 * repeat from one event to the next, so compare with the last code first. */
int32_t cached_lookup(dict_t *d, int32_t *cache, const uint8_t *key, size_t n, uint32_t flags) {
    int32_t c = *cache;
    if (c >= 0 && (size_t)((const int32_t *)d->lengths.data)[c] == n &&
        memcmp(d->arena.data + ((const int64_t *)d->offsets.data)[c], key, n) == 0)
        return c;
    c = dict_lookup(d, key, n, flags);
    *cache = c;
    return c;
}

static int32_t dict_lookup(dict_t *d, const uint8_t *key, size_t n, uint32_t flags) {
    if (n > INT32_MAX) return -1;
    uint64_t h = hash_bytes(key, n);
    size_t j = (size_t)h & d->mask;
    const int64_t *offs = (const int64_t *)d->offsets.data;
    const int32_t *lens = (const int32_t *)d->lengths.data;
    for (;;) {
        slot_t *s = &d->slots[j];
        if (s->code < 0) break;
        if (s->hash == h && (size_t)lens[s->code] == n &&
            memcmp(d->arena.data + offs[s->code], key, n) == 0)
            return s->code;
        j = (j + 1) & d->mask;
    }
    if (d->count >= INT32_MAX - 1) return -1;
    /* insert */
    int64_t off = (int64_t)d->arena.len;
    int32_t len32 = (int32_t)n;
    if (!buf_append(&d->arena, key, n) || !buf_append(&d->offsets, (const uint8_t *)&off, 8) ||
        !buf_append(&d->lengths, (const uint8_t *)&len32, 4) ||
        !buf_append(&d->flags, (const uint8_t *)&flags, 4))
        return -1;
    int32_t code = (int32_t)d->count++;
    d->slots[j].hash = h;
    d->slots[j].code = code;
    if (d->count * 2 > d->mask + 1 && !dict_grow(d)) return -1;
    return code;
}

/* Codes in dst of every entry of src, in src's code order, inserting the
 * entries dst does not have (so they get dst codes in src's first-occurrence
 * order, as if src's input had been scanned after dst's).  A malloc'ed array
 * of src->count codes, or NULL on out of memory. */
int32_t *dict_merge(dict_t *dst, const dict_t *src) {
    int32_t *map = (int32_t *)malloc((src->count ? src->count : 1) * sizeof *map);
    if (!map) return NULL;
    const int64_t *offs = (const int64_t *)src->offsets.data;
    const int32_t *lens = (const int32_t *)src->lengths.data;
    const uint32_t *flags = (const uint32_t *)src->flags.data;
    for (size_t i = 0; i < src->count; i++) {
        map[i] = dict_lookup(dst, src->arena.data + offs[i], (size_t)lens[i], flags[i]);
        if (map[i] < 0) {
            free(map);
            return NULL;
        }
    }
    return map;
}
