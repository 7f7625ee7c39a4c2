-- print(optimizer:state_dict()) as PyTorch prints it. The expected lines are PyTorch 2.11's own
-- output (print(type(opt)(nn.Linear(2, 2).parameters(), lr=0.001).state_dict()) for each class,
-- SGD with momentum=0.9, Adafactor and Muon with their defaults); the value formatting is checked
-- against CPython's repr of the same dict (skipped where python3 is missing); and every use of a
-- state_dict as a table keeps working (indexing, pairs, load_state_dict, torch.save / torch.load).
local T = ...

local pytorch = {
  SGD = "{'state': {}, 'param_groups': [{'lr': 0.001, 'momentum': 0.9, 'dampening': 0, 'weight_decay': 0, 'nesterov': False, 'maximize': False, 'foreach': None, 'differentiable': False, 'fused': None, 'params': [0, 1]}]}",
  Adam = "{'state': {}, 'param_groups': [{'lr': 0.001, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0, 'amsgrad': False, 'maximize': False, 'foreach': None, 'capturable': False, 'differentiable': False, 'fused': None, 'decoupled_weight_decay': False, 'params': [0, 1]}]}",
  AdamW = "{'state': {}, 'param_groups': [{'lr': 0.001, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0.01, 'amsgrad': False, 'maximize': False, 'foreach': None, 'capturable': False, 'differentiable': False, 'fused': None, 'decoupled_weight_decay': True, 'params': [0, 1]}]}",
  RMSprop = "{'state': {}, 'param_groups': [{'lr': 0.001, 'momentum': 0, 'alpha': 0.99, 'eps': 1e-08, 'centered': False, 'weight_decay': 0, 'capturable': False, 'foreach': None, 'maximize': False, 'differentiable': False, 'params': [0, 1]}]}",
  Adagrad = "{'state': {0: {'step': tensor(0.), 'sum': tensor([[0., 0.],\n        [0., 0.]])}, 1: {'step': tensor(0.), 'sum': tensor([0., 0.])}}, 'param_groups': [{'lr': 0.001, 'lr_decay': 0, 'eps': 1e-10, 'weight_decay': 0, 'initial_accumulator_value': 0, 'foreach': None, 'maximize': False, 'differentiable': False, 'fused': None, 'params': [0, 1]}]}",
  Adadelta = "{'state': {}, 'param_groups': [{'lr': 0.001, 'rho': 0.9, 'eps': 1e-06, 'weight_decay': 0, 'maximize': False, 'capturable': False, 'foreach': None, 'differentiable': False, 'params': [0, 1]}]}",
  Adamax = "{'state': {}, 'param_groups': [{'lr': 0.001, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0, 'foreach': None, 'maximize': False, 'differentiable': False, 'capturable': False, 'params': [0, 1]}]}",
  NAdam = "{'state': {}, 'param_groups': [{'lr': 0.001, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0, 'momentum_decay': 0.004, 'decoupled_weight_decay': False, 'maximize': False, 'foreach': None, 'capturable': False, 'differentiable': False, 'params': [0, 1]}]}",
  RAdam = "{'state': {}, 'param_groups': [{'lr': 0.001, 'betas': (0.9, 0.999), 'eps': 1e-08, 'weight_decay': 0, 'maximize': False, 'foreach': None, 'capturable': False, 'decoupled_weight_decay': False, 'differentiable': False, 'params': [0, 1]}]}",
  Rprop = "{'state': {}, 'param_groups': [{'lr': 0.001, 'etas': (0.5, 1.2), 'step_sizes': (1e-06, 50), 'foreach': None, 'maximize': False, 'differentiable': False, 'capturable': False, 'params': [0, 1]}]}",
  ASGD = "{'state': {}, 'param_groups': [{'lr': 0.001, 'lambd': 0.0001, 'alpha': 0.75, 't0': 1000000.0, 'weight_decay': 0, 'foreach': None, 'maximize': False, 'differentiable': False, 'capturable': False, 'params': [0, 1]}]}",
  LBFGS = "{'state': {}, 'param_groups': [{'lr': 0.001, 'max_iter': 20, 'max_eval': 25, 'tolerance_grad': 1e-07, 'tolerance_change': 1e-09, 'history_size': 100, 'line_search_fn': None, 'params': [0, 1]}]}",
  Adafactor = "{'state': {}, 'param_groups': [{'lr': 0.01, 'beta2_decay': -0.8, 'eps': (None, 0.001), 'd': 1.0, 'weight_decay': 0.0, 'foreach': None, 'maximize': False, 'params': [0, 1]}]}",
}

T.test("a fresh optimizer's state_dict prints as PyTorch 2.11's", function()
  local m = nn.Linear(2, 2)
  for name, want in pairs(pytorch) do
    local opts = name == "SGD" and { lr = 0.001, momentum = 0.9 } or name == "Adafactor" and {} or { lr = 0.001 }
    T.eq(tostring(optim[name](m:parameters(), opts):state_dict()), want, name)
  end
end)

