# PyTorch's side of bench/vmap_per_sample_grads.lua: torch.func.vmap(grad(compute_loss)) on the same model,
# batch and timing (median wall-clock ms of runs calls after a warm-up, synchronised).
import sys, time, torch
import torch.nn as nn, torch.nn.functional as F
from torch.func import functional_call, vmap, grad
runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 64
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)

class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)
    def forward(self, x):
        x = F.relu(self.conv2(F.relu(self.conv1(x))))
        x = torch.flatten(F.max_pool2d(x, 2), 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)

model = SimpleCNN().to(device)
data = torch.randn(batch, 1, 28, 28, device=device)
targets = torch.randint(10, (batch,), device=device)
params = {k: v.detach() for k, v in model.named_parameters()}
buffers = {k: v.detach() for k, v in model.named_buffers()}
def compute_loss(p, b, sample, target):
    out = functional_call(model, (p, b), (sample.unsqueeze(0),))
    return F.nll_loss(out, target.unsqueeze(0))
psg = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
def sync():
    if device == "cuda": torch.cuda.synchronize()
def median_ms(fn):
    fn()
    t = []
    for _ in range(runs):
        sync(); t0 = time.perf_counter(); fn(); sync()
        t.append((time.perf_counter() - t0) * 1000)
    t.sort()
    return t[(runs - 1) // 2]
tb = median_ms(lambda: psg(params, buffers, data, targets))
print(f"torch {device} batch {batch}: vmap {tb:.2f} ms")
