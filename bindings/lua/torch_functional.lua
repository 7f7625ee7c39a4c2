-- torch.nn.functional (the global F): PyTorch's functional API. Functions take
-- PyTorch's positional arguments and a trailing keyword table with PyTorch's
-- names; an unknown keyword is an error naming it. The kernels with a C binding
-- (conv2d, pools, softmax, nll_loss, embedding, linear, batch_norm) are called as they are;
-- the rest are composites of engine ops, so autograd flows through them.
--
-- Composites run protected (see `def`): an error inside one is raised again at
-- the caller's line and names the F function, as PyTorch's traceback would.
local torch = require "torch"
local U = require "nn_util"
local ACT = require "nn_fused_activations" -- gelu, silu, softplus, ...: fused kernels in one node each

torch.nn = torch.nn or {}
local F = torch.nn.functional or {}
torch.nn.functional = F

local Tensor_mt = getmetatable(torch.empty(0))

local function is_tensor(v) return getmetatable(v) == Tensor_mt end

-- ---- errors and warnings ----

local function argerror(fname, n, msg)
  error(string.format("bad argument #%d to '%s' (%s)", n, fname, msg), 0)
end

local function fail(fname, msg) error(fname .. ": " .. msg, 0) end

local warn = require("nn_util").warn -- a UserWarning, once per message

-- Define F[name] = impl, run protected: an error comes back without its position inside
-- the library, with 'bad argument #n to <inner function>' renamed to name, raised at the
-- caller. (Errors from C functions carry no position.)
local function def(name, impl)
  local prefix = "bad argument #%1 to '" .. name .. "'"
  local function finish(ok, ...)
    if ok then return ... end
    local err = ...
    if type(err) ~= "string" then error(err, 0) end
    err = err:gsub("^bindings/lua/[%w_]+%.lua:%d+: ", "", 1):gsub("^bad argument #(%d+) to '[^']*'", prefix, 1)
    error(err, 2) -- finish runs as a tail call of the wrapper: level 2 is the caller of F[name]
  end
  F[name] = function(...) return finish(pcall(impl, ...)) end
end

-- ---- arguments ----

-- A keyword table: a plain table with no list part.
local function is_opts(v)
  return type(v) == "table" and getmetatable(v) == nil and rawget(v, 1) == nil and rawget(v, 2) == nil
end

-- A signature: fname and the parameter names in PyTorch's positional order.
-- sig:parse(...) returns a table name -> value (positional and keyword arguments merged),
-- with field n the number of positional arguments.
local Sig = {}
Sig.__index = Sig

local function sig(fname, names)
  local index = {}
  for i, n in ipairs(names) do index[n] = i end
  return setmetatable({ fname = fname, names = names, index = index }, Sig)
end

function Sig:parse(...)
  local n = select("#", ...)
  while n > 0 and select(n, ...) == nil do n = n - 1 end
  local kw = n > 0 and select(n, ...) or nil
  if is_opts(kw) then n = n - 1 else kw = nil end
  if n > #self.names then argerror(self.fname, #self.names + 1, "too many arguments") end
  local a = { ... }
  for i = n + 1, #a do a[i] = nil end
  local r = { n = n }
  for i = 1, n do r[self.names[i]] = a[i] end
  if kw then
    for k, v in pairs(kw) do
      local i = self.index[k]
      if not i then argerror(self.fname, n + 1, "unknown keyword '" .. tostring(k) .. "'") end
      if i <= n and r[k] ~= nil then argerror(self.fname, n + 1, "got multiple values for argument '" .. k .. "'") end
      r[k] = v
    end
  end
  return r
end

-- The argument number of parameter `name` as the caller gave it.
function Sig:argno(r, name)
  local i = self.index[name]
  return i <= r.n and i or r.n + 1
end

function Sig:tensor(r, name, optional)
  local v = r[name]
  if v == nil and optional then return nil end
  if not is_tensor(v) then
    argerror(self.fname, self:argno(r, name), string.format("'%s' must be a tensor, got %s", name, type(v)))
  end
  return v
end

function Sig:number(r, name, default)
  local v = r[name]
  if v == nil then return default end
  if type(v) ~= "number" then
    argerror(self.fname, self:argno(r, name), string.format("'%s' must be a number, got %s", name, type(v)))
  end
  return v
end

function Sig:integer(r, name, default)
  local v = r[name]
  if v == nil then return default end
  if math.type(v) ~= "integer" then
    argerror(self.fname, self:argno(r, name), string.format("'%s' must be an integer, got %s", name, math.type(v) or type(v)))
  end
  return v
end

function Sig:bool(r, name, default)
  local v = r[name]
  if v == nil then return default end
  if type(v) ~= "boolean" then
    argerror(self.fname, self:argno(r, name), string.format("'%s' must be a boolean, got %s", name, type(v)))
  end
  return v
end

-- reduction, or the deprecated size_average / reduce pair when either is given
function Sig:reduction(r)
  if r.size_average ~= nil or r.reduce ~= nil then
    warn("size_average and reduce args will be deprecated, please use reduction='" ..
      ((r.reduce == false) and "none" or (r.size_average == false) and "sum" or "mean") .. "' instead.")
    if r.reduce == false then return "none" end
    return r.size_average == false and "sum" or "mean"
  end
  local v = r.reduction
  if v == nil then return "mean" end
  if v ~= "none" and v ~= "mean" and v ~= "sum" then
    argerror(self.fname, self:argno(r, "reduction"), tostring(v) .. " is not a valid value for reduction")
  end
  return v
end

local function shape_str(t) return "[" .. table.concat(t.shape:totable(), ", ") .. "]" end

