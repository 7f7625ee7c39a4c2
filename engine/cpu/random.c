/* CPU random fills: uniform, normal, randint from Philox4x32-10.
 *
 * Element j of the output, in row-major logical order whatever its strides,
 * takes one Philox block with counter {lo32(offset+j), hi32(offset+j), 0, 0}
 * and key {lo32(seed), hi32(seed)} (words w0..w3):
 *   uniform  float64: u = ((w0 << 32 | w1) >> 11) * 2^-53; other floats: u = (w0 >> 8) * 2^-24;
 *            value lo + u * (hi - lo), and a value that rounds to hi becomes lo (as PyTorch's CUDA does)
 *   normal   Box-Muller on u1 = 1 - u (u from w0[,w1] as above), u2 (from w1, or w2,w3 for float64):
 *            mean + std * sqrt(-2 ln u1) * cos(2 pi u2)
 *   randint  r = range <= 2^32 ? w0 % range : (w0 << 32 | w1) % range; value low + r
 * except dropout's draws (dropout_noise, dropout), four to a block (two for float64): element j's u
 * is from block offset + j / 4, word j % 4, as (w >> 8) * 2^-24 (float64: block offset + j / 2, words
 * 2(j % 2) and 2(j % 2) + 1, as the 53 bits above); dropout_noise is 1 / keep where u < keep, else 0 */
#include <math.h>
#include <string.h>

#include "iter.h"
#include "kernels.h"

#define M0 0xD2511F53u
#define M1 0xCD9E8D57u
#define W0 0x9E3779B9u
#define W1 0xBB67AE85u

void nn_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r) k0 += W0, k1 += W1;
        uint64_t p0 = (uint64_t)M0 * c0, p1 = (uint64_t)M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0, c1 = (uint32_t)p1, c2 = n2, c3 = (uint32_t)p0;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

typedef struct {
    nn_op op;
    nn_dtype dt;
    uint32_t key[2];
    uint64_t counter;  /* of the next element */
    double a, b;       /* uniform: lo, hi; normal: mean, std */
    int64_t low;       /* randint */
    uint64_t range;
} rng_ctx;

static inline double u53(uint32_t hi, uint32_t lo) { return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53; }
static inline double u24(uint32_t w) { return (double)(w >> 8) * 0x1p-24; }

static inline void store(char *p, nn_dtype dt, double v)
{
    if (dt == NN_F32) *(float *)p = (float)v;
    else if (dt == NN_F64) *(double *)p = v;
    else nn_store_f64(p, dt, v);
}

/* Blocks for the next m (<= LANES) counters into w[word][lane]. LANES blocks are computed in
 * lockstep, which the CPU overlaps (one block alone is a chain of dependent multiplies). */
#define LANES 8
static void blocks(rng_ctx *c, int m, uint32_t w[4][LANES])
{
    uint64_t ctr = c->counter;
    c->counter += (uint64_t)m;
    if (m < LANES) {
        for (int l = 0; l < m; l++) {
            uint32_t o[4];
            nn_philox4x32_10((const uint32_t[4]){(uint32_t)(ctr + l), (uint32_t)((ctr + l) >> 32), 0, 0}, c->key, o);
            w[0][l] = o[0], w[1][l] = o[1], w[2][l] = o[2], w[3][l] = o[3];
        }
        return;
    }
    uint32_t c0[LANES], c1[LANES], c2[LANES] = {0}, c3[LANES] = {0}, k0 = c->key[0], k1 = c->key[1];
    for (int l = 0; l < LANES; l++) c0[l] = (uint32_t)(ctr + l), c1[l] = (uint32_t)((ctr + l) >> 32);
    for (int r = 0; r < 10; r++) {
        if (r) k0 += W0, k1 += W1;
        for (int l = 0; l < LANES; l++) {
            uint64_t p0 = (uint64_t)M0 * c0[l], p1 = (uint64_t)M1 * c2[l];
            uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;
            c0[l] = n0, c1[l] = (uint32_t)p1, c2[l] = n2, c3[l] = (uint32_t)p0;
        }
    }
    memcpy(w[0], c0, sizeof c0), memcpy(w[1], c1, sizeof c1), memcpy(w[2], c2, sizeof c2), memcpy(w[3], c3, sizeof c3);
}

