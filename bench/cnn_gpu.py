# PyTorch's side of bench/cnn_gpu.lua: document 000's CNN step, same timing.
import torch, torch.nn as nn
from doc000_net import Net  # bench/doc000_net.py, next to this file
from gpu_step_timing import report
steps, reps, dev = 100, 7, "cuda"
torch.manual_seed(0)
model = Net().to(dev)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, dampening=0.1)
xs = [torch.randn(32, 3, 32, 32, device=dev) for _ in range(8)]
ys = [torch.randint(0, 101, (32,), device=dev) for _ in range(8)]
report("pytorch cnn", lambda x, y: criterion(model(x), y), opt, xs, ys, steps, reps, 30)
