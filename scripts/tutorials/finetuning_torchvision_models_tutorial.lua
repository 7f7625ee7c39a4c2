-- pytorch/tutorials beginner_source/finetuning_torchvision_models_tutorial.py, ported: an
-- ImageNet torchvision model (squeezenet by default; resnet, alexnet, vgg, squeezenet, densenet,
-- GoogLeNet, inception) reshaped to 2 classes and trained on the ants/bees images, by feature
-- extraction (only the new layer) or finetuning, then the same model trained from scratch.
--   nnrepl scripts/tutorials/finetuning_torchvision_models_tutorial.lua
-- Data: nothing is downloaded. hymenoptera_data.zip must be extracted to
-- ./data/hymenoptera_data ({train,val}/{ants,bees}/*.jpg); without it ImageFolder stops naming
-- the missing folder. The pretrained weights are read from the torch.hub cache: put the
-- checkpoint torchvision would download (squeezenet1_0-b66bff10.pth, resnet18-f37072fd.pth, ...,
-- from https://download.pytorch.org/models/) in ~/.cache/torch/hub/checkpoints/; without it the
-- builder stops naming the file and the folder.
-- The inputs at the top can be set from the environment (the tutorial's values are the
-- defaults): FT_MODEL (model_name), FT_EPOCHS (num_epochs), FT_BATCH (batch_size),
-- FT_FEATURE_EXTRACT=0 (finetune the whole model); FT_PRETRAINED=0 builds the "pretrained" model
-- with random weights too (CI test).
-- Differences: no matplotlib: the validation accuracy curves are printed per epoch; "Invalid
-- model name" exits with status 1; "PyTorch Version" prints nnrepl's torch.__version__.
local torchvision = require("torchvision")
local datasets, models, transforms = torchvision.datasets, torchvision.models, torchvision.transforms
local copy = require("copy")
print("PyTorch Version:  " .. torch.__version__)
print("Torchvision Version:  " .. torchvision.__version__)

-- Top level data directory, in the ImageFolder layout
local data_dir = "./data/hymenoptera_data"

-- Models to choose from [resnet, alexnet, vgg, squeezenet, densenet, inception]
local model_name = os.getenv("FT_MODEL") or "squeezenet"

-- Number of classes in the dataset
local num_classes = 2

-- Batch size for training (change depending on how much memory you have)
local batch_size = tonumber(os.getenv("FT_BATCH") or "8")

-- Number of epochs to train for
local num_epochs = tonumber(os.getenv("FT_EPOCHS") or "15")

-- Flag for feature extracting. When False, we finetune the whole model,
--   when True we only update the reshaped layer params
local feature_extract = os.getenv("FT_FEATURE_EXTRACT") ~= "0"

local pretrained = os.getenv("FT_PRETRAINED") ~= "0"

local device -- set below, before training

local function train_model(model, dataloaders, criterion, optimizer, num_epochs, is_inception)
  num_epochs = num_epochs or 25
  local since = os.time()

  local val_acc_history = {}

  local best_model_wts = copy.deepcopy(model:state_dict())
  local best_acc = 0.0

  for epoch = 0, num_epochs - 1 do
    print(string.format("Epoch %d/%d", epoch, num_epochs - 1))
    print(string.rep("-", 10))

    -- Each epoch has a training and validation phase
    for _, phase in ipairs({ "train", "val" }) do
      if phase == "train" then
        model:train() -- Set model to training mode
      else
        model:eval() -- Set model to evaluate mode
      end

      local running_loss = 0.0
      local running_corrects = 0

      -- Iterate over data.
      for inputs, labels in dataloaders[phase]:iter() do
        inputs = inputs:to(device)
        labels = labels:to(device)

        -- zero the parameter gradients
        optimizer:zero_grad()

        -- forward
        -- track history if only in train
        local _, loss, outputs, preds
        do
          local _g <close> = torch.set_grad_enabled(phase == "train")
          -- Inception in training also returns its auxiliary output: the loss sums both,
          -- testing uses the final output only
          if is_inception and phase == "train" then
            local aux_outputs
            outputs, aux_outputs = table.unpack(model(inputs))
            local loss1 = criterion(outputs, labels)
            local loss2 = criterion(aux_outputs, labels)
            loss = loss1 + 0.4 * loss2
          else
            outputs = model(inputs)
            loss = criterion(outputs, labels)
          end

          _, preds = torch.max(outputs, 1)

          -- backward + optimize only if in training phase
          if phase == "train" then
            loss:backward()
            optimizer:step()
          end
        end

        -- statistics
        running_loss = running_loss + loss:item() * inputs:size(0)
        running_corrects = running_corrects + torch.sum(preds:eq(labels.data))
      end

      local epoch_loss = running_loss / #dataloaders[phase].dataset
      local epoch_acc = torch.as_tensor(running_corrects):double() / #dataloaders[phase].dataset

      print(string.format("%s Loss: %.4f Acc: %.4f", phase, epoch_loss, epoch_acc:item()))

      -- deep copy the model
      if phase == "val" and epoch_acc:item() > best_acc then
        best_acc = epoch_acc:item()
        best_model_wts = copy.deepcopy(model:state_dict())
      end
      if phase == "val" then
        val_acc_history[#val_acc_history + 1] = epoch_acc
      end
    end

    print()
  end

  local time_elapsed = os.time() - since
  print(string.format("Training complete in %.0fm %.0fs", time_elapsed // 60, time_elapsed % 60))
  print(string.format("Best val Acc: %4f", best_acc))

  -- load best model weights
  model:load_state_dict(best_model_wts)
  return model, val_acc_history
end

local function set_parameter_requires_grad(model, feature_extracting)
  if feature_extracting then
    for _, param in ipairs(model:parameters()) do
      param.requires_grad = false
    end
  end
end

local function initialize_model(model_name, num_classes, feature_extract, use_pretrained)
  if use_pretrained == nil then use_pretrained = true end
  -- Initialize these variables which will be set in this if statement. Each of these
  --   variables is model specific.
  local model_ft = nil
  local input_size = 0

  if model_name == "resnet" then -- Resnet18
    model_ft = models.resnet18({ pretrained = use_pretrained })
    set_parameter_requires_grad(model_ft, feature_extract)
    local num_ftrs = model_ft.fc.in_features
    model_ft.fc = nn.Linear(num_ftrs, num_classes)
    input_size = 224

  elseif model_name == "alexnet" then -- Alexnet
    model_ft = models.alexnet({ pretrained = use_pretrained })
    set_parameter_requires_grad(model_ft, feature_extract)
    local num_ftrs = model_ft.classifier[6].in_features
    model_ft.classifier[6] = nn.Linear(num_ftrs, num_classes)
    input_size = 224

  elseif model_name == "vgg" then -- VGG11_bn
    model_ft = models.vgg11_bn({ pretrained = use_pretrained })
    set_parameter_requires_grad(model_ft, feature_extract)
    local num_ftrs = model_ft.classifier[6].in_features
    model_ft.classifier[6] = nn.Linear(num_ftrs, num_classes)
    input_size = 224

  elseif model_name == "squeezenet" then -- Squeezenet
    model_ft = models.squeezenet1_0({ pretrained = use_pretrained })
    set_parameter_requires_grad(model_ft, feature_extract)
    model_ft.classifier[1] = nn.Conv2d(512, num_classes, { kernel_size = { 1, 1 }, stride = { 1, 1 } })
    model_ft.num_classes = num_classes
    input_size = 224

  elseif model_name == "densenet" then -- Densenet
    model_ft = models.densenet121({ pretrained = use_pretrained })
    set_parameter_requires_grad(model_ft, feature_extract)
    local num_ftrs = model_ft.classifier.in_features
    model_ft.classifier = nn.Linear(num_ftrs, num_classes)
    input_size = 224

  elseif model_name == "GoogLeNet" then -- GoogLeNet (Inception v1): 224 x 224, two auxiliary outputs
    model_ft = models.googlenet({ pretrained = use_pretrained })
    set_parameter_requires_grad(model_ft, feature_extract)
    -- Handle the auxilary net
    local num_ftrs = model_ft.aux2.fc2.in_features
    model_ft.aux2.fc2 = nn.Linear(num_ftrs, num_classes)
    -- Handle the primary net
    num_ftrs = model_ft.fc.in_features
    model_ft.fc = nn.Linear(num_ftrs, num_classes)
    input_size = 224

  elseif model_name == "inception" then -- Inception v3: 299 x 299, an auxiliary output
    model_ft = models.inception_v3({ pretrained = use_pretrained })
    set_parameter_requires_grad(model_ft, feature_extract)
    -- Handle the auxilary net
    local num_ftrs = model_ft.AuxLogits.fc.in_features
    model_ft.AuxLogits.fc = nn.Linear(num_ftrs, num_classes)
    -- Handle the primary net
    num_ftrs = model_ft.fc.in_features
    model_ft.fc = nn.Linear(num_ftrs, num_classes)
    input_size = 299

  else
    print("Invalid model name, exiting...")
    os.exit(1)
  end

  return model_ft, input_size
end

-- Initialize the model for this run
local model_ft, input_size = initialize_model(model_name, num_classes, feature_extract, pretrained)

-- Print the model we just instantiated
print(model_ft)

-- Data augmentation and normalization for training
-- Just normalization for validation
local data_transforms = {
  train = transforms.Compose({
    transforms.RandomResizedCrop(input_size),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize({ 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 })
  }),
  val = transforms.Compose({
    transforms.Resize(input_size),
    transforms.CenterCrop(input_size),
    transforms.ToTensor(),
    transforms.Normalize({ 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 })
  }),
}

print("Initializing Datasets and Dataloaders...")

-- Create training and validation datasets and dataloaders
local image_datasets, dataloaders_dict = {}, {}
for _, x in ipairs({ "train", "val" }) do
  image_datasets[x] = datasets.ImageFolder(data_dir .. "/" .. x, data_transforms[x])
  dataloaders_dict[x] = torch.utils.data.DataLoader(image_datasets[x], { batch_size = batch_size, shuffle = true,
    num_workers = 4 })
end

-- Detect if we have a GPU available
device = torch.device(torch.cuda.is_available() and "cuda:0" or "cpu")

-- Send the model to GPU
model_ft = model_ft:to(device)

-- Gather the parameters to be optimized/updated in this run: all of them when finetuning, the
-- ones with requires_grad=true (the new layer) when feature extracting
local params_to_update = model_ft:parameters()
print("Params to learn:")
if feature_extract then
  params_to_update = {}
  for name, param in model_ft:named_parameters() do
    if param.requires_grad == true then
      params_to_update[#params_to_update + 1] = param
      print("\t " .. name)
    end
  end
else
  for name, param in model_ft:named_parameters() do
    if param.requires_grad == true then
      print("\t " .. name)
    end
  end
end

-- Observe that all parameters are being optimized
local optimizer_ft = optim.SGD(params_to_update, { lr = 0.001, momentum = 0.9 })

-- Setup the loss fxn
local criterion = nn.CrossEntropyLoss()

-- Train and evaluate
local hist
model_ft, hist = train_model(model_ft, dataloaders_dict, criterion, optimizer_ft, num_epochs, model_name == "inception")

-- Save checkpoint
-- torch.save(model_ft:state_dict(), 'checkpoint.pth')

-- Comparison with Model Trained from Scratch
local scratch_model = initialize_model(model_name, num_classes, false, false)
scratch_model = scratch_model:to(device)
local scratch_optimizer = optim.SGD(scratch_model:parameters(), { lr = 0.001, momentum = 0.9 })
local scratch_criterion = nn.CrossEntropyLoss()
local _, scratch_hist = train_model(scratch_model, dataloaders_dict, scratch_criterion, scratch_optimizer, num_epochs,
  model_name == "inception")

-- The plot of validation accuracy vs. number of training epochs, as numbers
local ohist, shist = {}, {}
for i, h in ipairs(hist) do ohist[i] = h:cpu():item() end
for i, h in ipairs(scratch_hist) do shist[i] = h:cpu():item() end

print("Validation Accuracy vs. Number of Training Epochs")
print("Training Epochs\tPretrained\tScratch")
for epoch = 1, num_epochs do print(string.format("%d\t%.4f\t%.4f", epoch, ohist[epoch], shist[epoch])) end
