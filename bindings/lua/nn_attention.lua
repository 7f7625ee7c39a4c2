-- Attention: F.scaled_dot_product_attention and nn.MultiheadAttention, made of the
-- differentiable ops (matmul, softmax, masked_fill, dropout), so autograd and autocast
-- apply as they do to those ops.
--
--   local out = F.scaled_dot_product_attention(q, k, v, {attn_mask=, dropout_p=, is_causal=, scale=})
--   local mha = nn.MultiheadAttention(embed_dim, num_heads, {dropout=, bias=, kdim=, vdim=, batch_first=})
--   local out, weights = mha(query, key, value, {key_padding_mask=, need_weights=, attn_mask=,
--                                                average_attn_weights=, is_causal=})
--
-- Masks follow PyTorch: scaled_dot_product_attention's boolean attn_mask is true where a
-- position may be attended; MultiheadAttention's boolean masks are true where it may not.
-- A float mask is added to the scores.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local init = require "nn_init"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

local sdpa_spec = { { "query", REQ }, { "key", REQ }, { "value", REQ }, { "attn_mask" }, { "dropout_p", 0.0 },
  { "is_causal", false }, { "scale" }, { "enable_gqa", false } }

-- Would PyTorch run a fused kernel (CPU flash; CUDA flash, memory-efficient or cuDNN) here? Those
-- return (B, H, L, E) laid out as (B, L, H, E), so y:transpose(1, 2):view(B, L, H * E) works;
-- the math kernel returns it contiguous. (PyTorch's gates, in short: 4-D inputs of one batch and
-- head count and one head dim, a 2-D or 4-D mask without grad, a supported dtype, and on CPU no
-- dropout.)
local cpu_fused = { [torch.float32] = true, [torch.float64] = true, [torch.bfloat16] = true, [torch.float16] = true }
local cuda_fused = { [torch.float32] = true, [torch.bfloat16] = true, [torch.float16] = true }
local function fused_layout(q, k, v, mask, dropout_p)
  if q:dim() ~= 4 or k:dim() ~= 4 or v:dim() ~= 4 then return false end
  local B, H, E = q:size(0), q:size(1), q:size(3)
  if k:size(0) ~= B or v:size(0) ~= B or k:size(1) ~= H or v:size(1) ~= H or v:size(3) ~= E then return false end
  if q:size(2) == 0 or k:size(2) == 0 or q:stride(3) ~= 1 or k:stride(3) ~= 1 or v:stride(3) ~= 1 then return false end
  if mask ~= nil then
    if mask.requires_grad then return false end
    local d = mask:dim()
    if d == 4 then
      if (mask:size(0) ~= 1 and mask:size(0) ~= B) or (mask:size(1) ~= 1 and mask:size(1) ~= H) then return false end
    elseif d ~= 2 then
      return false
    end
  end
  local sdp = torch.backends.cuda._sdp
  if q.device.type == "cuda" then
    return (sdp.flash or sdp.mem_efficient or sdp.cudnn) and cuda_fused[q.dtype] == true and E % 8 == 0
  end
  return sdp.flash and dropout_p == 0 and cpu_fused[q.dtype] == true
end

function F.scaled_dot_product_attention(...)
  local o = U.parse("scaled_dot_product_attention", sdpa_spec, ...)
  if o.attn_mask == false then o.attn_mask = nil end -- Python's None as ports write it
  local q, k, v = o.query, o.key, o.value
  if o.enable_gqa then U.error("scaled_dot_product_attention: enable_gqa is not supported") end
  if q:dim() < 2 or k:dim() < 2 or v:dim() < 2 then
    U.error("scaled_dot_product_attention: query, key and value need at least 2 dimensions (..., L, E)")
  end
  if q:size(-1) ~= k:size(-1) then
    U.errorf("scaled_dot_product_attention: query's last dimension (%d) must equal key's (%d)", q:size(-1), k:size(-1))
  end
  if k:size(-2) ~= v:size(-2) then
    U.errorf("scaled_dot_product_attention: key and value must have the same sequence length, got %d and %d", k:size(-2), v:size(-2))
  end
  local scale = o.scale or 1 / math.sqrt(q:size(-1))
  local scores = q:matmul(k:transpose(-2, -1)) * scale
  local mask = o.attn_mask
  if o.is_causal then
    if mask ~= nil then U.error("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True") end
    mask = torch.ones(q:size(-2), k:size(-2), { dtype = torch.bool, device = q.device }):tril()
  end
  if mask ~= nil then
    if mask.dtype == torch.bool then
      scores = scores:masked_fill(mask:logical_not(), -math.huge)
    else
      scores = scores + mask
    end
  end
  local fused = fused_layout(q, k, v, o.attn_mask, o.dropout_p)
  local weights = F.softmax(scores, -1)
  if o.dropout_p > 0 then weights = F.dropout(weights, o.dropout_p, true) end
  local y = weights:matmul(v)
  if fused then y = y:transpose(1, 2):contiguous():transpose(1, 2) end
  return y
end

