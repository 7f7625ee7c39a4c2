/* The CPU convolution kernels: conv2d, conv2d_backward_input, conv2d_backward_weight.
 *
 * Per group, im2col lays the receptive fields of an image out as a [K, L] matrix
 * (K = Cg*kh*kw rows, L = oh*ow columns) and one GEMM does the rest:
 *   forward          out[n,g] (Og x L)  = W[g] (Og x K) @ col (K x L), bias preloaded into out
 *   backward input   col      (K x L)   = W[g]^T @ grad_out[n,g], then col2im adds col into grad_input
 *   backward weight  gW[g]    (Og x K) += grad_out[n,g] @ col^T, summed over the batch
 * Images smaller than MIN_COLS output pixels go several to a GEMM (see chunk_images): their
 * columns sit side by side and grad_out/out are regrouped to match. A 1x1, stride-1, unpadded
 * convolution of a dense image taken alone skips im2col: the image is col.
 * float32/float64 compute in their own type (cblas_sgemm/dgemm); float16/bfloat16 operands are
 * converted to float32 scratch copies and the result is rounded back on store.
 * The image operand (input, or grad_input) may have any strides; weight and grad_out are used in
 * place when contiguous and of the compute type, else packed once. Outputs are written in place
 * when contiguous and of the compute type.
 * Sizes come from the tensors' shapes: H, W from the input, oh, ow from the output (the frontend
 * computed them), so an output taller/wider than symmetric padding gives only reads more zeros past
 * the bottom/right edge. Scratch (the column buffer, at most MAX_COL_BYTES unless one image needs
 * more) is allocated per run of chunks and freed before returning. With several CPU threads the
 * batch is split over them (conv_job below). float32 goes to oneDNN first (conv_dnnl.c); these
 * kernels run what it does not take, float64 and the 16-bit types. */
#include <cblas.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "conv_dnnl.h"
#include "kernels.h"
#include "parallel.h"

typedef struct {
    int64_t N, C, H, W;   /* input */
    int64_t O, G, Cg, Og; /* output channels, groups, channels per group in/out */
    int64_t kh, kw, oh, ow;
    int64_t sh, sw, ph, pw, dh, dw;
    int64_t K, L; /* col rows (Cg*kh*kw) and columns (oh*ow) */
} geom;

/* xs: input [N,C,H,W], ws: weight [O,Cg,kh,kw], ys: output [N,O,oh,ow]; i: the op's i[0..6] */
static void geom_init(geom *g, const int64_t *xs, const int64_t *ws, const int64_t *ys, const int64_t *i)
{
    g->N = xs[0], g->C = xs[1], g->H = xs[2], g->W = xs[3];
    g->O = ws[0], g->Cg = ws[1], g->kh = ws[2], g->kw = ws[3];
    g->oh = ys[2], g->ow = ys[3];
    g->sh = i[0], g->sw = i[1], g->ph = i[2], g->pw = i[3], g->dh = i[4], g->dw = i[5], g->G = i[6] > 0 ? i[6] : 1;
    g->Og = g->O / g->G;
    g->K = g->Cg * g->kh * g->kw;
    g->L = g->oh * g->ow;
}

static nn_status geom_check(const nn_kargs *a, const geom *g)
{
    if (g->Cg * g->G != g->C || g->Og * g->G != g->O || g->sh < 1 || g->sw < 1 || g->dh < 1 || g->dw < 1 || g->ph < 0 || g->pw < 0)
        return nn_error(NN_ERR_ARG, "%s: inconsistent shapes or parameters", nn_op_name(a->op));
    if (g->K > INT_MAX || g->L > INT_MAX || g->Og > INT_MAX)
        return nn_error(NN_ERR_ARG, "%s: a matrix dimension exceeds the BLAS limit of %d", nn_op_name(a->op), INT_MAX);
    return NN_OK;
}

static bool pointwise(const geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 && g->oh == g->H && g->ow == g->W;
}

/* Does an image with strides s (c, h, w) lie densely as [C][H][W]? */
static bool dense_image(const int64_t *s, const geom *g)
{
    return (g->W == 1 || s[2] == 1) && (g->H == 1 || s[1] == g->W) && (g->C == 1 || s[0] == g->H * g->W);
}

static nn_dtype compute_type(nn_dtype dt)
{
    switch (dt) {
    case NN_F32:
    case NN_F16:
    case NN_BF16: return NN_F32;
    case NN_F64: return NN_F64;
    default: return NN_DTYPE_NONE;
    }
}

