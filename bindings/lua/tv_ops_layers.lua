-- torchvision.ops layers (torchvision.ops.misc and friends): FrozenBatchNorm2d, Conv2dNormActivation,
-- Conv3dNormActivation, SqueezeExcitation, MLP, Permute, StochasticDepth / stochastic_depth,
-- DropBlock2d / DropBlock3d / drop_block2d / drop_block3d. Submodule names follow torchvision, so
-- state_dict keys match ("0.weight", "1.running_mean", "fc1.weight"). norm_layer=false and
-- activation_layer=false stand for Python's None. tv_models_more builds MobileNet, EfficientNet,
-- ViT and ConvNeXt from these.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional

local M = {}

local function floordiv(a, b) return math.floor(a / b) end

-- ---- FrozenBatchNorm2d ----

-- BatchNorm2d with fixed statistics and affine parameters, all buffers (none trained).
local FrozenBatchNorm2d = nn.Module:extend("FrozenBatchNorm2d")
M.FrozenBatchNorm2d = FrozenBatchNorm2d
function FrozenBatchNorm2d:__init(...)
  local o = U.parse("FrozenBatchNorm2d", { { "num_features", U.REQUIRED }, { "eps", 1e-5 } }, ...)
  local n = U.check_int("FrozenBatchNorm2d", "num_features", o.num_features, 0)
  self.num_features, self.eps = n, o.eps
  self:register_buffer("weight", torch.ones(n))
  self:register_buffer("bias", torch.zeros(n))
  self:register_buffer("running_mean", torch.zeros(n))
  self:register_buffer("running_var", torch.ones(n))
end
function FrozenBatchNorm2d:_load_from_state_dict(state_dict, prefix, ...)
  state_dict[prefix .. "num_batches_tracked"] = nil -- a BatchNorm2d checkpoint loads
  return nn.Module._load_from_state_dict(self, state_dict, prefix, ...)
end
function FrozenBatchNorm2d:forward(x)
  local scale = self.weight * (self.running_var + self.eps):rsqrt()
  local bias = self.bias - self.running_mean * scale
  return x * scale:reshape(1, -1, 1, 1) + bias:reshape(1, -1, 1, 1)
end
function FrozenBatchNorm2d:__tostring()
  return string.format("FrozenBatchNorm2d(%d, eps=%s)", self.num_features, U.pystr(self.eps))
end

-- ---- Conv2dNormActivation, Conv3dNormActivation ----

