# PyTorch's side of bench/mlp_gpu.lua: the same MLP step, same timing.
import torch, torch.nn as nn, torch.nn.functional as F
from gpu_step_timing import report  # bench/gpu_step_timing.py, next to this file
steps, reps, dev = 200, 7, "cuda"
torch.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
xs = [torch.rand(128, 1, 28, 28, device=dev) for _ in range(8)]
ys = [torch.randint(0, 10, (128,), device=dev) for _ in range(8)]
report("pytorch mlp", lambda x, y: F.cross_entropy(model(x), y), opt, xs, ys, steps, reps, 50)
