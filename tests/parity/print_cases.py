"""PyTorch's repr of the tensors in tests/c/test_format.c, case by case.

Prints "=== <case name>" and then repr(t) for every case, in the order of
`test_format --dump`, so the two outputs diff line for line:

    python3 tests/parity/print_cases.py > torch.txt
    build/tests/test_format --dump > nnrepl.txt
    diff torch.txt nnrepl.txt

The cuda_* cases need a GPU; without one they print "SKIP no cuda".
"""
import math

import torch

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I64, I32, U8, BOOL = torch.int64, torch.int32, torch.uint8, torch.bool
NAN, INF = math.nan, math.inf
HAS_CUDA = torch.cuda.is_available()


def case(name, t):
    print("=== " + name)
    print(repr(t))


def cuda_case(name, make):
    if HAS_CUDA:
        case(name, make())
    else:
        print("=== " + name)
        print("SKIP no cuda")


def convert(dt, v):
    if dt == BOOL:
        return bool(v)
    if dt.is_floating_point:
        return float(v)
    return int(v)


def mk(dt, shape, vals, device="cpu"):
    """A tensor of dtype dt and the given shape from Python numbers (doubles rounded once to dt)."""
    return torch.tensor([convert(dt, v) for v in vals], dtype=dt, device=device).reshape(shape)


def mkg(dt, shape, g, device="cpu"):
    n = math.prod(shape)
    return mk(dt, shape, [g(i) for i in range(n)], device)


# Generators, written the same way in test_format.c (C's % equals Python's for i >= 0)
def g_i(i): return float(i)
def g_2i(i): return 2.0 * i
def g_third(i): return i / 3.0
def g_half(i): return i * 0.5
def g_mix(i): return ((i * 37) % 101) / 10.0 - 5.0
def g_eighth(i): return (i - 4000) / 8.0
def g_k(i): return float(i * 1000)
def g_mod(i): return float((i * 37) % 1000)
def g_every3(i): return 1.0 if i % 3 == 0 else 0.0
def g_quarter(i): return 0.5 * i + 0.25
def g_spike(i): return 1e12 if i == 1000 else float(i)
def g_spike_tiny(i): return 1e-9 if i == 1000 else i + 0.5


def float_cases():
    case("arange_2x3_float_x2", torch.arange(6).view(2, 3).float() * 2)
    case("float_small", mk(F32, [2], [0.1234, 1.0]))
    case("float_neg", mk(F32, [4], [-1.5, 2.25, -0.125, 3.0]))
    case("float_neg_int", mk(F32, [3], [-1, 2, -3]))
    case("float_negzero", mk(F32, [2], [-0.0, 1.0]))
    case("float_round", mk(F32, [3], [0.12345, 0.5, 2.00005]))
    case("float_fixed_wide", mk(F32, [2], [999.5, 1.25]))
    case("float_intmode_big", mk(F32, [2], [1e8, 1e6]))
    case("sci_small", mk(F32, [2], [1e-5, 1.0]))
    case("sci_big_int", mk(F32, [2], [1e10, 1.0]))
    case("sci_mixed", mk(F32, [3], [1e-5, 1e10, 0.5]))
    case("sci_max_only", mk(F32, [2], [2e8, 3e8]))
    case("sci_negative", mk(F32, [3], [-1e-5, 2.5, -300.0]))
    case("sci_ratio", mk(F32, [2], [12345.678, 0.5]))
    case("nan_inf", mk(F32, [4], [NAN, INF, -INF, 1.5]))
    case("nan_inf_intmode", mk(F32, [4], [NAN, 1, -INF, 0]))
    case("nonfinite_only", mk(F32, [3], [NAN, INF, 0]))
    case("nan_sci", mk(F32, [3], [NAN, 1e-5, 1]))
    case("zeros", mk(F32, [3], [0, 0, 0]))
    case("float64_vec", mk(F64, [2], [1.5, 2.0]))
    case("float64_intmode", mk(F64, [3], [1, 2, 3]))
    case("float64_precise", mk(F64, [2], [0.123456789, 1e-3]))
    case("float16_vec", mk(F16, [3], [0.1, 2.0, -3.5]))
    case("bfloat16_vec", mk(BF16, [3], [0.1, 2.0, -3.5]))


