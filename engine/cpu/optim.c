/* CPU optimizer steps (list layout in engine/optim.h). Each parameter's update is
 * one loop over its elements, written once for a scalar type T and compiled for
 * float and double: every operation rounds to T in the order PyTorch's
 * single-tensor optimizers apply their ops (e.g. Adam's exp_avg.lerp_, then
 * exp_avg_sq.mul_(beta2).addcmul_), with the hyperparameters cast to T as
 * PyTorch's scalar arguments are.
 *
 * A param whose tensors (param, grad, state) share one dense layout is updated in
 * place; otherwise (views with other strides, float16/bfloat16) its tensors are
 * gathered into contiguous float32/float64 scratch copies, updated there and the
 * param and state are scattered back (rounded to their dtype). */
/* -O2 alone leaves these loops scalar; unswitching splits them on the option flags;
 * sqrt vectorizes only without errno, which CMake sets for this file (-fno-math-errno:
 * a pragma cannot). */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "unswitch-loops")
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "memory_format.h"
#include "parallel.h"

#define MAX_STATE 3

/* One parameter's update: n elements, contiguous data of the compute type. */
typedef struct {
    int64_t n;
    void *p;
    const void *g;
    void *s[MAX_STATE]; /* the algorithm's state tensors, NULL where unused */
    bool fresh;         /* SGD: the momentum buffer was just created */
    double step;        /* the step count including this update */
    double unscale;     /* GradScaler's grad_scale as a float32 reciprocal, or 1 */
} upd;

static inline float sqrt_float(float x) { return sqrtf(x); }
static inline double sqrt_double(double x) { return sqrt(x); }
static inline float max_float(float a, float b) { return a > b || isnan(a) ? a : b; }
static inline double max_double(double a, double b) { return a > b || isnan(a) ? a : b; }

/* torch.lerp(self, end, w) as ATen computes it: exact at both ends. */
#define LERP(self, end, w) (lerp_small ? (self) + (w) * ((end) - (self)) : (end) - ((end) - (self)) * (1 - (w)))

/* The loops below are written once per algorithm for a scalar type T (float, double).
 * Conditions that decide a store (which state exists) are compile-time constants of
 * an always-inlined body, so each variant is a branch-free loop the compiler vectorizes. */
#define INLINE static inline __attribute__((always_inline))

/* SGD: grad (negated if maximize) + weight_decay*param; buf = momentum*buf + (1-dampening)*grad
 * (the first step's buf is the grad); nesterov: grad + momentum*buf, else buf; param -= lr*that. */
#define DEFINE_SGD(T)                                                                             \
    INLINE void sgd_body_##T(const nn_kargs *a, const upd *u, const bool has_buf)                 \
    {                                                                                             \
        T *restrict p = u->p, *restrict buf = u->s[0];                                            \
        const T *restrict g = u->g;                                                               \
        const T unscale = (T)u->unscale; /* GradScaler's 1/scale, or 1 */                         \
        const T neg_lr = (T)-a->f[0], mom = (T)a->f[1], damp1 = (T)(1 - a->f[2]), wd = (T)a->f[3]; \
        const bool use_wd = a->f[3] != 0, maximize = a->i[1], nesterov = a->i[0], fresh = u->fresh; \
        for (int64_t j = 0; j < u->n; j++) {                                                      \
            T d = (maximize ? -g[j] : g[j]) * unscale;                                            \
            if (use_wd) d = d + wd * p[j];                                                        \
            if (has_buf) {                                                                        \
                T b = fresh ? d : buf[j] * mom + damp1 * d;                                       \
                buf[j] = b;                                                                       \
                d = nesterov ? d + mom * b : b;                                                   \
            }                                                                                     \
            p[j] = p[j] + neg_lr * d;                                                             \
        }                                                                                         \
    }                                                                                             \
    static void sgd_##T(const nn_kargs *a, const upd *u)                                          \
    {                                                                                             \
        if (u->s[0]) sgd_body_##T(a, u, true);                                                    \
        else sgd_body_##T(a, u, false);                                                           \
    }

/* Adam/AdamW: m = lerp(m, g, 1-beta1); v = beta2*v + (1-beta2)*g*g; amsgrad: vmax = max(vmax, v);
 * denom = sqrt(v or vmax) / sqrt(1-beta2^t) + eps; param += -(lr / (1-beta1^t)) * m / denom.
 * Adam adds weight_decay*param to g; AdamW scales param by 1 - lr*weight_decay first. */