-- ---- MultiheadAttention ----

local MultiheadAttention = Module:extend("MultiheadAttention")
M.MultiheadAttention = MultiheadAttention

local mha_spec = { { "embed_dim", REQ }, { "num_heads", REQ }, { "dropout", 0.0 }, { "bias", true },
  { "add_bias_kv", false }, { "add_zero_attn", false }, { "kdim" }, { "vdim" }, { "batch_first", false },
  { "device" }, { "dtype" } }

function MultiheadAttention:__init(...)
  local o = U.parse("MultiheadAttention", mha_spec, ...)
  local E = U.check_int("MultiheadAttention", "embed_dim", o.embed_dim, 1)
  local H = U.check_int("MultiheadAttention", "num_heads", o.num_heads, 1)
  if E % H ~= 0 then U.errorf("embed_dim must be divisible by num_heads (got embed_dim %d, num_heads %d)", E, H) end
  if o.add_bias_kv or o.add_zero_attn then U.error("MultiheadAttention: add_bias_kv and add_zero_attn are not supported") end
  self.embed_dim, self.num_heads, self.head_dim = E, H, E // H
  self.kdim = o.kdim and U.check_int("MultiheadAttention", "kdim", o.kdim, 1) or E
  self.vdim = o.vdim and U.check_int("MultiheadAttention", "vdim", o.vdim, 1) or E
  self._qkv_same_embed_dim = self.kdim == E and self.vdim == E
  self.dropout, self.batch_first = o.dropout, o.batch_first
  local fk = { dtype = o.dtype, device = o.device }
  if self._qkv_same_embed_dim then
    self.in_proj_weight = Parameter(torch.empty(3 * E, E, fk))
  else
    self.q_proj_weight = Parameter(torch.empty(E, E, fk))
    self.k_proj_weight = Parameter(torch.empty(E, self.kdim, fk))
    self.v_proj_weight = Parameter(torch.empty(E, self.vdim, fk))
  end
  if o.bias then
    self.in_proj_bias = Parameter(torch.empty(3 * E, fk))
  else
    self:register_parameter("in_proj_bias", nil)
  end
  self.out_proj = torch.nn.Linear(E, E, { bias = o.bias, device = o.device, dtype = o.dtype })
  self:_reset_parameters()
end

function MultiheadAttention:_reset_parameters()
  if self._qkv_same_embed_dim then
    init.xavier_uniform_(self.in_proj_weight)
  else
    init.xavier_uniform_(self.q_proj_weight)
    init.xavier_uniform_(self.k_proj_weight)
    init.xavier_uniform_(self.v_proj_weight)
  end
  if self.in_proj_bias ~= nil then
    init.constant_(self.in_proj_bias, 0)
    init.constant_(self.out_proj.bias, 0)
  end
end

-- a boolean mask (true: not attended) as the float one added to the scores
local function additive(mask, dtype)
  if mask == nil or mask.dtype ~= torch.bool then return mask end
  return torch.zeros(mask:size(), { dtype = dtype, device = mask.device }):masked_fill(mask, -math.huge)
end

-- (N, len, E) with batch first, else (len, N, E) -> (N * H, len, E / H), and back
local function to_heads(x, bf, H)
  local hd = x:size(2) // H
  if bf then
    local N, len = x:size(0), x:size(1)
    return x:reshape(N, len, H, hd):transpose(1, 2):reshape(N * H, len, hd)
  end
  local len, N = x:size(0), x:size(1)
  return x:reshape(len, N * H, hd):transpose(0, 1)
end

local function from_heads(x, bf, N, H)
  local len, hd = x:size(1), x:size(2)
  if bf then return x:reshape(N, H, len, hd):transpose(1, 2):reshape(N, len, H * hd) end
  return x:transpose(0, 1):reshape(len, N, H * hd)
end

-- Self-attention's packed projection (..., 3E) as q, k and v in heads, one copy each. Its
-- backward puts the three gradients side by side in one cat, straight from their heads'
-- layout: (..., H, hd) views catted along H are (..., 3H, hd), the projection's (..., 3E).
-- Narrow views of the projection would each spread theirs over zeros of the whole
-- projection's size, then add them up.
local QKVHeads = torch.autograd.Function:extend("QKVHeads")
function QKVHeads.forward(ctx, qkv, bf, H)
  ctx.bf, ctx.H, ctx.N = bf, H, qkv:size(bf and 0 or 1)
  local E = qkv:size(2) // 3
  local q = to_heads(qkv:narrow(2, 0, E), bf, H):contiguous()
  return q, to_heads(qkv:narrow(2, E, E), bf, H):contiguous(), to_heads(qkv:narrow(2, 2 * E, E), bf, H):contiguous()
end
function QKVHeads.backward(ctx, gq, gk, gv)
  local N, H = ctx.N, ctx.H
  local len, hd = gq:size(1), gq:size(2)
  local function heads(g) -- [N*H, len, hd] as (N, len, H, hd) batch first, else (len, N, H, hd)
    if ctx.bf then return g:reshape(N, H, len, hd):transpose(1, 2) end
    return g:transpose(0, 1):reshape(len, N, H, hd)
  end
  local g = torch.cat({ heads(gq), heads(gk), heads(gv) }, 2)
  return g:view(g:size(0), g:size(1), 3 * H * hd), nil, nil
