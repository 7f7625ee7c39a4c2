# PyTorch's side of bench/seq_ops.lua (same ops, same timing).  python3 bench/seq_ops.py [iters] [reps]
import sys, torch
import torch.nn.functional as F
sys.path.insert(0, __import__("os").path.dirname(__file__))
from op_timer import timer_from_argv
dev = "cuda"
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
time = timer_from_argv(50)

def r(*s): return torch.randn(*s, device=dev)
x, h = r(4096, 512), r(4096, 2048)
w512, b512, w2048, b2048, w1536, b1536 = r(512, 512), r(512), r(2048, 512), r(2048), r(1536, 512), r(1536)
w2048t = r(512, 2048)
g512, g2048, g1536 = r(4096, 512), r(4096, 2048), r(4096, 1536)
time("linear_4096x512_512", lambda: F.linear(x, w512, b512))
time("linear_4096x512_1536", lambda: F.linear(x, w1536, b1536))
time("linear_4096x512_2048", lambda: F.linear(x, w2048, b2048))
time("linear_4096x2048_512", lambda: F.linear(h, w2048t, b512))
time("dX_4096x512_by_512x512", lambda: g512.mm(w512))
time("dX_4096x2048_by_2048x512", lambda: g2048.mm(w2048))
time("dX_4096x512_by_512x2048", lambda: g512.mm(w2048t))
time("dX_4096x1536_by_1536x512", lambda: g1536.mm(w1536))
time("dW_512x4096_by_4096x512", lambda: g512.t().mm(x))
time("dW_2048x4096_by_4096x512", lambda: g2048.t().mm(x))
time("dW_512x4096_by_4096x2048", lambda: g512.t().mm(h))
time("dW_1536x4096_by_4096x512", lambda: g1536.t().mm(x))
q, k = r(256, 128, 64), r(256, 128, 64)
p = r(256, 128, 128)
time("bmm_qk_256x128x64", lambda: q.bmm(k.transpose(1, 2)))
time("bmm_pv_256x128x128", lambda: p.bmm(q))
y = r(32, 128, 512)
time("dropout_32x128x512", lambda: F.dropout(y, 0.1, True))
time("layer_norm_32x128x512", lambda: F.layer_norm(y, (512,), b512, b512))
time("softmax_256x128x128", lambda: F.softmax(p, -1))
time("add_32x128x512", lambda: y + y)
