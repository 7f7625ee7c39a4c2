/* CUDA optimizer steps (list layout in engine/optim.h), multi-tensor: one
 * launch updates every parameter of the list.
 *
 * The launch carries a table of the tensors (addresses, sizes, dtypes, the
 * per-parameter bias corrections that depend on its step count) as one
 * __grid_constant__ kernel parameter, so nothing is copied to the device and
 * no buffer has to outlive the launch. Each parameter is cut into chunks of
 * CHUNK elements, one block per chunk; a block finds its parameter by binary
 * search over the running chunk counts. A list longer than MAX_T parameters
 * takes one launch per MAX_T (the table stays under CUDA's 32 KiB parameter
 * limit).
 *
 * The update formulas are engine/cpu/optim.c's, op by op, in float for float32,
 * float16 and bfloat16 (rounded to the dtype on store, state included) and in
 * double for float64, with the hyperparameters rounded to the compute type as
 * the CPU does. A parameter whose tensors do not share one dense layout is
 * updated through contiguous scratch copies, copied back after the launch.
 * Adam's float32 update goes four elements a load where its operands are 16-byte
 * aligned (the same arithmetic per element).
 *
 * A float32 param may carry a float16/bfloat16 copy to write (the list's last role,
 * engine/optim.c): the kernel stores the updated value rounded to it, as a cast would,
 * and copies the param unchanged into it when found_inf skips the step. */
#include <math.h>
#include <string.h>

#include "kernels.cuh"
#include "memory_format.h"

