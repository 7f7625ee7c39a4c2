/* Optimizer steps (engine/optim.h) against the update formulas of PyTorch's algorithm
 * boxes, computed here in plain double loops: several steps of every option
 * combination over a list of parameters of different sizes and layouts at once
 * (contiguous, transposed, narrowed, 0-dim, empty; gradients transposed and
 * expanded; one param without a gradient, one that misses a step), in float32,
 * float64, float16 and bfloat16; then state creation, versions and errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "optim.h"
#include "ops.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1p-53;
}

enum { CONTIG, TRANSPOSED, NARROWED, EXPANDED };

/* A tensor of the given shape laid out as kind says (values unset). */
static nn_tensor *make(int nd, const int64_t *shape, nn_dtype dt, int kind)
{
    int64_t bshape[NN_MAX_DIMS] = {0}, bstr[NN_MAX_DIMS] = {0}, strides[NN_MAX_DIMS] = {0}, offset = 0;
    for (int d = 0; d < nd; d++) bshape[d] = kind == TRANSPOSED ? shape[nd - 1 - d] : shape[d];
    if (kind == NARROWED)
        for (int d = 0; d < nd; d++) bshape[d] += 2;
    if (kind == EXPANDED && nd > 0) bshape[0] = 1;
    nn_tensor *base = nn_zeros(nd, bshape, dt, NN_DEVICE_CPU);
    nn_contiguous_strides(nd, bshape, bstr);
    for (int d = 0; d < nd; d++) {
        strides[d] = kind == TRANSPOSED ? bstr[nd - 1 - d] : bstr[d];
        if (kind == NARROWED) offset += bstr[d];
    }
    if (kind == EXPANDED && nd > 0) strides[0] = 0;
    nn_tensor *v = nn_make_view(base, nd, shape, strides, offset);
    nn_release(base);
    return v;
}

/* Element j (row-major logical order) of t. */
static char *elem(const nn_tensor *t, int64_t j)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (j % t->shape[d]) * t->strides[d];
        j /= t->shape[d];
    }
    return (char *)nn_data(t) + off * (int64_t)nn_dtype_size(t->dtype);
}
static double get(const nn_tensor *t, int64_t j) { return nn_load_f64(elem(t, j), t->dtype); }
static void set(nn_tensor *t, int64_t j, double v) { nn_store_f64(elem(t, j), t->dtype, v); }

/* ---- the reference: one parameter's values and state in double ---- */
#define NP 7
#define MAXN 64
typedef struct {
    int64_t n;
    double p[MAXN], g[MAXN], s[3][MAXN];
    bool has_state;
    double step;
} ref;

enum { SGD, ADAM, RMSPROP, ADAGRAD };
static const char *alg_name[] = {"sgd", "adam", "rmsprop", "adagrad"};

typedef struct {
    int alg;
    double lr, a1, a2, a3, wd; /* sgd: momentum dampening -; adam: beta1 beta2 eps; rmsprop: alpha eps momentum; adagrad: lr_decay eps init */
    bool b0, b1, maximize;     /* sgd: nesterov; adam: amsgrad decoupled; rmsprop: centered */
} config;

static void ref_step(const config *c, ref *r)
{
    if (!r->has_state) { /* PyTorch's initial state */
        for (int64_t j = 0; j < r->n; j++)
            for (int k = 0; k < 3; k++) r->s[k][j] = c->alg == ADAGRAD && k == 0 ? c->a3 : 0;
    }
    r->step += 1;
    double t = r->step;
    for (int64_t j = 0; j < r->n; j++) {
        double g = c->maximize ? -r->g[j] : r->g[j], *p = &r->p[j];
        double *s0 = &r->s[0][j], *s1 = &r->s[1][j], *s2 = &r->s[2][j];
        if (c->wd != 0 && !(c->alg == ADAM && c->b1)) g += c->wd * *p;
        switch (c->alg) {
        case SGD:
            if (c->a1 != 0) {
                *s0 = r->has_state ? c->a1 * *s0 + (1 - c->a2) * g : g;
                g = c->b0 ? g + c->a1 * *s0 : *s0;
            }
            *p -= c->lr * g;
            break;
        case ADAM: {
            if (c->wd != 0 && c->b1) *p *= 1 - c->lr * c->wd;
            *s0 = c->a1 * *s0 + (1 - c->a1) * g;
            *s1 = c->a2 * *s1 + (1 - c->a2) * g * g;
            double v = *s1;
            if (c->b0) v = *s2 = fmax(*s2, *s1);
            double mhat = *s0 / (1 - pow(c->a1, t)), vhat = v / (1 - pow(c->a2, t));
            *p -= c->lr * mhat / (sqrt(vhat) + c->a3);
            break;
        }
        case RMSPROP: {
            *s0 = c->a1 * *s0 + (1 - c->a1) * g * g;
            double avg;
            if (c->b0) {
                *s2 = c->a1 * *s2 + (1 - c->a1) * g;
                avg = sqrt(*s0 - *s2 * *s2) + c->a2;
            } else {
                avg = sqrt(*s0) + c->a2;
            }
            if (c->a3 > 0) {
                *s1 = c->a3 * *s1 + g / avg;
                *p -= c->lr * *s1;
            } else {
                *p -= c->lr * g / avg;
            }
            break;
        }
        case ADAGRAD: {
            double clr = c->lr / (1 + (t - 1) * c->a1);
            *s0 += g * g;
            *p -= clr * g / (sqrt(*s0) + c->a2);
            break;
        }
        }
    }
    r->has_state = true;
}

