/* The CPU DFT of contiguous complex rows (ops.def fft_c2c). complex64 rows go through KissFFT
 * (mixed radix, any length). Debian ships KissFFT's float build only, so complex128 rows take a
 * mixed-radix Cooley-Tukey of our own in double: n = p * m with p the smallest factor, p
 * decimated sub-transforms of length m, then for each k the p outputs k + r m from the p
 * twiddled values at k (in place); a prime length is one O(n^2) step. */
#include <math.h>
#include <stdlib.h>

#include <kiss_fft.h>

#include "cmplx.h"
#include "kernels.h"

typedef double complex cplx;

/* out[0..n) = DFT of in[0], in[s], ..., in[(n-1)s]; w[j] = exp(sign 2 pi i j / N) for the top
 * length N, of which this level's n divides: its roots are w[j * (N / n)]; tmp holds n values */
static void fft_rec(const cplx *in, int64_t s, cplx *out, int64_t n, const cplx *w, int64_t N, cplx *tmp)
{
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    int64_t p = 2;
    while (n % p && p * p <= n) p++;
    if (n % p) p = n;
    int64_t m = n / p, step = N / n;
    for (int64_t q = 0; q < p; q++) fft_rec(in + q * s, s * p, out + q * m, m, w, N, tmp);
    for (int64_t k = 0; k < m; k++) {
        for (int64_t q = 0; q < p; q++) tmp[q] = out[q * m + k];
        for (int64_t r = 0; r < p; r++) {
            cplx acc = 0;
            for (int64_t q = 0; q < p; q++) acc += tmp[q] * w[(q * (k + r * m) * step) % N];
            out[r * m + k] = acc;
        }
    }
}

static nn_status fft_double(const cplx *in, cplx *out, int64_t rows, int64_t n, bool inverse)
{
    cplx *w = malloc((size_t)n * sizeof *w), *tmp = malloc((size_t)n * sizeof *tmp);
    if (!w || !tmp) {
        free(w), free(tmp);
        return nn_error(NN_ERR_NOMEM, "fft: out of memory");
    }
    double sign = inverse ? 1 : -1;
    for (int64_t j = 0; j < n; j++) w[j] = cexp(CMPLX(0, sign * 2 * M_PI * (double)j / (double)n));
    for (int64_t r = 0; r < rows; r++) fft_rec(in + r * n, 1, out + r * n, n, w, n, tmp);
    free(w), free(tmp);
    return NN_OK;
}

static nn_status fft_float(const kiss_fft_cpx *in, kiss_fft_cpx *out, int64_t rows, int64_t n, bool inverse)
{
    if (n > INT32_MAX) return nn_error(NN_ERR_ARG, "fft: length %lld is too long for KissFFT", (long long)n);
    kiss_fft_cfg cfg = kiss_fft_alloc((int)n, inverse, NULL, NULL);
    if (!cfg) return nn_error(NN_ERR_NOMEM, "fft: out of memory");
    for (int64_t r = 0; r < rows; r++) kiss_fft(cfg, in + r * n, out + r * n);
    kiss_fft_free(cfg);
    return NN_OK;
}

nn_status nn_cpu_fft_c2c(const nn_kargs *a)
{
    nn_tensor *x = a->in[0], *out = a->out[0];
    int64_t n = x->shape[x->ndim - 1], rows = nn_numel(x) / n;
    if (x->dtype == NN_C64) return fft_float(nn_data(x), nn_data(out), rows, n, a->i[0] != 0);
    if (x->dtype == NN_C128) return fft_double(nn_data(x), nn_data(out), rows, n, a->i[0] != 0);
    return nn_not_implemented(a, x->dtype);
}
