-- torch.nn.utils.parameters_to_vector / vector_to_parameters.
--
-- parameters_to_vector concatenates the flattened parameters (differentiable, like
-- PyTorch's). vector_to_parameters(vec, parameters) points each parameter's .data at
-- its slice of vec, so afterwards the parameters share vec's storage, as in PyTorch.
local torch = require "torch"
local U = require "nn_util"
local tensors = require("nn_utils_clip")._tensors

local M = {}

local function same_device(device, p)
  local d = tostring(p.device)
  if device ~= nil and d ~= device then
    U.error("Found two parameters on different devices, this is currently not supported.")
  end
  return d
end

function M.parameters_to_vector(parameters)
  local vec, device = {}, nil
  for i, p in ipairs(tensors("parameters_to_vector", parameters)) do
    device = same_device(device, p)
    vec[i] = p:reshape(-1)
  end
  if #vec == 0 then U.error("torch.cat(): expected a non-empty list of Tensors") end
  return torch.cat(vec)
end

function M.vector_to_parameters(vec, parameters)
  if not torch.is_tensor(vec) then U.errorf("expected torch.Tensor, but got: %s", U.typename(vec)) end
  local pointer, device = 0, nil
  for _, p in ipairs(tensors("vector_to_parameters", parameters)) do
    device = same_device(device, p)
    local n = p:numel()
    -- PyTorch's vec[pointer:pointer + n].view_as(p): a short slice is view_as's error
    local rows = math.max(0, math.min(n, (vec:dim() > 0 and vec:size(0) or 0) - pointer))
    local got = rows * (vec:dim() > 0 and vec:numel() // math.max(vec:size(0), 1) or 1)
    if got ~= n then U.errorf("shape '%s' is invalid for input of size %d", U.shape_str(p), got) end
    p.data = vec:narrow(0, pointer, rows):view_as(p).data
    pointer = pointer + n
  end
end

return M
