-- torch.cond and torch.while_loop in eager semantics (what they do when not compiled):
--   torch.cond(pred, true_fn, false_fn, operands={}) -> true_fn(operands...) if pred else false_fn(...)
--     pred: a boolean or a one-element tensor; operands: a list of tensors (nested lists and
--     dicts of them, and numbers and booleans, allowed)
--   torch.while_loop(cond_fn, body_fn, carried_inputs) -> the carried values, as many results
--     while cond_fn(values...) holds, values = body_fn(values...); body_fn returns as many values
--     (several results, or one list of them) as carried_inputs holds
local torch = require "torch"
local U = require "nn_util"

local function callable(f) return type(f) == "function" or (getmetatable(f) ~= nil and getmetatable(f).__call ~= nil) end

-- whether every leaf of v is a tensor (or, with scalars_ok, a number or boolean)
local function tensor_leaves(v, scalars_ok)
  if torch.is_tensor(v) then return true end
  if scalars_ok and (type(v) == "number" or type(v) == "boolean") then return true end
  if type(v) == "table" and getmetatable(v) == nil then
    for _, x in pairs(v) do
      if not tensor_leaves(x, scalars_ok) then return false end
    end
    return true
  end
  return false
end

local function truth(fname, p)
  if type(p) == "boolean" then return p end
  if torch.is_tensor(p) and p:numel() == 1 then return p:item() ~= 0 and p:item() ~= false end
  U.errorf("%s: Expected pred to be bool or single-element tensor, but got %s.", fname, torch.is_tensor(p) and U.shape_str(p) .. " tensor" or U.typename(p))
end

function torch.cond(pred, true_fn, false_fn, operands)
  if not callable(true_fn) or not callable(false_fn) then U.error("Expect both branches to be callable.") end
  operands = operands or {}
  if not (type(operands) == "table" and getmetatable(operands) == nil) or not tensor_leaves(operands, true) then
    U.errorf("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists of tensor leaves, but got %s.",
      U.typename(operands))
  end
  local b = truth("cond", pred)
  if b then return true_fn(table.unpack(operands)) end
  return false_fn(table.unpack(operands))
end

function torch.while_loop(cond_fn, body_fn, carried_inputs)
  if not callable(cond_fn) or not callable(body_fn) then U.error("Expect cond_fn and body_fn to be callable.") end
  if not (type(carried_inputs) == "table" and getmetatable(carried_inputs) == nil) or not tensor_leaves(carried_inputs) then
    U.errorf("Expect carried_inputs to be a tuple of possibly nested dict/list/tuple that only consists of tensor leaves, but got %s.",
      U.typename(carried_inputs))
  end
  local n = #carried_inputs
  local vals = { table.unpack(carried_inputs, 1, n) }
  while true do
    local p = cond_fn(table.unpack(vals, 1, n))
    if not (type(p) == "boolean" or (torch.is_tensor(p) and p.dtype == torch.bool and p:numel() == 1)) then
      U.errorf("cond_fn must return a boolean scalar tensor or a boolean but got %s",
        torch.is_tensor(p) and tostring(p.dtype) .. " tensor of shape " .. U.shape_str(p) or U.typename(p))
    end
    if not truth("while_loop", p) then break end
    local out = table.pack(body_fn(table.unpack(vals, 1, n)))
    if out.n == 1 and type(out[1]) == "table" and getmetatable(out[1]) == nil and n ~= 1 then
      out = table.pack(table.unpack(out[1])) -- one list of the values (Python's tuple)
    end
    if out.n ~= n then
      U.errorf("body_fn should return the same number of elements as carried_inputs (%d), got %d", n, out.n)
    end
    vals = { table.unpack(out, 1, n) }
  end
  return table.unpack(vals, 1, n)
end
