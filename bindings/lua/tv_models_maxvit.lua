-- torchvision.models: MaxViT (maxvit_t and any configuration), built as torchvision 0.26 builds it:
-- the same submodule names ("blocks.0.layers.0.layers.MBconv.layers.conv_a.0.weight",
-- "...window_attention.attn_layer.1.relative_position_bias_table"), the relative_position_index
-- buffer (persistent, (P*P, P*P)), parameter counts, initialisation and forward: MBConv, then
-- attention inside P x P windows, then across a P x P grid (the same partition with the window
-- and grid axes swapped), stochastic depth rising linearly from 0 over the layers.
-- tv_models.lua calls this file's function after tv_models_swin's (whose relative position index it reuses).
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local init = nn.init

return function(models, H)

local fail, failf, parse = H.fail, H.failf, H.parse
local builder_opts = H.model_opts

local ops_layers = require "tv_ops_layers"
models.maxvit = {} -- torchvision.models.maxvit's classes
local Conv2dNormActivation, SqueezeExcitation = ops_layers.Conv2dNormActivation, ops_layers.SqueezeExcitation
local StochasticDepth = ops_layers.StochasticDepth

-- the output size of a k x k convolution with stride s and padding p
local function conv_out(size, k, s, p) return { (size[1] - k + 2 * p) // s + 1, (size[2] - k + 2 * p) // s + 1 } end

-- torchvision passes inplace=None to the activations (nn.GELU takes no inplace)
local function no_inplace(act) return function() return act() end end

-- ---- MBConv ----

local MBConv = nn.Module:extend("MBConv")
models.maxvit.MBConv = MBConv
function MBConv:__init(...)
  local o = parse("MBConv", { { "in_channels", U.REQUIRED }, { "out_channels", U.REQUIRED },
    { "expansion_ratio", U.REQUIRED }, { "squeeze_ratio", U.REQUIRED }, { "stride", U.REQUIRED },
    { "activation_layer", U.REQUIRED }, { "norm_layer", U.REQUIRED }, { "p_stochastic_dropout", 0.0 } }, ...)
  local cin, cout = o.in_channels, o.out_channels
  if o.stride ~= 1 or cin ~= cout then
    local proj = { nn.Conv2d(cin, cout, { kernel_size = 1, stride = 1, bias = true }) }
    if o.stride == 2 then table.insert(proj, 1, nn.AvgPool2d({ kernel_size = 3, stride = o.stride, padding = 1 })) end
    self.proj = nn.Sequential(table.unpack(proj))
  else
    self.proj = nn.Identity()
  end
  local mid, sqz = math.floor(cout * o.expansion_ratio), math.floor(cout * o.squeeze_ratio)
  if o.p_stochastic_dropout ~= 0 then self.stochastic_depth = StochasticDepth(o.p_stochastic_dropout, "row")
  else self.stochastic_depth = nn.Identity() end
  local act = no_inplace(o.activation_layer)
  self.layers = nn.Sequential({
    { "pre_norm", o.norm_layer(cin) },
    { "conv_a", Conv2dNormActivation(cin, mid, { kernel_size = 1, stride = 1, padding = 0, activation_layer = act,
      norm_layer = o.norm_layer }) },
    { "conv_b", Conv2dNormActivation(mid, mid, { kernel_size = 3, stride = o.stride, padding = 1, activation_layer = act,
      norm_layer = o.norm_layer, groups = mid }) },
    { "squeeze_excitation", SqueezeExcitation(mid, sqz, { activation = nn.SiLU }) },
    { "conv_c", nn.Conv2d(mid, cout, { kernel_size = 1, bias = true }) } })
end
function MBConv:forward(x) return self.proj(x) + self.stochastic_depth(self.layers(x)) end

-- ---- RelativePositionalMultiHeadAttention ----

local RelativePositionalMultiHeadAttention = nn.Module:extend("RelativePositionalMultiHeadAttention")
models.maxvit.RelativePositionalMultiHeadAttention = RelativePositionalMultiHeadAttention
function RelativePositionalMultiHeadAttention:__init(...)
  local o = parse("RelativePositionalMultiHeadAttention", { { "feat_dim", U.REQUIRED }, { "head_dim", U.REQUIRED },
    { "max_seq_len", U.REQUIRED } }, ...)
  if o.feat_dim % o.head_dim ~= 0 then
    failf("feat_dim: %d must be divisible by head_dim: %d", o.feat_dim, o.head_dim)
  end
  self.n_heads, self.head_dim = o.feat_dim // o.head_dim, o.head_dim
  self.size = math.floor(math.sqrt(o.max_seq_len))
  self.max_seq_len = o.max_seq_len
  self.to_qkv = nn.Linear(o.feat_dim, self.n_heads * self.head_dim * 3)
  self.scale_factor = o.feat_dim ^ -0.5 -- torchvision scales by the feature width, not the head width
  self.merge = nn.Linear(self.head_dim * self.n_heads, o.feat_dim)
  self.relative_position_bias_table = nn.Parameter(torch.empty((2 * self.size - 1) * (2 * self.size - 1), self.n_heads))
  self:register_buffer("relative_position_index", models._relative_position_index(self.size, self.size))
  init.trunc_normal_(self.relative_position_bias_table, { std = 0.02 })
end
function RelativePositionalMultiHeadAttention:get_relative_positional_bias()
  return models._gather_relative_bias(self.relative_position_bias_table, self.relative_position_index, self.max_seq_len)
end
-- x: (B, G, P, D) -> (B, G, P, D), attention among the P tokens of each of the G groups
function RelativePositionalMultiHeadAttention:forward(x)
  local B, G, P, D = x:size(0), x:size(1), x:size(2), x:size(3)
  local nh, dh = self.n_heads, self.head_dim
  local q, k, v = table.unpack(torch.chunk(self.to_qkv(x), 3, -1))
  q = q:reshape(B, G, P, nh, dh):permute(0, 1, 3, 2, 4)
  k = k:reshape(B, G, P, nh, dh):permute(0, 1, 3, 2, 4) * self.scale_factor
  v = v:reshape(B, G, P, nh, dh):permute(0, 1, 3, 2, 4)
  local attn = F.softmax(q:matmul(k:transpose(-2, -1)) + self:get_relative_positional_bias(), { dim = -1 })
  local out = attn:matmul(v):permute(0, 1, 3, 2, 4):reshape(B, G, P, D)
  return self.merge(out)
end

-- ---- SwapAxes, WindowPartition, WindowDepartition ----

local SwapAxes = nn.Module:extend("SwapAxes")
models.maxvit.SwapAxes = SwapAxes
function SwapAxes:__init(a, b) self.a, self.b = a, b end
function SwapAxes:forward(x) return torch.swapaxes(x, self.a, self.b) end

-- (B, C, H, W) -> (B, H/p * W/p, p*p, C)
local WindowPartition = nn.Module:extend("WindowPartition")
models.maxvit.WindowPartition = WindowPartition
function WindowPartition:forward(x, p)
  local B, C, Hh, W = x:size(0), x:size(1), x:size(2), x:size(3)
  x = x:reshape(B, C, Hh // p, p, W // p, p):permute(0, 2, 4, 3, 5, 1)
  return x:reshape(B, (Hh // p) * (W // p), p * p, C)
end

-- (B, hp * wp, p*p, C) -> (B, C, hp * p, wp * p)
local WindowDepartition = nn.Module:extend("WindowDepartition")
models.maxvit.WindowDepartition = WindowDepartition
function WindowDepartition:forward(x, p, hp, wp)
  local B, C = x:size(0), x:size(3)
  x = x:reshape(B, hp, wp, p, p, C):permute(0, 5, 1, 3, 2, 4)
  return x:reshape(B, C, hp * p, wp * p)
end

-- ---- PartitionAttentionLayer ----

local PartitionAttentionLayer = nn.Module:extend("PartitionAttentionLayer")
models.maxvit.PartitionAttentionLayer = PartitionAttentionLayer
function PartitionAttentionLayer:__init(...)
  local o = parse("PartitionAttentionLayer", { { "in_channels", U.REQUIRED }, { "head_dim", U.REQUIRED },
    { "partition_size", U.REQUIRED }, { "partition_type", U.REQUIRED }, { "grid_size", U.REQUIRED },
    { "mlp_ratio", U.REQUIRED }, { "activation_layer", U.REQUIRED }, { "norm_layer", U.REQUIRED },
    { "attention_dropout", U.REQUIRED }, { "mlp_dropout", U.REQUIRED }, { "p_stochastic_dropout", U.REQUIRED } }, ...)
  local c, ps = o.in_channels, o.partition_size
  self.n_heads, self.head_dim = c // o.head_dim, o.head_dim
  self.n_partitions = o.grid_size[1] // ps
  self.partition_type, self.grid_size = o.partition_type, o.grid_size
  if o.partition_type ~= "grid" and o.partition_type ~= "window" then
    fail("partition_type must be either 'grid' or 'window'")
  end
  if o.partition_type == "window" then self.p, self.g = ps, self.n_partitions
  else self.p, self.g = self.n_partitions, ps end
  local grid = o.partition_type == "grid"
  self.partition_op = WindowPartition()
  self.departition_op = WindowDepartition()
  self.partition_swap = grid and SwapAxes(-2, -3) or nn.Identity()
  self.departition_swap = grid and SwapAxes(-2, -3) or nn.Identity()
  self.attn_layer = nn.Sequential(o.norm_layer(c), RelativePositionalMultiHeadAttention(c, o.head_dim, ps * ps),
    nn.Dropout(o.attention_dropout))
  self.mlp_layer = nn.Sequential(nn.LayerNorm(c), nn.Linear(c, c * o.mlp_ratio), o.activation_layer(),
    nn.Linear(c * o.mlp_ratio, c), nn.Dropout(o.mlp_dropout))
  self.stochastic_dropout = StochasticDepth(o.p_stochastic_dropout, "row")
end
function PartitionAttentionLayer:forward(x)
  local gs, p = self.grid_size, self.p
  if gs[1] % p ~= 0 or gs[2] % p ~= 0 then
    failf("Grid size must be divisible by partition size. Got grid size of (%d, %d) and partition size of %d",
      gs[1], gs[2], p)
  end
  x = self.partition_swap(self.partition_op(x, p))
  x = x + self.stochastic_dropout(self.attn_layer(x))
  x = x + self.stochastic_dropout(self.mlp_layer(x))
  return self.departition_op(self.departition_swap(x), p, gs[1] // p, gs[2] // p)
end

-- ---- MaxVitLayer, MaxVitBlock ----

local layer_spec = { { "in_channels", U.REQUIRED }, { "out_channels", U.REQUIRED }, { "squeeze_ratio", U.REQUIRED },
  { "expansion_ratio", U.REQUIRED }, { "stride", U.REQUIRED }, { "norm_layer", U.REQUIRED },
  { "activation_layer", U.REQUIRED }, { "head_dim", U.REQUIRED }, { "mlp_ratio", U.REQUIRED },
  { "mlp_dropout", U.REQUIRED }, { "attention_dropout", U.REQUIRED }, { "p_stochastic_dropout", U.REQUIRED },
  { "partition_size", U.REQUIRED }, { "grid_size", U.REQUIRED } }

local MaxVitLayer = nn.Module:extend("MaxVitLayer")
models.maxvit.MaxVitLayer = MaxVitLayer
function MaxVitLayer:__init(...)
  local o = parse("MaxVitLayer", layer_spec, ...)
  local function attention(kind)
    return PartitionAttentionLayer({ in_channels = o.out_channels, head_dim = o.head_dim,
      partition_size = o.partition_size, partition_type = kind, grid_size = o.grid_size, mlp_ratio = o.mlp_ratio,
      activation_layer = o.activation_layer, norm_layer = nn.LayerNorm, attention_dropout = o.attention_dropout,
      mlp_dropout = o.mlp_dropout, p_stochastic_dropout = o.p_stochastic_dropout })
  end
  self.layers = nn.Sequential({
    { "MBconv", MBConv({ in_channels = o.in_channels, out_channels = o.out_channels,
      expansion_ratio = o.expansion_ratio, squeeze_ratio = o.squeeze_ratio, stride = o.stride,
      activation_layer = o.activation_layer, norm_layer = o.norm_layer, p_stochastic_dropout = o.p_stochastic_dropout }) },
    { "window_attention", attention("window") },
    { "grid_attention", attention("grid") } })
end
function MaxVitLayer:forward(x) return self.layers(x) end

local MaxVitBlock = nn.Module:extend("MaxVitBlock")
models.maxvit.MaxVitBlock = MaxVitBlock
function MaxVitBlock:__init(...)
  local spec = {}
  for _, s in ipairs(layer_spec) do
    if s[1] ~= "stride" and s[1] ~= "p_stochastic_dropout" and s[1] ~= "grid_size" then spec[#spec + 1] = s end
  end
  spec[#spec + 1] = { "input_grid_size", U.REQUIRED }
  spec[#spec + 1] = { "n_layers", U.REQUIRED }
  spec[#spec + 1] = { "p_stochastic", U.REQUIRED }
  local o = parse("MaxVitBlock", spec, ...)
  if #o.p_stochastic ~= o.n_layers then
    failf("p_stochastic must have length n_layers=%d, got p_stochastic=%s.", o.n_layers, U.pystr(o.p_stochastic))
  end
  self.layers = nn.ModuleList()
  self.grid_size = conv_out(o.input_grid_size, 3, 2, 1) -- the first layer's stride
  for i, p in ipairs(o.p_stochastic) do
    self.layers:append(MaxVitLayer({ in_channels = i == 1 and o.in_channels or o.out_channels,
      out_channels = o.out_channels, squeeze_ratio = o.squeeze_ratio, expansion_ratio = o.expansion_ratio,
      stride = i == 1 and 2 or 1, norm_layer = o.norm_layer, activation_layer = o.activation_layer,
      head_dim = o.head_dim, mlp_ratio = o.mlp_ratio, mlp_dropout = o.mlp_dropout,
      attention_dropout = o.attention_dropout, partition_size = o.partition_size, grid_size = self.grid_size,
      p_stochastic_dropout = p }))
  end
end
function MaxVitBlock:forward(x)
  for _, layer in pairs(self.layers) do x = layer(x) end
  return x
end

-- ---- MaxVit ----

local function maxvit_bn(c) return nn.BatchNorm2d(c, { eps = 1e-3, momentum = 0.99 }) end

-- n evenly spaced values from 0 to stop (numpy.linspace)
local function linspace(stop, n)
  local out = {}
  for i = 1, n do out[i] = n == 1 and 0.0 or (i - 1) * (stop / (n - 1)) end
  if n > 1 then out[n] = stop + 0.0 end
  return out
end

local MaxVit = nn.Module:extend("MaxVit")
models.maxvit.MaxVit, models.MaxVit = MaxVit, MaxVit
local maxvit_spec = { { "input_size", U.REQUIRED }, { "stem_channels", U.REQUIRED }, { "partition_size", U.REQUIRED },
  { "block_channels", U.REQUIRED }, { "block_layers", U.REQUIRED }, { "head_dim", U.REQUIRED },
  { "stochastic_depth_prob", U.REQUIRED }, { "norm_layer" }, { "activation_layer", nn.GELU }, { "squeeze_ratio", 0.25 },
  { "expansion_ratio", 4 }, { "mlp_ratio", 4 }, { "mlp_dropout", 0.0 }, { "attention_dropout", 0.0 },
  { "num_classes", 1000 } }
function MaxVit:__init(...)
  local o = parse("MaxVit", maxvit_spec, ...)
  local norm_layer = o.norm_layer or maxvit_bn
  local ps, channels, nlayers = o.partition_size, o.block_channels, o.block_layers
  local size = { o.input_size[1], o.input_size[2] }
  local shapes, s = {}, conv_out(size, 3, 2, 1)
  for i = 1, #channels do
    s = conv_out(s, 3, 2, 1)
    shapes[i] = s
  end
  for i, bs in ipairs(shapes) do
    if bs[1] % ps ~= 0 or bs[2] % ps ~= 0 then
      local list = {}
      for j, t in ipairs(shapes) do list[j] = string.format("(%d, %d)", t[1], t[2]) end
      failf("Input size (%d, %d) of block %d is not divisible by partition size %d. Consider changing the " ..
        "partition size or the input size.\nCurrent configuration yields the following block input sizes: [%s].",
        bs[1], bs[2], i - 1, ps, table.concat(list, ", "))
    end
  end
  self.stem = nn.Sequential(
    Conv2dNormActivation(3, o.stem_channels, 3, { stride = 2, norm_layer = norm_layer,
      activation_layer = no_inplace(o.activation_layer), bias = false }),
    Conv2dNormActivation(o.stem_channels, o.stem_channels, 3, { stride = 1, norm_layer = false,
      activation_layer = false, bias = true }))
  size = conv_out(size, 3, 2, 1)
  self.partition_size = ps
  self.blocks = nn.ModuleList()
  local total = 0
  for _, n in ipairs(nlayers) do total = total + n end
  local probs = linspace(o.stochastic_depth_prob, total)
  local p_idx = 0
  for i, cout in ipairs(channels) do
    local p = {}
    for j = 1, nlayers[i] do p[j] = probs[p_idx + j] end
    local block = MaxVitBlock({ in_channels = i == 1 and o.stem_channels or channels[i - 1], out_channels = cout,
      squeeze_ratio = o.squeeze_ratio, expansion_ratio = o.expansion_ratio, norm_layer = norm_layer,
      activation_layer = o.activation_layer, head_dim = o.head_dim, mlp_ratio = o.mlp_ratio,
      mlp_dropout = o.mlp_dropout, attention_dropout = o.attention_dropout, partition_size = ps,
      input_grid_size = size, n_layers = nlayers[i], p_stochastic = p })
    self.blocks:append(block)
    size = block.grid_size
    p_idx = p_idx + nlayers[i]
  end
  local last = channels[#channels]
  self.classifier = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(last), nn.Linear(last, last),
    nn.Tanh(), nn.Linear(last, o.num_classes, { bias = false }))
  for _, m in ipairs(self:modules()) do
    if nn.isinstance(m, nn.Conv2d) then
      init.normal_(m.weight, { std = 0.02 })
      if m.bias ~= nil then init.zeros_(m.bias) end
    elseif nn.isinstance(m, nn.BatchNorm2d) then
      init.constant_(m.weight, 1)
      init.constant_(m.bias, 0)
    elseif nn.isinstance(m, nn.Linear) then
      init.normal_(m.weight, { std = 0.02 })
      if m.bias ~= nil then init.zeros_(m.bias) end
    end
  end
end
function MaxVit:forward(x)
  x = self.stem(x)
  for _, block in pairs(self.blocks) do x = block(x) end
  return self.classifier(x)
end

models.maxvit_t = function(...)
  local o = builder_opts("maxvit_t", { { "input_size", { 224, 224 } }, { "norm_layer" }, { "activation_layer", nn.GELU },
    { "squeeze_ratio", 0.25 }, { "expansion_ratio", 4 }, { "mlp_ratio", 4 }, { "mlp_dropout", 0.0 },
    { "attention_dropout", 0.0 }, { "num_classes", 1000 } }, ...)
  o.stem_channels, o.block_channels, o.block_layers = 64, { 64, 128, 256, 512 }, { 2, 2, 5, 2 }
  o.head_dim, o.stochastic_depth_prob, o.partition_size = 32, 0.2, 7
  return MaxVit(o)
end
models.maxvit.maxvit_t = models.maxvit_t

end
