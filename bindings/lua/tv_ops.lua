-- torchvision.ops (require("torchvision").ops): box functions and losses (tv_ops_boxes), RoI pooling
-- (tv_ops_roi), deformable convolution (tv_ops_deform), layers (tv_ops_layers, also ops.misc) and the
-- feature pyramid network (tv_ops_fpn). ops.boxes, ops.misc, ops.poolers, ops.feature_pyramid_network
-- mirror torchvision's submodules.
local M = {}

local parts = {
  boxes = require "tv_ops_boxes",
  roi = require "tv_ops_roi",
  deform = require "tv_ops_deform",
  misc = require "tv_ops_layers",
  feature_pyramid_network = require "tv_ops_fpn",
}
for _, part in pairs(parts) do
  for k, v in pairs(part) do
    if k:sub(1, 1) ~= "_" then M[k] = v end
  end
end
M.boxes, M.misc, M.feature_pyramid_network = parts.boxes, parts.misc, parts.feature_pyramid_network
M.poolers = { MultiScaleRoIAlign = parts.roi.MultiScaleRoIAlign }
M.stochastic_depth = parts.misc.stochastic_depth

return M
