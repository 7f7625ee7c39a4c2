-- pytorch/examples fast_neural_style/neural_style/neural_style.py ported to nnrepl: trains a
-- TransformerNet (transformer_net.lua) to paint images in the style of one picture, the losses
-- measured on VGG16 features (vgg.lua), and stylizes images with a trained model.
--
--   nnrepl scripts/examples/fast_neural_style/neural_style.lua train --dataset DIR \
--     --style-image images/style-images/mosaic.jpg --save-model-dir saved_models --epochs 2 [--accel]
--   nnrepl scripts/examples/fast_neural_style/neural_style.lua eval --content-image IN.jpg \
--     --model saved_models/MODEL.model --output-image OUT.jpg [--accel]
--
-- Same sub-commands, flags, prints and files (the trained model's state_dict as
-- epoch_E_<time>_<content weight>_<style weight>.model, checkpoints ckpt_epoch_E_batch_id_N.pth)
-- as the original. The dataset is an ImageFolder: DIR holds one or more folders of images.
-- Differences from the original:
-- * nothing is downloaded: VGG16's ImageNet weights must be in the torch.hub cache,
--   <torch.hub.get_dir()>/checkpoints/vgg16-397923af.pth (the error says so when it is missing).
--   NNREPL_FNS_RANDOM_VGG=1 in the environment trains against a randomly initialised VGG16
--   instead (for tests: the style it learns means nothing).
-- * ONNX: --export_onnx writes the model with torch.onnx.export at opset 13 (the original asks for
--   11, which nnrepl's exporter does not write) and stylizes as well;
--   a --model ending in .onnx (the original runs it with onnxruntime) is refused: nnrepl runs
--   no ONNX models, pass the .model / .pth state_dict instead.
-- * np.random.seed: numpy draws nothing here; torch.manual_seed(args.seed) stays.
local argparse = require "argparse"
local time = require "time"
local tv = require "torchvision"
local datasets, transforms = tv.datasets, tv.transforms
local DataLoader = torch.utils.data.DataLoader
local Adam = optim.Adam

local utils = require "utils"
local TransformerNet = require("transformer_net").TransformerNet
local Vgg16 = require("vgg").Vgg16

local function shell_quote(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function exists(path) return os.execute("test -e " .. shell_quote(path)) == true end

local function makedirs(path)
  if not os.execute("mkdir -p " .. shell_quote(path) .. " 2>/dev/null") then
    error(string.format("cannot create the folder '%s'", path), 0) -- Python prints the OSError
  end
end

local function check_paths(args)
  local ok, e = pcall(function()
    if not exists(args.save_model_dir) then
      makedirs(args.save_model_dir)
    end
    if args.checkpoint_model_dir ~= nil and not exists(args.checkpoint_model_dir) then
      makedirs(args.checkpoint_model_dir)
    end
  end)
  if not ok then
    print(e)
    os.exit(1)
  end
end

-- ToTensor then x * 255: the networks work on 0..255 pixel values
local function x255(x) return x:mul(255) end

local function train(args)
  local device
  if args.accel then
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end

  print(string.format("Using device: %s", device))

  torch.manual_seed(args.seed)

  local transform = transforms.Compose({
    transforms.Resize(args.image_size),
    transforms.CenterCrop(args.image_size),
    transforms.ToTensor(),
    transforms.Lambda(x255),
  })
  local train_dataset = datasets.ImageFolder(args.dataset, transform)
  local train_loader = DataLoader(train_dataset, { batch_size = args.batch_size })

  local transformer = TransformerNet():to(device)
  local optimizer = Adam(transformer:parameters(), args.lr)
  local mse_loss = nn.MSELoss()

  local vgg = Vgg16(false):to(device)
  local style_transform = transforms.Compose({
    transforms.ToTensor(),
    transforms.Lambda(x255),
  })
  local style = utils.load_image(args.style_image, { size = args.style_size })
  style = style_transform(style)
  style = style["repeat"](style, args.batch_size, 1, 1, 1):to(device) -- `repeat` is a Lua keyword

  local features_style = vgg(utils.normalize_batch(style))
  local gram_style = {}
  for i, y in ipairs(features_style) do gram_style[i] = utils.gram_matrix(y) end

  for e = 0, args.epochs - 1 do
    transformer:train()
    local agg_content_loss = 0.
    local agg_style_loss = 0.
    local count = 0
    for batch_id, x, _ in train_loader:enumerate() do
      local n_batch = x:size(0)
      count = count + n_batch
      optimizer:zero_grad()

      x = x:to(device)
      local y = transformer(x)

      y = utils.normalize_batch(y)
      x = utils.normalize_batch(x)

      local features_y = vgg(y)
      local features_x = vgg(x)

      local content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

      local style_loss = 0.
      for i, ft_y in ipairs(features_y) do
        local gm_y = utils.gram_matrix(ft_y)
        style_loss = style_loss + mse_loss(gm_y, gram_style[i][":" .. n_batch .. ", :, :"])
      end
      style_loss = style_loss * args.style_weight

      local total_loss = content_loss + style_loss
      total_loss:backward()
      optimizer:step()

      agg_content_loss = agg_content_loss + content_loss:item()
      agg_style_loss = agg_style_loss + style_loss:item()

      if (batch_id + 1) % args.log_interval == 0 then
        local mesg = string.format("%s\tEpoch %d:\t[%d/%d]\tcontent: %.6f\tstyle: %.6f\ttotal: %.6f",
          time.ctime(), e + 1, count, #train_dataset,
          agg_content_loss / (batch_id + 1),
          agg_style_loss / (batch_id + 1),
          (agg_content_loss + agg_style_loss) / (batch_id + 1)
        )
        print(mesg)
      end

      if args.checkpoint_model_dir ~= nil and (batch_id + 1) % args.checkpoint_interval == 0 then
        transformer:eval():cpu()
        local ckpt_model_filename = "ckpt_epoch_" .. e .. "_batch_id_" .. (batch_id + 1) .. ".pth"
        local ckpt_model_path = args.checkpoint_model_dir .. "/" .. ckpt_model_filename
        torch.save(transformer:state_dict(), ckpt_model_path)
        transformer:to(device):train()
      end
    end
  end

  -- save model
  transformer:eval():cpu()
  local timestamp = time.strftime("%Y-%m-%d_%H-%M-%S")
  local save_model_filename = string.format("epoch_%d_%s_%s_%s.model", args.epochs, timestamp,
    argparse.float_repr(args.content_weight), argparse.float_repr(args.style_weight))
  local save_model_path = args.save_model_dir .. "/" .. save_model_filename
  torch.save(transformer:state_dict(), save_model_path)

  print("\nDone, trained model saved at " .. save_model_path) -- print(a, b) puts a space between
end

local function stylize_onnx(content_image, args)
  assert(not args.export_onnx)
  error(string.format("fast_neural_style: %s is an ONNX model, which needs onnxruntime to run; nnrepl runs no " ..
    "ONNX models: pass the .model / .pth state_dict that train wrote instead", args.model), 0)
end

local function stylize(args)
  local device
  if args.accel then
    device = torch.accelerator.current_accelerator()
  else
    device = torch.device("cpu")
  end

  print(string.format("Using device: %s", device))

  local content_image = utils.load_image(args.content_image, { scale = args.content_scale })
  local content_transform = transforms.Compose({
    transforms.ToTensor(),
    transforms.Lambda(x255),
  })
  content_image = content_transform(content_image)
  content_image = content_image:unsqueeze(0):to(device)

  local output
  if args.model:sub(-5) == ".onnx" then
    output = stylize_onnx(content_image, args)
  else
    torch.no_grad(function()
      local style_model = TransformerNet()
      local state_dict = torch.load(args.model)
      -- drop the running_* entries old PyTorch versions saved for InstanceNorm
      for _, k in ipairs(state_dict:keys()) do
        if k:match("in%d+%.running_mean$") or k:match("in%d+%.running_var$") then
          state_dict[k] = nil
        end
      end
      style_model:load_state_dict(state_dict)
      style_model:to(device)
      style_model:eval()
      if args.export_onnx then
        assert(args.export_onnx:sub(-5) == ".onnx", "Export model file should end with .onnx")
        torch.onnx.export(style_model, content_image, args.export_onnx, { opset_version = 13 })
        output = style_model(content_image):cpu()
      else
        output = style_model(content_image):cpu()
      end
    end)
  end
  utils.save_image(args.output_image, output[0])
end

local function main()
  local main_arg_parser = argparse.ArgumentParser({ description = "parser for fast-neural-style" })
  local subparsers = main_arg_parser:add_subparsers({ title = "subcommands", dest = "subcommand" })

  local train_arg_parser = subparsers:add_parser("train", { help = "parser for training arguments" })
  train_arg_parser:add_argument("--epochs", { type = "int", default = 2,
    help = "number of training epochs, default is 2" })
  train_arg_parser:add_argument("--batch-size", { type = "int", default = 4,
    help = "batch size for training, default is 4" })
  train_arg_parser:add_argument("--dataset", { type = "str", required = true,
    help = "path to training dataset, the path should point to a folder " ..
        "containing another folder with all the training images" })
  train_arg_parser:add_argument("--style-image", { type = "str", default = "images/style-images/mosaic.jpg",
    help = "path to style-image" })
  train_arg_parser:add_argument("--save-model-dir", { type = "str", required = true,
    help = "path to folder where trained model will be saved." })
  train_arg_parser:add_argument("--checkpoint-model-dir", { type = "str", default = nil,
    help = "path to folder where checkpoints of trained models will be saved" })
  train_arg_parser:add_argument("--image-size", { type = "int", default = 256,
    help = "size of training images, default is 256 X 256" })
  train_arg_parser:add_argument("--style-size", { type = "int", default = nil,
    help = "size of style-image, default is the original size of style image" })
  train_arg_parser:add_argument("--accel", { action = "store_true",
    help = "use accelerator" })
  train_arg_parser:add_argument("--seed", { type = "int", default = 42,
    help = "random seed for training" })
  train_arg_parser:add_argument("--content-weight", { type = "float", default = 1e5,
    help = "weight for content-loss, default is 1e5" })
  train_arg_parser:add_argument("--style-weight", { type = "float", default = 1e10,
    help = "weight for style-loss, default is 1e10" })
  train_arg_parser:add_argument("--lr", { type = "float", default = 1e-3,
    help = "learning rate, default is 1e-3" })
  train_arg_parser:add_argument("--log-interval", { type = "int", default = 500,
    help = "number of images after which the training loss is logged, default is 500" })
  train_arg_parser:add_argument("--checkpoint-interval", { type = "int", default = 2000,
    help = "number of batches after which a checkpoint of the trained model will be created" })

  local eval_arg_parser = subparsers:add_parser("eval", { help = "parser for evaluation/stylizing arguments" })
  eval_arg_parser:add_argument("--content-image", { type = "str", required = true,
    help = "path to content image you want to stylize" })
  eval_arg_parser:add_argument("--content-scale", { type = "float", default = nil,
    help = "factor for scaling down the content image" })
  eval_arg_parser:add_argument("--output-image", { type = "str", required = true,
    help = "path for saving the output image" })
  eval_arg_parser:add_argument("--model", { type = "str", required = true,
    help = "saved model to be used for stylizing the image. If file ends in .pth - PyTorch path is used, " ..
        "if in .onnx - Caffe2 path" })
  eval_arg_parser:add_argument("--export_onnx", { type = "str",
    help = "export ONNX model to a given file" })
  eval_arg_parser:add_argument("--accel", { action = "store_true",
    help = "use accelerator" })

  local args = main_arg_parser:parse_args()

  if args.subcommand == nil then
    print("ERROR: specify either train or eval")
    os.exit(1)
  end
  if args.accel and not torch.accelerator.is_available() then
    print("ERROR: accelerator is not available, try running on CPU")
    os.exit(1)
  end
  if not args.accel and torch.accelerator.is_available() then
    print("WARNING: accelerator is available, run with --accel to enable it")
  end

  if args.subcommand == "train" then
    check_paths(args)
    train(args)
  else
    stylize(args)
  end
end

main()
