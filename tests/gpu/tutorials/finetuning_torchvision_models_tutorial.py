# Parity of scripts/tutorials/finetuning_torchvision_models_tutorial.lua with PyTorch, PyTorch's
# side.
#
#   python3 tests/gpu/tutorials/finetuning_torchvision_models_tutorial.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/finetuning_torchvision_models_tutorial.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/finetuning_torchvision_models_tutorial.py compare DIR
#
# prepare: seed 0, the tutorial's default model as initialize_model("squeezenet", 2, ...) reshapes
# it (squeezenet1_0 with classifier[1] = nn.Conv2d(512, 2, kernel_size=(1,1), stride=(1,1))), twice:
# the feature-extracting model and the scratch model (random weights: the ImageNet checkpoint is
# not needed to compare the training) -> DIR/..._init.safetensors as "fe.*" and "scratch.*"; K = 10
# batches of 8 images 3x96x96 (0.05 randn, +0.1 on the channel of the label: at larger scales
# the 2-class head dies under its ReLU within a few steps) and labels 0/1 (seed 1) ->
# _data.safetensors. Then K steps
# of train_model's train phase for each: feature extraction (all parameters frozen but
# classifier.1's, SGD over the ones with requires_grad) and the scratch model (SGD over all),
# lr 0.001 momentum 0.9, CrossEntropyLoss. In eval mode (SqueezeNet has no BatchNorm: this only
# turns off the classifier's Dropout(0.5), whose draws would differ). 2K losses ->
# _torch_losses.txt, both models -> _torch_final.safetensors. float32, TF32 off.
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

NAME, K, BATCH, IMAGE, num_classes = "finetuning_torchvision_models_tutorial", 10, 8, 96, 2


def squeezenet_2(feature_extract):
    model_ft = models.squeezenet1_0()
    if feature_extract:
        for param in model_ft.parameters():
            param.requires_grad = False
    model_ft.classifier[1] = nn.Conv2d(512, num_classes, kernel_size=(1, 1), stride=(1, 1))
    model_ft.num_classes = num_classes
    return model_ft


def make_files(d):
    torch.manual_seed(0)
    init = prefixed("fe.", squeezenet_2(True).state_dict())
    init.update(prefixed("scratch.", squeezenet_2(False).state_dict()))
    save_st(P.path(NAME, d, "init.safetensors"), init)
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(K):
        x = torch.randn(BATCH, 3, IMAGE, IMAGE, generator=g) * 0.05
        y = torch.randint(0, num_classes, (BATCH,), generator=g)
        x[torch.arange(BATCH), y] += 0.1  # a learnable class: its channel brighter
        data[f"x.{i}"], data[f"y.{i}"] = x, y
    save_st(P.path(NAME, d, "data.safetensors"), data)


def train(d, device):
    init, data = load_st(P.path(NAME, d, "init.safetensors")), load_st(P.path(NAME, d, "data.safetensors"))
    criterion = nn.CrossEntropyLoss()
    losses, final = [], {}
    for phase in ["fe", "scratch"]:
        model = squeezenet_2(phase == "fe")
        model.load_state_dict(unprefixed(phase + ".", init))
        model = model.to(device)
        params_to_update = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.SGD(params_to_update, lr=0.001, momentum=0.9)
        model.eval()
        for i in range(K):
            inputs, labels = data[f"x.{i}"].to(device), data[f"y.{i}"].to(device)
            optimizer.zero_grad()
            with torch.set_grad_enabled(True):
                outputs = model(inputs)
                loss = criterion(outputs, labels)
                _, preds = torch.max(outputs, 1)
                loss.backward()
                optimizer.step()
            losses.append(loss.item())
        final.update(prefixed(phase + ".", model.state_dict()))
    return losses, as_model(final)


if __name__ == "__main__":
    P.main(NAME, make_files, train)
