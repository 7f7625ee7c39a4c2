/* Tensor printing against PyTorch's repr. Each case builds a tensor and
 * compares nn_tensor_repr with the text PyTorch 2.x prints for the same tensor
 * (the table at the end of this file, taken from tests/parity/print_cases.py).
 * `test_format --dump` prints "=== name" and the repr of every case instead, in
 * the order print_cases.py prints them, for a diff against PyTorch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "device.h"
#include "check.h"
#include "ops.h"

static const char *expected(const char *name);

static bool dump;
static const nn_device CUDA0 = {NN_CUDA, 0};

#define SH(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define SCALAR 0, NULL
#define V(...) (const double[]){__VA_ARGS__}

static void fill(nn_tensor *t, const double *v, double (*g)(int64_t))
{
    int64_t n = nn_numel(t);
    for (int64_t i = 0; i < n; i++)
        nn_store_f64((char *)nn_data(t) + i * nn_dtype_size(t->dtype), t->dtype, v ? v[i] : g(i));
}

/* A contiguous tensor on dev holding v[0..numel) (or g(i)), stored through nn_store_f64. */
static nn_tensor *mk_on(nn_device dev, nn_dtype dt, int ndim, const int64_t *shape, const double *v, double (*g)(int64_t))
{
    nn_tensor *t = nn_empty(ndim, shape, dt, dev);
    if (t) fill(t, v, g);
    return t;
}
static nn_tensor *mk(nn_dtype dt, int ndim, const int64_t *shape, const double *v) { return mk_on(NN_DEVICE_CPU, dt, ndim, shape, v, NULL); }
static nn_tensor *mkg(nn_dtype dt, int ndim, const int64_t *shape, double (*g)(int64_t)) { return mk_on(NN_DEVICE_CPU, dt, ndim, shape, NULL, g); }

static nn_tensor *mki(nn_dtype dt, int ndim, const int64_t *shape, const int64_t *v)
{
    nn_tensor *t = nn_empty(ndim, shape, dt, NN_DEVICE_CPU);
    for (int64_t i = 0; t && i < nn_numel(t); i++) nn_store_i64((char *)nn_data(t) + i * nn_dtype_size(dt), dt, v[i]);
    return t;
}

/* A 2-D tensor's transpose as a view (takes over the reference). */
static nn_tensor *transposed(nn_tensor *t)
{
    nn_tensor *v = nn_make_view(t, 2, (int64_t[]){t->shape[1], t->shape[0]}, (int64_t[]){t->strides[1], t->strides[0]}, t->offset);
    nn_release(t);
    return v;
}

/* Generators, written the same way in print_cases.py */
static double g_i(int64_t i) { return (double)i; }
static double g_2i(int64_t i) { return 2.0 * (double)i; }
static double g_third(int64_t i) { return (double)i / 3.0; }
static double g_half(int64_t i) { return (double)i * 0.5; }
static double g_mix(int64_t i) { return (double)((i * 37) % 101) / 10.0 - 5.0; }
static double g_eighth(int64_t i) { return (double)(i - 4000) / 8.0; }
static double g_k(int64_t i) { return (double)(i * 1000); }
static double g_mod(int64_t i) { return (double)((i * 37) % 1000); }
static double g_every3(int64_t i) { return i % 3 == 0; }
static double g_quarter(int64_t i) { return 0.5 * (double)i + 0.25; }
static double g_spike(int64_t i) { return i == 1000 ? 1e12 : (double)i; }
static double g_spike_tiny(int64_t i) { return i == 1000 ? 1e-9 : (double)i + 0.5; }

static void check_repr(const char *name, nn_tensor *t)
{
    char *s = t ? nn_tensor_repr(t) : NULL;
    if (dump) printf("=== %s\n%s\n", name, s ? s : nn_last_error());
    else {
        const char *e = expected(name);
        CHECK(e && s && !strcmp(s, e), "%s: got\n%s\nexpected\n%s", name, s ? s : nn_last_error(), e ? e : "(no expected text)");
    }
    free(s);
    nn_release(t);
}

static void reset_opts(void) { *nn_print_opts() = (nn_print_options){4, 1000, 3, 80, -1}; }

static const nn_tensor *marked;
static const char *marked_name;
static const char *test_grad_fn(const nn_tensor *t) { return t == marked ? marked_name : NULL; }

/* A device backend over host memory, so the CUDA path (copy to host, device suffix) runs without a GPU. */
static void *fake_alloc(int dev, size_t n, bool pinned) { return malloc(n); }
static void fake_free(int dev, void *p, size_t n, bool pinned) { free(p); }
static nn_status fake_copy(void *dst, nn_device dd, const void *src, nn_device sd, size_t n)
{
    memcpy(dst, src, n);
    return NN_OK;
}
static const nn_backend fake_cuda = {.name = "fakecuda", .alloc = fake_alloc, .free = fake_free, .copy = fake_copy};

