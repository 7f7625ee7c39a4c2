-- nn.utils.parametrize and nn.utils.parametrizations (orthogonal, weight_norm, spectral_norm),
-- with PyTorch 2.x's names, state_dict keys ("parametrizations.weight.original",
-- "...original0"/"original1" for weight_norm) and error messages.
--
-- module.weight is a property, as in PyTorch: every read computes the ParametrizationList's
-- forward (once per name and module inside parametrize.cached()). The instance's values table
-- gets an __index function for the parametrized names, and its __newindex is wrapped so that
-- `module.weight = X` calls module.parametrizations.weight:right_inverse(X), as PyTorch's
-- property setter does. parametrize.refresh(module[, name]) (a Lua-only helper, kept for
-- older scripts) computes the value and returns it. The module's class is unchanged
-- (type_before_parametrizations returns it); only its printed name becomes
-- "Parametrized<Name>". A right_inverse that is not implemented raises an error whose
-- message contains "NotImplementedError" (treated as identity at registration).
local torch = require "torch"
local U = require "nn_util"
local Parameter = require "nn_parameter"
local Module = require "nn_module"
local containers = require "nn_containers"
local ModuleList, ModuleDict = containers.ModuleList, containers.ModuleDict

local P = {}
local parametrizations = {}
P.parametrizations = parametrizations

local function values_of(m) return getmetatable(m).__index end
local function is_list(v) return type(v) == "table" and getmetatable(v) == nil end
local function is_not_implemented(err) return tostring(err):find("NotImplementedError", 1, true) ~= nil end

local function register_pb(m, name, t)
  if Parameter.is(t) then m:register_parameter(name, t) else m:register_buffer(name, t) end
end

-- PyTorch's _maybe_set (original.set_(new)): the same tensor object takes new's data
local function maybe_set(dest, new)
  if not rawequal(dest, new) then dest.data = new end
end

-- ---- caching (parametrize.cached) ----

local cache_depth = 0
local cache = setmetatable({}, { __mode = "k" })

local function plist_of(module, name)
  local pd = values_of(module).parametrizations
  return pd and Module.is_module(pd) and pd._modules[name] or nil
end

