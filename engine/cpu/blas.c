/* The CPU matrix product: out[b] = beta*out[b] + alpha*(in0[b] @ in1[b]) for 3-D
 * [B,m,k] x [B,k,n] operands of any strides.
 *  float32/float64/float16/bfloat16: nn_cpu_gemm per batch. A matrix with unit stride
 *    in either dim is passed in place (row-major, or transposed); anything else is
 *    packed into a contiguous buffer, once when its batch stride is 0.
 *  complex64/complex128: the same through cblas_cgemm/zgemm.
 *  integers and bool: a plain loop in int64 (wrapping), alpha and beta as integers.
 * With beta == 0 the old contents of out are never read. */
#include <cblas.h>
#include <pthread.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "convert16.h"
#include "gemm_dnnl.h"
#include "kernels.h"
#include "parallel.h"

/* Blocks of at least this many multiply-adds (a few tens of microseconds on one core) */
#define GEMM_BLOCK_WORK 1e6

typedef struct {
    char *p;               /* element [0,0] of batch 0 */
    int64_t bs, rs, cs;    /* strides in elements */
    int64_t rows, cols;
} mat;

static mat mat_of(const nn_tensor *t)
{
    return (mat){nn_data(t), t->strides[0], t->strides[1], t->strides[2], t->shape[1], t->shape[2]};
}

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* Can BLAS read m in place? Row-major (trans false) or column-major (trans true), with its ld. */
static bool blas_layout(const mat *m, bool *trans, int64_t *ld)
{
    if ((m->cs == 1 || m->cols == 1) && (m->rows == 1 || m->rs >= max1(m->cols))) {
        *trans = false;
        *ld = m->rows == 1 ? max1(m->cols) : m->rs;
    } else if ((m->rs == 1 || m->rows == 1) && (m->cols == 1 || m->cs >= max1(m->rows))) {
        *trans = true;
        *ld = m->cols == 1 ? max1(m->rows) : m->cs;
    } else {
        return false;
    }
    return *ld <= INT_MAX;
}

/* Copy a strided rows x cols matrix to a dense row-major one (es-byte elements). */
static void pack(char *dst, const char *src, const mat *m, size_t es)
{
    for (int64_t i = 0; i < m->rows; i++) {
        const char *s = src + i * m->rs * (int64_t)es;
        if (m->cs == 1) {
            memcpy(dst, s, (size_t)m->cols * es);
            dst += m->cols * es;
            continue;
        }
        for (int64_t j = 0; j < m->cols; j++, dst += es) memcpy(dst, s + j * m->cs * (int64_t)es, es);
    }
}

static void unpack(char *dst, const char *src, const mat *m, size_t es)
{
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t j = 0; j < m->cols; j++, src += es) memcpy(dst + (i * m->rs + j * m->cs) * (int64_t)es, src, es);
}

/* One operand of a float gemm: in place when BLAS can read it, else packed. */
typedef struct {
    mat m;
    bool direct, trans;
    int64_t ld;
    char *buf;
    const char *last; /* the batch pointer packed last (reused when the batch stride is 0) */
} operand;

static bool operand_init(operand *o, const nn_tensor *t, size_t es)
{
    memset(o, 0, sizeof *o);
    o->m = mat_of(t);
    o->direct = blas_layout(&o->m, &o->trans, &o->ld);
    if (o->direct) return true;
    o->trans = false;
    o->ld = max1(o->m.cols);
    return (o->buf = malloc((size_t)max1(o->m.rows * o->m.cols) * es)) != NULL;
}

static const char *operand_at(operand *o, int64_t b, size_t es)
{
    const char *p = o->m.p + b * o->m.bs * (int64_t)es;
    if (o->direct) return p;
    if (p != o->last) pack(o->buf, p, &o->m, es);
    o->last = p;
    return o->buf;
}

/* Batches of small products over the CPU pool: each batch one product on one thread (the
 * operands read in place) */
typedef struct {
    const operand *A, *B, *C;
    nn_dtype dt;
    int64_t m, n, k;
    double alpha, beta;
    size_t es;
} batch_job;