def int_cases():
    case("int64_vec", mk(I64, [3], [1, -20, 300]))
    case("int64_big", mk(I64, [2], [9007199254740993, -5]))
    case("bool_vec", mk(BOOL, [3], [1, 0, 1]))
    case("uint8_vec", mk(U8, [3], [0, 7, 255]))
    case("int32_mat", mk(I32, [2, 2], [1, -2, 30, 4]))


def scalar_and_empty_cases():
    case("scalar_float", mk(F32, [], [3.5]))
    case("scalar_int", mk(I64, [], [2]))
    case("scalar_bool", mk(BOOL, [], [1]))
    case("scalar_f64", mk(F64, [], [0.1]))
    case("scalar_nan", mk(F32, [], [NAN]))
    case("scalar_zero", mk(F32, [], [0]))
    case("scalar_sci", mk(F32, [], [1e-7]))
    case("scalar_int32", mk(I32, [], [7]))
    case("empty_f32", torch.empty(0, dtype=F32))
    case("empty_i64", torch.empty(0, dtype=I64))
    case("empty_2d", torch.empty(0, 3, dtype=F32))
    case("empty_3d_i32", torch.empty(2, 0, 3, dtype=I32))
    case("empty_bool", torch.empty(0, dtype=BOOL))


def layout_cases():
    case("wrap_third", torch.arange(30).float() / 3)
    case("wrap_int", mkg(I64, [40], g_k))
    case("wrap_rows", mkg(F32, [3, 30], g_mix))
    case("wrap_int_mat", mkg(I64, [4, 30], g_mod))
    case("layout_3d", mkg(I64, [2, 3, 4], g_i))
    case("layout_3d_float", mkg(F32, [2, 2, 3], g_third))
    case("layout_4d", mkg(F32, [2, 2, 2, 2], g_mix))
    case("layout_5d", mkg(I64, [1, 2, 1, 2, 2], g_i))
    case("layout_ones", mkg(F32, [1, 1, 3], g_half))
    case("transposed", mkg(F32, [3, 4], g_mix).t())


def summarize_cases():
    case("sum_arange2000", torch.arange(2000))
    case("sum_arange2000_float", torch.arange(2000).float())
    case("sum_1001", mkg(F32, [1001], g_third))
    case("sum_mat100", mkg(F32, [100, 100], g_half))
    case("sum_3d", torch.arange(8000).view(20, 20, 20))
    case("sum_3d_float", mkg(F32, [20, 20, 20], g_eighth))
    case("sum_bool", mkg(BOOL, [2000], g_every3))
    case("sum_wide_rows", mkg(F32, [4, 2000], g_mix))
    case("sum_tall", mkg(F32, [2000, 2], g_mix))
    case("sum_spike_int", mkg(I64, [2000], g_spike))
    case("sum_spike_float", mkg(F32, [2000], g_spike_tiny))
    case("sum_float16", mkg(F16, [30, 40], g_mix))
    case("sum_bool_mat", mkg(BOOL, [40, 30], g_every3))


