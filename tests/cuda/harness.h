/* The harness that tests/cuda/test_cuda_{ops,nn,nnfunc}.c share: each runs an op on the CPU
 * and on cuda:0 from the same inputs and compares the results. Header-only (each test is its
 * own executable); include it once, after defining HARNESS_SEED if the file wants its own
 * random sequence.
 *
 * A case: `if (!begin("name %s", ...)) return;` ... check(...) / fail(...) ... `end();`.
 * The last line counts cases: "N passed, N failed, N skipped". Without a GPU every case is
 * skipped. NNREPL_TEST_DEVICE=cpu runs the harness with the CPU standing in for the GPU (a
 * check of the harness itself); NNREPL_TEST_FILTER=a,b runs only the cases whose names
 * contain a or b. */
#ifndef NNREPL_TESTS_CUDA_HARNESS_H
#define NNREPL_TESTS_CUDA_HARNESS_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autograd.h"
#include "backend.h"
#include "device.h"
#include "ops.h"

static nn_device DEV = {NN_CUDA, 0};
#define CPU ((nn_device){NN_CPU, -1})
static bool have_gpu, self_test;
static int n_pass, n_fail, n_skip;
static char case_name[256];
static int case_errors;
static char cpu_err[512];

/* ---- cases ---- */

/* NNREPL_TEST_FILTER: comma-separated substrings; a case whose name has none of them is skipped */
static inline bool filtered_out(void)
{
    const char *f = getenv("NNREPL_TEST_FILTER");
    if (!f || !*f) return false;
    while (*f) {
        const char *e = strchr(f, ',');
        size_t n = e ? (size_t)(e - f) : strlen(f);
        for (const char *p = case_name; n && *p; p++)
            if (!strncmp(p, f, n)) return false;
        f += n + (e != NULL);
    }
    return true;
}

static inline bool begin(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(case_name, sizeof case_name, fmt, ap);
    va_end(ap);
    if (!have_gpu || filtered_out()) {
        n_skip++;
        return false;
    }
    case_errors = 0;
    nn_clear_error();
    return true;
}

static inline void fail(const char *fmt, ...)
{
    if (case_errors++ >= 4) return;
    va_list ap;
    fprintf(stderr, "FAIL %s: ", case_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static inline void end(void)
{
    if (case_errors) n_fail++;
    else n_pass++;
}

/* ---- random inputs ---- */

#ifndef HARNESS_SEED
#define HARNESS_SEED 0x9E3779B97F4A7C15ULL
#endif
static uint64_t rng = HARNESS_SEED;
static inline double urand(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) * 0x1p-53;
}
static inline int64_t irand(int64_t lo, int64_t hi) { return lo + (int64_t)(urand() * (double)(hi - lo + 1)); }

/* ---- the two sides ---- */

static inline nn_tensor *to_dev(nn_tensor *t)
{
    if (!t) return NULL;
    return self_test ? nn_clone(t) : nn_to_device(t, DEV);
}

static inline nn_tensor *to_cpu(nn_tensor *t) { return t ? nn_to_device(t, CPU) : NULL; }

typedef struct { nn_tensor *c, *g; } pair;

static inline void pair_free(pair p)
{
    nn_release(p.c);
    nn_release(p.g);
}

/* layouts of an input (test_cuda_nn.c has its own, longer list) */
enum { L_CONTIG, L_TRANS, L_NARROW, L_EXPAND, NLAYOUT };
static const char *const LNAME[] __attribute__((unused)) = {"contig", "transposed", "narrowed", "expanded"};

static inline int fix_layout(int layout, int nd)
{
    if (nd == 0) return L_CONTIG;
    if (nd == 1 && layout == L_TRANS) return L_NARROW;
    return layout;
}

static inline nn_tensor *view(nn_tensor *t, int layout, int nd, const int64_t *s)
{
    if (!t) return NULL;
    switch (layout) {
    case L_TRANS: return nn_transpose(t, nd - 2, nd - 1);
    case L_NARROW: return nn_narrow(t, nd - 1, 1, s[nd - 1]);
    case L_EXPAND: return nn_expand(t, nd, s);
    default: return nn_retain(t);
    }
}

/* the shape of the base tensor whose view in `layout` has shape s */
static inline void base_shape(int layout, int nd, const int64_t *s, int64_t *bs)
{
    if (nd) memcpy(bs, s, sizeof(int64_t) * nd);
    if (layout == L_TRANS) bs[nd - 1] = s[nd - 2], bs[nd - 2] = s[nd - 1];
    if (layout == L_NARROW) bs[nd - 1] += 3;
    if (layout == L_EXPAND) bs[0] = 1;
}

/* base tensor (CPU, released here) -> the same values on the CPU and the device, seen through the same kind of view */
static inline pair share(nn_tensor *base, int layout, int nd, const int64_t *s)
{
    nn_tensor *gbase = to_dev(base);
    pair p = {view(base, layout, nd, s), view(gbase, layout, nd, s)};
    nn_release(base);
    nn_release(gbase);
    return p;
}

/* ---- comparing ---- */

static inline void tol_of(nn_dtype dt, double *rtol, double *atol)
{
    switch (dt) {
    case NN_F32: *rtol = 1e-5, *atol = 1e-5; break;
    case NN_F64: *rtol = 1e-12, *atol = 1e-12; break;
    case NN_F16: *rtol = 2e-3, *atol = 2e-3; break;
    case NN_BF16: *rtol = 1.6e-2, *atol = 1.6e-2; break;
    case NN_C64: *rtol = 1e-5, *atol = 1e-5; break;
    case NN_C128: *rtol = 1e-12, *atol = 1e-12; break;
    default: *rtol = 0, *atol = 0; break;
    }
}

static inline int64_t elem_offset(const nn_tensor *t, int64_t flat)
{
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t s = t->shape[d];
        off += (flat % s) * t->strides[d];
        flat /= s;
    }
    return off * (int64_t)nn_dtype_size(t->dtype);
}