-- (in, out, {kernel_size=3, stride=1, padding=(k-1)//2*dilation, groups=1, norm_layer=BatchNormNd,
-- activation_layer=nn.ReLU, dilation=1, inplace=true, bias=(norm_layer is None)})
local function conv_norm_activation(name, conv, norm, dims)
  local cls = nn.Sequential:extend(name)
  function cls:__init(...)
    local o = U.parse(name, { { "in_channels", U.REQUIRED }, { "out_channels", U.REQUIRED },
      { "kernel_size", 3 }, { "stride", 1 }, { "padding" }, { "groups", 1 }, { "norm_layer", norm },
      { "activation_layer", nn.ReLU }, { "dilation", 1 }, { "inplace", true }, { "bias" } }, ...)
    local padding = o.padding
    if padding == nil then
      if type(o.kernel_size) == "number" and type(o.dilation) == "number" then
        padding = floordiv(o.kernel_size - 1, 2) * o.dilation
      else
        local k = U.ntuple(name, "kernel_size", o.kernel_size, dims)
        local d = U.ntuple(name, "dilation", o.dilation, dims)
        padding = {}
        for i = 1, dims do padding[i] = floordiv(k[i] - 1, 2) * d[i] end
      end
    end
    local bias = o.bias
    if bias == nil then bias = not o.norm_layer end
    local layers = { conv(o.in_channels, o.out_channels, { kernel_size = o.kernel_size, stride = o.stride,
      padding = padding, dilation = o.dilation, groups = o.groups, bias = bias }) }
    if o.norm_layer then layers[#layers + 1] = o.norm_layer(o.out_channels) end
    if o.activation_layer then
      if o.inplace == nil then layers[#layers + 1] = o.activation_layer()
      else layers[#layers + 1] = o.activation_layer({ inplace = o.inplace }) end
    end
    nn.Sequential.__init(self, table.unpack(layers))
    self.out_channels = o.out_channels
  end
  return cls
end
M.Conv2dNormActivation = conv_norm_activation("Conv2dNormActivation", nn.Conv2d, nn.BatchNorm2d, 2)
M.Conv3dNormActivation = conv_norm_activation("Conv3dNormActivation", nn.Conv3d, nn.BatchNorm3d, 3)

-- ---- SqueezeExcitation ----

-- (input_channels, squeeze_channels, {activation=nn.ReLU, scale_activation=nn.Sigmoid})
local SqueezeExcitation = nn.Module:extend("SqueezeExcitation")
M.SqueezeExcitation = SqueezeExcitation
function SqueezeExcitation:__init(...)
  local o = U.parse("SqueezeExcitation", { { "input_channels", U.REQUIRED }, { "squeeze_channels", U.REQUIRED },
    { "activation", nn.ReLU }, { "scale_activation", nn.Sigmoid } }, ...)
  self.avgpool = nn.AdaptiveAvgPool2d(1)
  self.fc1 = nn.Conv2d(o.input_channels, o.squeeze_channels, 1)
  self.fc2 = nn.Conv2d(o.squeeze_channels, o.input_channels, 1)
  self.activation = o.activation()
  self.scale_activation = o.scale_activation()
end
function SqueezeExcitation:_scale(x)
  return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
end
function SqueezeExcitation:forward(x) return self:_scale(x) * x end

-- ---- MLP ----

-- (in_channels, hidden_channels, {norm_layer=None, activation_layer=nn.ReLU, inplace=None, bias=true,
-- dropout=0.0}): Linear, [norm], activation, Dropout per hidden layer, then Linear, Dropout.
local MLP = nn.Sequential:extend("MLP")
M.MLP = MLP
function MLP:__init(...)
  local o = U.parse("MLP", { { "in_channels", U.REQUIRED }, { "hidden_channels", U.REQUIRED }, { "norm_layer", false },
    { "activation_layer", nn.ReLU }, { "inplace" }, { "bias", true }, { "dropout", 0.0 } }, ...)
  local hidden = o.hidden_channels
  if type(hidden) ~= "table" or #hidden == 0 then U.error("MLP: hidden_channels must be a non-empty list of ints") end
  local function params(extra)
    if o.inplace ~= nil then extra.inplace = o.inplace end
    return extra
  end
  local layers, in_dim = {}, o.in_channels
  for i = 1, #hidden - 1 do
    layers[#layers + 1] = nn.Linear(in_dim, hidden[i], { bias = o.bias })
    if o.norm_layer then layers[#layers + 1] = o.norm_layer(hidden[i]) end
    if o.inplace == nil then layers[#layers + 1] = o.activation_layer()
    else layers[#layers + 1] = o.activation_layer({ inplace = o.inplace }) end
    layers[#layers + 1] = nn.Dropout(params({ p = o.dropout }))
    in_dim = hidden[i]
  end
  layers[#layers + 1] = nn.Linear(in_dim, hidden[#hidden], { bias = o.bias })
  layers[#layers + 1] = nn.Dropout(params({ p = o.dropout }))
  nn.Sequential.__init(self, table.unpack(layers))
end

-- ---- Permute ----

local Permute = nn.Module:extend("Permute")
M.Permute = Permute
function Permute:__init(dims) self.dims = dims end
function Permute:forward(x) return x:permute(table.unpack(self.dims)) end

-- ---- StochasticDepth ----

-- In training, zeroes whole rows (mode "row": per sample) or the whole input (mode "batch")
-- with probability p and scales the survivors by 1/(1-p).
function M.stochastic_depth(...)
  local o = U.parse("stochastic_depth", { { "input", U.REQUIRED }, { "p", U.REQUIRED }, { "mode", U.REQUIRED },
    { "training", true } }, ...)
  local input, p, mode = o.input, o.p, o.mode
  if p < 0 or p > 1 then U.errorf("drop probability has to be between 0 and 1, but got %s", U.pystr(p)) end
  if mode ~= "batch" and mode ~= "row" then U.errorf("mode has to be either 'batch' or 'row', but got %s", tostring(mode)) end
  if not o.training or p == 0 then return input end
  local survival = 1.0 - p
  local size = {}
  for i = 1, input:dim() do size[i] = 1 end
  if mode == "row" then size[1] = input:size(0) end
  local noise = torch.bernoulli(torch.full(size, survival, { dtype = input.dtype, device = input.device }))
  if survival > 0 then noise = noise:div_(survival) end
  return input * noise
end

local StochasticDepth = nn.Module:extend("StochasticDepth")
M.StochasticDepth = StochasticDepth
function StochasticDepth:__init(...)
  local o = U.parse("StochasticDepth", { { "p", U.REQUIRED }, { "mode", U.REQUIRED } }, ...)
  self.p, self.mode = o.p, o.mode
end
function StochasticDepth:forward(x) return M.stochastic_depth(x, self.p, self.mode, self.training) end
function StochasticDepth:__tostring() return string.format("StochasticDepth(p=%s, mode=%s)", U.pystr(self.p), self.mode) end

-- ---- DropBlock ----

-- Zeroes block_size^d blocks whose centres are drawn with the rate that drops a fraction p of
-- the input, then rescales by numel / kept.
local function drop_block(fname, dims, ...)
  local o = U.parse(fname, { { "input", U.REQUIRED }, { "p", U.REQUIRED }, { "block_size", U.REQUIRED },
    { "inplace", false }, { "eps", 1e-6 }, { "training", true } }, ...)
  local input, p = o.input, o.p
  if p < 0 or p > 1 then U.errorf("drop probability has to be between 0 and 1, but got %s.", U.pystr(p)) end
  if input:dim() ~= dims + 2 then
    U.errorf("input should be %d dimensional. Got %d dimensions.", dims + 2, input:dim())
  end
  if not o.training or p == 0 then return input end
  local bs = U.check_int(fname, "block_size", o.block_size, 1)
  local sizes = {}
  for i = 1, dims do sizes[i] = input:size(i + 1); bs = math.min(bs, sizes[i]) end
  local cells, valid = 1, 1
  local shape = { input:size(0), input:size(1) }
  for i = 1, dims do
    cells = cells * sizes[i]
    valid = valid * (sizes[i] - bs + 1)
    shape[i + 2] = sizes[i] - bs + 1
  end
  local gamma = p * cells / (bs ^ dims * valid)
  local noise = torch.empty(shape, { dtype = input.dtype, device = input.device }):bernoulli_(gamma)
  local pad = {}
  for i = 1, 2 * dims do pad[i] = bs // 2 end
  noise = F.pad(noise, pad, "constant", 0)
  local pool = dims == 2 and F.max_pool2d or F.max_pool3d
  noise = pool(noise, { kernel_size = bs, stride = 1, padding = bs // 2 })
  noise = 1 - noise
  local scale = (noise:sum() + o.eps):reciprocal() * noise:numel()
  if o.inplace then return input:mul_(noise):mul_(scale) end
  return input * noise * scale
end
function M.drop_block2d(...) return drop_block("drop_block2d", 2, ...) end
function M.drop_block3d(...) return drop_block("drop_block3d", 3, ...) end

local function drop_block_class(name, fn)
  local cls = nn.Module:extend(name)
  function cls:__init(...)
    local o = U.parse(name, { { "p", U.REQUIRED }, { "block_size", U.REQUIRED }, { "inplace", false }, { "eps", 1e-6 } }, ...)
    self.p, self.block_size, self.inplace, self.eps = o.p, o.block_size, o.inplace, o.eps
  end
  function cls:forward(x) return fn(x, self.p, self.block_size, self.inplace, self.eps, self.training) end
  function cls:__tostring()
    return string.format("%s(p=%s, block_size=%s, inplace=%s)", name, U.pystr(self.p), U.pystr(self.block_size),
      U.pystr(self.inplace))
  end
  return cls
end
M.DropBlock2d = drop_block_class("DropBlock2d", M.drop_block2d)
M.DropBlock3d = drop_block_class("DropBlock3d", M.drop_block3d)

return M
