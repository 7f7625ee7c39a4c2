-- tv_warp_kernels (torchvision's warps and equalize as tensor ops, for images off the CPU) against
-- the C loops they stand for: the same inputs through both give the same values (uint8 and float
-- images alike; float within 1e-5), the same errors; hand-worked cases for rotate and equalize;
-- the CUDA section runs the kernels and the transforms on "cuda" against the CPU.
local T = ...
local K = require "tv_warp_kernels"
local C = require("tv_io")._C
local tv = require("torchvision").transforms
local F = tv.functional
local KU = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "tv_kernel_util.lua")(T)
local image, same = KU.image, KU.same

torch.manual_seed(11)

local shapes = {{3, 9, 11}, {1, 6, 7}, {2, 3, 8, 10}, {5, 8}, {2, 1, 1, 7, 6}}

-- inverse affine matrices (torchvision's, about the centre): angle, translate, scale, shear
local affines = {
  {0, {0, 0}, 1, {0, 0}}, {30, {0, 0}, 1, {0, 0}}, {90, {0, 0}, 1, {0, 0}}, {180, {1, 0}, 1, {0, 0}},
  {-45, {2, -1}, 0.8, {10, 0}}, {137.5, {-1.5, 0.5}, 1.3, {-5, 12}}, {0, {0, 0}, 0.5, {0, 0}},
}
-- perspective corners (startpoints -> endpoints) on a 12 x 10 frame
local corners = {
  {{{0, 0}, {9, 0}, {9, 11}, {0, 11}}, {{1, 2}, {8, 0}, {9, 10}, {0, 9}}},
  {{{0, 0}, {9, 0}, {9, 11}, {0, 11}}, {{3, 1}, {7, 3}, {9, 11}, {-2, 8}}},
}

local function fills(nchan, dtype)
  local big = dtype == torch.uint8 and 200 or 0.75
  local list = {}
  for c = 1, nchan do list[c] = dtype == torch.uint8 and 40 * c or 0.2 * c end
  local out = {{"no fill", nil}, {"fill 0", 0}, {"fill " .. big, big}}
  if nchan > 1 then out[#out + 1] = {"fill per channel", list} end
  return out
end

-- every warp and equalize on img (on device) against the C loop on img:cpu()
local function compare_all(device)
  for _, dtype in ipairs({torch.uint8, torch.float32, torch.float64}) do
    for _, shape in ipairs(shapes) do
      local cpu = image(shape, dtype)
      local img = cpu:to(device)
      local H, W = shape[#shape - 1], shape[#shape]
      local nchan = #shape >= 3 and shape[#shape - 2] or 1
      local tag = string.format("%s %s %s", device, tostring(dtype), table.concat(shape, "x"))
      for _, interp in ipairs({"nearest", "bilinear"}) do
        for _, fl in ipairs(fills(nchan, dtype)) do
          local function run(name, ...)
            same(K.warp(img, ...), C.warp(cpu, "chw", ...), string.format("%s %s %s %s", tag, interp, fl[1], name))
          end
          for _, a in ipairs(affines) do
            local m = F._get_inverse_affine_matrix({0, 0}, a[1], a[2], a[3], a[4])
            run("affine " .. a[1], H, W, "affine", m, interp, fl[2])
          end
          -- an expanded output and a centre off the middle
          run("affine expanded", H + 3, W + 5, "affine", F._get_inverse_affine_matrix({0, 0}, -30, {0, 0}, 1, {0, 0}), interp, fl[2])
          run("affine centred", H, W, "affine", F._get_inverse_affine_matrix({1.5, -2}, 60, {0, 0}, 1, {0, 0}), interp, fl[2])
          for k, c in ipairs(corners) do
            run("perspective " .. k, H, W, "perspective", F._get_perspective_coeffs(c[1], c[2]), interp, fl[2])
          end
          for _, gshape in ipairs({{1, 5, 9, 2}, {7, 4, 2}}) do
            local grid = torch.rand(gshape, {dtype = torch.float64}) * 2.6 - 1.3
            for _, g in ipairs({grid, grid:to(torch.float32)}) do
              same(K.grid_sample(img, g:to(device), interp, fl[2]), C.grid_sample(cpu, g, interp, fl[2]),
                string.format("%s %s %s grid %s %s", tag, interp, fl[1], table.concat(gshape, "x"), tostring(g.dtype)))
            end
          end
        end
      end
      if dtype == torch.uint8 and #shape >= 3 then
        same(K.point(img, "equalize"), C.point(cpu, "chw", "equalize"), tag .. " equalize")
      end
    end
  end
  -- grids landing on pixel centres and half-way between them (rounding ties), and far outside
  local img = image({3, 6, 8}, torch.uint8)
  local xs = torch.arange(-9, 10, {dtype = torch.float64}) / 8
  local ys = torch.arange(-7, 8, {dtype = torch.float64}) / 6
  local grid = torch.stack({xs:view(1, -1):expand(15, 19), ys:view(-1, 1):expand(15, 19)}, -1)
  grid[0][0][0] = 1e30
  grid[1][1][1] = -1e30
  for _, interp in ipairs({"nearest", "bilinear"}) do
    for _, dtype in ipairs({torch.uint8, torch.float32}) do
      local x = img:to(dtype)
      same(K.grid_sample(x:to(device), grid:to(device), interp, 9), C.grid_sample(x, grid, interp, 9), device .. " ties " .. interp)
    end
  end
  -- equalize: constant planes, two values, a narrow range
  local eq = torch.zeros({4, 1, 5, 6}, {dtype = torch.uint8})
  eq[0]:fill_(77)
  eq[1]:copy_(torch.randint(0, 2, {1, 5, 6}) * 200)
  eq[2]:copy_(torch.randint(100, 104, {1, 5, 6}))
  eq[3]:copy_(torch.randint(0, 256, {1, 5, 6}))
  same(K.point(eq:to(device), "equalize"), C.point(eq, "chw", "equalize"), device .. " equalize special planes")
  -- empty outputs and empty images
  local e = image({3, 5, 4}, torch.float32)
  same(K.warp(e:to(device), 0, 4, "affine", {1, 0, 0, 0, 1, 0}, "bilinear", 1), C.warp(e, "chw", 0, 4, "affine", {1, 0, 0, 0, 1, 0}, "bilinear", 1), device .. " 0-row output")
  local z = torch.zeros({3, 0, 4})
  for _, interp in ipairs({"nearest", "bilinear"}) do
    same(K.warp(z:to(device), 2, 3, "affine", {1, 0, 0, 0, 1, 0}, interp, {1, 2, 3}),
      C.warp(z, "chw", 2, 3, "affine", {1, 0, 0, 0, 1, 0}, interp, {1, 2, 3}), device .. " empty image " .. interp)
  end
  local zb = torch.zeros({0, 3, 4, 4})
  same(K.warp(zb:to(device), 4, 4, "affine", {1, 0, 0, 0, 1, 0}, "nearest", 2), C.warp(zb, "chw", 4, 4, "affine", {1, 0, 0, 0, 1, 0}, "nearest", 2), device .. " empty batch")
  -- fill given as a CPU tensor and as numeric strings, coefficients as a tensor
  local t3 = image({3, 6, 5}, torch.float32)
  local m = torch.tensor(F._get_inverse_affine_matrix({0, 0}, 20, {0, 0}, 1, {0, 0}), {dtype = torch.float64})
  same(K.warp(t3:to(device), 6, 5, "affine", m, "bilinear", torch.tensor({0.1, 0.2, 0.3})),
    C.warp(t3, "chw", 6, 5, "affine", m, "bilinear", torch.tensor({0.1, 0.2, 0.3})), device .. " tensor fill")
  same(K.warp(t3:to(device), 6, 5, "affine", m, "nearest", {"0.5"}), C.warp(t3, "chw", 6, 5, "affine", m, "nearest", {"0.5"}), device .. " string fill")
end

T.test("warp and equalize kernels on CPU tensors match the C loops", function() compare_all("cpu") end)

T.test("hand-worked cases", function()
  -- rotating a square image by 90 degrees (counter-clockwise) with nearest moves pixels exactly
  local img = torch.arange(16, {dtype = torch.uint8}):view(1, 4, 4)
  local m = F._get_inverse_affine_matrix({0, 0}, -90, {0, 0}, 1, {0, 0})
  T.eq(K.warp(img, 4, 4, "affine", m, "nearest"):tolist(), torch.rot90(img, 1, {1, 2}):tolist(), "rotate 90 nearest")
  -- the identity keeps every value up to float32 rounding of the grid (exactly with nearest)
  local f = torch.rand(2, 5, 7)
  T.check((K.warp(f, 5, 7, "affine", {1, 0, 0, 0, 1, 0}, "bilinear") - f):abs():max():item() < 1e-6, "identity bilinear")
  T.eq(K.warp(f, 5, 7, "affine", {1, 0, 0, 0, 1, 0}, "nearest"):tolist(), f:tolist(), "identity nearest")
  -- a shift by one column: the first column takes the fill, per channel
  local shifted = K.warp(f, 5, 7, "affine", {1, 0, -1, 0, 1, 0}, "nearest", {0.25, 0.5})
  T.eq(shifted:narrow(2, 1, 6):tolist(), f:narrow(2, 0, 6):tolist(), "shift right")
  T.eq(shifted:select(2, 0):tolist(), {{0.25, 0.25, 0.25, 0.25, 0.25}, {0.5, 0.5, 0.5, 0.5, 0.5}}, "shift fill")
  -- equalize of a plane with values 0 (x2), 1 (x3), 2 (x1): step = (6 - 1) // 255 = 0, kept
  local small = torch.tensor({{{0, 0, 1, 1, 1, 2}}}, {dtype = torch.uint8})
  T.eq(K.point(small, "equalize"):tolist(), small:tolist(), "equalize step 0")
  -- 510 pixels of 10, 255 of 20, 255 of 30: step = (1020 - 255) // 255 = 3;
  -- lut[10] = (1 + 0) // 3 = 0, lut[20] = (1 + 510) // 3 = 170, lut[30] = (1 + 765) // 3 = 255
  local vals = torch.cat({torch.full({510}, 10), torch.full({255}, 20), torch.full({255}, 30)}):to(torch.uint8):view(1, 30, 34)
  local eq = K.point(vals, "equalize"):flatten()
  T.eq({eq[0]:item(), eq[600]:item(), eq[1000]:item()}, {0, 170, 255}, "equalize by hand")
end)

T.test("kernels raise the C loops' errors", function()
  local img = torch.rand(3, 6, 6)
  local id = {1, 0, 0, 0, 1, 0}
  local function same_error(name, x, ...)
    local args = table.pack(...)
    local want = T.errmsg(function() return C.warp(x, "chw", table.unpack(args, 1, args.n)) end)
    T.check(want ~= nil, name .. ": the C loop raises")
    T.raises(function() return K.warp(x, table.unpack(args, 1, args.n)) end, want or "?", name)
  end
  same_error("negative size", img, -1, 4, "affine", id, "nearest")
  same_error("fill count", img, 6, 6, "affine", id, "nearest", {1, 2})
  same_error("fill 2-d", torch.rand(6, 6), 6, 6, "affine", id, "bilinear", {1, 2})
  same_error("bad kind", img, 6, 6, "shear", id, "nearest")
  same_error("coefficient count", img, 6, 6, "perspective", id, "nearest")
  same_error("bad interpolation", img, 6, 6, "affine", id, "bicubic")
  same_error("int image", torch.zeros({3, 6, 6}, {dtype = torch.int32}), 6, 6, "affine", id, "nearest")
  same_error("1-d image", torch.rand(6), 6, 6, "affine", id, "nearest")
  same_error("fill not numbers", img, 6, 6, "affine", id, "nearest", {"a"})
  local function grid_error(name, x, grid, interp, fill)
    local want = T.errmsg(function() return C.grid_sample(x, grid, interp, fill) end)
    T.check(want ~= nil, name .. ": the C loop raises")
    T.raises(function() return K.grid_sample(x, grid, interp, fill) end, want or "?", name)
  end
  grid_error("grid rank", img, torch.rand(2, 4, 5, 2), "bilinear")
  grid_error("grid last dim", img, torch.rand(1, 4, 5, 3), "bilinear")
  grid_error("grid dtype", img, torch.zeros({1, 4, 5, 2}, {dtype = torch.int64}), "bilinear")
  grid_error("grid fill count", img, torch.rand(1, 4, 5, 2), "nearest", {1, 2})
  grid_error("grid 1-d image", torch.rand(5), torch.rand(1, 4, 5, 2), "nearest")
  for _, x in ipairs({torch.rand(3, 5, 5), torch.zeros({2, 5, 5}, {dtype = torch.uint8})}) do
    T.raises(function() return K.point(x, "equalize") end, T.errmsg(function() return C.point(x, "chw", "equalize") end))
  end
  T.check(K.by_loop[C.warp] == K.warp and K.by_loop[C.grid_sample] == K.grid_sample, "registered in by_loop")
  T.check(K.for_device(C.warp, img) == nil, "CPU tensors keep the C loops")
end)

-- the transforms on a device tensor give the CPU result, with the same random draws
local function transforms_on(device)
  local cases = {
    {"RandomRotation", function() return tv.RandomRotation(40) end, torch.uint8},
    {"RandomRotation bilinear expand", function() return tv.RandomRotation(70, {interpolation = "bilinear", expand = true, fill = {10, 20, 30}}) end, torch.uint8},
    {"RandomAffine", function() return tv.RandomAffine(25, {translate = {0.1, 0.2}, scale = {0.8, 1.2}, shear = 8}) end, torch.float32},
    {"RandomAffine bilinear", function() return tv.RandomAffine(25, {scale = {0.7, 1.1}, interpolation = "bilinear", fill = 0.5}) end, torch.float64},
    {"RandomPerspective", function() return tv.RandomPerspective(0.5, 1.0) end, torch.uint8},
    {"RandomPerspective float", function() return tv.RandomPerspective(0.4, 1.0, {fill = 0.3}) end, torch.float32},
    {"ElasticTransform", function() return tv.ElasticTransform(30.0, 2.0) end, torch.float32},
    {"ElasticTransform nearest", function() return tv.ElasticTransform(20.0, 1.5, {interpolation = "nearest", fill = 7}) end, torch.uint8},
    {"RandomEqualize", function() return tv.RandomEqualize(1.0) end, torch.uint8},
  }
  KU.transforms_same(device, cases)
  local img = image({2, 3, 12, 12}, torch.uint8)
  local d = torch.rand(1, 12, 12, 2) * 0.2 - 0.1
  KU.functional_same(device, img, {
    {"rotate", function(x) return F.rotate(x, 33, {interpolation = "bilinear", fill = {1, 2, 3}}) end},
    {"rotate expand", function(x) return F.rotate(x, 120, {expand = true, center = {3, 4}}) end},
    {"affine", function(x) return F.affine(x, -15, {2, 1}, 0.9, {5, 3}) end},
    {"perspective", function(x) return F.perspective(x, {{0, 0}, {11, 0}, {11, 11}, {0, 11}}, {{1, 2}, {10, 0}, {11, 10}, {0, 9}}) end},
    {"elastic_transform", function(x) return F.elastic_transform(x, d:to(x.device)) end},
    {"elastic_transform CPU displacement", function(x) return F.elastic_transform(x, d, {fill = 5}) end},
    {"equalize", function(x) return F.equalize(x) end},
  })
end

T.test("transforms on CPU tensors", function() transforms_on("cpu") end)

if torch.cuda.is_available() then
  T.test("CUDA: warp and equalize kernels match the C loops", function()
    compare_all("cuda")
    local img = torch.rand(3, 5, 5):cuda()
    T.check(K.for_device(C.warp, img) == K.warp and K.for_device(C.grid_sample, img) == K.grid_sample, "CUDA images take the kernels")
  end)
  T.test("CUDA: transforms give the CPU result", function() transforms_on("cuda") end)
else
  T.skip("no CUDA device", 2)
end
