-- torch.nn: the module system (nn_module), parameters, initialisers and layers.
-- torch.nn.functional is another file's (torch_functional.lua); this file keeps
-- whatever torch.nn already holds and adds to it.
--
--   nn.Module, nn.Parameter, nn.init, nn.OrderedDict(pairs) (ordered tables:
--   state_dict() returns one; pairs() follows insertion order, sd:keys() lists the
--   keys), nn.is_parameter(x), nn.isinstance(x, cls), and the layers.
--   nn.utils: clip_grad_norm_ & co (nn_utils_clip), parameters_to_vector (nn_utils_convert).
local torch = require "torch"
local U = require "nn_util"

local nn = torch.nn or {}
torch.nn = nn

local Module = require "nn_module"
local Parameter = require "nn_parameter"

nn.Module = Module
nn.Parameter = Parameter
nn.init = require "nn_init"
nn.OrderedDict = U.OrderedDict.new
nn.is_parameter = Parameter.is
nn.isinstance = Module.isinstance_of

for _, file in ipairs({ "nn_layers", "nn_activation", "nn_norm", "nn_containers", "nn_loss", "nn_attention", "nn_transformer", "nn_rnn", "nn_conv_more", "nn_upsample", "nn_layers_more", "nn_grid", "nn_extra", "nn_sync_batchnorm", "nn_conv3d", "nn_adaptive" }) do
  for name, cls in pairs(require(file)) do
    if type(cls) == "table" and rawget(cls, "__class") == cls and name:sub(1, 1) ~= "_" then nn[name] = cls end
  end
end

nn.utils = nn.utils or {}
nn.utils.clip_grad = require "nn_utils_clip"
nn.utils.convert_parameters = require "nn_utils_convert"
nn.utils.rnn = require "nn_utils_rnn"
nn.utils.prune = require "nn_utils_prune"
nn.utils.parametrize = require "nn_utils_parametrize"
nn.utils.parametrizations = nn.utils.parametrize.parametrizations
for name, f in pairs(require "nn_utils_norms") do nn.utils[name] = f end
for _, sub in ipairs({ nn.utils.clip_grad, nn.utils.convert_parameters }) do
  for name, f in pairs(sub) do
    if name:sub(1, 1) ~= "_" then nn.utils[name] = f end
  end
end

return nn
