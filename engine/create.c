/* Creation functions: zeros, ones, full, arange, linspace, eye. Outputs are
 * filled by the backend's fill/arange/copy kernels. */
#include <math.h>

#include "backend.h"
#include "ops.h"

/* PyTorch refuses a fill value that overflows the dtype ("value cannot be converted ... without overflow"). */
static nn_status check_value(const char *fn, double v, nn_dtype dt)
{
    double lo, hi;
    int64_t min, max;
    switch (dt) {
    case NN_F64: case NN_BOOL: case NN_C64: case NN_C128: return NN_OK;
    case NN_F32: lo = -3.4028234663852886e38, hi = 3.4028234663852886e38; break;
    case NN_F16: lo = -65504, hi = 65504; break;
    case NN_BF16: lo = -3.3895313892515355e38, hi = 3.3895313892515355e38; break;
    default:
        if (!nn_dtype_int_range(dt, &min, &max)) return nn_error(NN_ERR_DTYPE, "%s: unknown dtype", fn);
        lo = (double)min, hi = (double)max;
    }
    bool ok = nn_dtype_is_float(dt) ? isinf(v) || isnan(v) || (v >= lo && v <= hi)
                                    : !isnan(v) && trunc(v) >= lo && (dt == NN_I64 ? trunc(v) < hi : trunc(v) <= hi);
    if (!ok) return nn_error(NN_ERR_ARG, "%s: value cannot be converted to type %s without overflow", fn, nn_dtype_name(dt));
    return NN_OK;
}

static nn_status fill(nn_tensor *out, double v)
{
    nn_kargs a = {.op = NN_OP_fill, .out = {out}};
    a.f[0] = v;
    a.i[1] = out->dtype == NN_BOOL ? v != 0 : nn_dtype_is_integral(out->dtype) ? (int64_t)v : 0;
    return nn_dispatch(&a);
}

static nn_tensor *full(const char *fn, int ndim, const int64_t *shape, double value, nn_dtype dt, nn_device dev)
{
    if (dt == NN_DTYPE_NONE) dt = nn_default_dtype();
    if (check_value(fn, value, dt)) return NULL;
    nn_tensor *t = nn_empty(ndim, shape, dt, dev);
    if (t && fill(t, value)) {
        nn_release(t);
        return NULL;
    }
    return t;
}

nn_tensor *nn_zeros(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev) { return full("zeros", ndim, shape, 0, dt, dev); }
nn_tensor *nn_ones(int ndim, const int64_t *shape, nn_dtype dt, nn_device dev) { return full("ones", ndim, shape, 1, dt, dev); }

nn_tensor *nn_full(int ndim, const int64_t *shape, double value, nn_dtype dt, nn_device dev)
{
    return full("full", ndim, shape, value, dt, dev);
}

static nn_status arange_into(nn_tensor *out, double start, double step)
{
    nn_kargs a = {.op = NN_OP_arange, .out = {out}};
    a.f[0] = start;
    a.f[1] = step;
    return nn_dispatch(&a);
}

/* PyTorch's arange: for integer dtypes start, end and step are truncated first; the size is
 * ceil((end - start) / step), in exact integer arithmetic for int64 and in double otherwise. */
nn_tensor *nn_arange(double start, double end, double step, bool is_int, nn_dtype dt, nn_device dev)
{
    if (dt == NN_DTYPE_NONE) dt = is_int ? NN_I64 : nn_default_dtype();
    if (dt == NN_BOOL) {
        nn_error(NN_ERR_DTYPE, "arange: \"arange_cpu\" not implemented for 'bool'");
        return NULL;
    }
    if (!isfinite(start) || !isfinite(end)) {
        nn_error(NN_ERR_ARG, "arange: unsupported range: %g -> %g", start, end);
        return NULL;
    }
    double given = (end - start) / step; /* the size uses the values as given, except for int64 */
    if (nn_dtype_is_integral(dt)) {
        if (fabs(start) >= 0x1p63 || fabs(end) >= 0x1p63 || !(fabs(step) < 0x1p63)) {
            nn_error(NN_ERR_ARG, "arange: range %g -> %g with step %g does not fit in %s", start, end, step, nn_dtype_name(dt));
            return NULL;
        }
        start = trunc(start), end = trunc(end), step = trunc(step);
    }
    if (step == 0 || isnan(step)) {
        nn_error(NN_ERR_ARG, "arange: step must be nonzero");
        return NULL;
    }
    if ((step > 0 && end < start) || (step < 0 && end > start)) {
        nn_error(NN_ERR_ARG, "arange: upper bound and larger bound inconsistent with step sign");
        return NULL;
    }
    double size_d = ceil(given);
    if (dt == NN_I64 && fabs(end - start) < 0x1p62 && fabs(step) < 0x1p62) {
        int64_t s = (int64_t)start, e = (int64_t)end, st = (int64_t)step, sgn = st > 0 ? 1 : -1;
        size_d = (double)((e - s + st - sgn) / st);
    }
    if (!(size_d >= 0 && size_d < 0x1p62)) {
        nn_error(NN_ERR_ARG, "arange: invalid size, possible overflow?");
        return NULL;
    }
    int64_t n = (int64_t)size_d;
    nn_tensor *t = nn_empty(1, &n, dt, dev);
    if (t && arange_into(t, start, step)) {
        nn_release(t);
        return NULL;
    }
    return t;
}