#define DEFINE_ADAM(T)                                                                            \
    INLINE void adam_body_##T(const nn_kargs *a, const upd *u, const bool amsgrad)                \
    {                                                                                             \
        T *restrict p = u->p, *restrict m = u->s[0], *restrict v = u->s[1], *restrict vmax = u->s[2]; \
        const T *restrict g = u->g;                                                               \
        const T unscale = (T)u->unscale; /* GradScaler's 1/scale, or 1 */                         \
        const double lr = a->f[0], beta1 = a->f[1], beta2 = a->f[2];                              \
        const T w1 = (T)(1 - beta1), b2 = (T)beta2, w2 = (T)(1 - beta2), eps = (T)a->f[3];         \
        const T wd = (T)a->f[4], decay = (T)(1 - lr * a->f[4]);                                   \
        const bool use_wd = a->f[4] != 0, maximize = a->i[1], decoupled = a->i[2];                \
        const bool lerp_small = fabs(1 - beta1) < 0.5;                                            \
        const T neg_step_size = (T)(-(lr / (1 - pow(beta1, u->step))));                           \
        const T bc2_sqrt = (T)pow(1 - pow(beta2, u->step), 0.5); /* Python's ** 0.5 */            \
        for (int64_t j = 0; j < u->n; j++) {                                                      \
            T d = (maximize ? -g[j] : g[j]) * unscale;                                            \
            T pj = p[j];                                                                          \
            if (use_wd) {                                                                         \
                if (decoupled) pj = pj * decay;                                                   \
                else d = d + wd * pj;                                                             \
            }                                                                                     \
            T mj = LERP(m[j], d, w1);                                                             \
            T vj = v[j] * b2 + w2 * d * d;                                                        \
            m[j] = mj;                                                                            \
            v[j] = vj;                                                                            \
            if (amsgrad) {                                                                        \
                vj = max_##T(vmax[j], vj);                                                        \
                vmax[j] = vj;                                                                     \
            }                                                                                     \
            T denom = sqrt_##T(vj) / bc2_sqrt + eps;                                              \
            p[j] = pj + neg_step_size * (mj / denom);                                             \
        }                                                                                         \
    }                                                                                             \
    static void adam_##T(const nn_kargs *a, const upd *u)                                         \
    {                                                                                             \
        if (u->s[2]) adam_body_##T(a, u, true);                                                   \
        else adam_body_##T(a, u, false);                                                          \
    }

/* RMSprop: v = alpha*v + (1-alpha)*g*g; centered: ga = lerp(ga, g, 1-alpha), avg = sqrt(v - ga*ga),
 * else avg = sqrt(v); avg += eps; momentum: buf = momentum*buf + g/avg, param -= lr*buf; else
 * param -= lr * g/avg. */
