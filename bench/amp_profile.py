# PyTorch's side of `bench/amp_profile.lua MODE ncu`: AlexNet's step (batch 64, 227x227, AdamW),
# 10 steps of warm-up, then one step inside torch.cuda.profiler.profile() for Nsight Compute:
#   ncu --profile-from-start off --metrics gpu__time_duration.sum python3 bench/amp_profile.py amp
import sys

import torch
from torchvision.models import alexnet

from train_step import make_step

mode = sys.argv[1] if len(sys.argv) > 1 else "amp"
dev = torch.device("cuda")
torch.manual_seed(0)
X = torch.rand(64, 3, 227, 227).to(dev)
Y = torch.randint(0, 1000, (64,)).to(dev)
torch.manual_seed(0)
model = alexnet().to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
step = make_step(model, opt, X, Y, torch.float16 if mode == "amp" else None)
for _ in range(10):
    step()
torch.cuda.synchronize()
with torch.cuda.profiler.profile():
    step()
    torch.cuda.synchronize()
