-- transforms.functional's augmentation ops: invert, posterize, solarize, autocontrast, equalize,
-- adjust_sharpness, gaussian_blur, erase, rotate, affine, perspective, elastic_transform.
--
-- PIL-like images follow Pillow (ImageOps' tables, ImageEnhance.Sharpness, Image.rotate and
-- Image.transform) as torchvision does through PIL; gaussian_blur and elastic_transform go through
-- a uint8 tensor, as torchvision's do. Tensor images (..., C, H, W), float or uint8, follow
-- torchvision's tensor functional; the pixel loops are in engine/image_point.c, image_filter.c and
-- image_warp.c. The functions take positional arguments; tv_functional_keywords gives them
-- torchvision's keywords, as F.rotate(img, 30, {interpolation = "bilinear", fill = {0, 0, 0}}).
local torch = require "torch"
local U = require "nn_util"
local C = require("tv_io")._C
local K = require "tv_warp_kernels" -- tv_tensor_kernels with the warps

return function(T, H)
  local F = T.functional
  local is_pil, hw, channels = H.is_pil, H.hw, H.channels

  -- Python's repr of a list
  local function pylist(t)
    local parts = {}
    for k, v in ipairs(t) do parts[k] = U.pystr(v) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  H.pylist = pylist

  local function check_image(fn, img)
    if not (is_pil(img) or torch.is_tensor(img)) then
      U.errorf("%s: img should be PIL Image or Tensor. Got %s", fn, U.typename(img))
    end
  end

  -- a C loop on either kind of image, its errors raised at the caller
  local function apply(img, f, ...) return U.call(H.apply, img, f, ...) end

  local function point(fn, op, img, arg)
    check_image(fn, img)
    return apply(img, C.point, op, arg)
  end

  function F.invert(img) return point("invert", "invert", img) end
  function F.autocontrast(img) return point("autocontrast", "autocontrast", img) end
  function F.equalize(img) return point("equalize", "equalize", img) end

  function F.posterize(img, bits)
    U.check_int("posterize", "bits", bits)
    if not (bits >= 0 and bits <= 8) then U.errorf("posterize: The number if bits should be between 0 and 8. Got %d", bits) end
    return point("posterize", "posterize", img, bits)
  end

  function F.solarize(img, threshold)
    if type(threshold) ~= "number" then U.errorf("solarize: threshold should be a number, got %s", U.typename(threshold)) end
    return point("solarize", "solarize", img, threshold)
  end

  function F.adjust_sharpness(img, sharpness_factor)
    check_image("adjust_sharpness", img)
    if type(sharpness_factor) ~= "number" then U.errorf("adjust_sharpness: sharpness_factor should be a number, got %s", U.typename(sharpness_factor)) end
    if sharpness_factor < 0 then U.errorf("adjust_sharpness: sharpness_factor (%s) is not non-negative.", U.pystr(sharpness_factor)) end
    if torch.is_tensor(img) and img:dim() >= 2 and (img:size(-1) <= 2 or img:size(-2) <= 2) then -- torchvision: img itself
      U.call(C.sharpness, img:narrow(-1, 0, 0), "chw", sharpness_factor) -- its checks
      return img
    end
    return apply(img, C.sharpness, sharpness_factor)
  end

  -- a PIL-like image's pixels as a uint8 C x H x W tensor, and back in its mode
  local function pil_chw(img) return img._data:permute(2, 0, 1) end
  local function chw_pil(t) return H.wrap(t:permute(1, 2, 0):contiguous()) end

  -- F.gaussian_blur(img, kernel_size, sigma=None): kernel_size (x, y), sigma (x, y)
  function F.gaussian_blur(img, kernel_size, sigma)
    local ks = kernel_size
    if math.type(ks) == "integer" then ks = {ks, ks}
    elseif type(ks) ~= "table" then U.errorf("gaussian_blur: kernel_size should be int or a sequence of integers. Got %s", U.typename(ks)) end
    if #ks ~= 2 then U.errorf("gaussian_blur: If kernel_size is a sequence its length should be 2. Got %d", #ks) end
    for _, k in ipairs(ks) do
      if math.type(k) ~= "integer" or k % 2 == 0 or k < 0 then
        U.errorf("gaussian_blur: kernel_size should have odd and positive integers. Got %s", pylist(ks))
      end
    end
    local s = sigma
    if s == nil then s = {ks[1] * 0.15 + 0.35, ks[2] * 0.15 + 0.35}
    elseif type(s) == "number" then s = {s + 0.0, s + 0.0}
    elseif type(s) ~= "table" then U.errorf("gaussian_blur: sigma should be either float or sequence of floats. Got %s", U.typename(s))
    elseif #s == 1 then s = {s[1], s[1]} end
    if #s ~= 2 then U.errorf("gaussian_blur: If sigma is a sequence, its length should be 2. Got %d", #s) end
    for _, v in ipairs(s) do
      if type(v) ~= "number" or v <= 0 then U.errorf("gaussian_blur: sigma should have positive values. Got %s", pylist(s)) end
    end
    check_image("gaussian_blur", img)
    if is_pil(img) then return chw_pil(U.call(C.gaussian_blur, pil_chw(img), ks[1], ks[2], s[1], s[2])) end
    return U.call(K.for_device(C.gaussian_blur, img) or C.gaussian_blur, img, ks[1], ks[2], s[1], s[2])
  end

  -- F.erase(img, i, j, h, w, v, inplace=False): tensors only; img[..., i:i+h, j:j+w] = v
  function F.erase(img, i, j, h, w, v, inplace)
    if not torch.is_tensor(img) then U.errorf("erase: img should be Tensor Image. Got %s", U.typename(img)) end
    if img:dim() < 2 then U.error("erase: Tensor is not a torch image.") end
    for _, a in ipairs({i, j, h, w}) do U.check_int("erase", "i, j, h and w", a) end
    if not inplace then img = img:clone() end
    img[string.format("..., %d:%d, %d:%d", i, i + h, j, j + w)] = v
    return img
  end

  ---------------------------------------------------------------------------
  -- geometry
  ---------------------------------------------------------------------------

  local interp_of = {nearest = "nearest", bilinear = "bilinear", bicubic = "bicubic", ["nearest-exact"] = "nearest-exact",
    box = "box", hamming = "hamming", lanczos = "lanczos", [0] = "nearest", [2] = "bilinear", [3] = "bicubic", [1] = "lanczos",
    [4] = "box", [5] = "hamming"}

  -- nearest or bilinear, as torchvision checks it for tensors
  local function warp_interp(fn, interpolation, img)
    local i = interp_of[interpolation]
    if i == nil then U.errorf("%s: Argument interpolation should be a InterpolationMode or a corresponding Pillow integer constant", fn) end
    if i ~= "nearest" and i ~= "bilinear" then
      if torch.is_tensor(img) then U.errorf("%s: Interpolation mode '%s' is unsupported with Tensor input", fn, i) end
      U.errorf("%s: interpolation %s is not supported for PIL-like images here (nearest and bilinear are)", fn, i)
    end
    return i
  end
  H.warp_interp = warp_interp

  -- torchvision's _get_inverse_affine_matrix: output -> input coordinates about center
  local function inverse_affine(center, angle, translate, scale, shear)
    local rot, sx, sy = math.rad(angle), math.rad(shear[1]), math.rad(shear[2])
    local cx, cy, tx, ty = center[1], center[2], translate[1], translate[2]
    local a = math.cos(rot - sy) / math.cos(sy)
    local b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    local c = math.sin(rot - sy) / math.cos(sy)
    local d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    local m = {d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0}
    m[3] = m[3] + m[1] * (-cx - tx) + m[2] * (-cy - ty)
    m[6] = m[6] + m[4] * (-cx - tx) + m[5] * (-cy - ty)
    m[3], m[6] = m[3] + cx, m[6] + cy
    return m
  end
  F._get_inverse_affine_matrix = inverse_affine

  -- _parse_fill: one integer per band for Pillow's fillcolor
  local function pil_fill(fn, fill, img)
    local n = channels(img)
    if fill == nil then fill = 0 end
    if type(fill) == "number" then fill = {fill} end
    if #fill == 1 then
      local f = fill[1]
      fill = {}
      for k = 1, n do fill[k] = f end
    elseif #fill ~= n then
      U.errorf("%s: The number of elements in 'fill' does not match the number of channels of the image (%d != %d)", fn, #fill, n)
    end
    local out = {}
    for k, v in ipairs(fill) do out[k] = v < 0 and math.ceil(v) or math.floor(v) end
    return out
  end

  local function check_center(fn, center)
    if center ~= nil and type(center) ~= "table" then U.errorf("%s: Argument center should be a sequence", fn) end
  end

  local function round15(x) return tonumber(string.format("%.15f", x)) end

  -- Pillow's Image.rotate(angle, resample, expand, center, fillcolor=fill)
  local function pil_rotate(img, angle, interp, expand, center, fill)
    angle = angle % 360.0
    if center == nil then
      if angle == 0 then return img:copy() end
      if angle == 180 then return img:transpose(3) end
      if (angle == 90 or angle == 270) and (expand or img.width == img.height) then return img:transpose(angle == 90 and 2 or 4) end
    end
    local w, h = img.width, img.height
    center = center or {w / 2, h / 2}
    local a = -math.rad(angle)
    local m = {round15(math.cos(a)), round15(math.sin(a)), 0.0, round15(-math.sin(a)), round15(math.cos(a)), 0.0}
    local function map(x, y) return m[1] * x + m[2] * y + m[3], m[4] * x + m[5] * y + m[6] end
    m[3], m[6] = map(-center[1], -center[2])
    m[3], m[6] = m[3] + center[1], m[6] + center[2]
    if expand then
      local xs, ys = {}, {}
      for k, p in ipairs({{0, 0}, {w, 0}, {w, h}, {0, h}}) do xs[k], ys[k] = map(p[1], p[2]) end
      local nw = math.ceil(math.max(table.unpack(xs))) - math.floor(math.min(table.unpack(xs)))
      local nh = math.ceil(math.max(table.unpack(ys))) - math.floor(math.min(table.unpack(ys)))
      m[3], m[6] = map(-(nw - w) / 2.0, -(nh - h) / 2.0)
      w, h = nw, nh
    end
    return H.wrap(U.call(C.warp, img._data, "hwc", h, w, "affine", m, interp, fill))
  end

  -- torchvision's _compute_affine_output_size: w, h. In float32 as torch computes it, each
  -- product and sum of its small matmul rounded on its own (no fused multiply-add: a corner that
  -- lands on a whole pixel then stays on it, and floor / ceil give torchvision's size)
  local function affine_output_size(m, w, h)
    local f32 = function(v) return torch.tensor(v, {dtype = torch.float32}) end
    local hw, hh = 0.5 * w, 0.5 * h
    local px, py, mt = f32({-hw, -hw, hw, hw}), f32({-hh, hh, hh, -hh}), f32(m)
    local x = px * mt[0] + py * mt[1] + mt[2]
    local y = px * mt[3] + py * mt[4] + mt[5]
    local inv, tol = f32(1.0 / 1e-4), f32(1e-4)
    local function snap(v, half) return ((v + f32(half)) * inv):trunc() * tol end
    local ow = snap(x:amax(), hw):ceil() - snap(x:amin(), hw):floor()
    local oh = snap(y:amax(), hh):ceil() - snap(y:amin(), hh):floor()
    return math.floor(ow:item()), math.floor(oh:item())
  end
  F._compute_affine_output_size = affine_output_size

  -- F.rotate(img, angle, interpolation=NEAREST, expand=False, center=None, fill=None): counter-clockwise degrees
  function F.rotate(img, angle, interpolation, expand, center, fill)
    check_image("rotate", img)
    local interp = warp_interp("rotate", interpolation, img)
    if type(angle) ~= "number" then U.error("rotate: Argument angle should be int or float") end
    check_center("rotate", center)
    if is_pil(img) then return pil_rotate(img, angle, interp, expand, center, pil_fill("rotate", fill, img)) end
    local h, w = hw(img)
    local center_f = {0.0, 0.0}
    if center then center_f = {center[1] - w * 0.5, center[2] - h * 0.5} end
    local m = inverse_affine(center_f, -angle, {0.0, 0.0}, 1.0, {0.0, 0.0})
    local ow, oh = w, h
    if expand then ow, oh = affine_output_size(m, w, h) end
    return apply(img, C.warp, oh, ow, "affine", m, interp, fill)
  end

  -- F.affine(img, angle, translate, scale, shear, interpolation=NEAREST, fill=None, center=None)
  function F.affine(img, angle, translate, scale, shear, interpolation, fill, center)
    check_image("affine", img)
    local interp = warp_interp("affine", interpolation, img)
    if type(angle) ~= "number" then U.error("affine: Argument angle should be int or float") end
    if type(translate) ~= "table" then U.error("affine: Argument translate should be a sequence") end
    if #translate ~= 2 then U.error("affine: Argument translate should be a sequence of length 2") end
    if type(scale) ~= "number" then U.errorf("affine: Argument scale should be a number, got %s", U.typename(scale)) end
    if scale <= 0.0 then U.error("affine: Argument scale should be positive") end
    if type(shear) ~= "number" and type(shear) ~= "table" then U.error("affine: Shear should be either a single value or a sequence of two values") end
    if type(shear) == "number" then shear = {shear, 0.0} end
    if #shear == 1 then shear = {shear[1], shear[1]} end
    if #shear ~= 2 then U.errorf("affine: Shear should be a sequence containing two values. Got %s", pylist(shear)) end
    check_center("affine", center)
    local h, w = hw(img)
    if is_pil(img) then
      local m = inverse_affine(center or {w * 0.5, h * 0.5}, angle, translate, scale, shear)
      return H.wrap(U.call(C.warp, img._data, "hwc", h, w, "affine", m, interp, pil_fill("affine", fill, img)))
    end
    local center_f = {0.0, 0.0}
    if center then center_f = {center[1] - w * 0.5, center[2] - h * 0.5} end
    local m = inverse_affine(center_f, angle, {translate[1] + 0.0, translate[2] + 0.0}, scale, shear)
    return apply(img, C.warp, h, w, "affine", m, interp, fill)
  end

  -- the 8 coefficients mapping endpoints to startpoints (float32, as torchvision rounds its lstsq solution)
  local function perspective_coeffs(startpoints, endpoints)
    if type(startpoints) ~= "table" or type(endpoints) ~= "table" or #startpoints ~= 4 or #endpoints ~= 4 then
      U.errorf("perspective: Please provide exactly four corners, got %s startpoints and %s endpoints.",
        type(startpoints) == "table" and #startpoints or "no", type(endpoints) == "table" and #endpoints or "no")
    end
    local A, b = {}, {}
    for k = 1, 4 do
      local p1, p2 = endpoints[k], startpoints[k]
      A[2 * k - 1] = {p1[1], p1[2], 1, 0, 0, 0, -p2[1] * p1[1], -p2[1] * p1[2]}
      A[2 * k] = {0, 0, 0, p1[1], p1[2], 1, -p2[2] * p1[1], -p2[2] * p1[2]}
      b[2 * k - 1], b[2 * k] = p2[1], p2[2]
    end
    for col = 1, 8 do -- Gaussian elimination with partial pivoting, in double
      local piv = col
      for r = col + 1, 8 do if math.abs(A[r][col]) > math.abs(A[piv][col]) then piv = r end end
      if A[piv][col] == 0 then U.error("perspective: the corners do not define a perspective transform") end
      A[col], A[piv], b[col], b[piv] = A[piv], A[col], b[piv], b[col]
      for r = col + 1, 8 do
        local f = A[r][col] / A[col][col]
        for c = col, 8 do A[r][c] = A[r][c] - f * A[col][c] end
        b[r] = b[r] - f * b[col]
      end
    end
    local x = {}
    for r = 8, 1, -1 do
      local s = b[r]
      for c = r + 1, 8 do s = s - A[r][c] * x[c] end
      x[r] = s / A[r][r]
    end
    for k = 1, 8 do x[k] = string.unpack("<f", string.pack("<f", x[k])) end
    return x
  end
  F._get_perspective_coeffs = perspective_coeffs

  -- F.perspective(img, startpoints, endpoints, interpolation=BILINEAR, fill=None): corners as {x, y}
  function F.perspective(img, startpoints, endpoints, interpolation, fill)
    check_image("perspective", img)
    local interp = warp_interp("perspective", interpolation, img)
    local c = perspective_coeffs(startpoints, endpoints)
    local h, w = hw(img)
    if is_pil(img) then
      return H.wrap(U.call(C.warp, img._data, "hwc", h, w, "perspective", c, interp, pil_fill("perspective", fill, img)))
    end
    return apply(img, C.warp, h, w, "perspective", c, interp, fill)
  end

  -- F.elastic_transform(img, displacement [1, H, W, 2], interpolation=BILINEAR, fill=None)
  function F.elastic_transform(img, displacement, interpolation, fill)
    local d = displacement
    if not torch.is_tensor(d) then U.error("elastic_transform: Argument displacement should be a Tensor") end
    check_image("elastic_transform", img)
    local interp = warp_interp("elastic_transform", interpolation, img)
    local t = is_pil(img) and pil_chw(img) or img
    local h, w = hw(img)
    local shape = d.shape:totable()
    if #shape ~= 4 or shape[1] ~= 1 or shape[2] ~= h or shape[3] ~= w or shape[4] ~= 2 then
      U.errorf("elastic_transform: Argument displacement shape should be (1, %d, %d, 2), but given %s", h, w, tostring(d.shape))
    end
    local dev = {device = t.device}
    local gx = torch.linspace((-w + 1) / w, (w - 1) / w, w, dev):view(1, w):expand(h, w)
    local gy = torch.linspace((-h + 1) / h, (h - 1) / h, h, dev):view(h, 1):expand(h, w)
    local grid = torch.stack({gx, gy}, -1):unsqueeze(0) + d:to(t.device)
    local out = U.call(K.for_device(C.grid_sample, t) or C.grid_sample, t, grid, interp, fill)
    if is_pil(img) then return chw_pil(out) end
    return out
  end
end