static nn_status gemm_batches(int64_t b, int64_t e, void *arg)
{
    const batch_job *j = arg;
    for (int64_t i = b; i < e; i++) {
        const char *pa = j->A->m.p + i * j->A->m.bs * (int64_t)j->es, *pb = j->B->m.p + i * j->B->m.bs * (int64_t)j->es;
        char *pc = j->C->m.p + i * j->C->m.bs * (int64_t)j->es;
        nn_cpu_gemm(j->dt, j->A->trans, j->B->trans, j->m, j->n, j->k, j->alpha, pa, j->A->ld, pb, j->B->ld, j->beta, pc, j->C->ld);
    }
    return NN_OK;
}

static nn_status gemm_float(const nn_kargs *a, size_t es)
{
    nn_tensor *out = a->out[0];
    operand A, B, C;
    nn_status st = NN_OK;
    bool ok = operand_init(&A, a->in[0], es) & operand_init(&B, a->in[1], es) & operand_init(&C, out, es);
    /* out must be row-major for BLAS to write it; otherwise work in C.buf */
    if (ok && C.direct && C.trans) {
        C.direct = false;
        C.trans = false;
        C.ld = max1(C.m.cols);
        ok = (C.buf = malloc((size_t)max1(C.m.rows * C.m.cols) * es)) != NULL;
    }
    if (!ok) {
        st = nn_error(NN_ERR_NOMEM, "bmm: out of memory");
        goto done;
    }
    int64_t nb = out->shape[0], m = out->shape[1], n = out->shape[2], k = a->in[0]->shape[2];
    double alpha = a->f[0], beta = a->f[1];
    /* many small products (one a sample's, as per-sample gradients make): the batches over the
     * pool, in runs of about GEMM_BLOCK_WORK, at most NN_CPU_BLAS_CALLERS runs at once; a product
     * large enough is split by nn_cpu_gemm itself */
    double work = (double)m * (double)n * (double)k;
    bool cplx = out->dtype == NN_C64 || out->dtype == NN_C128;
    if (!cplx && A.direct && B.direct && C.direct && nb > 1 && work < 2 * GEMM_BLOCK_WORK && nn_parallel_width() > 1) {
        batch_job j = {&A, &B, &C, out->dtype, m, n, k, alpha, beta, es};
        int64_t grain = (int64_t)(GEMM_BLOCK_WORK / work) + 1, fewest = (nb + NN_CPU_BLAS_CALLERS - 1) / NN_CPU_BLAS_CALLERS;
        st = nn_parallel_for(nb, grain > fewest ? grain : fewest, gemm_batches, &j);
        goto done;
    }
    for (int64_t b = 0; b < nb; b++) {
        const char *pa = operand_at(&A, b, es), *pb = operand_at(&B, b, es);
        char *pc = C.m.p + b * C.m.bs * (int64_t)es;
        char *wc = pc;
        if (!C.direct) {
            if (beta != 0) pack(C.buf, pc, &C.m, es);
            wc = C.buf;
        }
        CBLAS_TRANSPOSE ta = A.trans ? CblasTrans : CblasNoTrans, tb = B.trans ? CblasTrans : CblasNoTrans;
        if (out->dtype == NN_C64 || out->dtype == NN_C128) {
            nn_cpu_blas_init();
            const float fa[2] = {(float)alpha, 0}, fb[2] = {(float)beta, 0};
            const double da[2] = {alpha, 0}, db[2] = {beta, 0};
            if (out->dtype == NN_C64)
                cblas_cgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, fa, pa, (int)A.ld, pb, (int)B.ld, fb, wc, (int)C.ld);
            else
                cblas_zgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)k, da, pa, (int)A.ld, pb, (int)B.ld, db, wc, (int)C.ld);
        } else
            nn_cpu_gemm(out->dtype, A.trans, B.trans, m, n, k, alpha, pa, A.ld, pb, B.ld, beta, wc, C.ld);
        if (!C.direct) unpack(pc, C.buf, &C.m, es);
    }
done:
    free(A.buf), free(B.buf), free(C.buf);
    return st;
}

