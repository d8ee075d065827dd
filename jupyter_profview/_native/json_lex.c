/*
 * json_lex.c -- JSON validation for the Chrome trace scanner: strings
 * (escapes, surrogate pairs, UTF-8), numbers (with their exact value), the
 * literals and any nested value; and decoding of short escaped strings.
 *
 * Each scan_* function takes the buffer b[0..len) and a position, returns
 * PV_OK (position advanced past the token), PV_MORE (the buffer ends inside
 * it), PV_ERR (invalid JSON, see fail()) or PV_UNSUP (valid JSON this
 * scanner leaves to the Python reference: lone surrogates, integers beyond
 * 64 bits, numbers overflowing a double, nesting deeper than MAX_DEPTH).
 */

#include "scan_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Length (2..4) of the valid UTF-8 sequence at b[pos] (b[pos] >= 0x80),
 * 0 if invalid, -1 if it runs past the end of the buffer. */
static int utf8_seq(const uint8_t *b, size_t len, size_t pos) {
    uint8_t c = b[pos];
    int n;
    uint8_t lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) { n = 3; lo = 0xA0; }
    else if (c >= 0xE1 && c <= 0xEC) n = 3;
    else if (c == 0xED) { n = 3; hi = 0x9F; } /* no UTF-16 surrogates */
    else if (c >= 0xEE && c <= 0xEF) n = 3;
    else if (c == 0xF0) { n = 4; lo = 0x90; }
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else if (c == 0xF4) { n = 4; hi = 0x8F; }
    else return 0;
    for (int k = 1; k < n; k++) {
        if (pos + (size_t)k >= len) return -1;
        uint8_t d = b[pos + (size_t)k];
        if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return 0;
    }
    return n;
}

/* Parse 4 hex digits at b[pos]; returns PV_OK/PV_MORE/PV_ERR. */
static int hex4(pv_scanner *s, const uint8_t *b, size_t len, size_t pos, unsigned *out) {
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        if (pos + (size_t)k >= len) return PV_MORE;
        int h = hexval(b[pos + (size_t)k]);
        if (h < 0) return fail(s, pos + (size_t)k, "invalid \\u escape", "4 hex digits");
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return PV_OK;
}

/* Validate the JSON string whose opening quote is at b[*ppos].  On PV_OK,
 * *ppos is just past the closing quote and *bs tells whether it contained a
 * backslash escape. */
int scan_string(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, int *bs) {
    size_t pos = *ppos + 1;
    int backslash = 0;
    for (;;) {
#if defined(__SSE2__)
        /* skip 16 plain bytes at a time: stop at '"', '\\', < 0x20 or >= 0x80 */
        const __m128i quote = _mm_set1_epi8('"'), bsl = _mm_set1_epi8('\\'),
                      ctl = _mm_set1_epi8(0x20);
        while (pos + 16 <= len) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(b + pos));
            __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bsl)),
                                     _mm_cmplt_epi8(x, ctl)); /* signed: also >= 0x80 */
            int mask = _mm_movemask_epi8(m);
            if (mask) {
                pos += (size_t)__builtin_ctz((unsigned)mask);
                break;
            }
            pos += 16;
        }
#endif
        while (pos < len) {
            uint8_t c = b[pos];
            if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
            pos++;
        }
        if (pos - *ppos - 1 > PV_MAX_STRING) /* the body so far, quotes excluded */
            return fail(s, *ppos, "string longer than 64 MiB", "strings of at most 64 MiB");
        if (pos >= len) return PV_MORE;
        uint8_t c = b[pos];
        if (c == '"') {
            *ppos = pos + 1;
            *bs = backslash;
            return PV_OK;
        }
        if (c == '\\') {
            backslash = 1;
            if (pos + 1 >= len) return PV_MORE;
            uint8_t e = b[pos + 1];
            if (e == 'u') {
                unsigned u;
                int r = hex4(s, b, len, pos + 2, &u);
                if (r != PV_OK) return r;
                if (u >= 0xDC00 && u <= 0xDFFF) return unsup(s, "lone low surrogate escape");
                if (u >= 0xD800 && u <= 0xDBFF) {
                    /* must be followed by a low surrogate escape */
                    if (pos + 7 >= len) return PV_MORE;
                    if (b[pos + 6] != '\\' || b[pos + 7] != 'u') return unsup(s, "lone high surrogate escape");
                    unsigned lo;
                    r = hex4(s, b, len, pos + 8, &lo);
                    if (r != PV_OK) return r;
                    if (lo < 0xDC00 || lo > 0xDFFF) return unsup(s, "lone high surrogate escape");
                    pos += 12;
                } else {
                    pos += 6;
                }
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                       e == 'r' || e == 't') {
                pos += 2;
            } else {
                return fail(s, pos + 1, "invalid escape in string",
                            "one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
            }
            continue;
        }
        if (c < 0x20) return fail(s, pos, "control character in string", "an escape such as \\n");
        int n = utf8_seq(b, len, pos);
        if (n < 0) return PV_MORE;
        if (n == 0) return fail(s, pos, "invalid UTF-8 in string", "UTF-8 text");
        pos += (size_t)n;
    }
}

