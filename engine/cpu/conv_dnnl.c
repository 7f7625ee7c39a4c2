/* float32 and bfloat16 conv2d, conv2d_backward_input and conv2d_backward_weight on the CPU through oneDNN
 * (libdnnl), as PyTorch runs them: its JIT kernels. conv.c splits the work over the CPU pool and
 * runs each part here on one OpenMP thread.
 * The tensors keep their own layouts (any strides: NCHW and channels-last alike); oneDNN picks
 * the layouts its kernels want, and reorders into and out of them (dnnl_prim.c keeps the
 * primitives). Whatever oneDNN refuses returns false, and conv.c's im2col kernels run instead. */
#include <string.h>

#include "conv_dnnl.h"
#include "dnnl_prim.h"

/* A call's shape: what it is, the direction, the bias's presence, the data's and the weight's
 * types, the image, weight and output tensors' sizes and strides, stride, padding, dilation, groups. */
typedef struct {
    int kind, dir, bias, dt, wdt;
    int64_t x[8], w[8], y[8]; /* sizes, then strides */
    int64_t p[7];
} conv_key;

/* The weight's user layout: [O, Cg, kh, kw], or [G, O/G, Cg, kh, kw] with groups */
static bool weight_md(dnnl_memory_desc_t *md, const conv_key *k, bool any, dnnl_data_type_t dt)
{
    int64_t G = k->p[6], dims[5] = {G, k->w[0] / G, k->w[1], k->w[2], k->w[3]};
    int64_t st[5] = {k->w[4] * (k->w[0] / G), k->w[4], k->w[5], k->w[6], k->w[7]};
    if (G == 1) return any ? nn_dnnl_md_any(md, 4, k->w, dt) : nn_dnnl_md(md, 4, k->w, k->w + 4, dt);
    return any ? nn_dnnl_md_any(md, 5, dims, dt) : nn_dnnl_md(md, 5, dims, st, dt);
}

