/* The default random generator and the random frontends.
 *
 * The generator is (seed, offset) for counter-based Philox4x32-10: a fill of n
 * elements reserves the counters [offset, offset + n), and element j (row-major
 * logical order of the output) is computed from philox(key = seed, counter =
 * offset + j) alone, so the numbers depend neither on memory layout nor on how
 * the work is split, and a CUDA kernel can produce the same ones. */
#include <math.h>
#include <pthread.h>

#include "backend.h"
#include "complex_ops.h"
#include "ops.h"

#define DEFAULT_SEED 67280421310721ULL

static pthread_mutex_t gen_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t gen_seed = DEFAULT_SEED, gen_offset;

void nn_manual_seed(uint64_t seed)
{
    pthread_mutex_lock(&gen_lock);
    gen_seed = seed;
    gen_offset = 0;
    pthread_mutex_unlock(&gen_lock);
}

uint64_t nn_initial_seed(void)
{
    pthread_mutex_lock(&gen_lock);
    uint64_t s = gen_seed;
    pthread_mutex_unlock(&gen_lock);
    return s;
}

void nn_rng_state(uint64_t *seed, uint64_t *offset)
{
    pthread_mutex_lock(&gen_lock);
    *seed = gen_seed;
    *offset = gen_offset;
    pthread_mutex_unlock(&gen_lock);
}

void nn_set_rng_state(uint64_t seed, uint64_t offset)
{
    pthread_mutex_lock(&gen_lock);
    gen_seed = seed;
    gen_offset = offset;
    pthread_mutex_unlock(&gen_lock);
}

static _Thread_local nn_generator *in_use;

nn_generator *nn_use_generator(nn_generator *g)
{
    nn_generator *prev = in_use;
    in_use = g;
    return prev;
}

uint64_t nn_philox_reserve(uint64_t n, uint64_t *offset)
{
    if (in_use) {
        *offset = in_use->offset;
        in_use->offset += n;
        return in_use->seed;
    }
    pthread_mutex_lock(&gen_lock);
    uint64_t s = gen_seed;
    *offset = gen_offset;
    gen_offset += n;
    pthread_mutex_unlock(&gen_lock);
    return s;
}

uint64_t nn_dropout_blocks(int64_t n, nn_dtype dt)
{
    int per = dt == NN_F64 ? 2 : 4;
    return ((uint64_t)n + per - 1) / per;
}

/* i[0] low, i[1] seed, i[2] offset, i[3] high (see ops.def) */
static nn_status random_fill(nn_op op, nn_tensor *t, double f0, double f1, int64_t low, int64_t high)
{
    uint64_t n = op == NN_OP_dropout_noise ? nn_dropout_blocks(nn_numel(t), t->dtype) : (uint64_t)nn_numel(t);
    uint64_t offset, seed = nn_philox_reserve(n, &offset);
    nn_kargs a = {.op = op, .out = {t}};
    a.f[0] = f0;
    a.f[1] = f1;
    a.i[0] = low;
    a.i[1] = (int64_t)seed;
    a.i[2] = (int64_t)offset;
    a.i[3] = high;
    return nn_dispatch(&a);
}

static nn_status need_float(const char *fn, nn_dtype dt)
{
    if (nn_dtype_is_float(dt)) return NN_OK;
    return nn_error(NN_ERR_DTYPE, "%s: expected a floating point dtype, but got %s", fn, nn_dtype_name(dt));
}

static nn_status check_uniform(const char *fn, nn_tensor *t, double lo, double hi)
{
    if (need_float(fn, t->dtype)) return nn_last_status();
    if (!isfinite(lo) || !isfinite(hi))
        return nn_error(NN_ERR_ARG, "%s: uniform_ expects from and to to be finite, but found from=%g and to=%g", fn, lo, hi);
    if (lo > hi)
        return nn_error(NN_ERR_ARG, "%s: uniform_ expects to return a [from, to) range, but found from=%g > to=%g", fn, lo, hi);
    return NN_OK;
}