namespace {

constexpr int MAX_T = 320;
constexpr int64_t CHUNK = 8192;
constexpr int THREADS = 256;

struct Entry {
    void *p;
    const void *g;
    void *s[3]; /* state tensors, NULL where unused */
    int64_t n;
    double c0, c1; /* adam: -lr / (1 - beta1^t), sqrt(1 - beta2^t); adagrad: -lr / (1 + (t - 1) * lr_decay) */
    void *step;    /* a step counter on the device (c0, c1 are then worked out here), or NULL */
    void *lowp;    /* the param's float16/bfloat16 copy to write (float32 params), or NULL */
    int8_t step_dt, dt, lowp_dt;
    bool fresh; /* sgd: the momentum buffer was just created */
};

struct Hyper {
    double f[8];
    int64_t i[4];
};

struct Table {
    const float *found_inf;  /* GradScaler's: nonzero, and the step changes nothing; or NULL */
    const float *grad_scale; /* GradScaler's: gradients are multiplied by its reciprocal as read; or NULL */
    int nt;
    int64_t first[MAX_T + 1]; /* first chunk of each entry; first[nt] = total chunks */
    Entry e[MAX_T];
    Hyper h;
};

template <typename T> struct Comp { typedef float type; };
template <> struct Comp<double> { typedef double type; };

template <typename C, typename T> __device__ __forceinline__ C ld(const T *p, int64_t j) { return (C)p[j]; }
template <> __device__ __forceinline__ float ld<float, __half>(const __half *p, int64_t j) { return __half2float(p[j]); }
template <> __device__ __forceinline__ float ld<float, __nv_bfloat16>(const __nv_bfloat16 *p, int64_t j) { return __bfloat162float(p[j]); }
template <typename T, typename C> __device__ __forceinline__ void st(T *p, int64_t j, C v) { p[j] = (T)v; }
template <> __device__ __forceinline__ void st<__half, float>(__half *p, int64_t j, float v) { p[j] = __float2half_rn(v); }
template <> __device__ __forceinline__ void st<__nv_bfloat16, float>(__nv_bfloat16 *p, int64_t j, float v) { p[j] = __float2bfloat16_rn(v); }

__device__ __forceinline__ void put_lowp(const Entry &e, int64_t j, float v)
{
    if (e.lowp_dt == NN_F16) ((__half *)e.lowp)[j] = __float2half_rn(v);
    else ((__nv_bfloat16 *)e.lowp)[j] = __float2bfloat16_rn(v);
}

/* p[j] = v, and the param's low-precision copy with it */
template <typename T, typename C> __device__ __forceinline__ void put(const Entry &e, T *p, int64_t j, C v)
{
    st(p, j, v);
    if constexpr (std::is_same<T, float>::value)
        if (e.lowp) put_lowp(e, j, v);
}

/* four of them from float4 index j4 on (the copy is 8-byte aligned there) */
__device__ __forceinline__ void put4(const Entry &e, float4 *p4, int64_t j4, float4 v)
{
    p4[j4] = v;
    if (!e.lowp) return;
    __half2 h0, h1;
    __nv_bfloat162 b0, b1;
    uint2 u;
    if (e.lowp_dt == NN_F16) {
        h0 = __floats2half2_rn(v.x, v.y), h1 = __floats2half2_rn(v.z, v.w);
        memcpy(&u.x, &h0, 4), memcpy(&u.y, &h1, 4);
    } else {
        b0 = __floats2bfloat162_rn(v.x, v.y), b1 = __floats2bfloat162_rn(v.z, v.w);
        memcpy(&u.x, &b0, 4), memcpy(&u.y, &b1, 4);
    }
    ((uint2 *)e.lowp)[j4] = u;
}

__device__ __forceinline__ float sq(float v) { return sqrtf(v); }
__device__ __forceinline__ double sq(double v) { return sqrt(v); }
template <typename C> __device__ __forceinline__ C maxn(C a, C b) { return a > b || a != a ? a : b; } /* NaN wins, as the CPU's */

/* torch.lerp as ATen computes it: exact at both ends */
template <typename C> __device__ __forceinline__ C lerp(C self, C end, C w, bool small)
{
    return small ? self + w * (end - self) : end - (end - self) * ((C)1 - w);
}

/* The step-count coefficients of update number t (f: the op's float parameters): on the
 * host for a CPU counter, in the kernel for a device one. */
__host__ __device__ void coefficients(int op, const double *f, double t, Entry &e)
{
    if (op == NN_OP_adam_step) {
        e.c0 = -(f[0] / (1 - pow(f[1], t)));
        e.c1 = pow(1 - pow(f[2], t), 0.5);
    } else if (op == NN_OP_adagrad_step) {
        e.c0 = -(f[0] / (1 + (t - 1) * f[1]));
    }
}

/* a device counter, not yet counted for this update */
__device__ double device_step(const Entry &e)
{
    return (e.step_dt == NN_F64 ? *(const double *)e.step : (double)*(const float *)e.step) + 1;
}

/* SGD: f lr momentum dampening weight_decay; i nesterov maximize */
template <typename T> __device__ void sgd(const Entry &e, const Hyper &h, float gs, int64_t lo, int64_t hi)
{
    typedef typename Comp<T>::type C;
    const C unscale = (C)gs;
    T *p = (T *)e.p, *buf = (T *)e.s[0];
    const T *g = (const T *)e.g;
    const C neg_lr = (C)-h.f[0], mom = (C)h.f[1], damp1 = (C)(1 - h.f[2]), wd = (C)h.f[3];
    const bool use_wd = h.f[3] != 0, maximize = h.i[1], nesterov = h.i[0], fresh = e.fresh;
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        C d = ld<C>(g, j) * unscale, pj = ld<C>(p, j);
        if (maximize) d = -d;
        if (use_wd) d = d + wd * pj;
        if (buf) {
            C b = fresh ? d : ld<C>(buf, j) * mom + damp1 * d;
            st(buf, j, b);
            d = nesterov ? d + mom * b : b;
        }
        put(e, p, j, pj + neg_lr * d);
    }
}

