-- PyTorch recipe "Performance Tuning Guide" (recipes_source/recipes/tuning_guide.py) in Lua: the
-- guide's code that runs on a CPU, each technique applied to a small model with what it changes
-- printed.
--
--   nnrepl scripts/tutorials/recipes/tuning_guide.lua
--
-- Differences from the original:
-- * The guide is prose with fragments (its `model` and `optimizer` are never defined); here a
--   small CNN, an SGD optimizer and a random batch stand in, and (extra) each section prints a
--   line that shows its effect: a DataLoader with workers and pinned memory, no_grad leaving no
--   graph, torchvision's convolutions before batch norms without bias, gradients set to nil,
--   the compiled gelu against F.gelu, channels_last, checkpointing, the debugging switches off.
-- * torch.compile (the gelu, "reduce-overhead", "max-autotune") hands back what it is given:
--   nnrepl has no compiler, so there is no fusion.
-- * oneDNN Graph: torch.jit.enable_onednn_fusion(true) only sets the flag (no JIT fuser);
--   jit.trace and jit.freeze return the model. ResNet-50 runs on RECIPE_TUNING_BATCH (32) images of
--   RECIPE_TUNING_SIZE (224) pixels.
-- * The BFloat16 snippet: torch._C._jit_set_autocast_mode and
--   torch.fx.experimental.optimization.fuse (FX graph rewriting) are not there: the model runs
--   under torch.cpu.amp.autocast(bfloat16) without the Conv-BN folding, and the snippet's
--   undefined example_input is the sample input.
-- * The GPU, NUMA/OpenMP, allocator and distributed sections are prose or shell settings; of their
--   code, set_float32_matmul_precision("high") and cudnn.benchmark = true are set (no effect on
--   the CPU).
local models = require("torchvision").models
local BATCH = math.tointeger(tonumber(os.getenv("RECIPE_TUNING_BATCH") or "32"))
local SIZE = math.tointeger(tonumber(os.getenv("RECIPE_TUNING_SIZE") or "224"))

-- (extra) a small model, an optimizer and a batch for the fragments below
local model = nn.Sequential(nn.Conv2d(3, 8, 3, { padding = 1, bias = false }), nn.BatchNorm2d(8), nn.ReLU(),
  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
local optimizer = optim.SGD(model:parameters(), { lr = 0.1 })
local inputs, targets = torch.randn(16, 3, 32, 32), torch.randint(0, 10, { 16 })

-- Enable asynchronous data loading and augmentation (extra: the loader the prose describes)
local loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, targets),
  { batch_size = 8, num_workers = 2, pin_memory = torch.cuda.is_available() })
local batches = 0
for _ in loader:iter() do batches = batches + 1 end
print(string.format("DataLoader with 2 workers: %d batches", batches))

-- Disable gradient calculation for validation or inference (extra: no graph is recorded)
do
  local _ <close> = torch.no_grad()
  local out = model(inputs)
  print(string.format("no_grad: requires_grad=%s, grad_fn=%s", tostring(out.requires_grad), tostring(out.grad_fn)))
end

