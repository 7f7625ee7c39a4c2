-- pytorch/examples super_resolution/main.py ported to nnrepl: trains the sub-pixel network
-- (model.lua) to upscale the Y channel of BSDS300 images, line by line as the original.
--
--   cd WORKDIR && nnrepl scripts/examples/super_resolution/main.lua --upscale_factor 3 --nEpochs 30
--   nnrepl scripts/examples/super_resolution/super_resolve.lua --input_image IN.jpg \
--     --model model_epoch_30.pth --output_filename OUT.png
--
-- Same flags, prints ("===> Epoch[e](i/n): Loss: ...", "===> Avg. PSNR: ... dB") and
-- checkpoint names (model_epoch_N.pth in the working folder) as the original.
-- Differences from the original:
-- * nothing is downloaded: the images must be in dataset/BSDS300/images/{train,test} under
--   the working folder (BSDS300-images.tgz extracted into dataset/); when they are missing the
--   program stops with an error saying so (data.lua).
-- * --threads: the images are decoded in the main Lua state (DataLoader's workers only run C
--   datasets), as the flag's value asks or not.
local argparse = require "argparse"
local Net = require("model").Net
local data = require "data"
local get_training_set, get_test_set = data.get_training_set, data.get_test_set
local DataLoader = torch.utils.data.DataLoader

-- Training settings
local parser = argparse.ArgumentParser({ description = "PyTorch Super Res Example" })
parser:add_argument("--upscale_factor", { type = "int", required = true, help = "super resolution upscale factor" })
parser:add_argument("--batchSize", { type = "int", default = 64, help = "training batch size" })
parser:add_argument("--testBatchSize", { type = "int", default = 10, help = "testing batch size" })
parser:add_argument("--nEpochs", { type = "int", default = 2, help = "number of epochs to train for" })
parser:add_argument("--lr", { type = "float", default = 0.01, help = "Learning Rate. Default=0.01" })
parser:add_argument("--accel", { action = "store_true", help = "Enables acceleration for training, if available" })
parser:add_argument("--threads", { type = "int", default = 4, help = "number of threads for data loader to use" })
parser:add_argument("--seed", { type = "int", default = 123, help = "random seed to use. Default=123" })
local opt = parser:parse_args()

print(opt)

torch.manual_seed(opt.seed)

local device
if opt.accel and torch.accelerator.is_available() then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end

print("===> Loading datasets")
local train_set = get_training_set(opt.upscale_factor)
local test_set = get_test_set(opt.upscale_factor)
local training_data_loader = DataLoader({ dataset = train_set, num_workers = opt.threads, batch_size = opt.batchSize,
  shuffle = true })
local testing_data_loader = DataLoader({ dataset = test_set, num_workers = opt.threads, batch_size = opt.testBatchSize,
  shuffle = false })

print("===> Building model")
local model = Net(opt.upscale_factor):to(device)
local criterion = nn.MSELoss()

local optimizer = optim.Adam(model:parameters(), { lr = opt.lr })

local function train(epoch)
  local epoch_loss = 0
  for iteration, input, target in training_data_loader:enumerate(1) do
    input, target = input:to(device), target:to(device)

    optimizer:zero_grad()
    local loss = criterion(model(input), target)
    epoch_loss = epoch_loss + loss:item()
    loss:backward()
    optimizer:step()

    print(string.format("===> Epoch[%d](%d/%d): Loss: %.4f", epoch, iteration, #training_data_loader, loss:item()))
  end

  print(string.format("===> Epoch %d Complete: Avg. Loss: %.4f", epoch, epoch_loss / #training_data_loader))
end

local function test()
  local avg_psnr = 0
  torch.no_grad(function()
    for input, target in testing_data_loader do
      input, target = input:to(device), target:to(device)

      local prediction = model(input)
      local mse = criterion(prediction, target)
      local psnr = 10 * math.log(1 / mse:item(), 10)
      avg_psnr = avg_psnr + psnr
    end
  end)
  print(string.format("===> Avg. PSNR: %.4f dB", avg_psnr / #testing_data_loader))
end

local function checkpoint(epoch)
  local model_out_path = string.format("model_epoch_%d.pth", epoch)
  torch.save(model, model_out_path)
  print(string.format("Checkpoint saved to %s", model_out_path))
end

for epoch = 1, opt.nEpochs do
  train(epoch)
  test()
  checkpoint(epoch)
end
