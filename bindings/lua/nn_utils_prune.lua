-- nn.utils.prune, as PyTorch's: pruning a parameter `name` moves it to `name_orig`, adds a
-- buffer `name_mask` and recomputes `name = name_orig * name_mask` before each forward.
-- Pruning it again combines the masks: an unstructured method prunes among the entries
-- still kept (its amount counts those), a structured one among the channels still kept.
local torch = require "torch"
local U = require "nn_util"
local Parameter = require "nn_parameter"

local M = {}

-- amount as a count of units out of size: an integer as is, a fraction rounded half to even (Python's round)
local function count_of(amount, size)
  if type(amount) ~= "number" then U.errorf("Invalid type for amount: %s. Must be int or float.", type(amount)) end
  if math.type(amount) == "integer" then
    if amount < 0 then
      U.errorf("amount=%d should either be a float in the range [0, 1] or a non-negative integer", amount)
    end
    if amount > size then U.errorf("amount=%d should be smaller than the number of parameters to prune=%d", amount, size) end
    return amount
  end
  if amount < 0 or amount > 1 then
    U.errorf("amount=%s should either be a float in the range [0, 1] or a non-negative integer", U.pystr(amount))
  end
  local x = amount * size
  local f = math.floor(x)
  if x - f > 0.5 or (x - f == 0.5 and f % 2 == 1) then f = f + 1 end
  return math.tointeger(f)
end

-- a mask keeping the channels `keep` (a 1-D 0/1 tensor) along dim, times default
local function channel_mask(t, dim, keep, default)
  local shape = {}
  for d = 0, t:dim() - 1 do shape[d + 1] = d == dim and t:size(d) or 1 end
  return keep:to(default.dtype):view(shape):expand(t.shape) * default
end

local function check_dim(t, dim)
  if math.type(dim) ~= "integer" or dim < -t:dim() or dim >= t:dim() then
    U.errorf("Invalid dim %s for a tensor with %d dimensions", tostring(dim), t:dim())
  end
  return dim < 0 and dim + t:dim() or dim
end

-- methods: kind ("unstructured", "structured" or "global") and mask(t, default_mask, o)
local methods = {}
methods.identity = { kind = "unstructured", mask = function(_, default) return default end }
methods.random_unstructured = { kind = "unstructured", mask = function(t, default, o)
  local k, m = count_of(o.amount, t:numel()), default:clone()
  if k > 0 then m:view(-1):index_fill_(0, select(2, torch.rand_like(t):reshape(-1):topk(k)), 0) end
  return m
end }
methods.l1_unstructured = { kind = "unstructured", mask = function(t, default, o)
  local k, m = count_of(o.amount, t:numel()), default:clone()
  if k > 0 then m:view(-1):index_fill_(0, select(2, t:abs():reshape(-1):topk(k, 0, false)), 0) end
  return m
end }
methods.random_structured = { kind = "structured", mask = function(t, default, o)
  local dim = check_dim(t, o.dim)
  local n = t:size(dim)
  local keep = n - count_of(o.amount, n)
  local prob = torch.rand(n)
  local kept = keep == 0 and torch.zeros(n) or prob:le((prob:kthvalue(keep)))
  return channel_mask(t, dim, kept:to(t.device), default)
end }
methods.ln_structured = { kind = "structured", mask = function(t, default, o)
  local dim = check_dim(t, o.dim)
  local n = t:size(dim)
  local keep = n - count_of(o.amount, n)
  local others = {}
  for d = 0, t:dim() - 1 do if d ~= dim then others[#others + 1] = d end end
  local ord = o.n == "fro" and 2 or o.n
  local norms = #others == 0 and t:abs() or torch.linalg.vector_norm(t, ord, others)
  local kept = torch.zeros(n, { device = t.device })
  if keep > 0 then kept:index_fill_(0, select(2, norms:topk(keep)), 1) end
  return channel_mask(t, dim, kept, default)
end }
methods.custom_from_mask = { kind = "global", mask = function(_, default, o) return default * o.mask:to(default.dtype) end }
for name, m in pairs(methods) do m.name = name end

-- the new mask of a parameter already pruned with `old`, as PyTorch's PruningContainer
local function combine(method, t, old, o)
  if method.kind == "global" then return method.mask(t, old, o) end
  if method.kind == "unstructured" then
    local flat = old:reshape(-1)
    local idx = flat:ne(0):nonzero():view(-1)
    local new = torch.zeros_like(flat)
    if idx:numel() > 0 then
      new:scatter_(0, idx, method.mask(t:reshape(-1):index_select(0, idx), flat:index_select(0, idx), o))
    end
    return new:view(old.shape)
  end
  local dim = check_dim(t, o.dim)
  local others = {}
  for d = 0, t:dim() - 1 do if d ~= dim then others[#others + 1] = d end end
  local alive = #others == 0 and old:ne(0) or old:ne(0):to(old.dtype):sum(others):ne(0)
  local idx = alive:nonzero():view(-1)
  local new = torch.zeros_like(old)
  if idx:numel() > 0 then
    local part = method.mask(t:index_select(dim, idx), old:index_select(dim, idx), o)
    for j, c in ipairs(idx:tolist()) do new:select(dim, c):copy_(part:select(dim, j - 1)) end
  end
  return new
end

local function registry(module)
  local reg = rawget(module, "_pruned")
  if not reg then
    reg = {}
    rawset(module, "_pruned", reg)
  end
  return reg
end

local function apply(module, name, method, o, scores)
  local reg = registry(module)
  local orig, default
  if reg[name] then
    orig, default = module[name .. "_orig"], module[name .. "_mask"]
  else
    orig = module[name]
    if not Parameter.is(orig) then
      U.errorf("Parameter '%s' of module %s has to be a parameter to be pruned", name, module:_get_name())
    end
    default = torch.ones_like(orig)
  end
  scores = scores or orig
  if not torch.is_tensor(scores) or tostring(scores.shape) ~= tostring(orig.shape) then
    U.errorf("importance_scores should have the same shape as parameter %s of %s", name, module:_get_name())
  end
  local mask
  do
    local _ <close> = torch.no_grad()
    mask = (reg[name] and combine(method, scores:detach(), default, o) or method.mask(scores:detach(), default, o)):detach()
  end
  if not reg[name] then
    module[name] = nil
    module:register_parameter(name .. "_orig", orig)
    reg[name] = { handle = module:register_forward_pre_hook(function(m) m[name] = m[name .. "_orig"] * m[name .. "_mask"] end) }
  end
  module:register_buffer(name .. "_mask", mask)
  module[name] = orig * mask
  return module
end

local function with_amount(fname, spec_tail)
  return function(module, name, ...)
    local spec = { { "amount", U.REQUIRED } }
    for _, s in ipairs(spec_tail or {}) do spec[#spec + 1] = s end
    spec[#spec + 1] = { "importance_scores" }
    local o = U.parse(fname, spec, ...)
    return apply(module, name, methods[fname], o, o.importance_scores)
  end
end

function M.identity(module, name) return apply(module, name, methods.identity, {}) end
M.random_unstructured = with_amount("random_unstructured")
M.l1_unstructured = with_amount("l1_unstructured")
M.random_structured = with_amount("random_structured", { { "dim", U.REQUIRED } })
M.ln_structured = with_amount("ln_structured", { { "n", U.REQUIRED }, { "dim", U.REQUIRED } })
function M.custom_from_mask(module, name, mask) return apply(module, name, methods.custom_from_mask, { mask = mask }) end

-- global_unstructured({{module, name}, ...}, prune.l1_unstructured, {amount = , importance_scores = })
function M.global_unstructured(parameters, pruning_method, opts)
  opts = opts or {}
  local method
  for fname, m in pairs(methods) do
    if M[fname] == pruning_method then method = m end
  end
  if not method then U.error("global_unstructured: pruning_method must be one of prune's methods") end
  if method.kind ~= "unstructured" then
    U.errorf('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method %s of type %s', method.name, method.kind)
  end
  local scores, masks, sizes = {}, {}, {}
  for i, pair in ipairs(parameters) do
    local module, name = pair[1], pair[2]
    local s = opts.importance_scores and opts.importance_scores[i] or module[name]
    local pruned = rawget(module, "_pruned")
    scores[i] = s:detach():reshape(-1)
    masks[i] = pruned and pruned[name] and module[name .. "_mask"]:reshape(-1) or torch.ones_like(scores[i])
    sizes[i] = scores[i]:numel()
  end
  local final
  do
    local _ <close> = torch.no_grad()
    final = combine(method, torch.cat(scores), torch.cat(masks), opts)
  end
  local start = 0
  for i, pair in ipairs(parameters) do
    local module, name = pair[1], pair[2]
    local p = rawget(module, "_pruned") and module[name .. "_orig"] or module[name]
    M.custom_from_mask(module, name, final:narrow(0, start, sizes[i]):view(p.shape))
    start = start + sizes[i]
  end
end

-- make the pruning permanent: `name` is the same Parameter as name_orig, holding orig * mask
function M.remove(module, name)
  local reg = rawget(module, "_pruned")
  if not (reg and reg[name]) then
    U.errorf("Parameter '%s' of module %s has to be pruned before pruning can be removed", name, module:_get_name())
  end
  reg[name].handle.remove()
  reg[name] = nil
  if next(reg) == nil then rawset(module, "_pruned", nil) end
  local orig, mask = module[name .. "_orig"], module[name .. "_mask"]
  torch.no_grad(function() orig:mul_(mask) end)
  module[name] = nil
  module[name .. "_orig"] = nil
  module[name .. "_mask"] = nil
  module:register_parameter(name, orig)
  return module
end

function M.is_pruned(module)
  for _, m in ipairs(module:modules()) do
    if rawget(m, "_pruned") then return true end
  end
  return false
end

return M