/* Each row walks its n elements in groups of LANES: `body` computes one element from lane l. */
#define FOR_GROUPS(body)                                                  \
    uint32_t w[4][LANES];                                                 \
    for (int64_t i = 0; i < n; i += LANES) {                              \
        int m = n - i < LANES ? (int)(n - i) : LANES;                     \
        blocks(c, m, w);                                                  \
        for (int l = 0; l < m; l++, p += stride[0]) { body }              \
    }

static void row_uniform(char **ptr, const int64_t *stride, int64_t n, void *vctx)
{
    rng_ctx *c = vctx;
    char *p = ptr[0];
    if (c->dt == NN_F32) { /* the common case, without the generic store */
        float lo = (float)c->a, hi = (float)c->b;
        FOR_GROUPS({
            float v = (float)(c->a + u24(w[0][l]) * (c->b - c->a));
            *(float *)p = v >= hi && hi > lo ? lo : v;
        })
        return;
    }
    bool wide = c->dt == NN_F64;
    FOR_GROUPS({
        double u = wide ? u53(w[0][l], w[1][l]) : u24(w[0][l]);
        store(p, c->dt, c->a + u * (c->b - c->a));
        if (nn_load_f64(p, c->dt) >= c->b && c->b > c->a) store(p, c->dt, c->a);
    })
}

/* Dropout's draws (see the top): drop_u(d, j) is element j's u; the last block is kept for the next */
typedef struct {
    uint32_t key[2];
    uint64_t offset;
    bool wide;
    int64_t block; /* the block in w, -1: none yet */
    uint32_t w[4];
} drop_draws;

