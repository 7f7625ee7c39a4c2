/* Autocast: the output dtype of every op with a policy, inside and outside regions
 * (CPU autocast in bfloat16 and float16, nested, disabled, another device type's
 * region), values against plain loops over the cast inputs, gradients reaching
 * float32 parameters in float32, the cast cache (one cast per parameter per region,
 * dropped at the outermost close, stale after an in-place change, no_grad casts kept
 * apart), backward running with autocast suspended, layouts kept by casts, errors. */
#include <math.h>
#include <string.h>

#include "autocast.h"
#include "autograd.h"
#include "check.h"
#include "conv.h"
#include "memory_format.h"
#include "nnfunc.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

/* values uniform in [lo, hi); transposed: the last two dims come from a transposed buffer */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, bool transposed, double lo, double hi)
{
    int64_t bshape[NN_MAX_DIMS], bstr[NN_MAX_DIMS], strides[NN_MAX_DIMS];
    memcpy(bshape, shape, sizeof(int64_t) * (size_t)nd);
    if (transposed && nd >= 2) bshape[nd - 1] = shape[nd - 2], bshape[nd - 2] = shape[nd - 1];
    nn_tensor *base = nn_empty(nd, bshape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; i < nn_numel(base); i++)
        nn_store_f64((char *)nn_data(base) + i * (int64_t)nn_dtype_size(dt), dt, lo + (hi - lo) * urand());
    nn_contiguous_strides(nd, bshape, bstr);
    memcpy(strides, bstr, sizeof(int64_t) * (size_t)nd);
    if (transposed && nd >= 2) strides[nd - 1] = bstr[nd - 2], strides[nd - 2] = bstr[nd - 1];
    nn_tensor *v = nn_make_view(base, nd, shape, strides, 0);
    nn_release(base);
    return v;
}

static double at(const nn_tensor *t, int64_t i0, int64_t i1)
{
    int64_t idx[2] = {i0, i1};
    return nn_get_f64(t, idx);
}

/* the value x has as dtype dt (rounded) */
static double as(double x, nn_dtype dt)
{
    uint16_t h;
    switch (dt) {
    case NN_F16: h = nn_float_to_half((float)x); return nn_half_to_float(h);
    case NN_BF16: h = nn_float_to_bf16((float)x); return nn_bf16_to_float(h);
    case NN_F32: return (float)x;
    default: return x;
    }
}

static bool near(double a, double b, double tol) { return fabs(a - b) <= tol * fmax(1, fmax(fabs(a), fabs(b))); }

typedef struct {
    nn_autocast_region r;
} region;

static void enter(region *g, nn_devtype dev, bool on, nn_dtype dt, bool cache)
{
    nn_status st = nn_autocast_enter(dev, on, dt, cache, &g->r);
    CHECK(st == NN_OK, "enter: %s", nn_last_error());
}

static nn_dtype dtype_of(nn_tensor *t)
{
    nn_dtype d = t ? t->dtype : NN_DTYPE_NONE;
    if (!t) fprintf(stderr, "  op failed: %s\n", nn_last_error());
    nn_release(t);
    return d;
}

/* ---- the policy: output dtypes ---- */

enum { MM, BMM, MATMUL, ADDMM, DOT_MIXED, DOT_LOW, CONV, EXP, LOG, RSQRT, ERF, LOG1P, POW_SCALAR, POW, SUM, MEAN, PROD, VAR, STD,
       NORM, SOFTMAX, LOG_SOFTMAX, NLL, AMAX, RELU, SIGMOID, ADD_MIXED, ADD_LOW, ADD_ZERO_DIM, MUL_NUMBER, WHERE_MIXED, CAT_MIXED,
       STACK_LOW, MM_F64, EXP_F64, SUM_INT, NOPS };
