-- Parity of scripts/examples/fast_neural_style with PyTorch, nnrepl's side of
-- tests/gpu/examples/fast_neural_style.py (its header says what the files hold).
--
--   nnrepl tests/gpu/examples/fast_neural_style.lua DIR [cuda|cpu] [--generate]
--
-- 10 steps of neural_style.lua's train() loop (Adam lr 1e-3, content weight 1e5, style weight
-- 1e10), in float64 (the Python side says why), with the port's own TransformerNet, Vgg16 and utils, from DIR/fast_neural_style_init
-- .safetensors (TransformerNet) and _init_vgg.safetensors (Vgg16's slices), on the images of
-- _data.safetensors; writes _nnrepl_losses.txt (the steps' total losses) and
-- _nnrepl_final.safetensors.
-- --generate: when the data file is missing, make the init (nnrepl's seed-0 networks, VGG16
-- randomly initialised) and data here.
local NAME, STEPS, BATCH, SIZE = "fast_neural_style", 10, 2, 32
local LR, CONTENT_WEIGHT, STYLE_WEIGHT = 1e-3, 1e5, 1e10
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/fast_neural_style/?.lua;" .. package.path
local TransformerNet = require("transformer_net").TransformerNet
local Vgg16 = require("vgg").Vgg16
local utils = require "utils"

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  torch.save(TransformerNet():state_dict(), path("init.safetensors"))
  torch.save(Vgg16(false, true):state_dict(), path("init_vgg.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local data = { style = torch.rand(1, 3, SIZE, SIZE, { generator = g }) * 255 }
  for i = 0, STEPS - 1 do
    data["x." .. i] = torch.rand(BATCH, 3, SIZE, SIZE, { generator = g }) * 255
  end
  torch.save(data, path("data.safetensors"))
end

local transformer = TransformerNet()
transformer:load_state_dict(torch.load(path("init.safetensors")))
transformer = transformer:double():to(device)
local optimizer = optim.Adam(transformer:parameters(), LR)
local mse_loss = nn.MSELoss()

local vgg = Vgg16(false, true)
vgg:load_state_dict(torch.load(path("init_vgg.safetensors")))
vgg = vgg:double():to(device)
local data = torch.load(path("data.safetensors"))
for k, v in pairs(data) do data[k] = v:double() end
local style = data.style["repeat"](data.style, BATCH, 1, 1, 1):to(device)
local features_style = vgg(utils.normalize_batch(style))
local gram_style = {}
for i, y in ipairs(features_style) do gram_style[i] = utils.gram_matrix(y) end

transformer:train()
local losses = {}
for i = 0, STEPS - 1 do -- neural_style.lua's train(), one batch a step
  local x = data["x." .. i]
  local n_batch = x:size(0)
  optimizer:zero_grad()

  x = x:to(device)
  local y = transformer(x)

  y = utils.normalize_batch(y)
  x = utils.normalize_batch(x)

  local features_y = vgg(y)
  local features_x = vgg(x)

  local content_loss = CONTENT_WEIGHT * mse_loss(features_y.relu2_2, features_x.relu2_2)

  local style_loss = 0.
  for k, ft_y in ipairs(features_y) do
    local gm_y = utils.gram_matrix(ft_y)
    style_loss = style_loss + mse_loss(gm_y, gram_style[k][":" .. n_batch .. ", :, :"])
  end
  style_loss = style_loss * STYLE_WEIGHT

  local total_loss = content_loss + style_loss
  total_loss:backward()
  optimizer:step()
  losses[#losses + 1] = total_loss:item()
end
P.finish(run, losses, transformer)
