-- More pools: nn.MaxUnpool3d / F.max_unpool3d, nn.LPPool3d / F.lp_pool3d and fractional max
-- pooling (nn.FractionalMaxPool2d / 3d, F.fractional_max_pool2d / 3d and their _with_indices),
-- made of the differentiable tensor ops, so they run on CUDA and gradients reach the maxima.
--
-- Fractional max pooling (Graham, 2014) as PyTorch draws its windows: along a dim of input size
-- n, output size o and kernel k, with u the plane's random sample in [0, 1) for that dim and
-- alpha = (n - k) / (o - 1), window i starts at floor((i + u) * alpha) - floor(u * alpha) and the
-- last one at n - k. The 2-d samples' column 0 is for the width and 1 for the height; the 3-d
-- samples' columns are time, height, width. The arithmetic runs in the samples' dtype, as
-- PyTorch's kernels run in the input's scalar type.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local extra = require "nn_extra"
local F = torch.nn.functional
local REQ = U.REQUIRED

local M = {}

-- ---- MaxUnpool3d ----

function F.max_unpool3d(...)
  return extra._unpool("max_unpool3d", 3, U.parse("max_unpool3d", { { "input", REQ }, { "indices", REQ }, { "kernel_size", REQ },
    { "stride" }, { "padding", 0 }, { "output_size" } }, ...))
end

local MaxUnpool3d = Module:extend("MaxUnpool3d")
M.MaxUnpool3d = MaxUnpool3d
function MaxUnpool3d:__init(...)
  local name = "MaxUnpool3d"
  local o = U.parse(name, { { "kernel_size", REQ }, { "stride" }, { "padding", 0 } }, ...)
  self.kernel_size = U.ntuple(name, "kernel_size", o.kernel_size, 3)
  self.stride = o.stride ~= nil and U.ntuple(name, "stride", o.stride, 3) or self.kernel_size
  self.padding = U.ntuple(name, "padding", o.padding, 3)
end
function MaxUnpool3d:forward(...)
  local o = U.parse("MaxUnpool3d.forward", { { "input", REQ }, { "indices", REQ }, { "output_size" } }, ...)
  return U.F("max_unpool3d", o.input, o.indices, self.kernel_size, self.stride, self.padding, o.output_size)
end
function MaxUnpool3d:extra_repr()
  return string.format("kernel_size=%s, stride=%s, padding=%s", U.pystr(self.kernel_size), U.pystr(self.stride),
    U.pystr(self.padding))
end

-- ---- LPPool3d ----

function F.lp_pool3d(...)
  local o = U.parse("lp_pool3d", { { "input", REQ }, { "norm_type", REQ }, { "kernel_size", REQ }, { "stride" },
    { "ceil_mode", false } }, ...)
  local x = U.tensor_arg("lp_pool3d", "input", o.input)
  local k = U.ntuple("lp_pool3d", "kernel_size", o.kernel_size, 3)
  local s = o.stride ~= nil and U.ntuple("lp_pool3d", "stride", o.stride, 3) or k
  local out = U.call(F.avg_pool3d, x:pow(o.norm_type), k, s, 0, o.ceil_mode)
  return extra._lp_finish(out, o.norm_type, k[1] * k[2] * k[3])
end

local LPPool3d = Module:extend("LPPool3d")
M.LPPool3d = LPPool3d
function LPPool3d:__init(...)
  local o = U.parse("LPPool3d", { { "norm_type", REQ }, { "kernel_size", REQ }, { "stride" }, { "ceil_mode", false } }, ...)
  self.norm_type, self.kernel_size, self.stride, self.ceil_mode = o.norm_type, o.kernel_size, o.stride, o.ceil_mode
end
function LPPool3d:forward(x) return U.F("lp_pool3d", x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode) end
function LPPool3d:extra_repr()
  return string.format("norm_type=%s, kernel_size=%s, stride=%s, ceil_mode=%s", U.pystr(self.norm_type),
    U.pystr(self.kernel_size), U.pystr(self.stride), U.pystr(self.ceil_mode))
end

-- ---- fractional max pooling ----

local dim_names = { [2] = { "height", "width" }, [3] = { "time", "height", "width" } }
local sample_col = { [2] = { 1, 0 }, [3] = { 0, 1, 2 } } -- the samples' column for each spatial dim

-- the output sizes from output_size or output_ratio (int(n * ratio), as PyTorch)
local function out_sizes(fname, nd, x, output_size, output_ratio)
  if output_size == nil and output_ratio == nil then
    U.errorf("%s requires specifying either an output_size or an output_ratio", fname)
  end
  if output_size ~= nil then return U.ntuple(fname, "output_size", output_size, nd) end
  local r = type(output_ratio) == "number" and {} or output_ratio
  if type(output_ratio) == "number" then for d = 1, nd do r[d] = output_ratio end end
  if type(r) ~= "table" or #r ~= nd then U.errorf("%s: output_ratio must be a number or a list of %d numbers", fname, nd) end
  local out = {}
  for d = 1, nd do out[d] = math.floor(x:size(x:dim() - nd + d - 1) * r[d]) end
  return out
end

-- per plane, the first input index of each window along one dim: [N, C, o] int64
local function window_starts(u, n, o, k)
  local dev = u.device
  if o == 1 then return torch.full({ u:size(0), u:size(1), 1 }, n - k, { dtype = torch.int64, device = dev }) end
  local alpha = torch.tensor((n - k) / (o - 1), { dtype = u.dtype, device = dev }) -- rounded to the samples' dtype
  local i = torch.arange(o - 1, { dtype = u.dtype, device = dev })
  local uu = u:unsqueeze(-1)
  local starts = ((i + uu) * alpha):floor() - (uu * alpha):floor()
  local last = torch.full({ u:size(0), u:size(1), 1 }, n - k, { dtype = torch.int64, device = dev })
  return torch.cat({ starts:to(torch.int64), last }, 2)
