-- Port of pytorch/tutorials intermediate_source/visualizing_gradients_tutorial.py (the gradient
-- of every layer's output, caught by forward hooks that register tensor hooks, in a deep
-- sigmoid MLP with and without BatchNorm, trained 10 SGD steps on random data).
-- Run: nnrepl scripts/tutorials/intermediate2/visualizing_gradients/main.lua
-- Differences: the Net is in model.lua (the GPU parity test requires it); Python's keyword
-- arguments are an options table (Net({batchnorm = true, num_layers = 3})). matplotlib's plot
-- is printed instead: one line per layer depth with both models' mean absolute gradients.
-- VG_EPOCHS=n sets the number of steps (default 10, as the tutorial).
local torch = require "torch"
local nn = torch.nn
local optim = torch.optim
local F = nn.functional
local Net = require("model").Net

local x = torch.randn(10, 28, 28)
local y = torch.randint(10, { 10 })

local model_bn = Net({ batchnorm = true, num_layers = 3 })
local model_nobn = Net({ batchnorm = false, num_layers = 3 })

model_bn:train()
model_nobn:train()

local optimizer_bn = optim.SGD(model_bn:parameters(), { lr = 0.01, momentum = 0.9 })
local optimizer_nobn = optim.SGD(model_nobn:parameters(), { lr = 0.01, momentum = 0.9 })

print(model_bn.layers[0])
print(model_nobn.layers[0])

local function hook_forward(module_name, grads, hook_backward)
  return function(module, args, output)
    output:register_hook(hook_backward(module_name, grads))
  end
end

local function hook_backward(module_name, grads)
  return function(grad)
    grads[#grads + 1] = { module_name, grad }
  end
end

local function get_all_layers(model, hook_forward, hook_backward)
  local layers = {}
  local grads = {}
  for name, layer in model:named_modules() do
    if #layer:children() == 0 then -- skip Sequential and other wrappers
      layers[layer] = name
      layer:register_forward_hook(hook_forward(name, grads, hook_backward))
    end
  end
  return layers, grads
end

local layers_bn, grads_bn = get_all_layers(model_bn, hook_forward, hook_backward)
local layers_nobn, grads_nobn = get_all_layers(model_nobn, hook_forward, hook_backward)

local epochs = tonumber(os.getenv("VG_EPOCHS")) or 10

for epoch = 0, epochs - 1 do
  -- emptied in place: the hooks hold these tables
  for i = #grads_bn, 1, -1 do grads_bn[i] = nil end
  for i = #grads_nobn, 1, -1 do grads_nobn[i] = nil end

  optimizer_bn:zero_grad()
  optimizer_nobn:zero_grad()

  local y_pred_bn = model_bn(x)
  local y_pred_nobn = model_nobn(x)

  local loss_bn = F.cross_entropy(y_pred_bn, y)
  local loss_nobn = F.cross_entropy(y_pred_nobn, y)

  loss_bn:backward()
  loss_nobn:backward()

  optimizer_bn:step()
  optimizer_nobn:step()
end

local function get_grads(grads)
  local layer_idx = {}
  local avg_grads = {}
  for idx, entry in ipairs(grads) do
    local grad = entry[2]
    if grad ~= nil then
      local avg_grad = grad:abs():mean()
      avg_grads[#avg_grads + 1] = avg_grad
      layer_idx[#layer_idx + 1] = #grads - idx -- backwards: appended during the backward pass
    end
  end
  return layer_idx, avg_grads
end

local layer_idx_bn, avg_grads_bn = get_grads(grads_bn)
local layer_idx_nobn, avg_grads_nobn = get_grads(grads_nobn)

-- instead of the plot (x: layer depth, y: average gradient, one line per model)
print("Gradient flow")
print(string.format("%-12s %-16s %-16s", "Layer depth", "With BatchNorm", "Without BatchNorm"))
local nobn_at = {}
for i, d in ipairs(layer_idx_nobn) do nobn_at[d] = avg_grads_nobn[i] end
for i = #layer_idx_bn, 1, -1 do
  local d = layer_idx_bn[i]
  print(string.format("%-12d %-16.6e %-16s", d, avg_grads_bn[i]:item(),
    nobn_at[d] and string.format("%.6e", nobn_at[d]:item()) or "-"))
end