static const char *op_names[NOPS] = {"mm", "bmm", "matmul", "addmm", "dot mixed", "dot low", "conv2d", "exp", "log", "rsqrt", "erf",
                                     "log1p", "pow_scalar", "pow", "sum", "mean", "prod", "var", "std", "norm", "softmax",
                                     "log_softmax", "nll_loss", "amax", "relu", "sigmoid", "add mixed", "add low", "add 0-dim",
                                     "mul number", "where mixed", "cat mixed", "stack low", "mm f64", "exp f64", "sum int"};

/* Run op on fresh float32 inputs, with low (the region's lower dtype, or float32 outside) for
 * the inputs that are lower precision in the test. Returns the output dtype. */
static nn_dtype run_op(int op, nn_dtype low)
{
    int64_t s34[2] = {3, 4}, s45[2] = {4, 5}, s5[1] = {5}, s4[1] = {4}, s234[3] = {2, 3, 4}, s245[3] = {2, 4, 5};
    int64_t sx[4] = {1, 2, 5, 5}, sw[4] = {3, 2, 3, 3}, s3[1] = {3};
    nn_tensor *a = make(2, s34, NN_F32, true, 0.5, 1.5), *b = make(2, s45, NN_F32, false, 0.5, 1.5);
    nn_tensor *l = make(2, s34, low, false, 0.5, 1.5); /* a lower-precision activation */
    nn_tensor *r = NULL;
    switch (op) {
    case MM: r = nn_mm(a, b); break;
    case BMM: {
        nn_tensor *x = make(3, s234, NN_F32, true, 0, 1), *y = make(3, s245, NN_F32, false, 0, 1);
        r = nn_bmm(x, y);
        nn_release(x), nn_release(y);
        break;
    }
    case MATMUL: {
        nn_tensor *x = make(3, s234, NN_F32, false, 0, 1);
        r = nn_matmul(x, b);
        nn_release(x);
        break;
    }
    case ADDMM: {
        nn_tensor *bias = make(1, s5, NN_F32, false, 0, 1);
        r = nn_addmm(bias, a, b, 1, 1);
        nn_release(bias);
        break;
    }
    case DOT_MIXED:
    case DOT_LOW: {
        nn_tensor *x = make(1, s4, op == DOT_MIXED ? NN_F32 : low, false, 0, 1), *y = make(1, s4, low, false, 0, 1);
        r = nn_dot(x, y);
        nn_release(x), nn_release(y);
        break;
    }
    case CONV: {
        nn_tensor *x = make(4, sx, NN_F32, false, -1, 1), *w = make(4, sw, NN_F32, false, -1, 1), *bias = make(1, s3, NN_F32, false, 0, 1);
        int64_t one[2] = {1, 1}, pad[2] = {1, 1};
        r = nn_conv2d(x, w, bias, one, pad, one, 1);
        nn_release(x), nn_release(w), nn_release(bias);
        break;
    }
    case EXP: r = nn_unary(NN_OP_exp, l); break;
    case LOG: r = nn_unary(NN_OP_log, l); break;
    case RSQRT: r = nn_unary(NN_OP_rsqrt, l); break;
    case ERF: r = nn_unary(NN_OP_erf, l); break;
    case LOG1P: r = nn_unary(NN_OP_log1p, l); break;
    case POW_SCALAR: r = nn_pow_scalar(l, 2); break;
    case POW: r = nn_binary(NN_OP_pow, l, l); break;
    case SUM: r = nn_reduce(NN_OP_sum, l, 0, false); break;
    case MEAN: r = nn_reduce(NN_OP_mean, l, 1, true); break;
    case PROD: r = nn_reduce(NN_OP_prod, l, 2, false); break;
    case VAR: r = nn_var(l, 0, 1, false); break;
    case STD: r = nn_std(l, 1, 1, false); break;
    case NORM: r = nn_norm(l, 2, 0, false); break;
    case SOFTMAX: r = nn_softmax(l, 1, NN_DTYPE_NONE); break;
    case LOG_SOFTMAX: r = nn_log_softmax(l, -1, NN_DTYPE_NONE); break;
    case NLL: {
        nn_tensor *t = nn_zeros(1, s3, NN_I64, NN_DEVICE_CPU);
        r = nn_nll_loss(l, t, NULL, NN_REDUCTION_MEAN, -100);
        nn_release(t);
        break;
    }
    case AMAX: r = nn_reduce(NN_OP_amax, l, 1, false); break;
    case RELU: r = nn_unary(NN_OP_relu, l); break;
    case SIGMOID: r = nn_unary(NN_OP_sigmoid, l); break;
    case ADD_MIXED: r = nn_binary(NN_OP_add, l, a); break;
    case ADD_LOW: r = nn_binary(NN_OP_add, l, l); break;
    case ADD_ZERO_DIM: {
        nn_tensor *z = nn_full(0, NULL, 2.0, NN_F32, NN_DEVICE_CPU); /* a 0-dim tensor ranks below l */
        r = nn_binary(NN_OP_add, l, z);
        nn_release(z);
        break;
    }
    case MUL_NUMBER: {
        nn_tensor *z = nn_scalar_f64(0.5);
        r = nn_binary(NN_OP_mul, l, z);
        nn_release(z);
        break;
    }
    case WHERE_MIXED: {
        nn_tensor *c = nn_binary(NN_OP_gt, a, l);
        r = nn_where(c, l, a);
        nn_release(c);
        break;
    }
    case CAT_MIXED: {
        nn_tensor *ts[2] = {l, a};
        r = nn_cat(ts, 2, 0);
        break;
    }
    case STACK_LOW: {
        nn_tensor *ts[2] = {l, l};
        r = nn_stack(ts, 2, 0);
        break;
    }
    case MM_F64: {
        nn_tensor *x = make(2, s34, NN_F64, false, 0, 1), *y = make(2, s45, NN_F64, false, 0, 1);
        r = nn_mm(x, y);
        nn_release(x), nn_release(y);
        break;
    }
    case EXP_F64: {
        nn_tensor *x = make(2, s34, NN_F64, false, 0, 1);
        r = nn_unary(NN_OP_exp, x);
        nn_release(x);
        break;
    }
    case SUM_INT: {
        nn_tensor *x = nn_ones(2, s34, NN_I32, NN_DEVICE_CPU);
        r = nn_reduce(NN_OP_sum, x, 0, false);
        nn_release(x);
        break;
    }
    }
    nn_release(a), nn_release(b), nn_release(l);
    return dtype_of(r);
}

