-- Normalisation layers: BatchNorm1d/2d/3d (running statistics as buffers),
-- LayerNorm, GroupNorm. Lua tables cannot hold nil, so BatchNorm's
-- `momentum=None` (cumulative moving average) is written momentum=false.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local init = require "nn_init"

local REQ = U.REQUIRED
local M = {}


local function check_input(layer, x)
  if not torch.is_tensor(x) then
    U.errorf("%s expected a tensor as input, got %s", layer:_get_name(), U.typename(x))
  end
end

-- ---- BatchNorm ----

local BatchNorm = Module:extend("_BatchNorm")
M._BatchNorm = BatchNorm
local bn_spec = {
  { "num_features", REQ }, { "eps", 1e-5 }, { "momentum", 0.1 }, { "affine", true }, { "track_running_stats", true },
  { "device" }, { "dtype" },
}

function BatchNorm:__init(...)
  local name = self:_get_name()
  local o = U.parse(name, bn_spec, ...)
  local n = U.check_int(name, "num_features", o.num_features, 0)
  self.num_features, self.eps, self.affine = n, o.eps, o.affine
  self.momentum = o.momentum ~= false and o.momentum or nil -- false: None
  self.track_running_stats = o.track_running_stats
  local fk = { dtype = o.dtype, device = o.device }
  if o.affine then
    self.weight = Parameter(torch.empty(n, fk))
    self.bias = Parameter(torch.empty(n, fk))
  else
    self:register_parameter("weight", nil)
    self:register_parameter("bias", nil)
  end
  if o.track_running_stats then
    self:register_buffer("running_mean", torch.zeros(n, fk))
    self:register_buffer("running_var", torch.ones(n, fk))
    self:register_buffer("num_batches_tracked", torch.tensor(0, { dtype = torch.int64, device = o.device }))
  else
    self:register_buffer("running_mean", nil)
    self:register_buffer("running_var", nil)
    self:register_buffer("num_batches_tracked", nil)
  end
  self:reset_parameters()
end

function BatchNorm:reset_running_stats()
  if self.track_running_stats then
    local _ <close> = torch.no_grad()
    self.running_mean:zero_()
    self.running_var:fill_(1)
    self.num_batches_tracked:zero_()
  end
end

function BatchNorm:reset_parameters()
  self:reset_running_stats()
  if self.affine then
    init.ones_(self.weight)
    init.zeros_(self.bias)
  end
end

-- BatchNorm1d: [N, C] or [N, C, L]; BatchNorm2d: [N, C, H, W]; BatchNorm3d: [N, C, D, H, W]
local layouts = { [2] = "[N, %d]", [3] = "[N, %d, L]", [4] = "[N, %d, H, W]", [5] = "[N, %d, D, H, W]" }

function BatchNorm:_check_input_dim(x)
  local d, ok = x:dim(), self._dims
  if not ok[d] then U.errorf(self._dims_msg, d) end
end

-- the running statistics' update factor for this forward (counting the batch when training)
function BatchNorm:_momentum_factor()
  local factor = self.momentum or 0.0
  if self.training and self.track_running_stats and self.num_batches_tracked ~= nil then
    self.num_batches_tracked:add_(1)
    if self.momentum == nil then factor = 1.0 / self.num_batches_tracked:item() end
  end
  return factor
end

