/* CPU index_select and index_add along dim i[0].
 *
 * Both walk the index list and move one slice (every dim but dim) per entry,
 * in index order, so repeated indices accumulate. Slices are coalesced: a
 * contiguous slice (an embedding row) is a single memcpy. Every index is
 * checked before anything is written. */
#include <string.h>

#include "kernels.h"

typedef struct {
    int m;
    int64_t shape[NN_MAX_DIMS];
    int64_t sd[NN_MAX_DIMS], ss[NN_MAX_DIMS]; /* byte strides: destination, source */
} slice;

/* dst and src have the same shape except at dim (0-dim tensors: one element). */
static void slice_init(slice *S, const nn_tensor *dst, const nn_tensor *src, int dim)
{
    int64_t es = (int64_t)nn_dtype_size(dst->dtype);
    S->m = 0;
    for (int d = 0; d < dst->ndim; d++) {
        if (d == dim || dst->shape[d] == 1) continue;
        int j = S->m;
        if (j > 0 && S->sd[j - 1] == dst->strides[d] * es * dst->shape[d] && S->ss[j - 1] == src->strides[d] * es * dst->shape[d]) {
            S->shape[j - 1] *= dst->shape[d];
            S->sd[j - 1] = dst->strides[d] * es;
            S->ss[j - 1] = src->strides[d] * es;
            continue;
        }
        S->shape[j] = dst->shape[d];
        S->sd[j] = dst->strides[d] * es;
        S->ss[j] = src->strides[d] * es;
        S->m++;
    }
}

typedef void (*row_fn)(char *d, int64_t sd, const char *s, int64_t ss, int64_t n, void *ctx);

/* row() once per innermost row of the slice at dst/src */
static void walk(const slice *S, char *dst, const char *src, row_fn row, void *ctx)
{
    int m = S->m;
    if (m == 0) {
        row(dst, 0, src, 0, 1, ctx);
        return;
    }
    int64_t idx[NN_MAX_DIMS] = {0};
    for (;;) {
        row(dst, S->sd[m - 1], src, S->ss[m - 1], S->shape[m - 1], ctx);
        int j = m - 2;
        for (; j >= 0; j--) {
            dst += S->sd[j], src += S->ss[j];
            if (++idx[j] < S->shape[j]) break;
            dst -= S->sd[j] * S->shape[j], src -= S->ss[j] * S->shape[j];
            idx[j] = 0;
        }
        if (j < 0) return;
    }
}

static void copy_row(char *d, int64_t sd, const char *s, int64_t ss, int64_t n, void *ctx)
{
    int64_t es = *(const int64_t *)ctx;
    if ((sd == es && ss == es) || n == 1) {
        memcpy(d, s, (size_t)(n * es));
        return;
    }
    switch (es) {
    case 8: for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, s + i * ss, 8); break;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, s + i * ss, 4); break;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, s + i * ss, 2); break;
    default: for (int64_t i = 0; i < n; i++) memcpy(d + i * sd, s + i * ss, (size_t)es); break;
    }
}

typedef struct {
    nn_dtype dt;
    double alpha;
    int64_t ialpha;
} add_ctx;

static void add_row(char *d, int64_t sd, const char *s, int64_t ss, int64_t n, void *vc)
{
    const add_ctx *c = vc;
    switch (c->dt) {
    case NN_F32: {
        float a = (float)c->alpha;
        for (int64_t i = 0; i < n; i++) *(float *)(d + i * sd) += a * *(const float *)(s + i * ss);
        break;
    }
    case NN_F64:
        for (int64_t i = 0; i < n; i++) *(double *)(d + i * sd) += c->alpha * *(const double *)(s + i * ss);
        break;
    case NN_F16:
    case NN_BF16: {
        float a = (float)c->alpha;
        for (int64_t i = 0; i < n; i++) {
            uint16_t *p = (uint16_t *)(d + i * sd), q = *(const uint16_t *)(s + i * ss);
            *p = c->dt == NN_F16 ? nn_float_to_half(nn_half_to_float(*p) + a * nn_half_to_float(q))
                                 : nn_float_to_bf16(nn_bf16_to_float(*p) + a * nn_bf16_to_float(q));
        }
        break;
    }
    case NN_BOOL:
        for (int64_t i = 0; i < n; i++) d[i * sd] = d[i * sd] || (c->ialpha && s[i * ss]);
        break;
    default: /* integers wrap like PyTorch's */
        for (int64_t i = 0; i < n; i++) {
            uint64_t v = (uint64_t)nn_load_i64(d + i * sd, c->dt) + (uint64_t)c->ialpha * (uint64_t)nn_load_i64(s + i * ss, c->dt);
            nn_store_i64(d + i * sd, c->dt, (int64_t)v);
        }
        break;
    }
}

static int64_t index_at(const nn_tensor *ix, int64_t k)
{
    const char *p = (const char *)nn_data(ix) + k * (ix->ndim ? ix->strides[0] : 0) * (int64_t)nn_dtype_size(ix->dtype);
    return ix->dtype == NN_I64 ? *(const int64_t *)p : *(const int32_t *)p;
}

static nn_status check_indices(const nn_tensor *ix, int64_t size)
{
    int64_t n = nn_numel(ix);
    for (int64_t k = 0; k < n; k++) {
        int64_t v = index_at(ix, k);
        if (v < 0 || v >= size) return nn_error(NN_ERR_INDEX, "index out of range in self");
    }
    return NN_OK;
}

/* Move slice k of `from` (along dim) to/from slice index[k] of `self`. */
static nn_status run(nn_tensor *self, nn_tensor *ix, nn_tensor *other, int dim, bool add, add_ctx *c)
{
    int64_t es = (int64_t)nn_dtype_size(self->dtype);
    if (check_indices(ix, self->ndim ? self->shape[dim] : 1)) return nn_last_status();
    if (nn_numel(self) == 0 || nn_numel(other) == 0) return NN_OK;
    slice S;
    int64_t s_self = self->ndim ? self->strides[dim] * es : 0, s_other = other->ndim ? other->strides[dim] * es : 0, n = nn_numel(ix);
    char *ps = nn_data(self), *po = nn_data(other);
    if (add) {
        slice_init(&S, self, other, dim);
        for (int64_t k = 0; k < n; k++) walk(&S, ps + index_at(ix, k) * s_self, po + k * s_other, add_row, c);
    } else {
        slice_init(&S, other, self, dim);
        for (int64_t k = 0; k < n; k++) walk(&S, po + k * s_other, ps + index_at(ix, k) * s_self, copy_row, &es);
    }
    return NN_OK;
}

/* out[0] = in0.index_select(i[0], in1) */
nn_status nn_cpu_index_select(const nn_kargs *a)
{
    return run(a->in[0], a->in[1], a->out[0], (int)a->i[0], false, NULL);
}

/* out[0].index_add_(i[0], in0, in1, alpha f[0]) */
nn_status nn_cpu_index_add(const nn_kargs *a)
{
    nn_dtype dt = a->out[0]->dtype;
    add_ctx c = {.dt = dt, .alpha = a->f[0], .ialpha = nn_dtype_is_integral(dt) ? (int64_t)a->f[0] : 0};
    return run(a->out[0], a->in[0], a->in[1], (int)a->i[0], true, &c);
}
