-- More of torch.nn.functional: F.multi_head_attention_forward (the functional behind
-- nn.MultiheadAttention, PyTorch's positional signature), F.grad = nn.grad (the gradients of
-- conv1d / 2d / 3d with respect to their input and weight) and F.native_channel_shuffle.
local torch = require "torch"
local U = require "nn_util"
local MHA = require("nn_attention").MultiheadAttention
local F = torch.nn.functional
local REQ = U.REQUIRED

F.native_channel_shuffle = function(input, groups) return F.channel_shuffle(input, groups) end

-- ---- multi_head_attention_forward ----

local mha_spec = { { "query", REQ }, { "key", REQ }, { "value", REQ }, { "embed_dim_to_check", REQ }, { "num_heads", REQ },
  { "in_proj_weight" }, { "in_proj_bias" }, { "bias_k" }, { "bias_v" }, { "add_zero_attn", false }, { "dropout_p", REQ },
  { "out_proj_weight", REQ }, { "out_proj_bias" }, { "training", true }, { "key_padding_mask" }, { "need_weights", true },
  { "attn_mask" }, { "use_separate_proj_weight", false }, { "q_proj_weight" }, { "k_proj_weight" }, { "v_proj_weight" },
  { "static_k" }, { "static_v" }, { "average_attn_weights", true }, { "is_causal", false } }

-- query, key, value (L, N, E) / (S, N, E), or unbatched (L, E): returns the attention output and
-- (need_weights) its weights, as nn.MultiheadAttention's forward with batch_first=false
function F.multi_head_attention_forward(...)
  local o = U.parse("multi_head_attention_forward", mha_spec, ...)
  if o.bias_k ~= nil or o.bias_v ~= nil or o.add_zero_attn then
    U.error("multi_head_attention_forward: bias_k, bias_v and add_zero_attn are not supported")
  end
  if o.static_k ~= nil or o.static_v ~= nil then U.error("multi_head_attention_forward: static_k and static_v are not supported") end
  local E, H = o.embed_dim_to_check, U.check_int("multi_head_attention_forward", "num_heads", o.num_heads, 1)
  if E % H ~= 0 then U.errorf("embed_dim %d not divisible by num_heads %d", E, H) end
  local state = {
    embed_dim = E, num_heads = H, head_dim = E // H, batch_first = false, training = o.training, dropout = o.dropout_p,
    _qkv_same_embed_dim = not o.use_separate_proj_weight, in_proj_bias = o.in_proj_bias,
    out_proj = { weight = o.out_proj_weight, bias = o.out_proj_bias },
  }
  if o.use_separate_proj_weight then
    if o.q_proj_weight == nil or o.k_proj_weight == nil or o.v_proj_weight == nil then
      U.error("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight is None")
    end
    state.q_proj_weight, state.k_proj_weight, state.v_proj_weight = o.q_proj_weight, o.k_proj_weight, o.v_proj_weight
  else
    if o.in_proj_weight == nil then U.error("use_separate_proj_weight is False but in_proj_weight is None") end
    state.in_proj_weight = o.in_proj_weight
  end
  return U.call(MHA.forward, state, o.query, o.key, o.value, { key_padding_mask = o.key_padding_mask,
    need_weights = o.need_weights, attn_mask = o.attn_mask, average_attn_weights = o.average_attn_weights,
    is_causal = o.is_causal })
end

-- ---- nn.grad ----

local grad = {}
F.grad = grad
torch.nn.grad = grad

local function size_list(v)
  if type(v) == "userdata" then return v:totable() end
  return v
end

-- d(sum(conv(x, w) * grad_output)) / d(leaf), the conv taken on a zero-valued leaf of the given size
-- (the result does not depend on it: conv is linear in x and in w)
local function conv_grad(fname, conv, of_input, a, size, grad_output, stride, padding, dilation, groups)
  U.tensor_arg(fname, "grad_output", grad_output)
  local other = U.tensor_arg(fname, of_input and "weight" or "input", a)
  local create = grad_output.requires_grad or other.requires_grad
  return torch.enable_grad(function()
    local leaf = torch.zeros(size_list(size), { dtype = other.dtype, device = other.device, requires_grad = true })
    local y
    if of_input then
      y = U.call(conv, leaf, other, nil, stride, padding, dilation, groups)
    else
      y = U.call(conv, other, leaf, nil, stride, padding, dilation, groups)
    end
    if U.pystr(y:size()) ~= U.pystr(grad_output:size()) then
      U.errorf("%s: grad_output has size %s, the convolution's output has size %s", fname, U.shape_str(grad_output), U.shape_str(y))
    end
    return torch.autograd.grad({ y }, { leaf }, { grad_output }, { create_graph = create })[1]
  end)
end

for _, nd in ipairs({ 1, 2, 3 }) do
  local conv = F["conv" .. nd .. "d"]
  local fin, fw = "conv" .. nd .. "d_input", "conv" .. nd .. "d_weight"
  -- convNd_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1)
  grad[fin] = function(...)
    local o = U.parse(fin, { { "input_size", REQ }, { "weight", REQ }, { "grad_output", REQ }, { "stride", 1 }, { "padding", 0 },
      { "dilation", 1 }, { "groups", 1 } }, ...)
    return conv_grad(fin, conv, true, o.weight, o.input_size, o.grad_output, o.stride, o.padding, o.dilation, o.groups)
  end
  -- convNd_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1)
  grad[fw] = function(...)
    local o = U.parse(fw, { { "input", REQ }, { "weight_size", REQ }, { "grad_output", REQ }, { "stride", 1 }, { "padding", 0 },
      { "dilation", 1 }, { "groups", 1 } }, ...)
    return conv_grad(fw, conv, false, o.input, o.weight_size, o.grad_output, o.stride, o.padding, o.dilation, o.groups)
  end
end

return {}
