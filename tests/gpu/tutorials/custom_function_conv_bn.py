# Parity of scripts/tutorials/autograd/custom_function_conv_bn (pytorch/tutorials
# intermediate_source/custom_function_conv_bn_tutorial.py), PyTorch's side.
#
#   python3 tests/gpu/tutorials/custom_function_conv_bn.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/custom_function_conv_bn.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/custom_function_conv_bn.py compare DIR
#
# prepare: the tutorial's Net(fused=True) (seed 0) to DIR/custom_function_conv_bn_init.safetensors;
# 12 batches of 16 images (randn, labels from a fixed random linear teacher) to
# DIR/custom_function_conv_bn_data.safetensors; then the tutorial's train() step (Adadelta lr
# 1.0, nll_loss) for the 12 batches as two "epochs" of 6 with StepLR(step_size=1, gamma=0.7)
# stepped after each, in train mode with the Dropout at p=0 (nothing random runs). float64
# (model and batches): the fused BatchNorm normalises over few values, where float32 compares
# rounding luck. compare prints: parity custom_function_conv_bn: ... PASS|FAIL.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
import math

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH, PER_EPOCH = "custom_function_conv_bn", 12, 16, 6


# ---- the tutorial's code, unchanged ----
def convolution_backward(grad_out, X, weight):
    grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
    grad_X = F.conv_transpose2d(grad_out, weight)
    return grad_X, grad_input


def unsqueeze_all(t):
    return t[None, :, None, None]


def batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps):
    tmp = -((X - unsqueeze_all(sum) / N) * grad_out).sum(dim=(0, 2, 3))
    d_denom = tmp / (sqrt_var + eps)**2
    d_var = d_denom / (2 * sqrt_var)
    d_mean_dx = grad_out / unsqueeze_all(sqrt_var + eps)
    d_mean_dx = unsqueeze_all(-d_mean_dx.sum(dim=(0, 2, 3)) / N)
    grad_input = X * unsqueeze_all(d_var * N)
    grad_input += unsqueeze_all(-d_var * sum)
    grad_input *= 2 / ((N - 1) * N)
    grad_input += d_mean_dx
    grad_input *= unsqueeze_all(sqrt_var + eps)
    grad_input += grad_out
    grad_input /= unsqueeze_all(sqrt_var + eps)
    return grad_input


class FusedConvBN2DFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, X, conv_weight, eps=1e-3):
        assert X.ndim == 4
        ctx.save_for_backward(X, conv_weight)
        X = F.conv2d(X, conv_weight)
        sum = X.sum(dim=(0, 2, 3))
        var = X.var(unbiased=True, dim=(0, 2, 3))
        N = X.numel() / X.size(1)
        sqrt_var = torch.sqrt(var)
        ctx.eps = eps
        ctx.sum = sum
        ctx.N = N
        ctx.sqrt_var = sqrt_var
        mean = sum / N
        denom = sqrt_var + eps
        out = X - unsqueeze_all(mean)
        out /= unsqueeze_all(denom)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        X, conv_weight, = ctx.saved_tensors
        X_conv_out = F.conv2d(X, conv_weight)
        grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var,
                                       ctx.N, ctx.eps)
        grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
        return grad_X, grad_input, None, None, None, None, None


class FusedConvBN(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, exp_avg_factor=0.1,
                 eps=1e-3, device=None, dtype=None):
        super(FusedConvBN, self).__init__()
        factory_kwargs = {'device': device, 'dtype': dtype}
        weight_shape = (out_channels, in_channels, kernel_size, kernel_size)
        self.conv_weight = nn.Parameter(torch.empty(*weight_shape, **factory_kwargs))
        num_features = out_channels
        self.num_features = num_features
        self.eps = eps
        self.reset_parameters()

    def forward(self, X):
        return FusedConvBN2DFunction.apply(X, self.conv_weight, self.eps)

    def reset_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.conv_weight, a=math.sqrt(5))


class Net(nn.Module):
    def __init__(self, fused=True):
        super(Net, self).__init__()
        self.fused = fused
        if fused:
            self.convbn1 = FusedConvBN(1, 32, 3)
            self.convbn2 = FusedConvBN(32, 64, 3)
        else:
            self.conv1 = nn.Conv2d(1, 32, 3, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(32, affine=False, track_running_stats=False)
            self.conv2 = nn.Conv2d(32, 64, 3, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(64, affine=False, track_running_stats=False)
        self.fc1 = nn.Linear(9216, 128)
        self.dropout = nn.Dropout(0.5)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        if self.fused:
            x = self.convbn1(x)
        else:
            x = self.conv1(x)
            x = self.bn1(x)
        x = F.relu(x)
        if self.fused:
            x = self.convbn2(x)
        else:
            x = self.conv2(x)
            x = self.bn2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = F.relu(x)
        x = x.flatten(1)
        x = self.fc1(x)
        x = self.dropout(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output
# ---- end of the tutorial's code ----


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), Net(fused=True).double().state_dict())
    g = torch.Generator().manual_seed(1)
    teacher = torch.randn(28 * 28, 10, generator=g, dtype=torch.float64)
    data = {}
    for i in range(STEPS):
        x = torch.randn(BATCH, 1, 28, 28, generator=g, dtype=torch.float64)
        data[f"x.{i}"] = x
        data[f"y.{i}"] = (x.flatten(1) @ teacher).argmax(1)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = Net(fused=True).double()
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model.dropout.p = 0.0  # dropout off: nothing random differs between the two sides
    model = model.to(device)
    batches = load_st(path(d, "data.safetensors"))
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    model.train()
    losses = []
    for i in range(STEPS):
        data, target = batches[f"x.{i}"].to(device), batches[f"y.{i}"].to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if (i + 1) % PER_EPOCH == 0:
            scheduler.step()
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