function BatchNorm:forward(x)
  check_input(self, x)
  self:_check_input_dim(x)
  if x:size(1) ~= self.num_features then
    local want = {}
    for d in pairs(self._dims) do want[#want + 1] = d end
    table.sort(want)
    for i, d in ipairs(want) do want[i] = string.format(layouts[d], self.num_features) end
    U.errorf("%s got input of shape %s, expected %s", tostring(self), U.shape_str(x), table.concat(want, " or "))
  end
  local factor = self:_momentum_factor()
  local bn_training = self.training or (self.running_mean == nil and self.running_var == nil)
  local use_stats = not self.training or self.track_running_stats
  return U.F("batch_norm", x, use_stats and self.running_mean or nil, use_stats and self.running_var or nil,
    self.weight, self.bias, bn_training, factor, self.eps)
end

-- A state dict without num_batches_tracked (older PyTorch) still loads, as in PyTorch.
function BatchNorm:_load_from_state_dict(state_dict, prefix, ...)
  if self.track_running_stats then
    local key = prefix .. "num_batches_tracked"
    if state_dict[key] == nil then
      state_dict[key] = self.num_batches_tracked or torch.tensor(0, { dtype = torch.int64 })
    end
  end
  return Module._load_from_state_dict(self, state_dict, prefix, ...)
end

function BatchNorm:extra_repr()
  return string.format("%d, eps=%s, momentum=%s, affine=%s, track_running_stats=%s", self.num_features,
    U.pystr(self.eps), U.pystr(self.momentum), U.pystr(self.affine), U.pystr(self.track_running_stats))
end

local function batchnorm(name, dims, msg)
  local cls = BatchNorm:extend(name)
  cls._dims, cls._dims_msg = dims, msg
  M[name] = cls
end
batchnorm("BatchNorm1d", { [2] = true, [3] = true }, "expected 2D or 3D input (got %dD input)")
batchnorm("BatchNorm2d", { [4] = true }, "expected 4D input (got %dD input)")
batchnorm("BatchNorm3d", { [5] = true }, "expected 5D input (got %dD input)")

-- ---- LayerNorm ----

local LayerNorm = Module:extend("LayerNorm")
M.LayerNorm = LayerNorm
local ln_spec = {
  { "normalized_shape", REQ }, { "eps", 1e-5 }, { "elementwise_affine", true }, { "bias", true }, { "device" },
  { "dtype" },
}

function LayerNorm:__init(...)
  local o = U.parse("LayerNorm", ln_spec, ...)
  local shape = o.normalized_shape
  if type(shape) == "number" then
    shape = { U.check_int("LayerNorm", "normalized_shape", shape) }
  else
    local mt = getmetatable(shape)
    if mt and mt.__name == "torch.Size" then shape = shape:totable() end
    if type(shape) ~= "table" then
      U.errorf("LayerNorm: normalized_shape must be an int or a list of ints, got %s", U.typename(shape))
    end
    local copy = {}
    for i, v in ipairs(shape) do copy[i] = U.check_int("LayerNorm", "normalized_shape", v) end
    shape = copy
  end
  self.normalized_shape, self.eps, self.elementwise_affine = shape, o.eps, o.elementwise_affine
  local fk = { dtype = o.dtype, device = o.device }
  if o.elementwise_affine then
    self.weight = Parameter(torch.empty(shape, fk))
    if o.bias then
      self.bias = Parameter(torch.empty(shape, fk))
    else
      self:register_parameter("bias", nil)
    end
  else
    self:register_parameter("weight", nil)
    self:register_parameter("bias", nil)
  end
  self:reset_parameters()
end

function LayerNorm:reset_parameters()
  if self.weight ~= nil then init.ones_(self.weight) end
  if self.bias ~= nil then init.zeros_(self.bias) end
end

function LayerNorm:forward(x)
  check_input(self, x)
  local shape, d = self.normalized_shape, x:dim()
  local ok = d >= #shape
  for i = 1, #shape do
    if not ok then break end
    ok = x:size(d - #shape + i - 1) == shape[i]
  end
  if not ok then
    U.errorf("%s got input of shape %s, expected [*, %s]", tostring(self), U.shape_str(x),
      table.concat(shape, ", "))
  end
  return U.F("layer_norm", x, shape, self.weight, self.bias, self.eps)
end

function LayerNorm:extra_repr()
  return string.format("%s, eps=%s, elementwise_affine=%s", U.pystr(self.normalized_shape), U.pystr(self.eps),
    U.pystr(self.elementwise_affine))
end

-- ---- GroupNorm ----

local GroupNorm = Module:extend("GroupNorm")
M.GroupNorm = GroupNorm
local gn_spec = { { "num_groups", REQ }, { "num_channels", REQ }, { "eps", 1e-5 }, { "affine", true }, { "device" }, { "dtype" } }

function GroupNorm:__init(...)
  local o = U.parse("GroupNorm", gn_spec, ...)
  local g = U.check_int("GroupNorm", "num_groups", o.num_groups, 1)
  local c = U.check_int("GroupNorm", "num_channels", o.num_channels, 0)
  if c % g ~= 0 then U.errorf("num_channels (%d) must be divisible by num_groups (%d)", c, g) end
  self.num_groups, self.num_channels, self.eps, self.affine = g, c, o.eps, o.affine
  local fk = { dtype = o.dtype, device = o.device }
  if o.affine then
    self.weight = Parameter(torch.empty(c, fk))
    self.bias = Parameter(torch.empty(c, fk))
  else
    self:register_parameter("weight", nil)
    self:register_parameter("bias", nil)
  end
  self:reset_parameters()
end

function GroupNorm:reset_parameters()
  if self.affine then
    init.ones_(self.weight)
    init.zeros_(self.bias)
  end
end

function GroupNorm:forward(x)
  check_input(self, x)
  if x:dim() < 2 or x:size(1) ~= self.num_channels then
    U.errorf("%s got input of shape %s, expected [N, %d, *]", tostring(self), U.shape_str(x), self.num_channels)
  end
  return U.F("group_norm", x, self.num_groups, self.weight, self.bias, self.eps)
end

function GroupNorm:extra_repr()
  return string.format("%d, %d, eps=%s, affine=%s", self.num_groups, self.num_channels, U.pystr(self.eps),
    U.pystr(self.affine))
end

return M
