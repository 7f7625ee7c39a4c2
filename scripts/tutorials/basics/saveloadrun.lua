-- PyTorch tutorial "Learn the Basics: Save and Load the Model"
-- (beginner_source/basics/saveloadrun_tutorial.py) in Lua: a VGG16's state_dict saved and loaded
-- into a new VGG16, then the whole model saved and loaded.
--
--   nnrepl scripts/tutorials/basics/saveloadrun.lua [--weights FILE] [--model NAME]
--
-- Differences from the original:
-- * models.vgg16(weights='IMAGENET1K_V1') downloads ImageNet weights; nnrepl downloads nothing
--   (models.vgg16({weights = "IMAGENET1K_V1"}) raises an error saying so). The port builds an
--   untrained vgg16 instead, or loads the pretrained state_dict from --weights FILE (a
--   safetensors file or a checkpoint torch.load reads; convert the .pth in Python with
--   safetensors.torch.save_file(torch.load(f), "vgg16.safetensors")).
-- * --model NAME (default vgg16) takes another torchvision model (e.g. resnet18): the CI test uses
--   a small one, as an untrained VGG16 is 528 MB per file written.
-- * torch.save(model, "model.pth") stores the class names and the state, and torch.load needs the
--   classes defined (torchvision's are); it is nnrepl's own format, not a Python pickle.
-- * The tutorial prints nothing; the last lines (extras) print the files' sizes and check that
--   both reloaded models compute what the saved one did on a zero image.
local torchvision = require "torchvision"
local argparse = require "argparse"
local models = torchvision.models

local parser = argparse.ArgumentParser({ description = "Learn the Basics: Save and Load the Model" })
parser:add_argument("--weights", { help = "a local file with the pretrained state_dict (default: untrained)" })
parser:add_argument("--model", { default = "vgg16", help = "the torchvision model (default %(default)s)" })
local args = parser:parse_args({ ... })
if type(models[args.model]) ~= "function" then parser:error("--model: no torchvision model named '" .. args.model .. "'") end

local model = models[args.model]() -- the tutorial: models.vgg16(weights='IMAGENET1K_V1'), see the header
if args.weights then model:load_state_dict(torch.load(args.weights)) end
local saved = model
torch.save(model:state_dict(), "model_weights.pth")

model = models[args.model]()
model:load_state_dict(torch.load("model_weights.pth", { weights_only = true }))
model:eval()
local from_weights = model

torch.save(model, "model.pth")

model = torch.load("model.pth", { weights_only = false })

-- (extras) the files, and the reloaded models' outputs against the saved one's
local function size_of(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end
print(string.format("model_weights.pth: %d bytes, model.pth: %d bytes", size_of("model_weights.pth"), size_of("model.pth")))
saved:eval()
local input_image = torch.zeros({ 1, 3, 224, 224 })
local _ <close> = torch.no_grad()
local want = saved(input_image)
print(string.format("%s output %s; max difference, state_dict reload: %g, whole-model reload: %g (%s, training=%s)",
  args.model, want.shape, (from_weights(input_image) - want):abs():max():item(),
  (model(input_image) - want):abs():max():item(), model.__name, model.training))