/* Validate the JSON number at b[*ppos] (grammar -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?).
 * The digits are accumulated in locals, not in *nm: b is a byte pointer
 * that may alias *nm, so stores through nm would be redone every digit.
 * Accepts every valid number; nm->unsup says whether the Python reference
 * would treat it differently (see scan_number). */
int scan_number_raw(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, num_t *nm) {
    size_t pos = *ppos;
    uint64_t mant = 0;
    int ndig = 0, dropped = 0, rdig = 0, sticky = 0, exp10 = 0, is_int = 1, neg = 0, int_digits = 0;
    nm->start = pos;
    nm->unsup = NULL;
    if (b[pos] == '-') {
        neg = 1;
        pos++;
        if (pos >= len) return PV_MORE;
    }
    if (b[pos] == '0') {
        pos++;
        int_digits = 1;
    } else if (b[pos] >= '1' && b[pos] <= '9') {
        size_t first = pos;
        /* up to 19 digits always fit in mant */
        size_t fast_end = len - pos > 19 ? pos + 19 : len;
        while (pos < fast_end && (unsigned)(b[pos] - '0') < 10) mant = mant * 10 + (unsigned)(b[pos++] - '0');
        ndig = (int)(pos - first);
        while (pos < len && (unsigned)(b[pos] - '0') < 10) { /* beyond 19 digits */
            if (!dropped) rdig = b[pos] - '0';
            else sticky |= b[pos] != '0';
            dropped = 1;
            if (exp10 < 100000) exp10++;
            pos++;
        }
        int_digits = (int)(pos - first);
    } else {
        return fail(s, pos, "invalid number", "a digit");
    }
    if (pos >= len) return PV_MORE;
    if (b[pos] == '.') {
        is_int = 0;
        pos++;
        size_t first = pos;
        while (pos < len && (unsigned)(b[pos] - '0') < 10) {
            unsigned d = (unsigned)(b[pos] - '0');
            if (mant == 0 && d == 0) {
                if (exp10 > -100000) exp10--;
            } else if (ndig < 19) {
                mant = mant * 10 + d;
                ndig++;
                exp10--;
            } else {
                if (!dropped) rdig = (int)d;
                else sticky |= d != 0;
                dropped = 1;
            }
            pos++;
        }
        if (pos >= len) return PV_MORE;
        if (pos == first) return fail(s, pos, "invalid number", "a digit after the decimal point");
    }
    nm->mant = mant;
    nm->ndig = ndig;
    nm->dropped = dropped;
    nm->rdig = rdig;
    nm->sticky = sticky;
    nm->neg = neg;
    if (b[pos] == 'e' || b[pos] == 'E') {
        is_int = 0;
        pos++;
        if (pos >= len) return PV_MORE;
        int eneg = 0;
        if (b[pos] == '+' || b[pos] == '-') {
            eneg = b[pos] == '-';
            pos++;
            if (pos >= len) return PV_MORE;
        }
        if (!(b[pos] >= '0' && b[pos] <= '9')) return fail(s, pos, "invalid number", "exponent digits");
        int e = 0;
        while (pos < len && b[pos] >= '0' && b[pos] <= '9') {
            if (e < 100000) e = e * 10 + (b[pos] - '0');
            pos++;
        }
        if (pos >= len) return PV_MORE;
        exp10 += eneg ? -e : e;
        if (e > 280 && !eneg) {
            /* orjson rejects numbers that overflow to infinity, json does not */
            nm->exp10 = exp10;
            nm->is_int = 0;
            nm->end = pos;
            if (isinf(num_value(b, nm))) nm->unsup = "number overflowing a double";
        }
    }
    nm->exp10 = exp10;
    nm->is_int = is_int;
    /* a number must be followed by a delimiter (checked by the caller's
     * grammar); here we only make sure it is not glued to a letter/digit */
    if (is_int && int_digits >= 19) {
        /* orjson and json disagree beyond 64-bit integers: let Python decide */
        const char *lim = neg ? "9223372036854775808" : "18446744073709551615";
        size_t ll = strlen(lim), dl = (size_t)int_digits;
        const uint8_t *digits = b + nm->start + (size_t)neg;
        if (dl > ll || (dl == ll && memcmp(digits, lim, ll) > 0)) nm->unsup = "integer beyond 64 bits";
    }
    *ppos = pos;
    nm->end = pos;
    return PV_OK;
}

