-- torchvision.ops.deform_conv2d and DeformConv2d: a convolution whose kernel taps are moved by
-- learned offsets (and, for v2, scaled by a mask). Each tap is a bilinear sample (4 gathers from
-- the flattened input), the samples form im2col columns, and a grouped matmul with the weight
-- gives the output. Autograd gives gradients for input, offset, mask, weight and bias.
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local Parameter = require "nn_parameter"

local M = {}

local function arange(n, like, dtype)
  return torch.arange(n, { dtype = dtype or like.dtype, device = like.device })
end

-- deform_conv2d(input, offset, weight, bias=None, stride=1, padding=0, dilation=1, mask=None)
-- input [B, Cin, H, W]; offset [B, 2*G*kh*kw, oh, ow] with (dy, dx) per tap, tap-major within
-- each of the G offset groups; mask [B, G*kh*kw, oh, ow]; weight [Cout, Cin/groups, kh, kw].
function M.deform_conv2d(...)
  local fname = "deform_conv2d"
  local o = U.parse(fname, { { "input", U.REQUIRED }, { "offset", U.REQUIRED }, { "weight", U.REQUIRED }, { "bias" },
    { "stride", 1 }, { "padding", 0 }, { "dilation", 1 }, { "mask" } }, ...)
  local input = U.tensor_arg(fname, "input", o.input)
  local offset = U.tensor_arg(fname, "offset", o.offset)
  local weight = U.tensor_arg(fname, "weight", o.weight)
  if input:dim() ~= 4 or offset:dim() ~= 4 or weight:dim() ~= 4 then
    U.errorf("%s: input, offset and weight must be 4-D, got %s, %s and %s", fname, U.shape_str(input),
      U.shape_str(offset), U.shape_str(weight))
  end
  local sh, sw = table.unpack(U.ntuple(fname, "stride", o.stride, 2))
  local ph, pw = table.unpack(U.ntuple(fname, "padding", o.padding, 2))
  local dh, dw = table.unpack(U.ntuple(fname, "dilation", o.dilation, 2))
  local B, Cin, H, W = input:size(0), input:size(1), input:size(2), input:size(3)
  local Cout, cg, kh, kw = weight:size(0), weight:size(1), weight:size(2), weight:size(3)
  local K = kh * kw
  local G = offset:size(1) // (2 * K)
  if G == 0 or offset:size(1) % (2 * K) ~= 0 then
    U.errorf("the shape of the offset tensor at dimension 1 is not valid. It should be a multiple of " ..
      "2 * weight.size[2] * weight.size[3].\nGot offset.shape[1]=%d, while 2 * weight.size[2] * weight.size[3]=%d",
      offset:size(1), 2 * K)
  end
  if Cin % cg ~= 0 then U.errorf("%s: input channels (%d) must be a multiple of weight.size(1) (%d)", fname, Cin, cg) end
  if Cin % G ~= 0 then U.errorf("%s: input channels (%d) must be a multiple of the offset groups (%d)", fname, Cin, G) end
  local groups = Cin // cg
  if Cout % groups ~= 0 then U.errorf("%s: weight.size(0) (%d) must be a multiple of the groups (%d)", fname, Cout, groups) end
  local oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
  local ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
  if offset:size(0) ~= B or offset:size(2) ~= oh or offset:size(3) ~= ow then
    U.errorf("%s: offset must be [%d, %d, %d, %d] for this input and weight, got %s", fname, B, 2 * G * K, oh, ow,
      U.shape_str(offset))
  end
  local mask = o.mask
  if mask ~= nil then
    U.tensor_arg(fname, "mask", mask)
    if mask:dim() ~= 4 or mask:size(0) ~= B or mask:size(1) ~= G * K or mask:size(2) ~= oh or mask:size(3) ~= ow then
      U.errorf("%s: mask must be [%d, %d, %d, %d], got %s", fname, B, G * K, oh, ow, U.shape_str(mask))
    end
  end
  local L = oh * ow
  -- sampling positions [B, G, K, oh, ow]
  local off = offset:reshape(B, G, K, 2, oh, ow)
  local ky = (arange(kh, input) * dh):reshape(kh, 1):expand(kh, kw):reshape(1, 1, K, 1, 1)
  local kx = (arange(kw, input) * dw):reshape(1, kw):expand(kh, kw):reshape(1, 1, K, 1, 1)
  local y = off:select(3, 0) + ky + (arange(oh, input) * sh - ph):reshape(1, 1, 1, oh, 1)
  local x = off:select(3, 1) + kx + (arange(ow, input) * sw - pw):reshape(1, 1, 1, 1, ow)
  local inside = torch.logical_and(torch.logical_and(y:gt(-1), y:lt(H)), torch.logical_and(x:gt(-1), x:lt(W)))
  local y0, x0 = y:detach():floor(), x:detach():floor()
  local ly, lx = y - y0, x - x0
  local cpg = Cin // G
  -- flat index of channel (g*cpg + c) of image b: [B, G, cpg, 1, 1]
  local chan = (arange(B, input, torch.int64):reshape(B, 1, 1, 1, 1) * Cin +
    arange(G, input, torch.int64):reshape(1, G, 1, 1, 1) * cpg + arange(cpg, input, torch.int64):reshape(1, 1, cpg, 1, 1))
  local flat = input:reshape(-1)
  local zero = torch.zeros({}, { dtype = input.dtype, device = input.device })
  local cols
  for _, cy in ipairs({ { y0, 1 - ly }, { y0 + 1, ly } }) do
    for _, cx in ipairs({ { x0, 1 - lx }, { x0 + 1, lx } }) do
      local yy, xx = cy[1], cx[1]
      local ok = torch.logical_and(inside, torch.logical_and(torch.logical_and(yy:ge(0), yy:le(H - 1)),
        torch.logical_and(xx:ge(0), xx:le(W - 1))))
      local pos = (yy:clamp(0, H - 1) * W + xx:clamp(0, W - 1)):long():reshape(B, G, 1, K * L)
      local idx = chan:reshape(B, G, cpg, 1) * (H * W) + pos
      local v = flat:index_select(0, idx:reshape(-1)):reshape(B, G, cpg, K * L)
      local w = torch.where(ok, cy[2] * cx[2], zero):reshape(B, G, 1, K * L)
      cols = cols and cols + v * w or v * w
    end
  end
  if mask ~= nil then cols = cols * mask:reshape(B, G, 1, K * L) end
  -- columns [B, groups, cg*K, L] (channel-major, tap-minor like the weight), grouped matmul
  cols = cols:reshape(B, Cin, K, L):reshape(B, groups, cg * K, L)
  local wm = weight:reshape(groups, Cout // groups, cg * K)
  local out = torch.matmul(wm, cols):reshape(B, Cout, oh, ow)
  if o.bias ~= nil then out = out + U.tensor_arg(fname, "bias", o.bias):reshape(1, Cout, 1, 1) end
  return out
end

-- DeformConv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=true);
-- forward(input, offset, mask=nil)
local DeformConv2d = nn.Module:extend("DeformConv2d")
M.DeformConv2d = DeformConv2d
function DeformConv2d:__init(...)
  local name = "DeformConv2d"
  local o = U.parse(name, { { "in_channels", U.REQUIRED }, { "out_channels", U.REQUIRED }, { "kernel_size", U.REQUIRED },
    { "stride", 1 }, { "padding", 0 }, { "dilation", 1 }, { "groups", 1 }, { "bias", true } }, ...)
  local cin = U.check_int(name, "in_channels", o.in_channels, 1)
  local cout = U.check_int(name, "out_channels", o.out_channels, 1)
  local groups = U.check_int(name, "groups", o.groups, 1)
  if cin % groups ~= 0 then U.error("in_channels must be divisible by groups") end
  if cout % groups ~= 0 then U.error("out_channels must be divisible by groups") end
  self.in_channels, self.out_channels, self.groups = cin, cout, groups
  self.kernel_size = U.ntuple(name, "kernel_size", o.kernel_size, 2)
  self.stride = U.ntuple(name, "stride", o.stride, 2)
  self.padding = U.ntuple(name, "padding", o.padding, 2)
  self.dilation = U.ntuple(name, "dilation", o.dilation, 2)
  self.weight = Parameter(torch.empty(cout, cin // groups, self.kernel_size[1], self.kernel_size[2]))
  if o.bias then self.bias = Parameter(torch.empty(cout)) else self:register_parameter("bias", nil) end
  require("nn_layers")._reset_affine(self)
end
function DeformConv2d:forward(input, offset, mask)
  return M.deform_conv2d(input, offset, self.weight, self.bias, self.stride, self.padding, self.dilation, mask)
end
local function pair(t) return string.format("(%d, %d)", t[1], t[2]) end
function DeformConv2d:__tostring()
  local s = string.format("DeformConv2d(%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels,
    pair(self.kernel_size), pair(self.stride))
  if self.padding[1] ~= 0 or self.padding[2] ~= 0 then s = s .. ", padding=" .. pair(self.padding) end
  if self.dilation[1] ~= 1 or self.dilation[2] ~= 1 then s = s .. ", dilation=" .. pair(self.dilation) end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if self.bias == nil then s = s .. ", bias=False" end
  return s .. ")"
end

return M