T.test("Muon: PyTorch's keys, then nnrepl's use_addmm", function()
  local sd = optim.Muon({ nn.Linear(2, 2).weight }):state_dict()
  T.eq(tostring(sd), "{'state': {}, 'param_groups': [{'lr': 0.001, 'weight_decay': 0.1, 'momentum': 0.95, 'nesterov': True, "
    .. "'ns_coefficients': (3.4445, -4.775, 2.0315), 'eps': 1e-07, 'ns_steps': 5, 'adjust_lr_fn': None, 'use_addmm': False, 'params': [0]}]}")
end)

-- the state after one step: PyTorch 2.11's key order per parameter
T.test("state entries in PyTorch's order", function()
  local want = {
    Adam = "step exp_avg exp_avg_sq max_exp_avg_sq", RMSprop = "step square_avg momentum_buffer grad_avg",
    Adagrad = "step sum", Adadelta = "step square_avg acc_delta", Adamax = "step exp_avg exp_inf",
    NAdam = "step mu_product exp_avg exp_avg_sq", RAdam = "step exp_avg exp_avg_sq", Rprop = "step prev step_size",
    ASGD = "step eta mu ax", SGD = "momentum_buffer",
  }
  for name, keys in pairs(want) do
    local m = nn.Linear(2, 2)
    local opts = { lr = 0.001 }
    if name == "SGD" then opts.momentum = 0.9 elseif name == "Adam" then opts.amsgrad = true
    elseif name == "RMSprop" then opts.momentum, opts.centered = 0.5, true end
    local o = optim[name](m:parameters(), opts)
    m(torch.ones(1, 2)):sum():backward()
    o:step()
    local s = tostring(o:state_dict().state)
    local got = {}
    for k in s:match("^{0: (%b{})"):gmatch("'([%w_]+)': ") do got[#got + 1] = k end
    T.eq(table.concat(got, " "), keys, name)
  end
end)

T.test("two groups; a group's own lr", function()
  local m = nn.Linear(2, 2)
  local o = optim.SGD({ { params = { m.weight }, lr = 0.1 }, { params = { m.bias } } }, { lr = 0.001, momentum = 0.9 })
  T.eq(tostring(o:state_dict()), "{'state': {}, 'param_groups': [{'lr': 0.1, 'momentum': 0.9, 'dampening': 0, 'weight_decay': 0, "
    .. "'nesterov': False, 'maximize': False, 'foreach': None, 'differentiable': False, 'fused': None, 'params': [0]}, "
    .. "{'lr': 0.001, 'momentum': 0.9, 'dampening': 0, 'weight_decay': 0, 'nesterov': False, 'maximize': False, "
    .. "'foreach': None, 'differentiable': False, 'fused': None, 'params': [1]}]}")
end)

-- values CPython writes differently from Lua (exponents, -0.0, big floats, quotes in strings)
local function python(code)
  local f = io.popen("python3 -c " .. string.format("%q", code):gsub("\\\n", "\\n") .. " 2>/dev/null")
  if not f then return nil end
  local out = f:read("a")
  f:close()
  return out ~= "" and out:gsub("\n$", "") or nil
end

T.test("values as CPython's repr writes them", function()
  local m = nn.Linear(2, 2)
  local o = optim.SGD(m:parameters(), { lr = 0.1 + 0.2, momentum = 1e-5, weight_decay = 1e16, dampening = -0.0 })
  o.param_groups[1].note = "it's"
  o.param_groups[1].size = 123456789012
  local got = tostring(o:state_dict().param_groups)
  local want = python("print([{'lr': 0.1 + 0.2, 'momentum': 1e-5, 'dampening': -0.0, 'weight_decay': 1e16, 'nesterov': False, "
    .. "'maximize': False, 'foreach': None, 'differentiable': False, 'fused': None, 'note': \"it's\", 'size': 123456789012, 'params': [0, 1]}])")
  if want == nil then return T.skip("python3 is not available") end
  T.eq(got, want)
end)

T.test("a state_dict is still a table: indexing, pairs, load_state_dict, torch.save", function()
  torch.manual_seed(0)
  local m = nn.Linear(3, 2)
  local o = optim.Adam(m:parameters(), { lr = 0.01 })
  m(torch.ones(4, 3)):sum():backward()
  o:step()
  local sd = o:state_dict()
  T.eq(sd.param_groups[1].lr, 0.01)
  T.eq(sd.param_groups[1].params, { 0, 1 })
  T.eq(sd.state[0].step:item(), 1.0)
  local n = 0
  for _ in pairs(sd.state) do n = n + 1 end
  T.eq(n, 2)
  -- loading does not change the dict loaded from
  local o2 = optim.Adam(m:parameters(), { lr = 0.5 })
  o2:load_state_dict(sd)
  T.eq(o2.param_groups[1].lr, 0.01)
  T.eq(sd.param_groups[1].params, { 0, 1 })
  T.check(o2.param_groups[1].params[1] == m.weight, "the optimizer keeps its own params")
  T.eq(tostring(o2:state_dict()), tostring(sd))
  local path = os.tmpname()
  torch.save({ optimizer_state_dict = sd }, path)
  local back = torch.load(path).optimizer_state_dict
  os.remove(path)
  T.eq(back.param_groups[1].betas, { 0.9, 0.999 })
  T.eq((back.state[1].exp_avg - sd.state[1].exp_avg):abs():max():item(), 0.0)
  local o3 = optim.Adam(m:parameters())
  o3:load_state_dict(back)
  T.eq(tostring(o3:state_dict()), tostring(sd))
end)
