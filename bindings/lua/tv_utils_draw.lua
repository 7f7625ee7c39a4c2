-- torchvision.utils: draw_bounding_boxes, draw_segmentation_masks, draw_keypoints and
-- flow_to_image, with torchvision's arguments and checks. They are tensor code (any device), where
-- torchvision draws through PIL:
--  * boxes: Pillow's rectangle (the outline is the `width` pixels inside the box's edges; fill
--    blends the colour at alpha 100 over the whole box with Pillow's rounding), bit-exact;
--  * labels need a font (Pillow's text drawing): not available, labels= is an error;
--  * keypoints: disks (the pixels whose centres lie within radius + 1/2 of the point, the 5 x 5
--    disk without its corners for radius 2; none when colors is nil, as torchvision's Pillow call
--    draws them) and lines (the pixels within width / 2 of the segment);
--    Pillow's ellipse and wide-line rasterisation can differ from these by a pixel at the edges.
local torch = require "torch"
local U = require "nn_util"

return function(M)

local function check_image(fn, image, allow_float, rgb_only)
  if not torch.is_tensor(image) then U.errorf("Tensor expected, got %s", U.typename(image)) end
  if image.dtype ~= torch.uint8 and not (allow_float and image:is_floating_point()) then
    U.errorf("The image dtype must be uint8%s, got %s", allow_float and " or float" or "", tostring(image.dtype))
  end
  if image:dim() ~= 3 then U.error("Pass individual images, not batches") end
  if rgb_only and image:size(0) ~= 3 then U.error("Pass an RGB image. Other Image formats are not supported") end
  if not rgb_only and image:size(0) ~= 1 and image:size(0) ~= 3 then
    U.error("Only grayscale and RGB images are supported")
  end
end

-- ImageColor.getrgb's names and #rgb / #rrggbb forms (the colours torchvision users name most)
local NAMED = {black = {0, 0, 0}, white = {255, 255, 255}, red = {255, 0, 0}, lime = {0, 255, 0},
  green = {0, 128, 0}, blue = {0, 0, 255}, yellow = {255, 255, 0}, cyan = {0, 255, 255}, aqua = {0, 255, 255},
  magenta = {255, 0, 255}, fuchsia = {255, 0, 255}, orange = {255, 165, 0}, purple = {128, 0, 128},
  pink = {255, 192, 203}, brown = {165, 42, 42}, gray = {128, 128, 128}, grey = {128, 128, 128},
  silver = {192, 192, 192}, maroon = {128, 0, 0}, navy = {0, 0, 128}, olive = {128, 128, 0}, teal = {0, 128, 128},
  gold = {255, 215, 0}, violet = {238, 130, 238}, indigo = {75, 0, 130}, darkgreen = {0, 100, 0},
  darkblue = {0, 0, 139}, darkred = {139, 0, 0}, lightgray = {211, 211, 211}, lightgrey = {211, 211, 211}}

local function getrgb(c)
  if type(c) ~= "string" then return c end
  local s = c:lower():gsub("%s", "")
  if NAMED[s] then return NAMED[s] end
  local r, g, b = s:match("^#(%x%x)(%x%x)(%x%x)$")
  if r then return {tonumber(r, 16), tonumber(g, 16), tonumber(b, 16)} end
  r, g, b = s:match("^#(%x)(%x)(%x)$")
  if r then return {tonumber(r .. r, 16), tonumber(g .. g, 16), tonumber(b .. b, 16)} end
  U.errorf("unknown color specifier: '%s'", c)
end

-- torchvision's _parse_colors: one colour per object, as {r, g, b}
local function parse_colors(colors, n)
  local out = {}
  if colors == nil then
    for i = 0, n - 1 do -- _generate_color_palette
      out[i + 1] = {i * (2 ^ 25 - 1) % 255, i * (2 ^ 15 - 1) % 255, i * (2 ^ 21 - 1) % 255}
      for k = 1, 3 do out[i + 1][k] = math.tointeger(out[i + 1][k]) end
    end
    return out
  end
  if type(colors) == "table" and type(colors[1]) ~= "number" then
    if #colors < n then
      U.errorf("Number of colors must be equal or larger than the number of objects, but got %d < %d.", #colors, n)
    end
    for i = 1, n do out[i] = getrgb(colors[i]) end
    return out
  end
  if type(colors) ~= "string" and type(colors) ~= "table" then
    U.errorf("`colors` must be a tuple or a string, or a list thereof, but got %s.", U.pystr(colors))
  end
  if type(colors) == "table" and #colors ~= 3 then
    U.errorf("If passed as tuple, colors should be an RGB triplet, but got %s.", U.pystr(colors))
  end
  local c = getrgb(colors)
  for i = 1, n do out[i] = c end
  return out
end
M._parse_colors = parse_colors

-- row and column index grids [H, W] (int64) on the image's device
local function grids(h, w, device)
  local ys = torch.arange(h, {dtype = torch.int64, device = device}):reshape(h, 1):expand(h, w)
  local xs = torch.arange(w, {dtype = torch.int64, device = device}):reshape(1, w):expand(h, w)
  return ys, xs
end

local function color_tensor(c, dtype, device)
  return torch.tensor(c, {dtype = dtype, device = device}):reshape(3, 1, 1)
end

-- uint8 <-> float as v2's to_dtype(scale=True)
local function to_uint8(image) return image:mul(255 + 1.0 - 1e-3):to(torch.uint8) end

local function in_box(ys, xs, x0, y0, x1, y1)
  return xs:ge(x0):logical_and(xs:le(x1)):logical_and(ys:ge(y0)):logical_and(ys:le(y1))
end

-- draw_bounding_boxes(image, boxes, {labels, colors, fill=false, width=1, font, font_size, label_colors, fill_labels})
function M.draw_bounding_boxes(...)
  local o = U.parse("draw_bounding_boxes", {{"image", U.REQUIRED}, {"boxes", U.REQUIRED}, {"labels"}, {"colors"},
    {"fill", false}, {"width", 1}, {"font"}, {"font_size"}, {"label_colors"}, {"fill_labels", false}}, ...)
  local image, boxes = o.image, o.boxes
  check_image("draw_bounding_boxes", image, true, false)
  if not torch.is_tensor(boxes) or boxes:dim() ~= 2 or boxes:size(1) ~= 4 then
    U.errorf("boxes should be a tensor [N, 4] of (xmin, ymin, xmax, ymax), got %s", U.typename(boxes))
  end
  local n = boxes:size(0)
  if n > 0 and (boxes:select(1, 0):gt(boxes:select(1, 2)):any():item() or boxes:select(1, 1):gt(boxes:select(1, 3)):any():item()) then
    U.error("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use torchvision.ops.box_convert to convert them")
  end
  if n == 0 then
    U.warn("boxes doesn't contain any box. No box was drawn")
    return image
  end
  if o.labels ~= nil then
    if #o.labels ~= n then
      U.errorf("Number of boxes (%d) and labels (%d) mismatch. Please specify labels for each box.", n, #o.labels)
    end
    U.error("draw_bounding_boxes: labels= needs a font to draw text, which nnrepl does not have; draw the boxes " ..
      "without labels (colors= can tell classes apart)")
  end
  local colors = parse_colors(o.colors, n)
  local width = o.width
  local original = image.dtype
  if image:size(0) == 1 then image = torch.tile(image, {3, 1, 1}) end
  if image:is_floating_point() then image = to_uint8(image) end
  local out = image:to(torch.int32)
  local h, w = out:size(1), out:size(2)
  local ys, xs = grids(h, w, out.device)
  for i, b in ipairs(boxes:to(torch.int64):tolist()) do
    local x0, y0, x1, y1 = b[1], b[2], b[3], b[4]
    local c = color_tensor(colors[i], torch.int32, out.device)
    local rect = in_box(ys, xs, x0, y0, x1, y1)
    if o.fill then
      -- Pillow's blend of an RGBA ink at alpha 100: DIV255(dst * 155 + ink * 100)
      local t = out * (255 - 100) + c * 100 + 128
      t = (t:bitwise_right_shift(8) + t):bitwise_right_shift(8)
      out = torch.where(rect, t, out)
    end
    if width ~= 0 then
      local inner = in_box(ys, xs, x0 + width, y0 + width, x1 - width, y1 - width)
      out = torch.where(rect:logical_and(inner:logical_not()), c:expand(3, h, w), out)
    end
  end
  out = out:to(torch.uint8)
  if torch.empty(0, {dtype = original}):is_floating_point() then out = out:to(original):mul_(1.0 / 255) end
  return out
end

-- draw_segmentation_masks(image, masks, {alpha=0.8, colors}): each mask painted in its colour, pixels
-- of two or more masks black, blended over the image at alpha
function M.draw_segmentation_masks(...)
  local o = U.parse("draw_segmentation_masks", {{"image", U.REQUIRED}, {"masks", U.REQUIRED}, {"alpha", 0.8},
    {"colors"}}, ...)
  local image, masks, alpha = o.image, o.masks, o.alpha
  check_image("draw_segmentation_masks", image, true, true)
  if not torch.is_tensor(masks) then U.errorf("masks should be a tensor, got %s", U.typename(masks)) end
  if masks:dim() == 2 then masks = masks:unsqueeze(0) end
  if masks:dim() ~= 3 then U.error("masks must be of shape (H, W) or (batch_size, H, W)") end
  if masks.dtype ~= torch.bool then U.errorf("The masks must be of dtype bool. Got %s", tostring(masks.dtype)) end
  if masks:size(1) ~= image:size(1) or masks:size(2) ~= image:size(2) then
    U.error("The image and the masks must have the same height and width")
  end
  local n = masks:size(0)
  if n == 0 then
    U.warn("masks doesn't contain any mask. No mask was drawn")
    return image
  end
  local dtype = image.dtype
  local float = image:is_floating_point()
  local colors = parse_colors(o.colors, n)
  local drawn = image:detach():clone()
  for i = 1, n do
    local c = colors[i]
    if float then c = {c[1] / 255, c[2] / 255, c[3] / 255} end
    drawn = torch.where(masks[i - 1], color_tensor(c, dtype, image.device), drawn)
  end
  local overlap = masks:sum(0):gt(1)
  drawn = torch.where(overlap, torch.zeros({}, {dtype = dtype, device = image.device}), drawn)
  local out = image * (1 - alpha) + drawn * alpha
  return out:to(dtype)
end

-- draw_keypoints(image, keypoints, {connectivity, colors, radius=2, width=3, visibility}): keypoints
-- [num_instances, K, 2] (x, y); connectivity a list of {i, j} pairs (0-based) joined by lines
function M.draw_keypoints(...)
  local o = U.parse("draw_keypoints", {{"image", U.REQUIRED}, {"keypoints", U.REQUIRED}, {"connectivity"},
    {"colors"}, {"radius", 2}, {"width", 3}, {"visibility"}}, ...)
  local image, kpts = o.image, o.keypoints
  check_image("draw_keypoints", image, true, true)
  if not torch.is_tensor(kpts) or kpts:dim() ~= 3 then U.error("keypoints must be of shape (num_instances, K, 2)") end
  local vis = o.visibility
  if vis ~= nil then
    if not torch.is_tensor(vis) then vis = torch.tensor(vis, {dtype = torch.bool}) end
    if vis:dim() == 3 then vis = vis:squeeze(-1) end
    if vis:dim() ~= 2 or vis:size(0) ~= kpts:size(0) or vis:size(1) ~= kpts:size(1) then
      U.errorf("keypoints and visibility must have the same dimensionality for num_instances and K. Got %s for " ..
        "keypoints and %s for visibility", U.pystr(kpts.shape:totable()), U.pystr(vis.shape:totable()))
    end
    vis = vis:tolist()
  end
  local original = image.dtype
  if image:is_floating_point() then image = to_uint8(image) end
  -- colors=nil: Pillow's default ink (white) for the lines, and no disks (torchvision fills them with colors)
  local out = image:clone()
  local h, w = out:size(1), out:size(2)
  local ys, xs = grids(h, w, out.device)
  local c = color_tensor(o.colors and getrgb(o.colors) or {255, 255, 255}, torch.uint8, out.device)
  local r2 = (o.radius + 0.5) ^ 2
  local half = o.width / 2
  local fx, fy = xs:to(torch.float64), ys:to(torch.float64)
  for inst, pts in ipairs(kpts:to(torch.int64):tolist()) do
    local visible = function(k) return vis == nil or vis[inst][k] end
    for k, p in ipairs(pts) do
      if visible(k) and o.colors ~= nil then
        local d = (fx - p[1]):pow(2) + (fy - p[2]):pow(2)
        out = torch.where(d:le(r2), c, out)
      end
    end
    for _, pair in ipairs(o.connectivity or {}) do
      local a, b = pair[1] + 1, pair[2] + 1
      if visible(a) and visible(b) then
        local p, q = pts[a], pts[b]
        local dx, dy = q[1] - p[1], q[2] - p[2]
        local len2 = dx * dx + dy * dy
        local rx, ry = fx - p[1], fy - p[2]
        local mask
        if len2 == 0 then mask = (rx:pow(2) + ry:pow(2)):le(half * half)
        else
          local t = (rx * dx + ry * dy) / len2 -- position along the segment
          local dist2 = (rx * dy - ry * dx):pow(2) / len2 -- squared distance to the line
          mask = t:ge(0):logical_and(t:le(1)):logical_and(dist2:le(half * half))
        end
        out = torch.where(mask, c, out)
      end
    end
  end
  if torch.empty(0, {dtype = original}):is_floating_point() then out = out:to(original):mul_(1.0 / 255) end
  return out
end

-- the Middlebury colour wheel (55 x 3, float32), as torchvision computes it
local function make_colorwheel()
  local parts = {{"RY", 15}, {"YG", 6}, {"GC", 4}, {"CB", 11}, {"BM", 13}, {"MR", 6}}
  local wheel = torch.zeros(55, 3)
  local col = 0
  for _, p in ipairs(parts) do
    local n = p[2]
    local ramp = torch.floor(torch.arange(0, n):mul(255):div(n)) -- (255 * k) / n in float32
    local rows = wheel:narrow(0, col, n)
    local up, full, down = ramp, torch.full({n}, 255.0), ramp:neg():add(255)
    local set = {RY = {full, up, nil}, YG = {down, full, nil}, GC = {nil, full, up}, CB = {nil, down, full},
      BM = {up, nil, full}, MR = {full, nil, down}}
    for ch = 1, 3 do
      local v = set[p[1]][ch]
      if v then rows:select(1, ch - 1):copy_(v) end
    end
    col = col + n
  end
  return wheel
end

-- flow_to_image(flow): float32 flow [2, H, W] or [N, 2, H, W] -> uint8 RGB image(s)
function M.flow_to_image(flow)
  if not torch.is_tensor(flow) then U.errorf("flow_to_image: expected a tensor, got %s", U.typename(flow)) end
  if flow.dtype ~= torch.float32 then U.errorf("Flow should be of dtype torch.float, got %s.", tostring(flow.dtype)) end
  local orig = flow.shape
  if flow:dim() == 3 then flow = flow:unsqueeze(0) end
  if flow:dim() ~= 4 or flow:size(1) ~= 2 then
    U.errorf("Input flow should have shape (2, H, W) or (N, 2, H, W), got %s.", tostring(orig))
  end
  local max_norm = flow:pow(2):sum(1):sqrt():max()
  local nf = flow / (max_norm + torch.finfo(torch.float32).eps)
  local wheel = make_colorwheel():to(flow.device)
  local ncols = wheel:size(0)
  local norm = nf:pow(2):sum(1):sqrt()
  local u, v = nf:select(1, 0), nf:select(1, 1)
  local ny, nx = -v, -u
  local a = torch.atan2(ny, nx) / math.pi -- atan2(+-0, x < 0) is +-pi: the zero's sign picks the wheel's end
  local fk = (a + 1) / 2 * (ncols - 1)
  local k0 = torch.floor(fk):to(torch.int64)
  local k1 = k0 + 1
  k1 = torch.where(k1:eq(ncols), torch.zeros({}, {dtype = torch.int64, device = flow.device}), k1)
  local f = fk - k0
  local chans = {}
  for c = 0, 2 do
    local tmp = wheel:select(1, c)
    local col0 = tmp:index_select(0, k0:reshape(-1)):reshape(k0.shape) / 255.0
    local col1 = tmp:index_select(0, k1:reshape(-1)):reshape(k1.shape) / 255.0
    local col = (1 - f) * col0 + f * col1
    col = 1 - norm * (1 - col)
    chans[c + 1] = torch.floor(col * 255):to(torch.uint8)
  end
  local img = torch.stack(chans, 1)
  if #orig:totable() == 3 then img = img[0] end
  return img
end

end
