-- PyTorch recipe "Zeroing out gradients in PyTorch" (recipes_source/recipes/zeroing_out_gradients.py)
-- in Lua: a CIFAR-10 CNN trained with optimizer:zero_grad() before each step.
--
--   nnrepl scripts/tutorials/recipes/zeroing_out_gradients.lua
--
-- Data: nothing is downloaded; CIFAR-10's binary version must be extracted under ./data
-- (./data/cifar-10-batches-bin/data_batch_1.bin ... test_batch.bin).
-- Differences from the original: enumerate(trainloader, 0) is trainloader:enumerate() (i from 0);
-- classes is a Lua list; the Net class comes from cifar_net.lua (the CIFAR-10 tutorial's CNN, the
-- recipe's own). Tiny runs (the recipe's values are the defaults): RECIPE_EPOCHS (2)
-- epochs, a loss line every RECIPE_LOG_EVERY (2000) mini-batches.
local torchvision = require "torchvision"
local transforms = torchvision.transforms

local EPOCHS = tonumber(os.getenv("RECIPE_EPOCHS") or "2")
local LOG_EVERY = tonumber(os.getenv("RECIPE_LOG_EVERY") or "2000")

-- 2. Load and normalize the dataset
local transform = transforms.Compose({ transforms.ToTensor(), transforms.Normalize({ 0.5, 0.5, 0.5 }, { 0.5, 0.5, 0.5 }) })

local trainset = torchvision.datasets.CIFAR10({ root = "./data", train = true, download = true, transform = transform })
local trainloader = torch.utils.data.DataLoader(trainset, { batch_size = 4, shuffle = true, num_workers = 2 })

local testset = torchvision.datasets.CIFAR10({ root = "./data", train = false, download = true, transform = transform })
local testloader = torch.utils.data.DataLoader(testset, { batch_size = 4, shuffle = false, num_workers = 2 }) -- luacheck: ignore

local classes = { "plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck" } -- luacheck: ignore

-- 3. Build the neural network
local Net = require "cifar_net" -- the recipe's class Net(nn.Module), as the CIFAR-10 tutorial's

-- 4. Define a Loss function and optimizer
local net = Net()
local criterion = nn.CrossEntropyLoss()
local optimizer = optim.SGD(net:parameters(), { lr = 0.001, momentum = 0.9 })

-- 5. Zero the gradients while training the network
for epoch = 0, EPOCHS - 1 do -- loop over the dataset multiple times
  local running_loss = 0.0
  for i, inputs, labels in trainloader:enumerate() do
    -- zero the parameter gradients
    optimizer:zero_grad()

    -- forward + backward + optimize
    local outputs = net(inputs)
    local loss = criterion(outputs, labels)
    loss:backward()
    optimizer:step()

    -- print statistics
    running_loss = running_loss + loss:item()
    if i % LOG_EVERY == LOG_EVERY - 1 then -- print every 2000 mini-batches
      print(string.format("[%d, %5d] loss: %.3f", epoch + 1, i + 1, running_loss / LOG_EVERY))
      running_loss = 0.0
    end
  end
end

print("Finished Training")
