-- nn.TransformerEncoderLayer / DecoderLayer / Encoder / Decoder / Transformer against layers
-- worked out with plain Lua arithmetic (tests/lua/attention_ref.lua) on small float64 inputs.
local T = ...
local R = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "attention_ref.lua")
local f64 = { dtype = torch.float64 }

local function relu_rows(x)
  local out = {}
  for i, row in ipairs(x) do
    out[i] = {}
    for c, v in ipairs(row) do out[i][c] = math.max(v, 0) end
  end
  return out
end

local function add_rows(a, b)
  local out = {}
  for i, row in ipairs(a) do
    out[i] = {}
    for c, v in ipairs(row) do out[i][c] = v + b[i][c] end
  end
  return out
end

local function ln(norm, x) return R.layer_norm(x, norm.weight:tolist(), norm.bias:tolist(), norm.eps) end
local function ff(layer, x)
  local h = relu_rows(R.affine(x, layer.linear1.weight:tolist(), layer.linear1.bias:tolist()))
  return R.affine(h, layer.linear2.weight:tolist(), layer.linear2.bias:tolist())
end

-- every bias and norm parameter random, so that none of them can be left out unnoticed
local function randomize(m)
  for _, np in ipairs(m:named_parameters()) do
    if np[2]:dim() == 1 then nn.init.normal_(np[2], 0.5, 0.3) end
  end
  return m
end

T.test("encoder layer, post-norm and pre-norm, against the arithmetic", function()
  torch.manual_seed(21)
  local x = torch.randn(4, 2, 6, f64)
  for _, norm_first in ipairs({ false, true }) do
    local layer = randomize(nn.TransformerEncoderLayer(6, 2, { dim_feedforward = 5, dropout = 0.0, norm_first = norm_first,
      dtype = torch.float64 }))
    local pad = torch.tensor({ { false, false, false, true }, { false, true, false, false } })
    local got = layer(x, { src_key_padding_mask = pad })
    for n = 0, 1 do
      local xs = x:select(1, n):tolist()
      local allow = function(_, j) return not pad[n][j - 1]:item() end
      local want
      if norm_first then
        local h = ln(layer.norm1, xs)
        local a = add_rows(xs, (R.mha(layer.self_attn, h, h, h, allow)))
        want = add_rows(a, ff(layer, ln(layer.norm2, a)))
      else
        local a = ln(layer.norm1, add_rows(xs, (R.mha(layer.self_attn, xs, xs, xs, allow))))
        want = ln(layer.norm2, add_rows(a, ff(layer, a)))
      end
      T.near(got:select(1, n):tolist(), want, 1e-10, string.format("norm_first=%s, batch %d", tostring(norm_first), n))
    end
  end
end)

T.test("decoder layer with a causal target mask, against the arithmetic", function()
  torch.manual_seed(22)
  local layer = randomize(nn.TransformerDecoderLayer(4, 2, { dim_feedforward = 3, dropout = 0.0, dtype = torch.float64 }))
  local tgt, mem = torch.randn(3, 1, 4, f64), torch.randn(5, 1, 4, f64)
  local mask = nn.Transformer.generate_square_subsequent_mask(3, { dtype = torch.float64 })
  local got = layer(tgt, mem, { tgt_mask = mask })
  local t, m = tgt:select(1, 0):tolist(), mem:select(1, 0):tolist()
  local a = ln(layer.norm1, add_rows(t, (R.mha(layer.self_attn, t, t, t, function(i, j) return j <= i end))))
  local b = ln(layer.norm2, add_rows(a, (R.mha(layer.multihead_attn, a, m, m))))
  local want = ln(layer.norm3, add_rows(b, ff(layer, b)))
  T.near(got:select(1, 0):tolist(), want, 1e-10, "decoder layer")
  local keys = {}
  for k in pairs(layer:state_dict()) do keys[#keys + 1] = k end
  T.eq(table.concat(keys, " "), "self_attn.in_proj_weight self_attn.in_proj_bias self_attn.out_proj.weight " ..
    "self_attn.out_proj.bias multihead_attn.in_proj_weight multihead_attn.in_proj_bias multihead_attn.out_proj.weight " ..
    "multihead_attn.out_proj.bias linear1.weight linear1.bias linear2.weight linear2.bias norm1.weight norm1.bias " ..
    "norm2.weight norm2.bias norm3.weight norm3.bias", "PyTorch's state_dict keys")
end)

T.test("stacks of copies, the whole model, masks and errors", function()
  torch.manual_seed(23)
  local layer = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, dropout = 0.0 })
  local enc = nn.TransformerEncoder(layer, 2, { norm = nn.LayerNorm(8) })
  T.check(not rawequal(enc.layers[0].linear1.weight, enc.layers[1].linear1.weight), "independent copies")
  T.near(enc.layers[1].linear1.weight:tolist(), layer.linear1.weight:tolist(), 0, "copies of the given layer")
  local x = torch.randn(5, 3, 8)
  local by_hand = x
  for i = 0, 1 do by_hand = enc.layers[i](by_hand) end
  T.near(enc(x):tolist(), enc.norm(by_hand):tolist(), 1e-6, "layers in order, then the norm")
  T.check(enc:state_dict()["layers.1.norm2.bias"] ~= nil and enc:state_dict()["norm.weight"] ~= nil, "state_dict keys")
  local d, ff, L = 8, 16, 1
  local model = nn.Transformer({ d_model = d, nhead = 2, num_encoder_layers = L, num_decoder_layers = L,
    dim_feedforward = ff, dropout = 0.0, batch_first = true })
  local n = 0
  for _, p in ipairs(model:parameters()) do n = n + p:numel() end
  local attn, lin, norm = 4 * d * d + 4 * d, 2 * d * ff + ff + d, 2 * d
  T.eq(n, (attn + lin + 2 * norm) + norm + (2 * attn + lin + 3 * norm) + norm, "parameter count")
  local src, tgt = torch.randn(2, 6, d), torch.randn(2, 4, d)
  local out = model(src, tgt, { tgt_mask = nn.Transformer.generate_square_subsequent_mask(4) })
  T.eq(out:size(), torch.Size({ 2, 4, d }), "batch_first output")
  out:sum():backward()
  local missing = {}
  for _, np in ipairs(model:named_parameters()) do
    if np[2].grad == nil then missing[#missing + 1] = np[1] end
  end
  T.eq(table.concat(missing, " "), "", "every parameter has a gradient")
  T.eq(nn.Transformer.generate_square_subsequent_mask(3):tolist(),
    { { 0.0, -math.huge, -math.huge }, { 0.0, 0.0, -math.huge }, { 0.0, 0.0, 0.0 } }, "subsequent mask")
  T.raises(function() model(src, torch.randn(3, 4, d)) end, "the batch number of src and tgt must be equal")
  T.raises(function() model(src, torch.randn(2, 4, 5)) end, "the feature number of src and tgt must be equal to d_model")
  T.raises(function() layer(x, { is_causal = true }) end, "Need attn_mask if specifying the is_causal hint")
  T.raises(function() nn.TransformerEncoderLayer(8, 2, { activation = "tanh" }) end, "~activation should be relu/gelu, not tanh")
  local g = nn.TransformerEncoderLayer(8, 2, { activation = "gelu", dropout = 0.0 })
  T.eq(g(x):size(), x:size(), "gelu activation")
end)
