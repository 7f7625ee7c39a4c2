"""PyTorch reference for bench/cuda_matmul_conv.c: the same products, convolutions and
pool on cuda:0, timed the same way (median of 5 rounds, synchronised per round)."""
import statistics
import time

import torch
import torch.nn.functional as F


def time_op(f, iters):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    r = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(iters):
            f()
        torch.cuda.synchronize()
        r.append((time.perf_counter() - t0) * 1e3 / iters)
    return statistics.median(r)


def bench_mm(tag, dt, m, k, n, tf32, iters):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    a = torch.rand(m, k, device="cuda").to(dt)
    b = torch.rand(k, n, device="cuda").to(dt)
    ms = time_op(lambda: torch.mm(a, b), iters)
    print(f"mm {str(dt).replace('torch.', '')} {tag} {m}x{k}x{n}: {ms:.4f} ms, {2.0 * m * n * k / ms * 1e-9:.1f} TFLOP/s")
    torch.backends.cuda.matmul.allow_tf32 = False


def bench_conv(dt, N, C, HW, O, kk, bench, tf32, bias=True):
    torch.backends.cudnn.benchmark = bench
    torch.backends.cudnn.allow_tf32 = tf32
    x = torch.rand(N, C, HW, HW, device="cuda").to(dt)
    w = torch.rand(O, C, kk, kk, device="cuda").to(dt)
    b = torch.rand(O, device="cuda").to(dt) if bias else None
    gy = torch.rand(N, O, HW, HW, device="cuda").to(dt)
    p = kk // 2
    flops = 2.0 * N * O * HW * HW * C * kk * kk * 1e-9
    f = time_op(lambda: F.conv2d(x, w, b, 1, p), 20)
    bi = time_op(lambda: torch.nn.grad.conv2d_input(x.shape, w, gy, 1, p), 20)
    bw = time_op(lambda: torch.nn.grad.conv2d_weight(x, w.shape, gy, 1, p), 20)
    name = str(dt).replace("torch.", "")
    print(f"conv2d {name}{' benchmark' if bench else ''}{' tf32' if tf32 else ''}{'' if bias else ' no-bias'} N{N} C{C} {HW}x{HW} O{O} k{kk}: "
          f"fwd {f:.3f} ms ({flops / f:.1f} TFLOP/s), bwd-input {bi:.3f} ms, bwd-weight {bw:.3f} ms")
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = True


def main():
    torch.manual_seed(0)
    bench_mm("", torch.float32, 4096, 4096, 4096, False, 10)
    bench_mm("tf32", torch.float32, 4096, 4096, 4096, True, 10)
    bench_mm("", torch.float16, 4096, 4096, 4096, False, 20)
    bench_mm("", torch.bfloat16, 8192, 8192, 8192, False, 5)
    bench_mm("", torch.float64, 2048, 2048, 2048, False, 5)
    bench_mm("", torch.float32, 64, 64, 64, False, 2000)
    a = torch.rand(64, 256, 64, device="cuda").half()
    b = torch.rand(64, 64, 256, device="cuda").half()
    print(f"bmm float16 64x[256x64x256]: {time_op(lambda: torch.bmm(a, b), 100):.4f} ms")
    bench_conv(torch.float32, 64, 64, 56, 64, 3, False, False)
    bench_conv(torch.float32, 64, 64, 56, 64, 3, False, True)
    bench_conv(torch.float32, 64, 64, 56, 64, 3, True, True)
    bench_conv(torch.float16, 64, 64, 56, 64, 3, False, False)
    bench_conv(torch.float16, 64, 64, 56, 64, 3, True, False)
    bench_conv(torch.float32, 128, 3, 32, 32, 3, False, True)
    bench_conv(torch.float32, 128, 3, 32, 32, 3, False, True, False)
    bench_conv(torch.float32, 128, 3, 32, 32, 3, True, True)
    x = torch.rand(64, 64, 112, 112, device="cuda")
    print(f"max_pool2d float32 [64, 64, 112, 112] k2 s2: {time_op(lambda: F.max_pool2d(x, 2, 2), 50):.4f} ms")


if __name__ == "__main__":
    main()