static void float_cases(void)
{
    check_repr("arange_2x3_float_x2", mkg(NN_F32, SH(2, 3), g_2i));
    check_repr("float_small", mk(NN_F32, SH(2), V(0.1234, 1.0)));
    check_repr("float_neg", mk(NN_F32, SH(4), V(-1.5, 2.25, -0.125, 3.0)));
    check_repr("float_neg_int", mk(NN_F32, SH(3), V(-1, 2, -3)));
    check_repr("float_negzero", mk(NN_F32, SH(2), V(-0.0, 1.0)));
    check_repr("float_round", mk(NN_F32, SH(3), V(0.12345, 0.5, 2.00005)));
    check_repr("float_fixed_wide", mk(NN_F32, SH(2), V(999.5, 1.25)));
    check_repr("float_intmode_big", mk(NN_F32, SH(2), V(1e8, 1e6)));
    check_repr("sci_small", mk(NN_F32, SH(2), V(1e-5, 1.0)));
    check_repr("sci_big_int", mk(NN_F32, SH(2), V(1e10, 1.0)));
    check_repr("sci_mixed", mk(NN_F32, SH(3), V(1e-5, 1e10, 0.5)));
    check_repr("sci_max_only", mk(NN_F32, SH(2), V(2e8, 3e8)));
    check_repr("sci_negative", mk(NN_F32, SH(3), V(-1e-5, 2.5, -300.0)));
    check_repr("sci_ratio", mk(NN_F32, SH(2), V(12345.678, 0.5)));
    check_repr("nan_inf", mk(NN_F32, SH(4), V(NAN, INFINITY, -INFINITY, 1.5)));
    check_repr("nan_inf_intmode", mk(NN_F32, SH(4), V(NAN, 1, -INFINITY, 0)));
    check_repr("nonfinite_only", mk(NN_F32, SH(3), V(NAN, INFINITY, 0)));
    check_repr("nan_sci", mk(NN_F32, SH(3), V(NAN, 1e-5, 1)));
    check_repr("zeros", mk(NN_F32, SH(3), V(0, 0, 0)));
    check_repr("float64_vec", mk(NN_F64, SH(2), V(1.5, 2.0)));
    check_repr("float64_intmode", mk(NN_F64, SH(3), V(1, 2, 3)));
    check_repr("float64_precise", mk(NN_F64, SH(2), V(0.123456789, 1e-3)));
    check_repr("float16_vec", mk(NN_F16, SH(3), V(0.1, 2.0, -3.5)));
    check_repr("bfloat16_vec", mk(NN_BF16, SH(3), V(0.1, 2.0, -3.5)));
}

static void int_cases(void)
{
    check_repr("int64_vec", mk(NN_I64, SH(3), V(1, -20, 300)));
    check_repr("int64_big", mki(NN_I64, SH(2), (int64_t[]){9007199254740993LL, -5}));
    check_repr("bool_vec", mk(NN_BOOL, SH(3), V(1, 0, 1)));
    check_repr("uint8_vec", mk(NN_U8, SH(3), V(0, 7, 255)));
    check_repr("int32_mat", mk(NN_I32, SH(2, 2), V(1, -2, 30, 4)));
}

static void scalar_and_empty_cases(void)
{
    check_repr("scalar_float", mk(NN_F32, SCALAR, V(3.5)));
    check_repr("scalar_int", mk(NN_I64, SCALAR, V(2)));
    check_repr("scalar_bool", mk(NN_BOOL, SCALAR, V(1)));
    check_repr("scalar_f64", mk(NN_F64, SCALAR, V(0.1)));
    check_repr("scalar_nan", mk(NN_F32, SCALAR, V(NAN)));
    check_repr("scalar_zero", mk(NN_F32, SCALAR, V(0)));
    check_repr("scalar_sci", mk(NN_F32, SCALAR, V(1e-7)));
    check_repr("scalar_int32", mk(NN_I32, SCALAR, V(7)));
    check_repr("empty_f32", mk(NN_F32, SH(0), NULL));
    check_repr("empty_i64", mk(NN_I64, SH(0), NULL));
    check_repr("empty_2d", mk(NN_F32, SH(0, 3), NULL));
    check_repr("empty_3d_i32", mk(NN_I32, SH(2, 0, 3), NULL));
    check_repr("empty_bool", mk(NN_BOOL, SH(0), NULL));
}

static void layout_cases(void)
{
    check_repr("wrap_third", mkg(NN_F32, SH(30), g_third));
    check_repr("wrap_int", mkg(NN_I64, SH(40), g_k));
    check_repr("wrap_rows", mkg(NN_F32, SH(3, 30), g_mix));
    check_repr("wrap_int_mat", mkg(NN_I64, SH(4, 30), g_mod));
    check_repr("layout_3d", mkg(NN_I64, SH(2, 3, 4), g_i));
    check_repr("layout_3d_float", mkg(NN_F32, SH(2, 2, 3), g_third));
    check_repr("layout_4d", mkg(NN_F32, SH(2, 2, 2, 2), g_mix));
    check_repr("layout_5d", mkg(NN_I64, SH(1, 2, 1, 2, 2), g_i));
    check_repr("layout_ones", mkg(NN_F32, SH(1, 1, 3), g_half));
    check_repr("transposed", transposed(mkg(NN_F32, SH(3, 4), g_mix)));
}

static void summarize_cases(void)
{
    check_repr("sum_arange2000", mkg(NN_I64, SH(2000), g_i));
    check_repr("sum_arange2000_float", mkg(NN_F32, SH(2000), g_i));
    check_repr("sum_1001", mkg(NN_F32, SH(1001), g_third));
    check_repr("sum_mat100", mkg(NN_F32, SH(100, 100), g_half));
    check_repr("sum_3d", mkg(NN_I64, SH(20, 20, 20), g_i));
    check_repr("sum_3d_float", mkg(NN_F32, SH(20, 20, 20), g_eighth));
    check_repr("sum_bool", mkg(NN_BOOL, SH(2000), g_every3));
    check_repr("sum_wide_rows", mkg(NN_F32, SH(4, 2000), g_mix));
    check_repr("sum_tall", mkg(NN_F32, SH(2000, 2), g_mix));
    check_repr("sum_spike_int", mkg(NN_I64, SH(2000), g_spike));
    check_repr("sum_spike_float", mkg(NN_F32, SH(2000), g_spike_tiny));
    check_repr("sum_float16", mkg(NN_F16, SH(30, 40), g_mix));
    check_repr("sum_bool_mat", mkg(NN_BOOL, SH(40, 30), g_every3));
}

