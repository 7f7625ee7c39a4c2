-- torchvision.models: swin_t/s/b, swin_v2_t/s/b and maxvit_t against torchvision's published
-- parameter counts and state_dict keys; output shapes (windows padded on sizes that are not
-- multiples); the shift mask, relative position index and V2 coordinate table against plain Lua
-- loops; shifted_window_attention against a per-token Lua loop; MaxViT's partitions and schedule.
local T = ...
local here = debug.getinfo(1, "S").source:sub(2):match("(.*/)") or "./"
local with_hub_dir = dofile(here .. "hub_dir.lua")
local torch = require "torch"
local nn = torch.nn
local models = require("torchvision").models
local SW = models.swin_transformer
local MU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "model_util.lua")
local count, index_of, unfilled = MU.count, MU.index_of, MU.structure_only -- unfilled: the b variants' counts and keys

local COUNTS = { swin_t = 28288354, swin_s = 49606258, swin_b = 87768224, swin_v2_t = 28351570,
  swin_v2_s = 49737442, swin_v2_b = 87930848, maxvit_t = 30919624 }
local NKEYS = { swin_t = 185, swin_s = 353, swin_b = 353, swin_v2_t = 233, swin_v2_s = 449, swin_v2_b = 449,
  maxvit_t = 582 }