-- compute module[name] (the property's getter)
local function refresh(module, name, use_cache)
  local plist = plist_of(module, name)
  local value
  if use_cache and cache_depth > 0 then
    local c = cache[module] or {}
    cache[module] = c
    value = c[name]
    if value == nil then value = plist(); c[name] = value end
  else
    value = plist()
    if cache_depth > 0 and cache[module] then cache[module][name] = value end
  end
  return value
end

function P.refresh(module, name)
  if name ~= nil then return refresh(module, name, false) end
  for n in pairs(values_of(module).parametrizations._modules) do refresh(module, n, false) end
end

local base_setattr
local function parametrized_setattr(self, k, v)
  if type(k) == "string" and plist_of(self, k) then
    if v == nil then
      U.errorf("property '%s' of '%s' object has no deleter", k, self:_get_name())
    end
    self.parametrizations._modules[k]:right_inverse(v)
    return
  end
  return base_setattr(self, k, v)
end

-- the values table's metatable that makes the parametrized names properties of module
local property_of = setmetatable({}, { __mode = "k" }) -- values table -> its metatable before
local function install_property(module)
  local values = values_of(module)
  if property_of[values] then return end
  local base = getmetatable(values)
  property_of[values] = base
  local fallback = base.__index
  setmetatable(values, { __index = function(t, k)
    local pd = rawget(t, "parametrizations")
    if type(k) == "string" and pd and pd._modules[k] then return refresh(module, k, true) end
    if type(fallback) == "function" then return fallback(t, k) end
    return fallback[k]
  end })
end

local function pre_hook(m) -- a deepcopy gets a fresh metatable and values table
  local mt = getmetatable(m)
  if mt.__newindex ~= parametrized_setattr then
    base_setattr = base_setattr or mt.__newindex
    mt.__newindex = parametrized_setattr
  end
  install_property(m)
end

-- enter: module prefix, wrapped __newindex, property reads, forward pre-hook; leave: undo them
local function inject(module)
  local mt = getmetatable(module)
  base_setattr = base_setattr or mt.__newindex
  mt.__newindex = parametrized_setattr
  values_of(module).__name = "Parametrized" .. module.__class.__name
  install_property(module)
  module:register_forward_pre_hook(pre_hook)
end

local function uninject(module)
  local mt = getmetatable(module)
  if mt.__newindex == parametrized_setattr then mt.__newindex = base_setattr end
  local values = values_of(module)
  if property_of[values] then
    setmetatable(values, property_of[values])
    property_of[values] = nil
  end
  values.__name = nil
  local hooks = rawget(module, "_forward_pre_hooks")
  if hooks then
    for i, h in ipairs(hooks) do
      if h.fn == pre_hook then table.remove(hooks, i); break end
    end
    if #hooks == 0 then rawset(module, "_forward_pre_hooks", nil) end
  end
end

-- ---- ParametrizationList ----

local ParametrizationList = ModuleList:extend("ParametrizationList")
P.ParametrizationList = ParametrizationList

function ParametrizationList:__init(modules, original, unsafe)
  if #modules == 0 then U.error("ParametrizationList requires one or more modules.") end
  ModuleList.__init(self, modules)
  self.unsafe = unsafe or false
  local original_shape, original_dtype = original.shape, original.dtype
  local new = original
  do
    local _ <close> = torch.no_grad()
    for i = #self - 1, 0, -1 do
      local m = self[i]
      if m.right_inverse then
        local ok, r = pcall(m.right_inverse, m, new)
        if ok then new = r elseif not is_not_implemented(r) then error(r, 0) end
      end
    end
  end
  if not torch.is_tensor(new) and not is_list(new) then
    U.errorf("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got %s", U.typename(new))
  end
  self.is_tensor = torch.is_tensor(new)
  self.ntensors = self.is_tensor and 1 or #new
  if self.is_tensor then
    if original.dtype ~= new.dtype then
      U.errorf("When `right_inverse` outputs one tensor, it may not change the dtype.\noriginal.dtype: %s\nright_inverse(original).dtype: %s",
        tostring(original.dtype), tostring(new.dtype))
    end
    do
      local _ <close> = torch.no_grad()
      maybe_set(original, new)
    end
    register_pb(self, "original", original)
  else
    for i, t in ipairs(new) do
      if not torch.is_tensor(t) then
        U.errorf("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). Got element %d of the sequence with type %s.",
          i - 1, U.typename(t))
      end
      if Parameter.is(original) then t = Parameter(t:detach(), original.requires_grad)
      else t:requires_grad_(original.requires_grad) end
      register_pb(self, "original" .. (i - 1), t)
    end
  end
  if not self.unsafe then
    local Z = self()
    if not torch.is_tensor(Z) then U.errorf("A parametrization must return a tensor. Got %s.", U.typename(Z)) end
    if Z.dtype ~= original_dtype then
      U.errorf("Registering a parametrization may not change the dtype of the tensor, unless `unsafe` flag is enabled.\nunparametrized dtype: %s\nparametrized dtype: %s",
        tostring(original_dtype), tostring(Z.dtype))
    end
    if Z.shape ~= original_shape then
      U.errorf("Registering a parametrization may not change the shape of the tensor, unless `unsafe` flag is enabled.\nunparametrized shape: %s\nparametrized shape: %s",
        tostring(original_shape), tostring(Z.shape))
    end
  end
end

function ParametrizationList:right_inverse(value)
  do
    local _ <close> = torch.no_grad()
    for i = #self - 1, 0, -1 do
      local m = self[i]
      if not m.right_inverse then
        U.errorf("parametrization %s does not implement right_inverse.", m:_get_name())
      end
      value = m:right_inverse(value)
    end
    if self.is_tensor then
      if not torch.is_tensor(value) then U.errorf("`right_inverse` should return a tensor. Got %s", U.typename(value)) end
      if value.dtype ~= self.original.dtype then
        U.errorf("The tensor returned by `right_inverse` has dtype %s while `original` has dtype %s",
          tostring(value.dtype), tostring(self.original.dtype))
      end
      maybe_set(self.original, value)
    else
      if not is_list(value) then U.errorf("'right_inverse' must return a sequence of tensors. Got %s.", U.typename(value)) end
      if #value ~= self.ntensors then
        U.errorf("'right_inverse' must return a sequence of tensors of length %d. Got a sequence of length %d.", self.ntensors, #value)
      end
      for i, t in ipairs(value) do
        local orig = self["original" .. (i - 1)]
        if not torch.is_tensor(t) then
          U.errorf("`right_inverse` must return a sequence of tensors. Got element %d of type %s", i - 1, U.typename(t))
        end
        if orig.dtype ~= t.dtype then
          U.errorf("Tensor %d returned by `right_inverse` has dtype %s while `original%d` has dtype %s",
            i - 1, tostring(t.dtype), i - 1, tostring(orig.dtype))
        end
        maybe_set(orig, t)
      end
    end
  end
end

function ParametrizationList:forward()
  local x
  if self.is_tensor then
    x = self[0](self.original)
  else
    local originals = {}
    for i = 1, self.ntensors do originals[i] = self["original" .. (i - 1)] end
    x = self[0](table.unpack(originals, 1, self.ntensors))
  end
  for i = 1, #self - 1 do x = self[i](x) end
  return x
end

function ParametrizationList:_load_from_state_dict(...)
  Module._load_from_state_dict(self, ...)
end

-- ---- parametrize ----

function P.is_parametrized(module, tensor_name)
  if not Module.is_module(module) then return false end -- PyTorch's getattr(module, "parametrizations", None)
  local pd = values_of(module).parametrizations
  if pd == nil or not Module.isinstance_of(pd, ModuleDict) then return false end
  if tensor_name == nil then return #pd._modules:keys() > 0 end
  return pd._modules:has(tensor_name)
end

-- register_parametrization(module, name, parametrization[, unsafe]) or (..., {unsafe=true})
function P.register_parametrization(module, tensor_name, parametrization, ...)
  local unsafe = U.parse("register_parametrization", { { "unsafe", false } }, ...).unsafe
  parametrization:train(module.training)
  if P.is_parametrized(module, tensor_name) then
    local plist = module.parametrizations._modules[tensor_name]
    if not unsafe then
      local Y = plist()
      local X = parametrization(Y)
      if not torch.is_tensor(X) then U.errorf("A parametrization must return a tensor. Got %s.", U.typename(X)) end
      if X.dtype ~= Y.dtype then
        U.errorf("Registering a parametrization may not change the dtype of the tensor, unless the `unsafe` flag is enabled.\nmodule.%s.dtype: %s\nparametrization(module.%s).dtype: %s",
          tensor_name, tostring(Y.dtype), tensor_name, tostring(X.dtype))
      end
      if X.shape ~= Y.shape then
        U.errorf("Registering a parametrization may not change the shape of the tensor, unless the `unsafe` flag is enabled.\nmodule.%s.shape: %s\nparametrization(module.%s).shape: %s",
          tensor_name, tostring(Y.shape), tensor_name, tostring(X.shape))
      end
      if parametrization.right_inverse then
        local ok, Z = pcall(parametrization.right_inverse, parametrization, X)
        if not ok then
          if not is_not_implemented(Z) then error(Z, 0) end
        else
          if not torch.is_tensor(Z) then
            U.errorf("parametrization.right_inverse must return a tensor. Got: %s", U.typename(Z))
          end
          if Z.dtype ~= Y.dtype then
            U.errorf("The tensor returned by parametrization.right_inverse must have the same dtype as module.%s, unless the `unsafe` flag is enabled.\nmodule.%s.dtype: %s\nreturned dtype: %s",
              tensor_name, tensor_name, tostring(Y.dtype), tostring(Z.dtype))
          end
          if Z.shape ~= Y.shape then
            U.errorf("The tensor returned by parametrization.right_inverse must have the same shape as module.%s, unless the `unsafe` flag is enabled.\nmodule.%s.shape: %s\nreturned shape: %s",
              tensor_name, tensor_name, tostring(Y.shape), tostring(Z.shape))
          end
        end
      end
    end
    plist:append(parametrization)
    plist.unsafe = plist.unsafe or unsafe
  elseif type(tensor_name) == "string" and (module._buffers:has(tensor_name) or module._parameters:has(tensor_name)) then
    local original = module[tensor_name]
    local plist = ParametrizationList({ parametrization }, original, unsafe)
    module[tensor_name] = nil
    if module._buffers:has(tensor_name) then -- a nil buffer stays registered; drop it
      module._buffers:remove(tensor_name)
      module._non_persistent_buffers_set[tensor_name] = nil
    end
    if not P.is_parametrized(module) then
      module.parametrizations = ModuleDict()
      inject(module)
    end
    module.parametrizations[tensor_name] = plist
  else
    U.errorf("Module '%s' does not have a parameter, a buffer, or a parametrized element with name '%s'",
      tostring(module), tostring(tensor_name))
  end
  return module
end

-- remove_parametrizations(module, name[, leave_parametrized]) or (..., {leave_parametrized=false})
function P.remove_parametrizations(module, tensor_name, ...)
  local leave = U.parse("remove_parametrizations", { { "leave_parametrized", true } }, ...).leave_parametrized
  if not P.is_parametrized(module, tensor_name) then
    U.errorf("Module %s does not have a parametrization on %s", tostring(module), tostring(tensor_name))
  end
  local plist = module.parametrizations._modules[tensor_name]
  local original
  if plist.is_tensor then
    original = plist.original
    if leave then
      local _ <close> = torch.no_grad()
      maybe_set(original, plist())
    end
  else
    if not leave then
      U.error("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a sequence of tensors.")
    end
    local t = plist()
    original = t.requires_grad and Parameter(t:detach(), true) or t
  end
  values_of(module)[tensor_name] = nil
  module.parametrizations[tensor_name] = nil
  if cache[module] then cache[module][tensor_name] = nil end
  register_pb(module, tensor_name, original)
  if not P.is_parametrized(module) then
    uninject(module)
    module.parametrizations = nil
  end
  return module
end

-- local _ <close> = parametrize.cached(): within the block each parametrized tensor is
-- computed once (at the first call of its module) and reused
function P.cached()
  cache_depth = cache_depth + 1
  return setmetatable({}, { __close = function()
    cache_depth = cache_depth - 1
    if cache_depth == 0 then cache = setmetatable({}, { __mode = "k" }) end
  end })
end

-- (PyTorch's returns type(module) for any value: a non-module gives its type's name here)
function P.type_before_parametrizations(module)
  if type(module) ~= "table" or module.__class == nil then return U.typename(module) end
  return module.__class
end

-- PyTorch's transfer_parametrizations_and_params is left out.

-- ---- parametrizations.orthogonal ----

local function mT(x) return x:transpose(-2, -1) end

local function batch_shape(x, last)
  local s = {}
  for i = 0, x:dim() - 3 do s[#s + 1] = x:size(i) end
  for _, v in ipairs(last) do s[#s + 1] = v end
  return s
end

-- exp(A) by scaling and squaring of a Taylor series (differentiable through autograd)
local function matrix_exp(A)
  local n = A:size(-1)
  local norm = A:detach():abs():sum(-2):max():item()
  local s = norm > 0.5 and math.ceil(math.log(norm / 0.5, 2)) or 0
  local X = A / (2 ^ s)
  local eye = torch.eye(n, { dtype = A.dtype, device = A.device })
  local E, term = eye + X, X
  for k = 2, 18 do
    term = term:matmul(X) / k
    E = E + term
  end
  for _ = 1, s do E = E:matmul(E) end
  return E
end

-- Q = H_0 H_1 ... H_{k-1}, H_i = I - tau_i v_i v_i^T, v_i = (0.., 1, A[i+1:, i])
local function householder_product(A, tau)
  local n, k = A:size(-2), A:size(-1)
  local opts = { dtype = A.dtype, device = A.device }
  local Q = torch.eye(n, opts):expand(batch_shape(A, { n, n }))
  local idx = torch.arange(n, opts)
  for i = 0, k - 1 do
    local below = (idx:gt(i)):to(A.dtype)
    local e = (idx:eq(i)):to(A.dtype)
    local v = A:select(-1, i) * below + e
    local t = tau:select(-1, i):unsqueeze(-1):unsqueeze(-1)
    Q = Q - t * Q:matmul(v:unsqueeze(-1)):matmul(v:unsqueeze(-2))
  end
  return Q:narrow(-1, 0, k)
end

-- Q factor of a tall A with diag(R) >= 0
local function make_orthogonal(A)
  local Q, R = torch.linalg.qr(A)
  return Q * R:diagonal(0, -2, -1):sign():unsqueeze(-2)
end

local function is_orthogonal(Q)
  local n, k = Q:size(-2), Q:size(-1)
  local Id = torch.eye(k, { dtype = Q.dtype, device = Q.device })
  local eps = 10 * n * torch.finfo(Q.dtype).eps
  return torch.allclose(mT(Q):matmul(Q), Id, 1e-5, eps)
end

local Orthogonal = Module:extend("_Orthogonal")
parametrizations._Orthogonal = Orthogonal

function Orthogonal:__init(weight, orthogonal_map, use_trivialization)
  self.shape = weight.shape
  self.orthogonal_map = orthogonal_map
  self.use_trivialization = use_trivialization
  if use_trivialization then self:register_buffer("base", nil) end
end

function Orthogonal:forward(X)
  local n, k = X:size(-2), X:size(-1)
  local transposed = n < k
  if transposed then X = mT(X); n, k = k, n end
  local Q
  if self.orthogonal_map == "matrix_exp" or self.orthogonal_map == "cayley" then
    X = X:tril()
    if n ~= k then
      X = torch.cat({ X, torch.zeros(batch_shape(X, { n, n - k }), { dtype = X.dtype, device = X.device }) }, -1)
    end
    local A = X - mT(X)
    if self.orthogonal_map == "matrix_exp" then
      Q = matrix_exp(A)
    else -- Cayley retraction (I + A/2)(I - A/2)^{-1}, solved as in PyTorch
      local Id = torch.eye(n, { dtype = A.dtype, device = A.device })
      Q = torch.linalg.solve(Id - A * 0.5, Id + A * 0.5)
    end
    if n ~= k then Q = Q:narrow(-1, 0, k) end
  else
    local A = X:tril(-1)
    local tau = 2 / ((A * A):sum(-2) + 1)
    Q = householder_product(A, tau)
    -- the diagonal of X holds +-1 and gets no gradient (PyTorch casts it to int)
    Q = Q * X:diagonal(0, -2, -1):detach():trunc():unsqueeze(-2)
  end
  if self.use_trivialization then Q = self.base:matmul(Q) end
  if transposed then Q = mT(Q) end
  return Q
end

function Orthogonal:right_inverse(Q)
  local _ <close> = torch.no_grad()
  if Q.shape ~= self.shape then
    U.errorf("Expected a matrix or batch of matrices of shape %s. Got a tensor of shape %s.", tostring(self.shape), tostring(Q.shape))
  end
  local Q_init = Q
  local n, k = Q:size(-2), Q:size(-1)
  local transpose = n < k
  if transpose then Q = mT(Q); n, k = k, n end
  if not self.use_trivialization then
    if self.orthogonal_map == "cayley" or self.orthogonal_map == "matrix_exp" then
      U.error("NotImplementedError: It is not possible to assign to the matrix exponential or the Cayley parametrizations when use_trivialization=False.")
    end
    -- householder needs torch.geqrf, not available here
    U.error("NotImplementedError: assigning to the householder parametrization with use_trivialization=False is not supported here (torch.geqrf is missing).")
  end
  if n == k then
    if not is_orthogonal(Q) then Q = make_orthogonal(Q) else Q = Q:clone() end
  else
    local N = torch.randn(batch_shape(Q, { n, n - k }), { dtype = Q.dtype, device = Q.device })
    Q = make_orthogonal(torch.cat({ Q, N }, -1))
  end
  self.base = Q:contiguous()
  -- (diagonal() is a copy here, not a view, so no fill_ on it)
  local r, c = Q_init:size(-2), Q_init:size(-1)
  local neg_Id = -torch.eye(r, c, { dtype = Q_init.dtype, device = Q_init.device })
  return neg_Id:expand(Q_init.shape):contiguous()
end

local orth_maps = { matrix_exp = true, cayley = true, householder = true }

-- orthogonal(module, name="weight", orthogonal_map=nil, {use_trivialization=true})
function parametrizations.orthogonal(module, ...)
  local o = U.parse("orthogonal", { { "name", "weight" }, { "orthogonal_map" }, { "use_trivialization", true } }, ...)
  local weight = module[o.name]
  if not torch.is_tensor(weight) then
    U.errorf("Module '%s' has no parameter or buffer with name '%s'", tostring(module), o.name)
  end
  if weight:dim() < 2 then
    U.errorf("Expected a matrix or batch of matrices. Got a tensor of %d dimensions.", weight:dim())
  end
  local map = o.orthogonal_map
  if map == nil then map = weight:size(-2) == weight:size(-1) and "matrix_exp" or "householder" end
  if not orth_maps[map] then
    U.errorf('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: %s', tostring(map))
  end
  P.register_parametrization(module, o.name, Orthogonal(weight, map, o.use_trivialization), true)
  return module
end

-- ---- parametrizations.weight_norm ----

-- torch.norm_except_dim(v, 2, dim): dim -1 is the whole tensor
local function norm_except_dim(v, dim)
  if dim == -1 then return v:norm() end
  local dims = {}
  for d = 0, v:dim() - 1 do if d ~= dim then dims[#dims + 1] = d end end
  if #dims == 0 then return v:abs() end
  return (v * v):sum(dims, true):sqrt()
end

local WeightNorm = Module:extend("_WeightNorm")
parametrizations._WeightNorm = WeightNorm

function WeightNorm:__init(dim)
  if dim == nil then dim = -1 end
  self.dim = dim
end

function WeightNorm:forward(weight_g, weight_v)
  return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))
end

function WeightNorm:right_inverse(weight)
  return { norm_except_dim(weight, self.dim), weight }
end

-- weight_norm(module, name="weight", dim=0): original0 = g, original1 = v. PyTorch's
-- load_state_dict compatibility hook for old weight_g/weight_v keys is left out.
function parametrizations.weight_norm(module, ...)
  local o = U.parse("weight_norm", { { "name", "weight" }, { "dim", 0 } }, ...)
  P.register_parametrization(module, o.name, WeightNorm(o.dim), true)
  return module
end

-- ---- parametrizations.spectral_norm ----

local function normalize(v, eps) return v / v:norm():clamp(eps) end

local SpectralNorm = Module:extend("_SpectralNorm")
parametrizations._SpectralNorm = SpectralNorm

function SpectralNorm:__init(weight, n_power_iterations, dim, eps)
  n_power_iterations, dim, eps = n_power_iterations or 1, dim or 0, eps or 1e-12
  local ndim = weight:dim()
  if dim >= ndim or dim < -ndim then
    U.errorf("Dimension out of range (expected to be in range of [-%d, %d] but got %d)", ndim, ndim - 1, dim)
  end
  if n_power_iterations <= 0 then
    U.errorf("Expected n_power_iterations to be positive, but got n_power_iterations=%d", n_power_iterations)
  end
  self.dim = dim >= 0 and dim or dim + ndim
  self.eps = eps
  if ndim > 1 then
    self.n_power_iterations = n_power_iterations
    local W = self:_reshape_weight_to_matrix(weight:detach())
    local opts = { dtype = W.dtype, device = W.device }
    self:register_buffer("_u", normalize(torch.randn(W:size(0), opts), eps))
    self:register_buffer("_v", normalize(torch.randn(W:size(1), opts), eps))
    self:_power_method(W, 15)
  end
end

function SpectralNorm:_reshape_weight_to_matrix(weight)
  if self.dim ~= 0 then weight = weight:movedim(self.dim, 0) end
  return weight:flatten(1)
end

function SpectralNorm:_power_method(W, n)
  local _ <close> = torch.no_grad()
  for _ = 1, n do
    self._u:copy_(normalize(W:matmul(self._v), self.eps))
    self._v:copy_(normalize(mT(W):matmul(self._u), self.eps))
  end
end

function SpectralNorm:forward(weight)
  if weight:dim() == 1 then return normalize(weight, self.eps) end
  local W = self:_reshape_weight_to_matrix(weight)
  if self.training then self:_power_method(W, self.n_power_iterations) end
  local u, v = self._u:clone(), self._v:clone()
  local sigma = u:dot(W:matmul(v))
  return weight / sigma
end

function SpectralNorm:right_inverse(value) return value end

-- spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=nil)
function parametrizations.spectral_norm(module, ...)
  local o = U.parse("spectral_norm",
    { { "name", "weight" }, { "n_power_iterations", 1 }, { "eps", 1e-12 }, { "dim" } }, ...)
  local weight = module[o.name]
  if not torch.is_tensor(weight) then
    U.errorf("Module '%s' has no parameter or buffer with name '%s'", tostring(module), o.name)
  end
  local dim = o.dim
  if dim == nil then
    local nn = torch.nn
    dim = (nn and Module.isinstance_of(module, { nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d })) and 1 or 0
  end
  P.register_parametrization(module, o.name, SpectralNorm(weight, o.n_power_iterations, dim, o.eps))
  return module
end

U.check_all(P, {
  refresh = { "module:Module", plain = true },
  register_parametrization = { "module:Module", "tensor_name:str", "parametrization:Module", plain = true },
  remove_parametrizations = { "module:Module", "tensor_name:str", plain = true },
})
U.check_all(parametrizations, {
  orthogonal = { "module:Module", plain = true }, weight_norm = { "module:Module", plain = true },
  spectral_norm = { "module:Module", plain = true },
})

return P
