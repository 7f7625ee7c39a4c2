-- The fused conv + batch norm custom Functions and the Net of pytorch/tutorials
-- intermediate_source/custom_function_conv_bn_tutorial.py (main.lua walks through them).
-- Returns Net, with the pieces as its fields (Net.Conv2D, Net.BatchNorm, ...).
local once_differentiable = torch.autograd["function"].once_differentiable

local function convolution_backward(grad_out, X, weight)
  local grad_input = F.conv2d(X:transpose(0, 1), grad_out:transpose(0, 1)):transpose(0, 1)
  local grad_X = F.conv_transpose2d(grad_out, weight)
  return grad_X, grad_input
end

local Conv2D = torch.autograd.Function:extend("Conv2D")
function Conv2D.forward(ctx, X, weight)
  ctx:save_for_backward(X, weight)
  return F.conv2d(X, weight)
end
Conv2D.backward = once_differentiable(function(ctx, grad_out)
  local X, weight = table.unpack(ctx.saved_tensors)
  return convolution_backward(grad_out, X, weight)
end)

local function unsqueeze_all(t)
  return t["None, :, None, None"]
end

local function batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps)
  local tmp = -((X - unsqueeze_all(sum) / N) * grad_out):sum({ 0, 2, 3 })
  local d_denom = tmp / (sqrt_var + eps) ^ 2
  local d_var = d_denom / (2 * sqrt_var)
  local d_mean_dx = grad_out / unsqueeze_all(sqrt_var + eps)
  d_mean_dx = unsqueeze_all(-d_mean_dx:sum({ 0, 2, 3 }) / N)

  local grad_input = X * unsqueeze_all(d_var * N)
  grad_input:add_(unsqueeze_all(-d_var * sum))
  grad_input:mul_(2 / ((N - 1) * N))
  grad_input:add_(d_mean_dx)
  grad_input:mul_(unsqueeze_all(sqrt_var + eps))
  grad_input:add_(grad_out)
  grad_input:div_(unsqueeze_all(sqrt_var + eps))
  return grad_input
end

local BatchNorm = torch.autograd.Function:extend("BatchNorm")
function BatchNorm.forward(ctx, X, eps)
  eps = eps or 1e-3
  local sum = X:sum({ 0, 2, 3 })
  local var = X:var({ unbiased = true, dim = { 0, 2, 3 } })
  local N = X:numel() / X:size(1)
  local sqrt_var = torch.sqrt(var)
  ctx:save_for_backward(X)
  ctx.eps = eps
  ctx.sum = sum
  ctx.N = N
  ctx.sqrt_var = sqrt_var
  local mean = sum / N
  local denom = sqrt_var + eps
  return (X - unsqueeze_all(mean)) / unsqueeze_all(denom)
end
BatchNorm.backward = once_differentiable(function(ctx, grad_out)
  local X = table.unpack(ctx.saved_tensors)
  return batch_norm_backward(grad_out, X, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)
end)

local FusedConvBN2DFunction = torch.autograd.Function:extend("FusedConvBN2DFunction")
function FusedConvBN2DFunction.forward(ctx, X, conv_weight, eps)
  eps = eps or 1e-3
  assert(X:dim() == 4) -- N, C, H, W
  ctx:save_for_backward(X, conv_weight)

  X = F.conv2d(X, conv_weight)
  local sum = X:sum({ 0, 2, 3 })
  local var = X:var({ unbiased = true, dim = { 0, 2, 3 } })
  local N = X:numel() / X:size(1)
  local sqrt_var = torch.sqrt(var)
  ctx.eps = eps
  ctx.sum = sum
  ctx.N = N
  ctx.sqrt_var = sqrt_var
  local mean = sum / N
  local denom = sqrt_var + eps
  local out = X - unsqueeze_all(mean)
  out:div_(unsqueeze_all(denom))
  return out
end
function FusedConvBN2DFunction.backward(ctx, grad_out)
  local X, conv_weight = table.unpack(ctx.saved_tensors)
  local X_conv_out = F.conv2d(X, conv_weight)
  grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)
  local grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
  return grad_X, grad_input, nil, nil, nil, nil, nil
end

local FusedConvBN = nn.Module:extend("FusedConvBN")
function FusedConvBN:__init(in_channels, out_channels, kernel_size, exp_avg_factor, eps, device, dtype)
  local factory_kwargs = { device = device, dtype = dtype }
  local weight_shape = { out_channels, in_channels, kernel_size, kernel_size }
  self.conv_weight = nn.Parameter(torch.empty(weight_shape, factory_kwargs))
  local num_features = out_channels
  self.num_features = num_features
  self.eps = eps or 1e-3
  self:reset_parameters()
end
function FusedConvBN:forward(X)
  return FusedConvBN2DFunction.apply(X, self.conv_weight, self.eps)
end
function FusedConvBN:reset_parameters()
  nn.init.kaiming_uniform_(self.conv_weight, { a = math.sqrt(5) })
end

local Net = nn.Module:extend("Net")
function Net:__init(fused)
  if fused == nil then fused = true end
  self.fused = fused
  if fused then
    self.convbn1 = FusedConvBN(1, 32, 3)
    self.convbn2 = FusedConvBN(32, 64, 3)
  else
    self.conv1 = nn.Conv2d(1, 32, 3, 1, { bias = false })
    self.bn1 = nn.BatchNorm2d(32, { affine = false, track_running_stats = false })
    self.conv2 = nn.Conv2d(32, 64, 3, 1, { bias = false })
    self.bn2 = nn.BatchNorm2d(64, { affine = false, track_running_stats = false })
  end
  self.fc1 = nn.Linear(9216, 128)
  self.dropout = nn.Dropout(0.5)
  self.fc2 = nn.Linear(128, 10)
end
function Net:forward(x)
  if self.fused then
    x = self.convbn1(x)
  else
    x = self.conv1(x)
    x = self.bn1(x)
  end
  x = F.relu(x)
  if self.fused then
    x = self.convbn2(x)
  else
    x = self.conv2(x)
    x = self.bn2(x)
  end
  x = F.relu(x)
  x = F.max_pool2d(x, 2)
  x = F.relu(x)
  x = x:flatten(1)
  x = self.fc1(x)
  x = self.dropout(x)
  x = F.relu(x)
  x = self.fc2(x)
  local output = F.log_softmax(x, { dim = 1 })
  return output
end

Net.Conv2D, Net.BatchNorm, Net.FusedConvBN2DFunction, Net.FusedConvBN = Conv2D, BatchNorm, FusedConvBN2DFunction, FusedConvBN
return Net
