-- PyTorch tutorial "Visualizing Models, Data, and Training with TensorBoard"
-- (intermediate_source/tensorboard_tutorial.py) in Lua: FashionMNIST images, the model's graph,
-- an embedding of 100 images, the training loss, and a precision-recall curve per class, all to
-- TensorBoard.
--
--   cd somewhere && ln -s /usr/share/datasets/fashion-mnist data   (once: the tutorial's './data')
--   nnrepl scripts/tutorials/introyt/tensorboard_tutorial.lua [--log-every N] [--max-batches N]
--   tensorboard --logdir=runs        (TensorBoard itself is a separate program)
--
-- Differences from the original:
-- * Nothing is downloaded: './data' must hold FashionMNIST's IDX files (gzipped or not), in
--   data/FashionMNIST/raw, data/FashionMNIST or data itself (Debian's dataset-fashion-mnist has them
--   in /usr/share/datasets/fashion-mnist). Without them FashionMNIST raises "download=true, but
--   nnrepl downloads nothing: put ...".
-- * --log-every N (default 1000: the mini-batches between loss records) and --max-batches N
--   (default: the whole epoch) for short test runs; the defaults are the tutorial's.
-- * matplotlib has no equivalent: matplotlib_imshow is left out, and writer.add_figure (a
--   matplotlib figure of four predictions) is replaced by printing what the figure shows: each
--   image's title ("<class>, <probability>%\n(label: <class>)") and its colour (green when right).
-- * The notebook's `!rm -rf ./runs/` is os.execute("rm -rf ./runs/").
-- * writer:add_graph records one forward pass and writes its autograd graph (nnrepl has no JIT trace).
-- * classes is a Lua list: class k is classes[k + 1].
-- * Writes runs/fashion_mnist_experiment_1/ (event files, the projector's files under 00000/).
local torchvision = require "torchvision"
local transforms = torchvision.transforms
local argparse = require "argparse"

local parser = argparse.ArgumentParser({ description = "Visualizing Models, Data, and Training with TensorBoard" })
parser:add_argument("--log-every", { type = "int", default = 1000, help = "mini-batches between loss records (default %(default)s)" })
parser:add_argument("--max-batches", { type = "int", help = "stop the epoch after this many mini-batches (default: all)" })
local args = parser:parse_args({ ... })
local LOG_EVERY = args.log_every

-- transforms
local transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.5 }, { 0.5 }) })

-- datasets
local trainset = torchvision.datasets.FashionMNIST("./data", { download = true, train = true, transform = transform })
local testset = torchvision.datasets.FashionMNIST("./data", { download = true, train = false, transform = transform })

-- dataloaders
local trainloader = torch.utils.data.DataLoader(trainset, { batch_size = 4, shuffle = true, num_workers = 2 })

local testloader = torch.utils.data.DataLoader(testset, { batch_size = 4, shuffle = false, num_workers = 2 })

-- constant for classes
local classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
  "Sandal", "Shirt", "Sneaker", "Bag", "Ankle Boot" }

-- (matplotlib_imshow, the helper that shows an image, is left out)

local Net = nn.Module:extend("Net")

function Net:__init()
  self.conv1 = nn.Conv2d(1, 6, 5)
  self.pool = nn.MaxPool2d(2, 2)
  self.conv2 = nn.Conv2d(6, 16, 5)
  self.fc1 = nn.Linear(16 * 4 * 4, 120)
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function Net:forward(x)
  x = self.pool(F.relu(self.conv1(x)))
  x = self.pool(F.relu(self.conv2(x)))
  x = x:view(-1, 16 * 4 * 4)
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

local net = Net()

local criterion = nn.CrossEntropyLoss()
local optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 })

-- 1. TensorBoard setup
-- Clear any logs from previous runs
os.execute("rm -rf ./runs/")

local SummaryWriter = torch.utils.tensorboard.SummaryWriter

-- default `log_dir` is "runs" - we'll be more specific here
local writer = SummaryWriter("runs/fashion_mnist_experiment_1")

-- 2. Writing to TensorBoard
-- get some random training images
local dataiter = trainloader:iter()
local images, labels = dataiter()

-- create grid of images
local img_grid = torchvision.utils.make_grid(images)

-- (matplotlib_imshow(img_grid, one_channel=True) left out)

-- write to tensorboard
writer:add_image("four_fashion_mnist_images", img_grid)

