-- register_post_accumulate_grad_hook passes the parameter's own Lua value, so an optimizer per
-- parameter kept in a table keyed by parameters (the optimizer-in-backward recipe) works, and
-- its result equals one optimizer stepped after backward.
local T = ...

local function run(device)
  torch.manual_seed(0)
  local a = nn.Linear(3, 2):to(device)
  local b = nn.Linear(3, 2):to(device)
  b:load_state_dict(a:state_dict())
  local x = torch.randn(4, 3, { device = device })

  local optimizer_dict, seen = {}, 0
  for _, p in ipairs(a:parameters()) do optimizer_dict[p] = optim.Adam({ p }, { foreach = false }) end
  for _, p in ipairs(a:parameters()) do
    p:register_post_accumulate_grad_hook(function(q)
      T.check(rawequal(q, p), device .. ": the hook gets the parameter's own value")
      seen = seen + 1
      optimizer_dict[q]:step()
      optimizer_dict[q]:zero_grad()
    end)
  end
  local opt = optim.Adam(b:parameters())
  for _ = 1, 3 do
    a(x):pow(2):sum():backward()
    b(x):pow(2):sum():backward()
    opt:step()
    opt:zero_grad()
  end
  T.eq(seen, 6, device .. ": one call per parameter and pass")
  T.check(a.weight.grad == nil and a.bias.grad == nil, device .. ": gradients dropped in backward")
  T.check(torch.allclose(a.weight, b.weight, { atol = 1e-6 }) and torch.allclose(a.bias, b.bias, { atol = 1e-6 }),
    device .. ": the same weights as one optimizer after backward")
  T.raises(function() a.weight:register_post_accumulate_grad_hook(3) end, "~function expected", device .. ": a non-function is refused")
end

T.test("optimizer in backward through post-accumulate hooks (cpu)", function() run("cpu") end)
T.test("optimizer in backward through post-accumulate hooks (cuda)", function()
  if not torch.cuda.is_available() then return T.skip("no CUDA device", 1) end
  run("cuda")
end)