/* Adam/AdamW: f lr beta1 beta2 eps weight_decay; i amsgrad maximize decoupled */
template <typename C> struct AdamK {
    C unscale, w1, b2, w2, eps, wd, decay, neg_step_size, bc2_sqrt;
    bool use_wd, maximize, decoupled, small;
    /* one element: gradient d, param pj, moments mj, vj (and vmax with amsgrad) in and out */
    __device__ __forceinline__ void one(C d, C &pj, C &mj, C &vj, C *vmax) const
    {
        d = d * unscale;
        if (maximize) d = -d;
        if (use_wd) {
            if (decoupled) pj = pj * decay;
            else d = d + wd * pj;
        }
        mj = lerp(mj, d, w1, small);
        vj = vj * b2 + w2 * d * d;
        C vu = vj;
        if (vmax) vu = *vmax = maxn(*vmax, vj);
        C denom = sq(vu) / bc2_sqrt + eps;
        pj = pj + neg_step_size * (mj / denom);
    }
};

template <typename T> __device__ void adam(const Entry &e, const Hyper &h, float gs, int64_t lo, int64_t hi)
{
    typedef typename Comp<T>::type C;
    T *p = (T *)e.p, *m = (T *)e.s[0], *v = (T *)e.s[1], *vmax = (T *)e.s[2];
    const T *g = (const T *)e.g;
    const double lr = h.f[0], beta1 = h.f[1], beta2 = h.f[2];
    AdamK<C> k;
    k.unscale = (C)gs, k.w1 = (C)(1 - beta1), k.b2 = (C)beta2, k.w2 = (C)(1 - beta2), k.eps = (C)h.f[3];
    k.wd = (C)h.f[4], k.decay = (C)(1 - lr * h.f[4]);
    k.use_wd = h.f[4] != 0, k.maximize = h.i[1], k.decoupled = h.i[2], k.small = fabs(1 - beta1) < 0.5;
    k.neg_step_size = (C)e.c0, k.bc2_sqrt = (C)e.c1;
    if constexpr (std::is_same<T, float>::value) { /* four at a time where every operand is 16-byte aligned */
        bool vec = !vmax && ((uintptr_t)(p + lo) | (uintptr_t)(g + lo) | (uintptr_t)(m + lo) | (uintptr_t)(v + lo)) % 16 == 0 &&
                   (uintptr_t)e.lowp % 8 == 0;
        if (vec) {
            const int64_t nv = (hi - lo) / 4;
            float4 *p4 = (float4 *)p, *m4 = (float4 *)(m + lo), *v4 = (float4 *)(v + lo);
            const float4 *g4 = (const float4 *)(g + lo);
            for (int64_t j = threadIdx.x; j < nv; j += blockDim.x) {
                float4 gj = g4[j], pj = p4[j + lo / 4], mj = m4[j], vj = v4[j];
                k.one(gj.x, pj.x, mj.x, vj.x, nullptr);
                k.one(gj.y, pj.y, mj.y, vj.y, nullptr);
                k.one(gj.z, pj.z, mj.z, vj.z, nullptr);
                k.one(gj.w, pj.w, mj.w, vj.w, nullptr);
                m4[j] = mj, v4[j] = vj;
                put4(e, p4, j + lo / 4, pj);
            }
            lo += nv * 4;
        }
    }
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        C pj = ld<C>(p, j), mj = ld<C>(m, j), vj = ld<C>(v, j), vm = vmax ? ld<C>(vmax, j) : (C)0;
        k.one(ld<C>(g, j), pj, mj, vj, vmax ? &vm : nullptr);
        st(m, j, mj);
        st(v, j, vj);
        if (vmax) st(vmax, j, vm);
        put(e, p, j, pj);
    }
}

