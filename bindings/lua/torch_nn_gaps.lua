-- Registers the later nn additions (runs after torch_nn.lua): the classes of nn_pool_more,
-- nn_lazy_more and nn_module_gaps, nn.Buffer, nn.parameter, F.* of nn_functional_gaps,
-- nn.init's deprecated names without "_", and nn.utils.fusion / memory_format / init with
-- the deprecated nn.utils.clip_grad_norm.
local torch = require "torch"
local U = require "nn_util"
local nn = require "torch_nn"
require "nn_functional_gaps"

for _, file in ipairs({ "nn_pool_more", "nn_lazy_more", "nn_module_gaps" }) do
  for name, cls in pairs(require(file)) do
    if type(cls) == "table" and rawget(cls, "__class") == cls and name:sub(1, 1) ~= "_" then nn[name] = cls end
  end
end
nn.Buffer = require("nn_module_gaps").Buffer
nn.parameter = nn.parameter or {}
nn.parameter.Parameter, nn.parameter.Buffer = nn.Parameter, nn.Buffer

-- nn.init's functions check their number arguments as PyTorch's parser does, and the errors
-- of the ops inside (an integer tensor's "expected a floating point dtype") name the init function
local tensor_only = { "tensor:any" }
U.check_all(nn.init, {
  uniform_ = { "tensor:any", "a:Number?", "b:Number?" },
  normal_ = { "tensor:any", "mean:Number?", "std:Number?" },
  trunc_normal_ = { "tensor:any", "mean:Number?", "std:Number?", "a:Number?", "b:Number?" },
  constant_ = { "tensor:any", "val:Tensor|Number?" },
  xavier_uniform_ = { "tensor:any", "gain:Number?" },
  xavier_normal_ = { "tensor:any", "gain:Number?" },
  kaiming_uniform_ = { "tensor:any", "a:Number?", "mode:str?", "nonlinearity:str?" },
  kaiming_normal_ = { "tensor:any", "a:Number?", "mode:str?", "nonlinearity:str?" },
  orthogonal_ = { "tensor:any", "gain:Number?" },
  sparse_ = { "tensor:any", "sparsity:Number?", "std:Number?" },
  ones_ = tensor_only, zeros_ = tensor_only, eye_ = tensor_only, dirac_ = tensor_only,
})

-- nn.init.uniform(...) and the rest: the trailing-underscore functions, with PyTorch's FutureWarning
for _, name in ipairs({ "uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal",
  "orthogonal", "sparse", "eye", "dirac" }) do
  nn.init[name] = function(...)
    U.warn(string.format("`nn.init.%s` is now deprecated in favor of `nn.init.%s_`.", name, name), "FutureWarning")
    return nn.init[name .. "_"](...)
  end
end

local utils = nn.utils
local fm = require "nn_utils_fusion"
utils.fusion, utils.memory_format = fm.fusion, fm.memory_format
for _, sub in ipairs({ fm.fusion, fm.memory_format }) do
  for name, f in pairs(sub) do utils[name] = f end
end

-- skip_init(module_cls, ...): the module built with those arguments. PyTorch skips the initialisation
-- and leaves the parameters' memory as it is; nnrepl cannot build without it, so they hold initialised
-- values (which are as good as any uninitialised memory).
utils.init = utils.init or {}
function utils.init.skip_init(module_cls, ...)
  if not (type(module_cls) == "table" and rawget(module_cls, "__class") == module_cls) then
    U.errorf("Expected a Module; got %s", U.typename(module_cls))
  end
  return module_cls(...)
end
utils.skip_init = utils.init.skip_init

function utils.clip_grad_norm(...)
  U.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.", "FutureWarning")
  return utils.clip_grad_norm_(...)
end
utils.clip_grad.clip_grad_norm = utils.clip_grad_norm

return nn
