-- pytorch/tutorials intermediate_source/spatial_transformer_tutorial.py ported to nnrepl: a
-- spatial transformer network (F.affine_grid, F.grid_sample) in front of a small CNN, trained
-- on MNIST with SGD (the Net is in model.lua beside this file).
--
--   nnrepl scripts/tutorials/spatial_transformer_tutorial/main.lua [--epochs 20]
--
-- Same prints as the tutorial: "Train Epoch: ..." every 500 batches and the "Test set: ..."
-- block after each epoch. Differences from the original:
-- * nothing is downloaded: datasets.MNIST(root='.') reads MNIST's four IDX files (.gz or not)
--   from ./MNIST/raw (or .), so run it from the folder that holds them; when they are missing
--   it stops with an error naming the files and the folder (download=true downloads nothing).
--   Debian's Fashion-MNIST (/usr/share/datasets/fashion-mnist) has the same format: copy or
--   link its files into ./MNIST/raw.
-- * --epochs N (new; default 20, the tutorial's) runs fewer epochs.
-- * visualize_stn has no matplotlib: it writes the two grids it would show side by side to
--   stn_dataset_images.png and stn_transformed_images.png in the current folder and prints
--   their sizes.
local torchvision = require "torchvision"
local argparse = require "argparse"
local datasets, transforms = torchvision.datasets, torchvision.transforms
local Net = require "model"

local parser = argparse.ArgumentParser()
parser:add_argument("--epochs", { type = "int", default = 20, help = "number of epochs (the tutorial's 20)" })
local args = parser:parse_args()

-- plt.ion(): no plotting here

local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")

-- Training dataset
local train_loader = torch.utils.data.DataLoader(
  datasets.MNIST({ root = ".", train = true, download = true,
    transform = transforms.Compose({
      transforms.ToTensor(),
      transforms.Normalize({ 0.1307 }, { 0.3081 })
    }) }), { batch_size = 64, shuffle = true, num_workers = 4 })
-- Test dataset
local test_loader = torch.utils.data.DataLoader(
  datasets.MNIST({ root = ".", train = false, transform = transforms.Compose({
    transforms.ToTensor(),
    transforms.Normalize({ 0.1307 }, { 0.3081 })
  }) }), { batch_size = 64, shuffle = true, num_workers = 4 })

local model = Net():to(device)

local optimizer = optim.SGD(model:parameters(), { lr = 0.01 })

local function train(epoch)
  model:train()
  for batch_idx, data, target in train_loader:enumerate() do
    data, target = data:to(device), target:to(device)

    optimizer:zero_grad()
    local output = model(data)
    local loss = F.nll_loss(output, target)
    loss:backward()
    optimizer:step()
    if batch_idx % 500 == 0 then
      print(string.format("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f",
        epoch, batch_idx * #data, #train_loader.dataset,
        100 * batch_idx / #train_loader, loss:item()))
    end
  end
end

-- the test: average loss and accuracy over the test set
local function test()
  local _ <close> = torch.no_grad()
  model:eval()
  local test_loss = 0
  local correct = 0
  for data, target in test_loader:iter() do
    data, target = data:to(device), target:to(device)
    local output = model(data)

    -- the summed batch loss
    test_loss = test_loss + F.nll_loss(output, target, { size_average = false }):item()
    -- the index of the largest log-probability
    local _, pred = output:max(1, { keepdim = true })
    correct = correct + pred:eq(target:view_as(pred)):sum():item()
  end

  test_loss = test_loss / #test_loader.dataset
  print(string.format("\nTest set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)\n",
    test_loss, correct, #test_loader.dataset,
    100 * correct / #test_loader.dataset))
end

-- a [C, H, W] tensor to an [H, W, C] image in [0, 1], as the tutorial's numpy helper
local function convert_image_np(inp)
  inp = inp:permute(1, 2, 0)
  local mean = torch.tensor({ 0.485, 0.456, 0.406 })
  local std = torch.tensor({ 0.229, 0.224, 0.225 })
  inp = std * inp + mean
  inp = torch.clip(inp, 0, 1)
  return inp
end

-- the input batch and what the STN makes of it, as the tutorial's two plots
local function visualize_stn()
  local _ <close> = torch.no_grad()
  -- a batch of test data
  local data = test_loader:iter()()
  data = data:to(device)

  local input_tensor = data:cpu()
  local transformed_input_tensor = model:stn(data):cpu()

  local in_grid = convert_image_np(torchvision.utils.make_grid(input_tensor))

  local out_grid = convert_image_np(torchvision.utils.make_grid(transformed_input_tensor))

  -- plotted side by side in the tutorial ('Dataset Images', 'Transformed Images'): saved here
  torchvision.utils.save_image(in_grid:permute(2, 0, 1), "stn_dataset_images.png")
  torchvision.utils.save_image(out_grid:permute(2, 0, 1), "stn_transformed_images.png")
  print(string.format("Dataset Images: %s, Transformed Images: %s", tostring(in_grid.shape), tostring(out_grid.shape)))
end

for epoch = 1, args.epochs do
  train(epoch)
  test()
end

-- visualize the STN transformation on a test batch
visualize_stn()
