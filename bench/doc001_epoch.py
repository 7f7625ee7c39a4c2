# PyTorch's side of scripts/train_mnist.lua (document 001) for the epoch-time comparison:
# the same MLP, random_split 50k/10k, DataLoaders of 128/256 with 2 workers and
# pin_memory, DeviceDataLoader, SGD lr 0.1, 5 epochs, then test accuracy.
# Usage: python3 bench/doc001_epoch.py ROOT  (ROOT/FashionMNIST/raw/ holds the IDX files)
import sys, time, torch, torch.nn as nn, torch.nn.functional as F
from torchvision.datasets import FashionMNIST
from torchvision.transforms import ToTensor
from torch.utils.data import DataLoader, random_split

root = sys.argv[1]
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
dataset = FashionMNIST(root=root, download=False, transform=ToTensor())
test_dataset = FashionMNIST(root=root, train=False, download=False, transform=ToTensor())
train_set, val_set = random_split(dataset, [len(dataset) - 10000, 10000])
train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=2, pin_memory=True)
val_loader = DataLoader(val_set, batch_size=256, shuffle=True, num_workers=2, pin_memory=True)
test_loader = DataLoader(test_dataset, batch_size=256, num_workers=2, pin_memory=True)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

def to_device(data, device):
    if isinstance(data, (list, tuple)): return [to_device(x, device) for x in data]
    return data.to(device, non_blocking=True)

class DeviceDataLoader:
    def __init__(self, dl, device): self.dl, self.device = dl, device
    def __iter__(self):
        for b in self.dl: yield to_device(b, self.device)
    def __len__(self): return len(self.dl)

def accuracy(out, labels):
    return torch.tensor(torch.sum(torch.argmax(out, dim=1) == labels).item() / len(labels))

class Mnistmodel(nn.Module):
    def __init__(self, i, h, o):
        super().__init__(); self.linear1 = nn.Linear(i, h); self.linear2 = nn.Linear(h, o)
    def forward(self, xb): return self.linear2(F.relu(self.linear1(xb.view(xb.size(0), -1))))
    def training_step(self, batch):
        images, labels = batch
        return F.cross_entropy(self(images), labels)
    def validation_step(self, batch):
        images, labels = batch
        out = self(images)
        return {"val_loss": F.cross_entropy(out, labels), "val_acc": accuracy(out, labels)}
    def validation_epoch_end(self, outputs):
        return {"val_loss": torch.stack([x["val_loss"] for x in outputs]).mean(),
                "val_acc": torch.stack([x["val_acc"] for x in outputs]).mean()}
    def epoch_end(self, epoch, result):
        print("Epoch [{}], val_loss: {:.4f}, val_acc: {:.4f}".format(epoch, result["val_loss"], result["val_acc"]))

def evaluate(model, val_loader):
    with torch.no_grad():
        return model.validation_epoch_end([model.validation_step(b) for b in val_loader])

train_loader, val_loader = DeviceDataLoader(train_loader, device), DeviceDataLoader(val_loader, device)
model = Mnistmodel(784, 32, 10).to(device)
optimizer = torch.optim.SGD(model.parameters(), 0.1)
t0 = time.perf_counter()
for epoch in range(epochs):
    for batch in train_loader:
        loss = model.training_step(batch); loss.backward(); optimizer.step(); optimizer.zero_grad()
    model.epoch_end(epoch, evaluate(model, val_loader))
seconds = time.perf_counter() - t0
correct = total = 0
with torch.no_grad():
    for images, labels in DeviceDataLoader(test_loader, device):
        correct += (model(images).argmax(1) == labels).sum().item(); total += len(labels)
print(f"pytorch doc001: test accuracy {correct / total:.4f}, training {seconds:.1f} s for {epochs} epochs, {seconds / epochs:.2f} s/epoch")
