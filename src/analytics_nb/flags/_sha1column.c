/*
 * analytics_nb.flags._sha1column: PostHog's bucket fraction for a whole column of identifiers.
 *
 * For each selected row r the fraction is sha1(prefix + id_r + suffix), its first 15 hex digits (60 bits)
 * as an integer, divided by 0xFFFFFFFFFFFFFFF: exactly what _hashing.raw_hash computes with hashlib, one
 * identifier at a time. Identifiers come as one contiguous UTF-8 buffer plus int64 offsets (the layout
 * Arrow uses), so no Python object is touched per row and the loop runs without the GIL.
 *
 * SHA-1 is our own: a portable C compression function and, on x86-64 CPUs with the SHA extensions
 * (detected at import with CPUID), one written with the SHA-NI intrinsics. Both are checked against hashlib
 * in tests/flags/test_flags_hash_native.py. No OpenSSL headers are needed to build this file.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_SHANI_BUILD 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define HAVE_SHANI_BUILD 0
#endif

static const double LONG_SCALE = (double)0xFFFFFFFFFFFFFFFULL;

typedef void (*block_fn)(uint32_t state[5], const uint8_t *block);

/* ------------------------------------------------------------------ portable compression */

#define ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static void block_portable(uint32_t state[5], const uint8_t *p) {
    uint32_t w[80];
    for (int t = 0; t < 16; t++) {
        w[t] = ((uint32_t)p[4 * t] << 24) | ((uint32_t)p[4 * t + 1] << 16) | ((uint32_t)p[4 * t + 2] << 8) |
               (uint32_t)p[4 * t + 3];
    }
    for (int t = 16; t < 80; t++) {
        uint32_t x = w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16];
        w[t] = ROL(x, 1);
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4], tmp;
#define PORTABLE_ROUND(f, k)                  \
    tmp = ROL(a, 5) + (f) + e + (k) + w[t]; \
    e = d;                                  \
    d = c;                                  \
    c = ROL(b, 30);                         \
    b = a;                                  \
    a = tmp;
    int t = 0;
    for (; t < 20; t++) { PORTABLE_ROUND((b & c) | (~b & d), 0x5A827999u) }
    for (; t < 40; t++) { PORTABLE_ROUND(b ^ c ^ d, 0x6ED9EBA1u) }
    for (; t < 60; t++) { PORTABLE_ROUND((b & c) | (b & d) | (c & d), 0x8F1BBCDCu) }
    for (; t < 80; t++) { PORTABLE_ROUND(b ^ c ^ d, 0xCA62C1D6u) }
#undef PORTABLE_ROUND
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
}

/* ------------------------------------------------------------------ SHA-NI compression */

#if HAVE_SHANI_BUILD
/* Four rounds per step; W[g & 3] holds message words 4g..4g+3 (word 4g in the top lane). The schedule
 * for g >= 4 is W[g] = msg2(msg1(W[g-4], W[g-3]) ^ W[g-2], W[g-1]); the E input of a step is the rotated A
 * of the state before the previous step (sha1nexte), plus the step's first message word. */
#define SHANI_STEP(g, f)                                                                                   \
    do {                                                                                                   \
        if ((g) >= 4) {                                                                                    \
            W[(g) & 3] = _mm_sha1msg2_epu32(                                                               \
                _mm_xor_si128(_mm_sha1msg1_epu32(W[(g) & 3], W[((g) + 1) & 3]), W[((g) + 2) & 3]),         \
                W[((g) + 3) & 3]);                                                                         \
        }                                                                                                  \
        e = (g) == 0 ? _mm_add_epi32(e0, W[0]) : _mm_sha1nexte_epu32(prev, W[(g) & 3]);                    \
        prev = abcd;                                                                                       \
        abcd = _mm_sha1rnds4_epu32(abcd, e, f);                                                            \
    } while (0)

