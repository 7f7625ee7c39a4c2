-- F.scaled_dot_product_attention: PyTorch's output layout (fused kernels give (B, H, L, E) laid
-- out as (B, L, H, E), the math kernel a contiguous one) and attn_mask = false as Python's None.
-- References: attention worked out by plain Lua loops.
local T = ...
local F = torch.nn.functional
local A = torch.nn.attention
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)

-- softmax(q k^T * scale + mask) v by loops; allowed(l, s) false masks a key out
local function ref_attention(q, k, v, allowed)
  local qs, ks, vs = q:tolist(), k:tolist(), v:tolist()
  local B, H, L, S, E, Ev = q:size(0), q:size(1), q:size(2), k:size(2), q:size(3), v:size(3)
  local out = {}
  for b = 1, B do
    out[b] = {}
    for h = 1, H do
      out[b][h] = {}
      for l = 1, L do
        local w, mx = {}, -math.huge
        for s = 1, S do
          local d = 0
          for e = 1, E do d = d + qs[b][h][l][e] * ks[b][h][s][e] end
          w[s] = (allowed == nil or allowed(l - 1, s - 1)) and d / math.sqrt(E) or -math.huge
          mx = math.max(mx, w[s])
        end
        local z = 0
        for s = 1, S do w[s] = math.exp(w[s] - mx); z = z + w[s] end
        local row = {}
        for e = 1, Ev do
          local acc = 0
          for s = 1, S do acc = acc + w[s] / z * vs[b][h][s][e] end
          row[e] = acc
        end
        out[b][h][l] = row
      end
    end
  end
  return out
end

