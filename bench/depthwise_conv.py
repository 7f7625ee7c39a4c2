# PyTorch's side of bench/depthwise_conv.lua (same arguments and output lines).
import statistics, sys
import torch, torch.nn.functional as F

dtype = torch.float16 if (sys.argv[1] if len(sys.argv) > 1 else "fp32") == "fp16" else torch.float32
torch.backends.cudnn.benchmark = len(sys.argv) > 2 and sys.argv[2] == "1"
SHAPES = [(96, 56, 7, 1), (192, 28, 7, 1), (384, 14, 7, 1), (768, 7, 7, 1), (32, 112, 3, 1),
          (144, 56, 3, 2), (240, 28, 5, 1), (672, 14, 5, 1), (960, 7, 5, 1)]
N, reps, calls = 32, 5, 10

def median_us(fn):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(calls):
            fn()
        e1.record(); e1.synchronize()
        times.append(e0.elapsed_time(e1) / calls * 1e3)
    return statistics.median(times)

for C, H, k, stride in SHAPES:
    torch.manual_seed(0)
    x = torch.randn(N, C, H, H, device="cuda", dtype=dtype)
    w = torch.randn(C, 1, k, k, device="cuda", dtype=dtype)
    conv = lambda a, b: F.conv2d(a, b, None, stride, k // 2, 1, C)
    g = torch.randn_like(conv(x, w))
    fwd = median_us(lambda: conv(x, w))
    xi, wi = x.clone().requires_grad_(True), w.clone()
    bin_ = median_us(lambda: torch.autograd.grad(conv(xi, wi), (xi,), g)) - fwd
    xw, ww = x.clone(), w.clone().requires_grad_(True)
    bw = median_us(lambda: torch.autograd.grad(conv(xw, ww), (ww,), g)) - fwd
    print(f"dw C H k s {C} {H} {k} {stride} fwd_us {fwd:.1f} bwd_input_us {bin_:.1f} bwd_weight_us {bw:.1f}")
