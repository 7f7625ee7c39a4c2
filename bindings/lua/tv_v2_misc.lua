-- transforms.v2's other new image and video transforms and their functionals: jpeg / JPEG (an
-- encode and decode through the JPEG codec of tv_io), gaussian_noise / GaussianNoise,
-- permute_channels / RandomChannelPermutation, grayscale_to_rgb / RGB, RandomPhotometricDistort,
-- uniform_temporal_subsample / UniformTemporalSubsample.
local torch = require "torch"
local U = require "nn_util"
local core = require "tv_v2_core"
local tv_tensors = require "tv_tensors"
local tv_io = require "tv_io"

local C, PIL = tv_io._C, tv_io.Image

return function(v2, T, H)
  local F = v2.functional

  ---------------------------------------------------------------------------
  -- functionals
  ---------------------------------------------------------------------------

  local function check_quality(quality)
    if math.type(quality) ~= "integer" or quality < 1 or quality > 100 then
      U.errorf("quality must be an integer from 1 to 100, got quality=%s", U.pystr(quality))
    end
  end

  -- jpeg(image, quality): [..., 1 or 3, H, W] uint8 images (on any device: coded on the CPU)
  local function jpeg_image(...)
    local a = U.parse("jpeg", {{"image", U.REQUIRED}, {"quality", U.REQUIRED}}, ...)
    local image, quality = a.image, a.quality
    check_quality(quality)
    if H.is_pil(image) then
      if image.mode ~= "L" and image.mode ~= "RGB" then U.errorf("jpeg: cannot write mode %s as JPEG", image.mode) end
      return PIL._wrap(C.decode(C.encode_jpeg(image._data:contiguous(), quality), 0, "<bytes>", "jpeg"))
    end
    U.tensor_arg("jpeg", "image", image)
    if image.dtype ~= torch.uint8 then U.errorf("jpeg: Input tensor dtype should be uint8, got %s", tostring(image.dtype)) end
    if image:dim() < 3 or (image:size(-3) ~= 1 and image:size(-3) ~= 3) then
      U.errorf("jpeg: expected images of shape [..., 1 or 3, H, W], got %s", U.shape_str(image))
    end
    local shape = image.shape
    local flat = image:reshape(-1, image:size(-3), image:size(-2), image:size(-1))
    if flat:size(0) == 0 then return image:clone() end
    local cpu = flat:cpu()
    local out = {}
    for i = 0, cpu:size(0) - 1 do
      local bytes = C.encode_jpeg(cpu[i]:permute(1, 2, 0):contiguous(), quality)
      out[i + 1] = C.decode(bytes, 0, "<bytes>", "jpeg"):permute(2, 0, 1)
    end
    return torch.stack(out, 0):reshape(shape):to(image.device)
  end
  F.jpeg = core.functional("jpeg")
  core.register_image_kernel(F.jpeg, jpeg_image)
  F.jpeg_image, F.jpeg_video = jpeg_image, jpeg_image

  -- gaussian_noise(inpt, mean=0.0, sigma=0.1, clip=True): float images and videos
  local function gaussian_noise_image(...)
    local a = U.parse("gaussian_noise", {{"image", U.REQUIRED}, {"mean", 0.0}, {"sigma", 0.1}, {"clip", true}}, ...)
    local image = a.image
    if not image:is_floating_point() then
      U.errorf("Input tensor is expected to be in float dtype, got dtype=%s", tostring(image.dtype))
    end
    if a.sigma < 0 then U.errorf("sigma shouldn't be negative. Got %s", U.pystr(a.sigma)) end
    local out = image + (torch.randn_like(image) * a.sigma + a.mean)
    if a.clip then out = out:clamp(0, 1) end
    return out
  end
  F.gaussian_noise = core.functional("gaussian_noise")
  core.register_image_kernel(F.gaussian_noise, gaussian_noise_image)
  core.register(F.gaussian_noise, core.PIL, function() U.error("Gaussian Noise is not implemented for PIL images.") end)
  F.gaussian_noise_image, F.gaussian_noise_video = gaussian_noise_image, gaussian_noise_image

  -- permute_channels(inpt, permutation): output channel i is input channel permutation[i] (0-based)
  local function permute_channels_image(...)
    local a = U.parse("permute_channels", {{"image", U.REQUIRED}, {"permutation", U.REQUIRED}}, ...)
    local image, perm = a.image, a.permutation
    if not torch.is_tensor(perm) then perm = torch.tensor(perm, {dtype = torch.int64}) end
    local pil = H.is_pil(image)
    local c = pil and image._data:size(2) or image:size(-3)
    if perm:numel() ~= c then
      U.errorf("Length of permutation does not match number of channels: %d != %d", perm:numel(), c)
    end
    if pil then return PIL._wrap(image._data:index_select(2, perm:cpu():reshape(-1)):contiguous()) end
    if image:numel() == 0 then return image end
    return image:index_select(-3, perm:to(image.device):reshape(-1))
  end
  F.permute_channels = core.functional("permute_channels")
  core.register_image_kernel(F.permute_channels, permute_channels_image)
  F.permute_channels_image, F.permute_channels_video = permute_channels_image, permute_channels_image

  -- grayscale_to_rgb(inpt): one channel repeated three times; three or more channels as they are
  local function grayscale_to_rgb_image(image)
    if H.is_pil(image) then return image:convert("RGB") end
    U.tensor_arg("grayscale_to_rgb", "image", image)
    if image:dim() < 3 then U.errorf("grayscale_to_rgb: expected images of shape [..., C, H, W], got %s", U.shape_str(image)) end
    local c = image:size(-3)
    if c >= 3 then return image end
    if c ~= 1 then U.errorf("grayscale_to_rgb: expected 1 or 3 channels, got %d", c) end
    local reps = {}
    for i = 1, image:dim() do reps[i] = 1 end
    reps[image:dim() - 2] = 3
    return image["repeat"](image, table.unpack(reps))
  end
  F.grayscale_to_rgb = core.functional("grayscale_to_rgb")
  core.register_image_kernel(F.grayscale_to_rgb, grayscale_to_rgb_image)
  F.grayscale_to_rgb_image = grayscale_to_rgb_image

  -- uniform_temporal_subsample(video, num_samples): frames at round-down of linspace(0, T - 1, num_samples)
  local function uniform_temporal_subsample_video(...)
    local a = U.parse("uniform_temporal_subsample", {{"video", U.REQUIRED}, {"num_samples", U.REQUIRED}}, ...)
    local video, n = a.video, a.num_samples
    if math.type(n) ~= "integer" or n < 0 then
      U.errorf("uniform_temporal_subsample: num_samples must be a non-negative integer, got %s", U.pystr(n))
    end
    if video:dim() < 4 then U.errorf("uniform_temporal_subsample: expected a video [..., T, C, H, W], got %s", U.shape_str(video)) end
    local idx = torch.linspace(0, video:size(-4) - 1, n, {device = video.device}):long()
    return video:index_select(-4, idx)
  end
  F.uniform_temporal_subsample = core.functional("uniform_temporal_subsample")
  core.register(F.uniform_temporal_subsample, torch.Tensor, uniform_temporal_subsample_video)
  F.uniform_temporal_subsample_video = uniform_temporal_subsample_video
  core.register(F.uniform_temporal_subsample, tv_tensors.Video, function(video, ...)
    return tv_tensors.wrap(uniform_temporal_subsample_video(video:view(video.shape), ...), {like = video})
  end)

  ---------------------------------------------------------------------------
  -- transforms
  ---------------------------------------------------------------------------

  local class = core.class

  -- JPEG(quality): an integer, or {min, max} to draw from (both ends included)
  local JPEG = class("JPEG", {{"quality", U.REQUIRED}}, function(self, a)
    local q = a.quality
    if math.type(q) == "integer" then q = {q, q}
    elseif type(q) ~= "table" or #q ~= 2 then
      U.errorf("quality should be a sequence of length 2. Got %s", U.pystr(q))
    end
    if not (math.type(q[1]) == "integer" and math.type(q[2]) == "integer" and 1 <= q[1] and q[1] <= q[2] and q[2] <= 100) then
      U.errorf("quality must be an integer from 1 to 100, got quality =%s", U.pystr(q))
    end
    self.quality = {q[1], q[2]}
  end)
  function JPEG:make_params()
    return {quality = torch.randint(self.quality[1], self.quality[2] + 1, torch.Size({})):item()}
  end
  function JPEG:transform(inpt, params) return self:_call_kernel(F.jpeg, inpt, params.quality) end
  v2.JPEG = JPEG

  local GaussianNoise = class("GaussianNoise", {{"mean", 0.0}, {"sigma", 0.1}, {"clip", true}})
  function GaussianNoise:transform(inpt)
    return self:_call_kernel(F.gaussian_noise, inpt, self.mean, self.sigma, self.clip)
  end
  v2.GaussianNoise = GaussianNoise

  local RGB = class("RGB", {})
  function RGB:transform(inpt) return self:_call_kernel(F.grayscale_to_rgb, inpt) end
  v2.RGB = RGB

  local RandomChannelPermutation = class("RandomChannelPermutation", {})
  function RandomChannelPermutation:make_params(flat_inputs)
    local c = core.query_chw(flat_inputs)
    return {permutation = torch.randperm(c)}
  end
  function RandomChannelPermutation:transform(inpt, params)
    return self:_call_kernel(F.permute_channels, inpt, params.permutation)
  end
  v2.RandomChannelPermutation = RandomChannelPermutation

  -- RandomPhotometricDistort: each of brightness, contrast, saturation and hue applied with
  -- probability p (a factor drawn uniformly from its range), contrast before or after saturation
  -- and hue (even odds), then the channels shuffled with probability p.
  local ranges = {"brightness", "contrast", "saturation", "hue"}
  local RandomPhotometricDistort = class("RandomPhotometricDistort", {{"brightness", {0.875, 1.125}},
    {"contrast", {0.5, 1.5}}, {"saturation", {0.5, 1.5}}, {"hue", {-0.05, 0.05}}, {"p", 0.5}}, function(self, a)
    for _, k in ipairs(ranges) do
      local r = a[k]
      if type(r) ~= "table" or #r ~= 2 or type(r[1]) ~= "number" or type(r[2]) ~= "number" or r[1] > r[2] then
        U.errorf("RandomPhotometricDistort: %s should be a pair (min, max), got %s", k, U.pystr(r))
      end
      self[k] = {r[1], r[2]}
    end
    if type(a.p) ~= "number" or a.p < 0 or a.p > 1 then
      U.errorf("RandomPhotometricDistort: p should be a probability in [0, 1], got %s", U.pystr(a.p))
    end
    self.p = a.p
  end)
  function RandomPhotometricDistort:make_params(flat_inputs)
    local c = core.query_chw(flat_inputs)
    local params = {}
    for _, k in ipairs(ranges) do
      if torch.rand(1):item() < self.p then
        params[k] = torch.empty(1):uniform_(self[k][1], self[k][2]):item()
      end
    end
    params.contrast_before = torch.rand(torch.Size({})):item() < 0.5
    if torch.rand(1):item() < self.p then params.channel_permutation = torch.randperm(c) end
    return params
  end
  function RandomPhotometricDistort:transform(inpt, p)
    if p.brightness then inpt = self:_call_kernel(F.adjust_brightness, inpt, p.brightness) end
    if p.contrast and p.contrast_before then inpt = self:_call_kernel(F.adjust_contrast, inpt, p.contrast) end
    if p.saturation then inpt = self:_call_kernel(F.adjust_saturation, inpt, p.saturation) end
    if p.hue then inpt = self:_call_kernel(F.adjust_hue, inpt, p.hue) end
    if p.contrast and not p.contrast_before then inpt = self:_call_kernel(F.adjust_contrast, inpt, p.contrast) end
    if p.channel_permutation then inpt = self:_call_kernel(F.permute_channels, inpt, p.channel_permutation) end
    return inpt
  end
  v2.RandomPhotometricDistort = RandomPhotometricDistort

  local UniformTemporalSubsample = class("UniformTemporalSubsample", {{"num_samples", U.REQUIRED}})
  UniformTemporalSubsample._transformed_types = {core.is_pure_tensor, tv_tensors.Video}
  function UniformTemporalSubsample:transform(inpt)
    return self:_call_kernel(F.uniform_temporal_subsample, inpt, self.num_samples)
  end
  v2.UniformTemporalSubsample = UniformTemporalSubsample
end
