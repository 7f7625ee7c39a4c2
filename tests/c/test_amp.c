/* GradScaler kernels: amp_unscale over gradient lists of every float dtype and layout
 * (contiguous, transposed, narrowed, channels-last, empty, NULL entries) against a
 * plain loop, inf/nan detection in any one gradient, found_inf never cleared,
 * inv_scale 1 leaving every bit alone; amp_update_scale's sequence for an inf pattern
 * against PyTorch's rule written out here, no growth to inf; argument errors; nn_cast_checked's
 * flags standing for a tensor's values until it is written again. */
#include <math.h>
#include <string.h>

#include "amp.h"
#include "check.h"
#include "memory_format.h"
#include "ops.h"

static uint64_t rng_state = 0x1234567887654321ull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

enum { CONTIG, TRANSPOSED, NARROWED, CHANNELS_LAST, NLAYOUTS };

/* values in [-8, 8) (powers-of-two scaling is exact in every dtype) */
static nn_tensor *grad(int nd, const int64_t *shape, nn_dtype dt, int layout)
{
    int64_t bshape[NN_MAX_DIMS], bstr[NN_MAX_DIMS], strides[NN_MAX_DIMS], offset = 0;
    memcpy(bshape, shape, sizeof(int64_t) * (size_t)nd);
    if (layout == TRANSPOSED) bshape[0] = shape[1], bshape[1] = shape[0];
    if (layout == NARROWED) bshape[nd - 1] += 3;
    nn_tensor *base = nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(base); i++)
        nn_store_f64((char *)nn_data(base) + i * (int64_t)nn_dtype_size(dt), dt, 16 * urand() - 8);
    nn_contiguous_strides(nd, bshape, bstr);
    memcpy(strides, bstr, sizeof(int64_t) * (size_t)nd);
    if (layout == TRANSPOSED) strides[0] = bstr[1], strides[1] = bstr[0];
    if (layout == NARROWED) offset = 1;
    nn_tensor *v = nn_make_view(base, nd, shape, strides, offset);
    nn_release(base);
    if (layout == CHANNELS_LAST) {
        nn_tensor *c = nn_contiguous_as(v, NN_CHANNELS_LAST);
        nn_release(v);
        v = c;
    }
    return v;
}

static nn_tensor *f32_scalar(float v)
{
    nn_tensor *t = nn_empty(0, NULL, NN_F32, NN_DEVICE_CPU);
    *(float *)nn_data(t) = v;
    return t;
}

static float f32_of(const nn_tensor *t) { return *(const float *)nn_data(t); }