static double drop_u(drop_draws *d, int64_t j)
{
    int per = d->wide ? 2 : 4;
    int64_t b = j / per;
    if (b != d->block) {
        uint64_t ctr = d->offset + (uint64_t)b;
        uint32_t c[4] = {(uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0};
        nn_philox4x32_10(c, d->key, d->w);
        d->block = b;
    }
    int l = (int)(j % per);
    return d->wide ? u53(d->w[2 * l], d->w[2 * l + 1]) : u24(d->w[l]);
}

static drop_draws drop_draws_of(uint64_t seed, uint64_t offset, nn_dtype dt)
{
    return (drop_draws){.key = {(uint32_t)seed, (uint32_t)(seed >> 32)}, .offset = offset, .wide = dt == NN_F64, .block = -1};
}

typedef struct {
    drop_draws d;
    int64_t next; /* the logical index of the row's first element */
    nn_dtype dt;
    double keep, value;
} noise_ctx;

static void row_dropout_noise(char **ptr, const int64_t *stride, int64_t n, void *vctx)
{
    noise_ctx *c = vctx;
    char *p = ptr[0];
    for (int64_t i = 0; i < n; i++, p += stride[0]) store(p, c->dt, drop_u(&c->d, c->next++) < c->keep ? c->value : 0.0);
}

static void row_normal(char **ptr, const int64_t *stride, int64_t n, void *vctx)
{
    rng_ctx *c = vctx;
    char *p = ptr[0];
    bool wide = c->dt == NN_F64;
    FOR_GROUPS({
        double u1 = 1.0 - (wide ? u53(w[0][l], w[1][l]) : u24(w[0][l]));
        double u2 = wide ? u53(w[2][l], w[3][l]) : u24(w[1][l]);
        store(p, c->dt, c->a + c->b * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
    })
}

static void row_randint(char **ptr, const int64_t *stride, int64_t n, void *vctx)
{
    rng_ctx *c = vctx;
    char *p = ptr[0];
    bool integral = nn_dtype_is_integral(c->dt);
    FOR_GROUPS({
        uint64_t r = c->range <= (1ull << 32) ? w[0][l] % c->range : ((((uint64_t)w[0][l] << 32) | w[1][l]) % c->range);
        int64_t v = (int64_t)((uint64_t)c->low + r);
        if (c->dt == NN_I64) *(int64_t *)p = v;
        else if (integral) nn_store_i64(p, c->dt, v);
        else store(p, c->dt, (double)v);
    })
}

nn_status nn_cpu_random(const nn_kargs *a)
{
    nn_tensor *out = a->out[0];
    if (a->op != NN_OP_randint && !nn_dtype_is_float(out->dtype)) return nn_not_implemented(a, out->dtype);
    uint64_t seed = (uint64_t)a->i[1];
    if (a->op == NN_OP_dropout_noise) {
        noise_ctx c = {.d = drop_draws_of(seed, (uint64_t)a->i[2], out->dtype), .dt = out->dtype, .keep = a->f[0], .value = a->f[1]};
        nn_iter it;
        nn_iter_init_logical(&it, 1, &out);
        nn_iter_run(&it, row_dropout_noise, &c);
        return NN_OK;
    }
    static const nn_iter_row rows[] = {[NN_OP_uniform] = row_uniform, [NN_OP_normal] = row_normal, [NN_OP_randint] = row_randint};
    if ((size_t)a->op >= sizeof rows / sizeof *rows || !rows[a->op]) return nn_not_implemented(a, out->dtype);
    rng_ctx c = {
        .op = a->op, .dt = out->dtype, .key = {(uint32_t)seed, (uint32_t)(seed >> 32)}, .counter = (uint64_t)a->i[2],
        .a = a->f[0], .b = a->f[1], .low = a->i[0], .range = (uint64_t)a->i[3] - (uint64_t)a->i[0],
    };
    /* nn_iter_init_logical keeps the dims in order (it only drops size-1 dims and merges contiguous
     * ones), so its rows come in row-major logical order and the counter advances with the logical index */
    nn_iter it;
    nn_iter_init_logical(&it, 1, &out);
    nn_iter_run(&it, rows[a->op], &c);
    return NN_OK;
}

/* dropout (ops.def): x, y and mask contiguous; element j's draw as dropout_noise's. y = x * (scale or 0),
 * the scale 1 / keep a value of the data's dtype, as the noise was
 * as x * noise was (a dropped inf or nan gives nan); a product of two values of dt is exact in double, so
 * rounding it once to dt gives dt's own product. */
nn_status nn_cpu_dropout(const nn_kargs *a)
{
    nn_tensor *y = a->out[0], *mask = a->out[1], *x = a->in[0];
    nn_dtype dt = x->dtype;
    if (!nn_dtype_is_float(dt)) return nn_not_implemented(a, dt);
    drop_draws d = drop_draws_of((uint64_t)a->i[1], (uint64_t)a->i[2], dt);
    const double keep = a->f[0], scale = nn_as_dtype_value(1.0 / keep, dt);
    const size_t es = nn_dtype_size(dt);
    const char *px = nn_data(x);
    char *py = nn_data(y);
    uint8_t *pm = nn_data(mask);
    int64_t n = nn_numel(x);
    for (int64_t j = 0; j < n; j++) {
        bool kept = drop_u(&d, j) < keep;
        pm[j] = kept;
        if (dt == NN_F32) ((float *)py)[j] = ((const float *)px)[j] * (kept ? (float)scale : 0.0f);
        else store(py + j * es, dt, nn_load_f64(px + j * es, dt) * (kept ? scale : 0.0));
    }
    return NN_OK;
}

nn_status nn_cpu_dropout_backward(const nn_kargs *a)
{
    nn_tensor *gi = a->out[0], *g = a->in[0], *mask = a->in[1];
    nn_dtype dt = g->dtype;
    if (!nn_dtype_is_float(dt)) return nn_not_implemented(a, dt);
    const double scale = nn_as_dtype_value(a->f[0], dt);
    const size_t es = nn_dtype_size(dt);
    const char *pg = nn_data(g);
    const uint8_t *pm = nn_data(mask);
    char *po = nn_data(gi);
    int64_t n = nn_numel(g);
    for (int64_t j = 0; j < n; j++) {
        if (dt == NN_F32) ((float *)po)[j] = ((const float *)pg)[j] * (pm[j] ? (float)scale : 0.0f);
        else store(po + j * es, dt, nn_load_f64(pg + j * es, dt) * (pm[j] ? scale : 0.0));
    }
    return NN_OK;
}