static inline void compare(const char *what, nn_tensor *c, nn_tensor *g, double rtol, double atol)
{
    char b1[160], b2[160];
    if (c->dtype != g->dtype) {
        fail("%s: dtype %s on the CPU, %s on the GPU", what, nn_dtype_name(c->dtype), nn_dtype_name(g->dtype));
        return;
    }
    if (c->ndim != g->ndim || memcmp(c->shape, g->shape, sizeof(int64_t) * c->ndim)) {
        fail("%s: shape %s on the CPU, %s on the GPU", what, nn_shape_str(b1, c->ndim, c->shape), nn_shape_str(b2, g->ndim, g->shape));
        return;
    }
    nn_tensor *h = to_cpu(g);
    if (!h) {
        fail("%s: copy to the CPU failed: %s", what, nn_last_error());
        return;
    }
    int64_t n = nn_numel(c), bad = 0;
    bool fl = nn_dtype_is_float(c->dtype), cx = nn_dtype_is_complex(c->dtype);
    const char *pc = nn_data(c), *ph = nn_data(h);
    for (int64_t i = 0; i < n; i++) {
        const char *x = pc + elem_offset(c, i), *y = ph + elem_offset(h, i);
        bool ok;
        if (cx) { /* each part within tolerance of |a|; NaN parts where the CPU has them */
            double ar, ai, br, bi;
            nn_load_c(x, c->dtype, &ar, &ai);
            nn_load_c(y, c->dtype, &br, &bi);
            double tol = atol + rtol * hypot(ar, ai);
            ok = (isnan(ar) ? isnan(br) : ar == br || fabs(ar - br) <= tol) && (isnan(ai) ? isnan(bi) : ai == bi || fabs(ai - bi) <= tol);
            if (!ok && bad < 3) fail("%s: element %lld: cpu (%.9g, %.9g) cuda (%.9g, %.9g)", what, (long long)i, ar, ai, br, bi);
        } else if (fl) {
            double a = nn_load_f64(x, c->dtype), b = nn_load_f64(y, c->dtype);
            ok = (isnan(a) || isnan(b)) ? isnan(a) && isnan(b) : a == b || fabs(a - b) <= atol + rtol * fabs(a);
            if (!ok && bad < 3) fail("%s: element %lld: cpu %.9g cuda %.9g", what, (long long)i, a, b);
        } else {
            int64_t a = nn_load_i64(x, c->dtype), b = nn_load_i64(y, c->dtype);
            ok = a == b;
            if (!ok && bad < 3) fail("%s: element %lld: cpu %lld cuda %lld", what, (long long)i, (long long)a, (long long)b);
        }
        if (!ok) bad++;
    }
    if (bad > 3) fail("%s: %lld of %lld elements differ", what, (long long)bad, (long long)n);
    nn_release(h);
}

