-- An optimizer's state_dict() printed as PyTorch prints it:
--   {'state': {0: {'step': tensor(1.), 'exp_avg': ...}}, 'param_groups': [{'lr': 0.001, ..., 'params': [0, 1]}]}
-- The tables stay plain Lua tables (sd.state[0].exp_avg, sd.param_groups[1].lr, pairs, torch.save);
-- each gets a metatable holding only __tostring and the key order, with no __name, so torch.save
-- and copies treat them as plain tables (M.is(v) tells them apart where it matters).
-- Key order: PyTorch 2.11's, read from each optimizer's printed state_dict (its defaults dict's
-- order, then 'params'); keys a group holds beyond the list come after it, sorted. A listed key
-- the group holds as nil is an option nnrepl keeps as None (foreach, fused, line_search_fn,
-- adjust_lr_fn): it prints as None, as PyTorch's does.
local torch = require "torch"
local U = require "nn_util"

local M = {}

local GROUP_KEYS = {
  SGD = { "lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "foreach", "differentiable", "fused" },
  Adam = { "lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable", "differentiable", "fused",
    "decoupled_weight_decay" },
  RMSprop = { "lr", "momentum", "alpha", "eps", "centered", "weight_decay", "capturable", "foreach", "maximize", "differentiable" },
  Adagrad = { "lr", "lr_decay", "eps", "weight_decay", "initial_accumulator_value", "foreach", "maximize", "differentiable", "fused" },
  Adadelta = { "lr", "rho", "eps", "weight_decay", "maximize", "capturable", "foreach", "differentiable" },
  Adamax = { "lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable", "capturable" },
  NAdam = { "lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "maximize", "foreach", "capturable",
    "differentiable" },
  RAdam = { "lr", "betas", "eps", "weight_decay", "maximize", "foreach", "capturable", "decoupled_weight_decay", "differentiable" },
  Rprop = { "lr", "etas", "step_sizes", "foreach", "maximize", "differentiable", "capturable" },
  ASGD = { "lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable" },
  LBFGS = { "lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn" },
  Adafactor = { "lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize" },
  Muon = { "lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn" },
}
GROUP_KEYS.AdamW = GROUP_KEYS.Adam

-- each parameter's state, in the order PyTorch's step creates it
local STATE_KEYS = {
  SGD = { "momentum_buffer" }, Adam = { "step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq" },
  RMSprop = { "step", "square_avg", "momentum_buffer", "grad_avg" }, Adagrad = { "step", "sum" },
  Adadelta = { "step", "square_avg", "acc_delta" }, Adamax = { "step", "exp_avg", "exp_inf" },
  NAdam = { "step", "mu_product", "exp_avg", "exp_avg_sq" }, RAdam = { "step", "exp_avg", "exp_avg_sq" },
  Rprop = { "step", "prev", "step_size" }, ASGD = { "step", "eta", "mu", "ax" }, Muon = { "momentum_buffer" },
}
STATE_KEYS.AdamW = STATE_KEYS.Adam

local function key_less(a, b)
  if type(a) ~= type(b) then return type(a) == "number" end
  return a < b
end

-- the listed keys first (all of them when all_listed), then the others sorted
local function ordered_keys(t, listed, all_listed, skip)
  local out, seen = {}, { [skip or false] = true }
  for _, k in ipairs(listed or {}) do
    if all_listed or rawget(t, k) ~= nil then out[#out + 1] = k end
    seen[k] = true
  end
  local rest = {}
  for k in next, t do
    if not seen[k] then rest[#rest + 1] = k end
  end
  table.sort(rest, key_less)
  for _, k in ipairs(rest) do out[#out + 1] = k end
  return out
end

local repr

-- a Lua list as a Python tuple (holes are None: Adafactor's eps = (None, 0.001))
local function tuple(v)
  local n = 0
  for k in next, v do
    if math.type(k) == "integer" and k > n then n = k end
  end
  local parts = {}
  for i = 1, n do parts[i] = repr(v[i]) end
  return "(" .. table.concat(parts, ", ") .. (n == 1 and ",)" or ")")
end

local function dict(t, keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = repr(k) .. ": " .. repr(rawget(t, k)) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function repr(v)
  if type(v) == "string" then return require("pyformat").repr(v) end
  if type(v) == "number" and math.type(v) == "float" then return torch.optim._pyrepr(v) end
  if type(v) ~= "table" or torch.is_tensor(v) or getmetatable(v) ~= nil then return U.pystr(v) end
  for k in next, v do
    if not (math.type(k) == "integer" and k >= 1) then return dict(v, ordered_keys(v)) end
  end
  return tuple(v)
end

local function mark(t, tostring_fn)
  return setmetatable(t, { __tostring = tostring_fn, _pydict = true })
end

function M.is(v) local mt = getmetatable(v); return mt ~= nil and rawget(mt, "_pydict") == true end

-- the ordered key lists of an optimizer class (or its nearest ancestor that has them)
local function lists_of(cls)
  while cls do
    local name = rawget(cls, "__name")
    if GROUP_KEYS[name] then return GROUP_KEYS[name], STATE_KEYS[name] end
    cls = rawget(cls, "super")
  end
end

local function list_str(l)
  local parts = {}
  for i, x in ipairs(l) do parts[i] = repr(x) end
  return "[" .. table.concat(parts, ", ") .. "]"
end

-- sd = {state = {[id] = {...}}, param_groups = {{...}, ...}} made by optimizer `opt`: marked in place
function M.wrap(sd, opt)
  local group_keys, state_keys = lists_of(getmetatable(opt))
  local function group_str(g)
    local keys = ordered_keys(g, group_keys, true, "params")
    local s = dict(g, keys)
    if rawget(g, "params") == nil then return s end
    return s:sub(1, -2) .. (#keys > 0 and ", " or "") .. "'params': " .. list_str(g.params) .. "}"
  end
  for _, g in ipairs(sd.param_groups) do mark(g, group_str) end
  mark(sd.param_groups, list_str)
  local function entry_str(e)
    local listed = state_keys or { "step" }
    return dict(e, ordered_keys(e, listed))
  end
  for _, e in next, sd.state do
    if type(e) == "table" and getmetatable(e) == nil then mark(e, entry_str) end
  end
  mark(sd.state, function(s) return dict(s, ordered_keys(s)) end)
  return mark(sd, function(t) return dict(t, ordered_keys(t, { "state", "param_groups" })) end)
end

-- A deep copy of plain tables and of these marked ones (as plain tables); other values shared.
function M.copy_plain(v)
  if type(v) ~= "table" or (getmetatable(v) ~= nil and not M.is(v)) then return v end
  local t = {}
  for k, x in next, v do t[k] = M.copy_plain(x) end
  return t
end

return M