static void option_cases(void)
{
    nn_print_opts()->precision = 2;
    check_repr("prec2", mk(NN_F32, SH(3), V(1.12345, 2.5, 100.0)));
    nn_print_opts()->precision = 6;
    check_repr("prec6", mk(NN_F32, SH(2), V(0.1, 1.0 / 3.0)));
    nn_print_opts()->precision = 0;
    check_repr("prec0", mk(NN_F32, SH(2), V(1.5, 2.25)));
    reset_opts();
    nn_print_opts()->sci_mode = 1;
    check_repr("sci_on", mk(NN_F32, SH(2), V(1.5, 2.0)));
    check_repr("sci_on_int", mk(NN_F32, SH(3), V(1, 2, 3)));
    check_repr("sci_on_nonfinite", mk(NN_F32, SH(2), V(NAN, 0)));
    check_repr("sci_on_neg", mk(NN_F32, SH(3), V(-1.5, 2.0, NAN)));
    check_repr("sci_on_scalar", mk(NN_F64, SCALAR, V(-2.5)));
    nn_print_opts()->sci_mode = 0;
    check_repr("sci_off", mk(NN_F32, SH(3), V(1e-5, 1e10, 0.5)));
    check_repr("sci_off_int", mk(NN_F32, SH(2), V(1e10, 1)));
    check_repr("sci_off_nan", mk(NN_F32, SH(3), V(1e-5, NAN, -INFINITY)));
    reset_opts();
    nn_print_opts()->threshold = 10;
    check_repr("threshold10_at", mkg(NN_I64, SH(10), g_i));
    check_repr("threshold10_over", mkg(NN_I64, SH(11), g_i));
    nn_print_opts()->edgeitems = 2;
    check_repr("edge2_mat", mkg(NN_F32, SH(5, 5), g_mix));
    nn_print_opts()->edgeitems = 0;
    check_repr("edge0_vec", mkg(NN_F32, SH(20), g_mix));
    check_repr("edge0_mat", mkg(NN_I64, SH(4, 5), g_i));
    check_repr("edge0_small", mkg(NN_I64, SH(3, 2), g_i));
    check_repr("edge0_scalar", mk(NN_F32, SCALAR, V(3.5)));
    reset_opts();
    nn_print_opts()->precision = 8;
    check_repr("prec8_f32", mk(NN_F32, SH(2), V(0.1, 1.0 / 3.0)));
    check_repr("prec8_f64", mk(NN_F64, SH(2), V(0.1, 1.0 / 3.0)));
    reset_opts();
    nn_print_opts()->linewidth = 40;
    check_repr("linewidth40", mkg(NN_F32, SH(20), g_third));
    check_repr("linewidth40_suffix", mkg(NN_F64, SH(4), g_third));
    nn_print_opts()->linewidth = 10;
    check_repr("linewidth10", mkg(NN_F32, SH(5), g_third));
    reset_opts();
}

static void suffix_cases(void)
{
    nn_tensor *t = mk(NN_F32, SH(2), V(1, 2));
    t->requires_grad = true;
    check_repr("requires_grad", t);
    t = mk(NN_F32, SCALAR, V(3));
    t->requires_grad = true;
    check_repr("requires_grad_scalar", t);
    t = mkg(NN_F64, SH(9), g_quarter);
    t->requires_grad = true;
    check_repr("requires_grad_f64_wrap", t);
    check_repr("suffix_wrap_f64", mkg(NN_F64, SH(9), g_quarter));
    check_repr("suffix_fits_f64", mkg(NN_F64, SH(8), g_quarter));

    const char *(*saved_hook)(const nn_tensor *) = nn_grad_fn_name_hook;
    nn_grad_fn_name_hook = test_grad_fn;
    t = mk(NN_F32, SH(2), V(2, 3));
    t->requires_grad = true;
    marked = t, marked_name = "AddBackward0";
    check_repr("grad_fn", t);
    t = mkg(NN_F64, SH(9), g_half);
    t->requires_grad = true;
    marked = t, marked_name = "MulBackward0";
    check_repr("grad_fn_f64", t);
    nn_grad_fn_name_hook = saved_hook;
    marked = NULL;
}

static void default_dtype_cases(void)
{
    nn_set_default_dtype(NN_F64);
    check_repr("default_f64_f32", mk(NN_F32, SH(2), V(1.5, 2)));
    check_repr("default_f64_f64", mk(NN_F64, SH(2), V(1.5, 2)));
    check_repr("default_f64_empty_f64", mk(NN_F64, SH(0), NULL));
    check_repr("default_f64_empty_f32", mk(NN_F32, SH(0), NULL));
    check_repr("default_f64_scalar", mk(NN_F64, SCALAR, V(0.25)));
    nn_set_default_dtype(NN_F32);
}

static void cuda_cases(void)
{
    check_repr("cuda_vec", mk_on(CUDA0, NN_F32, SH(3), V(1, 2, 3), NULL));
    check_repr("cuda_f64", mk_on(CUDA0, NN_F64, SH(2), V(1.5, 2), NULL));
    check_repr("cuda_empty", mk_on(CUDA0, NN_F32, SH(0, 3), NULL, g_i));
    check_repr("cuda_empty_i64", mk_on(CUDA0, NN_I64, SH(0), NULL, g_i));
    nn_tensor *t = mk_on(CUDA0, NN_F32, SH(2), V(1, 2), NULL);
    t->requires_grad = true;
    check_repr("cuda_grad", t);
    check_repr("cuda_transposed", transposed(mk_on(CUDA0, NN_F32, SH(3, 4), NULL, g_mix)));
    t = mk_on(CUDA0, NN_F32, SH(3, 4), NULL, g_mix);
    check_repr("cuda_narrowed", nn_make_view(t, 2, (int64_t[]){3, 3}, (int64_t[]){4, 1}, 1));
    nn_release(t);
}

