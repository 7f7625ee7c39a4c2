-- Port of pytorch/tutorials intermediate_source/custom_function_conv_bn_tutorial.py (Fusing
-- Convolution and Batch Norm using Custom Function): gradchecks of hand-written Conv2D and
-- BatchNorm backwards, then the fused conv+BN Function trained on MNIST, fused and unfused.
-- The Functions and Net are in model.lua.
--
-- Run: nnrepl scripts/tutorials/autograd/custom_function_conv_bn/main.lua
--
-- Differences from the original:
--  * nothing is downloaded: MNIST's IDX files must be in DATA/MNIST/raw (or DATA/MNIST, DATA),
--    DATA = $CONV_BN_DATA or the original's ../data; when they are missing
--    torchvision.datasets.MNIST stops with an error naming the files and the folder.
--  * environment variables make a run tiny (defaults are the tutorial's): CONV_BN_EPOCHS (2),
--    CONV_BN_BATCH (2048, train and test batch size).
--  * gradcheck results are printed ("gradcheck Conv2D: true"); a failure raises, as in PyTorch.
--  * peak memory is torch.cuda.max_memory_allocated on CUDA; on the CPU nnrepl does not track
--    it and the last line says so.
local Net = require "model"
local Conv2D, BatchNorm, FusedConvBN2DFunction = Net.Conv2D, Net.BatchNorm, Net.FusedConvBN2DFunction
local torchvision = require "torchvision"
local datasets, transforms = torchvision.datasets, torchvision.transforms
local StepLR = optim.lr_scheduler.StepLR

local weight = torch.rand(5, 3, 3, 3, { requires_grad = true, dtype = torch.double })
local X = torch.rand(10, 3, 7, 7, { requires_grad = true, dtype = torch.double })
print("gradcheck Conv2D:", torch.autograd.gradcheck(Conv2D.apply, { X, weight }))

local a = torch.rand(1, 2, 3, 4, { requires_grad = true, dtype = torch.double })
print("gradcheck BatchNorm:", torch.autograd.gradcheck(BatchNorm.apply, { a }, { fast_mode = false }))

weight = torch.rand(5, 3, 3, 3, { requires_grad = true, dtype = torch.double })
X = torch.rand(2, 3, 4, 4, { requires_grad = true, dtype = torch.double })
print("gradcheck FusedConvBN2DFunction:", torch.autograd.gradcheck(FusedConvBN2DFunction.apply, { X, weight }))

local function train(model, device, train_loader, optimizer, epoch)
  model:train()
  for batch_idx, data, target in train_loader:enumerate() do
    data, target = data:to(device), target:to(device)
    optimizer:zero_grad()
    local output = model(data)
    local loss = F.nll_loss(output, target)
    loss:backward()
    optimizer:step()
    if batch_idx % 2 == 0 then
      print(string.format("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f",
        epoch, batch_idx * #data, #train_loader.dataset,
        100. * batch_idx / #train_loader, loss:item()))
    end
  end
end

local function test(model, device, test_loader)
  model:eval()
  local test_loss = 0
  local correct = 0
  do
    local _ <close> = torch.inference_mode()
    for data, target in test_loader:iter() do
      data, target = data:to(device), target:to(device)
      local output = model(data)
      test_loss = test_loss + F.nll_loss(output, target, { reduction = "sum" }):item()
      local pred = output:argmax({ dim = 1, keepdim = true })
      correct = correct + pred:eq(target:view_as(pred)):sum():item()
    end
  end

  test_loss = test_loss / #test_loader.dataset

  print(string.format("\nTest set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)\n",
    test_loss, correct, #test_loader.dataset,
    100. * correct / #test_loader.dataset))
end

local use_cuda = torch.cuda.is_available()
local device = torch.device(use_cuda and "cuda" or "cpu")
local batch_size = tonumber(os.getenv("CONV_BN_BATCH") or 2048)
local epochs = tonumber(os.getenv("CONV_BN_EPOCHS") or 2)
local train_kwargs = { batch_size = batch_size }
local test_kwargs = { batch_size = batch_size }

if use_cuda then
  local cuda_kwargs = { num_workers = 1, pin_memory = true, shuffle = true }
  for k, v in pairs(cuda_kwargs) do
    train_kwargs[k] = v
    test_kwargs[k] = v
  end
end

local transform = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ 0.1307 }, { 0.3081 }),
})
local root = os.getenv("CONV_BN_DATA") or "../data"
local dataset1 = datasets.MNIST(root, { train = true, download = true, transform = transform })
local dataset2 = datasets.MNIST(root, { train = false, transform = transform })
local train_loader = torch.utils.data.DataLoader(dataset1, train_kwargs)
local test_loader = torch.utils.data.DataLoader(dataset2, test_kwargs)

local mems = {}
for _, fused in ipairs({ true, false }) do
  torch.manual_seed(123456)
  if use_cuda then torch.cuda.reset_peak_memory_stats() end

  local model = Net(fused):to(device)
  local optimizer = optim.Adadelta(model:parameters(), { lr = 1.0 })
  local scheduler = StepLR(optimizer, { step_size = 1, gamma = 0.7 })

  for epoch = 0, epochs - 1 do
    train(model, device, train_loader, optimizer, epoch)
    test(model, device, test_loader)
    scheduler:step()
  end

  if use_cuda then mems[#mems + 1] = torch.cuda.max_memory_allocated() / 1024 ^ 3 end
end
if use_cuda then
  print(string.format("fused peak memory: %.2fGB, unfused peak memory: %.2fGB", mems[1], mems[2]))
else
  print("fused peak memory: not measured on the CPU (torch.cuda.max_memory_allocated needs CUDA)")
end
