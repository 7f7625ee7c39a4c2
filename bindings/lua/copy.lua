-- copy: Python's copy module for nnrepl values (`import copy` -> `local copy = require "copy"`).
--
--   copy.deepcopy(x): tensors cloned (a Parameter stays one; requires_grad and .grad are
--   copied), modules rebuilt with copies of their parameters, buffers and submodules (an EMA
--   or target network), tables copied through; what is reached twice is copied once, so tied
--   weights stay tied. Functions and other values are shared, as Python shares them.
--   copy.copy(x): a shallow copy of a table (same metatable); other values as they are.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"

local M = {}

local function deepcopy(v, memo)
  if type(v) ~= "table" and not torch.is_tensor(v) then return v end
  local done = memo[v]
  if done ~= nil then return done end
  if torch.is_tensor(v) then
    if v.grad_fn ~= nil then
      U.error("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.")
    end
    local c = v:detach():clone()
    if Parameter.is(v) then
      c = Parameter(c, v.requires_grad)
    elseif v.requires_grad then
      c:requires_grad_(true)
    end
    memo[v] = c
    local g = v.grad
    if g ~= nil then c.grad = deepcopy(g, memo) end
    return c
  end
  if Module.is_module(v) then return v:__deepcopy(memo, deepcopy) end
  if U.OrderedDict.is(v) then
    local c = U.OrderedDict.new()
    memo[v] = c
    for k, x in pairs(v) do c:set(k, deepcopy(x, memo)) end
    return c
  end
  local c = {}
  memo[v] = c
  for k, x in next, v do c[deepcopy(k, memo)] = deepcopy(x, memo) end
  return setmetatable(c, getmetatable(v))
end

function M.deepcopy(x, memo) return deepcopy(x, memo or {}) end

function M.copy(x)
  if type(x) ~= "table" or Module.is_module(x) or U.OrderedDict.is(x) then
    if Module.is_module(x) or U.OrderedDict.is(x) then U.error("copy.copy: use copy.deepcopy for modules and OrderedDicts") end
    return x
  end
  local c = {}
  for k, v in next, x do c[k] = v end
  return setmetatable(c, getmetatable(x))
end

return M
