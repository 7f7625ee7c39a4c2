-- transforms.v2's transforms of boxes and keypoints (convert, clamp, sanitize), CutMix and
-- MixUp, and its other new transforms (JPEG, GaussianNoise, RGB, RandomChannelPermutation, ...).
-- The pieces are in tv_v2_meta (boxes, keypoints), tv_v2_mix (CutMix, MixUp) and tv_v2_misc.
local torch = require "torch"
local U = require "nn_util"
local core = require "tv_v2_core"

-- torchvision's labels_getter: "default" (the heuristic below), a function of the inputs, or
-- false (Python's None: no labels).
local function find_labels_default(inputs)
  local t = inputs
  if type(t) == "table" and getmetatable(t) == nil and t[1] ~= nil then t = t[2] end
  if torch.is_tensor(t) then return t end
  if type(t) ~= "table" or getmetatable(t) ~= nil then
    U.errorf("When using the default labels_getter, the input passed to forward must be a dictionary or a two-tuple " ..
      "whose second item is a dictionary or a tensor, but got %s instead.", U.typename(t))
  end
  local keys = {}
  for k in pairs(t) do if type(k) == "string" then keys[#keys + 1] = k end end
  table.sort(keys)
  for _, k in ipairs(keys) do if k:lower() == "labels" then return t[k] end end
  for _, k in ipairs(keys) do if k:lower():find("label", 1, true) then return t[k] end end
  U.error("Could not infer where the labels are in the sample. Try passing a callable as the labels_getter " ..
    "parameter?If there are no labels in the sample by design, pass labels_getter=None.")
end

local function parse_labels_getter(getter)
  if getter == "default" then return find_labels_default end
  if type(getter) == "function" or (getmetatable(getter) or {}).__call then return getter end
  if getter == false then return function() return nil end end
  U.errorf("labels_getter should either be 'default', a callable, or None (false), but got %s.", U.pystr(getter))
end

return function(v2, T, H)
  local shared = {parse_labels_getter = parse_labels_getter, over_sample = core.over_sample}
  require("tv_v2_meta")(v2, shared)
  require("tv_v2_mix")(v2, shared)
  require("tv_v2_misc")(v2, T, H)
end
