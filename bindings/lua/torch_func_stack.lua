-- torch.func.stack_module_state(models) -> params, buffers: each parameter and buffer of the
-- models stacked along a new leading dim (one slice per model), as PyTorch's, for running an
-- ensemble through vmap(functional_call(...)).
require "torch_func"
local torch = require "torch"
local U = require "nn_util"
local OD = U.OrderedDict

-- stack the models' members named by list_fn (named_parameters / named_buffers) under each name
local function stacked(models, list_fn, is_param)
  local out, names = OD.new(), {}
  local per_model = {}
  for i, m in ipairs(models) do
    local members = {}
    for _, kv in ipairs(m[list_fn](m)) do members[#members + 1] = kv end
    per_model[i] = members
  end
  for j, kv in ipairs(per_model[1]) do
    local name = kv[1]
    names[j] = name
    local ts, all_grad = {}, true
    for i, members in ipairs(per_model) do
      local other = members[j]
      if not other or other[1] ~= name or #members ~= #per_model[1] then
        U.errorf("stack_module_state: Expected all models to have the same %s, model %d differs at '%s'",
          is_param and "parameters" or "buffers", i - 1, name)
      end
      ts[i] = other[2]
      all_grad = all_grad and other[2].requires_grad
    end
    local s = torch.stack(ts):detach()
    if is_param and all_grad then s:requires_grad_() end
    out[name] = s
  end
  return out
end

function torch.func.stack_module_state(models)
  if type(models) ~= "table" or torch.nn.Module.is_module(models) then
    U.errorf("stack_module_state: Expected a list of models, got %s", U.typename(models))
  end
  if #models == 0 then U.error("stack_module_state: Expected at least one model, got 0.") end
  for _, m in ipairs(models) do
    if m.training ~= models[1].training then
      U.error("stack_module_state: Expected all models to have the same training/eval mode.")
    end
  end
  return stacked(models, "named_parameters", true), stacked(models, "named_buffers", false)
end

return {}