static inline void save_err(void) { snprintf(cpu_err, sizeof cpu_err, "%s", nn_last_error()); }

/* c: the CPU result (NULL: it failed, message saved by save_err), g: the GPU result */
static inline void check(const char *what, nn_tensor *c, nn_tensor *g, double rtol, double atol)
{
    if (!c && !g) {
        if (strcmp(cpu_err, nn_last_error())) fail("%s: errors differ: cpu '%s', cuda '%s'", what, cpu_err, nn_last_error());
        return;
    }
    if (!c) fail("%s: the CPU failed (%s) but the GPU gave a result", what, cpu_err);
    else if (!g) fail("%s: the GPU failed: %s", what, nn_last_error());
    else if (!self_test && g->storage->device.type != NN_CUDA) fail("%s: the result is not on the GPU", what);
    else compare(what, c, g, rtol, atol);
}

/* tolerances of dt, scaled */
static inline void check_tol(const char *what, nn_tensor *c, nn_tensor *g, nn_dtype dt, double scale)
{
    double rtol, atol;
    tol_of(dt, &rtol, &atol);
    check(what, c, g, rtol * scale, atol * scale);
}

static inline void check_dt(const char *what, nn_tensor *c, nn_tensor *g) { check_tol(what, c, g, c ? c->dtype : NN_F32, 1); }

/* graph(x, w), a scalar loss, on both sides with x and w requiring gradients; backward; the
 * losses and both gradients compared within tol */
static inline void check_graph(nn_tensor *(*graph)(nn_tensor *x, nn_tensor *w), pair x, pair w, double tol)
{
    x.c->requires_grad = x.g->requires_grad = w.c->requires_grad = w.g->requires_grad = true;
    nn_tensor *lc = graph(x.c, w.c);
    nn_tensor *lg = graph(x.g, w.g);
    if (!lc || !lg) fail("forward: %s", nn_last_error());
    else if (nn_backward(lc, NULL, false) || nn_backward(lg, NULL, false)) fail("backward: %s", nn_last_error());
    else {
        check("loss", lc, lg, tol, tol);
        if (!x.c->grad || !x.g->grad || !w.c->grad || !w.g->grad) fail("missing .grad");
        else {
            check("x.grad", x.c->grad, x.g->grad, tol, tol);
            check("w.grad", w.c->grad, w.g->grad, tol, tol);
        }
    }
    nn_release(lc), nn_release(lg);
}

/* ---- running ---- */

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline void harness_init(void)
{
    const char *dev = getenv("NNREPL_TEST_DEVICE");
    self_test = dev && !strcmp(dev, "cpu");
    if (self_test) {
        DEV = CPU;
        have_gpu = true;
    } else {
        have_gpu = nn_gpu && nn_gpu->device_count() > 0;
    }
}

/* ---- sections: main's arguments name the sections to run (none: all) ---- */

static int harness_nsel;
static char **harness_sel;

/* a section runs when no names were given or its name was */
static inline bool want(const char *name)
{
    for (int i = 0; i < harness_nsel; i++)
        if (!strcmp(harness_sel[i], name)) return true;
    return harness_nsel == 0;
}

/* main's start: the GPU, or the CPU standing in for it under NNREPL_TEST_DEVICE=cpu; the sections
 * named by main's arguments */
static inline void harness_start(int argc, char **argv)
{
    harness_nsel = argc - 1, harness_sel = argv + 1;
    harness_init();
}

/* main's end: the time taken since t0 (on stderr, with a GPU), the counts line, the exit status */
static inline int harness_done(const char *name, double t0)
{
    if (have_gpu) fprintf(stderr, "%s: %.1f s\n", name, now() - t0);
    printf("%d passed, %d failed, %d skipped\n", n_pass, n_fail, n_skip);
    return n_fail != 0;
}

#endif
