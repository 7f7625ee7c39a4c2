-- Writes image inputs and nnrepl's outputs for tests/parity/image_parity.py, which
-- recomputes each case with Pillow / torchvision (on the GPU machine) and compares.
-- Usage: nnrepl tests/parity/image_dump.lua OUTDIR
-- OUTDIR/manifest.txt: one case per line, `key=value` fields separated by tabs;
-- tensors are raw little-endian files OUTDIR/<name>.bin with dtype and shape in the line.
local out = assert(arg and arg[1], "usage: nnrepl tests/parity/image_dump.lua OUTDIR")
os.execute("mkdir -p '" .. out .. "'")
local tvio = require "tv_io"
local tv = require "tv_transforms"
local U = require "tv_utils"
local F = tv.functional
local Image = tvio.Image

torch.manual_seed(2024)
local manifest = assert(io.open(out .. "/manifest.txt", "w"))
local count = 0

local function flat(t)
  local r = {}
  local function walk(v)
    if type(v) == "table" then for _, x in ipairs(v) do walk(x) end else r[#r + 1] = v end
  end
  walk(t:tolist())
  return r
end

-- a tensor to OUTDIR/name.bin; returns "name:dtype:d0xd1x..."
local function save(name, t)
  t = t:contiguous()
  local dt = tostring(t.dtype):gsub("^torch%.", "")
  local f = assert(io.open(out .. "/" .. name .. ".bin", "wb"))
  local fmt = dt == "uint8" and "B" or dt == "float32" and "<f" or error("dtype " .. dt)
  local parts = {}
  for i, v in ipairs(flat(t)) do parts[i] = string.pack(fmt, v) end
  f:write(table.concat(parts))
  f:close()
  return name .. ":" .. dt .. ":" .. table.concat(t.shape:totable(), "x")
end

local function case(fields)
  count = count + 1
  local keys = {}
  for k in pairs(fields) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do
    local v = fields[k]
    parts[#parts + 1] = k .. "=" .. (math.type(v) == "float" and string.format("%.17g", v) or tostring(v))
  end
  manifest:write(table.concat(parts, "\t"), "\n")
end

local function u8(shape) return torch.randint(0, 256, shape, {dtype = torch.uint8}) end
local function smooth(h, w)
  local y = torch.arange(h):view(h, 1):to(torch.float32)
  local x = torch.arange(w):view(1, w):to(torch.float32)
  local rows = {}
  for c = 0, 2 do rows[c + 1] = ((y * (3 + c) + x * (5 - c)) % 200 + 20):to(torch.uint8) end
  return torch.stack(rows, 2) -- H x W x 3
end
local modes = {"L", "LA", "RGB", "RGBA"}

-- Pillow resize (every filter) on every mode, shrinking and enlarging
local sizes = {{37, 53, 17, 23}, {32, 32, 227, 227}, {20, 30, 20, 11}, {45, 31, 13, 31}, {8, 100, 33, 7}}
for si, s in ipairs(sizes) do
  for _, c in ipairs({1, 2, 3, 4}) do
    local img = u8({s[1], s[2], c})
    local iname = save("rs_in_" .. si .. "_" .. c, img)
    for _, interp in ipairs({"bilinear", "nearest", "bicubic", "box", "hamming", "lanczos"}) do
      local got = Image.fromarray(img):resize({s[4], s[3]}, Image[interp:upper()])
      case({op = "pil_resize", mode = modes[c], interp = interp, w = s[4], h = s[3], input = iname,
        output = save("rs_out_" .. si .. "_" .. c .. "_" .. interp, got:tensor())})
    end
  end
  -- tensors: float32 and uint8, antialias on and off
  local x = torch.rand(3, s[1], s[2])
  local xu = u8({3, s[1], s[2]})
  local xn, xun = save("rt_in_" .. si, x), save("rtu_in_" .. si, xu)
  for _, aa in ipairs({true, false}) do
    for _, interp in ipairs({"bilinear", "bicubic"}) do
      local tag = si .. "_" .. tostring(aa) .. "_" .. interp
      case({op = "tensor_resize", antialias = aa, interp = interp, h = s[3], w = s[4], input = xn,
        output = save("rt_out_" .. tag, F.resize(x, {s[3], s[4]}, interp, nil, aa))})
      case({op = "tensor_resize", antialias = aa, interp = interp, h = s[3], w = s[4], input = xun,
        output = save("rtu_out_" .. tag, F.resize(xu, {s[3], s[4]}, interp, nil, aa))})
    end
  end
end

-- colour: Pillow and tensors
local rgb = u8({24, 31, 3})
local rgbn = save("col_in", rgb)
local ft = torch.rand(3, 24, 31)
local ftn = save("colf_in", ft)
local ut = rgb:permute(2, 0, 1):contiguous()
local utn = save("colu_in", ut)
for _, op in ipairs({"brightness", "contrast", "saturation", "hue"}) do
  local factors = op == "hue" and {-0.5, -0.27, 0.0, 0.13, 0.5} or {0.0, 0.35, 1.0, 1.6}
  for k, f in ipairs(factors) do
    local fn = F["adjust_" .. op]
    case({op = "pil_adjust", adjust = op, factor = f, input = rgbn,
      output = save("col_pil_" .. op .. k, fn(Image.fromarray(rgb), f):tensor())})
    case({op = "tensor_adjust", adjust = op, factor = f, input = ftn, output = save("col_f_" .. op .. k, fn(ft, f))})
    case({op = "tensor_adjust", adjust = op, factor = f, input = utn, output = save("col_u_" .. op .. k, fn(ut, f))})
  end
end
case({op = "pil_grayscale", n = 3, input = rgbn, output = save("gray_pil", tv.Grayscale(3)(Image.fromarray(rgb)):tensor())})
case({op = "tensor_grayscale", n = 1, input = utn, output = save("gray_u", tv.Grayscale()(ut))})
case({op = "tensor_grayscale", n = 1, input = ftn, output = save("gray_f", tv.Grayscale()(ft))})

-- mode conversions, ToTensor, Normalize
local rgba = u8({9, 14, 4})
local rgban = save("cv_in", rgba)
for _, m in ipairs({"L", "LA", "RGB"}) do
  case({op = "convert", from = "RGBA", to = m, input = rgban, output = save("cv_" .. m, Image.fromarray(rgba):convert(m):tensor())})
end
case({op = "convert", from = "RGB", to = "L", input = rgbn, output = save("cv_rgb_L", Image.fromarray(rgb):convert("L"):tensor())})
case({op = "to_tensor", input = rgbn, output = save("tt", tv.ToTensor()(Image.fromarray(rgb)))})
local mean, std = "0.4948052,0.48568845,0.44682974", "0.24580306,0.24236229,0.2603115"
case({op = "normalize", mean = mean, std = std, input = ftn,
  output = save("norm", tv.Normalize({0.4948052, 0.48568845, 0.44682974}, {0.24580306, 0.24236229, 0.2603115})(ft))})

-- crops and pads
for _, cs in ipairs({{10, 10}, {24, 30}, {30, 40}, {7, 31}}) do
  local name = cs[1] .. "x" .. cs[2]
  case({op = "pil_center_crop", h = cs[1], w = cs[2], input = rgbn, output = save("cc_pil_" .. name, tv.CenterCrop(cs)(Image.fromarray(rgb)):tensor())})
  case({op = "tensor_center_crop", h = cs[1], w = cs[2], input = ftn, output = save("cc_t_" .. name, tv.CenterCrop(cs)(ft))})
end
for _, mode in ipairs({"constant", "edge", "reflect", "symmetric"}) do
  case({op = "pil_pad", padding = "3,1,2,4", mode = mode, fill = 7, input = rgbn,
    output = save("pad_pil_" .. mode, F.pad(Image.fromarray(rgb), {3, 1, 2, 4}, 7, mode):tensor())})
  case({op = "tensor_pad", padding = "3,1,2,4", mode = mode, fill = 7, input = utn,
    output = save("pad_t_" .. mode, F.pad(ut, {3, 1, 2, 4}, 7, mode))})
end

-- codecs: our PNG and JPEG files, decoded by us
for k, img in ipairs({smooth(40, 56), u8({33, 47, 3})}) do
  for _, q in ipairs({75, 95}) do
    local path = string.format("%s/jpeg_%d_%d.jpg", out, k, q)
    Image.fromarray(img):save(path, {quality = q})
    case({op = "jpeg", file = path:match("[^/]*$"), output = save("jpeg_dec_" .. k .. "_" .. q, Image.open(path):tensor()),
      gray = save("jpeg_gray_" .. k .. "_" .. q, tvio.read_image(path, "GRAY"))})
  end
end
local png = u8({13, 17, 4})
Image.fromarray(png):save(out .. "/rgba.png")
case({op = "png", file = "rgba.png", output = save("png_px", png)})

-- save_image / make_grid
local batch = torch.rand(5, 3, 9, 7)
U.save_image(batch, out .. "/grid.png", {nrow = 3, padding = 1})
case({op = "save_image", nrow = 3, padding = 1, input = save("grid_in", batch), file = "grid.png"})
U.save_image(batch * 4 - 2, out .. "/grid_norm.png", {normalize = true})
case({op = "save_image", nrow = 8, padding = 2, normalize = true, input = save("gridn_in", batch * 4 - 2), file = "grid_norm.png"})

-- augmentations (tv_augment): the deterministic functional ops on PIL-like images and tensors
local function csv(t)
  local parts = {}
  for k, v in ipairs(t) do parts[k] = type(v) == "table" and table.concat(v, ":") or string.format("%.17g", v) end
  return table.concat(parts, ",")
end
local aug_rgb, aug_l = u8({23, 29, 3}), u8({17, 19, 1})
local aug_rgbn, aug_ln = save("aug_rgb", aug_rgb), save("aug_l", aug_l)
local aug_u = aug_rgb:permute(2, 0, 1):contiguous()
local aug_f = torch.rand(3, 23, 29)
local aug_un, aug_fn = save("aug_u", aug_u), save("aug_f", aug_f)
local aug_count = 0
local function aug(fields, out_t)
  aug_count = aug_count + 1
  fields.output = save("aug_out_" .. aug_count, out_t)
  case(fields)
end
-- point ops and sharpness: PIL L and RGB, uint8 and float tensors
local point_args = {invert = {false}, posterize = {0, 3, 7}, solarize = {0, 100, 200}, autocontrast = {false}, equalize = {false}}
for _, op in ipairs({"invert", "posterize", "solarize", "autocontrast", "equalize"}) do
  for _, arg in ipairs(point_args[op]) do
    local a = arg ~= false and arg or nil
    for _, src in ipairs({{"pil", aug_rgbn, aug_rgb}, {"pil", aug_ln, aug_l}, {"tensor", aug_un, aug_u}, {"tensor", aug_fn, aug_f}}) do
      local float = src[3].dtype == torch.float32
      if not (float and (op == "posterize" or op == "equalize")) then
        local t = a
        if float and op == "solarize" then t = a / 255 end
        local img = src[1] == "pil" and Image.fromarray(src[3]) or src[3]
        local out = t == nil and F[op](img) or F[op](img, t)
        aug({op = "aug_point", fn = op, kind = src[1], arg = t or "none", input = src[2]}, src[1] == "pil" and out:tensor() or out)
      end
    end
  end
end
for _, f in ipairs({0.0, 0.5, 2.0}) do
  aug({op = "aug_sharpness", kind = "pil", factor = f, input = aug_rgbn}, F.adjust_sharpness(Image.fromarray(aug_rgb), f):tensor())
  aug({op = "aug_sharpness", kind = "tensor", factor = f, input = aug_un}, F.adjust_sharpness(aug_u, f))
  aug({op = "aug_sharpness", kind = "tensor", factor = f, input = aug_fn}, F.adjust_sharpness(aug_f, f))
end
-- gaussian blur
for _, b in ipairs({{3, 3, 1.0, 1.0}, {5, 3, 1.5, 0.7}, {9, 9, 2.5, 2.5}}) do
  aug({op = "aug_blur", kind = "pil", k = csv({b[1], b[2]}), sigma = csv({b[3], b[4]}), input = aug_rgbn},
    F.gaussian_blur(Image.fromarray(aug_rgb), {b[1], b[2]}, {b[3], b[4]}):tensor())
  aug({op = "aug_blur", kind = "tensor", k = csv({b[1], b[2]}), sigma = csv({b[3], b[4]}), input = aug_un},
    F.gaussian_blur(aug_u, {b[1], b[2]}, {b[3], b[4]}))
  aug({op = "aug_blur", kind = "tensor", k = csv({b[1], b[2]}), sigma = csv({b[3], b[4]}), input = aug_fn},
    F.gaussian_blur(aug_f, {b[1], b[2]}, {b[3], b[4]}))
end
-- rotate and affine: nearest and bilinear, with and without fill
local rotations = {{37, false, nil, nil}, {90, false, nil, nil}, {-23.5, true, nil, {10, 20, 30}}, {15, false, {4, 6}, {200, 0, 0}}}
for _, r in ipairs(rotations) do
  for _, interp in ipairs({"nearest", "bilinear"}) do
    local o = {interpolation = interp, expand = r[2], center = r[3], fill = r[4]}
    local fields = {op = "aug_rotate", angle = r[1], interp = interp, expand = r[2], center = r[3] and csv(r[3]) or "none",
      fill = r[4] and csv(r[4]) or "none"}
    for _, src in ipairs({{"pil", aug_rgbn, aug_rgb}, {"tensor", aug_un, aug_u}, {"tensor", aug_fn, aug_f}}) do
      local img = src[1] == "pil" and Image.fromarray(src[3]) or src[3]
      local fo = {interpolation = o.interpolation, expand = o.expand, center = o.center, fill = o.fill}
      if src[3].dtype == torch.float32 and o.fill then fo.fill = {o.fill[1] / 255, o.fill[2] / 255, o.fill[3] / 255} end
      local f2 = {}
      for k, v in pairs(fields) do f2[k] = v end
      f2.kind, f2.input, f2.fill = src[1], src[2], fo.fill and csv(fo.fill) or "none"
      local out = F.rotate(img, r[1], fo)
      aug(f2, src[1] == "pil" and out:tensor() or out)
    end
  end
end
local affines = {{12, {2, -3}, 1.1, {5, 0}}, {-40, {0, 0}, 0.8, {-7, 12}}, {0, {4, 1}, 1.0, {0, 0}}}
for _, a in ipairs(affines) do
  for _, interp in ipairs({"nearest", "bilinear"}) do
    for _, src in ipairs({{"pil", aug_rgbn, aug_rgb}, {"tensor", aug_un, aug_u}, {"tensor", aug_fn, aug_f}}) do
      for _, fill in ipairs({false, true}) do
        local img = src[1] == "pil" and Image.fromarray(src[3]) or src[3]
        local fv = fill and (src[3].dtype == torch.float32 and {0.5, 0.25, 1.0} or {128, 64, 255}) or nil
        local out = F.affine(img, a[1], a[2], a[3], a[4], interp, fv)
        aug({op = "aug_affine", kind = src[1], angle = a[1], translate = csv(a[2]), scale = a[3], shear = csv(a[4]), interp = interp,
          fill = fv and csv(fv) or "none", input = src[2]}, src[1] == "pil" and out:tensor() or out)
      end
    end
  end
end
-- perspective
local starts, ends = {{0, 0}, {28, 0}, {28, 22}, {0, 22}}, {{3, 1}, {25, 4}, {27, 20}, {1, 21}}
for _, interp in ipairs({"nearest", "bilinear"}) do
  for _, src in ipairs({{"pil", aug_rgbn, aug_rgb}, {"tensor", aug_un, aug_u}, {"tensor", aug_fn, aug_f}}) do
    local img = src[1] == "pil" and Image.fromarray(src[3]) or src[3]
    local out = F.perspective(img, starts, ends, interp)
    aug({op = "aug_perspective", kind = src[1], startpoints = csv(starts), endpoints = csv(ends), interp = interp, input = src[2]},
      src[1] == "pil" and out:tensor() or out)
  end
end
-- elastic with a fixed displacement, erase
local disp = (torch.rand(1, 23, 29, 2) * 2 - 1) * 0.1
local dispn = save("aug_disp", disp)
for _, interp in ipairs({"nearest", "bilinear"}) do
  aug({op = "aug_elastic", kind = "tensor", interp = interp, displacement = dispn, input = aug_fn}, F.elastic_transform(aug_f, disp, interp))
  aug({op = "aug_elastic", kind = "tensor", interp = interp, displacement = dispn, input = aug_un}, F.elastic_transform(aug_u, disp, interp))
end
local ev = torch.randn(3, 5, 7)
aug({op = "aug_erase", kind = "tensor", i = 4, j = 6, h = 5, w = 7, value = save("aug_erase_v", ev), input = aug_fn}, F.erase(aug_f, 4, 6, 5, 7, ev))

manifest:close()
print(string.format("wrote %d cases to %s", count, out))
