-- transforms.v2.CutMix and MixUp: a batch of images (or videos) with its labels (class indices
-- of shape [B], or probabilities [B, num_classes]) -> each image mixed with the one before it in
-- the batch (a roll by one), and the labels as the same mixture of one-hot vectors. The mixing
-- weight lambda is drawn from Beta(alpha, alpha).
local torch = require "torch"
local U = require "nn_util"
local core = require "tv_v2_core"
local tv_tensors = require "tv_tensors"

local Image, Video = tv_tensors.Image, tv_tensors.Video

return function(v2, shared)
  local Base = core.Transform:extend("_BaseMixUpCutMix")

  -- (alpha=1.0, num_classes=None, labels_getter="default")
  function Base:__init(...)
    core.Transform.__init(self)
    local a = U.parse(self.__name or "MixUp", {{"alpha", 1.0}, {"num_classes", nil}, {"labels_getter", "default"}}, ...)
    if type(a.alpha) ~= "number" or a.alpha <= 0 then
      U.errorf("alpha must be a positive number, got %s", U.pystr(a.alpha))
    end
    self.alpha = a.alpha + 0.0
    rawset(self, "_dist", torch.distributions.Beta(torch.tensor({self.alpha}), torch.tensor({self.alpha})))
    self.num_classes = a.num_classes
    rawset(self, "_labels_getter", shared.parse_labels_getter(a.labels_getter))
  end

  function Base:_lambda() return self._dist:sample():item() end

  function Base:forward(...)
    return shared.over_sample(function(flat, inputs)
      local needs = self:_needs_transform_list(flat)
      if core.has_any(flat, core.PIL, tv_tensors.BoundingBoxes, tv_tensors.Mask) then
        U.errorf("%s() does not support PIL images, bounding boxes and masks.", self.__name)
      end
      local labels = self:_labels(inputs)
      local chosen = {}
      for i, inpt in ipairs(flat) do if needs[i] then chosen[#chosen + 1] = inpt end end
      local params = self:make_params(chosen)
      params.batch_size = labels:size(0)
      local out = {}
      for i, inpt in ipairs(flat) do
        if rawequal(inpt, labels) then
          out[i] = self:_mixup_label(inpt, params.lam)
        elseif needs[i] and (core.is_pure_tensor(inpt) or tv_tensors.isinstance(inpt, {Image, Video})) then
          self:_check_image_or_video(inpt, params.batch_size)
          local mixed = self:_mix(inpt:view(inpt.shape), params)
          out[i] = tv_tensors.type_of(inpt) and tv_tensors.wrap(mixed, {like = inpt}) or mixed
        else
          out[i] = inpt
        end
      end
      return out
    end, ...)
  end

  -- the sample's labels, checked
  function Base:_labels(inputs)
    local labels = self._labels_getter(inputs)
    if not torch.is_tensor(labels) then U.errorf("The labels must be a tensor, but got %s instead.", U.typename(labels)) end
    if labels:dim() ~= 1 and labels:dim() ~= 2 then
      U.errorf("labels should be index based with shape (batch_size,) or probability based with shape " ..
        "(batch_size, num_classes), but got a tensor of shape %s instead.", U.shape_str(labels))
    end
    if labels:dim() == 2 and self.num_classes ~= nil and labels:size(-1) ~= self.num_classes then
      U.errorf("When passing 2D labels, the number of elements in last dimension must match num_classes: %d != %d. " ..
        "You can Leave num_classes to None.", labels:size(-1), self.num_classes)
    end
    if labels:dim() == 1 and self.num_classes == nil then
      U.error("num_classes must be passed if the labels are index-based (1D)")
    end
    return labels
  end

  function Base:_check_image_or_video(inpt, batch_size)
    local want = tv_tensors.isinstance(inpt, Video) and 5 or 4
    if inpt:dim() ~= want then
      U.errorf("Expected a batched input with %d dims, but got %d dimensions instead.", want, inpt:dim())
    end
    if inpt:size(0) ~= batch_size then
      U.errorf("The batch size of the image or video does not match the batch size of the labels: %d != %d.",
        inpt:size(0), batch_size)
    end
  end

  -- lam * label + (1 - lam) * the label before it, over one-hot (float) labels
  function Base:_mixup_label(label, lam)
    if label:dim() == 1 then label = torch.nn.functional.one_hot(label, self.num_classes) end
    if not label:is_floating_point() then label = label:float() end
    return label:roll(1, 0):mul_(1.0 - lam):add_(label:mul(lam))
  end

  function Base:extra_repr()
    return string.format("alpha=%s, num_classes=%s", U.pystr(self.alpha), U.pystr(self.num_classes))
  end

  local MixUp = Base:extend("MixUp")
  function MixUp:make_params() return {lam = self:_lambda()} end
  function MixUp:_mix(x, params)
    return x:roll(1, 0):mul_(1.0 - params.lam):add_(x:mul(params.lam))
  end
  v2.MixUp = MixUp

  -- CutMix: a box of area about (1 - lambda) of the image, centred at a uniform pixel and cut at
  -- the borders, is pasted from the image before; lambda becomes 1 - the box's share of the area.
  local CutMix = Base:extend("CutMix")
  function CutMix:make_params(flat_inputs)
    local lam = self:_lambda()
    local h, w = core.query_size(flat_inputs)
    local rx = torch.randint(w, {1}):item()
    local ry = torch.randint(h, {1}):item()
    local r = 0.5 * math.sqrt(1.0 - lam)
    local rw, rh = math.floor(r * w), math.floor(r * h)
    local x1, y1 = math.max(rx - rw, 0), math.max(ry - rh, 0)
    local x2, y2 = math.min(rx + rw, w), math.min(ry + rh, h)
    return {box = {x1, y1, x2, y2}, lam = 1.0 - (x2 - x1) * (y2 - y1) / (w * h)}
  end
  function CutMix:_mix(x, params)
    local x1, y1, x2, y2 = table.unpack(params.box)
    local out = x:clone()
    if x2 > x1 and y2 > y1 then
      local function patch(t) return t:narrow(-2, y1, y2 - y1):narrow(-1, x1, x2 - x1) end
      patch(out):copy_(patch(x:roll(1, 0)))
    end
    return out
  end
  v2.CutMix = CutMix
end
