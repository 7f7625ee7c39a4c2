-- pytorch/tutorials beginner_source/transfer_learning_tutorial.py, ported: an ImageNet resnet18
-- finetuned on the ants/bees images (the whole net, then as a fixed feature extractor), SGD with
-- StepLR, the best epoch's weights kept.
--   nnrepl scripts/tutorials/transfer_learning_tutorial.lua
-- Data: nothing is downloaded. hymenoptera_data.zip must be extracted to
-- ./data/hymenoptera_data ({train,val}/{ants,bees}/*.jpg); without it ImageFolder stops naming
-- the missing folder. The pretrained weights (weights='IMAGENET1K_V1') are read from the torch.hub
-- cache: put resnet18-f37072fd.pth (from https://download.pytorch.org/models/) in
-- ~/.cache/torch/hub/checkpoints/ (or $TORCH_HOME/hub/checkpoints); without it models.resnet18
-- stops saying so. TL_PRETRAINED=0 builds resnet18 with random weights instead (CI test).
-- Differences: no matplotlib: imshow prints the titles it would show, and visualize_model /
-- visualize_model_predictions print each image's "predicted: ..." title; TemporaryDirectory
-- is a os.tmpname() path removed at the end. Tiny runs: TL_EPOCHS (default 25) epochs.
local torchvision = require("torchvision")
local datasets, models, transforms = torchvision.datasets, torchvision.models, torchvision.transforms
local lr_scheduler = optim.lr_scheduler
local Image = require("PIL").Image

local EPOCHS = tonumber(os.getenv("TL_EPOCHS") or "25")
local WEIGHTS = os.getenv("TL_PRETRAINED") ~= "0" and "IMAGENET1K_V1" or nil

torch.backends.cudnn.benchmark = true
-- plt.ion(): no plotting here

-- Data augmentation and normalization for training
-- Just normalization for validation
local data_transforms = {
  train = transforms.Compose({
    transforms.RandomResizedCrop(224),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize({ 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 })
  }),
  val = transforms.Compose({
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize({ 0.485, 0.456, 0.406 }, { 0.229, 0.224, 0.225 })
  }),
}

local data_dir = "data/hymenoptera_data"
local image_datasets, dataloaders, dataset_sizes = {}, {}, {}
for _, x in ipairs({ "train", "val" }) do
  image_datasets[x] = datasets.ImageFolder(data_dir .. "/" .. x, data_transforms[x])
  dataloaders[x] = torch.utils.data.DataLoader(image_datasets[x], { batch_size = 4, shuffle = true, num_workers = 4 })
  dataset_sizes[x] = #image_datasets[x]
end
local class_names = image_datasets["train"].classes

local device = torch.device(torch.cuda.is_available() and "cuda:0" or "cpu")

-- Visualize a few images: imshow has no window here, it prints the title it would show
local function imshow(inp, title)
  if title ~= nil then print(title) end
end

-- Get a batch of training data
local inputs, classes = dataloaders["train"]:iter()()

-- Make a grid from batch
local out = torchvision.utils.make_grid(inputs)

local titles = {}
for i = 0, classes:size(0) - 1 do titles[#titles + 1] = "'" .. class_names[classes[i]:item() + 1] .. "'" end
imshow(out, "[" .. table.concat(titles, ", ") .. "]")

local function train_model(model, criterion, optimizer, scheduler, num_epochs)
  num_epochs = num_epochs or 25
  local since = os.time()

  -- the training checkpoint, in a temporary file
  local best_model_params_path = os.tmpname()

  torch.save(model:state_dict(), best_model_params_path)
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
        local _, loss, preds
        do
          local _g <close> = torch.set_grad_enabled(phase == "train")
          local outputs = model(inputs)
          _, preds = torch.max(outputs, 1)
          loss = criterion(outputs, labels)

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
      if phase == "train" then
        scheduler:step()
      end

      local epoch_loss = running_loss / dataset_sizes[phase]
      local epoch_acc = torch.as_tensor(running_corrects):double() / dataset_sizes[phase]

      print(string.format("%s Loss: %.4f Acc: %.4f", phase, epoch_loss, epoch_acc:item()))

      -- deep copy the model
      if phase == "val" and epoch_acc:item() > best_acc then
        best_acc = epoch_acc:item()
        torch.save(model:state_dict(), best_model_params_path)
      end
    end

    print()
  end

  local time_elapsed = os.time() - since
  print(string.format("Training complete in %.0fm %.0fs", time_elapsed // 60, time_elapsed % 60))
  print(string.format("Best val Acc: %4f", best_acc))

  -- load best model weights
  model:load_state_dict(torch.load(best_model_params_path))
  os.remove(best_model_params_path)
  return model
end

-- Generic function to display predictions for a few images (their titles, printed)
local function visualize_model(model, num_images)
  num_images = num_images or 6
  local was_training = model.training
  model:eval()
  local images_so_far = 0

  local _g <close> = torch.no_grad()
  for _, inputs, labels in dataloaders["val"]:enumerate() do
    inputs = inputs:to(device)
    labels = labels:to(device)

    local outputs = model(inputs)
    local _, preds = torch.max(outputs, 1)

    for j = 0, inputs:size()[0] - 1 do
      images_so_far = images_so_far + 1
      print(string.format("predicted: %s", class_names[preds[j]:item() + 1]))
      imshow(inputs:cpu().data[j])

      if images_so_far == num_images then
        model:train(was_training)
        return
      end
    end
  end
  model:train(was_training)
end

-- Finetuning the ConvNet: load a pretrained model and reset final fully connected layer.
local model_ft = models.resnet18({ weights = WEIGHTS })
local num_ftrs = model_ft.fc.in_features
-- Here the size of each output sample is set to 2 (or nn.Linear(num_ftrs, #class_names)).
model_ft.fc = nn.Linear(num_ftrs, 2)

model_ft = model_ft:to(device)

local criterion = nn.CrossEntropyLoss()

-- Observe that all parameters are being optimized
local optimizer_ft = optim.SGD(model_ft:parameters(), { lr = 0.001, momentum = 0.9 })

-- Decay LR by a factor of 0.1 every 7 epochs
local exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, { step_size = 7, gamma = 0.1 })

model_ft = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler, EPOCHS)

visualize_model(model_ft)

-- ConvNet as fixed feature extractor: freeze all the network except the final layer
local model_conv = torchvision.models.resnet18({ weights = WEIGHTS })
for _, param in ipairs(model_conv:parameters()) do
  param.requires_grad = false
end

-- Parameters of newly constructed modules have requires_grad=True by default
num_ftrs = model_conv.fc.in_features
model_conv.fc = nn.Linear(num_ftrs, 2)

model_conv = model_conv:to(device)

criterion = nn.CrossEntropyLoss()

-- Observe that only parameters of final layer are being optimized as
-- opposed to before.
local optimizer_conv = optim.SGD(model_conv.fc:parameters(), { lr = 0.001, momentum = 0.9 })

-- Decay LR by a factor of 0.1 every 7 epochs
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, { step_size = 7, gamma = 0.1 })

model_conv = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler, EPOCHS)

visualize_model(model_conv)

-- plt.ioff(); plt.show(): no plotting here

-- Inference on custom images
local function visualize_model_predictions(model, img_path)
  local was_training = model.training
  model:eval()

  local img = Image.open(img_path)
  img = data_transforms["val"](img)
  img = img:unsqueeze(0)
  img = img:to(device)

  local _g <close> = torch.no_grad()
  local outputs = model(img)
  local _, preds = torch.max(outputs, 1)

  print(string.format("Predicted: %s", class_names[preds[0]:item() + 1]))
  imshow(img:cpu().data[0])

  model:train(was_training)
end

visualize_model_predictions(model_conv, "data/hymenoptera_data/val/bees/72100438_73de9f17af.jpg")