/* An operand in the compute type: data and element strides, borrowed or packed (owned). */
typedef struct {
    char *p;
    int64_t s[4];
    void *owned;
} operand;

/* Row-major copy of any tensor into dense cdt elements. */
static void pack_any(const nn_tensor *t, nn_dtype cdt, char *dst)
{
    int64_t idx[NN_MAX_DIMS] = {0}, n = nn_numel(t);
    size_t es = nn_dtype_size(t->dtype);
    const char *src = nn_data(t);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        double v = nn_load_f64(src + off * (int64_t)es, t->dtype);
        if (cdt == NN_F32) ((float *)dst)[k] = (float)v;
        else ((double *)dst)[k] = v;
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d]) break;
            idx[d] = 0;
        }
    }
}

static nn_status take(const nn_tensor *t, nn_dtype cdt, bool contiguous, operand *o)
{
    memset(o, 0, sizeof *o);
    if (t->dtype == cdt && (!contiguous || nn_is_contiguous(t))) {
        o->p = nn_data(t);
        for (int d = 0; d < t->ndim && d < 4; d++) o->s[d] = t->strides[d];
        return NN_OK;
    }
    int64_t n = nn_numel(t);
    o->owned = malloc((size_t)(n > 0 ? n : 1) * nn_dtype_size(cdt));
    if (!o->owned) return nn_error(NN_ERR_NOMEM, "out of memory packing a convolution operand");
    pack_any(t, cdt, o->owned);
    o->p = o->owned;
    nn_contiguous_strides(t->ndim < 4 ? t->ndim : 4, t->shape, o->s);
    return NN_OK;
}

/* Where to compute out: in place when contiguous and of the compute type, else a scratch buffer. */
static nn_status out_begin(const nn_tensor *out, nn_dtype cdt, operand *o)
{
    memset(o, 0, sizeof *o);
    if (out->dtype == cdt && nn_is_contiguous(out)) {
        o->p = nn_data(out);
        return NN_OK;
    }
    int64_t n = nn_numel(out);
    o->owned = malloc((size_t)(n > 0 ? n : 1) * nn_dtype_size(cdt));
    if (!o->owned) return nn_error(NN_ERR_NOMEM, "out of memory for a convolution result");
    o->p = o->owned;
    return NN_OK;
}

/* Store a scratch result into out (any strides and float dtype). */
static void out_end(nn_tensor *out, nn_dtype cdt, const operand *o)
{
    if (!o->owned) return;
    int64_t idx[NN_MAX_DIMS] = {0}, n = nn_numel(out);
    size_t es = nn_dtype_size(out->dtype);
    char *dst = nn_data(out);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < out->ndim; d++) off += idx[d] * out->strides[d];
        double v = cdt == NN_F32 ? ((const float *)o->p)[k] : ((const double *)o->p)[k];
        nn_store_f64(dst + off * (int64_t)es, out->dtype, v);
        for (int d = out->ndim - 1; d >= 0; d--) {
            if (++idx[d] < out->shape[d]) break;
            idx[d] = 0;
        }
    }
}

