-- torchvision.models.detection: Faster R-CNN (fasterrcnn_resnet50_fpn, fasterrcnn_mobilenet_v3_large_fpn and _320_fpn,
-- FasterRCNN and its parts), Mask R-CNN (maskrcnn_resnet50_fpn) and RetinaNet (retinanet_resnet50_fpn),
-- with torchvision's submodules (detection.faster_rcnn.FastRCNNPredictor, detection.rpn,
-- detection.roi_heads, detection.transform, detection.anchor_utils, detection._utils,
-- detection.backbone_utils, detection.generalized_rcnn, detection.image_list, detection.retinanet,
-- detection.mask_rcnn).
return function(models)
  local utils = require "tv_models_detection_utils"
  local transform = require "tv_models_detection_transform"
  local rpn = require "tv_models_detection_rpn"
  local roi_heads = require "tv_models_detection_roi_heads"
  local backbone_utils = require("tv_models_detection_backbone")(models)
  local faster_rcnn = require("tv_models_detection_faster_rcnn")(models, backbone_utils)
  local retinanet = require("tv_models_detection_retinanet")(models, backbone_utils, faster_rcnn)
  local mask_rcnn = require("tv_models_detection_mask_rcnn")(models, backbone_utils, faster_rcnn)

  local D = {
    _utils = utils,
    transform = transform,
    image_list = { ImageList = transform.ImageList },
    anchor_utils = { AnchorGenerator = rpn.AnchorGenerator },
    rpn = rpn,
    roi_heads = roi_heads,
    backbone_utils = backbone_utils,
    generalized_rcnn = { GeneralizedRCNN = faster_rcnn.GeneralizedRCNN },
    faster_rcnn = faster_rcnn,
    retinanet = retinanet,
    mask_rcnn = mask_rcnn,
  }
  models._utils = models._utils or {}
  models._utils.IntermediateLayerGetter = backbone_utils.IntermediateLayerGetter
  for _, k in ipairs({ "FasterRCNN", "GeneralizedRCNN", "fasterrcnn_resnet50_fpn", "FastRCNNPredictor",
    "fasterrcnn_mobilenet_v3_large_fpn", "fasterrcnn_mobilenet_v3_large_320_fpn", "fasterrcnn_resnet50_fpn_v2",
    "FastRCNNConvFCHead",
    "TwoMLPHead" }) do
    D[k] = faster_rcnn[k]
  end
  D.faster_rcnn.AnchorGenerator, D.faster_rcnn.RPNHead = rpn.AnchorGenerator, rpn.RPNHead
  D.faster_rcnn.RegionProposalNetwork, D.faster_rcnn.RoIHeads = rpn.RegionProposalNetwork, roi_heads.RoIHeads
  D.faster_rcnn.GeneralizedRCNNTransform = transform.GeneralizedRCNNTransform
  D.faster_rcnn.MultiScaleRoIAlign = require("tv_ops_roi").MultiScaleRoIAlign
  D.AnchorGenerator, D.GeneralizedRCNNTransform = rpn.AnchorGenerator, transform.GeneralizedRCNNTransform
  D.RPNHead, D.RegionProposalNetwork, D.RoIHeads = rpn.RPNHead, rpn.RegionProposalNetwork, roi_heads.RoIHeads
  D.BackboneWithFPN, D.resnet_fpn_backbone = backbone_utils.BackboneWithFPN, backbone_utils.resnet_fpn_backbone
  D.RetinaNet, D.retinanet_resnet50_fpn = retinanet.RetinaNet, retinanet.retinanet_resnet50_fpn
  D.retinanet_resnet50_fpn_v2 = retinanet.retinanet_resnet50_fpn_v2
  D.MaskRCNN, D.maskrcnn_resnet50_fpn = mask_rcnn.MaskRCNN, mask_rcnn.maskrcnn_resnet50_fpn
  D.maskrcnn_resnet50_fpn_v2 = mask_rcnn.maskrcnn_resnet50_fpn_v2
  return D
end