/* The state tensors the engine keeps for c (in ref.s order). */
static bool uses_state(const config *c, int k)
{
    switch (c->alg) {
    case SGD: return k == 0 && c->a1 != 0;
    case ADAM: return k < 2 || (k == 2 && c->b0);
    case RMSPROP: return k == 0 || (k == 1 && c->a3 > 0) || (k == 2 && c->b0);
    default: return k == 0;
    }
}

static nn_status engine_step(const config *c, nn_tensor **p, nn_tensor **g, nn_tensor *st[3][NP], nn_tensor **steps,
                             const nn_tensor *found_inf, const nn_tensor *grad_scale)
{
    switch (c->alg) {
    case SGD: {
        nn_sgd_opts o = {c->lr, c->a1, c->a2, c->wd, c->b0, c->maximize, found_inf, grad_scale};
        return nn_sgd_step(NP, p, g, st[0], &o);
    }
    case ADAM: {
        nn_adam_opts o = {c->lr, c->a1, c->a2, c->a3, c->wd, c->b0, c->maximize, c->b1, found_inf, grad_scale};
        return nn_adam_step(NP, p, g, st[0], st[1], st[2], steps, &o);
    }
    case RMSPROP: {
        nn_rmsprop_opts o = {c->lr, c->a1, c->a2, c->wd, c->a3, c->b0, c->maximize, found_inf, grad_scale};
        return nn_rmsprop_step(NP, p, g, st[0], st[1], st[2], steps, &o);
    }
    default: {
        nn_adagrad_opts o = {c->lr, c->a1, c->wd, c->a2, c->a3, c->maximize, found_inf, grad_scale};
        return nn_adagrad_step(NP, p, g, st[0], steps, &o);
    }
    }
}

static double tol_of(nn_dtype dt)
{
    switch (dt) {
    case NN_F64: return 1e-11;
    case NN_F32: return 3e-5;
    case NN_F16: return 1e-2;
    default: return 4e-2;
    }
}

static bool close_to(double got, double want, double tol)
{
    if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
    return fabs(got - want) <= tol * fmax(1, fabs(want));
}

/* The parameter list: shapes and layouts of param and grad. Param 5 has no gradient;
 * param 1 misses step 2. */
static const int pnd[NP] = {1, 2, 2, 0, 3, 2, 1};
static const int64_t pshape[NP][3] = {{17}, {3, 5}, {4, 6}, {0}, {2, 3, 4}, {0, 3}, {5}};
static const int pkind[NP] = {CONTIG, CONTIG, TRANSPOSED, CONTIG, NARROWED, CONTIG, CONTIG};
static const int gkind[NP] = {CONTIG, TRANSPOSED, TRANSPOSED, CONTIG, EXPANDED, CONTIG, CONTIG};
#define NO_GRAD 6
#define SKIPS 1
#define NSTEPS 4

/* GradScaler's found_inf: set on step 3, which then changes nothing (false: no found_inf) */
static bool skip_step3;
/* GradScaler's grad_scale (0: none): the engine gets the gradients times it, the reference
 * the gradients as they are (a power of two: the scaling is exact) */
static float grad_scale_by;

