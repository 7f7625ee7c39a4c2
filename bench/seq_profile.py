# PyTorch's side of bench/seq_profile.lua: the same step, its CUDA kernels' time over 20 steps
#   python3 bench/seq_profile.py [fp32|amp]
import sys
import torch
import torch.nn as nn
from torch.profiler import profile, ProfilerActivity

from train_step import make_loss_step

mode = sys.argv[1] if len(sys.argv) > 1 else "fp32"
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048, dropout=0.1, batch_first=True), 4,
                            enable_nested_tensor=False).cuda()
src = torch.randn(32, 128, 512).cuda()
opt = torch.optim.Adam(enc.parameters(), lr=1e-4)
scaler = torch.amp.GradScaler("cuda") if mode == "amp" else None


step = make_loss_step(lambda: enc(src).pow(2).mean(), opt, torch.float16 if scaler else None, scaler)


for _ in range(10):
    step()
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as prof:
    for _ in range(20):
        step()
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=30, max_name_column_width=70))
