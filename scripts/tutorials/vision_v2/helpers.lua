-- The gallery's helpers.py for the transforms.v2 ports: plot() prints what the figure would show
-- (one line per image: its shape and dtype, its boxes and masks), and Python's type() and repr()
-- of the values the examples print.
local torch = require "torch"
local tv = require "torchvision"
local tvt = tv.tv_tensors

local M = {}

local modules = {Image = "_image", Video = "_video", Mask = "_mask", BoundingBoxes = "_bounding_boxes",
  KeyPoints = "_keypoints"}

-- Python's type(x) as it prints
function M.pytype(x)
  local cls = tvt.type_of(x)
  if cls then
    local mod = modules[cls.__name]
    return mod and string.format("<class 'torchvision.tv_tensors.%s.%s'>", mod, cls.__name)
      or string.format("<class '__main__.%s'>", cls.__name)
  end
  if torch.is_tensor(x) then return "<class 'torch.Tensor'>" end
  if tv.io.Image.isImageType(x) then return "<class 'PIL.Image.Image'>" end
  if math.type(x) == "integer" then return "<class 'int'>" end
  if math.type(x) == "float" then return "<class 'float'>" end
  if type(x) == "string" then return "<class 'str'>" end
  if type(x) == "table" then return (x[1] ~= nil or next(x) == nil) and "<class 'list'>" or "<class 'dict'>" end
  return "<class '" .. type(x) .. "'>"
end

-- Python's repr of nested lists (printed as tuples when tuple is true), dicts, strings, numbers
function M.pyrepr(x, tuple)
  if type(x) == "string" then return "'" .. x .. "'" end
  if type(x) ~= "table" or torch.is_tensor(x) then return tostring(x) end
  local parts = {}
  if x[1] ~= nil then
    for i, v in ipairs(x) do parts[i] = M.pyrepr(v, tuple) end
    if tuple then return "(" .. table.concat(parts, ", ") .. (#parts == 1 and ",)" or ")") end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  local keys = {}
  for k in pairs(x) do keys[#keys + 1] = k end
  table.sort(keys)
  for i, k in ipairs(keys) do parts[i] = "'" .. k .. "': " .. M.pyrepr(x[k], tuple) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local function describe(img)
  if tv.io.Image.isImageType(img) then return string.format("PIL image %dx%d", img.width, img.height) end
  return string.format("image %s %s", tostring(img.shape), tostring(img.dtype))
end

-- plot(imgs): one row of images; an entry is an image, or {image, boxes} or {image, target}
-- with target.boxes / target.masks (the gallery's examples plot one row)
function M.plot(imgs)
  for c, entry in ipairs(imgs) do
    local img, boxes, masks = entry, nil, nil
    if type(entry) == "table" and not torch.is_tensor(entry) and not tv.io.Image.isImageType(entry) then
      img = entry[1]
      local target = entry[2]
      if torch.is_tensor(target) then boxes = target
      elseif type(target) == "table" then boxes, masks = target.boxes, target.masks end
    end
    local line = string.format("plot %d: %s", c - 1, describe(img))
    if boxes then
      local rows = {}
      for i, b in ipairs(boxes:tolist()) do
        for j, v in ipairs(b) do b[j] = string.format("%.0f", v) end
        rows[i] = "[" .. table.concat(b, ", ") .. "]"
      end
      line = line .. string.format(", %d boxes %s", boxes:size(0), table.concat(rows, " "))
    end
    if masks then line = line .. string.format(", masks %s", tostring(masks.shape)) end
    print(line)
  end
end

-- the folder of the gallery's assets: --assets DIR on the command line, else ../assets
function M.assets()
  for i = 1, #arg - 1 do if arg[i] == "--assets" then return arg[i + 1] end end
  return "../assets"
end

return M
