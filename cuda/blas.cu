/* CUDA matrix products: NN_OP_bmm, out[b] = beta*out[b] + alpha*(in0[b] @ in1[b]) over 3-D
 * [B,m,k] x [B,k,n] operands of any strides, and nn_cuda_linear (engine/cuda_flags.h).
 *
 * The libraries are column-major; a row-major matrix is the column-major storage of its
 * transpose. A matrix with unit stride in either dim is read in place (a transpose flag says
 * which); a batch stride of 0 (a broadcast operand) is passed as such. Anything else is first
 * copied into a dense row-major block of the workspace, once for a broadcast operand. When out
 * is row-major the problem solved is out^T = in1^T @ in0^T, otherwise out = in0 @ in1; an out
 * with neither unit stride is computed in the workspace and copied back.
 *   float32            cuBLASLt, FP32 compute, or TF32 when nn_cuda_allow_tf32 is set
 *   float16, bfloat16  cuBLASLt, float accumulation and float alpha/beta; out may also be
 *                      float32 (the product rounded once, to float: autocast's weight gradients)
 *   float64            cublasDgemmStridedBatched
 *   complex64/128      cublasCgemmStridedBatched / cublasZgemmStridedBatched (alpha, beta real)
 *   int64/int32/uint8  a plain kernel, wrapping int64 arithmetic as the CPU kernel does
 * cuBLASLt descriptors, layouts and the heuristic's algorithm are kept per problem (shape,
 * strides, transposes, pointer alignment, dtype, TF32, epilogue) in a plan cache, so the steady
 * state makes no heuristic query and builds nothing. Where the heuristic offers no algorithm
 * the plan says so and cublasGemmStridedBatchedEx runs instead.
 * With beta == 0 the old contents of out are never read (the libraries skip C). */
#include <limits.h>

#include "kernels.cuh"
#include "plan_cache.cuh"
#include "strided_copy.cuh"

#include "cuda_flags.h"

namespace {

constexpr size_t kLtWorkspace = 32u << 20; /* what NVIDIA suggests for Hopper */

/* one 3-D operand [nb, rows, cols] */
struct Mat {
    char *p;
    int64_t bs, rs, cs, rows, cols;
};

Mat mat_of(const nn_tensor *t)
{
    return Mat{(char *)nn_data(t), t->strides[0], t->strides[1], t->strides[2], t->shape[1], t->shape[2]};
}

int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* Can the library read m in place? Row-major (colmajor false) or column-major, with its ld. */
bool layout_of(const Mat &m, bool *colmajor, int64_t *ld)
{
    if ((m.cs == 1 || m.cols == 1) && (m.rows == 1 || m.rs >= max1(m.cols))) {
        *colmajor = false;
        *ld = m.rows == 1 ? max1(m.cols) : m.rs;
    } else if ((m.rs == 1 || m.rows == 1) && (m.cols == 1 || m.cs >= max1(m.rows))) {
        *colmajor = true;
        *ld = m.cols == 1 ? max1(m.rows) : m.cs;
    } else {
        return false;
    }
    return *ld <= INT_MAX;
}

/* One operand of the column-major problem: its stored matrix (rows x cols, ld) and the op. */
struct Side {
    const char *p;
    bool trans;
    int64_t rows, cols, ld, bs;
};

/* Operand x as the column-major problem needs it: x itself (want_t false) or x^T. */
Side side_of(const Mat &x, bool colmajor, int64_t ld, bool want_t)
{
    Side s;
    s.p = x.p;
    s.trans = colmajor == want_t;
    s.rows = colmajor ? x.rows : x.cols;
    s.cols = colmajor ? x.cols : x.rows;
    s.ld = ld;
    s.bs = x.bs;
    return s;
}

uint32_t align_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    uintptr_t low = a & (~a + 1);
    return !a || low >= 256 ? 256u : (uint32_t)low;
}

