-- Optimizer hooks, as PyTorch's: opt:register_step_pre_hook / register_step_post_hook,
-- register_state_dict_pre_hook / _post_hook, register_load_state_dict_pre_hook / _post_hook,
-- and the global torch.optim.optimizer.register_optimizer_step_pre_hook / _post_hook; each
-- returns a torch.utils.hooks.RemovableHandle.
--   step pre hook(opt, args, kwargs) -> nil, or new args and kwargs (two values); args is
--     {opt, step's arguments...} as Python's (args[1] is the optimizer), kwargs a table
--   step post hook(opt, args, kwargs)
--   state_dict pre hook(opt); post hook(opt, state_dict) -> nil or a new state dict
--   load_state_dict pre hook(opt, state_dict) -> nil or a new state dict; post hook(opt)
-- Like PyTorch's Optimizer.__init__, Optimizer.__init wraps the class's step (and here its
-- state_dict and load_state_dict too) once, so every optimizer class, built in or written in
-- Lua, runs the hooks. Global step pre hooks run before the optimizer's, global post hooks after.
local torch = require "torch"
local U = require "nn_util"
local hooks = require "torch_utils_hooks"
require "torch_optim"
local optim = torch.optim
local Optimizer = optim.Optimizer
local OD = U.OrderedDict

optim.optimizer = optim.optimizer or {}
local M = optim.optimizer
M.Optimizer = Optimizer
M._global_optimizer_pre_hooks = OD.new()
M._global_optimizer_post_hooks = OD.new()

function M.register_optimizer_step_pre_hook(hook) return hooks._register(M._global_optimizer_pre_hooks, hook) end
function M.register_optimizer_step_post_hook(hook) return hooks._register(M._global_optimizer_post_hooks, hook) end

-- the optimizer's hook dict called name (made on first use: classes may skip Optimizer.__init)
local function dict(self, name)
  local d = rawget(self, name)
  if d == nil then
    d = OD.new()
    rawset(self, name, d)
  end
  return d
end

local function values(self, name)
  local d = rawget(self, name)
  return d and d:values() or {}
end

function Optimizer:register_step_pre_hook(hook) return hooks._register(dict(self, "_optimizer_step_pre_hooks"), hook) end
function Optimizer:register_step_post_hook(hook) return hooks._register(dict(self, "_optimizer_step_post_hooks"), hook) end

-- the state dict hooks take prepend= (run before the hooks already registered)
for name, field in pairs({ register_state_dict_pre_hook = "_optimizer_state_dict_pre_hooks",
  register_state_dict_post_hook = "_optimizer_state_dict_post_hooks",
  register_load_state_dict_pre_hook = "_optimizer_load_state_dict_pre_hooks",
  register_load_state_dict_post_hook = "_optimizer_load_state_dict_post_hooks" }) do
  Optimizer[name] = function(self, hook, ...)
    return hooks._register(dict(self, field), hook, U.parse(name, { { "prepend", false } }, ...).prepend)
  end
end

local wrapped = setmetatable({}, { __mode = "k" })
local in_step = setmetatable({}, { __mode = "k" }) -- a subclass's step calling its base's runs the hooks once

local function hooked_step(step)
  return function(self, ...)
    if in_step[self] then return step(self, ...) end
    local args, kwargs = table.pack(self, ...), {}
    for _, list in ipairs({ M._global_optimizer_pre_hooks:values(), values(self, "_optimizer_step_pre_hooks") }) do
      for _, hook in ipairs(list) do
        local new_args, new_kwargs = hook(self, args, kwargs)
        if new_args ~= nil then
          if type(new_args) ~= "table" or type(new_kwargs) ~= "table" then
            U.errorf("optimizer step pre hook must return nil or (new_args, new_kwargs), but got %s", U.typename(new_args))
          end
          args, kwargs = new_args, new_kwargs
          args.n = args.n or #args
        end
      end
    end
    local call = { table.unpack(args, 1, args.n) }
    local n = args.n
    if next(kwargs) ~= nil then n = n + 1; call[n] = kwargs end
    in_step[self] = true
    local out = table.pack(pcall(step, table.unpack(call, 1, n)))
    in_step[self] = nil
    if not out[1] then error(out[2], 0) end
    for _, list in ipairs({ values(self, "_optimizer_step_post_hooks"), M._global_optimizer_post_hooks:values() }) do
      for _, hook in ipairs(list) do hook(self, args, kwargs) end
    end
    return table.unpack(out, 2, out.n)
  end
end

local function hooked_state_dict(state_dict)
  return function(self, ...)
    for _, hook in ipairs(values(self, "_optimizer_state_dict_pre_hooks")) do hook(self) end
    local sd = state_dict(self, ...)
    for _, hook in ipairs(values(self, "_optimizer_state_dict_post_hooks")) do
      local r = hook(self, sd)
      if r ~= nil then sd = r end
    end
    return sd
  end
end

local function hooked_load_state_dict(load_state_dict)
  return function(self, sd, ...)
    if type(sd) == "table" and (getmetatable(sd) == nil or require("optim_state_dict").is(sd)) then -- a shallow copy, as PyTorch's
      local c = {}
      for k, v in pairs(sd) do c[k] = v end
      sd = c
    end
    for _, hook in ipairs(values(self, "_optimizer_load_state_dict_pre_hooks")) do
      local r = hook(self, sd)
      if r ~= nil then sd = r end
    end
    local out = table.pack(load_state_dict(self, sd, ...))
    for _, hook in ipairs(values(self, "_optimizer_load_state_dict_post_hooks")) do hook(self) end
    return table.unpack(out, 1, out.n)
  end
end

local wrappers = { step = hooked_step, state_dict = hooked_state_dict, load_state_dict = hooked_load_state_dict }

-- wraps cls's methods once (a subclass that inherits them inherits the wrapped ones)
local function patch_class(cls)
  for name, wrap in pairs(wrappers) do
    local f = cls[name]
    if type(f) == "function" and not wrapped[f] then
      local w = wrap(f)
      wrapped[w] = true
      rawset(cls, name, w)
    end
  end
end

local init = Optimizer.__init
function Optimizer:__init(...)
  init(self, ...)
  patch_class(getmetatable(self))
end

return M
