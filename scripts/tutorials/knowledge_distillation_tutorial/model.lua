-- The teacher and student networks of pytorch/tutorials
-- beginner_source/knowledge_distillation_tutorial.py (main.lua and the parity test
-- tests/gpu/tutorials/knowledge_distillation_tutorial.lua require them). The Modified* classes
-- keep their base's layers (so a base state_dict loads into them) and return two values, the
-- logits and a hidden representation, where the tutorial returns a tuple.
local M = {}

-- Deeper neural network class to be used as teacher
local DeepNN = nn.Module:extend("DeepNN")
M.DeepNN = DeepNN

function DeepNN:__init(num_classes)
  num_classes = num_classes or 10
  self.features = nn.Sequential(
    nn.Conv2d(3, 128, { kernel_size = 3, padding = 1 }),
    nn.ReLU(),
    nn.Conv2d(128, 64, { kernel_size = 3, padding = 1 }),
    nn.ReLU(),
    nn.MaxPool2d({ kernel_size = 2, stride = 2 }),
    nn.Conv2d(64, 64, { kernel_size = 3, padding = 1 }),
    nn.ReLU(),
    nn.Conv2d(64, 32, { kernel_size = 3, padding = 1 }),
    nn.ReLU(),
    nn.MaxPool2d({ kernel_size = 2, stride = 2 }))
  self.classifier = nn.Sequential(
    nn.Linear(2048, 512),
    nn.ReLU(),
    nn.Dropout(0.1),
    nn.Linear(512, num_classes))
end

function DeepNN:forward(x)
  x = self.features(x)
  x = torch.flatten(x, 1)
  x = self.classifier(x)
  return x
end

-- Lightweight neural network class to be used as student
local LightNN = nn.Module:extend("LightNN")
M.LightNN = LightNN

local function light_features()
  return nn.Sequential(
    nn.Conv2d(3, 16, { kernel_size = 3, padding = 1 }),
    nn.ReLU(),
    nn.MaxPool2d({ kernel_size = 2, stride = 2 }),
    nn.Conv2d(16, 16, { kernel_size = 3, padding = 1 }),
    nn.ReLU(),
    nn.MaxPool2d({ kernel_size = 2, stride = 2 }))
end

local function light_classifier(num_classes)
  return nn.Sequential(
    nn.Linear(1024, 256),
    nn.ReLU(),
    nn.Dropout(0.1),
    nn.Linear(256, num_classes or 10))
end

function LightNN:__init(num_classes)
  self.features = light_features()
  self.classifier = light_classifier(num_classes)
end

function LightNN:forward(x)
  x = self.features(x)
  x = torch.flatten(x, 1)
  x = self.classifier(x)
  return x
end

-- the teacher also returning its flattened conv output, pooled down to the student's 1024
local ModifiedDeepNNCosine = DeepNN:extend("ModifiedDeepNNCosine")
M.ModifiedDeepNNCosine = ModifiedDeepNNCosine

function ModifiedDeepNNCosine:forward(x)
  x = self.features(x)
  local flattened_conv_output = torch.flatten(x, 1)
  x = self.classifier(flattened_conv_output)
  local flattened_conv_output_after_pooling = F.avg_pool1d(flattened_conv_output, 2)
  return x, flattened_conv_output_after_pooling
end

-- the student also returning its flattened conv output
local ModifiedLightNNCosine = LightNN:extend("ModifiedLightNNCosine")
M.ModifiedLightNNCosine = ModifiedLightNNCosine

function ModifiedLightNNCosine:forward(x)
  x = self.features(x)
  local flattened_conv_output = torch.flatten(x, 1)
  x = self.classifier(flattened_conv_output)
  return x, flattened_conv_output
end

-- the teacher also returning its last conv feature map (32 x 8 x 8)
local ModifiedDeepNNRegressor = DeepNN:extend("ModifiedDeepNNRegressor")
M.ModifiedDeepNNRegressor = ModifiedDeepNNRegressor

function ModifiedDeepNNRegressor:forward(x)
  x = self.features(x)
  local conv_feature_map = x
  x = torch.flatten(x, 1)
  x = self.classifier(x)
  return x, conv_feature_map
end

-- the student with a trainable regressor from its 16 feature maps to the teacher's 32
local ModifiedLightNNRegressor = LightNN:extend("ModifiedLightNNRegressor")
M.ModifiedLightNNRegressor = ModifiedLightNNRegressor

function ModifiedLightNNRegressor:__init(num_classes) -- the tutorial's order (initialization draws)
  self.features = light_features()
  -- Include an extra regressor (in our case linear)
  self.regressor = nn.Sequential(
    nn.Conv2d(16, 32, { kernel_size = 3, padding = 1 }))
  self.classifier = light_classifier(num_classes)
end

function ModifiedLightNNRegressor:forward(x)
  x = self.features(x)
  local regressor_output = self.regressor(x)
  x = torch.flatten(x, 1)
  x = self.classifier(x)
  return x, regressor_output
end

return M
