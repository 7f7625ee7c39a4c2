-- Layers with weights or geometry: Identity, Linear, Conv2d, the 2-d pools,
-- Flatten, Unflatten, Dropout (and 1d/2d/3d), Embedding. Constructors take PyTorch's arguments
-- positionally and/or as a trailing keyword table; forward calls
-- torch.nn.functional (F), and prints as PyTorch prints.
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

local function factory(o) return { dtype = o.dtype, device = o.device } end

-- U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights (kaiming_uniform_ with a=sqrt(5)) and biases.
local function reset_affine(self)
  init.kaiming_uniform_(self.weight, { a = math.sqrt(5) })
  if self.bias ~= nil then
    local fan_in = init._calculate_fan_in_and_fan_out(self.weight)
    local bound = fan_in > 0 and 1 / math.sqrt(fan_in) or 0
    init.uniform_(self.bias, -bound, bound)
  end
end

M._reset_affine = reset_affine -- for the layers of other files (nn_conv_more)

-- ---- Identity ----

local Identity = Module:extend("Identity")
M.Identity = Identity
function Identity:__init() end -- accepts and ignores any arguments, like PyTorch
function Identity:forward(x) return x end

-- ---- Linear ----

local Linear = Module:extend("Linear")
M.Linear = Linear
local linear_spec = { { "in_features", REQ }, { "out_features", REQ }, { "bias", true }, { "device" }, { "dtype" } }

function Linear:__init(...)
  local o = U.parse("Linear", linear_spec, ...)
  self.in_features = U.check_int("Linear", "in_features", o.in_features, 0)
  self.out_features = U.check_int("Linear", "out_features", o.out_features, 0)
  local fk = factory(o)
  self.weight = Parameter(torch.empty(self.out_features, self.in_features, fk))
  if o.bias then
    self.bias = Parameter(torch.empty(self.out_features, fk))
  else
    self:register_parameter("bias", nil)
  end
  self:reset_parameters()
end

Linear.reset_parameters = reset_affine

function Linear:forward(x)
  check_input(self, x)
  if x:dim() == 0 or x:size(-1) ~= self.in_features then
    U.errorf("Linear(in_features=%d, out_features=%d) got input of shape %s, expected [*, %d]",
      self.in_features, self.out_features, U.shape_str(x), self.in_features)
  end
  if not (x:is_floating_point() or x:is_complex()) and x.dtype ~= self.weight.dtype then -- PyTorch's addmm text
    U.errorf("mat1 and mat2 must have the same dtype, but got %s and %s", U.scalar_name(x.dtype), U.scalar_name(self.weight.dtype))
  end
  return U.F("linear", x, self.weight, self.bias)
end

function Linear:extra_repr()
  return string.format("in_features=%d, out_features=%d, bias=%s", self.in_features, self.out_features,
    U.pystr(self.bias ~= nil))
end

-- ---- Conv2d ----

