-- 3-d convolution and pools, the 1-d and 3-d transposed convolutions, and a few small pieces:
--   F.conv3d, F.conv_transpose1d, F.conv_transpose3d, F.max_pool3d, F.avg_pool3d, F.adaptive_avg_pool3d,
--   F.adaptive_max_pool3d, F.multilabel_margin_loss, F.feature_alpha_dropout and their modules, plus
--   nn.ZeroPad3d / ConstantPad3d / ReflectionPad3d / ReplicationPad3d / CircularPad3d, nn.NLLLoss2d, nn.CrossMapLRN2d.
-- All are compositions of differentiable ops (no autograd Function): the 3-d ones fold depth into the
-- batch and run the 2-d kernels, then gather / reduce across depth with index_select.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

local function triple(fname, name, v) return U.ntuple(fname, name, v, 3) end

local function tup(t) return "(" .. table.concat(t, ", ") .. (#t == 1 and ",)" or ")") end

local function i64(t, dev) return torch.tensor(t, { dtype = torch.int64 }):to(dev) end

-- PyTorch's pooling_output_shape
local function pool_out(L, k, s, p, d, ceil)
  local out = (L + 2 * p - d * (k - 1) - 1 + (ceil and s - 1 or 0)) // s + 1
  if ceil and (out - 1) * s >= L + p then out = out - 1 end
  return out
end

-- x [N, C, D, ...] -> [N, C, #pos, ...] taking depth pos[i] (0-based); pos == -1 reads `fill`
local function depth_gather(x, pos, fill)
  local D, any = x:size(2), false
  local idx = {}
  for i, p in ipairs(pos) do
    if p < 0 or p >= D then idx[i] = D; any = true else idx[i] = p end
  end
  if any then x = F.pad(x, { 0, 0, 0, 0, 0, 1 }, "constant", fill) end
  return x:index_select(2, i64(idx, x.device))
end

local function check_5d(fname, x, what)
  if not torch.is_tensor(x) then U.errorf("%s: input must be a Tensor, got %s", fname, U.typename(x)) end
  if x:dim() ~= 4 and x:dim() ~= 5 then U.errorf(what, U.shape_str(x)) end
  return x:dim() == 4
end

-- ---- conv3d ----

local conv3d_spec = { { "input", REQ }, { "weight", REQ }, { "bias" }, { "stride", 1 }, { "padding", 0 }, { "dilation", 1 },
  { "groups", 1 } }

-- all kD depth taps stacked into the channels (group by group), so one conv2d call does the work:
-- input [N*Do, groups*kD*C/groups, H, W], weight [O, kD*C/groups, kH, kW]
function F.conv3d(...)
  local o = U.parse("conv3d", conv3d_spec, ...)
  local x, w, b = o.input, o.weight, o.bias
  local unbatched = check_5d("conv3d", x, "Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: %s")
  if not torch.is_tensor(w) or w:dim() ~= 5 then U.error("conv3d: weight must be a 5-D tensor [out, in/groups, kD, kH, kW]") end
  if unbatched then x = x:unsqueeze(0) end
  local g = U.check_int("conv3d", "groups", o.groups, 1)
  local s, d = triple("conv3d", "stride", o.stride), triple("conv3d", "dilation", o.dilation)
  local N, C = x:size(0), x:size(1)
  local O, Cg, k = w:size(0), w:size(1), { w:size(2), w:size(3), w:size(4) }
  if O % g ~= 0 then
    U.errorf("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of size %s instead", g, g,
      U.shape_str(w))
  end
  if C ~= Cg * g then
    U.errorf("Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d channels instead", g,
      U.shape_str(w), U.shape_str(x), Cg * g, C)
  end
  local p
  if type(o.padding) == "string" then
    if o.padding ~= "same" and o.padding ~= "valid" then
      U.errorf("Invalid padding string '%s', should be one of {'valid', 'same'}", o.padding)
    end
    if o.padding == "same" and (s[1] ~= 1 or s[2] ~= 1 or s[3] ~= 1) then
      U.error("padding='same' is not supported for strided convolutions")
    end
    p = { 0, 0, 0 }
    if o.padding == "same" then -- total d*(k-1), the odd one on the right as PyTorch
      local pads = {}
      for i = 3, 1, -1 do
        local t = d[i] * (k[i] - 1)
        pads[#pads + 1], pads[#pads + 2] = t // 2, t - t // 2
      end
      x = F.pad(x, pads)
    end
  else
    p = triple("conv3d", "padding", o.padding)
  end
  local D, H, W = x:size(2), x:size(3), x:size(4)
  local ok = true
  for i, L in ipairs({ D, H, W }) do ok = ok and L + 2 * p[i] >= d[i] * (k[i] - 1) + 1 end
  if not ok then
    U.errorf("Calculated padded input size per channel: (%d x %d x %d). Kernel size: (%d x %d x %d). Kernel size can't be greater than actual input size",
      D + 2 * p[1], H + 2 * p[2], W + 2 * p[3], d[1] * (k[1] - 1) + 1, d[2] * (k[2] - 1) + 1, d[3] * (k[3] - 1) + 1)
  end
  local Do = (D + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
  local pos = {}
  for kd = 0, k[1] - 1 do for od = 0, Do - 1 do pos[#pos + 1] = od * s[1] - p[1] + kd * d[1] end end
  local taps = depth_gather(x, pos, 0) -- [N, C, kD*Do, H, W]
  local cols = taps:reshape(N, g, Cg, k[1], Do, H, W):permute(0, 4, 1, 3, 2, 5, 6):reshape(N * Do, g * k[1] * Cg, H, W)
  local w2 = w:permute(0, 2, 1, 3, 4):reshape(O, k[1] * Cg, k[2], k[3])
  local y = U.call(F.conv2d, cols, w2, b, { s[2], s[3] }, { p[2], p[3] }, { d[2], d[3] }, g)
  y = y:reshape(N, Do, O, y:size(2), y:size(3)):permute(0, 2, 1, 3, 4)
  return unbatched and y:squeeze(0) or y
end

-- ---- transposed convolutions ----

local convt_spec = { { "input", REQ }, { "weight", REQ }, { "bias" }, { "stride", 1 }, { "padding", 0 }, { "output_padding", 0 },
  { "groups", 1 }, { "dilation", 1 } }

local function one(fname, name, v)
  if type(v) == "table" then
    if #v ~= 1 then U.errorf("%s: %s must be an int or a list of 1 int", fname, name) end
    v = v[1]
  end
  return U.check_int(fname, name, v)
end

function F.conv_transpose1d(...)
  local o = U.parse("conv_transpose1d", convt_spec, ...)
  local x, w = o.input, o.weight
  if not torch.is_tensor(x) or (x:dim() ~= 2 and x:dim() ~= 3) then
    U.error("conv_transpose1d: expected a 2-D (unbatched) or 3-D (batched) input")
  end
  if not torch.is_tensor(w) or w:dim() ~= 3 then U.error("conv_transpose1d: weight must be a 3-D tensor [in, out/groups, k]") end
  local f = "conv_transpose1d"
  local y = U.call(F.conv_transpose2d, x:unsqueeze(-2), w:unsqueeze(2), o.bias, { 1, one(f, "stride", o.stride) },
    { 0, one(f, "padding", o.padding) }, { 0, one(f, "output_padding", o.output_padding) }, o.groups,
    { 1, one(f, "dilation", o.dilation) })
  return y:squeeze(-2)
end

-- the kD taps folded into conv_transpose2d's output channels (group by group), one call; each tap's
-- result then added into depth id*stride + kd*dilation of the full output, which is cropped by the padding
function F.conv_transpose3d(...)
  local o = U.parse("conv_transpose3d", convt_spec, ...)
  local x, w, b = o.input, o.weight, o.bias
  local unbatched = check_5d("conv_transpose3d", x,
    "Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: %s")
  if not torch.is_tensor(w) or w:dim() ~= 5 then U.error("conv_transpose3d: weight must be a 5-D tensor [in, out/groups, kD, kH, kW]") end
  if unbatched then x = x:unsqueeze(0) end
  local f = "conv_transpose3d"
  local g = U.check_int(f, "groups", o.groups, 1)
  local s, p = triple(f, "stride", o.stride), triple(f, "padding", o.padding)
  local op, d = triple(f, "output_padding", o.output_padding), triple(f, "dilation", o.dilation)
  local N, C, D, H, W = x:size(0), x:size(1), x:size(2), x:size(3), x:size(4)
  if C ~= w:size(0) then
    U.errorf("Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d channels instead",
      U.shape_str(w), U.shape_str(x), w:size(0), C)
  end
  if C % g ~= 0 then
    U.errorf("Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight of size %s instead", g, g,
      U.shape_str(w))
  end
  for i = 1, 3 do
    if op[i] >= s[i] and op[i] >= d[i] then U.error("output padding must be smaller than either stride or dilation") end
  end
  local Og, kD = w:size(1), w:size(2)
  local O = Og * g
  local Do = (D - 1) * s[1] - 2 * p[1] + d[1] * (kD - 1) + op[1] + 1
  if Do <= 0 then U.errorf("conv_transpose3d: the output depth %d is not positive", Do) end
  -- per input channel, outputs (kd, o): conv_transpose2d's output channels come out as (group, kd, o)
  local w2 = w:permute(0, 2, 1, 3, 4):reshape(C, kD * Og, w:size(3), w:size(4))
  local z = U.call(F.conv_transpose2d, x:permute(0, 2, 1, 3, 4):reshape(N * D, C, H, W), w2, nil, { s[2], s[3] },
    { p[2], p[3] }, { op[2], op[3] }, g, { d[2], d[3] })
  local Ho, Wo = z:size(2), z:size(3)
  z = z:reshape(N, D, g, kD, Og, Ho, Wo):permute(0, 3, 1, 2, 4, 5, 6):reshape(N, kD * D, O, Ho, Wo)
  local L = (D - 1) * s[1] + d[1] * (kD - 1) + 1 + op[1]
  local pos = {}
  for kd = 0, kD - 1 do for id = 0, D - 1 do pos[#pos + 1] = id * s[1] + kd * d[1] end end
  local full = torch.zeros(N, L, O, Ho, Wo, { dtype = z.dtype, device = z.device })
  local y = torch.index_add(full, 1, i64(pos, z.device), z):narrow(1, p[1], Do):permute(0, 2, 1, 3, 4)
  if b ~= nil then y = y + b:view(1, -1, 1, 1, 1) end
  return unbatched and y:squeeze(0) or y
end

-- ---- pools ----

local function pool_check(fname, x, k, s, p, d)
  local unbatched = check_5d(fname, x, "non-empty 4D or 5D (batch mode) tensor expected for input, but got input of size: %s")
  for i = 1, 3 do
    if k[i] <= 0 then U.errorf("kernel size should be greater than zero, but got kT: %d kH: %d kW: %d", k[1], k[2], k[3]) end
    if s[i] <= 0 then U.errorf("stride should be greater than zero, but got dT: %d dH: %d dW: %d", s[1], s[2], s[3]) end
    if d[i] <= 0 then U.errorf("dilation should be greater than zero, but got dilationT: %d dilationH: %d dilationW: %d", d[1], d[2], d[3]) end
  end
  if not (k[1] // 2 >= p[1] and k[3] // 2 >= p[3] and k[2] // 2 >= p[2]) then
    U.errorf("pad should be smaller than or equal to half of kernel size, but got kT=%d kW=%d kH=%d padT=%d padW=%d padH=%d",
      k[1], k[3], k[2], p[1], p[3], p[2])
  end
  return unbatched
end

local function pool_sizes(fname, x, k, s, p, d, ceil)
  local C, out = x:size(1), {}
  for i = 1, 3 do out[i] = pool_out(x:size(i + 1), k[i], s[i], p[i], d[i], ceil) end
  if out[1] < 1 or out[2] < 1 or out[3] < 1 then
    U.errorf("Given input size: (%dx%dx%dx%d). Calculated output size: (%dx%dx%dx%d). Output size is too small", C, x:size(2),
      x:size(3), x:size(4), C, out[1], out[2], out[3])
  end
  return out
end

-- depth positions read by output od, tap kd (k-major, as depth_gather's reshape expects)
local function window_pos(Do, k, s, p, d)
  local pos = {}
  for od = 0, Do - 1 do for kd = 0, k - 1 do pos[#pos + 1] = od * s - p + kd * d end end
  return pos
end

-- y [N, C, D, h, w] (and the 2-d pool's flat indices i2 within H*W): max over each window's depths pos
-- (Do windows of K taps, -1 = padding); the 3-d flat indices d*H*W + i2 when i2 is given
local function depth_max(y, i2, pos, Do, K, HW)
  local N, C, h, w = y:size(0), y:size(1), y:size(3), y:size(4)
  local taps = depth_gather(y, pos, -math.huge):reshape(N, C, Do, K, h, w)
  local v, kk = taps:max(3)
  if i2 == nil then return v end
  local dtab = i64(pos, y.device):view(1, 1, Do, K, 1, 1):expand(N, C, Do, K, h, w)
  local dsel = dtab:gather(3, kk:unsqueeze(3)):squeeze(3)
  return v, dsel * HW + i2:gather(2, dsel)
end

local maxpool_spec = { { "input", REQ }, { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "dilation", 1 },
  { "ceil_mode", false }, { "return_indices", false } }

local function stride_or_kernel(fname, stride, k)
  if stride == nil or (type(stride) == "table" and #stride == 0) then return k end
  return triple(fname, "stride", stride)
end

function F.max_pool3d(...)
  local f = "max_pool3d"
  local o = U.parse(f, maxpool_spec, ...)
  local k = triple(f, "kernel_size", o.kernel_size)
  local s, p, d = stride_or_kernel(f, o.stride, k), triple(f, "padding", o.padding), triple(f, "dilation", o.dilation)
  local x = o.input
  local unbatched = pool_check(f, x, k, s, p, d)
  if unbatched then x = x:unsqueeze(0) end
  local out = pool_sizes(f, x, k, s, p, d, o.ceil_mode)
  local N, C, D, H, W = x:size(0), x:size(1), x:size(2), x:size(3), x:size(4)
  local y2, i2 = U.call(F.max_pool2d, x:reshape(N, C * D, H, W), { k[2], k[3] }, { s[2], s[3] }, { p[2], p[3] },
    { d[2], d[3] }, o.ceil_mode, o.return_indices)
  y2 = y2:reshape(N, C, D, out[2], out[3])
  if i2 ~= nil then i2 = i2:reshape(N, C, D, out[2], out[3]) end
  local v, idx = depth_max(y2, i2, window_pos(out[1], k[1], s[1], p[1], d[1]), out[1], k[1], H * W)
  if unbatched then v, idx = v:squeeze(0), idx and idx:squeeze(0) end
  if o.return_indices then return v, idx end
  return v
end

F.max_pool3d_with_indices = function(...)
  local o = U.parse("max_pool3d_with_indices", maxpool_spec, ...)
  return F.max_pool3d(o.input, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode, true)
end

-- per-dim divisors of avg_pool3d (the count factorises over a box window), as PyTorch's
local function avg_counts(L, out, k, s, p, include_pad)
  local c = {}
  for o = 0, out - 1 do
    local st = o * s - p
    local en = math.min(st + k, L + p)
    if include_pad then c[o + 1] = en - st else c[o + 1] = math.min(en, L) - math.max(st, 0) end
  end
  return c
end

function F.avg_pool3d(...)
  local f = "avg_pool3d"
  local o = U.parse(f, { { "input", REQ }, { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "ceil_mode", false },
    { "count_include_pad", true }, { "divisor_override" } }, ...)
  local k = triple(f, "kernel_size", o.kernel_size)
  local s, p = stride_or_kernel(f, o.stride, k), triple(f, "padding", o.padding)
  local x = o.input
  local unbatched = pool_check(f, x, k, s, p, { 1, 1, 1 })
  if o.divisor_override ~= nil and o.divisor_override == 0 then U.error("divisor must be not zero") end
  if unbatched then x = x:unsqueeze(0) end
  local out = pool_sizes(f, x, k, s, p, { 1, 1, 1 }, o.ceil_mode)
  local N, C, D, H, W = x:size(0), x:size(1), x:size(2), x:size(3), x:size(4)
  -- window sums over (H, W), then over depth
  local y2 = U.call(F.avg_pool2d, x:reshape(N, C * D, H, W), { k[2], k[3] }, { s[2], s[3] }, { p[2], p[3] }, o.ceil_mode, true, 1)
  y2 = y2:reshape(N, C, D, out[2], out[3])
  local y = depth_gather(y2, window_pos(out[1], k[1], s[1], p[1], 1), 0):reshape(N, C, out[1], k[1], out[2], out[3]):sum(3)
  if o.divisor_override ~= nil then
    y = y / o.divisor_override
  else
    local dims = { D, H, W }
    local cnt = {}
    for i = 1, 3 do
      local shape = { 1, 1, 1 }
      shape[i] = out[i]
      cnt[i] = torch.tensor(avg_counts(dims[i], out[i], k[i], s[i], p[i], o.count_include_pad), { dtype = y.dtype })
        :to(y.device):view(shape)
    end
    y = y / (cnt[1] * cnt[2] * cnt[3])
  end
  return unbatched and y:squeeze(0) or y
end

-- adaptive windows [floor(o*L/out), ceil((o+1)*L/out))
local function adaptive_range(L, out, o) return (o * L) // out, -((-(o + 1) * L) // out) end

local function adaptive_size(fname, x, output_size)
  local t = triple(fname, "output_size", output_size)
  for i = 1, 3 do
    if t[i] < 0 then U.errorf("%s: output_size must be non-negative, got %d", fname, t[i]) end
  end
  return t
end

function F.adaptive_avg_pool3d(input, output_size)
  local f = "adaptive_avg_pool3d"
  local unbatched = check_5d(f, input, "adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got %s")
  local out = adaptive_size(f, input, output_size)
  local x = unbatched and input:unsqueeze(0) or input
  local N, C, D, H, W = x:size(0), x:size(1), x:size(2), x:size(3), x:size(4)
  local y2 = U.call(F.adaptive_avg_pool2d, x:reshape(N, C * D, H, W), { out[2], out[3] }):reshape(N, C, D, out[2], out[3])
  local A = {} -- [D, oD] averaging matrix across depth
  for d = 1, D do
    A[d] = {}
    for od = 1, out[1] do A[d][od] = 0.0 end
  end
  for od = 0, out[1] - 1 do
    local st, en = adaptive_range(D, out[1], od)
    for d = st, en - 1 do A[d + 1][od + 1] = 1 / (en - st) end
  end
  local y = torch.matmul(y2:permute(0, 1, 3, 4, 2), torch.tensor(A, { dtype = y2.dtype }):to(y2.device)):permute(0, 1, 4, 2, 3)
  return unbatched and y:squeeze(0) or y
end

function F.adaptive_max_pool3d(...)
  local f = "adaptive_max_pool3d"
  local o = U.parse(f, { { "input", REQ }, { "output_size", REQ }, { "return_indices", false } }, ...)
  local unbatched = check_5d(f, o.input, "adaptive_max_pool3d(): Expected 4D or 5D tensor, but got %s")
  local out = adaptive_size(f, o.input, o.output_size)
  local x = unbatched and o.input:unsqueeze(0) or o.input
  local N, C, D, H, W = x:size(0), x:size(1), x:size(2), x:size(3), x:size(4)
  local y2, i2 = U.call(F.adaptive_max_pool2d, x:reshape(N, C * D, H, W), { out[2], out[3] }, true)
  y2, i2 = y2:reshape(N, C, D, out[2], out[3]), i2:reshape(N, C, D, out[2], out[3])
  local K = 0
  for od = 0, out[1] - 1 do
    local st, en = adaptive_range(D, out[1], od)
    K = math.max(K, en - st)
  end
  local pos = {}
  for od = 0, out[1] - 1 do -- windows padded to K taps by repeating the last (a max is unchanged)
    local st, en = adaptive_range(D, out[1], od)
    for kd = 0, K - 1 do pos[#pos + 1] = math.min(st + kd, en - 1) end
  end
  local v, idx = depth_max(y2, i2, pos, out[1], K, H * W)
  if unbatched then v, idx = v:squeeze(0), idx:squeeze(0) end
  if o.return_indices then return v, idx end
  return v
end

-- ---- modules ----

local conv_more = require "nn_conv_more"
local conv_repr, conv_params = conv_more._conv_repr, conv_more._conv_params

local function conv_common(name, o, transposed)
  local cin, cout = U.check_int(name, "in_channels", o.in_channels, 1), U.check_int(name, "out_channels", o.out_channels, 1)
  local groups = U.check_int(name, "groups", o.groups, 1)
  if cin % groups ~= 0 then U.error("in_channels must be divisible by groups") end
  if cout % groups ~= 0 then U.error("out_channels must be divisible by groups") end
  local pm = o.padding_mode
  if pm ~= "zeros" and pm ~= "reflect" and pm ~= "replicate" and pm ~= "circular" then
    U.errorf("padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got padding_mode='%s'", tostring(pm))
  end
  if transposed and pm ~= "zeros" then U.errorf("Only \"zeros\" padding mode is supported for %s", name) end
  return cin, cout, groups
end

local Conv3d = Module:extend("Conv3d")
M.Conv3d = Conv3d

function Conv3d:__init(...)
  local name = "Conv3d"
  local o = U.parse(name, { { "in_channels", REQ }, { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 },
    { "padding", 0 }, { "dilation", 1 }, { "groups", 1 }, { "bias", true }, { "padding_mode", "zeros" }, { "device" },
    { "dtype" } }, ...)
  local cin, cout, groups = conv_common(name, o, false)
  self.in_channels, self.out_channels, self.groups, self.padding_mode = cin, cout, groups, o.padding_mode
  self.kernel_size, self.stride = triple(name, "kernel_size", o.kernel_size), triple(name, "stride", o.stride)
  self.dilation = triple(name, "dilation", o.dilation)
  if type(o.padding) == "string" then
    if o.padding ~= "same" and o.padding ~= "valid" then
      U.errorf("Invalid padding string '%s', should be one of {'valid', 'same'}", o.padding)
    end
    if o.padding == "same" and (self.stride[1] ~= 1 or self.stride[2] ~= 1 or self.stride[3] ~= 1) then
      U.error("padding='same' is not supported for strided convolutions")
    end
    self.padding = o.padding
  else
    self.padding = triple(name, "padding", o.padding)
  end
  self.output_padding, self.transposed = { 0, 0, 0 }, false
  conv_params(self, { cout, cin // groups, self.kernel_size[1], self.kernel_size[2], self.kernel_size[3] }, cout, o.bias,
    { device = o.device, dtype = o.dtype })
end

function Conv3d:forward(x)
  if self.padding_mode ~= "zeros" then -- pad in that mode, then convolve without padding
    return F.conv3d(U.call(F.pad, x, require("nn_layers")._mode_pad(self), self.padding_mode), self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
  end
  return F.conv3d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
end
Conv3d.extra_repr = conv_repr

local convt_mod_spec = { { "in_channels", REQ }, { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 },
  { "padding", 0 }, { "output_padding", 0 }, { "groups", 1 }, { "bias", true }, { "dilation", 1 },
  { "padding_mode", "zeros" }, { "device" }, { "dtype" } }

-- ConvTranspose1d / ConvTranspose3d; forward(x, output_size) picks the output_padding giving that size
local function conv_transpose_module(name, nd, fname)
  local cls = Module:extend(name)
  M[name] = cls
  local function tuple(n, v) return nd == 1 and { one(name, n, v) } or triple(name, n, v) end
  function cls:__init(...)
    local o = U.parse(name, convt_mod_spec, ...)
    local cin, cout, groups = conv_common(name, o, true)
    self.in_channels, self.out_channels, self.groups, self.padding_mode = cin, cout, groups, o.padding_mode
    self.kernel_size, self.stride = tuple("kernel_size", o.kernel_size), tuple("stride", o.stride)
    self.padding, self.output_padding = tuple("padding", o.padding), tuple("output_padding", o.output_padding)
    self.dilation, self.transposed = tuple("dilation", o.dilation), true
    local shape = { cin, cout // groups }
    for i = 1, nd do shape[#shape + 1] = self.kernel_size[i] end
    conv_params(self, shape, cout, o.bias, { device = o.device, dtype = o.dtype })
  end
  function cls:forward(x, output_size)
    local opad = self.output_padding
    U.check_tensor(fname, "input", 1, x)
    if output_size ~= nil then -- PyTorch's _output_padding
      local sizes = U.transpose_output_size(nd, x, output_size)
      opad = {}
      for i = 1, nd do
        local want = sizes[i]
        local base = (x:size(x:dim() - nd - 1 + i) - 1) * self.stride[i] - 2 * self.padding[i]
          + self.dilation[i] * (self.kernel_size[i] - 1) + 1
        opad[i] = want - base
        if opad[i] < 0 or opad[i] >= math.max(self.stride[i], self.dilation[i]) then
          U.errorf("requested an output size of %d, but valid sizes lie between %d and %d (for dimension %d)", want, base,
            base + math.max(self.stride[i], self.dilation[i]) - 1, i)
        end
      end
    end
    local a = { self.stride, self.padding, opad, self.groups, self.dilation }
    if nd == 1 then a = { self.stride[1], self.padding[1], opad[1], self.groups, self.dilation[1] } end
    return F[fname](x, self.weight, self.bias, table.unpack(a, 1, 5))
  end
  cls.extra_repr = conv_repr
end
conv_transpose_module("ConvTranspose1d", 1, "conv_transpose1d")
conv_transpose_module("ConvTranspose3d", 3, "conv_transpose3d")

local function fields(...)
  local keys = { ... }
  return function(self)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. U.pystr(self[k]) end
    return table.concat(parts, ", ")
  end
end

local function simple_module(name, spec, forward, repr)
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    for _, s in ipairs(spec) do self[s[1]] = o[s[1]] end
    if spec[2] and spec[2][1] == "stride" and (self.stride == nil or (type(self.stride) == "table" and #self.stride == 0)) then
      self.stride = self.kernel_size
    end
  end
  cls.forward = forward
  cls.extra_repr = repr
  return cls
end

simple_module("MaxPool3d", { { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "dilation", 1 }, { "return_indices", false },
  { "ceil_mode", false } }, function(self, x)
  return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode, self.return_indices)
end, fields("kernel_size", "stride", "padding", "dilation", "ceil_mode"))

simple_module("AvgPool3d", { { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "ceil_mode", false },
  { "count_include_pad", true }, { "divisor_override" } }, function(self, x)
  return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad, self.divisor_override)
end, fields("kernel_size", "stride", "padding"))

simple_module("AdaptiveAvgPool3d", { { "output_size", REQ } }, function(self, x)
  return F.adaptive_avg_pool3d(x, self.output_size)
end, fields("output_size"))

simple_module("AdaptiveMaxPool3d", { { "output_size", REQ }, { "return_indices", false } }, function(self, x)
  return F.adaptive_max_pool3d(x, self.output_size, self.return_indices)
end, fields("output_size"))

-- ---- 3-d padding modules ----

local function pad3d(name, mode, with_value)
  local spec = { { "padding", REQ } }
  if with_value then spec[2] = { "value", REQ } end
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    local p = o.padding
    if type(p) == "number" then
      p = U.check_int(name, "padding", p)
      p = { p, p, p, p, p, p }
    elseif type(p) ~= "table" or #p ~= 6 then
      U.errorf("%s: padding must be an int or a list of 6 ints", name)
    end
    self.padding = p
    self.value = with_value and o.value or (mode == "constant" and 0.0 or nil)
  end
  function cls:forward(x) return U.call(F.pad, x, self.padding, mode, self.value) end
  function cls:extra_repr()
    if with_value then return "padding=" .. tup(self.padding) .. ", value=" .. U.pystr(self.value) end
    return tup(self.padding)
  end
end
pad3d("ZeroPad3d", "constant", false)
pad3d("ConstantPad3d", "constant", true)
pad3d("ReflectionPad3d", "reflect", false)
pad3d("ReplicationPad3d", "replicate", false)
pad3d("CircularPad3d", "circular", false)

-- ---- multilabel_margin_loss ----

local function legacy_reduction(size_average, reduce, reduction)
  if size_average == nil and reduce == nil then return reduction end
  if size_average == nil then size_average = true end
  if reduce == nil then reduce = true end
  if not reduce then return "none" end
  return size_average and "mean" or "sum"
end

-- per sample: sum over the target classes j (those before the first -1) and the non-target classes i of
-- max(0, 1 - (x[j] - x[i])), divided by C
function F.multilabel_margin_loss(...)
  local o = U.parse("multilabel_margin_loss", { { "input", REQ }, { "target", REQ }, { "size_average" }, { "reduce" },
    { "reduction", "mean" } }, ...)
  local x, t = o.input, o.target
  local reduction = legacy_reduction(o.size_average, o.reduce, o.reduction)
  if reduction ~= "none" and reduction ~= "mean" and reduction ~= "sum" then
    U.errorf("%s is not a valid value for reduction", tostring(reduction))
  end
  if not torch.is_tensor(x) or not torch.is_tensor(t) then U.error("multilabel_margin_loss: input and target must be Tensors") end
  local vector = x:dim() <= 1
  if x:dim() > 2 then
    U.errorf("Expected non-empty vector or matrix with optional 0-dim batch size, but got: %s", U.shape_str(x))
  end
  if t.dtype ~= torch.int64 then U.error("multilabel_margin_loss: target must be an int64 (Long) tensor") end
  local xs, ts = U.shape_str(x), U.shape_str(t)
  if xs ~= ts then U.errorf("inconsistent target size: %s for input of size: %s", ts, xs) end
  if vector then x, t = x:reshape(1, -1), t:reshape(1, -1) end
  local N, C = x:size(0), x:size(1)
  local fk = { dtype = x.dtype, device = x.device }
  local valid = t:lt(0):to(x.dtype):cumsum(1):eq(0):to(x.dtype) -- [N, C]: before the first -1
  local tc = t:clamp(0, C - 1)
  local classes = torch.arange(C, { dtype = torch.int64, device = x.device }):view(1, 1, C)
  local is_target = (tc:unsqueeze(2):eq(classes):to(x.dtype) * valid:unsqueeze(2)):sum(1):clamp(0, 1) -- [N, C]
  local xy = x:gather(1, tc) -- [N, C]: score of the j-th target
  local margin = (1 - (xy:unsqueeze(2) - x:unsqueeze(1))):clamp(0) -- [N, j, i]
  local mask = valid:unsqueeze(2) * (1 - is_target):unsqueeze(1)
  local loss = (margin * mask):sum({ 1, 2 }) / C
  if reduction == "mean" then return loss:mean() end
  if reduction == "sum" then return loss:sum() end
  if vector then return loss:reshape({}) end
  return loss
end

local MultiLabelMarginLoss = Module:extend("MultiLabelMarginLoss")
M.MultiLabelMarginLoss = MultiLabelMarginLoss
function MultiLabelMarginLoss:__init(...)
  local o = U.parse("MultiLabelMarginLoss", { { "size_average" }, { "reduce" }, { "reduction", "mean" } }, ...)
  self.reduction = legacy_reduction(o.size_average, o.reduce, o.reduction)
  if self.reduction ~= "none" and self.reduction ~= "mean" and self.reduction ~= "sum" then
    U.errorf("%s is not a valid value for reduction", tostring(self.reduction))
  end
end
function MultiLabelMarginLoss:forward(input, target) return F.multilabel_margin_loss(input, target, { reduction = self.reduction }) end

-- PyTorch's deprecated alias: NLLLoss under another name
M.NLLLoss2d = require("nn_loss").NLLLoss:extend("NLLLoss2d")

-- ---- feature_alpha_dropout ----

-- alpha dropout with one mask value per (sample, channel), as PyTorch's _feature_alpha_dropout
function F.feature_alpha_dropout(...)
  local o = U.parse("feature_alpha_dropout", { { "input", REQ }, { "p", 0.5 }, { "training", false }, { "inplace", false } }, ...)
  local x, p = o.input, o.p
  if type(p) ~= "number" or p < 0 or p > 1 then
    U.errorf("dropout probability has to be between 0 and 1, but got %s", U.pystr(p))
  end
  if not o.training or p == 0 or x:numel() == 0 then return x end
  if x:dim() < 2 then U.error("Feature dropout requires at least 2 dimensions in the input") end
  local r
  if p == 1 then
    r = x * 0
  else
    local alpha = 1.7580993408473766
    local a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    local shape = { x:size(0), x:size(1) }
    for _ = 3, x:dim() do shape[#shape + 1] = 1 end
    local keep = torch.rand(shape, { dtype = x.dtype, device = x.device }):ge(p):to(x.dtype)
    r = x * (keep * a) + ((keep - 1) * (alpha * a) + alpha * a * p)
  end
  if o.inplace then x:copy_(r); return x end
  return r
end

simple_module("FeatureAlphaDropout", { { "p", 0.5 }, { "inplace", false } }, function(self, x)
  return F.feature_alpha_dropout(x, self.p, self.training, self.inplace)
end, function(self) return "p=" .. U.pystr(self.p) .. ", inplace=" .. U.pystr(self.inplace) end)

-- ---- CrossMapLRN2d ----

-- PyTorch's legacy LRN over channels of a 4-D input: x * (k + alpha/size * sum of x^2 over channels
-- c-(size-1)//2 .. c+(size-1)//2)^-beta; for odd size this is LocalResponseNorm
local CrossMapLRN2d = Module:extend("CrossMapLRN2d")
M.CrossMapLRN2d = CrossMapLRN2d
function CrossMapLRN2d:__init(...)
  local o = U.parse("CrossMapLRN2d", { { "size", REQ }, { "alpha", 1e-4 }, { "beta", 0.75 }, { "k", 1 } }, ...)
  self.size, self.alpha, self.beta, self.k = U.check_int("CrossMapLRN2d", "size", o.size, 1), o.alpha, o.beta, o.k
end
function CrossMapLRN2d:forward(x)
  if not torch.is_tensor(x) or x:dim() ~= 4 then
    U.errorf("CrossMapLRN2d: Expected input to be 4D, got %dD instead.", torch.is_tensor(x) and x:dim() or 0)
  end
  local C, h = x:size(1), (self.size - 1) // 2
  local sq = F.pad(x * x, { 0, 0, 0, 0, h, h })
  local sum = sq:narrow(1, 0, C)
  for i = 1, 2 * h do sum = sum + sq:narrow(1, i, C) end
  return x * (sum * (self.alpha / self.size) + self.k) ^ -self.beta
end
function CrossMapLRN2d:extra_repr()
  return string.format("%d, alpha=%s, beta=%s, k=%s", self.size, U.pystr(self.alpha), U.pystr(self.beta), U.pystr(self.k))
end

return M
