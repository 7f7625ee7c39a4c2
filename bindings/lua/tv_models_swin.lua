-- torchvision.models: Swin Transformer (swin_t, swin_s, swin_b) and Swin Transformer V2
-- (swin_v2_t, swin_v2_s, swin_v2_b), built as torchvision 0.26 builds them: the same submodule
-- names (state_dict keys such as "features.1.0.attn.relative_position_bias_table"), buffers
-- (relative_position_index, V2's relative_coords_table; both persistent), parameter counts,
-- initialisation and forward (padded windows, cyclic shift with its attention mask, relative
-- position bias; V2: cosine attention with a clamped logit scale and the 16*sigmoid(cpb_mlp) bias).
-- tv_models.lua calls this file's function with its `models` table and argument helpers.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local init = nn.init

return function(models, H)

local fail, failf, parse = H.fail, H.failf, H.parse
local builder_opts = H.model_opts

local ops_layers = require "tv_ops_layers"
local MLP, Permute, StochasticDepth = ops_layers.MLP, ops_layers.Permute, ops_layers.StochasticDepth

-- (wh*ww, wh*ww) int64: for tokens i, j of a window, the row of the (2wh-1)*(2ww-1) bias table
-- that holds their offset (dy + wh-1) * (2ww-1) + (dx + ww-1). MaxViT uses it too.
local function relative_position_index(wh, ww)
  local ch, cw = torch.meshgrid(torch.arange(wh), torch.arange(ww), { indexing = "ij" })
  local coords = torch.stack({ ch, cw }):flatten(1) -- 2, N
  local rel = coords:unsqueeze(2) - coords:unsqueeze(1) -- 2, N, N
  return (rel:select(0, 0) + (wh - 1)) * (2 * ww - 1) + rel:select(0, 1) + (ww - 1)
end
models._relative_position_index = relative_position_index

-- Python's slice bound on a dim of size n (nil: the end)
local function bound(i, n)
  if i == nil then return n end
  return i < 0 and i + n or i
end

-- The (num_windows, N, N) mask of a shifted window layer on a (pad_h, pad_w) map: 0 where both
-- tokens come from the same region of the unshifted map, -100 elsewhere.
local function shift_attention_mask(pad_h, pad_w, window, shift, like)
  local wh, ww = window[1], window[2]
  local regions = torch.zeros(pad_h, pad_w, { dtype = like.dtype, device = like.device })
  local hs = { { 0, -wh }, { -wh, -shift[1] }, { -shift[1], nil } }
  local ws = { { 0, -ww }, { -ww, -shift[2] }, { -shift[2], nil } }
  local count = 0
  for _, h in ipairs(hs) do
    for _, w in ipairs(ws) do
      local h0, h1, w0, w1 = bound(h[1], pad_h), bound(h[2], pad_h), bound(w[1], pad_w), bound(w[2], pad_w)
      if h1 > h0 and w1 > w0 then regions[string.format("%d:%d, %d:%d", h0, h1, w0, w1)] = count end
      count = count + 1
    end
  end
  local nw = (pad_h // wh) * (pad_w // ww)
  regions = regions:view(pad_h // wh, wh, pad_w // ww, ww):permute(0, 2, 1, 3):reshape(nw, wh * ww)
  local diff = regions:unsqueeze(1) - regions:unsqueeze(2)
  return diff:masked_fill(diff:ne(0), -100.0)
end
models._swin_shift_attention_mask = shift_attention_mask

-- torchvision.models.swin_transformer.shifted_window_attention: input (B, H, W, C); logit_scale
-- given: V2's cosine attention (and the key bias left out)
local function shifted_window_attention(...)
  local o = parse("shifted_window_attention", { { "input", U.REQUIRED }, { "qkv_weight", U.REQUIRED },
    { "proj_weight", U.REQUIRED }, { "relative_position_bias", U.REQUIRED }, { "window_size", U.REQUIRED },
    { "num_heads", U.REQUIRED }, { "shift_size", U.REQUIRED }, { "attention_dropout", 0.0 }, { "dropout", 0.0 },
    { "qkv_bias" }, { "proj_bias" }, { "logit_scale" }, { "training", true } }, ...)
  local input, window, num_heads = o.input, o.window_size, o.num_heads
  if input:dim() ~= 4 then failf("shifted_window_attention: expected a (B, H, W, C) input, got %d dims", input:dim()) end
  local B, Hh, W, C = input:size(0), input:size(1), input:size(2), input:size(3)
  local wh, ww = window[1], window[2]
  local x = F.pad(input, { 0, 0, 0, (ww - W % ww) % ww, 0, (wh - Hh % wh) % wh })
  local pad_h, pad_w = x:size(1), x:size(2)
  local shift = { o.shift_size[1], o.shift_size[2] }
  if wh >= pad_h then shift[1] = 0 end
  if ww >= pad_w then shift[2] = 0 end
  local shifted = shift[1] + shift[2] > 0
  if shifted then x = torch.roll(x, { -shift[1], -shift[2] }, { 1, 2 }) end

  local nh, nw = pad_h // wh, pad_w // ww
  local windows, n = nh * nw, wh * ww
  x = x:view(B, nh, wh, nw, ww, C):permute(0, 1, 3, 2, 4, 5):reshape(B * windows, n, C)

  local qkv_bias = o.qkv_bias
  if o.logit_scale ~= nil and qkv_bias ~= nil then
    local len = qkv_bias:numel() // 3
    qkv_bias = torch.cat({ qkv_bias:narrow(0, 0, len), torch.zeros_like(qkv_bias:narrow(0, len, len)),
      qkv_bias:narrow(0, 2 * len, qkv_bias:numel() - 2 * len) })
  end
  local qkv = F.linear(x, o.qkv_weight, qkv_bias)
  qkv = qkv:reshape(x:size(0), n, 3, num_heads, C // num_heads):permute(2, 0, 3, 1, 4)
  local q, k, v = qkv:select(0, 0), qkv:select(0, 1), qkv:select(0, 2)
  local attn
  if o.logit_scale ~= nil then
    attn = F.normalize(q, { dim = -1 }):matmul(F.normalize(k, { dim = -1 }):transpose(-2, -1))
    attn = attn * torch.clamp(o.logit_scale, { max = math.log(100.0) }):exp()
  else
    attn = (q * (C // num_heads) ^ -0.5):matmul(k:transpose(-2, -1))
  end
  attn = attn + o.relative_position_bias
  if shifted then
    local mask = shift_attention_mask(pad_h, pad_w, window, shift, x)
    attn = attn:view(-1, windows, num_heads, n, n) + mask:unsqueeze(1):unsqueeze(0)
    attn = attn:view(-1, num_heads, n, n)
  end
  attn = F.softmax(attn, { dim = -1 })
  attn = F.dropout(attn, { p = o.attention_dropout, training = o.training })

  x = attn:matmul(v):transpose(1, 2):reshape(x:size(0), n, C)
  x = F.linear(x, o.proj_weight, o.proj_bias)
  x = F.dropout(x, { p = o.dropout, training = o.training })

  x = x:view(B, nh, nw, wh, ww, C):permute(0, 1, 3, 2, 4, 5):reshape(B, pad_h, pad_w, C)
  if shifted then x = torch.roll(x, { shift[1], shift[2] }, { 1, 2 }) end
  return x:narrow(1, 0, Hh):narrow(2, 0, W):contiguous()
end
-- torchvision.models.swin_transformer's functions and classes
local SW = { shifted_window_attention = shifted_window_attention }
models.swin_transformer = SW

-- ---- PatchMerging, PatchMergingV2 ----

-- (..., H, W, C) -> (..., ceil(H/2), ceil(W/2), 4C): the four pixels of each 2x2 cell side by side
local function patch_merging_pad(x)
  local h, w = x:size(-3), x:size(-2)
  x = F.pad(x, { 0, 0, 0, w % 2, 0, h % 2 })
  return torch.cat({ x["..., 0::2, 0::2, :"], x["..., 1::2, 0::2, :"], x["..., 0::2, 1::2, :"],
    x["..., 1::2, 1::2, :"] }, -1)
end

local function patch_merging_class(name, norm_dim)
  local cls = nn.Module:extend(name)
  function cls:__init(...)
    local o = parse(name, { { "dim", U.REQUIRED }, { "norm_layer", nn.LayerNorm } }, ...)
    self.dim = o.dim
    self.reduction = nn.Linear(4 * o.dim, 2 * o.dim, { bias = false })
    self.norm = o.norm_layer(norm_dim * o.dim)
  end
  return cls
end
local PatchMerging = patch_merging_class("PatchMerging", 4)
SW.PatchMerging = PatchMerging
function PatchMerging:forward(x) return self.reduction(self.norm(patch_merging_pad(x))) end

-- V2 normalises after the reduction
local PatchMergingV2 = patch_merging_class("PatchMergingV2", 2)
SW.PatchMergingV2 = PatchMergingV2
function PatchMergingV2:forward(x) return self.norm(self.reduction(patch_merging_pad(x))) end

-- ---- ShiftedWindowAttention, ShiftedWindowAttentionV2 ----

local attn_spec = { { "dim", U.REQUIRED }, { "window_size", U.REQUIRED }, { "shift_size", U.REQUIRED },
  { "num_heads", U.REQUIRED }, { "qkv_bias", true }, { "proj_bias", true }, { "attention_dropout", 0.0 },
  { "dropout", 0.0 } }

local ShiftedWindowAttention = nn.Module:extend("ShiftedWindowAttention")
SW.ShiftedWindowAttention = ShiftedWindowAttention
function ShiftedWindowAttention:__init(...)
  local o = parse("ShiftedWindowAttention", attn_spec, ...)
  if type(o.window_size) ~= "table" or #o.window_size ~= 2 or type(o.shift_size) ~= "table" or #o.shift_size ~= 2 then
    fail("window_size and shift_size must be of length 2")
  end
  self.window_size, self.shift_size, self.num_heads = o.window_size, o.shift_size, o.num_heads
  self.attention_dropout, self.dropout = o.attention_dropout, o.dropout
  self.qkv = nn.Linear(o.dim, o.dim * 3, { bias = o.qkv_bias })
  self.proj = nn.Linear(o.dim, o.dim, { bias = o.proj_bias })
  self:define_relative_position_bias_table()
  self:define_relative_position_index()
end
function ShiftedWindowAttention:define_relative_position_bias_table()
  local wh, ww = self.window_size[1], self.window_size[2]
  self.relative_position_bias_table = nn.Parameter(torch.zeros((2 * wh - 1) * (2 * ww - 1), self.num_heads))
  init.trunc_normal_(self.relative_position_bias_table, { std = 0.02 })
end
function ShiftedWindowAttention:define_relative_position_index()
  self:register_buffer("relative_position_index",
    relative_position_index(self.window_size[1], self.window_size[2]):flatten())
end
-- (1, num_heads, N, N): the table's rows picked by the index
local function gather_bias(tbl, index, n)
  return tbl:index_select(0, index:view(-1)):view(n, n, -1):permute(2, 0, 1):contiguous():unsqueeze(0)
end
models._gather_relative_bias = gather_bias
function ShiftedWindowAttention:get_relative_position_bias()
  return gather_bias(self.relative_position_bias_table, self.relative_position_index,
    self.window_size[1] * self.window_size[2])
end
function ShiftedWindowAttention:forward(x)
  return shifted_window_attention(x, self.qkv.weight, self.proj.weight, self:get_relative_position_bias(),
    self.window_size, self.num_heads, self.shift_size, { attention_dropout = self.attention_dropout,
      dropout = self.dropout, qkv_bias = self.qkv.bias, proj_bias = self.proj.bias, logit_scale = self.logit_scale,
      training = self.training })
end

local ShiftedWindowAttentionV2 = ShiftedWindowAttention:extend("ShiftedWindowAttentionV2")
SW.ShiftedWindowAttentionV2 = ShiftedWindowAttentionV2
function ShiftedWindowAttentionV2:__init(...)
  local o = parse("ShiftedWindowAttentionV2", attn_spec, ...)
  ShiftedWindowAttention.__init(self, o)
  self.logit_scale = nn.Parameter(torch.log(torch.ones(o.num_heads, 1, 1) * 10))
  self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, { bias = true }), nn.ReLU({ inplace = true }),
    nn.Linear(512, o.num_heads, { bias = false }))
  if o.qkv_bias then
    local len = self.qkv.bias:numel() // 3
    local _ <close> = torch.no_grad()
    self.qkv.bias:narrow(0, len, len):zero_()
  end
end
-- the (1, 2wh-1, 2ww-1, 2) float32 table of offsets fed to cpb_mlp: each offset scaled to
-- [-8, 8], then sign(t) * log2(|t| + 1) / 3
function ShiftedWindowAttentionV2:define_relative_position_bias_table()
  local wh, ww = self.window_size[1], self.window_size[2]
  local th, tw = torch.meshgrid(torch.arange(-(wh - 1), wh, { dtype = torch.float32 }),
    torch.arange(-(ww - 1), ww, { dtype = torch.float32 }), { indexing = "ij" })
  local t = torch.stack({ th / (wh - 1), tw / (ww - 1) }, -1):unsqueeze(0) * 8
  self:register_buffer("relative_coords_table", torch.sign(t) * torch.log2(torch.abs(t) + 1.0) / 3.0)
end
function ShiftedWindowAttentionV2:get_relative_position_bias()
  local tbl = self.cpb_mlp(self.relative_coords_table):view(-1, self.num_heads)
  return 16 * torch.sigmoid(gather_bias(tbl, self.relative_position_index, self.window_size[1] * self.window_size[2]))
end

-- ---- SwinTransformerBlock, SwinTransformerBlockV2 ----

local block_spec = { { "dim", U.REQUIRED }, { "num_heads", U.REQUIRED }, { "window_size", U.REQUIRED },
  { "shift_size", U.REQUIRED }, { "mlp_ratio", 4.0 }, { "dropout", 0.0 }, { "attention_dropout", 0.0 },
  { "stochastic_depth_prob", 0.0 }, { "norm_layer", nn.LayerNorm }, { "attn_layer" } }

local SwinTransformerBlock = nn.Module:extend("SwinTransformerBlock")
SW.SwinTransformerBlock = SwinTransformerBlock
function SwinTransformerBlock:__init(...)
  local o = parse(self:_get_name(), block_spec, ...)
  local attn_layer = o.attn_layer or self._attn_layer
  self.norm1 = o.norm_layer(o.dim)
  self.attn = attn_layer(o.dim, o.window_size, o.shift_size, o.num_heads,
    { attention_dropout = o.attention_dropout, dropout = o.dropout })
  self.stochastic_depth = StochasticDepth(o.stochastic_depth_prob, "row")
  self.norm2 = o.norm_layer(o.dim)
  self.mlp = MLP(o.dim, { math.floor(o.dim * o.mlp_ratio), o.dim }, { activation_layer = nn.GELU, dropout = o.dropout })
  for _, m in ipairs(self.mlp:modules()) do
    if nn.isinstance(m, nn.Linear) then
      init.xavier_uniform_(m.weight)
      if m.bias ~= nil then init.normal_(m.bias, { std = 1e-6 }) end
    end
  end
end
SwinTransformerBlock._attn_layer = ShiftedWindowAttention
function SwinTransformerBlock:forward(x)
  x = x + self.stochastic_depth(self.attn(self.norm1(x)))
  return x + self.stochastic_depth(self.mlp(self.norm2(x)))
end

-- V2 normalises the branches' outputs instead of their inputs
local SwinTransformerBlockV2 = SwinTransformerBlock:extend("SwinTransformerBlockV2")
SW.SwinTransformerBlockV2 = SwinTransformerBlockV2
SwinTransformerBlockV2._attn_layer = ShiftedWindowAttentionV2
function SwinTransformerBlockV2:forward(x)
  x = x + self.stochastic_depth(self.norm1(self.attn(x)))
  return x + self.stochastic_depth(self.norm2(self.mlp(x)))
end

-- ---- SwinTransformer ----

local SwinTransformer = nn.Module:extend("SwinTransformer")
SW.SwinTransformer, models.SwinTransformer = SwinTransformer, SwinTransformer
function SwinTransformer:__init(...)
  local o = parse("SwinTransformer", { { "patch_size", U.REQUIRED }, { "embed_dim", U.REQUIRED },
    { "depths", U.REQUIRED }, { "num_heads", U.REQUIRED }, { "window_size", U.REQUIRED }, { "mlp_ratio", 4.0 },
    { "dropout", 0.0 }, { "attention_dropout", 0.0 }, { "stochastic_depth_prob", 0.1 }, { "num_classes", 1000 },
    { "norm_layer" }, { "block" }, { "downsample_layer", PatchMerging } }, ...)
  self.num_classes = o.num_classes
  local block = o.block or SwinTransformerBlock
  local norm_layer = o.norm_layer or nn.LayerNorm
  local ps, depths, window = o.patch_size, o.depths, o.window_size
  local layers = { nn.Sequential(nn.Conv2d(3, o.embed_dim, { kernel_size = { ps[1], ps[2] }, stride = { ps[1], ps[2] } }),
    Permute({ 0, 2, 3, 1 }), norm_layer(o.embed_dim)) }
  local total = 0
  for _, d in ipairs(depths) do total = total + d end
  local block_id = 0
  for i, depth in ipairs(depths) do
    local dim = o.embed_dim * (1 << (i - 1))
    local stage = {}
    for j = 0, depth - 1 do
      local shift = {}
      for k, w in ipairs(window) do shift[k] = j % 2 == 0 and 0 or w // 2 end
      stage[#stage + 1] = block(dim, o.num_heads[i], { window_size = window, shift_size = shift,
        mlp_ratio = o.mlp_ratio, dropout = o.dropout, attention_dropout = o.attention_dropout,
        stochastic_depth_prob = o.stochastic_depth_prob * block_id / (total - 1), norm_layer = norm_layer })
      block_id = block_id + 1
    end
    layers[#layers + 1] = nn.Sequential(table.unpack(stage))
    if i < #depths then layers[#layers + 1] = o.downsample_layer(dim, norm_layer) end
  end
  self.features = nn.Sequential(table.unpack(layers))
  local num_features = o.embed_dim * (1 << (#depths - 1))
  self.norm = norm_layer(num_features)
  self.permute = Permute({ 0, 3, 1, 2 })
  self.avgpool = nn.AdaptiveAvgPool2d(1)
  self.flatten = nn.Flatten(1)
  self.head = nn.Linear(num_features, o.num_classes)
  for _, m in ipairs(self:modules()) do
    if nn.isinstance(m, nn.Linear) then
      init.trunc_normal_(m.weight, { std = 0.02 })
      if m.bias ~= nil then init.zeros_(m.bias) end
    end
  end
end
function SwinTransformer:forward(x)
  x = self.norm(self.features(x))
  return self.head(self.flatten(self.avgpool(self.permute(x))))
end

local swin_cfgs = { -- embed_dim, depths, num_heads, window, stochastic_depth_prob, v2
  swin_t = { 96, { 2, 2, 6, 2 }, { 3, 6, 12, 24 }, 7, 0.2 },
  swin_s = { 96, { 2, 2, 18, 2 }, { 3, 6, 12, 24 }, 7, 0.3 },
  swin_b = { 128, { 2, 2, 18, 2 }, { 4, 8, 16, 32 }, 7, 0.5 },
  swin_v2_t = { 96, { 2, 2, 6, 2 }, { 3, 6, 12, 24 }, 8, 0.2, true },
  swin_v2_s = { 96, { 2, 2, 18, 2 }, { 3, 6, 12, 24 }, 8, 0.3, true },
  swin_v2_b = { 128, { 2, 2, 18, 2 }, { 4, 8, 16, 32 }, 8, 0.5, true } }
for name, c in pairs(swin_cfgs) do
  models[name] = function(...)
    local o = builder_opts(name, { { "num_classes", 1000 }, { "mlp_ratio", 4.0 }, { "dropout", 0.0 },
      { "attention_dropout", 0.0 }, { "norm_layer" }, { "block", c[6] and SwinTransformerBlockV2 or nil },
      { "downsample_layer", c[6] and PatchMergingV2 or PatchMerging } }, ...)
    o.patch_size, o.embed_dim, o.depths, o.num_heads = { 4, 4 }, c[1], c[2], c[3]
    o.window_size, o.stochastic_depth_prob = { c[4], c[4] }, c[5]
    return SwinTransformer(o)
  end
  SW[name] = models[name]
end

end
