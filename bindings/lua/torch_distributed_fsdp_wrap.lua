-- torch.distributed.fsdp.wrap: auto-wrap policies for FullyShardedDataParallel. A policy is
-- called as policy(module, recurse, nonwrapped_numel): with recurse=true it says whether to look
-- into the module's children, with recurse=false whether to wrap the module (whose parameters
-- not already in a wrapped child number nonwrapped_numel). Python's functools.partial is the
-- one-table call:
--   wrap.size_based_auto_wrap_policy{min_num_params = 1e5}            -- a policy
--   wrap.transformer_auto_wrap_policy{transformer_layer_cls = {Block}}
--   wrap.ModuleWrapPolicy({nn.Linear})
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local fsdp = torch.distributed.fsdp

local wrap = {}
fsdp.wrap = wrap

local function isinstance(m, classes)
  for _, c in ipairs(classes) do
    if m:isinstance(c) then return true end
  end
  return false
end

local function class_list(fn, v)
  if type(v) == "table" and v.__name and not v[1] then v = { v } end
  if type(v) ~= "table" then U.errorf("%s: expected a list of module classes, got %s", fn, U.typename(v)) end
  for _, c in ipairs(v) do
    if type(c) ~= "table" or not c.__name or Module.is_module(c) then
      U.errorf("%s: expected module classes (e.g. nn.Linear), got %s", fn, U.typename(c))
    end
  end
  return v
end

-- a policy given either its module arguments or, as functools.partial, only its options
local function partial(fn, spec, body)
  return function(module, ...)
    if U.is_opts(module) then
      local o = U.parse(fn, spec, module)
      return function(m, recurse, numel) return body(m, recurse, numel, o) end
    end
    if not Module.is_module(module) then U.errorf("%s: module must be an nn.Module, got %s", fn, U.typename(module)) end
    local o = U.parse(fn, { { "recurse", U.REQUIRED }, { "nonwrapped_numel", U.REQUIRED }, table.unpack(spec) }, ...)
    return body(module, o.recurse, o.nonwrapped_numel, o)
  end
end

local size_spec = { { "min_num_params", math.tointeger(1e8) }, { "force_leaf_modules" }, { "exclude_wrap_modules" } }
wrap.size_based_auto_wrap_policy = partial("size_based_auto_wrap_policy", size_spec, function(m, recurse, numel, o)
  local leaves = o.force_leaf_modules and class_list("size_based_auto_wrap_policy", o.force_leaf_modules)
    or { torch.nn.MultiheadAttention }
  local excluded = o.exclude_wrap_modules and class_list("size_based_auto_wrap_policy", o.exclude_wrap_modules)
    or { torch.nn.ModuleList, torch.nn.ModuleDict }
  if recurse then return not isinstance(m, leaves) end
  return numel >= o.min_num_params and not isinstance(m, excluded)
end)

wrap.transformer_auto_wrap_policy = partial("transformer_auto_wrap_policy", { { "transformer_layer_cls", U.REQUIRED } },
  function(m, recurse, _, o)
    if recurse then return true end
    return isinstance(m, class_list("transformer_auto_wrap_policy", o.transformer_layer_cls))
  end)

wrap.always_wrap_policy = function() return true end

-- ModuleWrapPolicy(module_classes): wrap every module of those classes
local MWP = { __name = "torch.distributed.fsdp.wrap.ModuleWrapPolicy" }
MWP.__index = MWP
MWP.__call = function(p, m, recurse) return recurse or isinstance(m, p._classes) end
MWP.__tostring = function(p)
  local names = {}
  for i, c in ipairs(p._classes) do names[i] = c.__name end
  return "ModuleWrapPolicy({" .. table.concat(names, ", ") .. "})"
end
function wrap.ModuleWrapPolicy(module_classes)
  local p = setmetatable({ _classes = class_list("ModuleWrapPolicy", module_classes) }, MWP)
  p._policy = function(m, recurse) return MWP.__call(p, m, recurse) end
  return p
end

return wrap
