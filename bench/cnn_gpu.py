# PyTorch's side of bench/cnn_gpu.lua: document 000's CNN step, same timing.
import statistics, torch, torch.nn as nn, torch.nn.functional as F
steps, reps, dev = 100, 7, "cuda"
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels=3, out_channels=32, kernel_size=(3, 3))
        self.pool1 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.conv2 = nn.Conv2d(in_channels=32, out_channels=64, kernel_size=3)
        self.pool2 = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(64 * 6 * 6, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 101)

    def forward(self, x):
        x = self.pool1(F.relu(self.conv1(x)))
        x = self.pool2(F.relu(self.conv2(x)))
        x = x.view(-1, 64 * 6 * 6)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


model = Net().to(dev)
criterion = nn.CrossEntropyLoss()
opt = torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9, dampening=0.1)
xs = [torch.randn(32, 3, 32, 32, device=dev) for _ in range(8)]
ys = [torch.randint(0, 101, (32,), device=dev) for _ in range(8)]


def step(i):
    k = i % 8
    out = model(xs[k])
    loss = criterion(out, ys[k])
    opt.zero_grad(); loss.backward(); opt.step()
    return loss


for i in range(30): step(i)
torch.cuda.synchronize()
times = []
for _ in range(reps):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(steps): step(i)
    e1.record(); e1.synchronize()
    times.append(e0.elapsed_time(e1) / steps)
print(f"pytorch cnn step: median {statistics.median(times):.4f} ms (min {min(times):.4f})")