/* The expected output dtype of op inside a region of dtype low (lower-precision inputs are low);
 * outside a region pass low = NN_DTYPE_NONE: every input is float32, no casts. */
static nn_dtype expected(int op, nn_dtype low)
{
    bool in = low != NN_DTYPE_NONE;
    nn_dtype l = in ? low : NN_F32;
    switch (op) {
    case MM: case BMM: case MATMUL: case ADDMM: case CONV: return l;
    case DOT_MIXED: return NN_F32;                 /* promote to the widest */
    case DOT_LOW: case AMAX: case RELU: case SIGMOID: case ADD_LOW: case ADD_ZERO_DIM: case MUL_NUMBER: case STACK_LOW: return l;
    case ADD_MIXED: case WHERE_MIXED: case CAT_MIXED: return NN_F32;
    case MM_F64: case EXP_F64: return NN_F64;
    case SUM_INT: return NN_I64;
    default: return NN_F32;                        /* the float32 ops */
    }
}

static void test_policy(void)
{
    for (int op = 0; op < NOPS; op++) {
        nn_dtype got = run_op(op, NN_F32);
        CHECK(got == expected(op, NN_DTYPE_NONE), "outside: %s gave %s", op_names[op], got >= 0 ? nn_dtype_name(got) : "error");
    }
    /* outside a region a lower-precision input stays lower precision */
    CHECK(run_op(EXP, NN_BF16) == NN_BF16 && run_op(SUM, NN_F16) == NN_F16 && run_op(SOFTMAX, NN_BF16) == NN_BF16, "no region: no casts");
    const nn_dtype lows[2] = {NN_BF16, NN_F16};
    for (int k = 0; k < 2; k++) {
        region g;
        enter(&g, NN_CPU, true, lows[k], true);
        for (int op = 0; op < NOPS; op++) {
            nn_dtype got = run_op(op, lows[k]);
            CHECK(got == expected(op, lows[k]), "cpu %s region: %s gave %s, want %s", nn_dtype_name(lows[k]), op_names[op],
                  got >= 0 ? nn_dtype_name(got) : "error", nn_dtype_name(expected(op, lows[k])));
        }
        nn_autocast_exit(&g.r);
    }
    CHECK(!nn_autocast_on() && !nn_autocast_enabled(NN_CPU), "state restored");
    CHECK(run_op(MM, NN_F32) == NN_F32 && run_op(SOFTMAX, NN_BF16) == NN_BF16, "after the region: no casts");
}