__attribute__((target("sha,sse4.1,ssse3"))) static void block_shani(uint32_t state[5], const uint8_t *p) {
    const __m128i reverse = _mm_set_epi64x(0x0001020304050607LL, 0x08090a0b0c0d0e0fLL);
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)state), 0x1B);
    __m128i e0 = _mm_set_epi32((int)state[4], 0, 0, 0);
    __m128i abcd_save = abcd, prev = abcd, e;
    __m128i W[4];
    for (int i = 0; i < 4; i++) W[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), reverse);
    SHANI_STEP(0, 0); SHANI_STEP(1, 0); SHANI_STEP(2, 0); SHANI_STEP(3, 0); SHANI_STEP(4, 0);
    SHANI_STEP(5, 1); SHANI_STEP(6, 1); SHANI_STEP(7, 1); SHANI_STEP(8, 1); SHANI_STEP(9, 1);
    SHANI_STEP(10, 2); SHANI_STEP(11, 2); SHANI_STEP(12, 2); SHANI_STEP(13, 2); SHANI_STEP(14, 2);
    SHANI_STEP(15, 3); SHANI_STEP(16, 3); SHANI_STEP(17, 3); SHANI_STEP(18, 3); SHANI_STEP(19, 3);
    e0 = _mm_sha1nexte_epu32(prev, e0);
    abcd = _mm_add_epi32(abcd, abcd_save);
    _mm_storeu_si128((__m128i *)state, _mm_shuffle_epi32(abcd, 0x1B));
    state[4] = (uint32_t)_mm_extract_epi32(e0, 3);
}

static int cpu_has_shani(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    if (!(c & (1u << 19)) || !(c & (1u << 9))) return 0; /* SSE4.1, SSSE3 */
    if (__get_cpuid_max(0, NULL) < 7) return 0;
    __cpuid_count(7, 0, a, b, c, d);
    return (b >> 29) & 1u; /* SHA */
}
#endif

static block_fn best_block = block_portable;

/* ------------------------------------------------------------------ streaming over three pieces */

typedef struct {
    uint32_t h[5];
    uint8_t buf[64];
    size_t fill;
    uint64_t total;
} sha1_ctx;

static const uint32_t SHA1_INIT[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};

static inline void ctx_feed(sha1_ctx *c, const uint8_t *p, size_t n, block_fn block) {
    c->total += n;
    if (c->fill) {
        size_t take = 64 - c->fill < n ? 64 - c->fill : n;
        memcpy(c->buf + c->fill, p, take);
        c->fill += take;
        p += take;
        n -= take;
        if (c->fill < 64) return;
        block(c->h, c->buf);
        c->fill = 0;
    }
    while (n >= 64) {
        block(c->h, p);
        p += 64;
        n -= 64;
    }
    if (n) {
        memcpy(c->buf, p, n);
        c->fill = n;
    }
}

/* Finish and return the first 64 bits of the digest (big-endian), from which the 60-bit value is taken. */
static inline uint64_t ctx_finish64(sha1_ctx *c, block_fn block) {
    uint64_t bits = c->total * 8u;
    c->buf[c->fill++] = 0x80;
    if (c->fill > 56) {
        memset(c->buf + c->fill, 0, 64 - c->fill);
        block(c->h, c->buf);
        c->fill = 0;
    }
    memset(c->buf + c->fill, 0, 56 - c->fill);
    for (int i = 0; i < 8; i++) c->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    block(c->h, c->buf);
    return ((uint64_t)c->h[0] << 32) | c->h[1];
}

