-- torch.optim.lr_scheduler: PyTorch 2.x's schedulers with their recursive
-- ("chainable") get_lr forms, so the learning rates match PyTorch's get_last_lr
-- value for value, and the closed forms for step(epoch).
--
--   local sched = optim.lr_scheduler.StepLR(opt, {step_size=30, gamma=0.1})
--   for epoch = 1, n do train(); sched:step() end
--
-- Constructing a scheduler sets `initial_lr` in every param group (last_epoch = -1)
-- and takes the first step. get_last_lr() is a Lua list (one lr per group).
-- state_dict() holds every field but the optimizer and functions.
local torch = require "torch"
local U = require "nn_util"

local M = {}

-- errors at the user's line, outside the library
local function fail(fmt, ...) U.error(string.format(fmt, ...)) end

local function pyrepr(v)
  local optim = torch.optim
  return optim and optim._pyrepr and optim._pyrepr(v) or tostring(v)
end

local function copy_plain(v)
  if type(v) ~= "table" or getmetatable(v) ~= nil then return v end
  local t = {}
  for k, x in pairs(v) do t[k] = copy_plain(x) end
  return t
end

local function is_opts(v)
  return type(v) == "table" and not torch.is_tensor(v) and rawget(v, 1) == nil and getmetatable(v) == nil
end

-- Positional arguments in PyTorch's order, or a trailing options table; spec = {{name, default}, ...}
local function parse(cname, spec, ...)
  local args = table.pack(...)
  local n = args.n
  local kw = {}
  if n > 0 and is_opts(args[n]) then
    kw = args[n]
    n = n - 1
  end
  if n > #spec then fail("%s.__init__() takes at most %d positional arguments but %d were given", cname, #spec + 1, n + 1) end
  local known = {}
  for _, s in ipairs(spec) do known[s[1]] = true end
  for k in pairs(kw) do
    if not known[k] then fail("%s.__init__() got an unexpected keyword argument '%s'", cname, tostring(k)) end
  end
  local o = {}
  for i, s in ipairs(spec) do
    local v
    if i <= n then
      v = args[i]
      if kw[s[1]] ~= nil then fail("%s.__init__() got multiple values for argument '%s'", cname, s[1]) end
    else
      v = kw[s[1]]
    end
    if v == nil then v = copy_plain(s[2]) end
    o[s[1]] = v
  end
  return o
end

local REQUIRED = setmetatable({}, { __name = "required" }) -- a spec default that must be given

local function groups_of(opt)
  if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then
    fail("%s is not an Optimizer", type(opt) == "table" and "the first argument" or U.typename(opt))
  end
  return opt.param_groups
end

local function group_lrs(opt)
  local out = {}
  for i, g in ipairs(opt.param_groups) do out[i] = g.lr end
  return out
end

-- One value per group: a list of the right length, or a single value repeated.
local function per_group(name, opt, v)
  local n = #opt.param_groups
  if type(v) == "table" and not torch.is_tensor(v) then
    if #v ~= n then fail("expected %d values for %s, got %d", n, name, #v) end
    return copy_plain(v)
  end
  local out = {}
  for i = 1, n do out[i] = v end
  return out
end

local function format_lr(lr) return string.format("%.4e", lr) end

local function epoch_str(epoch)
  if math.type(epoch) == "float" then return string.format("%.2f", epoch) end
  return string.format("%.5d", epoch)
end

-- ---- LRScheduler ----

local LRScheduler = {}
LRScheduler.__index = LRScheduler
LRScheduler.__name = "LRScheduler"
M.LRScheduler = LRScheduler

-- local MySched = lr_scheduler.LRScheduler:extend("MySched"); define __init and get_lr
LRScheduler.extend = require("nn_util").extend_class

function LRScheduler:__tostring()
  return string.format("<torch.optim.lr_scheduler.%s object>", getmetatable(self).__name)
end