/* every element of t in logical order as double */
static void values(const nn_tensor *t, double *out)
{
    int64_t idx[NN_MAX_DIMS] = {0}, n = nn_numel(t);
    for (int64_t i = 0; i < n; i++) {
        out[i] = nn_get_f64(t, idx);
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* element i (logical order) of t, set to v */
static void set_at(nn_tensor *t, int64_t i, double v)
{
    int64_t idx[NN_MAX_DIMS];
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = i % t->shape[d];
        i /= t->shape[d];
    }
    int64_t off = t->offset;
    for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
    nn_store_f64((char *)t->storage->data + off * (int64_t)nn_dtype_size(t->dtype), t->dtype, v);
}

/* the unscaled value PyTorch writes: in float (double for float64), rounded to the dtype */
static double unscaled(double v, float inv, nn_dtype dt)
{
    if (inv == 1.f) return v;
    if (dt == NN_F64) return v * (double)inv;
    float r = (float)v * inv;
    if (dt == NN_F16) return nn_half_to_float(nn_float_to_half(r));
    if (dt == NN_BF16) return nn_bf16_to_float(nn_float_to_bf16(r));
    return r;
}

#define NG 18
static void test_unscale(void)
{
    static const nn_dtype dts[4] = {NN_F32, NN_F64, NN_F16, NN_BF16};
    int64_t s2[2] = {5, 7}, s4[4] = {2, 3, 4, 5}, s0[2] = {0, 3};
    for (int trial = 0; trial < 7; trial++) {
        /* grads: every dtype in every layout, plus an empty one and a NULL entry */
        nn_tensor *g[NG + 2];
        int n = 0;
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < NLAYOUTS; l++)
                if (l != NARROWED || k < 2) g[n++] = l == CHANNELS_LAST ? grad(4, s4, dts[k], l) : grad(2, s2, dts[k], l);
        g[n++] = nn_empty(2, s0, NN_F32, NN_DEVICE_CPU);
        g[n++] = NULL;
        /* trial 0: clean, inv 0.25; 1: clean, inv 1; 2..5: an inf, -inf or nan in one gradient; 6: found_inf already 1 */
        float inv = trial == 1 ? 1.f : 0.25f;
        int bad = trial >= 2 && trial <= 5 ? (trial * 5) % (n - 2) : -1;
        double poison = trial == 2 ? INFINITY : trial == 3 ? -INFINITY : NAN;
        if (bad >= 0) set_at(g[bad], 7, poison);
        double before[NG + 2][128], after[128];
        for (int k = 0; k < n; k++)
            if (g[k]) values(g[k], before[k]);
        uint32_t v0 = g[0]->storage->version;
        nn_tensor *found = f32_scalar(trial == 6 ? 1.f : 0.f), *is = f32_scalar(inv);
        nn_status st = nn_amp_unscale_(n, g, found, is);
        CHECK(st == NN_OK, "unscale: %s", nn_last_error());
        CHECK(f32_of(found) == (bad >= 0 || trial == 6 ? 1.f : 0.f), "trial %d: found_inf %g", trial, f32_of(found));
        bool ok = g[0]->storage->version != v0;
        for (int k = 0; k < n; k++) {
            if (!g[k]) continue;
            values(g[k], after);
            for (int64_t i = 0; i < nn_numel(g[k]); i++) {
                double want = unscaled(before[k][i], inv, g[k]->dtype);
                ok &= (isnan(want) && isnan(after[i])) || (want == after[i] && signbit(want) == signbit(after[i]));
            }
        }
        CHECK(ok, "trial %d: every gradient scaled by %g", trial, inv);
        for (int k = 0; k < n; k++) nn_release(g[k]);
        nn_release(found), nn_release(is);
    }

    /* inv_scale 1 leaves every bit, NaN payloads included */
    nn_tensor *h = nn_empty(1, s2, NN_F32, NN_DEVICE_CPU);
    uint32_t bits[5] = {0x7fc00001u, 0x7f800000u, 0x3f800000u, 0x80000000u, 0xffc12345u};
    memcpy(nn_data(h), bits, sizeof bits);
    nn_tensor *found = f32_scalar(0), *one = f32_scalar(1), *list[1] = {h};
    CHECK(nn_amp_unscale_(1, list, found, one) == NN_OK && !memcmp(nn_data(h), bits, sizeof bits) && f32_of(found) == 1.f,
          "inv_scale 1: bits kept, nan found");
    /* an empty list is a no-op */
    CHECK(nn_amp_unscale_(0, list, found, one) == NN_OK, "empty list");
    nn_release(h), nn_release(found), nn_release(one);
}

static void test_unscale_errors(void)
{
    int64_t s[1] = {3}, two[1] = {2};
    nn_tensor *g = nn_ones(1, s, NN_F32, NN_DEVICE_CPU), *gi = nn_ones(1, s, NN_I64, NN_DEVICE_CPU);
    nn_tensor *found = f32_scalar(0), *inv = f32_scalar(0.5f);
    nn_tensor *found64 = nn_zeros(0, NULL, NN_F64, NN_DEVICE_CPU), *found2 = nn_zeros(1, two, NN_F32, NN_DEVICE_CPU);
    nn_tensor *list[1] = {g}, *ilist[1] = {gi};
    CHECK(nn_amp_unscale_(1, list, found64, inv) == NN_ERR_DTYPE && strstr(nn_last_error(), "found_inf must be a float tensor."),
          "found_inf dtype: %s", nn_last_error());
    CHECK(nn_amp_unscale_(1, list, found2, inv) == NN_ERR_SHAPE && strstr(nn_last_error(), "found_inf must be a 1-element tensor."),
          "found_inf size: %s", nn_last_error());
    CHECK(nn_amp_unscale_(1, list, found, found64) == NN_ERR_DTYPE && strstr(nn_last_error(), "inv_scale must be a float tensor."),
          "inv_scale dtype: %s", nn_last_error());
    CHECK(nn_amp_unscale_(1, ilist, found, inv) == NN_ERR_DTYPE && strstr(nn_last_error(), "int64"), "integer grad: %s", nn_last_error());
    int64_t i0[1] = {0};
    CHECK(nn_get_f64(g, i0) == 1, "nothing scaled on error");
    nn_release(g), nn_release(gi), nn_release(found), nn_release(inv), nn_release(found64), nn_release(found2);
}

