-- More of torch.nn, made of the differentiable tensor ops: Softmax2d, Softshrink / Hardshrink,
-- RReLU, RMSNorm, MultiMarginLoss, pdist, LPPool1d / 2d, gumbel_softmax, EmbeddingBag,
-- MaxUnpool1d / 2d, LazyLinear, LazyConv1d / 2d / 3d, LazyBatchNorm1d / 2d / 3d, nn.init.sparse_ /
-- dirac_ and CTCLoss, with PyTorch's arguments, defaults and formulas.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local init = require "nn_init"
local layers = require "nn_layers"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

local tensor_arg = U.tensor_arg

local maybe_inplace = U.maybe_inplace

-- a C++ double as PyTorch's messages print it (1, 0.5, -1)
local function cnum(v) return string.format("%g", v) end

-- PyTorch's _Reduction.legacy_get_string
local function legacy_reduction(size_average, reduce, reduction)
  if size_average == nil and reduce == nil then return reduction end
  if size_average == nil then size_average = true end
  if reduce == nil then reduce = true end
  if not reduce then return "none" end
  return size_average and "mean" or "sum"
end

local function reduce(v, reduction)
  if reduction == "mean" then return v:mean() end
  if reduction == "sum" then return v:sum() end
  if reduction == "none" then return v end
  U.errorf("%s is not a valid value for reduction", tostring(reduction))
end

local function lengths_list(v)
  if torch.is_tensor(v) then
    if v:dim() == 0 then return { v:item() } end
    return v:tolist()
  end
  if type(v) == "number" then return { v } end
  return v
end

-- ---- activations ----

local Softmax2d = Module:extend("Softmax2d")
M.Softmax2d = Softmax2d
function Softmax2d:__init() end
function Softmax2d:forward(x)
  tensor_arg("Softmax2d", "input", x)
  if x:dim() ~= 3 and x:dim() ~= 4 then
    U.errorf("Softmax2d: expected input to be 3D or 4D, got %dD instead", x:dim())
  end
  return U.F("softmax", x, -3)
end

function F.softshrink(...)
  local o = U.parse("softshrink", { { "input", REQ }, { "lambd", 0.5 } }, ...)
  local x = tensor_arg("softshrink", "input", o.input)
  if o.lambd < 0 then U.errorf("lambda must be greater or equal to 0, but found to be %s.", cnum(o.lambd)) end
  return x - x:clamp(-o.lambd, o.lambd)
end

function F.hardshrink(...)
  local o = U.parse("hardshrink", { { "input", REQ }, { "lambd", 0.5 } }, ...)
  local x = tensor_arg("hardshrink", "input", o.input)
  return x * x:abs():gt(o.lambd):to(x.dtype)
end

for _, name in ipairs({ "Softshrink", "Hardshrink" }) do
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...) self.lambd = U.parse(name, { { "lambd", 0.5 } }, ...).lambd end
  function cls:forward(x) return U.F(name:lower(), x, self.lambd) end
  function cls:extra_repr() return U.pystr(self.lambd) end
end

-- training: each negative element times its own slope drawn from U(lower, upper);
-- otherwise the fixed slope (lower + upper) / 2
function F.rrelu(...)
  local o = U.parse("rrelu", { { "input", REQ }, { "lower", 1.0 / 8 }, { "upper", 1.0 / 3 }, { "training", false },
    { "inplace", false } }, ...)
  local x = tensor_arg("rrelu", "input", o.input)
  if o.lower > o.upper then U.error("Lower bound should be less than or equal to the upper bound") end
  return maybe_inplace(x, function(v)
    if not o.training then return F.leaky_relu(v, (o.lower + o.upper) / 2) end
    local a = torch.rand_like(v) * (o.upper - o.lower) + o.lower
    return torch.where(v:ge(0), v, v * a)
  end, o.inplace)
end

local RReLU = Module:extend("RReLU")
M.RReLU = RReLU
function RReLU:__init(...)
  local o = U.parse("RReLU", { { "lower", 1.0 / 8 }, { "upper", 1.0 / 3 }, { "inplace", false } }, ...)
  self.lower, self.upper, self.inplace = o.lower, o.upper, o.inplace
end
function RReLU:forward(x) return U.F("rrelu", x, self.lower, self.upper, self.training, self.inplace) end
function RReLU:extra_repr()
  return string.format("lower=%s, upper=%s%s", U.pystr(self.lower), U.pystr(self.upper), self.inplace and ", inplace=True" or "")
end

-- ---- RMSNorm ----

local function shape_list(fname, s)
  if type(s) == "number" then return { U.check_int(fname, "normalized_shape", s) } end
  if torch.is_tensor(s) then U.errorf("%s: normalized_shape must be an int or a list of ints", fname) end
  if type(s) == "table" and getmetatable(s) ~= nil and s.totable then s = s:totable() end
  if type(s) ~= "table" then U.errorf("%s: normalized_shape must be an int or a list of ints, got %s", fname, U.typename(s)) end
  local out = {}
  for i, v in ipairs(s) do out[i] = U.check_int(fname, "normalized_shape", v) end
  return out
end

local function list_str(t) return "[" .. table.concat(t, ", ") .. "]" end