function LRScheduler:__init(optimizer, last_epoch, verbose)
  local groups = groups_of(optimizer)
  self.optimizer = optimizer
  last_epoch = last_epoch or -1
  if last_epoch == -1 then
    for _, g in ipairs(groups) do
      if g.initial_lr == nil then g.initial_lr = g.lr end
    end
  else
    for i, g in ipairs(groups) do
      if g.initial_lr == nil then
        fail("param 'initial_lr' is not specified in param_groups[%d] when resuming scheduler with last_epoch >= 0.\n" ..
          "This typically happens when:\n" ..
          "1. You're trying to resume training from a checkpoint but haven't properly loaded the optimizer state\n" ..
          "2. You're using last_epoch >= 0 for a fresh training run (not recommended)", i - 1)
      end
    end
  end
  self.base_lrs = {}
  for i, g in ipairs(groups) do self.base_lrs[i] = g.initial_lr end
  self.last_epoch = last_epoch
  self.verbose = verbose == true or nil -- an nnrepl extension (PyTorch 2.11 has no verbose)
  self._get_lr_called_within_step = false
  self:_initial_step()
end

function LRScheduler:_initial_step()
  self._is_initial = true
  self._step_count = 0
  self:step()
  self._is_initial = false
end

function LRScheduler:get_lr() fail("%s does not implement get_lr()", getmetatable(self).__name) end

function LRScheduler:get_last_lr()
  local out = {}
  for i, v in ipairs(self._last_lr) do out[i] = v end
  return out
end

function LRScheduler:print_lr(is_verbose, group, lr, epoch)
  if not is_verbose then return end
  if epoch == nil then
    print(string.format("Adjusting learning rate of group %d to %s.", group, format_lr(lr)))
  else
    print(string.format("Epoch %s: adjusting learning rate of group %d to %s.", epoch_str(epoch), group, format_lr(lr)))
  end
end

function LRScheduler:step(epoch)
  self._step_count = self._step_count + 1
  local values
  if epoch == nil then
    self.last_epoch = self.last_epoch + 1
    values = self:get_lr()
  else
    self.last_epoch = epoch
    if self._get_closed_form_lr then values = self:_get_closed_form_lr() else values = self:get_lr() end
  end
  for i, g in ipairs(self.optimizer.param_groups) do
    g.lr = values[i]
    self:print_lr(self.verbose, i - 1, values[i], epoch)
  end
  self._last_lr = group_lrs(self.optimizer)
end

-- Every field but the optimizer and functions (PyTorch: __dict__ without the optimizer).
function LRScheduler:state_dict()
  local sd = {}
  for k, v in pairs(self) do
    if k ~= "optimizer" and type(v) ~= "function" and k ~= "lr_lambdas" and k ~= "_schedulers" then
      sd[k] = copy_plain(v)
    end
  end
  if self._schedulers then
    sd._schedulers = {}
    for i, s in ipairs(self._schedulers) do sd._schedulers[i] = s:state_dict() end
  end
  return sd
end

function LRScheduler:load_state_dict(sd)
  for k, v in pairs(sd) do
    if k ~= "_schedulers" then self[k] = copy_plain(v) end
  end
  if sd._schedulers and self._schedulers then
    for i, s in ipairs(sd._schedulers) do self._schedulers[i]:load_state_dict(s) end
  end
end

-- define(name, spec, init(self, o, optimizer), into): a scheduler class whose constructor
-- parses spec (after the optimizer) and calls init; init ends with LRScheduler.__init. The
-- class goes in into[name] (default: this module; swa_utils defines SWALR with it).
local function define(name, spec, init, into)
  local cls = LRScheduler:extend(name)
  function cls:__init(optimizer, ...)
    local o = parse(name, spec, ...)
    for _, s in ipairs(spec) do
      if o[s[1]] == REQUIRED then fail("%s.__init__() missing 1 required positional argument: '%s'", name, s[1]) end
    end
    init(self, o, optimizer)
  end
  (into or M)[name] = cls
  return cls
end
M._define, M._per_group = define, per_group

local function lrs_times(self, f)
  local out = {}
  for i, g in ipairs(self.optimizer.param_groups) do out[i] = g.lr * f end
  return out
end

local function base_times(self, f)
  local out = {}
  for i, b in ipairs(self.base_lrs) do out[i] = b * (type(f) == "function" and f(i) or f) end
  return out
end