static void test_nesting(void)
{
    CHECK(nn_autocast_dtype(NN_CPU) == NN_BF16 && nn_autocast_dtype(NN_CUDA) == NN_F16, "default dtypes");
    CHECK(nn_autocast_cache_enabled(), "cache on by default");
    region outer, inner, off, cuda;
    enter(&outer, NN_CPU, true, NN_DTYPE_NONE, true); /* the current dtype: bfloat16 */
    CHECK(nn_autocast_enabled(NN_CPU) && nn_autocast_dtype(NN_CPU) == NN_BF16 && run_op(MM, NN_BF16) == NN_BF16, "outer bf16");
    enter(&inner, NN_CPU, true, NN_F16, true);
    CHECK(run_op(MM, NN_F16) == NN_F16, "inner f16");
    enter(&off, NN_CPU, false, NN_DTYPE_NONE, true);
    CHECK(!nn_autocast_on() && run_op(MM, NN_F32) == NN_F32 && run_op(SOFTMAX, NN_F16) == NN_F16, "enabled=false region");
    nn_autocast_exit(&off.r);
    CHECK(run_op(MM, NN_F16) == NN_F16 && nn_autocast_dtype(NN_CPU) == NN_F16, "back in f16");
    nn_autocast_exit(&inner.r);
    CHECK(run_op(MM, NN_BF16) == NN_BF16 && nn_autocast_dtype(NN_CPU) == NN_BF16, "back in bf16");
    nn_autocast_exit(&outer.r);
    CHECK(!nn_autocast_on() && run_op(MM, NN_F32) == NN_F32, "all closed");

    /* a cuda region leaves CPU tensors alone */
    enter(&cuda, NN_CUDA, true, NN_DTYPE_NONE, true);
    CHECK(nn_autocast_on() && nn_autocast_enabled(NN_CUDA) && !nn_autocast_enabled(NN_CPU), "cuda region on");
    CHECK(run_op(MM, NN_F32) == NN_F32 && run_op(SOFTMAX, NN_F16) == NN_F16, "cuda region: CPU tensors unchanged");
    nn_autocast_exit(&cuda.r);
    CHECK(!nn_autocast_on(), "cuda region closed");

    /* errors leave the state alone */
    nn_autocast_region r;
    CHECK(nn_autocast_enter(NN_CPU, true, NN_I64, true, &r) == NN_ERR_DTYPE && strstr(nn_last_error(), "int64"), "bad dtype: %s",
          nn_last_error());
    CHECK(nn_autocast_enter(NN_CPU, true, NN_F64, true, &r) == NN_ERR_DTYPE, "float64 is no autocast dtype");
    CHECK(nn_autocast_enter((nn_devtype)7, true, NN_F16, true, &r) == NN_ERR_DEVICE, "bad device type");
    CHECK(!nn_autocast_on() && nn_autocast_dtype(NN_CPU) == NN_BF16, "state unchanged by errors");
    CHECK(nn_autocast_set_dtype(NN_CPU, NN_F16) == NN_OK && nn_autocast_dtype(NN_CPU) == NN_F16, "set_dtype");
    nn_autocast_set_dtype(NN_CPU, NN_BF16);
}

