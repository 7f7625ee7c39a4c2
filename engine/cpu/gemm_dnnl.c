/* float32, float16 and bfloat16 products through oneDNN's matmul primitive, as PyTorch's CPU
 * kernels use oneDNN: its JIT (brgemm) kernels pick the machine's widest vectors themselves, where
 * Debian's OpenBLAS picks its kernels from a list of CPUs it knows (an unknown one gets its
 * slowest), and they are faster at the small m of a Linear layer's batch. One primitive per shape, strides, alpha, beta (kept by
 * dnnl_prim.c), run on one OpenMP thread: blas.c splits a large product over the CPU pool. */
#include <string.h>

#include "dnnl_prim.h"
#include "gemm_dnnl.h"

/* Below this many multiply-adds the call's fixed cost (tens of microseconds' worth of OpenBLAS
 * work at most) is not won back */
#define DNNL_MIN_WORK 131072.0

typedef struct {
    int kind, dt, ta, tb;
    float alpha, beta;
    int64_t m, n, k, lda, ldb, ldc;
} gemm_key;

static bool prim_build(nn_dnnl_prim *c, const void *key)
{
    const gemm_key *g = key;
    int64_t ad[2] = {g->m, g->k}, bd[2] = {g->k, g->n}, cd[2] = {g->m, g->n};
    int64_t as[2] = {g->ta ? 1 : g->lda, g->ta ? g->lda : 1}, bs[2] = {g->tb ? 1 : g->ldb, g->tb ? g->ldb : 1}, cs[2] = {g->ldc, 1};
    dnnl_memory_desc_t amd, bmd, cmd;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_data_type_t dt = g->dt == NN_F32 ? dnnl_f32 : g->dt == NN_BF16 ? dnnl_bf16 : dnnl_f16;
    bool ok = nn_dnnl_md(&amd, 2, ad, as, dt) && nn_dnnl_md(&bmd, 2, bd, bs, dt) && nn_dnnl_md(&cmd, 2, cd, cs, dt) &&
              dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd) == dnnl_success && dnnl_primitive_attr_create(&attr) == dnnl_success &&
              dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    if (ok && g->alpha != 1) ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &g->alpha) == dnnl_success;
    if (ok && g->beta != 0) /* C = alpha*AB + beta*C: a sum post-op (without it C is only written) */
        ok = dnnl_post_ops_create(&po) == dnnl_success && dnnl_post_ops_append_sum(po, g->beta) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
    ok = ok && (pd = nn_dnnl_pd_create(&md, attr, NULL)) && nn_dnnl_add_arg(c, pd, DNNL_ARG_SRC, dnnl_query_src_md, 0, &amd, false) &&
         nn_dnnl_add_arg(c, pd, DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, &bmd, false) &&
         nn_dnnl_add_arg(c, pd, DNNL_ARG_DST, dnnl_query_dst_md, 0, &cmd, true) && nn_dnnl_finish(c, pd);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return ok;
}

bool nn_dnnl_gemm(nn_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const void *A, int64_t lda, const void *B,
                  int64_t ldb, float beta, void *C, int64_t ldc)
{
    if ((double)m * (double)n * (double)k < DNNL_MIN_WORK || !nn_dnnl_ready()) return false;
    gemm_key g;
    memset(&g, 0, sizeof g);
    g.kind = 'G', g.dt = dt, g.ta = ta, g.tb = tb, g.alpha = alpha, g.beta = beta;
    g.m = m, g.n = n, g.k = k, g.lda = lda, g.ldb = ldb, g.ldc = ldc;
    nn_dnnl_set_threads(1);
    nn_dnnl_prim *c = nn_dnnl_prim_get(&g, sizeof g, prim_build, NULL);
    void *ptr[3] = {(void *)A, (void *)B, C};
    return c && nn_dnnl_prim_run(c, ptr);
}