static void run_config(const config *c, nn_dtype dt)
{
    nn_tensor *p[NP], *g[NP], *st[3][NP] = {{NULL}}, *steps[NP] = {NULL};
    ref r[NP];
    memset(r, 0, sizeof r);
    for (int k = 0; k < NP; k++) {
        p[k] = make(pnd[k], pshape[k], dt, pkind[k]);
        g[k] = make(pnd[k], pshape[k], dt, gkind[k]);
        r[k].n = nn_numel(p[k]);
        for (int64_t j = 0; j < r[k].n; j++) {
            set(p[k], j, urand() * 2 - 1);
            r[k].p[j] = get(p[k], j);
        }
    }
    if (c->alg == ADAGRAD) /* PyTorch creates Adagrad's sums in the constructor */
        for (int k = 0; k < NP; k++) st[0][k] = nn_optim_state_like(p[k], c->a3);
    double tol = tol_of(dt);
    for (int step = 1; step <= NSTEPS; step++) {
        nn_tensor *gl[NP];
        for (int k = 0; k < NP; k++) {
            for (int64_t j = 0; j < r[k].n; j++) set(g[k], j, urand() * 4 - 2);
            for (int64_t j = 0; j < r[k].n; j++) r[k].g[j] = get(g[k], j);
            if (grad_scale_by)
                for (int64_t j = 0; j < r[k].n; j++) set(g[k], j, r[k].g[j] * grad_scale_by);
            gl[k] = k == NO_GRAD || (k == SKIPS && step == 2) ? NULL : g[k];
        }
        uint32_t v0 = p[0]->storage->version;
        bool skipped = skip_step3 && step == 3;
        nn_tensor *found_inf = skip_step3 ? nn_full(0, NULL, skipped, NN_F32, NN_DEVICE_CPU) : NULL;
        nn_tensor *grad_scale = grad_scale_by ? nn_full(0, NULL, grad_scale_by, NN_F32, NN_DEVICE_CPU) : NULL;
        nn_status s = engine_step(c, p, gl, st, steps, found_inf, grad_scale);
        nn_release(found_inf);
        nn_release(grad_scale);
        CHECK(s == NN_OK, "%s %s step %d: %s", alg_name[c->alg], nn_dtype_name(dt), step, nn_last_error());
        if (s) break;
        CHECK(skipped ? p[0]->storage->version == v0 : p[0]->storage->version > v0, "version bumped (unless skipped)");
        for (int k = 0; k < NP; k++) {
            if (gl[k] && !skipped) ref_step(c, &r[k]);
            int bad = 0;
            for (int64_t j = 0; j < r[k].n && bad < 1; j++)
                if (!close_to(get(p[k], j), r[k].p[j], tol)) bad++;
            CHECK(!bad, "%s %s lr=%g a=%g,%g,%g wd=%g b=%d%d max=%d: step %d param %d: got %.10g, want %.10g",
                  alg_name[c->alg], nn_dtype_name(dt), c->lr, c->a1, c->a2, c->a3, c->wd, c->b0, c->b1, c->maximize,
                  step, k, r[k].n ? get(p[k], 0) : 0, r[k].n ? r[k].p[0] : 0);
            for (int q = 0; q < 3; q++) {
                bool want = uses_state(c, q) && (r[k].has_state || (c->alg == ADAGRAD && q == 0));
                CHECK(!st[q][k] == !want, "%s: state %d of param %d exists: %d, expected %d", alg_name[c->alg], q, k,
                      st[q][k] != NULL, want);
                if (!st[q][k] || !want || !r[k].has_state) continue;
                bad = 0;
                for (int64_t j = 0; j < r[k].n; j++)
                    if (!close_to(get(st[q][k], j), r[k].s[q][j], tol)) bad++;
                CHECK(!bad, "%s %s step %d: state %d of param %d differs in %d elements", alg_name[c->alg],
                      nn_dtype_name(dt), step, q, k, bad);
                CHECK(st[q][k]->dtype == dt && st[q][k]->ndim == p[k]->ndim, "state dtype and shape");
            }
            if (c->alg != SGD && r[k].has_state) {
                CHECK(steps[k] && steps[k]->ndim == 0 && steps[k]->dtype == nn_default_dtype() &&
                          nn_get_f64(steps[k], NULL) == r[k].step,
                      "%s: step of param %d is %g, want %g", alg_name[c->alg], k, steps[k] ? nn_get_f64(steps[k], NULL) : -1,
                      r[k].step);
            }
            if (!r[k].has_state) CHECK(!steps[k], "no step counter for a param never updated");
        }
    }
    for (int k = 0; k < NP; k++) {
        nn_release(p[k]), nn_release(g[k]), nn_release(steps[k]);
        for (int q = 0; q < 3; q++) nn_release(st[q][k]);
    }
}