local function flat(x)
  local r = {}
  local function go(v) if type(v) == "table" then for _, e in ipairs(v) do go(e) end else r[#r + 1] = v end end
  go(type(x) == "table" and x or x:tolist())
  return r
end

local function strides(t) return t:stride() end

local function checks(dev)
  local tag = " [" .. dev .. "]"
  local B, H, L, S, E = 2, 3, 4, 5, 8
  torch.manual_seed(0)
  -- q, k, v as attention code makes them: a (B, L, H*E) projection viewed in heads
  local function heads(n) return torch.randn(B, n, H * E, { device = dev }):view(B, n, H, E):transpose(1, 2) end
  local q, k, v = heads(L), heads(S), heads(S)

  T.test("fused layout" .. tag, function()
    local y = F.scaled_dot_product_attention(q, k, v)
    T.eq(y:size():totable(), { B, H, L, E }, "shape" .. tag)
    T.eq(strides(y), { L * H * E, E, H * E, 1 }, "strides (B, L, H, E) memory" .. tag)
    T.check(y:transpose(1, 2):is_contiguous(), "transpose(1, 2) is contiguous" .. tag)
    local merged = y:transpose(1, 2):view(B, L, H * E)
    T.eq(merged:size():totable(), { B, L, H * E }, "view(B, L, H * E)" .. tag)
    T.near(flat(y), flat(ref_attention(q, k, v)), 1e-5, "values" .. tag)
    -- merged row (b, l) holds heads side by side
    T.near(flat(merged[1][2]:narrow(0, E, E)), flat(y[1][1][2]), 0, "merged heads" .. tag)
    local ym = F.scaled_dot_product_attention(q, k, v, { attn_mask = torch.ones(L, S, { dtype = torch.bool, device = dev }):tril() })
    T.eq(strides(ym), { L * H * E, E, H * E, 1 }, "2-D bool mask keeps the fused layout" .. tag)
    local yc = F.scaled_dot_product_attention(q, k, v, { is_causal = true })
    T.eq(strides(yc), { L * H * E, E, H * E, 1 }, "causal keeps the fused layout" .. tag)
  end)

  T.test("math layout" .. tag, function()
    local contiguous = { H * L * E, L * E, E, 1 }
    local y3 = F.scaled_dot_product_attention(q[0], k[0], v[0])
    T.check(y3:is_contiguous(), "3-D inputs run the math kernel: contiguous" .. tag)
    local vs = torch.randn(B, H, S, 6, { device = dev })
    T.eq(strides(F.scaled_dot_product_attention(q, k, vs)), { H * L * 6, L * 6, 6, 1 }, "value head dim differs: math" .. tag)
    local m3 = torch.zeros(H, L, S, { device = dev })
    T.eq(strides(F.scaled_dot_product_attention(q, k, v, { attn_mask = m3 })), contiguous, "3-D mask: math" .. tag)
    local mg = torch.zeros(L, S, { device = dev, requires_grad = true })
    T.eq(strides(F.scaled_dot_product_attention(q, k, v, mg)), contiguous, "mask requiring grad: math" .. tag)
    local ym = A.sdpa_kernel(A.SDPBackend.MATH, function() return F.scaled_dot_product_attention(q, k, v) end)
    T.eq(strides(ym), contiguous, "sdpa_kernel(MATH)" .. tag)
    T.near(flat(ym), flat(ref_attention(q, k, v)), 1e-5, "math values" .. tag)
    if dev == "cpu" then
      T.eq(strides(F.scaled_dot_product_attention(q, k, v, { dropout_p = 0.5 })), contiguous, "CPU dropout: math")
      T.eq(strides(F.scaled_dot_product_attention(q:double(), k:double(), v:double())), { L * H * E, E, H * E, 1 },
        "CPU float64: fused")
    else
      T.eq(strides(F.scaled_dot_product_attention(q:double(), k:double(), v:double())), contiguous, "CUDA float64: math")
    end
  end)

  T.test("gradients through the fused layout" .. tag, function()
    local o = { dtype = torch.float64, device = dev }
    local function h(n) return torch.randn(1, n, 2 * 4, o):view(1, n, 2, 4):transpose(1, 2) end
    local q2, k2, v2 = h(3), h(4), h(4)
    gradcheck("sdpa" .. tag, function(a, b, c) return F.scaled_dot_product_attention(a, b, c, { is_causal = true }) end,
      { q2, k2, v2 })
    local y = F.scaled_dot_product_attention(q2:requires_grad_(), k2, v2)
    y:transpose(1, 2):reshape(1, 3, 8):sum():backward()
    T.check(q2.grad ~= nil and q2.grad:size():totable()[4] == 4, "backward through transpose + view" .. tag)
  end)

  T.test("attn_mask = false is no mask" .. tag, function()
    local plain = F.scaled_dot_product_attention(q, k, v)
    T.near(flat(F.scaled_dot_product_attention(q, k, v, { attn_mask = false })), flat(plain), 0, "keyword" .. tag)
    T.near(flat(F.scaled_dot_product_attention(q, k, v, false)), flat(plain), 0, "positional" .. tag)
    local causal = F.scaled_dot_product_attention(q, k, v, { attn_mask = false, is_causal = true })
    T.near(flat(causal), flat(ref_attention(q, k, v, function(l, s) return s <= l end)), 1e-5, "with is_causal" .. tag)
    T.near(flat(F.scaled_dot_product_attention(q, k, v, false, 0.0, true)), flat(causal), 0, "positional causal" .. tag)
    T.raises(function() F.scaled_dot_product_attention(q, k, v, { attn_mask = torch.zeros(L, S, { device = dev }), is_causal = true }) end,
      "~Explicit attn_mask should not be set when is_causal=True")
    local mha = torch.nn.MultiheadAttention(H * E, H, { batch_first = true }):to(dev)
    local x = torch.randn(B, L, H * E, { device = dev })
    local want = mha(x, x, x, { need_weights = false })
    T.near(flat(mha(x, x, x, { need_weights = false, attn_mask = false, key_padding_mask = false })), flat(want), 0,
      "MultiheadAttention masks false" .. tag)
  end)
end

checks("cpu")
if torch.cuda.is_available() then
  checks("cuda")
else
  T.skip("no CUDA device", 4)
end
