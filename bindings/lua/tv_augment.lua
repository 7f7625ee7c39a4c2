-- torchvision.transforms' augmentation classes: GaussianBlur, RandomErasing, RandomRotation,
-- RandomAffine, RandomPerspective, ElasticTransform, RandomInvert, RandomPosterize,
-- RandomSolarize, RandomAdjustSharpness, RandomAutocontrast, RandomEqualize, with torchvision's
-- arguments, checks, parameter draws (torch.rand / randint / uniform_ under torch.manual_seed, in
-- torchvision's order) and reprs. Their functional forms are in tv_augment_functional.
local torch = require "torch"
local U = require "nn_util"

return function(T, H)
  require("tv_augment_functional")(T, H)
  local F = T.functional
  local class, is_pil, channels, hw, pystr = H.class, H.is_pil, H.channels, H.hw, U.pystr

  local function uniform(a, b) return torch.empty(1):uniform_(a, b):item() end

  -- torchvision's _check_sequence_input / _setup_angle
  local function check_sequence(cls, name, x, sizes)
    local msg = table.concat(sizes, " or ")
    if type(x) ~= "table" then U.errorf("%s: %s should be a sequence of length %s.", cls, name, msg) end
    for _, n in ipairs(sizes) do if #x == n then return end end
    U.errorf("%s: %s should be a sequence of length %s.", cls, name, msg)
  end
  local function setup_angle(cls, x, name, sizes)
    if type(x) == "number" then
      if x < 0 then U.errorf("%s: If %s is a single number, it must be positive.", cls, name) end
      x = {-x, x}
    else
      check_sequence(cls, name, x, sizes)
    end
    local out = {}
    for k, v in ipairs(x) do out[k] = v + 0.0 end
    return out
  end

  local function check_fill(cls, fill)
    if fill == nil then return 0 end
    if type(fill) ~= "number" and type(fill) ~= "table" then U.errorf("%s: Fill should be either a sequence or a number.", cls) end
    return fill
  end

  -- a transform's fill for this image: tensors take a list of floats per channel
  local function fill_for(fill, img)
    if is_pil(img) then return fill end
    local out = {}
    if type(fill) == "number" then
      for k = 1, channels(img) do out[k] = fill + 0.0 end
    else
      for k, v in ipairs(fill) do out[k] = v + 0.0 end
    end
    return out
  end
  H.fill_for = fill_for

  local function interp_name(i) return "InterpolationMode." .. tostring(i):upper():gsub("-", "_") end
  H.interp_name = interp_name

  -- the p-gated colour ops
  local function random_op(name, params, defaults, check, apply, repr)
    local cls = class(name, params, defaults, function(self, a)
      for k, v in pairs(a) do self[k] = v end
      if check then check(self) end
    end)
    function cls:forward(img)
      if torch.rand(1):item() < self.p then return apply(self, img) end
      return img
    end
    function cls:__repr() return name .. "(" .. repr(self) .. ")" end
    return cls
  end
  local function p_only(self) return "p=" .. pystr(self.p) end
  random_op("RandomInvert", {"p"}, {p = 0.5}, nil, function(_, img) return F.invert(img) end, p_only)
  random_op("RandomAutocontrast", {"p"}, {p = 0.5}, nil, function(_, img) return F.autocontrast(img) end, p_only)
  random_op("RandomEqualize", {"p"}, {p = 0.5}, nil, function(_, img) return F.equalize(img) end, p_only)
  random_op("RandomPosterize", {"bits", "p"}, {p = 0.5}, function(self) U.check_int("RandomPosterize", "bits", self.bits) end,
    function(self, img) return F.posterize(img, self.bits) end,
    function(self) return "bits=" .. pystr(self.bits) .. ",p=" .. pystr(self.p) end)
  random_op("RandomSolarize", {"threshold", "p"}, {p = 0.5}, function(self)
    if type(self.threshold) ~= "number" then U.error("RandomSolarize: threshold should be a number") end
  end, function(self, img) return F.solarize(img, self.threshold) end,
    function(self) return "threshold=" .. pystr(self.threshold) .. ",p=" .. pystr(self.p) end)
  random_op("RandomAdjustSharpness", {"sharpness_factor", "p"}, {p = 0.5}, function(self)
    if type(self.sharpness_factor) ~= "number" then U.error("RandomAdjustSharpness: sharpness_factor should be a number") end
  end, function(self, img) return F.adjust_sharpness(img, self.sharpness_factor) end,
    function(self) return "sharpness_factor=" .. pystr(self.sharpness_factor) .. ",p=" .. pystr(self.p) end)

  ---------------------------------------------------------------------------

  local GaussianBlur = class("GaussianBlur", {"kernel_size", "sigma"}, {sigma = {0.1, 2.0}}, function(self, a)
    local ks = a.kernel_size
    if type(ks) == "number" then ks = {math.tointeger(ks) or ks, math.tointeger(ks) or ks}
    elseif type(ks) == "table" and #ks == 1 then ks = {ks[1], ks[1]} end
    if type(ks) ~= "table" or #ks ~= 2 then U.error("GaussianBlur: Kernel size should be a tuple/list of two integers") end
    for _, k in ipairs(ks) do
      if type(k) ~= "number" or k <= 0 or k % 2 == 0 then U.error("GaussianBlur: Kernel size value should be an odd and positive number.") end
    end
    local s = a.sigma
    if type(s) == "number" then
      if s <= 0 then U.error("GaussianBlur: If sigma is a single number, it must be positive.") end
      s = {s, s}
    elseif type(s) == "table" and #s == 2 then
      if not (0.0 < s[1] and s[1] <= s[2]) then U.error("GaussianBlur: sigma values should be positive and of the form (min, max).") end
    else
      U.error("GaussianBlur: sigma should be a single number or a list/tuple with length 2.")
    end
    self.kernel_size, self.sigma = ks, s
  end)
  function GaussianBlur.get_params(sigma_min, sigma_max) return uniform(sigma_min, sigma_max) end
  function GaussianBlur:forward(img)
    local sigma = GaussianBlur.get_params(self.sigma[1], self.sigma[2])
    return F.gaussian_blur(img, self.kernel_size, {sigma, sigma})
  end
  function GaussianBlur:__repr()
    return string.format("GaussianBlur(kernel_size=%s, sigma=%s)", pystr(self.kernel_size), pystr(self.sigma))
  end

  ---------------------------------------------------------------------------

  local RandomErasing = class("RandomErasing", {"p", "scale", "ratio", "value", "inplace"},
    {p = 0.5, scale = {0.02, 0.33}, ratio = {0.3, 3.3}, value = 0, inplace = false}, function(self, a)
      local v = a.value
      if type(v) ~= "number" and type(v) ~= "string" and type(v) ~= "table" then
        U.error("RandomErasing: Argument value should be either a number or str or a sequence")
      end
      if type(v) == "string" and v ~= "random" then U.error("RandomErasing: If value is str, it should be 'random'") end
      if type(a.scale) ~= "table" then U.error("RandomErasing: Scale should be a sequence") end
      if type(a.ratio) ~= "table" then U.error("RandomErasing: Ratio should be a sequence") end
      if a.scale[1] > a.scale[2] or a.ratio[1] > a.ratio[2] then U.warn("Scale and ratio should be of kind (min, max)") end
      if a.scale[1] < 0 or a.scale[2] > 1 then U.error("RandomErasing: Scale should be between 0 and 1") end
      if a.p < 0 or a.p > 1 then U.error("RandomErasing: Random erasing probability should be between 0 and 1") end
      self.p, self.scale, self.ratio, self.value, self.inplace = a.p, a.scale, a.ratio, a.value, a.inplace
    end)
  -- i, j, h, w, v: the region and what fills it (value nil: standard normal noise)
  function RandomErasing.get_params(img, scale, ratio, value)
    local nd = img:dim()
    local c, ih, iw = img:size(nd - 3), img:size(nd - 2), img:size(nd - 1)
    local area = ih * iw
    local log_ratio = torch.log(torch.tensor(ratio)):tolist()
    for _ = 1, 10 do
      local erase_area = area * uniform(scale[1], scale[2])
      local aspect = torch.exp(torch.empty(1):uniform_(log_ratio[1], log_ratio[2])):item()
      local h = H.pyround(math.sqrt(erase_area * aspect))
      local w = H.pyround(math.sqrt(erase_area / aspect))
      if h < ih and w < iw then
        local v
        if value == nil then v = torch.empty({c, h, w}, {dtype = torch.float32}):normal_()
        else v = torch.tensor(value):view(-1, 1, 1) end
        local i = torch.randint(0, ih - h + 1, {1}):item()
        local j = torch.randint(0, iw - w + 1, {1}):item()
        return i, j, h, w, v
      end
    end
    return 0, 0, ih, iw, img
  end
  function RandomErasing:forward(img)
    if not torch.is_tensor(img) then U.errorf("RandomErasing: img should be Tensor Image. Got %s", U.typename(img)) end
    if img:dim() < 3 then U.errorf("RandomErasing: expected a tensor image (..., C, H, W), got %s", tostring(img.shape)) end
    if torch.rand(1):item() < self.p then
      local value = self.value
      if type(value) == "number" then value = {value + 0.0}
      elseif type(value) == "string" then value = nil end
      local c = img:size(img:dim() - 3)
      if value ~= nil and #value ~= 1 and #value ~= c then
        U.errorf("RandomErasing: If value is a sequence, it should have either a single value or %d (number of input channels)", c)
      end
      local i, j, h, w, v = RandomErasing.get_params(img, self.scale, self.ratio, value)
      return F.erase(img, i, j, h, w, v, self.inplace)
    end
    return img
  end
  function RandomErasing:__repr()
    return string.format("RandomErasing(p=%s, scale=%s, ratio=%s, value=%s, inplace=%s)", pystr(self.p), pystr(self.scale),
      pystr(self.ratio), U.pyrepr(self.value), pystr(self.inplace))
  end

  ---------------------------------------------------------------------------

  local RandomRotation = class("RandomRotation", {"degrees", "interpolation", "expand", "center", "fill"},
    {interpolation = "nearest", expand = false, fill = 0}, function(self, a)
      self.degrees = setup_angle("RandomRotation", a.degrees, "degrees", {2})
      if a.center ~= nil then check_sequence("RandomRotation", "center", a.center, {2}) end
      self.center, self.interpolation, self.expand = a.center, H.warp_interp("RandomRotation", a.interpolation), a.expand
      self.fill = check_fill("RandomRotation", a.fill)
    end)
  function RandomRotation.get_params(degrees) return uniform(degrees[1], degrees[2]) end
  function RandomRotation:forward(img)
    local fill = fill_for(self.fill, img)
    local angle = RandomRotation.get_params(self.degrees)
    return F.rotate(img, angle, self.interpolation, self.expand, self.center, fill)
  end
  function RandomRotation:__repr()
    local s = string.format("RandomRotation(degrees=%s, interpolation=%s, expand=%s", H.pylist(self.degrees), self.interpolation,
      pystr(self.expand))
    if self.center ~= nil then s = s .. ", center=" .. pystr(self.center) end
    return s .. ", fill=" .. pystr(self.fill) .. ")"
  end

  local RandomAffine = class("RandomAffine", {"degrees", "translate", "scale", "shear", "interpolation", "fill", "center"},
    {interpolation = "nearest", fill = 0}, function(self, a)
      self.degrees = setup_angle("RandomAffine", a.degrees, "degrees", {2})
      if a.translate ~= nil then
        check_sequence("RandomAffine", "translate", a.translate, {2})
        for _, t in ipairs(a.translate) do
          if not (t >= 0.0 and t <= 1.0) then U.error("RandomAffine: translation values should be between 0 and 1") end
        end
      end
      if a.scale ~= nil then
        check_sequence("RandomAffine", "scale", a.scale, {2})
        for _, s in ipairs(a.scale) do if s <= 0 then U.error("RandomAffine: scale values should be positive") end end
      end
      if a.shear ~= nil then self.shear = setup_angle("RandomAffine", a.shear, "shear", {2, 4}) end
      self.translate, self.scale = a.translate, a.scale
      self.interpolation = H.warp_interp("RandomAffine", a.interpolation)
      self.fill = check_fill("RandomAffine", a.fill)
      if a.center ~= nil then check_sequence("RandomAffine", "center", a.center, {2}) end
      self.center = a.center
    end)
  -- angle, translations {tx, ty}, scale, shear {sx, sy} (img_size = {width, height})
  function RandomAffine.get_params(degrees, translate, scale_ranges, shears, img_size)
    local angle = uniform(degrees[1], degrees[2])
    local translations = {0, 0}
    if translate ~= nil then
      local max_dx, max_dy = translate[1] * img_size[1] + 0.0, translate[2] * img_size[2] + 0.0
      translations = {H.pyround(uniform(-max_dx, max_dx)), H.pyround(uniform(-max_dy, max_dy))}
    end
    local scale = 1.0
    if scale_ranges ~= nil then scale = uniform(scale_ranges[1], scale_ranges[2]) end
    local shear_x, shear_y = 0.0, 0.0
    if shears ~= nil then
      shear_x = uniform(shears[1], shears[2])
      if #shears == 4 then shear_y = uniform(shears[3], shears[4]) end
    end
    return angle, translations, scale, {shear_x, shear_y}
  end
  function RandomAffine:forward(img)
    local fill = fill_for(self.fill, img)
    local h, w = hw(img)
    local angle, translations, scale, shear = RandomAffine.get_params(self.degrees, self.translate, self.scale, self.shear, {w, h})
    return F.affine(img, angle, translations, scale, shear, self.interpolation, fill, self.center)
  end
  function RandomAffine:__repr()
    local list = H.pylist
    local s = "RandomAffine(degrees=" .. list(self.degrees)
    if self.translate ~= nil then s = s .. ", translate=" .. pystr(self.translate) end
    if self.scale ~= nil then s = s .. ", scale=" .. pystr(self.scale) end
    if self.shear ~= nil then s = s .. ", shear=" .. list(self.shear) end
    if self.interpolation ~= "nearest" then s = s .. ", interpolation=" .. self.interpolation end
    if self.fill ~= 0 then s = s .. ", fill=" .. pystr(self.fill) end
    if self.center ~= nil then s = s .. ", center=" .. pystr(self.center) end
    return s .. ")"
  end

  local RandomPerspective = class("RandomPerspective", {"distortion_scale", "p", "interpolation", "fill"},
    {distortion_scale = 0.5, p = 0.5, interpolation = "bilinear", fill = 0}, function(self, a)
      self.distortion_scale, self.p = a.distortion_scale, a.p
      self.interpolation = H.warp_interp("RandomPerspective", a.interpolation)
      self.fill = check_fill("RandomPerspective", a.fill)
    end)
  -- startpoints, endpoints: the corners {x, y} from top-left, clockwise
  function RandomPerspective.get_params(width, height, distortion_scale)
    local hh, hw_ = height // 2, width // 2
    local dx, dy = math.floor(distortion_scale * hw_), math.floor(distortion_scale * hh)
    local function r(lo, hi) return torch.randint(lo, hi, {1}):item() end
    local topleft = {r(0, dx + 1), r(0, dy + 1)}
    local topright = {r(width - dx - 1, width), r(0, dy + 1)}
    local botright = {r(width - dx - 1, width), r(height - dy - 1, height)}
    local botleft = {r(0, dx + 1), r(height - dy - 1, height)}
    return {{0, 0}, {width - 1, 0}, {width - 1, height - 1}, {0, height - 1}}, {topleft, topright, botright, botleft}
  end
  function RandomPerspective:forward(img)
    local fill = fill_for(self.fill, img)
    local h, w = hw(img)
    if torch.rand(1):item() < self.p then
      local s, e = RandomPerspective.get_params(w, h, self.distortion_scale)
      return F.perspective(img, s, e, self.interpolation, fill)
    end
    return img
  end
  function RandomPerspective:__repr() return "RandomPerspective(p=" .. pystr(self.p) .. ")" end

  local function pair_floats(name, v)
    if type(v) == "number" then return {v + 0.0, v + 0.0} end
    if type(v) ~= "table" then U.errorf("ElasticTransform: %s should be float or a sequence of floats. Got %s", name, U.typename(v)) end
    if #v == 1 then return {v[1] + 0.0, v[1] + 0.0} end
    if #v ~= 2 then U.errorf("ElasticTransform: If %s is a sequence its length should be 2. Got %d", name, #v) end
    for _, x in ipairs(v) do
      if type(x) ~= "number" then U.errorf("ElasticTransform: %s should be a sequence of floats. Got %s", name, U.typename(x)) end
    end
    return {v[1] + 0.0, v[2] + 0.0}
  end

  local ElasticTransform = class("ElasticTransform", {"alpha", "sigma", "interpolation", "fill"},
    {alpha = 50.0, sigma = 5.0, interpolation = "bilinear", fill = 0}, function(self, a)
      self.alpha, self.sigma = pair_floats("alpha", a.alpha), pair_floats("sigma", a.sigma)
      self.interpolation = H.warp_interp("ElasticTransform", a.interpolation)
      local f = a.fill
      if type(f) == "number" then f = {f + 0.0}
      elseif type(f) ~= "table" then U.errorf("ElasticTransform: fill should be int or float or a list or tuple of them. Got %s", U.typename(f)) end
      self.fill = f
    end)
  -- the displacement [1, H, W, 2] for size {H, W}
  function ElasticTransform.get_params(alpha, sigma, size)
    local function field(a, s, n)
      local d = torch.rand(1, 1, size[1], size[2]) * 2 - 1
      if s > 0.0 then
        local k = math.floor(8 * s + 1)
        if k % 2 == 0 then k = k + 1 end
        d = F.gaussian_blur(d, {k, k}, sigma)
      end
      return d * a / n
    end
    local dx = field(alpha[1], sigma[1], size[1])
    local dy = field(alpha[2], sigma[2], size[2])
    return torch.cat({dx, dy}, 1):permute(0, 2, 3, 1)
  end
  function ElasticTransform:forward(img)
    local h, w = hw(img)
    local displacement = ElasticTransform.get_params(self.alpha, self.sigma, {h, w})
    return F.elastic_transform(img, displacement, self.interpolation, self.fill)
  end
  function ElasticTransform:__repr()
    return string.format("ElasticTransform(alpha=%s, sigma=%s, interpolation=%s, fill=%s)", H.pylist(self.alpha), H.pylist(self.sigma),
      interp_name(self.interpolation), H.pylist(self.fill))
  end
end
