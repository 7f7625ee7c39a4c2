-- The pieces of pytorch/tutorials advanced_source/neural_style_tutorial.py: ContentLoss,
-- gram_matrix, StyleLoss, Normalization, get_style_model_and_losses (the losses inserted into a
-- copy of VGG's features) and get_input_optimizer. Used by main.lua and
-- tests/gpu/tutorials/neural_style.lua.
local copy = require "copy"
local M = {}

-- a transparent layer that keeps the MSE between its input and the content's features
local ContentLoss = nn.Module:extend("ContentLoss")
M.ContentLoss = ContentLoss

function ContentLoss:__init(target)
  -- a fixed value, not part of the graph
  self.target = target:detach()
end

function ContentLoss:forward(input)
  self.loss = F.mse_loss(input, self.target)
  return input
end

-- the feature maps' Gram matrix, divided by the number of elements
function M.gram_matrix(input)
  local size = input:size()
  local a, b, c, d = size[0], size[1], size[2], size[3] -- batch, feature maps, map size

  local features = input:view(a * b, c * d)

  local G = torch.mm(features, features:t())

  return G:div(a * b * c * d)
end

-- a transparent layer that keeps the MSE between its input's and the style's Gram matrices
local StyleLoss = nn.Module:extend("StyleLoss")
M.StyleLoss = StyleLoss

function StyleLoss:__init(target_feature)
  self.target = M.gram_matrix(target_feature):detach()
end

function StyleLoss:forward(input)
  local G = M.gram_matrix(input)
  self.loss = F.mse_loss(G, self.target)
  return input
end

-- normalizes an image with the mean and std VGG was trained with
local Normalization = nn.Module:extend("Normalization")
M.Normalization = Normalization

function Normalization:__init(mean, std)
  -- [C x 1 x 1], to broadcast over [B x C x H x W]
  self.mean = torch.tensor(mean):view(-1, 1, 1)
  self.std = torch.tensor(std):view(-1, 1, 1)
end

function Normalization:forward(img)
  return (img - self.mean) / self.std
end

M.content_layers_default = { "conv_4" }
M.style_layers_default = { "conv_1", "conv_2", "conv_3", "conv_4", "conv_5" }

local function contains(list, x)
  for _, v in ipairs(list) do if v == x then return true end end
  return false
end

function M.get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img,
                                      content_layers, style_layers)
  content_layers = content_layers or M.content_layers_default
  style_layers = style_layers or M.style_layers_default
  cnn = copy.deepcopy(cnn)

  local normalization = Normalization(normalization_mean, normalization_std):to(content_img.device)

  local content_losses = {}
  local style_losses = {}

  -- a new Sequential with the loss layers after the layers they watch
  local model = nn.Sequential(normalization)

  local i = 0 -- counts the convolutions
  for _, layer in ipairs(cnn:children()) do
    local name
    if nn.isinstance(layer, nn.Conv2d) then
      i = i + 1
      name = string.format("conv_%d", i)
    elseif nn.isinstance(layer, nn.ReLU) then
      name = string.format("relu_%d", i)
      -- the loss layers keep their input: an in-place ReLU would change it
      layer = nn.ReLU({ inplace = false })
    elseif nn.isinstance(layer, nn.MaxPool2d) then
      name = string.format("pool_%d", i)
    elseif nn.isinstance(layer, nn.BatchNorm2d) then
      name = string.format("bn_%d", i)
    else
      error(string.format("RuntimeError: Unrecognized layer: %s", layer.__name or tostring(layer)), 0)
    end

    model:add_module(name, layer)

    if contains(content_layers, name) then
      local target = model(content_img):detach()
      local content_loss = ContentLoss(target)
      model:add_module(string.format("content_loss_%d", i), content_loss)
      content_losses[#content_losses + 1] = content_loss
    end

    if contains(style_layers, name) then
      local target_feature = model(style_img):detach()
      local style_loss = StyleLoss(target_feature)
      model:add_module(string.format("style_loss_%d", i), style_loss)
      style_losses[#style_losses + 1] = style_loss
    end
  end

  -- the layers after the last loss layer are cut off
  local last = #model - 1
  while last >= 0 do
    if nn.isinstance(model[last], ContentLoss) or nn.isinstance(model[last], StyleLoss) then break end
    last = last - 1
  end

  model = model:slice(0, last + 1)

  return model, style_losses, content_losses
end

function M.get_input_optimizer(input_img)
  -- the input image is what the optimizer changes
  local optimizer = optim.LBFGS({ input_img:requires_grad_() })
  return optimizer
end

return M
