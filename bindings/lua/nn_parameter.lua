-- nn.Parameter(t, requires_grad=true): a leaf tensor sharing t's storage that
-- requires grad and that modules recognise as a parameter. Parameters are
-- ordinary Tensor userdata remembered in a weak-keyed set; nn.is_parameter(x)
-- (or nn.isinstance(x, nn.Parameter)) tells them apart. They print as PyTorch's:
-- "Parameter containing:\ntensor(...)".
local torch = require "torch"
local U = require "nn_util"

local set = setmetatable({}, { __mode = "k" })

local Parameter = {}

local function new(_, data, requires_grad)
  if U.is_opts(requires_grad) then
    local o = U.parse("Parameter", { { "data" }, { "requires_grad", true } }, data, requires_grad)
    data, requires_grad = o.data, o.requires_grad
  end
  if data == nil then data = torch.empty(0) end
  if not torch.is_tensor(data) then
    U.errorf("bad argument #1 to 'Parameter' (tensor expected, got %s)", U.typename(data))
  end
  if requires_grad == nil then requires_grad = true end
  local p = data:detach()
  if requires_grad then p:requires_grad_(true) end
  set[p] = true
  return p
end

setmetatable(Parameter, {
  __call = new,
  __tostring = function() return "<class 'torch.nn.parameter.Parameter'>" end,
})

function Parameter.is(v) return set[v] == true end

-- Mark an existing tensor as a parameter (in place; used when a module converts one).
function Parameter.mark(t) set[t] = true; return t end
function Parameter.unmark(t) set[t] = nil; return t end

-- Parameters print with PyTorch's prefix: wrap the Tensor metatable's __tostring.
local tensor_mt = getmetatable(torch.empty(0))
local plain_tostring = tensor_mt.__tostring
tensor_mt.__tostring = function(t)
  local s = plain_tostring(t)
  if set[t] then return "Parameter containing:\n" .. s end
  return s
end

return Parameter
