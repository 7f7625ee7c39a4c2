-- 1-d convolution and pools, and the transposed 2-d convolution:
--   F.conv1d, F.max_pool1d, F.avg_pool1d, F.adaptive_avg_pool1d, F.conv_transpose2d and
--   nn.Conv1d, nn.MaxPool1d, nn.AvgPool1d, nn.AdaptiveAvgPool1d, nn.ConvTranspose2d.
-- The 1-d ones run the 2-d kernels on a height of 1. conv_transpose2d is conv2d's gradient
-- with respect to its input (torch._conv2d_backward_input); its own backward is conv2d for the
-- input and conv2d's weight gradient for the weight, as a custom autograd Function.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

local function one(fname, name, v)
  if type(v) == "table" or (type(v) == "userdata" and not torch.is_tensor(v)) then
    if #v ~= 1 then U.errorf("%s: %s must be an int or a list of 1 int", fname, name) end
    v = v[1]
  end
  return U.check_int(fname, name, v)
end

-- PyTorch's message for a 1-d op's input of the wrong rank
local rank_error = {
  conv1d = "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: %s",
  max_pool1d = "max_pool1d() Expected 2D or 3D input tensor, but got %s",
}

-- (N, C, L) or (C, L) through f on (N, C, 1, L), back to the 1-d shape; the 2-d op's errors name
-- the 1-d one
local function as_2d(fname, x, f)
  if not torch.is_tensor(x) then U.errorf("%s: input must be a Tensor, got %s", fname, U.typename(x)) end
  if x:dim() ~= 2 and x:dim() ~= 3 then
    if rank_error[fname] then U.errorf(rank_error[fname], U.shape_str(x)) end
    U.errorf("Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument #1 'self' (while checking arguments for %s)",
      x:dim(), fname)
  end
  local out, extra = U.call_as(fname, f, x:unsqueeze(-2))
  return out:squeeze(-2), extra and extra:squeeze(-2) or nil
end

-- PyTorch's conv1d checks of the input against the weight, in 1-d shapes (the 2-d kernel's
-- messages would show the added dim)
local function check_conv1d(x, w, o, pad, stride, dil)
  if not torch.is_tensor(x) or (x:dim() ~= 2 and x:dim() ~= 3) then return end
  local groups = o.groups
  local c = x:size(-2)
  if math.type(groups) == "integer" and groups > 0 and c ~= w:size(1) * groups then
    local shape = U.shape_str(x)
    if x:dim() == 2 then shape = U.shape_str(x:unsqueeze(0)) end
    U.errorf("Given groups=%d, weight of size %s, expected input%s to have %d channels, but got %d channels instead",
      groups, U.shape_str(w), shape, w:size(1) * groups, c)
  end
  if type(pad) == "table" and math.type(pad[2]) == "integer" and math.type(dil) == "integer" then
    local len, k = x:size(-1) + 2 * pad[2], dil * (w:size(2) - 1) + 1
    if k > len then
      U.errorf("Calculated padded input size per channel: (%d). Kernel size: (%d). Kernel size can't be greater than actual input size",
        len, k)
    end
  end
end

local conv1d_spec = { { "input", REQ }, { "weight", REQ }, { "bias" }, { "stride", 1 }, { "padding", 0 }, { "dilation", 1 },
  { "groups", 1 } }

function F.conv1d(...)
  local o = U.parse("conv1d", conv1d_spec, ...)
  if not torch.is_tensor(o.weight) or o.weight:dim() ~= 3 then U.error("conv1d: weight must be a 3-D tensor [out, in/groups, k]") end
  local pad = type(o.padding) == "string" and o.padding or { 0, one("conv1d", "padding", o.padding) }
  check_conv1d(o.input, o.weight, o, pad, o.stride, one("conv1d", "dilation", o.dilation))
  return (as_2d("conv1d", o.input, function(x)
    return F.conv2d(x, o.weight:unsqueeze(2), o.bias, { 1, one("conv1d", "stride", o.stride) }, pad,
      { 1, one("conv1d", "dilation", o.dilation) }, o.groups)
  end))
end