T.test("parameter counts and state_dict keys", function()
  local built = {}
  for _, name in ipairs({ "swin_t", "swin_s", "swin_b", "swin_v2_t", "swin_v2_s", "swin_v2_b", "maxvit_t" }) do
    local m = unfilled(models[name])
    built[name] = m
    T.eq(count(m), COUNTS[name], name .. " parameters")
    T.eq(count(m), models.get_model_weights(name).DEFAULT.meta.num_params, name .. " meta num_params")
    local k = m:state_dict():keys()
    T.eq(#k, NKEYS[name], name .. " state_dict size")
    if name == "maxvit_t" then
      T.eq({ k[1], k[#k] }, { "stem.0.0.weight", "classifier.5.weight" }, "maxvit_t first / last key")
    else
      T.eq({ k[1], k[#k] }, { "features.0.0.weight", "head.bias" }, name .. " first / last key")
    end
  end
  local k = built.swin_t:state_dict():keys()
  local i = index_of(k, "features.1.0.attn.relative_position_bias_table")
  T.eq({ k[i - 1], k[i + 1], k[i + 2] }, { "features.1.0.norm1.bias", "features.1.0.attn.relative_position_index",
    "features.1.0.attn.qkv.weight" }, "swin_t attention keys (parameters, buffers, then children)")
  T.check(index_of(k, "features.2.reduction.weight") < index_of(k, "features.2.norm.weight"), "PatchMerging keys")
  T.check(index_of(k, "features.7.1.mlp.3.bias") ~= nil and index_of(k, "norm.weight") ~= nil, "swin_t last stage")
  local v2 = built.swin_v2_t
  local k2 = v2:state_dict():keys()
  i = index_of(k2, "features.1.0.attn.logit_scale")
  T.eq({ k2[i + 1], k2[i + 2], k2[i + 7], k2[i + 9] }, { "features.1.0.attn.relative_coords_table",
    "features.1.0.attn.relative_position_index", "features.1.0.attn.cpb_mlp.0.weight",
    "features.1.0.attn.cpb_mlp.2.weight" }, "swin_v2_t attention keys")
  T.eq(v2.features[1][0].attn.relative_position_index.dtype, torch.int64, "index int64")
  T.eq(v2.features[1][0].attn.relative_coords_table.shape:totable(), { 1, 15, 15, 2 }, "coords table shape")
  T.near(v2.features[1][0].attn.logit_scale:flatten():tolist(), { math.log(10), math.log(10), math.log(10) }, 1e-6,
    "logit_scale = log 10")
  local mk = built.maxvit_t:state_dict():keys()
  local pre = "blocks.0.layers.0.layers."
  for _, key in ipairs({ pre .. "MBconv.proj.1.weight", pre .. "MBconv.layers.pre_norm.running_var",
    pre .. "MBconv.layers.squeeze_excitation.fc2.bias", pre .. "window_attention.attn_layer.1.relative_position_bias_table",
    pre .. "window_attention.attn_layer.1.relative_position_index", pre .. "grid_attention.mlp_layer.3.bias",
    "blocks.3.layers.1.layers.grid_attention.attn_layer.1.merge.weight" }) do
    T.check(index_of(mk, key) ~= nil, "maxvit_t key " .. key)
  end
end)

-- region of row / column i on a map of n after the shift: 0 below n - window, 1 below n - shift, else 2
local function region(i, n, window, shift)
  if i < n - window then return 0 elseif i < n - shift then return 1 else return 2 end
end

T.test("shift mask, relative position index and V2 coordinates against Lua loops", function()
  -- the mask of a 14 x 21 map with 7 x 7 windows shifted by 3
  local mask = models._swin_shift_attention_mask(14, 21, { 7, 7 }, { 3, 3 }, torch.zeros(1)):tolist()
  T.eq(#mask, 6, "6 windows")
  local ok = true
  for wi = 0, 1 do
    for wj = 0, 2 do
      local m = mask[wi * 3 + wj + 1]
      for a = 0, 48 do
        for b = 0, 48 do
          local ra = region(wi * 7 + a // 7, 14, 7, 3) * 3 + region(wj * 7 + a % 7, 21, 7, 3)
          local rb = region(wi * 7 + b // 7, 14, 7, 3) * 3 + region(wj * 7 + b % 7, 21, 7, 3)
          if m[a + 1][b + 1] ~= (ra == rb and 0 or -100) then ok = false end
        end
      end
    end
  end
  T.check(ok, "shift mask (7, shift 3)")
  T.eq(mask[1][1][49], 0.0, "first window: one region")
  T.eq(mask[6][1][49], -100.0, "last window: corner tokens apart")

  for _, wh in ipairs({ 7, 8 }) do
    local idx = models._relative_position_index(wh, wh):tolist()
    local buf = models.swin_transformer.ShiftedWindowAttention(8, { wh, wh }, { 0, 0 }, 2).relative_position_index
    T.eq(buf.shape:totable(), { wh * wh * wh * wh }, "the buffer is flat")
    local flat, good = buf:tolist(), true
    for a = 0, wh * wh - 1 do
      for b = 0, wh * wh - 1 do
        local want = (a // wh - b // wh + wh - 1) * (2 * wh - 1) + (a % wh - b % wh + wh - 1)
        if idx[a + 1][b + 1] ~= want or flat[a * wh * wh + b + 1] ~= want then good = false end
      end
    end
    T.check(good, "relative_position_index, window " .. wh)
  end
  local ri = models._relative_position_index(2, 3):tolist()
  T.eq(ri[1], { 7, 6, 5, 2, 1, 0 }, "index of token (0, 0), window 2 x 3")

  local attn = SW.ShiftedWindowAttentionV2(8, { 8, 6 }, { 0, 0 }, 2)
  local tbl = attn.relative_coords_table:tolist()[1]
  local good = true
  for i = 1, 15 do
    for j = 1, 11 do
      local y, x = (i - 8) / 7 * 8, (j - 6) / 5 * 8
      local function f(t) return (t > 0 and 1 or t < 0 and -1 or 0) * math.log(math.abs(t) + 1, 2) / 3 end
      if math.abs(tbl[i][j][1] - f(y)) > 1e-6 or math.abs(tbl[i][j][2] - f(x)) > 1e-6 then good = false end
    end
  end
  T.check(good, "relative_coords_table, window 8 x 6")
  T.eq(attn.qkv.bias:narrow(0, 8, 8):abs():sum():item(), 0.0, "V2 key bias zeroed")
end)

-- shifted_window_attention by a loop over tokens: pad, roll by -shift, attend inside each window
-- with bias table[idx] and -100 across regions, project, roll back, crop
local function attention_loop(x, w_qkv, b_qkv, w_p, b_p, tbl, win, shift, heads)
  local _, H, W, C = table.unpack(x.shape:totable())
  local X, Wq, Bq, Wp, Bp, Tb = x:tolist()[1], w_qkv:tolist(), b_qkv:tolist(), w_p:tolist(), b_p:tolist(), tbl:tolist()
  local ph, pw = math.ceil(H / win) * win, math.ceil(W / win) * win
  local d = C // heads
  local function at(i, j) -- the padded, rolled map
    i, j = (i + shift) % ph, (j + shift) % pw
    if i < H and j < W then return X[i + 1][j + 1] end
    local z = {}
    for c = 1, C do z[c] = 0 end
    return z
  end
  local function lin(Wt, bt, v)
    local out = {}
    for r = 1, #Wt do
      local s = bt[r]
      for c = 1, #v do s = s + Wt[r][c] * v[c] end
      out[r] = s
    end
    return out
  end
  local out = {}
  for wi = 0, ph // win - 1 do
    for wj = 0, pw // win - 1 do
      local toks = {}
      for a = 0, win * win - 1 do
        local i, j = wi * win + a // win, wj * win + a % win
        toks[a] = { i = i, j = j, qkv = lin(Wq, Bq, at(i, j)), reg = region(i, ph, win, shift) * 3 + region(j, pw, win, shift) }
      end
      for a = 0, win * win - 1 do
        local cat = {}
        for h = 0, heads - 1 do
          local s, mx = {}, -math.huge
          for b = 0, win * win - 1 do
            local dot = 0
            for e = 1, d do dot = dot + toks[a].qkv[h * d + e] * toks[b].qkv[C + h * d + e] end
            local idx = (a // win - b // win + win - 1) * (2 * win - 1) + (a % win - b % win + win - 1)
            s[b] = dot * d ^ -0.5 + Tb[idx + 1][h + 1] + ((shift > 0 and toks[a].reg ~= toks[b].reg) and -100 or 0)
            mx = math.max(mx, s[b])
          end
          local z = 0
          for b = 0, win * win - 1 do s[b] = math.exp(s[b] - mx); z = z + s[b] end
          for e = 1, d do
            local acc = 0
            for b = 0, win * win - 1 do acc = acc + s[b] / z * toks[b].qkv[2 * C + h * d + e] end
            cat[h * d + e] = acc
          end
        end
        local i, j = (toks[a].i + shift) % ph, (toks[a].j + shift) % pw
        if i < H and j < W then out[#out + 1] = { i, j, lin(Wp, Bp, cat) } end
      end
    end
  end
  table.sort(out, function(p, q) return p[1] * W + p[2] < q[1] * W + q[2] end)
  local flat = {}
  for _, o in ipairs(out) do for _, v in ipairs(o[3]) do flat[#flat + 1] = v end end
  return flat
end

T.test("shifted_window_attention against a per-token loop", function()
  torch.manual_seed(3)
  for _, case in ipairs({ { 5, 7, 1 }, { 6, 6, 0 }, { 4, 5, 2 } }) do -- H, W, shift (window 3, 4 channels, 2 heads)
    local H, W, shift = case[1], case[2], case[3]
    local m = SW.ShiftedWindowAttention(4, { 3, 3 }, { shift, shift }, 2):double()
    nn.init.normal_(m.relative_position_bias_table)
    local x = torch.randn(1, H, W, 4, { dtype = torch.float64 })
    local got = m(x)
    T.eq(got.shape:totable(), { 1, H, W, 4 }, "shape")
    local want = attention_loop(x, m.qkv.weight, m.qkv.bias, m.proj.weight, m.proj.bias,
      m.relative_position_bias_table, 3, shift, 2)
    T.near(got:flatten():tolist(), want, 1e-9, string.format("attention %dx%d shift %d", H, W, shift))
  end
  -- a window covering the map: no shift (torchvision zeroes it), so equal to the unshifted layer
  local a = SW.ShiftedWindowAttention(4, { 7, 7 }, { 3, 3 }, 2)
  local b = SW.ShiftedWindowAttention(4, { 7, 7 }, { 0, 0 }, 2)
  b:load_state_dict(a:state_dict())
  local x = torch.randn(2, 5, 6, 4)
  T.near(a(x):flatten():tolist(), b(x):flatten():tolist(), 1e-6, "shift dropped when the window covers the map")
  T.eq(a.shift_size, { 3, 3 }, "the layer's shift_size is left as given")
  T.raises(function() SW.ShiftedWindowAttention(4, { 7 }, { 0, 0 }, 2) end, "window_size and shift_size must be of length 2")
end)

T.test("V2 cosine attention", function()
  torch.manual_seed(4)
  local m = SW.ShiftedWindowAttentionV2(4, { 2, 2 }, { 0, 0 }, 1):double()
  m.logit_scale.data:fill_(math.log(1000)) -- clamped to log(100)
  local x = torch.randn(1, 2, 2, 4, { dtype = torch.float64 })
  local qkv = torch.nn.functional.linear(x:reshape(4, 4), m.qkv.weight,
    torch.cat({ m.qkv.bias:narrow(0, 0, 4), torch.zeros(4, { dtype = torch.float64 }), m.qkv.bias:narrow(0, 8, 4) }))
  local q = torch.nn.functional.normalize(qkv:narrow(1, 0, 4), { dim = -1 })
  local k = torch.nn.functional.normalize(qkv:narrow(1, 4, 4), { dim = -1 })
  local bias = 16 * torch.sigmoid(m.cpb_mlp(m.relative_coords_table):view(-1)) -- 9 offsets
  local tbl = bias:tolist()
  local s = q:matmul(k:t()) * 100
  for a = 0, 3 do
    for b = 0, 3 do
      local idx = (a // 2 - b // 2 + 1) * 3 + (a % 2 - b % 2 + 1)
      s[{ a, b }] = s[{ a, b }] + tbl[idx + 1]
    end
  end
  local want = m.proj(torch.softmax(s, -1):matmul(qkv:narrow(1, 8, 4)))
  T.near(m(x):reshape(4, 4):flatten():tolist(), want:flatten():tolist(), 1e-9, "cosine attention, logit scale clamp")
end)

T.test("forward shapes, padding, eval determinism", function()
  torch.manual_seed(0)
  local net = models.swin_t():eval()
  local _ <close> = torch.no_grad()
  local x = torch.randn(1, 3, 224, 224)
  local y = net(x)
  T.eq(y.shape:totable(), { 1, 1000 }, "swin_t 224")
  T.eq(net(x):flatten():tolist(), y:flatten():tolist(), "eval is deterministic")
  T.eq(net(torch.randn(1, 3, 200, 232)).shape:totable(), { 1, 1000 }, "swin_t 200 x 232 (padded windows)")
  local feats = net.features(torch.randn(1, 3, 200, 232))
  T.eq(feats.shape:totable(), { 1, 7, 8, 768 }, "swin_t features 200 x 232: ceil halvings")
  local v2 = models.swin_v2_t({ num_classes = 10 }):eval()
  T.eq(v2(torch.randn(2, 3, 100, 120)).shape:totable(), { 2, 10 }, "swin_v2_t 100 x 120")
  local mv = models.maxvit_t():eval()
  local xm = torch.randn(1, 3, 224, 224)
  local ym = mv(xm)
  T.eq(ym.shape:totable(), { 1, 1000 }, "maxvit_t 224")
  T.eq(mv(xm):flatten():tolist(), ym:flatten():tolist(), "maxvit_t eval is deterministic")
end)

T.test("MaxViT partitions, stochastic depth schedule, errors", function()
  local x = torch.arange(2 * 3 * 4 * 6):reshape(2, 3, 4, 6)
  local part = models.maxvit.WindowPartition()(x, 2)
  T.eq(part.shape:totable(), { 2, 6, 4, 3 }, "WindowPartition shape")
  local P, X, good = part:tolist(), x:tolist(), true
  for b = 1, 2 do
    for g = 0, 5 do
      for t = 0, 3 do
        for c = 1, 3 do
          if P[b][g + 1][t + 1][c] ~= X[b][c][(g // 3) * 2 + t // 2 + 1][(g % 3) * 2 + t % 2 + 1] then good = false end
        end
      end
    end
  end
  T.check(good, "WindowPartition layout")
  T.eq(models.maxvit.WindowDepartition()(part, 2, 2, 3):flatten():tolist(), x:flatten():tolist(), "WindowDepartition inverts")
  T.eq(models.maxvit.SwapAxes(-2, -3)(part).shape:totable(), { 2, 4, 6, 3 }, "SwapAxes")

  local mv = unfilled(models.maxvit_t)
  local L = function(b, l) return mv.blocks[b].layers[l].layers end
  T.check(nn.isinstance(L(0, 0).MBconv.stochastic_depth, nn.Identity), "p = 0: MBConv keeps Identity")
  T.near(L(0, 1).MBconv.stochastic_depth.p, 0.02, 1e-12, "second layer p")
  T.near(L(2, 4).window_attention.stochastic_dropout.p, 0.16, 1e-12, "ninth layer p")
  T.eq(L(3, 1).grid_attention.stochastic_dropout.p, 0.2, "last layer p")
  T.eq(L(0, 0).window_attention.p, 7, "window partition size")
  T.eq(L(0, 0).grid_attention.p, 8, "grid: 56 / 7 partitions")
  T.eq(L(0, 0).grid_attention.grid_size, { 56, 56 }, "grid size")
  local sw = unfilled(models.swin_t)
  T.eq(sw.features[1][0].stochastic_depth.p, 0.0, "swin_t first block p")
  T.near(sw.features[5][1].stochastic_depth.p, 0.2 * 5 / 11, 1e-12, "swin_t sixth block p")
  T.eq(sw.features[7][1].stochastic_depth.p, 0.2, "swin_t last block p")
  T.eq(sw.features[1][1].attn.shift_size, { 3, 3 }, "odd blocks shifted")

  T.raises(function() models.maxvit_t({ input_size = { 200, 200 } }) end,
    "Input size (50, 50) of block 0 is not divisible by partition size 7. Consider changing the partition size or " ..
    "the input size.\nCurrent configuration yields the following block input sizes: [(50, 50), (25, 25), (13, 13), (7, 7)].")
  with_hub_dir(function() -- an empty cache: weights= names the file to put there
    T.raises(function() models.swin_t({ weights = "DEFAULT" }) end, "~swin_t-704ceda3.pth is not in the cache")
  end)
  T.raises(function() models.maxvit_t({ nope = 1 }) end, "~unknown keyword 'nope'")
  T.raises(function() models.maxvit.RelativePositionalMultiHeadAttention(10, 4, 49) end,
    "feat_dim: 10 must be divisible by head_dim: 4")
  T.check(models.get_model("swin_v2_s", { num_classes = 3 }) ~= nil, "get_model builds swin_v2_s")
end)

if torch.cuda.is_available() then
  T.test("cuda", function()
    torch.manual_seed(1)
    local _ <close> = torch.no_grad()
    -- convolutions in full float32 (TF32, their CUDA default, is 1e-3 apart from the CPU)
    local tf32 = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = false
    local _restore <close> = setmetatable({}, { __close = function() torch.backends.cudnn.allow_tf32 = tf32 end })
    for _, name in ipairs({ "swin_t", "maxvit_t" }) do
      local net = models[name]():eval()
      local x = torch.randn(1, 3, 224, 224)
      local want = net(x)
      net:cuda()
      local got = net(x:cuda())
      T.near(got:cpu():flatten():tolist(), want:flatten():tolist(), 1e-4, name .. " on cuda")
    end
    local v2 = models.swin_v2_t():eval()
    local x = torch.randn(1, 3, 100, 120)
    local want = v2(x)
    T.near(v2:cuda()(x:cuda()):cpu():flatten():tolist(), want:flatten():tolist(), 1e-4, "swin_v2_t padded on cuda")
  end)
else
  T.skip("no CUDA", 3)
end
