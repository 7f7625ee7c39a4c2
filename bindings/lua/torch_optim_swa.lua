-- torch.optim.swa_utils: AveragedModel (a running SWA or EMA average of a model's
-- parameters, optionally its buffers), SWALR (anneals each group's lr to its swa_lr) and
-- update_bn (recomputes BatchNorm running statistics with one pass over a loader).
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local copy = require "copy"
local S = torch.optim.lr_scheduler
local REQ = U.REQUIRED

local swa = {}
torch.optim.swa_utils = swa

local function count(n) return torch.is_tensor(n) and n:item() or n end

-- avg_fn(averaged, current, num_averaged) -> the new average of one tensor
function swa.get_swa_avg_fn()
  return function(avg, current, n) return avg + (current - avg) / (count(n) + 1) end
end

function swa.get_ema_avg_fn(decay)
  decay = decay or 0.999
  if type(decay) ~= "number" or decay < 0 or decay > 1 then
    U.errorf("Invalid decay value %s provided. Please provide a value in [0,1] range.", tostring(decay))
  end
  return function(ema, current) return ema * decay + current * (1 - decay) end
end

-- one tensor's SWA step in place; an integer tensor (num_batches_tracked) takes the
-- float mean truncated, as PyTorch's copy_ of it does
local function swa_step(a, c, n)
  if a:is_floating_point() then a:add_(c - a, { alpha = 1 / (n + 1) })
  else a:copy_(a + (c - a) / (n + 1)) end
end

-- multi_avg_fn(averaged_list, current_list, num_averaged) updates the averages in place
function swa.get_swa_multi_avg_fn()
  return function(avgs, currents, n)
    n = count(n)
    for i, a in ipairs(avgs) do swa_step(a, currents[i], n) end
  end
end

function swa.get_ema_multi_avg_fn(decay)
  local one = swa.get_ema_avg_fn(decay) -- checks decay
  return function(avgs, currents)
    for i, a in ipairs(avgs) do a:copy_(one(a, currents[i])) end
  end
end

-- ---- AveragedModel ----

local AveragedModel = Module:extend("AveragedModel")
swa.AveragedModel = AveragedModel

function AveragedModel:__init(...)
  local o = U.parse("AveragedModel", { { "model", REQ }, { "device" }, { "avg_fn" }, { "multi_avg_fn" },
    { "use_buffers", false } }, ...)
  if not Module.is_module(o.model) then U.errorf("AveragedModel: model must be a module, got %s", U.typename(o.model)) end
  self.module = copy.deepcopy(o.model)
  if o.device ~= nil then self.module:to(o.device) end
  self:register_buffer("n_averaged", torch.tensor(0, { dtype = torch.int64, device = o.device }))
  self.avg_fn, self.multi_avg_fn, self.use_buffers = o.avg_fn, o.multi_avg_fn, o.use_buffers
end

function AveragedModel:forward(...) return self.module(...) end

local function averaged_tensors(m, use_buffers)
  local out = {}
  for _, p in ipairs(m:parameters()) do out[#out + 1] = p end
  if use_buffers then
    for _, b in ipairs(m:buffers()) do out[#out + 1] = b end
  end
  return out
end

-- Fold model's current parameters (and buffers, with use_buffers) into the average.
function AveragedModel:update_parameters(model)
  if not Module.is_module(model) then U.errorf("update_parameters: model must be a module, got %s", U.typename(model)) end
  local _ <close> = torch.no_grad()
  local mine = averaged_tensors(self.module, self.use_buffers)
  local theirs = averaged_tensors(model, self.use_buffers)
  if #mine ~= #theirs then
    U.errorf("update_parameters: the model has %d tensors to average, the averaged model %d", #theirs, #mine)
  end
  local n = self.n_averaged:item()
  local avgs, currents = {}, {}
  for i, a in ipairs(mine) do
    a = a:detach()
    local c = theirs[i]:detach():to(a.device)
    if #a.shape ~= #c.shape or a:numel() ~= c:numel() then
      U.errorf("update_parameters: tensor %d has shape %s in the model and %s in the average", i - 1,
        tostring(c.shape), tostring(a.shape))
    end
    if n == 0 then a:copy_(c) end
    avgs[i], currents[i] = a, c
  end
  if n > 0 then
    local num = self.n_averaged:to(mine[1] and mine[1].device or "cpu")
    if self.multi_avg_fn then
      self.multi_avg_fn(avgs, currents, num)
    else
      local f = self.avg_fn
      for i, a in ipairs(avgs) do
        if f then a:copy_(f(a, currents[i], num)) else swa_step(a, currents[i], n) end
      end
    end
  end
  if not self.use_buffers then -- buffers are not averaged: they follow the model's
    local bs, src = self.module:buffers(), model:buffers()
    for i, b in ipairs(bs) do
      if src[i] then b:detach():copy_(src[i]:detach():to(b.device)) end
    end
  end
  self.n_averaged:add_(1)
end

-- ---- SWALR ----

local anneal = {
  cos = function(t) return (1 - math.cos(math.pi * t)) / 2 end,
  linear = function(t) return t end,
}

local SWALR = S._define("SWALR",
  { { "swa_lr", REQ }, { "anneal_epochs", 10 }, { "anneal_strategy", "cos" }, { "last_epoch", -1 } },
  function(self, o, opt)
    if type(opt) ~= "table" or type(opt.param_groups) ~= "table" then U.error("SWALR: the first argument is not an Optimizer") end
    for i, v in ipairs(S._per_group("swa_lr", opt, o.swa_lr)) do opt.param_groups[i].swa_lr = v end
    if anneal[o.anneal_strategy] == nil then
      U.errorf("anneal_strategy must by one of 'cos' or 'linear', instead got %s", tostring(o.anneal_strategy))
    end
    self.anneal_strategy = o.anneal_strategy
    if math.type(o.anneal_epochs) ~= "integer" or o.anneal_epochs < 0 then
      U.errorf("anneal_epochs must be equal or greater than 0, got %s", tostring(o.anneal_epochs))
    end
    self.anneal_epochs = o.anneal_epochs
    S.LRScheduler.__init(self, opt, o.last_epoch)
  end, swa)

-- The lr moves from where the annealing started to swa_lr; the start is recovered from
-- the current lr and the previous step's weight, so other changes to lr carry through.
function SWALR:get_lr()
  local f = anneal[self.anneal_strategy]
  local step = self._step_count - 1
  if self.anneal_epochs == 0 then step = math.max(1, step) end
  local span = math.max(1, self.anneal_epochs)
  local prev_alpha = f(math.max(0, math.min(1, (step - 1) / span)))
  local alpha = f(math.max(0, math.min(1, step / span)))
  local out = {}
  for i, g in ipairs(self.optimizer.param_groups) do
    local start = prev_alpha == 1 and g.swa_lr or (g.lr - prev_alpha * g.swa_lr) / (1 - prev_alpha)
    out[i] = g.swa_lr * alpha + start * (1 - alpha)
  end
  return out
end

-- ---- update_bn ----

-- The first value of each batch: a DataLoader's, a list's items (a tensor, or a list whose first is the input).
local function inputs_of(loader)
  if type(loader) == "table" and type(loader.iter) == "function" then
    local it = loader:iter()
    return function() return (it()) end
  end
  if type(loader) == "table" then
    local i = 0
    return function()
      i = i + 1
      local b = loader[i]
      if type(b) == "table" and not torch.is_tensor(b) then b = b[1] end
      return b
    end
  end
  if type(loader) == "function" then return loader end
  U.errorf("update_bn: loader must be a DataLoader, a list of batches or an iterator function, got %s", type(loader))
end

function swa.update_bn(loader, model, device)
  if not Module.is_module(model) then U.errorf("update_bn: model must be a module, got %s", U.typename(model)) end
  local BatchNorm = require("nn_norm")._BatchNorm
  local norms, momenta = {}, {}
  for _, m in ipairs(model:modules()) do
    if m:isinstance(BatchNorm) and not m._is_instance_norm and m.track_running_stats then
      m:reset_running_stats()
      norms[#norms + 1], momenta[#norms + 1] = m, m.momentum
    end
  end
  if #norms == 0 then return end
  local was_training = model.training
  model:train()
  for _, m in ipairs(norms) do m.momentum = nil end -- a cumulative average over the pass
  local ok, err = pcall(function()
    local _ <close> = torch.no_grad()
    for x in inputs_of(loader) do
      if device ~= nil then x = x:to(device) end
      model(x)
    end
  end)
  for i, m in ipairs(norms) do m.momentum = momenta[i] end
  model:train(was_training)
  if not ok then error(err, 0) end
end

return swa
