/* Creation functions (zeros, ones, full, arange, linspace, eye) in every dtype,
 * and the random generator: Philox4x32-10 known answers, reproducibility,
 * layout independence, moments, bounds and errors. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

#pragma GCC diagnostic ignored "-Wformat-zero-length" /* CHECK(cond) without a message */
#include "ops.h"

static const nn_dtype all_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16, NN_I64, NN_I32, NN_I16, NN_I8, NN_U8, NN_BOOL};
static const nn_dtype float_dtypes[] = {NN_F32, NN_F64, NN_F16, NN_BF16};
#define NDT 8
#define SHAPE(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

static char *addr(const nn_tensor *t, const int64_t *idx)
{
    int64_t off = t->offset;
    for (int i = 0; i < t->ndim; i++) off += idx[i] * t->strides[i];
    return (char *)t->storage->data + off * (int64_t)nn_dtype_size(t->dtype);
}
static double at(const nn_tensor *t, const int64_t *idx) { return nn_load_f64(addr(t, idx), t->dtype); }
static double at1(const nn_tensor *t, int64_t i) { return at(t, &i); }
static int64_t at1_i(const nn_tensor *t, int64_t i) { return nn_load_i64(addr(t, &i), t->dtype); }

static bool next(int ndim, const int64_t *shape, int64_t *idx)
{
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

/* v rounded to dt as a store would round it */
static double as_dtype(double v, nn_dtype dt)
{
    char buf[8];
    nn_store_f64(buf, dt, v);
    return nn_load_f64(buf, dt);
}

static bool error_has(const char *s) { return strstr(nn_last_error(), s) != NULL; }

static bool all_equal(const nn_tensor *t, double v)
{
    if (!t) return false;
    int64_t idx[NN_MAX_DIMS] = {0};
    if (!nn_numel(t)) return true;
    bool ok = true;
    do ok &= at(t, idx) == v;
    while (next(t->ndim, t->shape, idx));
    return ok;
}

static void test_fill(void)
{
    for (int di = 0; di < NDT; di++) {
        nn_dtype dt = all_dtypes[di];
        nn_tensor *z = nn_zeros(SHAPE(3, 4), dt, NN_DEVICE_CPU), *o = nn_ones(SHAPE(2, 1, 5), dt, NN_DEVICE_CPU);
        CHECK(z && z->dtype == dt && z->ndim == 2 && all_equal(z, 0), "zeros %s", nn_dtype_name(dt));
        CHECK(o && o->dtype == dt && nn_numel(o) == 10 && all_equal(o, 1), "ones %s", nn_dtype_name(dt));
        nn_release(z), nn_release(o);
        double v = dt == NN_BOOL ? 1 : dt == NN_U8 ? 200 : -3;
        nn_tensor *f = nn_full(SHAPE(7), v, dt, NN_DEVICE_CPU);
        CHECK(all_equal(f, v), "full %s", nn_dtype_name(dt));
        nn_release(f);
        f = nn_full(0, NULL, 2.5, dt, NN_DEVICE_CPU); /* 0-dim */
        CHECK(f && f->ndim == 0 && at(f, NULL) == (dt == NN_BOOL ? 1 : nn_dtype_is_float(dt) ? 2.5 : 2), "full 0-dim %s",
              nn_dtype_name(dt));
        nn_release(f);
        f = nn_full(SHAPE(0, 3), 1, dt, NN_DEVICE_CPU);
        CHECK(f && nn_numel(f) == 0, "full empty %s", nn_dtype_name(dt));
        nn_release(f);
    }
    nn_tensor *z = nn_zeros(SHAPE(2), NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(z && z->dtype == NN_F32);
    nn_release(z);
    nn_tensor *f = nn_full(SHAPE(2), -1.75, NN_I64, NN_DEVICE_CPU);
    CHECK(all_equal(f, -1), "float value into int64 truncates");
    nn_release(f);
    f = nn_full(SHAPE(2), 4611686018427387904.0, NN_I64, NN_DEVICE_CPU);
    CHECK(f && at1_i(f, 1) == INT64_C(4611686018427387904));
    nn_release(f);
    f = nn_full(SHAPE(2), 0.5, NN_BOOL, NN_DEVICE_CPU);
    CHECK(all_equal(f, 1));
    nn_release(f);
    f = nn_full(SHAPE(3), NAN, NN_F16, NN_DEVICE_CPU);
    CHECK(f && isnan(at1(f, 2)));
    nn_release(f);
    f = nn_full(SHAPE(3), -INFINITY, NN_F32, NN_DEVICE_CPU);
    CHECK(f && at1(f, 0) == -INFINITY);
    nn_release(f);
    f = nn_full(SHAPE(3), 0.1, NN_BF16, NN_DEVICE_CPU);
    CHECK(all_equal(f, as_dtype(0.1, NN_BF16)));
    nn_release(f);
    CHECK(!nn_full(SHAPE(2), 300, NN_U8, NN_DEVICE_CPU) && error_has("full: value cannot be converted to type uint8 without overflow"),
          "%s", nn_last_error());
    CHECK(!nn_full(SHAPE(2), -1, NN_U8, NN_DEVICE_CPU) && error_has("overflow"));
    CHECK(!nn_full(SHAPE(2), 1e5, NN_F16, NN_DEVICE_CPU) && error_has("float16"));
    CHECK(!nn_full(SHAPE(2), 3e9, NN_I32, NN_DEVICE_CPU) && error_has("int32"));
    CHECK(!nn_full(SHAPE(2), NAN, NN_I64, NN_DEVICE_CPU) && error_has("int64"));
    CHECK(!nn_full(SHAPE(2), 9223372036854775808.0, NN_I64, NN_DEVICE_CPU) && error_has("int64"));
    CHECK(!nn_zeros(SHAPE(2, -1), NN_F32, NN_DEVICE_CPU) && error_has("negative dimension"));
}

static void test_arange(void)
{
    nn_tensor *a = nn_arange(0, 10, 1, true, NN_DTYPE_NONE, NN_DEVICE_CPU);
    bool ok = a && a->dtype == NN_I64 && a->ndim == 1 && a->shape[0] == 10;
    for (int64_t j = 0; ok && j < 10; j++) ok &= at1_i(a, j) == j;
    CHECK(ok, "arange(10)");
    nn_release(a);
    a = nn_arange(0, 1, 0.1, false, NN_DTYPE_NONE, NN_DEVICE_CPU);
    ok = a && a->dtype == NN_F32 && a->shape[0] == 10;
    for (int64_t j = 0; ok && j < 10; j++) ok &= at1(a, j) == (double)(float)(j * 0.1);
    CHECK(ok, "arange(0, 1, 0.1) has 10 elements, j*0.1");
    nn_release(a);
    a = nn_arange(10, 0, -3, true, NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(a && a->shape[0] == 4 && at1_i(a, 0) == 10 && at1_i(a, 1) == 7 && at1_i(a, 3) == 1);
    nn_release(a);
    a = nn_arange(0, 5, 1.5, false, NN_F64, NN_DEVICE_CPU);
    CHECK(a && a->dtype == NN_F64 && a->shape[0] == 4 && at1(a, 3) == 4.5);
    nn_release(a);
    a = nn_arange(-1, 1, 0.25, false, NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(a && a->shape[0] == 8 && at1(a, 0) == -1 && at1(a, 7) == 0.75);
    nn_release(a);
    a = nn_arange(5, 5, 1, true, NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(a && a->ndim == 1 && a->shape[0] == 0, "empty arange");
    nn_release(a);
    a = nn_arange(1, 2, 0.3, false, NN_DTYPE_NONE, NN_DEVICE_CPU); /* ceil(3.33) = 4 */
    CHECK(a && a->shape[0] == 4);
    nn_release(a);
    a = nn_arange(-3, 4, 2, true, NN_DTYPE_NONE, NN_DEVICE_CPU); /* -3 -1 1 3 */
    CHECK(a && a->shape[0] == 4 && at1_i(a, 3) == 3);
    nn_release(a);
    a = nn_arange(0, 6, 2, true, NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(a && a->shape[0] == 3);
    nn_release(a);
    for (int di = 0; di < NDT - 1; di++) {
        nn_dtype dt = all_dtypes[di];
        a = nn_arange(0, 7, 1, true, dt, NN_DEVICE_CPU);
        ok = a && a->dtype == dt && a->shape[0] == 7;
        for (int64_t j = 0; ok && j < 7; j++) ok &= at1(a, j) == (double)j;
        CHECK(ok, "arange in %s", nn_dtype_name(dt));
        nn_release(a);
    }
    CHECK(!nn_arange(0, 2, 1, true, NN_BOOL, NN_DEVICE_CPU) && error_has("not implemented for 'bool'"));
    /* integer dtypes truncate start, end and step first (int64 sizes in integer arithmetic) */
    a = nn_arange(0, 5, 1.5, false, NN_I64, NN_DEVICE_CPU);
    CHECK(a && a->shape[0] == 5 && at1_i(a, 4) == 4, "int64 arange truncates the step");
    nn_release(a);
    a = nn_arange(0, 5, 1.5, false, NN_I32, NN_DEVICE_CPU);
    CHECK(a && a->shape[0] == 4 && at1_i(a, 3) == 3, "int32 arange: double size, truncated step");
    nn_release(a);
    a = nn_arange(0.9, 2.5, 1, false, NN_I64, NN_DEVICE_CPU);
    CHECK(a && a->shape[0] == 2 && at1_i(a, 1) == 1);
    nn_release(a);
    CHECK(!nn_arange(0, 5, 0.5, false, NN_I64, NN_DEVICE_CPU) && error_has("step must be nonzero"));
    a = nn_arange(0, 9007199254740993.0, 4503599627370496.0, true, NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(a && a->shape[0] == 2, "int64 sizes exact");
    nn_release(a);
    CHECK(!nn_arange(0, 10, 0, true, NN_DTYPE_NONE, NN_DEVICE_CPU) && error_has("step must be nonzero"));
    CHECK(!nn_arange(0, 10, -1, true, NN_DTYPE_NONE, NN_DEVICE_CPU) &&
          error_has("upper bound and larger bound inconsistent with step sign"));
    CHECK(!nn_arange(10, 0, 1, true, NN_DTYPE_NONE, NN_DEVICE_CPU) && error_has("inconsistent with step sign"));
    CHECK(!nn_arange(0, INFINITY, 1, false, NN_DTYPE_NONE, NN_DEVICE_CPU) && error_has("unsupported range"));
}

/* PyTorch's formula, in double, then rounded to dt. float32 as PyTorch's CUDA kernel: the ends and
 * the step rounded to float, each value one fused multiply-add (step * i is exact in double, so the
 * double sum rounded to float is that single rounding in these cases). */
static double linspace_ref(double start, double end, int64_t steps, int64_t i, nn_dtype dt)
{
    if (steps == 1) return as_dtype(start, dt);
    if (dt == NN_F32) {
        float fs = (float)start, fe = (float)end, fstep = (fe - fs) / (float)(steps - 1);
        return (float)(i < steps / 2 ? fs + (double)fstep * (double)i : fe - (double)fstep * (double)(steps - 1 - i));
    }
    double step = (end - start) / (double)(steps - 1);
    return as_dtype(i < steps / 2 ? start + (double)i * step : end - (double)(steps - 1 - i) * step, dt);
}

static void test_linspace(void)
{
    struct { double start, end; int64_t steps; } cases[] = {
        {0, 1, 5}, {-1, 7, 7}, {3, 3, 4}, {1, -2, 6}, {0.1, 0.7, 1000}, {2.5, 9, 1}, {-4, 4, 2}, {0, 10, 5}, {1e-3, 1, 101}, {5, 0, 3},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        for (int di = 0; di < NDT; di++) {
            nn_dtype dt = all_dtypes[di];
            double s = cases[c].start, e = cases[c].end;
            int64_t n = cases[c].steps;
            nn_tensor *l = nn_linspace(s, e, n, dt, NN_DEVICE_CPU);
            bool ok = l && l->dtype == dt && l->ndim == 1 && l->shape[0] == n;
            for (int64_t i = 0; ok && i < n; i++) ok &= at1(l, i) == linspace_ref(s, e, n, i, dt);
            CHECK(ok, "linspace(%g, %g, %lld) %s", s, e, (long long)n, nn_dtype_name(dt));
            if (ok && nn_dtype_is_float(dt))
                CHECK(at1(l, 0) == as_dtype(s, dt) && (n == 1 || at1(l, n - 1) == as_dtype(e, dt)), "endpoints exact");
            nn_release(l);
        }
    nn_tensor *l = nn_linspace(0, 1, 0, NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(l && l->dtype == NN_F32 && l->ndim == 1 && l->shape[0] == 0);
    nn_release(l);
    l = nn_linspace(0, 10, 5, NN_I64, NN_DEVICE_CPU); /* 0 2.5 5 7.5 10 truncated */
    CHECK(l && at1_i(l, 1) == 2 && at1_i(l, 3) == 7 && at1_i(l, 4) == 10);
    nn_release(l);
    l = nn_linspace(0, 1, 5, NN_F64, NN_DEVICE_CPU);
    CHECK(l && at1(l, 1) == 0.25 && at1(l, 2) == 0.5 && at1(l, 3) == 0.75 && at1(l, 4) == 1);
    nn_release(l);
    CHECK(!nn_linspace(0, 1, -1, NN_DTYPE_NONE, NN_DEVICE_CPU) && error_has("number of steps must be non-negative"));
}

static void test_eye(void)
{
    int64_t dims[][2] = {{3, -1}, {2, 5}, {5, 2}, {0, -1}, {1, 1}, {4, 0}};
    for (size_t c = 0; c < sizeof dims / sizeof *dims; c++)
        for (int di = 0; di < NDT; di++) {
            nn_dtype dt = all_dtypes[di];
            int64_t n = dims[c][0], m = dims[c][1] < 0 ? n : dims[c][1];
            nn_tensor *e = nn_eye(dims[c][0], dims[c][1], dt, NN_DEVICE_CPU);
            bool ok = e && e->dtype == dt && e->ndim == 2 && e->shape[0] == n && e->shape[1] == m;
            for (int64_t i = 0; ok && i < n; i++)
                for (int64_t j = 0; j < m; j++) ok &= at(e, (int64_t[]){i, j}) == (i == j);
            CHECK(ok, "eye(%lld, %lld) %s", (long long)n, (long long)m, nn_dtype_name(dt));
            nn_release(e);
        }
    nn_tensor *e = nn_eye(2, -1, NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(e && e->dtype == NN_F32);
    nn_release(e);
    CHECK(!nn_eye(-1, 2, NN_F32, NN_DEVICE_CPU) && error_has("n must be greater or equal to 0, got -1"));
}

/* ---- random ---- */

static void test_philox_kat(void)
{
    uint32_t out[4];
    nn_philox4x32_10((const uint32_t[4]){0, 0, 0, 0}, (const uint32_t[2]){0, 0}, out);
    CHECK(out[0] == 0x6627e8d5u && out[1] == 0xe169c58du && out[2] == 0xbc57ac4cu && out[3] == 0x9b00dbd8u,
          "%08x %08x %08x %08x", out[0], out[1], out[2], out[3]);
    nn_philox4x32_10((const uint32_t[4]){~0u, ~0u, ~0u, ~0u}, (const uint32_t[2]){~0u, ~0u}, out);
    CHECK(out[0] == 0x408f276du && out[1] == 0x41c83b0eu && out[2] == 0xa20bc7c6u && out[3] == 0x6d5451fdu,
          "%08x %08x %08x %08x", out[0], out[1], out[2], out[3]);
    /* Random123's third vector: pi digits */
    nn_philox4x32_10((const uint32_t[4]){0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
                     (const uint32_t[2]){0xa4093822u, 0x299f31d0u}, out);
    CHECK(out[0] == 0xd16cfe09u && out[1] == 0x94fdccebu && out[2] == 0x5001e420u && out[3] == 0x24126ea1u,
          "%08x %08x %08x %08x", out[0], out[1], out[2], out[3]);
}

static bool same(const nn_tensor *a, const nn_tensor *b)
{
    if (!a || !b || a->ndim != b->ndim || a->dtype != b->dtype || memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape)) return false;
    int64_t idx[NN_MAX_DIMS] = {0};
    if (!nn_numel(a)) return true;
    size_t es = nn_dtype_size(a->dtype);
    bool ok = true;
    do ok &= !memcmp(addr(a, idx), addr(b, idx), es);
    while (next(a->ndim, a->shape, idx));
    return ok;
}

static void test_reproducible(void)
{
    CHECK(nn_initial_seed() == 67280421310721ull, "default seed");
    nn_manual_seed(42);
    CHECK(nn_initial_seed() == 42);
    nn_tensor *a = nn_rand(SHAPE(100, 10), NN_DTYPE_NONE, NN_DEVICE_CPU);
    nn_tensor *b = nn_rand(SHAPE(100, 10), NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(a && b && a->dtype == NN_F32 && !same(a, b), "two draws differ");
    nn_manual_seed(42);
    nn_tensor *a2 = nn_rand(SHAPE(100, 10), NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(same(a, a2), "same seed, same numbers");
    nn_release(a2);
    nn_manual_seed(42); /* one draw of 2000 continues where one of 1000 ended */
    nn_tensor *c = nn_rand(SHAPE(2000), NN_F32, NN_DEVICE_CPU);
    bool ok = c != NULL;
    for (int64_t j = 0; ok && j < 2000; j++) ok &= at1(c, j) == at(j < 1000 ? a : b, (int64_t[]){j % 1000 / 10, j % 10});
    CHECK(ok, "counters continue across draws");
    nn_release(c);
    nn_manual_seed(43);
    a2 = nn_rand(SHAPE(100, 10), NN_DTYPE_NONE, NN_DEVICE_CPU);
    int diff = 0;
    for (int64_t j = 0; a2 && j < 1000; j++) diff += at(a, (int64_t[]){j / 10, j % 10}) != at(a2, (int64_t[]){j / 10, j % 10});
    CHECK(diff > 990, "another seed, other numbers (%d differ)", diff);
    nn_release(a2), nn_release(a), nn_release(b);

    for (int k = 0; k < 4; k++) {
        nn_dtype dt = float_dtypes[k];
        nn_manual_seed(7);
        a = nn_randn(SHAPE(3, 5), dt, NN_DEVICE_CPU);
        nn_manual_seed(7);
        b = nn_randn(SHAPE(3, 5), dt, NN_DEVICE_CPU);
        CHECK(a && a->dtype == dt && same(a, b), "randn reproducible %s", nn_dtype_name(dt));
        nn_release(a), nn_release(b);
    }
    nn_manual_seed(9);
    a = nn_randint(-5, 5, SHAPE(50), NN_DTYPE_NONE, NN_DEVICE_CPU);
    nn_manual_seed(9);
    b = nn_randint(-5, 5, SHAPE(50), NN_DTYPE_NONE, NN_DEVICE_CPU);
    CHECK(a && a->dtype == NN_I64 && same(a, b), "randint reproducible");
    nn_release(a), nn_release(b);
}

/* Element j is a function of (seed, offset + j) only: check the exact values of the first draw. */
static void test_known_mapping(void)
{
    uint64_t seed = 0x123456789abcdefull;
    nn_manual_seed(seed);
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)}, w[4];
    const uint32_t N = 37; /* groups of 8 and a remainder */
    nn_tensor *f = nn_rand(SHAPE(N), NN_F32, NN_DEVICE_CPU);
    nn_tensor *d = nn_rand(SHAPE(N), NN_F64, NN_DEVICE_CPU);
    nn_tensor *n = nn_randn(SHAPE(N), NN_F64, NN_DEVICE_CPU);
    nn_tensor *r = nn_randint(10, 20, SHAPE(N), NN_I64, NN_DEVICE_CPU);
    bool okf = f && d && n && r, okd = okf, okn = okf, okr = okf;
    for (uint32_t j = 0; okf && j < N; j++) {
        nn_philox4x32_10((const uint32_t[4]){j, 0, 0, 0}, key, w);
        okf &= at1(f, j) == (double)(w[0] >> 8) / 16777216.0;
        nn_philox4x32_10((const uint32_t[4]){N + j, 0, 0, 0}, key, w);
        okd &= at1(d, j) == (double)((((uint64_t)w[0] << 32) | w[1]) >> 11) / 9007199254740992.0;
        nn_philox4x32_10((const uint32_t[4]){2 * N + j, 0, 0, 0}, key, w);
        double u1 = 1 - (double)((((uint64_t)w[0] << 32) | w[1]) >> 11) / 9007199254740992.0;
        double u2 = (double)((((uint64_t)w[2] << 32) | w[3]) >> 11) / 9007199254740992.0;
        okn &= fabs(at1(n, j) - sqrt(-2 * log(u1)) * cos(2 * M_PI * u2)) < 1e-12;
        nn_philox4x32_10((const uint32_t[4]){3 * N + j, 0, 0, 0}, key, w);
        okr &= at1_i(r, j) == 10 + w[0] % 10;
    }
    CHECK(okf, "rand float32 from philox word 0");
    CHECK(okd, "rand float64 from words 0, 1");
    CHECK(okn, "randn float64 Box-Muller");
    CHECK(okr, "randint from word 0");
    nn_release(f), nn_release(d), nn_release(n), nn_release(r);
    /* counters past 2^32 carry into the second counter word */
    uint64_t off;
    nn_philox_reserve((1ull << 32) - 3 - 4 * N, &off);
    f = nn_rand(SHAPE(N), NN_F32, NN_DEVICE_CPU);
    bool ok = f != NULL;
    for (uint64_t j = 0; ok && j < N; j++) {
        uint64_t ctr = (1ull << 32) - 3 + j;
        nn_philox4x32_10((const uint32_t[4]){(uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0}, key, w);
        ok &= at1(f, (int64_t)j) == (double)(w[0] >> 8) / 16777216.0;
    }
    CHECK(ok && off == 4 * N, "64-bit counters");
    nn_release(f);
}

/* A fill of a non-contiguous tensor equals a contiguous fill read back in logical order. */
static void test_layout_independent(void)
{
    for (int k = 0; k < 4; k++) {
        nn_dtype dt = float_dtypes[k];
        for (int op = 0; op < 3; op++) {
            nn_manual_seed(1000 + op);
            nn_tensor *ref = op == 0 ? nn_rand(SHAPE(5, 7), dt, NN_DEVICE_CPU)
                           : op == 1 ? nn_normal(2, 3, SHAPE(5, 7), dt, NN_DEVICE_CPU)
                                     : nn_randint(-50, 50, SHAPE(5, 7), dt, NN_DEVICE_CPU);
            /* [5, 7] as the transpose of a [7, 10] tensor's even columns */
            nn_tensor *big = nn_zeros(SHAPE(7, 10), dt, NN_DEVICE_CPU);
            nn_tensor *cols = nn_slice(big, 1, 0, 10, 2), *view = cols ? nn_transpose(cols, 0, 1) : NULL;
            nn_manual_seed(1000 + op);
            nn_status s = NN_ERR_ARG;
            if (view && op == 0) s = nn_uniform_(view, 0, 1);
            if (view && op == 1) s = nn_normal_(view, 2, 3);
            if (view && op == 2) { /* there is no in-place randint: draw fresh and compare the same way */
                nn_tensor *r2 = nn_randint(-50, 50, SHAPE(5, 7), dt, NN_DEVICE_CPU);
                s = r2 && same(r2, ref) ? NN_OK : NN_ERR_ARG;
                nn_release(r2);
            }
            CHECK(s == NN_OK, "fill %s op %d", nn_dtype_name(dt), op);
            if (op < 2) {
                CHECK(same(ref, view), "strided fill = contiguous fill, %s op %d", nn_dtype_name(dt), op);
                bool zeros_kept = true; /* odd columns untouched */
                for (int64_t i = 0; i < 7; i++)
                    for (int64_t j = 1; j < 10; j += 2) zeros_kept &= at(big, (int64_t[]){i, j}) == 0;
                CHECK(zeros_kept, "only the view was written");
            }
            nn_release(view), nn_release(cols), nn_release(big), nn_release(ref);
        }
    }
    /* an expanded-then-permuted 3-D layout, float64 normal_ */
    nn_manual_seed(5);
    nn_tensor *ref = nn_randn(SHAPE(3, 4, 2), NN_F64, NN_DEVICE_CPU);
    nn_tensor *base = nn_empty(3, (int64_t[]){2, 3, 4}, NN_F64, NN_DEVICE_CPU);
    nn_tensor *p = nn_permute(base, (int[]){1, 2, 0});
    nn_manual_seed(5);
    CHECK(nn_normal_(p, 0, 1) == NN_OK && same(ref, p), "permuted normal_");
    nn_release(p), nn_release(base), nn_release(ref);
}

static void moments(const nn_tensor *t, double *mean, double *var)
{
    int64_t n = nn_numel(t);
    double s = 0, s2 = 0;
    for (int64_t j = 0; j < n; j++) {
        double v = at1(t, j);
        s += v, s2 += v * v;
    }
    *mean = s / (double)n;
    *var = s2 / (double)n - *mean * *mean;
}

static void test_distributions(void)
{
    nn_manual_seed(2024);
    double m, v;
    for (int k = 0; k < 2; k++) {
        nn_dtype dt = float_dtypes[k];
        nn_tensor *u = nn_rand(SHAPE(1000000), dt, NN_DEVICE_CPU);
        double lo = 1, hi = 0;
        for (int64_t j = 0; u && j < 1000000; j++) {
            double x = at1(u, j);
            lo = x < lo ? x : lo, hi = x > hi ? x : hi;
        }
        CHECK(u && lo >= 0 && hi < 1 && lo < 1e-4 && hi > 1 - 1e-4, "rand range %s: [%g, %g]", nn_dtype_name(dt), lo, hi);
        if (u) moments(u, &m, &v);
        CHECK(u && fabs(m - 0.5) < 2e-3 && fabs(v - 1.0 / 12) < 1e-3, "uniform moments %s: %g %g", nn_dtype_name(dt), m, v);
        nn_release(u);
        nn_tensor *g = nn_randn(SHAPE(1000, 1000), dt, NN_DEVICE_CPU);
        nn_tensor *gf = g ? nn_reshape(g, SHAPE(-1)) : NULL;
        if (gf) moments(gf, &m, &v);
        CHECK(gf && fabs(m) < 5e-3 && fabs(v - 1) < 1e-2, "normal moments %s: %g %g", nn_dtype_name(dt), m, v);
        nn_release(gf), nn_release(g);
    }
    nn_tensor *g = nn_normal(3, 2, SHAPE(1000000), NN_F32, NN_DEVICE_CPU);
    if (g) moments(g, &m, &v);
    CHECK(g && fabs(m - 3) < 1e-2 && fabs(v - 4) < 4e-2, "normal(3, 2): %g %g", m, v);
    nn_release(g);
    nn_tensor *u = nn_empty(1, (int64_t[]){1000000}, NN_F32, NN_DEVICE_CPU);
    CHECK(nn_uniform_(u, -2, 5) == NN_OK);
    moments(u, &m, &v);
    double lo = 5, hi = -2;
    for (int64_t j = 0; j < 1000000; j++) {
        double x = at1(u, j);
        lo = x < lo ? x : lo, hi = x > hi ? x : hi;
    }
    CHECK(lo >= -2 && hi < 5 && fabs(m - 1.5) < 2e-2 && fabs(v - 49.0 / 12) < 3e-2, "uniform(-2, 5): [%g, %g] %g %g", lo, hi, m, v);
    uint32_t ver = u->storage->version;
    CHECK(nn_uniform_(u, 3, 3) == NN_OK && at1(u, 17) == 3, "from == to gives from");
    CHECK(u->storage->version == ver + 1, "uniform_ bumps the version");
    ver = u->storage->version;
    CHECK(nn_normal_(u, 0, 0) == NN_OK && at1(u, 5) == 0 && u->storage->version == ver + 1, "normal_ bumps the version");
    nn_release(u);
    /* half types: in [0, 1) strictly, including values that round up to 1 */
    for (int k = 2; k < 4; k++) {
        nn_tensor *h = nn_rand(SHAPE(200000), float_dtypes[k], NN_DEVICE_CPU);
        bool ok = h != NULL;
        for (int64_t j = 0; ok && j < 200000; j++) ok &= at1(h, j) >= 0 && at1(h, j) < 1;
        CHECK(ok, "rand %s in [0, 1)", nn_dtype_name(float_dtypes[k]));
        if (h) moments(h, &m, &v);
        CHECK(h && fabs(m - 0.5) < 1e-2, "rand %s mean %g", nn_dtype_name(float_dtypes[k]), m);
        nn_release(h);
    }
    nn_tensor *e = nn_rand(SHAPE(0, 4), NN_F32, NN_DEVICE_CPU);
    CHECK(e && nn_numel(e) == 0, "empty rand");
    nn_release(e);
    e = nn_randn(0, NULL, NN_F64, NN_DEVICE_CPU);
    CHECK(e && e->ndim == 0 && isfinite(at(e, NULL)), "0-dim randn");
    nn_release(e);
}

static void test_randint(void)
{
    struct { nn_dtype dt; int64_t low, high; } cases[] = {
        {NN_I64, -3, 4}, {NN_I32, -100, -90}, {NN_U8, 0, 5}, {NN_U8, 250, 256}, {NN_BOOL, 0, 2},
        {NN_F32, -3, 4}, {NN_F64, 0, 3}, {NN_F16, 10, 13}, {NN_BF16, -2, 2}, {NN_I64, 0, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        nn_dtype dt = cases[c].dt;
        int64_t lo = cases[c].low, hi = cases[c].high, n = 20000;
        nn_tensor *r = nn_randint(lo, hi, SHAPE(n), dt, NN_DEVICE_CPU);
        int64_t seen[16] = {0};
        bool ok = r && r->dtype == dt;
        for (int64_t j = 0; ok && j < n; j++) {
            int64_t x = at1_i(r, j);
            ok &= x >= lo && x < hi && at1(r, j) == (double)x;
            if (ok) seen[x - lo]++;
        }
        for (int64_t k = 0; ok && k < hi - lo; k++) ok &= seen[k] > n / (hi - lo) / 2;
        CHECK(ok, "randint [%lld, %lld) %s", (long long)lo, (long long)hi, nn_dtype_name(dt));
        nn_release(r);
    }
    /* a range past 2^32 uses 64 bits */
    int64_t lo = -(INT64_C(1) << 40), hi = INT64_C(1) << 40;
    nn_tensor *r = nn_randint(lo, hi, SHAPE(10000), NN_DTYPE_NONE, NN_DEVICE_CPU);
    bool ok = r != NULL, big = false;
    double mean = 0;
    for (int64_t j = 0; ok && j < 10000; j++) {
        int64_t x = at1_i(r, j);
        ok &= x >= lo && x < hi;
        big |= x > (INT64_C(1) << 33) || x < -(INT64_C(1) << 33);
        mean += (double)x / 10000;
    }
    CHECK(ok && big && fabs(mean) < 0.05 * (double)hi, "randint wide range, mean %g", mean);
    nn_release(r);
    r = nn_randint(INT64_MIN, INT64_MAX, SHAPE(100), NN_I64, NN_DEVICE_CPU);
    CHECK(r != NULL, "full int64 range");
    nn_release(r);

    CHECK(!nn_randint(5, 5, SHAPE(3), NN_DTYPE_NONE, NN_DEVICE_CPU) &&
          error_has("random_ expects 'from' to be less than 'to', but got from=5 >= to=5"), "%s", nn_last_error());
    CHECK(!nn_randint(0, 300, SHAPE(3), NN_U8, NN_DEVICE_CPU) && error_has("uint8"));
    CHECK(!nn_randint(-1, 2, SHAPE(3), NN_BOOL, NN_DEVICE_CPU) && error_has("bool"));
}

static void test_random_errors(void)
{
    CHECK(!nn_rand(SHAPE(3), NN_I64, NN_DEVICE_CPU) && error_has("rand: expected a floating point dtype, but got int64"), "%s",
          nn_last_error());
    CHECK(!nn_randn(SHAPE(3), NN_BOOL, NN_DEVICE_CPU) && error_has("randn") && error_has("bool"));
    CHECK(!nn_normal(0, -1, SHAPE(3), NN_F32, NN_DEVICE_CPU) && error_has("normal expects std >= 0.0, but found std -1"), "%s",
          nn_last_error());
    nn_tensor *t = nn_empty(1, (int64_t[]){4}, NN_F32, NN_DEVICE_CPU);
    uint32_t ver = t->storage->version;
    CHECK(nn_uniform_(t, 2, 1) == NN_ERR_ARG && error_has("uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
          "%s", nn_last_error());
    CHECK(nn_uniform_(t, 0, INFINITY) == NN_ERR_ARG && error_has("finite"));
    CHECK(nn_normal_(t, 0, -2) == NN_ERR_ARG && error_has("std -2"));
    CHECK(t->storage->version == ver, "no bump on error");
    nn_release(t);
    t = nn_empty(1, (int64_t[]){4}, NN_I32, NN_DEVICE_CPU);
    CHECK(nn_uniform_(t, 0, 1) != NN_OK && error_has("int32"));
    CHECK(nn_normal_(t, 0, 1) != NN_OK && error_has("int32"));
    nn_release(t);
}

int main(void)
{
    test_fill();
    test_arange();
    test_linspace();
    test_eye();
    test_philox_kat();
    test_reproducible();
    test_known_mapping();
    test_layout_independent();
    test_distributions();
    test_randint();
    test_random_errors();
    return CHECK_REPORT();
}