static nn_status gemm_int(const nn_kargs *a)
{
    nn_dtype dt = a->out[0]->dtype;
    size_t es = nn_dtype_size(dt);
    mat A = mat_of(a->in[0]), B = mat_of(a->in[1]), C = mat_of(a->out[0]);
    int64_t nb = a->out[0]->shape[0], m = C.rows, n = C.cols, k = A.cols;
    uint64_t alpha = (uint64_t)(int64_t)a->f[0], beta = (uint64_t)(int64_t)a->f[1];
    uint64_t *bb = malloc((size_t)max1(k * n) * sizeof *bb), *acc = malloc((size_t)max1(n) * sizeof *acc);
    if (!bb || !acc) {
        free(bb), free(acc);
        return nn_error(NN_ERR_NOMEM, "bmm: out of memory");
    }
    for (int64_t b = 0; b < nb; b++) {
        const char *pa = A.p + b * A.bs * (int64_t)es, *pb = B.p + b * B.bs * (int64_t)es;
        char *pc = C.p + b * C.bs * (int64_t)es;
        if (b == 0 || B.bs)
            for (int64_t p = 0; p < k; p++)
                for (int64_t j = 0; j < n; j++) bb[p * n + j] = (uint64_t)nn_load_i64(pb + (p * B.rs + j * B.cs) * (int64_t)es, dt);
        for (int64_t i = 0; i < m; i++) {
            memset(acc, 0, (size_t)n * sizeof *acc);
            for (int64_t p = 0; p < k; p++) {
                uint64_t av = (uint64_t)nn_load_i64(pa + (i * A.rs + p * A.cs) * (int64_t)es, dt);
                if (!av) continue;
                for (int64_t j = 0; j < n; j++) acc[j] += av * bb[p * n + j];
            }
            for (int64_t j = 0; j < n; j++) {
                char *o = pc + (i * C.rs + j * C.cs) * (int64_t)es;
                uint64_t v = alpha * acc[j];
                if (beta) v += beta * (uint64_t)nn_load_i64(o, dt);
                nn_store_i64(o, dt, (int64_t)v);
            }
        }
    }
    free(bb), free(acc);
    return NN_OK;
}

/* k == 0: the product is zero, out = beta*out */
static void scale_out(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    mat C = mat_of(out);
    size_t es = nn_dtype_size(out->dtype);
    bool ints = nn_dtype_is_integral(out->dtype);
    double beta = a->f[1];
    for (int64_t b = 0; b < out->shape[0]; b++)
        for (int64_t i = 0; i < C.rows; i++)
            for (int64_t j = 0; j < C.cols; j++) {
                char *o = C.p + (b * C.bs + i * C.rs + j * C.cs) * (int64_t)es;
                if (nn_dtype_is_complex(out->dtype)) {
                    double re, im;
                    nn_load_c(o, out->dtype, &re, &im);
                    nn_store_c(o, out->dtype, beta == 0 ? 0 : beta * re, beta == 0 ? 0 : beta * im);
                } else if (beta == 0) nn_store_i64(o, out->dtype, 0);
                else if (ints) nn_store_i64(o, out->dtype, (int64_t)((uint64_t)(int64_t)beta * (uint64_t)nn_load_i64(o, out->dtype)));
                else nn_store_f64(o, out->dtype, beta * nn_load_f64(o, out->dtype));
            }
}

nn_status nn_cpu_bmm(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *y = a->in[1], *out = a->out[0];
    nn_dtype dt = out->dtype;
    if (x->dtype != dt || y->dtype != dt)
        return nn_error(NN_ERR_DTYPE, "bmm: expected operands of one dtype, got %s, %s and out %s", nn_dtype_name(x->dtype),
                        nn_dtype_name(y->dtype), nn_dtype_name(dt));
    int64_t nb = out->shape[0], m = out->shape[1], n = out->shape[2], k = x->shape[2];
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
        return nn_error(NN_ERR_ARG, "bmm: matrix dims above %d are not supported", INT_MAX);
    if (nb == 0 || m == 0 || n == 0) return NN_OK;
    if (k == 0) {
        scale_out(a);
        return NN_OK;
    }
    switch (dt) {
    case NN_F32: return gemm_float(a, 4);
    case NN_F64: return gemm_float(a, 8);
    case NN_C64: return gemm_float(a, 8);
    case NN_C128: return gemm_float(a, 16);
    case NN_F16:
    case NN_BF16: return gemm_float(a, 2);
    default: return gemm_int(a);
    }
}

