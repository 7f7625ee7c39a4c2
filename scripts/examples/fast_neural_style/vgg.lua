-- pytorch/examples fast_neural_style/neural_style/vgg.py: torchvision's VGG16 features cut in
-- four slices, returning the activations relu1_2, relu2_2, relu3_3 and relu4_3 that the
-- content and style losses compare.
--
-- The ImageNet weights come from the torch.hub cache: <torch.hub.get_dir()>/checkpoints/
-- vgg16-397923af.pth (nnrepl downloads nothing; the error says where the file goes). With
-- NNREPL_FNS_RANDOM_VGG=1 in the environment (or Vgg16(requires_grad, true)) the network keeps
-- torchvision's random initialisation instead: for tests, the losses then mean nothing.
local models = require("torchvision").models

-- vgg_outputs(...) as the original's namedtuple: out.relu2_2, or out[1] .. out[4] in order
local FIELDS = { "relu1_2", "relu2_2", "relu3_3", "relu4_3" }
local VggOutputs = { __name = "VggOutputs" }
VggOutputs.__index = VggOutputs
function VggOutputs.__tostring(o)
  local parts = {}
  for i, f in ipairs(FIELDS) do parts[i] = f .. "=" .. tostring(o[i]) end
  return "VggOutputs(" .. table.concat(parts, ", ") .. ")"
end
local function vgg_outputs(...)
  local out = { ... }
  for i, f in ipairs(FIELDS) do out[f] = out[i] end
  return setmetatable(out, VggOutputs)
end

local Vgg16 = nn.Module:extend("Vgg16")

function Vgg16:__init(requires_grad, random_weights)
  if random_weights == nil then random_weights = os.getenv("NNREPL_FNS_RANDOM_VGG") == "1" end
  local weights = nil
  if not random_weights then weights = models.VGG16_Weights.IMAGENET1K_V1 end
  local vgg_pretrained_features = models.vgg16({ weights = weights }).features
  self.slice1 = nn.Sequential()
  self.slice2 = nn.Sequential()
  self.slice3 = nn.Sequential()
  self.slice4 = nn.Sequential()
  for x = 0, 3 do
    self.slice1:add_module(tostring(x), vgg_pretrained_features[x])
  end
  for x = 4, 8 do
    self.slice2:add_module(tostring(x), vgg_pretrained_features[x])
  end
  for x = 9, 15 do
    self.slice3:add_module(tostring(x), vgg_pretrained_features[x])
  end
  for x = 16, 22 do
    self.slice4:add_module(tostring(x), vgg_pretrained_features[x])
  end
  if not requires_grad then
    for _, param in ipairs(self:parameters()) do
      param.requires_grad = false
    end
  end
end

function Vgg16:forward(X)
  local h = self.slice1(X)
  local h_relu1_2 = h
  h = self.slice2(h)
  local h_relu2_2 = h
  h = self.slice3(h)
  local h_relu3_3 = h
  h = self.slice4(h)
  local h_relu4_3 = h
  return vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
end

return { Vgg16 = Vgg16 }