#define DEFINE_RMSPROP(T)                                                                         \
    INLINE void rmsprop_body_##T(const nn_kargs *a, const upd *u, const bool has_buf, const bool centered) \
    {                                                                                             \
        T *restrict p = u->p, *restrict v = u->s[0], *restrict buf = u->s[1], *restrict ga = u->s[2]; \
        const T *restrict g = u->g;                                                               \
        const T unscale = (T)u->unscale; /* GradScaler's 1/scale, or 1 */                         \
        const double alpha = a->f[1];                                                             \
        const T neg_lr = (T)-a->f[0], al = (T)alpha, w = (T)(1 - alpha), eps = (T)a->f[2];        \
        const T wd = (T)a->f[3], mom = (T)a->f[4];                                                \
        const bool use_wd = a->f[3] != 0, maximize = a->i[1];                                     \
        const bool lerp_small = fabs(1 - alpha) < 0.5;                                            \
        for (int64_t j = 0; j < u->n; j++) {                                                      \
            T d = (maximize ? -g[j] : g[j]) * unscale;                                            \
            if (use_wd) d = d + wd * p[j];                                                        \
            T vj = v[j] * al + w * d * d;                                                         \
            v[j] = vj;                                                                            \
            T avg;                                                                                \
            if (centered) {                                                                       \
                T gj = LERP(ga[j], d, w);                                                         \
                ga[j] = gj;                                                                       \
                avg = sqrt_##T(vj + (T)-1 * gj * gj);                                             \
            } else {                                                                              \
                avg = sqrt_##T(vj);                                                               \
            }                                                                                     \
            avg = avg + eps;                                                                      \
            if (has_buf) {                                                                        \
                T b = buf[j] * mom + d / avg;                                                     \
                buf[j] = b;                                                                       \
                p[j] = p[j] + neg_lr * b;                                                         \
            } else {                                                                              \
                p[j] = p[j] + neg_lr * (d / avg);                                                 \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    static void rmsprop_##T(const nn_kargs *a, const upd *u)                                      \
    {                                                                                             \
        bool has_buf = u->s[1], centered = u->s[2];                                               \
        if (has_buf && centered) rmsprop_body_##T(a, u, true, true);                              \
        else if (has_buf) rmsprop_body_##T(a, u, true, false);                                    \
        else if (centered) rmsprop_body_##T(a, u, false, true);                                   \
        else rmsprop_body_##T(a, u, false, false);                                                \
    }

/* Adagrad: clr = lr / (1 + (t-1)*lr_decay); sum += g*g; param -= clr * g / (sqrt(sum) + eps). */
#define DEFINE_ADAGRAD(T)                                                                         \
    static void adagrad_##T(const nn_kargs *a, const upd *u)                                      \
    {                                                                                             \
        T *restrict p = u->p, *restrict sum = u->s[0];                                            \
        const T *restrict g = u->g;                                                               \
        const T unscale = (T)u->unscale; /* GradScaler's 1/scale, or 1 */                         \
        const T neg_clr = (T)-(a->f[0] / (1 + (u->step - 1) * a->f[1]));                          \
        const T wd = (T)a->f[2], eps = (T)a->f[3];                                                \
        const bool use_wd = a->f[2] != 0, maximize = a->i[0];                                     \
        for (int64_t j = 0; j < u->n; j++) {                                                      \
            T d = (maximize ? -g[j] : g[j]) * unscale;                                            \
            if (use_wd) d = d + wd * p[j];                                                        \
            T sj = sum[j] + (T)1 * d * d;                                                         \
            sum[j] = sj;                                                                          \
            T std = sqrt_##T(sj) + eps;                                                           \
            p[j] = p[j] + neg_clr * (d / std);                                                    \
        }                                                                                         \
    }

DEFINE_SGD(float)
DEFINE_SGD(double)
DEFINE_ADAM(float)
DEFINE_ADAM(double)
DEFINE_RMSPROP(float)
DEFINE_RMSPROP(double)
DEFINE_ADAGRAD(float)
DEFINE_ADAGRAD(double)

static void update(const nn_kargs *a, const upd *u, bool f64)
{
    switch (a->op) {
    case NN_OP_sgd_step: f64 ? sgd_double(a, u) : sgd_float(a, u); break;
    case NN_OP_adam_step: f64 ? adam_double(a, u) : adam_float(a, u); break;
    case NN_OP_rmsprop_step: f64 ? rmsprop_double(a, u) : rmsprop_float(a, u); break;
    case NN_OP_adagrad_step: f64 ? adagrad_double(a, u) : adagrad_float(a, u); break;
    default: break;
    }
}

/* Roles of the list (optim.h) that are state tensors, and the role of the step counter. */
static int state_roles(nn_op op, int *roles, int *step_role)
{
    switch (op) {
    case NN_OP_sgd_step: roles[0] = 2, *step_role = -1; return 1;
    case NN_OP_adam_step: roles[0] = 2, roles[1] = 3, roles[2] = 4, *step_role = 5; return 3;
    case NN_OP_rmsprop_step: roles[0] = 2, roles[1] = 3, roles[2] = 4, *step_role = 5; return 3;
    case NN_OP_adagrad_step: roles[0] = 2, *step_role = 3; return 1;
    default: return -1;
    }
}

static nn_status copy(nn_tensor *dst, nn_tensor *src)
{
    nn_kargs c = {.op = NN_OP_copy, .out = {dst}, .in = {src}, .nin = 1};
    return nn_cpu_copy(&c);
}

/* The slow path: contiguous scratch copies in the compute dtype. */
static nn_status update_scratch(const nn_kargs *a, nn_tensor *p, nn_tensor *g, nn_tensor **st, int nst, upd *u)
{
    nn_dtype ct = p->dtype == NN_F64 ? NN_F64 : NN_F32;
    nn_tensor *sp = nn_empty(p->ndim, p->shape, ct, NN_DEVICE_CPU), *sg = nn_empty(p->ndim, p->shape, ct, NN_DEVICE_CPU);
    nn_tensor *ss[MAX_STATE] = {NULL};
    nn_status s = sp && sg ? NN_OK : nn_last_status();
    for (int r = 0; r < nst && !s; r++)
        if (st[r] && !(ss[r] = nn_empty(p->ndim, p->shape, ct, NN_DEVICE_CPU))) s = nn_last_status();
    if (!s) s = copy(sp, p);
    if (!s) s = copy(sg, g);
    for (int r = 0; r < nst && !s; r++)
        if (ss[r] && !(a->op == NN_OP_sgd_step && u->fresh)) s = copy(ss[r], st[r]);
    if (!s) {
        u->p = nn_data(sp), u->g = nn_data(sg);
        for (int r = 0; r < nst; r++) u->s[r] = ss[r] ? nn_data(ss[r]) : NULL;
        update(a, u, ct == NN_F64);
        s = copy(p, sp);
        for (int r = 0; r < nst && !s; r++)
            if (ss[r]) s = copy(st[r], ss[r]);
    }
    nn_release(sp), nn_release(sg);
    for (int r = 0; r < nst; r++) nn_release(ss[r]);
    return s;
}

/* A large parameter's update split over the CPU pool: each element's update is independent, so
 * the parts (whole blocks, as the vector loops see them alone) give the serial result bitwise. */
enum { UPD_BLOCK = 1024 };
typedef struct {
    const nn_kargs *a;
    upd u;
    bool f64;
} upd_job;

static nn_status upd_blocks(int64_t b, int64_t e, void *arg)
{
    const upd_job *j = arg;
    upd u = j->u;
    int64_t lo = b * UPD_BLOCK, hi = e * UPD_BLOCK < u.n ? e * UPD_BLOCK : u.n, es = j->f64 ? 8 : 4;
    u.n = hi - lo;
    u.p = (char *)u.p + lo * es;
    u.g = (const char *)u.g + lo * es;
    for (int r = 0; r < MAX_STATE; r++)
        if (u.s[r]) u.s[r] = (char *)u.s[r] + lo * es;
    update(j->a, &u, j->f64);
    return NN_OK;
}

static nn_status optim_step(const nn_kargs *a)
{
    int roles[MAX_STATE], step_role, m = a->nlist;
    int nst = state_roles(a->op, roles, &step_role);
    if (nst < 0) return nn_not_implemented(a, a->out[0]->dtype);
    const double unscale = a->nin > 1 && a->in[1] ? (float)(1.0 / (double)*(const float *)nn_data(a->in[1])) : 1.0;
    for (int k = 0; k < m; k++) {
        nn_tensor *p = a->list[k], *g = a->list[m + k], *st[MAX_STATE] = {NULL};
        for (int r = 0; r < nst; r++) st[r] = a->list[roles[r] * m + k];
        upd u = {.n = nn_numel(p), .unscale = unscale};
        if (a->op == NN_OP_sgd_step) u.fresh = a->list[3 * m + k] != NULL;
        if (step_role >= 0) {
            nn_tensor *s = a->list[step_role * m + k];
            u.step = nn_load_f64(nn_data(s), s->dtype);
        }
        if (p->dtype != NN_F32 && p->dtype != NN_F64 && p->dtype != NN_F16 && p->dtype != NN_BF16)
            return nn_not_implemented(a, p->dtype);
        if (u.n == 0) continue;
        bool fast = (p->dtype == NN_F32 || p->dtype == NN_F64) && nn_is_dense(p) && nn_same_strides(p, g);
        for (int r = 0; r < nst && fast; r++) fast = !st[r] || nn_same_strides(p, st[r]);
        if (!fast) {
            nn_status s = update_scratch(a, p, g, st, nst, &u);
            if (s) return s;
            continue;
        }
        u.p = nn_data(p);
        u.g = nn_data(g);
        for (int r = 0; r < nst; r++) u.s[r] = st[r] ? nn_data(st[r]) : NULL;
        upd_job j = {a, u, p->dtype == NN_F64};
        if (u.n < NN_PARALLEL_MIN) update(a, &u, j.f64);
        else nn_parallel_for((u.n + UPD_BLOCK - 1) / UPD_BLOCK, NN_PARALLEL_MIN / 2 / UPD_BLOCK, upd_blocks, &j);
    }
    return NN_OK;
}

nn_status nn_cpu_sgd_step(const nn_kargs *a) { return optim_step(a); }
nn_status nn_cpu_adam_step(const nn_kargs *a) { return optim_step(a); }
nn_status nn_cpu_rmsprop_step(const nn_kargs *a) { return optim_step(a); }
nn_status nn_cpu_adagrad_step(const nn_kargs *a) { return optim_step(a); }