/* ---- products over the CPU pool ----
 * oneDNN and OpenBLAS run on one thread only. A large product is cut into blocks of C (slices of
 * its columns or rows, or rows by columns), each a product of its own on a thread of the CPU pool
 * (parallel.h), so that one pool of threads serves every op: OpenBLAS's own threads spin for
 * milliseconds after each product, on the cores the next ops need (the documents' CNNs on 16
 * threads: the step ran slower than on 4). The blocks depend on the thread count only, so a result
 * is the same from run to run at one count (float32 may differ in the last bits between counts:
 * the kernels are picked by size). */
static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static void blas_one_thread(void) { openblas_set_num_threads(1); }
void nn_cpu_blas_init(void) { pthread_once(&blas_once, blas_one_thread); }

typedef struct {
    nn_dtype dt;
    bool ta, tb;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t rb, cb, ncb; /* blocks of rb rows by cb columns of C, ncb of them across */
    double alpha, beta;
    const char *A, *B;
    char *C;
} gemm_job;

static void gemm_f32(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const float *A, int64_t lda, const float *B,
                     int64_t ldb, double beta, float *C, int64_t ldc)
{
    if (nn_dnnl_gemm(NN_F32, ta, tb, m, n, k, (float)alpha, A, lda, B, ldb, (float)beta, C, ldc)) return;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, (float)alpha, A,
                (int)lda, B, (int)ldb, (float)beta, C, (int)ldc);
}

/* A rows x cols matrix of 16-bit floats (element [i,j] at src[i*rs + j*cs]) to a dense row-major
 * float one, and back */
static void widen(float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs, nn_dtype dt)
{
    for (int64_t i = 0; i < rows; i++) nn_widen16(dst + i * cols, 1, src + i * rs, cs, cols, dt);
}

static void narrow(uint16_t *dst, const float *src, int64_t rows, int64_t cols, int64_t ld, nn_dtype dt)
{
    for (int64_t i = 0; i < rows; i++) nn_narrow16(dst + i * ld, 1, src + i * cols, 1, cols, dt);
}

/* float16/bfloat16 where oneDNN has no kernel for them: the block in float32, rounded back once */
static void gemm_16_in_f32(const gemm_job *j, int64_t m, int64_t n, const uint16_t *A, const uint16_t *B, uint16_t *C)
{
    int64_t k = j->k;
    float *fa = malloc((size_t)(m * k + k * n + m * n) * sizeof(float)), *fb = fa + m * k, *fc = fb + k * n;
    if (!fa) return; /* out of memory in a product: as BLAS, nothing to report it through; C keeps its contents */
    widen(fa, A, m, k, j->ta ? 1 : j->lda, j->ta ? j->lda : 1, j->dt);
    widen(fb, B, k, n, j->tb ? 1 : j->ldb, j->tb ? j->ldb : 1, j->dt);
    if (j->beta != 0) widen(fc, C, m, n, j->ldc, 1, j->dt);
    gemm_f32(false, false, m, n, k, j->alpha, fa, k, fb, n, j->beta, fc, n);
    narrow(C, fc, m, n, j->ldc, j->dt);
    free(fa);
}

