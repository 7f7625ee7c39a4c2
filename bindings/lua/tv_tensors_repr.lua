-- How tv_tensors print, as torchvision's reprs: the class name in place of "tensor" (the rows
-- re-indented under it), then Image / Video / Mask add ", )" and BoundingBoxes / KeyPoints their
-- metadata (format=BoundingBoxFormat.XYXY, canvas_size=(H, W), clamping_mode=soft); a class made
-- with TVTensor:extend prints as a plain tensor under its own name.
local torch = require "torch"

return function(M)
  local mt = getmetatable(torch.zeros(0))
  local plain = mt.__tostring
  local function canvas(x) return string.format("canvas_size=(%d, %d)", x.canvas_size[1], x.canvas_size[2]) end
  local extras = {
    [M.Image] = function() return "" end, [M.Video] = function() return "" end, [M.Mask] = function() return "" end,
    [M.BoundingBoxes] = function(b)
      return string.format("format=BoundingBoxFormat.%s, %s, clamping_mode=%s", b.format, canvas(b), tostring(b.clamping_mode))
    end,
    [M.KeyPoints] = function(k) return canvas(k) end,
  }
  mt.__tostring = function(t)
    local s = plain(t)
    local cls = M.type_of(t)
    local body = cls and s:match("^tensor%((.*)%)$")
    if not body then return s end
    local name = cls.__name
    body = body:gsub("\n       ", "\n" .. string.rep(" ", #name + 1))
    local extra = extras[cls]
    if extra == nil then return name .. "(" .. body .. ")" end
    return name .. "(" .. body .. ", " .. extra(t) .. ")"
  end
end