static nn_status check_normal(const char *fn, nn_tensor *t, double std)
{
    if (need_float(fn, t->dtype)) return nn_last_status();
    if (!(std >= 0)) return nn_error(NN_ERR_ARG, "%s: normal expects std >= 0.0, but found std %g", fn, std);
    return NN_OK;
}

nn_status nn_uniform_(nn_tensor *t, double lo, double hi)
{
    nn_status s = check_uniform("uniform_", t, lo, hi);
    if (!s) s = random_fill(NN_OP_uniform, t, lo, hi, 0, 0);
    if (!s) nn_bump_version(t);
    return s;
}

nn_status nn_normal_(nn_tensor *t, double mean, double std)
{
    nn_status s = check_normal("normal_", t, std);
    if (!s) s = random_fill(NN_OP_normal, t, mean, std, 0, 0);
    if (!s) nn_bump_version(t);
    return s;
}

nn_status nn_dropout_noise_(nn_tensor *t, double keep)
{
    nn_status s = need_float("dropout", t->dtype);
    if (!s && !(keep > 0 && keep <= 1)) s = nn_error(NN_ERR_ARG, "dropout: the keep probability must be in (0, 1], but got %g", keep);
    if (!s) s = random_fill(NN_OP_dropout_noise, t, keep, 1.0 / keep, 0, 0);
    if (!s) nn_bump_version(t);
    return s;
}

/* A new tensor filled by op; fn names the frontend in messages. */
static nn_tensor *make_random(const char *fn, nn_op op, int ndim, const int64_t *shape, nn_dtype dt, nn_device dev, double f0,
                              double f1, int64_t low, int64_t high)
{
    if (dt == NN_DTYPE_NONE) dt = op == NN_OP_randint ? NN_I64 : nn_default_dtype();
    if (op != NN_OP_randint && need_float(fn, dt)) return NULL;
    nn_tensor *t = nn_empty(ndim, shape, dt, dev);
    if (!t) return NULL;
    nn_status s = NN_OK;
    if (op == NN_OP_uniform) s = check_uniform(fn, t, f0, f1);
    else if (op == NN_OP_normal) s = check_normal(fn, t, f1);
    if (!s) s = random_fill(op, t, f0, f1, low, high);
    if (s) {
        nn_release(t);
        return NULL;
    }
    return t;
}

nn_tensor *nn_rand(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    if (nn_dtype_is_complex(dt)) return nn_complex_random(false, ndim, shape, dt, dev);
    return make_random("rand", NN_OP_uniform, ndim, shape, dt, dev, 0, 1, 0, 0);
}

nn_tensor *nn_randn(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    if (nn_dtype_is_complex(dt)) return nn_complex_random(true, ndim, shape, dt, dev);
    return make_random("randn", NN_OP_normal, ndim, shape, dt, dev, 0, 1, 0, 0);
}

nn_tensor *nn_normal(double mean, double std, int ndim, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    return make_random("normal", NN_OP_normal, ndim, shape, dt, dev, mean, std, 0, 0);
}

nn_tensor *nn_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, nn_dtype dt, nn_device dev)
{
    if (low >= high) {
        nn_error(NN_ERR_ARG, "randint: random_ expects 'from' to be less than 'to', but got from=%lld >= to=%lld", (long long)low,
                 (long long)high);
        return NULL;
    }
    if (dt == NN_DTYPE_NONE) dt = NN_I64;
    int64_t min = INT64_MIN, max = INT64_MAX; /* of the dtype: the values drawn are in [low, high - 1] */
    nn_dtype_int_range(dt, &min, &max);
    if (low < min || high - 1 > max) {
        nn_error(NN_ERR_ARG, "randint: the range [%lld, %lld) does not fit in dtype %s", (long long)low, (long long)high,
                 nn_dtype_name(dt));
        return NULL;
    }
    return make_random("randint", NN_OP_randint, ndim, shape, dt, dev, 0, 0, low, high);
}