/* ---- values ---- */

static void test_values(void)
{
    int64_t s34[2] = {3, 4}, s45[2] = {4, 5};
    nn_tensor *a = make(2, s34, NN_F32, true, -1, 1), *b = make(2, s45, NN_F32, false, -1, 1);
    const nn_dtype lows[2] = {NN_BF16, NN_F16};
    for (int k = 0; k < 2; k++) {
        nn_dtype lo = lows[k];
        region g;
        enter(&g, NN_CPU, true, lo, true);
        nn_tensor *y = nn_mm(a, b), *sm = nn_softmax(y, 1, NN_DTYPE_NONE);
        nn_autocast_exit(&g.r);
        bool ok = y && sm && y->dtype == lo && sm->dtype == NN_F32;
        for (int i = 0; ok && i < 3; i++) {
            double row[5], mx = -INFINITY, z = 0;
            for (int j = 0; j < 5; j++) {
                double s = 0;
                for (int q = 0; q < 4; q++) s += as(at(a, i, q), lo) * as(at(b, q, j), lo);
                ok &= near(at(y, i, j), as(s, lo), lo == NN_BF16 ? 1e-2 : 2e-3);
                row[j] = at(y, i, j); /* softmax reads the lower-precision y as float32 */
                mx = fmax(mx, row[j]);
            }
            for (int j = 0; j < 5; j++) z += exp(row[j] - mx);
            for (int j = 0; j < 5; j++) ok &= near(at(sm, i, j), exp(row[j] - mx) / z, 1e-6);
        }
        CHECK(ok, "mm and softmax values in a %s region", nn_dtype_name(lo));
        nn_release(y), nn_release(sm);
    }
    nn_release(a), nn_release(b);
}

/* ---- gradients ---- */

static void test_grads(void)
{
    int64_t s34[2] = {3, 4}, s45[2] = {4, 5}, s5[1] = {5};
    nn_tensor *x = make(2, s34, NN_F32, false, -1, 1), *w = make(2, s45, NN_F32, true, -1, 1), *bias = make(1, s5, NN_F32, false, -1, 1);
    nn_requires_grad_(x, true), nn_requires_grad_(w, true), nn_requires_grad_(bias, true);
    region g;
    enter(&g, NN_CPU, true, NN_BF16, true);
    nn_tensor *y = nn_addmm(bias, x, w, 1, 1), *loss = y ? nn_reduce(NN_OP_sum, y, 0, false) : NULL;
    CHECK(y && y->dtype == NN_BF16 && y->grad_fn && !strcmp(y->grad_fn->name, "AddmmBackward0"), "addmm in bf16 on the graph");
    CHECK(loss && loss->dtype == NN_F32, "sum in float32");
    /* the casts are on the graph as ToCopyBackward0 */
    bool tocopy = y && y->grad_fn->nin == 3;
    for (int i = 0; tocopy && i < 3; i++) tocopy = y->grad_fn->next[i].node && !strcmp(y->grad_fn->next[i].node->name, "ToCopyBackward0");
    CHECK(tocopy, "the casts record ToCopyBackward0");
    nn_autocast_exit(&g.r);
    CHECK(loss && nn_backward(loss, NULL, false) == NN_OK, "backward: %s", nn_last_error());
    CHECK(w->grad && w->grad->dtype == NN_F32 && x->grad && x->grad->dtype == NN_F32 && bias->grad && bias->grad->dtype == NN_F32,
          "gradients reach the float32 leaves in float32");
    bool ok = w->grad && x->grad && bias->grad;
    for (int q = 0; ok && q < 4; q++)
        for (int j = 0; j < 5; j++) {
            double s = 0, t = 0;
            for (int i = 0; i < 3; i++) s += as(at(x, i, q), NN_BF16);
            for (int i = 0; i < 5; i++) t += as(at(w, q, i), NN_BF16);
            ok &= near(at(w->grad, q, j), s, 1e-2);
            if (j < 3) ok &= near(at(x->grad, j, q), t, 1e-2);
        }
    for (int j = 0; ok && j < 5; j++) {
        int64_t idx[1] = {j};
        ok &= nn_get_f64(bias->grad, idx) == 3;
    }
    CHECK(ok, "gradient values");
    nn_release(y), nn_release(loss);

    /* conv2d: float32 weight, bfloat16 compute, float32 gradient */
    int64_t sx[4] = {2, 3, 6, 6}, sw[4] = {4, 3, 3, 3}, one[2] = {1, 1}, zero[2] = {0, 0};
    nn_tensor *cx = make(4, sx, NN_F32, false, -1, 1), *cw = make(4, sw, NN_F32, false, -1, 1);
    nn_requires_grad_(cw, true);
    enter(&g, NN_CPU, true, NN_BF16, true);
    nn_tensor *cy = nn_conv2d(cx, cw, NULL, one, zero, one, 1), *cl = cy ? nn_reduce(NN_OP_mean, cy, 0, false) : NULL;
    nn_autocast_exit(&g.r);
    CHECK(cy && cy->dtype == NN_BF16 && cl && cl->dtype == NN_F32, "conv2d in bf16, mean in f32");
    CHECK(cl && nn_backward(cl, NULL, false) == NN_OK && cw->grad && cw->grad->dtype == NN_F32, "conv weight grad in float32");
    nn_release(cy), nn_release(cl), nn_release(cx), nn_release(cw);
    nn_release(x), nn_release(w), nn_release(bias);
}