function F.rms_norm(...)
  local o = U.parse("rms_norm", { { "input", REQ }, { "normalized_shape", REQ }, { "weight" }, { "eps" } }, ...)
  local x = tensor_arg("rms_norm", "input", o.input)
  local ns = shape_list("rms_norm", o.normalized_shape)
  local k, d = #ns, x:dim()
  local ok = d >= k
  for i = 1, k do ok = ok and x:size(d - k + i - 1) == ns[i] end
  if not ok then
    local star = "*"
    for i = 1, k do star = star .. ", " .. ns[i] end
    U.errorf("Given normalized_shape=%s, expected input with shape [%s], but got input of size%s", list_str(ns), star,
      U.shape_str(x))
  end
  if o.weight ~= nil then
    local w = tensor_arg("rms_norm", "weight", o.weight)
    local same = w:dim() == k
    for i = 1, k do same = same and w:size(i - 1) == ns[i] end
    if not same then
      U.errorf("Expected weight to be of same shape as normalized_shape, but got weight of shape %s and normalized_shape = %s",
        U.shape_str(w), list_str(ns))
    end
  end
  local eps = o.eps or torch.finfo(x.dtype).eps
  local dims = {}
  for i = 1, k do dims[i] = d - k + i - 1 end
  local y = x * ((x * x):mean(dims, true) + eps):rsqrt()
  if o.weight ~= nil then y = y * o.weight end
  return y
end

local RMSNorm = Module:extend("RMSNorm")
M.RMSNorm = RMSNorm
function RMSNorm:__init(...)
  local o = U.parse("RMSNorm", { { "normalized_shape", REQ }, { "eps" }, { "elementwise_affine", true }, { "device" },
    { "dtype" } }, ...)
  self.normalized_shape = shape_list("RMSNorm", o.normalized_shape)
  self.eps, self.elementwise_affine = o.eps, o.elementwise_affine
  if o.elementwise_affine then
    self.weight = Parameter(torch.empty(self.normalized_shape, { dtype = o.dtype, device = o.device }))
  else
    self:register_parameter("weight", nil)
  end
  self:reset_parameters()
end
function RMSNorm:reset_parameters()
  if self.weight ~= nil then init.ones_(self.weight) end
end
function RMSNorm:forward(x) return U.F("rms_norm", x, self.normalized_shape, self.weight, self.eps) end
function RMSNorm:extra_repr()
  return string.format("%s, eps=%s, elementwise_affine=%s", U.pystr(self.normalized_shape), U.pystr(self.eps),
    U.pystr(self.elementwise_affine))
end

-- ---- MultiMarginLoss ----

-- per sample: sum over i ~= y of max(0, margin - x[y] + x[i])^p * weight[y], divided by C
function F.multi_margin_loss(...)
  local o = U.parse("multi_margin_loss", { { "input", REQ }, { "target", REQ }, { "p", 1 }, { "margin", 1.0 }, { "weight" },
    { "size_average" }, { "reduce" }, { "reduction", "mean" } }, ...)
  local x = tensor_arg("multi_margin_loss", "input", o.input)
  local y = tensor_arg("multi_margin_loss", "target", o.target)
  local reduction = legacy_reduction(o.size_average, o.reduce, o.reduction)
  if reduction ~= "none" and reduction ~= "mean" and reduction ~= "sum" then
    U.errorf("%s is not a valid value for reduction", tostring(reduction))
  end
  if o.p ~= 1 and o.p ~= 2 then U.error("only p == 1 and p == 2 supported") end
  if x:dim() > 2 or (x:dim() >= 1 and x:size(-1) == 0) then
    U.errorf("Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s", U.shape_str(x))
  end
  local unbatched = x:dim() <= 1
  local x2 = x:dim() == 2 and x or x:reshape(1, -1)
  local N, C = x2:size(0), x2:size(1)
  if y:numel() ~= N or (y:dim() > 1) or (unbatched and y:dim() ~= 0 and y:dim() ~= 1) then
    U.errorf("inconsistent target size, expected %d but got %s", N, U.shape_str(y))
  end
  local y1 = y:reshape(N):to(torch.int64)
  local ys = y1:tolist()
  for _, v in ipairs(ys) do
    if v < 0 or v >= C then U.error("target out of range") end
  end
  local yi = y1:to(x2.device):unsqueeze(1)
  local z = (x2 - x2:gather(1, yi) + o.margin):clamp(0)
  if o.p == 2 then z = z * z end
  if o.weight ~= nil then
    local w = tensor_arg("multi_margin_loss", "weight", o.weight)
    if w:dim() > 1 or w:numel() ~= C then U.errorf("inconsistent weight size, expected %d but got %s", C, U.shape_str(w)) end
    z = z * w:reshape(C):index_select(0, yi:squeeze(1)):unsqueeze(1)
  end
  z = z * (1 - F.one_hot(yi:squeeze(1), C):to(z.dtype))
  local loss = z:sum(1) / C
  if unbatched then loss = loss:reshape({}) end
  return reduce(loss, reduction)
end

local MultiMarginLoss = Module:extend("MultiMarginLoss")
M.MultiMarginLoss = MultiMarginLoss
function MultiMarginLoss:__init(...)
  local o = U.parse("MultiMarginLoss", { { "p", 1 }, { "margin", 1.0 }, { "weight" }, { "size_average" }, { "reduce" },
    { "reduction", "mean" } }, ...)
  local reduction = legacy_reduction(o.size_average, o.reduce, o.reduction)
  if reduction ~= "none" and reduction ~= "mean" and reduction ~= "sum" then
    U.errorf("%s is not a valid value for reduction", tostring(reduction))
  end
  if o.p ~= 1 and o.p ~= 2 then U.error("only p == 1 and p == 2 supported") end
  if o.weight ~= nil and (not torch.is_tensor(o.weight) or o.weight:dim() ~= 1) then
    U.error("MultiMarginLoss: weight must be a 1-D tensor")
  end
  self.p, self.margin, self.reduction = o.p, o.margin, reduction
  self:register_buffer("weight", o.weight)
