-- Pretrained weights, from the local cache only: a classification builder given weights= (or
-- pretrained=true) builds the model and loads the checkpoint torchvision would download, from the
-- file torch.hub.load_state_dict_from_url looks for first: <torch.hub.get_dir()>/checkpoints/<the
-- url's file name> (~/.cache/torch/hub/checkpoints/resnet18-f37072fd.pth). Copy the file there
-- from a machine with network; torch.load reads PyTorch's format. Weights:get_state_dict() loads
-- the same file.
local torch = require "torch"
local U = require "nn_util"

return function(models)

function models.Weights:get_state_dict(...)
  local o = U.parse("get_state_dict", { { "progress", true }, { "check_hash", false } }, ...)
  return torch.hub.load_state_dict_from_url(self.url, { progress = o.progress, check_hash = o.check_hash })
end

-- torchvision's DenseNet checkpoints predate its module names: "norm.1.weight" is "norm1.weight"
local function densenet_keys(sd)
  local out = U.OrderedDict.new()
  for k, v in pairs(sd) do
    local head, tail = k:match("^(.*denselayer%d+%.[a-z]+)%.([12]%.[a-z_]+)$")
    out[head and (head .. tail) or k] = v
  end
  return out
end

-- what a builder given weights changes in its options first (torchvision's builders do the same)
local function inception_options(o) o.transform_input = o.transform_input ~= false; o.aux_logits = true; o.init_weights = false end
local PREPARE = { inception_v3 = inception_options, googlenet = inception_options }

local function with_weights(name, build, enum)
  return function(opts, ...)
    if not U.is_opts(opts) or (opts.weights == nil or opts.weights == false) and not opts.pretrained then
      return build(opts, ...)
    end
    local w = opts.weights
    if w == nil or w == false then w = enum.IMAGENET1K_V1 or enum.DEFAULT end -- pretrained=true, as torchvision maps it
    w = enum:verify(w)
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    o.weights, o.pretrained, o.progress = nil, nil, nil
    if o.num_classes ~= nil and o.num_classes ~= 1000 then
      U.errorf("The parameter 'num_classes' expected value 1000 but got %s instead.", tostring(o.num_classes))
    end
    local aux = opts.aux_logits
    if PREPARE[name] then PREPARE[name](o) end
    local model = build(o, ...)
    local sd = w:get_state_dict({ progress = opts.progress ~= false })
    if name:match("^densenet") then sd = densenet_keys(sd) end
    model:load_state_dict(sd)
    if aux == false and PREPARE[name] then -- loaded with the auxiliary heads, then dropped as asked
      model.aux_logits = false
      if name == "inception_v3" then model.AuxLogits = nil else model.aux1, model.aux2 = nil, nil end
    end
    return model
  end
end

for name, enum in pairs(models._builder_weights) do
  local build = rawget(models, name)
  if not models._builder_family[name] and type(build) == "function" then models[name] = with_weights(name, build, enum) end
end

end
