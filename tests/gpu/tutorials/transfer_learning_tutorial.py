# Parity of scripts/tutorials/transfer_learning_tutorial.lua with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/tutorials/transfer_learning_tutorial.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/transfer_learning_tutorial.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/transfer_learning_tutorial.py compare DIR
#
# prepare: seed 0, torchvision's resnet18() with fc replaced by nn.Linear(512, 2), twice, as the
# tutorial builds model_ft then model_conv (random weights: the ImageNet checkpoint is not needed
# to compare the training) -> DIR/..._init.safetensors as "ft.*" and "conv.*"; K = 8 batches of 4
# images 3x64x64 (randn, as Normalize leaves them) and labels 0/1 (seed 1) -> _data.safetensors.
# Then K steps of train_model's train phase for each: finetuning (SGD over all parameters) and the
# fixed feature extractor (all parameters frozen but fc, SGD over fc's), lr 0.001 momentum 0.9,
# StepLR(step_size=7, gamma=0.1) stepped after each step (a batch stands for an epoch, so step 8
# runs at lr 1e-4), training mode (BatchNorm's batch statistics). 2K losses -> _torch_losses.txt,
# both models -> _torch_final.safetensors. In float64, as tests/gpu/examples/imagenet.py says why
# (BatchNorm over few values in layer4).
import os
import sys

import torch
import torch.nn as nn
from torchvision import models

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity as P  # noqa: E402
from example_parity import load_st, save_st  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _phases import prefixed, unprefixed, as_model  # noqa: E402

NAME, K, BATCH, IMAGE = "transfer_learning_tutorial", 8, 4, 64


def resnet18_2():
    model = models.resnet18()
    model.fc = nn.Linear(model.fc.in_features, 2)
    return model


def make_files(d):
    torch.manual_seed(0)
    init = prefixed("ft.", resnet18_2().state_dict())
    init.update(prefixed("conv.", resnet18_2().state_dict()))
    save_st(P.path(NAME, d, "init.safetensors"), init)
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(K):
        data[f"x.{i}"] = torch.randn(BATCH, 3, IMAGE, IMAGE, generator=g)
        data[f"y.{i}"] = torch.randint(0, 2, (BATCH,), generator=g)
    save_st(P.path(NAME, d, "data.safetensors"), data)


def train(d, device):
    init, data = load_st(P.path(NAME, d, "init.safetensors")), load_st(P.path(NAME, d, "data.safetensors"))
    criterion = nn.CrossEntropyLoss()
    losses, final = [], {}
    for phase in ["ft", "conv"]:
        model = resnet18_2()
        model.load_state_dict(unprefixed(phase + ".", init))
        if phase == "conv":
            for param in model.parameters():
                param.requires_grad = False
            for param in model.fc.parameters():
                param.requires_grad = True
        model = model.to(device, torch.float64)
        params = model.parameters() if phase == "ft" else model.fc.parameters()
        optimizer = torch.optim.SGD(params, lr=0.001, momentum=0.9)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.1)
        model.train()
        for i in range(K):
            inputs, labels = data[f"x.{i}"].to(device, torch.float64), data[f"y.{i}"].to(device)
            optimizer.zero_grad()
            with torch.set_grad_enabled(True):
                outputs = model(inputs)
                _, preds = torch.max(outputs, 1)
                loss = criterion(outputs, labels)
                loss.backward()
                optimizer.step()
            scheduler.step()
            losses.append(loss.item())
        final.update(prefixed(phase + ".", model.state_dict()))
    return losses, as_model(final)


if __name__ == "__main__":
    P.main(NAME, make_files, train)
