-- nn.attention: SDPBackend and sdpa_kernel, which choose the kernels F.scaled_dot_product_attention
-- may use. nnrepl has one, the math kernel (matmul, softmax and dropout composed): it runs whatever
-- is chosen, with a warning once when the math kernel is not among them.
--   local _ <close> = nn.attention.sdpa_kernel({ nn.attention.SDPBackend.FLASH_ATTENTION })
--   nn.attention.sdpa_kernel(nn.attention.SDPBackend.MATH, function() ... end)
local torch = require "torch"
local U = require "nn_util"
local F = torch.nn.functional
local sdp = torch.backends.cuda._sdp

local attention = torch.nn.attention or {}
torch.nn.attention = attention

local SDPBackend = { ERROR = -1, MATH = 0, FLASH_ATTENTION = 1, EFFICIENT_ATTENTION = 2, CUDNN_ATTENTION = 3, OVERRIDEABLE = 4 }
attention.SDPBackend = SDPBackend
local switch_of = { [0] = "math", [1] = "flash", [2] = "mem_efficient", [3] = "cudnn" }

-- sdpa_kernel(backends, {set_priority=false}[, fn]): backends is one SDPBackend or a list of them
function attention.sdpa_kernel(backends, ...)
  local fn, args, n = U.pop_fn(...)
  local o = U.parse("sdpa_kernel", { { "set_priority", false } }, table.unpack(args, 1, n))
  if type(o.set_priority) ~= "boolean" then U.errorf("sdpa_kernel: set_priority must be a boolean, got %s", U.typename(o.set_priority)) end
  if type(backends) ~= "table" then backends = { backends } end
  local on = {}
  for i, b in ipairs(backends) do
    if math.type(b) ~= "integer" or not (switch_of[b] or b == SDPBackend.OVERRIDEABLE) then
      U.errorf("sdpa_kernel: backend %d must be an nn.attention.SDPBackend, got %s", i, tostring(b))
    end
    if switch_of[b] then on[switch_of[b]] = true end
  end
  if #backends == 0 then U.error("sdpa_kernel: backends must not be empty") end
  local saved = {}
  for name, v in pairs(sdp) do
    saved[name] = v
    sdp[name] = on[name] == true
  end
  return U.scoped(function() for name, v in pairs(saved) do sdp[name] = v end end, fn)
end

local sdpa = F.scaled_dot_product_attention
function F.scaled_dot_product_attention(...)
  if not sdp.math then
    U.warn("nnrepl runs scaled_dot_product_attention with the math kernel (matmul, softmax and dropout composed): "
      .. "it is the only one it has, so it runs although sdpa_kernel or torch.backends.cuda did not allow it")
  end
  return sdpa(...)
end

return attention
