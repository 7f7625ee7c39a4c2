-- pytorch/tutorials beginner_source/blitz/autograd_tutorial.py ("A Gentle Introduction to
-- torch.autograd", the 60 Minute Blitz), ported.
--   nnrepl scripts/tutorials/blitz/autograd_tutorial.lua
-- Differences: nothing is downloaded, so resnet18 starts from random weights (the tutorial's
-- weights=ResNet18_Weights.DEFAULT needs a download; torchvision.models.resnet18{weights = ...}
-- loads them only from a local file); Lua's == compares two tensors as objects, so the checks
-- `9*a**2 == a.grad` are written with :eq; f-strings are string.format.
local torchvision = require("torchvision")
local resnet18 = torchvision.models.resnet18

-- Usage in PyTorch: one training step of resnet18
local model = resnet18()
local data = torch.rand(1, 3, 64, 64)
local labels = torch.rand(1, 1000)

local prediction = model(data) -- forward pass

local loss = (prediction - labels):sum()
loss:backward() -- backward pass

local optim = torch.optim.SGD(model:parameters(), { lr = 1e-2, momentum = 0.9 })

optim:step() -- gradient descent

-- Differentiation in autograd
local a = torch.tensor({ 2., 3. }, { requires_grad = true })
local b = torch.tensor({ 6., 4. }, { requires_grad = true })

local Q = 3 * a ^ 3 - b ^ 2

local external_grad = torch.tensor({ 1., 1. })
Q:backward({ gradient = external_grad })

-- check if collected gradients are correct
print((9 * a ^ 2):eq(a.grad))
print((-2 * b):eq(b.grad))

-- Exclusion from the DAG
local x = torch.rand(5, 5)
local y = torch.rand(5, 5)
local z = torch.rand({ 5, 5 }, { requires_grad = true })

a = x + y
print(string.format("Does `a` require gradients?: %s", a.requires_grad and "True" or "False"))
b = x + z
print(string.format("Does `b` require gradients?: %s", b.requires_grad and "True" or "False"))

-- finetuning: freeze the network, replace its classifier
local nn, optim_ = torch.nn, torch.optim

model = resnet18()

-- Freeze all the parameters in the network
for _, param in ipairs(model:parameters()) do
  param.requires_grad = false
end

model.fc = nn.Linear(512, 10)

-- Optimize only the classifier
local optimizer = optim_.SGD(model:parameters(), { lr = 1e-2, momentum = 0.9 })
