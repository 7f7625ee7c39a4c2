-- torch.nn.utils.fusion (fold an eval-mode BatchNorm into the conv or linear layer before it) and
-- torch.nn.utils.memory_format (put conv weights in channels_last), as PyTorch's.
local torch = require "torch"
local U = require "nn_util"
local Parameter = require "nn_parameter"
local copy = require "copy"

local fusion, memory_format = {}, {}

local function need_stats(bn)
  if bn.running_mean == nil or bn.running_var == nil then
    U.error("Fusion needs the BatchNorm's running statistics (track_running_stats=True)")
  end
end

-- the layer's bias (zeros if none) and the BatchNorm's affine weight and bias (ones and zeros if none),
-- with the dtype and requires_grad the fused bias takes
local function defaults(w, b, rm, bn_w, bn_b)
  local bdtype = b ~= nil and b.dtype or w.dtype
  local b_grad = b ~= nil and b.requires_grad or false
  if b == nil then b = torch.zeros_like(rm) end
  return b, bn_w ~= nil and bn_w or torch.ones_like(rm), bn_b ~= nil and bn_b or torch.zeros_like(rm), bdtype, b_grad
end

-- fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=false) -> weight, bias Parameters
function fusion.fuse_conv_bn_weights(...)
  local o = U.parse("fuse_conv_bn_weights", { { "conv_w", U.REQUIRED }, { "conv_b" }, { "bn_rm", U.REQUIRED }, { "bn_rv", U.REQUIRED },
    { "bn_eps", U.REQUIRED }, { "bn_w" }, { "bn_b" }, { "transpose", false } }, ...)
  local w, rm = o.conv_w, o.bn_rm
  local b, bn_w, bn_b, bdtype, b_grad = defaults(w, o.conv_b, rm, o.bn_w, o.bn_b)
  local rsqrt = torch.rsqrt(o.bn_rv + o.bn_eps)
  local shape = o.transpose and { 1, -1 } or { -1, 1 }
  for _ = 3, w:dim() do shape[#shape + 1] = 1 end
  local fw = (w * (bn_w * rsqrt):reshape(shape)):to(w.dtype)
  local fb = ((b - rm) * rsqrt * bn_w + bn_b):to(bdtype)
  return Parameter(fw, w.requires_grad), Parameter(fb, b_grad)
end

-- fuse_conv_bn_eval(conv, bn, transpose=false): a copy of conv computing conv then bn (both in eval mode)
function fusion.fuse_conv_bn_eval(...)
  local o = U.parse("fuse_conv_bn_eval", { { "conv", U.REQUIRED }, { "bn", U.REQUIRED }, { "transpose", false } }, ...)
  local conv, bn = o.conv, o.bn
  if conv.training or bn.training then U.error("Fusion only for eval!") end
  need_stats(bn)
  local fused = copy.deepcopy(conv)
  fused.weight, fused.bias = fusion.fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias, o.transpose)
  return fused
end

-- fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b) -> weight, bias Parameters
function fusion.fuse_linear_bn_weights(...)
  local o = U.parse("fuse_linear_bn_weights", { { "linear_w", U.REQUIRED }, { "linear_b" }, { "bn_rm", U.REQUIRED },
    { "bn_rv", U.REQUIRED }, { "bn_eps", U.REQUIRED }, { "bn_w" }, { "bn_b" } }, ...)
  local w, rm = o.linear_w, o.bn_rm
  local b, bn_w, bn_b, bdtype, b_grad = defaults(w, o.linear_b, rm, o.bn_w, o.bn_b)
  local scale = bn_w * torch.rsqrt(o.bn_rv + o.bn_eps)
  local fw = w * scale:unsqueeze(-1):to(w.dtype)
  local fb = ((b - rm) * scale + bn_b):to(bdtype)
  return Parameter(fw, w.requires_grad), Parameter(fb, b_grad)
end

-- fuse_linear_bn_eval(linear, bn): a copy of linear computing linear then bn (both in eval mode)
function fusion.fuse_linear_bn_eval(linear, bn)
  if linear.training or bn.training then U.error("Fusion only for eval!") end
  if linear.out_features ~= bn.num_features and bn.num_features ~= 1 then
    U.error("To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1")
  end
  need_stats(bn)
  local fused = copy.deepcopy(linear)
  fused.weight, fused.bias = fusion.fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps,
    bn.weight, bn.bias)
  return fused
end

-- the weights of the module's convolutions of these classes (and of its children's), in memory_format
local function convert(classes, module, mf)
  local nn = torch.nn
  for _, name in ipairs(classes) do
    if nn.isinstance(module, nn[name]) then
      local w = module.weight
      w.data = w:detach():contiguous({ memory_format = mf })
      break
    end
  end
  for _, child in ipairs(module:children()) do convert(classes, child, mf) end
  return module
end

function memory_format.convert_conv2d_weight_memory_format(module, mf)
  return convert({ "Conv2d", "ConvTranspose2d" }, module, mf)
end
function memory_format.convert_conv3d_weight_memory_format(module, mf)
  return convert({ "Conv3d", "ConvTranspose3d" }, module, mf)
end

fusion.fuse_linear_bn_eval = U.checked("fuse_linear_bn_eval", { "linear:Module", "bn:Module", plain = true },
  fusion.fuse_linear_bn_eval)
U.check_all(memory_format, {
  convert_conv2d_weight_memory_format = { "module:Module", plain = true },
  convert_conv3d_weight_memory_format = { "module:Module", plain = true },
})

return { fusion = fusion, memory_format = memory_format }
