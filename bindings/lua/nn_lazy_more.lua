-- More lazy modules: LazyConvTranspose1d / 2d / 3d and LazyInstanceNorm1d / 2d / 3d, made by
-- nn_extra.lua's LazyConv and LazyBatchNorm makers: each becomes its concrete class on its first
-- forward, with in_channels / num_features read from the input's channel dim.
local U = require "nn_util"
local lazy = require("nn_extra")._lazy
local REQ = U.REQUIRED

local M = {}

-- LazyConvTransposeNd(out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
-- bias=true, dilation=1, padding_mode="zeros")
local spec = { { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 }, { "padding", 0 }, { "output_padding", 0 },
  { "groups", 1 }, { "bias", true }, { "dilation", 1 }, { "padding_mode", "zeros" }, { "device" }, { "dtype" } }

local function lazy_conv_transpose(name, n, concrete)
  local cls = lazy.conv(name, n, concrete, spec, M)
  -- as the concrete class prints, its in_channels 0
  function cls:extra_repr()
    local a = self._lazy_args
    local function tup(v) return U.pystr(U.ntuple(name, "size", v, n)) end
    local s = string.format("0, %d, kernel_size=%s, stride=%s", self.out_channels, tup(a.kernel_size), tup(a.stride))
    local zeros, ones = tup(0), tup(1)
    if tup(a.padding) ~= zeros then s = s .. ", padding=" .. tup(a.padding) end
    if tup(a.dilation) ~= ones then s = s .. ", dilation=" .. tup(a.dilation) end
    if tup(a.output_padding) ~= zeros then s = s .. ", output_padding=" .. tup(a.output_padding) end
    if a.groups ~= 1 then s = s .. ", groups=" .. a.groups end
    if not a.bias then s = s .. ", bias=False" end
    if a.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. U.pyrepr(a.padding_mode) end
    return s
  end
end
lazy_conv_transpose("LazyConvTranspose1d", 1, function() return require("nn_conv3d").ConvTranspose1d end)
lazy_conv_transpose("LazyConvTranspose2d", 2, function() return require("nn_conv_more").ConvTranspose2d end)
lazy_conv_transpose("LazyConvTranspose3d", 3, function() return require("nn_conv3d").ConvTranspose3d end)

-- LazyInstanceNormNd(eps=1e-5, momentum=0.1, affine=false, track_running_stats=false)
local inorm_spec = { { "eps", 1e-5 }, { "momentum", 0.1 }, { "affine", false }, { "track_running_stats", false }, { "device" },
  { "dtype" } }

for spatial = 1, 3 do
  local name = "LazyInstanceNorm" .. spatial .. "d"
  lazy.norm(name, nil, inorm_spec, function(x)
    if x:dim() ~= spatial + 1 and x:dim() ~= spatial + 2 then
      U.errorf("expected %dD or %dD input (got %dD input)", spatial + 1, spatial + 2, x:dim())
    end
    return require("nn_layers_more")["InstanceNorm" .. spatial .. "d"], x:size(x:dim() == spatial + 2 and 1 or 0)
  end, M)
end

return M