/* ---- small kernels: integer products, out = beta*out when k == 0, ReLU ---- */

struct Strides3 {
    int64_t bs, rs, cs;
};

template <typename T>
__global__ void gemm_int(T *c, Strides3 sc, const T *a, Strides3 sa, const T *b, Strides3 sb, int64_t nb, int64_t m, int64_t n, int64_t k,
                         uint64_t alpha, uint64_t beta)
{
    int64_t total = nb * m * n;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = i % n, r = (i / n) % m, bi = i / (n * m);
        const T *pa = a + bi * sa.bs + r * sa.rs, *pb = b + bi * sb.bs + j * sb.cs;
        uint64_t acc = 0;
        for (int64_t p = 0; p < k; p++) acc += (uint64_t)(int64_t)pa[p * sa.cs] * (uint64_t)(int64_t)pb[p * sb.rs];
        T *pc = c + bi * sc.bs + r * sc.rs + j * sc.cs;
        uint64_t v = alpha * acc;
        if (beta) v += beta * (uint64_t)(int64_t)*pc;
        *pc = (T)(int64_t)v;
    }
}

template <typename T> __device__ __forceinline__ double to_d(T v) { return (double)v; }
template <> __device__ __forceinline__ double to_d<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ double to_d<__nv_bfloat16>(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_d(double v) { return (T)v; }
template <> __device__ __forceinline__ __half from_d<__half>(double v) { return __float2half_rn((float)v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_d<__nv_bfloat16>(double v) { return __float2bfloat16_rn((float)v); }

template <typename T, bool INT>
__global__ void scale3(T *c, Strides3 sc, int64_t m, int64_t n, int64_t total, double beta)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = i % n, r = (i / n) % m, bi = i / (n * m);
        T *p = c + bi * sc.bs + r * sc.rs + j * sc.cs;
        if (beta == 0) *p = from_d<T>(0.0);
        else if (INT) *p = (T)(int64_t)((uint64_t)(int64_t)beta * (uint64_t)(int64_t)*p);
        else *p = from_d<T>(beta * to_d<T>(*p));
    }
}

/* the same for complex elements (R float or double): both parts times beta, or zero */
template <typename R>
__global__ void cscale3(R *c, Strides3 sc, int64_t m, int64_t n, int64_t total, double beta)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t j = i % n, r = (i / n) % m, bi = i / (n * m);
        R *p = c + 2 * (bi * sc.bs + r * sc.rs + j * sc.cs);
        p[0] = beta == 0 ? (R)0 : (R)(beta * p[0]);
        p[1] = beta == 0 ? (R)0 : (R)(beta * p[1]);
    }
}

/* max(v, 0), NaN kept (as torch.relu) */
template <typename T>
__global__ void relu_kernel(T *p, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        if (to_d<T>(p[i]) < 0) p[i] = from_d<T>(0.0);
}

