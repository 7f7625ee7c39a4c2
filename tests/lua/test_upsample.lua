-- F.interpolate / nn.Upsample and pixel_shuffle against loops over plain Lua lists that
-- follow PyTorch's source-coordinate rules; gradients by central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

-- one plane resized: src(i) per PyTorch for the mode; rh, rw the source/destination ratios
local function naive(plane, oh, ow, mode, align, sh, sw)
  local H, W = #plane, #plane[1]
  local function r(insz, outsz, scale)
    if align then return outsz > 1 and (insz - 1) / (outsz - 1) or 0 end
    return scale and 1 / scale or insz / outsz
  end
  local rh, rw = r(H, oh, sh), r(W, ow, sw)
  local out = {}
  for i = 0, oh - 1 do
    out[i + 1] = {}
    for j = 0, ow - 1 do
      if mode == "nearest" or mode == "nearest-exact" then
        local off = mode == "nearest-exact" and 0.5 or 0
        local si, sj = math.min(math.floor((i + off) * rh), H - 1), math.min(math.floor((j + off) * rw), W - 1)
        out[i + 1][j + 1] = plane[si + 1][sj + 1]
      else
        local y = align and i * rh or math.max((i + 0.5) * rh - 0.5, 0)
        local x = align and j * rw or math.max((j + 0.5) * rw - 0.5, 0)
        local y0, x0 = math.min(math.floor(y), H - 1), math.min(math.floor(x), W - 1)
        local y1, x1 = math.min(y0 + 1, H - 1), math.min(x0 + 1, W - 1)
        local ly, lx = y - y0, x - x0
        out[i + 1][j + 1] = (1 - ly) * ((1 - lx) * plane[y0 + 1][x0 + 1] + lx * plane[y0 + 1][x1 + 1])
          + ly * ((1 - lx) * plane[y1 + 1][x0 + 1] + lx * plane[y1 + 1][x1 + 1])
      end
    end
  end
  return out
end

T.test("interpolate against the loops", function()
  torch.manual_seed(71)
  local x = torch.randn(2, 3, 4, 5, f64)
  local cases = {
    { { size = { 7, 9 } }, "nearest" }, { { scale_factor = 2 }, "nearest" }, { { size = { 3, 2 } }, "nearest" },
    { { size = { 7, 9 } }, "nearest-exact" }, { { size = { 7, 9 }, mode = "bilinear" }, "bilinear" },
    { { scale_factor = 1.5, mode = "bilinear" }, "bilinear", 1.5 }, { { size = { 2, 3 }, mode = "bilinear" }, "bilinear" },
    { { size = { 7, 9 }, mode = "bilinear", align_corners = true }, "bilinear", nil, true },
  }
  for _, c in ipairs(cases) do
    local o = c[1]
    o.mode = c[2]
    local y = F.interpolate(x, o)
    local oh, ow = y:size(2), y:size(3)
    for n = 0, 1 do for ch = 0, 2 do
      T.near(y[n][ch]:tolist(), naive(x[n][ch]:tolist(), oh, ow, c[2], c[4], c[3], c[3]), 1e-12,
        string.format("%s to %dx%d%s", c[2], oh, ow, c[4] and " align_corners" or ""))
    end end
  end
  local l = torch.tensor({ { { 0.0, 1.0, 4.0 } } }, f64)
  T.near(F.interpolate(l, { size = 5, mode = "linear" }):tolist(), { { { 0.0, 0.4, 1.0, 2.8, 4.0 } } },
    1e-12, "linear on a 3-D input")
  gradcheck("bilinear", function(t) return F.interpolate(t, { size = { 5, 7 }, mode = "bilinear" }) end, { torch.randn(1, 2, 3, 4, f64) })
  gradcheck("nearest", function(t) return F.interpolate(t, { scale_factor = 2 }) end, { torch.randn(1, 1, 2, 3, f64) })
end)

T.test("modules, pixel shuffle, errors", function()
  local x = torch.randn(1, 2, 3, 3)
  T.eq(nn.Upsample({ scale_factor = 2, mode = "bilinear" })(x):size(), torch.Size({ 1, 2, 6, 6 }), "Upsample")
  T.eq(tostring(nn.Upsample({ scale_factor = 2, mode = "bilinear" })), "Upsample(scale_factor=2.0, mode='bilinear')", "repr")
  T.near(nn.UpsamplingBilinear2d({ scale_factor = 2 })(x):tolist(),
    F.interpolate(x, { scale_factor = 2, mode = "bilinear", align_corners = true }):tolist(), 0, "UpsamplingBilinear2d aligns corners")
  T.near(nn.UpsamplingNearest2d({ size = 5 })(x):tolist(), F.interpolate(x, { size = 5 }):tolist(), 0, "UpsamplingNearest2d")
  local p = torch.arange(2 * 8 * 3 * 4, f64):view(2, 8, 3, 4)
  local s = F.pixel_shuffle(p, 2)
  T.eq(s:size(), torch.Size({ 2, 2, 6, 8 }), "pixel_shuffle shape")
  local ok = true
  for n = 0, 1 do for c = 0, 1 do for h = 0, 5 do for w = 0, 7 do
    local src = p[n][c * 4 + (h % 2) * 2 + (w % 2)][h // 2][w // 2]:item()
    ok = ok and s[n][c][h][w]:item() == src
  end end end end
  T.check(ok, "pixel_shuffle: out[c][h][w] = in[c*r*r + (h%r)*r + w%r][h/r][w/r]")
  T.eq(F.pixel_unshuffle(s, 2):tolist(), p:tolist(), "pixel_unshuffle inverts it")
  T.eq(tostring(nn.PixelShuffle(3)), "PixelShuffle(upscale_factor=3)", "repr")
  T.raises(function() F.interpolate(x, { size = 4, scale_factor = 2 }) end, "either size or scale_factor should be defined")
  T.raises(function() F.interpolate(x, { size = 4, mode = "linear" }) end, "Got 4D input, but linear mode needs 3D input")
  T.raises(function() F.interpolate(x, { size = 4, align_corners = true }) end, "~align_corners option can only be set")
  T.raises(function() F.pixel_shuffle(torch.randn(1, 3, 2, 2), 2) end, "~is not divisible by 4")
end)
