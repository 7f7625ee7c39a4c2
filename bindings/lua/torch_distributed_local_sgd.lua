-- Local SGD and model averaging, as PyTorch's:
--   torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook (PostLocalSGDState, post_localSGD_hook)
--   torch.distributed.algorithms.model_averaging.utils (average_parameters, get_params_to_average,
--     average_parameters_or_parameter_groups)
--   torch.distributed.algorithms.model_averaging.averagers (ModelAverager, PeriodicModelAverager)
--   torch.distributed.algorithms.model_averaging.hierarchical_model_averager (HierarchicalModelAverager)
--   torch.distributed.optim.PostLocalSGDOptimizer
--
--   local state = post.PostLocalSGDState(nil, nil, 100)     -- all-reduce gradients for 100 steps
--   model:register_comm_hook(state, post.post_localSGD_hook) -- then each rank steps on its own
--   local opt = dist.optim.PostLocalSGDOptimizer(torch.optim.SGD(model:parameters(), {lr = 0.01}),
--     averagers.PeriodicModelAverager(4, 100))              -- and parameters are averaged every 4 steps
local torch = require "torch"
local U = require "nn_util"
local futures = require "torch_futures"
local dist = require "torch_distributed"
local default_hooks = require "torch_distributed_hooks"

local function group_of(process_group) return process_group or dist.group.WORLD end

local function new_class(name)
  local cls = { __name = name }
  cls.__index = cls
  return cls
end

-- ---- post_localSGD_hook ----
local post = {}
dist.algorithms.ddp_comm_hooks.post_localSGD_hook = post

local PostLocalSGDState = new_class("torch.distributed.algorithms.ddp_comm_hooks.post_localSGD_hook.PostLocalSGDState")
post.PostLocalSGDState = PostLocalSGDState

setmetatable(PostLocalSGDState, { __call = function(cls, ...)
  local fname = "PostLocalSGDState"
  local o = U.parse(fname, { { "process_group" }, { "subgroup" }, { "start_localSGD_iter", U.REQUIRED },
    { "post_local_gradient_allreduce", true } }, ...)
  return setmetatable({
    process_group = o.process_group,
    subgroup = o.subgroup,
    start_localSGD_iter = U.check_int(fname, "start_localSGD_iter", o.start_localSGD_iter),
    post_local_gradient_allreduce = o.post_local_gradient_allreduce and true or false,
    iter = 0,
  }, cls)
end })

function PostLocalSGDState:maybe_increase_iter(bucket)
  if bucket:is_last() then self.iter = self.iter + 1 end
end

-- Gradients averaged over process_group for the first start_localSGD_iter steps; then over
-- subgroup (the ranks of one node by default: dist.new_subgroups(), made at that moment by
-- every rank), or not at all without post_local_gradient_allreduce. Parameters are then
-- averaged by a model averager after the optimizer's step.
function post.post_localSGD_hook(state, bucket)
  if getmetatable(state) ~= PostLocalSGDState then
    U.errorf("post_localSGD_hook: state must be a PostLocalSGDState, got %s", U.typename(state))
  end
  if state.iter < state.start_localSGD_iter then
    state:maybe_increase_iter(bucket)
    return default_hooks.allreduce_hook(group_of(state.process_group), bucket)
  end
  if not state.post_local_gradient_allreduce then
    local fut = futures.Future()
    fut:set_result(bucket:buffer())
    return fut
  end
  if state.subgroup == nil then state.subgroup = dist.new_subgroups() end
  return default_hooks.allreduce_hook(state.subgroup, bucket)
end

-- ---- model_averaging.utils ----
local model_averaging = {}
dist.algorithms.model_averaging = model_averaging
local utils = {}
model_averaging.utils = utils

local function in_group(group)
  return group == dist.group.WORLD or dist.get_rank(group) >= 0
end