static int parse_impl(const char *impl, block_fn *out) {
    if (impl == NULL || strcmp(impl, "auto") == 0) {
        *out = best_block;
    } else if (strcmp(impl, "portable") == 0) {
        *out = block_portable;
    } else if (strcmp(impl, "shani") == 0) {
#if HAVE_SHANI_BUILD
        if (best_block != block_shani) {
            PyErr_SetString(PyExc_ValueError, "impl='shani': this CPU has no SHA extensions");
            return -1;
        }
        *out = block_shani;
#else
        PyErr_SetString(PyExc_ValueError, "impl='shani': not built for this platform");
        return -1;
#endif
    } else {
        PyErr_Format(PyExc_ValueError, "impl must be 'auto', 'portable' or 'shani', got '%s'", impl);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ Python API */

PyDoc_STRVAR(fractions_doc,
             "fractions(prefix, data, offsets, suffix, out, rows=None, impl='auto')\n\n"
             "For each row r (all rows, or the int64 positions in `rows`), write to out[r] (float64) the bucket\n"
             "fraction of sha1(prefix + data[offsets[r]:offsets[r+1]] + suffix).");

static PyObject *fractions(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"prefix", "data", "offsets", "suffix", "out", "rows", "impl", NULL};
    Py_buffer prefix = {0}, data = {0}, offsets = {0}, suffix = {0}, out = {0}, rows = {0};
    PyObject *rows_obj = Py_None;
    const char *impl = NULL;
    PyObject *result = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*y*w*|Oz", kwlist, &prefix, &data, &offsets, &suffix,
                                     &out, &rows_obj, &impl))
        return NULL;
    block_fn block;
    if (parse_impl(impl, &block) < 0) goto done;
    if (offsets.len % 8 != 0 || offsets.len < 8 || out.len % 8 != 0) {
        PyErr_SetString(PyExc_ValueError, "offsets must be int64 (n + 1 values) and out float64");
        goto done;
    }
    Py_ssize_t n = offsets.len / 8 - 1;
    if (out.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "out must have one float64 per identifier");
        goto done;
    }
    const int64_t *off = (const int64_t *)offsets.buf;
    if (off[0] < 0 || off[n] > data.len) {
        PyErr_SetString(PyExc_ValueError, "offsets point outside data");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (off[i + 1] < off[i]) {
            PyErr_SetString(PyExc_ValueError, "offsets must not decrease");
            goto done;
        }
    }
    const int64_t *sel = NULL;
    Py_ssize_t count = n;
    if (rows_obj != Py_None) {
        if (PyObject_GetBuffer(rows_obj, &rows, PyBUF_SIMPLE) < 0) goto done;
        if (rows.len % 8 != 0) {
            PyErr_SetString(PyExc_ValueError, "rows must be int64 positions");
            goto done;
        }
        sel = (const int64_t *)rows.buf;
        count = rows.len / 8;
        for (Py_ssize_t i = 0; i < count; i++) {
            if (sel[i] < 0 || sel[i] >= n) {
                PyErr_SetString(PyExc_IndexError, "rows holds a position outside the identifiers");
                goto done;
            }
        }
    }
    {
        const uint8_t *base = (const uint8_t *)data.buf;
        const uint8_t *pre = (const uint8_t *)prefix.buf;
        const uint8_t *suf = (const uint8_t *)suffix.buf;
        size_t slen = (size_t)suffix.len;
        double *dst = (double *)out.buf;
        /* the prefix's whole blocks are hashed once; each row starts from that state */
        sha1_ctx start;
        memcpy(start.h, SHA1_INIT, sizeof start.h);
        start.fill = 0;
        start.total = 0;
        ctx_feed(&start, pre, (size_t)prefix.len, block);
        Py_BEGIN_ALLOW_THREADS;
        for (Py_ssize_t i = 0; i < count; i++) {
            Py_ssize_t r = sel ? (Py_ssize_t)sel[i] : i;
            sha1_ctx c = start;
            ctx_feed(&c, base + off[r], (size_t)(off[r + 1] - off[r]), block);
            if (slen) ctx_feed(&c, suf, slen, block);
            dst[r] = (double)(ctx_finish64(&c, block) >> 4) / LONG_SCALE;
        }
        Py_END_ALLOW_THREADS;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&prefix);
    PyBuffer_Release(&data);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&suffix);
    PyBuffer_Release(&out);
    if (rows.obj) PyBuffer_Release(&rows);
    return result;
}

PyDoc_STRVAR(digest_doc, "digest(data, impl='auto') -> bytes: the full 20-byte SHA-1 (for tests).");

static PyObject *digest(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"data", "impl", NULL};
    Py_buffer data = {0};
    const char *impl = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|z", kwlist, &data, &impl)) return NULL;
    block_fn block;
    if (parse_impl(impl, &block) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    sha1_ctx c;
    memcpy(c.h, SHA1_INIT, sizeof c.h);
    c.fill = 0;
    c.total = 0;
    ctx_feed(&c, (const uint8_t *)data.buf, (size_t)data.len, block);
    PyBuffer_Release(&data);
    ctx_finish64(&c, block);
    uint8_t outb[20];
    for (int i = 0; i < 5; i++) {
        outb[4 * i] = (uint8_t)(c.h[i] >> 24);
        outb[4 * i + 1] = (uint8_t)(c.h[i] >> 16);
        outb[4 * i + 2] = (uint8_t)(c.h[i] >> 8);
        outb[4 * i + 3] = (uint8_t)c.h[i];
    }
    return PyBytes_FromStringAndSize((const char *)outb, 20);
}

static PyMethodDef methods[] = {
    {"fractions", (PyCFunction)(void (*)(void))fractions, METH_VARARGS | METH_KEYWORDS, fractions_doc},
    {"digest", (PyCFunction)(void (*)(void))digest, METH_VARARGS | METH_KEYWORDS, digest_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_sha1column",
    "PostHog bucket fractions (sha1) over a contiguous UTF-8 column; see _hashing.py.", -1, methods,
};

PyMODINIT_FUNC PyInit__sha1column(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    const char *name = "portable";
#if HAVE_SHANI_BUILD
    if (cpu_has_shani()) {
        best_block = block_shani;
        name = "shani";
    }
#endif
    if (PyModule_AddStringConstant(m, "IMPL", name) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
