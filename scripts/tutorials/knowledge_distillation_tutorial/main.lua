-- pytorch/tutorials beginner_source/knowledge_distillation_tutorial.py, ported: a CIFAR-10
-- teacher (DeepNN) and student (LightNN) trained with cross-entropy, then the student trained
-- again with the teacher's soft targets (KD), a cosine loss on hidden representations, and an
-- MSE loss through a regressor (the classes are in model.lua beside this file).
--   nnrepl scripts/tutorials/knowledge_distillation_tutorial/main.lua
-- Data: nothing is downloaded. CIFAR-10's binary version (cifar-10-binary.tar.gz) must be
-- extracted under ./data, as ./data/cifar-10-batches-bin/data_batch_1.bin ... test_batch.bin;
-- without it datasets.CIFAR10 stops with "CIFAR10: data_batch_1.bin not found in ...".
-- Differences: the models return two values where the tutorial returns a tuple; Python's
-- "{:,}" thousands separator is a small helper; warnings.filterwarnings has no equivalent
-- (nnrepl prints none here). Tiny runs: KD_EPOCHS (default 10, the tutorial's) epochs for each
-- of the five trainings.
local torchvision = require("torchvision")
local transforms, datasets = torchvision.transforms, torchvision.datasets
local U = require("nn_util")
local M = require("model")
local DeepNN, LightNN = M.DeepNN, M.LightNN

local EPOCHS = tonumber(os.getenv("KD_EPOCHS") or "10")

-- Check if GPU is available, and if not, use the CPU
local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")

-- Data preprocessing for CIFAR-10. We use an arbitrary batch size of 128.
local transforms_cifar = transforms.Compose({
  transforms.ToTensor(),
  transforms.Normalize({ mean = { 0.485, 0.456, 0.406 }, std = { 0.229, 0.224, 0.225 } }),
})

-- Load CIFAR-10 dataset
local train_dataset = datasets.CIFAR10({ root = "./data", train = true, download = true, transform = transforms_cifar })
local test_dataset = datasets.CIFAR10({ root = "./data", train = false, download = true, transform = transforms_cifar })

--Dataloaders
local train_loader = torch.utils.data.DataLoader(train_dataset, { batch_size = 128, shuffle = true, num_workers = 2 })
local test_loader = torch.utils.data.DataLoader(test_dataset, { batch_size = 128, shuffle = false, num_workers = 2 })

local function train(model, train_loader, epochs, learning_rate, device)
  local criterion = nn.CrossEntropyLoss()
  local optimizer = optim.Adam(model:parameters(), { lr = learning_rate })

  model:to(device)
  model:train()

  for epoch = 0, epochs - 1 do
    local running_loss = 0.0
    for inputs, labels in train_loader:iter() do
      inputs, labels = inputs:to(device), labels:to(device)

      optimizer:zero_grad()
      local outputs = model(inputs)

      local loss = criterion(outputs, labels)
      loss:backward()
      optimizer:step()

      running_loss = running_loss + loss:item()
    end

    print(string.format("Epoch %d/%d, Loss: %s", epoch + 1, epochs, U.pyfloat(running_loss / #train_loader)))
  end
end

local function test(model, test_loader, device)
  model:to(device)
  model:eval()

  local correct = 0
  local total = 0

  do
    local _ <close> = torch.no_grad()
    for inputs, labels in test_loader:iter() do
      inputs, labels = inputs:to(device), labels:to(device)

      local outputs = model(inputs)
      local _, predicted = torch.max(outputs.data, 1)

      total = total + labels:size(0)
      correct = correct + (predicted:eq(labels)):sum():item()
    end
  end

  local accuracy = 100 * correct / total
  print(string.format("Test Accuracy: %.2f%%", accuracy))
  return accuracy
end

torch.manual_seed(42)
local nn_deep = DeepNN(10)
train(nn_deep, train_loader, EPOCHS, 0.001, device) -- epochs, learning_rate
local test_accuracy_deep = test(nn_deep, test_loader, device)

-- Instantiate the lightweight network
torch.manual_seed(42)
local nn_light = LightNN(10)

torch.manual_seed(42)
local new_nn_light = LightNN(10)

-- Print the norm of the first layer of the initial lightweight model
print("Norm of 1st layer of nn_light: " .. U.pyfloat(torch.norm(nn_light.features[0].weight):item()))
-- Print the norm of the first layer of the new lightweight model
print("Norm of 1st layer of new_nn_light: " .. U.pyfloat(torch.norm(new_nn_light.features[0].weight):item()))

-- Python's "{:,}".format(n)
local function thousands(n)
  local s = tostring(n)
  repeat
    local k
    s, k = s:gsub("^(%d+)(%d%d%d)", "%1,%2")
  until k == 0
  return s
end

local function numel(model)
  local total = 0
  for _, p in ipairs(model:parameters()) do total = total + p:numel() end
  return total
end

local total_params_deep = thousands(numel(nn_deep))
print(string.format("DeepNN parameters: %s", total_params_deep))
local total_params_light = thousands(numel(nn_light))
print(string.format("LightNN parameters: %s", total_params_light))

train(nn_light, train_loader, EPOCHS, 0.001, device)
local test_accuracy_light_ce = test(nn_light, test_loader, device)

print(string.format("Teacher accuracy: %.2f%%", test_accuracy_deep))
print(string.format("Student accuracy: %.2f%%", test_accuracy_light_ce))

local function train_knowledge_distillation(teacher, student, train_loader, epochs, learning_rate, T,
                                            soft_target_loss_weight, ce_loss_weight, device)
  local ce_loss = nn.CrossEntropyLoss()
  local optimizer = optim.Adam(student:parameters(), { lr = learning_rate })

  teacher:to(device)
  student:to(device)
  teacher:eval() -- Teacher set to evaluation mode
  student:train() -- Student to train mode

  for epoch = 0, epochs - 1 do
    local running_loss = 0.0
    for inputs, labels in train_loader:iter() do
      inputs, labels = inputs:to(device), labels:to(device)

      optimizer:zero_grad()

      -- the teacher's forward pass keeps no graph
      local teacher_logits
      do
        local _ <close> = torch.no_grad()
        teacher_logits = teacher(inputs)
      end

      local student_logits = student(inputs)

      -- soften both distributions with the temperature T
      local soft_targets = nn.functional.softmax(teacher_logits / T, { dim = -1 })
      local soft_prob = nn.functional.log_softmax(student_logits / T, { dim = -1 })

      -- the soft targets loss, scaled by T**2
      local soft_targets_loss = -torch.sum(soft_targets * soft_prob) / soft_prob:size()[0] * (T ^ 2)

      local label_loss = ce_loss(student_logits, labels)

      local loss = soft_target_loss_weight * soft_targets_loss + ce_loss_weight * label_loss

      loss:backward()
      optimizer:step()

      running_loss = running_loss + loss:item()
    end

    print(string.format("Epoch %d/%d, Loss: %s", epoch + 1, epochs, U.pyfloat(running_loss / #train_loader)))
  end
end

-- Apply train_knowledge_distillation with a temperature of 2 (weights 0.75 for CE, 0.25 for KD)
-- (teacher, student, train_loader, epochs, learning_rate, T, soft_target_loss_weight, ce_loss_weight, device)
train_knowledge_distillation(nn_deep, new_nn_light, train_loader, EPOCHS, 0.001, 2, 0.25, 0.75, device)
local test_accuracy_light_ce_and_kd = test(new_nn_light, test_loader, device)

print(string.format("Teacher accuracy: %.2f%%", test_accuracy_deep))
print(string.format("Student accuracy without teacher: %.2f%%", test_accuracy_light_ce))
print(string.format("Student accuracy with CE + KD: %.2f%%", test_accuracy_light_ce_and_kd))

-- Cosine loss on the hidden representations: the modified teacher takes the trained weights
local ModifiedDeepNNCosine, ModifiedLightNNCosine = M.ModifiedDeepNNCosine, M.ModifiedLightNNCosine
local modified_nn_deep = ModifiedDeepNNCosine(10)
modified_nn_deep:load_state_dict(nn_deep:state_dict())

-- Once again ensure the norm of the first layer is the same for both networks
print("Norm of 1st layer for deep_nn: " .. U.pyfloat(torch.norm(nn_deep.features[0].weight):item()))
print("Norm of 1st layer for modified_deep_nn: " .. U.pyfloat(torch.norm(modified_nn_deep.features[0].weight):item()))

-- the student with the same seed as the other students, trained from scratch
torch.manual_seed(42)
local modified_light_nn = ModifiedLightNNCosine(10)
print("Norm of 1st layer: " .. U.pyfloat(torch.norm(modified_light_nn.features[0].weight):item()))

local function train_cosine_loss(teacher, student, train_loader, epochs, learning_rate, hidden_rep_loss_weight,
                                 ce_loss_weight, device)
  local ce_loss = nn.CrossEntropyLoss()
  local cosine_loss = nn.CosineEmbeddingLoss()
  local optimizer = optim.Adam(student:parameters(), { lr = learning_rate })

  teacher:to(device)
  student:to(device)
  teacher:eval() -- Teacher set to evaluation mode
  student:train() -- Student to train mode

  for epoch = 0, epochs - 1 do
    local running_loss = 0.0
    for inputs, labels in train_loader:iter() do
      inputs, labels = inputs:to(device), labels:to(device)

      optimizer:zero_grad()

      -- only the teacher's hidden representation, without a graph
      local teacher_hidden_representation
      do
        local _ <close> = torch.no_grad()
        local _
        _, teacher_hidden_representation = teacher(inputs)
      end

      local student_logits, student_hidden_representation = student(inputs)

      -- target ones: a smaller loss means a larger cosine similarity
      local hidden_rep_loss = cosine_loss(student_hidden_representation, teacher_hidden_representation,
        { target = torch.ones(inputs:size(0)):to(device) })

      local label_loss = ce_loss(student_logits, labels)

      local loss = hidden_rep_loss_weight * hidden_rep_loss + ce_loss_weight * label_loss

      loss:backward()
      optimizer:step()

      running_loss = running_loss + loss:item()
    end

    print(string.format("Epoch %d/%d, Loss: %s", epoch + 1, epochs, U.pyfloat(running_loss / #train_loader)))
  end
end

-- test() for the models that return two values: the second is ignored
local function test_multiple_outputs(model, test_loader, device)
  model:to(device)
  model:eval()

  local correct = 0
  local total = 0

  do
    local _ <close> = torch.no_grad()
    for inputs, labels in test_loader:iter() do
      inputs, labels = inputs:to(device), labels:to(device)

      local outputs = model(inputs) -- the first value only
      local _, predicted = torch.max(outputs.data, 1)

      total = total + labels:size(0)
      correct = correct + (predicted:eq(labels)):sum():item()
    end
  end

  local accuracy = 100 * correct / total
  print(string.format("Test Accuracy: %.2f%%", accuracy))
  return accuracy
end

-- (teacher, student, train_loader, epochs, learning_rate, hidden_rep_loss_weight, ce_loss_weight, device)
train_cosine_loss(modified_nn_deep, modified_light_nn, train_loader, EPOCHS, 0.001, 0.25, 0.75, device)
local test_accuracy_light_ce_and_cosine_loss = test_multiple_outputs(modified_light_nn, test_loader, device)

-- MSE between the teacher's feature map and the student's regressor output
local ModifiedDeepNNRegressor, ModifiedLightNNRegressor = M.ModifiedDeepNNRegressor, M.ModifiedLightNNRegressor

local function train_mse_loss(teacher, student, train_loader, epochs, learning_rate, feature_map_weight, ce_loss_weight,
                              device)
  local ce_loss = nn.CrossEntropyLoss()
  local mse_loss = nn.MSELoss()
  local optimizer = optim.Adam(student:parameters(), { lr = learning_rate })

  teacher:to(device)
  student:to(device)
  teacher:eval() -- Teacher set to evaluation mode
  student:train() -- Student to train mode

  for epoch = 0, epochs - 1 do
    local running_loss = 0.0
    for inputs, labels in train_loader:iter() do
      inputs, labels = inputs:to(device), labels:to(device)

      optimizer:zero_grad()

      local teacher_feature_map
      do
        local _ <close> = torch.no_grad()
        local _
        _, teacher_feature_map = teacher(inputs)
      end

      local student_logits, regressor_feature_map = student(inputs)

      local hidden_rep_loss = mse_loss(regressor_feature_map, teacher_feature_map)

      local label_loss = ce_loss(student_logits, labels)

      local loss = feature_map_weight * hidden_rep_loss + ce_loss_weight * label_loss

      loss:backward()
      optimizer:step()

      running_loss = running_loss + loss:item()
    end

    print(string.format("Epoch %d/%d, Loss: %s", epoch + 1, epochs, U.pyfloat(running_loss / #train_loader)))
  end
end

torch.manual_seed(42)
local modified_light_nn_mse = ModifiedLightNNRegressor(10)

local modified_nn_deep_reg = ModifiedDeepNNRegressor(10)
modified_nn_deep_reg:load_state_dict(nn_deep:state_dict())

-- (teacher, student, train_loader, epochs, learning_rate, feature_map_weight, ce_loss_weight, device)
train_mse_loss(modified_nn_deep_reg, modified_light_nn_mse, train_loader, EPOCHS, 0.001, 0.25, 0.75, device)
local test_accuracy_light_ce_and_mse_loss = test_multiple_outputs(modified_light_nn_mse, test_loader, device)

print(string.format("Teacher accuracy: %.2f%%", test_accuracy_deep))
print(string.format("Student accuracy without teacher: %.2f%%", test_accuracy_light_ce))
print(string.format("Student accuracy with CE + KD: %.2f%%", test_accuracy_light_ce_and_kd))
print(string.format("Student accuracy with CE + CosineLoss: %.2f%%", test_accuracy_light_ce_and_cosine_loss))
print(string.format("Student accuracy with CE + RegressorMSE: %.2f%%", test_accuracy_light_ce_and_mse_loss))
