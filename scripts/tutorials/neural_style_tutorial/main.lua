-- pytorch/tutorials advanced_source/neural_style_tutorial.py ("Neural Transfer Using PyTorch")
-- in Lua: L-BFGS changes an input image so that VGG19's features of it match a content image's
-- and their Gram matrices a style image's (Gatys et al.), through loss layers inserted into a
-- copy of VGG19's convolutional part (model.lua).
--
--   cd folder-holding-data && nnrepl path/to/scripts/tutorials/neural_style_tutorial/main.lua
--   IMSIZE=32 NUM_STEPS=20 nnrepl .../main.lua --random-weights     (a short run, no checkpoint)
--
-- Differences from the original:
-- - Nothing is downloaded: the images data/images/neural-style/picasso.jpg and dancing.jpg must
--   be under the current folder (Image.open's error names a missing one), and VGG19's ImageNet
--   weights must be in torch.hub's cache, ~/.cache/torch/hub/checkpoints/vgg19-dcbb9e9d.pth
--   (the error says where to put it). --random-weights (new) uses an untrained VGG19 instead
--   (seeded with torch.manual_seed(0)): the program runs, but the picture means nothing.
-- - matplotlib is not available: imshow writes each image it would show to a PNG file named
--   after its title (style_image.png, content_image.png, input_image.png, output_image.png).
-- - New, from the environment: IMSIZE (the tutorial's 512 on a GPU, 128 otherwise) and
--   NUM_STEPS (300).
local torchvision = require "torchvision"
local transforms, models = torchvision.transforms, torchvision.models
local Image = require("PIL").Image
local model = require "model"
local get_style_model_and_losses, get_input_optimizer = model.get_style_model_and_losses, model.get_input_optimizer

local random_weights = false
for _, a in ipairs({ ... }) do
  if a == "--random-weights" then random_weights = true
  else error("neural_style_tutorial: unknown argument " .. a .. " (only --random-weights)", 0) end
end

local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")

-- the output image's size
local imsize = tonumber(os.getenv("IMSIZE") or "") or (torch.cuda.is_available() and 512 or 128)

local loader = transforms.Compose({
  transforms.Resize(imsize), -- the shorter side to imsize
  transforms.ToTensor() })

local function image_loader(image_name)
  local image = Image.open(image_name)
  -- a batch dimension, as the network expects
  image = loader(image):unsqueeze(0)
  return image:to(device, torch.float)
end

local style_img = image_loader("./data/images/neural-style/picasso.jpg")
local content_img = image_loader("./data/images/neural-style/dancing.jpg")

assert(style_img:size() == content_img:size(),
  "we need to import style and content images of the same size")

local unloader = transforms.ToPILImage() -- back to a PIL image

-- plt.imshow's stand-in: the image goes to "<title>.png"
local function imshow(tensor, title)
  local image = tensor:cpu():clone()
  image = image:squeeze(0) -- no batch dimension
  image = unloader(image)
  local file = (title or "image"):lower():gsub("%W+", "_") .. ".png"
  image:save(file)
  print(string.format("%s written to %s", title or "image", file))
end

imshow(style_img, "Style Image")

imshow(content_img, "Content Image")


if random_weights then torch.manual_seed(0) end
local cnn = models.vgg19({ pretrained = not random_weights }).features:to(device):eval()

-- ImageNet's channel means and deviations, which VGG was trained with
local cnn_normalization_mean = torch.tensor({ 0.485, 0.456, 0.406 }):to(device)
local cnn_normalization_std = torch.tensor({ 0.229, 0.224, 0.225 }):to(device)

local input_img = content_img:clone()
-- white noise instead:
-- input_img = torch.randn(content_img.data:size(), { device = device })

imshow(input_img, "Input Image")

local function run_style_transfer(cnn, normalization_mean, normalization_std, content_img, style_img, input_img,
                                  num_steps, style_weight, content_weight)
  num_steps, style_weight, content_weight = num_steps or 300, style_weight or 1000000, content_weight or 1
  print("Building the style transfer model..")
  local model, style_losses, content_losses = get_style_model_and_losses(cnn,
    normalization_mean, normalization_std, style_img, content_img)
  local optimizer = get_input_optimizer(input_img)

  print("Optimizing..")
  local run = { 0 }
  while run[1] <= num_steps do
    local function closure()
      -- the image's values back into [0, 1]
      input_img.data:clamp_(0, 1)

      optimizer:zero_grad()
      model(input_img)
      local style_score = 0
      local content_score = 0

      for _, sl in ipairs(style_losses) do
        style_score = style_score + sl.loss
      end
      for _, cl in ipairs(content_losses) do
        content_score = content_score + cl.loss
      end

      style_score = style_score * style_weight
      content_score = content_score * content_weight

      local loss = style_score + content_score
      loss:backward()

      run[1] = run[1] + 1
      if run[1] % 50 == 0 then
        print(string.format("run [%d]:", run[1]))
        print(string.format("Style Loss : %4f Content Loss: %4f", style_score:item(), content_score:item()))
        print()
      end

      return style_score + content_score
    end

    optimizer:step(closure)
  end

  -- a last correction
  input_img.data:clamp_(0, 1)

  return input_img
end

local output = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std,
  content_img, style_img, input_img, tonumber(os.getenv("NUM_STEPS") or ""))

imshow(output, "Output Image")