/* RMSprop: f lr alpha eps weight_decay momentum; i centered maximize */
template <typename T> __device__ void rmsprop(const Entry &e, const Hyper &h, float gs, int64_t lo, int64_t hi)
{
    typedef typename Comp<T>::type C;
    const C unscale = (C)gs;
    T *p = (T *)e.p, *v = (T *)e.s[0], *buf = (T *)e.s[1], *ga = (T *)e.s[2];
    const T *g = (const T *)e.g;
    const double alpha = h.f[1];
    const C neg_lr = (C)-h.f[0], al = (C)alpha, w = (C)(1 - alpha), eps = (C)h.f[2];
    const C wd = (C)h.f[3], mom = (C)h.f[4];
    const bool use_wd = h.f[3] != 0, maximize = h.i[1];
    const bool small = fabs(1 - alpha) < 0.5;
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        C d = ld<C>(g, j) * unscale, pj = ld<C>(p, j);
        if (maximize) d = -d;
        if (use_wd) d = d + wd * pj;
        C vj = ld<C>(v, j) * al + w * d * d;
        st(v, j, vj);
        C avg;
        if (ga) {
            C gj = lerp(ld<C>(ga, j), d, w, small);
            st(ga, j, gj);
            avg = sq(vj + (C)-1 * gj * gj);
        } else {
            avg = sq(vj);
        }
        avg = avg + eps;
        if (buf) {
            C b = ld<C>(buf, j) * mom + d / avg;
            st(buf, j, b);
            put(e, p, j, pj + neg_lr * b);
        } else {
            put(e, p, j, pj + neg_lr * (d / avg));
        }
    }
}

/* Adagrad: f lr lr_decay weight_decay eps; i maximize */
template <typename T> __device__ void adagrad(const Entry &e, const Hyper &h, float gs, int64_t lo, int64_t hi)
{
    typedef typename Comp<T>::type C;
    const C unscale = (C)gs;
    T *p = (T *)e.p, *sum = (T *)e.s[0];
    const T *g = (const T *)e.g;
    const C neg_clr = (C)e.c0, wd = (C)h.f[2], eps = (C)h.f[3];
    const bool use_wd = h.f[2] != 0, maximize = h.i[0];
    for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
        C d = ld<C>(g, j) * unscale, pj = ld<C>(p, j);
        if (maximize) d = -d;
        if (use_wd) d = d + wd * pj;
        C sj = ld<C>(sum, j) + (C)1 * d * d;
        st(sum, j, sj);
        C sd = sq(sj) + eps;
        put(e, p, j, pj + neg_clr * (d / sd));
    }
}

template <int OP, typename T> __device__ __forceinline__ void apply(const Entry &e, const Hyper &h, float gs, int64_t lo, int64_t hi)
{
    if constexpr (OP == NN_OP_sgd_step) sgd<T>(e, h, gs, lo, hi);
    else if constexpr (OP == NN_OP_adam_step) adam<T>(e, h, gs, lo, hi);
    else if constexpr (OP == NN_OP_rmsprop_step) rmsprop<T>(e, h, gs, lo, hi);
    else adagrad<T>(e, h, gs, lo, hi);
}

template <int OP>
__global__ void __launch_bounds__(THREADS) step_kernel(const __grid_constant__ Table t)
{
    int64_t b = blockIdx.x;
    int lo = 0, hi = t.nt - 1; /* the last entry whose first chunk is <= b */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (t.first[mid] <= b) lo = mid;
        else hi = mid - 1;
    }
    Entry e = t.e[lo];
    int64_t start = (b - t.first[lo]) * CHUNK, end = start + CHUNK < e.n ? start + CHUNK : e.n;
    if (t.found_inf && *t.found_inf != 0) { /* the param stays; its copy is still written */
        for (int64_t j = start + threadIdx.x; e.lowp && j < end; j += blockDim.x) put_lowp(e, j, ((const float *)e.p)[j]);
        return;
    }
    if (e.step) coefficients(OP, t.h.f, device_step(e), e);
    const float gs = t.grad_scale ? (float)(1.0 / (double)*t.grad_scale) : 1.f; /* GradScaler's reciprocal, as unscale_ takes it */
    switch (e.dt) {
    case NN_F32: apply<OP, float>(e, t.h, gs, start, end); break;
    case NN_F64: apply<OP, double>(e, t.h, gs, start, end); break;
    case NN_F16: apply<OP, __half>(e, t.h, gs, start, end); break;
    default: apply<OP, __nv_bfloat16>(e, t.h, gs, start, end); break;
    }
}

/* After the update: the device step counters count it (unless found_inf skipped it). */
__global__ void count_steps(const __grid_constant__ Table t)
{
    if (t.found_inf && *t.found_inf != 0) return;
    for (int k = threadIdx.x; k < t.nt; k += blockDim.x) {
        const Entry &e = t.e[k];
        if (!e.step) continue;
        if (e.step_dt == NN_F64) *(double *)e.step += 1;
        else *(float *)e.step += 1;
    }
}