int scan_number(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, num_t *nm) {
    size_t pos = *ppos;
    int r = scan_number_raw(s, b, len, &pos, nm);
    if (r != PV_OK) return r;
    if (nm->unsup) return unsup(s, nm->unsup);
    *ppos = pos;
    return PV_OK;
}

static const uint64_t U10[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull};

/* Exact value * 1000 of a scanned number, rounded to an integer with ties
 * to even: microseconds -> nanoseconds from the decimal digits, never
 * through a double.  Digits beyond the 19 kept in mant still round (rdig,
 * sticky).  Returns 0 if the result is beyond +-INT64_MAX. */
int num_times_1000(const struct num_s *nm, int64_t *out) {
    uint64_t q;
    if (nm->mant == 0) { /* no non-zero digit at all (-0, 0e999, 0.000) */
        *out = 0;
        return 1;
    }
    long e = (long)nm->exp10 + 3; /* value * 1000 = (mant + 0.dropped digits) * 10^e */
    if (e >= 0) {
        /* digits are only dropped once mant has 19 of them: e > 0 overflows then */
        if (e > 19 || __builtin_mul_overflow(nm->mant, U10[e], &q)) return 0;
        if (nm->dropped && (nm->rdig > 5 || (nm->rdig == 5 && (nm->sticky || (q & 1))))) q++;
    } else if (e < -19) {
        q = 0; /* mant < 10^19, so below 0.1 */
    } else {
        uint64_t p = U10[-e], r, half = U10[-e] / 2;
        q = nm->mant / p;
        r = nm->mant % p;
        if (r > half || (r == half && (nm->rdig || nm->sticky || (q & 1)))) q++;
    }
    if (q > (uint64_t)INT64_MAX) return 0;
    *out = nm->neg ? -(int64_t)q : (int64_t)q;
    return 1;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The correctly rounded double of a scanned number (same as strtod). */
double num_value(const uint8_t *b, const struct num_s *nm) {
    if (!nm->dropped && nm->mant <= (1ull << 53) && nm->exp10 >= -22 && nm->exp10 <= 22) {
        /* Clinger's fast path: both operands exact, one correctly rounded op */
        double v = (double)nm->mant;
        v = nm->exp10 < 0 ? v / POW10[-nm->exp10] : v * POW10[nm->exp10];
        return nm->neg ? -v : v;
    }
    char tmp[512];
    size_t n = nm->end - nm->start;
    if (n >= sizeof tmp) {
        char *heap = (char *)malloc(n + 1);
        if (!heap) return NAN;
        memcpy(heap, b + nm->start, n);
        heap[n] = 0;
        double v = strtod(heap, NULL);
        free(heap);
        return v;
    }
    memcpy(tmp, b + nm->start, n);
    tmp[n] = 0;
    return strtod(tmp, NULL);
}

/* Validate a literal (true/false/null) at b[pos]. */
static int scan_literal(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos) {
    size_t pos = *ppos;
    const char *lit = b[pos] == 't' ? "true" : b[pos] == 'f' ? "false" : "null";
    size_t n = strlen(lit);
    for (size_t k = 0; k < n; k++) {
        if (pos + k >= len) return PV_MORE;
        if (b[pos + k] != (uint8_t)lit[k]) return fail(s, pos + k, "invalid literal", lit);
    }
    *ppos = pos + n;
    return PV_OK;
}

/* Validate any JSON value at b[*ppos] (whitespace already skipped). */
int scan_value(pv_scanner *s, const uint8_t *b, size_t len, size_t *ppos, int depth) {
    size_t pos = *ppos;
    if (pos >= len) return PV_MORE;
    uint8_t c = b[pos];
    int r, bs;
    num_t nm;
    switch (c) {
    case '"':
        r = scan_string(s, b, len, &pos, &bs);
        break;
    case '{':
    case '[': {
        if (depth >= MAX_DEPTH) return unsup(s, "nesting too deep");
        uint8_t close = c == '{' ? '}' : ']';
        pos = skip_ws(b, len, pos + 1);
        if (pos >= len) return PV_MORE;
        if (b[pos] == close) {
            pos++;
            r = PV_OK;
            break;
        }
        for (;;) {
            if (c == '{') {
                if (b[pos] != '"') return fail(s, pos, "unexpected character in object", "a string key");
                r = scan_string(s, b, len, &pos, &bs);
                if (r != PV_OK) return r;
                pos = skip_ws(b, len, pos);
                if (pos >= len) return PV_MORE;
                if (b[pos] != ':') return fail(s, pos, "unexpected character after key", "':'");
                pos = skip_ws(b, len, pos + 1);
            }
            r = scan_value(s, b, len, &pos, depth + 1);
            if (r != PV_OK) return r;
            pos = skip_ws(b, len, pos);
            if (pos >= len) return PV_MORE;
            if (b[pos] == close) {
                pos++;
                break;
            }
            if (b[pos] != ',')
                return fail(s, pos, c == '{' ? "unexpected character in object" : "unexpected character in array",
                            c == '{' ? "',' or '}'" : "',' or ']'");
            pos = skip_ws(b, len, pos + 1);
            if (pos >= len) return PV_MORE;
        }
        r = PV_OK;
        break;
    }
    case 't':
    case 'f':
    case 'n':
        r = scan_literal(s, b, len, &pos);
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            r = scan_number(s, b, len, &pos, &nm);
        } else {
            return fail(s, pos, "unexpected character", "a JSON value");
        }
    }
    if (r == PV_OK) *ppos = pos;
    return r;
}

