-- torchvision's references/detection/engine.py in Lua: train_one_epoch (a linear warm-up of the
-- learning rate in epoch 0, the loss of every step logged) and evaluate (COCO-style box mAP from
-- coco_eval.lua, in place of pycocotools' COCOeval).
local torch = require "torch"
local time = require "time"
local utils = require "detection.utils"
local coco_eval = require "detection.coco_eval"

local M = {}

-- images and targets moved to device (the targets' non-tensor values as they are)
local function to_device(images, targets, device)
  local imgs, tgts = {}, {}
  for i, image in ipairs(images) do imgs[i] = image:to(device) end
  for i, t in ipairs(targets or {}) do
    local d = {}
    for k, v in pairs(t) do d[k] = torch.is_tensor(v) and v:to(device) or v end
    tgts[i] = d
  end
  return imgs, tgts
end
M.to_device = to_device

function M.train_one_epoch(model, optimizer, data_loader, device, epoch, print_freq, scaler)
  model:train()
  local metric_logger = utils.MetricLogger({delimiter = "  "})
  metric_logger:add_meter("lr", utils.SmoothedValue({window_size = 1, fmt = "{value:.6f}"}))
  local header = string.format("Epoch: [%d]", epoch)

  local lr_scheduler = nil
  if epoch == 0 then
    local warmup_factor = 1.0 / 1000
    local warmup_iters = math.min(1000, #data_loader - 1)
    lr_scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, {start_factor = warmup_factor, total_iters = warmup_iters})
  end

  for images, targets in metric_logger:log_every(data_loader, print_freq, header) do
    images, targets = to_device(images, targets, device)
    local loss_dict = torch.autocast(device.type or tostring(device), {enabled = scaler ~= nil}, function()
      return model(images, targets)
    end)
    local losses = 0
    for _, loss in pairs(loss_dict) do losses = losses + loss end

    local loss_dict_reduced = utils.reduce_dict(loss_dict)
    local losses_reduced = 0
    for _, loss in pairs(loss_dict_reduced) do losses_reduced = losses_reduced + loss end
    local loss_value = losses_reduced:item()
    if loss_value ~= loss_value or math.abs(loss_value) == math.huge then
      print(string.format("Loss is %s, stopping training", tostring(loss_value)))
      print(loss_dict_reduced)
      os.exit(1)
    end

    optimizer:zero_grad()
    if scaler ~= nil then
      scaler:scale(losses):backward()
      scaler:step(optimizer)
      scaler:update()
    else
      losses:backward()
      optimizer:step()
    end
    if lr_scheduler ~= nil then lr_scheduler:step() end

    metric_logger:update({loss = losses_reduced})
    metric_logger:update(loss_dict_reduced)
    metric_logger:update({lr = optimizer.param_groups[1].lr})
  end
  return metric_logger
end

-- the model's detections on data_loader scored against its targets (see coco_eval.lua)
function M.evaluate(model, data_loader, device)
  local cpu_device = torch.device("cpu")
  model:eval()
  local metric_logger = utils.MetricLogger({delimiter = "  "})
  local header = "Test:"
  local coco_evaluator = coco_eval.CocoEvaluator()

  torch.no_grad(function()
    for images, targets in metric_logger:log_every(data_loader, 100, header) do
      images = to_device(images, nil, device)
      local model_time = time.time()
      local outputs = model(images)
      for i, o in ipairs(outputs) do outputs[i] = select(2, to_device({}, {o}, cpu_device))[1] end
      model_time = time.time() - model_time

      local evaluator_time = time.time()
      for i, t in ipairs(targets) do coco_evaluator:update(t, outputs[i]) end
      evaluator_time = time.time() - evaluator_time
      metric_logger:update({model_time = model_time})
      metric_logger:update({evaluator_time = evaluator_time})
    end
  end)

  print("Averaged stats: " .. tostring(metric_logger))
  coco_evaluator:accumulate()
  coco_evaluator:summarize()
  return coco_evaluator
end

return M