end

local function fractional(fname, nd, ...)
  local o = U.parse(fname, { { "input", REQ }, { "kernel_size", REQ }, { "output_size" }, { "output_ratio" },
    { "return_indices", false }, { "_random_samples" } }, ...)
  local x = U.tensor_arg(fname, "input", o.input)
  if x:dim() ~= nd + 1 and x:dim() ~= nd + 2 then
    U.errorf("%s(): Expected %dD or %dD tensor, but got: %s", fname, nd + 1, nd + 2, U.shape_str(x))
  end
  local k = U.ntuple(fname, "kernel_size", o.kernel_size, nd)
  local out = out_sizes(fname, nd, x, o.output_size, o.output_ratio)
  local unbatched = x:dim() == nd + 1
  if unbatched then x = x:unsqueeze(0) end
  local N, C = x:size(0), x:size(1)
  local insz = {}
  for d = 1, nd do
    insz[d] = x:size(d + 1)
    if out[d] + k[d] - 1 > insz[d] then
      U.errorf("%s(): pool %s %d too large relative to input %s %d", fname, dim_names[nd][d], k[d], dim_names[nd][d], insz[d])
    end
    if out[d] < 1 then U.errorf("%s(): output_size must be positive, got %s", fname, U.pystr(out)) end
  end
  local u = o._random_samples
  if u == nil then
    u = torch.rand(N, C, nd, { dtype = x.dtype, device = x.device })
  else
    u = U.tensor_arg(fname, "_random_samples", u)
    if u:dim() ~= 3 or u:size(0) ~= N or u:size(1) ~= C or u:size(2) ~= nd then
      U.errorf("%s(): expected _random_samples of shape [%d, %d, %d], got %s", fname, N, C, nd, U.shape_str(u))
    end
  end
  u = u:detach()
  -- flat input positions of every tap of every window: [N, C, o_1..o_nd, k_1..k_nd]
  local flat, stride = nil, 1
  for d = nd, 1, -1 do
    local starts = window_starts(u:select(2, sample_col[nd][d]), insz[d], out[d], k[d])
    local pos = starts:unsqueeze(-1) + torch.arange(k[d], { dtype = torch.int64, device = x.device })
    local shape = { N, C }
    for j = 1, nd do shape[#shape + 1] = j == d and out[d] or 1 end
    for j = 1, nd do shape[#shape + 1] = j == d and k[d] or 1 end
    pos = pos:view(shape) * stride
    flat = flat == nil and pos or flat + pos
    stride = stride * insz[d]
  end
  local outshape, taps = { N, C }, 1
  for d = 1, nd do outshape[#outshape + 1] = out[d]; taps = taps * k[d] end
  local full = { table.unpack(outshape) }
  for d = 1, nd do full[#full + 1] = k[d] end
  local idx = flat:expand(full):reshape(N, C, -1)
  local vals = x:reshape(N, C, -1):gather(2, idx)
  outshape[#outshape + 1] = taps
  local v, arg = vals:view(outshape):max(-1)
  local indices = idx:view(outshape):gather(-1, arg:unsqueeze(-1)):squeeze(-1)
  if unbatched then v, indices = v:squeeze(0), indices:squeeze(0) end
  if o.return_indices then return v, indices end
  return v
end

for _, nd in ipairs({ 2, 3 }) do
  local fname = "fractional_max_pool" .. nd .. "d"
  F[fname] = function(...) return fractional(fname, nd, ...) end
  F[fname .. "_with_indices"] = function(...)
    local o = U.parse(fname .. "_with_indices", { { "input", REQ }, { "kernel_size", REQ }, { "output_size" }, { "output_ratio" },
      { "return_indices", false }, { "_random_samples" } }, ...)
    return fractional(fname, nd, o.input, o.kernel_size, o.output_size, o.output_ratio, true, o._random_samples)
  end

  local name = "FractionalMaxPool" .. nd .. "d"
  local cls = Module:extend(name)
  M[name] = cls
  function cls:__init(...)
    local o = U.parse(name, { { "kernel_size", REQ }, { "output_size" }, { "output_ratio" }, { "return_indices", false },
      { "_random_samples" } }, ...)
    self.kernel_size = U.ntuple(name, "kernel_size", o.kernel_size, nd)
    self.return_indices = o.return_indices
    self:register_buffer("_random_samples", o._random_samples)
    if o.output_size == nil and o.output_ratio == nil then
      U.errorf("%s requires specifying either an output size, or a pooling ratio", name)
    end
    if o.output_size ~= nil and o.output_ratio ~= nil then
      U.error("only one of output_size and output_ratio may be specified")
    end
    if o.output_size ~= nil then self.output_size = U.ntuple(name, "output_size", o.output_size, nd) end
    if o.output_ratio ~= nil then
      local r = type(o.output_ratio) == "number" and {} or o.output_ratio
      if type(o.output_ratio) == "number" then for d = 1, nd do r[d] = o.output_ratio end end
      if type(r) ~= "table" or #r ~= nd then U.errorf("%s: output_ratio must be a number or a list of %d numbers", name, nd) end
      for d = 1, nd do
        if not (r[d] > 0 and r[d] < 1) then U.errorf("output_ratio must be between 0 and 1 (got %s)", U.pystr(r)) end
      end
      self.output_ratio = r
    end
  end
  function cls:forward(x)
    return U.F(fname, x, self.kernel_size, self.output_size, self.output_ratio, self.return_indices, self._random_samples)
  end
end

return M