/* ------------------------------------------------------------------------ */
/* String helpers for values with special meaning                            */

/* Decode the escape at raw[k] (raw[k] == '\\') into a code point; returns
 * the escape's length.  The string was validated by scan_string. */
size_t escape_cp(const uint8_t *raw, size_t k, unsigned *cp) {
    uint8_t e = raw[k + 1];
    switch (e) {
    case 'b': *cp = '\b'; return 2;
    case 'f': *cp = '\f'; return 2;
    case 'n': *cp = '\n'; return 2;
    case 'r': *cp = '\r'; return 2;
    case 't': *cp = '\t'; return 2;
    case 'u': {
        unsigned u = 0;
        for (int i = 0; i < 4; i++) u = u * 16 + (unsigned)hexval(raw[k + 2 + (size_t)i]);
        if (u >= 0xD800 && u <= 0xDBFF) { /* validated: a low surrogate follows */
            unsigned lo = 0;
            for (int i = 0; i < 4; i++) lo = lo * 16 + (unsigned)hexval(raw[k + 8 + (size_t)i]);
            *cp = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            return 12;
        }
        *cp = u;
        return 6;
    }
    default: *cp = e; return 2; /* " \ / */
    }
}

/* Decode a validated string body (no quotes) into out (capacity cap) as
 * UTF-8; returns the decoded length or (size_t)-1 if it does not fit. */
size_t decode_small(const uint8_t *raw, size_t n, uint8_t *out, size_t cap) {
    size_t o = 0;
    for (size_t k = 0; k < n;) {
        unsigned cp;
        if (raw[k] != '\\') {
            if (o >= cap) return (size_t)-1;
            out[o++] = raw[k++];
            continue;
        }
        k += escape_cp(raw, k, &cp);
        uint8_t tmp[4];
        size_t m;
        if (cp < 0x80) { tmp[0] = (uint8_t)cp; m = 1; }
        else if (cp < 0x800) { tmp[0] = (uint8_t)(0xC0 | (cp >> 6)); tmp[1] = (uint8_t)(0x80 | (cp & 0x3F)); m = 2; }
        else if (cp < 0x10000) {
            tmp[0] = (uint8_t)(0xE0 | (cp >> 12)); tmp[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
            tmp[2] = (uint8_t)(0x80 | (cp & 0x3F)); m = 3;
        } else {
            tmp[0] = (uint8_t)(0xF0 | (cp >> 18)); tmp[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
            tmp[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); tmp[3] = (uint8_t)(0x80 | (cp & 0x3F)); m = 4;
        }
        if (o + m > cap) return (size_t)-1;
        memcpy(out + o, tmp, m);
        o += m;
    }
    return o;
}