static bool prim_build(nn_dnnl_prim *c, const void *key)
{
    const conv_key *k = key;
    dnnl_memory_desc_t xu, wu, yu, bu, xa, wa, wf, ya, ba; /* wf: the forward's weight, of the data's type (a float32 weight gradient's hint) */
    int64_t bdim = k->w[0], one = 1;
    dnnl_dims_t st = {k->p[0], k->p[1]}, dil = {k->p[4] - 1, k->p[5] - 1}, pl = {k->p[2], k->p[3]}, pr;
    for (int i = 0; i < 2; i++) /* padding past the end that gives exactly the output's size */
        pr[i] = (k->y[2 + i] - 1) * k->p[i] + (k->w[2 + i] - 1) * k->p[4 + i] + 1 - k->x[2 + i] - k->p[2 + i];
    bool ok = nn_dnnl_md(&xu, 4, k->x, k->x + 4, k->dt) && weight_md(&wu, k, false, k->wdt) && nn_dnnl_md(&yu, 4, k->y, k->y + 4, k->dt) &&
              nn_dnnl_md(&bu, 1, &bdim, &one, k->dt) && nn_dnnl_md_any(&xa, 4, k->x, k->dt) && weight_md(&wa, k, true, k->wdt) &&
              weight_md(&wf, k, true, k->dt) && nn_dnnl_md_any(&ya, 4, k->y, k->dt) && nn_dnnl_md_any(&ba, 1, &bdim, k->dt);
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fwd = NULL, pd = NULL;
    ok = ok && dnnl_primitive_attr_create(&attr) == dnnl_success && dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    dnnl_convolution_desc_t fd, bd;
    ok = ok && dnnl_dilated_convolution_forward_desc_init(&fd, k->dir == NN_DNNL_FWD ? dnnl_forward_inference : dnnl_forward_training,
                                                          dnnl_convolution_direct, &xa, &wf, k->bias ? &ba : NULL, &ya, st, dil, pl, pr) == dnnl_success;
    ok = ok && (fwd = nn_dnnl_pd_create(&fd, attr, NULL));
    if (ok && k->dir == NN_DNNL_FWD) pd = fwd, fwd = NULL;
    else if (ok && k->dir == NN_DNNL_BWD_DATA)
        ok = dnnl_dilated_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, &ya, st, dil, pl, pr) == dnnl_success &&
             (pd = nn_dnnl_pd_create(&bd, attr, fwd));
    else if (ok)
        ok = dnnl_dilated_convolution_backward_weights_desc_init(&bd, dnnl_convolution_direct, &xa, &wa, NULL, &ya, st, dil, pl, pr) == dnnl_success &&
             (pd = nn_dnnl_pd_create(&bd, attr, fwd));
    if (ok) {
        switch (k->dir) {
        case NN_DNNL_FWD:
            ok = nn_dnnl_add_arg(c, pd, DNNL_ARG_SRC, dnnl_query_src_md, 0, &xu, false) && nn_dnnl_add_arg(c, pd, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, &wu, false) &&
                 (!k->bias || nn_dnnl_add_arg(c, pd, DNNL_ARG_BIAS, dnnl_query_weights_md, 1, &bu, false)) &&
                 nn_dnnl_add_arg(c, pd, DNNL_ARG_DST, dnnl_query_dst_md, 0, &yu, true);
            break;
        case NN_DNNL_BWD_DATA:
            ok = nn_dnnl_add_arg(c, pd, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, &yu, false) &&
                 nn_dnnl_add_arg(c, pd, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, &wu, false) &&
                 nn_dnnl_add_arg(c, pd, DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, 0, &xu, true);
            break;
        default:
            ok = nn_dnnl_add_arg(c, pd, DNNL_ARG_SRC, dnnl_query_src_md, 0, &xu, false) && nn_dnnl_add_arg(c, pd, DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, &yu, false) &&
                 nn_dnnl_add_arg(c, pd, DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, 0, &wu, true);
        }
    }
    ok = ok && nn_dnnl_finish(c, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (fwd) dnnl_primitive_desc_destroy(fwd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return ok;
}

static void put(int64_t *dst, const nn_dnnl_operand *t)
{
    for (int i = 0; i < 4; i++) dst[i] = t->shape[i], dst[4 + i] = t->strides[i];
}

static dnnl_data_type_t dnnl_type(nn_dtype dt) { return dt == NN_BF16 ? dnnl_bf16 : dnnl_f32; }

bool nn_dnnl_accepts(const nn_tensor *x, const nn_tensor *w, const nn_tensor *b, const nn_tensor *y)
{
    nn_dtype dt = x->dtype;
    if ((dt != NN_F32 && dt != NN_BF16) || w->dtype != dt || y->dtype != dt || x->ndim != 4 || w->ndim != 4 || y->ndim != 4) return false;
    if (b && (b->dtype != dt || b->ndim != 1 || (b->shape[0] > 1 && b->strides[0] != 1))) return false;
    return nn_numel(x) > 0 && nn_numel(w) > 0 && nn_numel(y) > 0 && nn_dnnl_ready();
}

bool nn_dnnl_conv2d(int dir, const nn_dnnl_operand *x, const nn_dnnl_operand *w, const void *b, const nn_dnnl_operand *y,
                    const int64_t *params)
{
    conv_key k;
    memset(&k, 0, sizeof k);
    k.kind = 'C', k.dir = dir, k.bias = b != NULL, k.dt = dnnl_type(x->dt), k.wdt = dnnl_type(w->dt);
    put(k.x, x), put(k.w, w), put(k.y, y);
    for (int i = 0; i < 7; i++) k.p[i] = params[i];
    if (k.p[6] < 1) k.p[6] = 1;
    nn_dnnl_set_threads(1);
    bool owned;
    nn_dnnl_prim *c = nn_dnnl_prim_get(&k, sizeof k, prim_build, &owned);
    if (!c) return false;
    /* in the order prim_build added the arguments */
    void *ptr[NN_DNNL_MAX_ARGS];
    if (dir == NN_DNNL_FWD) ptr[0] = x->p, ptr[1] = w->p, ptr[2] = b ? (void *)b : y->p, ptr[3] = y->p;
    else if (dir == NN_DNNL_BWD_DATA) ptr[0] = y->p, ptr[1] = w->p, ptr[2] = x->p;
    else ptr[0] = x->p, ptr[1] = y->p, ptr[2] = w->p;
    bool ok = nn_dnnl_prim_run(c, ptr);
    if (owned) nn_dnnl_prim_free(c);
    return ok;
}
