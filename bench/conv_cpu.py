"""PyTorch's numbers for bench/conv_cpu.c: the same convolutions and pool on the CPU,
three warm-ups, then the median of the repeats in milliseconds.
Usage: python3 conv_cpu.py [repeats] [threads]"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 11
if len(sys.argv) > 2:
    torch.set_num_threads(int(sys.argv[2]))
torch.manual_seed(0)


def median_ms(fn):
    for _ in range(3):
        fn()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def layer(name, n, c, hw, o, k, pad):
    x = torch.randn(n, c, hw, hw)
    w = torch.randn(o, c, k, k)
    b = torch.randn(o)
    g = torch.ones(n, o, hw + 2 * pad - k + 1, hw + 2 * pad - k + 1)

    def step():
        y = F.conv2d(x, w, b, padding=pad)
        if y.requires_grad:
            y.backward(g)
            x.grad = w.grad = b.grad = None

    f = median_ms(step)
    w.requires_grad_(True)
    b.requires_grad_(True)
    fb = median_ms(step)
    x.requires_grad_(True)
    fbx = median_ms(step)
    print(f"{name:34s} forward {f:8.2f} ms   fwd+bwd(w,b) {fb:8.2f} ms   fwd+bwd(x,w,b) {fbx:8.2f} ms")


print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
layer("conv 3->32 k3, 128x3x32x32", 128, 3, 32, 32, 3, 0)
layer("conv 32->64 k3 p1, 128x32x15x15", 128, 32, 15, 64, 3, 1)
layer("conv 64->64 k3 p1, 128x64x7x7", 128, 64, 7, 64, 3, 1)
y = torch.randn(128, 32, 30, 30)
print(f"{'max_pool2d 2, 128x32x30x30':34s} forward {median_ms(lambda: F.max_pool2d(y, 2)):8.2f} ms")