-- Disable bias for convolutions directly followed by a batch norm (extra: torchvision's ResNet does)
local resnet = models.resnet18()
print(string.format("resnet18: conv1 bias %s, layer1[0].conv1 bias %s", tostring(resnet.conv1.bias),
  tostring(resnet.layer1[0].conv1.bias)))

-- Use parameter.grad = None instead of model.zero_grad() or optimizer.zero_grad()
F.cross_entropy(model(inputs), targets):backward()
model:zero_grad()
-- or
optimizer:zero_grad()

-- to zero out gradients, use the following method instead:
F.cross_entropy(model(inputs), targets):backward()
for _, param in ipairs(model:parameters()) do
  param.grad = nil
end
local none = 0
for _, p in ipairs(model:parameters()) do if p.grad == nil then none = none + 1 end end
print(string.format("grad = nil: %d of %d parameters without a gradient", none, #model:parameters()))

-- Fuse operations
local gelu = torch.compile(function(x)
  return x * 0.5 * (1.0 + torch.erf(x / 1.41421))
end)
local g = torch.linspace(-3, 3, 61)
print(string.format("compiled gelu vs F.gelu: max difference %.1e", (gelu(g) - F.gelu(g)):abs():max():item()))

-- Enable channels_last memory format for computer vision models (extra)
local cl = model:to({ memory_format = torch.channels_last })
local x_cl = inputs:to({ memory_format = torch.channels_last })
print(string.format("channels_last: weight %s, input %s, output %s", tostring(cl[0].weight:is_contiguous({ memory_format = torch.channels_last })),
  tostring(x_cl:is_contiguous({ memory_format = torch.channels_last })), tostring(cl(x_cl).shape)))

-- Checkpoint intermediate buffers (extra: the first three layers recomputed in backward, the
-- gradient compared with a plain backward's)
local head = nn.Sequential(model[0], model[1], model[2])
local rest = nn.Sequential(model[3], model[4], model[5])
local out = rest(torch.utils.checkpoint.checkpoint(head, inputs, { use_reentrant = false }))
F.cross_entropy(out, targets):backward()
local g_ckpt = model[0].weight.grad:clone()
model:zero_grad()
F.cross_entropy(model(inputs), targets):backward()
print(string.format("checkpoint: conv gradient vs without checkpointing: max difference %.1e",
  (g_ckpt - model[0].weight.grad):abs():max():item()))

-- Disable debugging APIs
torch.autograd.set_detect_anomaly(false)
print(string.format("anomaly detection: %s", tostring(torch.is_anomaly_enabled())))

-- Use oneDNN Graph with TorchScript for inference

-- Only this extra line of code is required to use oneDNN Graph
torch.jit.enable_onednn_fusion(true)

-- sample input should be of the same shape as expected inputs
local sample_input = { torch.rand(BATCH, 3, SIZE, SIZE) }
-- Using resnet50 from torchvision in this example for illustrative purposes,
-- but the line below can indeed be modified to use custom models as well.
local model50 = models["resnet50"]():eval()
-- Tracing the model with example input
local traced_model = torch.jit.trace(model50, sample_input)
-- Invoking torch.jit.freeze
traced_model = torch.jit.freeze(traced_model)

local y
do
  local _ <close> = torch.no_grad()
  -- a couple of warm-up runs
  traced_model(table.unpack(sample_input))
  traced_model(table.unpack(sample_input))
  -- speedup would be observed after warm-up runs
  y = traced_model(table.unpack(sample_input))
end
print(string.format("oneDNN fusion %s; resnet50 traced: %s", tostring(torch.jit.onednn_fusion_enabled()), tostring(y.shape)))

local example_input = sample_input[1]
do
  local _ <close> = torch.no_grad()
  local _a <close> = torch.cpu.amp.autocast({ cache_enabled = false, dtype = torch.bfloat16 })
  local bf = torch.jit.freeze(torch.jit.trace(model50, example_input))
  -- a couple of warm-up runs
  bf(example_input)
  bf(example_input)
  -- speedup would be observed in subsequent runs.
  local yb = bf(example_input)
  print(string.format("bfloat16 autocast: %s, top-1 agrees with float32 on %d of %d", tostring(yb.dtype),
    yb:float():argmax(1):eq(y:argmax(1)):sum():item(), BATCH))
end

-- GPU specific optimizations: Enable Tensor cores
torch.set_float32_matmul_precision("high")

-- Use CUDA Graphs
local m = torch.compile(model, "reduce-overhead")
-- or
m = torch.compile(model, "max-autotune")

-- Enable cuDNN auto-tuner
torch.backends.cudnn.benchmark = true
print(string.format("matmul precision %s, cudnn.benchmark %s", torch.get_float32_matmul_precision(),
  tostring(torch.backends.cudnn.benchmark)))