static void api_checks(void)
{
    nn_print_options *o = nn_print_opts();
    CHECK(o->precision == 4 && o->threshold == 1000 && o->edgeitems == 3 && o->linewidth == 80 && o->sci_mode == -1,
          "default print options");

    /* a device tensor whose backend is missing: NULL and a message naming the device */
    float data[2] = {1, 2};
    nn_tensor *t = nn_from_blob(data, 1, (int64_t[]){2}, NULL, NN_F32, CUDA0, NULL, NULL);
    char *s = nn_tensor_repr(t);
    CHECK(s == NULL && strstr(nn_last_error(), "cuda:0"), "repr without a cuda backend: %s", s ? s : nn_last_error());
    free(s);
    nn_release(t);
}

int main(int argc, char **argv)
{
    dump = argc > 1 && !strcmp(argv[1], "--dump");
    if (!dump) api_checks();
    nn_register_backend(NN_CUDA, &fake_cuda);
    nn_gpu = NULL; /* the fake backend stands in for a real one, which may be linked in */
    float_cases();
    int_cases();
    scalar_and_empty_cases();
    layout_cases();
    summarize_cases();
    option_cases();
    suffix_cases();
    default_dtype_cases();
    cuda_cases();
    if (dump) return 0;
    return CHECK_REPORT();
}