static void all_configs(nn_dtype dt)
{
    for (int bits = 0; bits < 32; bits++) { /* SGD: momentum, dampening, nesterov, weight_decay, maximize */
        bool mom = bits & 1, damp = bits & 2, nest = bits & 4, wd = bits & 8, mx = bits & 16;
        config c = {SGD, 0.1, mom ? 0.9 : 0, damp ? 0.1 : 0, 0, wd ? 0.01 : 0, nest, false, mx};
        run_config(&c, dt);
    }
    for (int bits = 0; bits < 32; bits++) { /* Adam: amsgrad, decoupled (AdamW), weight_decay, maximize, betas */
        bool ams = bits & 1, dec = bits & 2, wd = bits & 4, mx = bits & 8, b = bits & 16;
        config c = {ADAM, 0.01, b ? 0.4 : 0.9, b ? 0.95 : 0.999, b ? 1e-3 : 1e-8, wd ? 0.05 : 0, ams, dec, mx};
        run_config(&c, dt);
    }
    for (int bits = 0; bits < 32; bits++) { /* RMSprop: centered, momentum, weight_decay, maximize, alpha */
        bool cen = bits & 1, mom = bits & 2, wd = bits & 4, mx = bits & 8, al = bits & 16;
        config c = {RMSPROP, 0.01, al ? 0.3 : 0.99, 1e-8, mom ? 0.8 : 0, wd ? 0.02 : 0, cen, false, mx};
        run_config(&c, dt);
    }
    for (int bits = 0; bits < 16; bits++) { /* Adagrad: lr_decay, weight_decay, initial_accumulator_value, maximize */
        bool dec = bits & 1, wd = bits & 2, init = bits & 4, mx = bits & 8;
        config c = {ADAGRAD, 0.1, dec ? 0.05 : 0, 1e-10, init ? 0.5 : 0, wd ? 0.1 : 0, false, false, mx};
        run_config(&c, dt);
    }
}

/* SGD's first step sets the buffer to the (decayed, negated) gradient; later steps
 * mix it in; a fresh buffer of a later-added param starts from its own gradient. */
static void test_sgd_buffer(void)
{
    int64_t shape[1] = {3};
    nn_tensor *p = nn_zeros(1, shape, NN_F64, NN_DEVICE_CPU), *g = nn_zeros(1, shape, NN_F64, NN_DEVICE_CPU);
    for (int j = 0; j < 3; j++) set(p, j, j + 1), set(g, j, 0.5 * (j + 1));
    nn_tensor *buf = NULL;
    nn_sgd_opts o = {.lr = 0.1, .momentum = 0.9, .dampening = 0.5, .weight_decay = 0.1, .maximize = true};
    CHECK(nn_sgd_step(1, &p, &g, &buf, &o) == NN_OK);
    /* d = -g + 0.1 p */
    for (int j = 0; j < 3; j++) {
        double d = -0.5 * (j + 1) + 0.1 * (j + 1);
        CHECK(buf && fabs(get(buf, j) - d) < 1e-15, "buf[%d] = %g, want %g", j, buf ? get(buf, j) : 0, d);
        CHECK(fabs(get(p, j) - (j + 1 - 0.1 * d)) < 1e-15, "p[%d]", j);
    }
    nn_release(p), nn_release(g), nn_release(buf);
}

/* More params than the frontend's stack lists hold (heap path). */
static void test_many_params(void)
{
    enum { N = 150 };
    int64_t shape[1] = {2};
    nn_tensor *p[N], *g[N], *buf[N] = {NULL};
    for (int k = 0; k < N; k++) {
        p[k] = nn_full(1, shape, k, NN_F32, NN_DEVICE_CPU);
        g[k] = k % 3 ? nn_full(1, shape, 1, NN_F32, NN_DEVICE_CPU) : NULL;
    }
    nn_sgd_opts o = {.lr = 0.5, .momentum = 0.9};
    CHECK(nn_sgd_step(N, p, g, buf, &o) == NN_OK, "%s", nn_last_error());
    CHECK(nn_sgd_step(N, p, g, buf, &o) == NN_OK, "%s", nn_last_error());
    int bad = 0;
    for (int k = 0; k < N; k++) {
        double want = k % 3 ? k - 0.5 - 0.5 * 1.9 : k;
        if (fabs(get(p[k], 1) - want) > 1e-5 || !buf[k] != !g[k]) bad++;
        nn_release(p[k]), nn_release(g[k]), nn_release(buf[k]);
    }
    CHECK(!bad, "%d of %d params wrong", bad, N);
}