nn_status relu_inplace(char *p, int64_t n, nn_dtype dt, cudaStream_t s)
{
    unsigned blocks = nn_cuda_blocks(n);
    switch (dt) {
    case NN_F32: relu_kernel<<<blocks, 256, 0, s>>>((float *)p, n); break;
    case NN_F64: relu_kernel<<<blocks, 256, 0, s>>>((double *)p, n); break;
    case NN_F16: relu_kernel<<<blocks, 256, 0, s>>>((__half *)p, n); break;
    default: relu_kernel<<<blocks, 256, 0, s>>>((__nv_bfloat16 *)p, n); break;
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* ---- the cuBLASLt plan cache ---- */

struct LtKey {
    int32_t dev, dtype, cdtype, tf32, epilogue, ta, tb, batch;
    uint32_t al1, al2, alc, albias;
    int64_t r1, c1, ld1, bs1, r2, c2, ld2, bs2, rc, cc, ldc, bsc, k;
};

struct LtPlan {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t l1, l2, lc;
    cublasLtMatmulAlgo_t algo;
    size_t ws;
    bool found; /* false: the heuristic offered nothing; use cublasGemmStridedBatchedEx */
};

void destroy_plan(LtPlan &p)
{
    if (p.op) cublasLtMatmulDescDestroy(p.op);
    if (p.l1) cublasLtMatrixLayoutDestroy(p.l1);
    if (p.l2) cublasLtMatrixLayoutDestroy(p.l2);
    if (p.lc) cublasLtMatrixLayoutDestroy(p.lc);
    p = LtPlan{};
}

nn_plan_cache<LtKey, LtPlan> *lt_cache() { return nn_plan_cache_for<LtKey, LtPlan>(destroy_plan); }

cudaDataType_t cuda_type(nn_dtype dt)
{
    switch (dt) {
    case NN_F16: return CUDA_R_16F;
    case NN_BF16: return CUDA_R_16BF;
    case NN_F64: return CUDA_R_64F;
    default: return CUDA_R_32F;
    }
}

/* The problem: D(rc x cc) = op1(s1) @ op2(s2) in column-major terms, batched. */
struct Problem {
    int dev;
    nn_dtype dt, cdt; /* operands', C and D's */
    int64_t batch, k;
    Side s1, s2;
    char *c;
    int64_t rc, cc, ldc, bsc;
    double alpha, beta;
    const void *bias; /* epilogue bias along the rows of D (NULL: none) */
    bool relu;
};

nn_status lt_layout(cublasLtMatrixLayout_t *l, nn_dtype dt, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t bs)
{
    NN_CHECK(cublasLtMatrixLayoutCreate(l, cuda_type(dt), (uint64_t)rows, (uint64_t)cols, ld));
    int32_t nb = (int32_t)batch;
    NN_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb, sizeof nb));
    NN_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &bs, sizeof bs));
    return NN_OK;
}

nn_status build_plan(const Problem &P, const LtKey &key, nn_cuda_device *d, LtPlan *plan)
{
    *plan = LtPlan{};
    cublasComputeType_t ct = key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    NN_CHECK(cublasLtMatmulDescCreate(&plan->op, ct, CUDA_R_32F));
    cublasOperation_t ta = P.s1.trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = P.s2.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    NN_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    NN_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtEpilogue_t epi = (cublasLtEpilogue_t)key.epilogue;
    NN_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    if (P.bias) NN_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &P.bias, sizeof P.bias));
    nn_status st;
    if ((st = lt_layout(&plan->l1, P.dt, P.s1.rows, P.s1.cols, P.s1.ld, P.batch, P.s1.bs)) ||
        (st = lt_layout(&plan->l2, P.dt, P.s2.rows, P.s2.cols, P.s2.ld, P.batch, P.s2.bs)) ||
        (st = lt_layout(&plan->lc, P.cdt, P.rc, P.cc, P.ldc, P.batch, P.bsc)))
        return st;
    cublasLtMatmulPreference_t pref;
    NN_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t wsmax = kLtWorkspace;
    uint32_t al[4] = {key.al1, key.al2, key.alc, key.alc};
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsmax, sizeof wsmax);
    const cublasLtMatmulPreferenceAttributes_t which[4] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                           CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && s == CUBLAS_STATUS_SUCCESS; i++) s = cublasLtMatmulPreferenceSetAttribute(pref, which[i], &al[i], sizeof al[i]);
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(d->lt, plan->op, plan->l1, plan->l2, plan->lc, plan->lc, pref, 1, &res, &nres);
    cublasLtMatmulPreferenceDestroy(pref);
    if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) NN_CHECK(s);
    if (s == CUBLAS_STATUS_SUCCESS && nres > 0 && res.state == CUBLAS_STATUS_SUCCESS) {
        plan->found = true;
        plan->algo = res.algo;
        plan->ws = res.workspaceSize;
    }
    return NN_OK;
}

