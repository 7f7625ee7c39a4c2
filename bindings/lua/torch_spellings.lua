-- PyTorch's remaining spellings of what nnrepl already does: the in-place forms of some math
-- functions (x:f_(...) writes torch.f(x, ...) into x, refusing a result dtype x cannot hold, as
-- PyTorch does), torch.absolute, index_fill, is_signed, apply_ / map_ (CPU, a Lua function per
-- element), and the functional in-place activations and old names (F.relu_, F.elu_, ...,
-- F.upsample_nearest, F.adaptive_max_pool2d_with_indices, ...).
local torch = require "torch"
local U = require "nn_util"
local F = torch.nn.functional
local Tensor = torch.Tensor

torch.absolute = U.checked("absolute", { "input:Tensor" }, function(...) return torch.abs(...) end)
Tensor.absolute = function(self) return self:abs() end
Tensor.absolute_ = function(self) return self:abs_() end

-- self:copy_(result) when PyTorch would write result into self in place
local function write_back(fname, self, result)
  if not torch.can_cast(result.dtype, self.dtype) then
    U.errorf("%s: result type %s can't be cast to the desired output type %s", fname, U.scalar_name(result.dtype), U.scalar_name(self.dtype))
  end
  if not self:is_same_size(result) then
    U.errorf("%s: output with shape %s doesn't match the broadcast shape %s", fname, tostring(self:size()), tostring(result:size()))
  end
  return self:copy_(result)
end

for _, name in ipairs({ "hypot", "ldexp", "sgn", "heaviside", "fmod", "floor_divide", "deg2rad", "rad2deg",
  "cumsum", "cumprod", "addmv", "addr" }) do
  if Tensor[name .. "_"] == nil then -- torch[name] looked up when called: some load after this file
    Tensor[name .. "_"] = function(self, ...) return write_back(name .. "_", self, torch[name](self, ...)) end
  end
end

