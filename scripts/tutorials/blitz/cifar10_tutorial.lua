-- pytorch/tutorials beginner_source/blitz/cifar10_tutorial.py ("Training a Classifier", the 60
-- Minute Blitz), ported.
--   nnrepl scripts/tutorials/blitz/cifar10_tutorial.lua
-- Data: nothing is downloaded. CIFAR-10's binary version (cifar-10-binary.tar.gz) must be
-- extracted under ./data, as ./data/cifar-10-batches-bin/data_batch_1.bin ... data_batch_5.bin
-- and test_batch.bin; without it torchvision.datasets.CIFAR10 raises "CIFAR10: data_batch_1.bin
-- not found in ./data/cifar-10-batches-bin or ./data: download=true, but nnrepl downloads
-- nothing; put the binary version ...".
-- Differences: the Net class is in cifar10_model.lua (the parity test requires it);
-- matplotlib's imshow is left out (the labels it shows are still printed); classes is a Lua
-- list, so a label l names classes[l + 1]. Writes ./cifar_net.pth (a safetensors file, which
-- PyTorch's safetensors.torch.load_file reads).
-- Tiny runs (the tutorial's values are the defaults): BLITZ_EPOCHS (2) epochs, a loss line
-- every BLITZ_LOG_EVERY (2000) mini-batches.
local torchvision = require("torchvision")
local transforms = torchvision.transforms

local EPOCHS = tonumber(os.getenv("BLITZ_EPOCHS") or "2")
local LOG_EVERY = tonumber(os.getenv("BLITZ_LOG_EVERY") or "2000")

-- 1. Load and normalize CIFAR10
local transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 }) })

local batch_size = 4

local trainset = torchvision.datasets.CIFAR10({ root = "./data", train = true, download = true, transform = transform })
local trainloader = torch.utils.data.DataLoader(trainset, { batch_size = batch_size, shuffle = true, num_workers = 2 })

local testset = torchvision.datasets.CIFAR10({ root = "./data", train = false, download = true, transform = transform })
local testloader = torch.utils.data.DataLoader(testset, { batch_size = batch_size, shuffle = false, num_workers = 2 })

local classes = { "plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck" }

-- some random training images (imshow(torchvision.utils.make_grid(images)) left out) and their labels
local function names(labels, n)
  local out = {}
  for j = 0, n - 1 do out[#out + 1] = string.format("%-5s", classes[labels[j]:item() + 1]) end
  return table.concat(out, " ")
end

local dataiter = trainloader:iter()
local images, labels = dataiter()
print(names(labels, batch_size))

-- 2. Define a Convolutional Neural Network
local Net = require("cifar10_model")
local net = Net()

-- 3. Define a Loss function and optimizer
local optim = torch.optim

local criterion = nn.CrossEntropyLoss()
local optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 })

-- 4. Train the network
for epoch = 0, EPOCHS - 1 do -- loop over the dataset multiple times
  local running_loss = 0.0
  for i, inputs, labels_ in trainloader:enumerate() do

    -- zero the parameter gradients
    optimizer:zero_grad()

    -- forward + backward + optimize
    local outputs = net(inputs)
    local loss = criterion(outputs, labels_)
    loss:backward()
    optimizer:step()

    -- print statistics
    running_loss = running_loss + loss:item()
    if i % LOG_EVERY == LOG_EVERY - 1 then
      print(string.format("[%d, %5d] loss: %.3f", epoch + 1, i + 1, running_loss / LOG_EVERY))
      running_loss = 0.0
    end
  end
end

print("Finished Training")

local PATH = "./cifar_net.pth"
torch.save(net:state_dict(), PATH)

-- 5. Test the network on the test data
dataiter = testloader:iter()
images, labels = dataiter()

-- print images (imshow left out)
print("GroundTruth:  " .. names(labels, 4))

net = Net()
net:load_state_dict(torch.load(PATH))

local outputs = net(images)

local _, predicted = torch.max(outputs, 1)

print("Predicted:  " .. names(predicted, 4))

local correct = 0
local total = 0
-- since we're not training, we don't need to calculate the gradients for our outputs
do
  local _ <close> = torch.no_grad()
  for images_, labels_ in testloader:iter() do
    -- calculate outputs by running images through the network
    local outputs_ = net(images_)
    -- the class with the highest energy is what we choose as prediction
    local _, predicted_ = torch.max(outputs_.data, 1)
    total = total + labels_:size(0)
    correct = correct + (predicted_:eq(labels_)):sum():item()
  end
end

print(string.format("Accuracy of the network on the 10000 test images: %d %%", 100 * correct // total))

-- prepare to count predictions for each class
local correct_pred, total_pred = {}, {}
for _, classname in ipairs(classes) do correct_pred[classname], total_pred[classname] = 0, 0 end

-- again no gradients needed
do
  local _ <close> = torch.no_grad()
  for images_, labels_ in testloader:iter() do
    local outputs_ = net(images_)
    local _, predictions = torch.max(outputs_, 1)
    -- collect the correct predictions for each class
    for j = 0, labels_:size(0) - 1 do
      local label, prediction = labels_[j]:item(), predictions[j]:item()
      if label == prediction then
        correct_pred[classes[label + 1]] = correct_pred[classes[label + 1]] + 1
      end
      total_pred[classes[label + 1]] = total_pred[classes[label + 1]] + 1
    end
  end
end

-- print accuracy for each class
for _, classname in ipairs(classes) do
  local accuracy = 100 * correct_pred[classname] / total_pred[classname]
  print(string.format("Accuracy for class: %-5s is %.1f %%", classname, accuracy))
end

-- Training on GPU
local device = torch.device(torch.cuda.is_available() and "cuda:0" or "cpu")

-- Assuming that we are on a CUDA machine, this should print a CUDA device:
print(device)
