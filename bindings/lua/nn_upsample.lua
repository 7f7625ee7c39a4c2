-- Resizing: F.interpolate (modes nearest, nearest-exact, linear, bilinear; align_corners),
-- nn.Upsample, nn.UpsamplingNearest2d, nn.UpsamplingBilinear2d, and F.pixel_shuffle /
-- pixel_unshuffle with their modules. A resize is separable: each spatial dim is resized on
-- its own with index_select (nearest) or two gathers and a blend (linear), so autograd
-- and every device come with the ops.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

-- PyTorch's source-coordinate ratio for one dim: 1/scale_factor when a scale was given, else in/out
local function ratio(insz, outsz, scale, align)
  if align then return outsz > 1 and (insz - 1) / (outsz - 1) or 0 end
  if scale then return 1 / scale end
  return insz / outsz
end

local function indices(n, dev, f)
  local t = {}
  for i = 0, n - 1 do t[i + 1] = f(i) end
  return torch.tensor(t, { dtype = torch.int64 }):to(dev)
end

-- x resized along dim d from insz to outsz
local function resize_dim(x, d, outsz, mode, scale, align)
  local insz = x:size(d)
  local r = ratio(insz, outsz, scale, align)
  local dev = x.device
  if mode == "nearest" or mode == "nearest-exact" then
    local off = mode == "nearest-exact" and 0.5 or 0
    return x:index_select(d, indices(outsz, dev, function(i) return math.min(math.floor((i + off) * r), insz - 1) end))
  end
  local lo, hi, w = {}, {}, {}
  for i = 0, outsz - 1 do
    local src = align and i * r or math.max((i + 0.5) * r - 0.5, 0)
    local i0 = math.min(math.floor(src), insz - 1)
    lo[i + 1], hi[i + 1], w[i + 1] = i0, math.min(i0 + 1, insz - 1), src - i0
  end
  local shape = {}
  for k = 0, x:dim() - 1 do shape[k + 1] = k == d and outsz or 1 end
  local lam = torch.tensor(w, { dtype = x.dtype }):to(dev):view(shape)
  local a = x:index_select(d, torch.tensor(lo, { dtype = torch.int64 }):to(dev))
  local b = x:index_select(d, torch.tensor(hi, { dtype = torch.int64 }):to(dev))
  return a + (b - a) * lam
end

local modes = { nearest = 0, ["nearest-exact"] = 0, linear = 1, bilinear = 2 }

local interp_spec = { { "input", REQ }, { "size" }, { "scale_factor" }, { "mode", "nearest" }, { "align_corners" },
  { "recompute_scale_factor" }, { "antialias", false } }

function F.interpolate(...)
  local o = U.parse("interpolate", interp_spec, ...)
  local x, mode = o.input, o.mode
  if not torch.is_tensor(x) then U.errorf("interpolate: input must be a Tensor, got %s", U.typename(x)) end
  local dims = x:dim() - 2
  if modes[mode] == nil then
    U.errorf("interpolate: mode '%s' is not supported (nearest, nearest-exact, linear, bilinear)", tostring(mode))
  end
  if dims < 1 or dims > 2 then U.errorf("interpolate: expected a 3-D or 4-D input (batch and channels first), got %d-D", x:dim()) end
  if modes[mode] > 0 and modes[mode] ~= dims then
    U.errorf("Got %dD input, but %s mode needs %dD input", x:dim(), mode, modes[mode] + 2)
  end
  if modes[mode] == 0 and o.align_corners ~= nil then
    U.error("align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear")
  end
  if o.antialias then U.error("interpolate: antialias=True is not supported") end
  if (o.size == nil) == (o.scale_factor == nil) then U.error("either size or scale_factor should be defined") end
  local function per_dim(v, what)
    if type(v) == "number" then
      local t = {}
      for i = 1, dims do t[i] = v end
      return t
    end
    if #v ~= dims then
      U.errorf("Input and %s must have the same number of spatial dimensions, but got input with spatial dimensions of %d and %s of length %d",
        what, dims, what, #v)
    end
    local t = {}
    for i = 1, dims do t[i] = v[i] end
    return t
  end
  local sizes, scales
  if o.size ~= nil then
    sizes = per_dim(o.size, "output size")
  else
    scales = per_dim(o.scale_factor, "scale_factor")
    sizes = {}
    for i = 1, dims do sizes[i] = math.floor(x:size(i + 1) * scales[i]) end
    if o.recompute_scale_factor then scales = nil end
  end
  local align = o.align_corners == true
  for i = 1, dims do
    x = resize_dim(x, i + 1, sizes[i], mode, scales and scales[i], align)
  end
  return x
end

F.upsample = F.interpolate

local Upsample = Module:extend("Upsample")
M.Upsample = Upsample

function Upsample:__init(...)
  local o = U.parse("Upsample", { { "size" }, { "scale_factor" }, { "mode", "nearest" }, { "align_corners" },
    { "recompute_scale_factor" } }, ...)
  local sf = o.scale_factor
  if type(sf) == "number" then sf = sf + 0.0 end -- PyTorch keeps it as a float
  self.size, self.scale_factor, self.mode = o.size, sf, o.mode
  self.align_corners, self.recompute_scale_factor = o.align_corners, o.recompute_scale_factor
end

function Upsample:forward(x)
  return F.interpolate(x, { size = self.size, scale_factor = self.scale_factor, mode = self.mode,
    align_corners = self.align_corners, recompute_scale_factor = self.recompute_scale_factor })
end

function Upsample:extra_repr()
  local s = self.scale_factor ~= nil and "scale_factor=" .. U.pystr(self.scale_factor) or "size=" .. U.pystr(self.size)
  return s .. ", mode=" .. U.pyrepr(self.mode)
end

local function fixed_upsample(name, mode, align)
  local cls = Upsample:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, { { "size" }, { "scale_factor" } }, ...)
    Upsample.__init(self, o.size, o.scale_factor, mode, align)
  end
