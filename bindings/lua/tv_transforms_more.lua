-- torchvision.transforms: FiveCrop, TenCrop, RandomChoice, RandomOrder, LinearTransformation, and
-- functional five_crop, ten_crop, adjust_gamma (PIL-like images and tensors alike). five_crop and
-- ten_crop return a Lua list of 5 / 10 images where torchvision returns a tuple. RandomChoice and
-- RandomOrder draw with torch.multinomial / torch.randperm (v2's draws; v1 uses Python's random).
local torch = require "torch"
local U = require "nn_util"

return function(T, H)
  local F = T.functional
  local class, is_pil, hw, channels = H.class, H.is_pil, H.hw, H.channels

  local function crop_size(fn, size)
    if type(size) == "number" then return size, size end
    if type(size) == "table" and #size == 1 then return size[1], size[1] end
    if type(size) ~= "table" or #size ~= 2 then U.error("Please provide only two dimensions (h, w) for size.") end
    return size[1], size[2]
  end

  -- five_crop(img, size): top-left, top-right, bottom-left, bottom-right and center crops
  function F.five_crop(img, size)
    local ch, cw = crop_size("five_crop", size)
    local h, w = hw(img)
    if cw > w or ch > h then
      U.errorf("Requested crop size (%d, %d) is bigger than input size (%d, %d)", ch, cw, h, w)
    end
    return {F.crop(img, 0, 0, ch, cw), F.crop(img, 0, w - cw, ch, cw), F.crop(img, h - ch, 0, ch, cw),
      F.crop(img, h - ch, w - cw, ch, cw), F.center_crop(img, {ch, cw})}
  end

  -- ten_crop(img, size, vertical_flip=false): five_crop of the image, then of its flipped copy
  function F.ten_crop(img, size, vertical_flip)
    local first = F.five_crop(img, size)
    local flipped = vertical_flip and F.vflip(img) or F.hflip(img)
    local second = F.five_crop(flipped, size)
    for i = 1, 5 do first[5 + i] = second[i] end
    return first
  end

  -- adjust_gamma(img, gamma, gain=1): gain * x^gamma on [0, 1] values; integer images through
  -- torchvision's dtype conversion, PIL-like ones through its 256-entry lookup table
  function F.adjust_gamma(img, gamma, gain)
    gain = gain or 1
    if type(gamma) ~= "number" or gamma < 0 then U.error("Gamma should be a non-negative real number") end
    if is_pil(img) then
      if img.mode ~= "L" and img.mode ~= "RGB" and img.mode ~= "RGBA" then
        U.errorf("adjust_gamma: unsupported image mode %s", img.mode)
      end
      local v = {}
      for i = 0, 255 do
        local x = math.floor((255 + 1 - 1e-3) * gain * (i / 255.0) ^ gamma)
        v[i + 1] = math.max(0, math.min(255, x))
      end
      local lut = torch.tensor(v, {dtype = torch.uint8})
      local data = img._data
      local c = img.mode == "L" and 1 or 3
      local out = lut:index_select(0, data:narrow(2, 0, c):reshape(-1):to(torch.int64)):reshape(data:size(0), data:size(1), c)
      -- Pillow goes through RGB and back: the alpha band comes back opaque
      if img.mode == "RGBA" then out = torch.cat({out, torch.full({data:size(0), data:size(1), 1}, 255, {dtype = torch.uint8})}, 2) end
      return H.wrap(out:contiguous())
    end
    if not torch.is_tensor(img) then U.errorf("adjust_gamma: img should be a PIL-like Image or a Tensor, got %s", U.typename(img)) end
    local c = channels(img)
    if c ~= 1 and c ~= 3 then U.errorf("Input image tensor permitted channel values are [1, 3], but found %d", c) end
    local dtype = img.dtype
    local x = img
    if not img:is_floating_point() then x = F.convert_image_dtype(x, torch.float32) end
    x = (x:pow(gamma) * gain):clamp(0, 1)
    return F.convert_image_dtype(x, dtype)
  end

  local FiveCrop = class("FiveCrop", {"size"}, {}, function(self, a)
    local h, w = crop_size("FiveCrop", a.size)
    self.size = {h, w}
  end)
  function FiveCrop:forward(img) return F.five_crop(img, self.size) end
  function FiveCrop:extra_repr() return string.format("size=(%d, %d)", self.size[1], self.size[2]) end

  local TenCrop = class("TenCrop", {"size", "vertical_flip"}, {vertical_flip = false}, function(self, a)
    local h, w = crop_size("TenCrop", a.size)
    self.size, self.vertical_flip = {h, w}, a.vertical_flip
  end)
  function TenCrop:forward(img) return F.ten_crop(img, self.size, self.vertical_flip) end
  function TenCrop:extra_repr()
    return string.format("size=(%d, %d), vertical_flip=%s", self.size[1], self.size[2], U.pystr(self.vertical_flip))
  end

  local function check_list(cls, ts)
    if type(ts) ~= "table" or getmetatable(ts) ~= nil then U.errorf("%s: Argument transforms should be a sequence", cls) end
  end
  local function list_repr(self)
    local lines = {self.__name .. "("}
    for _, t in ipairs(self.transforms) do lines[#lines + 1] = "    " .. tostring(t) end
    lines[#lines + 1] = ")"
    return table.concat(lines, "\n")
  end

  -- RandomChoice(transforms, p=nil): applies one of the transforms, drawn with weights p (normalised)
  local RandomChoice = class("RandomChoice", {"transforms", "p"}, {}, function(self, a)
    check_list("RandomChoice", a.transforms)
    local n, p = #a.transforms, a.p
    if p == nil then
      p = {}
      for i = 1, n do p[i] = 1 end
    elseif type(p) ~= "table" then U.error("Argument p should be a sequence")
    elseif #p ~= n then U.errorf("Length of p doesn't match the number of transforms: %d != %d", #p, n) end
    local total = 0
    for _, v in ipairs(p) do total = total + v end
    self.transforms, self.p = a.transforms, {}
    for i, v in ipairs(p) do self.p[i] = v / total end
  end)
  function RandomChoice:forward(...)
    local i = torch.multinomial(torch.tensor(self.p, {dtype = torch.float64}), 1):item()
    return self.transforms[i + 1](...)
  end
  RandomChoice.__repr = list_repr

  -- RandomOrder(transforms): applies all the transforms in a random order
  local RandomOrder = class("RandomOrder", {"transforms"}, {}, function(self, a)
    check_list("RandomOrder", a.transforms)
    self.transforms = a.transforms
  end)
  function RandomOrder:forward(img)
    for _, i in ipairs(torch.randperm(#self.transforms):tolist()) do img = self.transforms[i + 1](img) end
    return img
  end
  RandomOrder.__repr = list_repr

  -- LinearTransformation(transformation_matrix, mean_vector): (flatten(x) - mean) @ matrix, reshaped back
  local LinearTransformation = class("LinearTransformation", {"transformation_matrix", "mean_vector"}, {}, function(self, a)
    local m, mv = a.transformation_matrix, a.mean_vector
    if not torch.is_tensor(m) or not torch.is_tensor(mv) then
      U.error("LinearTransformation: transformation_matrix and mean_vector should be tensors")
    end
    if m:dim() ~= 2 or m:size(0) ~= m:size(1) then
      U.errorf("transformation_matrix should be square. Got %d x %d rectangular matrix.", m:size(0), m:dim() > 1 and m:size(1) or 1)
    end
    if mv:size(0) ~= m:size(0) then
      U.errorf("mean_vector should have the same length %d as any one of the dimensions of the transformation_matrix [%s]",
        mv:size(0), U.pystr(m.shape:totable()))
    end
    if tostring(m.device) ~= tostring(mv.device) then
      U.errorf("Input tensors should be on the same device. Got %s and %s", tostring(m.device), tostring(mv.device))
    end
    if m.dtype ~= mv.dtype then
      U.errorf("Input tensors should have the same dtype. Got %s and %s", tostring(m.dtype), tostring(mv.dtype))
    end
    self.transformation_matrix, self.mean_vector = m, mv
  end)
  function LinearTransformation:forward(tensor)
    if not torch.is_tensor(tensor) then U.errorf("LinearTransformation: img should be a Tensor, got %s", U.typename(tensor)) end
    local shape = tensor.shape:totable()
    local nd = #shape
    if nd < 3 then U.errorf("LinearTransformation: expected a tensor image (..., C, H, W), got %s", tostring(tensor.shape)) end
    local n = shape[nd - 2] * shape[nd - 1] * shape[nd]
    local m = self.transformation_matrix
    if n ~= m:size(0) then
      U.errorf("Input tensor and transformation matrix have incompatible shape.[%d x %d x %d] != %d",
        shape[nd - 2], shape[nd - 1], shape[nd], m:size(0))
    end
    if tensor.device.type ~= self.mean_vector.device.type then
      U.errorf("Input tensor should be on the same device as transformation matrix and mean vector. Got %s vs %s",
        tostring(tensor.device), tostring(self.mean_vector.device))
    end
    local flat = tensor:reshape(-1, n) - self.mean_vector
    return torch.mm(flat, m:to(flat.dtype)):reshape(table.unpack(shape))
  end
  function LinearTransformation:__repr()
    return string.format("LinearTransformation(transformation_matrix=%s, mean_vector=%s)",
      U.pystr(self.transformation_matrix:tolist()), U.pystr(self.mean_vector:tolist()))
  end
end
