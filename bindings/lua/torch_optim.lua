-- torch.optim: Optimizer and SGD, Adam, AdamW, RMSprop, Adagrad with PyTorch 2.x's
-- defaults, checks, param groups, state and state_dict layout. Each step is one
-- fused engine pass per param group (torch._optim, bindings/optim.c); params
-- whose .grad is nil are skipped. torch.optim.lr_scheduler is optim_lr_scheduler.lua.
--
--   local opt = optim.SGD(model:parameters(), {lr=0.01, momentum=0.9})
--   optim.Adam({{params=m1:parameters()}, {params=m2:parameters(), lr=1e-4}}, {lr=1e-3})
--   opt:zero_grad(); loss:backward(); opt:step()
--
-- foreach, fused, capturable and differentiable are accepted and kept in the groups as
-- PyTorch does; every step is the same fused engine pass whatever they say.
-- param_groups is a Lua list of tables holding `params` and every option; the
-- options are read at each step, so edits (group.lr = ...) take effect. state is
-- keyed by the param tensors. state_dict() is PyTorch's layout: {state = {[0] =
-- {...}, ...}, param_groups = {{lr=..., params={0, 1, ...}}, ...}} with integer
-- param ids in order; load_state_dict copies the tensors it loads (PyTorch aliases
-- them), cast to each param's dtype and device (the step counters stay as they are).
local torch = require "torch"
local C = torch._optim

local optim = torch.optim or {}
torch.optim = optim

-- ---- formatting values as Python prints them ----

-- repr of a float: the shortest digits that read back, Python's switch to exponents
local function float_repr(x)
  if x ~= x then return "nan" end
  if x == math.huge then return "inf" elseif x == -math.huge then return "-inf" end
  if x == 0 then return (1 / x < 0) and "-0.0" or "0.0" end
  local p = 17
  for q = 1, 17 do
    if tonumber(string.format("%." .. q .. "g", x)) == x then p = q; break end
  end
  local s = string.format("%." .. (p - 1) .. "e", x)
  local m, ex = s:match("^(.-)e([-+]%d+)$")
  local e = tonumber(ex)
  if e < -4 or e >= 16 then
    m = m:gsub("%.?0+$", "")
    return string.format("%se%s%02d", m, e < 0 and "-" or "+", math.abs(e))
  end
  s = string.format("%." .. math.max(p - 1 - e, 0) .. "f", x)
  if not s:find("%.") then s = s .. ".0" end
  return s
end