-- float_power_ computes in float64, so self must be float64 (PyTorch's rule)
function Tensor:float_power_(exponent)
  if self.dtype ~= torch.float64 then
    U.errorf("float_power_: the base given to float_power_ has dtype %s but the operation's result requires dtype Double",
      U.scalar_name(self.dtype))
  end
  return self:copy_(torch.float_power(self, exponent))
end

function Tensor:index_fill(dim, index, value) return self:clone():index_fill_(dim, index, value) end
torch.index_fill = U.checked("index_fill", { "input:Tensor" }, function(input, ...) return input:index_fill(...) end)

function Tensor:is_signed() return self.dtype.is_signed end

-- apply_(fn) / map_(other, fn): fn called on each element (and other's, broadcast) as Lua
-- numbers, the result written back; CPU tensors only, as in PyTorch
local function on_cpu(fname, t)
  if t.device.type ~= "cpu" then U.errorf("%s: %s is only implemented on CPU tensors", fname, fname) end
end

local function each(self, fname, others, fn)
  on_cpu(fname, self)
  if type(fn) ~= "function" then U.errorf("%s: expected a function, got %s", fname, U.typename(fn)) end
  local cols = { self:reshape(-1):tolist() }
  for i, o in ipairs(others) do
    on_cpu(fname, o)
    cols[i + 1] = o:expand(self:size()):reshape(-1):tolist()
  end
  local out = {}
  for k = 1, #cols[1] do
    local args = {}
    for i = 1, #cols do args[i] = cols[i][k] end
    out[k] = fn(table.unpack(args))
  end
  return self:copy_(torch.tensor(out, { dtype = self.dtype }):view(self:size()))
end

function Tensor:apply_(fn) return each(self, "apply_", {}, fn) end
function Tensor:map_(other, fn)
  if not torch.is_tensor(other) then U.errorf("map_: expected a tensor, got %s", U.typename(other)) end
  return each(self, "map_", { other }, fn)
end

-- ---- torch.nn.functional ----

function F.relu_(input) return input:relu_() end
function F.elu_(input, alpha) return F.elu(input, alpha or 1.0, true) end
function F.celu_(input, alpha) return F.celu(input, alpha or 1.0, true) end
function F.selu_(input) return F.selu(input, true) end
function F.leaky_relu_(input, negative_slope) return F.leaky_relu(input, negative_slope or 0.01, true) end
function F.hardtanh_(input, min_val, max_val) return F.hardtanh(input, min_val or -1.0, max_val or 1.0, true) end
function F.threshold_(input, threshold, value) return F.threshold(input, threshold, value, true) end
function F.rrelu_(input, ...)
  local o = U.parse("rrelu_", { { "lower", 1.0 / 8 }, { "upper", 1.0 / 3 }, { "training", false } }, ...)
  return F.rrelu(input, o.lower, o.upper, o.training, true)
end

U.check_all(F, {
  relu_ = { "input:Tensor" }, elu_ = { "input:Tensor", "alpha:Number?" }, celu_ = { "input:Tensor", "alpha:Number?" },
  selu_ = { "input:Tensor" }, leaky_relu_ = { "input:Tensor", "negative_slope:Number?" },
  hardtanh_ = { "input:Tensor", "min_val:Number?", "max_val:Number?" },
  threshold_ = { "input:Tensor", "threshold:Number", "value:Number" },
  rrelu_ = { "input:Tensor", "lower:Number?", "upper:Number?" },
})

-- the losses' targets and the activations' number arguments checked as PyTorch's parser does (a
-- keyword table ends the checks: torch.hinge_embedding_loss and the others call these with one);
-- the errors of the ops inside name the function
U.check_all(F, {
  soft_margin_loss = { "input:Tensor?", "target:Tensor?" }, hinge_embedding_loss = { "input:Tensor?", "target:Tensor?" },
  multilabel_soft_margin_loss = { "input:Tensor?", "target:Tensor?" }, poisson_nll_loss = { "input:Tensor?", "target:Tensor?" },
  pairwise_distance = { "x1:Tensor?", "x2:Tensor?" },
  cosine_similarity = { "x1:Tensor?", "x2:Tensor?" }, grid_sample = { "input:Tensor?", "grid:Tensor?" },
  pdist = { "input:Tensor?", "p:Tensor|Number?" }, celu = { "input:Tensor?", "alpha:Tensor|Number?" },
  glu = { "input:Tensor?", "dim:int?" }, hardshrink = { "input:Tensor?", "lambd:Tensor|Number?" },
  softshrink = { "input:Tensor?", "lambd:Tensor|Number?" }, alpha_dropout = { "input:Tensor?", "p:Tensor|Number?" },
  rrelu = { "input:Tensor?", "lower:Tensor|Number?", "upper:Tensor|Number?" }, gumbel_softmax = { "logits:Tensor?", "tau:Tensor|Number?" },
  layer_norm = { "input:Tensor?", "normalized_shape:ints" },
  kl_div = { "input:Tensor?", "target:Tensor?" }, instance_norm = { "input:Tensor?" },
})

-- the deprecated upsampling names, as PyTorch defines them on interpolate
function F.upsample_nearest(input, size, scale_factor)
  return F.interpolate(input, { size = size, scale_factor = scale_factor, mode = "nearest" })
end
function F.upsample_bilinear(input, size, scale_factor)
  return F.interpolate(input, { size = size, scale_factor = scale_factor, mode = "bilinear", align_corners = true })
end

-- the *_with_indices names: the pools with return_indices
function F.adaptive_max_pool1d_with_indices(input, output_size) return F.adaptive_max_pool1d(input, output_size, true) end
function F.adaptive_max_pool2d_with_indices(input, output_size) return F.adaptive_max_pool2d(input, output_size, true) end
F.adaptive_max_pool2d_with_indices = U.checked("adaptive_max_pool2d_with_indices", { "input:Tensor" }, F.adaptive_max_pool2d_with_indices)
function F.max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
  return F.max_pool1d(input, kernel_size, { stride = stride, padding = padding or 0, dilation = dilation or 1,
    ceil_mode = ceil_mode or false, return_indices = true })
end
