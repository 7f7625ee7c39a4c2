/* Backward of the matrix products. One formula covers mm, bmm, mv, dot and matmul in
 * every shape case: a 1-D operand is seen as a row ([1, k]) or a column ([k, 1]) matrix,
 * then gA = G @ B^T and gB = A^T @ G, with batch dims that were broadcast summed away by
 * nn_backward. When only A has batch dims, gB folds them into the rows: one mm. */
#define NN_GRAD_INTERNAL
#include "amp.h"
#include "grad.h"

#define NEEDS(n, k) ((n)->next[k].node != NULL)

static nn_tensor *unsq(gscope *s, nn_tensor *t, int dim) { return t ? gs_keep(s, nn_unsqueeze(t, dim)) : NULL; }
static nn_tensor *sq(gscope *s, nn_tensor *t, int dim) { return t ? gs_keep(s, nn_squeeze(t, dim)) : NULL; }
static nn_tensor *mT(gscope *s, nn_tensor *t) { return t ? gs_keep(s, nn_transpose(t, -1, -2)) : NULL; }
static nn_tensor *mm(gscope *s, nn_tensor *a, nn_tensor *b) { return a && b ? gs_keep(s, nn_matmul(a, b)) : NULL; }

/* A column-major matrix (F.linear's weight.t()): its gradient is made column-major too, so that
 * the transpose's backward hands AccumulateGrad a contiguous tensor it keeps without a copy
 * (PyTorch's mm_mat2_backward does the same). Decided at record time: b itself is not always saved. */
static bool col_major(const nn_tensor *b)
{
    return b->ndim == 2 && b->shape[0] > 1 && b->shape[1] > 1 && b->strides[0] == 1 && b->strides[1] == b->shape[0];
}

/* Gradients of out = a @ b (torch.matmul shapes) for the operands whose *ga / *gb is asked for;
 * b_col: b was column-major (col_major). The results are owned by s. */
static void matmul_grads(gscope *s, nn_tensor *g, nn_tensor *a, nn_tensor *b, int nda, int ndb, bool b_col, nn_tensor **ga,
                         nn_tensor **gb)
{
    if (nda == 1 && ndb == 1) { /* dot: g is 0-dim */
        if (ga) *ga = gs_bin(s, NN_OP_mul, g, b);
        if (gb) *gb = gs_bin(s, NN_OP_mul, g, a);
        return;
    }
    nn_tensor *G = g;
    if (nda == 1) G = unsq(s, G, G->ndim - 1); /* [..., n] -> [..., 1, n] */
    if (ndb == 1) G = unsq(s, G, G ? G->ndim : 0); /* [..., m] -> [..., m, 1] */
    if (ga) {
        nn_tensor *B2 = ndb == 1 ? unsq(s, b, 1) : b;
        nn_tensor *r = mm(s, G, mT(s, B2));
        *ga = nda == 1 ? sq(s, r, -2) : r;
    }
    if (gb) {
        nn_tensor *A2 = nda == 1 ? unsq(s, a, 0) : a, *G2 = G;
        if (ndb <= 2 && nda > 2 && A2 && G) { /* fold the batch into the rows: [B*m, k]^T @ [B*m, n] */
            int64_t rows = 1; /* not -1: with no columns (k = 0) it would be ambiguous */
            for (int d = 0; d < A2->ndim - 1; d++) rows *= A2->shape[d];
            int64_t af[2] = {rows, A2->shape[A2->ndim - 1]}, gf[2] = {rows, G->shape[G->ndim - 1]};
            A2 = gs_keep(s, nn_reshape(A2, 2, af));
            G2 = gs_keep(s, nn_reshape(G, 2, gf));
        }
        nn_tensor *r = ndb == 2 && b_col ? mT(s, mm(s, mT(s, G2), A2)) : mm(s, mT(s, A2), G2);
        *gb = ndb == 1 ? sq(s, r, -1) : r;
    }
}

/* saved: 0 a (when b needs a gradient), 1 b (when a does) */
static nn_status load_operands(nn_node *n, int ia, int ib, nn_tensor **a, nn_tensor **b)
{
    *a = *b = NULL;
    if (NEEDS(n, ib) && !(*a = nn_node_saved(n, 0))) return nn_last_status();
    if (NEEDS(n, ia) && !(*b = nn_node_saved(n, 1))) return nn_last_status();
    return NN_OK;
}

static nn_status matmul_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_tensor *a, *b, *ga = NULL, *gb = NULL;
    nn_status st = load_operands(n, 0, 1, &a, &b);
    if (st) return st;
    gscope s = {0};
    a = gs_conj(&s, a), b = gs_conj(&s, b);
    matmul_grads(&s, go[0], a, b, n->next[0].ndim, n->next[1].ndim, n->i[0], NEEDS(n, 0) ? &ga : NULL, NEEDS(n, 1) ? &gb : NULL);
    gi[0] = gs_ret(ga), gi[1] = gs_ret(gb);
    gs_free(&s);
    return (NEEDS(n, 0) && !gi[0]) || (NEEDS(n, 1) && !gi[1]) ? nn_last_status() : NN_OK;
}