/* ---- host side ---- */

int state_roles(nn_op op, int *roles, int *step_role)
{
    switch (op) {
    case NN_OP_sgd_step: roles[0] = 2, *step_role = -1; return 1;
    case NN_OP_adam_step: roles[0] = 2, roles[1] = 3, roles[2] = 4, *step_role = 5; return 3;
    case NN_OP_rmsprop_step: roles[0] = 2, roles[1] = 3, roles[2] = 4, *step_role = 5; return 3;
    case NN_OP_adagrad_step: roles[0] = 2, *step_role = 3; return 1;
    default: return -1;
    }
}

nn_status copy(nn_tensor *dst, nn_tensor *src)
{
    nn_kargs c{};
    c.op = NN_OP_copy;
    c.out[0] = dst;
    c.in[0] = src;
    c.nin = 1;
    return nn_dispatch(&c);
}

/* contiguous scratch copies of params whose tensors do not share a dense layout */
struct Scratch {
    nn_tensor *orig, *copy;
};
struct Scratches {
    Scratch *v;
    int n, cap;
    ~Scratches()
    {
        for (int k = 0; k < n; k++) nn_release(v[k].copy);
        free(v);
    }
    /* a contiguous copy of t (with t's values unless !fill); back: copy it back after the step */
    nn_tensor *add(nn_tensor *t, bool fill, bool back)
    {
        nn_tensor *c = nn_empty(t->ndim, t->shape, t->dtype, t->storage->device);
        if (!c) return NULL;
        if (fill && copy(c, t)) {
            nn_release(c);
            return NULL;
        }
        return push(back ? t : NULL, c) ? c : NULL;
    }
    /* copy (owned) into orig after the launch (orig NULL: never) */
    bool push(nn_tensor *orig, nn_tensor *c)
    {
        if (n == cap) {
            int nc = cap ? 2 * cap : 16;
            Scratch *nv = (Scratch *)realloc(v, sizeof(Scratch) * (size_t)nc);
            if (!nv) {
                nn_release(c);
                nn_error(NN_ERR_NOMEM, "optimizer step: out of memory");
                return false;
            }
            v = nv, cap = nc;
        }
        v[n++] = Scratch{orig, c};
        return true;
    }
};

nn_status launch(int op, const Table &t, cudaStream_t s)
{
    if (!t.nt) return NN_OK;
    int64_t blocks = t.first[t.nt];
    if (blocks > 0x7fffffff) return nn_error(NN_ERR_ARG, "%s: too many elements for one launch", nn_op_name((nn_op)op));
    switch (op) {
    case NN_OP_sgd_step: step_kernel<NN_OP_sgd_step><<<(unsigned)blocks, THREADS, 0, s>>>(t); break;
    case NN_OP_adam_step: step_kernel<NN_OP_adam_step><<<(unsigned)blocks, THREADS, 0, s>>>(t); break;
    case NN_OP_rmsprop_step: step_kernel<NN_OP_rmsprop_step><<<(unsigned)blocks, THREADS, 0, s>>>(t); break;
    default: step_kernel<NN_OP_adagrad_step><<<(unsigned)blocks, THREADS, 0, s>>>(t); break;
    }
    NN_CHECK_LAUNCH();
    bool device_steps = false;
    for (int k = 0; k < t.nt && !device_steps; k++) device_steps = t.e[k].step != NULL;
    if (device_steps) {
        count_steps<<<1, THREADS, 0, s>>>(t);
        NN_CHECK_LAUNCH();
    }
    return NN_OK;
}

/* the host table (about 26 KiB): one per thread, reused */
thread_local Table table;

