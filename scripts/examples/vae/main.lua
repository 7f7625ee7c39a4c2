-- pytorch/examples vae/main.py in Lua: a variational autoencoder on MNIST (784 -> 400 -> 20
-- latent dimensions -> 400 -> 784), trained with Adam on the reconstruction's binary cross
-- entropy plus the KL divergence. Each epoch prints the training log and the test-set loss and
-- writes results/reconstruction_<epoch>.png (8 test images above their reconstructions) and
-- results/sample_<epoch>.png (64 images decoded from N(0, 1) draws).
--
--   nnrepl scripts/examples/vae/main.lua [--batch-size 128] [--epochs 10] [--no-accel]
--       [--seed 1] [--log-interval 10] [--data-root ../data]
--
-- The model and loss are in model.lua beside this file. Differences from the original:
-- - nothing is downloaded: MNIST's IDX files (train-images-idx3-ubyte[.gz] and the other three)
--   must be in --data-root (a new flag; default ../data, the original's folder), DATA_ROOT/MNIST
--   or DATA_ROOT/MNIST/raw. Without them MNIST stops with "MNIST: download=true, but nnrepl
--   downloads nothing: put ... into ...". Fashion-MNIST has the same format: on Debian,
--   `apt install dataset-fashion-mnist` and --data-root /usr/share/datasets/fashion-mnist.
-- - results/ is created when missing (the original's repository ships it).
local torchvision = require "torchvision"
local argparse = require "argparse"
local model_lib = require "model"
local datasets, transforms = torchvision.datasets, torchvision.transforms
local save_image = torchvision.utils.save_image
local VAE, loss_function = model_lib.VAE, model_lib.loss_function

local parser = argparse.ArgumentParser({ description = "VAE MNIST Example" })
parser:add_argument("--batch-size", { type = "int", default = 128, metavar = "N",
  help = "input batch size for training (default: 128)" })
parser:add_argument("--epochs", { type = "int", default = 10, metavar = "N",
  help = "number of epochs to train (default: 10)" })
parser:add_argument("--no-accel", { action = "store_true",
  help = "disables accelerator" })
parser:add_argument("--seed", { type = "int", default = 1, metavar = "S",
  help = "random seed (default: 1)" })
parser:add_argument("--log-interval", { type = "int", default = 10, metavar = "N",
  help = "how many batches to wait before logging training status" })
parser:add_argument("--data-root", { default = "../data", metavar = "DIR",
  help = "folder with MNIST's IDX files, nothing is downloaded (default: ../data)" })
local args = parser:parse_args({ ... })

local use_accel = not args.no_accel and torch.accelerator.is_available()

torch.manual_seed(args.seed)

local device
if use_accel then
  device = torch.accelerator.current_accelerator()
else
  device = torch.device("cpu")
end

print(string.format("Using device: %s", device))

local kwargs = use_accel and { num_workers = 1, pin_memory = true } or {}
local function loader_options(o)
  for k, v in pairs(kwargs) do o[k] = v end
  return o
end
local train_loader = torch.utils.data.DataLoader(
  datasets.MNIST(args.data_root, { train = true, download = true,
    transform = transforms.ToTensor() }),
  loader_options({ batch_size = args.batch_size, shuffle = true }))
local test_loader = torch.utils.data.DataLoader(
  datasets.MNIST(args.data_root, { train = false, transform = transforms.ToTensor() }),
  loader_options({ batch_size = args.batch_size, shuffle = false }))

local model = VAE():to(device)
local optimizer = optim.Adam(model:parameters(), { lr = 1e-3 })

local function train(epoch)
  model:train()
  local train_loss = 0
  for batch_idx, data, _ in train_loader:enumerate() do
    data = data:to(device)
    optimizer:zero_grad()
    local recon_batch, mu, logvar = model(data)
    local loss = loss_function(recon_batch, data, mu, logvar)
    loss:backward()
    train_loss = train_loss + loss:item()
    optimizer:step()
    if batch_idx % args.log_interval == 0 then
      print(string.format("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f",
        epoch, batch_idx * #data, #train_loader.dataset,
        100. * batch_idx / #train_loader,
        loss:item() / #data))
    end
  end

  print(string.format("====> Epoch: %d Average loss: %.4f",
    epoch, train_loss / #train_loader.dataset))
end

local function test(epoch)
  model:eval()
  local test_loss = 0
  do
    local _ <close> = torch.no_grad()
    for i, data, _ in test_loader:enumerate() do
      data = data:to(device)
      local recon_batch, mu, logvar = model(data)
      test_loss = test_loss + loss_function(recon_batch, data, mu, logvar):item()
      if i == 0 then
        local n = math.min(data:size(0), 8)
        local comparison = torch.cat({ data[":" .. n],
          recon_batch:view(args.batch_size, 1, 28, 28)[":" .. n] })
        save_image(comparison:cpu(),
          "results/reconstruction_" .. epoch .. ".png", { nrow = n })
      end
    end
  end

  test_loss = test_loss / #test_loader.dataset
  print(string.format("====> Test set loss: %.4f", test_loss))
end

os.execute("mkdir -p results")
for epoch = 1, args.epochs do
  train(epoch)
  test(epoch)
  do
    local _ <close> = torch.no_grad()
    local sample = torch.randn(64, 20):to(device)
    sample = model:decode(sample):cpu()
    save_image(sample:view(64, 1, 28, 28),
      "results/sample_" .. epoch .. ".png")
  end
end
