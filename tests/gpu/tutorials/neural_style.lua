-- Parity of scripts/tutorials/neural_style_tutorial with PyTorch, nnrepl's side of
-- neural_style.py (its header describes the steps and files): the port's own
-- get_style_model_and_losses and get_input_optimizer (scripts/tutorials/neural_style_tutorial/
-- model.lua), K L-BFGS steps with the tutorial's closure.
--   nnrepl tests/gpu/tutorials/neural_style.lua DIR [cuda|cpu] [--generate]
-- --generate makes the cnn, init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local P = dofile(here .. "/../examples/example_parity.lua")
package.path = here .. "/../../../scripts/tutorials/neural_style_tutorial/?.lua;" .. package.path
local model_lib = require "model"
local get_style_model_and_losses, get_input_optimizer = model_lib.get_style_model_and_losses, model_lib.get_input_optimizer
local models = require("torchvision").models

local K, H, W = 3, 32, 48
local style_weight, content_weight = 1000000, 1
local run = P.start("neural_style", ...)
local device = run.device

if run.generate then
  torch.manual_seed(0)
  torch.save(models.vgg19().features:state_dict(), run.path("cnn.safetensors"), { format = "safetensors" })
  local g = torch.Generator():manual_seed(1)
  local style_img = torch.rand({ 1, 3, H, W }, { generator = g })
  local content_img = torch.rand({ 1, 3, H, W }, { generator = g })
  torch.save({ style_img = style_img, content_img = content_img }, run.path("data.safetensors"), { format = "safetensors" })
  torch.save({ input_img = content_img:clone() }, run.path("init.safetensors"), { format = "safetensors" })
end

local cnn = models.vgg19().features
cnn:load_state_dict(torch.load(run.path("cnn.safetensors")))
cnn = cnn:to(device, torch.float64):eval()
local data = torch.load(run.path("data.safetensors"))
local style_img = data.style_img:to(device, torch.float64)
local content_img = data.content_img:to(device, torch.float64)
local cnn_normalization_mean = torch.tensor({ 0.485, 0.456, 0.406 }):to(device)
local cnn_normalization_std = torch.tensor({ 0.229, 0.224, 0.225 }):to(device)
local input_img = torch.load(run.path("init.safetensors")).input_img:to(device, torch.float64)

-- run_style_transfer, K optimizer steps
local model, style_losses, content_losses = get_style_model_and_losses(cnn,
  cnn_normalization_mean, cnn_normalization_std, style_img, content_img)
local optimizer = get_input_optimizer(input_img)

local function closure()
  input_img.data:clamp_(0, 1)
  optimizer:zero_grad()
  model(input_img)
  local style_score, content_score = 0, 0
  for _, sl in ipairs(style_losses) do style_score = style_score + sl.loss end
  for _, cl in ipairs(content_losses) do content_score = content_score + cl.loss end
  style_score = style_score * style_weight
  content_score = content_score * content_weight
  local loss = style_score + content_score
  loss:backward()
  return style_score + content_score
end

local losses = {}
for _ = 1, K do losses[#losses + 1] = optimizer:step(closure):item() end
input_img.data:clamp_(0, 1)
P.finish(run, losses, { state_dict = function() return { input_img = input_img:detach() } end })