function F.max_pool1d(...)
  local o = U.parse("max_pool1d", { { "input", REQ }, { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "dilation", 1 },
    { "ceil_mode", false }, { "return_indices", false } }, ...)
  local k = one("max_pool1d", "kernel_size", o.kernel_size)
  local s = o.stride ~= nil and (type(o.stride) ~= "table" or #o.stride > 0) and one("max_pool1d", "stride", o.stride) or k
  local x, p, d = o.input, one("max_pool1d", "padding", o.padding), one("max_pool1d", "dilation", o.dilation)
  if torch.is_tensor(x) and (x:dim() == 2 or x:dim() == 3) and k > 0 and s > 0 and d > 0 and p >= 0 and p <= k // 2 then
    -- PyTorch's pooling_output_shape
    local span = x:size(-1) + 2 * p - d * (k - 1) - 1
    local len = (o.ceil_mode and -((-span) // s) or span // s) + 1
    if o.ceil_mode and (len - 1) * s >= x:size(-1) + p then len = len - 1 end
    if len <= 0 then U.errorf("max_pool1d() Invalid computed output size: %d", len) end
  end
  local out, idx = as_2d("max_pool1d", o.input, function(x)
    return F.max_pool2d(x, { 1, k }, { 1, s }, { 0, one("max_pool1d", "padding", o.padding) },
      { 1, one("max_pool1d", "dilation", o.dilation) }, { ceil_mode = o.ceil_mode, return_indices = o.return_indices })
  end)
  if o.return_indices then return out, idx end
  return out
end

function F.avg_pool1d(...)
  local o = U.parse("avg_pool1d", { { "input", REQ }, { "kernel_size", REQ }, { "stride" }, { "padding", 0 },
    { "ceil_mode", false }, { "count_include_pad", true } }, ...)
  local k = one("avg_pool1d", "kernel_size", o.kernel_size)
  local s = o.stride ~= nil and (type(o.stride) ~= "table" or #o.stride > 0) and one("avg_pool1d", "stride", o.stride) or k
  return (as_2d("avg_pool1d", o.input, function(x)
    return F.avg_pool2d(x, { 1, k }, { 1, s }, { 0, one("avg_pool1d", "padding", o.padding) },
      { ceil_mode = o.ceil_mode, count_include_pad = o.count_include_pad })
  end))
end

function F.adaptive_avg_pool1d(input, output_size)
  local n = one("adaptive_avg_pool1d", "output_size", output_size)
  return (as_2d("adaptive_avg_pool1d", input, function(x) return F.adaptive_avg_pool2d(x, { 1, n }) end))
end

-- ---- unfold / fold (im2col / col2im) ----

local function pair(fname, name, v)
  local t = U.ntuple(fname, name, v, 2)
  return { t[1], t[2] }
end


-- rows (or columns) each kernel offset reads: index k*out + o = o*stride + k*dilation
local function window_index(out, k, stride, dilation, dev)
  local t = {}
  for ki = 0, k - 1 do for o = 0, out - 1 do t[#t + 1] = o * stride + ki * dilation end end
  return torch.tensor(t, { dtype = torch.int64 }):to(dev)
end

local function im2col_geometry(fname, o, H, W)
  local g = { k = pair(fname, "kernel_size", o.kernel_size), d = pair(fname, "dilation", o.dilation),
    p = pair(fname, "padding", o.padding), s = pair(fname, "stride", o.stride) }
  g.oh = (H + 2 * g.p[1] - g.d[1] * (g.k[1] - 1) - 1) // g.s[1] + 1
  g.ow = (W + 2 * g.p[2] - g.d[2] * (g.k[2] - 1) - 1) // g.s[2] + 1
  if g.oh <= 0 or g.ow <= 0 then U.errorf("%s: the kernel does not fit the input (%dx%d)", fname, H, W) end
  return g
end

local unfold_spec = { { "input", REQ }, { "kernel_size", REQ }, { "dilation", 1 }, { "padding", 0 }, { "stride", 1 } }

-- F.unfold(input [N, C, H, W], kernel_size, dilation, padding, stride) -> [N, C*kh*kw, L]
function F.unfold(...)
  local o = U.parse("unfold", unfold_spec, ...)
  local x = U.check_tensor("im2col", "input", 1, o.input)
  local unbatched = x:dim() == 3
  if unbatched then x = x:unsqueeze(0) end
  if x:dim() ~= 4 then U.error("Input Error: Only 3D or 4D input Tensors are supported (got " .. x:dim() .. "D)") end
  local N, C, H, W = x:size(0), x:size(1), x:size(2), x:size(3)
  local g = im2col_geometry("unfold", o, H, W)
  x = F.pad(x, { g.p[2], g.p[2], g.p[1], g.p[1] })
  local rows = x:index_select(2, window_index(g.oh, g.k[1], g.s[1], g.d[1], x.device)) -- [N, C, kh*oh, Wp]
  local cells = rows:index_select(3, window_index(g.ow, g.k[2], g.s[2], g.d[2], x.device)) -- [N, C, kh*oh, kw*ow]
  local out = cells:reshape(N, C, g.k[1], g.oh, g.k[2], g.ow):permute(0, 1, 2, 4, 3, 5)
    :reshape(N, C * g.k[1] * g.k[2], g.oh * g.ow)
  return unbatched and out:squeeze(0) or out
end

-- F.fold(input [N, C*kh*kw, L], output_size, kernel_size, dilation, padding, stride) -> [N, C, H, W]:
-- each column's values added back where unfold read them
function F.fold(...)
  local o = U.parse("fold", { { "input", REQ }, { "output_size", REQ }, { "kernel_size", REQ }, { "dilation", 1 },
    { "padding", 0 }, { "stride", 1 } }, ...)
  local x = U.check_tensor("col2im", "input", 1, o.input)
  local unbatched = x:dim() == 2
  if unbatched then x = x:unsqueeze(0) end
  if x:dim() ~= 3 then U.error("Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported") end
  local size = pair("fold", "output_size", o.output_size)
  local g = im2col_geometry("fold", o, size[1], size[2])
  local kk = g.k[1] * g.k[2]
  if x:size(1) % kk ~= 0 then
    U.errorf("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got input.size(1)=%d and kernel_size=(%d, %d)",
      x:size(1), g.k[1], g.k[2])
  end
  if x:size(2) ~= g.oh * g.ow then
    U.errorf("Given output_size=(%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), padding=(%d, %d), stride=(%d, %d), expected size of input's dimension 2 to match the calculated number of sliding blocks %d * %d = %d, but got input.size(2)=%d.",
      size[1], size[2], g.k[1], g.k[2], g.d[1], g.d[2], g.p[1], g.p[2], g.s[1], g.s[2], g.oh, g.ow, g.oh * g.ow, x:size(2))
  end
  local N, C = x:size(0), x:size(1) // kk
  local Hp, Wp = size[1] + 2 * g.p[1], size[2] + 2 * g.p[2]
  local cells = x:reshape(N, C, g.k[1], g.k[2], g.oh, g.ow):permute(0, 1, 2, 4, 3, 5):reshape(N, C, g.k[1] * g.oh, g.k[2] * g.ow)
  local rows = torch.index_add(torch.zeros(N, C, g.k[1] * g.oh, Wp, { dtype = x.dtype, device = x.device }), 3,
    window_index(g.ow, g.k[2], g.s[2], g.d[2], x.device), cells)
  local out = torch.index_add(torch.zeros(N, C, Hp, Wp, { dtype = x.dtype, device = x.device }), 2,
    window_index(g.oh, g.k[1], g.s[1], g.d[1], x.device), rows)
  out = out:narrow(2, g.p[1], size[1]):narrow(3, g.p[2], size[2])
  return unbatched and out:squeeze(0) or out
end

local Unfold = Module:extend("Unfold")
M.Unfold = Unfold
function Unfold:__init(...)
  local o = U.parse("Unfold", { { "kernel_size", REQ }, { "dilation", 1 }, { "padding", 0 }, { "stride", 1 } }, ...)
  self.kernel_size, self.dilation, self.padding, self.stride = o.kernel_size, o.dilation, o.padding, o.stride
end
function Unfold:forward(...)
  U.require_args("Unfold.forward", { "input" }, select("#", ...))
  local x = U.check_tensor("im2col", "input", 1, (...))
  return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)
end
function Unfold:extra_repr()
  return string.format("kernel_size=%s, dilation=%s, padding=%s, stride=%s", U.pystr(self.kernel_size), U.pystr(self.dilation),
    U.pystr(self.padding), U.pystr(self.stride))
end

local Fold = Module:extend("Fold")
M.Fold = Fold
function Fold:__init(...)
  local o = U.parse("Fold", { { "output_size", REQ }, { "kernel_size", REQ }, { "dilation", 1 }, { "padding", 0 }, { "stride", 1 } }, ...)
  self.output_size, self.kernel_size, self.dilation, self.padding, self.stride = o.output_size, o.kernel_size, o.dilation, o.padding, o.stride
end
function Fold:forward(...)
  U.require_args("Fold.forward", { "input" }, select("#", ...))
  local x = U.check_tensor("col2im", "input", 1, (...))
  return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)
end
function Fold:extra_repr()
  return string.format("output_size=%s, kernel_size=%s, dilation=%s, padding=%s, stride=%s", U.pystr(self.output_size),
    U.pystr(self.kernel_size), U.pystr(self.dilation), U.pystr(self.padding), U.pystr(self.stride))
end

-- ---- conv_transpose2d ----

local ConvTranspose = torch.autograd.Function:extend("Convolution")

function ConvTranspose.forward(ctx, x, w, b, stride, padding, output_padding, groups, dilation)
  local N, H, W = x:size(0), x:size(2), x:size(3)
  local kh, kw = w:size(2), w:size(3)
  local oh = (H - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kh - 1) + output_padding[1] + 1
  local ow = (W - 1) * stride[2] - 2 * padding[2] + dilation[2] * (kw - 1) + output_padding[2] + 1
  local y = torch._conv2d_backward_input(x, w, { N, w:size(1) * groups, oh, ow }, stride, padding, dilation, groups)
  if b ~= nil then y = y + b:view(1, -1, 1, 1) end
  ctx:save_for_backward(x, w)
  ctx.conv = { stride, padding, dilation, groups }
  return y
end

function ConvTranspose.backward(ctx, gy)
  local x, w = table.unpack(ctx.saved_tensors)
  local stride, padding, dilation, groups = table.unpack(ctx.conv)
  local need = ctx.needs_input_grad
  local gx = need[1] and F.conv2d(gy, w, nil, stride, padding, dilation, groups) or nil
  local gw = need[2] and torch._conv2d_backward_weight(x, gy, { w:size(0), w:size(1), w:size(2), w:size(3) }, stride, padding,
    dilation, groups) or nil
  local gb = need[3] and gy:sum({ 0, 2, 3 }) or nil
  return gx, gw, gb, nil, nil, nil, nil, nil
end

local convt_spec = { { "input", REQ }, { "weight", REQ }, { "bias" }, { "stride", 1 }, { "padding", 0 }, { "output_padding", 0 },
  { "groups", 1 }, { "dilation", 1 } }

function F.conv_transpose2d(...)
  local o = U.parse("conv_transpose2d", convt_spec, ...)
  local x, w, b = o.input, o.weight, o.bias
  if not torch.is_tensor(x) or (x:dim() ~= 3 and x:dim() ~= 4) then
    U.error("conv_transpose2d: expected a 3-D (unbatched) or 4-D (batched) input")
  end
  if not torch.is_tensor(w) or w:dim() ~= 4 then U.error("conv_transpose2d: weight must be a 4-D tensor [in, out/groups, kh, kw]") end
  local unbatched = x:dim() == 3
  if unbatched then x = x:unsqueeze(0) end
  local groups = U.check_int("conv_transpose2d", "groups", o.groups, 1)
  if x:size(1) ~= w:size(0) then
    U.errorf("Given transposed=1, weight of size %s, expected input%s to have %d channels, but got %d channels instead",
      tostring(w:size()), tostring(x:size()), w:size(0), x:size(1))
  end
  local stride, padding = pair("conv_transpose2d", "stride", o.stride), pair("conv_transpose2d", "padding", o.padding)
  local opad, dilation = pair("conv_transpose2d", "output_padding", o.output_padding), pair("conv_transpose2d", "dilation", o.dilation)
  for i = 1, 2 do
    if opad[i] >= stride[i] and opad[i] >= dilation[i] then
      U.error("output padding must be smaller than either stride or dilation")
    end
  end
  if torch.is_autocast_enabled(x.device.type) and x.device.type == "cuda" then -- computed in the autocast dtype, as PyTorch
    local dt = torch.get_autocast_dtype("cuda")
    x, w = x:to(dt), w:to(dt)
    if b ~= nil then b = b:to(dt) end
  end
  local y = ConvTranspose.apply(x, w, b, stride, padding, opad, groups, dilation)
  return unbatched and y:squeeze(0) or y
end

-- ---- modules ----

local function conv_repr(self)
  local function tup(t) return "(" .. table.concat(t, ", ") .. (#t == 1 and ",)" or ")") end
  local function all(t, v)
    for _, x in ipairs(t) do if x ~= v then return false end end
    return true
  end
  local s = string.format("%d, %d, kernel_size=%s, stride=%s", self.in_channels, self.out_channels, tup(self.kernel_size),
    tup(self.stride))
  if type(self.padding) == "string" then s = s .. ", padding=" .. self.padding -- PyTorch formats it bare
  elseif not all(self.padding, 0) then s = s .. ", padding=" .. tup(self.padding) end
  if not all(self.dilation, 1) then s = s .. ", dilation=" .. tup(self.dilation) end
  if self.output_padding and not all(self.output_padding, 0) then s = s .. ", output_padding=" .. tup(self.output_padding) end
  if self.groups ~= 1 then s = s .. ", groups=" .. self.groups end
  if self.bias == nil then s = s .. ", bias=False" end
  if self.padding_mode ~= "zeros" then s = s .. ", padding_mode=" .. self.padding_mode end
  return s
end
M._conv_repr = conv_repr

-- weight of `shape`, bias of `nbias`, both initialised as PyTorch's _ConvNd (a transposed
-- weight [in, out/groups, kh, kw] takes its fan-in from dim 1, as PyTorch's does)
local function conv_params(self, shape, nbias, bias, fk)
  self.weight = Parameter(torch.empty(shape, fk))
  if bias then self.bias = Parameter(torch.empty(nbias, fk)) else self:register_parameter("bias", nil) end
  require("nn_layers")._reset_affine(self)
end
M._conv_params = conv_params

local Conv1d = Module:extend("Conv1d")
M.Conv1d = Conv1d

function Conv1d:__init(...)
  local o = U.parse("Conv1d", { { "in_channels", REQ }, { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 },
    { "padding", 0 }, { "dilation", 1 }, { "groups", 1 }, { "bias", true }, { "padding_mode", "zeros" }, { "device" },
    { "dtype" } }, ...)
  local cin, cout = U.check_int("Conv1d", "in_channels", o.in_channels, 1), U.check_int("Conv1d", "out_channels", o.out_channels, 1)
  local groups = U.check_int("Conv1d", "groups", o.groups, 1)
  if cin % groups ~= 0 then U.error("in_channels must be divisible by groups") end
  if cout % groups ~= 0 then U.error("out_channels must be divisible by groups") end
  if o.padding_mode ~= "zeros" and o.padding_mode ~= "reflect" and o.padding_mode ~= "replicate" and o.padding_mode ~= "circular" then
    U.errorf("padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got padding_mode='%s'", tostring(o.padding_mode))
  end
  self.in_channels, self.out_channels, self.groups, self.padding_mode = cin, cout, groups, o.padding_mode
  self.kernel_size = { one("Conv1d", "kernel_size", o.kernel_size) }
  self.stride = { one("Conv1d", "stride", o.stride) }
  self.padding = type(o.padding) == "string" and o.padding or { one("Conv1d", "padding", o.padding) }
  self.dilation = { one("Conv1d", "dilation", o.dilation) }
  conv_params(self, { cout, cin // groups, self.kernel_size[1] }, cout, o.bias, { device = o.device, dtype = o.dtype })
end

function Conv1d:forward(x)
  if self.padding_mode ~= "zeros" then -- pad in that mode, then convolve without padding
    return F.conv1d(F.pad(x, require("nn_layers")._mode_pad(self), self.padding_mode), self.weight, self.bias, self.stride[1], 0, self.dilation[1], self.groups)
  end
  return F.conv1d(x, self.weight, self.bias, self.stride[1], type(self.padding) == "string" and self.padding or self.padding[1],
    self.dilation[1], self.groups)
end
Conv1d.extra_repr = conv_repr

local ConvTranspose2d = Module:extend("ConvTranspose2d")
M.ConvTranspose2d = ConvTranspose2d

function ConvTranspose2d:__init(...)
  local name = "ConvTranspose2d"
  local o = U.parse(name, { { "in_channels", REQ }, { "out_channels", REQ }, { "kernel_size", REQ }, { "stride", 1 },
    { "padding", 0 }, { "output_padding", 0 }, { "groups", 1 }, { "bias", true }, { "dilation", 1 },
    { "padding_mode", "zeros" }, { "device" }, { "dtype" } }, ...)
  local cin, cout = U.check_int(name, "in_channels", o.in_channels, 1), U.check_int(name, "out_channels", o.out_channels, 1)
  local groups = U.check_int(name, "groups", o.groups, 1)
  if cin % groups ~= 0 then U.error("in_channels must be divisible by groups") end
  if cout % groups ~= 0 then U.error("out_channels must be divisible by groups") end
  if o.padding_mode ~= "zeros" then U.error("Only \"zeros\" padding mode is supported for ConvTranspose2d") end
  self.in_channels, self.out_channels, self.groups, self.padding_mode = cin, cout, groups, o.padding_mode
  self.kernel_size = pair(name, "kernel_size", o.kernel_size)
  self.stride, self.padding = pair(name, "stride", o.stride), pair(name, "padding", o.padding)
  self.output_padding, self.dilation = pair(name, "output_padding", o.output_padding), pair(name, "dilation", o.dilation)
  self.transposed = true
  conv_params(self, { cin, cout // groups, self.kernel_size[1], self.kernel_size[2] }, cout, o.bias,
    { device = o.device, dtype = o.dtype })
end

function ConvTranspose2d:forward(x, output_size)
  local opad = self.output_padding
  U.check_tensor("conv_transpose2d", "input", 1, x)
  if output_size ~= nil then -- the output_padding that gives this size (PyTorch's _output_padding)
    local want = U.transpose_output_size(2, x, output_size)
    opad = {}
    for i = 1, 2 do
      local base = (x:size(x:dim() - 3 + i) - 1) * self.stride[i] - 2 * self.padding[i] + self.dilation[i] * (self.kernel_size[i] - 1) + 1
      opad[i] = want[i] - base
      if opad[i] < 0 or opad[i] >= math.max(self.stride[i], self.dilation[i]) then
        U.errorf("requested an output size of %s, but valid sizes lie between %d and %d", tostring(torch.Size(want)), base,
          base + math.max(self.stride[i], self.dilation[i]) - 1)
      end
    end
  end
  return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, opad, self.groups, self.dilation)
end
ConvTranspose2d.extra_repr = conv_repr

local function pool1d(name, fname, spec, args, repr)
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    for _, s in ipairs(spec) do self[s[1]] = o[s[1]] end
    if self.stride == nil and spec[2] and spec[2][1] == "stride" then self.stride = self.kernel_size end
  end
  function cls:forward(x)
    local a = {}
    for i, k in ipairs(args) do a[i] = self[k] end
    return F[fname](x, table.unpack(a, 1, #args))
  end
  cls.extra_repr = repr
  return cls
end

local function fields(...)
  local keys = { ... }
  return function(self)
    local parts = {}
    for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. U.pystr(self[k]) end
    return table.concat(parts, ", ")
  end
end

pool1d("MaxPool1d", "max_pool1d", { { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "dilation", 1 },
  { "return_indices", false }, { "ceil_mode", false } },
  { "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices" },
  fields("kernel_size", "stride", "padding", "dilation", "ceil_mode"))
pool1d("AvgPool1d", "avg_pool1d", { { "kernel_size", REQ }, { "stride" }, { "padding", 0 }, { "ceil_mode", false },
  { "count_include_pad", true } }, { "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad" },
  function(self) -- PyTorch keeps these as 1-tuples
    return string.format("kernel_size=(%s,), stride=(%s,), padding=(%s,)", U.pystr(self.kernel_size), U.pystr(self.stride),
      U.pystr(self.padding))
  end)
pool1d("AdaptiveAvgPool1d", "adaptive_avg_pool1d", { { "output_size", REQ } }, { "output_size" }, fields("output_size"))

return M
