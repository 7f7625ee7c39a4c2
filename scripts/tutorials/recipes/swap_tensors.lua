-- PyTorch recipe "Extension points in nn.Module for load_state_dict and tensor subclasses"
-- (recipes_source/recipes/swap_tensors.py) in Lua: its first two sections, torch.utils.swap_tensors
-- and why a module should keep its parameters' identity (an optimizer holds them).
--
--   nnrepl scripts/tutorials/recipes/swap_tensors.lua
--
-- Left out: the rest of the recipe defines a __torch_dispatch__ tensor subclass
-- (MyQuantizedLinearWeight) and turns on torch.__future__.set_swap_module_params_on_conversion;
-- nnrepl tensors have no subclasses or dispatch modes, so that part has no Lua counterpart.
-- Differences from the original:
-- * Python's id() check is rawequal; f-strings are string.format.
-- * optimizer.param_groups[0]['params'] is optimizer.param_groups[1].params (a Lua list), printed
--   as Python's list of tensors.
-- * (extra) the last lines do the reassignment again through swap_tensors, after which the
--   optimizer sees the new weight.
local t1 = torch.arange(2)
local t2 = torch.arange(3)
print(string.format("Before swapping, t1: %s, t2: %s", t1, t2))
torch.utils.swap_tensors(t1, t2)
print(string.format("After swapping, t1: %s, t2: %s", t1, t2))

local function list(ps)
  local out = {}
  for i, p in ipairs(ps) do out[i] = tostring(p) end
  return "[" .. table.concat(out, ", ") .. "]"
end

local mod = nn.Linear(1, 2, { bias = false })
local optimizer = optim.SGD(mod:parameters())
print(string.format("weight in mod: %s", mod.weight))
print(string.format("weight in optimizer: %s", list(optimizer.param_groups[1].params)))
mod.weight = nn.Parameter(2 * mod.weight)
print(string.format("weight in mod: %s", mod.weight))
print(string.format("weight in optimizer: %s", list(optimizer.param_groups[1].params)))

-- (extra) the same through swap_tensors: the optimizer's reference follows
mod = nn.Linear(1, 2, { bias = false })
optimizer = optim.SGD(mod:parameters())
torch.utils.swap_tensors(mod.weight, nn.Parameter(2 * mod.weight))
print(string.format("(extra) after swap_tensors, the optimizer holds mod.weight: %s",
  rawequal(optimizer.param_groups[1].params[1], mod.weight)))
