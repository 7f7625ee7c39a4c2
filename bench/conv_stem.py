# PyTorch's side of bench/conv_stem.lua (same layers, same timing).  python3 bench/conv_stem.py [iters] [reps]
import sys, torch
import torch.nn.functional as F
sys.path.insert(0, __import__("os").path.dirname(__file__))
from op_timer import timer_from_argv
dev = "cuda"
torch.manual_seed(0)

time = timer_from_argv(30)

for name, size, k, s, p in (("alexnet", 227, 11, 4, 2), ("resnet", 224, 7, 2, 3)):
    for dt in (torch.float16, torch.float32):
        for cl in (False, True):
            fmt = torch.channels_last if cl else torch.contiguous_format
            x = torch.rand(64, 3, size, size, device=dev).to(dt).contiguous(memory_format=fmt)
            w = (torch.randn(64, 3, k, k, device=dev) * 0.05).to(dt).contiguous(memory_format=fmt).requires_grad_(True)
            b = torch.randn(64, device=dev).to(dt).requires_grad_(True)
            gy = torch.randn_like(F.conv2d(x, w, b, s, p))
            tag = f"{name}_{'f16' if dt == torch.float16 else 'f32'}{'_cl' if cl else ''}"
            def fwd():
                with torch.no_grad():
                    return F.conv2d(x, w, b, s, p)
            def fwd_bwd():
                w.grad, b.grad = None, None
                F.conv2d(x, w, b, s, p).backward(gy)
            time(tag + "_fwd", fwd)
            time(tag + "_fwd_bwd", fwd_bwd)
