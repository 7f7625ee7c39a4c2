"""PyTorch reference for bench/cuda_elementwise.c: the same ops on the same
shapes, timed the same way (CUDA events, 3 warm-up calls, 20 timed calls)."""
import time

import torch


def bench(name, fn, *ins):
    r = fn(*ins)
    nbytes = r.numel() * r.element_size() + sum(t.numel() * t.element_size() for t in ins if isinstance(t, torch.Tensor))
    for _ in range(3):
        fn(*ins)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(20):
        fn(*ins)
    e1.record()
    e1.synchronize()
    ms = e0.elapsed_time(e1) / 20
    print(f"{name:<36} {ms:9.4f} ms {nbytes / (ms * 1e-3) / 1e9:8.1f} GB/s")


def main():
    d = "cuda:0"
    torch.manual_seed(0)
    n = 1 << 24
    a, b = torch.rand(n, device=d), torch.rand(n, device=d)
    ah, bh, ab, bb = a.half(), b.half(), a.bfloat16(), b.bfloat16()
    m, m2 = torch.rand(4096, 4096, device=d), torch.rand(4096, 4096, device=d)
    mt, bias, mh = m2.t(), torch.rand(4096, device=d), m.half()
    t16 = torch.rand(1 << 20, 16, device=d)
    cond = a > b
    print(f"device: {torch.cuda.get_device_name()} (PyTorch {torch.__version__})")
    bench("add f32 16M", torch.add, a, b)
    bench("add f16 16M", torch.add, ah, bh)
    bench("mul bf16 16M", torch.mul, ab, bb)
    bench("mul f32 16M by a number", lambda x: x * 0.5, a)
    bench("add f32 f16 16M (promotion)", torch.add, a, bh)
    bench("exp f32 16M", torch.exp, a)
    bench("relu f16 16M", torch.relu, ah)
    bench("gt f32 16M -> bool", torch.gt, a, b)
    bench("where f32 16M", lambda x, y, c: torch.where(c, x, y), a, b, cond)
    bench("add f32 4096^2 + transposed", torch.add, m, mt)
    bench("add f32 4096^2 + bias row", torch.add, m, bias)
    bench("sum f32 16M (all)", torch.sum, a)
    bench("sum f16 16M (all)", torch.sum, ah)
    bench("sum f32 4096^2 dim 1 (rows)", lambda x: x.sum(1), m)
    bench("sum f32 4096^2 dim 0 (cols)", lambda x: x.sum(0), m)
    bench("sum f32 4096^2 transposed dim 1", lambda x: x.sum(1), mt)
    bench("amax f16 4096^2 dim 1", lambda x: x.amax(1), mh)
    bench("var f32 4096^2 dim 1", lambda x: x.var(1), m)
    bench("argmax f32 4096^2 dim 1", lambda x: x.argmax(1), m)
    bench("norm f32 16M (all)", torch.linalg.vector_norm, a)
    bench("mean f32 [1M,16] dim 1", lambda x: x.mean(1), t16)
    x, y = torch.rand(1000, device=d), torch.rand(1000, device=d)
    for _ in range(100):
        x + y
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20000):
        x + y
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    print(f"{'add f32 [1000] small op':<36} {(t1 - t0) / 20000 * 1e6:9.2f} us per op (host, enqueue only)")
    t0 = time.perf_counter()
    for _ in range(2000):
        x.sum()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    print(f"{'sum f32 [1000] small op':<36} {(t1 - t0) / 2000 * 1e6:9.2f} us per op (host, enqueue only)")


if __name__ == "__main__":
    main()