def option_cases():
    torch.set_printoptions(precision=2)
    case("prec2", mk(F32, [3], [1.12345, 2.5, 100.0]))
    torch.set_printoptions(precision=6)
    case("prec6", mk(F32, [2], [0.1, 1.0 / 3.0]))
    torch.set_printoptions(precision=0)
    case("prec0", mk(F32, [2], [1.5, 2.25]))
    torch.set_printoptions(profile="default")
    torch.set_printoptions(sci_mode=True)
    case("sci_on", mk(F32, [2], [1.5, 2.0]))
    case("sci_on_int", mk(F32, [3], [1, 2, 3]))
    case("sci_on_nonfinite", mk(F32, [2], [NAN, 0]))
    case("sci_on_neg", mk(F32, [3], [-1.5, 2.0, NAN]))
    case("sci_on_scalar", mk(F64, [], [-2.5]))
    torch.set_printoptions(sci_mode=False)
    case("sci_off", mk(F32, [3], [1e-5, 1e10, 0.5]))
    case("sci_off_int", mk(F32, [2], [1e10, 1]))
    case("sci_off_nan", mk(F32, [3], [1e-5, NAN, -INF]))
    torch.set_printoptions(profile="default")
    torch.set_printoptions(threshold=10)
    case("threshold10_at", torch.arange(10))
    case("threshold10_over", torch.arange(11))
    torch.set_printoptions(threshold=10, edgeitems=2)
    case("edge2_mat", mkg(F32, [5, 5], g_mix))
    torch.set_printoptions(edgeitems=0)
    case("edge0_vec", mkg(F32, [20], g_mix))
    case("edge0_mat", mkg(I64, [4, 5], g_i))
    case("edge0_small", mkg(I64, [3, 2], g_i))
    case("edge0_scalar", mk(F32, [], [3.5]))
    torch.set_printoptions(profile="default")
    torch.set_printoptions(precision=8)
    case("prec8_f32", mk(F32, [2], [0.1, 1.0 / 3.0]))
    case("prec8_f64", mk(F64, [2], [0.1, 1.0 / 3.0]))
    torch.set_printoptions(profile="default")
    torch.set_printoptions(linewidth=40)
    case("linewidth40", mkg(F32, [20], g_third))
    case("linewidth40_suffix", mkg(F64, [4], g_third))
    torch.set_printoptions(linewidth=10)
    case("linewidth10", mkg(F32, [5], g_third))
    torch.set_printoptions(profile="default")


def suffix_cases():
    case("requires_grad", mk(F32, [2], [1, 2]).requires_grad_())
    case("requires_grad_scalar", mk(F32, [], [3]).requires_grad_())
    case("requires_grad_f64_wrap", mkg(F64, [9], g_quarter).requires_grad_())
    case("suffix_wrap_f64", mkg(F64, [9], g_quarter))
    case("suffix_fits_f64", mkg(F64, [8], g_quarter))
    a = mk(F32, [2], [1, 2]).requires_grad_()
    case("grad_fn", a + 1)
    b = mkg(F64, [9], g_i).requires_grad_()
    case("grad_fn_f64", b * 0.5)


def default_dtype_cases():
    torch.set_default_dtype(torch.float64)
    case("default_f64_f32", mk(F32, [2], [1.5, 2]))
    case("default_f64_f64", mk(F64, [2], [1.5, 2]))
    case("default_f64_empty_f64", torch.empty(0, dtype=F64))
    case("default_f64_empty_f32", torch.empty(0, dtype=F32))
    case("default_f64_scalar", mk(F64, [], [0.25]))
    torch.set_default_dtype(torch.float32)


def cuda_cases():
    cuda_case("cuda_vec", lambda: mk(F32, [3], [1, 2, 3], "cuda"))
    cuda_case("cuda_f64", lambda: mk(F64, [2], [1.5, 2], "cuda"))
    cuda_case("cuda_empty", lambda: torch.empty(0, 3, dtype=F32, device="cuda"))
    cuda_case("cuda_empty_i64", lambda: torch.empty(0, dtype=I64, device="cuda"))
    cuda_case("cuda_grad", lambda: mk(F32, [2], [1, 2], "cuda").requires_grad_())
    cuda_case("cuda_transposed", lambda: mkg(F32, [3, 4], g_mix, "cuda").t())
    cuda_case("cuda_narrowed", lambda: mkg(F32, [3, 4], g_mix, "cuda")[:, 1:])


if __name__ == "__main__":
    float_cases()
    int_cases()
    scalar_and_empty_cases()
    layout_cases()
    summarize_cases()
    option_cases()
    suffix_cases()
    default_dtype_cases()
    cuda_cases()
