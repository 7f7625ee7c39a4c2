# PyTorch's side of bench/amp_ops.lua (same ops, same timing).  python3 bench/amp_ops.py [iters] [reps]
import sys, torch, torchvision
import torch.nn.functional as F
sys.path.insert(0, __import__("os").path.dirname(__file__))
from op_timer import timer_from_argv
dev = "cuda"
torch.manual_seed(0)

time = timer_from_argv(50)

shapes = [(64, 64, 55, 55), (64, 192, 27, 27), (64, 384, 13, 13), (64, 256, 13, 13)]
for dt in (torch.float16, torch.float32):
    name = "f16" if dt == torch.float16 else "f32"
    for s in shapes:
        g = torch.randn(s, device=dev).to(dt)
        time(f"sum023_{name}_{s[1]}x{s[2]}", lambda: g.sum((0, 2, 3)))
    for s in (shapes[0], shapes[2]):
        g = torch.randn(s, device=dev).to(dt).contiguous(memory_format=torch.channels_last)
        time(f"sum023_cl_{name}_{s[1]}x{s[2]}", lambda: g.sum((0, 2, 3)))
    h = torch.randn(64, 9216, device=dev).to(dt)
    time(f"dropout_{name}_64x9216", lambda: F.dropout(h, 0.5, True))
    u = torch.rand(64, 9216, device=dev).to(dt)
    time(f"lt_{name}_64x9216", lambda: u.lt(0.5))
    time(f"rand_like_{name}_64x9216", lambda: torch.rand_like(u))
w = torch.randn(4096, 9216, device=dev)
w16 = w.half()
time("cast_f32_to_f16_4096x9216", lambda: w.half())
time("cast_f16_to_f32_4096x9216", lambda: w16.float())
x = torch.randn(64, 256, 13, 13, device=dev).half().requires_grad_(True)
gp = torch.randn(64, 256, 6, 6, device=dev).half()
def pool():
    x.grad = None
    F.max_pool2d(x, 3, 2).backward(gp)
time("max_pool2d_fwd_bwd_f16_256x13", pool)

def pool_case(dt, cl):
    xp = torch.randn(64, 64, 55, 55, device=dev).to(dt)
    gq = torch.randn(64, 64, 27, 27, device=dev).to(dt)
    if cl:
        xp = xp.contiguous(memory_format=torch.channels_last)
        gq = gq.contiguous(memory_format=torch.channels_last)
    tag = f"{'cl_' if cl else ''}{'f16' if dt == torch.float16 else 'f32'}_64x55"
    time(f"max_pool2d_fwd_{tag}", lambda: F.max_pool2d(xp, 3, 2))
    xp.requires_grad_(True)
    def run():
        xp.grad = None
        F.max_pool2d(xp, 3, 2).backward(gq)
    time(f"max_pool2d_fwd_bwd_{'cl_' if cl else ''}{'f16' if dt == torch.float16 else 'f32'}_64x55", run)
for dt in (torch.float16, torch.float32):
    for cl in (False, True):
        pool_case(dt, cl)

CL = torch.channels_last
for dt in (torch.float16, torch.float32):
    name = "f16" if dt == torch.float16 else "f32"
    a = torch.randn(64, 64, 56, 56, device=dev).to(dt)
    ac = a.contiguous(memory_format=CL)
    time(f"to_cl_{name}_64x64x56", lambda: a.contiguous(memory_format=CL))
    time(f"from_cl_{name}_64x64x56", lambda: ac.contiguous())
    img = torch.randn(64, 3, 227, 227, device=dev).to(dt)
    time(f"to_cl_{name}_64x3x227", lambda: img.contiguous(memory_format=CL))
    pad = torch.zeros(64, 4, 227, 227, device=dev).to(dt).contiguous(memory_format=CL)
    head = pad.narrow(1, 0, 3)
    def into():
        pad.zero_()
        head.copy_(img)
    time(f"into_cl4_{name}_64x3x227", into)

logits = torch.randn(64, 1000, device=dev).requires_grad_(True)
target = torch.randint(0, 1000, (64,)).to(dev)
time("cross_entropy_64x1000", lambda: F.cross_entropy(logits, target))
def ce():
    logits.grad = None
    F.cross_entropy(logits, target).backward()
time("cross_entropy_fwd_bwd_64x1000", ce)

model = torchvision.models.alexnet().to(dev)
for q in model.parameters(): q.grad = torch.randn_like(q)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
time("adamw_step_alexnet", lambda: opt.step())
