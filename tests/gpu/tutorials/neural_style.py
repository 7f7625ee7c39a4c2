# Parity of scripts/tutorials/neural_style_tutorial (the port of pytorch/tutorials
# advanced_source/neural_style_tutorial.py) with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/tutorials/neural_style.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/neural_style.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/neural_style.py compare DIR
#
# prepare: an untrained torchvision vgg19().features (seed 0) -> DIR/neural_style_cnn.safetensors;
# a style and a content image, torch.rand (1, 3, 32, 48) each (generator seed 1) ->
# _data.safetensors ("style_img", "content_img"); the input image, the content image's clone ->
# _init.safetensors ("input_img"); then the tutorial's get_style_model_and_losses (content loss
# at conv_4, style losses at conv_1..conv_5) and K = 3 calls of optimizer.step(closure) with its
# L-BFGS and closure (clamp, style weight 1e6, content weight 1); the losses are what each step
# returns (its first evaluation's loss), the final weights the clamped input image. float64: each
# step evaluates the closure up to 20 times and L-BFGS's history magnifies rounding. Even so the
# two sides part by about 30x a step (1e-15, 2e-15, 1e-12, 6e-11, 3e-8 in the first five steps'
# losses on an H200; the clamp makes the objective kinked), so K is 3.
import copy
import os
import sys
import types

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torchvision.models as models

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity as P  # noqa: E402

NAME = "neural_style"
K, H, W = 3, 32, 48
style_weight, content_weight = 1000000, 1
device = None  # set in train, as the tutorial's global


class ContentLoss(nn.Module):  # the tutorial's
    def __init__(self, target,):
        super(ContentLoss, self).__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):  # the tutorial's
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):  # the tutorial's
    def __init__(self, target_feature):
        super(StyleLoss, self).__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):  # the tutorial's
    def __init__(self, mean, std):
        super(Normalization, self).__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


content_layers_default = ['conv_4']
style_layers_default = ['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5']


def get_style_model_and_losses(cnn, normalization_mean, normalization_std,
                               style_img, content_img,
                               content_layers=content_layers_default,
                               style_layers=style_layers_default):  # the tutorial's
    cnn = copy.deepcopy(cnn)
    normalization = Normalization(normalization_mean, normalization_std).to(device)
    content_losses = []
    style_losses = []
    model = nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = 'conv_{}'.format(i)
        elif isinstance(layer, nn.ReLU):
            name = 'relu_{}'.format(i)
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = 'pool_{}'.format(i)
        elif isinstance(layer, nn.BatchNorm2d):
            name = 'bn_{}'.format(i)
        else:
            raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.__name__))
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module("content_loss_{}".format(i), content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module("style_loss_{}".format(i), style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[:(i + 1)]
    return model, style_losses, content_losses


def get_input_optimizer(input_img):  # the tutorial's
    optimizer = optim.LBFGS([input_img.requires_grad_()])
    return optimizer


def make_files(d):
    torch.manual_seed(0)
    P.save_st(P.path(NAME, d, "cnn.safetensors"), models.vgg19().features.state_dict())
    g = torch.Generator().manual_seed(1)
    style_img = torch.rand(1, 3, H, W, generator=g)
    content_img = torch.rand(1, 3, H, W, generator=g)
    P.save_st(P.path(NAME, d, "data.safetensors"), {"style_img": style_img, "content_img": content_img})
    P.save_st(P.path(NAME, d, "init.safetensors"), {"input_img": content_img.clone()})


def train(d, dev):
    global device
    device = dev
    cnn = models.vgg19().features
    cnn.load_state_dict(P.load_st(P.path(NAME, d, "cnn.safetensors")))
    cnn = cnn.to(device, torch.float64).eval()
    data = P.load_st(P.path(NAME, d, "data.safetensors"))
    style_img = data["style_img"].to(device, torch.float64)
    content_img = data["content_img"].to(device, torch.float64)
    cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406]).to(device)
    cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225]).to(device)
    input_img = P.load_st(P.path(NAME, d, "init.safetensors"))["input_img"].to(device, torch.float64)

    # run_style_transfer, K optimizer steps
    model, style_losses, content_losses = get_style_model_and_losses(cnn,
        cnn_normalization_mean, cnn_normalization_std, style_img, content_img)
    optimizer = get_input_optimizer(input_img)

    def closure():
        input_img.data.clamp_(0, 1)
        optimizer.zero_grad()
        model(input_img)
        style_score = 0
        content_score = 0
        for sl in style_losses:
            style_score += sl.loss
        for cl in content_losses:
            content_score += cl.loss
        style_score *= style_weight
        content_score *= content_weight
        loss = style_score + content_score
        loss.backward()
        return style_score + content_score

    losses = []
    for _ in range(K):
        losses.append(optimizer.step(closure).item())
    input_img.data.clamp_(0, 1)
    return losses, types.SimpleNamespace(state_dict=lambda: {"input_img": input_img.detach()})


if __name__ == "__main__":
    P.main(NAME, make_files, train)