/* backward inside a region runs without autocast: its ops keep the forward's dtypes */
static void test_backward_in_region(void)
{
    int64_t s34[2] = {3, 4}, s45[2] = {4, 5};
    nn_tensor *x = make(2, s34, NN_F32, false, -1, 1), *w = make(2, s45, NN_F32, false, -1, 1);
    nn_requires_grad_(w, true);
    /* a float32 product made outside any region: MmBackward0's products would be bfloat16 under autocast */
    nn_tensor *y = nn_mm(x, w), *loss = y ? nn_reduce(NN_OP_sum, y, 0, false) : NULL;
    region g;
    enter(&g, NN_CPU, true, NN_BF16, true);
    uint64_t before = nn_autocast_get_stats().casts;
    nn_status st = loss ? nn_backward(loss, NULL, false) : nn_last_status();
    CHECK(st == NN_OK && nn_autocast_get_stats().casts == before, "no autocast casts during backward");
    CHECK(nn_autocast_enabled(NN_CPU), "autocast back on after backward");
    bool ok = w->grad && w->grad->dtype == NN_F32;
    for (int q = 0; ok && q < 4; q++) {
        double s = 0;
        for (int i = 0; i < 3; i++) s += at(x, i, q);
        for (int j = 0; j < 5; j++) ok &= near(at(w->grad, q, j), s, 1e-6);
    }
    CHECK(ok, "the gradient in float32 precision");
    nn_autocast_exit(&g.r);
    nn_release(y), nn_release(loss), nn_release(x), nn_release(w);
}

/* ---- the cast cache ---- */

