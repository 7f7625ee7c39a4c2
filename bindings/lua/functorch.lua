-- functorch, PyTorch's deprecated predecessor of torch.func (local ft = require "functorch"):
-- the transforms under their old names (the torch.func ones), and make_functional /
-- make_functional_with_buffers / combine_state_for_ensemble, which split a module into a
-- function and its state as Lua lists:
--   local func, params, buffers = ft.make_functional_with_buffers(model)
--   func(params, buffers, x)    -- model(x) with these parameters and buffers
-- func calls a deep copy of the module through torch.func.functional_call (nnrepl has no meta
-- device, so the copy keeps real, unused weights). Each builder warns once, as PyTorch's do.
require "torch_func"
require "torch_func_stack"
local torch = require "torch"
local U = require "nn_util"
local copy = require "copy"

local ft = {}
for _, name in ipairs({ "vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize",
  "functional_call" }) do
  ft[name] = torch.func[name]
end

local warned = {}
local function deprecated(name)
  if warned[name] then return end
  warned[name] = true
  U.warn(string.format("functorch.%s is deprecated since PyTorch 2.0: use torch.func.%s instead (see the torch.func migration guide)",
    name, name == "combine_state_for_ensemble" and "stack_module_state" or "functional_call"), "FutureWarning")
end

local function check_module(name, model)
  if not torch.nn.Module.is_module(model) then U.errorf("%s: expected an nn.Module, got %s", name, U.typename(model)) end
end

-- the names and tensors of model's parameters or buffers, as two lists
local function state(list, detach)
  local names, values = {}, {}
  for name, t in list do
    names[#names + 1] = name
    values[#values + 1] = detach and t:detach() or t
  end
  return names, values
end

local function as_dict(fname, what, names, values)
  if type(values) ~= "table" or #values ~= #names then
    U.errorf("%s: expected %d %s, got %s", fname, #names, what, type(values) == "table" and tostring(#values) or U.typename(values))
  end
  local d = {}
  for i, name in ipairs(names) do d[name] = values[i] end
  return d
end

-- make_functional(model, {disable_autograd_tracking=false}) -> func, params
function ft.make_functional(model, ...)
  local o = U.parse("make_functional", { { "disable_autograd_tracking", false } }, ...)
  check_module("make_functional", model)
  deprecated("make_functional")
  if #model:buffers() > 0 then
    U.error("make_functional(model): `model` has buffers. Please use make_functional_with_buffers(model) instead.")
  end
  local names, params = state(model:named_parameters(), o.disable_autograd_tracking)
  local stateless = copy.deepcopy(model)
  local function func(p, ...)
    return torch.func.functional_call(stateless, as_dict("make_functional", "parameters", names, p), { ... })
  end
  return func, params
end

-- make_functional_with_buffers(model, {disable_autograd_tracking=false}) -> func, params, buffers
function ft.make_functional_with_buffers(model, ...)
  local o = U.parse("make_functional_with_buffers", { { "disable_autograd_tracking", false } }, ...)
  check_module("make_functional_with_buffers", model)
  deprecated("make_functional_with_buffers")
  local pnames, params = state(model:named_parameters(), o.disable_autograd_tracking)
  local bnames, buffers = state(model:named_buffers(), false)
  local stateless = copy.deepcopy(model)
  local function func(p, b, ...)
    local fname = "make_functional_with_buffers"
    return torch.func.functional_call(stateless,
      { as_dict(fname, "parameters", pnames, p), as_dict(fname, "buffers", bnames, b) }, { ... })
  end
  return func, params, buffers
end

-- combine_state_for_ensemble(models) -> func, params, buffers: each stacked over the models
-- (a leading dim of #models), for vmap(func)(params, buffers, x)
function ft.combine_state_for_ensemble(models)
  deprecated("combine_state_for_ensemble")
  local P, B = torch.func.stack_module_state(models)
  local func = ft.make_functional_with_buffers(models[1])
  return func, P:values(), B:values()
end

return ft