-- The parameters averaged in place over process_group (one all-reduce of them all, flattened
-- into the promoted dtype); a rank outside the group leaves them as they are.
function utils.average_parameters(params, process_group)
  local group = group_of(process_group)
  if type(params) == "function" then
    local list = {}
    for p in params do list[#list + 1] = p end
    params = list
  end
  if type(params) ~= "table" then U.errorf("average_parameters: params must be a list of tensors, got %s", U.typename(params)) end
  if not in_group(group) then return end
  if #params == 0 then return end
  local flat = {}
  for i, p in ipairs(params) do
    if not torch.is_tensor(p) then U.errorf("average_parameters: params[%d] is a %s, not a Tensor", i, U.typename(p)) end
    flat[i] = p:detach():reshape(-1)
  end
  local all = torch.cat(flat)
  all:div_(dist.get_world_size(group))
  dist.all_reduce(all, { group = group })
  local _ <close> = torch.no_grad()
  local at = 0
  for _, p in ipairs(params) do
    local n = p:numel()
    p:copy_(all:narrow(0, at, n):view_as(p))
    at = at + n
  end
end

-- the parameters with a gradient, from a list of parameters or of parameter groups
function utils.get_params_to_average(params)
  local out = {}
  for _, x in ipairs(params) do
    if torch.is_tensor(x) then
      if x.grad ~= nil then out[#out + 1] = x end
    elseif type(x) == "table" and x.params ~= nil then
      for _, p in ipairs(x.params) do
        if p.grad ~= nil then out[#out + 1] = p end
      end
    else
      U.errorf("Parameter input of type %s is not supported", U.typename(x))
    end
  end
  return out
end

function utils.average_parameters_or_parameter_groups(params, process_group)
  utils.average_parameters(utils.get_params_to_average(params), process_group)
end

-- ---- model_averaging.averagers ----
local averagers = {}
model_averaging.averagers = averagers

local ModelAverager = new_class("torch.distributed.algorithms.model_averaging.averagers.ModelAverager")
averagers.ModelAverager = ModelAverager

function ModelAverager:__init(process_group)
  self.process_group = group_of(process_group)
  self.step = 0
end

function ModelAverager:average_parameters()
  U.errorf("%s does not implement average_parameters", getmetatable(self).__name)
end

local function subclass(base, name, init)
  local cls = new_class(name)
  setmetatable(cls, { __index = base, __call = function(c, ...)
    local o = setmetatable({}, c)
    init(o, ...)
    return o
  end })
  return cls
end

local function check_warmup(fname, warmup_steps)
  warmup_steps = U.check_int(fname, "warmup_steps", warmup_steps)
  if warmup_steps < 0 then U.error("Arg ``warmup_steps`` must be a non-negative number.") end
  return warmup_steps
end

-- Parameters averaged at step warmup_steps and every period steps after it (average_parameters
-- counts the steps: call it once after each optimizer step).
local PeriodicModelAverager = subclass(ModelAverager, "torch.distributed.algorithms.model_averaging.averagers.PeriodicModelAverager",
  function(self, ...)
    local fname = "PeriodicModelAverager"
    local o = U.parse(fname, { { "period", U.REQUIRED }, { "warmup_steps", 0 }, { "process_group" } }, ...)
    ModelAverager.__init(self, o.process_group)
    self.warmup_steps = check_warmup(fname, o.warmup_steps)
    local period = U.check_int(fname, "period", o.period)
    if period < 1 then U.error("Arg ``period`` must be a positive value.") end
    if period == 1 then
      U.warn("When period is 1, no need to use model averaging because the communication cost of all-reducing parameters " ..
        "will be no less than the cost of all-reducing gradients by DistributedDataParallel in the backward pass. " ..
        "Therefore, only DistributedDataParallel should be used for this case.")
    end
    self.period = period
  end)
averagers.PeriodicModelAverager = PeriodicModelAverager

-- params: model:parameters() or an optimizer's param_groups (those with a gradient are averaged)
function PeriodicModelAverager:average_parameters(params)
  if self.step >= self.warmup_steps and (self.step - self.warmup_steps) % self.period == 0 then
    utils.average_parameters_or_parameter_groups(params, self.process_group)
  end
  self.step = self.step + 1
end

-- ---- model_averaging.hierarchical_model_averager ----
-- period_group_size_dict: periods to group sizes, as a list of {period, group_size} pairs
-- (periods increasing) or a table {[period] = group_size} (taken by increasing period); the last
-- size is the whole group's. At a step, the parameters are averaged over the subgroups of the
-- largest period dividing it (groups of consecutive ranks, made by dist.new_subgroups).
local HierarchicalModelAverager = subclass(ModelAverager,
  "torch.distributed.algorithms.model_averaging.hierarchical_model_averager.HierarchicalModelAverager",
  function(self, ...)
    local fname = "HierarchicalModelAverager"
    local o = U.parse(fname, { { "period_group_size_dict" }, { "warmup_steps", 0 }, { "process_group" } }, ...)
    ModelAverager.__init(self, o.process_group)
    local pairs_list = {}
    local d = o.period_group_size_dict
    if type(d) == "table" and type(rawget(d, 1)) == "table" then
      for i, pr in ipairs(d) do
        if type(pr) ~= "table" or pr[1] == nil or pr[2] == nil then
          U.errorf("%s: period_group_size_dict[%d] must be a {period, group_size} pair", fname, i)
        end
        pairs_list[i] = { pr[1], pr[2] }
      end
    elseif type(d) == "table" then -- {[period] = group_size, ...}: by increasing period
      for k, v in pairs(d) do pairs_list[#pairs_list + 1] = { k, v } end
      table.sort(pairs_list, function(a, b) return a[1] < b[1] end)
    end
    if #pairs_list == 0 then U.error("Arg ``period_group_size_dict`` must not be empty.") end
    self._periods = {}
    for i, pr in ipairs(pairs_list) do
      self._periods[i] = U.check_int(fname, "a period", pr[1])
      if i > 1 and self._periods[i] <= self._periods[i - 1] then
        U.errorf("%s: the periods of period_group_size_dict must increase, got %d after %d", fname, self._periods[i], self._periods[i - 1])
      end
    end
    if self._periods[1] <= 0 then
      U.error("The minimum period in arg ``period_group_size_dict`` must be a positive value.")
    elseif self._periods[#self._periods] == 1 then
      U.warn("When the maximum period in arg ``period_group_size_dict`` is 1, no need to use model averaging because " ..
        "the communication cost of all-reducing parameters will be no less than the cost of all-reducing gradients by " ..
        "DistributedDataParallel in the backward pass. Therefore, only DistributedDataParallel should be used for this case.")
    end
    local overall = dist.get_world_size(self.process_group)
    local last = pairs_list[#pairs_list][2]
    if last ~= overall then
      U.errorf("The last value in arg ``period_process_group_dict`` %s must be equal to the size of arg ``process_group`` %d.",
        tostring(last), overall)
    end
    self.warmup_steps = check_warmup(fname, o.warmup_steps)
    self.period_process_group_dict = {}
    for _, pr in ipairs(pairs_list) do
      local size = U.check_int(fname, "a group size", pr[2])
      if size ~= overall then
        self.period_process_group_dict[pr[1]] = dist.new_subgroups(size, { group = self.process_group })
      else
        self.period_process_group_dict[pr[1]] = self.process_group
      end
    end
  end)
model_averaging.hierarchical_model_averager = { HierarchicalModelAverager = HierarchicalModelAverager }

-- the group of the largest period that divides the step, or nil
function HierarchicalModelAverager:_find_process_group()
  for i = #self._periods, 1, -1 do
    local period = self._periods[i]
    if self.step % period == 0 then return self.period_process_group_dict[period] end
  end
  return nil
end

function HierarchicalModelAverager:average_parameters(params)
  if self.step >= self.warmup_steps then
    local group = self:_find_process_group()
    if group ~= nil then utils.average_parameters_or_parameter_groups(params, group) end
  end
  self.step = self.step + 1
end

-- ---- torch.distributed.optim.PostLocalSGDOptimizer ----
dist.optim = dist.optim or {}

-- optim's step, then averager:average_parameters(optim.param_groups); its state dict has
-- the averager's step count under "step"
local PostLocalSGDOptimizer = { __name = "PostLocalSGDOptimizer" }
dist.optim.PostLocalSGDOptimizer = PostLocalSGDOptimizer
PostLocalSGDOptimizer.__index = function(self, k)
  if k == "state" then return rawget(self, "optim").state end
  if k == "defaults" then return rawget(self, "optim").defaults end
  return PostLocalSGDOptimizer[k]
end
PostLocalSGDOptimizer.__tostring = function(self) return tostring(self.optim) end

setmetatable(PostLocalSGDOptimizer, { __call = function(cls, ...)
  local o = U.parse("PostLocalSGDOptimizer", { { "optim", U.REQUIRED }, { "averager", U.REQUIRED } }, ...)
  if type(o.optim) ~= "table" or type(o.optim.step) ~= "function" or o.optim.param_groups == nil then
    U.errorf("PostLocalSGDOptimizer: optim must be an optimizer, got %s", U.typename(o.optim))
  end
  if type(o.averager) ~= "table" or type(o.averager.average_parameters) ~= "function" then
    U.errorf("PostLocalSGDOptimizer: averager must be a model averager, got %s", U.typename(o.averager))
  end
  return setmetatable({ optim = o.optim, averager = o.averager, param_groups = o.optim.param_groups }, cls)
end })

function PostLocalSGDOptimizer:step()
  self.optim:step()
  self.averager:average_parameters(self.param_groups)
end

function PostLocalSGDOptimizer:zero_grad(...) return self.optim:zero_grad(...) end
function PostLocalSGDOptimizer:add_param_group(g) return self.optim:add_param_group(g) end

function PostLocalSGDOptimizer:state_dict()
  local sd = self.optim:state_dict()
  sd.step = self.averager.step
  return sd
end

function PostLocalSGDOptimizer:load_state_dict(sd)
  self.optim:load_state_dict(sd)
  self.param_groups = self.optim.param_groups
  if type(sd) == "table" and sd.step ~= nil then
    self.averager.step = sd.step
  else
    U.warn("Loaded state dict does not contain a step counter for an averager. Setting step counter to 0.")
    self.averager.step = 0
  end
end

return { post_localSGD_hook = post, model_averaging = model_averaging, PostLocalSGDOptimizer = PostLocalSGDOptimizer }
