# Parity of scripts/tutorials/knowledge_distillation_tutorial with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/tutorials/knowledge_distillation_tutorial.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/knowledge_distillation_tutorial.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/knowledge_distillation_tutorial.py compare DIR
#
# prepare: seed 0, the tutorial's DeepNN (the teacher: DIR/..._data.safetensors "teacher.*"), then
# LightNN and ModifiedLightNNRegressor (the students: DIR/..._init.safetensors, "kd.*" and "cos.*"
# both the LightNN, "mse.*" the regressor student); K = 10 batches of 16 CIFAR-sized images (randn)
# and labels (seed 1) -> the data file ("x.i", "y.i"). Then K steps of each of the tutorial's three
# distillation loops in turn, on the same batches: train_knowledge_distillation (T 2, weights
# 0.25 / 0.75), train_cosine_loss (0.25 / 0.75) and train_mse_loss (0.25 / 0.75), Adam lr 0.001,
# the teacher in eval mode. The students run in eval mode too (the tutorial's train mode only
# adds Dropout(0.1), whose draws would differ). 3K losses -> _torch_losses.txt, the three students
# -> _torch_final.safetensors. float32, TF32 off.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity as P  # noqa: E402
from example_parity import load_st, save_st  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _phases import prefixed, unprefixed, as_model  # noqa: E402

NAME, K, BATCH = "knowledge_distillation_tutorial", 10, 16


def conv(i, o):
    return nn.Conv2d(i, o, kernel_size=3, padding=1)


class DeepNN(nn.Module):  # the tutorial's teacher; forward_mode picks what the Modified* classes return
    def __init__(self, num_classes=10, forward_mode="logits"):
        super().__init__()
        self.features = nn.Sequential(conv(3, 128), nn.ReLU(), conv(128, 64), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2),
                                      conv(64, 64), nn.ReLU(), conv(64, 32), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.classifier = nn.Sequential(nn.Linear(2048, 512), nn.ReLU(), nn.Dropout(0.1), nn.Linear(512, num_classes))
        self.forward_mode = forward_mode

    def forward(self, x):
        x = self.features(x)
        flat = torch.flatten(x, 1)
        logits = self.classifier(flat)
        if self.forward_mode == "cosine":  # ModifiedDeepNNCosine
            return logits, torch.nn.functional.avg_pool1d(flat, 2)
        if self.forward_mode == "regressor":  # ModifiedDeepNNRegressor
            return logits, x
        return logits


class LightNN(nn.Module):  # the tutorial's student (ModifiedLightNNCosine when cosine=True)
    def __init__(self, num_classes=10, cosine=False):
        super().__init__()
        self.features = nn.Sequential(conv(3, 16), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2),
                                      conv(16, 16), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.classifier = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, num_classes))
        self.cosine = cosine

    def forward(self, x):
        x = self.features(x)
        flat = torch.flatten(x, 1)
        logits = self.classifier(flat)
        return (logits, flat) if self.cosine else logits


class ModifiedLightNNRegressor(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(conv(3, 16), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2),
                                      conv(16, 16), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.regressor = nn.Sequential(conv(16, 32))
        self.classifier = nn.Sequential(nn.Linear(1024, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, num_classes))

    def forward(self, x):
        x = self.features(x)
        regressor_output = self.regressor(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x, regressor_output


def make_files(d):
    torch.manual_seed(0)
    teacher = DeepNN()
    light = LightNN()
    reg = ModifiedLightNNRegressor()
    init = {**prefixed("kd.", light.state_dict()), **prefixed("cos.", light.state_dict()), **prefixed("mse.", reg.state_dict())}
    save_st(P.path(NAME, d, "init.safetensors"), init)
    g = torch.Generator().manual_seed(1)
    data = prefixed("teacher.", teacher.state_dict())
    for i in range(K):
        data[f"x.{i}"] = torch.randn(BATCH, 3, 32, 32, generator=g)
        data[f"y.{i}"] = torch.randint(0, 10, (BATCH,), generator=g)
    save_st(P.path(NAME, d, "data.safetensors"), data)


def train(d, device):
    init, data = load_st(P.path(NAME, d, "init.safetensors")), load_st(P.path(NAME, d, "data.safetensors"))
    batches = [(data[f"x.{i}"].to(device), data[f"y.{i}"].to(device)) for i in range(K)]
    ce_loss = nn.CrossEntropyLoss()
    losses, final = [], {}

    def run(prefix, student, teacher_mode, loss_of):
        student.load_state_dict(unprefixed(prefix + ".", init))
        student.to(device).eval()
        teacher = DeepNN(forward_mode=teacher_mode)
        teacher.load_state_dict(unprefixed("teacher.", data))
        teacher.to(device).eval()
        optimizer = torch.optim.Adam(student.parameters(), lr=0.001)
        for inputs, labels in batches:
            optimizer.zero_grad()
            with torch.no_grad():
                teacher_out = teacher(inputs)
            loss = loss_of(teacher_out, student(inputs), labels)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        final.update(prefixed(prefix + ".", student.state_dict()))

    def kd(teacher_logits, student_logits, labels, T=2):
        soft_targets = nn.functional.softmax(teacher_logits / T, dim=-1)
        soft_prob = nn.functional.log_softmax(student_logits / T, dim=-1)
        soft_targets_loss = -torch.sum(soft_targets * soft_prob) / soft_prob.size()[0] * (T**2)
        return 0.25 * soft_targets_loss + 0.75 * ce_loss(student_logits, labels)

    cosine_loss = nn.CosineEmbeddingLoss()

    def cos(teacher_out, student_out, labels):
        _, teacher_hidden = teacher_out
        student_logits, student_hidden = student_out
        hidden_rep_loss = cosine_loss(student_hidden, teacher_hidden, target=torch.ones(labels.size(0)).to(device))
        return 0.25 * hidden_rep_loss + 0.75 * ce_loss(student_logits, labels)

    mse_loss = nn.MSELoss()

    def mse(teacher_out, student_out, labels):
        _, teacher_feature_map = teacher_out
        student_logits, regressor_feature_map = student_out
        return 0.25 * mse_loss(regressor_feature_map, teacher_feature_map) + 0.75 * ce_loss(student_logits, labels)

    run("kd", LightNN(), "logits", kd)
    run("cos", LightNN(cosine=True), "cosine", cos)
    run("mse", ModifiedLightNNRegressor(), "regressor", mse)

    return losses, as_model(final)


if __name__ == "__main__":
    P.main(NAME, make_files, train)
