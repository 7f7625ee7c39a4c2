-- PyTorch tutorial "Introduction to PyTorch: Training with PyTorch" (beginner_source/introyt/trainingyt.py)
-- in Lua: FashionMNIST, the GarmentClassifier LeNet-5 variant trained with SGD and momentum, the
-- losses logged to TensorBoard, the best model saved each epoch.
--
--   cd somewhere && ln -s /usr/share/datasets/fashion-mnist data   (once: the tutorial's './data')
--   nnrepl scripts/tutorials/introyt/trainingyt.lua [--epochs N] [--log-every N]
--
-- Differences from the original:
-- * Nothing is downloaded: './data' must hold FashionMNIST's IDX files (gzipped or not), in
--   data/FashionMNIST/raw, data/FashionMNIST or data itself (Debian's dataset-fashion-mnist has them
--   in /usr/share/datasets/fashion-mnist). Without them FashionMNIST raises "download=true, but
--   nnrepl downloads nothing: put ...".
-- * --epochs N (default 5, EPOCHS) and --log-every N (default 1000, the batches between loss
--   reports) for short test runs; the defaults are the tutorial's.
-- * The class is in garment_classifier.lua (required here and by the GPU parity test).
-- * matplotlib_imshow is left out (the grid is still made; the labels are printed).
-- * classes is a Lua list: class k is classes[k + 1]. Loss values print as Python's str() of a
--   float does ('{}'.format(x)); the validation loss is a tensor and prints as one.
-- * Writes runs/fashion_trainer_<timestamp>/ (event files) and model_<timestamp>_<epoch>
--   (a safetensors state_dict) in the current folder, as the tutorial does.
local torchvision = require "torchvision"
local transforms = torchvision.transforms
local argparse = require "argparse"
local U = require "nn_util" -- U.pystr: Python's str() of a number

-- PyTorch TensorBoard support
local SummaryWriter = torch.utils.tensorboard.SummaryWriter

local parser = argparse.ArgumentParser({ description = "Training with PyTorch" })
parser:add_argument("--epochs", { type = "int", default = 5, help = "epochs to train (default %(default)s)" })
parser:add_argument("--log-every", { type = "int", default = 1000, help = "batches between loss reports (default %(default)s)" })
local args = parser:parse_args({ ... })
local LOG_EVERY = args.log_every

local transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.5 }, { 0.5 }) })

-- Create datasets for training & validation (on disk: nothing is downloaded)
local training_set = torchvision.datasets.FashionMNIST("./data", { train = true, transform = transform, download = true })
local validation_set = torchvision.datasets.FashionMNIST("./data", { train = false, transform = transform, download = true })

-- Create data loaders for our datasets; shuffle for training, not for validation
local training_loader = torch.utils.data.DataLoader(training_set, { batch_size = 4, shuffle = true, num_workers = 2 })
local validation_loader = torch.utils.data.DataLoader(validation_set, { batch_size = 4, shuffle = false, num_workers = 2 })

-- Class labels
local classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
  "Sandal", "Shirt", "Sneaker", "Bag", "Ankle Boot" }

-- Report split sizes
print(string.format("Training set has %d instances", #training_set))
print(string.format("Validation set has %d instances", #validation_set))

-- a look at the data (matplotlib_imshow left out)
local dataiter = training_loader:iter()
local images, labels = dataiter()

-- Create a grid from the images
local img_grid = torchvision.utils.make_grid(images)
local names = {}
for j = 0, 3 do names[#names + 1] = classes[labels[j]:item() + 1] end
print(table.concat(names, "  "))

-- The model
local GarmentClassifier = require "garment_classifier"
local model = GarmentClassifier()

-- Loss function
local loss_fn = torch.nn.CrossEntropyLoss()

-- NB: Loss functions expect data in batches, so we're creating batches of 4
-- the model's confidence in each of the 10 classes for 4 inputs
local dummy_outputs = torch.rand(4, 10)
-- the correct class of each
local dummy_labels = torch.tensor({ 1, 5, 3, 7 })

print(dummy_outputs)
print(dummy_labels)

local loss = loss_fn(dummy_outputs, dummy_labels)
print(string.format("Total loss for this batch: %s", U.pystr(loss:item())))

-- Optimizers specified in the torch.optim package
local optimizer = torch.optim.SGD(model:parameters(), { lr = 0.001, momentum = 0.9 })

-- The training loop: one epoch
local function train_one_epoch(epoch_index, tb_writer)
  local running_loss = 0.
  local last_loss = 0.

  for i, inputs, labels_ in training_loader:enumerate() do
    -- Zero your gradients for every batch!
    optimizer:zero_grad()

    -- Make predictions for this batch
    local outputs = model(inputs)

    -- Compute the loss and its gradients
    local loss_ = loss_fn(outputs, labels_)
    loss_:backward()

    -- Adjust learning weights
    optimizer:step()

    -- Gather data and report
    running_loss = running_loss + loss_:item()
    if i % LOG_EVERY == LOG_EVERY - 1 then
      last_loss = running_loss / LOG_EVERY -- loss per batch
      print(string.format("  batch %d loss: %s", i + 1, U.pystr(last_loss)))
      local tb_x = epoch_index * #training_loader + i + 1
      tb_writer:add_scalar("Loss/train", last_loss, tb_x)
      running_loss = 0.
    end
  end

  return last_loss
end

-- Per-epoch activity
local timestamp = os.date("%Y%m%d_%H%M%S")
local writer = SummaryWriter(string.format("runs/fashion_trainer_%s", timestamp))
local epoch_number = 0

local EPOCHS = args.epochs

local best_vloss = 1000000.

for _ = 0, EPOCHS - 1 do
  print(string.format("EPOCH %d:", epoch_number + 1))

  -- Make sure gradient tracking is on, and do a pass over the data
  model:train(true)
  local avg_loss = train_one_epoch(epoch_number, writer)

  model:train(false)

  local running_vloss = 0.0
  local i = -1
  for j, vinputs, vlabels in validation_loader:enumerate() do
    local voutputs = model(vinputs)
    local vloss = loss_fn(voutputs, vlabels)
    running_vloss = running_vloss + vloss
    i = j
  end

  local avg_vloss = running_vloss / (i + 1)
  print(string.format("LOSS train %s valid %s", U.pystr(avg_loss), avg_vloss))

  -- Log the running loss averaged per batch for both training and validation
  writer:add_scalars("Training vs. Validation Loss",
    { Training = avg_loss, Validation = avg_vloss },
    epoch_number + 1)
  writer:flush()

  -- Track best performance, and save the model's state
  if avg_vloss < best_vloss then
    best_vloss = avg_vloss
    local model_path = string.format("model_%s_%d", timestamp, epoch_number)
    torch.save(model:state_dict(), model_path)
  end

  epoch_number = epoch_number + 1
end
