-- functorch (require "functorch"): make_functional, make_functional_with_buffers,
-- combine_state_for_ensemble and the re-exported transforms, against the modules themselves
-- and hand-computed gradients.
local T = ...
local torch = require "torch"
local nn = torch.nn
local ft = require "functorch"

local function checks(device)
  local tag = " (" .. device .. ")"
  T.test("make_functional" .. tag, function()
    torch.manual_seed(0)
    local model = nn.Linear(3, 2):to(device)
    local x = torch.randn(4, 3, { device = device })
    local func, params = ft.make_functional(model)
    T.eq(#params, 2, "two parameters, in order")
    T.check(rawequal(params[1], model.weight), "the model's own parameters")
    T.check(torch.allclose(func(params, x), model(x)), "func(params, x) = model(x)")
    -- other parameters: W = 0, b = 1 gives ones
    local out = func({ torch.zeros(2, 3, { device = device }), torch.ones(2, { device = device }) }, x)
    T.check(torch.equal(out, torch.ones(4, 2, { device = device })), "new parameters used")
    -- grad through func: d/dW sum(x W^T + b) = column sums of x, per output row
    local g = ft.grad(function(p) return func(p, x):sum() end)(params)
    T.check(torch.allclose(g[1], x:sum(0):expand(2, 3)), "weight gradient by hand")
    T.check(torch.allclose(g[2], torch.full({ 2 }, 4.0, { device = device })), "bias gradient by hand")
    local _, detached = ft.make_functional(model, { disable_autograd_tracking = true })
    T.check(not detached[1].requires_grad, "disable_autograd_tracking detaches")
  end)
  T.test("make_functional_with_buffers" .. tag, function()
    torch.manual_seed(1)
    local model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)):to(device):eval()
    model[1].running_mean:fill_(0.5)
    local x = torch.randn(5, 3, { device = device })
    local func, params, buffers = ft.make_functional_with_buffers(model)
    T.eq(#params, 4, "parameters")
    T.eq(#buffers, 3, "buffers: running_mean, running_var, num_batches_tracked")
    T.check(torch.allclose(func(params, buffers, x), model(x), { atol = 1e-6 }), "func equals the model")
    local b2 = { torch.zeros(4, { device = device }), buffers[2], buffers[3] }
    local want = model[1](model[0](x)) -- recompute by hand with mean 0
    local h = model[0](x)
    want = (h / torch.sqrt(buffers[2] + 1e-5)) * params[3] + params[4]
    T.check(torch.allclose(func(params, b2, x), want, { atol = 1e-5 }), "new buffers used")
  end)
  T.test("combine_state_for_ensemble" .. tag, function()
    local models = {}
    for i = 1, 3 do models[i] = nn.Linear(2, 2):to(device) end
    local func, params, buffers = ft.combine_state_for_ensemble(models)
    T.eq(params[1].shape, torch.Size({ 3, 2, 2 }), "stacked weights")
    T.eq(#buffers, 0, "no buffers")
    local x = torch.randn(4, 2, { device = device })
    local got = ft.vmap(func, { in_dims = { 0, 0, false } })(params, buffers, x)
    local want = {}
    for i, m in ipairs(models) do want[i] = m(x) end
    T.check(torch.allclose(got, torch.stack(want), { atol = 1e-6 }), "ensemble through vmap")
  end)
end

T.test("functorch errors and names", function()
  T.raises(function() ft.make_functional(nn.BatchNorm1d(2)) end,
    "make_functional(model): `model` has buffers. Please use make_functional_with_buffers(model) instead.")
  T.raises(function() ft.make_functional(42) end, "make_functional: expected an nn.Module, got int")
  local func = ft.make_functional(nn.Linear(2, 2))
  T.raises(function() func({ torch.zeros(2, 2) }, torch.zeros(1, 2)) end, "make_functional: expected 2 parameters, got 1")
  T.raises(function() ft.make_functional(nn.Linear(2, 2), { tracking = true }) end, "~tracking")
  for _, name in ipairs({ "vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian" }) do
    T.check(ft[name] == torch.func[name], "functorch." .. name .. " is torch.func." .. name)
  end
end)

checks("cpu")
if torch.cuda.is_available() then checks("cuda") else T.skip("no CUDA", 3) end

T.test("copy.deepcopy keeps eval mode", function()
  local m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)):eval()
  m[0]:train()
  local c = require("copy").deepcopy(m)
  T.check(c.training == false and c[1].training == false, "eval mode copied")
  T.check(c[0].training == true, "a child in train mode stays so")
end)