/* The problem on the classic cuBLAS API (float64, complex, and where cuBLASLt offers no algorithm). */
nn_status run_cublas(const Problem &P, nn_cuda_device *d, cudaStream_t stream)
{
    NN_CHECK(cublasSetStream(d->cublas, stream));
    cublasOperation_t ta = P.s1.trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = P.s2.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    int m = (int)P.rc, n = (int)P.cc, k = (int)P.k, nb = (int)P.batch;
    if (P.dt == NN_C64) {
        cuComplex al = make_cuComplex((float)P.alpha, 0), be = make_cuComplex((float)P.beta, 0);
        NN_CHECK(cublasCgemmStridedBatched(d->cublas, ta, tb, m, n, k, &al, (const cuComplex *)P.s1.p, (int)P.s1.ld, P.s1.bs,
                                           (const cuComplex *)P.s2.p, (int)P.s2.ld, P.s2.bs, &be, (cuComplex *)P.c, (int)P.ldc, P.bsc, nb));
        return NN_OK;
    }
    if (P.dt == NN_C128) {
        cuDoubleComplex al = make_cuDoubleComplex(P.alpha, 0), be = make_cuDoubleComplex(P.beta, 0);
        NN_CHECK(cublasZgemmStridedBatched(d->cublas, ta, tb, m, n, k, &al, (const cuDoubleComplex *)P.s1.p, (int)P.s1.ld, P.s1.bs,
                                           (const cuDoubleComplex *)P.s2.p, (int)P.s2.ld, P.s2.bs, &be, (cuDoubleComplex *)P.c, (int)P.ldc,
                                           P.bsc, nb));
        return NN_OK;
    }
    if (P.dt == NN_F64) {
        double al = P.alpha, be = P.beta;
        NN_CHECK(cublasDgemmStridedBatched(d->cublas, ta, tb, m, n, k, &al, (const double *)P.s1.p, (int)P.s1.ld, P.s1.bs,
                                           (const double *)P.s2.p, (int)P.s2.ld, P.s2.bs, &be, (double *)P.c, (int)P.ldc, P.bsc, nb));
        return NN_OK;
    }
    float al = (float)P.alpha, be = (float)P.beta;
    cublasComputeType_t ct = P.dt == NN_F32 && nn_cuda_allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cudaDataType_t t = cuda_type(P.dt);
    NN_CHECK(cublasGemmStridedBatchedEx(d->cublas, ta, tb, m, n, k, &al, P.s1.p, t, (int)P.s1.ld, P.s1.bs, P.s2.p, t, (int)P.s2.ld, P.s2.bs,
                                        &be, P.c, cuda_type(P.cdt), (int)P.ldc, P.bsc, nb, ct, CUBLAS_GEMM_DEFAULT));
    return NN_OK;
}

/* An epilogue problem (batch 1, D dense) without the epilogue: D = bias broadcast along its
 * rows, D += product, then ReLU. */
nn_status run_unfused(const Problem &P, nn_cuda_device *d, cudaStream_t stream)
{
    Problem Q = P;
    Q.bias = NULL, Q.relu = false;
    nn_status st;
    if (P.bias) {
        int64_t shape[2] = {P.cc, P.rc}, ds[2] = {P.ldc, 1}, ss[2] = {0, 1};
        if ((st = nn_staging::copy(P.c, ds, P.bias, ss, shape, 2, nn_dtype_size(P.dt), stream))) return st;
        Q.beta = 1;
    }
    if ((st = run_cublas(Q, d, stream))) return st;
    return P.relu ? relu_inplace(P.c, P.rc * P.cc, P.dt, stream) : NN_OK;
}