static void test_errors(void)
{
    int64_t s3[1] = {3}, s4[1] = {4}, s23[2] = {2, 3};
    nn_tensor *p = nn_zeros(1, s3, NN_F32, NN_DEVICE_CPU), *g4 = nn_zeros(1, s4, NN_F32, NN_DEVICE_CPU);
    nn_tensor *g64 = nn_zeros(1, s3, NN_F64, NN_DEVICE_CPU), *pi = nn_zeros(1, s3, NN_I64, NN_DEVICE_CPU);
    nn_tensor *gi = nn_zeros(1, s3, NN_I64, NN_DEVICE_CPU), *s23t = nn_zeros(2, s23, NN_F32, NN_DEVICE_CPU);
    nn_tensor *g = nn_zeros(1, s3, NN_F32, NN_DEVICE_CPU);
    nn_adam_opts ao = {.lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    nn_tensor *m[1] = {NULL}, *v[1] = {NULL}, *st[1] = {NULL};

    CHECK(nn_adam_step(1, &p, &g4, m, v, NULL, st, &ao) == NN_ERR_SHAPE);
    CHECK(strstr(nn_last_error(), "adam_step: grad of parameter 0 has shape [4], expected [3]"), "%s", nn_last_error());
    CHECK(!m[0] && !st[0], "nothing created on error");
    CHECK(nn_adam_step(1, &p, &g64, m, v, NULL, st, &ao) == NN_ERR_DTYPE);
    CHECK(strstr(nn_last_error(), "grad of parameter 0 has dtype float64, expected float32"), "%s", nn_last_error());
    CHECK(nn_adam_step(1, &pi, &gi, m, v, NULL, st, &ao) == NN_ERR_DTYPE);
    CHECK(strstr(nn_last_error(), "parameter 0 has dtype int64"), "%s", nn_last_error());
    m[0] = s23t;
    CHECK(nn_adam_step(1, &p, &g, m, v, NULL, st, &ao) == NN_ERR_SHAPE);
    CHECK(strstr(nn_last_error(), "exp_avg of parameter 0 has shape [2, 3], expected [3]"), "%s", nn_last_error());
    m[0] = NULL;
    ao.amsgrad = true;
    CHECK(nn_adam_step(1, &p, &g, m, v, NULL, st, &ao) == NN_ERR_ARG, "amsgrad needs max_exp_avg_sq");
    ao.amsgrad = false;
    st[0] = s23t;
    CHECK(nn_adam_step(1, &p, &g, m, v, NULL, st, &ao) == NN_ERR_ARG);
    CHECK(strstr(nn_last_error(), "step of parameter 0"), "%s", nn_last_error());
    st[0] = NULL;
    nn_sgd_opts so = {.lr = 0.1, .momentum = 0.9};
    CHECK(nn_sgd_step(1, &p, &g, NULL, &so) == NN_ERR_ARG, "momentum needs buffers");
    so.momentum = 0;
    CHECK(nn_sgd_step(1, &p, &g, NULL, &so) == NN_OK, "no buffers without momentum");
    CHECK(nn_sgd_step(0, NULL, NULL, NULL, &so) == NN_OK, "empty list");
    nn_tensor *none[1] = {NULL};
    CHECK(nn_sgd_step(1, &p, none, NULL, &so) == NN_OK, "all grads missing");
    nn_release(p), nn_release(g4), nn_release(g64), nn_release(pi), nn_release(gi), nn_release(s23t), nn_release(g);
}

int main(void)
{
    all_configs(NN_F64);
    all_configs(NN_F32);
    all_configs(NN_F16);
    all_configs(NN_BF16);
    skip_step3 = true; /* the same with step 3 skipped by a found_inf */
    all_configs(NN_F32);
    all_configs(NN_F16);
    skip_step3 = false;
    grad_scale_by = 1024; /* the unscale fused into the update, as GradScaler's step asks for it */
    all_configs(NN_F64);
    all_configs(NN_F32);
    all_configs(NN_F16);
    grad_scale_by = 0;
    test_sgd_buffer();
    test_many_params();
    test_errors();
    return CHECK_REPORT();
}
