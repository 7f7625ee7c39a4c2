-- tv_tensor_kernels (torchvision's tensor kernels as tensor ops, for images off the CPU) against
-- the C loops they stand for: the same inputs through both, float images within 1e-5, uint8
-- images exactly; the CUDA section runs the kernels and the transforms on "cuda".
local T = ...
local K = require "tv_tensor_kernels"
local C = require("tv_io")._C
local tv = require("torchvision").transforms
local F = tv.functional
local KU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "tv_kernel_util.lua")(T)
local image, same = KU.image, KU.same

torch.manual_seed(7)

local shapes = {{3, 7, 9}, {1, 5, 6}, {2, 3, 8, 11}, {3, 16, 13}}

-- every kernel on img (on device) against its C loop on img:cpu()
local function compare_all(device)
  for _, dtype in ipairs({torch.float32, torch.uint8, torch.float64}) do
    for _, shape in ipairs(shapes) do
      local cpu = image(shape, dtype)
      local img = cpu:to(device)
      local tag = string.format("%s %s %s", device, tostring(dtype), table.concat(shape, "x"))
      local function run(name, f, ...)
        same(K.by_loop[f](img, ...), f(cpu, "chw", ...), tag .. " " .. name)
      end
      -- windows: crops inside and across the border, pads in every mode
      run("crop", C.window, 1, 2, 4, 5, "constant", 0)
      run("crop outside", C.window, -2, -3, 9, 14, "constant", 0)
      run("crop beyond", C.window, 3, 4, 20, 3, "constant", {5, 6, 7})
      for _, mode in ipairs({"constant", "edge", "reflect", "symmetric"}) do
        run("pad " .. mode, C.window, -2, -4, shape[#shape - 1] + 5, shape[#shape] + 7, mode, 3)
      end
      -- resize up and down in each mode
      for _, size in ipairs({{4, 5}, {13, 17}, {2, 23}, {1, 1}}) do
        for _, interp in ipairs({"nearest", "nearest-exact", "bilinear"}) do
          run("resize " .. interp .. " " .. table.concat(size, "x"), C.resize, size[1], size[2], interp, true)
        end
        run("resize bilinear no antialias " .. table.concat(size, "x"), C.resize, size[1], size[2], "bilinear", false)
      end
      -- colour
      for _, f in ipairs({0, 0.5, 1.7}) do
        run("brightness " .. f, C.adjust, "brightness", f)
        run("contrast " .. f, C.adjust, "contrast", f)
        run("saturation " .. f, C.adjust, "saturation", f)
      end
      for _, f in ipairs({-0.5, -0.3, 0, 0.1, 0.45}) do run("hue " .. f, C.adjust, "hue", f) end
      run("grayscale 1", C.adjust, "grayscale", 1)
      run("grayscale 3", C.adjust, "grayscale", 3)
      -- point maps
      run("invert", C.point, "invert")
      run("autocontrast", C.point, "autocontrast")
      run("solarize", C.point, "solarize", dtype == torch.uint8 and 128 or 0.5)
      if dtype == torch.uint8 then
        for _, bits in ipairs({0, 3, 8}) do run("posterize " .. bits, C.point, "posterize", bits) end
      end
      -- filters
      for _, f in ipairs({0.3, 2.0}) do run("sharpness " .. f, C.sharpness, f) end
      same(K.gaussian_blur(img, 3, 5, 0.8, 1.3), C.gaussian_blur(cpu, 3, 5, 0.8, 1.3), tag .. " gaussian_blur")
      if dtype ~= torch.uint8 then
        local mean, std = {0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}
        if shape[#shape - 2] == 1 then mean, std = {0.5}, {0.25} end
        same(K.normalize_(img:clone(), mean, std), C.normalize_(cpu:clone(), mean, std), tag .. " normalize")
      end
    end
  end
  -- a constant plane (autocontrast keeps it), a 2-d image, an image too small to sharpen
  local flat = torch.full({3, 4, 5}, 0.25)
  same(K.point(flat:to(device), "autocontrast"), C.point(flat, "chw", "autocontrast"), device .. " autocontrast flat")
  local flat8 = torch.full({3, 4, 5}, 9, {dtype = torch.uint8})
  same(K.point(flat8:to(device), "autocontrast"), C.point(flat8, "chw", "autocontrast"), device .. " autocontrast flat uint8")
  local hw = torch.rand(6, 7)
  same(K.adjust(hw:to(device), "contrast", 0.6), C.adjust(hw, "chw", "contrast", 0.6), device .. " contrast 2-d")
  same(K.window(hw:to(device), -1, -1, 8, 9, "reflect", 0), C.window(hw, "chw", -1, -1, 8, 9, "reflect", 0), device .. " reflect 2-d")
  -- one constant column or row before the image only (its index -1 equals start + k - 1)
  same(K.window(hw:to(device), 0, -1, 6, 8, "constant", 5), C.window(hw, "chw", 0, -1, 6, 8, "constant", 5), device .. " pad left 1")
  same(K.window(hw:to(device), -1, 0, 7, 7, "constant", 5), C.window(hw, "chw", -1, 0, 7, 7, "constant", 5), device .. " pad top 1")
  local thin = torch.rand(3, 2, 9)
  same(K.sharpness(thin:to(device), 0.5), C.sharpness(thin, "chw", 0.5), device .. " sharpness 2 rows")
end

-- pixels exactly on x.5 after resizing a uint8 image: the C loop and the kernel both round half to even
local function ties(device)
  local img = torch.tensor({{{0, 1, 2, 3, 4, 5, 7, 9}}}, {dtype = torch.uint8})
  local want = C.resize(img, "chw", 1, 4, "bilinear", false) -- pair means: 0.5, 2.5, 4.5, 8
  same(K.resize(img:to(device), 1, 4, "bilinear", false), want, device .. " resize ties")
  T.eq(want:flatten():tolist(), {0, 2, 4, 8}, "resize ties: half to even")
end

T.test("kernels on CPU tensors match the C loops", function()
  compare_all("cpu")
  ties("cpu")
end)

T.test("kernels raise the C loops' errors", function()
  local img = torch.rand(3, 6, 6)
  local function same_error(name, f, ...)
    local args = table.pack(...)
    local want = T.errmsg(function() return f(img, "chw", table.unpack(args, 1, args.n)) end)
    T.check(want ~= nil, name .. ": the C loop raises")
    T.raises(function() return K.by_loop[f](img, table.unpack(args, 1, args.n)) end, want or "?", name)
  end
  same_error("brightness < 0", C.adjust, "brightness", -1)
  same_error("hue out of range", C.adjust, "hue", 0.7)
  same_error("grayscale channels", C.adjust, "grayscale", 2)
  same_error("negative crop", C.window, 0, 0, -1, 3, "constant", 0)
  same_error("resize to 0", C.resize, 0, 4, "bilinear", true)
  same_error("solarize threshold", C.point, "solarize", 2)
  same_error("posterize float", C.point, "posterize", 3)
  same_error("sharpness < 0", C.sharpness, -1)
  T.raises(function() return K.normalize_(img:clone(), {0.5, 0.5, 0.5}, {1, 0, 1}) end,
    T.errmsg(function() return C.normalize_(img:clone(), {0.5, 0.5, 0.5}, {1, 0, 1}) end))
  T.raises(function() return K.normalize_(img:clone(), {0.5, 0.5}, {1, 1}) end,
    T.errmsg(function() return C.normalize_(img:clone(), {0.5, 0.5}, {1, 1}) end))
  T.raises(function() return K.gaussian_blur(img, 13, 3, 1.0, 1.0) end, T.errmsg(function() return C.gaussian_blur(img, 13, 3, 1.0, 1.0) end))
  T.raises(function() return K.point(torch.rand(2, 5, 5), "invert") end,
    T.errmsg(function() return C.point(torch.rand(2, 5, 5), "chw", "invert") end))
  same_error("equalize float", C.point, "equalize")
  T.check(K.for_device(C.resize, img) == nil, "CPU tensors keep the C loops")
end)

-- the transforms on a device tensor give the CPU result, with the same random draws
local function transforms_on(device)
  local cases = {
    {"Normalize", function() return tv.Normalize({0.485, 0.456, 0.406}, {0.229, 0.224, 0.225}) end, torch.float32},
    {"Resize", function() return tv.Resize({10, 7}) end, torch.uint8},
    {"Resize nearest", function() return tv.Resize(9, {interpolation = "nearest"}) end, torch.float32},
    {"RandomResizedCrop", function() return tv.RandomResizedCrop(8) end, torch.uint8},
    {"ColorJitter", function() return tv.ColorJitter(0.4, 0.4, 0.4, 0.2) end, torch.uint8},
    {"ColorJitter float", function() return tv.ColorJitter(0.4, 0.4, 0.4, 0.2) end, torch.float32},
    {"RandomCrop padded", function() return tv.RandomCrop(12, {padding = 3, padding_mode = "reflect"}) end, torch.float32},
    {"CenterCrop", function() return tv.CenterCrop(20) end, torch.uint8},
    {"Grayscale", function() return tv.Grayscale(3) end, torch.float32},
  }
  KU.transforms_same(device, cases)
  local img = image({2, 3, 12, 12}, torch.uint8)
  KU.functional_same(device, img, {
    {"invert", function(x) return F.invert(x) end}, {"posterize", function(x) return F.posterize(x, 2) end},
    {"solarize", function(x) return F.solarize(x, 100) end}, {"autocontrast", function(x) return F.autocontrast(x) end},
    {"equalize", function(x) return F.equalize(x) end}, {"adjust_sharpness", function(x) return F.adjust_sharpness(x, 1.8) end},
    {"gaussian_blur", function(x) return F.gaussian_blur(x, {5, 3}, {1.1, 0.7}) end},
    {"resized_crop", function(x) return F.resized_crop(x, 2, 1, 8, 9, {5, 6}) end},
    {"pad symmetric", function(x) return F.pad(x, {1, 2, 3, 4}, 0, "symmetric") end},
    {"hflip", function(x) return F.hflip(x) end},
  })
end

T.test("transforms on CPU tensors", function() transforms_on("cpu") end)

if torch.cuda.is_available() then
  T.test("CUDA: kernels match the C loops", function()
    compare_all("cuda")
    ties("cuda")
  end)
  T.test("CUDA: transforms give the CPU result", function() transforms_on("cuda") end)
else
  T.skip("no CUDA device", 2)
end