-- F.pad's list (last dim first) for a convolution module's padding, "same" and "valid" included
function M._mode_pad(self)
  local pad = {}
  for i = #self.kernel_size, 1, -1 do
    local lo, hi
    if type(self.padding) == "string" then
      local total = self.padding == "same" and self.dilation[i] * (self.kernel_size[i] - 1) or 0
      lo, hi = total // 2, total - total // 2
    else
      lo, hi = self.padding[i], self.padding[i]
    end
    pad[#pad + 1], pad[#pad + 2] = lo, hi
  end
  return pad
end

local Conv2d = Module:extend("Conv2d")
M.Conv2d = Conv2d
local conv_spec = {
  { "in_channels", REQ }, { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 }, { "padding", 0 },
  { "dilation", 1 }, { "groups", 1 }, { "bias", true }, { "padding_mode", "zeros" }, { "device" }, { "dtype" },
}
local padding_modes = { zeros = true, reflect = true, replicate = true, circular = true }

function Conv2d:__init(...)
  local name = self:_get_name()
  local o = U.parse(name, conv_spec, ...)
  local cin = U.check_int(name, "in_channels", o.in_channels, 0)
  local cout = U.check_int(name, "out_channels", o.out_channels, 0)
  local groups = o.groups
  if math.type(groups) ~= "integer" or groups <= 0 then U.error("groups must be a positive integer") end
  if cin % groups ~= 0 then U.error("in_channels must be divisible by groups") end
  if cout % groups ~= 0 then U.error("out_channels must be divisible by groups") end
  local stride = U.ntuple(name, "stride", o.stride, 2)
  local padding = o.padding
  if type(padding) == "string" then
    if padding ~= "same" and padding ~= "valid" then
      U.errorf("Invalid padding string '%s', should be one of {'valid', 'same'}", padding)
    end
    if padding == "same" and (stride[1] ~= 1 or stride[2] ~= 1) then
      U.error("padding='same' is not supported for strided convolutions")
    end
  else
    padding = U.ntuple(name, "padding", padding, 2)
  end
  if not padding_modes[o.padding_mode] then
    U.errorf("padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got padding_mode='%s'",
      tostring(o.padding_mode))
  end
  self.in_channels, self.out_channels = cin, cout
  self.kernel_size = U.ntuple(name, "kernel_size", o.kernel_size, 2)
  self.stride, self.padding = stride, padding
  self.dilation = U.ntuple(name, "dilation", o.dilation, 2)
  self.groups = groups
  self.padding_mode = o.padding_mode
  self.output_padding = { 0, 0 }
  self.transposed = false
  local fk = factory(o)
  self.weight = Parameter(torch.empty(cout, cin // groups, self.kernel_size[1], self.kernel_size[2], fk))
  if o.bias then
    self.bias = Parameter(torch.empty(cout, fk))
  else
    self:register_parameter("bias", nil)
  end
  self:reset_parameters()
end

Conv2d.reset_parameters = reset_affine

function Conv2d:forward(x)
  check_input(self, x)
  local d = x:dim()
  if (d ~= 3 and d ~= 4) or x:size(-3) ~= self.in_channels then
    U.errorf("%s got input of shape %s, expected [N, %d, H, W] or [%d, H, W]", tostring(self), U.shape_str(x),
      self.in_channels, self.in_channels)
  end
  if self.padding_mode ~= "zeros" then -- pad first in that mode, then convolve without padding (PyTorch's order)
    return U.F("conv2d", U.F("pad", x, M._mode_pad(self), self.padding_mode), self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
  end
  return U.F("conv2d", x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
end

local function all_equal(t, v)
  for _, x in ipairs(t) do if x ~= v then return false end end
  return true
end

function Conv2d:extra_repr()
  local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
    U.pystr(self.kernel_size), U.pystr(self.stride))
  local p = self.padding
  if type(p) == "string" or not all_equal(p, 0) then s = s .. ", padding=" .. U.pystr(p) end
  if not all_equal(self.dilation, 1) then s = s .. ", dilation=" .. U.pystr(self.dilation) end
  if not all_equal(self.output_padding, 0) then s = s .. ", output_padding=" .. U.pystr(self.output_padding) end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if self.bias == nil then s = s .. ", bias=False" end
  if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
  return s
end

-- ---- pools ----

local MaxPool2d = Module:extend("MaxPool2d")
M.MaxPool2d = MaxPool2d
local maxpool_spec = {
  { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "dilation", 1 }, { "return_indices", false },
  { "ceil_mode", false },
}

function MaxPool2d:__init(...)
  local o = U.parse("MaxPool2d", maxpool_spec, ...)
  self.kernel_size = o.kernel_size
  self.stride = o.stride ~= nil and o.stride or o.kernel_size
  self.padding, self.dilation = o.padding, o.dilation
  self.return_indices, self.ceil_mode = o.return_indices, o.ceil_mode
end

function MaxPool2d:forward(x)
  check_input(self, x)
  return U.F("max_pool2d", x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
    self.return_indices)
end

function MaxPool2d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s, dilation=%s, ceil_mode=%s", U.pystr(self.kernel_size),
    U.pystr(self.stride), U.pystr(self.padding), U.pystr(self.dilation), U.pystr(self.ceil_mode))
end

local AvgPool2d = Module:extend("AvgPool2d")
M.AvgPool2d = AvgPool2d
local avgpool_spec = {
  { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "ceil_mode", false }, { "count_include_pad", true },
  { "divisor_override" },
}

function AvgPool2d:__init(...)
  local o = U.parse("AvgPool2d", avgpool_spec, ...)
  self.kernel_size = o.kernel_size
  self.stride = o.stride ~= nil and o.stride or o.kernel_size
  self.padding, self.ceil_mode = o.padding, o.ceil_mode
  self.count_include_pad, self.divisor_override = o.count_include_pad, o.divisor_override
end

function AvgPool2d:forward(x)
  check_input(self, x)
  return U.F("avg_pool2d", x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
    self.divisor_override)
end

function AvgPool2d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s", U.pystr(self.kernel_size), U.pystr(self.stride),
    U.pystr(self.padding))
end

local AdaptiveAvgPool2d = Module:extend("AdaptiveAvgPool2d")
M.AdaptiveAvgPool2d = AdaptiveAvgPool2d

function AdaptiveAvgPool2d:__init(...)
  self.output_size = U.parse("AdaptiveAvgPool2d", { { "output_size", REQ } }, ...).output_size
end

function AdaptiveAvgPool2d:forward(x)
  check_input(self, x)
  return U.F("adaptive_avg_pool2d", x, self.output_size)
end

function AdaptiveAvgPool2d:extra_repr() return "output_size=" .. U.pystr(self.output_size) end

local AdaptiveMaxPool2d = Module:extend("AdaptiveMaxPool2d")
M.AdaptiveMaxPool2d = AdaptiveMaxPool2d

function AdaptiveMaxPool2d:__init(...)
  local o = U.parse("AdaptiveMaxPool2d", { { "output_size", REQ }, { "return_indices", false } }, ...)
  self.output_size, self.return_indices = o.output_size, o.return_indices
end

function AdaptiveMaxPool2d:forward(x)
  check_input(self, x)
  return U.F("adaptive_max_pool2d", x, self.output_size, self.return_indices)
end

AdaptiveMaxPool2d.extra_repr = AdaptiveAvgPool2d.extra_repr

-- ---- reshaping ----

local Flatten = Module:extend("Flatten")
M.Flatten = Flatten

function Flatten:__init(...)
  local o = U.parse("Flatten", { { "start_dim", 1 }, { "end_dim", -1 } }, ...)
  self.start_dim = U.check_int("Flatten", "start_dim", o.start_dim)
  self.end_dim = U.check_int("Flatten", "end_dim", o.end_dim)
end

function Flatten:forward(x)
  check_input(self, x)
  U.wrap_dim(self.start_dim, x:dim()) -- PyTorch's IndexError text
  U.wrap_dim(self.end_dim, x:dim())
  return U.call_as("flatten", x.flatten, x, self.start_dim, self.end_dim)
end

function Flatten:extra_repr() return string.format("start_dim=%d, end_dim=%d", self.start_dim, self.end_dim) end

local Unflatten = Module:extend("Unflatten")
M.Unflatten = Unflatten

function Unflatten:__init(...)
  local o = U.parse("Unflatten", { { "dim", REQ }, { "unflattened_size", REQ } }, ...)
  self.dim = U.check_int("Unflatten", "dim", o.dim)
  local size = o.unflattened_size
  local mt = getmetatable(size)
  if mt and mt.__name == "torch.Size" then size = size:totable() end
  if type(size) ~= "table" then
    U.errorf("unflattened_size must be tuple of ints, but found type %s", U.typename(size))
  end
  for _, v in ipairs(size) do
    if math.type(v) ~= "integer" then
      U.errorf("unflattened_size must be tuple of ints, but found element of type %s at pos %d",
        U.typename(v), _ - 1)
    end
  end
  self.unflattened_size = size
end

function Unflatten:forward(x)
  check_input(self, x)
  local n = x:dim()
  local dim = self.dim < 0 and self.dim + n or self.dim
  if n == 0 then U.wrap_dim(self.dim, 0) end -- a 0-d tensor counts as one dim
  if dim < 0 or dim >= n then
    U.errorf("Dimension out of range (expected to be in range of [%d, %d], but got %d)", -n, n - 1, self.dim)
  end
  local shape = {}
  for i = 0, dim - 1 do shape[#shape + 1] = x:size(i) end
  local prod, infer = 1, false
  for _, v in ipairs(self.unflattened_size) do
    shape[#shape + 1] = v
    if v == -1 then infer = true else prod = prod * v end
  end
  if not infer and prod ~= x:size(dim) then
    U.errorf("unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in the input tensor",
      U.pystr(self.unflattened_size):gsub("^%((.*)%)$", "[%1]"):gsub(",%]$", "]"), self.dim, x:size(dim))
  end
  for i = dim + 1, n - 1 do shape[#shape + 1] = x:size(i) end
  return x:view(shape)
end

function Unflatten:extra_repr()
  return string.format("dim=%d, unflattened_size=%s", self.dim, U.pystr(self.unflattened_size))
end

-- ---- Dropout ----

local Dropout = Module:extend("Dropout")
M.Dropout = Dropout

function Dropout:__init(...)
  local o = U.parse(self:_get_name(), { { "p", 0.5 }, { "inplace", false } }, ...)
  if type(o.p) ~= "number" or o.p < 0 or o.p > 1 then
    U.errorf("dropout probability has to be between 0 and 1, but got %s", U.pystr(o.p))
  end
  self.p, self.inplace = o.p, o.inplace
end

function Dropout:forward(x)
  check_input(self, x)
  return U.F("dropout", x, self.p, self.training, self.inplace)
end

function Dropout:extra_repr() return string.format("p=%s, inplace=%s", U.pystr(self.p), U.pystr(self.inplace)) end

-- Dropout1d/2d/3d zero whole channels (F.dropout1d/2d/3d).
for _, nd in ipairs({ "1d", "2d", "3d" }) do
  local cls = Dropout:extend("Dropout" .. nd)
  local fname = "dropout" .. nd
  function cls:forward(x)
    check_input(self, x)
    return U.F(fname, x, self.p, self.training, self.inplace)
  end
  M["Dropout" .. nd] = cls
end

-- ---- Embedding ----

local Embedding = Module:extend("Embedding")
M.Embedding = Embedding
-- num_embeddings, embedding_dim and padding_idx (made non-negative) checked, for Embedding and EmbeddingBag
function M._embedding_sizes(name, o, pad_word)
  local n = U.check_int(name, "num_embeddings", o.num_embeddings, 0)
  local d = U.check_int(name, "embedding_dim", o.embedding_dim, 0)
  local pad = o.padding_idx
  if pad ~= nil then
    pad = U.check_int(name, "padding_idx", pad)
    if pad >= n or pad < -n then U.errorf("%s must be within num_embeddings", pad_word) end
    if pad < 0 then pad = n + pad end
  end
  return n, d, pad
end

-- self.weight: o._weight checked (frozen with o._freeze), or a fresh [n, d] reset by reset_parameters
function M._embedding_weight(self, o, n, d)
  if o._weight == nil then
    self.weight = Parameter(torch.empty(n, d, factory(o)))
    self:reset_parameters()
    return
  end
  local w = o._weight
  if w:dim() ~= 2 or w:size(0) ~= n or w:size(1) ~= d then
    U.error("Shape of weight does not match num_embeddings and embedding_dim")
  end
  self.weight = Parameter(w, not o._freeze)
end

local embedding_spec = {
  { "num_embeddings", REQ }, { "embedding_dim", REQ }, { "padding_idx" }, { "max_norm" }, { "norm_type", 2.0 },
  { "scale_grad_by_freq", false }, { "sparse", false }, { "_weight" }, { "_freeze", false }, { "device" },
  { "dtype" },
}

function Embedding:__init(...)
  local o = U.parse("Embedding", embedding_spec, ...)
  local n, d, padding_idx = M._embedding_sizes("Embedding", o, "Padding_idx")
  self.num_embeddings, self.embedding_dim, self.padding_idx = n, d, padding_idx
  self.max_norm, self.norm_type = o.max_norm, o.norm_type
  self.scale_grad_by_freq, self.sparse = o.scale_grad_by_freq, o.sparse
  M._embedding_weight(self, o, n, d)
end

function Embedding:_fill_padding_idx_with_zero()
  if self.padding_idx ~= nil then
    local _ <close> = torch.no_grad()
    self.weight[self.padding_idx]:fill_(0)
  end
end

function Embedding:reset_parameters()
  init.normal_(self.weight)
  self:_fill_padding_idx_with_zero()
end

function Embedding:forward(x)
  check_input(self, x)
  return U.F("embedding", x, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq,
    self.sparse)
end

function Embedding:extra_repr()
  local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
  if self.padding_idx ~= nil then s = s .. ", padding_idx=" .. self.padding_idx end
  if self.max_norm ~= nil then s = s .. ", max_norm=" .. U.pystr(self.max_norm) end
  if self.norm_type ~= 2 then s = s .. ", norm_type=" .. U.pystr(self.norm_type) end
  if self.scale_grad_by_freq then s = s .. ", scale_grad_by_freq=True" end
  if self.sparse then s = s .. ", sparse=True" end
  return s
end

-- nn.Embedding.from_pretrained(weights, {freeze=true, padding_idx=, ...})
function Embedding.from_pretrained(first, ...)
  if first == Embedding then return Embedding.from_pretrained(...) end -- called with ':'
  local o = U.parse("from_pretrained", {
    { "embeddings", REQ }, { "freeze", true }, { "padding_idx" }, { "max_norm" }, { "norm_type", 2.0 },
    { "scale_grad_by_freq", false }, { "sparse", false },
  }, first, ...)
  local e = o.embeddings
  if not torch.is_tensor(e) or e:dim() ~= 2 then U.error("Embeddings parameter is expected to be 2-dimensional") end
  return Embedding(e:size(0), e:size(1), {
    _weight = e, _freeze = o.freeze, padding_idx = o.padding_idx, max_norm = o.max_norm, norm_type = o.norm_type,
    scale_grad_by_freq = o.scale_grad_by_freq, sparse = o.sparse,
  })
end

-- ---- CosineSimilarity, PairwiseDistance ----

local CosineSimilarity = Module:extend("CosineSimilarity")
M.CosineSimilarity = CosineSimilarity
function CosineSimilarity:__init(...)
  local o = U.parse("CosineSimilarity", { { "dim", 1 }, { "eps", 1e-8 } }, ...)
  self.dim, self.eps = o.dim, o.eps
end
function CosineSimilarity:forward(x1, x2) return U.F("cosine_similarity", x1, x2, self.dim, self.eps) end

local PairwiseDistance = Module:extend("PairwiseDistance")
M.PairwiseDistance = PairwiseDistance
function PairwiseDistance:__init(...)
  local o = U.parse("PairwiseDistance", { { "p", 2.0 }, { "eps", 1e-6 }, { "keepdim", false } }, ...)
  self.norm, self.eps, self.keepdim = o.p, o.eps, o.keepdim
end
function PairwiseDistance:forward(...)
  U.require_args("PairwiseDistance.forward", { "x1", "x2" }, select("#", ...))
  local x1, x2 = ...
  U.check_tensor("pairwise_distance", "x1", 1, x1)
  U.check_tensor("pairwise_distance", "x2", 2, x2)
  return U.F("pairwise_distance", x1, x2, self.norm, self.eps, self.keepdim)
end

return M
