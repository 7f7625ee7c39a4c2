-- torchvision.models.detection's *_Weights enums (COCO_V1 and DEFAULT): url, meta (num_params,
-- categories, min_size, box_map / mask_map) and transforms() (ObjectDetection). The builders load
-- a member's checkpoint from torch.hub's local cache (tv_models_detection_faster_rcnn.lua).
return function(models)

local presets = require "tv_models_presets"
local COCO = require("tv_models_meta")._COCO_CATEGORIES
local detection = models.detection

-- enum, submodule, builder, checkpoint file, num_params, COCO-val2017 box mAP (, mask mAP)
local ENUMS = {
  {"FasterRCNN_ResNet50_FPN_Weights", "faster_rcnn", "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_coco-258fb6c6.pth", 41755286, 37.0},
  {"FasterRCNN_ResNet50_FPN_V2_Weights", "faster_rcnn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_resnet50_fpn_v2_coco-dd69338a.pth", 43712278, 46.7},
  {"FasterRCNN_MobileNet_V3_Large_FPN_Weights", "faster_rcnn", "fasterrcnn_mobilenet_v3_large_fpn", "fasterrcnn_mobilenet_v3_large_fpn-fb6a3cc7.pth", 19386354, 32.8},
  {"FasterRCNN_MobileNet_V3_Large_320_FPN_Weights", "faster_rcnn", "fasterrcnn_mobilenet_v3_large_320_fpn", "fasterrcnn_mobilenet_v3_large_320_fpn-907ea3f9.pth", 19386354, 22.8},
  {"MaskRCNN_ResNet50_FPN_Weights", "mask_rcnn", "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth", 44401393, 37.9, 34.6},
  {"MaskRCNN_ResNet50_FPN_V2_Weights", "mask_rcnn", "maskrcnn_resnet50_fpn_v2", "maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth", 46359409, 47.4, 41.8},
  {"RetinaNet_ResNet50_FPN_Weights", "retinanet", "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_coco-eeacb38b.pth", 34014999, 36.4},
  {"RetinaNet_ResNet50_FPN_V2_Weights", "retinanet", "retinanet_resnet50_fpn_v2", "retinanet_resnet50_fpn_v2_coco-5905b1c5.pth", 38198935, 41.5},
}

for _, e in ipairs(ENUMS) do
  local metrics = { box_map = e[6], mask_map = e[7] }
  local enum = models._weights_enum(e[1], e[3], detection, { { "COCO_V1", e[4], e[5], { 1, 1 },
    { categories = COCO, _metrics = { ["COCO-val2017"] = metrics } }, presets.ObjectDetection } })
  detection[e[2]][e[1]] = enum
end

end
