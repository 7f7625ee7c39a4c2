/* Matrix product frontends: mm, bmm, matmul, addmm, dot, outer. Each checks
 * shapes and dtypes the way PyTorch does, allocates the output and runs the one
 * BLAS kernel (NN_OP_bmm) on 3-D strided views of its operands. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "autocast.h"
#include "backend.h"
#include "cuda_flags.h"
#include "grad.h"
#include "profiler.h"

static nn_status check_operands(const char *fn, const nn_tensor *a, const nn_tensor *b)
{
    char d1[16], d2[16];
    if (a->dtype != b->dtype)
        return nn_error(NN_ERR_DTYPE, "%s: expected m1 and m2 to have the same dtype, but got: %s != %s", fn, nn_dtype_ctype_name(a->dtype),
                        nn_dtype_ctype_name(b->dtype));
    if (a->dtype == NN_BOOL) return nn_error(NN_ERR_DTYPE, "%s: not implemented for 'Bool'", fn);
    if (!nn_device_eq(a->storage->device, b->storage->device))
        return nn_error(NN_ERR_DEVICE, "%s: expected all tensors to be on the same device, but found at least two devices, %s and %s",
                        fn, nn_device_str(d1, a->storage->device), nn_device_str(d2, b->storage->device));
    return NN_OK;
}

static nn_status cannot_multiply(const char *fn, const nn_tensor *a, const nn_tensor *b)
{
    char s1[160], s2[160];
    return nn_error(NN_ERR_SHAPE, "%s: shapes %s and %s cannot be multiplied", fn, nn_shape_str(s1, a->ndim, a->shape),
                    nn_shape_str(s2, b->ndim, b->shape));
}

/* A 3-D view [nb, rows, cols] of t's storage with the given element strides and offset. */
static nn_tensor *view3(const nn_tensor *t, int64_t nb, int64_t rows, int64_t cols, int64_t bs, int64_t rs, int64_t cs, int64_t offset)
{
    int64_t shape[3] = {nb, rows, cols}, strides[3] = {bs, rs, cs};
    return nn_make_view(t, 3, shape, strides, offset);
}

/* out3 = beta*out3 + alpha*(a3 @ b3); consumes the three views. */
static nn_status gemm(nn_tensor *a3, nn_tensor *b3, nn_tensor *out3, double alpha, double beta)
{
    nn_status s = NN_OK;
    if (!a3 || !b3 || !out3) s = nn_last_status();
    else {
        nn_kargs k = {.op = NN_OP_bmm, .out = {out3}, .in = {a3, b3}, .nin = 2, .f = {alpha, beta}};
        s = nn_dispatch(&k);
    }
    nn_release(a3), nn_release(b3), nn_release(out3);
    return s;
}