static void test_cache(void)
{
    int64_t s34[2] = {3, 4}, s45[2] = {4, 5};
    nn_tensor *x = make(2, s34, NN_BF16, false, -1, 1), *w = make(2, s45, NN_F32, false, -1, 1);
    nn_tensor *plain = make(2, s45, NN_F32, false, -1, 1); /* no grad: never cached */
    nn_requires_grad_(w, true);
    region g;
    enter(&g, NN_CPU, true, NN_BF16, true);
    nn_autocast_stats s0 = nn_autocast_get_stats();
    nn_tensor *y1 = nn_mm(x, w), *y2 = nn_mm(x, w);
    nn_autocast_stats s1 = nn_autocast_get_stats();
    CHECK(s1.casts - s0.casts == 1 && s1.cache_hits - s0.cache_hits == 1 && s1.cached == 1, "a parameter is cast once: casts %llu hits %llu cached %d",
          (unsigned long long)(s1.casts - s0.casts), (unsigned long long)(s1.cache_hits - s0.cache_hits), s1.cached);
    CHECK(y1 && y2 && y1->grad_fn->next[1].node == y2->grad_fn->next[1].node, "both products use the one cast");
    CHECK(w->refcount > 1, "the cache holds the parameter");

    nn_tensor *p1 = nn_mm(x, plain), *p2 = nn_mm(x, plain);
    nn_autocast_stats s2 = nn_autocast_get_stats();
    CHECK(s2.casts - s1.casts == 2 && s2.cached == 1, "a tensor without grad is cast each time");

    nn_tensor *nonleaf = nn_binary(NN_OP_mul, w, w); /* requires grad, has a grad_fn */
    nn_tensor *q1 = nn_mm(x, nonleaf), *q2 = nn_mm(x, nonleaf);
    nn_autocast_stats s3 = nn_autocast_get_stats();
    CHECK(s3.casts - s2.casts == 2 && s3.cached == 1, "a non-leaf is cast each time");

    /* an in-place change of the parameter makes its cast stale */
    nn_set_grad_enabled(false);
    nn_tensor *two = nn_scalar_f64(2);
    nn_binary_(NN_OP_mul, w, two);
    nn_release(two);
    nn_set_grad_enabled(true);
    nn_tensor *y3 = nn_mm(x, w);
    nn_autocast_stats s4 = nn_autocast_get_stats();
    CHECK(s4.casts - s3.casts == 1 && s4.cached == 1, "recast after an in-place change");
    CHECK(y3 && y1 && near(at(y3, 1, 2), 2 * at(y1, 1, 2), 1e-2), "the recast has the new values");

    /* no_grad casts have no history: kept apart from the ones that do */
    nn_set_grad_enabled(false);
    nn_tensor *n1 = nn_mm(x, w), *n2 = nn_mm(x, w);
    nn_set_grad_enabled(true);
    nn_autocast_stats s5 = nn_autocast_get_stats();
    CHECK(s5.casts - s4.casts == 1 && s5.cache_hits - s4.cache_hits == 1 && s5.cached == 2 && n1 && !n1->grad_fn, "no_grad entry");
    nn_tensor *y4 = nn_mm(x, w);
    CHECK(y4 && y4->grad_fn && nn_autocast_get_stats().casts == s5.casts, "grad-mode entry still served");

    /* a nested region does not clear; a cache-disabled one does not cache */
    region inner;
    enter(&inner, NN_CPU, true, NN_BF16, false);
    nn_tensor *u1 = nn_mm(x, plain);
    nn_autocast_stats s6 = nn_autocast_get_stats();
    nn_tensor *u2 = nn_mm(x, w);
    nn_autocast_stats s7 = nn_autocast_get_stats();
    CHECK(s7.casts - s6.casts == 1 && s7.cache_hits == s6.cache_hits, "cache_enabled=false: cast, not served from the cache");
    nn_autocast_exit(&inner.r);
    CHECK(nn_autocast_get_stats().cached == 2 && nn_autocast_cache_enabled(), "inner exit keeps the cache");
    nn_autocast_exit(&g.r);
    CHECK(nn_autocast_get_stats().cached == 0, "outermost exit drops the cache");
    nn_tensor *all[] = {y1, y2, p1, p2, nonleaf, q1, q2, y3, n1, n2, y4, u1, u2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) nn_release(all[i]);
    CHECK(w->refcount == 1, "the parameter is no longer held (refcount %d)", w->refcount);

    /* a new region casts again */
    enter(&g, NN_CPU, true, NN_BF16, true);
    nn_autocast_stats s8 = nn_autocast_get_stats();
    nn_tensor *z = nn_mm(x, w);
    CHECK(nn_autocast_get_stats().casts - s8.casts == 1, "a new region casts anew");
    nn_release(z);
    /* a float16 region nested in it caches its own cast */
    region h;
    enter(&h, NN_CPU, true, NN_F16, true);
    z = nn_mm(x, w); /* x is cast too (bf16 -> f16) */
    CHECK(z && z->dtype == NN_F16 && nn_autocast_get_stats().cached == 2, "one entry per dtype");
    nn_release(z);
    nn_autocast_exit(&h.r);
    nn_autocast_exit(&g.r);

    /* many parameters: the table grows */
    enter(&g, NN_CPU, true, NN_BF16, true);
    enum { NP = 300 };
    nn_tensor *ps[NP];
    bool ok = true;
    for (int i = 0; i < NP; i++) {
        ps[i] = make(2, s45, NN_F32, false, -1, 1);
        nn_requires_grad_(ps[i], true);
        nn_tensor *r = nn_mm(x, ps[i]);
        ok &= r != NULL;
        nn_release(r);
    }
    nn_autocast_stats s9 = nn_autocast_get_stats();
    for (int i = 0; i < NP; i++) nn_release(nn_mm(x, ps[i]));
    nn_autocast_stats s10 = nn_autocast_get_stats();
    CHECK(ok && s9.cached == NP && s10.cache_hits - s9.cache_hits == NP && s10.casts == s9.casts, "300 parameters cached");
    nn_autocast_exit(&g.r);
    for (int i = 0; i < NP; i++) {
        ok &= ps[i]->refcount == 1;
        nn_release(ps[i]);
    }
    CHECK(ok, "all released");
    nn_release(x), nn_release(w), nn_release(plain);
}

