-- torchvision.transforms' automatic augmentation policies: AutoAugmentPolicy, AutoAugment,
-- RandAugment, TrivialAugmentWide and AugMix, with torchvision's op tables, magnitude bins and
-- draws (torch.randint / rand under torch.manual_seed, in its order). Images: PIL-like L or RGB,
-- or uint8 tensors (..., 1 or 3, H, W), as torchvision expects.
local torch = require "torch"
local U = require "nn_util"

return function(T, H)
  local F = T.functional
  local class, is_pil, pystr = H.class, H.is_pil, U.pystr

  T.AutoAugmentPolicy = {IMAGENET = "imagenet", CIFAR10 = "cifar10", SVHN = "svhn"}

  local function randint(n, size) return torch.randint(n, size or {1}) end

  -- torchvision's _apply_op
  local function apply_op(img, op, m, interp, fill)
    if op == "ShearX" then return F.affine(img, 0.0, {0, 0}, 1.0, {math.deg(math.atan(m)), 0.0}, interp, fill, {0, 0})
    elseif op == "ShearY" then return F.affine(img, 0.0, {0, 0}, 1.0, {0.0, math.deg(math.atan(m))}, interp, fill, {0, 0})
    elseif op == "TranslateX" then return F.affine(img, 0.0, {math.tointeger(m < 0 and math.ceil(m) or math.floor(m)), 0}, 1.0, {0.0, 0.0}, interp, fill)
    elseif op == "TranslateY" then return F.affine(img, 0.0, {0, math.tointeger(m < 0 and math.ceil(m) or math.floor(m))}, 1.0, {0.0, 0.0}, interp, fill)
    elseif op == "Rotate" then return F.rotate(img, m, interp, false, nil, fill)
    elseif op == "Brightness" then return F.adjust_brightness(img, 1.0 + m)
    elseif op == "Color" then return F.adjust_saturation(img, 1.0 + m)
    elseif op == "Contrast" then return F.adjust_contrast(img, 1.0 + m)
    elseif op == "Sharpness" then return F.adjust_sharpness(img, 1.0 + m)
    elseif op == "Posterize" then return F.posterize(img, math.tointeger(m < 0 and math.ceil(m) or math.floor(m)))
    elseif op == "Solarize" then return F.solarize(img, m)
    elseif op == "AutoContrast" then return F.autocontrast(img)
    elseif op == "Equalize" then return F.equalize(img)
    elseif op == "Invert" then return F.invert(img)
    elseif op == "Identity" then return img
    end
    U.errorf("The provided operator %s is not recognized.", tostring(op))
  end

  -- an augmentation space: list of {name, magnitudes (a Lua list, or nil for none), signed}, in
  -- torchvision's key order; entries are {name, "lin", a, b, signed} | {name, "post", top, div} | {name}
  local function space(num_bins, entries)
    local out = {}
    for k, e in ipairs(entries) do
      local mags, signed = nil, false
      if e[2] == "lin" then mags, signed = torch.linspace(e[3], e[4], num_bins):tolist(), e[5]
      elseif e[2] == "post" then mags = (e[3] - (torch.arange(num_bins) / ((num_bins - 1) / e[4])):round():int()):tolist() end
      out[k] = {name = e[1], mags = mags, signed = signed}
    end
    return out
  end

  -- fill as the op takes it: tensors a list of floats per channel
  local function op_fill(fill, img)
    if fill == nil or is_pil(img) then return fill end
    return H.fill_for(fill, img)
  end

  local function one_op(img, entry, magnitude_index, interp, fill)
    local m = 0.0
    if entry.mags then
      m = entry.mags[magnitude_index + 1]
      if m == nil then U.errorf("magnitude index %d is out of range for %d bins", magnitude_index, #entry.mags) end
    end
    if entry.signed and randint(2):item() ~= 0 then m = -m end
    return apply_op(img, entry.name, m, interp, fill)
  end

  local check_interp = H.warp_interp

  ---------------------------------------------------------------------------

  local policies = {
    imagenet = {
      {{"Posterize", 0.4, 8}, {"Rotate", 0.6, 9}}, {{"Solarize", 0.6, 5}, {"AutoContrast", 0.6}},
      {{"Equalize", 0.8}, {"Equalize", 0.6}}, {{"Posterize", 0.6, 7}, {"Posterize", 0.6, 6}},
      {{"Equalize", 0.4}, {"Solarize", 0.2, 4}}, {{"Equalize", 0.4}, {"Rotate", 0.8, 8}},
      {{"Solarize", 0.6, 3}, {"Equalize", 0.6}}, {{"Posterize", 0.8, 5}, {"Equalize", 1.0}},
      {{"Rotate", 0.2, 3}, {"Solarize", 0.6, 8}}, {{"Equalize", 0.6}, {"Posterize", 0.4, 6}},
      {{"Rotate", 0.8, 8}, {"Color", 0.4, 0}}, {{"Rotate", 0.4, 9}, {"Equalize", 0.6}},
      {{"Equalize", 0.0}, {"Equalize", 0.8}}, {{"Invert", 0.6}, {"Equalize", 1.0}},
      {{"Color", 0.6, 4}, {"Contrast", 1.0, 8}}, {{"Rotate", 0.8, 8}, {"Color", 1.0, 2}},
      {{"Color", 0.8, 8}, {"Solarize", 0.8, 7}}, {{"Sharpness", 0.4, 7}, {"Invert", 0.6}},
      {{"ShearX", 0.6, 5}, {"Equalize", 1.0}}, {{"Color", 0.4, 0}, {"Equalize", 0.6}},
      {{"Equalize", 0.4}, {"Solarize", 0.2, 4}}, {{"Solarize", 0.6, 5}, {"AutoContrast", 0.6}},
      {{"Invert", 0.6}, {"Equalize", 1.0}}, {{"Color", 0.6, 4}, {"Contrast", 1.0, 8}},
      {{"Equalize", 0.8}, {"Equalize", 0.6}},
    },
    cifar10 = {
      {{"Invert", 0.1}, {"Contrast", 0.2, 6}}, {{"Rotate", 0.7, 2}, {"TranslateX", 0.3, 9}},
      {{"Sharpness", 0.8, 1}, {"Sharpness", 0.9, 3}}, {{"ShearY", 0.5, 8}, {"TranslateY", 0.7, 9}},
      {{"AutoContrast", 0.5}, {"Equalize", 0.9}}, {{"ShearY", 0.2, 7}, {"Posterize", 0.3, 7}},
      {{"Color", 0.4, 3}, {"Brightness", 0.6, 7}}, {{"Sharpness", 0.3, 9}, {"Brightness", 0.7, 9}},
      {{"Equalize", 0.6}, {"Equalize", 0.5}}, {{"Contrast", 0.6, 7}, {"Sharpness", 0.6, 5}},
      {{"Color", 0.7, 7}, {"TranslateX", 0.5, 8}}, {{"Equalize", 0.3}, {"AutoContrast", 0.4}},
      {{"TranslateY", 0.4, 3}, {"Sharpness", 0.2, 6}}, {{"Brightness", 0.9, 6}, {"Color", 0.2, 8}},
      {{"Solarize", 0.5, 2}, {"Invert", 0.0}}, {{"Equalize", 0.2}, {"AutoContrast", 0.6}},
      {{"Equalize", 0.2}, {"Equalize", 0.6}}, {{"Color", 0.9, 9}, {"Equalize", 0.6}},
      {{"AutoContrast", 0.8}, {"Solarize", 0.2, 8}}, {{"Brightness", 0.1, 3}, {"Color", 0.7, 0}},
      {{"Solarize", 0.4, 5}, {"AutoContrast", 0.9}}, {{"TranslateY", 0.9, 9}, {"TranslateY", 0.7, 9}},
      {{"AutoContrast", 0.9}, {"Solarize", 0.8, 3}}, {{"Equalize", 0.8}, {"Invert", 0.1}},
      {{"TranslateY", 0.7, 9}, {"AutoContrast", 0.9}},
    },
    svhn = {
      {{"ShearX", 0.9, 4}, {"Invert", 0.2}}, {{"ShearY", 0.9, 8}, {"Invert", 0.7}},
      {{"Equalize", 0.6}, {"Solarize", 0.6, 6}}, {{"Invert", 0.9}, {"Equalize", 0.6}},
      {{"Equalize", 0.6}, {"Rotate", 0.9, 3}}, {{"ShearX", 0.9, 4}, {"AutoContrast", 0.8}},
      {{"ShearY", 0.9, 8}, {"Invert", 0.4}}, {{"ShearY", 0.9, 5}, {"Solarize", 0.2, 6}},
      {{"Invert", 0.9}, {"AutoContrast", 0.8}}, {{"Equalize", 0.6}, {"Rotate", 0.9, 3}},
      {{"ShearX", 0.9, 4}, {"Solarize", 0.3, 3}}, {{"ShearY", 0.8, 8}, {"Invert", 0.7}},
      {{"Equalize", 0.9}, {"TranslateY", 0.6, 6}}, {{"Invert", 0.9}, {"Equalize", 0.6}},
      {{"Contrast", 0.3, 3}, {"Rotate", 0.8, 4}}, {{"Invert", 0.8}, {"TranslateY", 0.0, 2}},
      {{"ShearY", 0.7, 6}, {"Solarize", 0.4, 8}}, {{"Invert", 0.6}, {"Rotate", 0.8, 4}},
      {{"ShearY", 0.3, 7}, {"TranslateX", 0.9, 3}}, {{"ShearX", 0.1, 6}, {"Invert", 0.6}},
      {{"Solarize", 0.7, 2}, {"TranslateY", 0.6, 7}}, {{"ShearY", 0.8, 4}, {"Invert", 0.8}},
      {{"ShearX", 0.7, 9}, {"TranslateY", 0.8, 3}}, {{"ShearY", 0.8, 5}, {"AutoContrast", 0.7}},
      {{"ShearX", 0.7, 2}, {"Invert", 0.1}},
    },
  }

  local AutoAugment = class("AutoAugment", {"policy", "interpolation", "fill"}, {policy = "imagenet", interpolation = "nearest"},
    function(self, a)
      if not policies[a.policy] then U.errorf("AutoAugment: The provided policy %s is not recognized.", tostring(a.policy)) end
      self.policy, self.interpolation, self.fill = a.policy, check_interp("AutoAugment", a.interpolation), a.fill
      self.policies = policies[a.policy]
    end)
  function AutoAugment:_augmentation_space(num_bins, image_size)
    local h, w = image_size[1], image_size[2]
    return space(num_bins, {{"ShearX", "lin", 0.0, 0.3, true}, {"ShearY", "lin", 0.0, 0.3, true},
      {"TranslateX", "lin", 0.0, 150.0 / 331.0 * w, true}, {"TranslateY", "lin", 0.0, 150.0 / 331.0 * h, true},
      {"Rotate", "lin", 0.0, 30.0, true}, {"Brightness", "lin", 0.0, 0.9, true}, {"Color", "lin", 0.0, 0.9, true},
      {"Contrast", "lin", 0.0, 0.9, true}, {"Sharpness", "lin", 0.0, 0.9, true}, {"Posterize", "post", 8, 4},
      {"Solarize", "lin", 255.0, 0.0, false}, {"AutoContrast"}, {"Equalize"}, {"Invert"}})
  end
  -- policy_id (0-based), probs [2], signs [2]
  function AutoAugment.get_params(transform_num)
    local id = randint(transform_num):item()
    return id, torch.rand(2), randint(2, {2})
  end
  function AutoAugment:forward(img)
    local _, h, w = table.unpack(F.get_dimensions(img))
    local fill = op_fill(self.fill, img)
    local id, probs, signs = AutoAugment.get_params(#self.policies)
    probs, signs = probs:tolist(), signs:tolist()
    local meta = {}
    for _, e in ipairs(self:_augmentation_space(10, {h, w})) do meta[e.name] = e end
    for i, step in ipairs(self.policies[id + 1]) do
      local name, p, mid = step[1], step[2], step[3]
      if probs[i] <= p then
        local e = meta[name]
        local m = mid and e.mags[mid + 1] or 0.0
        if e.signed and signs[i] == 0 then m = -m end
        img = apply_op(img, name, m, self.interpolation, fill)
      end
    end
    return img
  end
  function AutoAugment:__repr()
    return string.format("AutoAugment(policy=AutoAugmentPolicy.%s, fill=%s)", self.policy:upper(), pystr(self.fill))
  end

  ---------------------------------------------------------------------------

  local RandAugment = class("RandAugment", {"num_ops", "magnitude", "num_magnitude_bins", "interpolation", "fill"},
    {num_ops = 2, magnitude = 9, num_magnitude_bins = 31, interpolation = "nearest"}, function(self, a)
      self.num_ops = U.check_int("RandAugment", "num_ops", a.num_ops)
      self.magnitude = U.check_int("RandAugment", "magnitude", a.magnitude)
      self.num_magnitude_bins = U.check_int("RandAugment", "num_magnitude_bins", a.num_magnitude_bins)
      self.interpolation, self.fill = check_interp("RandAugment", a.interpolation), a.fill
    end)
  function RandAugment:_augmentation_space(num_bins, image_size)
    local h, w = image_size[1], image_size[2]
    return space(num_bins, {{"Identity"}, {"ShearX", "lin", 0.0, 0.3, true}, {"ShearY", "lin", 0.0, 0.3, true},
      {"TranslateX", "lin", 0.0, 150.0 / 331.0 * w, true}, {"TranslateY", "lin", 0.0, 150.0 / 331.0 * h, true},
      {"Rotate", "lin", 0.0, 30.0, true}, {"Brightness", "lin", 0.0, 0.9, true}, {"Color", "lin", 0.0, 0.9, true},
      {"Contrast", "lin", 0.0, 0.9, true}, {"Sharpness", "lin", 0.0, 0.9, true}, {"Posterize", "post", 8, 4},
      {"Solarize", "lin", 255.0, 0.0, false}, {"AutoContrast"}, {"Equalize"}})
  end
  function RandAugment:forward(img)
    local _, h, w = table.unpack(F.get_dimensions(img))
    local fill = op_fill(self.fill, img)
    for _ = 1, self.num_ops do
      local meta = self:_augmentation_space(self.num_magnitude_bins, {h, w})
      local e = meta[randint(#meta):item() + 1]
      img = one_op(img, e, self.magnitude, self.interpolation, fill)
    end
    return img
  end
  function RandAugment:__repr()
    return string.format("RandAugment(num_ops=%d, magnitude=%d, num_magnitude_bins=%d, interpolation=%s, fill=%s)", self.num_ops,
      self.magnitude, self.num_magnitude_bins, H.interp_name(self.interpolation), pystr(self.fill))
  end

  local TrivialAugmentWide = class("TrivialAugmentWide", {"num_magnitude_bins", "interpolation", "fill"},
    {num_magnitude_bins = 31, interpolation = "nearest"}, function(self, a)
      self.num_magnitude_bins = U.check_int("TrivialAugmentWide", "num_magnitude_bins", a.num_magnitude_bins)
      self.interpolation, self.fill = check_interp("TrivialAugmentWide", a.interpolation), a.fill
    end)
  function TrivialAugmentWide:_augmentation_space(num_bins)
    return space(num_bins, {{"Identity"}, {"ShearX", "lin", 0.0, 0.99, true}, {"ShearY", "lin", 0.0, 0.99, true},
      {"TranslateX", "lin", 0.0, 32.0, true}, {"TranslateY", "lin", 0.0, 32.0, true}, {"Rotate", "lin", 0.0, 135.0, true},
      {"Brightness", "lin", 0.0, 0.99, true}, {"Color", "lin", 0.0, 0.99, true}, {"Contrast", "lin", 0.0, 0.99, true},
      {"Sharpness", "lin", 0.0, 0.99, true}, {"Posterize", "post", 8, 6}, {"Solarize", "lin", 255.0, 0.0, false},
      {"AutoContrast"}, {"Equalize"}})
  end
  function TrivialAugmentWide:forward(img)
    local fill = op_fill(self.fill, img)
    local meta = self:_augmentation_space(self.num_magnitude_bins)
    local e = meta[randint(#meta):item() + 1]
    return one_op(img, e, e.mags and randint(#e.mags):item() or 0, self.interpolation, fill)
  end
  function TrivialAugmentWide:__repr()
    return string.format("TrivialAugmentWide(num_magnitude_bins=%d, interpolation=%s, fill=%s)", self.num_magnitude_bins,
      H.interp_name(self.interpolation), pystr(self.fill))
  end

  ---------------------------------------------------------------------------

  local AugMix = class("AugMix", {"severity", "mixture_width", "chain_depth", "alpha", "all_ops", "interpolation", "fill"},
    {severity = 3, mixture_width = 3, chain_depth = -1, alpha = 1.0, all_ops = true, interpolation = "bilinear"}, function(self, a)
      self.severity = U.check_int("AugMix", "severity", a.severity)
      if not (self.severity >= 1 and self.severity <= 10) then
        U.errorf("AugMix: The severity must be between [1, 10]. Got %d instead.", self.severity)
      end
      self.mixture_width = U.check_int("AugMix", "mixture_width", a.mixture_width)
      self.chain_depth = U.check_int("AugMix", "chain_depth", a.chain_depth)
      self.alpha, self.all_ops, self.fill = a.alpha, a.all_ops, a.fill
      self.interpolation = check_interp("AugMix", a.interpolation)
    end)
  function AugMix:_augmentation_space(num_bins, image_size)
    local h, w = image_size[1], image_size[2]
    local e = {{"ShearX", "lin", 0.0, 0.3, true}, {"ShearY", "lin", 0.0, 0.3, true}, {"TranslateX", "lin", 0.0, w / 3.0, true},
      {"TranslateY", "lin", 0.0, h / 3.0, true}, {"Rotate", "lin", 0.0, 30.0, true}, {"Posterize", "post", 4, 4},
      {"Solarize", "lin", 255.0, 0.0, false}, {"AutoContrast"}, {"Equalize"}}
    if self.all_ops then
      for _, x in ipairs({"Brightness", "Color", "Contrast", "Sharpness"}) do e[#e + 1] = {x, "lin", 0.0, 0.9, true} end
    end
    return space(num_bins, e)
  end
  function AugMix:_sample_dirichlet(params) return torch.distributions.Dirichlet(params):sample() end
  function AugMix:forward(orig)
    local _, h, w = table.unpack(F.get_dimensions(orig))
    local img = is_pil(orig) and F.pil_to_tensor(orig) or orig
    local fill = op_fill(self.fill, img)
    local meta = self:_augmentation_space(10, {h, w})
    local dims = img.shape:totable()
    local bshape = {}
    for _ = 1, math.max(4 - #dims, 0) do bshape[#bshape + 1] = 1 end
    for _, d in ipairs(dims) do bshape[#bshape + 1] = d end
    local batch = img:reshape(bshape)
    local n = batch:size(0)
    local bdims = {n}
    for k = 2, #bshape do bdims[k] = 1 end
    local alphas = {}
    for k = 1, self.mixture_width do alphas[k] = self.alpha end
    local m = self:_sample_dirichlet(torch.tensor({self.alpha, self.alpha}):expand(n, 2))
    local weights = self:_sample_dirichlet(torch.tensor(alphas):expand(n, self.mixture_width)) * m:select(1, 1):view(n, -1)
    local mix = m:select(1, 0):view(bdims) * batch
    for i = 0, self.mixture_width - 1 do
      local aug = batch
      local depth = self.chain_depth > 0 and self.chain_depth or torch.randint(1, 4, {1}):item()
      for _ = 1, depth do
        local e = meta[randint(#meta):item() + 1]
        aug = one_op(aug, e, e.mags and randint(self.severity):item() or 0, self.interpolation, fill)
      end
      mix:add_(weights:select(1, i):view(bdims) * aug)
    end
    mix = mix:view(dims):to(img.dtype)
    if is_pil(orig) then return F.to_pil_image(mix) end
    return mix
  end
  function AugMix:__repr()
    return string.format("AugMix(severity=%d, mixture_width=%d, chain_depth=%d, alpha=%s, all_ops=%s, interpolation=%s, fill=%s)",
      self.severity, self.mixture_width, self.chain_depth, pystr(self.alpha), pystr(self.all_ops), H.interp_name(self.interpolation),
      pystr(self.fill))
  end
end
