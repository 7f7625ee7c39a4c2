-- More layers: nn.ParameterList / nn.ParameterDict, the padding modules (ZeroPad, ConstantPad,
-- ReflectionPad, ReplicationPad, CircularPad in 1-d and 2-d), nn.InstanceNorm1d / 2d / 3d with
-- F.instance_norm, and nn.Bilinear with F.bilinear, as PyTorch's.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local init = require "nn_init"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

local function param_line(p)
  local dt = tostring(p.dtype)
  local size = {}
  for i = 0, p:dim() - 1 do size[#size + 1] = tostring(p:size(i)) end
  return string.format("Parameter containing: [%s of size %s%s]", dt, table.concat(size, "x"),
    p.device.type == "cuda" and " (cuda:" .. p.device.index .. ")" or "")
end

local function container_repr(self, entries)
  if #entries == 0 then return self:_get_name() .. "()" end
  local lines = { self:_get_name() .. "(" }
  for _, e in ipairs(entries) do lines[#lines + 1] = string.format("    (%s): %s", e[1], param_line(e[2])) end
  lines[#lines + 1] = ")"
  return table.concat(lines, "\n")
end

local function as_parameter(v)
  if Parameter.is(v) then return v end
  if torch.is_tensor(v) then return Parameter(v) end
  U.errorf("ParameterList / ParameterDict hold tensors, got %s", U.typename(v))
end

-- ---- ParameterList ----

local ParameterList = Module:extend("ParameterList")
M.ParameterList = ParameterList

function ParameterList:__init(values)
  if values ~= nil then self:extend(values) end
end

local function plist_len(self) return #self._parameters:keys() end

local function plist_key(self, idx)
  local n = plist_len(self)
  if math.type(idx) ~= "integer" then U.errorf("ParameterList indices must be integers, not %s", U.typename(idx)) end
  if idx < 0 then idx = idx + n end
  if idx < 0 or idx >= n then U.errorf("index %d is out of range", idx) end
  return tostring(idx)
end

function ParameterList:__getitem(idx) return self._parameters[plist_key(self, idx)] end
function ParameterList:__setitem(idx, v) self:register_parameter(plist_key(self, idx), as_parameter(v)) end
ParameterList.__len = plist_len

function ParameterList:append(v)
  self:register_parameter(tostring(plist_len(self)), as_parameter(v))
  return self
end

function ParameterList:extend(values)
  if type(values) ~= "table" then U.errorf("ParameterList.extend should be called with an iterable, but got %s", U.typename(values)) end
  for _, v in ipairs(values) do self:append(v) end
  return self
end

-- pairs(list): (index, parameter) from 0, as Python's enumerate
function ParameterList:__pairs()
  local i = -1
  return function()
    i = i + 1
    if i < plist_len(self) then return i, self._parameters[tostring(i)] end
  end, self, nil
end

function ParameterList:__tostring()
  local e = {}
  for i, p in pairs(self) do e[#e + 1] = { tostring(i), p } end
  return container_repr(self, e)
end

-- ---- ParameterDict ----

local ParameterDict = Module:extend("ParameterDict")
M.ParameterDict = ParameterDict

function ParameterDict:__init(parameters)
  if parameters ~= nil then self:update(parameters) end
end

-- update(OrderedDict | ParameterDict | {{key, p}, ...} | {key = p, ...} (keys sorted))
function ParameterDict:update(parameters)
  local pairs_list = {}
  if U.OrderedDict.is(parameters) then
    for k, v in pairs(parameters) do pairs_list[#pairs_list + 1] = { k, v } end
  elseif Module.isinstance_of(parameters, ParameterDict) then
    for _, kv in ipairs(parameters:items()) do pairs_list[#pairs_list + 1] = kv end
  elseif type(parameters) == "table" and parameters[1] ~= nil then
    for i, kv in ipairs(parameters) do
      if type(kv) ~= "table" or #kv ~= 2 then U.errorf("ParameterDict update sequence element #%d should be a {key, value} pair", i - 1) end
      pairs_list[#pairs_list + 1] = kv
    end
  elseif type(parameters) == "table" then
    local keys = {}
    for k in pairs(parameters) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do pairs_list[#pairs_list + 1] = { k, parameters[k] } end
  else
    U.errorf("ParameterDict.update should be called with an iterable of key/value pairs, but got %s", U.typename(parameters))
  end
  for _, kv in ipairs(pairs_list) do self:register_parameter(kv[1], as_parameter(kv[2])) end
  return self
end

function ParameterDict:keys() return self._parameters:keys() end
function ParameterDict:values() return self._parameters:values() end
function ParameterDict:items() return self._parameters:items() end
function ParameterDict:contains(key) return self._parameters:has(key) end
function ParameterDict:pop(key)
  local p = self._parameters[key]
  self[key] = nil
  return p
end
ParameterDict.__len = function(self) return #self._parameters:keys() end
function ParameterDict:__pairs() return pairs(self._parameters) end

function ParameterDict:__tostring()
  local e = {}
  for _, kv in ipairs(self:items()) do e[#e + 1] = kv end
  return container_repr(self, e)
end

-- ---- padding ----

local function tuple_str(t) return "(" .. table.concat(t, ", ") .. ")" end

local function pad_module(name, dims, mode, with_value)
  local cls = Module:extend(name)
  M[name] = cls
  local spec = { { "padding", REQ } }
  if with_value then spec[2] = { "value", REQ } end
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    local p = o.padding
    if type(p) == "number" then
      p = U.check_int(name, "padding", p)
      local t = {}
      for i = 1, 2 * dims do t[i] = p end
      p = t
    elseif #p ~= 2 * dims then
      U.errorf("%s: padding must be an int or a list of %d ints", name, 2 * dims)
    end
    self.padding = p
    self.value = with_value and o.value or (mode == "constant" and 0.0 or nil)
  end
  function cls:forward(x) return F.pad(x, self.padding, mode, self.value) end
  function cls:extra_repr()
    if with_value then return "padding=" .. tuple_str(self.padding) .. ", value=" .. U.pystr(self.value) end
    return tuple_str(self.padding)
  end
end

for _, d in ipairs({ 1, 2 }) do
  pad_module("ZeroPad" .. d .. "d", d, "constant", false)
  pad_module("ConstantPad" .. d .. "d", d, "constant", true)
  pad_module("ReflectionPad" .. d .. "d", d, "reflect", false)
  pad_module("ReplicationPad" .. d .. "d", d, "replicate", false)
  pad_module("CircularPad" .. d .. "d", d, "circular", false)
end

-- ---- instance norm ----

-- F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats=true, momentum=0.1, eps=1e-5):
-- each (sample, channel) normalised over its spatial positions
function F.instance_norm(...)
  local o = U.parse("instance_norm", { { "input", REQ }, { "running_mean" }, { "running_var" }, { "weight" }, { "bias" },
    { "use_input_stats", true }, { "momentum", 0.1 }, { "eps", 1e-5 } }, ...)
  local x = U.check_tensor("instance_norm", "input", 1, o.input)
  if x:dim() < 3 then U.errorf("instance_norm: expected an input with a batch, channels and at least one spatial dim, got %dD", x:dim()) end
  local dims = {}
  for d = 2, x:dim() - 1 do dims[#dims + 1] = d end
  local C = x:size(1)
  local shape = { 1, C }
  for _ = 3, x:dim() do shape[#shape + 1] = 1 end
  local mean, var
  if o.use_input_stats then
    mean = x:mean(dims, true)
    var = x:var(dims, { correction = 0, keepdim = true })
    if o.running_mean ~= nil then -- the batch's average of the instance statistics, var unbiased
      local n = 1
      for _, d in ipairs(dims) do n = n * x:size(d) end
      local _ <close> = torch.no_grad()
      local m = o.momentum
      o.running_mean:mul_(1 - m):add_(mean:detach():reshape(x:size(0), C):mean(0) * m)
      o.running_var:mul_(1 - m):add_(var:detach():reshape(x:size(0), C):mean(0) * (n / math.max(n - 1, 1)) * m)
    end
  else
    if o.running_mean == nil then U.error("Expected running_mean and running_var to be defined when use_input_stats is false") end
    mean, var = o.running_mean:view(shape), o.running_var:view(shape)
  end
  local y = (x - mean) / (var + o.eps):sqrt()
  if o.weight ~= nil then y = y * o.weight:view(shape) end
  if o.bias ~= nil then y = y + o.bias:view(shape) end
  return y
end

local inorm_spec = { { "num_features", REQ }, { "eps", 1e-5 }, { "momentum", 0.1 }, { "affine", false },
  { "track_running_stats", false }, { "device" }, { "dtype" } }

-- parameters, buffers, reset and printing from BatchNorm's base (PyTorch's _NormBase), with
-- InstanceNorm's defaults: no affine, no running statistics
local function instance_norm(name, spatial)
  local BatchNorm = require("nn_norm")._BatchNorm
  local cls = BatchNorm:extend(name)
  M[name] = cls
  cls._is_instance_norm = true -- not a _BatchNorm to swa_utils.update_bn, as in PyTorch
  function cls:__init(...)
    local o = U.parse(name, inorm_spec, ...)
    BatchNorm.__init(self, o.num_features, o.eps, o.momentum, o.affine, o.track_running_stats, { device = o.device, dtype = o.dtype })
  end
  function cls:forward(x)
    U.check_tensor("instance_norm", "input", 1, x)
    local unbatched = x:dim() == spatial + 1
    if not unbatched and x:dim() ~= spatial + 2 then
      U.errorf("expected %dD or %dD input (got %dD input)", spatial + 1, spatial + 2, x:dim())
    end
    if unbatched then x = x:unsqueeze(0) end
    if self.affine and x:size(1) ~= self.num_features then
      U.errorf("expected input's size at dim=%d to match num_features (%d), but got: %d.", unbatched and 0 or 1, self.num_features, x:size(1))
    end
    local use_input = self.training or not self.track_running_stats
    if self.training and self.track_running_stats then self.num_batches_tracked:add_(1) end
    local y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input, self.momentum, self.eps)
    return unbatched and y:squeeze(0) or y
  end
end

instance_norm("InstanceNorm1d", 1)
instance_norm("InstanceNorm2d", 2)
instance_norm("InstanceNorm3d", 3)

-- ---- LocalResponseNorm, ChannelShuffle, AdaptiveMaxPool1d, AlphaDropout ----

-- F.local_response_norm(x [N, C, ...], size, alpha=1e-4, beta=0.75, k=1): x / (k + alpha/size * sum of squares
-- over the `size` neighbouring channels)^beta, the window centred (zero padded) as PyTorch's
function F.local_response_norm(...)
  local x = ... -- PyTorch's input.dim() of a non-tensor
  if not torch.is_tensor(x) and not U.is_opts(x) then U.errorf("'%s' object has no attribute 'dim'", U.typename(x)) end
  local o = U.parse("local_response_norm", { { "input", REQ }, { "size", REQ }, { "alpha", 1e-4 }, { "beta", 0.75 }, { "k", 1.0 } }, ...)
  x = o.input
  if x:dim() < 3 then U.errorf("Expected 3D or higher dimensionality input (got %d dimensions)", x:dim()) end
  local sq = x * x
  local C = x:size(1)
  local before = o.size // 2
  local padded = torch.cat({ torch.zeros_like(sq:narrow(1, 0, 1)):expand(sq:size()):narrow(1, 0, before), sq,
    torch.zeros_like(sq:narrow(1, 0, 1)):expand(sq:size()):narrow(1, 0, (o.size - 1) // 2) }, 1)
  local sum = padded:narrow(1, 0, C)
  for i = 1, o.size - 1 do sum = sum + padded:narrow(1, i, C) end
  return x / (sum * (o.alpha / o.size) + o.k) ^ o.beta
end

local LRN = Module:extend("LocalResponseNorm")
M.LocalResponseNorm = LRN
function LRN:__init(...)
  local o = U.parse("LocalResponseNorm", { { "size", REQ }, { "alpha", 1e-4 }, { "beta", 0.75 }, { "k", 1.0 } }, ...)
  self.size, self.alpha, self.beta, self.k = o.size, o.alpha, o.beta, o.k
end
function LRN:forward(...)
  U.require_args("LocalResponseNorm.forward", { "input" }, select("#", ...))
  local x = ...
  if not torch.is_tensor(x) then U.errorf("'%s' object has no attribute 'dim'", U.typename(x)) end
  return U.call_as("local_response_norm", F.local_response_norm, x, self.size, self.alpha, self.beta, self.k)
end
function LRN:extra_repr()
  return string.format("%d, alpha=%s, beta=%s, k=%s", self.size, U.pystr(self.alpha), U.pystr(self.beta), U.pystr(self.k))
end

F.channel_shuffle = U.checked("channel_shuffle", { "input:Tensor", "groups:int" }, function(x, groups)
  if x:dim() <= 2 then
    U.errorf("channel_shuffle expects input to have at least 3 dimensions, but got input with sizes %s", U.shape_str(x))
  end
  if groups <= 0 then U.errorf("Number of groups to divide channels in must be positive. Value of groups:%d", groups) end
  local C = x:size(1)
  if C % groups ~= 0 then U.errorf("Number of channels must be divisible by groups. Got %d channels and %d groups.", C, groups) end
  local shape = x:size()
  local s = { shape[0], groups, C // groups }
  for d = 2, x:dim() - 1 do s[#s + 1] = shape[d] end
  return x:reshape(s):transpose(1, 2):reshape(shape)
end)
torch.channel_shuffle = F.channel_shuffle

local ChannelShuffle = Module:extend("ChannelShuffle")
M.ChannelShuffle = ChannelShuffle
function ChannelShuffle:__init(groups) self.groups = U.check_int("ChannelShuffle", "groups", groups, 1) end
function ChannelShuffle:forward(x) return F.channel_shuffle(x, self.groups) end
function ChannelShuffle:extra_repr() return "groups=" .. self.groups end

F.adaptive_max_pool1d = U.checked("adaptive_max_pool1d", { "input:Tensor", "output_size:ints" }, function(input, output_size, return_indices)
  if input:dim() < 2 or input:dim() > 3 then
    U.errorf("Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)",
      input:dim())
  end
  if type(output_size) == "table" and #output_size ~= 1 then
    U.errorf("adaptive_max_pool1d() argument 'output_size' should contain one int (got %d)", #output_size)
  end
  local n = type(output_size) == "table" and output_size[1] or output_size
  local v, i = F.adaptive_max_pool2d(input:unsqueeze(-2), { 1, n }, true)
  if return_indices then return v:squeeze(-2), i:squeeze(-2) end
  return v:squeeze(-2)
end)

local AdaptiveMaxPool1d = Module:extend("AdaptiveMaxPool1d")
M.AdaptiveMaxPool1d = AdaptiveMaxPool1d
function AdaptiveMaxPool1d:__init(...)
  local o = U.parse("AdaptiveMaxPool1d", { { "output_size", REQ }, { "return_indices", false } }, ...)
  self.output_size, self.return_indices = o.output_size, o.return_indices
end
function AdaptiveMaxPool1d:forward(x) return F.adaptive_max_pool1d(x, self.output_size, self.return_indices) end
function AdaptiveMaxPool1d:extra_repr() return "output_size=" .. U.pystr(self.output_size) end

-- F.alpha_dropout: dropout that keeps SELU's mean and variance (dropped values go to SELU's
-- negative saturation, then an affine correction)
function F.alpha_dropout(...)
  local o = U.parse("alpha_dropout", { { "input", REQ }, { "p", 0.5 }, { "training", false }, { "inplace", false } }, ...)
  local x, p = o.input, o.p
  if p < 0 or p > 1 then U.errorf("dropout probability has to be between 0 and 1, but got %s", tostring(p)) end
  if not o.training or p == 0 then return x end
  if p == 1 then return x * 0 end
  local alpha_p = -1.7580993408473766
  local a = 1 / math.sqrt((alpha_p ^ 2 * p + 1) * (1 - p))
  local keep = torch.rand_like(x):ge(p):to(x.dtype)
  local b = -a * alpha_p * p
  local r = (x * keep + (1 - keep) * alpha_p) * a + b
  if o.inplace then x:copy_(r); return x end
  return r
end

local AlphaDropout = Module:extend("AlphaDropout")
M.AlphaDropout = AlphaDropout
function AlphaDropout:__init(...)
  local o = U.parse("AlphaDropout", { { "p", 0.5 }, { "inplace", false } }, ...)
  self.p, self.inplace = o.p, o.inplace
end
function AlphaDropout:forward(x) return F.alpha_dropout(x, self.p, self.training, self.inplace) end
function AlphaDropout:extra_repr() return "p=" .. U.pystr(self.p) .. ", inplace=" .. (self.inplace and "True" or "False") end

-- ---- bilinear ----

-- F.bilinear(x1 [.., in1], x2 [.., in2], weight [out, in1, in2], bias [out]): x1 A_o x2 + b_o
function F.bilinear(input1, input2, weight, bias)
  local y = torch.einsum("...i,oij,...j->...o", input1, weight, input2)
  if bias ~= nil then y = y + bias end
  return y
end

local Bilinear = Module:extend("Bilinear")
M.Bilinear = Bilinear

function Bilinear:__init(...)
  local o = U.parse("Bilinear", { { "in1_features", REQ }, { "in2_features", REQ }, { "out_features", REQ }, { "bias", true },
    { "device" }, { "dtype" } }, ...)
  self.in1_features = U.check_int("Bilinear", "in1_features", o.in1_features, 1)
  self.in2_features = U.check_int("Bilinear", "in2_features", o.in2_features, 1)
  self.out_features = U.check_int("Bilinear", "out_features", o.out_features, 1)
  local fk = { device = o.device, dtype = o.dtype }
  self.weight = Parameter(torch.empty(self.out_features, self.in1_features, self.in2_features, fk))
  if o.bias then self.bias = Parameter(torch.empty(self.out_features, fk)) else self:register_parameter("bias", nil) end
  local bound = 1 / math.sqrt(self.in1_features)
  init.uniform_(self.weight, -bound, bound)
  if o.bias then init.uniform_(self.bias, -bound, bound) end
end

function Bilinear:forward(x1, x2) return F.bilinear(x1, x2, self.weight, self.bias) end
function Bilinear:extra_repr()
  return string.format("in1_features=%d, in2_features=%d, out_features=%d, bias=%s", self.in1_features, self.in2_features,
    self.out_features, self.bias ~= nil and "True" or "False")
end

return M
