-- Port of pytorch/tutorials intermediate_source/ensembling.py (an ensemble of MLPs run at once
-- with torch.func.stack_module_state + functional_call + vmap).
-- Run: nnrepl scripts/tutorials/intermediate2/ensembling.lua
-- Differences: runs on CUDA when there is one, else on the CPU (the tutorial needs CUDA). nnrepl
-- has no meta device, so base_model stays a deepcopy with real weights (functional_call
-- replaces them all anyway). ENS_TIMEIT=n sets the Timer's runs (default 100; CI uses 1).
local torch = require "torch"
local nn = torch.nn
local F = nn.functional
local copy = require "copy"
torch.manual_seed(0)

local SimpleMLP = nn.Module:extend("SimpleMLP")
function SimpleMLP:__init()
  self.fc1 = nn.Linear(784, 128)
  self.fc2 = nn.Linear(128, 128)
  self.fc3 = nn.Linear(128, 10)
end
function SimpleMLP:forward(x)
  x = x:flatten(1)
  x = self.fc1(x)
  x = F.relu(x)
  x = self.fc2(x)
  x = F.relu(x)
  x = self.fc3(x)
  return x
end

local device = torch.cuda.is_available() and "cuda" or "cpu"
local num_models = 10

local data = torch.randn(100, 64, 1, 28, 28, { device = device })
local targets = torch.randint(10, { 6400 }, { device = device })

local models = {}
for _ = 1, num_models do models[#models + 1] = SimpleMLP():to(device) end

local minibatches = data[":" .. num_models]
local predictions_diff_minibatch_loop = {}
for i, model in ipairs(models) do predictions_diff_minibatch_loop[i] = model(minibatches[i - 1]) end

local minibatch = data[0]
local predictions2 = {}
for i, model in ipairs(models) do predictions2[i] = model(minibatch) end

local stack_module_state = torch.func.stack_module_state

local params, buffers = stack_module_state(models)

local functional_call = torch.func.functional_call

local base_model = copy.deepcopy(models[1]) -- no .to('meta'): nnrepl has no meta tensors

local function fmodel(params, buffers, x)
  return functional_call(base_model, { params, buffers }, { x })
end

local sizes = {}
for _, p in ipairs(params:values()) do sizes[#sizes + 1] = tostring(p:size(0)) end
print("[" .. table.concat(sizes, ", ") .. "]")

assert(minibatches.shape == torch.Size({ num_models, 64, 1, 28, 28 }))

local vmap = torch.vmap

local predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)

assert(torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), { atol = 1e-3, rtol = 1e-5 }))

local predictions2_vmap = vmap(fmodel, { in_dims = { 0, 0, false } })(params, buffers, minibatch) -- false for None

assert(torch.allclose(predictions2_vmap, torch.stack(predictions2), { atol = 1e-3, rtol = 1e-5 }))
print(string.format("vmap predictions match the loop: %s %s", tostring(predictions1_vmap.shape), tostring(predictions2_vmap.shape)))

local Timer = torch.utils.benchmark.Timer
local runs = tonumber(os.getenv("ENS_TIMEIT")) or 100
local globals = { models = models, minibatches = minibatches, vmap = vmap, fmodel = fmodel, params = params, buffers = buffers }
local without_vmap = Timer([[
local r = {}
for i, model in ipairs(models) do r[i] = model(minibatches[i - 1]) end]], { globals = globals })
local with_vmap = Timer("vmap(fmodel)(params, buffers, minibatches)", { globals = globals })
print(string.format("Predictions without vmap %s", tostring(without_vmap:timeit(runs))))
print(string.format("Predictions with vmap %s", tostring(with_vmap:timeit(runs))))
