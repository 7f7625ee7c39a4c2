-- PIL-like images (tv_io's Image): the YCbCr mode (convert, split, Image.merge) and resize
-- with Image.BICUBIC, as pytorch/examples super_resolution uses them.
-- References: Pillow's pure-colour YCbCr values worked out by hand from its 6-bit fixed-point
-- conversion, a plain-Lua Y formula, and a plain-Lua bicubic (a = -0.5) resampler.
local T = ...
local Image = require("PIL").Image

local function img(rows) return Image.fromarray(torch.tensor(rows, { dtype = torch.uint8 })) end
local function px(im) return im._data:view(-1):tolist() end

T.test("RGB -> YCbCr of pure colours (Pillow's values)", function()
  -- red, green, blue, white, black, (1, 1, 1)
  local y = img({ { { 255, 0, 0 }, { 0, 255, 0 }, { 0, 0, 255 } }, { { 255, 255, 255 }, { 0, 0, 0 }, { 1, 1, 1 } } })
    :convert("YCbCr")
  T.eq(y.mode, "YCbCr")
  T.eq(y:getbands(), { "Y", "Cb", "Cr" })
  T.eq(tostring(y), "<PIL.Image.Image image mode=YCbCr size=3x2>")
  T.eq(px(y), { 76, 84, 255, 149, 43, 21, 29, 255, 107, 255, 128, 128, 0, 128, 128, 1, 128, 128 })
end)

T.test("Y against a plain-Lua loop", function()
  torch.manual_seed(3)
  local t = (torch.rand(5, 7, 3) * 256):floor():to(torch.uint8)
  local y = Image.fromarray(t):convert("YCbCr")
  local function r64(v, c) return math.floor(v * 64 * c + 0.5) end
  local bad = 0
  for i = 0, 4 do
    for j = 0, 6 do
      local r, g, b = t[i][j][0]:item(), t[i][j][1]:item(), t[i][j][2]:item()
      local want = (r64(r, 0.299) + r64(g, 0.587) + r64(b, 0.114)) >> 6
      if y._data[i][j][0]:item() ~= want then bad = bad + 1 end
    end
  end
  T.eq(bad, 0, "pixels whose Y differs")
  -- L from RGB and Y from YCbCr: both luma
  local l = Image.fromarray(t):convert("L")
  T.check((l._data:int() - y._data:narrow(2, 0, 1):int()):abs():max():item() <= 1, "L and Y within one level")
end)

T.test("YCbCr -> RGB and other modes", function()
  local rgb = img({ { { 255, 0, 0 }, { 0, 255, 0 } }, { { 0, 0, 255 }, { 128, 128, 128 } } })
  local back = rgb:convert("YCbCr"):convert("RGB")
  T.eq(back.mode, "RGB")
  T.check((back._data:int() - rgb._data:int()):abs():max():item() <= 2, "round trip within two levels")
  T.eq(back._data[1][1]:tolist(), { 128, 128, 128 }, "grey is exact")
  local gray = img({ { { 10 }, { 200 } } }):convert("YCbCr")
  T.eq(px(gray), { 10, 128, 128, 200, 128, 128 })
  T.eq(px(gray:convert("L")), { 10, 200 })
  T.eq(gray:convert("RGBA"):tensor()[0][1]:tolist(), { 200, 200, 200, 255 })
  T.raises(function() rgb:convert("CMYK") end, "~convert: unsupported mode CMYK (L, LA, RGB, RGBA and YCbCr are)")
end)

T.test("split and Image.merge", function()
  local t = torch.arange(24):view(2, 4, 3):to(torch.uint8)
  local a, b, c = Image.fromarray(t):split()
  T.eq({ a.mode, b.mode, c.mode }, { "L", "L", "L" })
  T.eq(a.size, { 4, 2 })
  T.eq(px(b), { 1, 4, 7, 10, 13, 16, 19, 22 })
  local m = Image.merge("RGB", { a, b, c })
  T.eq(m.mode, "RGB")
  T.check(torch.equal(m._data, t), "merge undoes split")
  local y = Image.merge("YCbCr", { c, b, a })
  T.eq(y.mode, "YCbCr")
  T.eq(y._data[0][0]:tolist(), { 2, 1, 0 })
  T.eq(select("#", y:split()), 3)
  T.raises(function() Image.merge("RGB", { a, b }) end, "~merge: mode RGB needs 3 bands, got 2")
  T.raises(function() Image.merge("RGB", { a, b, m }) end, "~merge: band 3 is not an L image")
  T.raises(function() Image.merge("RGB", { a, b, a:crop({ 0, 0, 2, 2 }) }) end, "~merge: images do not match")
  T.raises(function() Image.merge("P", { a }) end, "~merge: unsupported mode P")
end)

T.test("YCbCr survives copy, crop, resize, transpose, fromarray; save", function()
  local y = img({ { { 1, 2, 3 }, { 4, 5, 6 } } }):convert("YCbCr")
  T.eq(y:copy().mode, "YCbCr")
  T.eq(y:crop({ 0, 0, 1, 1 }).mode, "YCbCr")
  T.eq(y:resize({ 4, 2 }).mode, "YCbCr")
  T.eq(y:transpose(Image.FLIP_LEFT_RIGHT).mode, "YCbCr")
  T.eq(Image.fromarray(y:tensor(), "YCbCr").mode, "YCbCr")
  T.eq(Image.fromarray(y:tensor()).mode, "RGB")
  T.raises(function() y:save(os.tmpname() .. ".png") end, "~save: cannot write mode YCbCr as PNG")
  local ToTensor = require("torchvision").transforms.ToTensor
  T.eq(ToTensor()(y).shape, torch.Size({ 3, 1, 2 }))
end)

-- Pillow's resampling in plain Lua: a separable filter, each output pixel's taps normalized
local function cubic(x)
  x = math.abs(x)
  if x < 1 then return (1.5 * x - 2.5) * x * x + 1 end
  if x < 2 then return ((-0.5 * x + 2.5) * x - 4) * x + 2 end
  return 0
end
local function resample_row(row, out)
  local n, res = #row, {}
  local scale = n / out
  local fs = math.max(scale, 1)
  for i = 0, out - 1 do
    local center = (i + 0.5) * scale
    local lo = math.max(math.floor(center - 2 * fs + 0.5), 0)
    local hi = math.min(math.floor(center + 2 * fs + 0.5), n)
    local s, total = 0, 0
    for j = lo, hi - 1 do
      local w = cubic((j - center + 0.5) / fs)
      s, total = s + w * row[j + 1], total + w
    end
    res[i + 1] = math.min(255, math.max(0, math.floor(s / total + 0.5)))
  end
  return res
end

T.test("resize with Image.BICUBIC against plain Lua", function()
  -- two pixels to four: weights 0.8671875 and -0.0703125 over 0.796875 at the first output
  local two = img({ { { 100 }, { 200 } } })
  T.eq(px(two:resize({ 4, 1 }, Image.BICUBIC)), resample_row({ 100, 200 }, 4))
  T.eq(px(two:resize({ 4, 1 }, Image.BICUBIC))[1], 91, "(100 * 0.8671875 - 200 * 0.0703125) / 0.796875 = 91.18")
  torch.manual_seed(7)
  local row = (torch.rand(1, 13, 1) * 256):floor():to(torch.uint8)
  local ref = row:view(-1):tolist()
  for _, w in ipairs({ 5, 13 * 2, 31, 4 }) do
    local got = px(Image.fromarray(row):resize({ w, 1 }, Image.BICUBIC))
    local want, worst = resample_row(ref, w), 0
    for i = 1, w do worst = math.max(worst, math.abs(got[i] - want[i])) end
    T.check(worst <= 1, "width 13 -> " .. w .. ": within one level (Pillow's fixed point), got " .. worst)
  end
  -- a constant image stays constant; the overshoot of a step is clipped to 0..255
  T.eq(px(Image.new("L", { 5, 3 }, 77):resize({ 9, 7 }, Image.BICUBIC)), (function()
    local t = {}
    for i = 1, 63 do t[i] = 77 end
    return t
  end)())
  local step = px(img({ { { 0 }, { 0 }, { 255 }, { 255 } } }):resize({ 12, 1 }, Image.BICUBIC))
  T.eq({ step[1], step[12] }, { 0, 255 })
  -- height too, and every band of an RGB image alike
  local col = Image.fromarray(torch.tensor({ 10, 250, 30 }, { dtype = torch.uint8 }):view(3, 1, 1):expand(3, 1, 3))
  local big = col:resize({ 1, 7 }, Image.BICUBIC)
  T.eq(big.size, { 1, 7 })
  T.eq(big._data:select(2, 0):view(-1):tolist(), resample_row({ 10, 250, 30 }, 7))
  T.check(torch.equal(big._data:select(2, 0), big._data:select(2, 2)), "bands alike")
  T.raises(function() two:resize({ 4, 1 }, 7) end, "~resize: unknown resampling filter 7")
end)

if torch.cuda.is_available() then
  T.test("cuda: images from CUDA tensors", function()
    local t = torch.tensor({ { { 255, 0, 0 }, { 0, 0, 255 } } }, { dtype = torch.uint8, device = "cuda" })
    local y = Image.fromarray(t):convert("YCbCr")
    T.eq(px(y), { 76, 84, 255, 29, 255, 107 })
    T.eq(px(y:split():resize({ 4, 1 }, Image.BICUBIC)), resample_row({ 76, 29 }, 4))
  end)
else
  T.skip("no GPU: YCbCr and bicubic from CUDA tensors", 2)
end