/* edges: bias, a, b; f[0] beta, f[1] alpha */
static nn_status addmm_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_tensor *a, *b, *ga = NULL, *gb = NULL, *gc = NULL;
    nn_status st = load_operands(n, 1, 2, &a, &b);
    if (st) return st;
    double beta = n->f[0], alpha = n->f[1];
    gscope s = {0};
    a = gs_conj(&s, a), b = gs_conj(&s, b);
    if (NEEDS(n, 0)) gc = beta == 1 ? go[0] : gs_muls(&s, go[0], beta);
    matmul_grads(&s, go[0], a, b, 2, 2, n->i[0], NEEDS(n, 1) ? &ga : NULL, NEEDS(n, 2) ? &gb : NULL);
    if (alpha != 1) {
        if (ga) ga = gs_muls(&s, ga, alpha);
        if (gb) gb = gs_muls(&s, gb, alpha);
    }
    gi[0] = gs_ret(gc), gi[1] = gs_ret(ga), gi[2] = gs_ret(gb);
    gs_free(&s);
    for (int k = 0; k < 3; k++)
        if (NEEDS(n, k) && !gi[k]) return nn_last_status();
    return NN_OK;
}

static nn_status save_operands(nn_node *n, int ia, int ib, nn_tensor *a, nn_tensor *b)
{
    if (NEEDS(n, ib)) nn_node_save(n, 0, a);
    if (NEEDS(n, ia)) nn_node_save(n, 1, b);
    return NN_OK;
}

static nn_status finish(nn_node *n, nn_tensor *out)
{
    nn_node_set_output(n, out, 0);
    nn_node_release(n);
    return NN_OK;
}

nn_status nn_record_matmul(const char *name, nn_tensor *a, nn_tensor *b, nn_tensor *out)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_tensor *ins[2] = {a, b};
    nn_node *n = nn_node_new(name, matmul_backward, 2, ins);
    if (!n) return nn_last_status();
    n->i[0] = col_major(b);
    save_operands(n, 0, 1, a, b);
    return finish(n, out);
}

nn_status nn_record_addmm(nn_tensor *bias, nn_tensor *a, nn_tensor *b, nn_tensor *out, double beta, double alpha)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_tensor *ins[3] = {bias, a, b};
    nn_node *n = nn_node_new("AddmmBackward0", addmm_backward, 3, ins);
    if (!n) return nn_last_status();
    n->f[0] = beta, n->f[1] = alpha;
    n->i[0] = col_major(b);
    save_operands(n, 1, 2, a, b);
    return finish(n, out);
}

/* edges: b (or none), x16, w; saved: 0 x16 (when w needs a gradient), 1 w16 (when x16 does).
 * Float32 gradients for w and b: the product widened (one rounding) and a float32 sum. w's
 * gradient is inf or nan exactly when g or x16 holds one (the float accumulation of 16-bit
 * products cannot overflow), so those two speak for it to GradScaler's check. */
static nn_status linear_widened_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_tensor *x16, *w16, *g = go[0];
    nn_status st = load_operands(n, 1, 2, &x16, &w16);
    if (st) return st;
    gscope s = {0};
    bool graph = nn_grad_enabled(); /* create_graph: ops that record */
    if (NEEDS(n, 0)) gi[0] = nn_sum_dtype(g, 1u, false, NN_F32);
    if (NEEDS(n, 1)) gi[1] = nn_mm(g, w16);
    if (NEEDS(n, 2)) {
        nn_tensor *gt = mT(&s, g);
        if (graph) {
            gi[2] = gt ? nn_to_dtype(mm(&s, gt, x16), NN_F32) : NULL;
        } else if (gt && (gi[2] = nn_mm_widened(gt, x16)) && nn_numel(g) + nn_numel(x16) < 2 * nn_numel(gi[2])) {
            nn_tensor *w[2] = {g, x16}; /* fewer bytes to read than the gradient */
            nn_set_finite_witnesses(gi[2], 2, w);
        }
    }
    gs_free(&s);
    for (int k = 0; k < 3; k++)
        if (NEEDS(n, k) && !gi[k]) return nn_last_status();
    return NN_OK;
}

nn_status nn_record_linear_widened(nn_tensor *b, nn_tensor *x16, nn_tensor *w, nn_tensor *w16, nn_tensor *out)
{
    nn_tensor *ins[3] = {b, x16, w};
    nn_node *n = nn_node_new(b ? "AddmmBackward0" : "MmBackward0", linear_widened_backward, 3, ins);
    if (!n) return nn_last_status();
    save_operands(n, 1, 2, x16, w16);
    return finish(n, out);
}

/* outer(a, b) = a[:, None] * b (PyTorch records it as MulBackward0): ga = g @ b, gb = a @ g,
 * computed in the output's dtype */
static nn_status outer_backward(nn_node *n, nn_tensor *const *go, nn_tensor **gi)
{
    nn_tensor *a, *b, *g = go[0];
    nn_status st = load_operands(n, 0, 1, &a, &b);
    if (st) return st;
    gscope s = {0};
    a = gs_conj(&s, a), b = gs_conj(&s, b);
    if (NEEDS(n, 0)) gi[0] = gs_ret(mm(&s, g, gs_keep(&s, nn_to_dtype(b, g->dtype))));
    if (NEEDS(n, 1)) gi[1] = gs_ret(mm(&s, gs_keep(&s, nn_to_dtype(a, g->dtype)), g));
    gs_free(&s);
    return (NEEDS(n, 0) && !gi[0]) || (NEEDS(n, 1) && !gi[1]) ? nn_last_status() : NN_OK;
}

nn_status nn_record_outer(nn_tensor *a, nn_tensor *b, nn_tensor *out)
{
    if (!nn_dtype_is_differentiable(out->dtype)) return NN_OK;
    nn_tensor *ins[2] = {a, b};
    nn_node *n = nn_node_new("MulBackward0", outer_backward, 2, ins);
    if (!n) return nn_last_status();
    save_operands(n, 0, 1, a, b);
    return finish(n, out);
}