local function pyrepr(v)
  if v == nil then return "None" end
  if type(v) == "boolean" then return v and "True" or "False" end
  if math.type(v) == "float" then return float_repr(v) end
  if type(v) == "table" and not torch.is_tensor(v) then
    local parts = {}
    for i = 1, #v do parts[i] = pyrepr(v[i]) end
    return "(" .. table.concat(parts, ", ") .. (#v == 1 and ",)" or ")")
  end
  return tostring(v)
end
optim._pyrepr = pyrepr

local function fail(fmt, ...) require("nn_util").errorf(fmt, ...) end

local function typename(v)
  if torch.is_tensor(v) then return v:type() end
  if type(v) == "number" then return math.type(v) == "integer" and "int" or "float" end
  return type(v)
end

-- A deep copy of plain tables and of a state_dict's (tensors and other values shared).
local SD = require "optim_state_dict"
local copy_plain = SD.copy_plain

-- ---- Optimizer ----

local Optimizer = {}
Optimizer.__index = Optimizer
Optimizer.__name = "Optimizer"
optim.Optimizer = Optimizer

-- local MyOpt = optim.Optimizer:extend("MyOpt"); function MyOpt:__init(params, opts) ... end
Optimizer.extend = require("nn_util").extend_class

-- Lookups by another Lua object for the same tensor still find its state.
local state_mt = {
  __index = function(t, k)
    if not torch.is_tensor(k) then return nil end
    local id = C.id(k)
    for p, s in next, t do
      if torch.is_tensor(p) and C.id(p) == id then return s end
    end
    return nil
  end,
}

-- PyTorch's Optimizer.__init__(params, defaults)
function Optimizer:__init(params, defaults)
  self.defaults = defaults or {}
  self.state = setmetatable({}, state_mt)
  self.param_groups = {}
  if torch.is_tensor(params) then
    fail("params argument given to the optimizer should be an iterable of Tensors or dicts, but got %s", typename(params))
  end
  if type(params) == "function" then -- an iterator
    local list = {}
    for p in params do list[#list + 1] = p end
    params = list
  end
  if type(params) ~= "table" then
    fail("params argument given to the optimizer should be an iterable of Tensors or dicts, but got %s", typename(params))
  end
  if #params == 0 then fail("optimizer got an empty parameter list") end
  local groups = params
  local first = params[1]
  if not (type(first) == "table" and not torch.is_tensor(first) and first.params ~= nil) then
    groups = { { params = params } }
  end
  for _, g in ipairs(groups) do self:add_param_group(g) end
end

function Optimizer:add_param_group(group)
  if type(group) ~= "table" or torch.is_tensor(group) then
    fail("param_group must be a dict, but got %s", typename(group))
  end
  local params = group.params
  if params == nil then fail("param_group must have a 'params' entry") end
  local list, names = {}, nil
  if torch.is_tensor(params) then
    list[1] = params
  else
    if type(params) == "function" then
      for p in params do list[#list + 1] = p end
    elseif type(params) == "table" then
      for i = 1, #params do list[i] = params[i] end
    else
      fail("optimizer can only optimize Tensors, but one of the params is %s", typename(params))
    end
  end
  for i, p in ipairs(list) do -- named parameters: {name, tensor} pairs
    if type(p) == "table" and not torch.is_tensor(p) and type(p[1]) == "string" then
      names = names or {}
      names[i] = p[1]
      list[i] = p[2]
    elseif names then
      fail("all optimizer params should be with/without names. Some param names are missing")
    end
  end
  for _, p in ipairs(list) do
    if not torch.is_tensor(p) then
      fail("optimizer can only optimize Tensors, but one of the params is %s", typename(p))
    end
    if not self.defaults.differentiable and not (p.is_leaf or p.retains_grad) then
      fail("can't optimize a non-leaf Tensor")
    end
  end
  group.params = list
  if names then group.param_names = names end
  for k, v in pairs(self.defaults) do
    if group[k] == nil then group[k] = copy_plain(v) end
  end
  local seen = {}
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do seen[C.id(p)] = true end
  end
  for _, p in ipairs(list) do
    if seen[C.id(p)] then fail("some parameters appear in more than one parameter group") end
  end
  self.param_groups[#self.param_groups + 1] = group
  if self._init_group_state then self:_init_group_state(group) end
end

-- zero_grad() / zero_grad({set_to_none=false}) / zero_grad(false)
function Optimizer:zero_grad(opts)
  local to_none = true
  if type(opts) == "boolean" then
    to_none = opts
  elseif type(opts) == "table" then
    for k in pairs(opts) do
      if k ~= "set_to_none" then fail("zero_grad() got an unexpected keyword argument '%s'", tostring(k)) end
    end
    if opts.set_to_none ~= nil then to_none = opts.set_to_none end
  end
  for _, g in ipairs(self.param_groups) do C.zero_grad(g.params, to_none) end
end

-- step(closure): the closure (optional) runs with grad enabled; the update with it off.
-- step({found_inf = f, grad_scale = s}): GradScaler's step (see _step_with_found_inf below).
function Optimizer:step(closure)
  if type(closure) == "table" and getmetatable(closure) == nil and closure.found_inf ~= nil then
    return self:_step_with_found_inf(closure.found_inf, closure.grad_scale) -- GradScaler's step({found_inf=, grad_scale=})
  end
  local loss
  if closure ~= nil then loss = torch.enable_grad(closure) end
  local update = self._update
  if not update then fail("%s does not implement step()", getmetatable(self).__name) end
  for _, g in ipairs(self.param_groups) do update(self, g) end
  return loss
end

-- GradScaler's step, opt:step({found_inf = f, grad_scale = s}) (the optimizers defined here
-- are one fused pass, so they all take it: _step_supports_amp_scaling, as PyTorch's fused
-- ones): found_inf, a one-element float32 tensor on the params' device, decides there
-- whether the update happens, with no read back to the host; grad_scale (optional, the
-- same kind of tensor) divides each gradient as the update reads it, and .grad stays
-- scaled. The step counters move to that device first, where the kernels count them (as
-- PyTorch's fused optimizers keep them).
function Optimizer:_step_with_found_inf(found_inf, grad_scale)
  local dev = found_inf.device
  for _, g in ipairs(self.param_groups) do
    if dev.type ~= "cpu" then
      for _, p in ipairs(g.params) do
        local s = rawget(self.state, p)
        if s == nil and self._counts_steps and torch._amp.grad_device(p) then -- not SGD; has a gradient
          self.state[p] = { step = C.step_counter(0):to(dev) }
        elseif s ~= nil and torch.is_tensor(s.step) and s.step.device ~= dev then
          s.step = s.step:to(dev)
        end
      end
    end
    self:_update(g, found_inf, grad_scale)
  end
end

function Optimizer:state_dict()
  local ids, next_id = {}, 0
  local groups = {}
  for gi, g in ipairs(self.param_groups) do
    local packed = {}
    for k, v in pairs(g) do
      if k ~= "params" then packed[k] = copy_plain(v) end
    end
    local pids = {}
    for i, p in ipairs(g.params) do
      local id = C.id(p)
      if ids[id] == nil then ids[id] = next_id + i - 1 end
      pids[i] = ids[id]
    end
    next_id = next_id + #g.params
    packed.params = pids
    groups[gi] = packed
  end
  local state = {}
  for p, s in next, self.state do
    local key = p
    if torch.is_tensor(p) then key = ids[C.id(p)] end
    if key ~= nil then
      local entry = {}
      for k, v in pairs(s) do entry[k] = v end
      state[key] = entry
    end
  end
  return SD.wrap({ state = state, param_groups = groups }, self) -- prints as PyTorch's dict
end

local function cast_state(p, key, v)
  if not torch.is_tensor(v) then return copy_plain(v) end
  if key == "step" then return v:clone() end
  local dtype = p.dtype
  if not p:is_floating_point() then dtype = v.dtype end
  return v:to(dtype):to(p.device):clone()
end

function Optimizer:load_state_dict(sd)
  if type(sd) ~= "table" or type(sd.param_groups) ~= "table" or type(sd.state) ~= "table" then
    fail("load_state_dict expects a table with 'state' and 'param_groups'")
  end
  local groups, saved = self.param_groups, sd.param_groups
  if #groups ~= #saved then fail("loaded state dict has a different number of parameter groups") end
  for i = 1, #groups do
    if #groups[i].params ~= #saved[i].params then
      fail("loaded state dict contains a parameter group that doesn't match the size of optimizer's group")
    end
  end
  local id_map = {}
  for i = 1, #groups do
    for j, id in ipairs(saved[i].params) do id_map[id] = groups[i].params[j] end
  end
  local state = setmetatable({}, state_mt)
  for k, v in pairs(sd.state) do
    local p = id_map[k]
    if p ~= nil then
      local entry = {}
      for name, x in pairs(v) do entry[name] = cast_state(p, name, x) end
      state[p] = entry
    else
      state[k] = copy_plain(v)
    end
  end
  local new_groups = {}
  for i = 1, #groups do
    local g = copy_plain(saved[i])
    g.params = groups[i].params
    for k, v in pairs(self.defaults) do -- PyTorch's __setstate__ fills options added since
      if g[k] == nil then g[k] = copy_plain(v) end
    end
    new_groups[i] = g
  end
  self.state = state
  -- keep the list object (schedulers hold it), replace its groups
  for i = 1, #groups do groups[i] = new_groups[i] end
end

-- print(opt): PyTorch's format, options sorted, Python's value syntax
function Optimizer:__tostring()
  local cls = getmetatable(self)
  local out = { cls.__name .. " (" }
  for i, g in ipairs(self.param_groups) do
    out[#out + 1] = string.format("Parameter Group %d", i - 1)
    local keys = {}
    for k in pairs(g) do
      if k ~= "params" then keys[#keys + 1] = k end
    end
    for _, k in ipairs(cls._none_keys or {}) do
      if g[k] == nil then keys[#keys + 1] = k end
    end
    table.sort(keys)
    for _, k in ipairs(keys) do out[#out + 1] = string.format("    %s: %s", k, pyrepr(g[k])) end
  end
  return table.concat(out, "\n") .. "\n)"
end

-- ---- constructors: positional arguments in PyTorch's order, or a trailing options table ----

local function is_opts(v)
  return type(v) == "table" and not torch.is_tensor(v) and rawget(v, 1) == nil and getmetatable(v) == nil
end

-- spec: {{name, default}, ...} positional first (npos of them), then keyword-only
local function parse(cname, spec, npos, ...)
  local args = table.pack(...)
  local n = args.n
  local kw = {}
  if n > 0 and is_opts(args[n]) then
    kw = args[n]
    n = n - 1
  end
  if n > npos then
    fail("%s.__init__() takes from 2 to %d positional arguments but %d were given", cname, npos + 1, n + 1)
  end
  local known = {}
  for _, s in ipairs(spec) do known[s[1]] = true end
  for k in pairs(kw) do
    if not known[k] then fail("%s.__init__() got an unexpected keyword argument '%s'", cname, tostring(k)) end
  end
  local o = {}
  for i, s in ipairs(spec) do
    local name, v = s[1], nil
    if i <= n then
      v = args[i]
      if kw[name] ~= nil then fail("%s.__init__() got multiple values for argument '%s'", cname, name) end
    else
      v = kw[name]
    end
    if v == nil then v = copy_plain(s[2]) end
    o[name] = v
  end
  return o
end

local function check_nonneg(v, what)
  if type(v) ~= "number" then fail("%s must be a number, got %s", what, type(v)) end
  if not (v >= 0) then fail("Invalid %s: %s", what, pyrepr(v)) end
end

local function check_betas(betas)
  if type(betas) ~= "table" or type(betas[1]) ~= "number" or type(betas[2]) ~= "number" then
    fail("betas must be a list of two numbers")
  end
  for i = 1, 2 do
    local b = betas[i]
    if not (b >= 0 and b < 1) then fail("Invalid beta parameter at index %d: %s", i - 1, pyrepr(b)) end
  end
end

-- Make optimizer class `name`: spec (option names and defaults), npos positional options,
-- check(o) validates, update(self, group) runs the fused step.
local function define(name, spec, npos, check, update, none_keys)
  local cls = Optimizer:extend(name)
  cls._spec = spec
  cls._none_keys = none_keys
  cls._update = update
  cls._step_supports_amp_scaling = true
  cls._counts_steps = name ~= "SGD"
  function cls:__init(params, ...)
    local o = parse(name, spec, npos, ...)
    check(o)
    Optimizer.__init(self, params, o)
  end
  optim[name] = cls
  return cls
end

local common_kw = { { "foreach", nil }, { "differentiable", false } }
local function with(list, extra)
  local out = {}
  for _, s in ipairs(list) do out[#out + 1] = s end
  for _, s in ipairs(extra) do out[#out + 1] = s end
  return out
end

define("SGD",
  with({ { "lr", 1e-3 }, { "momentum", 0 }, { "dampening", 0 }, { "weight_decay", 0 }, { "nesterov", false } },
    with({ { "maximize", false } }, with(common_kw, { { "fused", nil } }))),
  5,
  function(o)
    check_nonneg(o.lr, "learning rate")
    check_nonneg(o.momentum, "momentum value")
    check_nonneg(o.weight_decay, "weight_decay value")
    if o.nesterov and (o.momentum <= 0 or o.dampening ~= 0) then
      fail("Nesterov momentum requires a momentum and zero dampening")
    end
  end,
  function(self, g, found_inf, grad_scale) return C.sgd_step(g, self.state, found_inf, grad_scale) end,
  { "foreach", "fused" })

local adam_spec = function(wd, extra)
  return with({ { "lr", 1e-3 }, { "betas", { 0.9, 0.999 } }, { "eps", 1e-8 }, { "weight_decay", wd }, { "amsgrad", false } },
    with({ { "maximize", false }, { "capturable", false } }, with(common_kw, with({ { "fused", nil } }, extra))))
end
local function check_adam(o)
  check_nonneg(o.lr, "learning rate")
  check_nonneg(o.eps, "epsilon value")
  check_betas(o.betas)
  check_nonneg(o.weight_decay, "weight_decay value")
end

define("Adam", adam_spec(0, { { "decoupled_weight_decay", false } }), 5, check_adam,
  function(self, g, found_inf, grad_scale) return C.adam_step(g, self.state, false, found_inf, grad_scale) end, { "foreach", "fused" })

local AdamW = define("AdamW", adam_spec(1e-2, {}), 5, check_adam,
  function(self, g, found_inf, grad_scale) return C.adam_step(g, self.state, true, found_inf, grad_scale) end, { "foreach", "fused" })
local adamw_init = AdamW.__init
function AdamW:__init(...)
  adamw_init(self, ...)
  self.defaults.decoupled_weight_decay = true
  for _, g in ipairs(self.param_groups) do g.decoupled_weight_decay = true end
end

define("RMSprop",
  with({ { "lr", 1e-2 }, { "alpha", 0.99 }, { "eps", 1e-8 }, { "weight_decay", 0 }, { "momentum", 0 }, { "centered", false },
    { "capturable", false } }, with(common_kw, { { "maximize", false } })),
  7,
  function(o)
    check_nonneg(o.lr, "learning rate")
    check_nonneg(o.eps, "epsilon value")
    check_nonneg(o.momentum, "momentum value")
    check_nonneg(o.weight_decay, "weight_decay value")
    check_nonneg(o.alpha, "alpha value")
  end,
  function(self, g, found_inf, grad_scale) return C.rmsprop_step(g, self.state, found_inf, grad_scale) end,
  { "foreach" })

local Adagrad = define("Adagrad",
  with({ { "lr", 1e-2 }, { "lr_decay", 0 }, { "weight_decay", 0 }, { "initial_accumulator_value", 0 }, { "eps", 1e-10 },
    { "foreach", nil } }, { { "maximize", false }, { "differentiable", false }, { "fused", nil } }),
  6,
  function(o)
    check_nonneg(o.lr, "learning rate")
    check_nonneg(o.lr_decay, "lr_decay value")
    check_nonneg(o.weight_decay, "weight_decay value")
    check_nonneg(o.initial_accumulator_value, "initial_accumulator_value value")
    check_nonneg(o.eps, "epsilon value")
  end,
  function(self, g, found_inf, grad_scale) return C.adagrad_step(g, self.state, found_inf, grad_scale) end,
  { "foreach", "fused" })

-- Adagrad's state exists from the start: step 0 and sum = initial_accumulator_value
function Adagrad:_init_group_state(g)
  for _, p in ipairs(g.params) do
    if rawget(self.state, p) == nil then
      self.state[p] = { step = C.step_counter(0), sum = C.state_like(p, g.initial_accumulator_value) }
    end
  end
end

optim.lr_scheduler = require "optim_lr_scheduler"

return optim
