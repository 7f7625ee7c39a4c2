-- PyTorch tutorial "Introduction to PyTorch: PyTorch TensorBoard Support"
-- (beginner_source/introyt/tensorboardyt_tutorial.py) in Lua: FashionMNIST images, the training
-- and validation losses, the model's graph and an embedding of 100 images, all to TensorBoard.
--
--   cd somewhere && ln -s /usr/share/datasets/fashion-mnist data   (once: the tutorial's './data')
--   nnrepl scripts/tutorials/introyt/tensorboardyt_tutorial.lua [--log-every N] [--max-batches N]
--   tensorboard --logdir=runs        (TensorBoard itself is a separate program)
--
-- Differences from the original:
-- * Nothing is downloaded: './data' must hold FashionMNIST's IDX files (gzipped or not), in
--   data/FashionMNIST/raw, data/FashionMNIST or data itself (Debian's dataset-fashion-mnist has them
--   in /usr/share/datasets/fashion-mnist). Without them FashionMNIST raises "download=true, but
--   nnrepl downloads nothing: put ...".
-- * --log-every N (default 1000: the batches between validation checks) and --max-batches N
--   (default: the whole epoch) for short test runs; the defaults are the tutorial's.
-- * matplotlib_imshow is left out: the grid goes to TensorBoard as in the tutorial.
-- * writer:add_graph records one forward pass and writes its autograd graph (nnrepl has no JIT
--   trace): TensorBoard's GRAPHS tab shows Net with its conv1, conv2, fc1.. layers and ops.
-- * classes is a Lua list: class k is classes[k + 1].
-- * Writes runs/fashion_mnist_experiment_1/ (event files, the projector's files under 00000/).
local torchvision = require "torchvision"
local transforms = torchvision.transforms
local argparse = require "argparse"

-- PyTorch TensorBoard support
local SummaryWriter = torch.utils.tensorboard.SummaryWriter

local parser = argparse.ArgumentParser({ description = "PyTorch TensorBoard Support" })
parser:add_argument("--log-every", { type = "int", default = 1000, help = "batches between validation checks (default %(default)s)" })
parser:add_argument("--max-batches", { type = "int", help = "stop the epoch after this many batches (default: all)" })
local args = parser:parse_args({ ... })
local LOG_EVERY = args.log_every

-- Showing images in TensorBoard
local transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.5 }, { 0.5 }) })

-- training and validation splits in ./data (nothing is downloaded)
local training_set = torchvision.datasets.FashionMNIST("./data", { download = true, train = true, transform = transform })
local validation_set = torchvision.datasets.FashionMNIST("./data", { download = true, train = false, transform = transform })

local training_loader = torch.utils.data.DataLoader(training_set, { batch_size = 4, shuffle = true, num_workers = 2 })
local validation_loader = torch.utils.data.DataLoader(validation_set, { batch_size = 4, shuffle = false, num_workers = 2 })

-- Class labels
local classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
  "Sandal", "Shirt", "Sneaker", "Bag", "Ankle Boot" }

-- Extract a batch of 4 images
local dataiter = training_loader:iter()
local images, labels = dataiter()

-- Create a grid from the images (matplotlib_imshow left out)
local img_grid = torchvision.utils.make_grid(images)

-- Default log_dir argument is "runs" - but it's good to be specific
local writer = SummaryWriter("runs/fashion_mnist_experiment_1")

-- Write image data to TensorBoard log dir
writer:add_image("Four Fashion-MNIST Images", img_grid)
writer:flush()

-- Graphing scalars to visualize training
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

-- one epoch, the training vs. validation losses every LOG_EVERY batches
print(#validation_loader)
for epoch = 0, 0 do -- loop over the dataset multiple times
  local running_loss = 0.0

  for i, inputs, labels_ in training_loader:enumerate() do
    if args.max_batches and i >= args.max_batches then break end
    -- basic training loop
    optimizer:zero_grad()
    local outputs = net(inputs)
    local loss = criterion(outputs, labels_)
    loss:backward()
    optimizer:step()

    running_loss = running_loss + loss:item()
    if i % LOG_EVERY == LOG_EVERY - 1 then -- Every LOG_EVERY mini-batches...
      print(string.format("Batch %d", i + 1))
      -- Check against the validation set
      local running_vloss = 0.0

      net:train(false) -- Don't need to track gradents for validation
      for _, vinputs, vlabels in validation_loader:enumerate() do
        local voutputs = net(vinputs)
        local vloss = criterion(voutputs, vlabels)
        running_vloss = running_vloss + vloss:item()
      end
      net:train(true) -- Turn gradients back on for training

      local avg_loss = running_loss / LOG_EVERY
      local avg_vloss = running_vloss / #validation_loader

      -- Log the running loss averaged per batch
      writer:add_scalars("Training vs. Validation Loss",
        { Training = avg_loss, Validation = avg_vloss },
        epoch * #training_loader + i)

      running_loss = 0.0
    end
  end
end
print("Finished Training")

writer:flush()

-- Visualizing the model: again a single mini-batch of images
dataiter = training_loader:iter()
images, labels = dataiter()

-- add_graph() runs the sample input through the model and records it as a graph
writer:add_graph(net, images)
writer:flush()

-- Visualizing the dataset with embeddings: a random subset of data and its labels
local function select_n_random(data, labels_, n)
  n = n or 100
  assert(#data == #labels_)

  local perm = torch.randperm(#data)
  return data[perm][":" .. n], labels_[perm][":" .. n]
end

-- Extract a random subset of data
images, labels = select_n_random(training_set.data, training_set.targets)

-- get the class labels for each image
local class_labels = {}
for j = 0, #labels - 1 do class_labels[#class_labels + 1] = classes[labels[j]:item() + 1] end

-- log embeddings
local features = images:view(-1, 28 * 28)
writer:add_embedding(features, { metadata = class_labels, label_img = images:unsqueeze(1) })
writer:flush()
writer:close()
