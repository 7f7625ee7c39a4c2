-- torchvision.ops.FeaturePyramidNetwork and its extra blocks (ExtraFPNBlock, LastLevelMaxPool,
-- LastLevelP6P7). Submodule names follow torchvision: inner_blocks.<i>.0 (1x1 lateral convs),
-- layer_blocks.<i>.0 (3x3 output convs), extra_blocks.p6 / p7.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local F = nn.functional
local init = nn.init
local layers = require "tv_ops_layers"

local M = {}

-- kaiming_uniform_(a=1) weights, zero biases for every Conv2d under m
local function init_convs(m)
  for _, c in ipairs(m:modules()) do
    if nn.isinstance(c, nn.Conv2d) then
      init.kaiming_uniform_(c.weight, { a = 1 })
      if c.bias ~= nil then init.constant_(c.bias, 0) end
    end
  end
end

-- ExtraFPNBlock: forward(results, x, names) -> results, names with more levels appended
local ExtraFPNBlock = nn.Module:extend("ExtraFPNBlock")
M.ExtraFPNBlock = ExtraFPNBlock

-- a stride-2 subsampling of the last level, named "pool"
local LastLevelMaxPool = ExtraFPNBlock:extend("LastLevelMaxPool")
M.LastLevelMaxPool = LastLevelMaxPool
function LastLevelMaxPool:forward(x, y, names)
  names[#names + 1] = "pool"
  x[#x + 1] = F.max_pool2d(x[#x], { kernel_size = 1, stride = 2, padding = 0 })
  return x, names
end

-- P6 and P7 (RetinaNet): p6 = conv(P5 or C5), p7 = conv(relu(p6))
local LastLevelP6P7 = ExtraFPNBlock:extend("LastLevelP6P7")
M.LastLevelP6P7 = LastLevelP6P7
function LastLevelP6P7:__init(in_channels, out_channels)
  self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
  self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
  init_convs(self)
  self.use_P5 = in_channels == out_channels
end
function LastLevelP6P7:forward(p, c, names)
  local src = self.use_P5 and p[#p] or c[#c]
  local p6 = self.p6(src)
  local p7 = self.p7(F.relu(p6))
  p[#p + 1], p[#p + 2] = p6, p7
  names[#names + 1], names[#names + 2] = "p6", "p7"
  return p, names
end

local FeaturePyramidNetwork = nn.Module:extend("FeaturePyramidNetwork")
M.FeaturePyramidNetwork = FeaturePyramidNetwork
-- (in_channels_list, out_channels, {extra_blocks=nil, norm_layer=nil})
function FeaturePyramidNetwork:__init(...)
  local o = U.parse("FeaturePyramidNetwork", { { "in_channels_list", U.REQUIRED }, { "out_channels", U.REQUIRED },
    { "extra_blocks" }, { "norm_layer", false } }, ...)
  local inner, outer = {}, {}
  for i, c in ipairs(o.in_channels_list) do
    if c == 0 then U.error("in_channels=0 is currently not supported") end
    inner[i] = layers.Conv2dNormActivation(c, o.out_channels, { kernel_size = 1, padding = 0, norm_layer = o.norm_layer,
      activation_layer = false })
    outer[i] = layers.Conv2dNormActivation(o.out_channels, o.out_channels, { kernel_size = 3, norm_layer = o.norm_layer,
      activation_layer = false })
  end
  self.inner_blocks = nn.ModuleList(inner)
  self.layer_blocks = nn.ModuleList(outer)
  init_convs(self)
  if o.extra_blocks ~= nil then
    if not nn.isinstance(o.extra_blocks, ExtraFPNBlock) then
      U.errorf("extra_blocks should be of type ExtraFPNBlock not %s", U.typename(o.extra_blocks))
    end
    self.extra_blocks = o.extra_blocks
  end
end

-- x: an OrderedDict (or a list) of feature maps, highest resolution first; returns an OrderedDict
-- with the same names (plus the extra blocks' names)
function FeaturePyramidNetwork:forward(x)
  local names, feats = {}, {}
  local mt = getmetatable(x)
  if mt and mt._order then
    for _, kv in ipairs(x:items()) do names[#names + 1], feats[#feats + 1] = kv[1], kv[2] end
  else
    for i, v in ipairs(x) do names[i], feats[i] = tostring(i - 1), v end
  end
  local n = #feats
  if n ~= #self.inner_blocks then
    U.errorf("FeaturePyramidNetwork: got %d feature maps for %d levels", n, #self.inner_blocks)
  end
  local last = self.inner_blocks[n - 1](feats[n])
  local results = { self.layer_blocks[n - 1](last) }
  for i = n - 1, 1, -1 do
    local lateral = self.inner_blocks[i - 1](feats[i])
    local top_down = F.interpolate(last, { size = { lateral:size(-2), lateral:size(-1) }, mode = "nearest" })
    last = lateral + top_down
    table.insert(results, 1, self.layer_blocks[i - 1](last))
  end
  if self.extra_blocks ~= nil then results, names = self.extra_blocks(results, feats, names) end
  local out = U.OrderedDict.new()
  for i, name in ipairs(names) do out[name] = results[i] end
  return out
end

return M