-- 3. Inspect the model using TensorBoard
writer:add_graph(net, images)
writer:close()

-- 4. Adding a "Projector" to TensorBoard
-- helper function
local function select_n_random(data, labels_, n)
  n = n or 100
  assert(#data == #labels_)

  local perm = torch.randperm(#data)
  return data[perm][":" .. n], labels_[perm][":" .. n]
end

-- select random images and their target indices
images, labels = select_n_random(trainset.data, trainset.targets)

-- get the class labels for each image
local class_labels = {}
for _, lab in pairs(labels) do class_labels[#class_labels + 1] = classes[lab:item() + 1] end

-- log embeddings
local features = images:view(-1, 28 * 28)
writer:add_embedding(features, { metadata = class_labels, label_img = images:unsqueeze(1) })
writer:close()

-- 5. Tracking model training with TensorBoard
-- helper functions
local function images_to_probs(net_, images_)
  local output = net_(images_)
  -- convert output probabilities to predicted class
  local _, preds_tensor = torch.max(output, 1)
  local preds = preds_tensor:squeeze()
  local probs = {}
  for i, el in pairs(output) do probs[#probs + 1] = F.softmax(el, { dim = 0 })[preds[i]]:item() end
  return preds, probs
end

-- what the tutorial's matplotlib figure shows: each image's title and colour
local function plot_classes_preds(net_, images_, labels_)
  local preds, probs = images_to_probs(net_, images_)
  local fig = {}
  for idx = 0, 3 do
    local title = string.format("%s, %.1f%%\n(label: %s)", classes[preds[idx]:item() + 1], probs[idx + 1] * 100.0,
      classes[labels_[idx]:item() + 1])
    fig[#fig + 1] = title .. "  [" .. (preds[idx]:item() == labels_[idx]:item() and "green" or "red") .. "]"
  end
  return fig
end

local running_loss = 0.0
for epoch = 0, 0 do -- loop over the dataset multiple times
  for i, inputs, labels_ in trainloader:enumerate() do
    if args.max_batches and i >= args.max_batches then break end
    -- zero the parameter gradients
    optimizer:zero_grad()

    -- forward + backward + optimize
    local outputs = net(inputs)
    local loss = criterion(outputs, labels_)
    loss:backward()
    optimizer:step()

    running_loss = running_loss + loss:item()
    if i % LOG_EVERY == LOG_EVERY - 1 then -- every LOG_EVERY mini-batches...
      -- ...log the running loss
      writer:add_scalar("training loss", running_loss / LOG_EVERY, epoch * #trainloader + i)

      -- ...and, in place of add_figure('predictions vs. actuals', ...), print the model's
      -- predictions on this mini-batch
      print(string.format("predictions vs. actuals, step %d:", epoch * #trainloader + i))
      for _, title in ipairs(plot_classes_preds(net, inputs, labels_)) do print(title) end
      running_loss = 0.0
    end
  end
end
print("Finished Training")

-- 6. Assessing trained models with TensorBoard
-- 1. gets the probability predictions in a test_size x num_classes Tensor
-- 2. gets the preds in a test_size Tensor
local class_probs = {}
local class_label = {}
do
  local _ <close> = torch.no_grad()
  for images_, labels_ in testloader do
    local output = net(images_)
    local class_probs_batch = {}
    for _, el in pairs(output) do class_probs_batch[#class_probs_batch + 1] = F.softmax(el, { dim = 0 }) end

    class_probs[#class_probs + 1] = class_probs_batch
    class_label[#class_label + 1] = labels_
  end
end

local stacked = {}
for _, batch in ipairs(class_probs) do stacked[#stacked + 1] = torch.stack(batch) end
local test_probs = torch.cat(stacked)
local test_label = torch.cat(class_label)

-- helper function
local function add_pr_curve_tensorboard(class_index, test_probs_, test_label_, global_step)
  global_step = global_step or 0
  local tensorboard_truth = test_label_:eq(class_index)
  local tensorboard_probs = test_probs_[":, " .. class_index]

  writer:add_pr_curve(classes[class_index + 1], tensorboard_truth, tensorboard_probs, { global_step = global_step })
  writer:close()
end

-- plot all the pr curves
for i = 0, #classes - 1 do
  add_pr_curve_tensorboard(i, test_probs, test_label)
end
