-- More lazy modules: LazyConvTranspose1d / 2d / 3d and LazyInstanceNorm1d / 2d / 3d. Each
-- becomes its concrete class on its first forward, with in_channels / num_features read from
-- the input's channel dim, as nn_extra.lua's LazyConv and LazyBatchNorm do.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local lazy = require("nn_extra")._lazy
local REQ = U.REQUIRED

local M = {}

-- LazyConvTransposeNd(out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
-- bias=true, dilation=1, padding_mode="zeros")
local spec = { { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 }, { "padding", 0 }, { "output_padding", 0 },
  { "groups", 1 }, { "bias", true }, { "dilation", 1 }, { "padding_mode", "zeros" }, { "device" }, { "dtype" } }

local function lazy_conv_transpose(name, n, concrete)
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    self.in_channels = 0
    self.out_channels = U.check_int(name, "out_channels", o.out_channels, 0)
    self._lazy_args = o
    self:register_parameter("weight", nil)
    self:register_parameter("bias", nil)
  end
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
  function cls:has_uninitialized_params() return self.weight == nil end
  function cls:initialize_parameters(x)
    U.tensor_arg(name, "input", x)
    if x:dim() ~= n + 1 and x:dim() ~= n + 2 then
      U.errorf("Expected %dD (unbatched) or %dD (batched) input to %s, but got input of size: %s", n + 1, n + 2, name, U.shape_str(x))
    end
    lazy.materialize_with(self, concrete(), "in_channels", x:size(x:dim() == n + 2 and 1 or 0), x)
  end
  cls.forward = lazy.forward
end
lazy_conv_transpose("LazyConvTranspose1d", 1, function() return require("nn_conv3d").ConvTranspose1d end)
lazy_conv_transpose("LazyConvTranspose2d", 2, function() return require("nn_conv_more").ConvTranspose2d end)
lazy_conv_transpose("LazyConvTranspose3d", 3, function() return require("nn_conv3d").ConvTranspose3d end)

-- LazyInstanceNormNd(eps=1e-5, momentum=0.1, affine=false, track_running_stats=false)
local inorm_spec = { { "eps", 1e-5 }, { "momentum", 0.1 }, { "affine", false }, { "track_running_stats", false }, { "device" },
  { "dtype" } }

local function lazy_instance_norm(name, spatial)
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, inorm_spec, ...)
    self.num_features, self.eps, self.affine, self.track_running_stats = 0, o.eps, o.affine, o.track_running_stats
    self.momentum = o.momentum
    self._lazy_args = o
    self:register_parameter("weight", nil)
    self:register_parameter("bias", nil)
    self:register_buffer("running_mean", nil)
    self:register_buffer("running_var", nil)
  end
  function cls:extra_repr()
    return string.format("0, eps=%s, momentum=%s, affine=%s, track_running_stats=%s", U.pystr(self.eps), U.pystr(self.momentum),
      U.pystr(self.affine), U.pystr(self.track_running_stats))
  end
  function cls:has_uninitialized_params() return self.num_features == 0 end
  function cls:initialize_parameters(x)
    U.tensor_arg(name, "input", x)
    if x:dim() ~= spatial + 1 and x:dim() ~= spatial + 2 then
      U.errorf("expected %dD or %dD input (got %dD input)", spatial + 1, spatial + 2, x:dim())
    end
    local concrete = require("nn_layers_more")["InstanceNorm" .. spatial .. "d"]
    lazy.materialize_with(self, concrete, "num_features", x:size(x:dim() == spatial + 2 and 1 or 0), x)
  end
  cls.forward = lazy.forward
end
lazy_instance_norm("LazyInstanceNorm1d", 1)
lazy_instance_norm("LazyInstanceNorm2d", 2)
lazy_instance_norm("LazyInstanceNorm3d", 3)

return M