local function same_size(a, b)
  if a:dim() ~= b:dim() then return false end
  for d = 0, a:dim() - 1 do
    if a:size(d) ~= b:size(d) then return false end
  end
  return true
end


local function reduce(loss, reduction)
  if reduction == "mean" then return loss:mean() end
  if reduction == "sum" then return loss:sum() end
  return loss
end

-- A list of ints from an int, a table or a torch.Size.
local function int_list(v)
  if type(v) == "number" then return { v } end
  if type(v) == "table" and getmetatable(v) == nil then return v end
  return v:totable()
end

-- The shape {1, C, 1, ...} that lines a per-channel vector up with dim 1 of x.
local function channel_shape(x, C)
  local s = { 1, C }
  for d = 3, x:dim() do s[d] = 1 end
  return s
end

-- ---- layers with C kernels ----

F.linear = torch.linear
F.conv2d = torch.conv2d
F.max_pool2d = torch.max_pool2d
F.max_pool2d_with_indices = torch.max_pool2d_with_indices
F.avg_pool2d = torch.avg_pool2d
F.adaptive_avg_pool2d = torch.adaptive_avg_pool2d
F.adaptive_max_pool2d = torch.adaptive_max_pool2d
F.flatten = torch.flatten

-- ---- activations ----

-- The trailing `inplace` flag of an activation: a boolean or {inplace=}.
local function inplace_flag(fname, v, n)
  if v == nil then return false end
  if type(v) == "boolean" then return v end
  if is_opts(v) then
    for k in pairs(v) do
      if k ~= "inplace" then argerror(fname, n, "unknown keyword '" .. tostring(k) .. "'") end
    end
    return v.inplace == true
  end
  argerror(fname, n, "'inplace' must be a boolean, got " .. type(v))
end

local function check_input(fname, x)
  if not is_tensor(x) then error(string.format("bad argument #1 to '%s' (tensor expected, got %s)", fname, type(x)), 3) end
end

function F.relu(input, inplace)
  check_input("relu", input)
  if inplace ~= nil and inplace_flag("relu", inplace, 2) then return input:relu_() end
  return input:relu()
end

function F.sigmoid(input)
  check_input("sigmoid", input)
  return input:sigmoid()
end

function F.tanh(input)
  check_input("tanh", input)
  return input:tanh()
end

local hardtanh_sig = sig("hardtanh", { "input", "min_val", "max_val", "inplace" })
def("hardtanh", function(...)
  local r = hardtanh_sig:parse(...)
  local x = hardtanh_sig:tensor(r, "input")
  local lo, hi = hardtanh_sig:number(r, "min_val", -1.0), hardtanh_sig:number(r, "max_val", 1.0)
  if lo > hi then argerror("hardtanh", hardtanh_sig:argno(r, "max_val"), "min_val cannot be greater than max_val") end
  if hardtanh_sig:bool(r, "inplace", false) then return x:clamp_(lo, hi) end
  return x:clamp(lo, hi)
end)

function F.relu6(input, inplace)
  check_input("relu6", input)
  if inplace_flag("relu6", inplace, 2) then return input:clamp_(0, 6) end
  return input:clamp(0, 6)
end

-- f(x), or with inplace f's value written into x (f reading a copy when autograd records)
local apply = U.maybe_inplace

local leaky_sig = sig("leaky_relu", { "input", "negative_slope", "inplace" })
def("leaky_relu", function(...)
  local r = leaky_sig:parse(...)
  local x = leaky_sig:tensor(r, "input")
  local slope = leaky_sig:number(r, "negative_slope", 0.01)
  return apply(x, function(v) return ACT.leaky_relu(v, slope) end, leaky_sig:bool(r, "inplace", false))
end)

local elu_sig = sig("elu", { "input", "alpha", "inplace" })
def("elu", function(...)
  local r = elu_sig:parse(...)
  local x = elu_sig:tensor(r, "input")
  local alpha = elu_sig:number(r, "alpha", 1.0)
  return apply(x, function(v) return ACT.elu(v, alpha) end, elu_sig:bool(r, "inplace", false))
end)

local gelu_sig = sig("gelu", { "input", "approximate" })
def("gelu", function(...)
  local r = gelu_sig:parse(...)
  local x = gelu_sig:tensor(r, "input")
  local approximate = r.approximate or "none"
  if approximate == "none" then return ACT.gelu(x) end
  if approximate == "tanh" then return ACT.gelu_tanh(x) end
  argerror("gelu", gelu_sig:argno(r, "approximate"), "approximate argument must be either none or tanh.")
end)

function F.silu(input, inplace)
  check_input("silu", input)
  return apply(input, ACT.silu, inplace_flag("silu", inplace, 2))
end

local softplus_sig = sig("softplus", { "input", "beta", "threshold" })
def("softplus", function(...)
  local r = softplus_sig:parse(...)
  local x = softplus_sig:tensor(r, "input")
  local beta, threshold = softplus_sig:number(r, "beta", 1.0), softplus_sig:number(r, "threshold", 20.0)
  return ACT.softplus(x, beta, threshold)
end)

local log_sigmoid = ACT.composite.log_sigmoid -- in differentiable ops: the BCE-with-logits node's composite

function F.logsigmoid(input)
  check_input("logsigmoid", input)
  return ACT.log_sigmoid(input)
end

-- ---- softmax ----

-- PyTorch's implicit dim (deprecated): 0 for 0-, 1- and 3-D input, else 1.
local function softmax_dim(fname, x, dim)
  if dim ~= nil then return dim end
  warn("Implicit dimension choice for " .. fname ..
    " has been deprecated. Change the call to include dim=X as an argument.")
  local nd = x:dim()
  return (nd == 0 or nd == 1 or nd == 3) and 0 or 1