/* C (M x N, row-major, ldc) = beta*C + op(A) @ op(B) */
static void gemm(nn_dtype cdt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, const void *B, int64_t ldb,
                 double beta, void *C, int64_t ldc)
{
    if (M == 0 || N == 0) return;
    if (K == 0) { /* BLAS may skip scaling C when K is 0 */
        for (int64_t r = 0; r < M; r++)
            for (int64_t c = 0; c < N; c++) {
                if (cdt == NN_F32) ((float *)C)[r * ldc + c] = beta == 0 ? 0.0f : ((float *)C)[r * ldc + c] * (float)beta;
                else ((double *)C)[r * ldc + c] = beta == 0 ? 0.0 : ((double *)C)[r * ldc + c] * beta;
            }
        return;
    }
    nn_cpu_gemm(cdt, ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

/* The output columns [lo, hi) whose input column ox*s + off lies in [0, n). */
static void valid_range(int64_t count, int64_t s, int64_t off, int64_t n, int64_t *lo, int64_t *hi)
{
    int64_t l = off >= 0 ? 0 : (-off + s - 1) / s;
    int64_t h = n - off > 0 ? (n - off + s - 1) / s : 0;
    if (l > count) l = count;
    if (h > count) h = count;
    if (h < l) h = l;
    *lo = l, *hi = h;
}

/* Images per GEMM. A small image makes a GEMM too narrow for BLAS to run well (or on more than
 * one thread), so images of fewer than MIN_COLS output pixels are batched: a chunk of nb images
 * shares one column matrix [K, nb*L] (image b in columns b*L ..) of about MIN_COLS columns and
 * at most MAX_COL_BYTES. Larger images go one at a time, which avoids regrouping the output. */
#define MIN_COLS 1024
#define MAX_COL_BYTES ((int64_t)32 << 20)

static int64_t chunk_images(const geom *g, size_t es)
{
    if (g->L >= MIN_COLS || g->L == 0) return 1;
    int64_t per = g->K * g->L * (int64_t)es, b = (MIN_COLS + g->L - 1) / g->L;
    if (per > 0 && b * per > MAX_COL_BYTES) b = MAX_COL_BYTES / per;
    if (b > INT_MAX / g->L) b = INT_MAX / g->L;
    if (b > g->N) b = g->N;
    return b < 1 ? 1 : b;
}

/* One col row segment: ow outputs, zeros outside [lo, hi), the input read every step elements
 * from s (the input of output lo). Plain loops: images are narrow, and library calls per piece
 * cost more than the copying. */
static inline void row_f32(float *d, const float *s, int64_t ow, int64_t lo, int64_t hi, int64_t step)
{
    int64_t k = 0;
    for (; k < lo; k++) d[k] = 0;
    if (step == 1)
        for (; k < hi; k++) d[k] = s[k - lo];
    else
        for (; k < hi; k++) d[k] = s[(k - lo) * step];
    for (; k < ow; k++) d[k] = 0;
}

static inline void row_f64(double *d, const double *s, int64_t ow, int64_t lo, int64_t hi, int64_t step)
{
    int64_t k = 0;
    for (; k < lo; k++) d[k] = 0;
    if (step == 1)
        for (; k < hi; k++) d[k] = s[k - lo];
    else
        for (; k < hi; k++) d[k] = s[(k - lo) * step];
    for (; k < ow; k++) d[k] = 0;
}

/* col[(c*kh + i)*kw + j][oy*ow + ox] = x[c][oy*sh - ph + i*dh][ox*sw - pw + j*dw], 0 outside;
 * col rows are ld elements apart. x has element strides xs (c, h, w). */
static void im2col(const geom *g, const char *x, const int64_t *xs, char *col, int64_t ld, size_t es)
{
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++) {
                char *row = col + ((c * g->kh + i) * g->kw + j) * ld * (int64_t)es;
                int64_t xoff = j * g->dw - g->pw, lo, hi, step = g->sw * xs[2];
                valid_range(g->ow, g->sw, xoff, g->W, &lo, &hi);
                for (int64_t oy = 0; oy < g->oh; oy++) {
                    int64_t iy = oy * g->sh - g->ph + i * g->dh, l = lo, h = hi;
                    if (iy < 0 || iy >= g->H) l = h = 0;
                    int64_t soff = c * xs[0] + iy * xs[1] + (l * g->sw + xoff) * xs[2], doff = oy * g->ow;
                    if (es == 4) row_f32((float *)row + doff, (const float *)x + (l < h ? soff : 0), g->ow, l, h, step);
                    else row_f64((double *)row + doff, (const double *)x + (l < h ? soff : 0), g->ow, l, h, step);
                }
            }
}

/* The adjoint of im2col: every col entry (rows ld apart) is added into its input position of
 * the dense [Cg][H][W] image x (entries that fall in the padding are dropped). */
static void col2im(const geom *g, const char *col, int64_t ld, char *x, size_t es)
{
    for (int64_t c = 0; c < g->Cg; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++) {
                const char *row = col + ((c * g->kh + i) * g->kw + j) * ld * (int64_t)es;
                int64_t xoff = j * g->dw - g->pw, lo, hi;
                valid_range(g->ow, g->sw, xoff, g->W, &lo, &hi);
                if (lo == hi) continue;
                for (int64_t oy = 0; oy < g->oh; oy++) {
                    int64_t iy = oy * g->sh - g->ph + i * g->dh;
                    if (iy < 0 || iy >= g->H) continue;
                    int64_t n = hi - lo, doff = (c * g->H + iy) * g->W + lo * g->sw + xoff, soff = oy * g->ow + lo;
                    if (es == 4) {
                        float *t = (float *)x + doff;
                        const float *s = (const float *)row + soff;
                        for (int64_t k = 0; k < n; k++) t[k * g->sw] += s[k];
                    } else {
                        double *t = (double *)x + doff;
                        const double *s = (const double *)row + soff;
                        for (int64_t k = 0; k < n; k++) t[k * g->sw] += s[k];
                    }
                }
            }
}

/* Between the [nb][O][L] layout of an output (group gi's Og channels from channel c0 = gi*Og) and
 * the [Og][nb*L] layout of one GEMM result. */
static void gather_rows(char *dst, const char *src, const geom *g, int64_t nb, size_t es)
{
    for (int64_t o = 0; o < g->Og; o++)
        for (int64_t b = 0; b < nb; b++)
            memcpy(dst + (o * nb + b) * g->L * (int64_t)es, src + (b * g->O + o) * g->L * (int64_t)es, (size_t)g->L * es);
}

static void scatter_rows(char *dst, const char *src, const geom *g, int64_t nb, size_t es)
{
    for (int64_t o = 0; o < g->Og; o++)
        for (int64_t b = 0; b < nb; b++)
            memcpy(dst + (b * g->O + o) * g->L * (int64_t)es, src + (o * nb + b) * g->L * (int64_t)es, (size_t)g->L * es);
}

static void fill_row(char *p, int64_t n, double v, nn_dtype cdt)
{
    if (cdt == NN_F32)
        for (int64_t k = 0; k < n; k++) ((float *)p)[k] = (float)v;
    else
        for (int64_t k = 0; k < n; k++) ((double *)p)[k] = v;
}

/* The column buffer [K, nb*L] and, when images are batched, the [Og, nb*L] GEMM result. */
static nn_status scratch(const nn_kargs *a, const geom *g, int64_t nb, bool need_col, size_t es, char **col, char **aux)
{
    *col = *aux = NULL;
    if (g->N == 0) return NN_OK;
    size_t ncol = need_col ? (size_t)(g->K * nb * g->L) : 0, naux = nb > 1 ? (size_t)(g->Og * nb * g->L) : 0;
    if (!ncol && !naux) return NN_OK;
    char *p = malloc((ncol + naux) * es + 1);
    if (!p) return nn_error(NN_ERR_NOMEM, "%s: out of memory for a %lld x %lld column buffer", nn_op_name(a->op), (long long)g->K,
                            (long long)(nb * g->L));
    *col = p;
    *aux = naux ? p + ncol * es : NULL;
    return NN_OK;
}

static void release(operand *o, int n)
{
    for (int k = 0; k < n; k++) free(o[k].owned);
}

/* One call of a kernel: the batch goes in chunks of B images (one GEMM each per group), and the
 * chunks in nparts contiguous runs, one per thread of the CPU pool (parallel.h), each with its
 * own scratch. Runs write disjoint parts of the output, except in backward_weight, where run p > 0
 * sums its images' gradient into partial[p] and the runs are added up in order at the end (so
 * the result depends on the thread count only, not on timing). */
typedef struct conv_job conv_job;
typedef void (*chunk_fn)(const conv_job *j, int64_t n0, int64_t nb, char *col, char *aux, char *dst);
struct conv_job {
    const nn_kargs *a;
    geom g;
    nn_dtype cdt;
    size_t es;
    operand op[4];
    int64_t B, nchunks;
    int nparts;
    bool direct;
    chunk_fn chunk;
    char **partial;      /* backward_weight: each run's sum (run 0's is the output) */
};

static nn_status run_parts(int64_t pb, int64_t pe, void *arg)
{
    const conv_job *j = arg;
    for (int64_t p = pb; p < pe; p++) {
        int64_t c0 = j->nchunks * p / j->nparts, c1 = j->nchunks * (p + 1) / j->nparts;
        char *col, *aux;
        nn_status st = scratch(j->a, &j->g, j->B, !j->direct, j->es, &col, &aux);
        if (st) return st;
        for (int64_t c = c0; c < c1; c++) {
            int64_t n0 = c * j->B, nb = j->g.N - n0 < j->B ? j->g.N - n0 : j->B;
            j->chunk(j, n0, nb, col, aux, j->partial ? j->partial[p] : NULL);
        }
        free(col);
    }
    return NN_OK;
}

/* Most runs at once: each is a thread calling BLAS */
#define MAX_PARTS NN_CPU_BLAS_CALLERS

/* The weight gradient's runs: run 0 sums into first (the output), runs 1 .. nparts-1 into zeroed
 * buffers of bytes each, added up in order at the end. Returns the block to free (NULL: none
 * needed, or out of memory when nparts > 1). */
static char *partial_sums(int nparts, size_t bytes, char *first, char **partial)
{
    char *sums = nparts > 1 ? calloc((size_t)(nparts - 1), bytes ? bytes : 1) : NULL;
    partial[0] = first;
    for (int p = 1; sums && p < nparts; p++) partial[p] = sums + (size_t)(p - 1) * bytes;
    return sums;
}

/* Sets B, nchunks, nparts. With one run a large GEMM splits over the pool itself (nn_cpu_gemm);
 * with several, the chunks shrink so that every thread gets some. */
static void job_plan(conv_job *j)
{
    int64_t B = chunk_images(&j->g, j->es), N = j->g.N;
    int threads = nn_parallel_width();
    if (threads > MAX_PARTS) threads = MAX_PARTS;
    int64_t work = N * j->g.G * j->g.Og * j->g.K * j->g.L; /* multiply-adds */
    if (threads > 1 && N > 1 && work >= NN_PARALLEL_MIN * 16) {
        int64_t per = (N + threads - 1) / threads;
        if (B > per) B = per;
    }
    j->B = B;
    j->nchunks = N > 0 ? (N + B - 1) / B : 0;
    j->nparts = (int)(j->nchunks < threads ? j->nchunks : threads);
    if (j->nparts < 1 || work < NN_PARALLEL_MIN * 16) j->nparts = j->nchunks > 0 ? 1 : 0;
}

static nn_status job_run(conv_job *j)
{
    if (j->nparts == 0) return NN_OK;
    if (j->nparts == 1) return run_parts(0, 1, j);
    return nn_parallel_for(j->nparts, 1, run_parts, j);
}

/* ---- float32 and bfloat16 through oneDNN (conv_dnnl.c), split over the CPU pool, each part on
 * one OpenMP thread: no OpenMP team ever forms, whose threads by default spin for milliseconds
 * after each region on the cores the pool's next ops need (AlexNet's step on 16 threads, batch 8:
 * a max pool after a convolution took 3.1 ms instead of 0.7; bench/NOTES.md, session 28). The
 * parts are runs of images and, when there are fewer images than threads, blocks of channels as
 * well: of the output channels for the forward and the weight gradient, of the input channels for
 * the input gradient, of whole groups in a grouped convolution. A weight gradient summed over
 * several runs of images is summed in float32 (bfloat16's runs too, rounded once at the end). ---- */
enum { CHANNEL_BLOCK = 16, MAX_DNNL_PARTS = 2 * MAX_PARTS };

typedef struct {
    int dir;
    nn_dnnl_operand x, w, y; /* the whole tensors */
    const char *b;
    const int64_t *params;
    int64_t N, G, units;     /* channel blocks: units of CHANNEL_BLOCK channels, or of one group when G > 1 */
    int nb, nc;              /* parts: nb runs of images times nc ranges of channel blocks */
    char **partial;          /* backward weight: run r's sum, dense float32 (float32's run 0: the output) */
    bool widened;            /* bfloat16's partial sums: run 0 has one too, and the output is their rounded sum */
    bool *ok;
} dnnl_job;

static nn_dnnl_operand operand_of(const nn_tensor *t)
{
    nn_dnnl_operand o = {nn_data(t), t->dtype, {0}, {0}};
    for (int i = 0; i < 4; i++) o.shape[i] = t->shape[i], o.strides[i] = t->strides[i];
    return o;
}

/* [i0, i1) of dim */
static nn_dnnl_operand slice(const nn_dnnl_operand *t, int dim, int64_t i0, int64_t i1)
{
    nn_dnnl_operand s = *t;
    s.p += i0 * t->strides[dim] * (int64_t)nn_dtype_size(t->dt);
    s.shape[dim] = i1 - i0;
    return s;
}

static nn_status dnnl_parts(int64_t pb, int64_t pe, void *arg)
{
    const dnnl_job *j = arg;
    for (int64_t p = pb; p < pe; p++) {
        int64_t r = p / j->nc, c = p % j->nc;
        int64_t n0 = j->N * r / j->nb, n1 = j->N * (r + 1) / j->nb, u0 = j->units * c / j->nc, u1 = j->units * (c + 1) / j->nc;
        nn_dnnl_operand x = slice(&j->x, 0, n0, n1), y = slice(&j->y, 0, n0, n1), w = j->w;
        const char *b = j->b;
        size_t bes = nn_dtype_size(j->x.dt);
        int64_t params[7];
        memcpy(params, j->params, sizeof params);
        if (j->partial && (r > 0 || j->widened)) {
            w.p = j->partial[r], w.dt = NN_F32;
            nn_contiguous_strides(4, w.shape, w.strides);
        }
        if (j->G > 1) { /* groups [u0, u1) */
            int64_t Og = w.shape[0] / j->G, Cg = w.shape[1];
            x = slice(&x, 1, u0 * Cg, u1 * Cg), w = slice(&w, 0, u0 * Og, u1 * Og), y = slice(&y, 1, u0 * Og, u1 * Og);
            if (b) b += u0 * Og * (int64_t)bes;
            params[6] = u1 - u0;
        } else if (j->nc > 1 && j->dir == NN_DNNL_BWD_DATA) { /* input channels */
            int64_t c0 = u0 * CHANNEL_BLOCK, c1 = u1 * CHANNEL_BLOCK < x.shape[1] ? u1 * CHANNEL_BLOCK : x.shape[1];
            x = slice(&x, 1, c0, c1), w = slice(&w, 1, c0, c1);
        } else if (j->nc > 1) { /* output channels */
            int64_t c0 = u0 * CHANNEL_BLOCK, c1 = u1 * CHANNEL_BLOCK < w.shape[0] ? u1 * CHANNEL_BLOCK : w.shape[0];
            w = slice(&w, 0, c0, c1), y = slice(&y, 1, c0, c1);
            if (b) b += c0 * (int64_t)bes;
        }
        j->ok[p] = nn_dnnl_conv2d(j->dir, &x, &w, b, &y, params);
    }
    return NN_OK;
}

/* The weight gradient w (any strides) over its first dim [o0, o1): float32 += the dense sums of
 * runs 1 .. nb-1; bfloat16 = the sums of all runs, rounded */
static nn_status add_partials(int64_t o0, int64_t o1, void *arg)
{
    const dnnl_job *j = arg;
    const nn_dnnl_operand *out = &j->w;
    const int64_t *n = out->shape, *s = out->strides, per = n[1] * n[2] * n[3];
    for (int64_t a = o0; a < o1; a++)
        for (int64_t b = 0, k = a * per; b < n[1]; b++)
            for (int64_t c = 0; c < n[2]; c++)
                for (int64_t d = 0; d < n[3]; d++, k++) {
                    int64_t at = a * s[0] + b * s[1] + c * s[2] + d * s[3];
                    float sum = j->widened ? 0.0f : ((float *)out->p)[at];
                    for (int r = j->widened ? 0 : 1; r < j->nb; r++) sum += ((const float *)j->partial[r])[k];
                    if (j->widened) ((uint16_t *)out->p)[at] = nn_float_to_bf16(sum);
                    else ((float *)out->p)[at] = sum;
                }
    return NN_OK;
}

/* The convolution through oneDNN; false: not done (the own kernels then run) */
static bool dnnl_conv(int dir, const nn_kargs *a, const nn_tensor *x, const nn_tensor *w, const nn_tensor *b, const nn_tensor *y)
{
    if (!nn_dnnl_accepts(x, w, b, y)) return false;
    int64_t G = a->i[6] > 1 ? a->i[6] : 1, split = dir == NN_DNNL_BWD_DATA ? x->shape[1] : w->shape[0];
    dnnl_job j = {.dir = dir, .x = operand_of(x), .w = operand_of(w), .y = operand_of(y), .b = b ? (const char *)nn_data(b) : NULL, .params = a->i,
                  .N = x->shape[0], .G = G, .units = G > 1 ? G : (split + CHANNEL_BLOCK - 1) / CHANNEL_BLOCK, .nb = 1, .nc = 1};
    int width = nn_parallel_width(), threads = width < MAX_PARTS ? width : MAX_PARTS;
    double work = (double)nn_numel(y) * (double)(w->shape[1] * w->shape[2] * w->shape[3]); /* multiply-adds */
    if (work >= NN_PARALLEL_MIN * 16.0 && threads > 1) {
        j.nb = (int)(j.N < threads ? j.N : threads);
        int64_t nc = j.nb < threads ? (threads + j.nb - 1) / j.nb : 1;
        j.nc = (int)(nc < j.units ? nc : j.units);
    }
    bool ok[MAX_DNNL_PARTS] = {false}, all = true;
    char *partial[MAX_PARTS + 1] = {0}, *sums = NULL;
    if (dir == NN_DNNL_BWD_WEIGHTS && j.nb > 1) {
        j.widened = w->dtype != NN_F32; /* partial_sums' run 0 is then one more float32 buffer */
        if (!(sums = partial_sums(j.nb + j.widened, (size_t)nn_numel(w) * sizeof(float), NULL, partial))) return false;
        j.partial = partial + j.widened;
    }
    j.ok = ok;
    int parts = j.nb * j.nc;
    nn_status st = parts > 1 ? nn_parallel_for(parts, 1, dnnl_parts, &j) : dnnl_parts(0, 1, &j);
    for (int p = 0; p < parts; p++) all = all && ok[p];
    if (sums && all && !st) {
        int64_t per = nn_numel(w) / w->shape[0], grain = NN_PARALLEL_MIN / (per * (j.nb - 1)) + 1;
        st = nn_parallel_for(w->shape[0], grain, add_partials, &j);
    }
    if (st) nn_clear_error();
    free(sums);
    return all && !st;
}

static void forward_chunk(const conv_job *j, int64_t n0, int64_t nb, char *col, char *aux, char *unused)
{
    (void)unused;
    const geom *g = &j->g;
    size_t es = j->es;
    int64_t ld = nb * g->L;
    for (int64_t gi = 0; gi < g->G; gi++) {
        char *yg = j->op[3].p + (n0 * g->O + gi * g->Og) * g->L * (int64_t)es, *C = nb > 1 ? aux : yg;
        const char *wg = j->op[1].p + gi * g->Og * g->K * (int64_t)es, *Bm = col;
        double beta = 0;
        if (j->op[2].p) {
            for (int64_t o = 0; o < g->Og; o++) {
                int64_t bo = (gi * g->Og + o) * j->op[2].s[0];
                fill_row(C + o * ld * (int64_t)es, ld,
                         j->cdt == NN_F32 ? ((const float *)j->op[2].p)[bo] : ((const double *)j->op[2].p)[bo], j->cdt);
            }
            beta = 1;
        }
        for (int64_t k = 0; k < nb; k++) {
            const char *xg = j->op[0].p + ((n0 + k) * j->op[0].s[0] + gi * g->Cg * j->op[0].s[1]) * (int64_t)es;
            if (j->direct) Bm = xg;
            else im2col(g, xg, j->op[0].s + 1, col + k * g->L * (int64_t)es, ld, es);
        }
        gemm(j->cdt, false, false, g->Og, ld, g->K, wg, g->K, Bm, ld, beta, C, ld);
        if (nb > 1) scatter_rows(yg, aux, g, nb, es);
    }
}

nn_status nn_cpu_conv2d(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *w = a->in[1], *b = a->nin > 2 ? a->in[2] : NULL, *y = a->out[0];
    nn_dtype cdt = compute_type(y->dtype);
    if (cdt == NN_DTYPE_NONE || x->dtype != y->dtype || w->dtype != y->dtype) return nn_not_implemented(a, y->dtype);
    if (dnnl_conv(NN_DNNL_FWD, a, x, w, b, y)) return NN_OK;
    conv_job j = {.a = a, .cdt = cdt, .es = nn_dtype_size(cdt), .chunk = forward_chunk};
    geom_init(&j.g, x->shape, w->shape, y->shape, a->i);
    nn_status st = geom_check(a, &j.g);
    if (st) return st;
    if ((st = take(x, cdt, false, &j.op[0])) || (st = take(w, cdt, true, &j.op[1])) || (b && (st = take(b, cdt, false, &j.op[2]))) ||
        (st = out_begin(y, cdt, &j.op[3])))
        goto done;
    job_plan(&j);
    j.direct = j.B == 1 && pointwise(&j.g) && dense_image(j.op[0].s + 1, &j.g); /* the image itself is col */
    if (!(st = job_run(&j))) out_end(y, cdt, &j.op[3]);
done:
    release(j.op, 4);
    return st;
}

static void backward_input_chunk(const conv_job *j, int64_t n0, int64_t nb, char *col, char *aux, char *unused)
{
    (void)unused;
    const geom *g = &j->g;
    size_t es = j->es;
    int64_t ld = nb * g->L;
    for (int64_t gi = 0; gi < g->G; gi++) {
        const char *gog = j->op[0].p + (n0 * g->O + gi * g->Og) * g->L * (int64_t)es, *A = gog;
        const char *wg = j->op[1].p + gi * g->Og * g->K * (int64_t)es;
        char *gxg = j->op[2].p + (n0 * g->C + gi * g->Cg) * g->H * g->W * (int64_t)es;
        if (nb > 1) {
            gather_rows(aux, gog, g, nb, es);
            A = aux;
        }
        gemm(j->cdt, true, false, g->K, ld, g->Og, wg, g->K, A, ld, 0, j->direct ? gxg : col, ld);
        if (!j->direct)
            for (int64_t k = 0; k < nb; k++) col2im(g, col + k * g->L * (int64_t)es, ld, gxg + k * g->C * g->H * g->W * (int64_t)es, es);
    }
}

nn_status nn_cpu_conv2d_backward_input(const nn_kargs *a)
{
    nn_tensor *go = a->in[0], *w = a->in[1], *gx = a->out[0];
    nn_dtype cdt = compute_type(gx->dtype);
    if (cdt == NN_DTYPE_NONE || go->dtype != gx->dtype || w->dtype != gx->dtype) return nn_not_implemented(a, gx->dtype);
    if (dnnl_conv(NN_DNNL_BWD_DATA, a, gx, w, NULL, go)) return NN_OK;
    conv_job j = {.a = a, .cdt = cdt, .es = nn_dtype_size(cdt), .chunk = backward_input_chunk};
    geom_init(&j.g, gx->shape, w->shape, go->shape, a->i);
    nn_status st = geom_check(a, &j.g);
    if (st) return st;
    if ((st = take(go, cdt, true, &j.op[0])) || (st = take(w, cdt, true, &j.op[1])) || (st = out_begin(gx, cdt, &j.op[2]))) goto done;
    job_plan(&j);
    j.direct = j.B == 1 && pointwise(&j.g); /* the GEMM writes grad_input itself */
    if (!j.direct) memset(j.op[2].p, 0, (size_t)nn_numel(gx) * j.es);
    if (!(st = job_run(&j))) out_end(gx, cdt, &j.op[2]);
done:
    release(j.op, 3);
    return st;
}

/* dst: the run's sum of grad_weight (zeroed beforehand) */
static void backward_weight_chunk(const conv_job *j, int64_t n0, int64_t nb, char *col, char *aux, char *dst)
{
    const geom *g = &j->g;
    size_t es = j->es;
    int64_t ld = nb * g->L;
    for (int64_t gi = 0; gi < g->G; gi++) {
        const char *gog = j->op[0].p + (n0 * g->O + gi * g->Og) * g->L * (int64_t)es, *A = gog, *Bm = col;
        char *gwg = dst + gi * g->Og * g->K * (int64_t)es;
        if (nb > 1) {
            gather_rows(aux, gog, g, nb, es);
            A = aux;
        }
        for (int64_t k = 0; k < nb; k++) {
            const char *xg = j->op[1].p + ((n0 + k) * j->op[1].s[0] + gi * g->Cg * j->op[1].s[1]) * (int64_t)es;
            if (j->direct) Bm = xg;
            else im2col(g, xg, j->op[1].s + 1, col + k * g->L * (int64_t)es, ld, es);
        }
        gemm(j->cdt, false, true, g->Og, g->K, ld, A, ld, Bm, ld, 1, gwg, g->K);
    }
}

nn_status nn_cpu_conv2d_backward_weight(const nn_kargs *a)
{
    nn_tensor *go = a->in[0], *x = a->in[1], *gw = a->out[0];
    nn_dtype cdt = compute_type(gw->dtype);
    if (cdt == NN_DTYPE_NONE || go->dtype != gw->dtype || x->dtype != gw->dtype) return nn_not_implemented(a, gw->dtype);
    if (dnnl_conv(NN_DNNL_BWD_WEIGHTS, a, x, gw, NULL, go)) return NN_OK;
    conv_job j = {.a = a, .cdt = cdt, .es = nn_dtype_size(cdt), .chunk = backward_weight_chunk};
    geom_init(&j.g, x->shape, gw->shape, go->shape, a->i);
    nn_status st = geom_check(a, &j.g);
    if (st) return st;
    char *partial[MAX_PARTS] = {0}, *sums = NULL;
    if ((st = take(go, cdt, true, &j.op[0])) || (st = take(x, cdt, false, &j.op[1])) || (st = out_begin(gw, cdt, &j.op[2]))) goto done;
    job_plan(&j);
    j.direct = j.B == 1 && pointwise(&j.g) && dense_image(j.op[1].s + 1, &j.g);
    size_t bytes = (size_t)nn_numel(gw) * j.es;
    if (!(sums = partial_sums(j.nparts, bytes, j.op[2].p, partial)) && j.nparts > 1) {
        st = nn_error(NN_ERR_NOMEM, "%s: out of memory for %d partial gradients", nn_op_name(a->op), j.nparts - 1);
        goto done;
    }
    j.partial = partial;
    memset(j.op[2].p, 0, bytes);
    if ((st = job_run(&j))) goto done;
    int64_t n = nn_numel(gw);
    for (int p = 1; p < j.nparts; p++) {
        if (cdt == NN_F32)
            for (int64_t k = 0; k < n; k++) ((float *)j.op[2].p)[k] += ((const float *)partial[p])[k];
        else
            for (int64_t k = 0; k < n; k++) ((double *)j.op[2].p)[k] += ((const double *)partial[p])[k];
    }
    out_end(gw, cdt, &j.op[2]);
done:
    free(sums);
    release(j.op, 3);
    return st;
}
