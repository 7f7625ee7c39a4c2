-- PyTorch tutorial "Learn the Basics: Optimizing Model Parameters"
-- (beginner_source/basics/optimization_tutorial.py) in Lua: the NeuralNetwork MLP on FashionMNIST,
-- train_loop / test_loop with CrossEntropyLoss and SGD for 10 epochs.
--
--   cd somewhere && ln -s /usr/share/datasets/fashion-mnist data   (once: the tutorial's root="data")
--   nnrepl scripts/tutorials/basics/optimization.lua [--epochs N] [--lr LR]
--
-- Differences from the original:
-- * Nothing is downloaded: root="data" must hold FashionMNIST's IDX files (gzipped or not), in
--   data/FashionMNIST/raw, data/FashionMNIST or data itself (a link named data to Debian's
--   /usr/share/datasets/fashion-mnist is enough); otherwise FashionMNIST raises "download=true,
--   but nnrepl downloads nothing: put ...".
-- * --epochs N (default 10, the final loop's) and --lr LR (default 1e-3) for short test runs.
-- * The class is in model.lua (required here, and by the GPU parity test). It runs on the CPU, as
--   the tutorial's does.
-- * `pred.argmax(1) == y` is pred:argmax(1):eq(y) (Lua's == on two tensors gives one boolean).
local torchvision = require "torchvision"
local argparse = require "argparse"
local DataLoader = torch.utils.data.DataLoader
local datasets = torchvision.datasets
local ToTensor = torchvision.transforms.ToTensor

local parser = argparse.ArgumentParser({ description = "Learn the Basics: Optimizing Model Parameters" })
parser:add_argument("--epochs", { type = "int", default = 10, help = "epochs to train (default %(default)s)" })
parser:add_argument("--lr", { type = "float", default = 1e-3, help = "SGD learning rate (default %(default)s)" })
local args = parser:parse_args({ ... })

local training_data = datasets.FashionMNIST({
  root = "data",
  train = true,
  download = true,
  transform = ToTensor(),
})

local test_data = datasets.FashionMNIST({
  root = "data",
  train = false,
  download = true,
  transform = ToTensor(),
})

local train_dataloader = DataLoader(training_data, { batch_size = 64 })
local test_dataloader = DataLoader(test_data, { batch_size = 64 })

local NeuralNetwork = require "model"

local model = NeuralNetwork()

local learning_rate = args.lr
local batch_size = 64
local epochs = 5

local loss_fn = nn.CrossEntropyLoss()

local optimizer = torch.optim.SGD(model:parameters(), { lr = learning_rate })

local function train_loop(dataloader, model, loss_fn, optimizer)
  local size = #dataloader.dataset
  model:train()
  for batch, X, y in dataloader:enumerate() do
    local pred = model(X)
    local loss = loss_fn(pred, y)

    loss:backward()
    optimizer:step()
    optimizer:zero_grad()

    if batch % 100 == 0 then
      local current
      loss, current = loss:item(), batch * batch_size + #X
      print(string.format("loss: %7f  [%5d/%5d]", loss, current, size))
    end
  end
end

local function test_loop(dataloader, model, loss_fn)
  model:eval()
  local size = #dataloader.dataset
  local num_batches = #dataloader
  local test_loss, correct = 0, 0

  do
    local _ <close> = torch.no_grad()
    for X, y in dataloader:iter() do
      local pred = model(X)
      test_loss = test_loss + loss_fn(pred, y):item()
      correct = correct + pred:argmax(1):eq(y):type(torch.float):sum():item()
    end
  end

  test_loss = test_loss / num_batches
  correct = correct / size
  print(string.format("Test Error: \n Accuracy: %0.1f%%, Avg loss: %8f \n", 100 * correct, test_loss))
end

loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model:parameters(), { lr = learning_rate })

epochs = args.epochs
for t = 0, epochs - 1 do
  print(string.format("Epoch %d\n-------------------------------", t + 1))
  train_loop(train_dataloader, model, loss_fn, optimizer)
  test_loop(test_dataloader, model, loss_fn)
end
print("Done!")