end

local function softmax_fn(fname, method, negate)
  local s = sig(fname, { "input", "dim", "_stacklevel", "dtype" })
  def(fname, function(...)
    local r = s:parse(...)
    local x = s:tensor(r, "input")
    local dim = softmax_dim(fname, x, r.dim)
    if negate then x = -x end
    if r.dtype ~= nil then return x[method](x, dim, { dtype = r.dtype }) end
    return x[method](x, dim)
  end)
end
softmax_fn("softmax", "softmax")
softmax_fn("log_softmax", "log_softmax")
softmax_fn("softmin", "softmax", true)

-- ---- dropout ----

local function check_p(fname, s, r)
  local p = s:number(r, "p", 0.5)
  if p < 0 or p > 1 then
    argerror(fname, s:argno(r, "p"), "dropout probability has to be between 0 and 1, but got " .. tostring(p))
  end
  return p
end

-- x * mask / (1 - p) with mask ~ Bernoulli(1 - p), drawn as torch.rand draws (so manual_seed
-- fixes it); mask_shape: the shape of the mask (broadcast over x), nil for x's shape.
local function dropout_apply(x, p, inplace, mask_shape)
  if p == 1 then
    if inplace then return x:zero_() end
    return x * 0
  end
  if not inplace and not mask_shape and x:is_contiguous() then return torch._dropout(x, p) end -- one fused pass
  local q = 1 - p
  local noise = mask_shape and torch.empty(mask_shape, { dtype = x.dtype, device = x.device }) or torch.empty_like(x)
  noise:_dropout_noise_(q)
  if inplace then return x:mul_(noise) end
  return x * noise
end

local dropout_sig = sig("dropout", { "input", "p", "training", "inplace" })
def("dropout", function(...)
  local r = dropout_sig:parse(...)
  local x = dropout_sig:tensor(r, "input")
  local p = check_p("dropout", dropout_sig, r)
  local training, inplace = dropout_sig:bool(r, "training", true), dropout_sig:bool(r, "inplace", false)
  if p == 0 or not training or x:numel() == 0 then return x end
  return dropout_apply(x, p, inplace)
end)

-- dropout1d / dropout2d / dropout3d: one mask value per (sample, channel), PyTorch's
-- feature_dropout over dims 0 and 1. dropout1d/3d take unbatched input (one dim fewer) as
-- a batch of one; dropout2d only warns about dims other than 3 or 4 and, as PyTorch does
-- for now, reads 3-D input as (N, C, L).
local function feature_dropout(fname, nd)
  local s = sig(fname, { "input", "p", "training", "inplace" })
  def(fname, function(...)
    local r = s:parse(...)
    local x = s:tensor(r, "input")
    local p = check_p(fname, s, r)
    local training, inplace = s:bool(r, "training", true), s:bool(r, "inplace", false)
    local dim = x:dim()
    if nd == 1 and dim ~= 2 and dim ~= 3 then
      fail(fname, string.format("Expected 2D or 3D input, but received a %dD input. Note that dropout1d exists to " ..
        "provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an optional batch " ..
        "dimension (i.e. 2D or 3D inputs).", dim))
    elseif nd > 1 and dim ~= nd + 1 and dim ~= nd + 2 then
      warn(string.format("%s: Received a %d-D input to %s, which is deprecated and will result in an error in a " ..
        "future release. To retain the behavior and silence this warning, please use dropout instead.", fname, dim, fname))
    end
    local batched = nd == 2 or dim == nd + 2
    if not batched then dim = dim + 1 end
    if dim < 2 then fail(fname, "Feature dropout requires at least 2 dimensions in the input") end
    if p == 0 or not training or x:numel() == 0 then return x end
    local shape = x.shape:totable()
    if not batched then table.insert(shape, 1, 1) end
    for d = 3, #shape do shape[d] = 1 end
    if not batched then table.remove(shape, 1) end
    return dropout_apply(x, p, inplace, shape)
  end)
end
feature_dropout("dropout1d", 1)
feature_dropout("dropout2d", 2)
feature_dropout("dropout3d", 3)

-- ---- normalisation ----

