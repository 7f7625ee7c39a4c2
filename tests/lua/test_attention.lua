-- F.scaled_dot_product_attention and nn.MultiheadAttention against attention worked out
-- here with plain Lua arithmetic on small float64 inputs; gradients by central differences.
local T = ...
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local gradcheck = dofile(here .. "gradcheck.lua")(T)
local R = dofile(here .. "attention_ref.lua")
local naive, naive_mha = R.naive, R.mha
local f64 = { dtype = torch.float64 }

T.test("scaled_dot_product_attention: plain, masks, causal, scale", function()
  torch.manual_seed(11)
  local q, k, v = torch.randn(2, 3, 4, 5, f64), torch.randn(2, 3, 6, 5, f64), torch.randn(2, 3, 6, 2, f64)
  local bmask = torch.rand(4, 6):gt(0.4)
  bmask:select(1, 0):fill_(true) -- every row attends somewhere
  local fmask = torch.randn(4, 6, f64)
  local got = F.scaled_dot_product_attention(q, k, v)
  local got_b = F.scaled_dot_product_attention(q, k, v, { attn_mask = bmask })
  local got_f = F.scaled_dot_product_attention(q, k, v, fmask, 0.0, false, 0.3)
  local bm, fm = bmask:tolist(), fmask:tolist()
  for b = 0, 1 do
    for h = 0, 2 do
      local Q, K, V = q[b][h]:tolist(), k[b][h]:tolist(), v[b][h]:tolist()
      local want = naive(Q, K, V, 1 / math.sqrt(5))
      T.near(got[b][h]:tolist(), want, 1e-12, "plain")
      want = naive(Q, K, V, 1 / math.sqrt(5), function(i, j) return bm[i][j] end)
      T.near(got_b[b][h]:tolist(), want, 1e-12, "boolean mask")
      want = naive(Q, K, V, 0.3, nil, function(i, j) return fm[i][j] end)
      T.near(got_f[b][h]:tolist(), want, 1e-12, "float mask and scale")
    end
  end
  local sq = torch.randn(1, 5, 3, f64)
  local causal = F.scaled_dot_product_attention(sq, sq, sq, { is_causal = true })
  local S = sq[0]:tolist()
  T.near(causal[0]:tolist(), naive(S, S, S, 1 / math.sqrt(3), function(i, j) return j <= i end), 1e-12, "causal")
  T.raises(function() F.scaled_dot_product_attention(sq, sq, sq, { is_causal = true, attn_mask = torch.ones(5, 5):bool() }) end,
    "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
  T.raises(function() F.scaled_dot_product_attention(q, torch.randn(2, 3, 6, 4, f64), v) end,
    "~query's last dimension (5) must equal key's (4)")
end)

T.test("scaled_dot_product_attention: gradients", function()
  torch.manual_seed(12)
  gradcheck("sdpa", function(q, k, v) return F.scaled_dot_product_attention(q, k, v) end,
    { torch.randn(2, 3, 4, f64), torch.randn(2, 5, 4, f64), torch.randn(2, 5, 3, f64) })
  local m = torch.randn(3, 5, f64)
  gradcheck("sdpa, float mask", function(q, k, v) return F.scaled_dot_product_attention(q, k, v, { attn_mask = m }) end,
    { torch.randn(2, 3, 4, f64), torch.randn(2, 5, 4, f64), torch.randn(2, 5, 3, f64) })
end)

T.test("MultiheadAttention against attention worked out per head", function()
  torch.manual_seed(13)
  local mha = nn.MultiheadAttention(6, 2, { dtype = torch.float64 })
  nn.init.normal_(mha.in_proj_bias)
  nn.init.normal_(mha.out_proj.bias)
  local keys = {}
  for k in pairs(mha:state_dict()) do keys[#keys + 1] = k end
  T.eq(table.concat(keys, " "), "in_proj_weight in_proj_bias out_proj.weight out_proj.bias", "state_dict keys")
  local q, kv = torch.randn(3, 2, 6, f64), torch.randn(4, 2, 6, f64) -- (L, N, E), (S, N, E)
  local pad = torch.tensor({ { false, false, true, false }, { false, false, false, true } })
  local out, w = mha(q, kv, kv, { key_padding_mask = pad })
  T.eq(out:size(), torch.Size({ 3, 2, 6 }), "output shape")
  T.eq(w:size(), torch.Size({ 2, 3, 4 }), "averaged weights shape")
  local pm = pad:tolist()
  for n = 0, 1 do
    local want_o, want_w = naive_mha(mha, q:select(1, n):tolist(), kv:select(1, n):tolist(), kv:select(1, n):tolist(),
      function(_, j) return not pm[n + 1][j] end)
    T.near(out:select(1, n):tolist(), want_o, 1e-12, "output, batch " .. n)
    T.near(w[n]:tolist(), want_w, 1e-12, "weights, batch " .. n)
  end
  local out2, none = mha(q, kv, kv, { key_padding_mask = pad, need_weights = false })
  T.check(none == nil, "no weights when not asked")
  T.near(out2:tolist(), out:tolist(), 1e-12, "need_weights=false: same output")
  local _, per_head = mha(q, kv, kv, { average_attn_weights = false })
  T.eq(per_head:size(), torch.Size({ 2, 2, 3, 4 }), "weights per head")
  local causal = torch.ones(3, 3):triu(1):bool()
  local oc = mha(q, q, q, { attn_mask = causal, is_causal = true })
  local q0 = q:select(1, 0):tolist()
  local want = naive_mha(mha, q0, q0, q0, function(i, j) return j <= i end)
  T.near(oc:select(1, 0):tolist(), want, 1e-12, "a boolean attn_mask (true: not attended)")
end)

T.test("MultiheadAttention: batch_first, unbatched, kdim/vdim, gradients, errors", function()
  torch.manual_seed(14)
  local mha = nn.MultiheadAttention(4, 2, { batch_first = true })
  local x = torch.randn(3, 5, 4)
  local out, w = mha(x, x, x)
  T.eq(out:size(), torch.Size({ 3, 5, 4 }), "batch_first output")
  T.eq(w:size(), torch.Size({ 3, 5, 5 }), "batch_first weights")
  local one = mha(x[0], x[0], x[0])
  T.near(one:tolist(), out[0]:tolist(), 1e-5, "unbatched equals its batch row")
  local cross = nn.MultiheadAttention(4, 1, { kdim = 3, vdim = 2 })
  T.check(cross.in_proj_weight == nil and cross.k_proj_weight:size(1) == 3 and cross.v_proj_weight:size(1) == 2, "separate projections")
  local co = cross(torch.randn(2, 1, 4), torch.randn(6, 1, 3), torch.randn(6, 1, 2))
  T.eq(co:size(), torch.Size({ 2, 1, 4 }), "cross-attention output")
  out:sum():backward()
  for _, np in ipairs(mha:named_parameters()) do T.check(np[2].grad ~= nil, np[1] .. " has a gradient") end
  T.raises(function() nn.MultiheadAttention(6, 4) end, "embed_dim must be divisible by num_heads (got embed_dim 6, num_heads 4)")
  T.raises(function() mha(x, x, x, { is_causal = true }) end, "Need attn_mask if specifying the is_causal hint")
  T.raises(function() mha(x, x, x, { attn_mask = torch.ones(2, 2):bool() }) end,
    "The shape of the 2D attn_mask is torch.Size([2, 2]), but should be (5, 5).")
end)

T.test("MultiheadAttention: self-attention's one projection equals three (values and gradients)", function()
  for _, bf in ipairs({ false, true }) do
    torch.manual_seed(21)
    local mha = nn.MultiheadAttention(6, 3, { batch_first = bf, dropout = 0 }):double()
    local x = torch.randn(4, 5, 6, { dtype = torch.float64 })
    local function run(same)
      mha:zero_grad()
      local a = x:clone():requires_grad_()
      local out, w
      if same then out, w = mha(a, a, a) else out, w = mha(a, a:clone(), a:clone()) end
      ((out * out):sum() + w:sum()):backward()
      local r = { out:detach():clone(), w:detach():clone(), a.grad:clone() }
      for _, p in ipairs(mha:parameters()) do r[#r + 1] = p.grad:clone() end
      return r
    end
    local one, three = run(true), run(false)
    for i = 1, #one do
      T.near(one[i]:reshape(-1):tolist(), three[i]:reshape(-1):tolist(), 1e-12, string.format("batch_first=%s value %d", tostring(bf), i))
    end
  end
end)