static nn_status copy_into(nn_tensor *dst, nn_tensor *src)
{
    nn_kargs a = {.op = NN_OP_copy, .out = {dst}, .in = {src}, .nin = 1};
    return nn_dispatch(&a);
}

/* float32 linspace in float arithmetic, as PyTorch's CUDA kernel: step rounded to float, and
 * start + step * i (end - step * (steps - 1 - i) in the second half) as one fused multiply-add,
 * rounded once (the kernel's contraction). Written on the host, then copied. */
static nn_status linspace_f32(nn_tensor *out, double start, double end, int64_t steps)
{
    nn_tensor *h = nn_empty(1, &steps, NN_F32, NN_DEVICE_CPU);
    if (!h) return nn_last_status();
    float *p = nn_data(h), fs = (float)start, fe = (float)end;
    float step = steps > 1 ? (fe - fs) / (float)(steps - 1) : 0;
    int64_t half = steps / 2;
    for (int64_t i = 0; i < steps; i++) p[i] = i < half ? fmaf(step, (float)i, fs) : fmaf(-step, (float)(steps - i - 1), fe);
    if (steps == 1) p[0] = fs;
    nn_status s = nn_copy_(out, h);
    nn_release(h);
    return s;
}

/* PyTorch's linspace: start + i*step for the first half, end - (steps-1-i)*step for the second,
 * so both ends are exact. float32 as linspace_f32; other dtypes computed in float64 (two
 * aranges, the second one backwards), then cast (PyTorch's step_t is double for integers). */
nn_tensor *nn_linspace(double start, double end, int64_t steps, nn_dtype dt, nn_device dev)
{
    if (dt == NN_DTYPE_NONE) dt = nn_default_dtype();
    if (steps < 0) {
        nn_error(NN_ERR_ARG, "linspace: number of steps must be non-negative");
        return NULL;
    }
    nn_tensor *out = nn_empty(1, &steps, dt, dev);
    if (!out || steps == 0) return out;
    if (dt == NN_F32) {
        if (!linspace_f32(out, start, end, steps)) return out;
        nn_release(out);
        return NULL;
    }
    nn_tensor *tmp = nn_empty(1, &steps, NN_F64, dev);
    nn_tensor *lo = NULL, *hi = NULL, *olo = NULL, *ohi = NULL;
    nn_status s = tmp ? NN_OK : nn_last_status();
    if (!s && steps == 1) {
        s = arange_into(tmp, start, 0);
        if (!s) s = copy_into(out, tmp);
    } else if (!s) {
        double step = (end - start) / (double)(steps - 1);
        int64_t half = steps / 2, rest = steps - half;
        /* hi gets end - k*step at tmp[half + k]; read backwards (hi_rev) it is end - (steps-1-i)*step */
        lo = nn_make_view(tmp, 1, &half, (int64_t[]){1}, 0);
        hi = nn_make_view(tmp, 1, &rest, (int64_t[]){1}, half);
        olo = nn_make_view(out, 1, &half, (int64_t[]){1}, 0);
        ohi = nn_make_view(out, 1, &rest, (int64_t[]){1}, half);
        nn_tensor *hi_rev = hi ? nn_make_view(tmp, 1, &rest, (int64_t[]){-1}, half + rest - 1) : NULL;
        if (!lo || !hi || !olo || !ohi || !hi_rev) s = nn_last_status();
        if (!s) s = arange_into(lo, start, step);
        if (!s) s = arange_into(hi, end, -step);
        if (!s) s = copy_into(olo, lo);
        if (!s) s = copy_into(ohi, hi_rev);
        nn_release(hi_rev);
    }
    nn_release(lo), nn_release(hi), nn_release(olo), nn_release(ohi), nn_release(tmp);
    if (s) {
        nn_release(out);
        return NULL;
    }
    return out;
}

nn_tensor *nn_eye(int64_t n, int64_t m, nn_dtype dt, nn_device dev)
{
    if (n < 0) {
        nn_error(NN_ERR_ARG, "eye: n must be greater or equal to 0, got %lld", (long long)n);
        return NULL;
    }
    if (m < 0) m = n;
    nn_tensor *t = full("eye", 2, (int64_t[]){n, m}, 0, dt, dev);
    if (!t) return NULL;
    int64_t k = n < m ? n : m;
    nn_tensor *diag = nn_make_view(t, 1, &k, (int64_t[]){m + 1}, 0);
    nn_status s = diag ? fill(diag, 1) : nn_last_status();
    nn_release(diag);
    if (s) {
        nn_release(t);
        return NULL;
    }
    return t;
}
