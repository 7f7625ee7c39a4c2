-- pytorch/tutorials beginner_source/blitz/neural_networks_tutorial.py ("Neural Networks", the 60
-- Minute Blitz), ported.
--   nnrepl scripts/tutorials/blitz/neural_networks_tutorial.lua
-- The Net class is in neural_networks_model.lua (the parity test requires it). Differences:
-- Python's list(net.parameters()) is the Lua list net:parameters() (1-based: params[1] is
-- conv1's weight); grad_fn.next_functions[0][0] is next_functions[1][1]. The tutorial's last
-- cell (torch.optim) is shown as code in a comment there; it runs here.
local Net = require("neural_networks_model")

local net = Net()
print(net)

local params = net:parameters()
print(#params)
print(params[1]:size()) -- conv1's .weight

local input = torch.randn(1, 1, 32, 32)
local out = net(input)
print(out)

net:zero_grad()
out:backward(torch.randn(1, 10))

-- Loss function
local output = net(input)
local target = torch.randn(10) -- a dummy target, for example
target = target:view(1, -1)    -- make it the same shape as output
local criterion = nn.MSELoss()

local loss = criterion(output, target)
print(loss)

print(loss.grad_fn)                                     -- MSELoss
print(loss.grad_fn.next_functions[1][1])                -- Linear
print(loss.grad_fn.next_functions[1][1].next_functions[1][1]) -- ReLU

-- Backprop
net:zero_grad() -- zeroes the gradient buffers of all parameters

print("conv1.bias.grad before backward")
print(net.conv1.bias.grad)

loss:backward()

print("conv1.bias.grad after backward")
print(net.conv1.bias.grad)

-- Update the weights by hand: weight = weight - learning_rate * gradient
local learning_rate = 0.01
for _, f in ipairs(net:parameters()) do
  f.data:sub_(f.grad.data * learning_rate)
end

-- or with torch.optim
local optim = torch.optim

-- create your optimizer
local optimizer = optim.SGD(net:parameters(), { lr = 0.01 })

-- in your training loop:
optimizer:zero_grad() -- zero the gradient buffers
output = net(input)
loss = criterion(output, target)
loss:backward()
optimizer:step() -- Does the update