end
function MultiMarginLoss:forward(input, target)
  return U.F("multi_margin_loss", input, target, self.p, self.margin, self.weight, { reduction = self.reduction })
end

-- ---- pdist ----

function F.pdist(...)
  local o = U.parse("pdist", { { "input", REQ }, { "p", 2 } }, ...)
  local x = tensor_arg("pdist", "input", o.input)
  if x:dim() ~= 2 then U.errorf("pdist only supports 2D tensors, got: %dD", x:dim()) end
  local p = o.p
  if p < 0 then U.error("pdist only supports non-negative p values") end
  local n = x:size(0)
  local ij = torch.triu_indices(n, n, 1, { device = x.device })
  local diff = x:index_select(0, ij[0]) - x:index_select(0, ij[1])
  if p == 0 then return diff:ne(0):to(x.dtype):sum(1) end
  if p == math.huge then return diff:abs():amax(1) end
  if p == 1 then return diff:abs():sum(1) end
  local s = p == 2 and (diff * diff):sum(1) or diff:abs():pow(p):sum(1)
  local pos = s:gt(0) -- equal rows: distance 0 with a zero (not NaN) gradient, as PyTorch's
  local root = torch.where(pos, s, torch.ones_like(s))
  root = p == 2 and root:sqrt() or root:pow(1 / p)
  return torch.where(pos, root, torch.zeros_like(s))
end

-- ---- LPPool ----

local function lp_finish(out, p, kn)
  return (torch.sign(out) * F.relu(out:abs())):mul(kn):pow(1.0 / p)
end

function F.lp_pool1d(...)
  local o = U.parse("lp_pool1d", { { "input", REQ }, { "norm_type", REQ }, { "kernel_size", REQ }, { "stride" },
    { "ceil_mode", false } }, ...)
  local x = tensor_arg("lp_pool1d", "input", o.input)
  local k = U.ntuple("lp_pool1d", "kernel_size", o.kernel_size, 1)[1]
  local out = F.avg_pool1d(x:pow(o.norm_type), k, o.stride, 0, o.ceil_mode)
  return lp_finish(out, o.norm_type, k)
end

function F.lp_pool2d(...)
  local o = U.parse("lp_pool2d", { { "input", REQ }, { "norm_type", REQ }, { "kernel_size", REQ }, { "stride" },
    { "ceil_mode", false } }, ...)
  local x = tensor_arg("lp_pool2d", "input", o.input)
  local k = U.ntuple("lp_pool2d", "kernel_size", o.kernel_size, 2)
  local s = o.stride ~= nil and U.ntuple("lp_pool2d", "stride", o.stride, 2) or k
  local out = F.avg_pool2d(x:pow(o.norm_type), k, s, 0, { ceil_mode = o.ceil_mode })
  return lp_finish(out, o.norm_type, k[1] * k[2])
end

for _, nd in ipairs({ 1, 2 }) do
  local name = "LPPool" .. nd .. "d"
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, { { "norm_type", REQ }, { "kernel_size", REQ }, { "stride" }, { "ceil_mode", false } }, ...)
    self.norm_type, self.kernel_size, self.stride, self.ceil_mode = o.norm_type, o.kernel_size, o.stride, o.ceil_mode
  end
  function cls:forward(x)
    return U.F("lp_pool" .. nd .. "d", x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)
  end
  function cls:extra_repr()
    return string.format("norm_type=%s, kernel_size=%s, stride=%s, ceil_mode=%s", U.pystr(self.norm_type),
      U.pystr(self.kernel_size), U.pystr(self.stride), U.pystr(self.ceil_mode))
  end
end

-- ---- gumbel_softmax ----

-- the noise is -log(-log(U)), U = torch.rand_like(logits) (PyTorch draws -log(Exp(1)), the same law)
function F.gumbel_softmax(...)
  local o = U.parse("gumbel_softmax", { { "logits", REQ }, { "tau", 1 }, { "hard", false }, { "eps", 1e-10 }, { "dim", -1 } }, ...)
  local logits = tensor_arg("gumbel_softmax", "logits", o.logits)
  local tiny = torch.finfo(logits.dtype).tiny
  local g = -(-(torch.rand_like(logits):clamp(tiny)):log()):clamp(tiny):log()
  local y = F.softmax((logits + g) / o.tau, o.dim)
  if not o.hard then return y end
  local _, idx = y:max(o.dim, true)
  local y_hard = torch.zeros_like(y):scatter(o.dim, idx, 1.0)
  return y_hard - y:detach() + y
end

-- ---- EmbeddingBag ----

