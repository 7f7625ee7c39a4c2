-- The augmentation classes (GaussianBlur ... AugMix): draws reproducible under torch.manual_seed,
-- parameters as torchvision samples them, shapes and dtypes on PIL-like images and tensors,
-- argument errors and reprs; transforms.v2.
local T = ...
local tv = require("torchvision").transforms
local F = tv.functional
local Image = require("PIL").Image

local function u8(shape) return torch.randint(0, 256, shape, {dtype = torch.uint8}) end
local function pil(hwc) return Image.fromarray(hwc) end

-- out of t applied to a copy of the input twice under the same seed: equal
local function same_twice(t, x, seed)
  torch.manual_seed(seed or 5)
  local a = t(x)
  torch.manual_seed(seed or 5)
  local b = t(x)
  if Image.isImageType(a) then return a._data:equal(b._data) end
  return a:equal(b)
end

-- the image (or the PIL-like image's pixels) as a tensor
local function px(v) return Image.isImageType(v) and v._data or v end

local every = {
  function() return tv.GaussianBlur(3, {0.5, 1.5}) end,
  function() return tv.RandomRotation(40, {interpolation = "bilinear", fill = 3}) end,
  function() return tv.RandomRotation({-10, 80}, {expand = true}) end,
  function() return tv.RandomAffine(30, {translate = {0.2, 0.1}, scale = {0.8, 1.2}, shear = {-5, 5, -3, 3}}) end,
  function() return tv.RandomPerspective(0.4, 1.0) end,
  function() return tv.ElasticTransform(20.0, 2.0) end,
  function() return tv.RandomInvert(0.7) end,
  function() return tv.RandomPosterize(3, 0.7) end,
  function() return tv.RandomSolarize(100, 0.7) end,
  function() return tv.RandomAdjustSharpness(2.0, 0.7) end,
  function() return tv.RandomAutocontrast(0.7) end,
  function() return tv.RandomEqualize(0.7) end,
  function() return tv.AutoAugment(tv.AutoAugmentPolicy.CIFAR10) end,
  function() return tv.AutoAugment(tv.AutoAugmentPolicy.SVHN) end,
  function() return tv.AutoAugment() end,
  function() return tv.RandAugment() end,
  function() return tv.TrivialAugmentWide() end,
  function() return tv.AugMix() end,
}

T.test("every transform: reproducible, shapes and types kept", function()
  torch.manual_seed(3)
  local x = u8({3, 24, 28})
  local hwc = x:permute(1, 2, 0):contiguous()
  for k, make in ipairs(every) do
    local t = make()
    local name = tostring(t):match("^(%w+)")
    T.check(same_twice(t, x, k), name .. ": same seed, same result (tensor)")
    T.check(same_twice(t, pil(hwc), k), name .. ": same seed, same result (PIL)")
    local out = t(x)
    T.eq({out.dtype, out.shape:totable()[1]}, {torch.uint8, 3}, name .. ": uint8 tensor in, uint8 tensor out")
    local im = t(pil(hwc))
    T.check(Image.isImageType(im) and im.mode == "RGB", name .. ": PIL-like in, PIL-like out")
    T.eq(t(x:unsqueeze(0):expand(2, 3, 24, 28)):dim(), 4, name .. ": a batch")
  end
  -- float tensors where torchvision takes them
  local xf = torch.rand(3, 24, 28)
  for _, t in ipairs({tv.GaussianBlur(5), tv.RandomRotation(20), tv.RandomAffine(10, {scale = {0.9, 1.1}}),
      tv.RandomPerspective(), tv.ElasticTransform(), tv.RandomInvert(1), tv.RandomAdjustSharpness(3, 1),
      tv.RandomAutocontrast(1), tv.RandomSolarize(0.5, 1), tv.RandomErasing(1)}) do
    local out = t(xf)
    T.eq({out.dtype, out.shape:totable()}, {torch.float32, {3, 24, 28}}, tostring(t):match("^(%w+)") .. ": float32")
  end
end)

T.test("random ops follow p", function()
  local x = u8({3, 8, 8})
  T.eq(tv.RandomInvert(1.0)(x):tolist(), F.invert(x):tolist(), "p = 1 always")
  T.check(tv.RandomEqualize(0.0)(x) == x, "p = 0 never")
  T.eq(tv.RandomPosterize(2, 1)(x):tolist(), F.posterize(x, 2):tolist(), "RandomPosterize")
  T.eq(tv.RandomSolarize(128, 1)(x):tolist(), F.solarize(x, 128):tolist(), "RandomSolarize")
  T.eq(tv.RandomAdjustSharpness(0.5, 1)(x):tolist(), F.adjust_sharpness(x, 0.5):tolist(), "RandomAdjustSharpness")
  T.eq(tv.RandomAutocontrast(1)(x):tolist(), F.autocontrast(x):tolist(), "RandomAutocontrast")
  torch.manual_seed(4)
  local n = 0
  for _ = 1, 400 do if tv.RandomInvert(0.3)(x) ~= x then n = n + 1 end end
  T.check(n > 80 and n < 160, "about 30% applied: " .. n)
end)

T.test("parameters as torchvision draws them", function()
  torch.manual_seed(9)
  local s = tv.GaussianBlur.get_params(0.1, 2.0)
  torch.manual_seed(9)
  T.eq(s, torch.empty(1):uniform_(0.1, 2.0):item(), "GaussianBlur: uniform_(min, max)")
  local x = torch.rand(3, 10, 12)
  torch.manual_seed(2)
  local got = tv.GaussianBlur(5, {0.3, 1.7})(x)
  torch.manual_seed(2)
  local sigma = torch.empty(1):uniform_(0.3, 1.7):item()
  T.eq(got:tolist(), F.gaussian_blur(x, {5, 5}, {sigma, sigma}):tolist(), "GaussianBlur forward")
  torch.manual_seed(6)
  local angle = tv.RandomRotation.get_params({-30, 30})
  T.check(angle >= -30 and angle <= 30, "rotation angle in range")
  torch.manual_seed(6)
  T.eq(tv.RandomRotation(30, {fill = 1})(x):tolist(), F.rotate(x, angle, "nearest", false, nil, {1.0, 1.0, 1.0}):tolist(),
    "RandomRotation: fill per channel")
  torch.manual_seed(8)
  local a, tr, sc, sh = tv.RandomAffine.get_params({-10, 10}, {0.5, 0.25}, {0.5, 2}, {-4, 4, 1, 2}, {12, 10})
  T.check(a >= -10 and a <= 10 and math.abs(tr[1]) <= 6 and math.abs(tr[2]) <= 3 and sc >= 0.5 and sc <= 2, "affine ranges")
  T.check(math.type(tr[1]) == "integer" and sh[1] >= -4 and sh[1] <= 4 and sh[2] >= 1 and sh[2] <= 2, "translations are ints, two shears")
  torch.manual_seed(8)
  T.eq(tv.RandomAffine(10, {translate = {0.5, 0.25}, scale = {0.5, 2}, shear = {-4, 4, 1, 2}})(x):tolist(),
    F.affine(x, a, tr, sc, sh, "nearest", {0.0, 0.0, 0.0}):tolist(), "RandomAffine forward")
  torch.manual_seed(1)
  local s0, e0 = tv.RandomPerspective.get_params(12, 10, 0.5)
  T.eq(s0, {{0, 0}, {11, 0}, {11, 9}, {0, 9}}, "startpoints")
  T.check(e0[1][1] <= 3 and e0[1][2] <= 2 and e0[2][1] >= 8 and e0[3][2] >= 7 and e0[4][1] <= 3, "endpoints near the corners")
  local d = tv.ElasticTransform.get_params({10.0, 10.0}, {1.0, 1.0}, {10, 12})
  T.eq(d.shape:totable(), {1, 10, 12, 2}, "displacement shape")
end)

T.test("RandomErasing", function()
  local x = torch.rand(3, 20, 30)
  torch.manual_seed(12)
  local out = tv.RandomErasing(1.0)(x)
  local erased = out:eq(0):all(0) -- H x W: where every channel is 0
  local rows, cols = erased:any(1):nonzero():view(-1), erased:any(0):nonzero():view(-1)
  local h, w = rows:numel(), cols:numel()
  T.check(h > 0 and w > 0 and h < 20 and w < 30, "a region erased")
  T.eq(erased:sum():item(), h * w, "a rectangle")
  local area = h * w / 600
  T.check(area >= 0.02 - 0.01 and area <= 0.33 + 0.02, "area in scale")
  torch.manual_seed(12)
  torch.rand(1)
  local i, j, eh, ew, v = tv.RandomErasing.get_params(x, {0.02, 0.33}, {0.3, 3.3}, {0.0})
  T.eq({i, j, eh, ew}, {rows[0]:item(), cols[0]:item(), h, w}, "get_params gives the region (after the p draw)")
  T.eq(v:tolist(), {{{0.0}}}, "value as [C or 1, 1, 1]")
  torch.manual_seed(12)
  local o2 = tv.RandomErasing({p = 1, value = {0.25, 0.5, 0.75}})(x)
  T.eq(o2[":, " .. rows[0]:item() .. ", " .. cols[0]:item()]:tolist(), {0.25, 0.5, 0.75}, "a value per channel")
  torch.manual_seed(12)
  local o3 = tv.RandomErasing({p = 1, value = "random"})(x)
  T.check(not o3:equal(x) and o3:ne(x):any(0):sum():item() > 0, "random values")
  T.check(x:eq(0):sum():item() == 0, "the input untouched")
  local xi = x:clone()
  torch.manual_seed(12)
  tv.RandomErasing({p = 1, inplace = true})(xi)
  T.check(xi:eq(0):sum():item() > 0, "inplace")
  T.eq(tv.RandomErasing(1)(u8({3, 10, 10})).dtype, torch.uint8, "uint8")
  T.check(tv.RandomErasing(0)(x) == x, "p = 0")
  T.raises(function() tv.RandomErasing({value = "noise"}) end, "RandomErasing: If value is str, it should be 'random'")
  T.raises(function() tv.RandomErasing({scale = {0.1, 1.5}}) end, "RandomErasing: Scale should be between 0 and 1")
  T.raises(function() tv.RandomErasing(1.5) end, "RandomErasing: Random erasing probability should be between 0 and 1")
  T.raises(function() tv.RandomErasing({p = 1, value = {1, 2}})(x) end,
    "RandomErasing: If value is a sequence, it should have either a single value or 3 (number of input channels)")
  T.raises(function() tv.RandomErasing()(pil(u8({4, 4, 3}))) end, "~img should be Tensor Image")
end)

T.test("argument checks", function()
  T.raises(function() tv.GaussianBlur(4) end, "GaussianBlur: Kernel size value should be an odd and positive number.")
  T.raises(function() tv.GaussianBlur({3, 3, 3}) end, "GaussianBlur: Kernel size should be a tuple/list of two integers")
  T.raises(function() tv.GaussianBlur(3, -1) end, "GaussianBlur: If sigma is a single number, it must be positive.")
  T.raises(function() tv.GaussianBlur(3, {2, 1}) end, "GaussianBlur: sigma values should be positive and of the form (min, max).")
  T.raises(function() tv.RandomRotation(-5) end, "RandomRotation: If degrees is a single number, it must be positive.")
  T.raises(function() tv.RandomRotation({1, 2, 3}) end, "RandomRotation: degrees should be a sequence of length 2.")
  T.raises(function() tv.RandomRotation(5, {interpolation = "bicubic"}) end, "~interpolation bicubic is not supported")
  T.raises(function() tv.RandomAffine(5, {translate = {0.5, 2}}) end, "RandomAffine: translation values should be between 0 and 1")
  T.raises(function() tv.RandomAffine(5, {scale = {0, 1}}) end, "RandomAffine: scale values should be positive")
  T.raises(function() tv.RandomAffine(5, {shear = {1, 2, 3}}) end, "RandomAffine: shear should be a sequence of length 2 or 4.")
  T.raises(function() tv.RandomAffine(5, {fill = "white"}) end, "RandomAffine: Fill should be either a sequence or a number.")
  T.raises(function() tv.RandomAffine(5, {sheer = 3}) end, "~unknown keyword 'sheer'")
  T.raises(function() tv.ElasticTransform({1.0, 2.0, 3.0}) end, "ElasticTransform: If alpha is a sequence its length should be 2. Got 3")
  T.raises(function() tv.AutoAugment("imagenette") end, "AutoAugment: The provided policy imagenette is not recognized.")
  T.raises(function() tv.AugMix(11) end, "AugMix: The severity must be between [1, 10]. Got 11 instead.")
  T.raises(function() tv.RandAugment({num_ops = 30, magnitude = 40})(u8({3, 8, 8})) end, "~is out of range")
  T.raises(function() tv.RandomPosterize(2.5) end, "~bits must be an integer")
end)

T.test("reprs", function()
  T.eq(tostring(tv.GaussianBlur(3)), "GaussianBlur(kernel_size=(3, 3), sigma=(0.1, 2.0))", "GaussianBlur")
  T.eq(tostring(tv.RandomErasing()), "RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0, inplace=False)", "RandomErasing")
  T.eq(tostring(tv.RandomRotation(30)), "RandomRotation(degrees=[-30.0, 30.0], interpolation=nearest, expand=False, fill=0)", "RandomRotation")
  T.eq(tostring(tv.RandomAffine(10, {scale = {0.9, 1.1}, interpolation = "bilinear"})),
    "RandomAffine(degrees=[-10.0, 10.0], scale=(0.9, 1.1), interpolation=bilinear)", "RandomAffine")
  T.eq(tostring(tv.RandomPerspective()), "RandomPerspective(p=0.5)", "RandomPerspective")
  T.eq(tostring(tv.ElasticTransform()), "ElasticTransform(alpha=[50.0, 50.0], sigma=[5.0, 5.0], interpolation=InterpolationMode.BILINEAR, fill=[0.0])",
    "ElasticTransform")
  T.eq(tostring(tv.RandomSolarize(128)), "RandomSolarize(threshold=128,p=0.5)", "RandomSolarize")
  T.eq(tostring(tv.RandomInvert()), "RandomInvert(p=0.5)", "RandomInvert")
  T.eq(tostring(tv.AutoAugment()), "AutoAugment(policy=AutoAugmentPolicy.IMAGENET, fill=None)", "AutoAugment")
  T.eq(tostring(tv.RandAugment()), "RandAugment(num_ops=2, magnitude=9, num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None)",
    "RandAugment")
  T.eq(tostring(tv.TrivialAugmentWide()), "TrivialAugmentWide(num_magnitude_bins=31, interpolation=InterpolationMode.NEAREST, fill=None)",
    "TrivialAugmentWide")
  T.eq(tostring(tv.AugMix()),
    "AugMix(severity=3, mixture_width=3, chain_depth=-1, alpha=1.0, all_ops=True, interpolation=InterpolationMode.BILINEAR, fill=None)", "AugMix")
  T.eq(tostring(tv.Compose({tv.RandomRotation(5), tv.RandAugment(1, 5)})):match("RandAugment%(num_ops=1, magnitude=5") ~= nil, true, "in Compose")
end)

T.test("auto augment: op tables", function()
  local aa = tv.AutoAugment()
  local names = {}
  for k, e in ipairs(aa:_augmentation_space(10, {32, 32})) do names[k] = e.name end
  T.eq(#names, 14, "AutoAugment: 14 ops")
  local space = {}
  for _, e in ipairs(tv.RandAugment():_augmentation_space(31, {32, 40})) do space[e.name] = e end
  T.near(space.TranslateX.mags[31], 150 / 331 * 40, 1e-5, "TranslateX up to 150/331 of the width")
  T.near(space.TranslateY.mags[31], 150 / 331 * 32, 1e-5, "TranslateY of the height")
  T.eq(space.Posterize.mags, (8 - (torch.arange(31) / 7.5):round():int()):tolist(), "Posterize bins")
  T.eq({space.Posterize.mags[1], space.Posterize.mags[31]}, {8, 4}, "Posterize 8 down to 4")
  T.eq({space.Solarize.mags[1], space.Solarize.mags[31], space.Solarize.signed}, {255.0, 0.0, false}, "Solarize 255 down to 0, unsigned")
  T.eq({space.Rotate.signed, space.Identity.mags}, {true, nil}, "signed, or no magnitude")
  local ta = {}
  for _, e in ipairs(tv.TrivialAugmentWide():_augmentation_space(31)) do ta[e.name] = e end
  T.eq({ta.Rotate.mags[31], ta.TranslateX.mags[31], ta.Posterize.mags[31]}, {135.0, 32.0, 2}, "TrivialAugmentWide: wide ranges")
  local am = tv.AugMix({all_ops = false}):_augmentation_space(10, {32, 30})
  T.eq(#am, 9, "AugMix without all_ops: 9 ops")
  -- one policy step by hand: CIFAR10's first policy is (Invert 0.1), (Contrast 0.2, 6)
  -- (a seed that draws policy 0 or 1 and applies both of its steps)
  local x = u8({3, 16, 16})
  local seed, id, probs, signs
  for k = 1, 10000 do
    torch.manual_seed(k)
    id, probs, signs = tv.AutoAugment.get_params(25)
    local p = probs:tolist()
    if (id == 0 and p[1] <= 0.1 and p[2] <= 0.2) or (id == 1 and p[1] <= 0.7 and p[2] <= 0.3) then seed = k; break end
  end
  torch.manual_seed(seed)
  local got = tv.AutoAugment(tv.AutoAugmentPolicy.CIFAR10)(x)
  local policy = ({{{"Invert"}, {"Contrast", 6, 0.9}}, {{"Rotate", 2, 30}, {"TranslateX", 9, 150 / 331 * 16}}})[id + 1]
  local want = x
  for i, step in ipairs(policy) do
    local m = step[2] and torch.linspace(0, step[3], 10)[step[2]]:item() or 0
    if signs[i - 1]:item() == 0 then m = -m end
    if step[1] == "Invert" then want = F.invert(want)
    elseif step[1] == "Contrast" then want = F.adjust_contrast(want, 1 + m)
    elseif step[1] == "Rotate" then want = F.rotate(want, m)
    else want = F.affine(want, 0, {m < 0 and math.ceil(m) or math.floor(m), 0}, 1, {0, 0}) end
  end
  T.eq(got:tolist(), want:tolist(), "AutoAugment CIFAR10 policy " .. id .. " by hand")
  -- AugMix mixes: the result lies between the images' ranges and is not the input
  torch.manual_seed(2)
  local mixed = tv.AugMix({mixture_width = 2, chain_depth = 1})(x)
  T.eq({mixed.dtype, mixed.shape:totable()}, {torch.uint8, {3, 16, 16}}, "AugMix keeps dtype and shape")
end)

T.test("transforms.v2", function()
  local v2 = tv.v2
  T.check(v2.Resize ~= nil and v2.RandAugment.get_params == tv.RandAugment.get_params and v2.GaussianBlur.get_params == tv.GaussianBlur.get_params, "the v1 classes' names")
  local xr = torch.rand(3, 5, 6)
  T.check(torch.equal(v2.functional.rotate(xr, 30), F.rotate(xr, 30)) and torch.equal(v2.functional.horizontal_flip(xr), F.hflip(xr)),
    "v2.functional dispatches pure tensors to v1's kernels")
  local hwc = u8({5, 6, 3})
  local img = v2.ToImage()(pil(hwc))
  T.eq({img.dtype, img.shape:totable()}, {torch.uint8, {3, 5, 6}}, "ToImage: PIL-like -> uint8 C x H x W")
  T.eq(img:tolist(), hwc:permute(2, 0, 1):tolist(), "ToImage pixels")
  T.eq(v2.ToImage()(u8({5, 6})).shape:totable(), {1, 5, 6}, "ToImage: H x W gets a channel")
  local f = v2.ToDtype(torch.float32, {scale = true})(img)
  T.eq(f.dtype, torch.float32, "ToDtype float32")
  T.near(f:tolist(), (img:to(torch.float32) * (1.0 / 255)):tolist(), 0, "scale=true: times 1/255")
  T.eq(v2.ToDtype(torch.float32)(img):tolist(), img:to(torch.float32):tolist(), "scale=false: a cast")
  T.eq(v2.ToDtype(torch.uint8, {scale = true})(torch.tensor({{{0.0, 0.5, 1.0}}})):tolist(), {{{0, 127, 255}}}, "float -> uint8 scaled")
  T.eq(v2.functional.to_dtype(img, torch.int32, true):tolist(), (img:to(torch.int32) * (1 << 23)):tolist(), "uint8 -> int32: shifted")
  local pure = v2.ToPureTensor()(img)
  T.check(torch.is_tensor(pure) and require("tv_tensors").is_pure_tensor(pure) and pure:equal(img), "ToPureTensor")
  local pipeline = v2.Compose({v2.ToImage(), v2.RandomHorizontalFlip(), v2.RandAugment(), v2.ToDtype(torch.float32, {scale = true}),
    v2.Normalize({0.5, 0.5, 0.5}, {0.5, 0.5, 0.5})})
  local out = pipeline(pil(hwc))
  T.eq({out.dtype, out.shape:totable()}, {torch.float32, {3, 5, 6}}, "a v2 pipeline")
  T.eq(v2.functional.get_size(img), {5, 6}, "get_size: [H, W]")
  T.eq(tostring(v2.ToDtype(torch.float32, {scale = true})), "ToDtype(dtype=torch.float32, scale=True)", "ToDtype repr")
  T.check(tv.ToImage == nil and tv.ToDtype == nil, "v2-only names stay out of v1")
  T.raises(function() v2.functional.to_dtype(torch.rand(2), torch.int64, true) end,
    "~The conversion from torch.float32 to torch.int64 cannot be performed safely.")
end)