-- ---- StepLR ----
local StepLR = define("StepLR",
  { { "step_size", REQUIRED }, { "gamma", 0.1 }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    self.step_size, self.gamma = o.step_size, o.gamma
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function StepLR:get_lr()
  if self.last_epoch == 0 or self.last_epoch % self.step_size ~= 0 then return lrs_times(self, 1) end
  return lrs_times(self, self.gamma)
end
function StepLR:_get_closed_form_lr()
  return base_times(self, self.gamma ^ (self.last_epoch // self.step_size))
end

-- ---- MultiStepLR ----
local MultiStepLR = define("MultiStepLR",
  { { "milestones", REQUIRED }, { "gamma", 0.1 }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    local counts = {}
    local ms = o.milestones -- Python's Counter(milestones): any iterable, a string's characters too
    if type(ms) == "string" then
      local chars = {}
      for c in ms:gmatch(".") do chars[#chars + 1] = c end
      ms = chars
    end
    if type(ms) ~= "table" and not torch.is_tensor(ms) then U.errorf("'%s' object is not iterable", U.typename(ms)) end
    for _, m in ipairs(ms) do counts[m] = (counts[m] or 0) + 1 end
    self.milestones = counts -- milestone -> how many times it is listed (Python's Counter)
    self.gamma = o.gamma
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function MultiStepLR:get_lr()
  local c = self.milestones[self.last_epoch]
  if not c then return lrs_times(self, 1) end
  return lrs_times(self, self.gamma ^ c)
end
function MultiStepLR:_get_closed_form_lr()
  local passed = 0 -- bisect_right over the sorted milestones
  for m, c in pairs(self.milestones) do
    if m <= self.last_epoch then passed = passed + c end
  end
  return base_times(self, self.gamma ^ passed)
end

-- ---- ExponentialLR ----
local ExponentialLR = define("ExponentialLR",
  { { "gamma", REQUIRED }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    self.gamma = o.gamma
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function ExponentialLR:get_lr()
  if self.last_epoch == 0 then return lrs_times(self, 1) end
  return lrs_times(self, self.gamma)
end
function ExponentialLR:_get_closed_form_lr()
  return base_times(self, self.gamma ^ self.last_epoch)
end

-- ---- CosineAnnealingLR ----
local CosineAnnealingLR = define("CosineAnnealingLR",
  { { "T_max", REQUIRED }, { "eta_min", 0.0 }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    self.T_max, self.eta_min = o.T_max, o.eta_min
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function CosineAnnealingLR:get_lr()
  local e, T, eta = self.last_epoch, self.T_max, self.eta_min
  local groups = self.optimizer.param_groups
  local out = {}
  if e == 0 then return lrs_times(self, 1) end
  if self._step_count == 1 and e > 0 then
    for i, b in ipairs(self.base_lrs) do out[i] = eta + (b - eta) * (1 + math.cos(e * math.pi / T)) / 2 end
  elseif (e - 1 - T) % (2 * T) == 0 then
    for i, b in ipairs(self.base_lrs) do out[i] = groups[i].lr + (b - eta) * (1 - math.cos(math.pi / T)) / 2 end
  else
    for i, g in ipairs(groups) do
      out[i] = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T)) * (g.lr - eta) + eta
    end
  end
  return out
end
function CosineAnnealingLR:_get_closed_form_lr()
  local out = {}
  for i, b in ipairs(self.base_lrs) do
    out[i] = self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
  end
  return out
end

-- ---- LambdaLR and MultiplicativeLR: one function (or one per group) of the epoch ----
local function lambdas(name, opt, f)
  local n = #opt.param_groups
  if type(f) == "table" and getmetatable(f) == nil then
    if #f ~= n then fail("Expected %d lr_lambdas, but got %d", n, #f) end
    return copy_plain(f)
  end
  if name == "LambdaLR" and not U.kind_ok.Function(f) then fail("'%s' object is not callable", U.typename(f)) end
  local out = {}
  for i = 1, n do out[i] = f end
  return out
end

local LambdaLR = define("LambdaLR",
  { { "lr_lambda", REQUIRED }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    groups_of(opt)
    self.lr_lambdas = lambdas("LambdaLR", opt, o.lr_lambda)
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function LambdaLR:get_lr()
  return base_times(self, function(i) return self.lr_lambdas[i](self.last_epoch) end)
end

local MultiplicativeLR = define("MultiplicativeLR",
  { { "lr_lambda", REQUIRED }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    groups_of(opt)
    self.lr_lambdas = lambdas("MultiplicativeLR", opt, o.lr_lambda)
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function MultiplicativeLR:get_lr()
  local out = {}
  for i, g in ipairs(self.optimizer.param_groups) do
    out[i] = self.last_epoch > 0 and g.lr * self.lr_lambdas[i](self.last_epoch) or g.lr
  end
  return out
end

-- a factor compared with a float as Python compares it: a number, or Python's TypeError text (a
-- one-element tensor reads as its value, a larger one is ambiguous as a bool)
local function comparable(v)
  if type(v) == "number" then return v end
  if torch.is_tensor(v) then
    if v:numel() == 1 then return v:item() end
    U.error("Boolean value of Tensor with more than one value is ambiguous")
  end
  U.errorf("'>' not supported between instances of '%s' and 'float'", U.typename(v))
end

-- ---- LinearLR ----
local LinearLR = define("LinearLR",
  { { "start_factor", 1.0 / 3 }, { "end_factor", 1.0 }, { "total_iters", 5 }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    comparable(o.start_factor)
    comparable(o.end_factor)
    if o.start_factor > 1.0 or o.start_factor <= 0 then
      fail("Starting multiplicative factor expected to be greater than 0 and less or equal to 1.")
    end
    if o.end_factor > 1.0 or o.end_factor < 0 then fail("Ending multiplicative factor expected to be between 0 and 1.") end
    self.start_factor, self.end_factor, self.total_iters = o.start_factor, o.end_factor, o.total_iters
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function LinearLR:get_lr()
  local e, s, f, n = self.last_epoch, self.start_factor, self.end_factor, self.total_iters
  if e == 0 then return lrs_times(self, s) end
  if e > n then return lrs_times(self, 1) end
  return lrs_times(self, 1.0 + (f - s) / (n * s + (e - 1) * (f - s)))
end
function LinearLR:_get_closed_form_lr()
  local s, f, n = self.start_factor, self.end_factor, self.total_iters
  return base_times(self, s + (f - s) * math.min(n, self.last_epoch) / n)
end

-- ---- ConstantLR ----
local ConstantLR = define("ConstantLR",
  { { "factor", 1.0 / 3 }, { "total_iters", 5 }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    comparable(o.factor)
    if o.factor > 1.0 or o.factor < 0 then fail("Constant multiplicative factor expected to be between 0 and 1.") end
    self.factor, self.total_iters = o.factor, o.total_iters
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function ConstantLR:get_lr()
  if self.last_epoch == 0 then return lrs_times(self, self.factor) end
  if self.last_epoch ~= self.total_iters then return lrs_times(self, 1) end
  return lrs_times(self, 1.0 / self.factor)
end
function ConstantLR:_get_closed_form_lr()
  return base_times(self, self.factor + (self.last_epoch >= self.total_iters and 1 or 0) * (1 - self.factor))
end

-- ---- PolynomialLR ----
local PolynomialLR = define("PolynomialLR",
  { { "total_iters", 5 }, { "power", 1.0 }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    self.total_iters, self.power = o.total_iters, o.power
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function PolynomialLR:get_lr()
  local e, n = self.last_epoch, self.total_iters
  if e == 0 or e > n then return lrs_times(self, 1) end
  return lrs_times(self, ((1.0 - e / n) / (1.0 - (e - 1) / n)) ^ self.power)
end
function PolynomialLR:_get_closed_form_lr()
  return base_times(self, (1.0 - math.min(self.total_iters, self.last_epoch) / self.total_iters) ^ self.power)
end

-- ---- CosineAnnealingWarmRestarts ----
local CosineAnnealingWarmRestarts = define("CosineAnnealingWarmRestarts",
  { { "T_0", REQUIRED }, { "T_mult", 1 }, { "eta_min", 0.0 }, { "last_epoch", -1 }, { "verbose", false } },
  function(self, o, opt)
    if math.type(o.T_0) ~= "integer" or o.T_0 <= 0 then fail("Expected positive integer T_0, but got %s", pyrepr(o.T_0)) end
    if math.type(o.T_mult) ~= "integer" or o.T_mult < 1 then fail("Expected integer T_mult >= 1, but got %s", pyrepr(o.T_mult)) end
    self.T_0, self.T_i, self.T_mult, self.eta_min = o.T_0, o.T_0, o.T_mult, o.eta_min
    self.T_cur = o.last_epoch
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function CosineAnnealingWarmRestarts:get_lr()
  local out = {}
  for i, b in ipairs(self.base_lrs) do
    out[i] = self.eta_min + (b - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
  end
  return out
end
function CosineAnnealingWarmRestarts:step(epoch)
  if epoch == nil and self.last_epoch < 0 then epoch = 0 end
  if epoch == nil then
    epoch = self.last_epoch + 1
    self.T_cur = self.T_cur + 1
    if self.T_cur >= self.T_i then
      self.T_cur = self.T_cur - self.T_i
      self.T_i = self.T_i * self.T_mult
    end
  else
    if epoch < 0 then fail("Expected non-negative epoch, but got %s", pyrepr(epoch)) end
    if epoch >= self.T_0 then
      if self.T_mult == 1 then
        self.T_cur = epoch % self.T_0
      else
        local n = math.floor(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
        self.T_cur = epoch - self.T_0 * (self.T_mult ^ n - 1) / (self.T_mult - 1)
        self.T_i = self.T_0 * self.T_mult ^ n
      end
    else
      self.T_i = self.T_0
      self.T_cur = epoch
    end
  end
  self.last_epoch = math.floor(epoch)
  local values = self:get_lr()
  for i, g in ipairs(self.optimizer.param_groups) do
    g.lr = values[i]
    self:print_lr(self.verbose, i - 1, values[i], epoch)
  end
  self._last_lr = group_lrs(self.optimizer)
end

-- Schedulers that cycle momentum set beta1 for Adam-like optimizers, momentum otherwise.
local function uses_beta1(opt)
  local d = opt.defaults or {}
  if d.momentum == nil and d.betas == nil then
    fail("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
  end
  return d.betas ~= nil
end

local function set_momentum(use_beta1, g, m)
  if use_beta1 then g.betas = { m, g.betas[2] } else g.momentum = m end
end

-- ---- OneCycleLR ----
local function anneal(kind, start, stop, pct)
  if kind == "cos" then return stop + (start - stop) / 2.0 * (math.cos(math.pi * pct) + 1) end
  return (stop - start) * pct + start
end

local OneCycleLR = define("OneCycleLR",
  { { "max_lr", REQUIRED }, { "total_steps", nil }, { "epochs", nil }, { "steps_per_epoch", nil }, { "pct_start", 0.3 },
    { "anneal_strategy", "cos" }, { "cycle_momentum", true }, { "base_momentum", 0.85 }, { "max_momentum", 0.95 },
    { "div_factor", 25.0 }, { "final_div_factor", 1e4 }, { "three_phase", false }, { "last_epoch", -1 },
    { "verbose", false } },
  function(self, o, opt)
    local groups = groups_of(opt)
    self.optimizer = opt
    if o.total_steps ~= nil then
      if math.type(o.total_steps) ~= "integer" or o.total_steps <= 0 then
        fail("Expected positive integer total_steps, but got %s", pyrepr(o.total_steps))
      end
      self.total_steps = o.total_steps
    elseif o.epochs ~= nil and o.steps_per_epoch ~= nil then
      if math.type(o.epochs) ~= "integer" or o.epochs <= 0 then
        fail("Expected positive integer epochs, but got %s", pyrepr(o.epochs))
      end
      if math.type(o.steps_per_epoch) ~= "integer" or o.steps_per_epoch <= 0 then
        fail("Expected positive integer steps_per_epoch, but got %s", pyrepr(o.steps_per_epoch))
      end
      self.total_steps = o.epochs * o.steps_per_epoch
    else
      fail("You must define either total_steps OR (epochs AND steps_per_epoch)")
    end
    local T, pct = self.total_steps, o.pct_start
    if o.three_phase then
      self._schedule_phases = {
        { end_step = pct * T - 1, start_lr = "initial_lr", end_lr = "max_lr", start_momentum = "max_momentum", end_momentum = "base_momentum" },
        { end_step = 2 * pct * T - 2, start_lr = "max_lr", end_lr = "initial_lr", start_momentum = "base_momentum", end_momentum = "max_momentum" },
        { end_step = T - 1, start_lr = "initial_lr", end_lr = "min_lr", start_momentum = "max_momentum", end_momentum = "max_momentum" },
      }
    else
      self._schedule_phases = {
        { end_step = pct * T - 1, start_lr = "initial_lr", end_lr = "max_lr", start_momentum = "max_momentum", end_momentum = "base_momentum" },
        { end_step = T - 1, start_lr = "max_lr", end_lr = "min_lr", start_momentum = "base_momentum", end_momentum = "max_momentum" },
      }
    end
    if type(pct) ~= "number" or pct < 0 or pct > 1 then
      fail("Expected float between 0 and 1 pct_start, but got %s", pyrepr(pct))
    end
    if o.anneal_strategy ~= "cos" and o.anneal_strategy ~= "linear" then
      fail("anneal_strategy must be one of 'cos' or 'linear', instead got %s", tostring(o.anneal_strategy))
    end
    self._anneal_func_type = o.anneal_strategy
    local max_lrs = per_group("max_lr", opt, o.max_lr)
    if o.last_epoch == -1 then
      for i, g in ipairs(groups) do
        g.initial_lr = max_lrs[i] / o.div_factor
        g.max_lr = max_lrs[i]
        g.min_lr = g.initial_lr / o.final_div_factor
      end
    end
    self.cycle_momentum = o.cycle_momentum
    if self.cycle_momentum then
      self.use_beta1 = uses_beta1(opt)
      local maxm = per_group("max_momentum", opt, o.max_momentum)
      local basem = per_group("base_momentum", opt, o.base_momentum)
      if o.last_epoch == -1 then
        for i, g in ipairs(groups) do
          set_momentum(self.use_beta1, g, maxm[i])
          g.max_momentum = maxm[i]
          g.base_momentum = basem[i]
        end
      end
    end
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
  end)
function OneCycleLR:get_lr()
  local step = self.last_epoch
  if step > self.total_steps then
    fail("Tried to step %d times. The specified number of total steps is %d", step, self.total_steps)
  end
  local out = {}
  local phases = self._schedule_phases
  for gi, g in ipairs(self.optimizer.param_groups) do
    local start_step, lr, mom = 0, nil, nil
    for i, ph in ipairs(phases) do
      local end_step = ph.end_step
      if step <= end_step or i == #phases then
        local pct = (step - start_step) / (end_step - start_step)
        lr = anneal(self._anneal_func_type, g[ph.start_lr], g[ph.end_lr], pct)
        if self.cycle_momentum then mom = anneal(self._anneal_func_type, g[ph.start_momentum], g[ph.end_momentum], pct) end
        break
      end
      start_step = ph.end_step
    end
    out[gi] = lr
    if self.cycle_momentum then set_momentum(self.use_beta1, g, mom) end
  end
  return out
end

-- ---- CyclicLR ----
-- The rate runs base_lr -> max_lr over step_size_up steps and back over step_size_down,
-- the swing scaled by scale_fn of the cycle number (scale_mode "cycle") or of the step
-- ("iterations"); momentum, when cycled, runs the other way between its bounds.
local cyclic_scale = {
  triangular = { function() return 1.0 end, "cycle" },
  triangular2 = { function(_, x) return 1 / (2.0 ^ (x - 1)) end, "cycle" },
  exp_range = { function(self, x) return self.gamma ^ x end, "iterations" },
}

local CyclicLR = define("CyclicLR",
  { { "base_lr", REQUIRED }, { "max_lr", REQUIRED }, { "step_size_up", 2000 }, { "step_size_down", nil },
    { "mode", "triangular" }, { "gamma", 1.0 }, { "scale_fn", nil }, { "scale_mode", "cycle" },
    { "cycle_momentum", true }, { "base_momentum", 0.8 }, { "max_momentum", 0.9 }, { "last_epoch", -1 },
    { "verbose", false } },
  function(self, o, opt)
    local groups = groups_of(opt)
    local base_lrs = per_group("base_lr", opt, o.base_lr)
    if o.last_epoch == -1 then
      for i, g in ipairs(groups) do g.lr = base_lrs[i] end
    end
    self.optimizer = opt
    self.max_lrs = per_group("max_lr", opt, o.max_lr)
    local up = o.step_size_up + 0.0
    local down = o.step_size_down ~= nil and o.step_size_down + 0.0 or up
    self.total_size = up + down
    self.step_ratio = up / self.total_size
    if cyclic_scale[o.mode] == nil and o.scale_fn == nil then fail("mode is invalid and scale_fn is None") end
    self.mode, self.gamma = o.mode, o.gamma
    self._scale_fn_custom = o.scale_fn
    self.scale_mode = o.scale_mode
    if o.scale_fn == nil then self.scale_mode = cyclic_scale[o.mode][2] end
    self.cycle_momentum = o.cycle_momentum
    if self.cycle_momentum then
      self.use_beta1 = uses_beta1(opt)
      self.base_momentums = per_group("base_momentum", opt, o.base_momentum)
      self.max_momentums = per_group("max_momentum", opt, o.max_momentum)
      if o.last_epoch == -1 then
        for i, g in ipairs(groups) do
          set_momentum(self.use_beta1, g, self.max_momentums[i])
          g.max_momentum, g.base_momentum = self.max_momentums[i], self.base_momentums[i]
        end
      end
    end
    LRScheduler.__init(self, opt, o.last_epoch, o.verbose)
    self.base_lrs = base_lrs
  end)

function CyclicLR:scale_fn(x)
  if self._scale_fn_custom then return self._scale_fn_custom(x) end
  return cyclic_scale[self.mode][1](self, x)
end

function CyclicLR:get_lr()
  local cycle = math.floor(1 + self.last_epoch / self.total_size)
  local x = 1.0 + self.last_epoch / self.total_size - cycle
  local factor
  if x <= self.step_ratio then factor = x / self.step_ratio else factor = (x - 1) / (self.step_ratio - 1) end
  local scale = self:scale_fn(self.scale_mode == "cycle" and cycle or self.last_epoch)
  local out = {}
  for i, base in ipairs(self.base_lrs) do out[i] = base + (self.max_lrs[i] - base) * factor * scale end
  if self.cycle_momentum then
    for i, g in ipairs(self.optimizer.param_groups) do
      local hi = self.max_momentums[i]
      set_momentum(self.use_beta1, g, hi - (hi - self.base_momentums[i]) * factor * scale)
    end
  end
  return out
end

-- ---- ReduceLROnPlateau ----
local ReduceLROnPlateau = define("ReduceLROnPlateau",
  { { "mode", "min" }, { "factor", 0.1 }, { "patience", 10 }, { "threshold", 1e-4 }, { "threshold_mode", "rel" },
    { "cooldown", 0 }, { "min_lr", 0 }, { "eps", 1e-8 }, { "verbose", false } },
  function(self, o, opt)
    local groups = groups_of(opt)
    if o.factor >= 1.0 then fail("Factor should be < 1.0.") end
    self.factor = o.factor
    self.optimizer = opt
    if type(o.min_lr) == "table" then
      if #o.min_lr ~= #groups then fail("expected %d min_lrs, got %d", #groups, #o.min_lr) end
      self.min_lrs = copy_plain(o.min_lr)
    else
      self.default_min_lr = o.min_lr
      self.min_lrs = per_group("min_lr", opt, o.min_lr)
    end
    self._last_lr = group_lrs(opt)
    self.patience, self.cooldown, self.cooldown_counter = o.patience, o.cooldown, 0
    self.mode, self.threshold, self.threshold_mode = o.mode, o.threshold, o.threshold_mode
    self.eps = o.eps
    self.verbose = o.verbose == true or nil
    self.last_epoch = 0
    self:_init_is_better()
    self:_reset()
  end)

function ReduceLROnPlateau:_init_is_better()
  if self.mode ~= "min" and self.mode ~= "max" then fail("mode %s is unknown!", tostring(self.mode)) end
  if self.threshold_mode ~= "rel" and self.threshold_mode ~= "abs" then
    fail("threshold mode %s is unknown!", tostring(self.threshold_mode))
  end
  self.mode_worse = self.mode == "min" and math.huge or -math.huge
end

function ReduceLROnPlateau:_reset()
  self.best = self.mode_worse
  self.cooldown_counter = 0
  self.num_bad_epochs = 0
end

function ReduceLROnPlateau:is_better(a, best)
  if self.mode == "min" and self.threshold_mode == "rel" then return a < best * (1.0 - self.threshold) end
  if self.mode == "min" then return a < best - self.threshold end
  if self.threshold_mode == "rel" then return a > best * (self.threshold + 1.0) end
  return a > best + self.threshold
end

function ReduceLROnPlateau:in_cooldown() return self.cooldown_counter > 0 end

-- step(metric): metric is a number or a one-element tensor
function ReduceLROnPlateau:step(metrics, epoch)
  local current = metrics
  if torch.is_tensor(metrics) then current = metrics:item() end
  if type(current) ~= "number" then fail("ReduceLROnPlateau.step expects a number metric, got %s", type(metrics)) end
  current = current + 0.0
  if epoch == nil then epoch = self.last_epoch + 1 end
  self.last_epoch = epoch
  if self:is_better(current, self.best) then
    self.best = current
    self.num_bad_epochs = 0
  else
    self.num_bad_epochs = self.num_bad_epochs + 1
  end
  if self:in_cooldown() then
    self.cooldown_counter = self.cooldown_counter - 1
    self.num_bad_epochs = 0
  end
  if self.num_bad_epochs > self.patience then
    self:_reduce_lr(epoch)
    self.cooldown_counter = self.cooldown
    self.num_bad_epochs = 0
  end
  self._last_lr = group_lrs(self.optimizer)
end

function ReduceLROnPlateau:_reduce_lr(epoch)
  for i, g in ipairs(self.optimizer.param_groups) do
    local old = g.lr + 0.0
    local new = math.max(old * self.factor, self.min_lrs[i])
    if old - new > self.eps then
      g.lr = new
      if self.verbose then
        print(string.format("Epoch %s: reducing learning rate of group %d to %s.", epoch_str(epoch), i - 1, format_lr(new)))
      end
    end
  end
end

function ReduceLROnPlateau:load_state_dict(sd)
  LRScheduler.load_state_dict(self, sd)
  self:_init_is_better()
end

-- ---- SequentialLR and ChainedScheduler ----
local SequentialLR = LRScheduler:extend("SequentialLR")
M.SequentialLR = SequentialLR
function SequentialLR:__init(optimizer, ...)
  local o = parse("SequentialLR", { { "schedulers", REQUIRED }, { "milestones", REQUIRED }, { "last_epoch", -1 },
    { "verbose", false } }, ...)
  if o.schedulers == REQUIRED or o.milestones == REQUIRED then
    fail("SequentialLR.__init__() missing required arguments 'schedulers' and 'milestones'")
  end
  local scheds, miles = o.schedulers, o.milestones
  if #scheds < 1 then fail("SequentialLR expects at least one scheduler, but got no scheduler.") end
  for i, s in ipairs(scheds) do
    if s.optimizer ~= optimizer then
      fail("SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler %s at index %d has %s, which is different from %s.",
        getmetatable(s).__name, i - 1, tostring(s.optimizer), tostring(optimizer))
    end
  end
  if #miles ~= #scheds - 1 then
    fail("Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers %d and the number of milestones to be equal to %d",
      #scheds, #miles)
  end
  self._schedulers = scheds
  self._milestones = copy_plain(miles)
  self.last_epoch = o.last_epoch + 1
  self.optimizer = optimizer
  for _, g in ipairs(optimizer.param_groups) do g.lr = g.initial_lr end
  for _, s in ipairs(scheds) do s.last_epoch = s.last_epoch - 1 end
  scheds[1]:_initial_step()
  self._last_lr = scheds[1]:get_last_lr()
end
function SequentialLR:step()
  self.last_epoch = self.last_epoch + 1
  local idx = 0 -- bisect_right
  for _, m in ipairs(self._milestones) do
    if m <= self.last_epoch then idx = idx + 1 end
  end
  local s = self._schedulers[idx + 1]
  if idx > 0 and self._milestones[idx] == self.last_epoch then s:step(0) else s:step() end
  self._last_lr = s:get_last_lr()
end

local ChainedScheduler = LRScheduler:extend("ChainedScheduler")
M.ChainedScheduler = ChainedScheduler
function ChainedScheduler:__init(schedulers, optimizer)
  if type(schedulers) == "string" then fail("'str' object has no attribute 'optimizer'") end
  if type(schedulers) ~= "table" then fail("object of type '%s' has no len()", U.typename(schedulers)) end
  if #schedulers < 1 then fail("ChainedScheduler expects at least one scheduler to be chained, but got no scheduler.") end
  optimizer = optimizer or schedulers[1].optimizer
  for i, s in ipairs(schedulers) do
    if s.optimizer ~= optimizer then
      fail("ChainedScheduler expects all schedulers to belong to the same optimizer, but got scheduler %s at index %d has %s, which is different from %s.",
        getmetatable(s).__name, i - 1, tostring(s.optimizer), tostring(optimizer))
    end
  end
  self._schedulers = schedulers
  self.optimizer = optimizer
  self._last_lr = group_lrs(optimizer)
end
function ChainedScheduler:step()
  for _, s in ipairs(self._schedulers) do s:step() end
  self._last_lr = group_lrs(self._schedulers[#self._schedulers].optimizer)
end

return M
