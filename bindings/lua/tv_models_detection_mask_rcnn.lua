-- torchvision.models.detection.mask_rcnn: MaskRCNN (Faster R-CNN plus a mask branch in its RoIHeads),
-- MaskRCNNHeads, MaskRCNNPredictor and maskrcnn_resnet50_fpn.
--   train: targets also hold masks = [N, H, W] uint8; the losses gain loss_mask
--   eval:  each detection also has masks = [K, 1, H, W] probabilities in the original image
local torch = require "torch"
local U = require "nn_util"
local nn = torch.nn
local layers = require "tv_ops_layers"
local ops_roi = require "tv_ops_roi"
local rpn = require "tv_models_detection_rpn"

return function(models, backbone_utils, faster_rcnn)

local M = {}

-- ---- MaskRCNNHeads ----

local MaskRCNNHeads = nn.Sequential:extend("MaskRCNNHeads")
M.MaskRCNNHeads = MaskRCNNHeads

-- (in_channels, layers, dilation, {norm_layer=nil}): a 3x3 conv (+ norm) + ReLU per entry of layers
function MaskRCNNHeads:__init(...)
  local o = U.parse("MaskRCNNHeads", { { "in_channels", U.REQUIRED }, { "layers", U.REQUIRED },
    { "dilation", U.REQUIRED }, { "norm_layer" } }, ...)
  local blocks, c = {}, o.in_channels
  for i, f in ipairs(o.layers) do
    blocks[i] = layers.Conv2dNormActivation(c, f, { kernel_size = 3, stride = 1, padding = o.dilation,
      dilation = o.dilation, norm_layer = o.norm_layer or false })
    c = f
  end
  nn.Sequential.__init(self, table.unpack(blocks))
  rpn._kaiming_init_convs(self)
end

-- ---- MaskRCNNPredictor ----

local MaskRCNNPredictor = nn.Sequential:extend("MaskRCNNPredictor")
M.MaskRCNNPredictor = MaskRCNNPredictor

-- (in_channels, dim_reduced, num_classes): conv5_mask (2x2 transposed conv, stride 2), relu,
-- mask_fcn_logits (1x1 conv to one mask per class)
function MaskRCNNPredictor:__init(...)
  local o = U.parse("MaskRCNNPredictor", { { "in_channels", U.REQUIRED }, { "dim_reduced", U.REQUIRED },
    { "num_classes", U.REQUIRED } }, ...)
  nn.Sequential.__init(self, {
    { "conv5_mask", nn.ConvTranspose2d(o.in_channels, o.dim_reduced, 2, 2, 0) },
    { "relu", nn.ReLU(true) },
    { "mask_fcn_logits", nn.Conv2d(o.dim_reduced, o.num_classes, 1, 1, 0) },
  })
  for _, np in ipairs(self:named_parameters()) do
    if np[1]:find("weight") then nn.init.kaiming_normal_(np[2], { mode = "fan_out", nonlinearity = "relu" }) end
  end
end

-- ---- MaskRCNN ----

local MaskRCNN = faster_rcnn.FasterRCNN:extend("MaskRCNN")
M.MaskRCNN = MaskRCNN

-- FasterRCNN's keywords with the mask ones after bbox_reg_weights (torchvision's positional order)
local mask_keys = {}
for _, k in ipairs(faster_rcnn._faster_keys) do
  mask_keys[#mask_keys + 1] = k
  if k[1] == "bbox_reg_weights" then
    for _, m in ipairs({ "mask_roi_pool", "mask_head", "mask_predictor" }) do mask_keys[#mask_keys + 1] = { m } end
  end
end

-- MaskRCNN(backbone, num_classes, {mask_roi_pool=, mask_head=, mask_predictor=, ... FasterRCNN's keywords})
function MaskRCNN:__init(backbone, ...)
  local spec = { { "num_classes" } }
  for _, k in ipairs(mask_keys) do spec[#spec + 1] = k end
  local o = U.parse("MaskRCNN", spec, ...)
  if o.mask_roi_pool ~= nil and not nn.isinstance(o.mask_roi_pool, { ops_roi.MultiScaleRoIAlign, ops_roi.RoIAlign }) then
    U.errorf("mask_roi_pool should be of type MultiScaleRoIAlign or None instead of %s", U.typename(o.mask_roi_pool))
  end
  if o.num_classes ~= nil and o.mask_predictor ~= nil then
    U.error("num_classes should be None when mask_predictor is specified")
  end
  local out_channels = backbone and backbone.out_channels
  local pool = o.mask_roi_pool or ops_roi.MultiScaleRoIAlign({ "0", "1", "2", "3" }, 14, 2)
  local head = o.mask_head or (out_channels and MaskRCNNHeads(out_channels, { 256, 256, 256, 256 }, 1))
  local predictor = o.mask_predictor or MaskRCNNPredictor(256, 256, o.num_classes)
  local kw = { num_classes = o.num_classes }
  for _, k in ipairs(faster_rcnn._faster_keys) do kw[k[1]] = o[k[1]] end
  faster_rcnn.FasterRCNN.__init(self, backbone, kw)
  self.roi_heads.mask_roi_pool = pool
  self.roi_heads.mask_head = head
  self.roi_heads.mask_predictor = predictor
end

-- maskrcnn_resnet50_fpn{weights=nil, num_classes=91, weights_backbone=nil, trainable_backbone_layers=nil,
-- ... MaskRCNN's keywords}
function M.maskrcnn_resnet50_fpn(...)
  local fname = "maskrcnn_resnet50_fpn"
  local o = faster_rcnn._builder_opts(fname, mask_keys, ...)
  local w, wb, trained = faster_rcnn._resolve_weights(fname, o, "resnet50")
  local trainable = backbone_utils._validate_trainable_layers(trained, o.trainable_backbone_layers, 5, 3)
  local backbone = backbone_utils._resnet_fpn_extractor(faster_rcnn._resnet50_backbone(wb, trained, o), trainable)
  return faster_rcnn._load_weights(fname, MaskRCNN(backbone, faster_rcnn._model_kw(o, mask_keys)), w, o)
end

-- maskrcnn_resnet50_fpn_v2{...}: fasterrcnn_resnet50_fpn_v2's parts and a mask head with BatchNorm2d
function M.maskrcnn_resnet50_fpn_v2(...)
  local fname = "maskrcnn_resnet50_fpn_v2"
  local o = faster_rcnn._builder_opts(fname, mask_keys, ...)
  local w, wb, trained = faster_rcnn._resolve_weights(fname, o, "resnet50")
  local kw = faster_rcnn._model_kw(o, mask_keys)
  local backbone = faster_rcnn._v2_parts(o, kw, wb, trained)
  kw.mask_head = MaskRCNNHeads(backbone.out_channels, { 256, 256, 256, 256 }, 1, { norm_layer = nn.BatchNorm2d })
  return faster_rcnn._load_weights(fname, MaskRCNN(backbone, kw), w, o)
end

return M
end
