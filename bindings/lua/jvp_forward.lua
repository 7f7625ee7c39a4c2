-- Forward-mode AD by dual tensors, for torch.func.jvp: f runs once on DualTensors
-- { _p = primal, _t = tangent }, and every op with a rule computes its output's primal and tangent
-- together (the tangent J t by the op's own derivative), as PyTorch's forward-mode AD does. The
-- double-backward trick (jvp_util.lua) costs a forward and two backward passes, and inside vmap
-- it needs the primal computation batched at the tangents' levels; here the primal stays as it is
-- (a weight with tangents batched at a vmap level stays one tensor).
--
-- Primals and tangents may be BatchedTensors (jvp inside vmap): a rule computes with torch ops on
-- them, which go on to vmap's rules. A nil tangent is zero. The rules (jvp_forward_rules.lua) are
-- installed only while f runs (as vmap's are). An op without a rule raises "forward-mode: no rule
-- for ..."; M.run then returns nil and jvp runs f again by double backward, which needs no per-op
-- rule.
local torch = require "torch"

local M = { forward = 0, fallback = 0, last_fallback = nil }
local DT = { __name = "DualTensor" }
-- filled by jvp_forward_rules.lua: Tensor methods, torch.nn.functional functions and other torch
-- functions on duals; torch_names: torch functions that take their method's rule
local methods, F_rules, torch_rules, torch_names = {}, {}, {}, {}
M.methods, M.F_rules, M.torch_rules, M.torch_names = methods, F_rules, torch_rules, torch_names
local MARK = "forward-mode: no rule for "
local active = false

local function norule(what) error(MARK .. what, 0) end
M.norule = norule
local function is_dual(x) return getmetatable(x) == DT end
M.is = is_dual
local function dual(p, t)
  if t == nil then return p end
  return setmetatable({ _p = p, _t = t }, DT)
end
M.dual = dual
local function P(x) if is_dual(x) then return x._p end return x end
local function T(x) if is_dual(x) then return x._t end end
M.primal, M.tangent = P, T
function M.active() return active end

-- ---------------------------------------------------------------- DualTensor

local getters = {
  shape = function(x) return P(x).shape end,
  dtype = function(x) return P(x).dtype end,
  device = function(x) return P(x).device end,
  requires_grad = function(x) return P(x).requires_grad end,
  is_cuda = function(x) return P(x).is_cuda end,
  ndim = function(x) return P(x):dim() end,
  layout = function(x) return P(x).layout end,
  T = function(x)
    local d = {}
    for i = 1, P(x):dim() do d[i] = P(x):dim() - i end
    return methods.permute(x, d)
  end,
  mT = function(x) return methods.transpose(x, -2, -1) end,
}
DT.__index = function(self, k)
  local m = methods[k]
  if m then return m end
  local g = getters[k]
  if g then return g(self) end
  if math.type(k) == "integer" then return methods.select(self, 0, k) end
  if (type(k) == "table" and not is_dual(k)) or type(k) == "userdata" or (type(k) == "string" and k:find("[:,%d]")) then
    -- indexing with slices (x[":, 0"]), masks or index tensors picks elements: linear in the tensor
    return M.linear("indexing", function(v) return v[k] end)(self)
  end
  norule("Tensor." .. tostring(k))
end
DT.__newindex = function() norule("assignment into a DualTensor") end
DT.__len = function(x) return P(x):size(0) end
DT.__tostring = function(x) return tostring(P(x)) end -- (print(x) inside f shows the primal)
DT.__concat = function() norule("concatenation of a DualTensor") end
DT.__lt = function() norule("comparison of a DualTensor") end
DT.__le = DT.__lt
DT.__add = function(a, b) return methods.add(a, b) end
DT.__sub = function(a, b) return methods.sub(a, b) end
DT.__mul = function(a, b) return methods.mul(a, b) end
DT.__div = function(a, b) return methods.div(a, b) end
DT.__unm = function(a) return methods.neg(a) end
DT.__pow = function(a, b)
  if is_dual(a) and type(b) == "number" then return methods.pow(a, b) end
  norule("a ^ b with a dual exponent")
end
DT.__mod = function() norule("%") end
DT.__idiv = function() norule("//") end

-- ---------------------------------------------------------------- installation

local U = require "nn_util"
local installed = U.patches()
local function dispatcher(orig, rule) return U.dispatcher(is_dual, orig, rule) end

local function install()
  require "jvp_forward_rules"
  local F = torch.nn.functional
  for _, name in ipairs(torch_names) do
    local orig, rule = torch[name], methods[name]
    if type(orig) == "function" and rule then installed:put(torch, name, dispatcher(orig, rule)) end
  end
  for name, rule in pairs(torch_rules) do
    if type(torch[name]) == "function" then installed:put(torch, name, dispatcher(torch[name], rule)) end
  end
  local is_tensor = torch.is_tensor
  installed:put(torch, "is_tensor", function(v) return is_dual(v) or is_tensor(v) end)
  for _, name in ipairs({ "grad", "backward" }) do
    local orig = torch.autograd[name]
    installed:put(torch.autograd, name, dispatcher(orig, function() norule("torch.autograd." .. name) end))
  end
  for name, rule in pairs(F_rules) do
    if F[name] then installed:put(F, name, dispatcher(F[name], rule)) end
  end
  -- a plain tensor's operators and binary methods with a dual operand
  local TM = torch.Tensor
  for _, name in ipairs(M.plain_binary) do
    local orig, rule = TM[name], methods[name]
    if orig and rule then installed:put(TM, name, dispatcher(orig, rule)) end
  end
  local mt = getmetatable(torch.zeros(0))
  for _, mm in ipairs({ "__add", "__sub", "__mul", "__div", "__pow", "__mod", "__idiv" }) do
    local orig, op = mt[mm], DT[mm]
    installed:put(mt, mm, function(a, b)
      if is_dual(a) or is_dual(b) then return op(a, b) end
      return orig(a, b)
    end)
  end
end

-- the random generators' states (CPU and every GPU's), and a function that puts them back
local function rng_states()
  local cpu = torch.get_rng_state()
  local gpus = torch.cuda.is_available() and torch.cuda.get_rng_state_all() or nil
  return function()
    torch.set_rng_state(cpu)
    if gpus then torch.cuda.set_rng_state_all(gpus) end
  end
end

-- fn() with the rules installed: fn's results, or nil when it fails (the reason in
-- M.last_fallback; the random generators put back, so that f's second run draws what this one
-- drew). Any failure falls back, as vmap's do: an op without a rule raises the marker, but a
-- function that checks its arguments itself (a C function, or Lua code holding a function from
-- before the rules were installed) fails in its own words; f's own errors come again from
-- the second run.
function M.run(fn)
  if active then norule("a jvp inside a jvp") end
  local restore = rng_states()
  active = true
  install()
  local r = table.pack(pcall(fn))
  installed:undo()
  active = false
  if r[1] then
    M.forward = M.forward + 1
    return r
  end
  M.fallback = M.fallback + 1
  M.last_fallback = tostring(r[2])
  restore()
  return nil
end

return M