/* C's rows [r0, r1) by columns [c0, c1) */
static void gemm_part(const gemm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    size_t es = nn_dtype_size(j->dt);
    const char *A = j->A + (j->ta ? r0 : r0 * j->lda) * (int64_t)es, *B = j->B + (j->tb ? c0 * j->ldb : c0) * (int64_t)es;
    char *C = j->C + (r0 * j->ldc + c0) * (int64_t)es;
    int64_t m = r1 - r0, n = c1 - c0;
    if (j->dt == NN_F64)
        cblas_dgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans, j->tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)j->k, j->alpha,
                    (const double *)A, (int)j->lda, (const double *)B, (int)j->ldb, j->beta, (double *)C, (int)j->ldc);
    else if (j->dt == NN_F32)
        gemm_f32(j->ta, j->tb, m, n, j->k, j->alpha, (const float *)A, j->lda, (const float *)B, j->ldb, j->beta, (float *)C, j->ldc);
    else if (!nn_dnnl_gemm(j->dt, j->ta, j->tb, m, n, j->k, (float)j->alpha, A, j->lda, B, j->ldb, (float)j->beta, C, j->ldc))
        gemm_16_in_f32(j, m, n, (const uint16_t *)A, (const uint16_t *)B, (uint16_t *)C);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static nn_status gemm_blocks(int64_t b, int64_t e, void *arg)
{
    const gemm_job *j = arg;
    for (int64_t i = b; i < e; i++) {
        int64_t r = i / j->ncb * j->rb, c = i % j->ncb * j->cb;
        gemm_part(j, r, min64(r + j->rb, j->m), c, min64(c + j->cb, j->n));
    }
    return NN_OK;
}


static int64_t round16(int64_t v) { return (v + 15) / 16 * 16; }

void nn_cpu_gemm(nn_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const void *A, int64_t lda, const void *B,
                 int64_t ldb, double beta, void *C, int64_t ldc)
{
    nn_cpu_blas_init();
    gemm_job j = {dt, ta, tb, m, n, k, lda, ldb, ldc, m, n, 1, alpha, beta, A, B, C};
    bool cols = n >= m;
    int64_t dim = cols ? n : m, other = cols ? m : n;
    double work = (double)m * (double)n * (double)k;
    int width = nn_parallel_width();
    if (width < 2 || work < 2 * GEMM_BLOCK_WORK || dim < 32) {
        gemm_part(&j, 0, m, 0, n);
        return;
    }
    /* blocks of a multiple of 16 columns (rows), about GEMM_BLOCK_WORK each, at least one a thread
     * and at most NN_CPU_BLAS_CALLERS (OpenBLAS has buffers for a fixed number of threads at once) */
    int64_t block = (int64_t)(GEMM_BLOCK_WORK / ((double)other * (double)k)) + 1, fair = (dim + width - 1) / width;
    if (block > fair) block = fair;
    if (block < (dim + NN_CPU_BLAS_CALLERS - 1) / NN_CPU_BLAS_CALLERS) block = (dim + NN_CPU_BLAS_CALLERS - 1) / NN_CPU_BLAS_CALLERS;
    int64_t rows = 1, colsn = 1, along = (dim + round16(block) - 1) / round16(block);
    if (cols) colsn = along;
    else rows = along;
    /* large both ways: one block a thread instead, cut rows by columns as near C's proportions as
     * the thread count allows, so that each block reads less of A and B (1024 x 1024 on 16 threads:
     * 4 x 4 blocks of 256 x 256 rather than 32 slices of 32) */
    int64_t total = width < NN_CPU_BLAS_CALLERS ? width : NN_CPU_BLAS_CALLERS;
    if (other >= 64 && along >= total) {
        double best = INFINITY, want = log((double)m / (double)n);
        for (int64_t r = 1; r <= total; r++) {
            if (total % r || r * 16 > m || total / r * 16 > n) continue;
            double miss = fabs(log((double)r / (double)(total / r)) - want);
            if (miss < best) best = miss, rows = r, colsn = total / r;
        }
    }
    j.rb = round16((m + rows - 1) / rows), j.cb = round16((n + colsn - 1) / colsn);
    j.ncb = (n + j.cb - 1) / j.cb;
    nn_parallel_for((m + j.rb - 1) / j.rb * j.ncb, 1, gemm_blocks, &j);
}

/* torch.get_num_threads: the CPU pool's size (engine/cpu/parallel.h); set_num_threads sets it */
int nn_cpu_num_threads(void) { return nn_parallel_threads(); }
void nn_cpu_set_num_threads(int n) { nn_parallel_set_threads(n); }