/* out on the graph as a product of a and b (name: PyTorch's grad_fn); releases out on failure */
static nn_tensor *recorded(nn_tensor *out, const char *name, nn_tensor *a, nn_tensor *b)
{
    nn_tensor *ins[2] = {a, b};
    if (out && nn_any_requires_grad(2, ins) && nn_record_matmul(name, a, b, out)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

/* Matrix view of a 2-D tensor, or of a 1-D one as a row ([1, k]) or column ([k, 1]). */
typedef struct { int64_t rows, cols, rs, cs; } matdesc;

static matdesc as_matrix(const nn_tensor *t, bool row)
{
    if (t->ndim == 1) return row ? (matdesc){1, t->shape[0], 0, t->strides[0]} : (matdesc){t->shape[0], 1, t->strides[0], 0};
    int d = t->ndim - 2;
    return (matdesc){t->shape[d], t->shape[d + 1], t->strides[d], t->strides[d + 1]};
}

nn_tensor *nn_mm(nn_tensor *a, nn_tensor *b)
{
    if (nn_autocast_on()) { /* autocast: run again on the cast inputs */
        nn_tensor *in[2] = {a, b}, *c[2];
        if (nn_autocast_inputs(NN_OP_bmm, 2, in, c)) return NULL;
        if (c[0] || c[1]) {
            nn_tensor *r = nn_mm(c[0] ? c[0] : a, c[1] ? c[1] : b);
            nn_autocast_release(2, c);
            return r;
        }
    }
    if (a->ndim != 2 || b->ndim != 2) {
        nn_error(NN_ERR_SHAPE, "mm: expected 2-D tensors, but got %d-D and %d-D tensors", a->ndim, b->ndim);
        return NULL;
    }
    if (a->shape[1] != b->shape[0]) {
        cannot_multiply("mm", a, b);
        return NULL;
    }
    if (check_operands("mm", a, b)) return NULL;
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1], shape[2] = {m, n};
    nn_tensor *out = nn_empty(2, shape, a->dtype, a->storage->device);
    if (!out) return NULL;
    if (gemm(view3(a, 1, m, k, 0, a->strides[0], a->strides[1], a->offset), view3(b, 1, k, n, 0, b->strides[0], b->strides[1], b->offset),
             view3(out, 1, m, n, 0, n, 1, 0), 1, 0)) {
        nn_release(out);
        return NULL;
    }
    return recorded(out, "MmBackward0", a, b);
}

nn_tensor *nn_bmm(nn_tensor *a, nn_tensor *b)
{
    if (nn_autocast_on()) { /* autocast: run again on the cast inputs */
        nn_tensor *in[2] = {a, b}, *c[2];
        if (nn_autocast_inputs(NN_OP_bmm, 2, in, c)) return NULL;
        if (c[0] || c[1]) {
            nn_tensor *r = nn_bmm(c[0] ? c[0] : a, c[1] ? c[1] : b);
            nn_autocast_release(2, c);
            return r;
        }
    }
    if (a->ndim != 3 || b->ndim != 3) {
        nn_error(NN_ERR_SHAPE, "bmm: expected 3-D tensors, but got %d-D and %d-D tensors", a->ndim, b->ndim);
        return NULL;
    }
    if (a->shape[0] != b->shape[0]) {
        nn_error(NN_ERR_SHAPE, "bmm: batch1 and batch2 must have same number of batches, got %lld and %lld", (long long)a->shape[0],
                 (long long)b->shape[0]);
        return NULL;
    }
    if (a->shape[2] != b->shape[1]) {
        cannot_multiply("bmm", a, b);
        return NULL;
    }
    if (check_operands("bmm", a, b)) return NULL;
    int64_t nb = a->shape[0], m = a->shape[1], n = b->shape[2], shape[3] = {nb, m, n};
    nn_tensor *out = nn_empty(3, shape, a->dtype, a->storage->device);
    if (!out) return NULL;
    if (gemm(nn_retain(a), nn_retain(b), nn_retain(out), 1, 0)) {
        nn_release(out);
        return NULL;
    }
    return recorded(out, "BmmBackward0", a, b);
}

/* Do dims [0, n) of t (sizes, strides) collapse into one dim? Sets its stride. */
static bool collapsible(int n, const int64_t *shape, const int64_t *strides, int64_t *stride)
{
    int64_t expect = -1;
    *stride = 0;
    for (int d = n - 1; d >= 0; d--) {
        if (shape[d] == 1) continue;
        if (expect >= 0 && strides[d] != expect) return false;
        if (expect < 0) *stride = strides[d];
        expect = strides[d] * shape[d];
    }
    return true;
}

/* t's batch dims (q of them, sizes bshape, strides st) followed by its [rows, cols] matrix (md)
 * copied contiguous when those batch dims do not merge into one; the strides and md are then
 * the copy's. *out stays NULL when they merge already. */
static nn_status packed_batch(const nn_tensor *t, int q, const int64_t *bshape, int64_t *st, matdesc *md, int64_t rows, int64_t cols,
                              nn_tensor **out)
{
    int64_t inner;
    if (collapsible(q, bshape, st, &inner)) return NN_OK;
    int64_t shape[NN_MAX_DIMS], strides[NN_MAX_DIMS];
    for (int d = 0; d < q; d++) shape[d] = bshape[d], strides[d] = st[d];
    shape[q] = rows, shape[q + 1] = cols, strides[q] = md->rs, strides[q + 1] = md->cs;
    nn_tensor *src = nn_make_view(t, q + 2, shape, strides, t->offset);
    nn_tensor *dst = src ? nn_empty(q + 2, shape, t->dtype, t->storage->device) : NULL;
    nn_status s = NN_ERR_NOMEM;
    if (dst) {
        nn_kargs c = {.op = NN_OP_copy, .out = {dst}, .in = {src}, .nin = 1};
        s = nn_dispatch(&c);
    }
    nn_release(src);
    if (s) {
        nn_release(dst);
        return s == NN_ERR_NOMEM ? nn_error(s, "matmul: out of memory") : s;
    }
    st[q - 1] = rows * cols;
    for (int d = q - 2; d >= 0; d--) st[d] = st[d + 1] * bshape[d + 1];
    *md = (matdesc){md->rows, md->cols, cols, 1};
    *out = dst;
    return NN_OK;
}

nn_tensor *nn_matmul(nn_tensor *a, nn_tensor *b)
{
    if (nn_autocast_on()) { /* autocast: run again on the cast inputs */
        nn_tensor *in[2] = {a, b}, *c[2];
        if (nn_autocast_inputs(NN_OP_bmm, 2, in, c)) return NULL;
        if (c[0] || c[1]) {
            nn_tensor *r = nn_matmul(c[0] ? c[0] : a, c[1] ? c[1] : b);
            nn_autocast_release(2, c);
            return r;
        }
    }
    char s1[160], s2[160];
    if (a->ndim == 0 || b->ndim == 0) {
        nn_error(NN_ERR_SHAPE, "matmul: both arguments to matmul need to be at least 1D, but they are %dD and %dD", a->ndim, b->ndim);
        return NULL;
    }
    matdesc ma = as_matrix(a, true), mb = as_matrix(b, false);
    if (ma.cols != mb.rows) {
        cannot_multiply("matmul", a, b);
        return NULL;
    }
    if (check_operands("matmul", a, b)) return NULL;
    int64_t m = ma.rows, k = ma.cols, n = mb.cols;
    /* broadcast the batch dims (all but the last two; a 1-D operand has none) */
    int na = a->ndim > 2 ? a->ndim - 2 : 0, nbd = b->ndim > 2 ? b->ndim - 2 : 0, nd = na > nbd ? na : nbd;
    if (nd + 2 > NN_MAX_DIMS) {
        nn_error(NN_ERR_SHAPE, "matmul: result would have more than %d dimensions", NN_MAX_DIMS);
        return NULL;
    }
    int64_t bshape[NN_MAX_DIMS], sa[NN_MAX_DIMS], sb[NN_MAX_DIMS], so[NN_MAX_DIMS];
    for (int d = 0; d < nd; d++) {
        int da = d - (nd - na), db = d - (nd - nbd);
        int64_t za = da >= 0 ? a->shape[da] : 1, zb = db >= 0 ? b->shape[db] : 1;
        if (za != zb && za != 1 && zb != 1) {
            nn_error(NN_ERR_SHAPE, "matmul: the batch dims of %s and %s do not broadcast: size %lld and size %lld at batch dimension %d",
                     nn_shape_str(s1, a->ndim, a->shape), nn_shape_str(s2, b->ndim, b->shape), (long long)za, (long long)zb, d);
            return NULL;
        }
        bshape[d] = za == 1 ? zb : za;
        sa[d] = za == 1 ? 0 : a->strides[da];
        sb[d] = zb == 1 ? 0 : b->strides[db];
    }
    /* result: batch ++ [m] (unless a is 1-D) ++ [n] (unless b is 1-D), contiguous */
    int64_t oshape[NN_MAX_DIMS];
    int no = 0;
    for (int d = 0; d < nd; d++) oshape[no++] = bshape[d];
    if (a->ndim > 1) oshape[no++] = m;
    if (b->ndim > 1) oshape[no++] = n;
    nn_tensor *out = nn_empty(no, oshape, a->dtype, a->storage->device);
    if (!out) return NULL;
    int64_t stride = m * n, total = 1;
    for (int d = nd - 1; d >= 0; d--) so[d] = stride, stride *= bshape[d], total *= bshape[d];
    nn_status st = NN_OK;
    int64_t arow;
    if (nd > 0 && nbd == 0 && collapsible(na + 1, a->shape, a->strides, &arow)) {
        /* [..., m, k] @ [k, n]: one product with the batch folded into the rows */
        st = gemm(view3(a, 1, total * m, k, 0, total * m > 1 ? arow : ma.rs, ma.cs, a->offset),
                  view3(b, 1, k, n, 0, mb.rs, mb.cs, b->offset), view3(out, 1, total * m, n, 0, n, 1, 0), 1, 0);
    } else {
        /* merge batch dims where all three operands allow; an operand whose batch dims still do
         * not merge (swin's [windows, heads] of a permuted projection) is copied contiguous, as
         * PyTorch's reshape does, so that one product runs (one per outer index made thousands) */
        int q = 0;
        for (int d = 0; d < nd; d++) {
            if (bshape[d] == 1) continue;
            if (q > 0 && sa[q - 1] == sa[d] * bshape[d] && sb[q - 1] == sb[d] * bshape[d] && so[q - 1] == so[d] * bshape[d]) {
                bshape[q - 1] *= bshape[d];
                sa[q - 1] = sa[d], sb[q - 1] = sb[d], so[q - 1] = so[d];
                continue;
            }
            bshape[q] = bshape[d], sa[q] = sa[d], sb[q] = sb[d], so[q] = so[d];
            q++;
        }
        nn_tensor *ca = NULL, *cb = NULL;
        if (total > 0 && q > 1) {
            st = packed_batch(a, q, bshape, sa, &ma, m, k, &ca);
            if (!st) st = packed_batch(b, q, bshape, sb, &mb, k, n, &cb);
        }
        const nn_tensor *ua = ca ? ca : a, *ub = cb ? cb : b;
        int64_t isa = q ? sa[q - 1] : 0, isb = q ? sb[q - 1] : 0, iso = q ? so[q - 1] : 0; /* the innermost stride */
        if (total > 0 && !st)
            st = gemm(view3(ua, total, m, k, isa, ma.rs, ma.cs, ua->offset), view3(ub, total, k, n, isb, mb.rs, mb.cs, ub->offset),
                      view3(out, total, m, n, iso, n, 1, 0), 1, 0);
        nn_release(ca);
        nn_release(cb);
    }
    if (st) {
        nn_release(out);
        return NULL;
    }
    /* PyTorch's matmul is made of dot, mm, mv, mm + squeeze_, or (batched) a product + _unsafe_view */
    const char *name = a->ndim == 1 && b->ndim == 1 ? "DotBackward0"
                     : a->ndim == 2 && b->ndim == 2 ? "MmBackward0"
                     : a->ndim == 2 && b->ndim == 1 ? "MvBackward0"
                     : a->ndim == 1 && b->ndim == 2 ? "SqueezeBackward4"
                                                    : "UnsafeViewBackward0";
    return recorded(out, name, a, b);
}

static nn_status linear_kernel(const nn_kargs *k) { return nn_cuda_linear(k->out[0], k->in[0], k->in[1], k->in[2], false); }

/* linear's case on CUDA (1-D bias, beta = alpha = 1, float operands): one cuBLASLt call with
 * the bias added in the epilogue instead of a broadcast copy and a gemm (the profiler counts it
 * as a bmm). False: not taken (or it failed, and the plain path runs and reports). */
static bool fused_bias_gemm(nn_tensor *out, nn_tensor *bias, nn_tensor *a, nn_tensor *b, double beta, double alpha)
{
    if (!nn_cuda_linear || out->storage->device.type != NN_CUDA || beta != 1 || alpha != 1 || bias->ndim != 1 ||
        bias->shape[0] != out->shape[1] || !nn_dtype_is_float(a->dtype) || b->dtype != a->dtype ||
        bias->storage->device.type != NN_CUDA || bias->storage->device.index != out->storage->device.index)
        return false;
    nn_tensor *w = nn_make_view(b, 2, (int64_t[]){b->shape[1], b->shape[0]}, (int64_t[]){b->strides[1], b->strides[0]}, b->offset);
    if (!w) return false;
    nn_kargs k = {.op = NN_OP_bmm, .out = {out}, .in = {a, w, bias}, .nin = 3};
    nn_status s = nn_profiling ? nn_profiler_run(&k, linear_kernel) : linear_kernel(&k);
    nn_release(w);
    if (s) nn_clear_error();
    return s == NN_OK;
}

/* out = bias (expanded by strides bst), then out = beta*out + alpha*a@b */
static nn_status plain_addmm(nn_tensor *out, nn_tensor *bias, const int64_t *bst, nn_tensor *a, nn_tensor *b, double beta, double alpha)
{
    int64_t m = out->shape[0], n = out->shape[1], k = a->shape[1];
    if (beta != 0) {
        nn_tensor *e = nn_make_view(bias, 2, out->shape, bst, bias->offset);
        nn_status s = NN_ERR_NOMEM;
        if (e) {
            nn_kargs c = {.op = NN_OP_copy, .out = {out}, .in = {e}, .nin = 1};
            s = nn_dispatch(&c);
        }
        nn_release(e);
        if (s) return s;
    }
    return gemm(view3(a, 1, m, k, 0, a->strides[0], a->strides[1], a->offset), view3(b, 1, k, n, 0, b->strides[0], b->strides[1], b->offset),
                view3(out, 1, m, n, 0, n, 1, 0), alpha, beta);
}

nn_tensor *nn_addmm(nn_tensor *bias, nn_tensor *a, nn_tensor *b, double beta, double alpha)
{
    if (nn_autocast_on()) { /* autocast: run again on the cast inputs */
        nn_tensor *in[3] = {bias, a, b}, *c[3];
        if (nn_autocast_inputs(NN_OP_bmm, 3, in, c)) return NULL;
        if (c[0] || c[1] || c[2]) {
            nn_tensor *r = nn_addmm(c[0] ? c[0] : bias, c[1] ? c[1] : a, c[2] ? c[2] : b, beta, alpha);
            nn_autocast_release(3, c);
            return r;
        }
    }
    char s1[160], s2[160];
    if (a->ndim != 2 || b->ndim != 2) {
        nn_error(NN_ERR_SHAPE, "addmm: expected 2-D tensors, but got %d-D and %d-D tensors", a->ndim, b->ndim);
        return NULL;
    }
    if (a->shape[1] != b->shape[0]) {
        cannot_multiply("addmm", a, b);
        return NULL;
    }
    if (check_operands("addmm", a, b)) return NULL;
    if (bias->dtype != a->dtype) {
        nn_error(NN_ERR_DTYPE, "addmm: expected self and m1 to have the same dtype, but got: %s != %s", nn_dtype_ctype_name(bias->dtype),
                 nn_dtype_ctype_name(a->dtype));
        return NULL;
    }
    if (nn_dtype_is_integral(a->dtype) && (alpha != trunc(alpha) || beta != trunc(beta))) {
        nn_error(NN_ERR_ARG, "addmm: for integral input tensors, arguments alpha and beta must not be floating point numbers");
        return NULL;
    }
    int64_t m = a->shape[0], n = b->shape[1], shape[2] = {m, n};
    /* bias broadcast to [m, n] */
    int64_t bst[2] = {0, 0};
    bool ok = bias->ndim <= 2;
    for (int d = 0; ok && d < bias->ndim; d++) {
        int od = d + 2 - bias->ndim;
        if (bias->shape[d] == shape[od]) bst[od] = bias->strides[d];
        else ok = bias->shape[d] == 1;
    }
    if (!ok) {
        nn_error(NN_ERR_SHAPE, "addmm: the bias of shape %s cannot be broadcast to the product's shape %s", nn_shape_str(s1, bias->ndim, bias->shape),
                 nn_shape_str(s2, 2, shape));
        return NULL;
    }
    nn_tensor *out = nn_empty(2, shape, a->dtype, a->storage->device);
    if (!out) return NULL;
    if (!fused_bias_gemm(out, bias, a, b, beta, alpha) && plain_addmm(out, bias, bst, a, b, beta, alpha)) {
        nn_release(out);
        return NULL;
    }
    nn_tensor *ins[3] = {bias, a, b};
    if (nn_any_requires_grad(3, ins) && nn_record_addmm(bias, a, b, out, beta, alpha)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_mm_widened(nn_tensor *a, nn_tensor *b)
{
    if (a->ndim != 2 || b->ndim != 2 || a->shape[1] != b->shape[0] || a->dtype != b->dtype || (a->dtype != NN_F16 && a->dtype != NN_BF16) ||
        a->storage->device.type != NN_CUDA || !nn_device_eq(a->storage->device, b->storage->device)) {
        nn_error(NN_ERR_ARG, "mm_widened: expected 2-D float16 or bfloat16 CUDA operands that can be multiplied");
        return NULL;
    }
    int64_t m = a->shape[0], k = a->shape[1], n = b->shape[1], shape[2] = {m, n};
    nn_tensor *out = nn_empty(2, shape, NN_F32, a->storage->device);
    if (out && gemm(view3(a, 1, m, k, 0, a->strides[0], a->strides[1], a->offset), view3(b, 1, k, n, 0, b->strides[0], b->strides[1], b->offset),
                    view3(out, 1, m, n, 0, n, 1, 0), 1, 0)) {
        nn_release(out);
        return NULL;
    }
    return out;
}

static bool float32_param(const nn_tensor *t) { return nn_autocast_records_param(t) && t->storage->device.type == NN_CUDA; }

/* Autocast's linear on CUDA with float32 params w (and b): the product runs on their 16-bit casts
 * as it would, but is recorded against w and b themselves, so that the backward writes their
 * gradients in float32 straight from the product's float accumulation instead of 16-bit
 * gradients cast up. *out: the result, NULL on error. False: not this case. */
static bool linear_widened(nn_tensor *x, nn_tensor *w, nn_tensor *b, nn_tensor **out)
{
    nn_dtype dt = nn_autocast_dtype(NN_CUDA);
    if (!nn_autocast_enabled(NN_CUDA) || !nn_grad_enabled() || (dt != NN_F16 && dt != NN_BF16) || x->ndim != 2 || w->ndim != 2 ||
        !float32_param(w) || (b && (b->ndim != 1 || !float32_param(b) || !nn_device_eq(b->storage->device, w->storage->device))) ||
        !nn_device_eq(x->storage->device, w->storage->device) || !nn_dtype_is_float(x->dtype) || x->dtype == NN_F64)
        return false;
    nn_tensor *cx = NULL, *cp[2] = {NULL, NULL}, *params[2] = {w, b}, *wt = NULL;
    *out = NULL;
    if (nn_autocast_apply(NN_AUTOCAST_LOWER, 1, &x, &cx)) return true;
    nn_tensor *x16 = cx ? cx : x, *w16 = NULL, *b16 = NULL;
    if (!nn_autocast_params_off_graph(b ? 2 : 1, params, cp)) {
        w16 = cp[0] ? cp[0] : w, b16 = b && cp[1] ? cp[1] : b;
        wt = nn_t(w16);
    }
    nn_set_grad_enabled(false); /* the product stays off the graph too: it is recorded below */
    nn_tensor *r = wt ? (b ? nn_addmm(b16, x16, wt, 1, 1) : nn_mm(x16, wt)) : NULL;
    nn_set_grad_enabled(true);
    if (r && nn_record_linear_widened(b, x16, w, w16, r)) {
        nn_release(r);
        r = NULL;
    }
    nn_release(wt);
    nn_autocast_release(2, cp);
    nn_release(cx);
    *out = r;
    return true;
}

nn_tensor *nn_linear(nn_tensor *x, nn_tensor *w, nn_tensor *b)
{
    nn_tensor *c[3] = {NULL, NULL, NULL}, *r = NULL;
    if (nn_autocast_on()) { /* the weight is cast before its transpose: through the cache */
        if (linear_widened(x, w, b, &r)) return r;
        nn_tensor *in[3] = {x, w, b};
        if (nn_autocast_inputs(NN_OP_bmm, 3, in, c)) return NULL;
        x = c[0] ? c[0] : x, w = c[1] ? c[1] : w, b = c[2] ? c[2] : b;
    }
    nn_tensor *wt = nn_t(w);
    if (wt && x->ndim == 2 && b && w->ndim == 2) {
        r = nn_addmm(b, x, wt, 1, 1);
    } else if (wt && x->ndim > 2 && b && w->ndim == 2 && nn_is_contiguous(x)) {
        /* a batch of rows as one [rows, in] matrix, as PyTorch's linear: addmm adds the bias in the
         * GEMM's epilogue on CUDA, and the result is a view back to [..., out] */
        int64_t rows[2] = {-1, x->shape[x->ndim - 1]}, shape[NN_MAX_DIMS];
        memcpy(shape, x->shape, sizeof(int64_t) * x->ndim);
        shape[x->ndim - 1] = w->shape[0];
        nn_tensor *x2 = nn_view(x, 2, rows), *y2 = x2 ? nn_addmm(b, x2, wt, 1, 1) : NULL;
        r = y2 ? nn_view(y2, x->ndim, shape) : NULL;
        nn_release(x2), nn_release(y2);
    } else if (wt) {
        r = nn_matmul(x, wt);
        if (r && b) {
            nn_tensor *y = nn_binary(NN_OP_add, r, b);
            nn_release(r);
            r = y;
        }
    }
    nn_release(wt);
    nn_autocast_release(3, c);
    return r;
}

nn_tensor *nn_dot(nn_tensor *a, nn_tensor *b)
{
    if (nn_autocast_on()) { /* autocast: run again on the cast inputs */
        nn_tensor *in[2] = {a, b}, *c[2];
        if (nn_autocast_apply(NN_AUTOCAST_PROMOTE, 2, in, c)) return NULL;
        if (c[0] || c[1]) {
            nn_tensor *r = nn_dot(c[0] ? c[0] : a, c[1] ? c[1] : b);
            nn_autocast_release(2, c);
            return r;
        }
    }
    char s1[160], s2[160];
    if (a->ndim != 1 || b->ndim != 1) {
        nn_error(NN_ERR_SHAPE, "dot: 1D tensors expected, but got %dD and %dD tensors", a->ndim, b->ndim);
        return NULL;
    }
    if (a->shape[0] != b->shape[0]) {
        nn_error(NN_ERR_SHAPE,
                 "dot: inconsistent tensor size, expected tensor %s and src %s to have the same number of elements, but got %lld and %lld elements respectively",
                 nn_shape_str(s1, 1, a->shape), nn_shape_str(s2, 1, b->shape), (long long)a->shape[0], (long long)b->shape[0]);
        return NULL;
    }
    if (a->dtype != b->dtype) {
        nn_error(NN_ERR_DTYPE, "dot: expected both vectors to have same dtype, but found %s and %s", nn_dtype_scalar_name(a->dtype),
                 nn_dtype_scalar_name(b->dtype));
        return NULL;
    }
    if (check_operands("dot", a, b)) return NULL;
    int64_t k = a->shape[0];
    nn_tensor *out = nn_empty(0, NULL, a->dtype, a->storage->device);
    if (!out) return NULL;
    if (gemm(view3(a, 1, 1, k, 0, 0, a->strides[0], a->offset), view3(b, 1, k, 1, 0, b->strides[0], 0, b->offset),
             view3(out, 1, 1, 1, 0, 1, 1, 0), 1, 0)) {
        nn_release(out);
        return NULL;
    }
    return recorded(out, "DotBackward0", a, b);
}

/* t cast to dt (t itself, retained, when it already is dt) */
static nn_tensor *cast(nn_tensor *t, nn_dtype dt)
{
    if (t->dtype == dt) return nn_retain(t);
    nn_tensor *c = nn_empty(t->ndim, t->shape, dt, t->storage->device);
    if (!c) return NULL;
    nn_kargs k = {.op = NN_OP_copy, .out = {c}, .in = {t}, .nin = 1};
    if (nn_dispatch(&k)) {
        nn_release(c);
        return NULL;
    }
    return c;
}

nn_tensor *nn_outer(nn_tensor *a, nn_tensor *b)
{
    char d1[16], d2[16];
    if (a->ndim != 1 || b->ndim != 1) {
        nn_error(NN_ERR_SHAPE, "outer: expected 1-D arguments, but got %d-D and %d-D", a->ndim, b->ndim);
        return NULL;
    }
    if (!nn_device_eq(a->storage->device, b->storage->device)) {
        nn_error(NN_ERR_DEVICE, "outer: expected all tensors to be on the same device, but found at least two devices, %s and %s",
                 nn_device_str(d1, a->storage->device), nn_device_str(d2, b->storage->device));
        return NULL;
    }
    nn_dtype dt = nn_promote_types(a->dtype, b->dtype);
    int64_t m = a->shape[0], n = b->shape[0], shape[2] = {m, n};
    nn_tensor *ca = cast(a, dt), *cb = ca ? cast(b, dt) : NULL;
    nn_tensor *out = cb ? nn_empty(2, shape, dt, a->storage->device) : NULL;
    nn_status s = out ? gemm(view3(ca, 1, m, 1, 0, ca->strides[0], 0, ca->offset), view3(cb, 1, 1, n, 0, 0, cb->strides[0], cb->offset),
                             view3(out, 1, m, n, 0, n, 1, 0), 1, 0)
                      : nn_last_status();
    nn_release(ca), nn_release(cb);
    nn_tensor *ins[2] = {a, b};
    if (s || (nn_any_requires_grad(2, ins) && nn_record_outer(a, b, out))) {
        nn_release(out);
        return NULL;
    }
    return out;
}
