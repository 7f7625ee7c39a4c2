-- Resizing with every filter against plain Lua: Pillow's BOX, HAMMING, LANCZOS and BICUBIC on
-- PIL-like images (fixed point: within one level of the exact value), torchvision's bicubic on
-- tensors (antialiased: the a = -0.5 kernel widened when shrinking; plain: torch's four taps with
-- a = -0.75 and edge samples repeated), and the errors for filters a tensor does not take.
local T = ...
local torch = require "torch"
local tv = require "torchvision"
local F = tv.transforms.functional
local Image = tv.io.Image

local pi = math.pi
local function sinc(x) if x == 0 then return 1 end x = x * pi; return math.sin(x) / x end
local function cubic(x, a)
  x = math.abs(x)
  if x < 1 then return ((a + 2) * x - (a + 3)) * x * x + 1 end
  if x < 2 then return (((x - 5) * x + 8) * x - 4) * a end
  return 0
end
local filters = {
  box = {function(x) return (x > -0.5 and x <= 0.5) and 1 or 0 end, 0.5},
  bilinear = {function(x) x = math.abs(x); return x < 1 and 1 - x or 0 end, 1},
  hamming = {function(x)
    x = math.abs(x)
    if x == 0 then return 1 end
    if x >= 1 then return 0 end
    x = x * pi
    return math.sin(x) / x * (string.unpack("f", string.pack("f", 0.54)) + string.unpack("f", string.pack("f", 0.46)) * math.cos(x))
  end, 1},
  bicubic = {function(x) return cubic(x, -0.5) end, 2},
  lanczos = {function(x) return (x >= -3 and x < 3) and sinc(x) * sinc(x / 3) or 0 end, 3},
}

-- one row of n values to m, Pillow's normalized filter taps
local function filtered_row(row, m, name)
  local f, fsup = filters[name][1], filters[name][2]
  local n, out = #row, {}
  local scale = n / m
  local fs = math.max(scale, 1)
  local support = fsup * fs
  for i = 0, m - 1 do
    local center = (i + 0.5) * scale
    local lo = math.max(math.floor(center - support + 0.5), 0)
    local hi = math.min(math.floor(center + support + 0.5), n)
    local s, total = 0, 0
    for j = lo, hi - 1 do
      local w = f((j - center + 0.5) / fs)
      s, total = s + w * row[j + 1], total + w
    end
    out[i + 1] = s / total
  end
  return out
end

-- torch's plain bicubic (align_corners=False): four taps, a = -0.75, indices clamped
local function torch_bicubic_row(row, m)
  local n, out = #row, {}
  local scale = n / m
  for i = 0, m - 1 do
    local src = (i + 0.5) * scale - 0.5
    local j0 = math.floor(src)
    local t = src - j0
    local w = {cubic(t + 1, -0.75), cubic(t, -0.75), cubic(1 - t, -0.75), cubic(2 - t, -0.75)}
    local s = 0
    for k = 1, 4 do s = s + w[k] * row[math.max(0, math.min(n - 1, j0 - 2 + k)) + 1] end
    out[i + 1] = s
  end
  return out
end

local function px(im) return im._data:view(-1):tolist() end

T.test("PIL-like images: every Pillow filter against plain Lua, within one level", function()
  torch.manual_seed(11)
  local row = (torch.rand(1, 17, 1) * 256):floor():to(torch.uint8)
  local ref = row:view(-1):tolist()
  local ids = {box = Image.BOX, bilinear = Image.BILINEAR, hamming = Image.HAMMING, bicubic = Image.BICUBIC, lanczos = Image.LANCZOS}
  for name, id in pairs(ids) do
    for _, w in ipairs({5, 8, 17 * 2 + 3, 40}) do
      local got = px(Image.fromarray(row):resize({w, 1}, id))
      local want, worst = filtered_row(ref, w, name), 0
      for i = 1, w do
        local exact = math.min(255, math.max(0, want[i]))
        worst = math.max(worst, math.abs(got[i] - exact))
      end
      T.check(worst <= 1, string.format("%s 17 -> %d: within one level, got %.3f", name, w, worst))
    end
  end
  -- a 2x box reduction is the mean of each 2 x 2 block (Pillow rounds halves up)
  local sq = torch.tensor({{10, 20, 30, 41}, {50, 60, 70, 80}}, {dtype = torch.uint8}):view(2, 4, 1)
  T.eq(px(Image.fromarray(sq):resize({2, 1}, Image.BOX)), {35, 56})
  -- F.resize on PIL-like images takes the filters by name and by Pillow's number
  local im = Image.fromarray(row)
  T.eq(px(F.resize(im, {1, 7}, "lanczos")), px(im:resize({7, 1}, Image.LANCZOS)))
  T.eq(px(F.resize(im, {1, 7}, 1)), px(im:resize({7, 1}, Image.LANCZOS)), "1 is Pillow's LANCZOS")
  T.eq(px(F.resize(im, {1, 7}, tv.transforms.InterpolationMode.HAMMING)), px(im:resize({7, 1}, Image.HAMMING)))
  T.eq(px(im:resize({7, 1})), px(im:resize({7, 1}, Image.BICUBIC)), "Pillow's default is BICUBIC")
end)