/* Solve P. ws: workspace of at least kLtWorkspace bytes for cuBLASLt. */
nn_status run_problem(const Problem &P, nn_cuda_device *d, cudaStream_t stream, void *ws)
{
    if (P.dt == NN_F64 || nn_dtype_is_complex(P.dt)) return run_cublas(P, d, stream);
    LtKey key;
    memset(&key, 0, sizeof key);
    key.dev = P.dev, key.dtype = P.dt, key.cdtype = P.cdt, key.tf32 = P.dt == NN_F32 && nn_cuda_allow_tf32;
    key.epilogue = P.bias ? (P.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : (P.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    key.ta = P.s1.trans, key.tb = P.s2.trans, key.batch = (int32_t)P.batch;
    key.al1 = align_of(P.s1.p), key.al2 = align_of(P.s2.p), key.alc = align_of(P.c), key.albias = P.bias ? align_of(P.bias) : 0;
    key.r1 = P.s1.rows, key.c1 = P.s1.cols, key.ld1 = P.s1.ld, key.bs1 = P.batch > 1 ? P.s1.bs : 0;
    key.r2 = P.s2.rows, key.c2 = P.s2.cols, key.ld2 = P.s2.ld, key.bs2 = P.batch > 1 ? P.s2.bs : 0;
    key.rc = P.rc, key.cc = P.cc, key.ldc = P.ldc, key.bsc = P.batch > 1 ? P.bsc : 0, key.k = P.k;
    nn_plan_cache<LtKey, LtPlan> *cache = lt_cache();
    LtPlan *plan = cache->find(key);
    if (!plan) {
        LtPlan fresh;
        Problem Q = P;
        Q.s1.bs = key.bs1, Q.s2.bs = key.bs2, Q.bsc = key.bsc;
        nn_status st = build_plan(Q, key, d, &fresh);
        if (st) {
            destroy_plan(fresh);
            return st;
        }
        plan = cache->insert(key, fresh);
    }
    if (!plan->found) return P.bias || P.relu ? run_unfused(P, d, stream) : run_cublas(P, d, stream);
    if (P.bias) NN_CHECK(cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &P.bias, sizeof P.bias));
    float al = (float)P.alpha, be = (float)P.beta;
    NN_CHECK(cublasLtMatmul(d->lt, plan->op, &al, P.s1.p, plan->l1, P.s2.p, plan->l2, &be, P.c, plan->lc, P.c, plan->lc, &plan->algo, ws,
                            plan->ws, stream));
    return NN_OK;
}

Strides3 strides_of(const Mat &m) { return Strides3{m.bs, m.rs, m.cs}; }

nn_status bmm_int(const nn_kargs *a, cudaStream_t s)
{
    Mat A = mat_of(a->in[0]), B = mat_of(a->in[1]), C = mat_of(a->out[0]);
    int64_t nb = a->out[0]->shape[0], m = C.rows, n = C.cols, k = A.cols;
    uint64_t alpha = (uint64_t)(int64_t)a->f[0], beta = (uint64_t)(int64_t)a->f[1];
    unsigned blocks = nn_cuda_blocks(nb * m * n);
#define GEMM_INT(T)                                                                                                                   \
    gemm_int<<<blocks, 256, 0, s>>>((T *)C.p, strides_of(C), (const T *)A.p, strides_of(A), (const T *)B.p, strides_of(B), nb, m, n, k, \
                                    alpha, beta)
    switch (a->out[0]->dtype) {
    case NN_I64: GEMM_INT(int64_t); break;
    case NN_I32: GEMM_INT(int32_t); break;
    case NN_I16: GEMM_INT(int16_t); break;
    case NN_I8: GEMM_INT(int8_t); break;
    case NN_U8: GEMM_INT(uint8_t); break;
#undef GEMM_INT
    default: return nn_not_implemented(a, a->out[0]->dtype);
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

nn_status scale_out(const nn_kargs *a, cudaStream_t s)
{
    Mat C = mat_of(a->out[0]);
    int64_t total = a->out[0]->shape[0] * C.rows * C.cols;
    double beta = a->f[1];
    unsigned blocks = nn_cuda_blocks(total);
    Strides3 sc = strides_of(C);
    switch (a->out[0]->dtype) {
    case NN_F32: scale3<float, false><<<blocks, 256, 0, s>>>((float *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_F64: scale3<double, false><<<blocks, 256, 0, s>>>((double *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_F16: scale3<__half, false><<<blocks, 256, 0, s>>>((__half *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_BF16: scale3<__nv_bfloat16, false><<<blocks, 256, 0, s>>>((__nv_bfloat16 *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_I64: scale3<int64_t, true><<<blocks, 256, 0, s>>>((int64_t *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_I32: scale3<int32_t, true><<<blocks, 256, 0, s>>>((int32_t *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_I16: scale3<int16_t, true><<<blocks, 256, 0, s>>>((int16_t *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_I8: scale3<int8_t, true><<<blocks, 256, 0, s>>>((int8_t *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_U8: scale3<uint8_t, true><<<blocks, 256, 0, s>>>((uint8_t *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_C64: cscale3<float><<<blocks, 256, 0, s>>>((float *)C.p, sc, C.rows, C.cols, total, beta); break;
    case NN_C128: cscale3<double><<<blocks, 256, 0, s>>>((double *)C.p, sc, C.rows, C.cols, total, beta); break;
    default: return nn_not_implemented(a, a->out[0]->dtype);
    }
    NN_CHECK_LAUNCH();
    return NN_OK;
}

/* ---- the float path: operands in place or staged, then one library call ---- */

struct Operand {
    Mat m;          /* as given */
    bool direct, colmajor;
    int64_t ld;
    int64_t nbatch; /* matrices to stage: 1 for a broadcast operand */
    size_t off;     /* its staging region in the workspace */
};

void operand_init(Operand *o, const Mat &m, int64_t nb, nn_staging::Carve &cv, size_t es)
{
    o->m = m;
    o->direct = layout_of(m, &o->colmajor, &o->ld);
    o->nbatch = m.bs == 0 ? 1 : nb;
    o->off = 0;
    if (!o->direct) o->off = cv.take((size_t)(o->nbatch * m.rows * m.cols) * es);
}

/* The staged copy of o in the workspace: dense row-major */
Mat staged(const Operand &o, char *ws)
{
    Mat s = o.m;
    s.p = ws + o.off;
    s.rs = s.cols, s.cs = 1;
    s.bs = o.m.bs == 0 ? 0 : s.rows * s.cols;
    return s;
}

nn_status stage_copy(const Mat &dst, const Mat &src, int64_t nbatch, size_t es, cudaStream_t s)
{
    int64_t shape[3] = {nbatch, src.rows, src.cols}, ds[3] = {dst.bs, dst.rs, dst.cs}, ss[3] = {src.bs, src.rs, src.cs};
    return nn_staging::copy(dst.p, ds, src.p, ss, shape, 3, es, s);
}

/* out (C, any strides, dtype cdt: dt, or float32 for float16/bfloat16 operands) = beta*out +
 * alpha*(A @ B) for float dtypes; bias/relu: the linear epilogue (then out is row-major
 * contiguous, of dtype dt, and beta is 0). */
nn_status gemm_float(int dev, nn_dtype dt, nn_dtype cdt, int64_t nb, int64_t m, int64_t n, int64_t k, const Mat &A, const Mat &B, const Mat &C,
                     double alpha, double beta, const nn_tensor *bias, bool relu, const char *fn)
{
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || nb > INT_MAX)
        return nn_error(NN_ERR_ARG, "%s: matrix dims above %d are not supported on CUDA", fn, INT_MAX);
    if (nb > 1 && C.bs == 0) return nn_error(NN_ERR_ARG, "%s: the output's batches overlap (batch stride 0)", fn);
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    cudaStream_t stream = nn_cuda_current(d);
    size_t es = nn_dtype_size(dt), esc = nn_dtype_size(cdt);
    nn_staging::Carve cv;
    size_t lt_off = dt == NN_F64 || nn_dtype_is_complex(dt) ? 0 : cv.take(kLtWorkspace);
    Operand oa, ob, oc;
    operand_init(&oa, A, nb, cv, es);
    operand_init(&ob, B, nb, cv, es);
    operand_init(&oc, C, nb, cv, esc);
    size_t bias_off = 0;
    bool stage_bias = bias && (bias->strides[0] != 1 || align_of(nn_data(bias)) < 16);
    if (stage_bias) bias_off = cv.take((size_t)bias->shape[0] * es);
    char *ws = NULL;
    if (cv.used && !(ws = (char *)nn_cuda_workspace(dev, cv.used))) return nn_last_status();
    nn_status st;
    Mat a = A, b = B, c = C;
    if (!oa.direct) {
        a = staged(oa, ws);
        if ((st = stage_copy(a, A, oa.nbatch, es, stream))) return st;
        layout_of(a, &oa.colmajor, &oa.ld);
    }
    if (!ob.direct) {
        b = staged(ob, ws);
        if ((st = stage_copy(b, B, ob.nbatch, es, stream))) return st;
        layout_of(b, &ob.colmajor, &ob.ld);
    }
    if (!oc.direct) {
        c = staged(oc, ws);
        c.bs = c.rows * c.cols;
        if (beta != 0 && (st = stage_copy(c, C, nb, esc, stream))) return st;
        layout_of(c, &oc.colmajor, &oc.ld);
    }
    const void *bias_p = NULL;
    if (bias) {
        bias_p = nn_data(bias);
        if (stage_bias) {
            int64_t shape[1] = {bias->shape[0]}, ds[1] = {1}, ss[1] = {bias->strides[0]};
            if ((st = nn_staging::copy(ws + bias_off, ds, bias_p, ss, shape, 1, es, stream))) return st;
            bias_p = ws + bias_off;
        }
    }
    Problem P;
    P.dev = dev, P.dt = dt, P.cdt = cdt, P.batch = nb, P.k = k, P.alpha = alpha, P.beta = beta, P.bias = bias_p, P.relu = relu;
    P.c = c.p, P.bsc = c.bs, P.ldc = oc.ld;
    if (!oc.colmajor) { /* out^T = B^T @ A^T */
        P.s1 = side_of(b, ob.colmajor, ob.ld, true);
        P.s2 = side_of(a, oa.colmajor, oa.ld, true);
        P.rc = n, P.cc = m;
    } else { /* out = A @ B */
        P.s1 = side_of(a, oa.colmajor, oa.ld, false);
        P.s2 = side_of(b, ob.colmajor, ob.ld, false);
        P.rc = m, P.cc = n;
    }
    if ((bias || relu) && oc.colmajor)
        return nn_error(NN_ERR_ARG, "%s: the output must be row-major for the fused epilogue", fn);
    if ((st = run_problem(P, d, stream, ws + lt_off))) return st;
    if (!oc.direct) {
        Mat src = c;
        if ((st = stage_copy(C, src, nb, esc, stream))) return st;
    }
    return NN_OK;
}

} // namespace

extern "C" nn_status nn_cuda_bmm(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *y = a->in[1], *out = a->out[0];
    nn_dtype dt = out->dtype;
    bool widened = dt == NN_F32 && (x->dtype == NN_F16 || x->dtype == NN_BF16); /* float16/bfloat16 operands into a float32 out */
    if ((x->dtype != dt && !widened) || y->dtype != x->dtype)
        return nn_error(NN_ERR_DTYPE, "bmm: expected operands of one dtype, got %s, %s and out %s", nn_dtype_name(x->dtype),
                        nn_dtype_name(y->dtype), nn_dtype_name(dt));
    int dev = nn_cuda_index(a);
    if (x->storage->device.index != dev || y->storage->device.index != dev)
        return nn_error(NN_ERR_DEVICE, "bmm: expected all tensors to be on the same device");
    int64_t nb = out->shape[0], m = out->shape[1], n = out->shape[2], k = x->shape[2];
    if (nb == 0 || m == 0 || n == 0) return NN_OK;
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    if (k == 0) return scale_out(a, nn_cuda_current(d));
    switch (dt) {
    case NN_F32:
    case NN_F64:
    case NN_F16:
    case NN_BF16:
    case NN_C64:
    case NN_C128: return gemm_float(dev, x->dtype, dt, nb, m, n, k, mat_of(x), mat_of(y), mat_of(out), a->f[0], a->f[1], NULL, false, "bmm");
    case NN_I64:
    case NN_I32:
    case NN_I16:
    case NN_I8:
    case NN_U8: return bmm_int(a, nn_cuda_current(d));
    default: return nn_not_implemented(a, dt);
    }
}

extern "C" nn_status nn_cuda_linear(nn_tensor *out, const nn_tensor *x, const nn_tensor *w, const nn_tensor *bias, bool relu)
{
    char s1[160], s2[160];
    if (x->ndim != 2 || w->ndim != 2 || out->ndim != 2 || (bias && bias->ndim != 1))
        return nn_error(NN_ERR_SHAPE, "linear: expected a 2-D input, a 2-D weight, a 1-D bias and a 2-D output");
    int64_t m = x->shape[0], k = x->shape[1], n = w->shape[0];
    if (w->shape[1] != k || out->shape[0] != m || out->shape[1] != n || (bias && bias->shape[0] != n))
        return nn_error(NN_ERR_SHAPE, "linear: input %s and weight %s do not match", nn_shape_str(s1, 2, x->shape), nn_shape_str(s2, 2, w->shape));
    nn_dtype dt = out->dtype;
    if (x->dtype != dt || w->dtype != dt || (bias && bias->dtype != dt) || !nn_dtype_is_float(dt))
        return nn_error(NN_ERR_DTYPE, "linear: expected input, weight, bias and output of one float dtype");
    int dev = out->storage->device.index;
    const nn_tensor *all[4] = {out, x, w, bias};
    for (int i = 0; i < 4; i++)
        if (all[i] && (all[i]->storage->device.type != NN_CUDA || all[i]->storage->device.index != dev))
            return nn_error(NN_ERR_DEVICE, "linear: expected all tensors on one CUDA device");
    if (!nn_is_contiguous(out)) return nn_error(NN_ERR_ARG, "linear: the output must be contiguous");
    if (m == 0 || n == 0) return NN_OK;
    nn_cuda_device *d = nn_cuda_dev(dev);
    if (!d) return nn_last_status();
    cudaStream_t s = nn_cuda_current(d);
    Mat A{(char *)nn_data(x), 0, x->strides[0], x->strides[1], m, k};
    Mat B{(char *)nn_data(w), 0, w->strides[1], w->strides[0], k, n}; /* w^T */
    Mat C{(char *)nn_data(out), 0, n, 1, m, n};
    size_t es = nn_dtype_size(dt);
    nn_status st;
    if (k == 0 || dt == NN_F64) {
        /* out = broadcast bias (or 0), then out += x @ w^T, then ReLU */
        if (bias) {
            int64_t shape[2] = {m, n}, ds[2] = {n, 1}, ss[2] = {0, bias->strides[0]};
            if ((st = nn_staging::copy(C.p, ds, nn_data(bias), ss, shape, 2, es, s))) return st;
        } else {
            NN_CHECK(cudaMemsetAsync(C.p, 0, (size_t)(m * n) * es, s));
        }
        if (k > 0 && (st = gemm_float(dev, dt, dt, 1, m, n, k, A, B, C, 1.0, bias ? 1.0 : 0.0, NULL, false, "linear"))) return st;
        return relu ? relu_inplace(C.p, m * n, dt, s) : NN_OK;
    }
    return gemm_float(dev, dt, dt, 1, m, n, k, A, B, C, 1.0, 0.0, bias, relu, "linear");
}