/* ---- PyTorch 2.x's repr of each case (python3 tests/parity/print_cases.py) ---- */
static const char *const expected_table[][2] = {
    {"arange_2x3_float_x2",
     "tensor([[ 0.,  2.,  4.],\n"
     "        [ 6.,  8., 10.]])"},
    {"float_small", "tensor([0.1234, 1.0000])"},
    {"float_neg", "tensor([-1.5000,  2.2500, -0.1250,  3.0000])"},
    {"float_neg_int", "tensor([-1.,  2., -3.])"},
    {"float_negzero", "tensor([-0., 1.])"},
    {"float_round", "tensor([0.1235, 0.5000, 2.0001])"},
    {"float_fixed_wide", "tensor([999.5000,   1.2500])"},
    {"float_intmode_big", "tensor([100000000.,   1000000.])"},
    {"sci_small", "tensor([1.0000e-05, 1.0000e+00])"},
    {"sci_big_int", "tensor([1.0000e+10, 1.0000e+00])"},
    {"sci_mixed", "tensor([1.0000e-05, 1.0000e+10, 5.0000e-01])"},
    {"sci_max_only", "tensor([2.0000e+08, 3.0000e+08])"},
    {"sci_negative", "tensor([-1.0000e-05,  2.5000e+00, -3.0000e+02])"},
    {"sci_ratio", "tensor([1.2346e+04, 5.0000e-01])"},
    {"nan_inf", "tensor([   nan,    inf,   -inf, 1.5000])"},
    {"nan_inf_intmode", "tensor([nan, 1., -inf, 0.])"},
    {"nonfinite_only", "tensor([nan, inf, 0.])"},
    {"nan_sci", "tensor([       nan, 1.0000e-05, 1.0000e+00])"},
    {"zeros", "tensor([0., 0., 0.])"},
    {"float64_vec", "tensor([1.5000, 2.0000], dtype=torch.float64)"},
    {"float64_intmode", "tensor([1., 2., 3.], dtype=torch.float64)"},
    {"float64_precise", "tensor([0.1235, 0.0010], dtype=torch.float64)"},
    {"float16_vec", "tensor([ 0.1000,  2.0000, -3.5000], dtype=torch.float16)"},
    {"bfloat16_vec", "tensor([ 0.1001,  2.0000, -3.5000], dtype=torch.bfloat16)"},
    {"int64_vec", "tensor([  1, -20, 300])"},
    {"int64_big", "tensor([9007199254740993,               -5])"},
    {"bool_vec", "tensor([ True, False,  True])"},
    {"uint8_vec", "tensor([  0,   7, 255], dtype=torch.uint8)"},
    {"int32_mat",
     "tensor([[ 1, -2],\n"
     "        [30,  4]], dtype=torch.int32)"},
    {"scalar_float", "tensor(3.5000)"},
    {"scalar_int", "tensor(2)"},
    {"scalar_bool", "tensor(True)"},
    {"scalar_f64", "tensor(0.1000, dtype=torch.float64)"},
    {"scalar_nan", "tensor(nan)"},
    {"scalar_zero", "tensor(0.)"},
    {"scalar_sci", "tensor(1.0000e-07)"},
    {"scalar_int32", "tensor(7, dtype=torch.int32)"},
    {"empty_f32", "tensor([])"},
    {"empty_i64", "tensor([], dtype=torch.int64)"},
    {"empty_2d", "tensor([], size=(0, 3))"},
    {"empty_3d_i32", "tensor([], size=(2, 0, 3), dtype=torch.int32)"},
    {"empty_bool", "tensor([], dtype=torch.bool)"},
    {"wrap_third",
     "tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n"
     "        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n"
     "        6.0000, 6.3333, 6.6667, 7.0000, 7.3333, 7.6667, 8.0000, 8.3333, 8.6667,\n"
     "        9.0000, 9.3333, 9.6667])"},
    {"wrap_int",
     "tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n"
     "        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n"
     "        20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000,\n"
     "        30000, 31000, 32000, 33000, 34000, 35000, 36000, 37000, 38000, 39000])"},
    {"wrap_rows",
     "tensor([[-5.0000, -1.3000,  2.4000, -4.0000, -0.3000,  3.4000, -3.0000,  0.7000,\n"
     "          4.4000, -2.0000,  1.7000, -4.7000, -1.0000,  2.7000, -3.7000,  0.0000,\n"
     "          3.7000, -2.7000,  1.0000,  4.7000, -1.7000,  2.0000, -4.4000, -0.7000,\n"
     "          3.0000, -3.4000,  0.3000,  4.0000, -2.4000,  1.3000],\n"
     "        [ 5.0000, -1.4000,  2.3000, -4.1000, -0.4000,  3.3000, -3.1000,  0.6000,\n"
     "          4.3000, -2.1000,  1.6000, -4.8000, -1.1000,  2.6000, -3.8000, -0.1000,\n"
     "          3.6000, -2.8000,  0.9000,  4.6000, -1.8000,  1.9000, -4.5000, -0.8000,\n"
     "          2.9000, -3.5000,  0.2000,  3.9000, -2.5000,  1.2000],\n"
     "        [ 4.9000, -1.5000,  2.2000, -4.2000, -0.5000,  3.2000, -3.2000,  0.5000,\n"
     "          4.2000, -2.2000,  1.5000, -4.9000, -1.2000,  2.5000, -3.9000, -0.2000,\n"
     "          3.5000, -2.9000,  0.8000,  4.5000, -1.9000,  1.8000, -4.6000, -0.9000,\n"
     "          2.8000, -3.6000,  0.1000,  3.8000, -2.6000,  1.1000]])"},
    {"wrap_int_mat",
     "tensor([[  0,  37,  74, 111, 148, 185, 222, 259, 296, 333, 370, 407, 444, 481,\n"
     "         518, 555, 592, 629, 666, 703, 740, 777, 814, 851, 888, 925, 962, 999,\n"
     "          36,  73],\n"
     "        [110, 147, 184, 221, 258, 295, 332, 369, 406, 443, 480, 517, 554, 591,\n"
     "         628, 665, 702, 739, 776, 813, 850, 887, 924, 961, 998,  35,  72, 109,\n"
     "         146, 183],\n"
     "        [220, 257, 294, 331, 368, 405, 442, 479, 516, 553, 590, 627, 664, 701,\n"
     "         738, 775, 812, 849, 886, 923, 960, 997,  34,  71, 108, 145, 182, 219,\n"
     "         256, 293],\n"
     "        [330, 367, 404, 441, 478, 515, 552, 589, 626, 663, 700, 737, 774, 811,\n"
     "         848, 885, 922, 959, 996,  33,  70, 107, 144, 181, 218, 255, 292, 329,\n"
     "         366, 403]])"},
    {"layout_3d",
     "tensor([[[ 0,  1,  2,  3],\n"
     "         [ 4,  5,  6,  7],\n"
     "         [ 8,  9, 10, 11]],\n"
     "\n"
     "        [[12, 13, 14, 15],\n"
     "         [16, 17, 18, 19],\n"
     "         [20, 21, 22, 23]]])"},
    {"layout_3d_float",
     "tensor([[[0.0000, 0.3333, 0.6667],\n"
     "         [1.0000, 1.3333, 1.6667]],\n"
     "\n"
     "        [[2.0000, 2.3333, 2.6667],\n"
     "         [3.0000, 3.3333, 3.6667]]])"},
    {"layout_4d",
     "tensor([[[[-5.0000, -1.3000],\n"
     "          [ 2.4000, -4.0000]],\n"
     "\n"
     "         [[-0.3000,  3.4000],\n"
     "          [-3.0000,  0.7000]]],\n"
     "\n"
     "\n"
     "        [[[ 4.4000, -2.0000],\n"
     "          [ 1.7000, -4.7000]],\n"
     "\n"
     "         [[-1.0000,  2.7000],\n"
     "          [-3.7000,  0.0000]]]])"},
    {"layout_5d",
     "tensor([[[[[0, 1],\n"
     "           [2, 3]]],\n"
     "\n"
     "\n"
     "         [[[4, 5],\n"
     "           [6, 7]]]]])"},
    {"layout_ones", "tensor([[[0.0000, 0.5000, 1.0000]]])"},
    {"transposed",
     "tensor([[-5.0000, -0.3000,  4.4000],\n"
     "        [-1.3000,  3.4000, -2.0000],\n"
     "        [ 2.4000, -3.0000,  1.7000],\n"
     "        [-4.0000,  0.7000, -4.7000]])"},
    {"sum_arange2000", "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"},
    {"sum_arange2000_float",
     "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
     "        1.9990e+03])"},
    {"sum_1001",
     "tensor([0.0000e+00, 3.3333e-01, 6.6667e-01,  ..., 3.3267e+02, 3.3300e+02,\n"
     "        3.3333e+02])"},
    {"sum_mat100",
     "tensor([[0.0000e+00, 5.0000e-01, 1.0000e+00,  ..., 4.8500e+01, 4.9000e+01,\n"
     "         4.9500e+01],\n"
     "        [5.0000e+01, 5.0500e+01, 5.1000e+01,  ..., 9.8500e+01, 9.9000e+01,\n"
     "         9.9500e+01],\n"
     "        [1.0000e+02, 1.0050e+02, 1.0100e+02,  ..., 1.4850e+02, 1.4900e+02,\n"
     "         1.4950e+02],\n"
     "        ...,\n"
     "        [4.8500e+03, 4.8505e+03, 4.8510e+03,  ..., 4.8985e+03, 4.8990e+03,\n"
     "         4.8995e+03],\n"
     "        [4.9000e+03, 4.9005e+03, 4.9010e+03,  ..., 4.9485e+03, 4.9490e+03,\n"
     "         4.9495e+03],\n"
     "        [4.9500e+03, 4.9505e+03, 4.9510e+03,  ..., 4.9985e+03, 4.9990e+03,\n"
     "         4.9995e+03]])"},
    {"sum_3d",
     "tensor([[[   0,    1,    2,  ...,   17,   18,   19],\n"
     "         [  20,   21,   22,  ...,   37,   38,   39],\n"
     "         [  40,   41,   42,  ...,   57,   58,   59],\n"
     "         ...,\n"
     "         [ 340,  341,  342,  ...,  357,  358,  359],\n"
     "         [ 360,  361,  362,  ...,  377,  378,  379],\n"
     "         [ 380,  381,  382,  ...,  397,  398,  399]],\n"
     "\n"
     "        [[ 400,  401,  402,  ...,  417,  418,  419],\n"
     "         [ 420,  421,  422,  ...,  437,  438,  439],\n"
     "         [ 440,  441,  442,  ...,  457,  458,  459],\n"
     "         ...,\n"
     "         [ 740,  741,  742,  ...,  757,  758,  759],\n"
     "         [ 760,  761,  762,  ...,  777,  778,  779],\n"
     "         [ 780,  781,  782,  ...,  797,  798,  799]],\n"
     "\n"
     "        [[ 800,  801,  802,  ...,  817,  818,  819],\n"
     "         [ 820,  821,  822,  ...,  837,  838,  839],\n"
     "         [ 840,  841,  842,  ...,  857,  858,  859],\n"
     "         ...,\n"
     "         [1140, 1141, 1142,  ..., 1157, 1158, 1159],\n"
     "         [1160, 1161, 1162,  ..., 1177, 1178, 1179],\n"
     "         [1180, 1181, 1182,  ..., 1197, 1198, 1199]],\n"
     "\n"
     "        ...,\n"
     "\n"
     "        [[6800, 6801, 6802,  ..., 6817, 6818, 6819],\n"
     "         [6820, 6821, 6822,  ..., 6837, 6838, 6839],\n"
     "         [6840, 6841, 6842,  ..., 6857, 6858, 6859],\n"
     "         ...,\n"
     "         [7140, 7141, 7142,  ..., 7157, 7158, 7159],\n"
     "         [7160, 7161, 7162,  ..., 7177, 7178, 7179],\n"
     "         [7180, 7181, 7182,  ..., 7197, 7198, 7199]],\n"
     "\n"
     "        [[7200, 7201, 7202,  ..., 7217, 7218, 7219],\n"
     "         [7220, 7221, 7222,  ..., 7237, 7238, 7239],\n"
     "         [7240, 7241, 7242,  ..., 7257, 7258, 7259],\n"
     "         ...,\n"
     "         [7540, 7541, 7542,  ..., 7557, 7558, 7559],\n"
     "         [7560, 7561, 7562,  ..., 7577, 7578, 7579],\n"
     "         [7580, 7581, 7582,  ..., 7597, 7598, 7599]],\n"
     "\n"
     "        [[7600, 7601, 7602,  ..., 7617, 7618, 7619],\n"
     "         [7620, 7621, 7622,  ..., 7637, 7638, 7639],\n"
     "         [7640, 7641, 7642,  ..., 7657, 7658, 7659],\n"
     "         ...,\n"
     "         [7940, 7941, 7942,  ..., 7957, 7958, 7959],\n"
     "         [7960, 7961, 7962,  ..., 7977, 7978, 7979],\n"
     "         [7980, 7981, 7982,  ..., 7997, 7998, 7999]]])"},
    {"sum_3d_float",
     "tensor([[[-500.0000, -499.8750, -499.7500,  ..., -497.8750, -497.7500,\n"
     "          -497.6250],\n"
     "         [-497.5000, -497.3750, -497.2500,  ..., -495.3750, -495.2500,\n"
     "          -495.1250],\n"
     "         [-495.0000, -494.8750, -494.7500,  ..., -492.8750, -492.7500,\n"
     "          -492.6250],\n"
     "         ...,\n"
     "         [-457.5000, -457.3750, -457.2500,  ..., -455.3750, -455.2500,\n"
     "          -455.1250],\n"
     "         [-455.0000, -454.8750, -454.7500,  ..., -452.8750, -452.7500,\n"
     "          -452.6250],\n"
     "         [-452.5000, -452.3750, -452.2500,  ..., -450.3750, -450.2500,\n"
     "          -450.1250]],\n"
     "\n"
     "        [[-450.0000, -449.8750, -449.7500,  ..., -447.8750, -447.7500,\n"
     "          -447.6250],\n"
     "         [-447.5000, -447.3750, -447.2500,  ..., -445.3750, -445.2500,\n"
     "          -445.1250],\n"
     "         [-445.0000, -444.8750, -444.7500,  ..., -442.8750, -442.7500,\n"
     "          -442.6250],\n"
     "         ...,\n"
     "         [-407.5000, -407.3750, -407.2500,  ..., -405.3750, -405.2500,\n"
     "          -405.1250],\n"
     "         [-405.0000, -404.8750, -404.7500,  ..., -402.8750, -402.7500,\n"
     "          -402.6250],\n"
     "         [-402.5000, -402.3750, -402.2500,  ..., -400.3750, -400.2500,\n"
     "          -400.1250]],\n"
     "\n"
     "        [[-400.0000, -399.8750, -399.7500,  ..., -397.8750, -397.7500,\n"
     "          -397.6250],\n"
     "         [-397.5000, -397.3750, -397.2500,  ..., -395.3750, -395.2500,\n"
     "          -395.1250],\n"
     "         [-395.0000, -394.8750, -394.7500,  ..., -392.8750, -392.7500,\n"
     "          -392.6250],\n"
     "         ...,\n"
     "         [-357.5000, -357.3750, -357.2500,  ..., -355.3750, -355.2500,\n"
     "          -355.1250],\n"
     "         [-355.0000, -354.8750, -354.7500,  ..., -352.8750, -352.7500,\n"
     "          -352.6250],\n"
     "         [-352.5000, -352.3750, -352.2500,  ..., -350.3750, -350.2500,\n"
     "          -350.1250]],\n"
     "\n"
     "        ...,\n"
     "\n"
     "        [[ 350.0000,  350.1250,  350.2500,  ...,  352.1250,  352.2500,\n"
     "           352.3750],\n"
     "         [ 352.5000,  352.6250,  352.7500,  ...,  354.6250,  354.7500,\n"
     "           354.8750],\n"
     "         [ 355.0000,  355.1250,  355.2500,  ...,  357.1250,  357.2500,\n"
     "           357.3750],\n"
     "         ...,\n"
     "         [ 392.5000,  392.6250,  392.7500,  ...,  394.6250,  394.7500,\n"
     "           394.8750],\n"
     "         [ 395.0000,  395.1250,  395.2500,  ...,  397.1250,  397.2500,\n"
     "           397.3750],\n"
     "         [ 397.5000,  397.6250,  397.7500,  ...,  399.6250,  399.7500,\n"
     "           399.8750]],\n"
     "\n"
     "        [[ 400.0000,  400.1250,  400.2500,  ...,  402.1250,  402.2500,\n"
     "           402.3750],\n"
     "         [ 402.5000,  402.6250,  402.7500,  ...,  404.6250,  404.7500,\n"
     "           404.8750],\n"
     "         [ 405.0000,  405.1250,  405.2500,  ...,  407.1250,  407.2500,\n"
     "           407.3750],\n"
     "         ...,\n"
     "         [ 442.5000,  442.6250,  442.7500,  ...,  444.6250,  444.7500,\n"
     "           444.8750],\n"
     "         [ 445.0000,  445.1250,  445.2500,  ...,  447.1250,  447.2500,\n"
     "           447.3750],\n"
     "         [ 447.5000,  447.6250,  447.7500,  ...,  449.6250,  449.7500,\n"
     "           449.8750]],\n"
     "\n"
     "        [[ 450.0000,  450.1250,  450.2500,  ...,  452.1250,  452.2500,\n"
     "           452.3750],\n"
     "         [ 452.5000,  452.6250,  452.7500,  ...,  454.6250,  454.7500,\n"
     "           454.8750],\n"
     "         [ 455.0000,  455.1250,  455.2500,  ...,  457.1250,  457.2500,\n"
     "           457.3750],\n"
     "         ...,\n"
     "         [ 492.5000,  492.6250,  492.7500,  ...,  494.6250,  494.7500,\n"
     "           494.8750],\n"
     "         [ 495.0000,  495.1250,  495.2500,  ...,  497.1250,  497.2500,\n"
     "           497.3750],\n"
     "         [ 497.5000,  497.6250,  497.7500,  ...,  499.6250,  499.7500,\n"
     "           499.8750]]])"},
    {"sum_bool", "tensor([ True, False, False,  ..., False,  True, False])"},
    {"sum_wide_rows",
     "tensor([[-5.0000, -1.3000,  2.4000,  ...,  0.8000,  4.5000, -1.9000],\n"
     "        [ 1.8000, -4.6000, -0.9000,  ..., -2.5000,  1.2000,  4.9000],\n"
     "        [-1.5000,  2.2000, -4.2000,  ...,  4.3000, -2.1000,  1.6000],\n"
     "        [-4.8000, -1.1000,  2.6000,  ...,  1.0000,  4.7000, -1.7000]])"},
    {"sum_tall",
     "tensor([[-5.0000, -1.3000],\n"
     "        [ 2.4000, -4.0000],\n"
     "        [-0.3000,  3.4000],\n"
     "        ...,\n"
     "        [-3.5000,  0.2000],\n"
     "        [ 3.9000, -2.5000],\n"
     "        [ 1.2000,  4.9000]])"},
    {"sum_spike_int", "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"},
    {"sum_spike_float",
     "tensor([5.0000e-01, 1.5000e+00, 2.5000e+00,  ..., 1.9975e+03, 1.9985e+03,\n"
     "        1.9995e+03])"},
    {"sum_float16",
     "tensor([[-5.0000, -1.2998,  2.4004,  ...,  0.6001,  4.3008, -2.0996],\n"
     "        [ 1.5996, -4.8008, -1.0996,  ..., -2.9004,  0.7998,  4.5000],\n"
     "        [-1.9004,  1.7998, -4.6016,  ...,  3.6992, -2.6992,  1.0000],\n"
     "        ...,\n"
     "        [ 1.5000, -4.8984, -1.2002,  ..., -3.0000,  0.7002,  4.3984],\n"
     "        [-2.0000,  1.7002, -4.6992,  ...,  3.5996, -2.8008,  0.8999],\n"
     "        [ 4.6016, -1.7998,  1.9004,  ...,  0.1000,  3.8008, -2.5996]],\n"
     "       dtype=torch.float16)"},
    {"sum_bool_mat",
     "tensor([[ True, False, False,  ...,  True, False, False],\n"
     "        [ True, False, False,  ...,  True, False, False],\n"
     "        [ True, False, False,  ...,  True, False, False],\n"
     "        ...,\n"
     "        [ True, False, False,  ...,  True, False, False],\n"
     "        [ True, False, False,  ...,  True, False, False],\n"
     "        [ True, False, False,  ...,  True, False, False]])"},
    {"prec2", "tensor([  1.12,   2.50, 100.00])"},
    {"prec6", "tensor([0.100000, 0.333333])"},
    {"prec0", "tensor([2, 2])"},
    {"sci_on", "tensor([1.5000e+00, 2.0000e+00])"},
    {"sci_on_int", "tensor([1.0000e+00, 2.0000e+00, 3.0000e+00])"},
    {"sci_on_nonfinite", "tensor([nan, 0.])"},
    {"sci_on_neg", "tensor([-1.5000e+00,  2.0000e+00,         nan])"},
    {"sci_on_scalar", "tensor(-2.5000e+00, dtype=torch.float64)"},
    {"sci_off", "tensor([          0.0000, 10000000000.0000,           0.5000])"},
    {"sci_off_int", "tensor([10000000000.,           1.])"},
    {"sci_off_nan", "tensor([0.0000,    nan,   -inf])"},
    {"threshold10_at", "tensor([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"},
    {"threshold10_over", "tensor([ 0,  1,  2,  ...,  8,  9, 10])"},
    {"edge2_mat",
     "tensor([[-5.0000, -1.3000,  ..., -4.0000, -0.3000],\n"
     "        [ 3.4000, -3.0000,  ...,  4.4000, -2.0000],\n"
     "        ...,\n"
     "        [ 0.0000,  3.7000,  ...,  1.0000,  4.7000],\n"
     "        [-1.7000,  2.0000,  ..., -0.7000,  3.0000]])"},
    {"edge0_vec", "tensor([...], size=(20,))"},
    {"edge0_mat", "tensor([...], size=(4, 5))"},
    {"edge0_small",
     "tensor([[0, 1],\n"
     "        [2, 3],\n"
     "        [4, 5]], size=(3, 2))"},
    {"edge0_scalar", "tensor(3.5000, size=())"},
    {"prec8_f32", "tensor([0.10000000, 0.33333334])"},
    {"prec8_f64", "tensor([0.10000000, 0.33333333], dtype=torch.float64)"},
    {"linewidth40",
     "tensor([0.0000, 0.3333, 0.6667, 1.0000,\n"
     "        1.3333, 1.6667, 2.0000, 2.3333,\n"
     "        2.6667, 3.0000, 3.3333, 3.6667,\n"
     "        4.0000, 4.3333, 4.6667, 5.0000,\n"
     "        5.3333, 5.6667, 6.0000, 6.3333])"},
    {"linewidth40_suffix",
     "tensor([0.0000, 0.3333, 0.6667, 1.0000],\n"
     "       dtype=torch.float64)"},
    {"linewidth10",
     "tensor([0.0000,\n"
     "        0.3333,\n"
     "        0.6667,\n"
     "        1.0000,\n"
     "        1.3333])"},
    {"requires_grad", "tensor([1., 2.], requires_grad=True)"},
    {"requires_grad_scalar", "tensor(3., requires_grad=True)"},
    {"requires_grad_f64_wrap",
     "tensor([0.2500, 0.7500, 1.2500, 1.7500, 2.2500, 2.7500, 3.2500, 3.7500, 4.2500],\n"
     "       dtype=torch.float64, requires_grad=True)"},
    {"suffix_wrap_f64",
     "tensor([0.2500, 0.7500, 1.2500, 1.7500, 2.2500, 2.7500, 3.2500, 3.7500, 4.2500],\n"
     "       dtype=torch.float64)"},
    {"suffix_fits_f64",
     "tensor([0.2500, 0.7500, 1.2500, 1.7500, 2.2500, 2.7500, 3.2500, 3.7500],\n"
     "       dtype=torch.float64)"},
    {"grad_fn", "tensor([2., 3.], grad_fn=<AddBackward0>)"},
    {"grad_fn_f64",
     "tensor([0.0000, 0.5000, 1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000, 4.0000],\n"
     "       dtype=torch.float64, grad_fn=<MulBackward0>)"},
    {"default_f64_f32", "tensor([1.5000, 2.0000], dtype=torch.float32)"},
    {"default_f64_f64", "tensor([1.5000, 2.0000])"},
    {"default_f64_empty_f64", "tensor([])"},
    {"default_f64_empty_f32", "tensor([], dtype=torch.float32)"},
    {"default_f64_scalar", "tensor(0.2500)"},
    {"cuda_vec", "tensor([1., 2., 3.], device='cuda:0')"},
    {"cuda_f64", "tensor([1.5000, 2.0000], device='cuda:0', dtype=torch.float64)"},
    {"cuda_empty", "tensor([], device='cuda:0', size=(0, 3))"},
    {"cuda_empty_i64", "tensor([], device='cuda:0', dtype=torch.int64)"},
    {"cuda_grad", "tensor([1., 2.], device='cuda:0', requires_grad=True)"},
    {"cuda_transposed",
     "tensor([[-5.0000, -0.3000,  4.4000],\n"
     "        [-1.3000,  3.4000, -2.0000],\n"
     "        [ 2.4000, -3.0000,  1.7000],\n"
     "        [-4.0000,  0.7000, -4.7000]], device='cuda:0')"},
    {"cuda_narrowed",
     "tensor([[-1.3000,  2.4000, -4.0000],\n"
     "        [ 3.4000, -3.0000,  0.7000],\n"
     "        [-2.0000,  1.7000, -4.7000]], device='cuda:0')"},
};

static const char *expected(const char *name)
{
    for (size_t i = 0; i < sizeof expected_table / sizeof *expected_table; i++)
        if (!strcmp(expected_table[i][0], name)) return expected_table[i][1];
    return NULL;
}
