-- torchvision.utils: make_grid and save_image, with torchvision's defaults
-- (nrow=8, padding=2, normalize=false, value_range=nil, scale_each=false,
-- pad_value=0). Arguments are positional in torchvision's order or a keyword table.
local torch = require "torch"
local Image = require("tv_io").Image

local M = {}

local grid_keys = {"nrow", "padding", "normalize", "value_range", "scale_each", "pad_value"}

local function is_opts(t)
  return type(t) == "table" and getmetatable(t) == nil and t[1] == nil and next(t) ~= nil
end

-- the options after the tensor, positional or {key=}, with defaults
local function grid_opts(fn, extra, ...)
  local n, args = select("#", ...), {...}
  local o = {}
  local keys = {}
  for _, k in ipairs(grid_keys) do keys[#keys + 1] = k end
  for _, k in ipairs(extra) do keys[#keys + 1] = k end
  if n > 0 and is_opts(args[n]) then
    for k, v in pairs(args[n]) do
      local known = false
      for _, name in ipairs(keys) do known = known or name == k end
      if not known then error(string.format("%s: unknown keyword '%s'", fn, tostring(k)), 3) end
      o[k] = v
    end
    n = n - 1
  end
  for i = 1, n do o[grid_keys[i]] = args[i] end
  if o.nrow == nil then o.nrow = 8 end
  if o.padding == nil then o.padding = 2 end
  if o.pad_value == nil then o.pad_value = 0 end
  return o
end

local function norm_ip(img, low, high)
  img:clamp_(low, high)
  img:sub_(low):div_(math.max(high - low, 1e-5))
end

local function norm_range(t, value_range)
  if value_range then norm_ip(t, value_range[1], value_range[2])
  else norm_ip(t, t:min():item(), t:max():item()) end
end

local function make_grid(fn, tensor, o)
  if type(tensor) == "table" and getmetatable(tensor) == nil then tensor = torch.stack(tensor, 0) end
  if not torch.is_tensor(tensor) then error(fn .. ": tensor or list of tensors expected, got " .. type(tensor), 3) end
  if tensor:dim() == 2 then tensor = tensor:unsqueeze(0) end
  if tensor:dim() == 3 then
    if tensor:size(0) == 1 then tensor = torch.cat({tensor, tensor, tensor}, 0) end
    tensor = tensor:unsqueeze(0)
  end
  if tensor:dim() ~= 4 then error(fn .. ": expected 2, 3 or 4 dims, got shape " .. tostring(tensor.shape), 3) end
  if tensor:size(1) == 1 then tensor = torch.cat({tensor, tensor, tensor}, 1) end
  if o.normalize then
    tensor = tensor:clone()
    if o.scale_each then
      for k = 0, tensor:size(0) - 1 do norm_range(tensor[k], o.value_range) end
    else
      norm_range(tensor, o.value_range)
    end
  end
  if tensor:size(0) == 1 then return tensor:squeeze(0) end
  local nmaps = tensor:size(0)
  local xmaps = math.min(o.nrow, nmaps)
  local ymaps = math.ceil(nmaps / xmaps)
  local padding = o.padding
  local height, width = tensor:size(2) + padding, tensor:size(3) + padding
  local grid = torch.full({tensor:size(1), height * ymaps + padding, width * xmaps + padding}, o.pad_value,
    {dtype = tensor.dtype, device = tensor.device})
  local k = 0
  for y = 0, ymaps - 1 do
    for x = 0, xmaps - 1 do
      if k >= nmaps then break end
      grid:narrow(1, y * height + padding, height - padding):narrow(2, x * width + padding, width - padding):copy_(tensor[k])
      k = k + 1
    end
  end
  return grid
end

-- make_grid(tensor [B, C, H, W] or list of [C, H, W], nrow, padding, normalize, value_range, scale_each, pad_value)
function M.make_grid(tensor, ...) return make_grid("make_grid", tensor, grid_opts("make_grid", {}, ...)) end

-- save_image(tensor, path, ...make_grid's options..., {format=}): PNG or JPEG by extension
function M.save_image(tensor, path, ...)
  path = require("pyos_sys").pathlike(path)
  if type(path) ~= "string" then error("save_image: expected a file path, got " .. type(path), 2) end
  local o = grid_opts("save_image", {"format"}, ...)
  local grid = make_grid("save_image", tensor, o)
  -- add 0.5 after unnormalizing to [0, 255] to round to the nearest integer
  local nd = grid:mul(255):add_(0.5):clamp_(0, 255):permute(1, 2, 0):to(torch.uint8)
  Image.fromarray(nd:cpu()):save(path, o.format)
end

require("tv_utils_draw")(M) -- draw_bounding_boxes, draw_segmentation_masks, draw_keypoints, flow_to_image

return M