end

fixed_upsample("UpsamplingNearest2d", "nearest", nil)
fixed_upsample("UpsamplingBilinear2d", "bilinear", true)

-- ---- pixel shuffle ----

-- x's leading dims kept; its last three reshaped to mid, permuted by order (0-based, within
-- mid) and reshaped to tail
local function regroup(x, mid, order, tail)
  local lead = {}
  for i = 0, x:dim() - 4 do lead[#lead + 1] = x:size(i) end
  local b = #lead
  local shape, perm, out = { table.unpack(lead) }, {}, { table.unpack(lead) }
  for _, v in ipairs(mid) do shape[#shape + 1] = v end
  for i = 0, b - 1 do perm[#perm + 1] = i end
  for _, v in ipairs(order) do perm[#perm + 1] = b + v end
  for _, v in ipairs(tail) do out[#out + 1] = v end
  return x:reshape(shape):permute(perm):reshape(out)
end

local function last3(fname, x)
  U.check_tensor(fname, "input", 1, x)
  if x:dim() < 3 then U.errorf("%s expects input to have at least 3 dimensions, but got input with %d dimension(s)", fname, x:dim()) end
  return x:size(-3), x:size(-2), x:size(-1)
end

function F.pixel_shuffle(input, upscale_factor)
  local r = U.check_int("pixel_shuffle", "upscale_factor", upscale_factor, 1)
  local c, h, w = last3("pixel_shuffle", input)
  if c % (r * r) ~= 0 then
    U.errorf("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)=%d is not divisible by %d", c, r * r)
  end
  local oc = c // (r * r)
  return regroup(input, { oc, r, r, h, w }, { 0, 3, 1, 4, 2 }, { oc, h * r, w * r })
end

function F.pixel_unshuffle(input, downscale_factor)
  local r = U.check_int("pixel_unshuffle", "downscale_factor", downscale_factor, 1)
  local c, h, w = last3("pixel_unshuffle", input)
  if h % r ~= 0 or w % r ~= 0 then
    U.errorf("pixel_unshuffle expects height and width to be divisible by downscale_factor, got %dx%d and %d", h, w, r)
  end
  return regroup(input, { c, h // r, r, w // r, r }, { 0, 2, 4, 1, 3 }, { c * r * r, h // r, w // r })
end

local function shuffle_module(name, fname, key)
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...) self[key] = U.parse(name, { { key, REQ } }, ...)[key] end
  function cls:forward(x) return F[fname](x, self[key]) end
  function cls:extra_repr() return key .. "=" .. U.pystr(self[key]) end
end

shuffle_module("PixelShuffle", "pixel_shuffle", "upscale_factor")
shuffle_module("PixelUnshuffle", "pixel_unshuffle", "downscale_factor")

return M