/* a cast keeps a dense permuted layout (channels_last) */
static void test_layout(void)
{
    int64_t sx[4] = {2, 3, 4, 5};
    nn_tensor *x = make(4, sx, NN_F32, false, -1, 1), *cl = nn_contiguous_as(x, NN_CHANNELS_LAST);
    int64_t s2[2] = {3, 4};
    nn_tensor *t = make(2, s2, NN_F32, true, -1, 1); /* transposed: a dense permuted 2-D layout */
    region g;
    enter(&g, NN_CPU, true, NN_BF16, true);
    nn_tensor *in[2] = {cl, t}, *c[2];
    CHECK(nn_autocast_apply(NN_AUTOCAST_LOWER, 2, in, c) == NN_OK && c[0] && c[1], "cast");
    CHECK(c[0] && c[0]->dtype == NN_BF16 && nn_is_contiguous_as(c[0], NN_CHANNELS_LAST) && !nn_is_contiguous(c[0]), "channels_last kept");
    CHECK(c[1] && c[1]->strides[0] == 1 && c[1]->strides[1] == 3, "transposed layout kept");
    bool ok = c[0] != NULL;
    int64_t idx[4];
    for (idx[0] = 0; ok && idx[0] < 2; idx[0]++)
        for (idx[1] = 0; idx[1] < 3; idx[1]++)
            for (idx[2] = 0; idx[2] < 4; idx[2]++)
                for (idx[3] = 0; idx[3] < 5; idx[3]++) ok &= nn_get_f64(c[0], idx) == as(nn_get_f64(x, idx), NN_BF16);
    CHECK(ok, "cast values");
    nn_autocast_release(2, c);
    nn_autocast_exit(&g.r);
    nn_release(x), nn_release(cl), nn_release(t);
}

int main(void)
{
    test_policy();
    test_nesting();
    test_values();
    test_grads();
    test_backward_in_region();
    test_cache();
    test_layout();
    return CHECK_REPORT();
}