nn_status optim_step(const nn_kargs *a)
{
    int roles[3], step_role, m = a->nlist;
    int nst = state_roles(a->op, roles, &step_role);
    if (nst < 0) return nn_not_implemented(a, a->out[0]->dtype);
    nn_cuda_device *d = nn_cuda_dev(nn_cuda_index(a));
    if (!d) return nn_last_status();
    Table &t = table;
    t.nt = 0;
    t.first[0] = 0;
    t.found_inf = a->nin > 0 && a->in[0] ? (const float *)nn_data(a->in[0]) : NULL;
    t.grad_scale = a->nin > 1 && a->in[1] ? (const float *)nn_data(a->in[1]) : NULL;
    memcpy(t.h.f, a->f, sizeof t.h.f);
    memcpy(t.h.i, a->i, sizeof t.h.i);
    Scratches sc{NULL, 0, 0};
    for (int k = 0; k < m; k++) {
        nn_tensor *p = a->list[k], *g = a->list[m + k], *st[3] = {NULL, NULL, NULL};
        nn_tensor *lowp = a->i[7] > 0 ? a->list[a->i[7] * m + k] : NULL;
        for (int r = 0; r < nst; r++) st[r] = a->list[roles[r] * m + k];
        if (p->dtype != NN_F32 && p->dtype != NN_F64 && p->dtype != NN_F16 && p->dtype != NN_BF16) return nn_not_implemented(a, p->dtype);
        int64_t n = nn_numel(p);
        bool fresh = a->op == NN_OP_sgd_step && a->list[3 * m + k] != NULL;
        double step = 0;
        Entry e{};
        if (step_role >= 0) {
            nn_tensor *s = a->list[step_role * m + k];
            if (s->storage->device.type == NN_CPU) step = nn_load_f64(nn_data(s), s->dtype);
            else e.step = nn_data(s), e.step_dt = (int8_t)s->dtype;
        }
        if (n == 0 && !e.step) continue; /* an empty param's device counter still counts (no chunks) */
        e.n = n;
        e.dt = (int8_t)p->dtype;
        e.fresh = fresh;
        bool fast = nn_is_dense(p) && nn_same_strides(p, g);
        for (int r = 0; r < nst && fast; r++) fast = !st[r] || nn_same_strides(p, st[r]);
        if (fast) {
            e.p = nn_data(p);
            e.g = nn_data(g);
            for (int r = 0; r < nst; r++) e.s[r] = st[r] ? nn_data(st[r]) : NULL;
            if (lowp) e.lowp = nn_data(lowp), e.lowp_dt = (int8_t)lowp->dtype;
        } else {
            nn_tensor *cp = sc.add(p, true, true), *cg = cp ? sc.add(g, true, false) : NULL;
            if (!cg) return nn_last_status();
            e.p = nn_data(cp);
            e.g = nn_data(cg);
            for (int r = 0; r < nst; r++) {
                if (!st[r]) continue;
                nn_tensor *cs = sc.add(st[r], !fresh, true);
                if (!cs) return nn_last_status();
                e.s[r] = nn_data(cs);
            }
            if (lowp && !sc.push(lowp, nn_retain(p))) return nn_last_status(); /* cast after p's copy back */
        }
        if (!e.step) coefficients(a->op, a->f, step, e);
        t.e[t.nt] = e;
        t.first[t.nt + 1] = t.first[t.nt] + (n + CHUNK - 1) / CHUNK;
        if (++t.nt == MAX_T) {
            if (launch(a->op, t, nn_cuda_current(d))) return nn_last_status();
            t.nt = 0;
        }
    }
    if (launch(a->op, t, nn_cuda_current(d))) return nn_last_status();
    for (int k = 0; k < sc.n; k++)
        if (sc.v[k].orig && copy(sc.v[k].orig, sc.v[k].copy)) return nn_last_status();
    return NN_OK;
}

} // namespace

extern "C" nn_status nn_cuda_sgd_step(const nn_kargs *a) { return optim_step(a); }
extern "C" nn_status nn_cuda_adam_step(const nn_kargs *a) { return optim_step(a); }
extern "C" nn_status nn_cuda_rmsprop_step(const nn_kargs *a) { return optim_step(a); }
extern "C" nn_status nn_cuda_adagrad_step(const nn_kargs *a) { return optim_step(a); }
