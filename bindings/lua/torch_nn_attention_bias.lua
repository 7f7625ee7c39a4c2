-- torch.nn.attention.bias: causal_upper_left / causal_lower_right make a CausalBias, a causal
-- attention mask that F.scaled_dot_product_attention takes as attn_mask and that prints as the
-- boolean mask it stands for (true where a query may attend to a key).
--   upper left:  query i sees keys j <= i (what is_causal=True means)
--   lower right: the last query aligned with the last key: j <= i + (seq_len_kv - seq_len_q)
require "torch_nn_attention"
local torch = require "torch"
local U = require "nn_util"
local F = torch.nn.functional

local bias = {}
local CausalVariation = { UPPER_LEFT = "UPPER_LEFT", LOWER_RIGHT = "LOWER_RIGHT" }
bias.CausalVariation = CausalVariation

local CausalBias = { __name = "torch.nn.attention.bias.CausalBias" }
CausalBias.__index = CausalBias
bias.CausalBias = CausalBias

local function new_bias(variant, name, q, kv)
  U.check_int(name, "seq_len_q", q, 1)
  U.check_int(name, "seq_len_kv", kv, 1)
  return setmetatable({ variant = variant, seq_len_q = q, seq_len_kv = kv }, CausalBias)
end

function bias.causal_upper_left(q, kv) return new_bias(CausalVariation.UPPER_LEFT, "causal_upper_left", q, kv) end
function bias.causal_lower_right(q, kv) return new_bias(CausalVariation.LOWER_RIGHT, "causal_lower_right", q, kv) end
function CausalBias.is(v) return getmetatable(v) == CausalBias end

-- the boolean [seq_len_q, seq_len_kv] mask
function CausalBias:_materialize(device)
  local ones = torch.ones(self.seq_len_q, self.seq_len_kv, { dtype = torch.bool, device = device or "cpu" })
  if self.variant == CausalVariation.UPPER_LEFT then return ones:tril() end
  return ones:tril(self.seq_len_kv - self.seq_len_q)
end

function CausalBias.__tostring(b) return tostring(b:_materialize()) end

local sdpa = F.scaled_dot_product_attention
function F.scaled_dot_product_attention(q, k, v, ...)
  local n = select("#", ...)
  local o = n > 0 and select(n, ...) or nil
  local mask = type(o) == "table" and getmetatable(o) == nil and o.attn_mask or (n > 0 and select(1, ...))
  if not CausalBias.is(mask) then return sdpa(q, k, v, ...) end
  if mask.seq_len_q ~= q:size(-2) or mask.seq_len_kv ~= k:size(-2) then
    U.errorf("scaled_dot_product_attention: the CausalBias is for %d queries and %d keys, got %d and %d",
      mask.seq_len_q, mask.seq_len_kv, q:size(-2), k:size(-2))
  end
  local args = table.pack(...)
  if type(o) == "table" and getmetatable(o) == nil and o.attn_mask ~= nil then
    local opts = {}
    for key, val in pairs(o) do opts[key] = val end
    opts.attn_mask = mask:_materialize(q.device)
    args[n] = opts
  else
    args[1] = mask:_materialize(q.device)
  end
  return sdpa(q, k, v, table.unpack(args, 1, n))
end

torch.nn.attention.bias = bias
return {}
