-- PyTorch tutorial "Learn the Basics: Quickstart" (beginner_source/basics/quickstart_tutorial.py)
-- in Lua: FashionMNIST, the NeuralNetwork MLP trained with SGD, saved to model.pth, reloaded,
-- one prediction.
--
--   cd somewhere && ln -s /usr/share/datasets/fashion-mnist data   (once: the tutorial's root="data")
--   nnrepl scripts/tutorials/basics/quickstart.lua [--epochs N] [--lr LR]
--
-- Differences from the original:
-- * Nothing is downloaded: root="data" must hold FashionMNIST's IDX files (gzipped or not), in
--   data/FashionMNIST/raw, data/FashionMNIST or data itself; Debian's dataset-fashion-mnist has them
--   in /usr/share/datasets/fashion-mnist, so a link named data to it is enough. Without them
--   FashionMNIST raises "download=true, but nnrepl downloads nothing: put ...".
-- * --epochs N (default 5) and --lr LR (default 1e-3), the tutorial's values, for short test runs.
-- * The class is in model.lua (required here, and by the GPU parity test).
-- * classes is a Lua list: the class index k is classes[k + 1]; `pred.argmax(1) == y` is
--   pred:argmax(1):eq(y) (Lua's == on two tensors gives one boolean).
-- * The files are written to the current folder, as the tutorial's (model.pth).
local torchvision = require "torchvision"
local argparse = require "argparse"
local DataLoader = torch.utils.data.DataLoader
local datasets = torchvision.datasets
local ToTensor = torchvision.transforms.ToTensor

local parser = argparse.ArgumentParser({ description = "Learn the Basics: Quickstart" })
parser:add_argument("--epochs", { type = "int", default = 5, help = "epochs to train (default %(default)s)" })
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

local batch_size = 64

local train_dataloader = DataLoader(training_data, { batch_size = batch_size })
local test_dataloader = DataLoader(test_data, { batch_size = batch_size })

for X, y in test_dataloader:iter() do
  print(string.format("Shape of X [N, C, H, W]: %s", X.shape))
  print(string.format("Shape of y: %s %s", y.shape, y.dtype))
  break
end

local device = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type or "cpu"
print(string.format("Using %s device", device))

local NeuralNetwork = require "model"

local model = NeuralNetwork():to(device)
print(model)

local loss_fn = nn.CrossEntropyLoss()
local optimizer = torch.optim.SGD(model:parameters(), { lr = args.lr })

local function train(dataloader, model, loss_fn, optimizer)
  local size = #dataloader.dataset
  model:train()
  for batch, X, y in dataloader:enumerate() do
    X, y = X:to(device), y:to(device)

    local pred = model(X)
    local loss = loss_fn(pred, y)

    loss:backward()
    optimizer:step()
    optimizer:zero_grad()

    if batch % 100 == 0 then
      local current
      loss, current = loss:item(), (batch + 1) * #X
      print(string.format("loss: %7f  [%5d/%5d]", loss, current, size))
    end
  end
end

local function test(dataloader, model, loss_fn)
  local size = #dataloader.dataset
  local num_batches = #dataloader
  model:eval()
  local test_loss, correct = 0, 0
  do
    local _ <close> = torch.no_grad()
    for X, y in dataloader:iter() do
      X, y = X:to(device), y:to(device)
      local pred = model(X)
      test_loss = test_loss + loss_fn(pred, y):item()
      correct = correct + pred:argmax(1):eq(y):type(torch.float):sum():item()
    end
  end
  test_loss = test_loss / num_batches
  correct = correct / size
  print(string.format("Test Error: \n Accuracy: %0.1f%%, Avg loss: %8f \n", 100 * correct, test_loss))
end

local epochs = args.epochs
for t = 0, epochs - 1 do
  print(string.format("Epoch %d\n-------------------------------", t + 1))
  train(train_dataloader, model, loss_fn, optimizer)
  test(test_dataloader, model, loss_fn)
end
print("Done!")

torch.save(model:state_dict(), "model.pth")
print("Saved PyTorch Model State to model.pth")

model = NeuralNetwork():to(device)
model:load_state_dict(torch.load("model.pth", { weights_only = true }))

local classes = {
  "T-shirt/top",
  "Trouser",
  "Pullover",
  "Dress",
  "Coat",
  "Sandal",
  "Shirt",
  "Sneaker",
  "Bag",
  "Ankle boot",
}

model:eval()
local x, y = test_data[0][1], test_data[0][2]
do
  local _ <close> = torch.no_grad()
  x = x:to(device)
  local pred = model(x)
  local predicted, actual = classes[pred[0]:argmax(0):item() + 1], classes[y + 1]
  print(string.format('Predicted: "%s", Actual: "%s"', predicted, actual))
end
