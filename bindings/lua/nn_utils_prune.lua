-- nn.utils.prune, as PyTorch's: pruning a parameter `name` moves it to `name_orig`, adds a
-- buffer `name_mask` and a forward pre-hook (the pruning method object itself) that recomputes
-- `name = name_orig * name_mask` before each forward. Pruning it again puts the methods in a
-- PruningContainer, which combines the masks: an unstructured method prunes among the entries
-- still kept (its amount counts those), a structured one among the channels still kept.
-- Methods are classes (BasePruningMethod:extend("Name") with PRUNING_TYPE and compute_mask);
-- Name.apply(module, name, ...) prunes with one; the functions (l1_unstructured, ...) call it.
local torch = require "torch"
local U = require "nn_util"
local Parameter = require "nn_parameter"

local M = {}

-- amount as a count of units out of size: an integer as is, a fraction rounded half to even (Python's round)
local function check_amount(amount)
  if type(amount) ~= "number" then U.errorf("Invalid type for amount: %s. Must be int or float.", type(amount)) end
  if (math.type(amount) == "integer" and amount < 0) or (math.type(amount) == "float" and (amount < 0 or amount > 1)) then
    U.errorf("amount=%s should either be a float in the range [0, 1] or a non-negative integer", U.pystr(amount))
  end
end

local function count_of(amount, size)
  if math.type(amount) == "integer" then
    if amount > size then U.errorf("amount=%d should be smaller than the number of parameters to prune=%d", amount, size) end
    return amount
  end
  local x = amount * size
  local f = math.floor(x)
  if x - f > 0.5 or (x - f == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f)
end

local function wrap_dim(t, dim)
  if math.type(dim) ~= "integer" or dim < -t:dim() or dim >= t:dim() then
    U.errorf("Invalid index %s for tensor of size %s", tostring(dim), tostring(t.shape))
  end
  return dim < 0 and dim + t:dim() or dim
end

local function other_dims(t, dim)
  local others = {}
  for d = 0, t:dim() - 1 do if d ~= dim then others[#others + 1] = d end end
  return others
end

-- a mask keeping the channels `keep` (a 1-D 0/1 tensor) along dim, times default
local function channel_mask(t, dim, keep, default)
  local shape = {}
  for d = 0, t:dim() - 1 do shape[d + 1] = d == dim and t:size(d) or 1 end
  return keep:to(default.dtype):view(shape):expand(t.shape) * default
end

-- a structured method's dim, its channel count n and the number k of channels to prune
local function structured_counts(self, t)
  if t:dim() <= 1 then
    U.errorf("Structured pruning can only be applied to multidimensional tensors. Found tensor of shape %s with %d dims",
      tostring(t.shape), t:dim())
  end
  local dim = wrap_dim(t, self.dim)
  local n = t:size(dim)
  return dim, n, count_of(self.amount, n)
end

-- ---- BasePruningMethod ----

local Base = {}
Base.__index = Base
Base.__name = "BasePruningMethod"
Base._module_path = "torch.nn.utils.prune"
M.BasePruningMethod = Base

local function is_method(v)
  if type(v) ~= "table" then return false end
  local mt = getmetatable(v)
  while mt do
    if mt == Base then return true end
    mt = rawget(mt, "super")
  end
  return false
end
M.is_pruning_method = is_method

function Base:__init() end

function Base:__tostring()
  local cls = getmetatable(self)
  return string.format("<%s.%s object at %s>", cls._module_path, cls.__name, string.format("%p", self))
end

-- the forward pre-hook: module[name] = name_orig * name_mask
function Base:__call(module) module[self._tensor_name] = self:apply_mask(module) end

function Base.compute_mask()
  U.error("a pruning method must define compute_mask(self, t, default_mask)")
end

function Base:apply_mask(module)
  if self._tensor_name == nil then U.errorf("Module %s has to be pruned", module:_get_name()) end
  local orig = module[self._tensor_name .. "_orig"]
  return module[self._tensor_name .. "_mask"]:to(orig.dtype) * orig
end

-- t * mask, with the mask computed from importance_scores (t when not given)
function Base:prune(t, ...)
  local o = U.parse("prune", { { "default_mask" }, { "importance_scores" } }, ...)
  local scores = o.importance_scores or t
  if tostring(scores.shape) ~= tostring(t.shape) then U.error("importance_scores should have the same shape as tensor t") end
  return t * self:compute_mask(scores, o.default_mask or torch.ones_like(t))
end

-- make the pruning permanent: `name` becomes the name_orig Parameter, holding orig * mask
function Base:remove(module)
  local name = self._tensor_name
  if name == nil then U.errorf("Module %s has to be pruned before pruning can be removed", module:_get_name()) end
  local orig, mask = module[name .. "_orig"], module[name .. "_mask"]
  torch.no_grad(function() orig:mul_(mask:to(orig.dtype)) end)
  module[name] = nil
  module[name .. "_orig"] = nil
  module[name .. "_mask"] = nil
  module:register_parameter(name, orig)
end

local function hooks_of(module) return rawget(module, "_forward_pre_hooks") or {} end

-- the pruning hook of module's `name` and its place in the hook list, or nil
local function find_hook(module, name)
  local found
  for i, h in ipairs(hooks_of(module)) do
    if is_method(h.fn) and h.fn._tensor_name == name then
      if found then
        U.errorf("Avoid adding multiple pruning hooks to the same tensor %s of module %s. Use a PruningContainer.",
          name, module:_get_name())
      end
      found = i
    end
  end
  return found and hooks_of(module)[found].fn, found
end

local function drop_hook(module, i)
  local list = hooks_of(module)
  table.remove(list, i)
  if #list == 0 then rawset(module, "_forward_pre_hooks", nil) end
end

-- Cls.apply(module, name, <Cls's arguments>..., {importance_scores = })
local function apply(cls, module, name, ...)
  local args = table.pack(...)
  local scores
  local last = args[args.n]
  if U.is_opts(last) and last.importance_scores ~= nil then
    local rest = {}
    for k, v in pairs(last) do if k ~= "importance_scores" then rest[k] = v end end
    scores, args[args.n] = last.importance_scores, rest
  end
  local old, at = find_hook(module, name)
  local method = cls(table.unpack(args, 1, args.n))
  method._tensor_name = name
  if old then
    drop_hook(module, at)
    if getmetatable(old) == M.PruningContainer then
      old:add_pruning_method(method)
      method = old
    else
      method = M.PruningContainer(old, method)
    end
  end
  local orig = module[name]
  if not old and not Parameter.is(orig) then
    U.errorf("Parameter '%s' of module %s has to be a parameter to be pruned", name, module:_get_name())
  end
  scores = scores or orig
  if not torch.is_tensor(scores) or tostring(scores.shape) ~= tostring(orig.shape) then
    U.errorf("importance_scores should have the same shape as parameter %s of %s", name, module:_get_name())
  end
  local default
  if old then
    default = module[name .. "_mask"]:detach():clone()
  else
    module[name] = nil
    module:register_parameter(name .. "_orig", orig)
    default = torch.ones_like(orig)
  end
  local ok, mask = pcall(torch.no_grad, function() return method:compute_mask(scores:detach(), default):detach() end)
  if not ok then -- as it was before (a container lost the old hook, as in PyTorch)
    if not old then
      module[name .. "_orig"] = nil
      module:register_parameter(name, orig)
    end
    error(mask, 0)
  end
  module:register_buffer(name .. "_mask", mask)
  module[name] = method:apply_mask(module)
  module:register_forward_pre_hook(method)
  return method
end

-- local Name = prune.BasePruningMethod:extend("Name"); Name.PRUNING_TYPE = "unstructured";
-- function Name:compute_mask(t, default_mask) ... end; Name.apply(module, name, ...)
function Base:extend(name)
  local cls = U.extend_class(self, name)
  cls._module_path = "__main__"
  cls.apply = function(...) return apply(cls, ...) end
  return cls
end

local function builtin(name, kind, init)
  local cls = Base:extend(name)
  cls._module_path = "torch.nn.utils.prune"
  cls.PRUNING_TYPE = kind
  cls.__init = init
  M[name] = cls
  return cls
end

-- ---- PruningContainer ----

local Container = builtin("PruningContainer", nil, function(self, ...)
  self._tensor_name = nil
  for i = 1, select("#", ...) do self:add_pruning_method((select(i, ...))) end
end)

function Container:add_pruning_method(method)
  if not is_method(method) then U.errorf("%s is not a BasePruningMethod subclass", U.typename(method)) end
  if #self == 0 and self._tensor_name == nil then self._tensor_name = method._tensor_name end
  if self._tensor_name ~= method._tensor_name then
    U.errorf("Can only add pruning methods acting on the parameter named '%s' to PruningContainer %s. Found '%s'",
      tostring(self._tensor_name), tostring(self), tostring(method._tensor_name))
  end
  rawset(self, #self + 1, method)
end

-- the last method's mask computed on the part of t that default_mask still keeps
function Container:compute_mask(t, default_mask)
  local method = self[#self]
  local kind = method.PRUNING_TYPE
  if kind == "global" then return method:compute_mask(t, default_mask) end
  if kind == "unstructured" then
    local flat = default_mask:reshape(-1)
    local idx = flat:eq(1):nonzero():view(-1)
    local new = flat:clone()
    if idx:numel() > 0 then
      new:index_copy_(0, idx, method:compute_mask(t:reshape(-1):index_select(0, idx), flat:index_select(0, idx)):to(new.dtype))
    end
    return new:view(default_mask.shape)
  end
  if kind ~= "structured" then U.errorf("Unrecognized PRUNING_TYPE %s", tostring(kind)) end
  if method.dim == nil then
    U.error('Pruning methods of PRUNING_TYPE "structured" need to have the attribute `dim` defined.')
  end
  local dim = wrap_dim(t, method.dim)
  local idx = default_mask:sum(other_dims(t, dim)):ne(0):nonzero():view(-1)
  local new = default_mask:clone()
  if idx:numel() > 0 then
    new:index_copy_(dim, idx, method:compute_mask(t:index_select(dim, idx), default_mask:index_select(dim, idx)):to(new.dtype))
  end
  return new
end

-- ---- the methods ----

local function amount_init(cname, extra)
  return function(self, ...)
    local spec = { { "amount", U.REQUIRED } }
    for _, s in ipairs(extra or {}) do spec[#spec + 1] = s end
    local o = U.parse(cname, spec, ...)
    check_amount(o.amount)
    for k, v in pairs(o) do self[k] = v end
  end
end

local Identity = builtin("Identity", "unstructured")
function Identity.compute_mask(_, _, default_mask) return default_mask end

local RandomUnstructured = builtin("RandomUnstructured", "unstructured", amount_init("RandomUnstructured"))
function RandomUnstructured:compute_mask(t, default_mask)
  local k, m = count_of(self.amount, t:numel()), default_mask:clone()
  if k > 0 then m:view(-1):index_fill_(0, select(2, torch.rand_like(t):reshape(-1):topk(k)), 0) end
  return m
end

local L1Unstructured = builtin("L1Unstructured", "unstructured", amount_init("L1Unstructured"))
function L1Unstructured:compute_mask(t, default_mask)
  local k, m = count_of(self.amount, t:numel()), default_mask:clone()
  if k > 0 then m:view(-1):index_fill_(0, select(2, t:abs():reshape(-1):topk(k, 0, false)), 0) end
  return m
end

local RandomStructured = builtin("RandomStructured", "structured", amount_init("RandomStructured", { { "dim", -1 } }))
function RandomStructured:compute_mask(t, default_mask)
  local dim, n, k = structured_counts(self, t)
  if k == 0 then return default_mask end
  -- the k channels with the lowest random numbers go
  local prob = torch.rand(n)
  local kept = prob:gt((prob:kthvalue(k)))
  return channel_mask(t, dim, kept:to(t.device), default_mask)
end

local LnStructured = builtin("LnStructured", "structured",
  amount_init("LnStructured", { { "n", U.REQUIRED }, { "dim", -1 } }))
function LnStructured:compute_mask(t, default_mask)
  local dim, n, k = structured_counts(self, t)
  if k == 0 then return default_mask end
  local ord = self.n == "fro" and 2 or self.n
  local norms = torch.linalg.vector_norm(t, ord, other_dims(t, dim))
  local kept = torch.zeros(n, { device = t.device })
  if n - k > 0 then kept:index_fill_(0, select(2, norms:topk(n - k)), 1) end
  return channel_mask(t, dim, kept, default_mask)
end

local CustomFromMask = builtin("CustomFromMask", "global", function(self, mask) self.mask = mask end)
function CustomFromMask:compute_mask(_, default_mask)
  if tostring(default_mask.shape) ~= tostring(self.mask.shape) then
    U.error("CustomFromMask: the mask must have the shape of the parameter")
  end
  return default_mask * self.mask:to(default_mask.dtype)
end

-- ---- the functions ----

local function with_amount(fname, cls, extra)
  return function(module, name, ...)
    local spec = { { "amount", U.REQUIRED } }
    for _, s in ipairs(extra or {}) do spec[#spec + 1] = s end
    spec[#spec + 1] = { "importance_scores" }
    local o = U.parse(fname, spec, ...)
    local args = {}
    for i, s in ipairs(spec) do args[i] = o[s[1]] end
    args[#spec] = { importance_scores = o.importance_scores }
    cls.apply(module, name, table.unpack(args, 1, #spec))
    return module
  end
end

function M.identity(module, name)
  Identity.apply(module, name)
  return module
end
M.random_unstructured = with_amount("random_unstructured", RandomUnstructured)
M.l1_unstructured = with_amount("l1_unstructured", L1Unstructured)
M.random_structured = with_amount("random_structured", RandomStructured, { { "dim", U.REQUIRED } })
M.ln_structured = with_amount("ln_structured", LnStructured, { { "n", U.REQUIRED }, { "dim", U.REQUIRED } })
function M.custom_from_mask(module, name, mask)
  CustomFromMask.apply(module, name, mask)
  return module
end

-- a module and a parameter name first, as PyTorch's functions take them
for _, fname in ipairs({ "identity", "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
  "custom_from_mask" }) do
  M[fname] = U.checked(fname, { "module:Module", "name:str", plain = true }, M[fname])
end

local function_classes = { [M.identity] = Identity, [M.random_unstructured] = RandomUnstructured,
  [M.l1_unstructured] = L1Unstructured, [M.random_structured] = RandomStructured, [M.ln_structured] = LnStructured,
  [M.custom_from_mask] = CustomFromMask }

-- global_unstructured({{module, name}, ...}, {pruning_method = prune.L1Unstructured, amount = ,
-- importance_scores = {scores of each pair}}); pruning_method may be positional, a class or
-- one of prune's functions (prune.l1_unstructured); the other keys go to its constructor
function M.global_unstructured(parameters, ...)
  local method_cls, kwargs = ...
  if U.is_opts(method_cls) then method_cls, kwargs = nil, method_cls end
  kwargs = kwargs or {}
  local rest = {}
  for k, v in pairs(kwargs) do
    if k ~= "pruning_method" and k ~= "importance_scores" then rest[k] = v end
  end
  method_cls = function_classes[method_cls or kwargs.pruning_method] or method_cls or kwargs.pruning_method
  if method_cls == nil then U.error("global_unstructured() missing required argument: 'pruning_method'") end
  if type(parameters) ~= "table" then U.error("global_unstructured(): parameters is not an Iterable") end
  local mt = getmetatable(method_cls)
  if type(method_cls) ~= "function" and not (mt and mt.__call) then U.errorf("'%s' object is not callable", U.typename(method_cls)) end
  for _, pair in ipairs(parameters) do -- Python's `for module, name in parameters` and getattr(module, name)
    local n = type(pair) == "string" and #pair or type(pair) == "table" and #pair or nil
    if n == nil then U.errorf("cannot unpack non-iterable %s object", U.typename(pair)) end
    if n < 2 then U.errorf("not enough values to unpack (expected 2, got %d)", n) end
    if n > 2 then U.error("too many values to unpack (expected 2)") end
    local module, name = pair[1], pair[2]
    if type(module) ~= "table" or module[name] == nil then
      U.errorf("'%s' object has no attribute '%s'", U.typename(module), tostring(name))
    end
  end
  local method = method_cls(rest)
  if not is_method(method) then U.error("global_unstructured: pruning_method must be a BasePruningMethod class") end
  if method.PRUNING_TYPE ~= "unstructured" then
    U.errorf('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method %s of type %s',
      getmetatable(method).__name, tostring(method.PRUNING_TYPE))
  end
  method._tensor_name = "temp"
  local container = M.PruningContainer(method)
  local scores, masks, sizes = {}, {}, {}
  for i, pair in ipairs(parameters) do
    local module, name = pair[1], pair[2]
    local s = kwargs.importance_scores and kwargs.importance_scores[i] or module[name]
    scores[i] = s:detach():reshape(-1)
    masks[i] = find_hook(module, name) and module[name .. "_mask"]:reshape(-1) or torch.ones_like(scores[i])
    sizes[i] = scores[i]:numel()
  end
  local final
  do
    local _ <close> = torch.no_grad()
    final = container:compute_mask(torch.cat(scores), torch.cat(masks))
  end
  local start = 0
  for i, pair in ipairs(parameters) do
    local module, name = pair[1], pair[2]
    local p = find_hook(module, name) and module[name .. "_orig"] or module[name]
    M.custom_from_mask(module, name, final:narrow(0, start, sizes[i]):view(p.shape))
    start = start + sizes[i]
  end
end

-- make the pruning of module's `name` permanent
function M.remove(module, name)
  local hook, at = find_hook(module, name)
  if not hook then
    U.errorf("Parameter '%s' of module %s has to be pruned before pruning can be removed", name, module:_get_name())
  end
  hook:remove(module)
  drop_hook(module, at)
  return module
end

function M.is_pruned(module)
  for _, m in ipairs(module:modules()) do
    for _, h in ipairs(hooks_of(m)) do
      if is_method(h.fn) then return true end
    end
  end
  return false
end

M.remove = U.checked("remove", { "module:Module", "name:str", plain = true }, M.remove)
M.is_pruned = U.checked("is_pruned", { "module:Module", plain = true }, M.is_pruned)

return M
