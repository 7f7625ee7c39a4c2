-- torch.autograd.forward_ad: dual_level, enter_dual_level / exit_dual_level, make_dual,
-- unpack_dual, UnpackedDualTensor, with PyTorch 2.x's names and errors.
--
-- Duals are lazy here: no tangent travels with the forward computation.
--   * make_dual(t, tangent) returns a differentiable alias of t (a requires-grad leaf sharing
--     t's storage, or a view on t's graph when t requires grad) and records the tangent in the
--     current level's table.
--   * unpack_dual(y) computes y's tangent AT UNPACK TIME: sum_i J_i tangent_i over the duals of
--     the level, by double backward (bindings/lua/jvp_util.lua): two backward passes through
--     the graph recorded from the duals to y. So the computation between make_dual and
--     unpack_dual must run with grad mode on (PyTorch's forward AD ignores no_grad), every op
--     on the path needs a differentiable backward, and a tangent computed this way is not
--     itself differentiable. y's primal is y itself (a dual's is a view of the tensor given to
--     make_dual); y's tangent is nil when y depends on no dual.
-- Only one level at a time, as in PyTorch; exiting it forgets its tangents.
local torch = require "torch"
local U = require "nn_util"
local JVP = require "jvp_util"

local fwad = {}
local current = -1
local levels = {} -- level -> { duals = {list}, tangent = {dual -> tangent}, primal = {dual -> tensor} }

function fwad.enter_dual_level()
  if current >= 0 then U.errorf("Nested forward mode AD is not supported at the moment") end
  current = current + 1
  levels[current] = { duals = {}, tangent = {}, primal = {} }
  return current
end

function fwad.exit_dual_level(...)
  local o = U.parse("exit_dual_level", { { "level" } }, ...)
  local level = o.level == nil and current or o.level
  if level ~= current or current < 0 then
    U.errorf("Trying to exit a forward AD level that was not the last one that was created. This is not supported.")
  end
  levels[level] = nil
  current = level - 1
end

-- dual_level(): a to-be-closed value (local _ <close> = fwAD.dual_level()) or, given a
-- function, runs it inside a level and returns its results
function fwad.dual_level(fn, ...)
  fwad.enter_dual_level()
  return U.scoped(function() fwad.exit_dual_level() end, fn, ...)
end

local function level_of(name, level)
  if level == nil then level = current end
  if math.type(level) ~= "integer" then U.errorf("%s: level must be an int, got %s", name, U.typename(level)) end
  return level
end

-- make_dual(tensor, tangent, {level=nil})
function fwad.make_dual(tensor, tangent, ...)
  local o = U.parse("make_dual", { { "level" } }, ...)
  local level = level_of("make_dual", o.level)
  if level < 0 then
    U.errorf("Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first.")
  end
  local reg = levels[level]
  if not reg then U.errorf("make_dual: level %d is not an active forward AD level", level) end
  if not torch.is_tensor(tensor) then U.errorf("make_dual: expected a Tensor as primal, got %s", U.typename(tensor)) end
  if not torch.is_tensor(tangent) then U.errorf("make_dual: expected a Tensor as tangent, got %s", U.typename(tangent)) end
  JVP.check_dual(tensor, tangent, true)
  if reg.tangent[tensor] then
    U.errorf("Making a dual Tensor based on a Tensor that already has a forward gradient at the same level %d is not supported.", level)
  end
  local _ <close> = torch.enable_grad()
  local dual = tensor.requires_grad and tensor:view_as(tensor) or tensor:detach():requires_grad_()
  reg.duals[#reg.duals + 1] = dual
  reg.tangent[dual], reg.primal[dual] = tangent, tensor
  return dual
end

-- UnpackedDualTensor(primal, tangent): fields primal and tangent, also [1] and [2]
local Unpacked = {
  __name = "UnpackedDualTensor",
  __tostring = function(u)
    return string.format("UnpackedDualTensor(primal=%s, tangent=%s)", tostring(u.primal), u.tangent == nil and "None" or tostring(u.tangent))
  end,
}
Unpacked.__index = function(u, k)
  if k == 1 then return rawget(u, "primal") end
  if k == 2 then return rawget(u, "tangent") end
end
function fwad.UnpackedDualTensor(primal, tangent)
  return setmetatable({ primal = primal, tangent = tangent }, Unpacked)
end

-- unpack_dual(tensor, {level=nil}) -> UnpackedDualTensor(primal, tangent); tangent computed now
function fwad.unpack_dual(tensor, ...)
  local o = U.parse("unpack_dual", { { "level" } }, ...)
  local level = level_of("unpack_dual", o.level)
  local reg = levels[level]
  if level < 0 or not reg or not torch.is_tensor(tensor) then return fwad.UnpackedDualTensor(tensor, nil) end
  local t = reg.tangent[tensor]
  if t ~= nil then
    local p = reg.primal[tensor]
    return fwad.UnpackedDualTensor(p:view_as(p), t)
  end
  if not tensor.requires_grad or #reg.duals == 0 then return fwad.UnpackedDualTensor(tensor, nil) end
  local tangents, dtype = {}, tensor.dtype
  for i, d in ipairs(reg.duals) do
    tangents[i] = reg.tangent[d]
    dtype = torch.promote_types(dtype, tangents[i].dtype)
  end
  local r = JVP.linear_map("unpack_dual", { tensor }, reg.duals)(tangents, false)
  -- a tangent of a wider dtype than its primal (make_dual keeps it) widens the result's, as
  -- PyTorch's tangent formulas promote
  local t = r[1]
  if t ~= nil and t.dtype ~= dtype then t = t:to(dtype) end
  return fwad.UnpackedDualTensor(tensor, t)
end

torch.autograd.forward_ad = fwad
return {}
