-- torchvision.transforms: FiveCrop, TenCrop (F.five_crop, F.ten_crop), RandomChoice, RandomOrder,
-- LinearTransformation, F.adjust_gamma, and their v2 names. References: crops located by hand on
-- an image whose pixel (c, y, x) holds c*30 + y*6 + x, gamma values from a plain Lua loop.
local T = ...
local tv = require "torchvision"
local TT = tv.transforms
local F = TT.functional
local Image = require("tv_io").Image

-- 3 x 5 x 6, pixel (c, y, x) = c*30 + y*6 + x
local function test_image(device)
  return torch.arange(0, 90):reshape(3, 5, 6):to(torch.uint8):to(device or "cpu")
end
local function first(img) return img[0][0][0]:item() end

local function check_crops(device)
  local img = test_image(device)
  local crops = F.five_crop(img, {2, 3})
  T.eq(#crops, 5, "five_crop gives 5 images")
  local firsts = {}
  for i, c in ipairs(crops) do
    T.eq(c.shape:totable(), {3, 2, 3}, "crop shape")
    firsts[i] = first(c)
  end
  -- tl (0,0), tr (0,3), bl (3,0), br (3,3), center: top round(1.5)=2, left round(1.5)=2
  T.eq(firsts, {0, 3, 18, 21, 14}, "five_crop corners and center")
  T.eq(crops[4][2]:tolist(), {{81, 82, 83}, {87, 88, 89}}, "bottom-right crop, channel 2")
  local ten = F.ten_crop(img, 2)
  T.eq(#ten, 10, "ten_crop gives 10 images")
  local tf = {}
  for i, c in ipairs(ten) do tf[i] = first(c) end
  -- the flipped copy: x -> 5 - x; its tl (0,0) = 5, tr (0,4) = 1, bl (3,0) = 23, br (3,4) = 19, center (2,2) = 15
  T.eq(tf, {0, 4, 18, 22, 14, 5, 1, 23, 19, 15}, "ten_crop, horizontal flip")
  local tv_ = F.ten_crop(img, 2, true)
  -- vertical flip: y -> 4 - y; tl = 24
  T.eq(first(tv_[6]), 24, "ten_crop vertical_flip")
  T.eq(ten[7][0]:tolist(), {{1, 0}, {7, 6}}, "flipped top-right crop")
end

T.test("five_crop, ten_crop on tensors", function() check_crops() end)

T.test("FiveCrop, TenCrop objects, PIL-like images, errors", function()
  local img = test_image()
  local pil = Image.fromarray(img:permute(1, 2, 0):contiguous())
  local crops = TT.FiveCrop({2, 3})(pil)
  T.eq(#crops, 5, "five PIL crops")
  T.check(Image.isImageType(crops[1]) and crops[1].width == 3 and crops[1].height == 2, "PIL crop size 3x2")
  T.eq(crops[2]:getpixel({0, 0}), {3, 33, 63}, "PIL top-right crop pixel")
  T.eq(crops[5]:getpixel({0, 0}), {14, 44, 74}, "PIL center crop pixel")
  local ten = TT.TenCrop(2, {vertical_flip = true})(pil)
  T.eq(ten[6]:getpixel({0, 0}), {24, 54, 84}, "PIL ten_crop vertical flip")
  T.eq(tostring(TT.FiveCrop(4)), "FiveCrop(size=(4, 4))", "FiveCrop repr")
  T.eq(tostring(TT.TenCrop({2, 3})), "TenCrop(size=(2, 3), vertical_flip=False)", "TenCrop repr")
  T.raises(function() F.five_crop(img, 7) end, "Requested crop size (7, 7) is bigger than input size (5, 6)")
  T.raises(function() F.five_crop(img, {1, 2, 3}) end, "Please provide only two dimensions (h, w) for size.")
  T.raises(function() TT.FiveCrop({1, 2, 3}) end, "Please provide only two dimensions (h, w) for size.")
  T.raises(function() TT.FiveCrop(2, {sise = 3}) end, "~unknown keyword 'sise'")
  local one = F.five_crop(img, {5, 6})
  T.check(torch.equal(one[1], img) and torch.equal(one[5], img), "a crop of the whole image is the image")
end)

-- reference: torchvision's tensor path, float32 pow, then * 255.999 truncated
local function gamma_ref(v, g, gain)
  local x = math.min(1, math.max(0, gain * (v / 255) ^ g))
  return math.floor(x * (255 + 1 - 1e-3))
end

T.test("adjust_gamma", function()
  local vals = {0, 1, 64, 128, 200, 255}
  local t = torch.tensor(vals, {dtype = torch.uint8}):reshape(1, 1, 6)
  local out = F.adjust_gamma(t, 2.0):reshape(-1):tolist()
  T.eq(out, {0, 0, 16, 64, 157, 255}, "uint8 gamma 2 (hand: 128 -> 0.25196*255.999 = 64.5)")
  local want = {}
  for i, v in ipairs(vals) do want[i] = gamma_ref(v, 0.5, 1) end
  T.eq(F.adjust_gamma(t, 0.5):reshape(-1):tolist(), want, "uint8 gamma 0.5 against the loop")
  T.eq(F.adjust_gamma(t, 1, 2):reshape(-1):tolist(), {0, 2, 128, 255, 255, 255}, "gain 2 clamps")
  local f = torch.tensor({0.25, 0.5, 0.9}):reshape(1, 1, 3)
  local fo = F.adjust_gamma(f, 2, 2)
  T.eq(fo.dtype, torch.float32, "float stays float")
  T.near(fo:reshape(-1):tolist(), {0.125, 0.5, 1.0}, 1e-6, "float: gain * x^gamma clamped to 1")
  -- PIL-like: a 256-entry table int(255.999 * gain * (i/255)^gamma) for every band
  local all = torch.arange(0, 256):to(torch.uint8):reshape(16, 16, 1):expand(16, 16, 3):contiguous()
  local pil = Image.fromarray(all)
  local po = F.adjust_gamma(pil, 2.2, 1.1)
  T.check(Image.isImageType(po) and po.mode == "RGB", "PIL in, PIL out")
  local got, exp = po._data:select(2, 1):reshape(-1):tolist(), {}
  for i = 0, 255 do exp[i + 1] = math.min(255, math.floor((255 + 1 - 1e-3) * 1.1 * (i / 255) ^ 2.2)) end
  T.eq(got, exp, "PIL lookup table, all 256 values")
  local gray = Image.fromarray(torch.tensor({{{100}}}, {dtype = torch.uint8}))
  T.eq(F.adjust_gamma(gray, 0.5):getpixel({0, 0}), math.floor(255.999 * (100 / 255) ^ 0.5), "L image")
  T.raises(function() F.adjust_gamma(t, -1) end, "Gamma should be a non-negative real number")
  T.raises(function() F.adjust_gamma(torch.zeros(2, 3, 3), 1) end,
    "Input image tensor permitted channel values are [1, 3], but found 2")
  T.eq(TT.v2.functional.adjust_gamma(t, 0.5):tolist(), F.adjust_gamma(t, 0.5):tolist(), "v2.functional.adjust_gamma")
end)

local function appender(tag)
  return TT.Lambda(function(list)
    local out = {table.unpack(list)}
    out[#out + 1] = tag
    return out
  end)
end

T.test("RandomChoice, RandomOrder", function()
  torch.manual_seed(3)
  local rc = TT.RandomChoice({appender("a"), appender("b")}, {0.25, 0.75})
  local counts = {a = 0, b = 0}
  for _ = 1, 2000 do
    local r = rc({})
    counts[r[1]] = counts[r[1]] + 1
  end
  T.check(math.abs(counts.b / 2000 - 0.75) < 0.04, "RandomChoice draws with p (b: " .. counts.b .. "/2000)")
  local only = TT.RandomChoice({appender("a"), appender("b")}, {0, 1})
  for _ = 1, 20 do T.eq(only({})[1], "b", "p = {0, 1} picks the second") end
  T.near(TT.RandomChoice({appender("a"), appender("b")}, {1, 3}).p, {0.25, 0.75}, 1e-12, "p normalised")
  T.raises(function() TT.RandomChoice({appender("a")}, {0.5, 0.5}) end,
    "Length of p doesn't match the number of transforms: 2 != 1")
  local ro = TT.RandomOrder({appender(1), appender(2), appender(3)})
  local seen = {}
  for _ = 1, 200 do
    local r = ro({})
    local sorted = {table.unpack(r)}
    table.sort(sorted)
    T.eq(sorted, {1, 2, 3}, "RandomOrder applies each transform once")
    seen[table.concat(r)] = true
  end
  local n = 0
  for _ in pairs(seen) do n = n + 1 end
  T.eq(n, 6, "RandomOrder: all 6 orders appear in 200 draws")
  T.check(tostring(ro):find("^RandomOrder%(\n    Lambda") ~= nil, "RandomOrder repr lists its transforms")
  T.check(TT.v2.RandomChoice ~= nil and TT.v2.RandomOrder ~= nil, "v2 names")
end)

local function check_linear(device)
  -- image 1 x 2 x 2 = [[1, 2], [3, 4]]; (x - mean) @ M with M moving entry i to i + 1
  local img = torch.tensor({{{1.0, 2.0}, {3.0, 4.0}}}, {device = device})
  local m = torch.zeros(4, 4, {device = device})
  for i = 0, 2 do m[i][i + 1] = 1 end
  m[3][0] = 10
  local mean = torch.tensor({1.0, 1.0, 1.0, 1.0}, {device = device})
  local lt = TT.LinearTransformation(m, mean)
  -- flat - mean = [0, 1, 2, 3]; out[j] = sum_i flat[i] M[i][j] = [30, 0, 1, 2]
  T.eq(lt(img):cpu():tolist(), {{{30.0, 0.0}, {1.0, 2.0}}}, "LinearTransformation by hand")
  local batch = torch.stack({img, img * 2}, 0)
  -- second: [2,4,6,8] - 1 = [1,3,5,7] -> [70, 1, 3, 5]
  T.eq(lt(batch):cpu():tolist(), {{{{30.0, 0.0}, {1.0, 2.0}}}, {{{70.0, 1.0}, {3.0, 5.0}}}}, "batched")
end

T.test("LinearTransformation", function()
  check_linear()
  local m, mean = torch.eye(4), torch.zeros(4)
  T.raises(function() TT.LinearTransformation(torch.zeros(4, 3), torch.zeros(4)) end,
    "transformation_matrix should be square. Got 4 x 3 rectangular matrix.")
  T.raises(function() TT.LinearTransformation(m, torch.zeros(3)) end,
    "mean_vector should have the same length 3 as any one of the dimensions of the transformation_matrix [(4, 4)]")
  T.raises(function() TT.LinearTransformation(m, torch.zeros(4, {dtype = torch.float64})) end,
    "Input tensors should have the same dtype. Got torch.float32 and torch.float64")
  T.raises(function() TT.LinearTransformation(m, mean)(torch.zeros(1, 2, 3)) end,
    "Input tensor and transformation matrix have incompatible shape.[1 x 2 x 3] != 4")
  local one = torch.rand(1, 2, 2)
  T.eq(TT.v2.LinearTransformation(m, mean)(one):tolist(), one:tolist(), "v2.LinearTransformation with the identity")
  T.check(TT.v2.FiveCrop ~= nil and TT.v2.TenCrop ~= nil and torch.equal(TT.v2.functional.five_crop(one, 1)[5], F.five_crop(one, 1)[5]), "v2 names")
end)

if torch.cuda.is_available() then
  T.test("CUDA", function()
    check_crops("cuda")
    check_linear("cuda")
    local t = torch.tensor({0, 64, 128, 255}, {dtype = torch.uint8}):reshape(1, 1, 4)
    T.eq(F.adjust_gamma(t:cuda(), 2.0):cpu():tolist(), F.adjust_gamma(t, 2.0):tolist(), "adjust_gamma on cuda")
  end)
else
  T.skip("no CUDA device", 1)
end
