-- torchvision.models.get_model with the detection builders' names (the e2e transforms example
-- calls get_model("maskrcnn_resnet50_fpn_v2", weights=None, weights_backbone=None)).
local T = ...
local torch = require "torch"
local tv = require "torchvision"
local models = tv.models
local no_hub = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "hub_dir.lua")

T.test("get_model builds detection models by name", function()
  T.check(models.get_model_builder("maskrcnn_resnet50_fpn_v2") == models.detection.maskrcnn_resnet50_fpn_v2)
  T.check(models.get_model_builder("RetinaNet_ResNet50_FPN") == models.detection.retinanet_resnet50_fpn, "any case")
  local m = models.get_model("fasterrcnn_mobilenet_v3_large_fpn", {num_classes = 3, weights_backbone = nil})
  T.eq(m.roi_heads.box_predictor.cls_score.out_features, 3)
  T.raises(function() models.get_model("resnet_fpn_backbone") end, "Unknown model resnet_fpn_backbone")
  T.raises(function() models.get_model("maskrcnn_nothing") end, "Unknown model maskrcnn_nothing")
  no_hub(function()
    T.raises(function() models.get_model("fasterrcnn_resnet50_fpn", {weights = "DEFAULT"}) end, "~downloads nothing")
  end)
  T.check(models.get_model("resnet18", {num_classes = 4}).fc.out_features == 4, "classification builders as before")
end)