/* PyTorch's _amp_update_scale_ rule, written out */
static void ref_update(double *scale, int *tracker, bool found, double growth, double backoff, int interval)
{
    if (found) {
        *scale = (float)(*scale * backoff);
        *tracker = 0;
        return;
    }
    if (*tracker + 1 == interval) {
        float grown = (float)(*scale * growth);
        if (isfinite(grown)) *scale = grown;
        *tracker = 0;
    } else {
        (*tracker)++;
    }
}

static void test_update(void)
{
    /* a pattern of inf steps; growth_interval 3 */
    static const char pattern[] = "..x...x.x....xx.......";
    nn_tensor *scale = f32_scalar(65536.f), *tracker = nn_zeros(0, NULL, NN_I32, NN_DEVICE_CPU), *found = f32_scalar(0);
    double ref = 65536;
    int rt = 0;
    bool ok = true;
    for (int i = 0; pattern[i]; i++) {
        *(float *)nn_data(found) = pattern[i] == 'x' ? 1.f : 0.f;
        ok &= nn_amp_update_scale_(scale, tracker, found, 2.0, 0.5, 3) == NN_OK;
        ref_update(&ref, &rt, pattern[i] == 'x', 2.0, 0.5, 3);
        ok &= f32_of(scale) == (float)ref && *(int32_t *)nn_data(tracker) == rt;
    }
    CHECK(ok, "scale sequence: got %g/%d, want %g/%d", f32_of(scale), *(int32_t *)nn_data(tracker), ref, rt);
    /* worked out by hand: an inf halves and restarts the count (steps 2, 6, 8, 13, 14), the third
     * clean step in a row doubles (steps 5, 11, 17, 20), and one clean step is left counted */
    CHECK(ref == 65536.0 * 0.5 * 2 * 0.5 * 0.5 * 2 * 0.5 * 0.5 * 2 * 2 && rt == 1, "hand-computed sequence (%g, %d)", ref, rt);

    /* never grows to inf; a nan flag counts as found */
    *(float *)nn_data(scale) = 3e38f;
    *(int32_t *)nn_data(tracker) = 0;
    *(float *)nn_data(found) = 0;
    nn_amp_update_scale_(scale, tracker, found, 2.0, 0.5, 1);
    CHECK(f32_of(scale) == 3e38f && *(int32_t *)nn_data(tracker) == 0, "no growth past float32");
    *(float *)nn_data(found) = NAN;
    nn_amp_update_scale_(scale, tracker, found, 2.0, 0.25, 1);
    CHECK(f32_of(scale) == 7.5e37f, "nan flag backs off");
    /* growth_interval 1: every clean step grows; uneven factors round through float */
    *(float *)nn_data(scale) = 1.f;
    *(float *)nn_data(found) = 0;
    nn_amp_update_scale_(scale, tracker, found, 1.1, 0.5, 1);
    CHECK(f32_of(scale) == (float)1.1 && *(int32_t *)nn_data(tracker) == 0, "growth by 1.1");

    nn_tensor *t64 = nn_zeros(0, NULL, NN_I64, NN_DEVICE_CPU), *s64 = nn_zeros(0, NULL, NN_F64, NN_DEVICE_CPU);
    CHECK(nn_amp_update_scale_(scale, t64, found, 2, 0.5, 3) == NN_ERR_DTYPE && strstr(nn_last_error(), "growth_tracker must be an int tensor."),
          "tracker dtype: %s", nn_last_error());
    CHECK(nn_amp_update_scale_(s64, tracker, found, 2, 0.5, 3) == NN_ERR_DTYPE && strstr(nn_last_error(), "current_scale must be a float tensor."),
          "scale dtype: %s", nn_last_error());
    CHECK(nn_amp_update_scale_(scale, tracker, s64, 2, 0.5, 3) == NN_ERR_DTYPE && strstr(nn_last_error(), "found_inf must be a float tensor."),
          "found dtype: %s", nn_last_error());
    nn_release(t64), nn_release(s64), nn_release(scale), nn_release(tracker), nn_release(found);
}