function F.embedding_bag(...)
  local o = U.parse("embedding_bag", { { "input", REQ }, { "weight", REQ }, { "offsets" }, { "max_norm" }, { "norm_type", 2 },
    { "scale_grad_by_freq", false }, { "mode", "mean" }, { "sparse", false }, { "per_sample_weights" },
    { "include_last_offset", false }, { "padding_idx" } }, ...)
  local input = tensor_arg("embedding_bag", "input", o.input)
  local weight = tensor_arg("embedding_bag", "weight", o.weight)
  local offsets, psw, mode = o.offsets, o.per_sample_weights, o.mode
  if psw ~= nil and (psw.dim == nil or psw:dim() ~= input:dim() or psw:numel() ~= input:numel()) then
    U.errorf("embedding_bag: If per_sample_weights (%s) is not None, then it must have the same shape as the input (%s)",
      torch.is_tensor(psw) and tostring(psw.shape) or U.typename(psw), tostring(input.shape))
  end
  if weight:dim() ~= 2 then
    U.errorf("weight has to be a 2D Tensor, but got Tensor of dimension %d", weight:dim())
  end
  local flat, offs
  if input:dim() == 2 then
    if offsets ~= nil then
      U.errorf("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. However, found offsets of type %s",
        U.typename(offsets))
    end
    local B, L = input:size(0), input:size(1)
    offs = {}
    for b = 1, B do offs[b] = (b - 1) * L end
    flat = input:reshape(-1)
    if psw ~= nil then psw = psw:reshape(-1) end
  elseif input:dim() == 1 then
    if offsets == nil then U.error("offsets has to be a 1D Tensor but got None") end
    if not torch.is_tensor(offsets) or offsets:dim() ~= 1 then U.error("offsets has to be a 1D Tensor") end
    flat = input
    offs = offsets:tolist()
  else
    U.errorf("input has to be 1D or 2D Tensor, but got Tensor of dimension %d", input:dim())
  end
  if mode ~= "sum" and mode ~= "mean" and mode ~= "max" then U.error("mode has to be one of sum, mean or max") end
  if psw ~= nil and mode ~= "sum" then
    U.errorf("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='%s'). Please open a feature request on the Pytorch GitHub.", mode)
  end
  local L = flat:numel()
  if #offs > 0 and offs[1] ~= 0 then
    U.errorf("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got %d", offs[1])
  end
  if #offs > 0 and offs[#offs] > L then
    U.errorf("offsets[-1] can not be greater than input's length (%d), but got offsets[-1] of %d", L, offs[#offs])
  end
  local B = o.include_last_offset and #offs - 1 or #offs
  local pad = o.padding_idx
  if pad ~= nil and pad < 0 then pad = pad + weight:size(0) end
  local rows = U.call(F.embedding, flat, weight, nil, o.max_norm, o.norm_type) -- (L, D); renormalises as PyTorch
  local ids = flat:tolist()
  local bags = {} -- bags[b] = the positions in flat of its non-padding entries (1-based)
  for b = 1, B do
    local stop = b < #offs and offs[b + 1] or L
    local t = {}
    for k = offs[b] + 1, stop do
      if ids[k] ~= pad then t[#t + 1] = k end
    end
    bags[b] = t
  end
  local fk = { dtype = weight.dtype, device = weight.device }
  if mode == "max" then
    local outs = {}
    for b = 1, B do
      if #bags[b] == 0 then
        outs[b] = torch.zeros(weight:size(1), fk)
      else
        local pos = {}
        for i, k in ipairs(bags[b]) do pos[i] = k - 1 end
        outs[b] = rows:index_select(0, torch.tensor(pos, { dtype = torch.int64, device = weight.device })):amax(0)
      end
    end
    if B == 0 then return torch.zeros(0, weight:size(1), fk) end
    return torch.stack(outs)
  end
  -- sum / mean: a (B, L) matrix of bag memberships (1 / count for mean) times the rows
  local S = {}
  for b = 1, B do
    local r = {}
    for k = 1, L do r[k] = 0 end
    local v = mode == "mean" and 1 / math.max(#bags[b], 1) or 1
    for _, k in ipairs(bags[b]) do r[k] = v end
    S[b] = r
  end
  local Sm = B > 0 and L > 0 and torch.tensor(S, fk) or torch.zeros(B, L, fk)
  if psw ~= nil then Sm = Sm * psw:reshape(1, L) end
  return Sm:matmul(rows)
end

local EmbeddingBag = Module:extend("EmbeddingBag")
M.EmbeddingBag = EmbeddingBag
function EmbeddingBag:__init(...)
  local o = U.parse("EmbeddingBag", { { "num_embeddings", REQ }, { "embedding_dim", REQ }, { "max_norm" }, { "norm_type", 2.0 },
    { "scale_grad_by_freq", false }, { "mode", "mean" }, { "sparse", false }, { "_weight" }, { "include_last_offset", false },
    { "padding_idx" }, { "device" }, { "dtype" } }, ...)
  local n, d, pad = layers._embedding_sizes("EmbeddingBag", o, "padding_idx")
  if o.mode ~= "sum" and o.mode ~= "mean" and o.mode ~= "max" then U.error("mode has to be one of sum, mean or max") end
  self.num_embeddings, self.embedding_dim, self.max_norm, self.norm_type = n, d, o.max_norm, o.norm_type
  self.scale_grad_by_freq, self.mode, self.sparse = o.scale_grad_by_freq, o.mode, o.sparse
  self.include_last_offset, self.padding_idx = o.include_last_offset, pad
  layers._embedding_weight(self, o, n, d)
end
function EmbeddingBag:reset_parameters()
  init.normal_(self.weight)
  if self.padding_idx ~= nil then
    local _ <close> = torch.no_grad()
    self.weight[self.padding_idx]:fill_(0)
  end
end
function EmbeddingBag:forward(...)
  local o = U.parse("EmbeddingBag.forward", { { "input", REQ }, { "offsets" }, { "per_sample_weights" } }, ...)
  return U.F("embedding_bag", o.input, self.weight, o.offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
    self.mode, self.sparse, o.per_sample_weights, self.include_last_offset, self.padding_idx)
end
function EmbeddingBag:extra_repr()
  local s = string.format("%d, %d", self.num_embeddings, self.embedding_dim)
  if self.max_norm ~= nil then s = s .. ", max_norm=" .. U.pystr(self.max_norm) end
  if self.norm_type ~= 2 then s = s .. ", norm_type=" .. U.pystr(self.norm_type) end
  if self.scale_grad_by_freq then s = s .. ", scale_grad_by_freq=True" end
  s = s .. ", mode=" .. self.mode
  if self.padding_idx ~= nil then s = s .. ", padding_idx=" .. self.padding_idx end
  return s
end
function EmbeddingBag.from_pretrained(first, ...)
  if first == EmbeddingBag then return EmbeddingBag.from_pretrained(...) end -- called with ':'
  local o = U.parse("from_pretrained", { { "embeddings", REQ }, { "freeze", true }, { "max_norm" }, { "norm_type", 2.0 },
    { "scale_grad_by_freq", false }, { "mode", "mean" }, { "sparse", false }, { "include_last_offset", false },
    { "padding_idx" } }, first, ...)
  local e = o.embeddings
  if not torch.is_tensor(e) or e:dim() ~= 2 then U.error("Embeddings parameter is expected to be 2-dimensional") end
  local m = EmbeddingBag(e:size(0), e:size(1), { _weight = e, max_norm = o.max_norm, norm_type = o.norm_type,
    scale_grad_by_freq = o.scale_grad_by_freq, mode = o.mode, sparse = o.sparse, include_last_offset = o.include_last_offset,
    padding_idx = o.padding_idx })
  m.weight.requires_grad = not o.freeze
  return m
end

-- ---- MaxUnpool ----

local function unpool(fname, nd, o)
  local x = tensor_arg(fname, "input", o.input)
  local idx = tensor_arg(fname, "indices", o.indices)
  local k = U.ntuple(fname, "kernel_size", o.kernel_size, nd)
  local s = o.stride ~= nil and U.ntuple(fname, "stride", o.stride, nd) or k
  local p = U.ntuple(fname, "padding", o.padding, nd)
  if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
    U.errorf("%s: expected a %dD or %dD input, got %dD", fname, nd + 1, nd + 2, x:dim())
  end
  if idx.dtype ~= torch.int64 then U.errorf("elements in indices should be type int64 but got: %s", tostring(idx.dtype)) end
  local default = {}
  for d = 1, nd do default[d] = (x:size(x:dim() - nd + d - 1) - 1) * s[d] + k[d] - 2 * p[d] end
  local size = default
  if o.output_size ~= nil then
    local os = o.output_size
    if type(os) == "table" and getmetatable(os) ~= nil and os.totable then os = os:totable() end
    if #os == nd + 2 then os = { table.unpack(os, 3) } end
    if #os ~= nd then
      U.errorf("output_size should be a sequence containing %d or %d elements, but it has a length of '%d'", nd, nd + 2, #os)
    end
    for d = 1, nd do
      local lo, hi = default[d] - s[d], default[d] + s[d]
      if not (lo < os[d] and os[d] < hi) then
        U.errorf('invalid output_size "%s" (dim %d must be between %d and %d)', list_str(os), d - 1, lo, hi)
      end
    end
    size = os
  end
  local lead = x:dim() - nd -- 1 (unbatched) or 2
  local shape, total = {}, 1
  for d = 0, lead - 1 do shape[#shape + 1] = x:size(d) end
  for d = 1, nd do shape[#shape + 1] = size[d]; total = total * size[d] end
  local xf = x:flatten(lead)
  local idf = idx:flatten(lead)
  local n = idf:numel()
  if n > 0 and (idf:max():item() >= total or idf:min():item() < 0) then
    U.errorf("Found an invalid max index: %d (output volumes are of size %s", idf:max():item(),
      table.concat(size, "x"))
  end
  local zshape = {}
  for d = 0, lead - 1 do zshape[#zshape + 1] = x:size(d) end
  zshape[#zshape + 1] = total
  return torch.zeros(zshape, { dtype = x.dtype, device = x.device }):scatter(lead, idf, xf):view(shape)
end

for _, nd in ipairs({ 1, 2 }) do
  local fname = "max_unpool" .. nd .. "d"
  F[fname] = function(...)
    return unpool(fname, nd, U.parse(fname, { { "input", REQ }, { "indices", REQ }, { "kernel_size", REQ }, { "stride" },
      { "padding", 0 }, { "output_size" } }, ...))
  end
  local name = "MaxUnpool" .. nd .. "d"
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, { { "kernel_size", REQ }, { "stride" }, { "padding", 0 } }, ...)
    self.kernel_size = U.ntuple(name, "kernel_size", o.kernel_size, nd)
    self.stride = o.stride ~= nil and U.ntuple(name, "stride", o.stride, nd) or self.kernel_size
    self.padding = U.ntuple(name, "padding", o.padding, nd)
  end
  function cls:forward(...)
    local o = U.parse(name .. ".forward", { { "input", REQ }, { "indices", REQ }, { "output_size" } }, ...)
    return U.F(fname, o.input, o.indices, self.kernel_size, self.stride, self.padding, o.output_size)
  end
  function cls:extra_repr()
    return string.format("kernel_size=%s, stride=%s, padding=%s", U.pystr(self.kernel_size), U.pystr(self.stride),
      U.pystr(self.padding))
  end
end

-- ---- lazy modules: LazyLinear, LazyConv1d / 2d / 3d, LazyBatchNorm1d / 2d / 3d ----

-- Each becomes its concrete class on its first forward, as PyTorch's: the class's own __init
-- runs on the instance with the size read from the input (so parameters, their order and
-- their initialisation are that class's), the device and dtype given at construction or the
-- input's (PyTorch materialises with the construction's factory arguments, default CPU).
local function materialize(self, cls, ...)
  local vals = getmetatable(self).__index
  for k in pairs(vals) do if k:sub(1, 6) == "_lazy_" then vals[k] = nil end end
  setmetatable(vals, rawget(cls, "_values_mt") or { __index = cls })
  getmetatable(self).__name = rawget(cls, "__name")
  cls.__init(self, ...)
end
local function lazy_factory(fk, x)
  return fk.dtype or (x:is_floating_point() and x.dtype or torch.get_default_dtype()), fk.device or x.device
end
-- the construction's arguments (self._lazy_args) with key = size read from x
local function materialize_with(self, cls, key, size, x)
  local o = {}
  for k, v in pairs(self._lazy_args) do o[k] = v end
  o[key] = size
  o.dtype, o.device = lazy_factory(self._lazy_args, x)
  materialize(self, cls, o)
end
local function lazy_forward(self, x)
  self:initialize_parameters(x)
  return self:forward(x) -- the concrete class's
end

-- becomes an nn.Linear on its first forward, as PyTorch's (in_features = input:size(-1))
local Linear = layers.Linear
local LazyLinear = Linear:extend("LazyLinear")
M.LazyLinear = LazyLinear
function LazyLinear:__init(...)
  local o = U.parse("LazyLinear", { { "out_features", REQ }, { "bias", true }, { "device" }, { "dtype" } }, ...)
  self.in_features = 0
  self.out_features = U.check_int("LazyLinear", "out_features", o.out_features, 0)
  self._lazy_bias, self._lazy_factory = o.bias, { dtype = o.dtype, device = o.device }
  self:register_parameter("weight", nil)
  self:register_parameter("bias", nil)
end
function LazyLinear:extra_repr()
  return string.format("in_features=0, out_features=%d, bias=%s", self.out_features, U.pystr(self._lazy_bias))
end
function LazyLinear:has_uninitialized_params() return self.weight == nil end
function LazyLinear:initialize_parameters(x)
  tensor_arg("LazyLinear", "input", x)
  if x:dim() == 0 then U.errorf("LazyLinear got input of shape %s, expected [*, in_features]", U.shape_str(x)) end
  local dtype, device = lazy_factory(self._lazy_factory, x)
  materialize(self, Linear, x:size(-1), self.out_features, { bias = self._lazy_bias, dtype = dtype, device = device })
end
function LazyLinear:reset_parameters()
  if self.weight ~= nil then Linear.reset_parameters(self) end
end
function LazyLinear:forward(x)
  if self.weight == nil then self:initialize_parameters(x) end
  return Linear.forward(self, x)
end

-- LazyConvNd(out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=true,
-- padding_mode="zeros"): in_channels from the input's channel dim ([C, *] or [N, C, *])
local lazy_conv_spec = { { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 }, { "padding", 0 }, { "dilation", 1 },
  { "groups", 1 }, { "bias", true }, { "padding_mode", "zeros" }, { "device" }, { "dtype" } }
-- (also LazyConvTranspose, nn_lazy_more.lua: its spec, and the class put in `target`)
local function lazy_conv(name, n, concrete, spec, target)
  local cls = Module:extend(name)
  ;(target or M)[name] = cls
  function cls:__init(...)
    local o = U.parse(name, spec or lazy_conv_spec, ...)
    self.in_channels = 0
    self.out_channels = U.check_int(name, "out_channels", o.out_channels, 0)
    self._lazy_args = o
    self:register_parameter("weight", nil)
    self:register_parameter("bias", nil)
  end
  function cls:extra_repr() return string.format("0, %d, kernel_size=%s", self.out_channels, U.pystr(self._lazy_args.kernel_size)) end
  function cls:has_uninitialized_params() return self.weight == nil end
  function cls:initialize_parameters(x)
    tensor_arg(name, "input", x)
    if x:dim() ~= n + 1 and x:dim() ~= n + 2 then
      U.errorf("Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s", n + 1, n + 2, name, U.shape_str(x))
    end
    materialize_with(self, concrete(), "in_channels", x:size(x:dim() == n + 2 and 1 or 0), x)
  end
  cls.forward = lazy_forward
  return cls
end
lazy_conv("LazyConv1d", 1, function() return require("nn_conv_more").Conv1d end)
lazy_conv("LazyConv2d", 2, function() return layers.Conv2d end)
lazy_conv("LazyConv3d", 3, function() return require("nn_conv3d").Conv3d end)

-- LazyBatchNormNd(eps=1e-5, momentum=0.1, affine=true, track_running_stats=true): num_features = input:size(1)
local lazy_bn_spec = { { "eps", 1e-5 }, { "momentum", 0.1 }, { "affine", true }, { "track_running_stats", true }, { "device" },
  { "dtype" } }
-- (also LazyInstanceNorm, nn_lazy_more.lua: its spec, concrete(x) -> class, num_features, and `target`)
local function lazy_batchnorm(name, base, spec, concrete_of, target)
  local cls = Module:extend(name)
  ;(target or M)[name] = cls
  concrete_of = concrete_of or function(x)
    local concrete = require("nn_norm")[base]
    if not concrete._dims[x:dim()] then U.errorf(concrete._dims_msg, x:dim()) end
    return concrete, x:size(1)
  end
  function cls:__init(...)
    local o = U.parse(name, spec or lazy_bn_spec, ...)
    self.num_features, self.eps, self.affine, self.track_running_stats = 0, o.eps, o.affine, o.track_running_stats
    self.momentum = o.momentum ~= false and o.momentum or nil
    self._lazy_args = o
    self:register_parameter("weight", nil)
    self:register_parameter("bias", nil)
    self:register_buffer("running_mean", nil)
    self:register_buffer("running_var", nil)
    if o.track_running_stats then self:register_buffer("num_batches_tracked", torch.tensor(0, { dtype = torch.int64 })) end
  end
  function cls:extra_repr()
    return string.format("0, eps=%s, momentum=%s, affine=%s, track_running_stats=%s", U.pystr(self.eps), U.pystr(self.momentum),
      U.pystr(self.affine), U.pystr(self.track_running_stats))
  end
  function cls:has_uninitialized_params() return self.num_features == 0 end
  function cls:initialize_parameters(x)
    tensor_arg(name, "input", x)
    local concrete, features = concrete_of(x)
    local tracked = self.num_batches_tracked
    materialize_with(self, concrete, "num_features", features, x)
    if tracked ~= nil then self.num_batches_tracked:copy_(tracked) end
  end
  cls.forward = lazy_forward
  return cls
end
lazy_batchnorm("LazyBatchNorm1d", "BatchNorm1d")
lazy_batchnorm("LazyBatchNorm2d", "BatchNorm2d")
lazy_batchnorm("LazyBatchNorm3d", "BatchNorm3d")

-- ---- nn.init additions ----

function init.sparse_(...)
  local o = U.parse("sparse_", { { "tensor", REQ }, { "sparsity", REQ }, { "std", 0.01 }, { "generator" } }, ...)
  local t = o.tensor
  if not torch.is_tensor(t) then U.errorf("bad argument #1 to 'sparse_' (tensor expected, got %s)", U.typename(t)) end
  if t:dim() ~= 2 then U.error("Only tensors with 2 dimensions are supported") end
  local rows, cols = t:size(0), t:size(1)
  local num_zeros = math.ceil(o.sparsity * rows)
  -- Python's row_indices[:num_zeros]: clipped to the rows, a negative count leaves that many out
  num_zeros = num_zeros >= 0 and math.min(num_zeros, rows) or math.max(rows + num_zeros, 0)
  local mask = {}
  for r = 1, rows do
    mask[r] = {}
    for c = 1, cols do mask[r][c] = 1 end
  end
  for c = 1, cols do
    local perm = torch.randperm(rows):tolist()
    for i = 1, num_zeros do mask[perm[i] + 1][c] = 0 end
  end
  local _ <close> = torch.no_grad()
  t:normal_(0, o.std)
  if rows > 0 and cols > 0 then t:mul_(torch.tensor(mask, { dtype = t.dtype, device = t.device })) end
  return t
end

function init.dirac_(...)
  local o = U.parse("dirac_", { { "tensor", REQ }, { "groups", 1 } }, ...)
  local t = o.tensor
  if not torch.is_tensor(t) then U.errorf("bad argument #1 to 'dirac_' (tensor expected, got %s)", U.typename(t)) end
  local d = t:dim()
  if d < 3 or d > 5 then U.error("Only tensors with 3, 4, or 5 dimensions are supported") end
  local g = o.groups
  if t:size(0) % g ~= 0 then U.error("dim 0 must be divisible by groups") end
  local per = t:size(0) // g
  local min_dim = math.min(per, t:size(1))
  local _ <close> = torch.no_grad()
  t:zero_()
  for gi = 0, g - 1 do
    for k = 0, min_dim - 1 do
      local v = t[gi * per + k][k]
      for j = 2, d - 1 do v = v[t:size(j) // 2] end
      v:fill_(1)
    end
  end
  return t
end

-- ---- CTC loss ----

-- The alpha recursion of Graves et al. over the blank-extended targets, batched, in log
-- space with tensor ops (autograd gives the gradient). Unreachable states hold NEG, a large
-- finite negative, instead of -inf so that logsumexp keeps finite gradients; infeasible
-- samples (T < S + repeats) are set to inf (or 0 with zero_infinity) afterwards.
local NEG = -1e30

function F.ctc_loss(...)
  local o = U.parse("ctc_loss", { { "log_probs", REQ }, { "targets", REQ }, { "input_lengths", REQ }, { "target_lengths", REQ },
    { "blank", 0 }, { "reduction", "mean" }, { "zero_infinity", false } }, ...)
  local lp = tensor_arg("ctc_loss", "log_probs", o.log_probs)
  local targets = tensor_arg("ctc_loss", "targets", o.targets)
  if o.reduction ~= "none" and o.reduction ~= "mean" and o.reduction ~= "sum" then
    U.errorf("%s is not a valid value for reduction", tostring(o.reduction))
  end
  local unbatched = lp:dim() == 2
  if lp:dim() ~= 2 and lp:dim() ~= 3 then
    U.errorf("ctc_loss: log_probs must be (T, C) or (T, N, C), got %dD", lp:dim())
  end
  if unbatched then
    lp = lp:unsqueeze(1)
    targets = targets:unsqueeze(0)
  end
  local T, N, C = lp:size(0), lp:size(1), lp:size(2)
  local blank = o.blank
  if blank < 0 or blank >= C then U.error("blank must be in label range") end
  local il, tl = lengths_list(o.input_lengths), lengths_list(o.target_lengths)
  if #il ~= N then U.error("input_lengths must be of size batch_size") end
  if #tl ~= N then U.error("target_lengths must be of size batch_size") end
  local c = "ctc_loss_cpu"
  for n = 1, N do
    if il[n] > T then
      U.errorf("Expected input_lengths to have value at most %d, but got value %d (while checking arguments for %s)", T, il[n], c)
    end
  end
  -- the target sequence of each sample
  local seqs, Smax = {}, 0
  if targets:dim() == 1 then
    local total = 0
    for n = 1, N do total = total + tl[n] end
    if targets:size(0) < total then -- PyTorch checks an exact size
      U.errorf("Expected tensor to have size %d at dimension 0, but got size %d for argument #2 'targets' (while checking arguments for %s)",
        total, targets:size(0), c)
    end
    local all, pos = targets:tolist(), 0
    for n = 1, N do
      seqs[n] = { table.unpack(all, pos + 1, pos + tl[n]) }
      pos = pos + tl[n]
    end
  else
    local maxl = 0
    for n = 1, N do maxl = math.max(maxl, tl[n]) end
    if targets:size(1) < maxl then
      U.errorf("Expected tensor to have size at least %d at dimension 1, but got size %d for argument #2 'targets' (while checking arguments for %s)",
        maxl, targets:size(1), c)
    end
    local all = targets:tolist()
    for n = 1, N do seqs[n] = { table.unpack(all[n], 1, tl[n]) } end
  end
  for n = 1, N do Smax = math.max(Smax, #seqs[n]) end
  local Lx = 2 * Smax + 1
  -- extended labels, skip-transition masks, start masks, end positions, feasibility
  local ext, skip, start, ends, endmask, infeasible = {}, {}, {}, {}, {}, {}
  for n = 1, N do
    local s, e, k, st = seqs[n], {}, {}, {}
    for j = 1, Lx do e[j] = blank end
    for j = 1, #s do e[2 * j] = s[j] end
    for j = 1, Lx do
      k[j] = (j >= 3 and e[j] ~= blank and e[j] ~= e[j - 2]) and 0 or NEG
      st[j] = (j <= 2 and j <= 2 * #s + 1) and 0 or NEG
    end
    ext[n], skip[n], start[n] = e, k, st
    local Sn = #s
    ends[n] = { 2 * Sn, math.max(2 * Sn - 1, 0) }
    endmask[n] = { 0, Sn > 0 and 0 or NEG }
    local rep = 0
    for j = 2, Sn do if s[j] == s[j - 1] then rep = rep + 1 end end
    infeasible[n] = il[n] < Sn + rep
  end
  local fk = { dtype = lp.dtype, device = lp.device }
  local ik = { dtype = torch.int64, device = lp.device }
  local extT = torch.tensor(ext, ik)                                  -- (N, Lx)
  local em = lp:gather(2, extT:unsqueeze(0):expand({ T, N, Lx }))      -- (T, N, Lx)
  local skipT = torch.tensor(skip, fk)
  local pad1 = torch.full({ N, 1 }, NEG, fk)
  local pad2 = torch.full({ N, 2 }, NEG, fk)
  local alpha = em[0] + torch.tensor(start, fk)
  for t = 1, T - 1 do
    local a1 = Lx > 1 and torch.cat({ pad1, alpha:narrow(1, 0, Lx - 1) }, 1) or pad1
    local a2 = Lx > 2 and torch.cat({ pad2, alpha:narrow(1, 0, Lx - 2) }, 1) + skipT or (pad1 + skipT)
    local nxt = torch.stack({ alpha, a1, a2 }):logsumexp(0) + em[t]
    local active = {}
    for n = 1, N do active[n] = { t < il[n] } end
    alpha = torch.where(torch.tensor(active, { dtype = torch.bool, device = lp.device }), nxt, alpha)
  end
  local fin = alpha:gather(1, torch.tensor(ends, ik)) + torch.tensor(endmask, fk)
  local loss = -fin:logsumexp(1)
  local any_inf, bad = false, {}
  local fixed = {} -- infeasible: inf (0 with zero_infinity); no input and no target: 0
  for n = 1, N do
    bad[n] = infeasible[n] or il[n] == 0
    fixed[n] = (infeasible[n] and not o.zero_infinity) and math.huge or 0.0
    any_inf = any_inf or bad[n]
  end
  if any_inf then
    loss = torch.where(torch.tensor(bad, { dtype = torch.bool, device = lp.device }), torch.tensor(fixed, fk), loss)
  end
  if o.reduction == "mean" then
    local tlc = {}
    for n = 1, N do tlc[n] = math.max(tl[n], 1) end
    return (loss / torch.tensor(tlc, fk)):mean()
  end
  if o.reduction == "sum" then return loss:sum() end
  if unbatched then return loss:reshape({}) end
  return loss
end

local CTCLoss = Module:extend("CTCLoss")
M.CTCLoss = CTCLoss
function CTCLoss:__init(...)
  local o = U.parse("CTCLoss", { { "blank", 0 }, { "reduction", "mean" }, { "zero_infinity", false } }, ...)
  if o.reduction ~= "none" and o.reduction ~= "mean" and o.reduction ~= "sum" then
    U.errorf("%s is not a valid value for reduction", tostring(o.reduction))
  end
  self.blank, self.reduction, self.zero_infinity = o.blank, o.reduction, o.zero_infinity
end
function CTCLoss:forward(log_probs, targets, input_lengths, target_lengths)
  return U.F("ctc_loss", log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction, self.zero_infinity)
end

-- for nn_pool_more.lua and nn_lazy_more.lua (names with "_" are not registered as nn classes)
M._unpool, M._lp_finish = unpool, lp_finish
M._lazy = { conv = lazy_conv, norm = lazy_batchnorm }

return M
