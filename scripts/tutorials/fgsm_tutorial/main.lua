-- pytorch/tutorials beginner_source/fgsm_tutorial.py ("Adversarial Example Generation"), ported:
-- the Fast Gradient Sign attack on a LeNet MNIST classifier, its test accuracy for each epsilon.
--   nnrepl scripts/tutorials/fgsm_tutorial/main.lua
-- Differences:
-- * the pretrained LeNet is not shipped (the tutorial downloads it by hand from Google Drive):
--   put its state_dict at data/lenet_mnist_model.pth (PyTorch's .pth, which torch.load reads, or
--   a safetensors file), or set FGSM_PRETRAINED=path; train one with pytorch/examples' mnist
--   (or scripts/examples/mnist) on the Net of model.lua beside this file. Without it torch.load
--   stops naming the missing file.
-- * nothing is downloaded: datasets.MNIST('../data') reads the four IDX files (.gz or not) from
--   ../data/MNIST/raw; when they are missing it stops with an error naming them.
--   Debian's Fashion-MNIST (/usr/share/datasets/fashion-mnist) has the same format.
-- * no matplotlib: the accuracy-vs-epsilon plot is printed as "epsilon accuracy" rows, and for
--   the grid of adversarial examples each one's "Eps: e  orig -> adv" is printed.
local torchvision = require("torchvision")
local datasets, transforms = torchvision.datasets, torchvision.transforms
local U = require("nn_util")
local Net = require("model")

local epsilons = { 0, .05, .1, .15, .2, .25, .3 }
local pretrained_model = os.getenv("FGSM_PRETRAINED") or "data/lenet_mnist_model.pth"
local use_cuda = true

-- Python prints the integer 0 as "0" and the others as floats
local function pynum(x) return math.type(x) == "integer" and tostring(x) or U.pyfloat(x) end

-- MNIST Test dataset and dataloader declaration
local test_loader = torch.utils.data.DataLoader(
  datasets.MNIST("../data", { train = false, download = true, transform = transforms.Compose({
    transforms.ToTensor(),
  }) }),
  { batch_size = 1, shuffle = true })

-- Define what device we are using
print("CUDA Available:  " .. (torch.cuda.is_available() and "True" or "False"))
local device = torch.device((use_cuda and torch.cuda.is_available()) and "cuda" or "cpu")

-- Initialize the network
local model = Net():to(device)

-- Load the pretrained model
model:load_state_dict(torch.load(pretrained_model, { map_location = "cpu" }))

-- Set the model in evaluation mode. In this case this is for the Dropout layers
model:eval()

-- FGSM attack code
local function fgsm_attack(image, epsilon, data_grad)
  -- Collect the element-wise sign of the data gradient
  local sign_data_grad = data_grad:sign()
  -- Create the perturbed image by adjusting each pixel of the input image
  local perturbed_image = image + epsilon * sign_data_grad
  -- Adding clipping to maintain [0,1] range
  perturbed_image = torch.clamp(perturbed_image, 0, 1)
  -- Return the perturbed image
  return perturbed_image
end

local function test(model, device, test_loader, epsilon)

  -- Accuracy counter
  local correct = 0
  local adv_examples = {}

  -- Loop over all examples in test set
  for data, target in test_loader:iter() do

    -- Send the data and label to the device
    data, target = data:to(device), target:to(device)

    -- Set requires_grad attribute of tensor. Important for Attack
    data.requires_grad = true

    -- Forward pass the data through the model
    local output = model(data)
    local _, init_pred = output:max(1, { keepdim = true }) -- get the index of the max log-probability

    -- If the initial prediction is wrong, dont bother attacking, just move on
    if init_pred:item() ~= target:item() then
      goto continue
    end

    -- Calculate the loss
    local loss = F.nll_loss(output, target)

    -- Zero all existing gradients
    model:zero_grad()

    -- Calculate gradients of model in backward pass
    loss:backward()

    -- Collect datagrad
    local data_grad = data.grad.data

    -- Call FGSM Attack
    local perturbed_data = fgsm_attack(data, epsilon, data_grad)

    -- Re-classify the perturbed image
    output = model(perturbed_data)

    -- Check for success
    local _, final_pred = output:max(1, { keepdim = true }) -- get the index of the max log-probability
    if final_pred:item() == target:item() then
      correct = correct + 1
      -- Special case for saving 0 epsilon examples
      if epsilon == 0 and #adv_examples < 5 then
        local adv_ex = perturbed_data:squeeze():detach():cpu()
        adv_examples[#adv_examples + 1] = { init_pred:item(), final_pred:item(), adv_ex }
      end
    else
      -- Save some adv examples for visualization later
      if #adv_examples < 5 then
        local adv_ex = perturbed_data:squeeze():detach():cpu()
        adv_examples[#adv_examples + 1] = { init_pred:item(), final_pred:item(), adv_ex }
      end
    end
    ::continue::
  end

  -- Calculate final accuracy for this epsilon
  local final_acc = correct / #test_loader
  print(string.format("Epsilon: %s\tTest Accuracy = %d / %d = %s", pynum(epsilon), correct, #test_loader,
    U.pyfloat(final_acc)))

  -- Return the accuracy and an adversarial example
  return final_acc, adv_examples
end

local accuracies = {}
local examples = {}

-- Run test for each epsilon
for _, eps in ipairs(epsilons) do
  local acc, ex = test(model, device, test_loader, eps)
  accuracies[#accuracies + 1] = acc
  examples[#examples + 1] = ex
end

-- Accuracy vs Epsilon (the plot's points)
print("Accuracy vs Epsilon")
for i, eps in ipairs(epsilons) do print(string.format("%s %s", pynum(eps), U.pyfloat(accuracies[i]))) end

-- Sample Adversarial Examples (the grid's titles; each example is a 28 x 28 tensor)
for i, eps in ipairs(epsilons) do
  for j = 1, #examples[i] do
    local orig, adv, ex = table.unpack(examples[i][j])
    assert(ex:dim() == 2)
    print(string.format("Eps: %s  %d -> %d", pynum(eps), orig, adv))
  end
end
