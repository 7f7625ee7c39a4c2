/* CUDA kernels for complex operands (engine/cpu/complex.c's, on the GPU): the unary and
 * binary elementwise ops the frontends allow for complex (engine/complex.c), where, casts to,
 * from and between complex dtypes, complex fills, and the sum/mean/prod/all/any reductions.
 * The kernel entry points of unary.cu, binary.cu, elementwise.cu, copy.cu and reduce.cu hand
 * a call over here when an operand is complex (complex_hooks.cuh), so their templates stay as
 * they were. Elements are read as double complex whatever the dtype and stored back through
 * the CPU's rules (complex.cuh), so complex64 is computed in double and rounded once, as on
 * the CPU: one kernel per kind of op, the op picked at run time, and dtypes read at run time
 * (a kernel per dtype pair is what once made copy.cu take minutes to compile). A 0-dim CPU
 * operand (a Lua number, or a 0-dim complex CPU tensor) is read on the host and passed by
 * value. */
#include "complex.cuh"
#include "complex_hooks.cuh"

extern "C" {
#include "complex_ops.h"
}
#include "ew.cuh"
#include "reduce_geo.cuh"

using nnc::cd;

namespace {

/* ---- element access by runtime dtype ----
 * Real dtypes go through calls: inlined, nvcc specialised the loops for every combination of
 * the operands' dtypes (loop-invariant switches) and took minutes over binary and where. */

__device__ __noinline__ double load_real(const char *p, int dt) { return nnk::ld_f64(p, dt); }
__device__ __noinline__ void store_real(char *p, int dt, double v) { nnk::st_f64(p, dt, v); }

__device__ __forceinline__ cd load(const char *p, int dt)
{
    if (dt == NN_C64) {
        float2 v = *(const float2 *)p;
        return cd(v.x, v.y);
    }
    if (dt == NN_C128) {
        double2 v = *(const double2 *)p;
        return cd(v.x, v.y);
    }
    return cd(load_real(p, dt), 0);
}

/* nn_store_c: a real dtype keeps the real part; bool tests both parts */
__device__ __forceinline__ void store(char *p, int dt, cd v)
{
    if (dt == NN_C64) *(float2 *)p = make_float2((float)v.real(), (float)v.imag());
    else if (dt == NN_C128) *(double2 *)p = make_double2(v.real(), v.imag());
    else if (dt == NN_BOOL) *(uint8_t *)p = v.real() != 0 || v.imag() != 0;
    else store_real(p, dt, v.real());
}

/* an input operand: a device tensor (its strides come from the iteration) or a host value */
struct In {
    bool value;
    int dt;
    double re, im;
    __device__ __forceinline__ cd at(const char *p) const { return value ? cd(re, im) : load(p, dt); }
};

In in_of(const nn_tensor *t)
{
    In o{nnk::host_scalar(t), (int)t->dtype, 0, 0};
    if (o.value) nn_load_c(nn_data(t), t->dtype, &o.re, &o.im);
    return o;
}

constexpr int CHUNK = 4; /* elements a thread (nn_cuda_for_chunks) */

template <int NOPS, class F> __global__ void ew_kernel(F f, int64_t n, nn_cuda_offsets o) { nn_cuda_for_chunks<NOPS, CHUNK>(o, n, f); }

template <int NOPS, class F> nn_status launch(const F &f, const nn_iter &it, int64_t n, cudaStream_t s)
{
    nn_cuda_offsets o = nn_cuda_offsets_of(it);
    nn_launch<ew_kernel<NOPS, F>>(nn_cuda_blocks(nn_cuda_chunks(o, n, CHUNK)), 256, s, f, n, o);
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* ---- unary and binary: one out-of-line copy of the math, not one per unrolled element ---- */

__device__ __noinline__ cd unary_op(int op, cd z, double f0) { return nnc::unary(op, z, f0); }
__device__ __noinline__ cd binary_op(int op, cd x, cd y, double alpha) { return nnc::binary(op, x, y, alpha); }

struct Unary {
    char *out;
    const char *in;
    int dto, dti, op;
    double f0;
    __device__ __forceinline__ void operator()(int64_t, const int64_t *off) const
    {
        store(out + off[0], dto, unary_op(op, load(in + off[1], dti), f0));
    }
};

struct Binary {
    char *out;
    const char *pa, *pb;
    In a, b;
    int dto, op;
    double alpha;
    __device__ __forceinline__ void operator()(int64_t, const int64_t *off) const
    {
        store(out + off[0], dto, binary_op(op, a.at(pa + off[1]), b.at(pb + off[2]), alpha));
    }
};

/* ---- where, casts, fills ---- */

struct Where {
    char *out;
    const char *pc, *pa, *pb;
    In a, b;
    int dto, dtc;
    bool cvalue, cval;
    __device__ __forceinline__ void operator()(int64_t, const int64_t *off) const
    {
        bool t = cvalue ? cval : *(const uint8_t *)(pc + off[1]) != 0;
        store(out + off[0], dto, t ? a.at(pa + off[2]) : b.at(pb + off[3]));
    }
};

struct Cast {
    char *out;
    const char *in;
    int dto, dti;
    __device__ __forceinline__ void operator()(int64_t, const int64_t *off) const { store(out + off[0], dto, load(in + off[1], dti)); }
};

struct Fill {
    char *out;
    int dto;
    double re, im;
    __device__ __forceinline__ void operator()(int64_t, const int64_t *off) const { store(out + off[0], dto, cd(re, im)); }
};

} // namespace

nn_status nn_cuda_complex_unary(const nn_kargs *a)
{
    if (!nn_complex_unary_op(a->op)) return nn_not_implemented(a, a->in[0]->dtype);
    if (nnk::host_scalar(a->in[0])) return nn_error(NN_ERR_DEVICE, "%s: the CUDA kernel needs its input on the GPU", nn_op_name(a->op));
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    nn_iter it;
    nn_iter_init(&it, 2, ops);
    int64_t n = nnk::iter_numel(it);
    if (!n) return NN_OK;
    Unary f{it.data[0], it.data[1], (int)ops[0]->dtype, (int)ops[1]->dtype, (int)a->op, a->f[0]};
    return launch<2>(f, it, n, nn_cuda_stream(nn_cuda_index(a)));
}

nn_status nn_cuda_complex_binary(const nn_kargs *a)
{
    if (!nn_complex_binary_op(a->op)) return nn_not_implemented(a, (nn_dtype)a->i[0]);
    nn_tensor *ops[3] = {a->out[0], a->in[0], a->in[1]};
    nn_iter it;
    nn_iter_init(&it, 3, ops);
    int64_t n = nnk::iter_numel(it);
    if (!n) return NN_OK;
    Binary f{it.data[0], it.data[1], it.data[2], in_of(a->in[0]), in_of(a->in[1]), (int)ops[0]->dtype, (int)a->op, a->f[0]};
    return launch<3>(f, it, n, nn_cuda_stream(nn_cuda_index(a)));
}

nn_status nn_cuda_complex_where(const nn_kargs *a)
{
    nn_tensor *ops[4] = {a->out[0], a->in[0], a->in[1], a->in[2]};
    nn_iter it;
    nn_iter_init(&it, 4, ops);
    int64_t n = nnk::iter_numel(it);
    if (!n) return NN_OK;
    const nn_tensor *c = a->in[0];
    Where f{it.data[0], it.data[1], it.data[2], it.data[3], in_of(a->in[1]), in_of(a->in[2]), (int)ops[0]->dtype, (int)c->dtype,
            nnk::host_scalar(c), false};
    if (f.cvalue) f.cval = *(const uint8_t *)nn_data(c) != 0;
    return launch<4>(f, it, n, nn_cuda_stream(nn_cuda_index(a)));
}

/* any strides; dtypes differ and one is complex, or both are one complex dtype */
nn_status nn_cuda_complex_copy(const nn_kargs *a)
{
    if (a->in[0]->storage->device.type != NN_CUDA)
        return nn_error(NN_ERR_DEVICE, "copy: the CUDA copy kernel needs both tensors on the GPU");
    nn_tensor *ops[2] = {a->out[0], a->in[0]};
    nn_iter it;
    nn_iter_init(&it, 2, ops);
    int64_t n = nnk::iter_numel(it);
    if (!n) return NN_OK;
    Cast f{it.data[0], it.data[1], (int)ops[0]->dtype, (int)ops[1]->dtype};
    return launch<2>(f, it, n, nn_cuda_stream(nn_cuda_index(a)));
}

/* f[0] + i f[1] */
nn_status nn_cuda_complex_fill(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    nn_iter it;
    nn_iter_init(&it, 1, &out);
    int64_t n = nnk::iter_numel(it);
    if (!n) return NN_OK;
    Fill f{it.data[0], (int)out->dtype, a->f[0], a->f[1]};
    return launch<1>(f, it, n, nn_cuda_stream(nn_cuda_index(a)));
}

/* ---- reductions: sum mean prod all any of x (any dtype, one of them complex) into out (keepdim
 * shape, reduce_geo.cuh), folded in double complex as on the CPU. G threads (32 or 256) fold one output: lanes
 * stride over its reduced positions, then warp shuffles (and shared memory for 256). With few
 * outputs and many positions the positions are split over gridDim.y, each block writing a
 * partial value that a second kernel (a warp per output) folds. ---- */

namespace {

/* out of line: nvcc took minutes over __muldc3 inlined into every step and shuffle */
__device__ __noinline__ cd fold_step(int op, cd acc, cd x)
{
    switch (op) {
    case NN_OP_prod: return nnc::mul(acc, x);
    case NN_OP_all: return cd(!nnc::is_zero(acc) && !nnc::is_zero(x), 0);
    case NN_OP_any: return cd(!nnc::is_zero(acc) || !nnc::is_zero(x), 0);
    default: return acc + x; /* sum, mean */
    }
}

struct Fold {
    int op;
    __device__ __forceinline__ cd init() const { return cd(op == NN_OP_prod || op == NN_OP_all ? 1 : 0, 0); }
    __device__ __forceinline__ cd operator()(cd acc, cd x) const { return op == NN_OP_sum || op == NN_OP_mean ? acc + x : fold_step(op, acc, x); }
};

__device__ __forceinline__ cd shfl_down(cd v, int off)
{
    return cd(__shfl_down_sync(0xffffffffu, v.real(), off), __shfl_down_sync(0xffffffffu, v.imag(), off));
}

/* the G threads of a group fold their values into lane 0's (G 32 or 256; blockDim.x 256) */
__device__ __forceinline__ cd group_fold(cd acc, const Fold &f, int G)
{
    __shared__ double sh[8][2];
    for (int off = 16; off > 0; off >>= 1) acc = f(acc, shfl_down(acc, off));
    if (G == 256) {
        const int tid = threadIdx.x;
        if ((tid & 31) == 0) sh[tid >> 5][0] = acc.real(), sh[tid >> 5][1] = acc.imag();
        __syncthreads();
        if (tid == 0)
            for (int k = 1; k < 8; k++) acc = f(acc, cd(sh[k][0], sh[k][1]));
    }
    return acc;
}

struct Out {
    char *p;
    int dt;
    bool mean;
    double count; /* mean: the divisor */
    __device__ __forceinline__ void put(int64_t off, cd v) const
    {
        if (mean) v = cd(v.real() / count, v.imag() / count);
        store(p + off, dt, v);
    }
};

__global__ void __launch_bounds__(256) fold_kernel(const char *x, int dtx, Out out, nnr::RGeo g, Fold f, int G, int64_t chunk, double2 *part)
{
    const int tid = threadIdx.x, lane = tid & (G - 1);
    const int64_t o = (int64_t)blockIdx.x * (256 / G) + tid / G;
    const int64_t r0 = (int64_t)blockIdx.y * chunk, r1 = min(g.nred, r0 + chunk);
    cd acc = f.init();
    int64_t oi = 0, oo = 0, oo2;
    if (o < g.nout) {
        nnr::kept_offsets(g, o, oi, oo, oo2);
        for (int64_t r = r0 + lane; r < r1; r += G) acc = f(acc, load(x + oi + nnr::red_offset(g, r), dtx));
    }
    acc = group_fold(acc, f, G);
    if (lane == 0 && o < g.nout) {
        if (gridDim.y == 1) out.put(oo, acc);
        else part[o * gridDim.y + blockIdx.y] = make_double2(acc.real(), acc.imag());
    }
}

/* a warp per output folds its nsplit partial values */
__global__ void fold_finish(const double2 *part, int nsplit, Out out, nnr::RGeo g, Fold f)
{
    const int64_t o = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    cd acc = f.init();
    if (o < g.nout)
        for (int s = lane; s < nsplit; s += 32) acc = f(acc, cd(part[o * nsplit + s].x, part[o * nsplit + s].y));
    for (int off = 16; off > 0; off >>= 1) acc = f(acc, shfl_down(acc, off));
    if (lane == 0 && o < g.nout) {
        int64_t oi, oo, oo2;
        nnr::kept_offsets(g, o, oi, oo, oo2);
        out.put(oo, acc);
    }
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

} // namespace

nn_status nn_cuda_complex_reduce(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *out = a->out[0];
    switch (a->op) {
    case NN_OP_sum: case NN_OP_mean: case NN_OP_prod: case NN_OP_all: case NN_OP_any: break;
    default: return nn_not_implemented(a, x->dtype);
    }
    if (nnk::host_scalar(x)) return nn_error(NN_ERR_DEVICE, "%s: the CUDA kernel needs its input on the GPU", nn_op_name(a->op));
    nnr::RGeo g = nnr::plan(x, out, NULL, a->dims);
    if (g.nout == 0) return NN_OK;
    int dev = nn_cuda_index(a);
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    cudaStream_t s = nn_cuda_current(d);
    /* mean divides by numel(x) / numel(out), as the CPU (0 / 0 for an empty x) */
    Out o{(char *)nn_data(out), (int)out->dtype, a->op == NN_OP_mean, (double)nn_numel(x) / (double)g.nout};
    Fold f{(int)a->op};
    const int64_t target = 4 * (int64_t)(d->sm_count > 0 ? d->sm_count : 100);
    int G = g.nred >= 1024 && g.nout < 2 * target ? 256 : 32;
    int64_t bx = cdiv(g.nout, 256 / G), splits = 1, chunk = g.nred > 0 ? g.nred : 1;
    if (bx < target && g.nred >= 8192) {
        splits = std::min(std::min(cdiv(target, bx), cdiv(g.nred, 4096)), (int64_t)65535);
        chunk = cdiv(g.nred, splits);
        splits = cdiv(g.nred, chunk);
    }
    double2 *part = NULL;
    if (splits > 1 && !(part = (double2 *)nn_cuda_alloc(dev, (size_t)(g.nout * splits) * sizeof(double2)))) return nn_last_status();
    dim3 grid((unsigned)bx, (unsigned)splits);
    nn_launch<fold_kernel>(grid, 256, s, (const char *)nn_data(x), (int)x->dtype, o, g, f, G, chunk, part);
    nn_status st = nn_check(cudaGetLastError(), "complex reduction kernel", __FILE__, __LINE__);
    if (!st && splits > 1) {
        nn_launch<fold_finish>((unsigned)cdiv(g.nout, 8), 256, s, part, (int)splits, o, g, f);
        st = nn_check(cudaGetLastError(), "complex reduction finish kernel", __FILE__, __LINE__);
    }
    if (part) nn_cuda_free(dev, part); /* stream-ordered: reused only by later work on this stream */
    return st;
}
