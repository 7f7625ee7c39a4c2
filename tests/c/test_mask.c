/* nn_mask_positions against a plain loop over multi-indices: bool and uint8 masks of
 * several shapes, contiguous, transposed, narrowed (offset, gaps) and expanded (zero
 * strides), 0-dim, empty, all false, all true; the dtype error; a mask on another device
 * (a fake backend over host memory) copied to the host and the positions copied back. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "check.h"
#include "layouts.h"
#include "cpu/kernels.h"
#include "device.h"
#include "mask.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}


/* A mask of the given shape and layout: entries true with probability p (uint8: values 0..3). */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind, double p)
{
    nn_tensor *base = layout_base(kind, nd, shape, dt);
    uint8_t *b = nn_data(base);
    for (int64_t i = 0; i < nn_numel(base); i++) b[i] = urand() < p ? (dt == NN_U8 ? (uint8_t)(1 + urand() * 3) : 1) : 0;
    return layout_view(base, kind, nd, shape);
}

/* The reference: count up a multi-index in row-major order, read each element on its own. */
static void check_mask(nn_tensor *m, const char *what)
{
    int64_t n = nn_numel(m), want[4096], k = 0, idx[NN_MAX_DIMS] = {0};
    for (int64_t flat = 0; flat < n; flat++) {
        if (nn_get_i64(m, idx)) want[k++] = flat;
        for (int d = m->ndim - 1; d >= 0; d--) {
            if (++idx[d] < m->shape[d]) break;
            idx[d] = 0;
        }
    }
    nn_tensor *pos = nn_mask_positions(m);
    CHECK(pos != NULL, "%s: %s", what, nn_last_error());
    if (!pos) return;
    CHECK(pos->dtype == NN_I64 && pos->ndim == 1 && pos->shape[0] == k, "%s: got %lld positions, want %lld", what,
          (long long)pos->shape[0], (long long)k);
    bool same = pos->shape[0] == k;
    for (int64_t i = 0; same && i < k; i++) same = nn_get_i64(pos, &i) == want[i];
    CHECK(same, "%s: positions differ", what);
    nn_release(pos);
}

/* ---- another device: a fake backend over host memory, counting the copies ---- */

static int fake_copies;
static void *fake_alloc(int idx, size_t n, bool pinned) { return malloc(n ? n : 1); }
static void fake_free(int idx, void *p, size_t n, bool pinned) { free(p); }
static nn_status fake_copy(void *dst, nn_device dd, const void *src, nn_device sd, size_t n)
{
    fake_copies++;
    memcpy(dst, src, n);
    return NN_OK;
}

static void test_device(void)
{
    static nn_backend fake = {.name = "fake", .alloc = fake_alloc, .free = fake_free, .copy = fake_copy};
    fake.kernels[NN_OP_copy] = nn_cpu_copy;
    nn_register_backend(NN_CUDA, &fake);
    nn_gpu = NULL; /* the fake backend stands in for a real one, which may be linked in */
    nn_device gpu = {NN_CUDA, 0};
    nn_tensor *m = nn_zeros(1, (int64_t[]){5}, NN_BOOL, NN_DEVICE_CPU);
    ((uint8_t *)nn_data(m))[0] = ((uint8_t *)nn_data(m))[3] = 1;
    nn_tensor *g = nn_to_device(m, gpu);
    CHECK(g && g->storage->device.type == NN_CUDA, "mask to the fake device: %s", nn_last_error());
    fake_copies = 0;
    nn_tensor *pos = g ? nn_mask_positions(g) : NULL;
    CHECK(pos && pos->storage->device.type == NN_CUDA && pos->shape[0] == 2 && fake_copies == 2,
          "positions on the mask's device, one copy each way (%d): %s", fake_copies, nn_last_error());
    nn_tensor *h = pos ? nn_to_device(pos, NN_DEVICE_CPU) : NULL;
    CHECK(h && nn_get_i64(h, (int64_t[]){0}) == 0 && nn_get_i64(h, (int64_t[]){1}) == 3, "positions 0, 3");
    nn_release(h);
    nn_release(pos);
    nn_release(g);
    nn_release(m);
}

int main(void)
{
    static const int64_t shapes[][4] = {{7, 0, 0, 0}, {3, 5, 0, 0}, {2, 3, 4, 0}, {2, 1, 3, 2}, {4, 0, 3, 0}};
    static const int ndims[] = {1, 2, 3, 4, 3};
    static const double probs[] = {0.0, 0.3, 0.7, 1.0};
    static const char *kinds[] = {"contiguous", "transposed", "narrowed", "expanded"};
    char what[128];
    for (size_t s = 0; s < sizeof ndims / sizeof *ndims; s++)
        for (int kind = 0; kind < NKINDS; kind++)
            for (int dt = 0; dt < 2; dt++)
                for (size_t p = 0; p < sizeof probs / sizeof *probs; p++) {
                    nn_dtype t = dt ? NN_U8 : NN_BOOL;
                    nn_tensor *m = make(ndims[s], shapes[s], t, kind, probs[p]);
                    snprintf(what, sizeof what, "shape #%zu %s %s p=%.1f", s, kinds[kind], nn_dtype_name(t), probs[p]);
                    check_mask(m, what);
                    nn_release(m);
                }

    /* 0-dim masks: one position (0) or none */
    for (int v = 0; v < 2; v++) {
        nn_tensor *m = nn_scalar_bool(v);
        nn_tensor *pos = nn_mask_positions(m);
        CHECK(pos && pos->ndim == 1 && pos->shape[0] == v, "0-dim %d", v);
        if (pos && v) CHECK(nn_get_i64(pos, (int64_t[]){0}) == 0, "0-dim true is position 0");
        nn_release(pos);
        nn_release(m);
    }

    /* a known pattern */
    nn_tensor *m = nn_zeros(2, (int64_t[]){2, 3}, NN_BOOL, NN_DEVICE_CPU);
    uint8_t *b = nn_data(m);
    b[1] = b[3] = b[5] = 1;
    nn_tensor *pos = nn_mask_positions(m);
    CHECK(pos && pos->shape[0] == 3 && nn_get_i64(pos, (int64_t[]){0}) == 1 && nn_get_i64(pos, (int64_t[]){1}) == 3 &&
              nn_get_i64(pos, (int64_t[]){2}) == 5, "positions 1, 3, 5");
    nn_release(pos);
    nn_release(m);

    /* only bool and uint8 masks */
    nn_tensor *f = nn_zeros(1, (int64_t[]){3}, NN_F32, NN_DEVICE_CPU);
    CHECK(nn_mask_positions(f) == NULL && strstr(nn_last_error(), "expected a bool or uint8 mask, got float32"), "%s",
          nn_last_error());
    nn_release(f);
    test_device();
    return CHECK_REPORT();
}
