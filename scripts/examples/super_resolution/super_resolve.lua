-- pytorch/examples super_resolution/super_resolve.py ported to nnrepl: upscales one image with
-- a model trained by main.lua: the network enlarges the Y channel, Cb and Cr are resized
-- bicubically, and the three are merged back into an RGB image.
--
--   nnrepl scripts/examples/super_resolution/super_resolve.lua --input_image IN.jpg \
--     --model model_epoch_30.pth --output_filename OUT.png [--accel]
local argparse = require "argparse"
local Image = require("PIL").Image
local ToTensor = require("torchvision").transforms.ToTensor
local Net = require("model").Net

-- Training settings
local parser = argparse.ArgumentParser({ description = "PyTorch Super Res Example" })
parser:add_argument("--input_image", { type = "str", required = true, help = "input image to use" })
parser:add_argument("--model", { type = "str", required = true, help = "model file to use" })
parser:add_argument("--output_filename", { type = "str", help = "where to save the output image" })
parser:add_argument("--accel", { action = "store_true", help = "Enables acceleration device, if available" })
local opt = parser:parse_args()

print(opt)
local img = Image.open(opt.input_image):convert("YCbCr")
local y, cb, cr = img:split()

local model
do
  local safe_globals = { Net, nn.ReLU, nn.Conv2d, nn.PixelShuffle }
  local _ <close> = torch.serialization.safe_globals(safe_globals)
  model = torch.load(opt.model)
end

local img_to_tensor = ToTensor()
local input = img_to_tensor(y):view(1, -1, y.size[2], y.size[1])

if opt.accel then
  local device = torch.accelerator.current_accelerator()
  model = model:to(device)
  input = input:to(device)
end

local out = model(input)
out = out:cpu()
local out_img_y = out[0]:detach()
out_img_y = out_img_y * 255.0
out_img_y = out_img_y:clip(0, 255)
out_img_y = Image.fromarray(out_img_y[0]:to(torch.uint8), "L")

local out_img_cb = cb:resize(out_img_y.size, Image.BICUBIC)
local out_img_cr = cr:resize(out_img_y.size, Image.BICUBIC)
local out_img = Image.merge("YCbCr", { out_img_y, out_img_cb, out_img_cr }):convert("RGB")

out_img:save(opt.output_filename)
print("output image saved to  " .. opt.output_filename) -- print(a, b) puts a space between
