-- pytorch/tutorials intermediate_source/pruning_tutorial.py in Lua: torch.nn.utils.prune on
-- LeNet (random, L1 and Ln-structured pruning, iterative pruning, remove, global pruning and a
-- custom BasePruningMethod).
--
--   nnrepl scripts/tutorials/pruning_tutorial.lua
--
-- Differences from the original: Python's `list(...)` prints are written by pylist below (the
-- same text); a pruning method prints as <torch.nn.utils.prune.Name object at 0x...> with a
-- Lua address. The random draws follow nnrepl's generator, so the masks differ from Python's.
local prune = nn.utils.prune

-- Python's repr of a list of (name, tensor) pairs
local function pylist(items)
  local parts = {}
  for i, kv in ipairs(items) do
    parts[i] = type(kv) == "table" and kv[2] ~= nil and string.format("('%s', %s)", kv[1], tostring(kv[2])) or tostring(kv)
  end
  return "[" .. table.concat(parts, ", ") .. "]"
end

-- Python's repr of dict.keys() (kind "dict_keys") or OrderedDict.keys() ("odict_keys")
local function pykeys(kind, keys)
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = "'" .. k .. "'" end
  return kind .. "([" .. table.concat(parts, ", ") .. "])"
end

-- Create a model
local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")

local LeNet = nn.Module:extend("LeNet")
function LeNet:__init()
  -- 1 input image channel, 6 output channels, 3x3 square conv kernel
  self.conv1 = nn.Conv2d(1, 6, 3)
  self.conv2 = nn.Conv2d(6, 16, 3)
  self.fc1 = nn.Linear(16 * 5 * 5, 120) -- 5x5 image dimension
  self.fc2 = nn.Linear(120, 84)
  self.fc3 = nn.Linear(84, 10)
end

function LeNet:forward(x)
  x = F.max_pool2d(F.relu(self.conv1(x)), { 2, 2 })
  x = F.max_pool2d(F.relu(self.conv2(x)), 2)
  x = x:flatten(1)
  x = F.relu(self.fc1(x))
  x = F.relu(self.fc2(x))
  x = self.fc3(x)
  return x
end

local model = LeNet():to(device)

-- Inspect a Module
local module = model.conv1
print(pylist(module:named_parameters()))
print(pylist(module:named_buffers()))

-- Pruning a Module: 30% of conv1's weights at random
prune.random_unstructured(module, "weight", { amount = 0.3 })
print(pylist(module:named_parameters()))
print(pylist(module:named_buffers()))
print(module.weight)
print(module._forward_pre_hooks)

-- the 3 smallest entries of the bias by L1 norm
prune.l1_unstructured(module, "bias", { amount = 3 })
print(pylist(module:named_parameters()))
print(pylist(module:named_buffers()))
print(module.bias)
print(module._forward_pre_hooks)

-- Iterative Pruning: half of the output channels by L2 norm, on top of the random mask
prune.ln_structured(module, "weight", { amount = 0.5, n = 2, dim = 0 })
print(module.weight)

local hook
for _, h in ipairs(module._forward_pre_hooks:values()) do
  hook = h
  if hook._tensor_name == "weight" then break end -- select out the correct hook
end
local history = {}
for i, m in ipairs(hook) do history[i] = m end -- pruning history in the container
print(pylist(history))

-- Serializing a pruned model
print(pykeys("odict_keys", model:state_dict():keys()))

-- Remove pruning re-parametrization
print(pylist(module:named_parameters()))
print(pylist(module:named_buffers()))
print(module.weight)
prune.remove(module, "weight")
print(pylist(module:named_parameters()))
print(pylist(module:named_buffers()))

-- Pruning multiple parameters in a model
local new_model = LeNet()
for _, kv in ipairs(new_model:named_modules()) do
  local name, module = kv[1], kv[2]
  if nn.isinstance(module, nn.Conv2d) then
    -- prune 20% of connections in all 2D-conv layers
    prune.l1_unstructured(module, "weight", { amount = 0.2 })
  elseif nn.isinstance(module, nn.Linear) then
    -- prune 40% of connections in all linear layers
    prune.l1_unstructured(module, "weight", { amount = 0.4 })
  end
end
local buffer_names = {}
for i, kv in ipairs(new_model:named_buffers()) do buffer_names[i] = kv[1] end
print(pykeys("dict_keys", buffer_names)) -- to verify that all masks exist

-- Global pruning: the lowest 20% of the connections across the whole model
model = LeNet()

local parameters_to_prune = {
  { model.conv1, "weight" },
  { model.conv2, "weight" },
  { model.fc1, "weight" },
  { model.fc2, "weight" },
  { model.fc3, "weight" },
}

prune.global_unstructured(parameters_to_prune, { pruning_method = prune.L1Unstructured, amount = 0.2 })

-- the sparsity of each pruned parameter (not 20% each) and the global one (20%)
local function zeros(t) return torch.sum(t:eq(0)):item() end
for _, layer in ipairs({ "conv1", "conv2", "fc1", "fc2", "fc3" }) do
  print(string.format("Sparsity in %s.weight: %.2f%%", layer,
    100. * zeros(model[layer].weight) / model[layer].weight:nelement()))
end
print(string.format("Global sparsity: %.2f%%",
  100. * (zeros(model.conv1.weight) + zeros(model.conv2.weight) + zeros(model.fc1.weight)
    + zeros(model.fc2.weight) + zeros(model.fc3.weight))
  / (model.conv1.weight:nelement() + model.conv2.weight:nelement() + model.fc1.weight:nelement()
    + model.fc2.weight:nelement() + model.fc3.weight:nelement())))

-- Extending torch.nn.utils.prune with custom pruning functions: prune every other entry
local FooBarPruningMethod = prune.BasePruningMethod:extend("FooBarPruningMethod")
FooBarPruningMethod.PRUNING_TYPE = "unstructured"

function FooBarPruningMethod:compute_mask(t, default_mask)
  local mask = default_mask:clone()
  mask:flatten()["::2"] = 0
  return mask
end

-- prunes module's parameter `name` by removing every other entry; returns the module
local function foobar_unstructured(module, name)
  FooBarPruningMethod.apply(module, name)
  return module
end

model = LeNet()
foobar_unstructured(model.fc3, "bias")

print(model.fc3.bias_mask)