end

local mha_forward_spec = { { "query", REQ }, { "key", REQ }, { "value", REQ }, { "key_padding_mask" },
  { "need_weights", true }, { "attn_mask" }, { "average_attn_weights", true }, { "is_causal", false } }

function MultiheadAttention:forward(...)
  local o = U.parse("MultiheadAttention.forward", mha_forward_spec, ...)
  if o.attn_mask == false then o.attn_mask = nil end -- Python's None as ports write it
  if o.key_padding_mask == false then o.key_padding_mask = nil end
  local query, key, value = o.query, o.key, o.value
  -- self-attention (one tensor as query, key and value) projects in one product, as PyTorch does
  local packed = rawequal(query, key) and rawequal(key, value) and self._qkv_same_embed_dim
  local batched = query:dim() == 3
  if not batched and query:dim() ~= 2 then
    U.errorf("query should be unbatched 2D or batched 3D tensor but received %dD query tensor", query:dim())
  end
  if o.is_causal and o.attn_mask == nil then U.error("Need attn_mask if specifying the is_causal hint") end
  if not batched then query, key, value = query:unsqueeze(1), key:unsqueeze(1), value:unsqueeze(1) end
  -- the projections run on the layout given: (N, L, E) batch first, else (L, N, E)
  local bf = batched and self.batch_first
  local L, N, E = query:size(bf and 1 or 0), query:size(bf and 0 or 1), query:size(2)
  local S, H, hd = key:size(bf and 1 or 0), self.num_heads, self.head_dim
  if E ~= self.embed_dim then U.errorf("was expecting embedding dimension of %d, but got %d", self.embed_dim, E) end
  local q, k, v
  if packed then
    q, k, v = QKVHeads.apply(F.linear(query, self.in_proj_weight, self.in_proj_bias), bf, H)
  else
    local b = self.in_proj_bias
    local bq, bk, bv
    if b ~= nil then bq, bk, bv = b:narrow(0, 0, E), b:narrow(0, E, E), b:narrow(0, 2 * E, E) end
    local wq, wk, wv
    if self._qkv_same_embed_dim then
      local w = self.in_proj_weight
      wq, wk, wv = w:narrow(0, 0, E), w:narrow(0, E, E), w:narrow(0, 2 * E, E)
    else
      wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
    end
    q, k, v = to_heads(F.linear(query, wq, bq), bf, H), to_heads(F.linear(key, wk, bk), bf, H), to_heads(F.linear(value, wv, bv), bf, H)
  end

  local mask = additive(o.attn_mask, q.dtype)
  if mask ~= nil and mask:dim() == 2 then
    if mask:size(0) ~= L or mask:size(1) ~= S then
      U.errorf("The shape of the 2D attn_mask is torch.Size([%d, %d]), but should be (%d, %d).", mask:size(0), mask:size(1), L, S)
    end
    mask = mask:unsqueeze(0)
  elseif mask ~= nil and mask:dim() == 3 and (mask:size(0) ~= N * H or mask:size(1) ~= L or mask:size(2) ~= S) then
    U.errorf("The shape of the 3D attn_mask is %s, but should be (%d, %d, %d).", tostring(mask:size()), N * H, L, S)
  end
  local kpm = o.key_padding_mask
  if kpm ~= nil then
    if not batched then kpm = kpm:unsqueeze(0) end
    if kpm:dim() ~= 2 or kpm:size(0) ~= N or kpm:size(1) ~= S then
      U.errorf("expecting key_padding_mask shape of (%d, %d), but got %s", N, S, tostring(kpm:size()))
    end
    kpm = additive(kpm, q.dtype):view(N, 1, 1, S):expand(N, H, 1, S):reshape(N * H, 1, S)
    mask = mask == nil and kpm or mask + kpm
  end
  local p = self.training and self.dropout or 0.0

  local out, weights
  if o.need_weights then
    local scores = q:mul(1 / math.sqrt(hd)):bmm(k:transpose(1, 2))
    if mask ~= nil then scores = scores + mask end
    weights = F.softmax(scores, -1)
    local w = p > 0 and F.dropout(weights, p, true) or weights
    out = w:bmm(v)
  else
    out = F.scaled_dot_product_attention(q, k, v, { attn_mask = mask, dropout_p = p })
  end
  out = F.linear(from_heads(out, bf, N, H):reshape(N * L, E), self.out_proj.weight, self.out_proj.bias):view(bf and N or L, bf and L or N, E)
  if weights ~= nil then
    weights = weights:view(N, H, L, S)
    if o.average_attn_weights then weights = weights:mean(1) end
    if not batched then weights = weights:squeeze(0) end
  end
  if not batched then out = out:squeeze(1) end
  return out, weights
end

return M
