# Parity of scripts/examples/fast_neural_style (pytorch/examples fast_neural_style) with PyTorch,
# PyTorch's side (tests/gpu/examples/fast_neural_style.lua is nnrepl's):
#
#   python3 tests/gpu/examples/fast_neural_style.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/fast_neural_style.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/examples/fast_neural_style.py compare DIR
#
# prepare: transformer_net.py's TransformerNet (seed 0) -> DIR/fast_neural_style_init.safetensors;
# vgg.py's Vgg16 over a randomly initialised VGG16 (torchvision's layers and init, written out
# below so that only torch is needed) -> _init_vgg.safetensors ("slice1.0.weight", ...);
# 10 batches of 2 content images [2, 3, 32, 32] and one style image [1, 3, 32, 32], pixel values
# 0..255 -> _data.safetensors ("x.i", "style"); then 10 steps of neural_style.py's train()
# loop (Adam lr 1e-3, content weight 1e5, style weight 1e10), in float64: in float32 the two
# sides' first losses agree to 2e-7 and then part (by 1e-3 after 10 steps, differently from run
# to run: Adam turns the rounding of the tiny style gradients into whole steps). The losses
# written are the steps' total losses.
# compare: one line, PASS when the largest relative loss difference is <= 1e-4 and
# ||w_nnrepl - w_torch|| / ||w_torch - w_init|| <= 1e-3 (the TransformerNet's weights).
import os
import sys
from collections import namedtuple

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH, SIZE = "fast_neural_style", 10, 2, 32
LR, CONTENT_WEIGHT, STYLE_WEIGHT = 1e-3, 1e5, 1e10


class TransformerNet(torch.nn.Module):  # as in transformer_net.py
    def __init__(self):
        super(TransformerNet, self).__init__()
        self.conv1 = ConvLayer(3, 32, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(32, affine=True)
        self.conv2 = ConvLayer(32, 64, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(64, affine=True)
        self.conv3 = ConvLayer(64, 128, kernel_size=3, stride=2)
        self.in3 = torch.nn.InstanceNorm2d(128, affine=True)
        self.res1 = ResidualBlock(128)
        self.res2 = ResidualBlock(128)
        self.res3 = ResidualBlock(128)
        self.res4 = ResidualBlock(128)
        self.res5 = ResidualBlock(128)
        self.deconv1 = UpsampleConvLayer(128, 64, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(64, affine=True)
        self.deconv2 = UpsampleConvLayer(64, 32, kernel_size=3, stride=1, upsample=2)
        self.in5 = torch.nn.InstanceNorm2d(32, affine=True)
        self.deconv3 = ConvLayer(32, 3, kernel_size=9, stride=1)
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res1(y)
        y = self.res2(y)
        y = self.res3(y)
        y = self.res4(y)
        y = self.res5(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        return y


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


def vgg16_features():
    """torchvision's vgg16().features (configuration "D") with its init, random weights"""
    layers, in_channels = [], 3
    for v in [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]:
        if v == "M":
            layers.append(torch.nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            conv = torch.nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            torch.nn.init.kaiming_normal_(conv.weight, mode="fan_out", nonlinearity="relu")
            torch.nn.init.constant_(conv.bias, 0)
            layers += [conv, torch.nn.ReLU(inplace=True)]
            in_channels = v
    return torch.nn.Sequential(*layers)


class Vgg16(torch.nn.Module):  # as in vgg.py, the features passed in
    def __init__(self, vgg_pretrained_features, requires_grad=False):
        super(Vgg16, self).__init__()
        self.slice1 = torch.nn.Sequential()
        self.slice2 = torch.nn.Sequential()
        self.slice3 = torch.nn.Sequential()
        self.slice4 = torch.nn.Sequential()
        for x in range(4):
            self.slice1.add_module(str(x), vgg_pretrained_features[x])
        for x in range(4, 9):
            self.slice2.add_module(str(x), vgg_pretrained_features[x])
        for x in range(9, 16):
            self.slice3.add_module(str(x), vgg_pretrained_features[x])
        for x in range(16, 23):
            self.slice4.add_module(str(x), vgg_pretrained_features[x])
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        h = self.slice4(h)
        h_relu4_3 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3'])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
        return out


def gram_matrix(y):  # utils.py
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):  # utils.py
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), TransformerNet().state_dict())
    save_st(path(d, "init_vgg.safetensors"), Vgg16(vgg16_features()).state_dict())
    g = torch.Generator().manual_seed(1)
    data = {"style": torch.rand(1, 3, SIZE, SIZE, generator=g) * 255}
    for i in range(STEPS):
        data[f"x.{i}"] = torch.rand(BATCH, 3, SIZE, SIZE, generator=g) * 255
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    transformer = TransformerNet()
    transformer.load_state_dict(load_st(path(d, "init.safetensors")))
    transformer = transformer.to(device, torch.float64)
    optimizer = torch.optim.Adam(transformer.parameters(), LR)
    mse_loss = torch.nn.MSELoss()

    vgg = Vgg16(vgg16_features(), requires_grad=False)
    vgg.load_state_dict(load_st(path(d, "init_vgg.safetensors")))
    vgg = vgg.to(device, torch.float64)
    data = {k: v.double() for k, v in load_st(path(d, "data.safetensors")).items()}
    style = data["style"].repeat(BATCH, 1, 1, 1).to(device)
    features_style = vgg(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]

    transformer.train()
    losses = []
    for i in range(STEPS):  # neural_style.py's train(), one batch a step
        x = data[f"x.{i}"]
        n_batch = len(x)
        optimizer.zero_grad()

        x = x.to(device)
        y = transformer(x)

        y = normalize_batch(y)
        x = normalize_batch(x)

        features_y = vgg(y)
        features_x = vgg(x)

        content_loss = CONTENT_WEIGHT * mse_loss(features_y.relu2_2, features_x.relu2_2)

        style_loss = 0.
        for ft_y, gm_s in zip(features_y, gram_style):
            gm_y = gram_matrix(ft_y)
            style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
        style_loss *= STYLE_WEIGHT

        total_loss = content_loss + style_loss
        total_loss.backward()
        optimizer.step()
        losses.append(total_loss.item())
    return losses, transformer


if __name__ == "__main__":
    main(NAME, make_files, train)