T.test("tensors: bicubic, antialiased and plain, against plain Lua", function()
  torch.manual_seed(5)
  local x = torch.rand(1, 1, 19, {dtype = torch.float64})
  local ref = x:view(-1):tolist()
  for _, w in ipairs({6, 19, 30, 45}) do
    local aa = F.resize(x, {1, w}, "bicubic", nil, true):view(-1):tolist()
    local plain = F.resize(x, {1, w}, "bicubic", nil, false):view(-1):tolist()
    T.near(aa, filtered_row(ref, w, "bicubic"), 1e-12, "antialiased 19 -> " .. w)
    T.near(plain, torch_bicubic_row(ref, w), 1e-12, "plain 19 -> " .. w)
  end
  -- both axes: separable, the rows' pass first
  local img = torch.rand(2, 7, 9, {dtype = torch.float64})
  local out = F.resize(img, {4, 5}, "bicubic", nil, false)
  local rows = {}
  for c = 0, 1 do for y = 0, 6 do rows[#rows + 1] = torch_bicubic_row(img[c][y]:tolist(), 5) end end
  for c = 0, 1 do
    for x0 = 1, 5 do
      local col = {}
      for y = 1, 7 do col[y] = rows[c * 7 + y][x0] end
      local want = torch_bicubic_row(col, 4)
      for y = 1, 4 do T.near(out[c][y - 1][x0 - 1]:item(), want[y], 1e-12) end
    end
  end
  -- uint8: rounded and clamped (the overshoot of a step)
  local step = torch.tensor({{{0, 0, 255, 255}}}, {dtype = torch.uint8})
  local up = F.resize(step, {1, 12}, "bicubic", nil, false)
  T.eq(up.dtype, torch.uint8)
  local want = torch_bicubic_row({0, 0, 255, 255}, 12)
  for i = 1, 12 do T.check(math.abs(up[0][0][i - 1]:item() - math.min(255, math.max(0, want[i]))) <= 0.5 + 1e-9) end
  local t = tv.transforms.Resize({3, 4}, {interpolation = tv.transforms.InterpolationMode.BICUBIC})(torch.rand(3, 6, 8))
  T.eq(t.shape:totable(), {3, 3, 4})
  for _, name in ipairs({"box", "hamming", "lanczos"}) do
    T.raises(function() F.resize(x, {1, 5}, name) end, "~interpolation " .. name .. " is unsupported with Tensor input")
  end
end)

if torch.cuda.is_available() then
  T.test("bicubic on CUDA tensors matches the CPU", function()
    local x = torch.rand(3, 11, 13)
    for _, aa in ipairs({true, false}) do
      local cpu = F.resize(x, {7, 20}, "bicubic", nil, aa)
      local gpu = F.resize(x:cuda(), {7, 20}, "bicubic", nil, aa):cpu()
      T.check((cpu - gpu):abs():max():item() < 1e-5, "antialias " .. tostring(aa))
    end
    local u = (torch.rand(3, 11, 13) * 255):to(torch.uint8)
    T.check((F.resize(u, {7, 20}, "bicubic"):int() - F.resize(u:cuda(), {7, 20}, "bicubic"):cpu():int()):abs():max():item() <= 1)
  end)
else
  T.skip("no CUDA", 3)
end