/* nn_cast_checked: the values of a plain cast, in the source's layout, and flags that
 * nn_amp_check_finite_ reads in place of the values until the tensor is written again */
static void test_cast_checked(void)
{
    static const nn_dtype from[2] = {NN_F16, NN_BF16};
    int64_t s4[4] = {2, 3, 4, 5}, big[1] = {40000};
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < 2; l++) {
            nn_tensor *g = l ? grad(4, s4, from[k], CHANNELS_LAST) : grad(1, big, from[k], CONTIG);
            nn_tensor *c = nn_cast_checked(g, NN_F32), *ref = nn_to_dtype(g, NN_F32);
            CHECK(c && ref, "cast_checked: %s", nn_last_error());
            if (!c || !ref) continue;
            double a[128], b[128];
            bool same = nn_same_strides(c, g) && c->finite_flags[0] && c->finite_flags[0]->dtype == NN_U8;
            if (nn_numel(c) <= 128) {
                values(c, a), values(ref, b);
                same &= !memcmp(a, b, sizeof(double) * (size_t)nn_numel(c));
            } else {
                same &= !memcmp(nn_data(c), nn_data(ref), (size_t)nn_numel(c) * 4);
            }
            CHECK(same, "cast_checked %s layout %d: values, layout, flags", nn_dtype_name(from[k]), l);
            nn_tensor *found = f32_scalar(0), *list[1] = {c};
            CHECK(!nn_amp_check_finite_(1, list, found) && f32_of(found) == 0, "clean: nothing found");
            nn_release(c), nn_release(ref), nn_release(found);
            /* an inf in the source: the flags say so; values the flags speak for are not read */
            set_at(g, 5, INFINITY);
            c = nn_cast_checked(g, NN_F32);
            found = f32_scalar(0), list[0] = c;
            float *p = nn_data(c);
            for (int64_t i = 0; i < nn_numel(c); i++) p[i] = 1.f; /* behind the engine's back: no version bump */
            CHECK(!nn_amp_check_finite_(1, list, found) && f32_of(found) == 1, "inf: found through the flags");
            /* written through the engine (version bumped): the values are read again */
            nn_tensor *one = f32_scalar(1);
            CHECK(!nn_fill_(c, 1.0), "fill_: %s", nn_last_error());
            *(float *)nn_data(found) = 0;
            CHECK(!nn_amp_check_finite_(1, list, found) && f32_of(found) == 0, "after fill_: the values are read, not the flags");
            p[3] = NAN;
            CHECK(!nn_amp_check_finite_(1, list, found) && f32_of(found) == 1, "after fill_: a nan in the values found");
            /* unscale_ always reads and writes the values */
            *(float *)nn_data(found) = 0;
            p[3] = 2.f;
            nn_bump_version(c);
            c->finite_version = c->storage->version; /* flags that claim an inf */
            CHECK(!nn_amp_unscale_(1, list, found, one) && f32_of(found) == 0, "unscale_ reads the values");
            nn_release(c), nn_release(g), nn_release(found), nn_release(one);
        }
    int64_t s[1] = {3};
    nn_tensor *i = nn_ones(1, s, NN_I64, NN_DEVICE_CPU);
    CHECK(!nn_cast_checked(i, NN_F32) && strstr(nn_last_error(), "floating point"), "cast_checked: an integer tensor is an error");
    nn_release(i);
}

int main(void)
{
    test_unscale();
    test_cast_checked();
    test_unscale_errors();
    test_update();
    return CHECK_REPORT();
}