local bn_sig = sig("batch_norm", { "input", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps" })
def("batch_norm", function(...)
  local s = bn_sig
  local r = s:parse(...)
  local x = s:tensor(r, "input")
  local rm, rv = s:tensor(r, "running_mean", true), s:tensor(r, "running_var", true)
  local w, b = s:tensor(r, "weight", true), s:tensor(r, "bias", true)
  local training = s:bool(r, "training", false)
  local momentum, eps = s:number(r, "momentum", 0.1), s:number(r, "eps", 1e-5)
  if x:dim() < 2 then fail("batch_norm", "Expected 2D or more input (got " .. x:dim() .. "D input)") end
  local C = x:size(1)
  for _, p in ipairs({ { "running_mean", rm }, { "running_var", rv }, { "weight", w }, { "bias", b } }) do
    if p[2] and p[2]:numel() ~= C then
      argerror("batch_norm", s:argno(r, p[1]), string.format("%s should contain %d elements not %d", p[1], C, p[2]:numel()))
    end
  end
  if training then
    if x:numel() // math.max(C, 1) == 1 then
      fail("batch_norm", "Expected more than 1 value per channel when training, got input size " .. tostring(x.shape))
    end
  elseif not rm or not rv then
    fail("batch_norm", "running_mean and running_var must be defined in evaluation mode")
  end
  -- one engine op (engine/batchnorm.c): float16/bfloat16 input computes in float32 and keeps
  -- its dtype, as PyTorch's kernels do (also under autocast); running stats update in place
  return torch.batch_norm(x, w, b, rm, rv, training, momentum, eps)
end)

local ln_sig = sig("layer_norm", { "input", "normalized_shape", "weight", "bias", "eps" })
def("layer_norm", function(...)
  local s = ln_sig
  local r = s:parse(...)
  local x = s:tensor(r, "input")
  if r.normalized_shape == nil then argerror("layer_norm", 2, "missing required argument 'normalized_shape'") end
  local ns = int_list(r.normalized_shape)
  local w, b = s:tensor(r, "weight", true), s:tensor(r, "bias", true)
  local eps = s:number(r, "eps", 1e-5)
  local k, nd = #ns, x:dim()
  local ok = k >= 1 and k <= nd
  for i = 1, k do ok = ok and x:size(nd - k + i - 1) == ns[i] end
  local function ns_str() return "[" .. table.concat(ns, ", ") .. "]" end
  if not ok then
    fail("layer_norm", string.format("Given normalized_shape=%s, expected input with shape [*, %s], but got input of size%s",
      ns_str(), table.concat(ns, ", "), shape_str(x)))
  end
  for _, p in ipairs({ { "weight", w }, { "bias", b } }) do
    local t = p[2]
    if t then
      local same = t:dim() == k
      for i = 1, k do same = same and t:size(i - 1) == ns[i] end
      if not same then
        argerror("layer_norm", s:argno(r, p[1]), string.format(
          "Expected %s to be of same shape as normalized_shape, but got %s of shape %s and normalized_shape = %s",
          p[1], p[1], shape_str(t), ns_str()))
      end
    end
  end
  local E = 1
  for i = 1, k do E = E * ns[i] end
  local M = E > 0 and x:numel() // E or 0
  local y
  if M > 0 and E > 0 then -- the fused kernels, affine included, forward and backward
    if torch.is_autocast_enabled(x.device.type) and x.dtype ~= torch.float32 and x.dtype ~= torch.float64 then
      x = x:float() -- autocast runs layer_norm in float32
    end
    return torch._layer_norm(x, E, w, b, eps)
  else
    local dims = {}
    for i = 1, k do dims[i] = nd - k + i - 1 end
    local mean = x:mean(dims, true)
    local var = x:var(dims, { correction = 0, keepdim = true })
    y = (x - mean) * (var + eps):rsqrt()
  end
  if w then y = y * w end
  if b then y = y + b end
  return y
end)

local gn_sig = sig("group_norm", { "input", "num_groups", "weight", "bias", "eps" })
def("group_norm", function(...)
  local s = gn_sig
  local r = s:parse(...)
  local x = s:tensor(r, "input")
  local G = s:integer(r, "num_groups")
  if G == nil then argerror("group_norm", 2, "missing required argument 'num_groups'") end
  local w, b = s:tensor(r, "weight", true), s:tensor(r, "bias", true)
  local eps = s:number(r, "eps", 1e-5)
  if x:dim() < 2 then
    fail("group_norm", "Expected at least 2 dimensions for input tensor but received " .. x:dim())
  end
  local N, C = x:size(0), x:size(1)
  if G <= 0 or C % G ~= 0 then
    fail("group_norm", string.format("Expected number of channels in input to be divisible by num_groups, but got input " ..
      "of shape %s and num_groups=%d", shape_str(x), G))
  end
  for _, p in ipairs({ { "weight", w }, { "bias", b } }) do
    if p[2] and (p[2]:dim() ~= 1 or p[2]:numel() ~= C) then
      argerror("group_norm", s:argno(r, p[1]), string.format("Expected %s to be a vector of size equal to the number of " ..
        "channels in input, but got %s of shape %s and input of shape %s", p[1], p[1], shape_str(p[2]), shape_str(x)))
    end
  end
  local g = x:reshape(N, G, -1)
  local mean = g:mean(2, true)
  local var = g:var(2, { correction = 0, keepdim = true })
  local y = ((g - mean) * (var + eps):rsqrt()):reshape(x.shape)
  local cs = channel_shape(x, C)
  if w then y = y * w:reshape(cs) end
  if b then y = y + b:reshape(cs) end
  return y
end)

local normalize_sig = sig("normalize", { "input", "p", "dim", "eps" })
def("normalize", function(...)
  local s = normalize_sig
  local r = s:parse(...)
  local x = s:tensor(r, "input")
  local p, dim, eps = s:number(r, "p", 2.0), r.dim or 1, s:number(r, "eps", 1e-12)
  return x / x:norm(p, dim, true):clamp(eps):expand_as(x)
end)

-- ---- embedding ----

local emb_sig = sig("embedding", { "input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse" })
def("embedding", function(...)
  local s = emb_sig
  local r = s:parse(...)
  local idx, w = s:tensor(r, "input"), s:tensor(r, "weight")
  local padding_idx = s:integer(r, "padding_idx")
  if w:dim() ~= 2 then argerror("embedding", s:argno(r, "weight"), "'weight' must be 2-D") end
  local V = w:size(0)
  if padding_idx == nil then padding_idx = -1
  elseif padding_idx >= 0 then
    if padding_idx >= V then argerror("embedding", s:argno(r, "padding_idx"), "Padding_idx must be within num_embeddings") end
  else
    if padding_idx < -V then argerror("embedding", s:argno(r, "padding_idx"), "Padding_idx must be within num_embeddings") end
    padding_idx = V + padding_idx
  end
  local max_norm = s:number(r, "max_norm")
  if max_norm then
    -- embedding_renorm_: rows referenced by idx whose norm exceeds max_norm are scaled to it, in place
    local norm_type = s:number(r, "norm_type", 2.0)
    local _ <close> = torch.no_grad()
    local seen, uniq = {}, {}
    for _, i in ipairs(idx:reshape(-1):tolist()) do
      if not seen[i] then seen[i] = true; uniq[#uniq + 1] = i end
    end
    if #uniq > 0 then
      local u = torch.tensor(uniq, { dtype = torch.int64, device = w.device })
      local rows = w:index_select(0, u)
      local norms = rows:norm(norm_type, 1, true)
      local scale = torch.where(norms:gt(max_norm), max_norm / (norms + 1e-7), torch.ones_like(norms))
      w:index_add_(0, u, rows * (scale - 1))
    end
  end
  return torch.embedding(w, idx, padding_idx, s:bool(r, "scale_grad_by_freq", false), s:bool(r, "sparse", false))
end)

-- ---- pad ----

-- index tensor mapping each output position of a padded dim of size n to a source position
local function pad_index(mode, n, before, after, device)
  local idx = {}
  for j = 0, n + before + after - 1 do
    local i = j - before
    if mode == "reflect" then
      if i < 0 then i = -i end
      if i >= n then i = 2 * (n - 1) - i end
    elseif mode == "replicate" then
      i = math.min(math.max(i, 0), n - 1)
    else -- circular
      i = i % n
    end
    idx[#idx + 1] = i
  end
  return torch.tensor(idx, { dtype = torch.int64, device = device })
end

local pad_sig = sig("pad", { "input", "pad", "mode", "value" })
def("pad", function(...)
  local s = pad_sig
  local r = s:parse(...)
  local x = s:tensor(r, "input")
  local pad = r.pad
  if pad == nil and r.n == 1 and is_opts((select(2, ...))) and next((select(2, ...))) == nil then pad = {} end -- F.pad(x, {})
  if type(pad) ~= "table" and not (type(pad) == "userdata" and pad.totable) then
    argerror("pad", 2, "'pad' must be a list of ints, got " .. type(pad))
  end
  pad = int_list(pad)
  local mode, value = r.mode or "constant", r.value
  local nd = x:dim()
  if #pad % 2 ~= 0 then fail("pad", "Padding length must be divisible by 2") end
  if #pad > 2 * nd then
    fail("pad", string.format("Padding length should be less than or equal to two times the input dimension but got " ..
      "padding length %d and input of dimension %d", #pad, nd))
  end
  for i, p in ipairs(pad) do
    if math.type(p) ~= "integer" then argerror("pad", s:argno(r, "pad"), "'pad' must be a list of ints, got " ..
      (math.type(p) or type(p)) .. " at position " .. i) end
  end
  if mode == "constant" then
    value = value == nil and 0 or s:number(r, "value")
    local y = x
    for k = 1, #pad // 2 do
      local d, before, after = nd - k, pad[2 * k - 1], pad[2 * k]
      local n = x:size(d)
      if n + before + after < 0 then
        fail("pad", string.format("The input size %d, plus negative padding %d and %d resulted in a negative output size, " ..
          "which is invalid. Check dimension %d of your input.", n, before, after, d))
      end
      -- crop first, then add the constant blocks on either side
      local lo, len = math.max(-before, 0), y:size(d) - math.max(-before, 0) - math.max(-after, 0)
      if lo > 0 or len < y:size(d) then y = y:narrow(d, lo, math.max(len, 0)) end
      local parts = {}
      local shape = y.shape:totable()
      if before > 0 then
        shape[d + 1] = before
        parts[#parts + 1] = torch.full(shape, value, { dtype = x.dtype, device = x.device })
      end
      parts[#parts + 1] = y
      if after > 0 then
        shape[d + 1] = after
        parts[#parts + 1] = torch.full(shape, value, { dtype = x.dtype, device = x.device })
      end
      if #parts > 1 then y = torch.cat(parts, d) end
    end
    if y == x then y = x:clone() end -- constant_pad_nd returns a new tensor
    return y
  end
  if mode ~= "reflect" and mode ~= "replicate" and mode ~= "circular" then
    argerror("pad", s:argno(r, "mode"), "Unrecognised padding mode " .. tostring(mode))
  end
  if value ~= nil and value ~= 0 then
    fail("pad", 'Padding mode "' .. mode .. "\" doesn't take in value argument")
  end
  local k = #pad // 2
  if not ((k == 1 and (nd == 2 or nd == 3)) or (k == 2 and (nd == 3 or nd == 4)) or (k == 3 and (nd == 4 or nd == 5))) then
    fail("pad", "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now")
  end
  local y = x
  for j = 1, k do
    local d, before, after = nd - j, pad[2 * j - 1], pad[2 * j]
    local n = x:size(d)
    if mode == "reflect" and (before >= n or after >= n) then
      fail("pad", string.format("Padding size should be less than the corresponding input dimension, but got: padding (%d, %d) " ..
        "at dimension %d of input %s", before, after, d, shape_str(x)))
    end
    if mode == "circular" and (before > n or after > n) then
      fail("pad", "Padding value causes wrapping around more than once.")
    end
    if n == 0 and (before > 0 or after > 0) then
      fail("pad", string.format("%s padding of an empty dimension (dimension %d of input %s)", mode, d, shape_str(x)))
    end
    if n + before + after < 0 then
      fail("pad", string.format("input size %d with padding (%d, %d) at dimension %d gives a negative output size", n, before, after, d))
    end
    y = y:index_select(d, pad_index(mode, n, before, after, x.device))
  end
  return y
end)

-- ---- one_hot ----

local one_hot_sig = sig("one_hot", { "tensor", "num_classes" })
def("one_hot", function(...)
  local s = one_hot_sig
  local r = s:parse(...)
  local x = s:tensor(r, "tensor")
  local C = s:integer(r, "num_classes", -1)
  if x.dtype ~= torch.int64 then fail("one_hot", "one_hot is only applicable to index tensor of type LongTensor.") end
  if x:numel() == 0 then
    if C <= 0 then fail("one_hot", "Can not infer total number of classes from empty tensor.") end
  else
    if x:min():item() < 0 then fail("one_hot", "Class values must be non-negative.") end
    local max = x:max():item()
    if C == -1 then C = max + 1
    elseif max >= C then fail("one_hot", "Class values must be smaller than num_classes.") end
  end
  return x:unsqueeze(-1):eq(torch.arange(C, { device = x.device })):to(torch.int64)
end)

-- ---- losses ----

local nll_sig = sig("nll_loss", { "input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction" })
def("nll_loss", function(...)
  local s = nll_sig
  local r = s:parse(...)
  local x, t = s:tensor(r, "input"), s:tensor(r, "target")
  return torch.nll_loss(x, t, s:tensor(r, "weight", true), s:reduction(r), s:integer(r, "ignore_index", -100))
end)

local ce_sig = sig("cross_entropy", { "input", "target", "weight", "size_average", "ignore_index", "reduce", "reduction",
  "label_smoothing" })
def("cross_entropy", function(...)
  local s = ce_sig
  local r = s:parse(...)
  local x, t = s:tensor(r, "input"), s:tensor(r, "target")
  local w = s:tensor(r, "weight", true)
  local reduction = s:reduction(r)
  local ignore = s:integer(r, "ignore_index", -100)
  local eps = s:number(r, "label_smoothing", 0.0)
  if eps < 0 or eps > 1 then
    argerror("cross_entropy", s:argno(r, "label_smoothing"), "label_smoothing must be between 0.0 and 1.0. Got: " .. eps)
  end
  if x:dim() == 0 then fail("cross_entropy", "Expected 1 or more dimensions (got 0)") end
  local class_dim = x:dim() == 1 and 0 or 1
  local C = x:size(class_dim)
  local probabilities = same_size(x, t)
  if not probabilities and eps == 0 then return torch._cross_entropy_loss(x, t, w, reduction, ignore) end
  local logp = x:log_softmax(class_dim)
  -- weight lined up with the class dim
  local wv = w and (x:dim() > 1 and w:reshape(channel_shape(x, w:numel())) or w)

  if probabilities then -- class probabilities
    if not t:is_floating_point() then
      fail("cross_entropy", "Expected floating point type for target with class probabilities, got " .. U.scalar_name(t.dtype))
    end
    if ignore >= 0 then fail("cross_entropy", "ignore_index is not supported for floating point target") end
    if w and (w:dim() ~= 1 or w:numel() ~= C) then
      argerror("cross_entropy", s:argno(r, "weight"), string.format("weight tensor should be defined either for all %d " ..
        "classes or no classes but got weight tensor of shape: %s", C, shape_str(w)))
    end
    if eps > 0 then t = t * (1 - eps) + eps / C end
    local prod = logp * t
    if wv then prod = prod * wv end
    if reduction == "none" then return -prod:sum(class_dim) end
    if reduction == "sum" then return -prod:sum() end
    if x:numel() == 0 then return -prod:sum() * (0 / 0) end
    return -prod:sum() / (x:numel() // C)
  end

  local nll = torch.nll_loss(logp, t, w, reduction, ignore)
  -- label smoothing: (1 - eps) * nll + eps / C * (the loss against the uniform distribution)
  local smooth = wv and -(logp * wv):sum(class_dim) or -logp:sum(class_dim)
  local ignored = t:eq(ignore)
  smooth = smooth:masked_fill(ignored, 0)
  local ret
  if reduction == "mean" then
    if w then
      local weights = w:index_select(0, t:masked_fill(ignored, 0):reshape(-1)):masked_fill(ignored:reshape(-1), 0)
      ret = smooth:sum() / weights:sum()
    else
      ret = smooth:sum() / ignored:logical_not():sum()
    end
  elseif reduction == "sum" then
    ret = smooth:sum()
  else
    ret = smooth
  end
  return nll * (1 - eps) + ret * (eps / C)
end)

-- An elementwise loss and its reduction as one autograd node with PyTorch's name
-- (MseLossBackward0, ...). kind names the fused kernels (torch._pointwise_loss and its backward:
-- one pass each way) that run for float inputs on one device; loss(x, t, p), the elementwise
-- values, and grads(x, t, p, need), their derivatives for x, t and p when p is a tensor (nil where
-- need[i] is false), are the composite ops that run otherwise, for the target's and pos_weight's
-- gradients, and under create_graph (their backward's ops record a graph). p: the loss's
-- parameter; w: per-element weights multiplied in (false: none); k: the constant of the fused
-- gradient (mse's 2). Tensors p and w come expanded to x's shape.
local release = getmetatable(torch.empty(0)).__close -- frees a tensor's memory now, not at collection
local function fusable(x, t, p)
  return not torch.is_tensor(p) and x.dtype.is_floating_point and t.dtype.is_floating_point and x.device == t.device
end
local function fused_grad(kind, k, x, t, grad, p, reduction)
  return torch._pointwise_loss_backward(kind, x, t, grad, p or 0, reduction == "mean" and k / x:numel() or k)
end
local function loss_node(name, kind, loss, grads)
  local Fn = torch.autograd.Function:extend(name)
  Fn._node_name = name
  function Fn.forward(ctx, x, t, reduction, p, w)
    ctx:save_for_backward(x, t)
    ctx.reduction, ctx.p, ctx.w = reduction, p, w
    ctx.fused = fusable(x, t, p)
    local l = ctx.fused and torch._pointwise_loss(kind, x, t) or loss(x, t, p)
    if w then
      local lw = l * w
      release(l)
      l = lw
    end
    if reduction == "none" then return l end
    local r = reduce(l, reduction)
    release(l)
    return r
  end
  function Fn.backward(ctx, grad)
    local x, t = table.unpack(ctx.saved_tensors)
    local need = ctx.needs_input_grad
    local own = not torch.is_grad_enabled() -- the temporaries are not part of a graph: freed now
    if ctx.fused and own and not need[2] and not need[5] then
      local g = ctx.w and grad * ctx.w or grad
      local gx = need[1] and fused_grad(kind, 1, x, t, g, nil, ctx.reduction) or nil
      if g ~= grad then release(g) end
      return gx, nil, nil, nil, nil
    end
    if ctx.reduction == "mean" then grad = grad / x:numel() end
    local gw = need[5] and grad * loss(x, t, ctx.p) or nil
    if ctx.w then grad = grad * ctx.w end
    local function scaled(g)
      if not g then return nil end
      local r = grad * g
      if own then release(g) end
      return r
    end
    local gx, gt, gp = grads(x, t, ctx.p, need)
    return scaled(gx), scaled(gt), nil, scaled(gp), gw
  end
  return Fn
end

-- The same for a loss of d = input - target alone (mse, smooth L1, Huber), whose target gradient
-- is the input's negated. Unfused, d is kept from the forward and grad(d, p) gives the derivative
-- as k * g (k a number folded into the incoming gradient first, so that the backward costs two
-- kernels). Temporaries are freed as soon as they are used: held until the collector runs, they
-- made the GPU's caching allocator grow (2x slower on 64 MB inputs).
local function diff_loss_node(name, kind, k_fused, loss, grad_of)
  local Fn = torch.autograd.Function:extend(name)
  Fn._node_name = name
  function Fn.forward(ctx, x, t, reduction, p)
    ctx:save_for_backward(x, t)
    ctx.reduction, ctx.p = reduction, p
    local l
    if fusable(x, t, p) then
      ctx.fused = true
      l = torch._pointwise_loss(kind, x, t, p)
    else
      local d = x - t
      ctx.d = d
      l = loss(d, p)
    end
    if reduction == "none" then return l end
    local r = reduce(l, reduction)
    release(l)
    return r
  end
  function Fn.backward(ctx, grad)
    local need = ctx.needs_input_grad
    -- d is used once and freed (a second backward under retain_graph makes it again); under
    -- create_graph it is made again from the inputs, so that the graph reaches them
    local d, own = ctx.d, not torch.is_grad_enabled()
    ctx.d = nil
    local x, t = table.unpack(ctx.saved_tensors)
    local gx
    if ctx.fused and own then
      gx = fused_grad(kind, k_fused, x, t, grad, ctx.p, ctx.reduction)
    else
      if not d or not own then
        if d then release(d) end
        d = x - t
      end
      local g, k = grad_of(d, ctx.p)
      if ctx.reduction == "mean" then k = k / d:numel() end
      gx = g * (grad * k)
      if own then
        if not rawequal(g, d) then release(g) end
        release(d)
      end
    end
    return need[1] and gx or nil, need[2] and -gx or nil, nil, nil
  end
  return Fn
end

-- input and target at their broadcast shape, as PyTorch's functional losses call the op
local function broadcast_pair(x, t)
  if same_size(x, t) then return x, t end
  return torch.broadcast_tensors(x, t)
end

local MSE = diff_loss_node("MseLossBackward0", "mse", 2, function(d) return d ^ 2 end, function(d) return d, 2 end)
-- smooth L1's and Huber's gradients are d clamped to [-beta, beta] (scaled by 1 / beta) and to
-- [-delta, delta]: one kernel each
local SMOOTH_L1 = diff_loss_node("SmoothL1LossBackward0", "smooth_l1", 1, function(d, beta)
  local a = d:abs()
  return torch.where(a:lt(beta), a ^ 2 * (0.5 / beta), a - 0.5 * beta)
end, function(d, beta) return d:clamp(-beta, beta), 1 / beta end)
-- Huber's loss as min(|d|, delta) * (|d| - min(|d|, delta) / 2): PyTorch's two branches, the same
-- roundings, in five kernels
local HUBER = diff_loss_node("HuberLossBackward0", "huber", 1, function(d, delta)
  local a = d:abs()
  local m = a:clamp_max(delta)
  return m * (a - m * 0.5)
end, function(d, delta) return d:clamp(-delta, delta), 1 end)

-- mse_loss, l1_loss, smooth_l1_loss, huber_loss: elementwise loss f(input - target). Without
-- weight, as PyTorch: the op's own node when node is given (l1_loss is PyTorch's composite); with
-- weight (mse_loss, l1_loss, huber_loss): PyTorch's composite, sum(f * weight) / sum(weight) for "mean".
local function pointwise_loss(fname, names, f, node, param)
  local s = sig(fname, names)
  def(fname, function(...)
    local r = s:parse(...)
    local x, t = s:tensor(r, "input"), s:tensor(r, "target")
    if not same_size(x, t) then
      warn(string.format("Using a target size (%s) that is different to the input size (%s). This will likely lead " ..
        "to incorrect results due to broadcasting. Please ensure they have the same size.", tostring(t.shape), tostring(x.shape)))
    end
    local reduction = s:reduction(r)
    local p = param and param(r, s)
    local w = s.index.weight and s:tensor(r, "weight", true)
    if not w then
      if node and p ~= 0 then
        local bx, bt = broadcast_pair(x, t)
        return node.apply(bx, bt, reduction, p)
      end
      return reduce(f(x - t, p), reduction)
    end
    if not same_size(w, x) then fail(fname, "Weights and input must have the same size.") end
    local loss = f(x - t, p) * w
    if reduction == "mean" then return loss:sum() / w:sum() end
    return reduce(loss, reduction)
  end)
end

pointwise_loss("mse_loss", { "input", "target", "size_average", "reduce", "reduction", "weight" },
  function(d) return d ^ 2 end, MSE)
pointwise_loss("l1_loss", { "input", "target", "size_average", "reduce", "reduction", "weight" },
  function(d) return d:abs() end)
-- beta 0 is l1_loss, as PyTorch's smooth_l1_loss calls it then
pointwise_loss("smooth_l1_loss", { "input", "target", "size_average", "reduce", "reduction", "beta" }, function(d, beta)
  return beta == 0 and d:abs() or torch.where(d:abs():lt(beta), d ^ 2 * (0.5 / beta), d:abs() - 0.5 * beta)
end, SMOOTH_L1, function(r, s)
  local beta = s:number(r, "beta", 1.0)
  if beta < 0 then fail("smooth_l1_loss", "smooth_l1_loss does not support negative values for beta.") end
  return beta
end)
pointwise_loss("huber_loss", { "input", "target", "reduction", "delta", "weight" }, function(d, delta)
  local a = d:abs()
  return torch.where(a:lt(delta), a ^ 2 * 0.5, (a - 0.5 * delta) * delta)
end, HUBER, function(r, s)
  local delta = s:number(r, "delta", 1.0)
  if delta <= 0 then fail("huber_loss", "huber_loss does not support non-positive values for delta.") end
  return delta
end)

-- The elementwise loss -(t log x + (1 - t) log(1 - x)), each log clamped to >= -100 as PyTorch,
-- so 0 and 1 give finite losses, with PyTorch's gradients: (x - t) / max(x (1 - x), 1e-12) for
-- the input (finite at 0 and 1, where the clamps' own derivatives would give 0 * inf = nan)
-- and log(1 - x) - log(x), clamped alike, for the target.
local function bce_logs(x)
  return x:log():clamp(-100), (1 - x):log():clamp(-100)
end
local BCE = loss_node("BinaryCrossEntropyBackward0", "bce", function(x, t)
  local log_x, log_1mx = bce_logs(x)
  return -(t * log_x + (1 - t) * log_1mx)
end, function(x, t, _, need)
  local gx = need[1] and (x - t) / ((1 - x) * x):clamp_min(1e-12) or nil
  local gt
  if need[2] then
    local log_x, log_1mx = bce_logs(x)
    gt = log_1mx - log_x
  end
  return gx, gt
end)

-- (1 - t) x - lw log_sigmoid(x), lw = 1 + (pos_weight - 1) t; p: pos_weight or false
local BCE_LOGITS = loss_node("BinaryCrossEntropyWithLogitsBackward0", "bce_logits", function(x, t, pw)
  local ls = log_sigmoid(x)
  if pw then ls = ls * ((pw - 1) * t + 1) end
  return (1 - t) * x - ls
end, function(x, t, pw, need)
  local lw = pw and (pw - 1) * t + 1 or 1
  local gx = need[1] and (1 - t) - (-x):sigmoid() * lw or nil
  local gt
  if need[2] then
    gt = -x
    if pw then gt = gt - log_sigmoid(x) * (pw - 1) end
  end
  return gx, gt, need[4] and -t * log_sigmoid(x) or nil
end)

local bce_sig = sig("binary_cross_entropy", { "input", "target", "weight", "size_average", "reduce", "reduction" })
def("binary_cross_entropy", function(...)
  local s = bce_sig
  local r = s:parse(...)
  local x, t = s:tensor(r, "input"), s:tensor(r, "target")
  local w = s:tensor(r, "weight", true)
  local reduction = s:reduction(r)
  if not same_size(x, t) then
    fail("binary_cross_entropy", string.format("Using a target size (%s) that is different to the input size (%s) is " ..
      "deprecated. Please ensure they have the same size.", tostring(t.shape), tostring(x.shape)))
  end
  if x.is_cuda and torch.is_autocast_enabled("cuda") then -- banned from CUDA autocast, as PyTorch's
    fail("binary_cross_entropy", "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n" ..
      "Many models use a sigmoid layer right before the binary cross entropy layer.\n" ..
      "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n" ..
      "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.")
  end
  -- PyTorch's CPU kernel checks the range (its CUDA kernel asserts on the device instead)
  if not x.is_cuda and x:numel() > 0 and (x:lt(0):logical_or(x:gt(1))):any():item() then
    fail("binary_cross_entropy", "all elements of input should be between 0 and 1")
  end
  return BCE.apply(x, t, reduction, false, w and w:expand_as(x) or false)
end)

local bcel_sig = sig("binary_cross_entropy_with_logits", { "input", "target", "weight", "size_average", "reduce",
  "reduction", "pos_weight" })
def("binary_cross_entropy_with_logits", function(...)
  local s = bcel_sig
  local r = s:parse(...)
  local x, t = s:tensor(r, "input"), s:tensor(r, "target")
  local w, pw = s:tensor(r, "weight", true), s:tensor(r, "pos_weight", true)
  local reduction = s:reduction(r)
  if not same_size(x, t) then
    fail("binary_cross_entropy_with_logits", string.format("Target size (%s) must be the same as input size (%s)",
      tostring(t.shape), tostring(x.shape)))
  end
  return BCE_LOGITS.apply(x, t, reduction, pw and pw:expand_as(x) or false, w and w:expand_as(x) or false)
end)

return F
